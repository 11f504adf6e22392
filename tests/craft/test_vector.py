"""CraftVectorEnv: Gymnasium's vector API, autoreset, seeding s + i; and the smoke run of the
benchmark script (benchmarks/craft_speed.py)."""

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from benchmarks import craft_speed
from omnigym.envs.craft.actions import DiscreteActionWrapper
from omnigym.envs.craft.env import CraftEnv
from omnigym.envs.craft.vector import CraftVectorEnv

STEP_KEYS = ("player_pos", "player_vel", "player_pitch", "player_yaw", "mt_dtime")
BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "craft_speed.py"


def single(task="Room", **kwargs):
    """The registered form of one world: the task's DiscreteActionWrapper over CraftEnv."""
    env = CraftEnv(task, **kwargs)
    return DiscreteActionWrapper(env, env.task.actions, env.task.mouse_mov)


def assert_obs_equal(batch, i, obs):
    if isinstance(obs, dict):
        assert set(batch) == set(obs)
        for key, value in obs.items():
            np.testing.assert_array_equal(batch[key][i], value, err_msg=key)
    else:
        np.testing.assert_array_equal(batch[i], obs)


def assert_batch_equal(ours, reference):
    if isinstance(reference, dict):
        for key in reference:
            np.testing.assert_array_equal(ours[key], reference[key], err_msg=key)
    else:
        np.testing.assert_array_equal(ours, reference)


LEFT_OUT = {"task", "voxel_obs"}
"""Single-env info keys CraftVectorEnv leaves out of its per-step info (module docstring)."""


def assert_infos_match(ours, reference, left_out=LEFT_OUT):
    """Our vector info equals SyncVectorEnv's, masks and nested dicts included, except for the
    keys in ``left_out``."""
    expected = {k for k in reference if k not in left_out and k.lstrip("_") not in left_out}
    assert set(ours) == expected
    for key in expected:
        if key == "final_obs":
            for i in np.flatnonzero(reference["_final_obs"]):
                assert_batch_equal(ours[key][i], reference[key][i])
        elif key == "final_info":
            assert_infos_match(ours[key], reference[key], {"voxel_obs"})
        elif isinstance(reference[key], dict):
            assert_infos_match(ours[key], reference[key], set())
        else:
            np.testing.assert_array_equal(ours[key], reference[key], err_msg=key)


# ---- spaces and shapes -----------------------------------------------------------------------


def test_spaces_are_the_registered_single_env_spaces_batched():
    envs = CraftVectorEnv("Room", 3)
    one = single("Room")
    assert envs.single_action_space == spaces.Discrete(4) == one.action_space
    assert envs.action_space == spaces.MultiDiscrete([4, 4, 4])
    assert envs.single_observation_space == one.observation_space
    assert envs.observation_space == spaces.Box(0, 255, (3, 64, 64, 3), np.uint8)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert envs.actions == one.actions and envs.mouse_mov == one.mouse_mov
    envs.close()


def test_actions_and_mouse_mov_kwargs_replace_the_tasks():
    envs = CraftVectorEnv("Room", 2, actions=["forward", "jump"], mouse_mov=0.25)
    assert envs.single_action_space == spaces.Discrete(3)
    assert envs.actions == ["forward", "jump"] and envs.mouse_mov == 0.25


def test_reset_gives_batched_rgb_frames_and_vector_infos():
    envs = CraftVectorEnv("Room", 3)
    obs, info = envs.reset(seed=0)
    assert obs.shape == (3, 64, 64, 3) and obs.dtype == np.uint8
    assert envs.observation_space.contains(obs)
    assert info["player_pos"].shape == (3, 3) and info["player_pos"].dtype == np.float32
    assert info["player_yaw"].shape == (3,)
    assert info["_player_pos"].dtype == bool and info["_player_pos"].all()
    assert "success" not in info


def test_voxel_mode_batches_each_dict_entry():
    envs = CraftVectorEnv("Room", 2, obs_mode="voxels", voxel_obs_rx=3, voxel_obs_ry=2)
    obs, _ = envs.reset(seed=0)
    assert obs["voxels"].shape == (2, 41, 5, 7) and obs["voxels"].dtype == np.uint16
    assert obs["entities"].shape == (2, 32, 6) and obs["player"].shape == (2, 9)
    assert envs.observation_space.contains(obs)
    obs, *_ = envs.step(np.array([1, 2]))
    assert envs.observation_space.contains(obs)


