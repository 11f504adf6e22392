"""Prune a LLaMA-architecture language model to a parameter budget, without retraining.

He, Lin, "Olica: Efficient Structured Pruning of Large Language Models without Retraining",
ICML 2025.

An instance is a trained language model (:mod:`omnigym.envs.methods.llama`: SmolLM2-135M at
paper size, a tiny byte-level model of the same architecture at small size), calibration
sequences drawn from standard-library docstrings, and held-out sequences drawn from other
docstrings and the interpreter's licence text (nothing is downloaded). A method returns the
pruned model in one structured form (:class:`StructuredPruning`'s action), scored by its
held-out perplexity, provided it keeps at most (1 − ``sparsity``) of the model's parameters.

Parameters are counted structurally: a matrix costs (its rows with a nonzero entry) × (its
columns with a nonzero entry), so removing a neuron (a column of ``gate`` and ``up`` and the row
of ``down``; a column of ``v`` and the rows of ``o`` it feeds) or keeping a rank-r factor pair
saves what a smaller dense model would, and unstructured zeros save nothing. The embedding
(tied to the read-out) and the norms are kept as they are and counted.

The model is in ``info["instance"]`` (:class:`PruningProblem`), with
:meth:`PruningProblem.statistics`: one pass of the dense model over the calibration sequences
that collects what Wanda-style scores, the decomposition and the linear calibration need
(:class:`CalibrationStatistics`). Agents that use it on the same draw share one pass per process;
the metrics ``prune_seconds`` and ``prune_cpu_seconds`` count it once at its measured cost for
every agent that asked for it, so they are each agent's time as if it had run the pass itself.

Departures from the paper: SmolLM2-135M (grouped-query attention: 3 key/value heads for 9 query
heads) stands in for LLaMA-7B/13B, standard-library text for BookCorpus and Alpaca, and held-out
perplexity on that text for WikiText-2 perplexity and the zero-shot tasks. Calibration
statistics are taken from the dense model in one pass rather than layer by layer through the
already pruned layers, so that every agent can share them on two cores; the FFN input is kept
at 2,048 evenly spaced calibration tokens per layer for the linear calibration's regressions.
"""

from __future__ import annotations

import collections
import hashlib
import os
import sysconfig
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces

from omnigym.threads import one_torch_thread

from . import llama
from .core import MethodEnv
from .hc_smoe import stdlib_corpus

#: Sparsities the environment accepts (the paper's allocation covers s ≤ 0.4 and beyond).
SPARSITY_RANGE = (0.0, 0.6)
#: The rank of the linear calibration's factors, as a fraction of the model width (the paper's).
CALIBRATION_RANK = 0.03
#: FFN inputs kept per layer for the calibration regressions.
FFN_SAMPLE = 2048
#: Held-out sequences the per-layer relative error is measured on.
ERROR_SEQUENCES = 2
#: Draws whose statistics (and dense references) a process keeps.
CACHED_DRAWS = 4


@dataclass(frozen=True)
class Size:
    """The model and the number and length of calibration and held-out sequences."""

    model: str
    calibration: int
    held_out: int
    length: int


SIZES = {
    "small": Size(model="tiny", calibration=32, held_out=16, length=64),
    "paper": Size(model="smollm2", calibration=256, held_out=8, length=128),
}


# ---- text ---------------------------------------------------------------------------------------


def corpus() -> tuple[bytes, bytes]:
    """``(calibration, held_out)`` text: the training and calibration parts of the
    standard-library docstrings (:func:`~omnigym.envs.methods.hc_smoe.stdlib_corpus`), and
    its held-out part followed by the interpreter's ``LICENSE.txt`` when it ships one."""
    train, calibration, held_out = stdlib_corpus()
    licence = os.path.join(sysconfig.get_paths()["stdlib"], "LICENSE.txt")
    if os.path.exists(licence):
        with open(licence, "rb") as file:
            held_out = held_out + b"\n\n" + file.read()
    return train + b"\n\n" + calibration, held_out


_TOKENS: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def token_streams(model: str) -> tuple[np.ndarray, np.ndarray]:
    """The calibration and held-out text as token ids of ``model`` (bytes for the tiny one)."""
    if model not in _TOKENS:
        texts = corpus()
        if model == "tiny":
            streams = tuple(np.frombuffer(t, dtype=np.uint8).astype(np.int64) for t in texts)
        else:
            tokenizer = llama.smollm2_tokenizer()
            streams = tuple(
                np.asarray(tokenizer(t.decode("utf-8"))["input_ids"], dtype=np.int64) for t in texts
            )
        _TOKENS[model] = streams
    return _TOKENS[model]


