"""CraftEnv's Craftium interface: kwargs, spaces, info keys, modes, seeding."""

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

import omnigym
from omnigym.agents.craft.room import RoomScripted
from omnigym.envs.craft.actions import ACTION_ORDER, CheckedAction, DiscreteActionWrapper
from omnigym.envs.craft.env import IGNORED_KWARGS, CraftEnv

# Craftium's action set and mouse move per task (Malagón et al., ICML 2025; the table of
# docs/craft.md), written out independently of data/tasks/*.yaml, where the environments read
# them: the one check that the task data keeps Craftium's actions.
SPEC_ACTIONS = {
    "Craft/Room-v0": (["forward", "mouse x+", "mouse x-"], 0.5),
    "Craft/SmallRoom-v0": (["forward", "mouse x+", "mouse x-"], 0.5),
    "Craft/ChopTree-v0": (
        ["forward", "jump", "dig", "mouse x+", "mouse x-", "mouse y+", "mouse y-"],
        0.5,
    ),
    "Craft/Speleo-v0": (["forward", "jump", "mouse x+", "mouse x-", "mouse y+", "mouse y-"], 0.5),
    "Craft/SpidersAttack-v0": (
        ["forward", "left", "right", "jump", "dig", "mouse x+", "mouse x-", "mouse y+", "mouse y-"],
        0.5,
    ),
    "Craft/OpenWorld-v0": (
        [
            "forward",
            "backward",
            "left",
            "right",
            "jump",
            "sneak",
            "dig",
            "place",
            "slot_1",
            "slot_2",
            "slot_3",
            "slot_4",
            "slot_5",
            "mouse x+",
            "mouse x-",
            "mouse y+",
            "mouse y-",
        ],
        0.1,
    ),
    "Craft/ProcDungeons-v0": (
        ["forward", "left", "right", "jump", "dig", "mouse x+", "mouse x-", "mouse y+", "mouse y-"],
        0.1,
    ),
}
MOUSE = {"mouse x+": (1, 0), "mouse x-": (-1, 0), "mouse y+": (0, 1), "mouse y-": (0, -1)}
CRAFT_SINGLE = [info.id for info in omnigym.list_envs(family="craft", kind="single")]


def craftium_dict(name, mouse_mov):
    """The dict Craftium's DiscreteActionWrapper sends for one action name."""
    if name in MOUSE:
        return {"mouse": np.array(MOUSE[name], dtype=np.float32) * np.float32(mouse_mov)}
    return {name: 1, "mouse": np.zeros(2, dtype=np.float32)}


