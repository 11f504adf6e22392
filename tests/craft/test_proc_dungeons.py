"""ProcDungeons: the task, make_dungeon_env, the continual sequence and the scripted agent."""

from collections import Counter

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from omnigym.agents.craft.proc_dungeons import ProcDungeonsScripted
from omnigym.envs.craft.actions import DiscreteActionWrapper
from omnigym.envs.craft.dungeon_env import default_dungeon_conf, make_dungeon_env
from omnigym.envs.craft.dungeons import join_sequence, parse_ascii_map, sequence0_25
from omnigym.envs.craft.engine import DATA_DIR
from omnigym.envs.craft.extra.crl_dungeons import continual_sequence, load_task, sequence_maps

from .helpers import action_index, make_task_env

DUNGEON_ID = "Craft/ProcDungeons-v0"

# A 5×3 room: player at (1, 1, 1) facing +z, a tier-a monster right in front of it at (1, 1, 2),
# the objective in the far corner; glass ceiling.
DUEL_MAP = "\n".join(
    [
        "#####",
        "#####",
        "#####",
        "#####",
        "-",
        "#####",
        "#@  #",
        "#a O#",
        "#####",
        "-",
        "#####",
        "#   #",
        "#   #",
        "#####",
        "-",
        "%%%%%",
        "%%%%%",
        "%%%%%",
        "%%%%%",
    ]
)


def make(**kwargs) -> DiscreteActionWrapper:
    return make_task_env("ProcDungeons", **kwargs)


