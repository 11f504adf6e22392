"""Craftium's OpenWorld task: world, tools track, hunting, day and night, monsters, achievements,
HUD, and the scripted chopper."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from omnigym.agents.craft.open_world import OpenWorldScripted
from omnigym.envs.craft.actions import DiscreteActionWrapper
from omnigym.envs.craft.core import FrameEvents
from omnigym.envs.craft.digging import DugNode
from omnigym.envs.craft.engine import AIR
from omnigym.envs.craft.entities import PunchResult
from omnigym.envs.craft.env import CraftEnv
from omnigym.envs.craft.tasks import open_world
from omnigym.envs.craft.tasks.open_world import ACHIEVEMENTS

from .helpers import action_index

NIGHT_TIME, DAWN_TIME = 0.0, 0.3  # midnight; after sunrise


def make(**kwargs):
    env = CraftEnv(task="OpenWorld", **kwargs)
    return DiscreteActionWrapper(env, env.task.actions, env.task.mouse_mov)


@pytest.fixture(scope="module")
def voxel_env():
    return make(obs_mode="voxels")


def frames_at(task, time):
    """``sim.frames`` at which the episode's clock reads ``time`` of day."""
    start = task.rules["day"]["start_time"]
    return int(round(((time - start) % 1.0) * task.day_frames))


def dug(name, n=1):
    return [FrameEvents(dug=[DugNode((0, 0, 0), name, name, 1, 0) for _ in range(n)])]


def score(task, sim, events):
    task.frame(sim, events)
    rewards, _ = task.end_step(sim)
    return float(rewards[0])


def test_registration_data_matches_craftium():
    env = make()
    task = env.unwrapped.task
    assert task.id == "Craft/OpenWorld-v0"
    assert task.mouse_mov == 0.1
    assert task.max_timesteps == 10000
    assert task.score_range() == (0.0, 3456.0)
    assert task.world_key(None) == task.world_key(0) == 0  # the canonical world is seed 0
    assert env.action_space.n == 18
    assert env.observation_space.shape == (180, 320, 3)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (180, 320, 3) and obs.dtype == np.uint8


def test_passes_gymnasium_check_env():
    env = make()
    check_env(env, skip_render_check=True)


def test_same_seed_and_actions_give_identical_episodes():
    envs = [make(obs_width=48, obs_height=32) for _ in range(2)]
    outs = [env.reset(seed=7) for env in envs]
    assert np.array_equal(outs[0][0], outs[1][0])
    actions = np.random.default_rng(3).integers(0, 18, size=300)
    for action in actions:
        a = envs[0].step(int(action))
        b = envs[1].step(int(action))
        assert np.array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        assert a[4]["task"] == b[4]["task"]
        assert np.array_equal(a[4]["player_pos"], b[4]["player_pos"])
        if a[2] or a[3]:
            break
    sims = [env.unwrapped.sim for env in envs]
    assert [e.kind for e in sims[0].entities] == [e.kind for e in sims[1].entities]


def test_reset_gives_the_start_kit_and_animals_standing_on_the_surface(voxel_env):
    voxel_env.reset(seed=1)
    sim = voxel_env.unwrapped.sim
    inventory = sim.avatars[0].player.inventory
    assert inventory.slots[0] == ("default:axe_stone", 1)
    assert inventory.count("default:torch") == 256
    kinds = [e.kind for e in sim.entities]
    for kind in ("chicken", "sheep", "pig", "cow"):
        assert kinds.count(kind) == 3
    assert kinds.count("villager") == 2
    content = sim.world.content
    walkable = sim.materials.walkable
    for entity in sim.entities:
        x, z = int(round(entity.position[0])), int(round(entity.position[2]))
        feet = int(round(entity.position[1] + 0.5))
        assert content[x, feet, z] == AIR
        assert walkable[content[x, feet - 1, z]]


