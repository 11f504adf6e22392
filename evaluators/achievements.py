"""Achievement success rates and the Crafter score (Hafner, "Benchmarking the Spectrum of Agent
Capabilities", ICLR 2022), for environments that report ``info["achievements"]``.

An episode's achievements are a dict name → unlock count (Crafter's convention; Craft's OpenWorld
reports twenty, ``docs/craft.md``). Per achievement, the success rate s_i is the percentage of
episodes that unlocked it at least once; the score is the geometric mean of the rates offset by
one, S = exp(mean_i ln(1 + s_i)) − 1, which lies in [0, 100] and rewards breadth over repeating
the easy achievements.

Crafter computes the rates over the achievements of its own list, including those no episode
unlocked; here the list is the union of the names the episodes report (every OpenWorld step
reports all twenty, at count 0 until unlocked), or an explicit ``names``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def success_rates(
    episodes_achievements: Sequence[Mapping[str, int]], names: Iterable[str] | None = None
) -> dict[str, float]:
    """Percentage of episodes (0–100) with a count ≥ 1, per achievement name.

    ``names`` defaults to every name any episode reports, sorted. No episodes give no rates.
    """
    if names is None:
        names = sorted({name for episode in episodes_achievements for name in episode})
    names = list(names)
    n = len(episodes_achievements)
    if n == 0:
        return {}
    return {
        name: 100.0 * sum(1 for ep in episodes_achievements if ep.get(name, 0) >= 1) / n
        for name in names
    }


def crafter_score(rates: Mapping[str, float]) -> float:
    """``exp(mean ln(1 + s_i)) − 1`` over the success rates ``s_i`` in percent (Crafter's
    score); ``ValueError`` for no rates or a rate outside [0, 100]."""
    if not rates:
        raise ValueError("crafter_score needs at least one success rate")
    for name, rate in rates.items():
        if not 0.0 <= rate <= 100.0:
            raise ValueError(f"success rate of {name} must be in [0, 100], got {rate}")
    return math.exp(sum(math.log1p(rate) for rate in rates.values()) / len(rates)) - 1.0


def achievement_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rates and score of evaluator episode records (``evaluators.rollout`` records).

    Each record's ``"achievements"`` is the final step's ``info["achievements"]``: a dict name →
    count, or a list of the names unlocked (count 1 each). Records without it are skipped.
    Returns ``{"episodes": n, "success_rates": {...}, "score": S}`` (score ``None`` when no
    record has achievements).
    """
    episodes = []
    for record in records:
        achievements = record.get("achievements")
        if achievements is None:
            continue
        if isinstance(achievements, Mapping):
            episodes.append({name: int(count) for name, count in achievements.items()})
        else:
            episodes.append(dict.fromkeys(achievements, 1))
    rates = success_rates(episodes)
    return {
        "episodes": len(episodes),
        "success_rates": rates,
        "score": crafter_score(rates) if rates else None,
    }


__all__ = ["achievement_summary", "crafter_score", "success_rates"]
