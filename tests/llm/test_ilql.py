"""ILQL-lite (omnigym.llm_agents.ilql): its losses by hand, and the agent at micro scale (a
one-layer tiny model behaviour-cloned for a few updates on a few Maze episodes)."""

import math

import numpy as np
import pytest

from tests.llm.conftest import MAZE, first_state, require_llm_stack

require_llm_stack()

import torch  # noqa: E402

from omnigym.llm_agents.data import dataset_examples  # noqa: E402
from omnigym.llm_agents.ilql import (  # noqa: E402
    ILQLLiteAgent,
    conservative_term,
    expectile_loss,
)
from omnigym.llm_agents.mc_returns import EncodedTurns  # noqa: E402


@pytest.fixture(scope="module")
def trained(bc_checkpoint, maze_records):
    return ILQLLiteAgent(seed=0, policy=str(bc_checkpoint), lr=1e-3).learn(maze_records, 8)


def test_expectile_loss_matches_a_hand_computation():
    # d = target - V: 2 (above, weight tau) and -1 (below, weight 1 - tau); loss = w d^2 / 2.
    loss = expectile_loss(torch.tensor([2.0, -1.0]), tau=0.7)
    np.testing.assert_allclose(loss.numpy(), [0.5 * 0.7 * 4, 0.5 * 0.3 * 1], rtol=1e-6)


def test_expectile_above_half_pulls_v_above_the_mean():
    targets = torch.tensor([0.0, 1.0, 2.0, 3.0])
    v = torch.zeros((), requires_grad=True)
    optimizer = torch.optim.SGD([v], lr=0.5)
    for _ in range(200):
        optimizer.zero_grad()
        expectile_loss(targets - v, tau=0.7).mean().backward()
        optimizer.step()
    assert float(v) > float(targets.mean())


def test_conservative_term_matches_a_hand_computation():
    # Prompt 0: Q = [1, 0] with the data action first; prompt 1: Q = [2] alone.
    q = torch.tensor([1.0, 0.0, 2.0])
    value = conservative_term(q, rows=torch.tensor([0, 0, 1]), data=torch.tensor([0, 2]))
    expected = ((math.log(math.e + 1.0) - 1.0) + 0.0) / 2
    assert float(value) == pytest.approx(expected, rel=1e-6)


def test_next_state_value_is_zero_after_an_episode_last_turn(trained, maze_records):
    examples = dataset_examples(maze_records, MAZE)
    encoded = EncodedTurns(trained.policy.format, examples)
    last = [i for i in range(len(examples) - 1) if examples[i + 1].episode != examples[i].episode]
    last.append(len(examples) - 1)
    middle = [0, 1]
    with torch.no_grad():
        values = trained._next_state_values(examples, encoded, np.array(last + middle))
    assert values[: len(last)].tolist() == [0.0] * len(last)
    assert all(v != 0.0 for v in values[len(last) :].tolist())


def test_target_head_follows_the_q_head_by_polyak_averaging(bc_checkpoint, maze_records):
    agent = ILQLLiteAgent(seed=0, policy=str(bc_checkpoint), polyak=0.25).learn(maze_records, 1)
    heads = agent.critic.heads
    before = heads["q_target"].weight.detach().clone()
    with torch.no_grad():
        heads["q"].weight.add_(1.0)
    agent.after_update()
    expected = 0.75 * before + 0.25 * heads["q"].weight
    torch.testing.assert_close(heads["q_target"].weight, expected)
    assert not any(p.requires_grad for p in heads["q_target"].parameters())


def test_loss_decreases_on_one_episode(bc_checkpoint, maze_records):
    episode = min(maze_records, key=lambda record: len(record["turns"]))
    agent = ILQLLiteAgent(seed=0, policy=str(bc_checkpoint), lr=3e-3, batch_size=64)
    agent.learn([episode], 30)
    assert np.mean(agent.losses[-5:]) < 0.5 * np.mean(agent.losses[:5])


def test_ranking_score_is_q_minus_v(trained):
    observation, info = first_state()
    q, v = trained.action_values(observation, info["legal_actions"])
    np.testing.assert_allclose(trained.advantages(observation, info["legal_actions"]), q - v)


def test_save_load_keeps_every_head(trained, tmp_path):
    trained.save(tmp_path / "ilql")
    loaded = ILQLLiteAgent(seed=0).load(tmp_path / "ilql")
    for name, head in trained.critic.heads.items():
        torch.testing.assert_close(loaded.critic.heads[name].weight, head.weight)
    observation, info = first_state()
    expected = trained.action_values(observation, info["legal_actions"])
    got = loaded.action_values(observation, info["legal_actions"])
    np.testing.assert_allclose(got[0], expected[0])
    assert got[1] == pytest.approx(expected[1])


def test_a_checkpoint_of_another_agent_is_refused(trained, tmp_path):
    from omnigym.llm_agents.mc_returns import MCReturnsAgent

    trained.save(tmp_path / "ilql")
    with pytest.raises(ValueError, match="ilql_lite"):
        MCReturnsAgent().load(tmp_path / "ilql")


def test_alpha_outside_lmrls_range_is_refused():
    with pytest.raises(ValueError, match="alpha"):
        ILQLLiteAgent(alpha=2.0)
    with pytest.raises(ValueError, match="tau"):
        ILQLLiteAgent(tau=1.0)
