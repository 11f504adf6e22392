"""Synthetic whole-slide images as bags of instance features: the world of
``Methods/MILTransfer-v0`` (:mod:`omnigym.envs.methods.mil_transfer`) and of its pretraining tasks.

A slide is a bag of patch features, as a frozen patch encoder would give them (Shao et al., ICML
2025, use UNI features of 256 px patches). Here every patch is an instance x ∈ R⁶⁴ drawn around
one of 40 prototype clusters (a tissue or cell type) or from a broad background:

- the 40 prototype centres are orthogonal directions of R⁶⁴ (a random rotation), every two
  ``SEPARATION`` apart; an instance of prototype k is μ_k + N(0, I) (isotropic unit noise in all 64
  dimensions); a background instance is N(0, ``BACKGROUND``² I);
- every slide adds one offset N(0, ``STAIN``² I) to all its instances (stain and scanner
  variation between slides);
- ``ORGANS`` = 5 organs; organ o allows the 5 shared tissue prototypes 20–24, its 3 own tissue
  prototypes 25 + 3o … 27 + 3o and its 4 diagnostic prototypes 4o … 4o + 3;
- a slide of organ o holds 20–40 % background, each diagnostic prototype it carries at 3–8 % of
  its instances, and the rest tissue of its organ in Dirichlet(1) proportions.

The world (prototype centres, hence the subtle shift's direction) is fixed by
:data:`WORLD_SEED`; the slides of every draw, pretraining set and target set come from their own
generators.

Tasks (:data:`TASKS`): the two pretraining tasks, ``pan-organ`` (20 classes: organ o and which
one diagnostic prototype 4o + j it carries, class 4o + j) and ``single-organ`` (organ 0 only, 4
classes: which diagnostic prototype), and the three targets:

- ``same-organ``: organ 0 with a new rule: a slide carries one of its diagnostic prototypes 0–3
  or none (a benign slide, which pretraining never showed), each with probability 1/5;
  positive when it carries 0 or 1;
- ``cross-organ``: organ 1 (never seen by the single-organ task; it shares the tissue prototypes
  20–24 with organ 0), 4 classes: which of its diagnostic prototypes 4–7 the slide carries;
- ``shift``: organ 0, every slide carries prototype 2; positive when that prototype's instances
  are shifted by ``SHIFT`` (in units of the instance noise) towards prototype 3 (a quarter of
  the way), a subtle change of morphology within one cell type.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

FEATURES = 64
PROTOTYPES = 40
ORGANS = 5
DIAGNOSTIC = 4
SHARED = tuple(range(20, 25))
SEPARATION = 6.0
BACKGROUND = 1.5
STAIN = 0.2
SHIFT = 1.5
WORLD_SEED = 0
#: Background and diagnostic shares of a slide's instances (low, high).
BACKGROUND_SHARE = (0.2, 0.4)
DIAGNOSTIC_SHARE = (0.1, 0.2)
#: Bags of the pretraining tasks (each).
PRETRAIN_BAGS = 2000
PRETRAIN_INSTANCES = 100
#: What a task's sampler draws for one slide: (label, organ, diagnostic prototypes present,
#: prototypes shifted).
Draw = tuple[int, int, list[int], tuple[int, ...]]


@dataclass(frozen=True)
class World:
    """The prototype centres (40, 64) and the shift direction (64,), the unit vector from
    prototype 2 towards prototype 3."""

    centres: np.ndarray
    direction: np.ndarray


@functools.cache
def world() -> World:
    """The fixed world of seed :data:`WORLD_SEED`."""
    rng = np.random.default_rng(WORLD_SEED)
    basis, _ = np.linalg.qr(rng.standard_normal((FEATURES, FEATURES)))
    # Orthogonal centres of norm SEPARATION/√2: every pair is SEPARATION apart.
    centres = basis[:, :PROTOTYPES].T * SEPARATION / np.sqrt(2)
    shifted, toward = diagnostic(0)[2:4]
    return World(centres, _unit(centres[toward] - centres[shifted]))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def tissue(organ: int) -> list[int]:
    """The tissue prototypes organ ``organ`` allows (shared, then its own)."""
    return [*SHARED, *range(25 + 3 * organ, 28 + 3 * organ)]


def diagnostic(organ: int) -> list[int]:
    """The diagnostic prototypes of organ ``organ``."""
    return list(range(DIAGNOSTIC * organ, DIAGNOSTIC * (organ + 1)))


def slide(
    rng: np.random.Generator,
    organ: int,
    present: list[int],
    instances: int,
    shifted: tuple[int, ...] = (),
) -> np.ndarray:
    """One bag (instances, 64) of ``organ`` carrying the diagnostic prototypes ``present``; the
    instances of prototypes in ``shifted`` are moved by ``SHIFT`` along the world's direction."""
    w = world()
    counts = {}
    for prototype in present:
        counts[prototype] = max(1, round(rng.uniform(*DIAGNOSTIC_SHARE) * instances))
    background = round(rng.uniform(*BACKGROUND_SHARE) * instances)
    rest = instances - background - sum(counts.values())
    shares = rng.dirichlet(np.ones(len(tissue(organ))))
    for prototype, count in zip(tissue(organ), rng.multinomial(rest, shares), strict=True):
        counts[prototype] = counts.get(prototype, 0) + int(count)
    rows = [rng.standard_normal((background, FEATURES)) * BACKGROUND]
    for prototype, count in counts.items():
        centre = w.centres[prototype] + (SHIFT * w.direction if prototype in shifted else 0.0)
        rows.append(centre + rng.standard_normal((count, FEATURES)))
    bag = np.concatenate(rows) + rng.standard_normal(FEATURES) * STAIN
    return bag[rng.permutation(instances)].astype(np.float32)


