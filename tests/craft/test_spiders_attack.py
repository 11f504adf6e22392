"""SpidersAttack: the cage, spider rounds, kill rewards, death, success, the scripted fighter."""

import math

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from omnigym.agents.craft.spiders_attack import SpidersAttackScripted
from omnigym.envs.craft.actions import DiscreteActionWrapper
from omnigym.envs.craft.env import CraftEnv

from .helpers import action_index

NOOP, DIG = 0, action_index("SpidersAttack", "dig")
SPAWN_FRAMES = 200  # Craftium's 1 s delay at the default 200 frames per second


def make_env(**kwargs) -> DiscreteActionWrapper:
    base = CraftEnv(task="SpidersAttack", **kwargs)
    return DiscreteActionWrapper(base, base.task.actions, base.task.mouse_mov)


def spiders(env) -> list:
    return [e for e in env.unwrapped.sim.entities if e.kind == "spider" and not e.removed]


def strike(env, spider):
    """Puts ``spider`` in the player's view within reach, with the sword charged, and digs."""
    sim = env.unwrapped.sim
    player = sim.avatars[0].player
    player.pitch = 45.0  # the view ray meets a body 1.3 nodes ahead at the box's mid-height
    yaw = math.radians(player.yaw)
    spider.position[:] = player.position + (-1.3 * math.sin(yaw), 0.0, 1.3 * math.cos(yaw))
    spider.velocity[:] = 0.0
    sim.avatars[0].last_punch = -math.inf
    return env.step(DIG)


def kill(env, spider) -> list[tuple]:
    """Strikes ``spider`` until it dies; the step results, one per strike."""
    results = [strike(env, spider)]
    while not spider.removed and len(results) < 10:
        results.append(strike(env, spider))
    assert spider.removed
    return results


def wait_for_spiders(env, count: int) -> dict:
    for _ in range(SPAWN_FRAMES + 1):
        _, _, terminated, truncated, info = env.step(NOOP)
        assert not (terminated or truncated)
        if info["task"]["spiders_alive"]:
            break
    assert info["task"]["spiders_alive"] == count == len(spiders(env))
    return info


def test_registered_action_set_and_defaults():
    env = make_env()
    base = env.unwrapped
    assert base.task.id == "Craft/SpidersAttack-v0"
    assert env.action_space.n == 10
    assert base.task.mouse_mov == 0.5
    assert base.max_timesteps == 4000
    assert base.sim.enable_damage
    assert base.observation_space.shape == (64, 64, 3)
    assert base.task.score_range() == (0.0, 15.0)


def test_passes_gymnasium_env_checker():
    check_env(make_env(), skip_render_check=True)


def test_same_seed_same_actions_give_identical_episodes():
    env_a, env_b = make_env(), make_env()
    obs_a, info_a = env_a.reset(seed=7)
    obs_b, info_b = env_b.reset(seed=7)
    assert obs_a.tobytes() == obs_b.tobytes()
    assert_same_info(info_a, info_b)
    actions = np.random.default_rng(0).integers(env_a.action_space.n, size=500)
    for action in actions:
        obs_a, reward_a, term_a, trunc_a, info_a = env_a.step(int(action))
        obs_b, reward_b, term_b, trunc_b, info_b = env_b.step(int(action))
        assert obs_a.tobytes() == obs_b.tobytes()
        assert (reward_a, term_a, trunc_a) == (reward_b, term_b, trunc_b)
        assert_same_info(info_a, info_b)
        if term_a or trunc_a:
            break
    assert info_a["task"]["spiders_alive"] == 1  # the random episode met its spider


