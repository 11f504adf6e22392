"""MacroActionWrapper (Discrete macro actions over the text commands) and pixels=True frames."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.envs.mcu.macro import PRIMITIVES, MacroActionWrapper


@pytest.mark.parametrize("observation", ["dict", "vector"])
def test_the_wrapper_passes_check_env(observation):
    env = MacroActionWrapper(omnigym.make("MCU/hunt_cow-simple-v0"), observation)
    check_env(env, skip_render_check=True)


def test_the_actions_are_the_plain_commands_then_macros_on_the_tasks_objects():
    env = MacroActionWrapper(omnigym.make("MCU/mine_iron_ore-simple-v0"))
    assert env.names[: len(PRIMITIVES)] == list(PRIMITIVES)
    assert {"approach iron_ore", "mine iron_ore", "equip stone_pickaxe"} <= set(env.names)
    assert env.action_space.n == len(env.names)


def test_repeating_the_mine_macro_solves_a_mining_task():
    env = MacroActionWrapper(omnigym.make("MCU/mine_iron_ore-simple-v0"), "vector")
    observation, _ = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    action = env.names.index("mine iron_ore")
    for _ in range(60):
        observation, _, terminated, _, info = env.step(action)
        if terminated:
            break
    assert info["success"] and info["command"] == "mine"
    assert env.observation_space.contains(observation)


def test_a_macro_without_a_visible_target_plays_noop_and_bad_actions_raise():
    env = MacroActionWrapper(omnigym.make("MCU/hunt_cow-simple-v0"))
    env.reset(seed=0)
    env.unwrapped.world.mobs.clear()
    *_, info = env.step(env.names.index("attack cow"))
    assert info["command"] == "noop"
    with pytest.raises(ValueError, match="Discrete"):
        env.step(env.action_space.n)
    with pytest.raises(ValueError, match="Discrete"):
        env.step("attack")


def test_pixels_add_a_deterministic_rgb_frame_that_darkens_at_the_hard_level():
    frames = []
    for _ in range(2):
        env = omnigym.make("MCU/hunt_cow-simple-v0", pixels=True)
        observation, _ = env.reset(seed=3)
        observation, *_ = env.step("turn left")
        assert env.observation_space.contains(observation)
        frames.append(observation["rgb"])
    assert frames[0].shape == (128, 128, 3) and frames[0].dtype == np.uint8
    assert np.array_equal(frames[0], frames[1]) and frames[0].std() > 0
    hard = omnigym.make("MCU/hunt_cow-hard-v0", pixels=True)
    dark, _ = hard.reset(seed=3)
    assert dark["rgb"].mean() < frames[0].mean()
    assert "rgb" not in omnigym.make("MCU/hunt_cow-simple-v0").reset(seed=0)[0]
