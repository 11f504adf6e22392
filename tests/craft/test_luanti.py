"""The Luanti backend: Craft tasks in a real Luanti 5.6 server (``envs/craft/luanti``).

Skipped where Debian's packages are missing (``make luanti`` installs them; CI does). Servers are
shared within the module where a test does not need its own: each start costs about 3 s.
"""

import gc
import signal
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.agents.craft.room import RoomScripted
from omnigym.envs.craft.engine import IGNORE
from omnigym.envs.craft.env import CraftEnv
from omnigym.envs.craft.luanti import server as luanti_server
from omnigym.envs.craft.luanti.env import LuantiCraftEnv
from omnigym.envs.craft.luanti.server import LuantiError, LuantiMissing

from ..kills import kill_run
from .helpers import assert_same

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_MOD = ROOT / "docs" / "craft_task_mod"
needs_luanti = pytest.mark.skipif(
    not luanti_server.available(),
    reason="Luanti is not installed: run `make luanti` (Debian's minetest-server, minetest-data "
    "and lua-socket)",
)


def _episode(env, agent, seed):
    obs, info = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        steps += 1
        done = terminated or truncated
    return steps, info


def _write_mod(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "mod.conf").write_text(f"name = {name}\n")
    (folder / "init.lua").write_text(textwrap.dedent(body))
    return folder


def test_missing_engine_names_make_luanti(monkeypatch):
    monkeypatch.setattr(luanti_server, "SERVER_PATHS", ("no-such-minetestserver",))
    env = omnigym.make("Craft/Room-v0", backend="luanti")
    with pytest.raises(LuantiMissing, match="make luanti"):
        env.reset(seed=0)
    env.close()


def test_minetest_is_an_alias_and_tasks_without_a_mod_are_named():
    env = CraftEnv("Room", backend="minetest")
    assert isinstance(env, LuantiCraftEnv)
    env.close()
    with pytest.raises(ValueError, match="task_mod"):
        CraftEnv("Speleo", backend="luanti")


@needs_luanti
def test_room_passes_check_env_and_the_scripted_agent_succeeds_on_both_rooms():
    env = omnigym.make("Craft/Room-v0", backend="luanti")
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space == omnigym.make("Craft/Room-v0").observation_space
    agent = RoomScripted(env)
    for seed in (0, 1):
        steps, info = _episode(env, agent, seed)
        assert info["success"] and steps < 400
        assert info["normalized_score"] > 50
    env.close()
    small = omnigym.make("Craft/SmallRoom-v0", backend="luanti")
    steps, info = _episode(small, RoomScripted(small), 0)
    assert info["success"] and steps < 200
    small.close()


@needs_luanti
def test_the_same_actions_reach_the_target_in_both_engines():
    embedded = omnigym.make("Craft/Room-v0")
    agent = RoomScripted(embedded)
    obs, info = embedded.reset(seed=5)
    spawn = embedded.unwrapped.sim.avatars[0].player.position.copy()
    target = info["task"]["target"]
    actions, done = [], False
    while not done:
        actions.append(agent.act(obs, info))
        obs, _, terminated, truncated, info = embedded.step(actions[-1])
        done = terminated or truncated
    assert terminated
    end = info["player_pos"]

    conf = {
        "omnigym_room_spawn": ",".join(repr(float(v)) for v in spawn),
        "omnigym_room_target": f"{target[0]},{target[2]}",
    }
    env = omnigym.make("Craft/Room-v0", backend="luanti", minetest_conf=conf)
    _, info = env.reset(seed=5)
    np.testing.assert_allclose(info["player_pos"], spawn, atol=1e-4)
    assert tuple(info["task"]["target"]) == tuple(target)
    steps = 0
    for action in actions:
        _, _, terminated, _, info = env.step(action)
        steps += 1
        if terminated:
            break
    env.close()
    # The bridge runs the embedded engine's physics frame, so the body follows the same path
    # (to the last float32 digit on seeds 0-4 here; docs/craft.md).
    assert terminated and steps == len(actions)
    np.testing.assert_allclose(info["player_pos"], end, atol=1e-3)


@needs_luanti
def test_lua_task_v0_runs_its_default_mod_which_the_room_walker_solves():
    env = omnigym.make("Craft/LuaTask-v0")
    steps, info = _episode(env, RoomScripted(env), seed=0)
    assert info["success"] and info["normalized_score"] == 100.0 and steps < 200
    env.close()


