"""LoRT, D-LoRT and their baselines on ``Methods/TensorTransfer-v0``.

Wang, Qiu, Jin, Zhou, Zhao, "Low-Rank Tensor Transitions (LoRT) for Transferable Tensor
Regression", ICML 2025 (``docs/methods.md``). Every estimator here solves least squares plus
tensor-nuclear-norm (TNN) penalties by proximal gradient; the module reads top to bottom:

1. **t-SVD algebra.** TNN(W) = (1/d3) Σ_j ‖Ŵ_j‖_* over the frontal slices Ŵ_j of the FFT of W
   along mode 3 (Lu et al., 2019); its proximal map shrinks every slice's singular values
   (:func:`t_svt`); :func:`t_factors` splits a low-tubal-rank tensor into two real factors.
2. **Losses.** A block of samples is ½‖y − A(W)‖² (:class:`LeastSquares`); in D-LoRT a source's
   local estimate Ŵ_k stands in for its samples as ½·h_k‖P_k(W − Ŵ_k)‖²
   (:class:`SubspaceProximity`), P_k the projection onto Ŵ_k's singular subspaces and h_k =
   ‖A_k‖²_F / (d1·d2·d3) the design's average curvature (n_k·c_k² in sensing).
3. **Fusion step** (:func:`fuse`), the TransFusion pattern (He, Sun, Li, AISTATS 2024) with
   nuclear norms in place of ℓ1 norms: with N = Σ_k n_k and D_0 = 0,

       min over W_0, D_1..D_K of  (1/2N) Σ_k ‖y_k − A_k(W_0 + D_k)‖²
                                  + λ_0·TNN(W_0) + Σ_{k≥1} λ_k·TNN(D_k),

   jointly over the target W_0 and the source shifts D_k = W_k − W_0, by FISTA with step 1/L
   (the penalty is separable: one t-SVT per variable and step). It returns Ŵ_0, which borrows
   the sources' samples as far as their shifts are low-rank.
4. **Refinement** (:func:`refine`): a target-only low-tubal-rank correction Δ̂ fitted to the
   target's residuals y_0 − A_0(Ŵ_0), penalised at the target's own scale; LoRT returns
   Ŵ_0 + Δ̂.

λ is never tuned on the truth. A variable whose loss gradient collects the blocks B, with the loss
scaled by 1/N, gets λ = ``penalty``·σ·√((d1 + d2)·d3)·‖A_B‖_F / (√(d1 d2 d3)·N): for a unit Gaussian
design that is ``penalty``·σ·√((d1 + d2)·d3 / N), the usual noise scaling of a TNN penalty, and it
gives TransFusion's weights λ_k = λ_0·√(n_k / N), adapting to covariate shift through ‖A_k‖_F. The
default ``penalty`` is one constant for every task, shift and size.

Agents (``act`` returns the estimate and what it cost):

- ``lort`` (:class:`LoRTAgent`): fusion step + refinement;
- ``lort-fusion-only`` (:class:`LoRTFusionOnlyAgent`): the fusion step alone;
- ``d-lort`` (:class:`DLoRTAgent`): one communication round. Each source fits a TNN regression
  on its own samples, debiases it (:func:`debias_one_step`) and sends it as two factor tensors,
  r_k·(d1 + d2)·d3 floats, plus n_k and h_k; the target runs the fusion step with the
  :class:`SubspaceProximity` stand-ins in place of the sources' samples, then the refinement;
- ``target-only`` (:class:`TargetOnlyAgent`): TNN regression on the target's samples;
- ``pooled`` (:class:`PooledAgent`): TNN regression on all samples as one task (ignores shift).

A centralised method's ``communicated_floats`` is the raw source data it needs at the target
(non-zero design entries plus responses); ``iterations`` counts FISTA iterations over all solves.

Departures from the paper: its exact fusion weights, λ constants and D-LoRT message were not
available to us. We follow TransFusion's weights (above) with one constant ``penalty`` fixed for
the whole task family. D-LoRT's debiased local estimates (the pattern of one-shot distributed
estimators built on debiased local fits, Lee, Sun, Liu and Taylor, JMLR 2017) and its
subspace stand-in loss are our reading of "each source sends a local low-tubal-rank estimate":
a plain TNN estimate under a full quadratic stand-in was much worse (its shrinkage and its zeros
outside the estimated subspaces are taken as data). FISTA runs at most 150 iterations per solve
(our time budget: at most 15 s a configuration), stopping earlier once it settles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from omnigym.envs.methods.lort import t_product

# ---- t-SVD algebra ---------------------------------------------------------------------------


def _fourier_slices(tensor: np.ndarray) -> np.ndarray:
    """The frontal slices 0..⌊d3/2⌋ of the FFT along mode 3, as a stack (h, d1, d2); the other
    slices are their complex conjugates."""
    return np.moveaxis(np.fft.rfft(tensor, axis=2), 2, 0)


def _from_slices(slices: np.ndarray, d3: int) -> np.ndarray:
    return np.fft.irfft(np.moveaxis(slices, 0, 2), n=d3, axis=2)


def _slice_weights(d3: int) -> np.ndarray:
    """How many of the d3 Fourier slices each stored slice stands for (1 or 2)."""
    weights = np.full(d3 // 2 + 1, 2.0)
    weights[0] = 1.0
    if d3 % 2 == 0:
        weights[-1] = 1.0
    return weights


def _real_slices(d3: int) -> set[int]:
    """The stored slices that are real for a real tensor: the first, and the middle one when d3
    is even."""
    return {0, d3 // 2} if d3 % 2 == 0 else {0}


def tnn(tensor: np.ndarray) -> float:
    """The tensor nuclear norm (1/d3) Σ_j ‖Ŵ_j‖_* (the matrix nuclear norm when d3 = 1)."""
    d3 = tensor.shape[2]
    singular = np.linalg.svd(_fourier_slices(tensor), compute_uv=False)
    return float(_slice_weights(d3) @ singular.sum(axis=1) / d3)


def t_svt(tensor: np.ndarray, threshold: float) -> np.ndarray:
    """The proximal map of ``threshold``·TNN: the singular values of every Fourier slice
    shrunk by ``threshold``."""
    u, singular, vh = np.linalg.svd(_fourier_slices(tensor), full_matrices=False)
    shrunk = np.maximum(singular - threshold, 0.0)
    return _from_slices((u * shrunk[:, None, :]) @ vh, tensor.shape[2])


def _slice_svds(tensor: np.ndarray, tolerance: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per stored Fourier slice, its left singular vectors scaled by the singular values and its
    right singular vectors (rows), cut at ``tolerance`` × the tensor's largest singular value.
    Real slices get a real SVD, so factors built from them stay real tensors."""
    slices = _fourier_slices(tensor)
    real = _real_slices(tensor.shape[2])
    svds = [
        np.linalg.svd(matrix.real if j in real else matrix, full_matrices=False)
        for j, matrix in enumerate(slices)
    ]
    top = max((float(s[0]) for _, s, _ in svds if s.size), default=0.0)
    kept = []
    for u, s, vh in svds:
        rank = int((s > tolerance * top).sum()) if top > 0 else 0
        kept.append((u[:, :rank] * s[:rank], vh[:rank]))
    return kept