def test_grey_frames_batch_with_their_single_shape():
    envs = CraftVectorEnv("Room", 2, rgb_observations=False, obs_width=32, obs_height=24)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (2, 24, 32)


# ---- seeding: world i is the single env seeded s + i -----------------------------------------


@pytest.mark.parametrize("obs_mode", ["rgb", "voxels"])
def test_world_i_matches_single_env_reset_with_seed_plus_i(obs_mode):
    seed, n = 11, 3
    kwargs = {"obs_mode": obs_mode, "obs_width": 32, "obs_height": 32}
    envs = CraftVectorEnv("ChopTree", n, **kwargs)
    worlds = [single("ChopTree", **kwargs) for _ in range(n)]
    obs, info = envs.reset(seed=seed)
    for i, world in enumerate(worlds):
        world_obs, world_info = world.reset(seed=seed + i)
        assert_obs_equal(obs, i, world_obs)
        np.testing.assert_array_equal(info["player_pos"][i], world_info["player_pos"])
    rng = np.random.default_rng(0)
    for _ in range(100):
        actions = rng.integers(envs.single_action_space.n, size=n)
        obs, rewards, terminated, truncated, info = envs.step(actions)
        for i, world in enumerate(worlds):
            world_obs, reward, term, trunc, world_info = world.step(actions[i])
            assert_obs_equal(obs, i, world_obs)
            assert (rewards[i], terminated[i], truncated[i]) == (reward, term, trunc)
            for key in STEP_KEYS:
                np.testing.assert_array_equal(info[key][i], world_info[key])


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("obs_mode", ["rgb", "voxels"])
def test_autoreset_matches_sync_vector_env_of_single_envs(mode, obs_mode):
    """Episodes of 30 steps end three times in 100 steps; every return equals Gymnasium's
    SyncVectorEnv over the registered single envs (its seeding is world i = s + i)."""
    kwargs = {"obs_mode": obs_mode, "max_timesteps": 30, "obs_width": 32, "obs_height": 32}
    envs = CraftVectorEnv("Room", 3, autoreset_mode=mode, **kwargs)
    reference = gym.vector.SyncVectorEnv(
        [lambda: single("Room", **kwargs) for _ in range(3)], autoreset_mode=mode
    )
    ours, theirs = envs.reset(seed=5), reference.reset(seed=5)
    assert_batch_equal(ours[0], theirs[0])
    rng = np.random.default_rng(1)
    for _ in range(100):
        actions = rng.integers(4, size=3)
        ours, theirs = envs.step(actions), reference.step(actions)
        assert_batch_equal(ours[0], theirs[0])
        for k in (1, 2, 3):
            np.testing.assert_array_equal(ours[k], theirs[k])
        assert_infos_match(ours[4], theirs[4])


def test_open_world_achievements_are_in_every_steps_info():
    kwargs = {"obs_mode": "voxels", "max_timesteps": 4}
    envs = CraftVectorEnv("OpenWorld", 2, **kwargs)
    reference = gym.vector.SyncVectorEnv([lambda: single("OpenWorld", **kwargs) for _ in range(2)])
    ours, theirs = envs.reset(seed=0), reference.reset(seed=0)
    assert_infos_match(ours[1], theirs[1])
    assert len([name for name in ours[1]["achievements"] if not name.startswith("_")]) == 20
    rng = np.random.default_rng(0)
    for _ in range(9):
        actions = rng.integers(envs.single_action_space.n, size=2)
        ours, theirs = envs.step(actions), reference.step(actions)
        assert_batch_equal(ours[0], theirs[0])
        assert_infos_match(ours[4], theirs[4])


def test_next_step_mode_reports_the_end_then_resets_on_the_following_step():
    envs = CraftVectorEnv("Room", 2, max_timesteps=3)
    envs.reset(seed=0)
    for _ in range(2):
        _, _, _, truncated, info = envs.step(np.array([0, 0]))
        assert not truncated.any() and "success" not in info
    obs, rewards, terminated, truncated, info = envs.step(np.array([0, 0]))
    assert truncated.all() and not terminated.any()
    assert info["_success"].all() and not info["success"].any()
    assert info["normalized_score"].tolist() == pytest.approx([100 * (1000 - 3) / 999] * 2)
    final_pos = info["player_pos"].copy()
    obs, rewards, terminated, truncated, info = envs.step(np.array([1, 1]))
    assert rewards.tolist() == [0.0, 0.0]
    assert not terminated.any() and not truncated.any() and "success" not in info
    assert not np.array_equal(info["player_pos"], final_pos)  # a fresh spawn
    _, _, _, truncated, _ = envs.step(np.array([0, 0]))
    assert not truncated.any()  # the step counter restarted


