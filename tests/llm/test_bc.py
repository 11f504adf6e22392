"""BC and filtered BC of LM policies through TRL (omnigym.llm_agents.bc): the loss falls, the
BC-trained tiny policy beats the untrained one on Maze (measured with the evaluator), %BC
trains on LMRL's filtered episodes, training leaves the global generators alone, and a saved
agent reloads (also as lm:/path) with identical actions."""

import json
import random

import numpy as np
import pytest

from tests.llm.conftest import MAZE, WORDLE, require_llm_stack

require_llm_stack()

import torch  # noqa: E402

import omnigym  # noqa: E402
from omnigym.agent import make_agent  # noqa: E402
from omnigym.envs.lmrl.datasets import load_fixture  # noqa: E402
from omnigym.evaluators.rollout import evaluate  # noqa: E402
from omnigym.evaluators.stats import summarize  # noqa: E402
from omnigym.llm_agents.bc import BCAgent, BCConfig, FilteredBCAgent  # noqa: E402
from omnigym.llm_agents.policy import LMPolicy  # noqa: E402

# Short prompts (Maze FO is Markov in its last message, one token of the tiny tokenizer) keep
# training to seconds.
MAZE_BC = {"max_prompt_tokens": 8, "batch_size": 32}


def global_generators():
    return random.getstate(), np.random.get_state()[1].tolist(), torch.get_rng_state().tolist()


@pytest.fixture(scope="module")
def trained():
    """A briefly trained agent: it writes moves, but not yet the state's likeliest one."""
    agent = BCAgent(seed=0, **MAZE_BC)
    before = global_generators()
    agent.learn(MAZE, budget=40)
    return agent, global_generators() == before


def maze_observations(count):
    env = omnigym.make(MAZE)
    pairs = []
    for seed in range(count):
        observation, info = env.reset(seed=seed)
        observation, *_, info = env.step("move up")
        pairs.append((observation, info))
    return pairs


def test_bc_loss_decreases(trained):
    agent, _ = trained
    assert len(agent.losses) == agent.updates == 40
    assert agent.episodes_trained == 100
    # from about log(vocabulary) to the entropy of the behaviour's nearly random moves over the
    # completion's two tokens (the move, then the end of sequence): about log(4) / 2
    assert agent.losses[0] > 4.0
    assert np.mean(agent.losses[-5:]) < 0.8 < np.mean(agent.losses[:5])


def test_bc_training_leaves_the_global_generators_unchanged(trained):
    _, untouched = trained
    assert untouched


@pytest.mark.slow
def test_bc_trained_tiny_policy_beats_the_untrained_one_on_maze():
    # The behaviour moves at random 85 % of the time: its likeliest move in a cell leads
    # toward the goal by only ~15 points of probability, and BC needs about 25k examples to
    # fit that. Decoding samples at a low temperature: near the likeliest legal move, without
    # hanging a whole episode on the argmax of one cell.
    agent = BCAgent(seed=0, max_prompt_tokens=4, batch_size=128, temperature=0.3)
    agent.learn(MAZE, budget=200)
    untrained = LMPolicy(env_id=MAZE, max_prompt_tokens=4, temperature=0.3)
    assert untrained.lm.tokenizer.get_vocab() == agent.policy.lm.tokenizer.get_vocab()
    summaries = {}
    for name, policy, episodes in (("bc", agent, 30), ("untrained", untrained, 20)):
        records = evaluate(MAZE, policy, episodes=episodes)
        assert all(record["metrics"]["invalid_actions"] == 0 for record in records)
        summaries[name] = summarize([record["normalized_score"] for record in records])
    assert summaries["bc"]["ci95"][0] > summaries["untrained"]["ci95"][1]


def test_filtered_bc_trains_on_the_successful_maze_episodes():
    agent = FilteredBCAgent(seed=0, **MAZE_BC)
    agent.learn(MAZE, budget=1)
    assert agent.episodes_trained == sum(r["success"] for r in load_fixture(MAZE)) == 62
    wordle = FilteredBCAgent(seed=0, max_prompt_tokens=32, batch_size=4)
    wordle.learn(WORDLE, budget=1)
    assert wordle.episodes_trained == 30  # the top 30 % of 100 episodes