@needs_luanti
def test_a_user_task_mod_runs_through_lua_task_v0():
    env = omnigym.make("Craft/LuaTask-v0", task_mod=EXAMPLE_MOD)
    dig = 1 + list(env.unwrapped.task.actions).index("dig")
    _, info = env.reset(seed=0)
    assert info["task"] == {"dug": 0}
    rewards = [env.step(dig)[1] for _ in range(120)]
    assert sum(rewards) == 1.0 and rewards.count(1.0) == 1
    _, info = env.reset()  # a soft reset rebuilds the pillar
    assert info["task"] == {"dug": 0}
    env.close()


@needs_luanti
def test_the_agent_punches_the_entity_in_front_once_per_punch_interval(tmp_path):
    mod = _write_mod(
        tmp_path / "punch",
        "punch",
        """
        minetest.register_entity("punch:target", {
            initial_properties = {physical = true, collisionbox = {-0.4, 0, -0.4, 0.4, 1.8, 0.4}},
            on_punch = function()
                set_reward_once(get_reward() + 1, 0)
                return true
            end,
        })
        omnigym.on_reset(function(player)
            for x = -3, 3 do
                for z = -3, 3 do
                    minetest.set_node({x = x, y = 0, z = z}, {name = "default:stone"})
                end
            end
            minetest.set_node({x = 0, y = 2, z = 3}, {name = "default:dirt"})
            minetest.add_entity({x = 0, y = 0.5, z = 2}, "punch:target")
            player:set_pos({x = 0, y = 0.5, z = 0})
        end)
        """,
    )
    env = omnigym.make("Craft/LuaTask-v0", task_mod=mod, obs_mode="voxels")
    dig = 1 + list(env.unwrapped.task.actions).index("dig")
    obs, _ = env.reset(seed=0)
    assert obs["entities"][0, 5] == 1.0 and obs["entities"][0, 3] == pytest.approx(2.0, abs=0.01)
    rewards = [env.step(dig)[1] for _ in range(200)]
    # the bare hand punches every 0.9 s (180 frames); the dirt behind the target stays
    assert [i for i, r in enumerate(rewards) if r] == [0, 180]
    assert sum(rewards) == 2.0
    env.close()


DUEL_MAP = "#####\n#####\n#####\n#####\n#####\n-\n#####\n# @ #\n# a #\n# O #\n#####"
"""A floor, then the player facing a tier-a monster with the objective behind it (+z)."""


def _duel(env):
    """Sword the monster, look down at the objective, punch it: (kill step, return, info)."""
    base = env.unwrapped
    base.reset(seed=0)
    total, kill_step, terminated = 0.0, None, False
    for step in range(400):
        _, reward, terminated, _, info = base.step({"dig": 1})
        total += reward
        if kill_step is None and info["task"]["kills"]:
            kill_step = step
        if kill_step is not None and info["player_pitch"] < 30:  # the objective's direction
            _, reward, terminated, _, info = base.step({"mouse": np.array([0.0, -1.0])})
            total += reward
        if terminated:
            break
    return kill_step, total, info


@needs_luanti
def test_proc_dungeons_monster_and_objective_score_as_in_the_embedded_engine():
    conf = {"ascii_map": DUEL_MAP}
    expected = _duel(omnigym.make("Craft/ProcDungeons-v0", minetest_conf=conf))
    env = omnigym.make("Craft/ProcDungeons-v0", backend="luanti", minetest_conf=conf)
    kill_step, total, info = _duel(env)
    env.close()
    assert total == expected[1] == 10.5 and info["success"] and info["task"]["collected"]
    # two sword punches 0.8 s (160 frames) apart
    assert kill_step == expected[0] == 160


MOB_MAP = "######\n######\n######\n######\n######\n-\n######\n#O  b#\n# @  #\n# a  #\n######"
"""The player between a tier-a monster within reach and a tier-b one that walks up to it."""


def _mob_episodes(actions, episodes, **kwargs):
    env = omnigym.make(
        "Craft/ProcDungeons-v0", backend="luanti", obs_mode="voxels",
        minetest_conf={"ascii_map": MOB_MAP}, **kwargs,
    )  # fmt: skip
    runs = []
    for _ in range(episodes):
        run = [env.reset(seed=7)]
        for action in actions:
            run.append(env.step(int(action)))
            if run[-1][2] or run[-1][3]:
                break
        runs.append(run)
    env.close()
    return runs


@needs_luanti
def test_proc_dungeons_with_mobs_replays_bit_for_bit_under_the_same_seed_and_actions():
    actions = np.random.default_rng(0).integers(10, size=150)
    # twice on one server, once on a server that takes its own steps at other times
    first, second = _mob_episodes(actions, 2)
    (third,) = _mob_episodes(actions, 1, engine_step=0.25)
    assert_same(first, second)
    assert_same(first, third)
    # the mobs mattered: the monsters moved and hit the player
    entities = [step[0]["entities"] for step in first]
    assert not np.array_equal(entities[0], entities[-1])
    assert first[-1][0]["player"][5] < first[0][0]["player"][5]


