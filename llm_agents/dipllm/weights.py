"""DipLLM's fine-tuning targets: the equilibrium policy of a (state, location) group, and the
Q weights of the behaviour's order (the ablation this package started from).

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025), which fine-tunes its model toward the equilibrium policy of its search,
π*(a | s) ∝ π_base(a | s)·exp(Q(s, a)/λ) over the candidates a (piKL's regularised policy, with
the fine-tuned model before fine-tuning as π_base), with the loss −Σ_a π*(a | s) log π_θ(a | s)
at every location, given the earlier units' orders: :func:`equilibrium_policy`. As λ → ∞ the
target is π_base restricted to the candidates; as λ → 0 it puts all its mass on the best ones.

The ablation (``finetune_target="behaviour"``): a group's candidates' exp(Q/λ) normalised to mean
1, the decision's weight being the behaviour order's value, in (0, number of candidates]; every
weight is 1 when λ = ∞. It re-weights the data's own orders, so no probability moves to a
candidate the data's bot did not play. The joint head, which has no per-location decisions,
weighs a turn by the geometric mean of its decisions' positive weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def equilibrium_policy(base: Sequence[float], q_values: Sequence[float], lam: float) -> np.ndarray:
    """π* ∝ π_base · exp(Q/λ) over a group's candidates (``base``: their probabilities under
    π_base, any scale; one that underflowed to 0 counts as 1e-12); π_base renormalised when
    λ = ∞."""
    prior = np.asarray(base, dtype=np.float64)
    if prior.shape != np.shape(q_values) or not (prior >= 0).all() or not prior.any():
        raise ValueError(f"base must give each candidate a probability, got {base!r}")
    logits = np.log(np.maximum(prior, 1e-12))
    if not math.isinf(lam):
        q = np.asarray(q_values, dtype=np.float64)
        logits = logits + (q - q.max()) / lam
    policy = np.exp(logits - logits.max())
    return policy / policy.sum()


def group_weights(q_values: Sequence[float], lam: float) -> np.ndarray:
    """exp(Q/λ) normalised to mean 1 over one (state, location) group's candidates; all ones
    when λ = ∞ (behaviour cloning)."""
    q = np.asarray(q_values, dtype=np.float64)
    if math.isinf(lam):
        return np.ones_like(q)
    scaled = np.exp((q - q.max()) / lam)
    return scaled / scaled.mean()


def behaviour_weight(group: Mapping[str, Any], lam: float) -> float:
    """The training weight of a group's behaviour order: its entry of :func:`group_weights`."""
    weights = group_weights(group["q"], lam)
    return float(weights[list(group["candidates"]).index(group["behaviour"])])


def joint_weight(weights: np.ndarray) -> float:
    """A turn's weight under the joint head: the geometric mean of its decisions' positive
    weights (0 when none is positive)."""
    positive = weights[weights > 0]
    return float(np.exp(np.mean(np.log(positive)))) if positive.size else 0.0
