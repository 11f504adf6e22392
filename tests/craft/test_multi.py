"""MultiAgentCombat and the multi-agent Craft fronts: PettingZoo conformance, combat rules,
simultaneous stepping, seeding, Craftium's ``MarlCraftiumEnv`` and ``pettingzoo_env``."""

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import parallel_to_aec

from omnigym.envs.craft import pettingzoo_env
from omnigym.envs.craft.actions import DiscreteActionWrapper
from omnigym.envs.craft.env import CraftEnv
from omnigym.envs.craft.multi import CraftParallelEnv, MarlCraftiumEnv

from .helpers import action_index, assert_same

AGENTS = ["player_0", "player_1"]
NOOP = 0
FORWARD, DIG = (action_index("MultiAgentCombat", name) for name in ("forward", "dig"))


def _face_off(env, gap=3.0):
    """Puts the two players ``gap`` nodes apart (within punching reach), facing each other."""
    sim = env.sim
    sim.avatars[0].player.position[:] = (-2.5, 4.5, -5.1 + gap / 2)
    sim.avatars[1].player.position[:] = (-2.5, 4.5, -5.1 - gap / 2)


def test_parallel_env_passes_pettingzoo_parallel_api_test():
    parallel_api_test(CraftParallelEnv(), num_cycles=200)


def test_aec_form_passes_pettingzoo_api_test():
    api_test(parallel_to_aec(CraftParallelEnv(discrete=True)), num_cycles=200)


def test_players_start_6_8_nodes_apart_facing_each_other_and_see_each_other():
    env = CraftParallelEnv()
    observations, infos = env.reset(seed=0)
    p0, p1 = infos["player_0"]["player_pos"], infos["player_1"]["player_pos"]
    assert np.allclose(p0, (-2.5, 4.5, -1.7)) and np.allclose(p1, (-2.5, 4.5, -8.5))
    assert np.linalg.norm(p0 - p1) == pytest.approx(6.8, abs=1e-5)
    assert infos["player_0"]["player_yaw"] == 180.0 and infos["player_1"]["player_yaw"] == 0.0
    for agent in AGENTS:
        assert observations[agent].shape == (64, 64, 3) and observations[agent].dtype == np.uint8
        frame = observations[agent].astype(int)
        # The other player is a blue box straight ahead, in the middle columns.
        blue = (frame[..., 2] > frame[..., 0] + 60) & (frame[..., 1] < 120)  # not the sky
        assert blue.any() and set(np.nonzero(blue)[1]) <= set(range(28, 36))


def test_fifteenth_hit_ends_the_episode_with_rewards_per_hit_and_success_for_the_hitter():
    env = CraftParallelEnv(discrete=True, frameskip=20)  # 0.1 s per step: a punch per 9 steps
    env.reset(seed=0)
    _face_off(env)
    steps, hits, returns = 0, 0, dict.fromkeys(AGENTS, 0.0)
    while steps < 200:
        steps += 1
        _, rewards, terminations, truncations, infos = env.step({"player_0": DIG, "player_1": NOOP})
        assert rewards in ({"player_0": 0.0, "player_1": 0.0}, {"player_0": 1.0, "player_1": -0.1})
        hits += rewards["player_0"] == 1.0
        for agent in AGENTS:
            returns[agent] += rewards[agent]
        assert not any(truncations.values())
        if any(terminations.values()):
            break
        assert "success" not in infos["player_0"]
    assert hits == 15 and steps == 1 + 14 * 9  # first punch at once, then one per 0.9 s
    assert terminations == {"player_0": True, "player_1": True}
    assert env.agents == []
    assert env.sim.avatars[1].player.hp == 5 and env.sim.avatars[0].player.hp == 20
    assert returns["player_0"] == pytest.approx(15.0)
    assert returns["player_1"] == pytest.approx(-1.5)
    assert infos["player_0"]["success"] is True and infos["player_1"]["success"] is False
    assert infos["player_0"]["metrics"]["hits"] == 15.0
    assert infos["player_1"]["metrics"]["hits_taken"] == 15.0
    assert infos["player_1"]["metrics"]["damage_taken"] == 15.0
    assert infos["player_0"]["normalized_score"] == 100.0
    assert infos["player_1"]["normalized_score"] == 0.0