def tubal_rank(tensor: np.ndarray, tolerance: float = 1e-9) -> int:
    """The largest rank of the Fourier slices (singular values above ``tolerance`` × the
    largest)."""
    return max(left.shape[1] for left, _ in _slice_svds(tensor, tolerance))


def t_factors(tensor: np.ndarray, tolerance: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Real factors (d1, r, d3) and (r, d2, d3) whose t-product is ``tensor``, r its tubal
    rank."""
    d1, d2, d3 = tensor.shape
    svds = _slice_svds(tensor, tolerance)
    rank = max(left.shape[1] for left, _ in svds)
    left = np.zeros((len(svds), d1, rank), dtype=complex)
    right = np.zeros((len(svds), rank, d2), dtype=complex)
    for j, (scaled, rows) in enumerate(svds):
        left[j, :, : scaled.shape[1]] = scaled
        right[j, : rows.shape[0]] = rows
    return _from_slices(left, d3), _from_slices(right, d3)


# ---- losses ----------------------------------------------------------------------------------


def _largest_eigenvalue(matrix: np.ndarray) -> float:
    """‖A‖₂², from the smaller of the two Gram matrices."""
    gram = matrix @ matrix.T if matrix.shape[0] <= matrix.shape[1] else matrix.T @ matrix
    return float(np.linalg.eigvalsh(gram)[-1])


class LeastSquares:
    """½‖y − A w‖² over one block of samples (w the flattened tensor)."""

    def __init__(self, design: np.ndarray, response: np.ndarray):
        self.design = np.asarray(design, dtype=np.float64).reshape(len(design), -1)
        self.response = np.asarray(response, dtype=np.float64)
        self.samples = len(self.design)
        self.curvature = _largest_eigenvalue(self.design) if self.samples else 0.0
        self.energy = float(np.sum(self.design**2))  # ‖A‖_F², the scale of the gradient's noise

    def gradient(self, flat: np.ndarray) -> np.ndarray:
        return self.design.T @ (self.design @ flat - self.response)

    def residual(self, flat: np.ndarray) -> LeastSquares:
        """The same block with responses y − A w (what a correction to w must explain)."""
        return LeastSquares(self.design, self.response - self.design @ flat)

    def raw_floats(self) -> int:
        """Floats needed to ship this block: its non-zero design entries and its responses."""
        return int(np.count_nonzero(self.design)) + self.samples

    @staticmethod
    def pooled(blocks: Sequence[LeastSquares]) -> LeastSquares:
        return LeastSquares(
            np.concatenate([block.design for block in blocks]),
            np.concatenate([block.response for block in blocks]),
        )


class SubspaceProximity:
    """½·h‖P(w − c)‖²: a source's local estimate c standing in for its n samples (D-LoRT).

    P projects every Fourier slice onto the singular subspaces of c (X̂_j ↦ U_j U_jᴴ X̂_j V_j
    V_jᴴ): inside them c carries the information of the source's samples (curvature h, as in
    their own loss); outside them it carries none, so the fusion fills those directions from
    the other tasks instead of pulling them towards zero."""

    def __init__(self, center: np.ndarray, curvature: float, samples: int):
        self.shape = center.shape
        self.center = center.ravel()
        self.curvature = float(curvature)
        self.samples = int(samples)
        self.energy = self.curvature * self.center.size
        self.bases = [
            (scaled / np.linalg.norm(scaled, axis=0), rows.conj().T)
            for scaled, rows in _slice_svds(center, 1e-9)
        ]

    def project(self, flat: np.ndarray) -> np.ndarray:
        slices = _fourier_slices(flat.reshape(self.shape))
        projected = np.stack(
            [
                left @ (left.conj().T @ matrix @ right) @ right.conj().T
                for (left, right), matrix in zip(self.bases, slices, strict=True)
            ]
        )
        return _from_slices(projected, self.shape[2]).ravel()

    def gradient(self, flat: np.ndarray) -> np.ndarray:
        return self.curvature * self.project(flat - self.center)


# ---- solvers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """Solver settings shared by every agent."""

    penalty: float = 1.0  # the constant in front of σ·√((d1 + d2)·d3 / N)
    max_iterations: int = 150  # FISTA iterations per solve
    tolerance: float = 1e-6  # stop when ‖θ_t − θ_{t−1}‖ ≤ tolerance·max(‖θ_t‖, 1)


Block = LeastSquares | SubspaceProximity  # a term of the fusion loss


@dataclass(frozen=True)
class Fit:
    """An estimate and the FISTA iterations it took."""

    estimate: np.ndarray
    iterations: int


def penalty_level(
    blocks: Sequence[Block], total: int, shape: tuple[int, ...], noise: float, settings: Settings
) -> float:
    """λ of a variable whose loss gradient collects ``blocks`` (loss scaled by 1/``total``)."""
    d1, d2, d3 = shape
    energy = sum(block.energy for block in blocks)
    return settings.penalty * noise * np.sqrt((d1 + d2) * d3 * energy / (d1 * d2 * d3)) / total


def fuse(
    target: LeastSquares,
    sources: Sequence[Block],
    shape: tuple[int, int, int],
    noise: float,
    settings: Settings,
) -> Fit:
    """The fusion step (module docstring, 3): Ŵ_0. With no sources: TNN regression on
    ``target``."""
    blocks = [target, *sources]
    total = sum(block.samples for block in blocks)
    # θ = (W_0, D_1, …, D_K); row k of the coupling maps θ to W_k = W_0 + D_k.
    coupling = np.eye(len(blocks))
    coupling[:, 0] = 1.0
    thresholds = [penalty_level(blocks, total, shape, noise, settings)]
    thresholds += [penalty_level([source], total, shape, noise, settings) for source in sources]
    theta, iterations = _fista(blocks, coupling, np.array(thresholds), total, shape, settings)
    return Fit(theta[0].reshape(shape), iterations)


def refine(target: LeastSquares, fused: np.ndarray, noise: float, settings: Settings) -> Fit:
    """The refinement (module docstring, 4): Ŵ_0 plus a low-tubal-rank correction fitted to the
    target's residuals."""
    correction = fuse(target.residual(fused.ravel()), [], fused.shape, noise, settings)
    return Fit(fused + correction.estimate, correction.iterations)