def same_action(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("env_id", [env_id for env_id in CRAFT_SINGLE if env_id in SPEC_ACTIONS])
def test_every_index_maps_to_the_dict_craftium_produces(env_id):
    env = gym.make(env_id)
    wrapper = env
    while not isinstance(wrapper, DiscreteActionWrapper):
        wrapper = wrapper.env
    names, mouse_mov = SPEC_ACTIONS[env_id]
    assert env.action_space == gym.spaces.Discrete(len(names) + 1)
    assert list(env.unwrapped.action_space.keys()) == list(ACTION_ORDER)
    assert len(env.unwrapped.action_space) == 22
    assert wrapper.action(0) == {}
    for index, name in enumerate(names, start=1):
        assert same_action(wrapper.action(index), craftium_dict(name, mouse_mov)), (env_id, name)
    env.close()


def test_info_has_craftium_keys_with_their_dtypes_on_reset_and_step():
    env = gym.make("Craft/SmallRoom-v0")
    _, info = env.reset(seed=0)
    infos = [info] + [env.step(1)[4] for _ in range(3)]
    for info in infos:
        assert info["voxel_obs"].dtype == np.uint32
        assert info["voxel_obs"].shape == (41, 21, 41, 3)
        assert info["player_pos"].dtype == np.float32 and info["player_pos"].shape == (3,)
        assert info["player_vel"].dtype == np.float32 and info["player_vel"].shape == (3,)
        assert isinstance(info["player_pitch"], float) and isinstance(info["player_yaw"], float)
        assert info["mt_dtime"] == pytest.approx(0.005)
    assert infos[0]["player_pos"].tolist() == [5.0, 5.5, 1.0]
    assert infos[1]["player_pos"][1] == 5.5  # standing on the floor
    assert infos[-1]["player_vel"][2] > 0  # forward along +z at yaw 0
    assert not infos[-1]["voxel_obs"].any()  # voxel info disabled: zeros


def test_enabled_voxel_info_holds_ids_light_and_param2_around_the_player():
    env = CraftEnv(
        "SmallRoom", enable_voxel_obs=True, voxel_obs_rx=2, voxel_obs_ry=1, voxel_obs_rz=3
    )
    _, info = env.reset(seed=0)
    voxels = info["voxel_obs"]
    assert voxels.shape == (7, 3, 5, 3)
    table = env.task.materials
    # Centre of the crop is the player's node (5, 6, 1): air, standing on stone at y = 5.
    assert voxels[3, 1, 2, 0] == table.id("air")
    assert voxels[3, 0, 2, 0] == table.id("default:stone")
    assert voxels[3, 1, 2, 1] == 15  # open roof: full sunlight


def test_mt_dtime_is_frameskip_frames():
    env = CraftEnv("Room", frameskip=4, fps_max=100)
    assert env.reset(seed=0)[1]["mt_dtime"] == pytest.approx(0.04)


@pytest.mark.parametrize(
    "kwargs, shape",
    [
        ({}, (64, 64, 3)),
        ({"rgb_observations": False}, (64, 64)),
        ({"rgb_observations": False, "gray_scale_keepdim": True}, (64, 64, 1)),
        ({"obs_width": 96, "obs_height": 48}, (48, 96, 3)),
    ],
)
def test_pixel_observations_have_the_declared_shape(kwargs, shape):
    env = CraftEnv("SmallRoom", **kwargs)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == shape
    assert obs.shape == shape and obs.dtype == np.uint8
    assert env.observation_space.contains(obs)


def test_grey_frames_are_craftiums_thirds_of_the_colour_frame():
    colour = CraftEnv("SmallRoom").reset(seed=0)[0].astype(np.int64)
    grey = CraftEnv("SmallRoom", rgb_observations=False).reset(seed=0)[0]
    expected = colour[..., 0] // 3 + colour[..., 1] // 3 + colour[..., 2] // 3
    assert np.array_equal(grey, expected)


def test_voxel_mode_observes_ids_entities_and_player_state_without_rendering():
    env = CraftEnv("SmallRoom", obs_mode="voxels", voxel_obs_rx=3, voxel_obs_ry=2, voxel_obs_rz=4)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["voxels"].shape == (9, 5, 7) and obs["voxels"].dtype == np.uint16
    table = env.task.materials
    assert obs["voxels"][4, 1, 3] == table.id("default:stone")  # the floor under the player
    assert obs["voxels"][4, 2, 3] == table.id("air")
    assert obs["voxels"][2, 2, 3] == table.id("default:stonebrick")  # wall behind, z = -1
    assert obs["voxels"][0, 2, 3] == 127  # z = -3 lies outside the world: ignore
    assert obs["entities"].shape == (32, 6) and not obs["entities"].any()
    assert obs["player"][5] == 20  # hp
    assert obs["player"][8] == pytest.approx(0.5)  # midday
    assert env._last_frame is None


def test_both_mode_adds_the_frame_to_the_voxel_dict():
    env = CraftEnv("SmallRoom", obs_mode="both")
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"voxels", "entities", "player", "rgb"}
    assert np.array_equal(obs["rgb"], CraftEnv("SmallRoom").reset(seed=0)[0])