def windows(stream: np.ndarray, rng: np.random.Generator, count: int, length: int) -> np.ndarray:
    """``count`` random windows of ``length`` tokens of ``stream``: (count, length)."""
    starts = rng.integers(0, len(stream) - length, count)
    return stream[starts[:, None] + np.arange(length)]


# ---- calibration statistics ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CalibrationStatistics:
    """Means over the calibration tokens of the dense model, stacked over layers.

    ``attn_in_sq`` (L, d): mean x_i² of the attention input x (after its RMSNorm), the input of
    Q, K and V; ``mix_gram`` (L, heads, head_dim, head_dim): mean z zᵀ of each query head's
    attention output z before the output projection; ``ffn_in_sq`` (L, d) and ``ffn_mid_sq``
    (L, d_ff): mean squares of the FFN input and of its hidden activation silu(x W_gate) ⊙
    x W_up; ``ffn_in`` (L, m, d): the FFN input at m evenly spaced calibration tokens.
    ``seconds`` and ``cpu_seconds`` are the wall and CPU time the pass took.
    """

    attn_in_sq: np.ndarray
    mix_gram: np.ndarray
    ffn_in_sq: np.ndarray
    ffn_mid_sq: np.ndarray
    ffn_in: np.ndarray
    tokens: int
    seconds: float
    cpu_seconds: float


def _key(model: llama.LlamaWeights, tokens: np.ndarray) -> tuple[str, str]:
    return model.name, hashlib.sha256(np.ascontiguousarray(tokens).tobytes()).hexdigest()


_STATISTICS: collections.OrderedDict = collections.OrderedDict()
_REFERENCES: collections.OrderedDict = collections.OrderedDict()


def _remember(cache: collections.OrderedDict, key: Any, value: Any) -> Any:
    cache[key] = value
    while len(cache) > CACHED_DRAWS:
        cache.popitem(last=False)
    return value


def calibration_statistics(
    model: llama.LlamaWeights, tokens: np.ndarray, batch: int = 8
) -> CalibrationStatistics:
    """:class:`CalibrationStatistics` of ``model`` on ``tokens`` (sequences × length); kept per
    process for the last :data:`CACHED_DRAWS` token sets."""
    import torch

    key = _key(model, tokens)
    if key in _STATISTICS:
        return _STATISTICS[key]
    start, cpu = time.perf_counter(), time.process_time()
    config, (count, length) = model.config, tokens.shape
    total = count * length
    sums = {
        "attn_in": np.zeros((config.layers, config.d)),
        "mix": np.zeros((config.layers, config.heads, config.head_dim, config.head_dim)),
        "ffn_in": np.zeros((config.layers, config.d)),
        "ffn_mid": np.zeros((config.layers, config.d_ff)),
    }
    kept = np.linspace(0, total - 1, min(FFN_SAMPLE, total)).astype(np.int64)
    sample = np.zeros((config.layers, len(kept), config.d), dtype=np.float32)
    offset = 0

    def observe(layer: int, name: str, value: Any) -> None:
        value = value.double()
        if name == "mix":
            sums["mix"][layer] += torch.einsum("bthi,bthj->hij", value, value).numpy()
            return
        sums[name][layer] += value.pow(2).sum(dim=(0, 1)).numpy()
        if name == "ffn_in":
            flat = value.reshape(-1, value.shape[-1])
            here = (kept >= offset) & (kept < offset + len(flat))
            sample[layer, here] = flat[kept[here] - offset].float().numpy()

    with one_torch_thread(), torch.no_grad():
        layers = llama.torch_layers(model)
        for first in range(0, count, batch):
            chunk = tokens[first : first + batch]
            llama.hidden_states(model, chunk, layers, observe=observe)
            offset += chunk.size
    statistics = CalibrationStatistics(
        attn_in_sq=sums["attn_in"] / total,
        mix_gram=sums["mix"] / total,
        ffn_in_sq=sums["ffn_in"] / total,
        ffn_mid_sq=sums["ffn_mid"] / total,
        ffn_in=sample,
        tokens=total,
        seconds=time.perf_counter() - start,
        cpu_seconds=time.process_time() - cpu,
    )
    return _remember(_STATISTICS, key, statistics)