def _fista(blocks, coupling, thresholds, total, shape, settings):
    """FISTA, step 1/L, on (1/total)·Σ_k loss_k(coupling[k] @ θ) + Σ_j thresholds[j]·TNN(θ_j).

    L = ‖diag(√curvature_k)·coupling‖₂² / total bounds the gradient's Lipschitz constant."""
    roots = np.sqrt([block.curvature for block in blocks])
    lipschitz = np.linalg.norm(roots[:, None] * coupling, 2) ** 2 / total
    theta = np.zeros((len(blocks), int(np.prod(shape))))
    if lipschitz == 0:
        return theta, 0
    momentum, speed, iterations = theta, 1.0, 0
    while iterations < settings.max_iterations:
        iterations += 1
        tensors = coupling @ momentum
        gradients = np.stack([b.gradient(w) for b, w in zip(blocks, tensors, strict=True)])
        stepped = momentum - coupling.T @ gradients / (total * lipschitz)
        updated = np.stack(
            [
                t_svt(variable.reshape(shape), level / lipschitz).ravel()
                for variable, level in zip(stepped, thresholds, strict=True)
            ]
        )
        next_speed = (1.0 + np.sqrt(1.0 + 4.0 * speed**2)) / 2.0
        change = np.linalg.norm(updated - theta)
        momentum = updated + ((speed - 1.0) / next_speed) * (updated - theta)
        theta, speed = updated, next_speed
        if change <= settings.tolerance * max(np.linalg.norm(theta), 1.0):
            break
    return theta, iterations


