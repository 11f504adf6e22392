"""BCQ-Lag: the CVAE, the PID-Lagrangian multiplier, target updates, candidate selection."""

import numpy as np
import pytest
import torch

import omnigym
from omnigym.agents.safety.bcq_lag import BCQLag, Critics, PIDLagrangian, per_step_cost_threshold
from omnigym.agents.safety.offline import Batches

SMALL = {"hidden": (32, 32), "batch_size": 64, "num_candidates": 5}


def reconstruction_error(agent, data):
    """Mean squared error of the CVAE's reconstruction of the dataset actions at the mean latent."""
    obs = torch.as_tensor(data["observations"])
    actions = torch.as_tensor(data["actions"])
    vae = agent.modules["vae"]
    with torch.no_grad():
        reconstruction, _, _ = vae(obs, actions, torch.zeros(len(obs), vae.latent_dim))
    return float((reconstruction - actions).pow(2).mean())


@pytest.fixture(scope="module")
def trained(point_goal_data):
    """An agent trained 200 updates on actions that depend on the observation, with the CVAE's
    reconstruction error of the dataset actions before and after training."""
    data = {key: value.copy() for key, value in point_goal_data.items()}
    weights = np.random.default_rng(0).normal(size=(data["observations"].shape[1], 2))
    data["actions"] = np.tanh(data["observations"] @ weights).astype(np.float32)
    agent = BCQLag(target_cost=6, seed=0, **SMALL).learn(data, budget=0)
    before = reconstruction_error(agent, data)
    agent.learn(data, budget=200)
    return agent, before, reconstruction_error(agent, data)


def test_learning_records_every_loss_and_the_vae_loss_decreases(trained):
    agent = trained[0]
    assert agent.updates == 200
    assert {key: len(values) for key, values in agent.history.items()} == {
        key: 200
        for key in ("vae", "reward_critic", "cost_critic", "actor", "cost_value", "lagrangian")
    }
    assert all(np.isfinite(values).all() for values in agent.history.values())
    assert np.mean(agent.history["vae"][-20:]) < 0.5 * np.mean(agent.history["vae"][:20])


def test_the_cvae_reconstructs_dataset_actions_better_after_training(trained):
    _, before, after = trained
    assert after < 0.3 * before


def test_pid_multiplier_on_hand_values():
    below = PIDLagrangian(kp=0.1, ki=0.003, kd=0.001)
    assert [below.update(value, threshold=1.0) for value in (0.5, 0.2, 0.9, 0.9)] == [0.0] * 4
    above = PIDLagrangian(kp=0.1, ki=0.003, kd=0.001)
    # e = 2: I = 2, rise 2 -> 0.2 + 0.006 + 0.002; then I = 4, rise 0 -> 0.2 + 0.012.
    assert above.update(3.0, threshold=1.0) == pytest.approx(0.208)
    assert above.update(3.0, threshold=1.0) == pytest.approx(0.212)
    # Back under the threshold the signed P term outweighs the integral (3·0.003 < 0.1).
    assert above.update(0.0, threshold=1.0) == 0.0
    assert float(above.integral) == pytest.approx(3.0)
    assert float(above.multiplier) == 0.0


def test_lagrangian_stays_zero_under_the_budget_and_grows_over_it(point_goal_data):
    generous = BCQLag(target_cost=1e6, seed=0, **SMALL).learn(point_goal_data, budget=60)
    assert max(generous.history["lagrangian"]) == 0.0
    data = {key: value.copy() for key, value in point_goal_data.items()}
    data["costs"][:] = 1.0
    strict = BCQLag(target_cost=0, seed=0, **SMALL).learn(data, budget=120)
    assert strict.history["cost_value"][-1] > strict.cost_threshold == 0.0
    assert strict.history["lagrangian"][-1] > strict.history["lagrangian"][40] > 0.0