def test_reset_rebuilds_the_surface_when_its_cache_dropped_it(voxel_env):
    voxel_env.reset(seed=0)
    spawn = voxel_env.unwrapped.sim.avatars[0].player.position.copy()
    open_world._SURFACES.clear()
    voxel_env.reset(seed=0)
    assert np.array_equal(voxel_env.unwrapped.sim.avatars[0].player.position, spawn)
    assert 0 in open_world._SURFACES


def test_tool_stages_pay_the_tools_track_and_replace_the_tools(voxel_env):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    inventory = sim.avatars[0].player.inventory
    assert score(task, sim, dug("default:tree")) == 0.0
    assert score(task, sim, dug("default:pine_tree")) == 128.0
    assert [s[0] for s in inventory.slots[:2]] == ["default:pick_wood", "default:sword_wood"]
    assert inventory.count("default:axe_stone") == 0
    assert inventory.count("default:torch") == 256
    assert score(task, sim, dug("default:stone", 2)) == 0.0
    assert score(task, sim, dug("default:desert_stone")) == 256.0
    assert inventory.wielded == "default:pick_stone"
    assert score(task, sim, dug("default:stone_with_iron", 3)) == 1024.0
    assert inventory.wielded == "default:pick_steel"
    assert not task.success(sim)
    assert score(task, sim, dug("default:stone_with_diamond")) == 2048.0
    assert inventory.wielded == "default:pick_diamond"
    assert task.success(sim)
    assert task.tools_return == 3456.0
    counts = task.achievements
    assert counts["collect_wood"] == 2 and counts["collect_stone"] == 3
    assert counts["collect_iron"] == 3 and counts["collect_diamond"] == 1
    for tier in ("wood", "stone", "iron", "diamond"):
        assert counts[f"earn_{tier}_tools"] == 1
    final = task.final_info(sim, 3456.0)
    assert final["success"] and final["normalized_score"] == 100.0
    assert final["metrics"]["trunks_dug"] == 2.0


def test_stone_before_the_wood_stage_does_not_skip_a_stage(voxel_env):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    assert score(task, sim, dug("default:stone", 3)) == 0.0
    assert score(task, sim, dug("default:tree", 2)) == 128.0 + 256.0
    assert task.stage == 2


def test_chopping_a_trunk_with_the_stone_axe_counts_toward_the_wood_stage(voxel_env):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    world = sim.world
    player = sim.avatars[0].player
    x, y, z = (int(round(v)) for v in player.position)
    y = int(round(player.position[1] + 0.5))
    world.set(x, y + 1, z + 2, "default:tree")
    sim.world_changed()
    player.yaw, player.pitch = 0.0, 0.0  # facing +z, the trunk at eye height two nodes ahead
    dig = action_index("OpenWorld", "dig")
    steps = 0
    while world.get(x, y + 1, z + 2) != AIR and steps < 500:
        voxel_env.step(dig)
        steps += 1
    assert steps == 400  # stone axe on choppy=2: 2.0 s at 200 frames/s
    assert task.dug["wood"] == 1


def test_per_punch_pays_damage_on_monsters_half_on_animals_and_minus_ten_on_villagers(
    voxel_env,
):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    assert task.conf["hunt_reward"] == "per_punch"

    def punch(kind, damage, killed=False):
        return score(task, sim, [FrameEvents(punches=[PunchResult(kind, damage, killed)])])

    assert punch("monster_b", 3) == 3.0
    assert punch("chicken", 3) == 1.5
    assert punch("villager", 3) == -10.0
    assert punch("item", 0) == 0.0
    assert punch("cow", 4, killed=True) == 2.0
    assert task.achievements["hunt_cow"] == 1
    assert task.kills == 1


def test_per_kill_pays_the_kind_value_on_kills_only():
    env = make(obs_mode="voxels", minetest_conf={"hunt_reward": "per_kill"})
    env.reset(seed=0)
    task, sim = env.unwrapped.task, env.unwrapped.sim

    def punch(kind, killed):
        return score(task, sim, [FrameEvents(punches=[PunchResult(kind, 3, killed)])])

    assert punch("chicken", False) == 0.0
    expected = {"chicken": 16, "sheep": 32, "pig": 64, "cow": 128, "monster_a": 32,
                "monster_b": 64, "monster_c": 128, "monster_d": 256, "villager": 0}  # fmt: skip
    for kind, value in expected.items():
        assert punch(kind, True) == value
    assert task.achievements["hunt_sheep"] == 1
    assert task.achievements["defeat_monster_d"] == 1