def test_save_and_load_give_identical_actions(trained, tmp_path):
    agent, _ = trained
    agent.save(tmp_path / "bc")
    state = torch.load(tmp_path / "bc" / "model.pt", weights_only=True)
    assert set(state) >= {"transformer.wte.weight", "lm_head.weight"}
    loaded = BCAgent().load(tmp_path / "bc")
    assert loaded.config == agent.config and loaded.losses == agent.losses
    by_name = make_agent(f"lm:{tmp_path / 'bc'}", env=omnigym.make(MAZE), env_id=MAZE)
    assert by_name.settings() == agent.policy.settings()
    for observation, info in maze_observations(5):
        expected = agent.policy.action_log_likelihoods(observation, info["legal_actions"])
        for other in (loaded.policy, by_name):
            got = other.action_log_likelihoods(observation, info["legal_actions"])
            np.testing.assert_array_equal(got, expected)
        assert loaded.act(observation, info) == by_name.act(observation, info)
        assert loaded.act(observation, info) == agent.act(observation, info)


def test_a_checkpoint_saved_before_the_history_window_loads_without_one(trained, tmp_path):
    agent, _ = trained
    assert agent.policy.settings()["history_lines"] == 16  # the maze's window, saved
    agent.save(tmp_path / "bc")
    record = tmp_path / "bc" / "omnigym_lm.json"
    saved = json.loads(record.read_text())
    del saved["settings"]["policy"]["history_lines"]
    record.write_text(json.dumps(saved))
    for loaded in (BCAgent().load(tmp_path / "bc").policy, LMPolicy(model=tmp_path / "bc")):
        assert loaded.format.history_lines is None


def test_acting_before_training_is_an_error():
    with pytest.raises(RuntimeError, match="after learn"):
        BCAgent().act("", {})


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"finetune": "half"}, "finetune"),
        ({"lr": 0.0}, "lr"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_prompt_tokens": -1}, "max_prompt_tokens"),
    ],
)
def test_bad_hyperparameters_are_named(kwargs, named):
    with pytest.raises(ValueError, match=named):
        BCConfig(**kwargs)


def test_a_bad_budget_is_named():
    with pytest.raises(ValueError, match="budget"):
        BCAgent().learn(MAZE, budget=0)


def test_full_finetuning_for_tiny_and_lora_for_pretrained_models():
    assert not BCConfig().lora_finetuning and BCConfig().learning_rate == 1e-3
    assert BCConfig(model="smollm2").lora_finetuning
    assert BCConfig(model="smollm2").learning_rate == 2e-4


@pytest.mark.slow
def test_smollm2_bc_trains_a_lora_adapter_that_reloads(smollm2_wheel, tmp_path):
    agent = BCAgent(model="smollm2", max_prompt_tokens=128, batch_size=2)
    agent.learn(load_fixture(WORDLE)[:2], budget=1)
    model = agent.policy.lm.model
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name for name in trainable)
    assert len(agent.losses) == 1 and np.isfinite(agent.losses[0])
    agent.save(tmp_path / "lora")
    assert (tmp_path / "lora" / "adapter_model.safetensors").is_file()
    assert not (tmp_path / "lora" / "model.pt").exists()
    loaded = BCAgent().load(tmp_path / "lora")
    env = omnigym.make(WORDLE)
    observation, _ = env.reset(seed=0)
    words = ["crane", "slate"]
    np.testing.assert_allclose(
        loaded.policy.action_log_likelihoods(observation, words),
        agent.policy.action_log_likelihoods(observation, words),
        rtol=1e-6,
    )


def test_bc_agents_read_the_nested_mappings_a_scenario_file_gives():
    from omnigym.llm_agents.models import TinyConfig

    agent = FilteredBCAgent(seed=2, tiny={"layers": 1, "width": 32}, batch_size=4)
    assert agent.config.tiny == TinyConfig(layers=1, width=32)
    assert agent.config.batch_size == 4
    assert agent.config.lora == BCConfig().lora
