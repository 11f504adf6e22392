"""ChopTree: forest, steel axe, +1 per trunk node, 280-step trunk."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from omnigym.agents.craft.chop_tree import ChopTreeScripted
from omnigym.envs.craft.core import FrameEvents
from omnigym.envs.craft.digging import DugNode
from omnigym.envs.craft.tasks.base import shared_materials, task_table
from omnigym.envs.craft.tasks.chop_tree import ChopTreeTask
from omnigym.envs.craft.terrain import generate_forest

from .helpers import assert_same, make_task_env, random_rollout, run_agent

TRUNKS = (
    "default:tree",
    "default:jungletree",
    "default:pine_tree",
    "default:acacia_tree",
    "default:aspen_tree",
)


def stand_before_apple_trunk(base):
    """Puts the player on the ground just south of an apple trunk (``default:tree``, choppy 2)
    two nodes tall or more, looking level at its second node; returns that node."""
    world, materials = base.sim.world, base.sim.world.materials
    tree, air = materials.id("default:tree"), materials.id("air")
    content = world.content
    for x, y, z in np.argwhere(content == tree):
        if (
            content[x, y - 1, z] != tree
            and content[x, y + 1, z] == tree
            and materials.walkable[content[x, y - 1, z - 1]]
            and content[x, y, z - 1] == air
            and content[x, y + 1, z - 1] == air
        ):
            break
    else:
        raise AssertionError("no apple trunk with standing room south of it")
    x, y, z = (int(v) for v in np.array([x, y, z]) + world.origin)
    player = base.sim.avatars[0].player
    player.position[:] = (x, y - 0.5, z - 1.2)
    player.velocity[:] = 0.0
    player.yaw, player.pitch = 0.0, 0.0
    return x, y + 1, z


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_passes_gymnasium_check_env():
    check_env(make_task_env("ChopTree"), skip_render_check=True)


def test_same_seeds_give_identical_500_random_steps():
    first = random_rollout(make_task_env("ChopTree"), reset_seed=11, steps=500)
    second = random_rollout(make_task_env("ChopTree"), reset_seed=11, steps=500)
    assert_same(first, second)


def test_starts_on_the_terrain_spawn_wielding_a_steel_axe():
    env = make_task_env("ChopTree", obs_mode="voxels")
    env.reset(seed=0)
    base = env.unwrapped
    canonical = task_table()["ChopTree"]["world"]["canonical_seed"]
    spawn = generate_forest(shared_materials(), canonical).spawn
    player = base.sim.avatars[0].player
    np.testing.assert_array_equal(player.position, spawn)
    assert player.pitch == 0.0
    assert player.inventory.wielded == "default:axe_steel"
    assert player.inventory.selected == 0  # hotbar slot 1
    assert player.inventory.count("default:axe_steel") == 1


def test_reset_seed_draws_the_spawn_yaw():
    env = make_task_env("ChopTree", obs_mode="voxels")
    yaws = []
    for seed in (0, 1, 2, 0):
        _, info = env.reset(seed=seed)
        yaws.append(info["player_yaw"])
    assert yaws[0] == yaws[3]
    assert len({yaws[0], yaws[1], yaws[2]}) == 3
    assert all(0.0 <= yaw < 360.0 for yaw in yaws)


def test_map_seed_selects_the_forest_and_none_is_the_canonical_one():
    task = ChopTreeTask()
    canonical = task_table()["ChopTree"]["world"]["canonical_seed"]
    materials = shared_materials()
    np.testing.assert_array_equal(
        task.build_world(None).content, generate_forest(materials, canonical).world.content
    )
    np.testing.assert_array_equal(
        task.build_world(4).content, generate_forest(materials, 4).world.content
    )
    assert not np.array_equal(task.build_world(4).content, task.build_world(5).content)


def test_steel_axe_fells_a_trunk_node_in_exactly_280_steps():
    env = make_task_env("ChopTree", obs_mode="voxels")
    env.reset(seed=0)
    base = env.unwrapped
    node = stand_before_apple_trunk(base)
    dig = base.task.actions.index("dig") + 1
    rewards = [env.step(dig)[1] for _ in range(280)]
    assert rewards[:279] == [0.0] * 279
    assert rewards[279] == 1.0
    assert base.sim.world.get_name(*node) == "air"
    assert base.sim.avatars[0].player.inventory.count("default:tree") == 1


def test_each_trunk_node_dug_scores_one_whatever_its_kind():
    task = ChopTreeTask()
    events = FrameEvents(
        dug=[DugNode((0, i, 0), name, name, 1, 0) for i, name in enumerate(TRUNKS)]
    )
    events.dug.append(DugNode((1, 0, 0), "default:leaves", "default:leaves", 1, 0))
    events.dug.append(DugNode((2, 0, 0), "default:dirt_with_grass", "default:dirt", 1, 0))
    task.begin_episode()
    assert task.frame(None, [events]) is False
    assert task.rewards[0] == 5.0
    assert task.trunks_dug == 5
    assert task.trunk_names == frozenset(TRUNKS)


def test_two_trunk_nodes_give_two_and_the_final_step_reports_success():
    env = make_task_env("ChopTree", obs_mode="voxels", max_timesteps=600)
    env.reset(seed=0)
    base = env.unwrapped
    stand_before_apple_trunk(base)
    dig, down = base.task.actions.index("dig") + 1, base.task.actions.index("mouse y-") + 1
    total = sum(env.step(dig)[1] for _ in range(280))
    for _ in range(10):  # look down at the trunk's lowest node
        env.step(down)
    steps = 290
    terminated = truncated = False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(dig)
        total += reward
        steps += 1
    assert (steps, terminated, truncated) == (600, False, True)
    assert total == 2.0
    assert info["task"] == {"trunks_dug": 2}
    assert info["success"] is True
    assert info["metrics"]["trunks_dug"] == 2.0
    hi = task_table()["ChopTree"]["score"]["hi"]
    assert info["normalized_score"] == pytest.approx(min(100.0, 100.0 * 2.0 / hi))


def test_an_episode_without_a_trunk_fails_with_score_zero():
    env = make_task_env("ChopTree", obs_mode="voxels", max_timesteps=5)
    env.reset(seed=0)
    for _ in range(5):
        _, reward, terminated, truncated, info = env.step(0)
        assert reward == 0.0
    assert truncated and not terminated
    assert info["success"] is False
    assert info["normalized_score"] == 0.0
    assert info["metrics"]["trunks_dug"] == 0.0


def test_death_terminates_the_episode():
    env = make_task_env("ChopTree", obs_mode="voxels")
    env.reset(seed=0)
    base = env.unwrapped
    base.sim.hurt(0, 20)
    _, _, terminated, _, info = env.step(0)
    assert terminated
    assert info["metrics"]["damage_taken"] == 20.0


def test_scripted_chopper_digs_a_trunk_within_600_steps():
    env = make_task_env("ChopTree", obs_mode="voxels", max_timesteps=600)
    total, info = run_agent(env, ChopTreeScripted(env), seed=0)
    assert total >= 1.0
    assert info["success"] is True


@pytest.mark.slow
def test_score_hi_is_the_scripted_choppers_mean_return_over_seeds_0_to_9():
    env = make_task_env("ChopTree", obs_mode="voxels")
    agent = ChopTreeScripted(env)
    returns = [run_agent(env, agent, seed)[0] for seed in range(10)]
    assert task_table()["ChopTree"]["score"]["hi"] == pytest.approx(np.mean(returns))