def _pan_organ(rng: np.random.Generator) -> Draw:
    label = int(rng.integers(ORGANS * DIAGNOSTIC))
    organ = label // DIAGNOSTIC
    return label, organ, [diagnostic(organ)[label % DIAGNOSTIC]], ()


def _single_organ(rng: np.random.Generator) -> Draw:
    label = int(rng.integers(DIAGNOSTIC))
    return label, 0, [diagnostic(0)[label]], ()


def _same_organ(rng: np.random.Generator) -> Draw:
    choice = int(rng.integers(DIAGNOSTIC + 1))  # DIAGNOSTIC: none (a benign slide)
    present = [diagnostic(0)[choice]] if choice < DIAGNOSTIC else []
    return int(choice < 2), 0, present, ()


def _cross_organ(rng: np.random.Generator) -> Draw:
    label = int(rng.integers(DIAGNOSTIC))
    return label, 1, [diagnostic(1)[label]], ()


def _shift(rng: np.random.Generator) -> Draw:
    label = int(rng.integers(2))
    prototype = diagnostic(0)[2]
    return label, 0, [prototype], (prototype,) if label else ()


#: task → (number of classes, label sampler).
TASKS = {
    "pan-organ": (ORGANS * DIAGNOSTIC, _pan_organ),
    "single-organ": (DIAGNOSTIC, _single_organ),
    "same-organ": (2, _same_organ),
    "cross-organ": (DIAGNOSTIC, _cross_organ),
    "shift": (2, _shift),
}
TARGETS = ("same-organ", "cross-organ", "shift")
PRETRAINING = ("pan-organ", "single-organ")


def bags(
    rng: np.random.Generator, task: str, count: int, instances: int
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` slides of ``task``: bags (count, instances, 64) float32 and labels (count,)."""
    _, sampler = TASKS[task]
    out = np.empty((count, instances, FEATURES), np.float32)
    labels = np.empty(count, np.int64)
    for i in range(count):
        labels[i], organ, present, shifted = sampler(rng)
        out[i] = slide(rng, organ, present, instances, shifted)
    return out, labels
