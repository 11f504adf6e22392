"""Fine-tune a pretrained equivariant interatomic potential on a few configurations of a new
system.

Wang, Hu, Tan, Jia, "ELoRA: Low-Rank Adaptation for Equivariant GNNs", ICML 2025.

An instance is a target system and its data: ``train_size`` clusters of the target for
fine-tuning, with EMT energies and forces, and test clusters, each also under ``rotations``
random rotations. The pretrained potential (:mod:`omnigym.envs.methods.potential`: a small e3nn
model fit to Cu clusters) is in ``info["instance"]``. A method answers the energies and forces
it predicts for every test configuration; the score is the force error, and the rotated copies
measure how far the answer is from equivariance.

Targets: ``"Au"`` and ``"Ag"`` clusters (another element, the same kind of structure),
``"hot-Cu"`` (Cu rattled by 0.25 Å instead of 0.1) and ``"strained-Cu"`` (Cu scaled by up to
±12 % instead of ±3 %).

Departures from the paper: ASE's EMT calculator labels small metal clusters in place of DFT
labels of rMD17 molecules and inorganic crystals, and a 2-layer e3nn potential pretrained here
(6k parameters) stands in for MACE and SevenNet foundation models; the clusters are
non-periodic. Every draw is a new set of target clusters for the same pretrained potential.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from scipy.spatial.transform import Rotation

from . import potential
from .core import MethodEnv

#: target → (element, rattle in Å, strain).
TARGETS = {
    "Au": ("Au", 0.1, 0.03),
    "Ag": ("Ag", 0.1, 0.03),
    "hot-Cu": ("Cu", 0.25, 0.03),
    "strained-Cu": ("Cu", 0.1, 0.12),
}
TRAIN_SIZES = (1, 200)
#: Draws (their clusters) a process keeps, so that every agent on a draw reuses its labels.
CACHED_DRAWS = 16


@dataclass(frozen=True)
class Size:
    """Default training and test configurations."""

    train: int
    test: int


SIZES = {"small": Size(train=10, test=20), "paper": Size(train=30, test=200)}


@dataclass(frozen=True, eq=False)
class PretrainedPotential:
    """What an agent gets in ``info["instance"]``: the pretrained potential's configuration and
    weights (:func:`model` builds a fresh copy to fine-tune)."""

    config: potential.PotentialConfig
    state: dict[str, np.ndarray]

    def model(self) -> Any:
        return potential.load(self.state, self.config)


@dataclass(frozen=True, eq=False)
class Instance:
    """The test set with its labels and, per rotated copy, its original and its rotation."""

    test: potential.ClusterSet
    copies: np.ndarray  # (copies,) rows of the rotated copies
    originals: np.ndarray  # (copies,) rows of their originals
    rotations: np.ndarray  # (copies, 3, 3)


def rotated_test_set(
    test: potential.ClusterSet, rotations: int, rng: np.random.Generator
) -> Instance:
    """``test`` followed by ``rotations`` copies of it, each configuration under its own random
    rotation R (positions and forces as x Rᵀ; energies unchanged)."""
    n = len(test)
    matrices = Rotation.random(n * rotations, random_state=rng).as_matrix()
    blocks = [test]
    for r in range(rotations):
        turn = matrices[r * n : (r + 1) * n]
        blocks.append(
            potential.ClusterSet(
                np.einsum("nai,nji->naj", test.positions, turn),
                test.mask,
                test.energies,
                np.einsum("nai,nji->naj", test.forces, turn),
            )
        )
    joined = potential.ClusterSet(
        *(
            np.concatenate([getattr(b, f) for b in blocks])
            for f in ("positions", "mask", "energies", "forces")
        )
    )
    copies = np.arange(n, n * (rotations + 1))
    return Instance(joined, copies, copies % n, matrices)


_DRAWS: collections.OrderedDict = collections.OrderedDict()


class EquivariantFineTuning(MethodEnv):
    """Few-shot fine-tuning of a pretrained e3nn potential (ELoRA).

    ## Description

    ``reset(seed)`` draws ``train_size`` and test clusters of the target (8–12 atoms, EMT
    labels) and random rotations of the test clusters; the agent fine-tunes the pretrained Cu
    potential of ``info["instance"]`` on the training clusters and answers its predictions.

    ## Observation space

    ``Dict``: ``train_positions`` ``Box(n_train, 12, 3)`` (Å, zero-padded), ``train_mask``
    ``MultiBinary((n_train, 12))`` (real atoms), ``train_energies`` ``Box(n_train)`` (eV),
    ``train_forces`` ``Box(n_train, 12, 3)`` (eV/Å), ``test_positions`` ``Box(N, 12, 3)`` and
    ``test_mask`` ``MultiBinary((N, 12))`` with N = n_test·(1 + rotations). ``info["instance"]``
    is the :class:`PretrainedPotential`.

    ## Action space

    ``Dict``: ``energies`` ``Box(N)`` and ``forces`` ``Box(N, 12, 3)`` (padded atoms ignored).

    ## Rewards

    −``force_mae`` (mean absolute force component error over the real atoms of every test
    configuration, rotated copies included). Metrics: ``force_mae``, ``energy_mae_per_atom``,
    ``equivariance_error`` (the largest ‖F̂(Rx)_i − R·F̂(x)_i‖ over rotated copies and atoms).
    A non-finite answer: −10 with ``info["invalid_action"]``.

    ## Episode end

    One step.

    ## Arguments

    ``target`` (``"Au"``, ``"Ag"``, ``"hot-Cu"``, ``"strained-Cu"``), ``train_size`` (1–200;
    default 10 small, 30 paper), ``rotations`` (≥ 1, default 1), ``size`` (test clusters:
    ``"small"`` 20, ``"paper"`` 200).
    """

    invalid_reward = -10.0

    def __init__(
        self,
        target: str = "Au",
        train_size: int | None = None,
        rotations: int = 1,
        size: str = "small",
    ):
        super().__init__(size)
        if target not in TARGETS:
            raise ValueError(f"target must be one of {sorted(TARGETS)}, got {target!r}")
        low, high = TRAIN_SIZES
        if train_size is not None and (
            not isinstance(train_size, int) or not low <= train_size <= high
        ):
            raise ValueError(f"train_size must be an int in [{low}, {high}], got {train_size!r}")
        if not isinstance(rotations, int) or rotations < 1:
            raise ValueError(f"rotations must be a positive int, got {rotations!r}")
        self.target, self.rotations = target, rotations
        self.train_size = train_size or SIZES[size].train
        self.test_size = SIZES[size].test
        self.pretrained = PretrainedPotential(
            potential.PotentialConfig(), potential.pretrained(potential.PotentialConfig())
        )
        a, n, total = potential.MAX_ATOMS, self.train_size, self.test_size * (1 + rotations)
        self.observation_space = spaces.Dict(
            {
                "train_positions": spaces.Box(-np.inf, np.inf, (n, a, 3), np.float64),
                "train_mask": spaces.MultiBinary((n, a)),
                "train_energies": spaces.Box(-np.inf, np.inf, (n,), np.float64),
                "train_forces": spaces.Box(-np.inf, np.inf, (n, a, 3), np.float64),
                "test_positions": spaces.Box(-np.inf, np.inf, (total, a, 3), np.float64),
                "test_mask": spaces.MultiBinary((total, a)),
            }
        )
        self.action_space = spaces.Dict(
            {
                "energies": spaces.Box(-np.inf, np.inf, (total,), np.float64),
                "forces": spaces.Box(-np.inf, np.inf, (total, a, 3), np.float64),
            }
        )

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, Any], Instance]:
        key = (self.target, self.train_size, self.test_size, self.rotations,
               repr(rng.bit_generator.state))  # fmt: skip
        if key not in _DRAWS:
            element, rattle, strain = TARGETS[self.target]
            train = potential.clusters(rng, self.train_size, element, rattle, strain)
            test = potential.clusters(rng, self.test_size, element, rattle, strain)
            instance = rotated_test_set(test, self.rotations, rng)
            _DRAWS[key] = (train, instance, rng.bit_generator.state)
            while len(_DRAWS) > CACHED_DRAWS:
                _DRAWS.popitem(last=False)
        train, instance, after = _DRAWS[key]
        rng.bit_generator.state = after  # a cached draw leaves the generator as a fresh one does
        observation = {
            "train_positions": train.positions.copy(),
            "train_mask": train.mask.copy(),
            "train_energies": train.energies.copy(),
            "train_forces": train.forces.copy(),
            "test_positions": instance.test.positions.copy(),
            "test_mask": instance.test.mask.copy(),
        }
        return observation, instance

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        return observation, {**info, "instance": self.pretrained}

    def score(self, solution: dict[str, np.ndarray]) -> tuple[float, dict[str, float]]:
        test: potential.ClusterSet = self.instance.test
        real = test.mask.astype(bool)
        force_error = np.abs(solution["forces"] - test.forces)[real].mean()
        atoms = real.sum(axis=1)
        energy_error = np.mean(np.abs(solution["energies"] - test.energies) / atoms)
        rotated = np.einsum(
            "cai,cji->caj", solution["forces"][self.instance.originals], self.instance.rotations
        )
        gap = np.linalg.norm(solution["forces"][self.instance.copies] - rotated, axis=-1)
        equivariance = float(np.max(gap[real[self.instance.copies]]))
        return -float(force_error), {
            "force_mae": float(force_error),
            "energy_mae_per_atom": float(energy_error),
            "equivariance_error": equivariance,
        }
