"""Olica and its structured-pruning baselines on ``Methods/StructuredPruning-v0``.

He, Lin, "Olica: Efficient Structured Pruning of Large Language Models without Retraining",
ICML 2025.

Every agent reads the model and the calibration pass from ``info["instance"]``
(:class:`~omnigym.envs.methods.olica.PruningProblem`) and answers the pruned model within the
budget, in three parts per layer:

- **Q and K.** Olica replaces each projection W (d × out) by its truncated SVD weighted by the
  calibration inputs' scale a (a_i = √mean x_i²): W ≈ diag(1/a)·U_r·S_r·V_rᵀ from the SVD of
  diag(a)·W, stored as two factors (``weighted-svd``; ``svd`` drops the weighting). The
  baselines prune rotary pairs instead: dimensions p and p + head_dim/2 of a key/value head's
  K columns and of its query heads' Q columns go together, so the rotary embedding is
  untouched.
- **V and O: orthogonal neuron decomposition.** For key/value head g, V_g (d × head_dim) feeds
  the query heads h of its group, each through O_h (head_dim × d). The product V_g·[O_h]_h is
  decomposed through thin QR factors, V_g = Q₁R₁ and [O_h]_hᵀ = Q₂R₂, and the SVD of the
  head_dim × head_dim core R₁R₂ᵀ = U S Wᵀ: the new neurons are V′ = Q₁U S^½ and
  O′ = S^½ Wᵀ Q₂ᵀ (= M⁻¹O with V′ = V_g M, M = R₁⁻¹U S^½). Attention is linear in the
  values, so the model is unchanged (exactly, up to float error) until neurons are removed; the
  neurons are ordered by the singular values of each head group's OV product, and cutting one
  costs what cutting a raw neuron would. Without decomposition the same scores are taken on
  the raw neurons.
- **Neuron scores** (Wanda-style, the paper's): a V/O neuron scores ‖V′_{:,j} ⊙ a‖ +
  Σ_h ‖O′_{h,j,:}‖·√mean z′_{h,j}² (z′ the rotated head outputs, from the calibration pass's
  head Gram matrices); an FFN neuron ‖gate_{:,j} ⊙ a‖ + ‖up_{:,j} ⊙ a‖ + ‖down_{j,:}‖·
  √mean m_j² (m the hidden activation); a rotary pair the sum of its columns' ‖W_{:,c} ⊙ a‖.
  Magnitude pruning drops every activation factor. The lowest-scoring units of each head group
  and each layer go.
- **Allocation** (the paper's, for s ≤ 0.4): Q/K lose a share s_qk = 2s of their parameters,
  V/O s_vo = 2s/(1 + k) with k = 3, the FFNs the rest of the budget (above 0.4:
  s_vo = 2s/(1 + k), s_qk = k·s_vo).
- **Linear calibration** (Olica): on the ⌈20 %⌉ of layers (the last excluded) whose FFN output
  is best predicted linearly from its input (mean Pearson correlation of a ridge fit), the
  pruned FFN's residual R = FFN(X) − FFN′(X) is fit by ridge regression B = (XᵀX + λI)⁻¹XᵀR,
  λ = 0.5·mean diag(XᵀX); each output dimension is weighted by w = σ((c − c̄)/0.05) from its
  correlation c between prediction and residual, and B·diag(w) is cut to rank ⌊0.03·d⌋ by SVD:
  ``cal_a`` = U_r S_r, ``cal_b`` = V_rᵀ diag(w)⁻¹.

Agents: ``olica`` (:class:`OlicaAgent`: weighted SVD, decomposition, calibration; keyword
arguments ``qk``, ``decompose``, ``calibrate``, ``truncate`` — ``False`` rotates V/O and prunes
nothing, the exactness check — ``k``, ``ridge``, ``calibrated_layers``), ``olica-no-calibration``,
``olica-plain-svd``, ``wanda-prune`` (Wanda-style structured pruning: rotary pairs, raw V/O and
FFN neurons) and ``magnitude-prune`` (the same by weight magnitude).

Departures from the paper: statistics come from one pass of the dense model (see the
environment's docstring), and the calibration regressions use 2,048 of its FFN inputs per
layer. The decomposition is of the exact OV product (the paper's fast variant takes the SVD of
the activation-scaled O alone); grouped-query attention is handled by decomposing each
key/value head with all of its query heads' O blocks at once. The paper keeps the lowest 1 % of
FFN scores unpruned; here the lowest scores go first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import linalg, special

from omnigym.envs.methods.llama import LlamaConfig
from omnigym.envs.methods.olica import (
    CalibrationStatistics,
    PruningProblem,
    dense_solution,
    factor_ranks,
    kept_parameters,
)

QK_MODES = ("weighted-svd", "svd", "pairs")
SCORES = ("wanda", "magnitude")
EPS = 1e-8


@dataclass(frozen=True)
class Settings:
    """One pruning recipe (see the module docstring)."""

    qk: str = "weighted-svd"
    decompose: bool = True
    calibrate: bool = True
    truncate: bool = True
    scores: str = "wanda"
    k: float = 3.0
    ridge: float = 0.5
    calibrated_layers: float = 0.2
    correlation_temperature: float = 0.05

    def __post_init__(self) -> None:
        if self.qk not in QK_MODES:
            raise ValueError(f"qk must be one of {QK_MODES}, got {self.qk!r}")
        if self.scores not in SCORES:
            raise ValueError(f"scores must be one of {SCORES}, got {self.scores!r}")
        if self.k <= 0 or self.ridge <= 0 or not 0 < self.calibrated_layers <= 1:
            raise ValueError("k and ridge must be positive, calibrated_layers in (0, 1]")


# ---- allocation ---------------------------------------------------------------------------------


def shares(sparsity: float, k: float) -> tuple[float, float]:
    """``(s_qk, s_vo)``: the share of Q/K and of V/O parameters to remove."""
    s_vo = 2 * sparsity / (1 + k)
    return (2 * sparsity if sparsity <= 0.4 else k * s_vo), s_vo


def qk_rank(config: LlamaConfig, name: str, s_qk: float) -> int:
    """The rank that keeps (1 − s_qk) of projection ``name``'s parameters as two factors."""
    fan_in, fan_out = config.shapes()[name]
    return int(np.floor((1 - s_qk) * fan_in * fan_out / (fan_in + fan_out)))


