"""Scorecards: episode records in, one summary per (env, agent) and agent comparisons out.

Follows rliable (Agarwal et al., NeurIPS 2021): every summary carries mean, median, interquartile
mean and a 95% stratified bootstrap confidence interval of the mean, with the run seed as the
stratum, and agents are compared by probability of improvement on returns. The statistics are the
pure functions of :mod:`omnigym.evaluators.stats`; this module only groups records and writes
files. Plots are :mod:`omnigym.evaluators.report`'s.

A record is one episode as stored in ``episodes.jsonl`` (keys ``env_id``, ``agent``, ``seed``,
``return``, ``success``, ``cost``, ``normalized_score``, ``metrics``, ...). The normalized score
of an env comes from, in order:

1. the family normalizer named in the registry (``EnvInfo.normalizer``, ``"module:function"``),
   called as ``normalize_summary(env_id, return_summary)``; it maps the *summary of returns*
   (mean, median, IQM and interval ends) monotonically, as LMRL-Gym normalizes the aggregate
   return rather than each episode;
2. otherwise the records' own ``normalized_score`` values, summarized like returns;
3. otherwise none: the result has no ``normalized_score`` key.

Env ids missing from the registry have no family normalizer. A record of a labelled env (a
scenario entry with ``label:``) names the label as ``env_id`` and the registered id as
``env_base``, which is where its normalizer comes from.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from itertools import permutations
from pathlib import Path
from typing import Any

from omnigym import registry
from omnigym.evaluators.achievements import achievement_summary
from omnigym.evaluators.stats import DEFAULT_RESAMPLES, probability_of_improvement, summarize
from omnigym.io import atomic_write_text

SUMMARY_KEYS = ("mean", "median", "iqm", "ci95")

Normalizer = Callable[[str, dict[str, Any]], dict[str, Any]]


def family_normalizer(env_id: str) -> Normalizer | None:
    """The registered ``normalize_summary`` function of ``env_id``'s family, or None when the env
    has none or is not registered."""
    try:
        entry_point = registry.spec(env_id).normalizer
    except registry.UnknownEnvError:
        return None
    return None if entry_point is None else registry.load_entry_point(entry_point)


def _normalizer_of(base_id: str) -> Normalizer | None:
    """The family normalizer of ``base_id``, called with ``base_id`` whatever the env's label."""
    normalizer = family_normalizer(base_id)
    if normalizer is None:
        return None
    return lambda _label, summary: normalizer(base_id, summary)


def build_scorecard(
    records: Iterable[Mapping[str, Any]],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    random_state: int = 0,
) -> dict[str, Any]:
    """Summarize episode ``records`` per (env, agent) and compare agents within each env.

    Returns ``{"results", "comparisons", "agents", "envs"}``: ``results`` sorted by env then
    agent, each with ``env_id``, ``agent``, ``episodes``, ``return``, ``success_rate`` (over the
    episodes that report success; None when none does), ``normalized_score`` (only when the env
    has one, see the module docstring), ``cost`` (only when some episode reports a cost) and
    ``metrics`` (each metric over the episodes that report a finite value), ``achievements``
    (only when episodes report some: per-achievement success rates and the Crafter score of
    :mod:`omnigym.evaluators.achievements`); ``comparisons`` holds
    the probability of improvement on returns for every ordered agent pair of each env.
    """
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["env_id"], record["agent"])].append(record)
    if not groups:
        raise ValueError("no episode records to build a scorecard from")
    summary_options = {"n_resamples": n_resamples, "random_state": random_state}
    bases = {
        r["env_id"]: r.get("env_base", r["env_id"]) for group in groups.values() for r in group
    }
    normalizers = {env_id: _normalizer_of(bases[env_id]) for env_id, _ in groups}
    results = [
        _result(env_id, agent, groups[(env_id, agent)], normalizers[env_id], summary_options)
        for env_id, agent in sorted(groups)
    ]
    envs = sorted({env_id for env_id, _ in groups})
    comparisons = [
        {
            "env_id": env_id,
            "agent_x": agent_x,
            "agent_y": agent_y,
            "probability_of_improvement": probability_of_improvement(
                [r["return"] for r in groups[(env_id, agent_x)]],
                [r["return"] for r in groups[(env_id, agent_y)]],
            ),
        }
        for env_id in envs
        for agent_x, agent_y in permutations(sorted(a for e, a in groups if e == env_id), 2)
    ]
    return {
        "results": results,
        "comparisons": comparisons,
        "agents": sorted({agent for _, agent in groups}),
        "envs": envs,
    }


