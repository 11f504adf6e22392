"""Transferable low-tubal-rank tensor regression: the task of LoRT / D-LoRT.

Wang, Qiu, Jin, Zhou, Zhao, "Low-Rank Tensor Transitions (LoRT) for Transferable Tensor
Regression", ICML 2025 (``docs/methods.md``). A target task with few samples and K source tasks
with more samples all observe linear measurements of related low-tubal-rank tensors; a method
estimates the target tensor, using the sources where they help. The methods (LoRT, D-LoRT) and
their baselines are the agents of :mod:`omnigym.agents.methods.lort`.

Tubal rank comes from the t-SVD (Kilmer and Martin, 2011): a tensor of shape (d1, d2, d3) is
Fourier-transformed along its third mode and each frontal slice of the transform is a d1 × d2
matrix; the tubal rank is the largest rank of those slices, and the t-product of two tensors is
the slice-wise matrix product in that domain (:func:`t_product`, shared with the agents).

Instance (one draw per ``reset``): a shared tensor S of tubal rank 2 with ‖S‖_F = 1, a
target-specific part T of tubal rank 1 with ‖T‖_F = :data:`TARGET_DEPARTURE`, and per source a
shift Δ_k of tubal rank 1 with ‖Δ_k‖_F = :data:`SHIFT_UNIT`; the target is W₀ = S + T and source
k is W_k = S + shift·Δ_k. Each low-rank part is the t-product of two Gaussian factor tensors,
rescaled. Measurements are y_i = ⟨A_i, W⟩ + ε_i with ε_i ~ N(0, noise²):

- ``task="sensing"``: A_i has i.i.d. N(0, c²) entries; the target has n₀ samples, each source
  n_k (paper size: 16 × 16 × 4, n₀ = 100 below the target's degrees of freedom, n_k = 400);
- ``task="completion"``: A_i = c·√(d1 d2 d3)·e_j for an entry j sampled without replacement:
  10 % of the target's entries, 40 % of each source's. The factor is sensing's isotropic
  scaling (E[⟨A_i, W⟩²] = c²‖W‖²_F in both tasks), so the noise means the same in both.

c = 1 for the target; the sources' design scales c_k are spread evenly over
[1 − covariate_shift, 1 + covariate_shift] (the covariate shift; 0.7 … 1.3 by default).

Observation (``Dict``): ``target_design`` (n₀, d1, d2, d3), ``target_response`` (n₀,),
``source_design`` (K, n_k, d1, d2, d3), ``source_response`` (K, n_k) and ``noise_std`` (1,).
Completion designs are the scaled one-hot rows A_i, so both tasks share one observation format.

Action (``Dict``): ``estimate`` Box(d1, d2, d3), the estimate Ŵ₀; ``iterations`` and
``communicated_floats`` Box(0, ∞, (1,)), what producing it cost: solver iterations, and the
floats the method needs shipped to the target's site (raw source data for a centralised method,
local estimates for D-LoRT). The environment cannot check those two; it records them.

Reward: −‖Ŵ₀ − W₀‖_F / ‖W₀‖_F. Metrics: ``relative_error``, ``iterations``,
``communicated_floats``. A non-finite estimate is scored as the zero estimate would be (−1) and
flagged ``invalid_action``. One step ends the episode.

Arguments: ``task`` ("sensing" | "completion"), ``shift`` (s ≥ 0; the paper's grid is 0, 0.5,
2), ``covariate_shift`` (in [0, 1)), ``sources`` (K ≥ 1), ``noise`` (σ > 0), ``size``
("small": 8 × 8 × 3, n₀ = 40, n_k = 160; "paper": 16 × 16 × 4, n₀ = 100, n_k = 400) and
``shape`` (replaces the size's tensor shape, e.g. the paper's 12 × 12 × 4 transfer
experiment; the sample counts stay the size's).

Departures from the paper: the generator is our reading of the paper's simulation. The component
norms :data:`TARGET_DEPARTURE` and :data:`SHIFT_UNIT` are ours: at s = 2 each source's shift is
as large as the shared component, and with them the paper-size sensing task gives target-only
the paper's error (≈ 0.87). Covariate shift is a per-source design scale, for completion too (a
rescaled observation of the entry) rather than non-uniform sampling. The solution also reports
its cost, because a one-step task cannot watch a method communicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from .core import MethodEnv

TASKS = ("sensing", "completion")

#: ‖T‖_F, the target's own departure from the shared component (‖S‖_F = 1).
TARGET_DEPARTURE = 0.2
#: ‖Δ_k‖_F: source k departs from the shared component by shift · SHIFT_UNIT.
SHIFT_UNIT = 0.5
#: Tubal ranks of the shared component, the target's own part and each source shift.
SHARED_RANK, TARGET_RANK, SHIFT_RANK = 2, 1, 1
#: Fractions of the entries observed in completion: target, each source.
COMPLETION_FRACTIONS = (0.10, 0.40)


@dataclass(frozen=True)
class Dimensions:
    """Tensor shape and sample counts of one size (sensing; completion uses fractions)."""

    shape: tuple[int, int, int]
    target_samples: int
    source_samples: int


SIZES = {
    "small": Dimensions(shape=(8, 8, 3), target_samples=40, source_samples=160),
    "paper": Dimensions(shape=(16, 16, 4), target_samples=100, source_samples=400),
}


def t_product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The t-product of real tensors (a, r, d3) * (r, b, d3) -> (a, b, d3): matrix products of
    the frontal slices in the Fourier domain along the third mode."""
    d3 = left.shape[2]
    product = np.einsum(
        "irj,rkj->ikj", np.fft.rfft(left, axis=2), np.fft.rfft(right, axis=2), optimize=True
    )
    return np.fft.irfft(product, n=d3, axis=2)


