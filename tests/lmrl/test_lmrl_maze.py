"""The text Maze: layout, messages, reward rules and oracles."""

from types import SimpleNamespace

import numpy as np
import pytest

import omnigym
from omnigym.agents.lmrl.maze import MazeOracle
from omnigym.envs.lmrl.maze import MazeEnv, load_layout
from omnigym.envs.lmrl.normalization import load_constants, normalize

LAYOUT = load_layout()
MOVES = ["move up", "move down", "move left", "move right"]


def test_layout_is_the_double_t_with_26_free_cells_and_goal_at_8_6():
    assert len(LAYOUT.free) == 26
    assert LAYOUT.goal == (8, 6)
    assert len(LAYOUT.starts) == 25
    top = {(1, c) for c in range(1, 12)}
    stem = {(r, 6) for r in range(2, 9)}
    crossing = {(5, c) for c in range(2, 11)}
    assert top | stem | crossing == LAYOUT.free


def test_fo_message_gives_goal_own_cell_digit_by_digit_and_walls():
    env = MazeEnv(observability="full")
    observation, _ = env.reset(options={"start": (1, 11)})
    assert observation == (
        "The goal is at position 8, 6. Your current position is at position 1, 1 1. "
        "There are walls above you, below you and to your right."
    )


def test_po_message_gives_only_the_walls():
    env = MazeEnv(observability="partial")
    observation, _ = env.reset(options={"start": (5, 6)})
    assert observation == "There are no walls around you."
    observation, *_ = env.step("move up")
    assert observation.split("\n")[-1] == "There are walls to your left and to your right."


def test_legal_actions_are_the_four_moves():
    env = omnigym.make("LMRL/MazeFO-v0")
    _, info = env.reset(seed=0)
    assert info["legal_actions"] == MOVES


def test_reset_starts_uniformly_over_the_25_non_goal_cells():
    env = MazeEnv(observability="full")
    cell_of = {LAYOUT.full_sentence(cell): cell for cell in LAYOUT.free}
    starts = [cell_of[env.reset(seed=seed)[0]] for seed in range(2000)]
    counts = np.array([starts.count(cell) for cell in LAYOUT.starts])
    assert set(starts) == set(LAYOUT.starts)
    assert counts.min() > 50 and counts.max() < 115


def test_bad_start_option_raises_value_error():
    env = MazeEnv()
    with pytest.raises(ValueError, match="start"):
        env.reset(options={"start": (8, 6)})
    with pytest.raises(ValueError, match="start"):
        env.reset(options={"start": (0, 0)})


def test_move_into_a_wall_costs_one_and_leaves_the_position():
    env = MazeEnv()
    observation, _ = env.reset(options={"start": (1, 1)})
    after, reward, terminated, truncated, info = env.step("move up")
    assert reward == -1.0 and not terminated and not truncated
    assert info["invalid_action"] is False
    assert after.split("\n")[-1] == observation
    _, _, _, _, info = env.step("move left")
    assert info["last_message"] == observation


def test_illegal_string_costs_one_and_is_flagged():
    env = omnigym.make("LMRL/MazeFO-v0")
    observation, _ = env.reset(seed=4)
    _, reward, terminated, truncated, info = env.step("move diagonally")
    assert reward == -1.0
    assert info["invalid_action"] is True
    assert info["last_message"] == observation
    assert not terminated and not truncated


def test_illegal_reward_is_configurable():
    env = MazeEnv(illegal_reward=-4)
    env.reset(seed=0)
    assert env.step("jump")[1] == -4.0


def test_moves_are_matched_after_trimming_and_lower_casing():
    env = MazeEnv()
    env.reset(options={"start": (7, 6)})
    _, reward, terminated, _, info = env.step("  Move DOWN ")
    assert (reward, terminated, info["success"]) == (0.0, True, True)


def test_reaching_the_goal_rewards_zero_and_terminates_with_success():
    env = omnigym.make("LMRL/MazeFO-v0")
    env.reset(options={"start": (5, 6)})
    rewards = [env.step("move down")[1] for _ in range(2)]
    _, reward, terminated, truncated, info = env.step("move down")
    assert rewards == [-1.0, -1.0]
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["success"] is True
    assert info["episode_return"] == -2.0
    assert info["normalized_score"] == normalize("LMRL/MazeFO-v0", -2.0)
    assert info["metrics"]["distance_to_goal"] == 0.0


def test_hundred_moves_without_the_goal_truncate_at_minus_101():
    env = omnigym.make("LMRL/MazePO-v0")
    env.reset(seed=0)
    rewards = []
    for turn in range(100):
        _, reward, terminated, truncated, info = env.step("move up")
        rewards.append(reward)
        assert not terminated
        assert truncated == (turn == 99)
    assert rewards[-1] == -2.0
    assert sum(rewards) == -101.0 == info["episode_return"]
    assert info["success"] is False
    assert info["normalized_score"] == 0.0
    assert info["metrics"]["turns"] == 100.0


def test_longest_episode_transcript_fits_the_observation_space():
    env = MazeEnv(observability="full")
    env.reset(options={"start": (1, 11)})  # the longest FO message
    junk = "~" * 300
    for _ in range(100):
        observation, *_ = env.step(junk)
    assert len(observation) > 100 * 256
    assert env.observation_space.contains(observation)


def _play(env, oracle, options):
    oracle.reset(0)
    observation, info = env.reset(seed=0, options=options)
    done = False
    while not done:
        observation, _, terminated, truncated, info = env.step(oracle.act(observation, info))
        done = terminated or truncated
    return info


@pytest.mark.parametrize("start", LAYOUT.starts)
def test_fo_oracle_is_optimal_from_every_start(start):
    env = omnigym.make("LMRL/MazeFO-v0")
    info = _play(env, MazeOracle(env), {"start": start})
    assert info["success"]
    assert info["episode_return"] == -(LAYOUT.distances()[start] - 1)


def test_po_oracle_reaches_the_goal_from_every_start_without_reading_env_state():
    env = omnigym.make("LMRL/MazePO-v0", obs_mode="last")
    # The oracle sees only this public constant, never the environment it plays.
    oracle = MazeOracle(SimpleNamespace(unwrapped=SimpleNamespace(observability="partial")))
    returns = []
    for start in LAYOUT.starts:
        info = _play(env, oracle, {"start": start})
        assert info["success"]
        assert info["episode_return"] <= -(LAYOUT.distances()[start] - 1)
        returns.append(info["episode_return"])
    assert np.mean(returns) == pytest.approx(load_constants()["LMRL/MazePO-v0"]["max"], abs=1e-3)


def test_po_oracle_needs_more_moves_than_the_fo_oracle():
    constants = load_constants()
    assert constants["LMRL/MazePO-v0"]["max"] < constants["LMRL/MazeFO-v0"]["max"]


def test_fo_normalization_max_is_the_mean_optimal_return_over_the_starts():
    optimal = np.mean([-(LAYOUT.distances()[start] - 1) for start in LAYOUT.starts])
    assert load_constants()["LMRL/MazeFO-v0"]["max"] == pytest.approx(optimal, abs=1e-4)
