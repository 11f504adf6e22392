"""PPO (omnigym.llm_agents.ppo): GAE and the clipped objective by hand, and the loop at micro
scale from a one-layer tiny BC policy on the Maze."""

import dataclasses

import gymnasium
import numpy as np
import pytest

from tests.llm.conftest import MAZE, WORDLE, require_llm_stack, save_micro_bc

require_llm_stack()

import torch  # noqa: E402

import omnigym  # noqa: E402
from omnigym.envs.lmrl.maze import MazeEnv  # noqa: E402
from omnigym.llm_agents.bc import BCAgent  # noqa: E402
from omnigym.llm_agents.ppo import (  # noqa: E402
    PPOAgent,
    approximate_kl,
    clipped_surrogate,
    gae,
)

SMALL = {"envs": 2, "steps": 8, "minibatch": 8}


@pytest.fixture(scope="module")
def bc_checkpoint(tmp_path_factory, maze_records):
    """The conftest's micro BC policy, sampling at temperature 1 as PPO explores."""
    return save_micro_bc(tmp_path_factory.mktemp("bc") / "maze", maze_records, temperature=1.0)


@pytest.fixture(scope="module")
def trained(bc_checkpoint):
    return PPOAgent(seed=0, policy=str(bc_checkpoint), **SMALL).learn(MAZE, 16)


def test_gae_matches_a_hand_example():
    # One env, three turns, the episode ends after the second; gamma 0.9, lambda 0.5.
    rewards = np.array([[1.0], [2.0], [3.0]])
    values = np.array([[0.5], [1.0], [2.0], [4.0]])  # the last row bootstraps turn 3
    dones = np.array([[0.0], [1.0], [0.0]])
    advantages, returns = gae(rewards, values, dones, gamma=0.9, lam=0.5)
    delta_3 = 3.0 + 0.9 * 4.0 - 2.0
    delta_2 = 2.0 - 1.0  # terminal: no bootstrap, no carry-over from turn 3
    delta_1 = 1.0 + 0.9 * 1.0 - 0.5
    expected = [delta_1 + 0.9 * 0.5 * delta_2, delta_2, delta_3]
    np.testing.assert_allclose(advantages[:, 0], expected)
    np.testing.assert_allclose(returns[:, 0], np.array(expected) + values[:3, 0])


def test_clipped_surrogate_matches_a_hand_example():
    # ratio 1.5 with A = +1 is clipped at 1.2; ratio 0.5 with A = -1 is clipped at 0.8.
    log_ratio = torch.log(torch.tensor([1.5, 0.5, 1.1]))
    advantages = torch.tensor([1.0, -1.0, 2.0])
    loss = clipped_surrogate(log_ratio, advantages, clip=0.2)
    expected = (-1.2 + 0.8 - 2.0 * 1.1) / 3
    assert float(loss) == pytest.approx(expected, rel=1e-6)


def test_approximate_kl_is_zero_at_ratio_one_and_positive_elsewhere():
    assert float(approximate_kl(torch.zeros(3))) == 0.0
    assert float(approximate_kl(torch.tensor([0.3, -0.3]))) > 0.0


def test_an_update_lowers_the_clipped_loss_with_the_kl_bounded(bc_checkpoint):
    agent = PPOAgent(seed=1, policy=str(bc_checkpoint), epochs=4, lr=1e-3, **SMALL)
    envs = [omnigym.make(MAZE) for _ in range(SMALL["envs"])]
    agent._start(MAZE, envs[0])
    turns, bootstrap, _ = agent._rollout(envs, agent._reset_all(envs))
    flat = [turn for row in turns for turn in row]
    rewards = np.array([[t.reward for t in row] for row in turns])
    values = np.vstack([[[t.value for t in row] for row in turns], bootstrap[None]])
    dones = np.array([[float(t.done) for t in row] for row in turns])
    advantages, _ = gae(rewards, values, dones, 1.0, 0.95)
    advantages = advantages.reshape(-1)
    advantages = torch.tensor((advantages - advantages.mean()) / (advantages.std() + 1e-8))
    old = torch.tensor([t.log_prob for t in flat])

    def new_log_probs():
        batch, groups = agent._batch([t.prompt for t in flat], [t.candidates for t in flat])
        with torch.no_grad():
            log_probs, _ = agent._log_probs(agent.policy.lm.model, batch, groups)
        return log_probs[[g.start + t.chosen for g, t in zip(groups, flat, strict=True)]]

    before = clipped_surrogate(new_log_probs() - old, advantages.float(), 0.2)
    optimizer = torch.optim.AdamW(agent._trainable(), lr=1e-3)
    value_optimizer = torch.optim.AdamW(agent.value_head.parameters(), lr=1e-3)
    agent._update(turns, bootstrap, [], optimizer, value_optimizer)
    log_ratio = new_log_probs() - old
    after = clipped_surrogate(log_ratio, advantages.float(), 0.2)
    for env in envs:
        env.close()
    assert float(before) == pytest.approx(0.0, abs=1e-5)  # the rollout's own policy: ratio 1
    assert float(after) < float(before)
    assert float(approximate_kl(log_ratio)) < 0.1


