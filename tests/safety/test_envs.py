"""Safe tasks: rewards, costs, levels, spaces, errors and episode metrics (``docs/safety.md``)."""

import math

import numpy as np
import pytest

import omnigym
import omnigym.envs.safety  # noqa: F401  (registers Safe/*)
from omnigym.envs.safety import core
from omnigym.envs.safety.button import ButtonEnv
from omnigym.envs.safety.circle import CircleEnv
from omnigym.envs.safety.goal import GoalEnv
from omnigym.envs.safety.push import PushEnv
from omnigym.envs.safety.run import RunEnv
from omnigym.envs.safety.velocity import VelocityEnv

SAFE_IDS = [info.id for info in omnigym.list_envs(family="Safe")]
FORWARD = np.array([1.0, 0.0], np.float32)
STOP = np.array([0.0, 0.0], np.float32)
FAR = (-2.9, -2.9)
DT_FORWARD = 0.1 / 3.0  # distance covered by the first full-forward step from rest


def _make(cls, **kwargs):
    env = cls(**kwargs)
    env.reset(seed=0)
    env._place_robot(0.0, 0.0, 0.0)
    return env


def _clear(env, rows):
    """Move the objects of ``rows`` to a far corner, out of the robot's way."""
    env._positions[rows] = FAR


def test_the_nineteen_documented_ids_are_registered_with_the_safe_family():
    robots = ("Point", "Car")
    expected = {
        f"Safe/{r}{f}{lv}-v0"
        for r in robots
        for f in ("Goal", "Button", "Push", "Circle")
        for lv in (1, 2)
    }
    expected |= {"Safe/PointRun-v0", "Safe/CarRun-v0", "Safe/RunnerVelocity-v0"}
    assert set(SAFE_IDS) == expected
    assert all(omnigym.spec(env_id).obs_kind == "vector" for env_id in SAFE_IDS)


@pytest.mark.parametrize("env_id", SAFE_IDS)
def test_obs_groups_cover_the_observation_exactly(env_id):
    env = omnigym.make(env_id).unwrapped
    observation, info = env.reset(seed=1)
    indices = np.concatenate([np.arange(observation.size)[g] for g in env.obs_groups.values()])
    assert sorted(env.obs_groups) == ["cost", "reward", "robot"]
    assert sorted(indices) == list(range(observation.size))
    assert observation.dtype == np.float32 and info == {"cost": 0.0}


@pytest.mark.parametrize("family", ["Goal", "Button", "Push", "Circle"])
@pytest.mark.parametrize("robot", ["Point", "Car"])
def test_levels_share_observation_space_and_groups(robot, family):
    one = omnigym.make(f"Safe/{robot}{family}1-v0").unwrapped
    two = omnigym.make(f"Safe/{robot}{family}2-v0").unwrapped
    assert one.observation_space == two.observation_space
    assert one.obs_groups == two.obs_groups
    assert one.action_space == two.action_space


def test_level_two_adds_objects():
    assert (GoalEnv(level=1).hazard_count, GoalEnv(level=1).vase_count) == (4, 0)
    assert (GoalEnv(level=2).hazard_count, GoalEnv(level=2).vase_count) == (8, 4)
    assert ButtonEnv(level=2).gremlin_count == 2 and PushEnv(level=2).pillar_count == 4
    assert (CircleEnv(level=1).boundary, CircleEnv(level=2).boundary) == (1.5, 1.1)


def test_absent_level_one_objects_read_zero():
    env = GoalEnv(level=1)
    observation, _ = env.reset(seed=0)
    vases = slice(4 + 16 * env.channels.index("vase"), 4 + 16 * (env.channels.index("vase") + 1))
    assert not observation[vases].any()
    assert len(env.vase_positions) == 0


def test_goal_reward_is_distance_progress():
    env = _make(GoalEnv)
    _clear(env, slice(1, None))
    env._positions[0] = (2.0, 0.0)
    env._goal_distance = 2.0
    _, reward, _, _, info = env.step(FORWARD)
    assert reward == pytest.approx(DT_FORWARD)
    assert info["cost"] == 0.0