def calibrated_count(config: LlamaConfig, fraction: float) -> int:
    """How many FFNs get a linear branch: ⌈fraction·L⌉, at most L − 1 (never the last)."""
    return max(1, min(config.layers - 1, int(np.ceil(fraction * config.layers))))


# ---- Q and K ------------------------------------------------------------------------------------


def low_rank(weight: np.ndarray, scale: np.ndarray | None, rank: int) -> tuple[np.ndarray, ...]:
    """``(a, b)`` with weight ≈ a @ b of rank ``rank``: the truncated SVD of diag(scale)·weight,
    unscaled (plain SVD when ``scale`` is None)."""
    scale = np.ones(len(weight)) if scale is None else scale
    u, s, vt = np.linalg.svd(scale[:, None] * weight.astype(np.float64), full_matrices=False)
    return u[:, :rank] / scale[:, None], s[:rank, None] * vt[:rank]


def rotary_pair_columns(config: LlamaConfig, group: int, pair: int) -> tuple[list, list]:
    """Q and K columns of rotary pair ``pair`` of key/value head ``group``."""
    half = config.head_dim // 2
    offsets = (pair, pair + half)
    k_columns = [group * config.head_dim + o for o in offsets]
    heads = range(group * config.group, (group + 1) * config.group)
    q_columns = [h * config.head_dim + o for h in heads for o in offsets]
    return q_columns, k_columns


