"""DipLLM's equilibrium weights: exp(Q/λ) normalised within a (state, location) group.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025), whose fine-tuning objective maximises E[log π(a^d | s, a^{<d}) ·
exp(Q^d / λ)]. A (state, location) group holds its candidates' Q values; exp(Q/λ) is
normalised within the group to mean 1, and the decision's weight is the behaviour order's
normalised value, in (0, number of candidates]; every weight is 1 when λ = ∞. This is the sample
form of E_{a∼data}[log π(a) · exp(Q/λ)] with a per-group normaliser (the candidates stand in
for the policy's alternatives). The joint head, which has no per-location decisions, weighs a
turn by the geometric mean of its decisions' positive weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


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