def test_same_step_mode_returns_the_reset_observation_and_the_final_one_in_info():
    envs = CraftVectorEnv("Room", 2, max_timesteps=2, autoreset_mode="SameStep")
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    worlds = [single("Room", max_timesteps=2) for _ in range(2)]
    envs.reset(seed=0)
    envs.step(np.array([1, 1]))
    last = []
    for i, world in enumerate(worlds):
        world.reset(seed=i)
        world.step(1)
        last.append(world.step(0)[0])
    obs, rewards, _, truncated, info = envs.step(np.array([0, 0]))
    assert truncated.all() and rewards.tolist() == [-1.0, -1.0]
    assert info["_final_obs"].all() and info["_final_info"].all()
    assert "success" not in info and not info["final_info"]["success"].any()
    for i in range(2):
        np.testing.assert_array_equal(info["final_obs"][i], last[i])
        assert not np.array_equal(obs[i], last[i])
    assert info["final_info"]["player_pos"].shape == (2, 3)


def test_reset_accepts_a_list_of_seeds():
    envs = CraftVectorEnv("Room", 2)
    by_list, _ = envs.reset(seed=[7, 8])
    by_int, _ = envs.reset(seed=7)
    np.testing.assert_array_equal(by_list, by_int)
    with pytest.raises(ValueError, match="list of 2 seeds"):
        envs.reset(seed=[1, 2, 3])


# ---- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "actions",
    [np.array([0, 1, 2]), np.array([[0, 1]]), np.array([0, 4]), np.array([-1, 0]), [0.0, 1.0]],
)
def test_bad_actions_raise_value_error_naming_the_space(actions):
    envs = CraftVectorEnv("Room", 2)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=r"outside MultiDiscrete\(\[4 4\]\) of Craft/Room-v0"):
        envs.step(actions)


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        CraftVectorEnv("Room", 1).step(np.array([0]))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"num_envs": 0}, "num_envs"),
        ({"autoreset_mode": "Disabled"}, "autoreset_mode"),
        ({"render_threads": 0}, "render_threads"),
        ({"render_mode": "human"}, "render_mode"),
        ({"copy": 1}, "copy"),
        ({"obs_width": 0}, "obs_width"),
        ({"mouse_mov": 2.0}, "mouse_mov"),
        ({"actions": ["fly"]}, "actions"),
        ({"max_episode_steps": 5, "max_timesteps": 6}, "max_episode_steps"),
    ],
)
def test_bad_constructor_arguments_name_the_argument(kwargs, name):
    kwargs = {"num_envs": 1, **kwargs}
    with pytest.raises(ValueError, match=name):
        CraftVectorEnv("Room", **kwargs)


# ---- buffers, threads, render, make_vec ------------------------------------------------------


def test_copy_false_reuses_one_buffer_and_copy_true_does_not():
    shared = CraftVectorEnv("Room", 2, copy=False)
    first, _ = shared.reset(seed=0)
    second, *_ = shared.step(np.array([1, 1]))
    assert second is first
    fresh = CraftVectorEnv("Room", 2)
    first, _ = fresh.reset(seed=0)
    kept = first.copy()
    fresh.step(np.array([1, 1]))
    np.testing.assert_array_equal(first, kept)


@pytest.mark.parametrize("obs_mode", ["rgb", "both"])
def test_two_render_threads_give_the_same_observations(obs_mode):
    kwargs = {"obs_mode": obs_mode, "max_timesteps": 4, "obs_width": 32, "obs_height": 32}
    threaded = CraftVectorEnv("Room", 3, render_threads=2, **kwargs)
    serial = CraftVectorEnv("Room", 3, **kwargs)
    assert_batch_equal(threaded.reset(seed=2)[0], serial.reset(seed=2)[0])
    rng = np.random.default_rng(0)
    for _ in range(10):
        actions = rng.integers(4, size=3)
        assert_batch_equal(threaded.step(actions)[0], serial.step(actions)[0])
    threaded.close()


def test_render_returns_one_rgb_frame_per_world():
    envs = CraftVectorEnv("Room", 2, render_mode="rgb_array", rgb_observations=False)
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 2 and frames[0].shape == (64, 64, 3)
    assert CraftVectorEnv("Room", 1).render() is None