def write_scorecard(scorecard: Mapping[str, Any], out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``scorecard.json`` and ``scorecard.md`` into ``out_dir`` atomically; return both."""
    out = Path(out_dir)
    json_path = atomic_write_text(out / "scorecard.json", json.dumps(scorecard, indent=2) + "\n")
    note = "Intervals are 95% stratified bootstrap CIs of the mean over run seeds (rliable)."
    markdown = f"# Scorecard\n\n{overview(scorecard)}. {note}\n\n{format_table(scorecard)}"
    md_path = atomic_write_text(out / "scorecard.md", markdown)
    return json_path, md_path


def format_table(scorecard: Mapping[str, Any]) -> str:
    """The scorecard as Markdown: one table per env, then its probability-of-improvement lines.

    Each interval is written ``mean [low, high]``; columns without data in an env are left out.
    """
    sections = []
    for env_id in scorecard["envs"]:
        rows = [r for r in scorecard["results"] if r["env_id"] == env_id]
        columns = _columns(rows)
        lines = [
            f"## {env_id}",
            "",
            "| " + " | ".join(header for header, _ in columns) + " |",
            "|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|",
        ]
        lines += ["| " + " | ".join(cell(row) for _, cell in columns) + " |" for row in rows]
        comparisons = [
            c
            for c in scorecard["comparisons"]
            if c["env_id"] == env_id and c["agent_x"] < c["agent_y"]
        ]
        if comparisons:
            lines += ["", "Probability of improvement (returns):", ""]
            lines += [_improvement_line(c) for c in comparisons]
        sections.append("\n".join(lines))
    return "\n\n".join(sections) + "\n"


def format_number(value: float, decimals: int | None = None) -> str:
    """A score with as many decimals as its size deserves (2 below 100, 1 below 1000, else 0),
    or with ``decimals`` when given."""
    if decimals is None:
        decimals = _decimals(abs(value))
    return f"{value:.{decimals}f}"


def format_interval(summary: Mapping[str, Any]) -> str:
    """``"mean [low, high]"`` for a summary dict, all three with the same decimals."""
    low, high = summary["ci95"]
    decimals = _decimals(max(abs(summary["mean"]), abs(low), abs(high)))
    mean, low, high = (format_number(v, decimals) for v in (summary["mean"], low, high))
    return f"{mean} [{low}, {high}]"


def format_percent(rate: float) -> str:
    """A rate in [0, 1] as a whole percentage, ``"67%"``."""
    return f"{100 * rate:.0f}%"


def overview(scorecard: Mapping[str, Any]) -> str:
    """``"3 envs · 2 agents · 180 episodes"``: the size of a scorecard in one line."""
    episodes = sum(r["episodes"] for r in scorecard["results"])
    return (
        f"{_count(len(scorecard['envs']), 'env')} · {_count(len(scorecard['agents']), 'agent')} · "
        f"{_count(episodes, 'episode')}"
    )


def _result(
    env_id: str,
    agent: str,
    episodes: list[Mapping[str, Any]],
    normalizer: Normalizer | None,
    summary_options: dict[str, Any],
) -> dict[str, Any]:
    seeds = [r["seed"] for r in episodes]
    returns = summarize([r["return"] for r in episodes], seeds, **summary_options)
    successes = [bool(r["success"]) for r in episodes if r.get("success") is not None]
    result: dict[str, Any] = {
        "env_id": env_id,
        "agent": agent,
        "episodes": len(episodes),
        "return": returns,
        "success_rate": sum(successes) / len(successes) if successes else None,
    }
    if normalizer is not None:
        result["normalized_score"] = _normalized_summary(normalizer, env_id, returns)
    elif any(r.get("normalized_score") is not None for r in episodes):
        result["normalized_score"] = _summarize_key(episodes, "normalized_score", summary_options)
    if any(r.get("cost") is not None for r in episodes):
        result["cost"] = _summarize_key(episodes, "cost", summary_options)
    if any(r.get("achievements") for r in episodes):
        result["achievements"] = achievement_summary(episodes)
    names = sorted({name for r in episodes for name in r.get("metrics") or {}})
    result["metrics"] = {
        name: summary
        for name in names
        if (summary := _summarize_metric(episodes, name, summary_options)) is not None
    }
    return result


def _normalized_summary(
    normalizer: Normalizer, env_id: str, returns: dict[str, Any]
) -> dict[str, Any]:
    normalized = normalizer(env_id, {**returns, "ci95": list(returns["ci95"])})
    missing = [key for key in SUMMARY_KEYS if key not in normalized]
    if missing:
        raise ValueError(f"the normalizer of {env_id!r} returned no {', '.join(missing)}")
    low, high = (float(v) for v in normalized["ci95"])
    return {
        "mean": float(normalized["mean"]),
        "median": float(normalized["median"]),
        "iqm": float(normalized["iqm"]),
        "ci95": [low, high],
    }


def _summarize_key(
    episodes: list[Mapping[str, Any]], key: str, summary_options: dict[str, Any]
) -> dict[str, Any]:
    kept = [r for r in episodes if r.get(key) is not None]
    return summarize([r[key] for r in kept], [r["seed"] for r in kept], **summary_options)


def _summarize_metric(
    episodes: list[Mapping[str, Any]], name: str, summary_options: dict[str, Any]
) -> dict[str, Any] | None:
    pairs = [
        (float(value), r["seed"])
        for r in episodes
        if (value := (r.get("metrics") or {}).get(name)) is not None and math.isfinite(value)
    ]
    if not pairs:
        return None
    values, seeds = zip(*pairs, strict=True)
    return summarize(values, seeds, **summary_options)


def _columns(rows: list[Mapping[str, Any]]) -> list[tuple[str, Callable[[Mapping], str]]]:
    columns: list[tuple[str, Callable[[Mapping], str]]] = [
        ("agent", lambda r: r["agent"].replace("|", r"\|")),
        ("episodes", lambda r: str(r["episodes"])),
        ("return [95% CI]", lambda r: format_interval(r["return"])),
        ("return IQM", lambda r: format_number(r["return"]["iqm"])),
    ]
    if any(r["success_rate"] is not None for r in rows):
        columns.append(("success", lambda r: _optional_percent(r["success_rate"])))
    if any("normalized_score" in r for r in rows):
        columns.append(("normalized [95% CI]", lambda r: _optional_interval(r, "normalized_score")))
    if any("cost" in r for r in rows):
        columns.append(("cost [95% CI]", lambda r: _optional_interval(r, "cost")))
    if any("achievements" in r for r in rows):
        columns.append(("Crafter score", lambda r: _crafter_score(r)))
    return columns


def _crafter_score(row: Mapping[str, Any]) -> str:
    return format_number(row["achievements"]["score"]) if "achievements" in row else "–"


def _optional_interval(row: Mapping[str, Any], key: str) -> str:
    return format_interval(row[key]) if key in row else "–"


def _optional_percent(rate: float | None) -> str:
    return "–" if rate is None else format_percent(rate)


def _improvement_line(comparison: Mapping[str, Any]) -> str:
    """States the pair in the direction of the better agent, so every line reads ``≥ 0.5``."""
    x, y = comparison["agent_x"], comparison["agent_y"]
    p = comparison["probability_of_improvement"]
    if p < 0.5:
        x, y, p = y, x, 1.0 - p
    return f"- P({x} > {y}) = {p:.2f}"


def _decimals(magnitude: float) -> int:
    return 2 if magnitude < 100 else 1 if magnitude < 1000 else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