def test_mouse_turns_by_craftiums_reference_angle_per_frame():
    env = CraftEnv("SmallRoom", frameskip=3)
    env.reset(seed=0)
    _, _, _, _, info = env.step({"mouse": np.array([0.5, 0.0], dtype=np.float32)})
    assert info["player_yaw"] == pytest.approx(360.0 - 3 * 4.49, abs=0.03)
    _, _, _, _, info = env.step({"mouse": np.array([0.0, 0.5], dtype=np.float32)})
    assert info["player_pitch"] == pytest.approx(-3 * 4.49, abs=0.03)


def test_room_rewards_minus_one_per_step_and_truncates_at_the_task_length():
    env = gym.make("Craft/SmallRoom-v0", max_timesteps=7)
    env.reset(seed=0)
    rewards = []
    for _ in range(7):
        _, reward, terminated, truncated, info = env.step(0)
        rewards.append(reward)
    assert rewards == [-1.0] * 7
    assert truncated and not terminated
    assert info["success"] is False and info["normalized_score"] == pytest.approx(
        100 * (-7 + 500) / 499
    )
    assert set(info["metrics"]) >= {"damage_taken", "distance", "min_y"}


@pytest.mark.parametrize("env_id, threshold", [("Craft/Room-v0", 5.0), ("Craft/SmallRoom-v0", 3.0)])
def test_scripted_walker_reaches_the_target_and_terminates(env_id, threshold):
    env = gym.make(env_id)
    agent = RoomScripted(env)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        steps = 0
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            steps += 1
            if terminated or truncated:
                break
        assert terminated and info["success"] is True
        assert info["task"]["distance2"] < threshold
        assert steps < env.unwrapped.max_timesteps
        assert info["normalized_score"] > 70


def test_target_position_follows_the_reset_seed():
    env = CraftEnv("Room")
    targets = {env.reset(seed=s)[1]["task"]["target"] for s in range(8)}
    assert len(targets) > 4
    assert env.reset(seed=3)[1]["task"]["target"] == env.reset(seed=3)[1]["task"]["target"]
    for x, y, z in targets:
        assert -13 <= x <= 4 and -9 <= z <= -1 and y == 6


def test_reset_restores_the_pristine_world():
    env = CraftEnv("SmallRoom")
    _, info = env.reset(seed=0)
    first = info["task"]["target"]
    _, info = env.reset(seed=1)
    second = info["task"]["target"]
    coral = env.task.materials.id("default:coral_orange")
    assert first != second
    assert env.sim.count_nodes(coral) == 1  # the first episode's target is gone


def test_world_seed_option_switches_world_and_validates():
    env = CraftEnv("SmallRoom")
    env.reset(seed=0, options={"world_seed": 5})
    env.reset(seed=0, options={"world_seed": "per_episode"})
    with pytest.raises(ValueError, match="world_seed"):
        env.reset(seed=0, options={"world_seed": -1})
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(seed=0, options={"bogus": 1})


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"obs_width": 0}, "obs_width"),
        ({"obs_height": -3}, "obs_height"),
        ({"frameskip": 0}, "frameskip"),
        ({"max_timesteps": 1.5}, "max_timesteps"),
        ({"voxel_obs_rx": -1}, "voxel_obs_rx"),
        ({"rgb_observations": "yes"}, "rgb_observations"),
        ({"obs_mode": "depth"}, "obs_mode"),
        ({"render_mode": "window"}, "render_mode"),
        ({"pmul": 0}, "pmul"),
        ({"fps_max": -1}, "fps_max"),
        ({"seed": "abc"}, "seed"),
        ({"minetest_conf": {"fov": 200}}, "fov"),
        ({"minetest_conf": 3}, "minetest_conf"),
        ({"render_threads": 0}, "render_threads"),
    ],
)
def test_bad_kwargs_raise_value_error_naming_the_kwarg(kwargs, name):
    with pytest.raises(ValueError, match=name):
        CraftEnv("SmallRoom", **kwargs)