def debias_one_step(block: LeastSquares, estimate: np.ndarray) -> np.ndarray:
    """``estimate`` debiased on ``block``: one gradient step of length 1/h (h = ‖A‖²_F / (d1 d2
    d3), so that E[AᵀA]/h = I), Ŵ + Aᵀ(y − A(Ŵ))/h, then every Fourier slice cut back to the rank
    it had in ``estimate``. This undoes the shrinkage of the singular values that the TNN
    penalty leaves, as the one-step debiased estimators of low-rank regression do (Xia, 2019)."""
    curvature = block.energy / estimate.size
    step = block.gradient(estimate.ravel()).reshape(estimate.shape) / curvature
    ranks = [rows.shape[0] for _, rows in _slice_svds(estimate, 1e-9)]
    u, singular, vh = np.linalg.svd(_fourier_slices(estimate - step), full_matrices=False)
    kept = np.arange(singular.shape[1])[None, :] < np.array(ranks)[:, None]
    return _from_slices((u * (singular * kept)[:, None, :]) @ vh, estimate.shape[2])


# ---- agents ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One observation of ``Methods/TensorTransfer-v0`` as loss blocks."""

    target: LeastSquares
    sources: list[LeastSquares]
    shape: tuple[int, int, int]
    noise: float

    @classmethod
    def from_observation(cls, observation: Mapping[str, np.ndarray]) -> Problem:
        design = np.asarray(observation["target_design"], dtype=np.float64)
        return cls(
            target=LeastSquares(design, observation["target_response"]),
            sources=[
                LeastSquares(source_design, source_response)
                for source_design, source_response in zip(
                    observation["source_design"], observation["source_response"], strict=True
                )
            ],
            shape=tuple(design.shape[1:]),
            noise=float(np.asarray(observation["noise_std"]).ravel()[0]),
        )

    def source_floats(self) -> int:
        return sum(source.raw_floats() for source in self.sources)