def test_learn_counts_turns_in_whole_rollouts_and_records_episodes(trained):
    assert trained.samples == 16  # 2 envs x 8 steps: the budget is one rollout exactly
    assert len(trained.stats) == 1
    assert all(0 < t <= 16 for t, _ in trained.learning_curve)
    assert {"policy_loss", "value_loss", "approx_kl", "kl_to_bc"} <= set(trained.stats[0])


def test_wordle_uses_lmrl_bc_weight_and_maze_none():
    agent = PPOAgent()
    assert agent.bc_weight(WORDLE) == 10.0
    assert agent.bc_weight(MAZE) == 0.0
    assert PPOAgent(bc_weight=2.0).bc_weight(WORDLE) == 2.0


def test_save_load_gives_the_same_actions(trained, tmp_path):
    trained.save(tmp_path / "ppo")
    loaded = PPOAgent(seed=0).load(tmp_path / "ppo")
    env = omnigym.make(MAZE)
    observation, info = env.reset(seed=2)
    env.close()
    for agent in (trained, loaded):
        agent.reset(9)
    assert [loaded.act(observation, info) for _ in range(5)] == [
        trained.act(observation, info) for _ in range(5)
    ]
    assert loaded.samples == trained.samples
    assert loaded.learning_curve == trained.learning_curve
    state = trained.value_head.state_dict()
    for name, tensor in loaded.value_head.state_dict().items():
        torch.testing.assert_close(tensor, state[name])


def test_same_seed_same_training(bc_checkpoint):
    runs = [PPOAgent(seed=3, policy=str(bc_checkpoint), **SMALL).learn(MAZE, 16) for _ in range(2)]
    assert runs[0].stats == runs[1].stats
    assert runs[0].learning_curve == runs[1].learning_curve


def test_bad_budget_and_hyperparameters_are_refused():
    with pytest.raises(ValueError, match="budget"):
        PPOAgent().learn(MAZE, 0)
    with pytest.raises(ValueError, match="clip"):
        PPOAgent(clip=0.0)
    with pytest.raises(ValueError, match="lam"):
        PPOAgent(lam=1.5)


class MicroMaze(MazeEnv):
    """The Maze FO started at (6, 6), two moves above the goal in its stem, and capped at 10
    moves: the starting policy below runs into the cap in most episodes, the best takes two."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.layout = dataclasses.replace(self.layout, max_moves=10)

    def _begin(self, options):
        return super()._begin({"start": (6, 6), **options})


def mean_return(agent, episodes=24):
    env = MicroMaze()
    returns = []
    for episode in range(episodes):
        agent.reset(episode)
        observation, info = env.reset(seed=episode)
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
            done = terminated or truncated
        returns.append(info["episode_return"])
    return float(np.mean(returns))


@pytest.mark.slow
def test_ppo_return_rises_on_a_micro_maze(tmp_path, maze_records):
    # A micro BC after one update puts 0.995 of its probability on "move up" here and never
    # finds the goal; 20 updates at a high learning rate give a policy that finds it in a few
    # episodes, which PPO can improve.
    checkpoint = save_micro_bc(
        tmp_path / "bc", maze_records, updates=20, lr=1e-2, temperature=1.0, max_prompt_tokens=8
    )
    spec = gymnasium.envs.registration.EnvSpec("MicroMaze-v0", entry_point=MicroMaze)
    agent = PPOAgent(seed=0, policy=str(checkpoint), envs=4, steps=16, minibatch=16, lr=1e-3)
    agent.learn(gymnasium.make(spec), 4 * 16 * 8)
    before, after = mean_return(BCAgent().load(checkpoint)), mean_return(agent)
    assert before < -9.0  # measured: -10.0 over 24 episodes
    assert after > before + 3.0  # measured: -5.2
    returns = [r for _, r in agent.learning_curve]
    half = len(returns) // 2
    assert np.mean(returns[half:]) > np.mean(returns[:half])
