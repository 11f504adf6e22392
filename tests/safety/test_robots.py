"""Robot dynamics and pseudo-lidar of the Safe tasks (``docs/safety.md``)."""

import math

import numpy as np
import pytest

from omnigym.envs.safety.core import DT, sense
from omnigym.envs.safety.goal import GoalEnv
from omnigym.envs.safety.velocity import VelocityEnv


def _robot_at_origin(robot):
    env = GoalEnv(robot=robot)
    env.reset(seed=0)
    env._place_robot(0.0, 0.0, 0.0)
    return env


def test_point_forward_speed_follows_first_order_lag():
    env = _robot_at_origin("Point")
    for step in range(1, 11):
        env.step(np.array([1.0, 0.0], np.float32))
        assert env.robot_speed == pytest.approx(1.0 - (1.0 - DT / 0.3) ** step)
        assert env.robot_speed == pytest.approx(1.0 - math.exp(-step * DT / 0.3), abs=0.08)


def test_point_turn_command_sets_turn_rate_and_heading():
    env = _robot_at_origin("Point")
    for _ in range(5):
        env.step(np.array([0.0, 0.5], np.float32))
    assert env.robot_turn_rate == pytest.approx(1.0)
    assert env.robot_heading == pytest.approx(0.5)
    assert env.robot_position == pytest.approx([0.0, 0.0])


def test_car_equal_wheels_drive_straight():
    env = _robot_at_origin("Car")
    env.step(np.array([1.0, 1.0], np.float32))
    assert env.robot_turn_rate == 0.0
    assert env.robot_speed == pytest.approx(1.0 / 3.0)
    assert env.robot_position == pytest.approx([DT / 3.0, 0.0])


def test_car_turns_with_wheel_difference():
    env = _robot_at_origin("Car")
    env.step(np.array([-1.0, 1.0], np.float32))
    assert env.robot_turn_rate == pytest.approx(2.0)
    assert env.robot_speed == 0.0
    env.step(np.array([0.0, 1.0], np.float32))
    assert env.robot_turn_rate == pytest.approx(1.0)
    assert env.robot_speed == pytest.approx(0.5 / 3.0)
    assert env.robot_heading == pytest.approx(0.3)


def test_walls_clamp_the_robot_inside_the_arena():
    env = _robot_at_origin("Point")
    for _ in range(100):
        env.step(np.array([1.0, 0.0], np.float32))
    assert env.robot_position == pytest.approx([3.0 - 0.15, 0.0])


def test_runner_velocity_decays_by_linear_drag_without_force():
    env = VelocityEnv()
    env.reset(seed=0)
    env._velocity = 0.5
    env.step(np.array([0.0], np.float32))
    assert env.runner_velocity == pytest.approx(0.5 * (1.0 - DT))


def test_runner_full_force_approaches_top_speed():
    env = VelocityEnv()
    env.reset(seed=0)
    for _ in range(200):
        env.step(np.array([1.0], np.float32))
    assert env.runner_velocity == pytest.approx(env.u_max, abs=1e-6)
    assert env.u_max == 1.0


def _lidar(points, channels=None, heading=0.0, radii=None):
    positions = np.array(points, dtype=float)
    channels = np.zeros(len(points), np.int64) if channels is None else np.array(channels)
    radii = np.full(len(points), -1.0) if radii is None else np.array(radii, dtype=float)
    out = np.zeros(4 + 32)
    violations = sense(0.0, 0.0, heading, positions, channels, radii, out, 4, 16, 3.0)
    return out[4:], violations


def test_object_straight_ahead_at_1_5_reads_half_in_forward_bin_only():
    bins, _ = _lidar([[1.5, 0.0]])
    assert bins[0] == pytest.approx(0.5)
    assert np.count_nonzero(bins) == 1


def test_two_objects_in_one_bin_keep_the_nearest():
    bins, _ = _lidar([[1.5, 0.0], [0.6, 0.05]])
    assert bins[0] == pytest.approx(1.0 - math.hypot(0.6, 0.05) / 3.0)
    assert np.count_nonzero(bins) == 1


def test_bins_are_relative_to_heading_and_go_counter_clockwise():
    behind, _ = _lidar([[-1.5, -1e-9]])
    assert behind[8] == pytest.approx(0.5)
    left, _ = _lidar([[0.0, 1.5]], heading=math.pi / 2)
    assert left[0] == pytest.approx(0.5)
    quarter, _ = _lidar([[0.0, 1.5]])
    assert quarter[4] == pytest.approx(0.5)


def test_objects_beyond_range_are_unseen_and_channels_fill_their_own_block():
    bins, _ = _lidar([[3.5, 0.0], [1.5, 0.0]], channels=[0, 1])
    assert np.count_nonzero(bins[:16]) == 0
    assert bins[16] == pytest.approx(0.5)


def test_violations_count_objects_closer_than_their_cost_radius():
    _, violations = _lidar([[0.1, 0.0], [0.3, 0.0], [0.1, 0.1]], radii=[0.2, 0.2, -1.0])
    assert violations == 1