def test_obs_width_zero_raises_a_message_naming_the_kwarg_and_value():
    with pytest.raises(ValueError, match="obs_width must be a positive int, got 0"):
        gym.make("Craft/SmallRoom-v0", obs_width=0)


def test_unknown_task_and_unknown_kwarg_are_named():
    with pytest.raises(ValueError, match="task must be one of"):
        CraftEnv("Castle")
    with pytest.raises(TypeError, match="colour_depth"):
        CraftEnv("SmallRoom", colour_depth=8)


def test_an_unknown_backend_is_named():
    with pytest.raises(ValueError, match=r"backend must be one of .*'unreal'"):
        CraftEnv("SmallRoom", backend="unreal")


def test_engine_process_kwargs_are_accepted_and_ignored():
    kwargs = {name: None for name in IGNORED_KWARGS}
    env = CraftEnv("SmallRoom", **kwargs)
    plain = CraftEnv("SmallRoom")
    assert np.array_equal(env.reset(seed=2)[0], plain.reset(seed=2)[0])


def test_unknown_minetest_conf_key_warns_once():
    with pytest.warns(UserWarning, match="time_speed_for_test"):
        CraftEnv("SmallRoom", minetest_conf={"time_speed_for_test": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CraftEnv("SmallRoom", minetest_conf={"time_speed_for_test": 0})


def test_human_rendering_without_pygame_names_render_mode():
    try:
        import pygame  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="render_mode='human' needs pygame"):
            CraftEnv("SmallRoom", render_mode="human")
    else:
        pytest.skip("pygame is installed")


def test_rgb_array_render_returns_the_last_frame_even_in_voxel_mode():
    env = CraftEnv("SmallRoom", obs_mode="voxels", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (64, 64, 3) and frame.dtype == np.uint8
    grey = CraftEnv("SmallRoom", rgb_observations=False, render_mode="rgb_array")
    grey.reset(seed=0)
    assert grey.render().shape == (64, 64, 3)


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        CraftEnv("SmallRoom").step({})


def test_raw_dict_actions_are_checked():
    env = CraftEnv("SmallRoom")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="valid keys"):
        env.step({"fly": 1})
    with pytest.raises(ValueError, match="Box"):
        env.step({"mouse": [2.0, 0.0]})


def test_craftium_alias_and_wrapper_index_error():
    from omnigym.envs.craft.env import CraftiumEnv

    assert CraftiumEnv is CraftEnv
    env = gym.make("Craft/SmallRoom-v0")
    env.reset(seed=0)
    with pytest.raises(
        ValueError, match=r"action 4 is outside Discrete\(4\) of Craft/SmallRoom-v0"
    ):
        env.step(4)


def test_frames_show_the_orange_target_ahead():
    env = CraftEnv("SmallRoom")
    obs, info = env.reset(seed=0)
    tx, _, tz = info["task"]["target"]
    assert tz > 1  # ahead along +z, where the camera looks at yaw 0
    orange = (obs[..., 0] > 180) & (obs[..., 1] > 70) & (obs[..., 1] < 150) & (obs[..., 2] < 90)
    assert orange.sum() > 4
    assert math.isfinite(float(obs.mean()))


@pytest.mark.parametrize("env_id", CRAFT_SINGLE)
def test_registered_ids_take_their_actions_from_the_task_table(env_id):
    from omnigym.envs.craft.tasks.base import task_table

    entry = next(e for e in task_table().values() if e["id"] == env_id)
    env = gym.make(env_id)
    assert env.unwrapped.task.id == env_id
    assert env.get_wrapper_attr("actions") == entry["actions"]
    env.close()


def test_registered_ids_make_vector_envs_through_gymnasium():
    from omnigym.envs.craft.vector import CraftVectorEnv

    envs = gym.make_vec(
        "omnigym:Craft/SmallRoom-v0", num_envs=3, vectorization_mode="vector_entry_point"
    )
    assert isinstance(envs, CraftVectorEnv)
    assert envs.single_action_space == gym.spaces.Discrete(4)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, 64, 64, 3)
    single = gym.make("Craft/SmallRoom-v0")
    assert np.array_equal(obs[2], single.reset(seed=2)[0])
    envs.close()


