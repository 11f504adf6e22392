"""Compress a sparse mixture-of-experts layer to a fixed expert budget without retraining.

Chen, Liu, Sun, Chao, Hsu, Lee, "Retraining-Free Merging of Sparse MoE via Hierarchical
Clustering", ICML 2025 (``docs/methods.md``).

An instance is one SMoE layer in Mixtral's form: E = 16 SwiGLU experts

    E_e(x) = W_down,e · (silu(W_gate,e x) ⊙ W_up,e x),

a linear router with logits ℓ(x) = R x, top-2 routing and gates that are the softmax of the two
chosen logits (Mixtral's renormalised top-k), so MoE(x) = Σ_{e ∈ top2(ℓ(x))} g_e(x)·E_e(x). The
experts come in 4 families of 4 (membership shuffled): each expert's three matrices are its
family's prototype plus ``sigma``-scaled independent noise, divided by √(1 + σ²) so the layer's
scale is the same at every σ. The router is ``"random"`` (rows i.i.d. Gaussian, unrelated to the
families) or ``"aligned"`` (each row its family's router prototype plus σ-scaled noise, so
experts of one family are routed alike): the first keeps the toy from favouring
clustering by construction, the second is the upcycled-model case.

A solution compresses the 16 experts into ``target_experts`` slots (4 by default) and says how
the router uses them:

- ``assignment[e]``: the slot expert e's tokens go to;
- ``keep_router_row[e]``: 1 keeps router row e (its tokens follow ``assignment[e]``); 0 removes
  expert e from the router, which then takes its top-2 among the kept rows and renormalises the
  gates over those two (pruning). Merging keeps every row;
- ``weights``: the slots' W_gate, W_up and W_down.

The score is the relative output error ‖MoE(X) − MoE′(X)‖_F / ‖MoE(X)‖_F on held-out tokens the
agent never sees; the agent gets the layer and calibration tokens drawn from the same
distribution (x ∼ N(0, I_d)).

``task="lm"`` puts the same kind of layer inside a small byte-level language model trained
in-process (:func:`train_byte_lm`, a few seconds on one thread) on docstrings of Python's own
standard library (:func:`stdlib_corpus`: read from the interpreter's source files, nothing is
downloaded). The model predicts a byte from the 8 before it: byte embeddings, concatenated and
projected to d and RMS-normalised into h, then y = h + MoE(h) and a linear read-out. Its MoE is
initialised from the family generator above (experts "upcycled" from 4 prototypes, as
Qwen1.5-MoE was from a dense model) and trained with the rest, with Mixtral's load-balancing
loss so that no expert is left idle. The calibration tokens are the MoE inputs h on calibration
text; the reward is minus the held-out cross-entropy (nats per byte) of the model with the
compressed layer, the downstream number at the fixed expert budget.

:func:`moe_forward`, :func:`route`, :func:`mix` and :func:`expert_outputs` are public: the agents
(``omnigym.agents.methods.hc_smoe``) compute their expert representations and routing
statistics with the same code the score uses.

Departures from the paper: one synthetic layer (or one layer of a tiny self-trained model)
stands in for every layer of Qwen1.5-MoE and Mixtral 8×7B, and relative output error (or
held-out byte loss) for the eight zero-shot tasks; the generator (families, σ, the two router
kinds) is ours, not the paper's. Gates are Mixtral's renormalised top-2 throughout
(Qwen1.5-MoE does not renormalise). The language-model variant's text depends on the Python
version's standard library, so its numbers are reproducible per interpreter version.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from scipy import special

from omnigym.threads import one_torch_thread

from .core import MethodEnv

N_EXPERTS = 16
N_FAMILIES = 4
TOP_K = 2
ROUTERS = ("random", "aligned")
TASKS = ("layer", "lm")
#: Router logits have about this standard deviation on a unit token.
ROUTER_SCALE = 2.0
#: The three matrices of a SwiGLU expert, as keys of the observation and of ``weights``.
MATRICES = ("w_gate", "w_up", "w_down")


@dataclass(frozen=True)
class Size:
    """Model width, expert hidden width, token counts and language-model training steps."""

    d: int
    hidden: int
    calibration: int
    held_out: int
    lm_steps: int


SIZES = {
    "small": Size(d=16, hidden=32, calibration=500, held_out=1000, lm_steps=100),
    "paper": Size(d=32, hidden=64, calibration=2000, held_out=4000, lm_steps=600),
}

# ---- the layer ----------------------------------------------------------------------------------


def expert_outputs(x: np.ndarray, weights: Mapping[str, np.ndarray]) -> np.ndarray:
    """Every expert's SwiGLU output on every token: shape (experts, tokens, d).

    ``weights`` holds ``w_gate`` and ``w_up`` of shape (experts, hidden, d) and ``w_down`` of
    shape (experts, d, hidden).
    """
    gate = np.einsum("nd,ehd->enh", x, weights["w_gate"])
    up = np.einsum("nd,ehd->enh", x, weights["w_up"])
    return np.einsum("enh,edh->end", gate * special.expit(gate) * up, weights["w_down"])


def route(
    logits: np.ndarray, keep: np.ndarray | None = None, top_k: int = TOP_K
) -> tuple[np.ndarray, np.ndarray]:
    """``(experts, gates)`` of shape (tokens, k): each token's top-k kept experts and their
    gates, the softmax of the chosen logits (k = min(top_k, kept rows); ties go to the lower
    index)."""
    if keep is not None:
        logits = np.where(np.asarray(keep, dtype=bool), logits, -np.inf)
        top_k = min(top_k, int(np.count_nonzero(keep)))
    chosen = np.argsort(-logits, axis=1, kind="stable")[:, :top_k]
    return chosen, special.softmax(np.take_along_axis(logits, chosen, axis=1), axis=1)


def moe_forward(
    x: np.ndarray,
    router: np.ndarray,
    weights: Mapping[str, np.ndarray],
    assignment: np.ndarray | None = None,
    keep: np.ndarray | None = None,
) -> np.ndarray:
    """The layer's output on tokens ``x`` (tokens, d): routed by ``router`` (experts, d) over
    the ``keep`` rows, expert e's tokens computed by slot ``assignment[e]`` of ``weights``
    (the identity and every row by default: the uncompressed layer)."""
    chosen, gates = route(x @ router.T, keep)
    slot_of = np.arange(len(router)) if assignment is None else np.asarray(assignment)
    return mix(expert_outputs(x, weights), slot_of[chosen], gates)


def mix(outputs: np.ndarray, chosen: np.ndarray, gates: np.ndarray) -> np.ndarray:
    """Σ_j gates[t, j] · outputs[chosen[t, j], t]: the gated sum of the chosen experts' outputs
    (``outputs`` of shape (experts, tokens, d), ``chosen`` and ``gates`` (tokens, k))."""
    routed = outputs[chosen, np.arange(outputs.shape[1])[:, None]]  # (tokens, k, d)
    return np.einsum("tj,tjd->td", gates, routed)


def relative_error(reference: np.ndarray, approximation: np.ndarray) -> float:
    """‖reference − approximation‖_F / ‖reference‖_F."""
    return float(np.linalg.norm(reference - approximation) / np.linalg.norm(reference))


def _family_members(
    rng: np.random.Generator, prototypes: np.ndarray, families: np.ndarray, sigma: float
) -> np.ndarray:
    """One member per entry of ``families``: its prototype plus σ-scaled Gaussian noise, over
    √(1 + σ²) so that a member has its prototype's scale."""
    noise = rng.standard_normal((len(families), *prototypes.shape[1:]))
    return (prototypes[families] + sigma * noise) / np.sqrt(1.0 + sigma**2)