def low_tubal_rank(
    rng: np.random.Generator, shape: tuple[int, int, int], rank: int, norm: float
) -> np.ndarray:
    """A random tensor of tubal rank ``rank`` (t-product of Gaussian factors) with Frobenius
    norm ``norm``."""
    d1, d2, d3 = shape
    tensor = t_product(rng.standard_normal((d1, rank, d3)), rng.standard_normal((rank, d2, d3)))
    return tensor * (norm / np.linalg.norm(tensor))


class TensorTransfer(MethodEnv):
    """Estimate a target low-tubal-rank tensor from few samples plus K shifted sources.

    See the module docstring for the instance, spaces, reward and arguments.
    """

    invalid_reward = -1.0

    def __init__(
        self,
        task: str = "sensing",
        shift: float = 0.5,
        covariate_shift: float = 0.3,
        sources: int = 5,
        noise: float = 0.5,
        size: str = "small",
        shape: Sequence[int] | None = None,
    ):
        super().__init__(size)
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if not shift >= 0:
            raise ValueError(f"shift must be >= 0, got {shift!r}")
        if not 0 <= covariate_shift < 1:
            raise ValueError(f"covariate_shift must be in [0, 1), got {covariate_shift!r}")
        if int(sources) != sources or sources < 1:
            raise ValueError(f"sources must be a positive integer, got {sources!r}")
        if not noise > 0:
            raise ValueError(f"noise must be > 0, got {noise!r}")
        self.task, self.shift, self.covariate_shift = task, float(shift), float(covariate_shift)
        self.sources, self.noise = int(sources), float(noise)
        dims = SIZES[size]
        if shape is not None and (len(shape) != 3 or any(int(d) != d or d < 1 for d in shape)):
            raise ValueError(f"shape must be three positive integers, got {shape!r}")
        self.shape = dims.shape if shape is None else tuple(int(d) for d in shape)
        entries = int(np.prod(self.shape))
        if task == "sensing":
            self.target_samples, self.source_samples = dims.target_samples, dims.source_samples
        else:
            self.target_samples, self.source_samples = (
                round(fraction * entries) for fraction in COMPLETION_FRACTIONS
            )
        self.design_scales = (
            np.linspace(1 - self.covariate_shift, 1 + self.covariate_shift, self.sources)
            if self.sources > 1
            else np.ones(1)
        )
        unbounded = {"low": -np.inf, "high": np.inf, "dtype": np.float64}
        n0, nk, k = self.target_samples, self.source_samples, self.sources
        self.observation_space = spaces.Dict(
            {
                "target_design": spaces.Box(shape=(n0, *self.shape), **unbounded),
                "target_response": spaces.Box(shape=(n0,), **unbounded),
                "source_design": spaces.Box(shape=(k, nk, *self.shape), **unbounded),
                "source_response": spaces.Box(shape=(k, nk), **unbounded),
                "noise_std": spaces.Box(0.0, np.inf, (1,), np.float64),
            }
        )
        cost = spaces.Box(0.0, np.inf, (1,), np.float64)
        self.action_space = spaces.Dict(
            {
                "estimate": spaces.Box(shape=self.shape, **unbounded),
                "iterations": cost,
                "communicated_floats": cost,
            }
        )

    def _design(self, rng: np.random.Generator, samples: int, scale: float) -> np.ndarray:
        entries = int(np.prod(self.shape))
        if self.task == "sensing":
            rows = rng.standard_normal((samples, entries))
        else:
            rows = np.zeros((samples, entries))
            # √(d1 d2 d3)·e_j, the isotropic scaling of the sensing design (module docstring).
            picked = rng.choice(entries, size=samples, replace=False)
            rows[np.arange(samples), picked] = np.sqrt(entries)
        return scale * rows.reshape(samples, *self.shape)

    def _measure(self, rng: np.random.Generator, design: np.ndarray, tensor: np.ndarray):
        clean = design.reshape(len(design), -1) @ tensor.ravel()
        return clean + self.noise * rng.standard_normal(len(design))

    def draw(self, rng: np.random.Generator):
        shared = low_tubal_rank(rng, self.shape, SHARED_RANK, 1.0)
        target = shared + low_tubal_rank(rng, self.shape, TARGET_RANK, TARGET_DEPARTURE)
        sources = [
            shared + self.shift * low_tubal_rank(rng, self.shape, SHIFT_RANK, SHIFT_UNIT)
            for _ in range(self.sources)
        ]
        target_design = self._design(rng, self.target_samples, 1.0)
        source_design = np.stack(
            [self._design(rng, self.source_samples, scale) for scale in self.design_scales]
        )
        observation = {
            "target_design": target_design,
            "target_response": self._measure(rng, target_design, target),
            "source_design": source_design,
            "source_response": np.stack(
                [
                    self._measure(rng, design, tensor)
                    for design, tensor in zip(source_design, sources, strict=True)
                ]
            ),
            "noise_std": np.array([self.noise]),
        }
        return observation, target

    def score(self, solution):
        error = float(np.linalg.norm(solution["estimate"] - self.instance))
        relative = error / float(np.linalg.norm(self.instance))
        return -relative, {
            "relative_error": relative,
            "iterations": float(solution["iterations"][0]),
            "communicated_floats": float(solution["communicated_floats"][0]),
        }
