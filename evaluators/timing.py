"""The scorecard's timing block: what a run's episodes and jobs cost where they ran.

Every episode record carries its ``wall_time`` and the ``cpu_seconds`` and ``peak_rss_mb`` that
the process which played it spent on it (:func:`omnigym.evaluators.rollout.run_episode`); every
timed job in ``diagnostics.jsonl`` carries ``seconds``, ``cpu_seconds`` and ``peak_rss_mb``
(:func:`omnigym.evaluators.experiment.timed`). Both are measured inside the worker, local or on
a Ray node, so their sums are true for any number of workers or nodes, unlike a clock around
the parent process (``/usr/bin/time`` sees only the parent's own CPU). Episodes and jobs are
kept apart: a job may contain episodes, and adding both would count those twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

_MEASURES = (("wall_seconds", "wall_time"), ("cpu_seconds", "cpu_seconds"))


def timing_block(
    records: Iterable[Mapping[str, Any]], diagnostics: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """``{"episodes": [...], "jobs": [...]}``: per (env, agent), the episodes' count, summed
    wall and CPU seconds and largest peak memory; per diagnostics stage, the same of its timed
    jobs. Sums leave out records that lack a measure (runs made before it was recorded);
    ``measured`` says how many have it."""
    episodes: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        episodes[record["env_id"], record["agent"]].append(record)
    jobs: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for line in diagnostics:
        if "seconds" in line:
            jobs[str(line.get("stage"))].append({**line, "wall_time": line["seconds"]})
    return {
        "episodes": [
            {"env_id": env_id, "agent": agent, **_totals(group, "episodes")}
            for (env_id, agent), group in sorted(episodes.items())
        ],
        "jobs": [{"stage": stage, **_totals(group, "jobs")} for stage, group in jobs.items()],
    }


def _totals(group: list[Mapping[str, Any]], count: str) -> dict[str, Any]:
    totals: dict[str, Any] = {count: len(group)}
    measured = [item for item in group if "cpu_seconds" in item]
    totals["measured"] = len(measured)
    for name, key in _MEASURES:
        totals[name] = sum(float(item[key]) for item in measured)
    peaks = [float(item["peak_rss_mb"]) for item in measured if "peak_rss_mb" in item]
    totals["peak_rss_mb"] = max(peaks) if peaks else None
    return totals


def format_timing(block: Mapping[str, Any]) -> str:
    """The timing block as Markdown (empty when nothing was measured)."""
    sections = []
    rows = [row for row in block.get("episodes", []) if row["measured"]]
    if rows:
        lines = [
            "| env | agent | episodes | wall s | CPU s | CPU s / episode | peak MB |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {row['env_id']} | {row['agent']} | {_measured(row, 'episodes')} | "
            f"{row['wall_seconds']:.1f} | {row['cpu_seconds']:.1f} | "
            f"{row['cpu_seconds'] / row['measured']:.3f} | {_megabytes(row)} |"
            for row in rows
        ]
        sections.append("\n".join(lines))
    rows = [row for row in block.get("jobs", []) if row["measured"]]
    if rows:
        lines = ["| stage | jobs | wall s | CPU s | peak MB |", "|---|---:|---:|---:|---:|"]
        lines += [
            f"| {row['stage']} | {_measured(row, 'jobs')} | {row['wall_seconds']:.1f} | "
            f"{row['cpu_seconds']:.1f} | {_megabytes(row)} |"
            for row in rows
        ]
        sections.append("\n".join(lines))
    if not sections:
        return ""
    note = (
        "Measured in the process that played each episode or ran each job (a local worker or "
        "a Ray worker on any node): CPU seconds include child programs such as Stockfish; "
        "peak MB is the largest resident memory of one episode or job."
    )
    return "\n\n".join(["## Timing", note, *sections]) + "\n"


def _measured(row: Mapping[str, Any], count: str) -> str:
    if row["measured"] == row[count]:
        return str(row[count])
    return f"{row['measured']} of {row[count]}"


def _megabytes(row: Mapping[str, Any]) -> str:
    return "–" if row["peak_rss_mb"] is None else f"{row['peak_rss_mb']:.0f}"