class _Estimator:
    """What every agent shares: settings, ``reset`` and turning an estimate into a solution.

    The estimators are deterministic; ``seed`` is accepted for the agent protocol."""

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        penalty: float = Settings.penalty,
        max_iterations: int = Settings.max_iterations,
        tolerance: float = Settings.tolerance,
    ):
        self.settings = Settings(penalty, max_iterations, tolerance)

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the estimate depends on the observation only."""

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> dict:
        estimate, iterations, floats = self.estimate(Problem.from_observation(observation))
        return {
            "estimate": estimate,
            "iterations": np.array([float(iterations)]),
            "communicated_floats": np.array([float(floats)]),
        }

    def estimate(self, problem: Problem) -> tuple[np.ndarray, int, int]:
        """(estimate of W_0, solver iterations, floats shipped to the target)."""
        raise NotImplementedError


class TargetOnlyAgent(_Estimator):
    """TNN regression on the target's samples alone."""

    def estimate(self, problem):
        fit = fuse(problem.target, [], problem.shape, problem.noise, self.settings)
        return fit.estimate, fit.iterations, 0


class PooledAgent(_Estimator):
    """TNN regression on every sample, target and sources, as one task (ignores the shift)."""

    def estimate(self, problem):
        pooled = LeastSquares.pooled([problem.target, *problem.sources])
        fit = fuse(pooled, [], problem.shape, problem.noise, self.settings)
        return fit.estimate, fit.iterations, problem.source_floats()


class LoRTFusionOnlyAgent(_Estimator):
    """LoRT's fusion step without the refinement."""

    def estimate(self, problem):
        fit = fuse(problem.target, problem.sources, problem.shape, problem.noise, self.settings)
        return fit.estimate, fit.iterations, problem.source_floats()


class LoRTAgent(_Estimator):
    """LoRT: the fusion step, then the target-only refinement."""

    def estimate(self, problem):
        fused = fuse(problem.target, problem.sources, problem.shape, problem.noise, self.settings)
        refined = refine(problem.target, fused.estimate, problem.noise, self.settings)
        return refined.estimate, fused.iterations + refined.iterations, problem.source_floats()


class DLoRTAgent(_Estimator):
    """D-LoRT: one round in which each source sends its debiased local low-tubal-rank fit."""

    def estimate(self, problem):
        stand_ins, floats, iterations = [], 0, 0
        for source in problem.sources:
            local = fuse(source, [], problem.shape, problem.noise, self.settings)
            left, right = t_factors(debias_one_step(source, local.estimate))
            # The message: two factor tensors, the sample count and the design's curvature.
            floats += left.size + right.size + 2
            iterations += local.iterations
            curvature = source.energy / int(np.prod(problem.shape))
            stand_ins.append(SubspaceProximity(t_product(left, right), curvature, source.samples))
        fused = fuse(problem.target, stand_ins, problem.shape, problem.noise, self.settings)
        refined = refine(problem.target, fused.estimate, problem.noise, self.settings)
        iterations += fused.iterations + refined.iterations
        return refined.estimate, iterations, floats