def test_both_players_act_in_the_same_step():
    env = CraftParallelEnv(discrete=True, frameskip=10)
    _, infos = env.reset(seed=0)
    before = {agent: infos[agent]["player_pos"][2] for agent in AGENTS}
    _, rewards, _, _, infos = env.step({"player_0": FORWARD, "player_1": FORWARD})
    moved = {agent: infos[agent]["player_pos"][2] - before[agent] for agent in AGENTS}
    assert moved["player_0"] < -0.05 and moved["player_1"] > 0.05
    assert moved["player_0"] == pytest.approx(-moved["player_1"], abs=1e-5)
    _face_off(env)
    _, rewards, _, _, infos = env.step({"player_0": DIG, "player_1": DIG})
    # Each landed a punch and took one in the same step: +1 - 0.1.
    assert rewards == {"player_0": pytest.approx(0.9), "player_1": pytest.approx(0.9)}
    assert infos["player_0"]["task"]["hp"] == [19, 19]


def test_simultaneous_decisive_punches_both_succeed():
    env = CraftParallelEnv(discrete=True, minetest_conf={"end_hp": 19})
    env.reset(seed=0)
    _face_off(env)
    _, _, terminations, _, infos = env.step({"player_0": DIG, "player_1": DIG})
    assert all(terminations.values())
    assert infos["player_0"]["success"] is True and infos["player_1"]["success"] is True


def _rollout(steps=300, seed=7):
    env = CraftParallelEnv(frameskip=2)
    observations, infos = env.reset(seed=seed)
    for i, agent in enumerate(AGENTS):
        env.action_space(agent).seed(seed + i)
    trace = [observations, infos]
    for _ in range(steps):
        if not env.agents:
            trace.append(env.reset())
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        trace.append(env.step(actions))
    return trace


def test_same_seed_and_actions_give_identical_trajectories():
    assert_same(_rollout(), _rollout())


def test_discrete_indices_map_like_the_discrete_action_wrapper():
    discrete = CraftParallelEnv(discrete=True, frameskip=4)
    raw = CraftParallelEnv(frameskip=4)
    assert discrete.action_space("player_0").n == 8
    mapping = DiscreteActionWrapper(CraftEnv(task="Room"), discrete.task.actions, 0.5)
    discrete.reset(seed=1)
    raw.reset(seed=1)
    for step in range(16):
        indices = {"player_0": step % 8, "player_1": (3 * step + 1) % 8}
        a = discrete.step(indices)
        b = raw.step({agent: mapping.action(index) for agent, index in indices.items()})
        assert_same(a, b)


def test_action_outside_the_space_raises_value_error_naming_space_value_and_agent():
    env = CraftParallelEnv(discrete=True)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action 8 of player_1 is outside Discrete\(8\)"):
        env.step({"player_0": 0, "player_1": 8})
    raw = CraftParallelEnv()
    raw.reset(seed=0)
    with pytest.raises(ValueError, match=r"player_0.*valid keys"):
        raw.step({"player_0": {"fly": 1}, "player_1": {}})
    with pytest.raises(ValueError, match=r"Box\(-1.0, 1.0"):
        raw.step({"player_0": {}, "player_1": {"mouse": [2.0, 0.0]}})


def test_action_for_an_absent_agent_raises_value_error_naming_it():
    env = CraftParallelEnv(discrete=True)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="player_2"):
        env.step({"player_0": 0, "player_1": 0, "player_2": 0})
    with pytest.raises(ValueError, match="player_1"):
        env.step({"player_0": 0})