# ---- the solution's form ------------------------------------------------------------------------


def factor_ranks(config: llama.LlamaConfig) -> dict[str, int]:
    """Widths of the low-rank factors: for Q and K the largest rank that still saves
    parameters, d·out/(d + out); for the FFN's linear branch ⌊0.03·d⌋ (at least 1)."""
    shapes = config.shapes()
    return {
        "q": shapes["q"][0] * shapes["q"][1] // sum(shapes["q"]),
        "k": shapes["k"][0] * shapes["k"][1] // sum(shapes["k"]),
        "ffn": max(1, int(CALIBRATION_RANK * config.d)),
    }


def solution_shapes(config: llama.LlamaConfig) -> dict[str, tuple[int, int, int]]:
    """Every array of a solution, stacked over layers: (layers, input, output)."""
    layers, shapes, ranks = config.layers, config.shapes(), factor_ranks(config)
    result = {name: (layers, *shape) for name, shape in shapes.items()}
    for part, (first, second) in llama.FACTORS.items():
        fan_in, fan_out = (config.d, config.d) if part == "ffn" else shapes[part]
        result[first] = (layers, fan_in, ranks[part])
        result[second] = (layers, ranks[part], fan_out)
    return result


def structured_parameters(matrix: np.ndarray) -> int:
    """Σ over layers of (rows with a nonzero entry) × (columns with a nonzero entry) of a
    stacked (layers, rows, columns) array."""
    nonzero = matrix != 0
    rows = nonzero.any(axis=2).sum(axis=1)
    columns = nonzero.any(axis=1).sum(axis=1)
    return int(np.sum(rows * columns))


def kept_parameters(model: llama.LlamaWeights, solution: dict[str, np.ndarray]) -> int:
    """The parameters a solution keeps: the embedding and norms, plus each array's
    :func:`structured_parameters`."""
    fixed = model.embed.size + model.final_norm.size
    fixed += sum(model.blocks[name].size for name in llama.NORMS)
    return fixed + sum(structured_parameters(array) for array in solution.values())


def dense_solution(model: llama.LlamaWeights) -> dict[str, np.ndarray]:
    """The unpruned model as a solution (writable copies; every factor zero)."""
    shapes = solution_shapes(model.config)
    solution = {name: np.array(model.blocks[name]) for name in llama.PROJECTIONS}
    for name, shape in shapes.items():
        solution.setdefault(name, np.zeros(shape, dtype=np.float32))
    return solution


def pruned_layers(model: llama.LlamaWeights, solution: dict[str, np.ndarray]) -> list[dict]:
    """A solution as :func:`~omnigym.envs.methods.llama.forward` layers: parts that are all
    zero are left out, and FFN neurons that contribute nothing are cut (exactly)."""
    layers = []
    for index in range(model.config.layers):
        layer = {name: model.blocks[name][index] for name in llama.NORMS}
        for name in ("q", "k", "v", "o"):
            if name in ("v", "o") or np.any(solution[name][index]):
                layer[name] = solution[name][index]
        for first, second in llama.FACTORS.values():
            a, b = solution[first][index], solution[second][index]
            if np.any(a) and np.any(b):
                layer[first], layer[second] = a, b
        gate, up, down = (solution[name][index] for name in ("gate", "up", "down"))
        live = gate.any(axis=0) & up.any(axis=0) & down.any(axis=1)
        layer["gate"], layer["up"], layer["down"] = gate[:, live], up[:, live], down[live]
        layers.append(layer)
    return layers


def _lean_box(shape: tuple[int, ...]) -> spaces.Box:
    """An unbounded float32 Box whose bounds are broadcast views (a SmolLM2 solution has 1.3e8
    entries; full bound arrays would double the action space's memory)."""
    box = spaces.Box(-np.inf, np.inf, shape, dtype=np.float32)
    box.low = np.broadcast_to(np.float32(-np.inf), shape)
    box.high = np.broadcast_to(np.float32(np.inf), shape)
    box.bounded_below = np.broadcast_to(False, shape)
    box.bounded_above = np.broadcast_to(False, shape)
    return box


