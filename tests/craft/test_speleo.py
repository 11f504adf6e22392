"""Speleo: the torch-lit cave, reward −y per step, death by lava."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from omnigym.agents.craft.speleo import SpeleoScripted, descent_path
from omnigym.envs.craft.engine import node_at
from omnigym.envs.craft.tasks.base import shared_materials, task_table
from omnigym.envs.craft.tasks.speleo import CaveParams, SpeleoTask, carve_cave

from .helpers import assert_same, make_task_env, random_rollout, run_agent

SPAWN = (24.3, 5.5, -36.3)
BOTTOM_Y = -24.5  # top face of the deepest floor


def make(**kwargs):
    return make_task_env("Speleo", **kwargs)


@pytest.fixture(scope="module")
def params():
    return CaveParams.from_table(task_table()["Speleo"]["cave"])


@pytest.fixture(scope="module")
def cave(params):
    return carve_cave(shared_materials(), params, params.canonical_seed)


def node_ids(*names):
    materials = shared_materials()
    return [materials.id(name) for name in names]


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_passes_gymnasium_check_env():
    check_env(make(), skip_render_check=True)


def test_same_seeds_give_identical_500_random_steps():
    first = random_rollout(make(), reset_seed=5, steps=500)
    second = random_rollout(make(), reset_seed=5, steps=500)
    assert_same(first, second)


def test_starts_at_craftiums_spawn_standing_with_a_random_yaw():
    env = make(obs_mode="voxels")
    yaws = []
    for seed in (0, 1):
        _, info = env.reset(seed=seed)
        np.testing.assert_array_equal(info["player_pos"], np.float32(SPAWN))
        yaws.append(info["player_yaw"])
        for _ in range(20):
            env.step(0)
        assert env.unwrapped.sim.avatars[0].player.position[1] == 5.5  # on the floor
    assert yaws[0] != yaws[1]


def test_cave_is_closed_and_spans_the_published_depths(cave):
    world = cave.world
    air, torch, lava = node_ids("air", "default:torch", "default:lava_source")
    content = world.content
    for axis in range(3):
        for end in (0, -1):
            face = np.take(content, end, axis=axis)
            assert np.isin(face, node_ids("default:stone")).all()
    open_y = np.flatnonzero(np.isin(content, [air, torch]).any(axis=(0, 2))) + world.origin[1]
    assert open_y.max() == 8  # air up to y = 8.5 over the entrance floor
    assert open_y.min() == -24  # the feet node over the deepest floor, whose top is y = -24.5
    assert (content == lava).sum() > 0
    assert world.get(*node_at(SPAWN)) == air
    assert world.get_name(24, 5, -36) == "default:stone"


def test_torches_light_every_cell_a_body_can_stand_in(cave):
    world = cave.world
    assert (world.content == node_ids("default:torch")[0]).sum() >= 10
    for x, feet, z in descent_path(world, node_at(SPAWN)):
        assert world.get_light(x, feet, z) >= 4


def test_the_deepest_floor_is_reachable_from_the_spawn_without_lava(cave):
    path = descent_path(cave.world, node_at(SPAWN))
    assert path[0] == node_at(SPAWN)
    assert path[-1][1] == -24
    lava = node_ids("default:lava_source")[0]
    assert all(cave.world.get(*cell) != lava for cell in path)
    drops = [a[1] - b[1] for a, b in zip(path, path[1:], strict=False)]
    assert max(drops) <= 3 and min(drops) >= 0  # the cave only goes down, by survivable steps


def test_map_seed_selects_the_winding_and_none_is_the_canonical_cave(params, cave):
    task = SpeleoTask()
    np.testing.assert_array_equal(task.build_world(None).content, cave.world.content)
    other = carve_cave(shared_materials(), params, 3)
    assert other.path != cave.path
    assert other.path[0] == cave.path[0]
    assert other.path[-1][1] == cave.path[-1][1] == params.bottom_floor
    np.testing.assert_array_equal(task.build_world(3).content, other.world.content)


@pytest.mark.parametrize("frameskip", [1, 4])
def test_reward_is_minus_the_player_y_once_per_step(frameskip):
    env = make(obs_mode="voxels", frameskip=frameskip)
    env.reset(seed=2)
    player = env.unwrapped.sim.avatars[0].player
    rng = np.random.default_rng(0)
    for _ in range(200):
        _, reward, terminated, truncated, info = env.step(int(rng.integers(7)))
        assert reward == -player.position[1]
        assert info["task"]["y"] == player.position[1]
        if terminated or truncated:
            break


def test_noop_policy_returns_minus_500_times_the_spawn_height():
    env = make(obs_mode="voxels")
    env.reset(seed=0)
    total, steps = 0.0, 0
    while True:
        _, reward, terminated, truncated, info = env.step(0)
        total += reward
        steps += 1
        if terminated or truncated:
            break
    assert (steps, truncated) == (500, True)
    assert total == -5.5 * 500
    assert info["success"] is False
    assert info["normalized_score"] == 0.0
    assert task_table()["Speleo"]["score"]["lo"] == total


def test_lava_burns_the_player_to_death_and_ends_the_episode():
    env = make(obs_mode="voxels", frameskip=20)
    env.reset(seed=0)
    sim = env.unwrapped.sim
    lava = np.argwhere(sim.world.content == node_ids("default:lava_source")[0])[0]
    x, y, z = lava + sim.world.origin
    sim.avatars[0].player.position[:] = (x, y - 0.5, z)  # standing in the pool
    steps, terminated = 0, False
    while not terminated and steps < 40:
        _, _, terminated, _, info = env.step(0)
        steps += 1
    assert terminated
    assert steps == 30  # 20 hp at 8 per second: dead after 3 s = 600 frames
    assert info["metrics"]["damage_taken"] >= 20.0
    assert env.unwrapped.sim.avatars[0].player.hp == 0
    assert info["success"] is False


def test_standing_on_the_deepest_floor_is_success(cave):
    env = make(obs_mode="voxels", max_timesteps=3)
    env.reset(seed=0)
    x, feet, z = cave.path[-1][0], cave.path[-1][1] + 1, cave.path[-1][2]
    env.unwrapped.sim.avatars[0].player.position[:] = (x, feet - 0.5, z)
    total = 0.0
    for _ in range(3):
        _, reward, _, truncated, info = env.step(0)
        total += reward
    assert truncated and total == -3 * BOTTOM_Y
    assert info["success"] is True
    assert info["metrics"]["min_y"] == BOTTOM_Y
    assert info["normalized_score"] == 100.0


def test_scripted_descender_goes_deeper_than_the_noop_policy():
    env = make(obs_mode="voxels", max_timesteps=300)
    total, info = run_agent(env, SpeleoScripted(env), seed=0)
    assert info["metrics"]["min_y"] < 5.5 - 5
    assert total > -5.5 * 300 + 500


def test_scripted_descender_reaches_the_bottom_unhurt_at_frameskip_4():
    env = make(obs_mode="voxels", frameskip=4)
    _, info = run_agent(env, SpeleoScripted(env), seed=0)
    assert info["success"] is True
    assert info["metrics"]["min_y"] == BOTTOM_Y
    assert info["metrics"]["damage_taken"] <= 2.0


def test_score_hi_is_the_scripted_descenders_mean_return_over_seeds_0_to_9():
    env = make(obs_mode="voxels")
    agent = SpeleoScripted(env)
    returns = [run_agent(env, agent, seed)[0] for seed in range(10)]
    assert task_table()["Speleo"]["score"]["hi"] == pytest.approx(np.mean(returns), abs=0.01)