def test_hunt_reward_must_be_known():
    with pytest.raises(ValueError, match="hunt_reward"):
        make(obs_mode="voxels", minetest_conf={"hunt_reward": "per_hug"})


def test_a_landed_punch_on_a_chicken_pays_half_the_axe_damage(voxel_env):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    sim.entities.clear()
    player = sim.avatars[0].player
    player.yaw, player.pitch = 0.0, 40.0
    chicken = sim.entities.spawn("chicken", player.position + (0.0, 0.0, 1.5))
    _, reward, *_ = voxel_env.step(action_index("OpenWorld", "dig"))
    assert reward == 1.5  # stone axe damage 3, halved on animals
    assert chicken.hp == 2.0
    assert task.hunt_return == 1.5


def test_placing_a_block_and_a_torch_unlock_their_achievements(voxel_env):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    player = sim.avatars[0].player
    player.inventory.slots[4] = ("default:dirt", 1)
    player.yaw, player.pitch = 0.0, 60.0  # the ground one node ahead
    voxel_env.step(action_index("OpenWorld", "slot_5"))
    voxel_env.step(action_index("OpenWorld", "place"))
    assert task.achievements == {**dict.fromkeys(ACHIEVEMENTS, 0), "place_block": 1}
    player.pitch = 90.0  # the ground under the feet
    voxel_env.step(action_index("OpenWorld", "slot_2"))
    assert player.inventory.wielded == "default:torch"
    voxel_env.step(action_index("OpenWorld", "place"))
    assert task.achievements["place_torch"] == 1
    assert task.achievements["place_block"] == 1
    assert player.inventory.count("default:torch") == 255


def test_achievements_are_reported_on_every_step_and_on_the_final_one():
    env = make(obs_mode="voxels", max_timesteps=3)
    _, info = env.reset(seed=0)
    assert tuple(info["task"]["achievements"]) == ACHIEVEMENTS
    assert len(ACHIEVEMENTS) == 20
    for _ in range(3):
        _, _, terminated, truncated, info = env.step(0)
        assert tuple(info["task"]["achievements"]) == ACHIEVEMENTS
    assert truncated and not terminated
    assert info["achievements"] == dict.fromkeys(ACHIEVEMENTS, 0)


def test_night_dims_the_light_grid_and_frames():
    env = make(obs_width=64, obs_height=36)
    env.reset(seed=0)
    task, sim = env.unwrapped.task, env.unwrapped.sim
    sim.avatars[0].player.pitch = 30.0  # look at the ground: the sky is not dimmed
    assert task.sun == 15
    assert task.frame_light(sim) is sim.world.light
    day = sim.frame(0).astype(np.int64)
    sim.frames = frames_at(task, NIGHT_TIME)
    task.frame(sim, [FrameEvents()])
    assert task.time_of_day(sim) == pytest.approx(NIGHT_TIME)
    assert task.sun == 4
    light = task.frame_light(sim)
    assert np.array_equal(light, np.minimum(sim.world.light, 4))
    assert task.frame_light(sim) is light  # kept until the level changes
    night = sim.frame(0).astype(np.int64)
    assert night.sum() < 0.7 * day.sum()


def test_the_clock_runs_one_day_per_5000_frames_and_reaches_the_voxel_observation(voxel_env):
    obs, _ = voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    assert obs["player"][-1] == pytest.approx(0.3)
    obs, *_ = voxel_env.step(0)
    assert obs["player"][-1] == pytest.approx(0.3 + 1 / 5000)
    sim.frames = 5000
    assert task.time_of_day(sim) == pytest.approx(0.3)
    assert [task.sun_level(t) for t in (0.0, 0.2, 0.2525, 0.27, 0.5, 0.73, 0.8)] == [
        4, 4, 12, 15, 15, 15, 4,
    ]  # fmt: skip


