"""BC-All and BC-Safe: what they imitate, which episodes they train on, checkpoints, errors."""

import numpy as np
import pytest

import omnigym
from omnigym.agents.safety.bc import BCAll, BCSafe

SMALL = {"hidden": (32, 32), "batch_size": 64}
EPISODE_COSTS = [0.0, 5.0, 12.0, 3.0, 30.0, 12.0]  # cost returns of the six 60-step episodes


def with_costs_and_actions(data, cost_returns, actions):
    """``data`` with each episode's cost return spread over its first steps and every action of
    episode e set to ``actions[e]``."""
    out = {key: value.copy() for key, value in data.items()}
    out["costs"][:] = 0.0
    for episode, (cost, action) in enumerate(zip(cost_returns, actions, strict=True)):
        start = 60 * episode
        out["costs"][start : start + int(cost)] = 1.0
        out["actions"][start : start + 60] = action
    return out


def test_bc_all_learns_and_its_loss_decreases(point_goal_data):
    data = {key: value.copy() for key, value in point_goal_data.items()}
    weights = np.random.default_rng(0).normal(size=(data["observations"].shape[1], 2))
    data["actions"] = np.tanh(data["observations"] @ weights).astype(np.float32)
    agent = BCAll(seed=0, **SMALL).learn(data, budget=200)
    assert len(agent.losses) == 200 and agent.updates == 200
    assert np.mean(agent.losses[-20:]) < 0.3 * np.mean(agent.losses[:20])
    assert agent.selected_episodes.tolist() == [0, 1, 2, 3, 4, 5]


def test_bc_all_imitates_a_constant_action_dataset(point_goal_data):
    data = {key: value.copy() for key, value in point_goal_data.items()}
    data["actions"][:] = [0.3, -0.6]
    agent = BCAll(seed=0, **SMALL).learn(data, budget=300)
    for obs in data["observations"][::37]:
        np.testing.assert_allclose(agent.act(obs, {}), [0.3, -0.6], atol=0.05)


def test_acting_gives_a_float32_action_in_the_box(point_goal_data):
    env = omnigym.make("Safe/PointGoal1-v0")
    agent = BCAll(env=env, seed=0, **SMALL).learn(point_goal_data, budget=20)
    obs, _ = env.reset(seed=3)
    action = agent.act(obs, {})
    assert action.dtype == np.float32 and action.shape == (2,)
    assert np.all(np.abs(action) <= 1.0)
    env.step(action)


def test_bc_safe_selects_exactly_the_episodes_within_the_budget(point_goal_data):
    actions = [[0.5, 0.5] if cost <= 4 else [-0.5, -0.5] for cost in EPISODE_COSTS]
    data = with_costs_and_actions(point_goal_data, EPISODE_COSTS, actions)
    assert BCSafe(target_cost=12, **SMALL).select_episodes(data).tolist() == [0, 1, 2, 3, 5]
    agent = BCSafe(target_cost=4, seed=0, **SMALL).learn(data, budget=300)
    assert agent.selected_episodes.tolist() == [0, 3]
    # Trained only on the safe episodes, it reproduces their action, not the unsafe one.
    for obs in np.concatenate([data["observations"][0:60:7], data["observations"][180:240:7]]):
        np.testing.assert_allclose(agent.act(obs, {}), [0.5, 0.5], atol=0.05)


def test_bc_safe_without_a_safe_episode_raises(point_goal_data):
    data = with_costs_and_actions(point_goal_data, [1, 2, 3, 4, 5, 6], [[0.0, 0.0]] * 6)
    with pytest.raises(
        ValueError, match=r"no episode has cost return <= target_cost=0 .*lowest cost return 1"
    ):
        BCSafe(target_cost=0, **SMALL).learn(data, budget=5)


def test_bc_safe_takes_kappa_from_the_env():
    env = omnigym.make("Safe/PointGoal1-v0")
    env.unwrapped.set_target_cost(6.0)
    assert BCSafe(env=env).config["target_cost"] == 6.0
    assert BCSafe(env=env, target_cost=2).config["target_cost"] == 2.0


@pytest.mark.parametrize(("agent_class", "kwargs"), [(BCAll, {}), (BCSafe, {"target_cost": 99})])
def test_checkpoints_round_trip_to_identical_actions(
    agent_class, kwargs, point_goal_data, tmp_path
):
    agent = agent_class(seed=2, **kwargs, **SMALL).learn(point_goal_data, budget=30)
    agent.save(tmp_path / "ckpt")
    restored = agent_class(**kwargs).load(tmp_path / "ckpt")
    assert restored.config == agent.config and restored.updates == 30
    for obs in point_goal_data["observations"][:5]:
        assert np.array_equal(restored.act(obs, {}), agent.act(obs, {}))


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: BCSafe(), "target_cost"),
        (lambda: BCSafe(target_cost=-1), "target_cost"),
        (lambda: BCAll(lr=0), "lr"),
        (lambda: BCAll(batch_size=0), "batch_size"),
        (lambda: BCAll(hidden=[]), "hidden"),
        (lambda: BCAll(hidden=[16, -2]), "hidden"),
    ],
)
def test_bad_arguments_raise_errors_naming_them(build, name):
    with pytest.raises(ValueError, match=name):
        build()