def assert_same_info(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        if isinstance(value, np.ndarray):
            assert value.dtype == b[key].dtype and np.array_equal(value, b[key])
        else:
            assert value == b[key], key


def test_player_starts_at_craftiums_spawn_with_a_steel_sword():
    env = make_env()
    _, info = env.reset(seed=0)
    player = env.unwrapped.sim.avatars[0].player
    np.testing.assert_allclose(player.position, (-2.5, 4.5, -1.7))
    assert player.yaw == 180.0 and player.pitch == 0.0
    assert player.inventory.wielded == "default:sword_steel"
    assert info["task"] == {"round": 1, "spiders_alive": 0, "kills": 0, "rounds_cleared": 0}


def test_cage_is_undiggable_and_taller_than_a_jump():
    env = make_env()
    env.reset(seed=0)
    base = env.unwrapped
    world, tools = base.sim.world, base.sim.tools
    x0, _ = base.task.interior[0]
    wall = world.get_name(x0 - 1, 5, -5)
    floor = world.get_name(x0, 4, -5)
    assert wall == "default:stonebrick" and floor == "default:stone"
    for name in (wall, floor):
        assert tools.dig_time(world.materials[name], "default:sword_steel") is None
    jump_height = base.config.jump_speed**2 / (2 * base.config.gravity)
    assert base.task.wall_height > jump_height + base.config.step_height


def test_first_spider_appears_after_one_second_away_from_the_player():
    env = make_env()
    env.reset(seed=3)
    for _ in range(SPAWN_FRAMES - 1):
        env.step(NOOP)
        assert not spiders(env)
    _, _, _, _, info = env.step(NOOP)
    (spider,) = spiders(env)
    assert spider.hp == 25
    player = env.unwrapped.sim.avatars[0].player
    distance = math.hypot(*(spider.position - player.position)[[0, 2]])
    assert distance >= 6.0
    (x0, x1), (z0, z1) = env.unwrapped.task.interior
    assert x0 - 0.5 + 1.5 <= spider.position[0] <= x1 + 0.5 - 1.5  # 1.5 from the walls' faces
    assert z0 - 0.5 + 1.5 <= spider.position[2] <= z1 + 0.5 - 1.5
    assert info["task"]["spiders_alive"] == 1


def test_spawn_points_come_from_the_reset_seed():
    def first_spider(seed):
        env = make_env(minetest_conf={"spawn_delay": 0.0})
        env.reset(seed=seed)
        env.step(NOOP)
        return spiders(env)[0].position.copy()

    np.testing.assert_array_equal(first_spider(1), first_spider(1))
    assert not np.array_equal(first_spider(1), first_spider(2))


def test_each_kill_rewards_one_and_other_punches_nothing():
    env = make_env()
    env.reset(seed=0)
    wait_for_spiders(env, 1)
    results = kill(env, spiders(env)[0])
    assert len(results) == 5  # 25 hp, 6 per sword punch
    assert [r[1] for r in results] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert results[-1][4]["task"]["kills"] == 1


def test_rounds_grow_by_one_spider_after_each_clear():
    env = make_env()
    env.reset(seed=0)
    wait_for_spiders(env, 1)
    info = kill(env, spiders(env)[0])[-1][4]
    assert info["task"] == {"round": 2, "spiders_alive": 0, "kills": 1, "rounds_cleared": 1}
    info = wait_for_spiders(env, 2)
    assert info["task"]["round"] == 2
    first, second = spiders(env)
    info = kill(env, first)[-1][4]
    assert info["task"] == {"round": 2, "spiders_alive": 1, "kills": 2, "rounds_cleared": 1}
    info = kill(env, second)[-1][4]
    assert info["task"] == {"round": 3, "spiders_alive": 0, "kills": 3, "rounds_cleared": 2}
    wait_for_spiders(env, 3)


def test_clearing_round_five_ends_the_episode_with_success():
    env = make_env(minetest_conf={"spawn_delay": 0.0})
    env.reset(seed=4)
    results = []
    for round_size in range(1, 6):
        results.append(env.step(NOOP))
        assert len(spiders(env)) == round_size
        for spider in spiders(env):
            results += kill(env, spider)
    _, _, terminated, truncated, info = results[-1]
    assert terminated and not truncated
    assert not any(r[2] for r in results[:-1])
    assert sum(r[1] for r in results) == 15.0
    assert info["success"] is True
    assert info["normalized_score"] == 100.0
    assert info["metrics"]["kills"] == 15.0
    assert info["metrics"]["rounds_cleared"] == 5.0
    with pytest.raises(RuntimeError):
        env.step(NOOP)


def test_spiders_kill_an_idle_player_three_hp_at_a_time():
    env = make_env(frameskip=10)
    env.reset(seed=2)
    player = env.unwrapped.sim.avatars[0].player
    hps = [player.hp]
    for _ in range(env.unwrapped.max_timesteps):
        _, reward, terminated, truncated, info = env.step(NOOP)
        assert reward == 0.0
        hps.append(player.hp)
        if terminated or truncated:
            break
    assert terminated and not truncated
    assert sorted(set(hps), reverse=True) == [20, 17, 14, 11, 8, 5, 2, 0]
    assert info["success"] is False
    assert info["normalized_score"] == 0.0
    assert info["metrics"] == {"kills": 0.0, "rounds_cleared": 0.0, "damage_taken": 21.0}


@pytest.mark.parametrize("key", ["spawn_delay", "min_spawn_distance"])
@pytest.mark.parametrize("value", [-1.0, math.inf, math.nan, "1", True])
def test_spawn_parameters_must_be_non_negative_numbers(key, value):
    with pytest.raises(ValueError, match=key):
        make_env(minetest_conf={key: value})


def test_scripted_fighter_clears_round_one():
    env = make_env()
    agent = SpidersAttackScripted(env)
    agent.reset(seed=0)
    obs, info = env.reset(seed=0)
    episode_return = 0.0
    while info["task"]["rounds_cleared"] < 1:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        episode_return += reward
        assert not (terminated or truncated)
    assert info["task"]["kills"] == 1 and episode_return == 1.0
