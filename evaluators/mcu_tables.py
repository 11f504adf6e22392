"""MCU's result tables: the six dimensions as percentages by category, subcategory, difficulty
and programmatic versus creative tasks.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) reports each dimension's mean score × 10 (a
percentage) per agent, split by difficulty and by programmatic versus creative tasks (creative:
Build, Art and the open-ended Tool-use templates, :func:`omnigym.envs.mcu.suite.is_creative`).
:func:`tables` builds the same from episode records (``episodes.jsonl``: the MCU environments
fill ``metrics`` with the six dimensions), one table per grouping; :func:`format_tables` prints
them. Each cell holds the episode count, the success rate and the six percentages (NaN scores,
e.g. Material on a find task, are left out of their mean). Run::

    python -m omnigym.evaluators.mcu_tables RUN_DIR/episodes.jsonl
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from omnigym.envs.mcu.evaluation import DIMENSIONS
from omnigym.envs.mcu.suite import curated, labels
from omnigym.evaluators.store import read_records

GROUPINGS = ("category", "subcategory", "difficulty", "kind")
SHORT = {
    "task_progress": "progress",
    "action_control": "action",
    "error_recognition_and_correction": "error rec.",
    "creative_attempts": "creative",
    "task_completion_efficiency": "efficiency",
    "material_selection_and_usage": "material",
}
"""Column names, as MCU's table heads them."""

Labels = Mapping[str, Mapping[str, str]]

REPORTED = {
    "columns": ["progress", "action", "error rec.", "creative", "efficiency", "material"],
    "simple / hard": {
        "STEVE-1": [
            [31.4, 23.1], [31.9, 22.6], [13.1, 6.9], [6.4, 6.0], [23.2, 16.6], [35.6, 24.5]
        ],
        "VPT-BC": [[29.1, 23.0], [29.0, 21.7], [11.8, 6.2], [6.2, 6.0], [21.3, 15.6], [33.8, 25.0]],
        "VPT-RL": [[25.9, 21.0], [26.2, 20.9], [8.8, 5.0], [5.2, 4.6], [18.9, 14.4], [31.3, 23.7]],
        "JARVIS-VLA": [
            [25.6, 20.9], [27.8, 22.3], [9.3, 5.5], [5.5, 4.3], [18.3, 14.5], [30.5, 22.3]
        ],
    },
    "programmatic vs creative (STEVE-1)": {"progress": [38.4, 22.6], "material": [43.8, 25.4]},
    "lowest dimensions": "every agent scores lowest on Error Recognition and Creative Attempts",
}  # fmt: skip
"""MCU's reported MCU-turbo baselines (AutoEval, mean score × 10, simple / hard), the
programmatic-versus-creative split of STEVE-1, and its finding on the lowest dimensions."""


def suite_labels() -> dict[str, dict[str, str]]:
    """env id → :func:`~omnigym.envs.mcu.suite.labels` for every curated id."""
    return {entry.env_id: labels(entry.tasks, entry.difficulty) for entry in curated()}


def _label_of(record: Mapping[str, Any], known: Labels) -> Mapping[str, str] | None:
    for key in (record.get("env_id"), record.get("env_base")):
        if key in known:
            return known[key]
    return None


def cell(records: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Episodes, success rate and each dimension's mean × 10 over ``records``."""
    out: dict[str, Any] = {
        "episodes": len(records),
        "success": float(np.mean([bool(r.get("success")) for r in records])),
    }
    for name in DIMENSIONS:
        values = [r["metrics"].get(name) for r in records]
        finite = [float(v) for v in values if v is not None and math.isfinite(v)]
        out[name] = 10.0 * float(np.mean(finite)) if finite else None
    return out


def tables(
    records: Iterable[Mapping[str, Any]], known: Labels | None = None
) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """grouping → agent → group value → :func:`cell`, for the MCU records whose env is in
    ``known`` (env label → labels; default :func:`suite_labels`)."""
    known = suite_labels() if known is None else known
    grouped: dict[str, dict[str, dict[str, list]]] = {g: {} for g in GROUPINGS}
    for record in records:
        found = _label_of(record, known)
        if found is None:
            continue
        for grouping in GROUPINGS:
            agents = grouped[grouping].setdefault(record["agent"], {})
            agents.setdefault(found[grouping], []).append(record)
    return {
        grouping: {
            agent: {value: cell(rows) for value, rows in sorted(groups.items())}
            for agent, groups in agents.items()
        }
        for grouping, agents in grouped.items()
    }


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def format_table(table: Mapping[str, Mapping[str, Mapping[str, Any]]], grouping: str) -> str:
    """One grouping's table as Markdown: a row per (agent, group)."""
    head = f"| agent | {grouping} | episodes | success % | " + " | ".join(
        SHORT[name] for name in DIMENSIONS
    )
    lines = [head + " |", "|---" * (4 + len(DIMENSIONS)) + "|"]
    for agent, groups in table.items():
        for value, row in groups.items():
            scores = " | ".join(_number(row[name]) for name in DIMENSIONS)
            lines.append(
                f"| {agent} | {value} | {row['episodes']} | {100 * row['success']:.1f} | {scores} |"
            )
    return "\n".join(lines)


def format_tables(built: Mapping[str, Any]) -> str:
    """Every grouping of :func:`tables` as Markdown sections."""
    parts = []
    for grouping in GROUPINGS:
        if built.get(grouping):
            parts.append(f"### By {grouping}\n\n{format_table(built[grouping], grouping)}\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("episodes", type=Path, help="an episodes.jsonl of MCU curated ids")
    args = parser.parse_args(argv)
    print(format_tables(tables(read_records(args.episodes))))


if __name__ == "__main__":
    main()