def test_make_vec_calls_the_vector_entry_point_with_the_spec_kwargs():
    env_id = "CraftVectorTest/Room-v0"
    gym.register(
        id=env_id,
        entry_point="omnigym.envs.craft.env:CraftEnv",
        vector_entry_point="omnigym.envs.craft.vector:CraftVectorEnv",
        kwargs={"task": "Room"},
        max_episode_steps=4,
    )
    try:
        envs = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point")
        assert isinstance(envs, CraftVectorEnv) and envs.num_envs == 3
        assert envs.max_timesteps == 4
        envs.reset(seed=0)
        for _ in range(4):
            *_, truncated, _ = envs.step(envs.action_space.sample())
        assert truncated.all()
        small = gym.make_vec(env_id, num_envs=2, obs_width=16, obs_height=16)
        assert small.single_observation_space.shape == (16, 16, 3)
    finally:
        del gym.registry[env_id]


# ---- benchmark smoke run ---------------------------------------------------------------------


def test_benchmark_quick_run_writes_its_json(tmp_path):
    out = tmp_path / "craft.json"
    command = [sys.executable, str(BENCHMARK), "--quick", "--cases", "single_voxels"]
    subprocess.run([*command, "--seconds", "0.2", "--out", str(out)], check=True, timeout=120)
    document = json.loads(out.read_text())
    assert document["quick"] is True and document["cpu_model"]
    assert list(document["cases"]) == ["single_voxels"]
    record = document["cases"]["single_voxels"]
    assert record["status"] == "ok" and record["task"] == "ChopTree"
    assert record["unit"] == "steps/s" and record["value"] == record["steps_per_s"] > 0
    assert record["peak_rss_mb"] > 0 and record["cores"] == 1 and record["kernel"] == "numba"
    assert record["target"] == {"op": ">=", "value": 40000.0, "unit": "steps/s"}
    assert record["ratio_to_target"] == pytest.approx(record["value"] / 40000.0)
    assert record["meets_target"] == (record["value"] >= 40000.0)
    assert len(record["rounds_steps_per_s"]) == 3
    assert record["steps_per_s"] == sorted(record["rounds_steps_per_s"])[1]
    assert len(record["load_average"]) == 2


def test_benchmark_judges_targets_and_ratios():
    records = {
        "crafter": {"status": "ok", "steps_per_s": 500.0},
        "single_rgb": {"status": "ok", "steps_per_s": 1500.0},
        "crafter_ratio": {"status": "ok", "value": 4.0, "unit": "x Crafter"},
        "single_voxels": {"status": "fallback", "steps_per_s": 50000.0},
        "vector_rgb_one_core": {"status": "ok", "steps_per_s": 1500.0},
        "vector_rgb_two_cores": {"status": "ok", "steps_per_s": 2400.0},
        "soft_reset": {"status": "ok", "value": 4.0, "unit": "steps"},
        "open_world_rgb": {"status": "unavailable", "reason": "no OpenWorld"},
    }
    craft_speed.judge(records)
    rgb, voxels = records["single_rgb"], records["single_voxels"]
    assert rgb["ratio_to_target"] == 0.5 and rgb["meets_target"] is False
    assert rgb["ratio_vs_crafter"] == 3.0
    assert voxels["ratio_to_target"] == 1.25 and voxels["meets_target"] is True
    two_cores = records["vector_rgb_two_cores"]
    assert two_cores["target"] is None and two_cores["meets_target"] is None
    assert two_cores["ratio_vs_one_core"] == 1.6 and two_cores["meets_expected_ratio"] is False
    ratio = records["crafter_ratio"]
    assert ratio["ratio_to_target"] == 0.8 and ratio["meets_target"] is False
    assert "ratio_vs_crafter" not in ratio
    reset = records["soft_reset"]
    assert reset["ratio_to_target"] == 2.5 and reset["meets_target"] is True
    assert "ratio_vs_crafter" not in reset
    assert records["open_world_rgb"]["meets_target"] is None
    figures = craft_speed.figures({"cases": records})
    assert [f["name"] for f in figures] == [
        "craft crafter",
        "craft single_rgb",
        "craft crafter_ratio",
        "craft single_voxels",
        "craft vector_rgb_one_core",
        "craft vector_rgb_two_cores",
        "craft soft_reset",
    ]
    assert figures[1]["goal"] == ">= 3000" and figures[1]["meets_goal"] is False