def draw_layer(
    rng: np.random.Generator, size: Size, sigma: float, router: str
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``(layer, families)``: the router and the three stacked expert matrices of one SMoE
    layer (module docstring) and each expert's family."""
    d, hidden = size.d, size.hidden
    families = rng.permutation(np.repeat(np.arange(N_FAMILIES), N_EXPERTS // N_FAMILIES))
    scales = {"w_gate": 1 / np.sqrt(d), "w_up": 1 / np.sqrt(d), "w_down": 1 / np.sqrt(hidden)}
    shapes = {"w_gate": (hidden, d), "w_up": (hidden, d), "w_down": (d, hidden)}
    layer = {}
    for name in MATRICES:
        prototypes = rng.standard_normal((N_FAMILIES, *shapes[name]))
        layer[name] = scales[name] * _family_members(rng, prototypes, families, sigma)
    if router == "aligned":
        rows = _family_members(rng, rng.standard_normal((N_FAMILIES, d)), families, sigma)
    else:
        rows = rng.standard_normal((N_EXPERTS, d))
    layer["router"] = ROUTER_SCALE / np.sqrt(d) * rows
    return layer, families


# ---- the language-model variant -------------------------------------------------------------

#: Pure-Python standard-library modules whose docstrings are the language model's text.
CORPUS_MODULES = (
    "argparse", "ast", "calendar", "collections", "configparser", "contextlib", "csv",
    "dataclasses", "datetime", "decimal", "difflib", "email.message", "enum", "fractions",
    "functools", "gettext", "heapq", "http.client", "inspect", "ipaddress", "json", "logging",
    "optparse", "pathlib", "pprint", "random", "shutil", "statistics", "string", "subprocess",
    "tarfile", "tempfile", "textwrap", "threading", "tokenize", "traceback", "typing",
    "unittest.case", "urllib.parse", "uuid", "warnings", "zipfile",
)  # fmt: skip
#: Bytes of context the language model sees, and its byte-embedding width.
CONTEXT, EMBEDDING = 8, 16
#: Weight of the load-balancing loss in training (Mixtral's router_aux_loss_coef).
BALANCE = 0.02


@functools.cache
def stdlib_corpus() -> tuple[bytes, bytes, bytes]:
    """``(train, calibration, held_out)`` text: the docstrings of :data:`CORPUS_MODULES`, parsed
    from the interpreter's source files (never imported), dealt out in order 8 : 1 : 1."""
    parts: tuple[list[str], list[str], list[str]] = ([], [], [])
    count = 0
    for name in CORPUS_MODULES:
        origin = importlib.util.find_spec(name).origin
        with open(origin, encoding="utf-8") as source:
            tree = ast.parse(source.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                docstring = ast.get_docstring(node)
                if docstring:
                    parts[{8: 1, 9: 2}.get(count % 10, 0)].append(docstring)
                    count += 1
    return tuple("\n\n".join(part).encode("utf-8") for part in parts)


def byte_windows(text: bytes, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(contexts, targets)``: the :data:`CONTEXT` bytes before each position and the byte at
    it (positions ≥ CONTEXT)."""
    data = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    offsets = np.arange(-CONTEXT, 0)
    return data[positions[:, None] + offsets], data[positions]


@dataclass(frozen=True)
class ByteLM:
    """The trained language model, as NumPy arrays; its MoE layer is ``layer``."""

    embedding: np.ndarray  # (256, EMBEDDING)
    projection: np.ndarray  # (d, CONTEXT·EMBEDDING)
    layer: dict[str, np.ndarray]
    readout: np.ndarray  # (256, d)
    bias: np.ndarray  # (256,)

    def encode(self, contexts: np.ndarray) -> np.ndarray:
        """h: the RMS-normalised projection of the contexts' byte embeddings."""
        z = self.embedding[contexts].reshape(len(contexts), -1) @ self.projection.T
        return z / np.sqrt(np.mean(z**2, axis=1, keepdims=True) + 1e-6)

    def moe_inputs(
        self, text: bytes, rng: np.random.Generator, count: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(h, next bytes)`` at ``count`` distinct random positions of ``text``."""
        positions = rng.choice(np.arange(CONTEXT, len(text)), size=count, replace=False)
        contexts, targets = byte_windows(text, np.sort(positions))
        return self.encode(contexts), targets

    def loss(self, h: np.ndarray, moe_output: np.ndarray, targets: np.ndarray) -> float:
        """Mean cross-entropy (nats per byte) of the read-out of h + MoE(h)."""
        logits = (h + moe_output) @ self.readout.T + self.bias
        picked = logits[np.arange(len(h)), targets]
        return float(np.mean(special.logsumexp(logits, axis=1) - picked))


@functools.lru_cache(maxsize=64)
def train_byte_lm(seed: int, size: Size, sigma: float, router: str) -> ByteLM:
    """Train the language model of the module docstring on :func:`stdlib_corpus`'s training
    text: Adam, ``size.lm_steps`` steps of 256 random windows, on one torch thread.

    Every random number (initialisation, batches) comes from NumPy's generator seeded by
    ``seed``; the result is cached per process, since agents and scoring share it.
    """
    import torch

    rng = np.random.default_rng(seed)
    layer, _ = draw_layer(rng, size, sigma, router)
    d, width = size.d, CONTEXT * EMBEDDING
    initial = {
        "embedding": rng.standard_normal((256, EMBEDDING)),
        "projection": rng.standard_normal((d, width)) / np.sqrt(width),
        "readout": rng.standard_normal((256, d)) / np.sqrt(d),
        "bias": np.zeros(256),
        **layer,
    }
    train, _, _ = stdlib_corpus()
    batches = rng.integers(CONTEXT, len(train), (size.lm_steps, 256))
    with one_torch_thread():
        params = {
            name: torch.tensor(value, dtype=torch.float32, requires_grad=True)
            for name, value in initial.items()
        }
        optimiser = torch.optim.Adam(params.values(), lr=3e-3)
        for positions in batches:
            contexts, targets = (torch.from_numpy(a) for a in byte_windows(train, positions))
            logits, balance = _torch_lm(params, contexts)
            loss = torch.nn.functional.cross_entropy(logits, targets) + BALANCE * balance
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    trained = {name: value.detach().double().numpy() for name, value in params.items()}
    return ByteLM(
        embedding=trained["embedding"],
        projection=trained["projection"],
        layer={name: trained[name] for name in (*MATRICES, "router")},
        readout=trained["readout"],
        bias=trained["bias"],
    )


def _torch_lm(params: Mapping[str, Any], contexts: Any) -> tuple[Any, Any]:
    """``(logits, balance)`` in torch for training: the language model's logits (the same maths
    as :class:`ByteLM`) and the Switch Transformer's load-balancing loss E·Σ_e f_e·P_e (f_e the
    fraction of routed slots that go to expert e, P_e its mean router probability)."""
    import torch

    z = params["embedding"][contexts].reshape(len(contexts), -1) @ params["projection"].T
    h = z / torch.sqrt(torch.mean(z**2, dim=1, keepdim=True) + 1e-6)
    router_logits = h @ params["router"].T
    values, chosen = torch.topk(router_logits, TOP_K, dim=1)
    gates = torch.softmax(values, dim=1)
    gate = torch.einsum("nd,ehd->enh", h, params["w_gate"])
    up = torch.einsum("nd,ehd->enh", h, params["w_up"])
    outputs = torch.einsum("enh,edh->end", torch.nn.functional.silu(gate) * up, params["w_down"])
    tokens = torch.arange(len(h))
    moe = sum(gates[:, [j]] * outputs[chosen[:, j], tokens] for j in range(TOP_K))
    dispatched = torch.bincount(chosen.reshape(-1), minlength=N_EXPERTS) / chosen.numel()
    probability = torch.softmax(router_logits, dim=1).mean(dim=0)
    balance = N_EXPERTS * torch.sum(dispatched * probability)
    return (h + moe) @ params["readout"].T + params["bias"], balance


# ---- the environment ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    """What scoring needs: held-out tokens, the layer's output on them, and (task ``"lm"``)
    the model and the held-out next bytes."""

    held_out: np.ndarray
    reference: np.ndarray
    model: ByteLM | None = None
    targets: np.ndarray | None = None
    loss_original: float = float("nan")


class MoEMerging(MethodEnv):
    """Compress a 16-expert SMoE layer to ``target_experts`` experts by merging or pruning.

    ## Description

    One step. ``reset`` draws an SMoE layer (16 SwiGLU experts in 4 families, a top-2 router;
    see the module docstring) and calibration tokens; ``step`` takes the compressed layer and
    scores its outputs against the original's on held-out tokens. With ``task="lm"`` the layer
    is the MoE layer of a small byte-level language model trained in-process, and the score is
    the model's held-out loss with the compressed layer.

    ## Action space

    ``Dict`` with ``assignment`` ``MultiDiscrete([K] * 16)`` (expert → slot),
    ``keep_router_row`` ``MultiBinary(16)`` (0 drops expert e's router row: pruning) and
    ``weights``, a ``Dict`` of the K slots' ``w_gate`` and ``w_up``
    ``Box(-inf, inf, (K, hidden, d), float64)`` and ``w_down``
    ``Box(-inf, inf, (K, d, hidden), float64)``; K is ``target_experts``. A kept row's expert is
    computed by its slot; a dropped row's expert is never routed to.

    ## Observation space

    ``Dict`` with ``tokens`` ``Box(-inf, inf, (n_calibration, d), float64)`` (calibration
    tokens: inputs of the layer), ``router`` ``Box(-inf, inf, (16, d), float64)``, ``w_gate``
    and ``w_up`` ``Box(-inf, inf, (16, hidden, d), float64)``, ``w_down``
    ``Box(-inf, inf, (16, d, hidden), float64)`` and ``target_experts`` ``Discrete(16,
    start=1)``. (d, hidden, n_calibration, n_held_out) is (16, 32, 500, 1000) at
    ``size="small"`` and (32, 64, 2000, 4000) at ``size="paper"``.

    ## Rewards

    Task ``"layer"``: −``relative_error``, ‖MoE(X) − MoE′(X)‖_F / ‖MoE(X)‖_F over the held-out
    tokens X. Task ``"lm"``: −``loss``, the held-out cross-entropy in nats per byte; the metrics
    add ``loss_original`` (the uncompressed model), ``loss_increase`` and the layer's
    ``relative_error`` on the held-out MoE inputs. Both report ``slots_used`` and
    ``router_rows_kept``. A solution that keeps no router row, or has non-finite values, is a
    failed answer: reward −1 (the error of a layer that outputs nothing) for ``"layer"``, −ln 256
    (a uniform guess) for ``"lm"``, with ``info["invalid_action"]``.

    ## Starting state

    Each ``reset(seed)`` draws a fresh layer and tokens (task ``"lm"``: trains a fresh model
    from a seed drawn from ``self.np_random``; trained models are cached per process).

    ## Episode end

    After the one step (``terminated=True``).

    ## Arguments

    ``size`` (``"small"`` or ``"paper"``), ``sigma`` (σ ≥ 0, the within-family spread; default
    0.2), ``router`` (``"random"`` or ``"aligned"``), ``target_experts`` (K, 1 to 16; default 4)
    and ``task`` (``"layer"`` or ``"lm"``).
    """

    def __init__(
        self,
        size: str = "small",
        sigma: float = 0.2,
        router: str = "random",
        target_experts: int = 4,
        task: str = "layer",
    ):
        super().__init__(size)
        if (
            isinstance(sigma, bool)
            or not isinstance(sigma, int | float)
            or not 0.0 <= sigma < np.inf
        ):
            raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")
        if router not in ROUTERS:
            raise ValueError(f"router must be one of {ROUTERS}, got {router!r}")
        if (
            isinstance(target_experts, bool)
            or not isinstance(target_experts, int | np.integer)
            or not 1 <= target_experts <= N_EXPERTS
        ):
            raise ValueError(
                f"target_experts must be an integer from 1 to {N_EXPERTS}, got {target_experts!r}"
            )
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        self.sigma, self.router, self.task = float(sigma), router, task
        self.target_experts = int(target_experts)
        self.invalid_reward = -np.log(256.0) if task == "lm" else -1.0
        self.shape = shape = SIZES[self.size]
        d, hidden, k = shape.d, shape.hidden, self.target_experts

        def stacked(n: int) -> spaces.Dict:
            return spaces.Dict(
                {
                    "w_gate": spaces.Box(-np.inf, np.inf, (n, hidden, d), np.float64),
                    "w_up": spaces.Box(-np.inf, np.inf, (n, hidden, d), np.float64),
                    "w_down": spaces.Box(-np.inf, np.inf, (n, d, hidden), np.float64),
                }
            )

        self.observation_space = spaces.Dict(
            {
                "tokens": spaces.Box(-np.inf, np.inf, (shape.calibration, d), np.float64),
                "router": spaces.Box(-np.inf, np.inf, (N_EXPERTS, d), np.float64),
                **stacked(N_EXPERTS).spaces,
                "target_experts": spaces.Discrete(N_EXPERTS, start=1),
            }
        )
        self.action_space = spaces.Dict(
            {
                "assignment": spaces.MultiDiscrete([k] * N_EXPERTS),
                "keep_router_row": spaces.MultiBinary(N_EXPERTS),
                "weights": stacked(k),
            }
        )

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, Any], Instance]:
        shape = self.shape
        model = targets = None
        if self.task == "lm":
            model = train_byte_lm(int(rng.integers(2**63)), shape, self.sigma, self.router)
            _, calibration_text, held_out_text = stdlib_corpus()
            tokens, _ = model.moe_inputs(calibration_text, rng, shape.calibration)
            held_out, targets = model.moe_inputs(held_out_text, rng, shape.held_out)
            layer = model.layer
        else:
            layer, _ = draw_layer(rng, shape, self.sigma, self.router)
            tokens = rng.standard_normal((shape.calibration, shape.d))
            held_out = rng.standard_normal((shape.held_out, shape.d))
        reference = moe_forward(held_out, layer["router"], layer)
        observation = {
            "tokens": tokens,
            **{name: layer[name].copy() for name in ("router", *MATRICES)},
            "target_experts": self.target_experts,
        }
        loss = float("nan") if model is None else model.loss(held_out, reference, targets)
        return observation, Instance(held_out, reference, model, targets, loss)

    def score(self, solution: dict[str, Any]) -> tuple[float, dict[str, float]] | None:
        keep = solution["keep_router_row"].astype(bool)
        if not keep.any():
            return None
        instance = self.instance
        output = moe_forward(
            instance.held_out,
            self._observation["router"],
            solution["weights"],
            solution["assignment"],
            keep,
        )
        metrics = {
            "relative_error": relative_error(instance.reference, output),
            "slots_used": float(len(np.unique(solution["assignment"][keep]))),
            "router_rows_kept": float(keep.sum()),
        }
        if instance.model is None:
            return -metrics["relative_error"], metrics
        loss = instance.model.loss(instance.held_out, output, instance.targets)
        metrics.update(
            loss=loss,
            loss_original=instance.loss_original,
            loss_increase=loss - instance.loss_original,
        )
        return -loss, metrics
