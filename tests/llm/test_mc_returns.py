"""MC returns (omnigym.llm_agents.mc_returns) at micro scale: a one-layer tiny model behaviour-
cloned for a few updates on a few Maze episodes, its critic trained for tens of updates."""

import random

import numpy as np
import pytest

from tests.llm.conftest import WORDLE, first_state, require_llm_stack, save_micro_bc

require_llm_stack()

import torch  # noqa: E402

from omnigym.envs.lmrl.datasets import load_fixture  # noqa: E402
from omnigym.llm_agents.mc_returns import (  # noqa: E402
    MCReturnsAgent,
    TurnBatch,
    completion_log_probs,
    decoder_parts,
    run_turns,
)


@pytest.fixture(scope="module")
def trained(bc_checkpoint, maze_records):
    return MCReturnsAgent(seed=0, policy=str(bc_checkpoint), lr=1e-3).learn(maze_records, 8)


def test_cached_candidates_match_whole_sequences(trained):
    lm = trained.policy.lm
    fmt = trained.policy.format
    body, head = decoder_parts(lm.model)
    observations = [first_state()[0], first_state("LMRL/MazePO-v0")[0]]
    actions = [["move up", "move left"], ["move right"]]
    prompts = [fmt.encode(o) for o in observations]
    completions = [fmt.completion(a) for group in actions for a in group]
    batch = TurnBatch.build(prompts, completions, [0, 0, 1], pad_id=0)
    with torch.no_grad():
        states, hidden = run_turns(body, batch)
        cached = completion_log_probs(head, states, hidden, batch)
        whole = []
        for row, completion in zip([0, 0, 1], completions, strict=True):
            ids = torch.tensor([prompts[row] + completion])
            logits = lm.model(input_ids=ids).logits[0, len(prompts[row]) - 1 : -1]
            picked = torch.log_softmax(logits, -1)[torch.arange(len(completion)), completion]
            whole.append(float(picked.sum()))
    np.testing.assert_allclose(cached.numpy(), whole, atol=1e-4)


def test_value_loss_decreases_on_one_episode(bc_checkpoint, maze_records):
    # Full-batch steps on one short episode: the regression has a fixed target to fit.
    episode = min(maze_records, key=lambda record: len(record["turns"]))
    agent = MCReturnsAgent(seed=0, policy=str(bc_checkpoint), lr=3e-3, batch_size=64)
    agent.learn([episode], 30)
    assert np.mean(agent.losses[-5:]) < 0.5 * np.mean(agent.losses[:5])


def test_reranking_picks_the_higher_q_candidate(bc_checkpoint, maze_records):
    agent = MCReturnsAgent(seed=0, policy=str(bc_checkpoint), beta=1e6).learn(maze_records, 2)
    observation, info = first_state()
    q, _ = agent.action_values(observation, info["legal_actions"])
    assert agent.act(observation, info) == info["legal_actions"][int(np.argmax(q))]


def test_score_adds_the_bc_prior_to_beta_q(trained):
    observation, info = first_state()
    actions, prior = trained.candidates(observation, info)
    q, _ = trained.action_values(observation, actions)
    np.testing.assert_allclose(prior, trained.policy.action_log_likelihoods(observation, actions))
    best = int(np.argmax(prior + trained.config.beta * q))
    assert trained.act(observation, info) == actions[best]


def test_sampled_candidates_weigh_each_distinct_utterance_by_its_count(tmp_path):
    records = load_fixture(WORDLE)[:3]
    save_micro_bc(tmp_path / "bc", records, updates=2)
    agent = MCReturnsAgent(seed=0, policy=str(tmp_path / "bc"), candidates=6).learn(records, 2)
    agent.reset(5)
    actions, prior = agent.candidates(*first_state(WORDLE))
    assert len(set(actions)) == len(actions)
    assert np.exp(prior).sum() == pytest.approx(6)


def test_save_load_gives_the_same_values_and_actions(trained, tmp_path):
    trained.save(tmp_path / "mc")
    loaded = MCReturnsAgent(seed=0).load(tmp_path / "mc")
    observation, info = first_state()
    actions = info["legal_actions"]
    expected, _ = trained.action_values(observation, actions)
    np.testing.assert_allclose(loaded.action_values(observation, actions)[0], expected)
    assert loaded.return_scale == trained.return_scale
    assert loaded.losses == trained.losses
    loaded.reset(1)
    trained.reset(1)
    assert loaded.act(observation, info) == trained.act(observation, info)


def test_same_seed_same_critic_and_global_generators_untouched(bc_checkpoint, maze_records):
    random.seed(11)
    np.random.seed(11)
    torch.manual_seed(11)
    before = (random.random(), np.random.random(), torch.rand(1).item())
    random.seed(11)
    np.random.seed(11)
    torch.manual_seed(11)
    runs = [
        MCReturnsAgent(seed=4, policy=str(bc_checkpoint)).learn(maze_records, 3).losses
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert (random.random(), np.random.random(), torch.rand(1).item()) == before


def test_bad_hyperparameters_name_the_field():
    with pytest.raises(ValueError, match="beta"):
        MCReturnsAgent(beta=-1.0)
    with pytest.raises(ValueError, match="candidates"):
        MCReturnsAgent(candidates=0)


def test_acting_before_learning_says_so():
    with pytest.raises(RuntimeError, match="learn"):
        MCReturnsAgent().act("", {"legal_actions": ["move up"]})
