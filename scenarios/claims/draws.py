"""Draw-by-draw comparisons for the claims checkers of the ``Methods/`` task environments.

Every agent of a Methods scenario plays the same draws (an episode's seed draws the instance),
so two agents are compared on the draws both finished: the difference of one metric per draw,
its mean and a 95% bootstrap confidence interval stratified by run seed
(:func:`omnigym.evaluators.stats.summarize`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from omnigym.evaluators.stats import summarize

#: (seed, episode) → one value.
Draws = dict[tuple[int, int], float]


def by_draw(
    records: Iterable[Mapping[str, Any]],
    metric: str | Callable[[Mapping[str, float]], float | None],
) -> dict[str, dict[str, Draws]]:
    """env label → agent label → draw → ``metric`` (a metric's name, or a function of the
    metrics that returns None to leave a draw out); episodes without it (failed answers) are
    left out."""
    table: dict[str, dict[str, Draws]] = {}
    for record in records:
        metrics = record.get("metrics") or {}
        value = metric(metrics) if callable(metric) else metrics.get(metric)
        if value is None:
            continue
        draws = table.setdefault(record["env_id"], {}).setdefault(record["agent"], {})
        draws[(int(record["seed"]), int(record["episode"]))] = float(value)
    return table


def mean_ci(draws: Draws) -> dict[str, Any] | None:
    """``{"mean", "ci95"}`` of the values (None without any)."""
    if not draws:
        return None
    keys = sorted(draws)
    summary = summarize(np.array([draws[k] for k in keys]), strata=[seed for seed, _ in keys])
    return {"mean": summary["mean"], "ci95": summary["ci95"]}


def paired(minuend: Draws, subtrahend: Draws) -> dict[str, Any] | None:
    """``{"mean", "ci95", "draws"}`` of minuend − subtrahend over the draws both have (None
    without any)."""
    common = sorted(set(minuend) & set(subtrahend))
    if not common:
        return None
    summary = mean_ci({key: minuend[key] - subtrahend[key] for key in common})
    return {**summary, "draws": len(common)}


def above_zero(difference: Mapping[str, Any] | None) -> bool:
    """Whether a difference's confidence interval lies above zero."""
    return difference is not None and difference["ci95"][0] > 0


def summaries(
    records: Iterable[Mapping[str, Any]],
    metrics: Iterable[str],
    agents: Iterable[str],
    envs: Iterable[str],
) -> dict[str, dict[str, dict[str, Any]]]:
    """env → agent → metric → :func:`mean_ci`, for the "every agent's numbers" claim of a
    checker: agents in ``agents`` order, envs and agents without any record left out."""
    tables = {metric: by_draw(records, metric) for metric in metrics}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for env in envs:
        for agent in agents:
            row = {
                metric: mean_ci(table[env][agent])
                for metric, table in tables.items()
                if agent in table.get(env, {})
            }
            if row:
                out.setdefault(env, {})[agent] = row
    return out