def test_goal_reached_pays_one_and_respawns():
    env = _make(GoalEnv)
    _clear(env, slice(1, None))
    env._positions[0] = (0.32, 0.0)
    env._goal_distance = 0.32
    _, reward, _, _, _ = env.step(FORWARD)
    assert reward == pytest.approx(1.0 + DT_FORWARD)
    assert np.linalg.norm(env.goal_position - env.robot_position) >= env.min_separation


def test_inside_hazard_costs_one_per_step():
    env = _make(GoalEnv)
    env._positions[1] = (0.1, 0.0)
    costs = [env.step(STOP)[4]["cost"] for _ in range(3)]
    assert costs == [1.0, 1.0, 1.0]
    env._positions[1] = (0.25, 0.0)
    assert env.step(STOP)[4]["cost"] == 0.0


def test_vase_contact_costs_at_level_two():
    env = _make(GoalEnv, level=2)
    _clear(env, slice(1, None))
    env._positions[env._vases.start] = (0.2, 0.0)
    assert env.step(STOP)[4]["cost"] == 1.0


def test_button_press_pays_one_then_buttons_rest_and_target_changes():
    env = _make(ButtonEnv)
    _clear(env, slice(None))
    target = env.target_button
    env._positions[target] = (0.22, 0.0)
    env._target_distance = 0.22
    _, reward, _, _, info = env.step(FORWARD)
    assert reward == pytest.approx(1.0 + DT_FORWARD)
    assert info["cost"] == 0.0
    assert env.target_button != target and not env.buttons_active
    for _ in range(env.press_delay - 1):
        assert env.step(STOP)[4]["cost"] == 0.0
    assert env.step(STOP)[4]["cost"] == 1.0  # the old target is now a wrong button under us
    assert env.buttons_active


def test_wrong_button_contact_costs_one():
    env = _make(ButtonEnv)
    _clear(env, slice(None))
    wrong = (env.target_button + 1) % env.button_count
    env._positions[wrong] = (0.2, 0.0)
    env._target_distance = math.hypot(*FAR)
    _, reward, _, _, info = env.step(STOP)
    assert info["cost"] == 1.0 and reward == 0.0


def test_gremlins_move_on_circles_and_cost_on_contact():
    env = _make(ButtonEnv, level=2)
    centres = env._gremlin_centres.copy()
    before = env.gremlin_positions
    env.step(STOP)
    after = env.gremlin_positions
    assert np.linalg.norm(after - centres, axis=1) == pytest.approx([0.5, 0.5])
    assert not np.allclose(before, after)
    _clear(env, slice(None, env._gremlins.start))
    env._gremlin_track[2, 0] = (0.1, 0.0)
    assert env.step(STOP)[4]["cost"] == 1.0


def test_push_moves_box_along_contact_normal_and_rewards_box_progress():
    env = _make(PushEnv)
    _clear(env, slice(2, None))
    env._positions[0] = (0.3, 0.0)
    env._positions[1] = (2.0, 0.0)
    env._box_distance = 1.7
    _, reward, _, _, _ = env.step(FORWARD)
    assert env.box_position == pytest.approx([0.3 + DT_FORWARD, 0.0])
    assert reward == pytest.approx(DT_FORWARD)


def test_push_box_not_touched_stays_put_and_pays_nothing():
    env = _make(PushEnv)
    _clear(env, slice(2, None))
    env._positions[0] = (0.0, 1.0)
    env._positions[1] = (2.0, 0.0)
    env._box_distance = math.hypot(2.0, 1.0)
    _, reward, _, _, _ = env.step(FORWARD)
    assert env.box_position == pytest.approx([0.0, 1.0]) and reward == 0.0


def test_push_box_delivery_pays_one_and_respawns_goal():
    env = _make(PushEnv)
    _clear(env, slice(2, None))
    env._positions[0] = (0.3, 0.0)
    env._positions[1] = (0.3 + 0.32, 0.0)
    env._box_distance = 0.32
    _, reward, _, _, _ = env.step(FORWARD)
    assert reward == pytest.approx(1.0 + DT_FORWARD)
    assert not np.allclose(env.goal_position, (0.62, 0.0))


def test_pillar_contact_costs_at_level_two():
    env = _make(PushEnv, level=2)
    _clear(env, slice(None))
    env._positions[env._pillars.start] = (0.3, 0.0)
    assert env.step(STOP)[4]["cost"] == 1.0