def assert_same(a, b):
    """Equal values, arrays compared by bytes, dicts key by key."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    else:
        assert a == b


# ---- the task --------------------------------------------------------------------------------


def test_env_passes_gymnasium_checker():
    env = make()
    check_env(env, skip_render_check=True)
    assert env.action_space == gymnasium.spaces.Discrete(10)
    assert env.observation_space.shape == (64, 64, 3)


def test_same_seed_and_actions_give_identical_episodes():
    envs = [make(), make()]
    results = [env.reset(seed=3) for env in envs]
    assert results[0][0].tobytes() == results[1][0].tobytes()
    actions = np.random.default_rng(0).integers(10, size=500)
    for action in actions:
        steps = [env.step(int(action)) for env in envs]
        (obs0, r0, te0, tr0, info0), (obs1, r1, te1, tr1, info1) = steps
        assert obs0.tobytes() == obs1.tobytes()
        assert (r0, te0, tr0) == (r1, te1, tr1)
        assert_same(info0, info1)
        if te0 or tr0:
            for env in envs:
                env.reset(seed=4)


def test_default_world_is_the_map_on_flat_ground():
    env = make()
    env.reset(seed=0)
    sim = env.unwrapped.sim
    world = sim.world
    dungeon = parse_ascii_map(default_dungeon_conf()["ascii_map"])
    assert dungeon.shape == (20, 5, 20)
    assert world.get_name(0, 0, 0) == "default:steelblock"  # floor under the map
    assert world.get_name(0, 4, 0) == "default:glass"  # ceiling
    assert world.get_name(-1, 0, -1) == "default:dirt_with_grass"  # ground around it
    assert world.get_name(3, 1, 3) == "air"  # the player's cell
    np.testing.assert_allclose(sim.avatars[0].player.position, (3.0, 0.5, 3.0))
    assert sim.avatars[0].player.inventory.wielded == "default:sword_steel"
    kinds = sorted((e.kind, tuple(e.position)) for e in sim.entities)
    assert kinds == [("item", (16.0, 0.5, 16.0)), ("monster_b", (17.0, 0.5, 14.0))]
    objective = next(e for e in sim.entities if e.kind == "item")
    assert objective.item == "default:diamond" and objective.scale == 2.0


def test_wall_material_and_map_select_the_world():
    env = make(minetest_conf={"ascii_map": DUEL_MAP, "wall_material": "default:stonebrick"})
    env.reset(seed=0)
    world = env.unwrapped.sim.world
    assert world.shape == (5 + 4, 4 + 2, 4 + 4)
    assert world.get_name(0, 1, 0) == "default:stonebrick"
    assert world.get_name(2, 3, 2) == "default:glass"
    assert env.unwrapped.task.score_range() == (0.0, 10.5)


def test_reset_options_switch_the_map_for_the_episode():
    env = make()
    env.reset(seed=0, options={"minetest_conf": {"ascii_map": DUEL_MAP}})
    sim = env.unwrapped.sim
    assert sim.world.shape == (9, 6, 8)
    assert sorted(e.kind for e in sim.entities) == ["item", "monster_a"]
    env.reset(seed=0)
    assert sim.world.shape == (24, 7, 24)
    assert sorted(e.kind for e in sim.entities) == ["item", "monster_b"]


def test_two_players_raise_value_error_naming_the_line_at_construction():
    two_players = DUEL_MAP.replace("#a O#", "#a @#")
    with pytest.raises(ValueError, match=r"ascii_map line 8, column 4: second '@'"):
        make(minetest_conf={"ascii_map": two_players})


def test_bad_parameters_raise_value_error_naming_them():
    with pytest.raises(ValueError, match="monster_a.*unknown fields \\['strength'\\]"):
        make(minetest_conf={"monster_a": {"strength": 3}})
    with pytest.raises(ValueError, match=r"\['monster_c'\]\['hp'\] must be numeric"):
        make(minetest_conf={"monster_c": {"hp": "lots"}})
    with pytest.raises(ValueError, match=r"\['monster_d'\]\['damage'\] must be one int"):
        make(minetest_conf={"monster_d": {"damage": 2.5}})
    with pytest.raises(ValueError, match=r"\['monster_d'\]\['size'\] must be 2 numbers"):
        make(minetest_conf={"monster_d": {"size": [1.0]}})
    for wall in ("default:nothing", "air", "ignore"):
        with pytest.raises(ValueError, match="wall_material"):
            make(minetest_conf={"wall_material": wall})
    with pytest.raises(ValueError, match="objective_item"):
        make(minetest_conf={"objective_item": "default:nothing"})
    with pytest.raises(ValueError, match="rwd_objective"):
        make(minetest_conf={"rwd_objective": "ten"})


def test_monster_override_changes_the_tier_stats():
    env = make(minetest_conf={"monster_b": {"hp": 40, "speed": 1, "size": [1, 2]}})
    env.reset(seed=0)
    monster = next(e for e in env.unwrapped.sim.entities if e.kind == "monster_b")
    assert monster.hp == 40 and monster.spec.speed == 1.0 and monster.size == (1.0, 2.0)
    plain = make()
    plain.reset(seed=0)
    assert next(e for e in plain.unwrapped.sim.entities if e.kind == "monster_b").hp == 16


def test_score_range_counts_the_monsters_of_the_map():
    three = DUEL_MAP.replace("#@  #", "#@bc#")
    env = make(minetest_conf={"ascii_map": three, "rwd_kill_monster": 1.0})
    assert env.unwrapped.task.score_range() == (0.0, 13.0)
    assert env.unwrapped.task.normalized_score(6.5) == 50.0


def test_killing_a_monster_pays_once_and_the_episode_goes_on():
    env = make(minetest_conf={"ascii_map": DUEL_MAP}, max_timesteps=400)
    env.reset(seed=0)
    rewards = []
    for _ in range(400):
        _, reward, terminated, truncated, info = env.step(action_index("ProcDungeons", "dig"))
        rewards.append(reward)
        if terminated or truncated:
            break
    assert truncated and not terminated  # the objective is still there
    assert sum(rewards) == 0.5 and rewards.count(0.5) == 1
    assert info["task"]["kills"] == 1 and info["task"]["monsters_left"] == 0
    assert info["metrics"]["kills"] == 1.0 and info["success"] is False
    assert info["normalized_score"] == pytest.approx(100 * 0.5 / 10.5)


def test_lethal_damage_terminates_without_success():
    deadly = {"ascii_map": DUEL_MAP, "monster_a": {"damage": 25, "hp": 1000}}
    env = make(minetest_conf=deadly)
    env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(0)
        steps += 1
    assert terminated and steps == 200  # a spawned monster's first attack comes after 1 s
    assert reward == 0.0 and info["success"] is False
    assert info["metrics"] == {"kills": 0.0, "damage_taken": 25.0}


def test_scripted_agent_collects_the_default_objective_with_return_10_5():
    env = make(obs_mode="voxels")  # the agent reads the simulation; frames are not needed
    agent = ProcDungeonsScripted(env)
    agent.reset(seed=0)
    obs, info = env.reset(seed=0)
    episode_return, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        episode_return += reward
    assert terminated and info["success"] is True
    assert episode_return == 10.5 and info["normalized_score"] == 100.0
    assert info["metrics"]["kills"] == 1.0


# ---- make_dungeon_env and the continual sequence ----------------------------------------------


def test_make_dungeon_env_draws_the_same_map_for_the_same_seed():
    kwargs = dict(mapgen_kwargs=dict(n_rooms=5, max_monsters_per_room=5), return_map_str=True)
    env, ascii_map = make_dungeon_env(seed=0, **kwargs)
    _, again = make_dungeon_env(seed=0, **kwargs)
    _, other = make_dungeon_env(seed=1, **kwargs)
    assert isinstance(ascii_map, str) and ascii_map == again and ascii_map != other
    assert env.spec.id == DUNGEON_ID and env.action_space == gymnasium.spaces.Discrete(10)
    assert env.unwrapped.task.conf["ascii_map"] == ascii_map
    assert env.unwrapped.task.conf["rwd_objective"] == 10.0
    obs, _ = env.reset(seed=0)
    assert obs.shape == (64, 64, 3)


def test_make_dungeon_env_keeps_a_given_map_and_the_callers_conf():
    conf = {"rwd_objective": 3.0}
    env = make_dungeon_env(DUEL_MAP, minetest_conf=conf)
    assert env.unwrapped.task.conf["ascii_map"] == DUEL_MAP
    assert env.unwrapped.task.conf["rwd_objective"] == 3.0
    assert env.unwrapped.task.score_range() == (0.0, 3.5)
    assert conf == {"rwd_objective": 3.0}


def test_load_task_returns_the_map_string_of_the_task():
    ascii_map = load_task("sequence0_25", task_id=5, make_env=False, return_map=True)
    assert isinstance(ascii_map, str)
    assert ascii_map == sequence_maps("sequence0_25")[5]
    assert parse_ascii_map(ascii_map).monsters
    with pytest.raises(ValueError, match="task_id"):
        load_task("sequence0_25", task_id=25, make_env=False, return_map=True)
    with pytest.raises(ValueError, match="sequence name"):
        load_task("sequence9", make_env=False, return_map=True)


def test_continual_sequence_factories_make_each_task():
    factories = continual_sequence("sequence0_25")
    assert len(factories) == 25
    env = factories[1]()
    assert env.unwrapped.task.conf["ascii_map"] == sequence_maps()[1]
    env, ascii_map = load_task("sequence0_25", task_id=0, return_map=True)
    assert env.unwrapped.task.conf["ascii_map"] == ascii_map


def test_committed_sequence_is_what_the_seeded_script_generates():
    tasks = sequence0_25()
    committed = (DATA_DIR / "sequence0_25.txt").read_text()
    assert committed == join_sequence([task.ascii_map for task in tasks])
    assert [task.mapgen_kwargs["n_rooms"] for task in tasks[:2]] == [2, 2]


def test_sequence_follows_craftiums_difficulty_ramp():
    maps = [parse_ascii_map(text) for text in sequence_maps("sequence0_25")]
    tiers = [Counter(tier for tier, _ in dungeon.monsters) for dungeon in maps]
    assert len(maps) == 25
    for dungeon, counts in zip(maps[:2], tiers[:2], strict=True):
        assert (dungeon.shape[0], dungeon.shape[2]) == (12, 12) and not counts
    for counts in tiers[2:9]:
        assert set(counts) == {"a"}
    for counts in tiers[9:16]:
        assert counts["b"] >= 1 and set(counts) <= {"a", "b"} and sum(counts.values()) <= 15
    for counts in tiers[16:24]:
        assert counts["c"] >= 1 and set(counts) <= {"a", "b", "c"} and sum(counts.values()) <= 44
    assert tiers[24]["d"] == 5 and sum(counts["d"] for counts in tiers[:24]) == 0
    areas = [dungeon.shape[0] * dungeon.shape[2] for dungeon in maps]
    assert int(np.argmax(areas)) == 24 and min(maps[24].shape[0], maps[24].shape[2]) >= 80