def prune_rotary_pairs(
    config: LlamaConfig, q: np.ndarray, k: np.ndarray, scale: np.ndarray, share: float
) -> None:
    """Zero the lowest-scoring ⌊share·head_dim/2⌋ rotary pairs of every key/value head in place
    (a column scores ‖W_{:,c} ⊙ scale‖, a pair the sum over its Q and K columns)."""
    half = config.head_dim // 2
    drop = int(np.floor(share * half))
    if drop == 0:
        return
    q_norms = np.linalg.norm(q * scale[:, None], axis=0)
    k_norms = np.linalg.norm(k * scale[:, None], axis=0)
    for group in range(config.kv_heads):
        columns = [rotary_pair_columns(config, group, pair) for pair in range(half)]
        score = [q_norms[qc].sum() + k_norms[kc].sum() for qc, kc in columns]
        for pair in np.argsort(score, kind="stable")[:drop]:
            q_columns, k_columns = columns[pair]
            q[:, q_columns] = 0.0
            k[:, k_columns] = 0.0


# ---- V and O ------------------------------------------------------------------------------------


def decompose_heads(
    v: np.ndarray, o_blocks: list[np.ndarray]
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Orthogonal neuron decomposition of one key/value head: ``(v′, o′ blocks, M)`` with
    v′ = v M, o′_h = M⁻¹ o_h and v′·[o′_h]_h the SVD of v·[o_h]_h (see the module docstring)."""
    q1, r1 = np.linalg.qr(v.astype(np.float64))
    stacked = np.concatenate(o_blocks, axis=1).astype(np.float64)
    q2, r2 = np.linalg.qr(stacked.T)
    u, s, wt = np.linalg.svd(r1 @ r2.T)
    root = np.sqrt(s)
    v_new = q1 @ (u * root)
    o_new = (root[:, None] * wt) @ q2.T
    m = linalg.solve_triangular(r1, u * root)
    width = o_blocks[0].shape[1]
    return v_new, [o_new[:, i * width : (i + 1) * width] for i in range(len(o_blocks))], m


def prune_values(
    config: LlamaConfig,
    v: np.ndarray,
    o: np.ndarray,
    scale: np.ndarray,
    mix_gram: np.ndarray | None,
    share: float,
    decompose: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """``(v, o)`` with each key/value head's lowest-scoring ⌊share·head_dim⌋ neurons removed,
    after the decomposition when ``decompose``; ``mix_gram`` None scores by magnitude."""
    v, o = v.astype(np.float64).copy(), o.astype(np.float64).copy()
    dh, drop = config.head_dim, int(np.floor(share * config.head_dim))
    for group in range(config.kv_heads):
        columns = slice(group * dh, (group + 1) * dh)
        heads = list(range(group * config.group, (group + 1) * config.group))
        blocks = [o[h * dh : (h + 1) * dh] for h in heads]
        rotation = np.eye(dh)
        if decompose:
            v[:, columns], blocks, rotation = decompose_heads(v[:, columns], blocks)
            for h, block in zip(heads, blocks, strict=True):
                o[h * dh : (h + 1) * dh] = block
        score = np.linalg.norm(v[:, columns] * scale[:, None], axis=0)
        for h, block in zip(heads, blocks, strict=True):
            if mix_gram is None:
                head_scale = np.ones(dh)
            else:
                head_scale = np.sqrt(np.maximum(np.diag(rotation.T @ mix_gram[h] @ rotation), 0))
            score = score + np.linalg.norm(block, axis=1) * head_scale
        for neuron in np.argsort(score, kind="stable")[:drop]:
            v[:, group * dh + neuron] = 0.0
            for h in heads:
                o[h * dh + neuron] = 0.0
    return v.astype(np.float32), o.astype(np.float32)


# ---- FFN ----------------------------------------------------------------------------------------


def ffn(x: np.ndarray, gate: np.ndarray, up: np.ndarray, down: np.ndarray) -> np.ndarray:
    """The SwiGLU FFN (silu(x gate) ⊙ x up) down."""
    g = x @ gate
    return (g * special.expit(g) * (x @ up)) @ down


def ffn_scores(
    gate: np.ndarray, up: np.ndarray, down: np.ndarray, x_scale: np.ndarray, mid_scale: np.ndarray
) -> np.ndarray:
    """Each FFN neuron's score (see the module docstring)."""
    inputs = np.linalg.norm(gate * x_scale[:, None], axis=0)
    inputs = inputs + np.linalg.norm(up * x_scale[:, None], axis=0)
    return inputs + np.linalg.norm(down, axis=1) * mid_scale


def ridge_fit(x: np.ndarray, y: np.ndarray, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """``(B, c)``: B = (XᵀX + λI)⁻¹XᵀY with λ = ridge·mean diag(XᵀX), and per output column the
    Pearson correlation c between XB and Y."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    gram = x.T @ x
    gram[np.diag_indices_from(gram)] += ridge * np.mean(np.diag(gram))
    solution = linalg.solve(gram, x.T @ y, assume_a="pos")
    prediction = x @ solution
    pc, yc = prediction - prediction.mean(0), y - y.mean(0)
    correlation = (pc * yc).sum(0) / (np.linalg.norm(pc, axis=0) * np.linalg.norm(yc, axis=0) + EPS)
    return solution, correlation


def linear_branch(
    x: np.ndarray, residual: np.ndarray, rank: int, settings: Settings
) -> tuple[np.ndarray, np.ndarray]:
    """``(cal_a, cal_b)``: the correlation-weighted, rank-``rank`` ridge fit of ``residual``."""
    solution, correlation = ridge_fit(x, residual, settings.ridge)
    weight = special.expit((correlation - correlation.mean()) / settings.correlation_temperature)
    weight = np.maximum(weight, EPS)
    u, s, vt = np.linalg.svd(solution * weight[None, :], full_matrices=False)
    return u[:, :rank] * s[:rank], vt[:rank] / weight[None, :]


# ---- the whole model ----------------------------------------------------------------------------


def prune(problem: PruningProblem, settings: Settings) -> dict[str, np.ndarray]:
    """The pruned model of ``problem`` under ``settings`` (see the module docstring)."""
    model, config = problem.model, problem.model.config
    solution = dense_solution(model)
    if not settings.truncate:
        for layer in range(config.layers):
            solution["v"][layer], solution["o"][layer] = prune_values(
                config, solution["v"][layer], solution["o"][layer], np.ones(config.d), None, 0.0,
                settings.decompose,
            )  # fmt: skip
        return solution
    wanda = settings.scores == "wanda"
    needs_statistics = wanda or settings.qk == "weighted-svd" or settings.calibrate
    statistics: CalibrationStatistics | None = problem.statistics() if needs_statistics else None
    s_qk, s_vo = shares(problem.sparsity, settings.k)
    ranks = {name: qk_rank(config, name, s_qk) for name in ("q", "k")}
    for layer in range(config.layers):
        scale = np.sqrt(statistics.attn_in_sq[layer]) + EPS if wanda else np.ones(config.d)
        if settings.qk == "pairs":
            prune_rotary_pairs(config, solution["q"][layer], solution["k"][layer], scale, s_qk)
        elif s_qk > 0:
            svd_scale = scale if settings.qk == "weighted-svd" else None
            for name in ("q", "k"):
                a, b = low_rank(solution[name][layer], svd_scale, ranks[name])
                solution[f"{name}_a"][layer, :, : ranks[name]] = a
                solution[f"{name}_b"][layer, : ranks[name]] = b
                solution[name][layer] = 0.0
        solution["v"][layer], solution["o"][layer] = prune_values(
            config, solution["v"][layer], solution["o"][layer], scale,
            statistics.mix_gram[layer] if wanda else None, s_vo, settings.decompose,
        )  # fmt: skip
    calibrated = _calibrated_layers(problem, statistics, settings) if settings.calibrate else []
    rank = factor_ranks(config)["ffn"]
    _prune_ffns(problem, solution, statistics, len(calibrated) * 2 * config.d * rank)
    for layer in calibrated:
        x = statistics.ffn_in[layer]
        dense = [model.blocks[name][layer] for name in ("gate", "up", "down")]
        pruned = [solution[name][layer] for name in ("gate", "up", "down")]
        a, b = linear_branch(x, ffn(x, *dense) - ffn(x, *pruned), rank, settings)
        solution["cal_a"][layer], solution["cal_b"][layer] = a, b
    return solution


def _calibrated_layers(
    problem: PruningProblem, statistics: CalibrationStatistics, settings: Settings
) -> list[int]:
    """The layers (the last excluded) whose dense FFN output is best predicted linearly."""
    model = problem.model
    count = calibrated_count(model.config, settings.calibrated_layers)
    fit = []
    for layer in range(model.config.layers - 1):
        x = statistics.ffn_in[layer]
        y = ffn(x, *(model.blocks[name][layer] for name in ("gate", "up", "down")))
        fit.append(ridge_fit(x, y, settings.ridge)[1].mean())
    return sorted(int(i) for i in np.argsort(fit, kind="stable")[::-1][:count])


def _prune_ffns(
    problem: PruningProblem,
    solution: dict[str, np.ndarray],
    statistics: CalibrationStatistics | None,
    extra: int,
) -> None:
    """Remove the lowest-scoring FFN neurons, as evenly over layers as the budget allows, until
    the solution plus ``extra`` parameters fits it."""
    config = problem.model.config
    over = kept_parameters(problem.model, solution) + extra - problem.budget
    neurons = max(0, int(np.ceil(over / (3 * config.d))))
    per_layer = np.full(config.layers, neurons // config.layers)
    per_layer[: neurons % config.layers] += 1
    for layer in range(config.layers):
        gate, up, down = (solution[name][layer] for name in ("gate", "up", "down"))
        if statistics is None:
            x_scale, mid_scale = np.ones(config.d), np.ones(config.d_ff)
        else:
            x_scale = np.sqrt(statistics.ffn_in_sq[layer])
            mid_scale = np.sqrt(statistics.ffn_mid_sq[layer])
        score = ffn_scores(gate, up, down, x_scale, mid_scale)
        drop = np.argsort(score, kind="stable")[: per_layer[layer]]
        gate[:, drop], up[:, drop], down[drop] = 0.0, 0.0, 0.0


# ---- agents -------------------------------------------------------------------------------------


class OlicaAgent:
    """``olica``: the paper's method (keyword arguments: the fields of :class:`Settings`)."""

    defaults = Settings()

    def __init__(self, env: Any = None, seed: int = 0, **settings: Any):
        self.settings = replace(self.defaults, **settings)

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: pruning is deterministic."""

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
        return prune(info["instance"], self.settings)


class OlicaNoCalibrationAgent(OlicaAgent):
    """``olica-no-calibration``: weighted SVD and decomposition, no linear calibration."""

    defaults = Settings(calibrate=False)


class OlicaPlainSVDAgent(OlicaAgent):
    """``olica-plain-svd``: Olica with an unweighted SVD for Q and K."""

    defaults = Settings(qk="svd")


class WandaPruneAgent(OlicaAgent):
    """``wanda-prune``: Wanda-style structured pruning of rotary pairs and raw neurons."""

    defaults = Settings(qk="pairs", decompose=False, calibrate=False)


class MagnitudePruneAgent(OlicaAgent):
    """``magnitude-prune``: the same units as ``wanda-prune``, scored by weight magnitude."""

    defaults = Settings(qk="pairs", decompose=False, calibrate=False, scores="magnitude")
