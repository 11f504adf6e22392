"""CDT-lite: causality, to-go bookkeeping, κ-conditioning, frontier relabelling, checkpoints."""

import numpy as np
import pytest
import torch

import omnigym
from omnigym.agents.safety.cdt import CDTLite, frontier_relabel_targets

SMALL = {"embed_dim": 32, "heads": 2, "context": 5, "batch_size": 16, "lr": 1e-3}


def correlated_data(trajectories=40, length=20, seed=0):
    """Each trajectory holds one action level β ∈ [−1, 1] (plus noise); reward and cost per
    step both grow with a₀ = β, so a larger cost budget buys a larger reward."""
    rng = np.random.default_rng(seed)
    n = trajectories * length
    levels = np.repeat(np.linspace(-1, 1, trajectories), length)
    a0 = np.clip(levels + 0.05 * rng.normal(size=n), -1, 1)
    actions = np.stack([a0, np.zeros(n)], axis=1).astype(np.float32)
    observations = rng.normal(size=(n, 3)).astype(np.float32)
    timeouts = np.arange(n) % length == length - 1
    return {
        "observations": observations,
        "next_observations": np.roll(observations, -1, axis=0),
        "actions": actions,
        "rewards": ((a0 + 1) / 2).astype(np.float32),
        "costs": ((a0 + 1) / 2).astype(np.float32),
        "terminals": np.zeros(n, dtype=bool),
        "timeouts": timeouts,
    }


def test_causal_mask_keeps_later_tokens_from_changing_earlier_predictions():
    agent = CDTLite(target_cost=5.0, seed=0, **SMALL).learn(correlated_data(), budget=0)
    model = agent.modules["transformer"]
    generator = torch.Generator().manual_seed(0)
    rtg, ctg = torch.randn(2, 6, generator=generator), torch.randn(2, 6, generator=generator)
    states = torch.randn(2, 6, 3, generator=generator)
    actions = torch.randn(2, 6, 2, generator=generator)
    timesteps = torch.arange(6).expand(2, 6)
    changed = actions.clone()
    changed[:, 3] += 1.0  # the action token of step 3
    with torch.no_grad():
        before = model(rtg, ctg, states, actions, timesteps)
        after = model(rtg, ctg, states, changed, timesteps)
    assert torch.equal(before[:, :4], after[:, :4])  # steps 0-3 predict from tokens before it
    assert not torch.allclose(before[:, 4:], after[:, 4:])


def test_to_go_values_fall_by_the_observed_reward_and_cost():
    agent = CDTLite(target_cost=10.0, target_return=8.0, **SMALL).learn(correlated_data(), 0)
    agent.reset(0)
    obs = np.zeros(3, dtype=np.float32)
    agent.act(obs, {"cost": 0.0})  # the reset's info: nothing spent yet
    assert (agent.reward_to_go, agent.cost_to_go) == (8.0, 10.0)
    agent.act(obs, {"cost": 1.0, "reward": 0.5})
    agent.act(obs, {"cost": 2.0, "reward": 0.25})
    assert agent.reward_to_go == pytest.approx(7.25) and agent.cost_to_go == pytest.approx(7.0)
    assert list(agent.history["ctg"]) == pytest.approx([10.0, 9.0, 7.0])
    assert list(agent.history["timesteps"]) == [0, 1, 2]
    agent.set_target_cost(20.0)  # the cost already spent still counts
    assert agent.cost_to_go == pytest.approx(17.0)
    agent.reset(1)
    assert agent.cost_to_go == 20.0 and len(agent.history["obs"]) == 0


def test_larger_cost_budget_gives_larger_actions_where_cost_buys_reward():
    data = correlated_data()
    agent = CDTLite(target_cost=1.0, seed=0, **SMALL).learn(data, budget=300)
    assert np.mean(agent.losses[-30:]) < 0.5 * np.mean(agent.losses[:30])
    mean_first_actions = {}
    for kappa in (2.0, 18.0):
        agent.set_target_cost(kappa)
        firsts = []
        for obs in data["observations"][:20]:
            agent.reset(0)
            firsts.append(agent.act(obs, {"cost": 0.0})[0])
        mean_first_actions[kappa] = np.mean(firsts)
    # κ = 2 over 20 steps allows a₀ ≈ −0.8; κ = 18 allows a₀ ≈ 0.8.
    assert mean_first_actions[18.0] - mean_first_actions[2.0] > 0.8


def test_frontier_relabelling_targets_bins_whose_best_reward_is_dominated():
    rewards = np.array([5.0, 1.0, 2.0, 9.0])
    costs = np.array([0.0, 1.5, 2.5, 4.0])
    # Bins of width 1 over [0, 4]: [0,1] and (3,4] hold frontier points themselves (rewards 5
    # and 9); (1,2] and (2,3] hold rewards 1 and 2, below the frontier's 5 (trajectory 0).
    assert frontier_relabel_targets(rewards, costs, bins=4) == [(1.0, 2.0, 0), (2.0, 3.0, 0)]
    # An empty bin is a target too: nothing in the data answers that budget.
    assert (0.5, 1.0, 0) in frontier_relabel_targets(rewards, costs, bins=8)


def test_target_return_defaults_to_the_frontier_reward_at_kappa():
    data = correlated_data()
    agent = CDTLite(target_cost=0.0, **SMALL).learn(data, budget=0)
    reward_returns = data["rewards"].reshape(40, 20).sum(axis=1)
    assert agent.target_return == pytest.approx(reward_returns.min(), rel=1e-5)
    agent.set_target_cost(1e6)
    assert agent.target_return == pytest.approx(reward_returns.max(), rel=1e-5)


def test_learns_and_acts_in_the_safe_env(point_goal_data):
    env = omnigym.make("Safe/PointGoal1-v0")
    agent = CDTLite(env=env, **SMALL).learn(point_goal_data, budget=40)
    assert agent.config["target_cost"] == env.unwrapped.target_cost
    agent.reset(0)
    obs, info = env.reset(seed=0)
    for _ in range(8):  # past the context length
        action = agent.act(obs, info)
        assert action.dtype == np.float32 and env.action_space.contains(action)
        obs, _, _, _, info = env.step(action)
    assert len(agent.history["obs"]) == SMALL["context"]


def test_save_load_round_trip_gives_identical_actions(tmp_path):
    data = correlated_data()
    agent = CDTLite(target_cost=6.0, seed=1, **SMALL).learn(data, budget=20)
    agent.save(tmp_path / "cdt")
    restored = CDTLite(target_cost=0.0).load(tmp_path / "cdt")
    assert restored.config == agent.config and restored.target_cost == 6.0
    agent.reset(0)
    restored.reset(0)
    info = {"cost": 0.0}
    for obs in data["observations"][:7]:
        assert np.array_equal(agent.act(obs, info), restored.act(obs, info))
        info = {"cost": 1.0, "reward": 0.5}


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({}, "target_cost"),
        ({"target_cost": -1.0}, "target_cost"),
        ({"target_cost": 1.0, "context": 0}, "context"),
        ({"target_cost": 1.0, "embed_dim": 30, "heads": 4}, "embed_dim"),
        ({"target_cost": 1.0, "augment_prob": 1.5}, "augment_prob"),
        ({"target_cost": 1.0, "lr": 0.0}, "lr"),
    ],
)
def test_bad_arguments_raise_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        CDTLite(**kwargs)


def test_set_target_cost_rejects_negative_thresholds():
    agent = CDTLite(target_cost=1.0)
    with pytest.raises(ValueError, match="target_cost"):
        agent.set_target_cost(-0.5)