def test_cost_threshold_follows_osrl(point_goal_data):
    assert per_step_cost_threshold(12.0, 0.99, 300) == pytest.approx(12 * (1 - 0.99**300) / 3)
    assert per_step_cost_threshold(5.0, 0.9, 1) == pytest.approx(5.0)
    agent = BCQLag(target_cost=6, **SMALL).learn(point_goal_data, budget=1)
    assert agent.config["episode_len"] == 60  # the longest episode of the data
    assert agent.cost_threshold == pytest.approx(per_step_cost_threshold(6.0, 0.99, 60))
    assert BCQLag(env=omnigym.make("Safe/PointGoal1-v0")).config["episode_len"] == 300


def test_target_networks_soft_update_with_tau(point_goal_data):
    agent = BCQLag(target_cost=6, seed=0, tau=0.1, **SMALL).learn(point_goal_data, budget=5)
    pairs = ("actor", "critics")
    before = {
        key: [p.clone() for p in agent.modules[f"{key}_target"].parameters()] for key in pairs
    }
    agent.update(Batches(point_goal_data, seed=9).sample(64))
    for key in pairs:
        online = list(agent.modules[key].parameters())
        target = list(agent.modules[f"{key}_target"].parameters())
        for old, new, theta in zip(before[key], target, online, strict=True):
            torch.testing.assert_close(new, 0.1 * theta + 0.9 * old)
            assert not new.requires_grad


def test_the_action_is_the_best_scoring_candidate(point_goal_data):
    agent = BCQLag(target_cost=6, seed=0, **SMALL).learn(point_goal_data, budget=50)
    obs = point_goal_data["observations"][17]
    agent.reset(seed=4)
    candidates, scores = agent.candidates(torch.as_tensor(obs))
    assert candidates.shape == (5, 2) and scores.shape == (5,)
    agent.reset(seed=4)
    action = agent.act(obs, {})
    assert any(np.array_equal(action, row) for row in candidates.numpy())
    assert np.array_equal(action, candidates[scores.argmax()].numpy())


def test_acting_gives_a_float32_action_in_the_box(point_goal_data):
    env = omnigym.make("Safe/PointGoal1-v0")
    agent = BCQLag(env=env, seed=0, **SMALL).learn(point_goal_data, budget=10)
    obs, _ = env.reset(seed=1)
    action = agent.act(obs, {})
    assert action.dtype == np.float32 and action.shape == (2,)
    assert np.all(np.abs(action) <= 1.0)
    env.step(action)


def test_checkpoints_round_trip_to_identical_actions(point_goal_data, tmp_path):
    agent = BCQLag(target_cost=0, seed=3, **SMALL).learn(point_goal_data, budget=30)
    agent.save(tmp_path / "ckpt")
    restored = BCQLag(target_cost=5).load(tmp_path / "ckpt")
    assert restored.config == agent.config
    assert float(restored.modules["lagrangian"].multiplier) == agent.history["lagrangian"][-1]
    agent.reset(seed=11)
    restored.reset(seed=11)
    for obs in point_goal_data["observations"][:5]:
        assert np.array_equal(restored.act(obs, {}), agent.act(obs, {}))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({}, "target_cost"),
        ({"target_cost": -1}, "target_cost"),
        ({"target_cost": 1, "gamma": 1.0}, "gamma"),
        ({"target_cost": 1, "tau": 0}, "tau"),
        ({"target_cost": 1, "phi": 2}, "phi"),
        ({"target_cost": 1, "min_q_weight": -0.1}, "min_q_weight"),
        ({"target_cost": 1, "pid": (0.1, 0.01)}, "pid"),
        ({"target_cost": 1, "num_candidates": 0}, "num_candidates"),
        ({"target_cost": 1, "episode_len": 0}, "episode_len"),
        ({"target_cost": 1, "hidden": ()}, "hidden"),
    ],
)
def test_bad_arguments_raise_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        BCQLag(**kwargs)


def test_the_batched_critics_are_independent():
    torch.manual_seed(0)
    critics = Critics(obs_dim=5, act_dim=2, hidden=(8, 8))
    obs, actions = torch.randn(4, 5), torch.randn(4, 2)
    before = critics(obs, actions)
    assert before.shape == (3, 4)
    with torch.no_grad():
        critics.weights[0][2].add_(1.0)  # the cost critic's first layer only
    after = critics(obs, actions)
    assert torch.equal(after[:2], before[:2]) and not torch.equal(after[2], before[2])