# ---- the environment ----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PruningProblem:
    """What an agent gets in ``info["instance"]``: the model, the calibration tokens, the
    sparsity and the parameter budget; :meth:`statistics` runs (or reuses) the calibration
    pass."""

    model: llama.LlamaWeights
    calibration: np.ndarray
    sparsity: float
    budget: int
    usage: list = field(default_factory=list, repr=False)

    def statistics(self) -> CalibrationStatistics:
        """The dense model's :class:`CalibrationStatistics` on the calibration tokens."""
        start, cpu = time.perf_counter(), time.process_time()
        statistics = calibration_statistics(self.model, self.calibration)
        spent = (time.perf_counter() - start, time.process_time() - cpu)
        self.usage.append((spent, (statistics.seconds, statistics.cpu_seconds)))
        return statistics


@dataclass(frozen=True, eq=False)
class Instance:
    """What scoring needs: the problem and the held-out tokens."""

    problem: PruningProblem
    held_out: np.ndarray


def dense_reference(model: llama.LlamaWeights, held_out: np.ndarray) -> tuple[float, list]:
    """``(nll, stream)``: the dense model's held-out cross-entropy, and each layer's input on
    the first :data:`ERROR_SEQUENCES` held-out sequences (kept per process)."""
    import torch

    key = _key(model, held_out)
    if key not in _REFERENCES:
        nll = llama.negative_log_likelihood(model, held_out)
        stream: list = []
        with one_torch_thread(), torch.no_grad():
            llama.hidden_states(
                model,
                held_out[:ERROR_SEQUENCES],
                llama.torch_layers(model),
                stream=lambda _, x: stream.append(x),
            )
        _remember(_REFERENCES, key, (nll, stream))
    return _REFERENCES[key]


def layer_errors(model: llama.LlamaWeights, layers: list[dict], stream: list) -> np.ndarray:
    """Per layer ‖Δ′ − Δ‖_F / ‖Δ‖_F, Δ = block(x) − x of the dense layer and Δ′ of the pruned
    one, both on the dense model's input x to that layer."""
    import torch

    rope = llama.rope_tables(model.config, stream[0].shape[1])
    dense = llama.torch_layers(model)
    errors = []
    with one_torch_thread(), torch.no_grad():
        for x, reference, pruned in zip(
            stream, dense, llama.torch_layers(model, layers), strict=True
        ):
            target = llama.block(model.config, x, reference, rope) - x
            change = llama.block(model.config, x, pruned, rope) - x
            errors.append(float(torch.linalg.norm(change - target) / torch.linalg.norm(target)))
    return np.asarray(errors)