@needs_luanti
def test_two_envs_in_a_vector_env_run_two_servers():
    import gymnasium

    vector = gymnasium.make_vec("Craft/SmallRoom-v0", num_envs=2, backend="luanti")
    obs, _ = vector.reset(seed=0)
    assert obs.shape == (2, 64, 64, 3)
    vector.step(np.array([1, 2]))
    servers = [env.unwrapped.server for env in vector.envs]
    assert servers[0].port != servers[1].port
    processes = [server.process for server in servers]
    vector.close()
    assert all(process.poll() is not None for process in processes)


@needs_luanti
def test_a_silent_bridge_raises_with_the_port_and_the_log(tmp_path):
    mod = _write_mod(
        tmp_path / "stall",
        "stall",
        """
        minetest.register_on_joinplayer(function()
            local start = os.clock()
            while os.clock() - start < 60 do end
        end)
        """,
    )
    env = omnigym.make("Craft/LuaTask-v0", task_mod=mod, timeout=3.0)
    with pytest.raises(LuantiError, match=r"port \d+.*did not answer within 3 s") as error:
        env.reset(seed=0)
    assert "Last lines of" in str(error.value)
    env.close()


@needs_luanti
def test_a_crash_raises_on_the_next_step_with_the_log_and_reset_starts_a_new_server(tmp_path):
    mod = _write_mod(
        tmp_path / "crash",
        "crash",
        """
        local calls = 0
        minetest.register_globalstep(function()
            calls = calls + 1
            if calls == 4 then
                error("boom from the task mod")
            end
        end)
        """,
    )
    env = omnigym.make("Craft/LuaTask-v0", task_mod=mod, timeout=10.0)
    env.reset(seed=0)
    first = env.unwrapped.server.process
    with pytest.raises(LuantiError, match="boom from the task mod"):
        for _ in range(5):
            env.step(0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=1)  # a new server: the mod's counter starts again
    assert env.unwrapped.server.process is not first and first.poll() is not None
    env.step(0)
    env.unwrapped.server.process.kill()  # a server killed from outside
    with pytest.raises(LuantiError, match="exit status"):
        env.step(0)
    env.close()


@needs_luanti
def test_close_and_garbage_collection_end_the_server_and_remove_the_world():
    env = omnigym.make("Craft/LuaTask-v0")
    env.reset(seed=0)
    server = env.unwrapped.server
    folder, process = Path(server.folder), server.process
    env.close()
    assert process.poll() is not None and not folder.exists()
    env = omnigym.make("Craft/LuaTask-v0")
    env.reset(seed=0)
    server = env.unwrapped.server
    folder, process = Path(server.folder), server.process
    del env, server
    gc.collect()
    assert process.wait(timeout=10) is not None and not folder.exists()


@needs_luanti
def test_no_server_outlives_a_killed_run(tmp_path):
    out = tmp_path / "run"
    args = ["eval", "Craft/LuaTask-v0", "--agent", "random", "--episodes", "40", "--workers", "1"]
    killed = kill_run([*args, "--out", str(out)], out, signal.SIGKILL, episodes=0,
                      ready="minetestserver")  # fmt: skip
    servers = [pid for pid, command in killed.processes.items() if "minetestserver" in command]
    assert servers and killed.left == {}


@needs_luanti
@pytest.mark.parametrize("env_id", ["Craft/ProcDungeons-v0", "Craft/ChopTree-v0"])
def test_exported_worlds_are_the_embedded_engines_node_for_node(env_id):
    kwargs = {"enable_voxel_obs": True, "voxel_obs_rx": 6, "voxel_obs_ry": 4, "voxel_obs_rz": 6}
    embedded = omnigym.make(env_id, obs_mode="voxels", **kwargs)
    obs_expected, expected = embedded.reset(seed=0)
    env = omnigym.make(env_id, backend="luanti", obs_mode="voxels", **kwargs)
    obs, info = env.reset(seed=0)
    inside = obs_expected["voxels"] != IGNORE  # beyond the embedded grid Luanti's map is air
    assert inside.sum() > 100 and len(np.unique(obs_expected["voxels"][inside])) > 2
    np.testing.assert_array_equal(obs["voxels"][inside], obs_expected["voxels"][inside])
    np.testing.assert_array_equal(info["voxel_obs"][..., 0], obs["voxels"])
    # entity rows (ProcDungeons' monster and objective): kind, offset from the feet, hp, valid
    np.testing.assert_allclose(obs["entities"], obs_expected["entities"], atol=1e-5)
    np.testing.assert_allclose(info["player_pos"], expected["player_pos"])
    assert info["task"] == expected["task"]
    env.close()