def _reference_frame(env):
    """The frame drawn with no top row and no column heights: nothing skipped."""
    sim = env.unwrapped.sim
    player = sim.avatars[0].player
    return sim.renderer.render(
        sim.world.content,
        player.eye(sim.config.eye_height),
        player.yaw,
        player.pitch,
        entities=sim.entity_boxes(0),
        light=sim.world.light,
        origin=sim.world.origin,
    )


def test_frames_skip_nothing_after_digging_and_placing():
    from omnigym.agents.craft.chop_tree import ChopTreeScripted

    env = gym.make("Craft/ChopTree-v0")
    agent = ChopTreeScripted(env)
    obs, info = env.reset(seed=0)
    agent.reset(0)
    dug = 0
    for _ in range(400):
        obs, reward, _, _, info = env.step(agent.act(obs, info))
        dug += reward
    assert dug >= 1
    assert np.array_equal(obs, _reference_frame(env))
    sim = env.unwrapped.sim
    x, _, z = (int(round(c)) for c in sim.avatars[0].player.position)
    top = int(sim.world.origin[1] + sim.world.shape[1] - 1)
    sim.world.set(x, top, z + 2, "default:stone")  # above every tree: raises the top row
    sim.world_changed((x, top, z + 2))
    env.unwrapped.sim.avatars[0].player.pitch = -60.0
    assert np.array_equal(sim.frame(0), _reference_frame(env))


def test_reused_checked_actions_step_the_world_as_fresh_raw_dicts_do():
    raw = [
        {"forward": 1, "mouse": [0.25, 0.0]},
        {"dig": 1},
        {"slot_3": 1, "slot_2": 1, "place": 1},
        {"jump": 1, "left": 1, "mouse": [0.0, -0.5]},
        {"drop": 1, "sneak": 1},
        {},
    ]
    checked = [CheckedAction(action) for action in raw]
    conf = {"give_initial_stuff": True}
    envs = [CraftEnv("ChopTree", frameskip=2, minetest_conf=conf) for _ in range(2)]
    for env in envs:
        env.reset(seed=3)
    order = np.random.default_rng(0).integers(len(raw), size=150)
    for k in order:
        a = envs[0].step(checked[k])
        b = envs[1].step(dict(raw[k]))
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        for key in ("player_pos", "player_vel", "player_yaw", "player_pitch"):
            np.testing.assert_array_equal(a[4][key], b[4][key])
        if a[2] or a[3]:
            break
    # Slots 2 and 3 pressed together: the higher one is selected, as with the raw dict.
    assert envs[0].sim.avatars[0].player.inventory.selected == 2


def test_render_threads_give_the_same_observations_as_one():
    """SpidersAttack: mobs (entity boxes) in the frames; episodes reset inside the 60 steps."""
    kwargs = {"max_timesteps": 25, "obs_width": 48, "obs_height": 27}
    one, banded = (
        CraftEnv("SpidersAttack", **kwargs),
        CraftEnv("SpidersAttack", render_threads=2, **kwargs),
    )
    np.testing.assert_array_equal(banded.reset(seed=4)[0], one.reset(seed=4)[0])
    one.action_space.seed(0)
    for _ in range(60):
        action = one.action_space.sample()
        ours, theirs = banded.step(action), one.step(action)
        np.testing.assert_array_equal(ours[0], theirs[0])
        if theirs[2] or theirs[3]:
            np.testing.assert_array_equal(banded.reset()[0], one.reset()[0])
    banded.close()