def test_surviving_until_dawn_unlocks_survive_night_once_per_night(voxel_env):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    for time in (0.5, NIGHT_TIME, 0.25, DAWN_TIME, 0.5):
        sim.frames = frames_at(task, time) + 1  # off the monster-check frames
        task.frame(sim, [FrameEvents()])
    assert task.achievements["survive_night"] == 1
    task.frame(sim, [FrameEvents()])
    assert task.achievements["survive_night"] == 1


def test_monsters_spawn_in_the_dark_up_to_the_cap_and_vanish_far_away(voxel_env):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    rules = task.rules["monsters"]
    interval, cap = rules["interval_frames"], rules["cap"]
    night = frames_at(task, NIGHT_TIME) // interval * interval
    day_frames = task.day_frames
    assert day_frames % interval == 0  # the same night hour every day is a check frame

    def monsters():
        return [e for e in sim.entities if e.kind.startswith("monster_")]

    for check in range(60):
        sim.frames = night + check * day_frames
        task.frame(sim, [FrameEvents()])
        assert len(monsters()) <= cap
    assert len(monsters()) == cap
    for monster in monsters():
        x, y, z = (int(round(v)) for v in monster.position + (0.0, 0.5, 0.0))
        assert min(int(sim.world.light[x, y, z]), task.sun) <= rules["max_light"]
        assert sim.world.content[x, y, z] == AIR
    far = monsters()[0]
    far.position[0] += 100.0
    sim.frames = night + 60 * day_frames
    task.frame(sim, [FrameEvents()])
    assert far.removed


def test_death_terminates_the_episode(voxel_env):
    voxel_env.reset(seed=0)
    sim = voxel_env.unwrapped.sim
    sim.hurt(0, 100)
    _, _, terminated, truncated, info = voxel_env.step(0)
    assert terminated and not truncated
    assert not info["success"]


@pytest.mark.parametrize("shape", [(180, 320, 3), (180, 320), (180, 320, 1)])
def test_hud_draws_the_hotbar_and_a_health_bar_proportional_to_hp(voxel_env, shape):
    voxel_env.reset(seed=0)
    task, sim = voxel_env.unwrapped.task, voxel_env.unwrapped.sim
    hud = task.rules["hud"]
    rgb = len(shape) == 3 and shape[2] == 3

    def pixels(frame, color):
        if rgb:
            return int(np.all(frame == np.array(color), axis=-1).sum())
        grey = color[0] // 3 + color[1] // 3 + color[2] // 3
        return int((frame.reshape(shape[:2]) == grey).sum())

    full = np.zeros(shape, dtype=np.uint8)
    task.decorate_frame(sim, full)
    assert full[: shape[0] // 2].max() == 0  # the HUD stays at the bottom
    assert pixels(full, hud["selected_color"]) > 0
    assert pixels(full, hud["slot_color"]) > 0
    assert pixels(full, hud["tool_colors"]["stone"]) > 0  # the stone axe in slot 1
    assert pixels(full, hud["health_empty_color"]) == 0
    sim.avatars[0].player.hp = 10
    half = np.zeros(shape, dtype=np.uint8)
    task.decorate_frame(sim, half)
    red, dark = pixels(half, hud["health_color"]), pixels(half, hud["health_empty_color"])
    assert red == pytest.approx(pixels(full, hud["health_color"]) / 2, rel=0.05)
    assert dark == pytest.approx(red, rel=0.05)


def test_scripted_agent_reaches_the_wood_stage_on_seed_0():
    env = make(obs_mode="voxels")
    agent = OpenWorldScripted(env)
    obs, info = env.reset(seed=0)
    agent.reset(0)
    total, steps = 0.0, 0
    while total < 128.0 and steps < 1200:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        total, steps = total + reward, steps + 1
        assert not (terminated or truncated)
    assert total == 128.0  # reached after about 840 steps
    assert info["task"]["stage"] == 1
    assert info["task"]["achievements"]["collect_wood"] == 2