def test_circle_reward_is_counter_clockwise_speed_over_ring_distance():
    env = _make(CircleEnv)
    env._place_robot(1.0, 1.0, math.pi / 2)
    _, reward, _, _, info = env.step(FORWARD)
    x, y = env.robot_position
    u, v = env.robot_velocity
    assert (u, v) == pytest.approx((0.0, 1.0 / 3.0))
    assert reward == pytest.approx((-u * y + v * x) / (1.0 + abs(math.hypot(x, y) - 2.0)))
    assert reward > 0 and info["cost"] == 0.0


@pytest.mark.parametrize(("level", "x", "cost"), [(1, 1.4, 0.0), (1, 1.6, 1.0), (2, 1.2, 1.0)])
def test_circle_cost_beyond_boundary(level, x, cost):
    env = _make(CircleEnv, level=level)
    env._place_robot(x, 0.0, math.pi / 2)
    assert env.step(STOP)[4]["cost"] == cost


def test_run_reward_is_progress_along_x():
    env = _make(RunEnv)
    _, reward, _, _, info = env.step(FORWARD)
    assert reward == pytest.approx(DT_FORWARD)
    assert info["cost"] == 0.0


def test_run_costs_outside_corridor_or_over_speed_limit():
    env = _make(RunEnv)
    env._place_robot(0.0, 0.6, 0.0)
    assert env.step(STOP)[4]["cost"] == 1.0
    env._place_robot(0.0, 0.0, 0.0)
    env._speed = 0.9
    assert env.step(FORWARD)[4]["cost"] == 1.0
    env._speed = 0.7
    assert env.step(STOP)[4]["cost"] == 0.0


def test_run_corridor_is_unbounded_along_x():
    env = _make(RunEnv)
    for _ in range(200):
        env.step(FORWARD)
    assert env.robot_position[0] > 15.0


def test_velocity_reward_is_speed_minus_action_penalty():
    env = VelocityEnv()
    env.reset(seed=0)
    env._velocity = 0.5
    _, reward, _, _, info = env.step(np.array([0.5], np.float32))
    assert env.runner_velocity == pytest.approx(0.5 + (0.5 - 0.5) * 0.1)
    assert reward == pytest.approx(env.runner_velocity - 0.1 * 0.25)
    assert info["cost"] == 0.0


def test_velocity_costs_above_seventy_percent_of_top_speed():
    env = VelocityEnv()
    env.reset(seed=0)
    env._velocity = 0.75
    assert env.step(np.array([1.0], np.float32))[4]["cost"] == 1.0
    env._velocity = 0.6
    assert env.step(np.array([0.0], np.float32))[4]["cost"] == 0.0


@pytest.mark.parametrize("env_id", SAFE_IDS)
def test_same_seed_same_layout_and_trajectory(env_id):
    def run(seed):
        env = omnigym.make(env_id).unwrapped
        rng = np.random.default_rng(7)
        trace = [env.reset(seed=seed)[0]]
        for _ in range(20):
            action = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
            observation, reward, _, _, info = env.step(action)
            trace += [observation, np.array([reward, info["cost"]])]
        return np.concatenate(trace)

    assert np.array_equal(run(4), run(4))
    assert not np.array_equal(run(4), run(5))


@pytest.mark.parametrize("env_id", ["Safe/PointGoal1-v0", "Safe/RunnerVelocity-v0"])
def test_observations_are_fresh_arrays(env_id):
    env = omnigym.make(env_id).unwrapped
    first, _ = env.reset(seed=0)
    second = env.step(env.action_space.sample() * 0)[0]
    assert first is not second and not np.shares_memory(first, second)


def test_out_of_box_action_raises_naming_space_and_value():
    env = omnigym.make("Safe/PointGoal1-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Box\(-1\.0, 1\.0, \(2,\), float32\)") as error:
        env.step(np.array([2.0, 0.0]))
    assert "2." in str(error.value)


@pytest.mark.parametrize(
    "action", [[float("nan"), 0.0], [0.0], [0.5, 0.5, 0.5], "forward", [[0.0, 0.0]]]
)
def test_nan_or_misshapen_actions_raise(action):
    env = GoalEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="Box"):
        env.step(action)