class StructuredPruning(MethodEnv):
    """Structured pruning of a LLaMA-architecture model without retraining (Olica).

    ## Description

    ``reset(seed)`` draws calibration and held-out sequences; the model is fixed by ``size``.
    The agent answers the pruned model; ``step`` checks its parameter count against the budget
    and scores its held-out perplexity.

    ## Observation space

    ``Dict``: ``calibration`` ``Box(0, vocab − 1, (n, length), int64)`` (the calibration
    sequences), ``sparsity`` and ``budget`` (the most parameters the answer may keep), each
    ``Box(1)``. ``info["instance"]`` is the :class:`PruningProblem` (the model's weights and the
    calibration pass).

    ## Action space

    ``Dict`` of float32 arrays stacked over layers, weights as ``x @ W`` (input × output):
    ``q`` (L, d, heads·head_dim), ``k`` and ``v`` (L, d, kv_heads·head_dim), ``o``
    (L, heads·head_dim, d), ``gate`` and ``up`` (L, d, d_ff), ``down`` (L, d_ff, d); low-rank
    factors ``q_a`` (L, d, r_q), ``q_b`` (L, r_q, heads·head_dim), ``k_a``, ``k_b`` likewise
    (r_q, r_k the largest ranks that save parameters), and the FFN's linear branch ``cal_a``
    (L, d, r_c), ``cal_b`` (L, r_c, d) with r_c = ⌊0.03·d⌋. A layer computes
    Q = x q + (x q_a) q_b, K alike, V = x v, and FFN(x) = (silu(x gate) ⊙ x up) down +
    (x cal_a) cal_b; all-zero parts are left out.

    ## Rewards

    −log perplexity of the held-out sequences. Over the budget, or a non-finite answer or
    loss: −20 with ``info["invalid_action"]``. Metrics: ``perplexity``,
    ``perplexity_original`` (the dense model's), ``params_kept`` (fraction of the model's
    parameters), ``parameters``, ``layer_rel_error`` (mean over layers of the relative error
    of each pruned layer's update on the dense model's inputs) and ``layer_rel_error_max``,
    ``prune_seconds`` and ``prune_cpu_seconds`` (wall and CPU time of this process from
    ``reset`` to ``step``, the calibration pass counted once at its measured cost).

    ## Episode end

    One step.

    ## Arguments

    ``sparsity`` (0 ≤ s ≤ 0.6, default 0.2), ``size`` (``"small"``: the tiny model, 32
    calibration and 16 held-out sequences of 64 bytes; ``"paper"``: SmolLM2-135M, 256
    calibration and 8 held-out sequences of 128 tokens), ``calibration_samples`` (replaces the
    size's calibration count).
    """

    invalid_reward = -20.0

    def __init__(
        self, sparsity: float = 0.2, size: str = "small", calibration_samples: int | None = None
    ):
        super().__init__(size)
        low, high = SPARSITY_RANGE
        if not isinstance(sparsity, int | float) or not low <= sparsity <= high:
            raise ValueError(f"sparsity must be in [{low}, {high}], got {sparsity!r}")
        if calibration_samples is not None and (
            not isinstance(calibration_samples, int) or calibration_samples < 1
        ):
            raise ValueError(
                f"calibration_samples must be a positive int, got {calibration_samples!r}"
            )
        self.sparsity = float(sparsity)
        self.settings = SIZES[size]
        self.calibration_samples = calibration_samples or self.settings.calibration
        self.model = llama.load_model(self.settings.model)
        config = self.model.config
        self.total = self.model.parameters()
        self.budget = int(np.floor((1.0 - self.sparsity) * self.total))
        self.observation_space = spaces.Dict(
            {
                "calibration": spaces.Box(
                    0, config.vocab - 1, (self.calibration_samples, self.settings.length), np.int64
                ),
                "sparsity": spaces.Box(0.0, 1.0, (1,), np.float64),
                "budget": spaces.Box(0.0, np.inf, (1,), np.float64),
            }
        )
        self.action_space = spaces.Dict(
            {name: _lean_box(shape) for name, shape in solution_shapes(config).items()}
        )
        self._reset_at = self._answered_at = (0.0, 0.0)

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, Any], Instance]:
        calibration_stream, held_out_stream = token_streams(self.settings.model)
        length = self.settings.length
        calibration = windows(calibration_stream, rng, self.calibration_samples, length)
        held_out = windows(held_out_stream, rng, self.settings.held_out, length)
        problem = PruningProblem(self.model, calibration, self.sparsity, self.budget)
        observation = {
            "calibration": calibration.copy(),
            "sparsity": np.array([self.sparsity]),
            "budget": np.array([float(self.budget)]),
        }
        return observation, Instance(problem, held_out)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        self._reset_at = (time.perf_counter(), time.process_time())
        return observation, {**info, "instance": self.instance.problem}

    def step(self, solution: Any):
        self._answered_at = (time.perf_counter(), time.process_time())
        return super().step(solution)

    def score(self, solution: dict[str, np.ndarray]) -> tuple[float, dict[str, float]] | None:
        parameters = kept_parameters(self.model, solution)
        if parameters > self.budget:
            return None
        layers = pruned_layers(self.model, solution)
        nll = llama.negative_log_likelihood(self.model, self.instance.held_out, layers)
        if not np.isfinite(nll):
            return None
        dense_nll, stream = dense_reference(self.model, self.instance.held_out)
        errors = layer_errors(self.model, layers, stream)
        return -nll, {
            "perplexity": float(np.exp(nll)),
            "perplexity_original": float(np.exp(dense_nll)),
            "params_kept": parameters / self.total,
            "parameters": float(parameters),
            "layer_rel_error": float(np.mean(errors)),
            "layer_rel_error_max": float(np.max(errors)),
            "prune_seconds": self._prune_time(0),
            "prune_cpu_seconds": self._prune_time(1),
        }

    def _prune_time(self, clock: int) -> float:
        """Wall (``clock`` 0) or CPU (1) seconds from reset to step, with the time spent in
        :meth:`PruningProblem.statistics` replaced by one calibration pass's measured cost."""
        usage = self.instance.problem.usage
        elapsed = self._answered_at[clock] - self._reset_at[clock]
        if not usage:
            return elapsed
        spent = sum(inside[clock] for inside, _ in usage)
        return elapsed - spent + max(cost[clock] for _, cost in usage)
