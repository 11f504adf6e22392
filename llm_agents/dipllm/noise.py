"""How noisy DipLLM-lite's Monte Carlo Q is: can it order a group's candidates?

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025), whose fine-tuning target π*(a | s) ∝ π_base(a | s)·exp(Q(s, a)/λ)
(:func:`.weights.equilibrium_policy`) is only as good as the Q that orders the candidates. From
the rollout values a Q file keeps per group (``values``: candidates × rollouts, rollout ``i``
seeded alike for every candidate), :func:`q_noise` reports, averaged over groups:

- ``sd``: the standard deviation of one rollout's value around its candidate's mean;
- ``se``: the standard error of a candidate's Q (``sd / √M`` with the group's M rollouts) and
  ``se_difference``: that of a candidate's difference from the behaviour's order, which common
  random numbers make smaller than ``√2 · se`` when rollouts of the same seed move together;
- ``spread``: the standard deviation of the Q values between a group's candidates, the signal
  to be read; ``flat``: the share of groups whose candidates all have the same Q;
- two independent estimates, from the first and the second half of the rollouts (M/2 each):
  ``top_change``, the share of groups whose best candidates (the set with the highest Q) have
  no member in common (a half whose candidates all tie shares one with any other);
  ``target_tv``, the total variation between the two halves' targets π* at ``lam`` (π_base from
  the group's ``base``, uniform without one), beside ``target_shift``, the total variation
  between π_base and the full estimate's target (how far the target moves).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .weights import equilibrium_policy


def q_noise(groups: Iterable[Mapping[str, Any]], lam: float) -> dict[str, Any]:
    """The noise of the groups' Q (module docstring); groups with fewer than two rollouts
    give no estimate of it and are left out."""
    rows = []
    for group in groups:
        values = np.asarray(group.get("values") or [], dtype=np.float64)
        if values.ndim != 2 or values.shape[1] < 2 or values.shape[0] < 2:
            continue
        rows.append(_group_noise(values, group.get("base"), lam))
    if not rows:
        return {"groups": 0}
    return {
        "groups": len(rows),
        **{key: float(np.mean([row[key] for row in rows])) for key in rows[0]},
    }


def _group_noise(values: np.ndarray, base: Any, lam: float) -> dict[str, float]:
    candidates, rollouts = values.shape
    half = rollouts // 2
    first, second = values[:, :half].mean(1), values[:, half : 2 * half].mean(1)
    q = values.mean(1)
    prior = np.full(candidates, 1.0 / candidates) if base is None else np.asarray(base, float)
    targets = [equilibrium_policy(prior, estimate, lam) for estimate in (first, second)]
    sd = values.std(1, ddof=1)
    differences = values[1:] - values[0]
    return {
        "sd": float(sd.mean()),
        "se": float(sd.mean() / np.sqrt(rollouts)),
        "se_difference": float(differences.std(1, ddof=1).mean() / np.sqrt(rollouts)),
        "spread": float(q.std(ddof=1)),
        "flat": float(np.ptp(q) == 0),
        "top_change": _top_change(first, second),
        "target_tv": _tv(*targets),
        "target_shift": _tv(prior / prior.sum(), equilibrium_policy(prior, q, lam)),
    }


def _top_change(first: np.ndarray, second: np.ndarray) -> float:
    """1 when the two estimates' best candidates are disjoint, else 0."""
    best_first = set(np.flatnonzero(first == first.max()).tolist())
    best_second = set(np.flatnonzero(second == second.max()).tolist())
    return float(not best_first & best_second)


def _tv(p: np.ndarray, q: np.ndarray) -> float:
    return float(0.5 * np.abs(p - q).sum())