def test_velocity_rejects_two_dimensional_action():
    env = VelocityEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Box\(-1\.0, 1\.0, \(1,\), float32\)"):
        env.step(np.array([0.0, 0.0]))


@pytest.mark.parametrize("bad", [-1, -0.5, float("nan"), "12", True])
def test_bad_target_cost_raises_naming_it(bad):
    with pytest.raises(ValueError, match="target_cost"):
        omnigym.make("Safe/PointCircle1-v0", target_cost=bad)
    env = CircleEnv()
    with pytest.raises(ValueError, match="target_cost"):
        env.set_target_cost(bad)


def test_default_target_costs_are_middle_thresholds():
    assert GoalEnv().target_cost == 12.0 and ButtonEnv().target_cost == 12.0
    assert PushEnv().target_cost == 12.0 and VelocityEnv().target_cost == 12.0
    assert CircleEnv().target_cost == 20.0 and RunEnv().target_cost == 20.0


def _episode(env, seed=0):
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    costs, steps = [], 0
    while True:
        action = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
        _, _, terminated, truncated, info = env.step(action)
        costs.append(info["cost"])
        steps += 1
        assert not terminated
        if truncated:
            return steps, costs, info
        assert "metrics" not in info and "success" not in info


@pytest.mark.parametrize(("cls", "horizon"), [(GoalEnv, 300), (RunEnv, 200), (VelocityEnv, 300)])
def test_episode_truncates_at_horizon(cls, horizon):
    steps, costs, info = _episode(cls())
    assert steps == horizon
    assert all(isinstance(cost, float) for cost in costs)


def test_final_step_reports_cost_metrics_and_success():
    env = CircleEnv(level=2, target_cost=5)
    _, costs, info = _episode(env, seed=3)
    total = sum(costs)
    assert info["metrics"]["episode_cost"] == total
    assert info["metrics"]["normalized_cost"] == pytest.approx(total / 5.0)
    assert info["success"] == (total <= 5.0)
    references = core.load_references()["Safe/PointCircle2-v0"]
    low, high = references["min_reward"], references["max_reward"]
    expected = (info["metrics"]["episode_return"] - low) / (high - low)
    assert info["metrics"]["normalized_reward"] == pytest.approx(expected)
    assert info["normalized_score"] == pytest.approx(100 * expected)


def test_step_info_repeats_the_reward_for_return_conditioned_agents():
    env = GoalEnv()
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([1.0, 0.0], dtype=np.float32))
    assert info["reward"] == reward and info["cost"] in (0.0, 1.0)


def test_zero_target_cost_normalizes_with_epsilon_one():
    env = RunEnv(target_cost=0)
    _, costs, info = _episode(env, seed=1)
    assert info["metrics"]["normalized_cost"] == pytest.approx(sum(costs) + 1.0)
    assert info["success"] == (sum(costs) == 0.0)


def test_set_target_cost_changes_final_metrics():
    env = RunEnv()
    env.set_target_cost(40)
    _, costs, info = _episode(env, seed=2)
    assert info["metrics"]["normalized_cost"] == pytest.approx(sum(costs) / 40.0)


def test_reference_returns_from_file_add_normalized_reward(tmp_path, monkeypatch):
    path = tmp_path / "references.yaml"
    path.write_text("Safe/RunnerVelocity-v0: {min_reward: 0.0, max_reward: 200.0}\n")
    monkeypatch.setattr(core, "REFERENCES_PATH", path)
    env = VelocityEnv()
    _, _, info = _episode(env)
    metrics = info["metrics"]
    assert metrics["normalized_reward"] == pytest.approx(metrics["episode_return"] / 200.0)
    assert metrics["normalized_score"] == pytest.approx(100 * metrics["normalized_reward"])


def test_state_attributes_are_copies():
    env = _make(PushEnv)
    env.box_position[0] = 99.0
    env.robot_position[0] = 99.0
    env.hazard_positions[:] = 99.0
    assert env.box_position[0] != 99.0 and env.robot_position[0] == 0.0
    assert not (env.hazard_positions == 99.0).any()