def test_truncation_after_max_timesteps_ends_the_episode_for_all_agents():
    env = CraftParallelEnv(discrete=True, max_timesteps=3)
    env.reset(seed=0)
    for _ in range(3):
        _, _, terminations, truncations, infos = env.step(dict.fromkeys(AGENTS, NOOP))
    assert truncations == {"player_0": True, "player_1": True}
    assert not any(terminations.values())
    assert env.agents == []
    assert infos["player_0"]["success"] is False and infos["player_1"]["metrics"]["hits"] == 0.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})


def test_infos_carry_craftium_keys_for_each_player():
    env = CraftParallelEnv(enable_voxel_obs=True, voxel_obs_rx=2, voxel_obs_ry=1, voxel_obs_rz=3)
    _, infos = env.reset(seed=0)
    for agent in AGENTS:
        info = infos[agent]
        assert info["voxel_obs"].shape == (7, 3, 5, 3) and info["voxel_obs"].dtype == np.uint32
        assert info["player_pos"].dtype == np.float32 and info["player_vel"].shape == (3,)
        assert info["player_pitch"] == 0.0 and info["mt_dtime"] == pytest.approx(0.005)
        assert info["task"] == {"hits": [0, 0], "hits_taken": [0, 0], "hp": [20, 20]}


def test_render_puts_both_frames_side_by_side():
    env = CraftParallelEnv(render_mode="rgb_array", rgb_observations=False)
    observations, _ = env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (64, 128, 3)
    assert np.array_equal(frame[:, :64, 0], observations["player_0"])
    assert np.array_equal(frame[:, 64:, 2], observations["player_1"])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"obs_width": 0}, "obs_width"),
        ({"frameskip": -1}, "frameskip"),
        ({"n_players": 1}, "n_players"),
        ({"discrete": "yes"}, "discrete"),
        ({"render_mode": "human"}, "render_mode"),
        ({"minetest_conf": {"end_hp": -1}}, "end_hp"),
        ({"seed": -3}, "seed"),
        ({"task": "Room"}, "task"),
    ],
)
def test_bad_constructor_values_raise_value_error_naming_the_kwarg(kwargs, name):
    with pytest.raises(ValueError, match=name):
        CraftParallelEnv(**kwargs)


def test_unknown_kwarg_raises_type_error_naming_it():
    with pytest.raises(TypeError, match="obs_mode"):
        CraftParallelEnv(obs_mode="voxels")


def test_single_player_combat_is_refused():
    with pytest.raises(ValueError, match="n_players >= 2"):
        CraftEnv(task="MultiAgentCombat")


def test_marl_craftium_env_stacks_observations_and_returns_arrays():
    env = MarlCraftiumEnv(2, env_dir="craftium-envs/multi-agent-combat", frameskip=20)
    assert env.observation_space.shape == (2, 64, 64, 3)
    observations, infos = env.reset(seed=0)
    assert observations.shape == (2, 64, 64, 3) and observations.dtype == np.uint8
    assert set(infos) == set(AGENTS)
    _face_off(env.env)
    observations, rewards, terminations, truncations, _ = env.step([{"dig": 1}, {}])
    assert observations.shape == (2, 64, 64, 3)
    assert rewards.shape == (2,) and np.allclose(rewards, [1.0, -0.1])
    assert terminations.dtype == bool and terminations.shape == (2,) and not terminations.any()
    assert truncations.dtype == bool and truncations.shape == (2,)
    grey = MarlCraftiumEnv(3, rgb_observations=False)
    assert grey.reset(seed=0)[0].shape == (3, 64, 64)
    with pytest.raises(ValueError, match="num_agents"):
        MarlCraftiumEnv(1)


def test_pettingzoo_env_makes_craftium_names_in_both_forms():
    aec = pettingzoo_env.env("Craftium/MultiAgentCombat-v0")
    aec.reset(seed=0)
    assert aec.agent_selection == "player_0"
    parallel = pettingzoo_env.parallel_env("MultiAgentCombat", render_mode="rgb_array")
    assert isinstance(parallel, CraftParallelEnv) and parallel.render_mode == "rgb_array"
    with pytest.raises(ValueError, match="env_name"):
        pettingzoo_env.env("Craftium/ChopTree-v0")
