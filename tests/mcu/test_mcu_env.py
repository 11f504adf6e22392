"""MCU/Atomic-v0: spaces, bad input, rewards, episode ends and determinism."""

import dataclasses

import numpy as np
import pytest

import omnigym
from omnigym.envs.mcu import oracles
from omnigym.envs.mcu.env import AtomicEnv

from ..conftest import sampled
from .helpers import make_env


def test_unparseable_command_is_a_one_tick_move_flagged_invalid():
    env = omnigym.make("MCU/Atomic-v0", task="combat_spiders")
    env.reset(seed=0)
    ticks = env.unwrapped.world.ticks
    _, reward, terminated, truncated, info = env.step("fly away")
    assert reward == 0.0 and not terminated and not truncated
    assert info["invalid_action"] is True
    assert info["invalid_reason"] == "unknown command 'fly'"
    assert env.unwrapped.world.ticks == ticks + 1


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("craft clock", "needs a crafting table"),
        ("mine", "nothing to mine"),
        ("place diamond_block", "no diamond_block in the inventory"),
        ("equip unobtainium", "unknown item 'unobtainium'"),
        ("move forward 9", "move takes 1 to 8 nodes"),
        ("sleep", "no bed"),
    ],
)
def test_impossible_command_is_flagged_with_its_reason(command, reason):
    env = make_env(["give @s gold_ingot 4"])
    _, reward, _, _, info = env.step(command)
    assert info["invalid_action"] is True and reward == 0.0
    assert reason in info["invalid_reason"]


def test_valid_command_is_not_flagged():
    env = make_env()
    _, _, _, _, info = env.step("  TURN left ")
    assert info["invalid_action"] is False and info["invalid_reason"] == ""
    assert env.world.facing == 1


def test_non_str_action_raises_value_error_naming_the_text_space():
    env = make_env()
    with pytest.raises(ValueError, match="Text"):
        env.step(3)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"difficulty": "extreme"}, "difficulty"),
        ({"task": "combat_spidres"}, "combat_spiders"),
    ],
)
def test_bad_constructor_arguments_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        AtomicEnv(**{"task": "combat_spiders", **kwargs})


def test_observation_lies_in_the_observation_space_and_reports_the_scene():
    env = AtomicEnv("mine_iron_ore")
    observation, info = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    assert "iron_ore x1" in observation["text"]
    assert "holding: stone_pickaxe" in observation["text"]
    assert observation["task"] == "Mine the iron ore."
    index = env.registry.item_index["stone_pickaxe"]
    assert observation["inventory"][index] == 1
    assert info["invalid_action"] is False and info["success"] is False


def test_voxels_are_agent_aligned_and_hidden_beyond_visibility():
    env = make_env(["setblock ~0 ~0 ~1 iron_ore"])
    voxels = env._observation()["voxels"]
    iron = env.registry.blocks["iron_ore"].id
    assert voxels.shape == (9, 5, 9) and voxels[4, 2, 5] == iron
    env.step("turn left")
    assert env._observation()["voxels"][4, 2, 5] != iron
    blind = make_env(["effect give @s blindness 30"])
    voxels = blind._observation()["voxels"]
    assert voxels[4, 2, 4] != -1 and voxels[0, 2, 0] == -1


def test_oracle_return_is_one_and_final_info_carries_the_scores():
    env = AtomicEnv("combat_spiders")
    env.reset(seed=0)
    total, info = 0.0, {}
    for command in oracles.solve(env.world, env.task.oracle):
        _, reward, terminated, truncated, info = env.step(command)
        total += reward
        if terminated or truncated:
            break
    assert terminated and info["success"] is True
    assert total == pytest.approx(1.0)
    assert info["normalized_score"] == 100.0
    assert info["metrics"]["task_progress"] == 10.0
    assert set(info["metrics"]) >= {"steps", "ticks", "invalid_commands"}


def test_episode_is_truncated_at_max_steps():
    env = make_env(max_steps=3)
    results = [env.step("noop") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert results[-1][4]["metrics"]["steps"] == 3.0


def test_death_terminates_without_success():
    env = make_env(["summon zombie ~1 ~0 ~0", "summon zombie ~-1 ~0 ~0"])
    env.world.health = 2.0
    _, reward, terminated, _, info = env.step("wait 20")
    assert terminated and env.world.dead
    assert info["success"] is False and reward == 0.0


def test_milestones_are_latched_and_rewarded_once():
    env = AtomicEnv("hunt_cow")
    env.reset(seed=0)
    env.world.mobs[0].position = (0, 5, 1)
    _, reward, _, _, _ = env.step("attack")
    assert reward == pytest.approx(0.3)
    env.world.mobs[0].position = (5, 5, 5)
    _, reward, _, _, _ = env.step("noop")
    assert reward == 0.0


def _trajectory(task, seed, commands):
    env = AtomicEnv(task)
    trace = [env.reset(seed=seed)]
    trace += [env.step(command) for command in commands]
    return trace


def _same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def test_same_seed_and_commands_give_identical_trajectories_and_mobs_follow_the_seed():
    commands = ["wait 20", "turn left", "move forward 2", "wait 20"]
    first = _trajectory("hunt_sheep", 5, commands)
    assert _same(first, _trajectory("hunt_sheep", 5, commands))
    other = _trajectory("hunt_sheep", 6, commands)
    assert not _same([t[0]["text"] for t in first[1:]], [t[0]["text"] for t in other[1:]])


@pytest.mark.parametrize("env_id", sampled([info.id for info in omnigym.list_envs(family="MCU")]))
def test_the_oracle_agent_solves_every_registered_id(env_id):
    env = omnigym.make(env_id)
    agent = omnigym.make_agent("oracle", env=env, env_id=env_id)
    for seed in (0, 1):
        agent.reset(seed)
        observation, info = env.reset(seed=seed)
        terminated = truncated = False
        while not (terminated or truncated):
            observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
        assert info["success"] is True and info["normalized_score"] == 100.0


def test_random_env_draws_tasks_from_the_seed_within_its_filter():
    env = omnigym.make("MCU/Random-v0", category="Combat")
    drawn = [env.reset(seed=seed)[1]["task"] for seed in range(8)]
    assert drawn == [env.reset(seed=seed)[1]["task"] for seed in range(8)]
    assert len(set(drawn)) > 1
    assert all(omnigym.envs.mcu.tasks.index()[name]["category"] == "Combat" for name in drawn)
    observation, info = env.reset(seed=3)
    assert observation["task"] == env.unwrapped.task.text and info["category"] == "Combat"


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"category": "Diving"}, "category='Diving'"),
        ({"subcategory": "Climb", "category": "Combat"}, "subcategory='Climb'"),
    ],
)
def test_random_env_rejects_filters_that_match_nothing(kwargs, name):
    with pytest.raises(ValueError, match=name):
        omnigym.make("MCU/Random-v0", **kwargs)


def test_random_composite_env_draws_two_tasks_and_an_operator_from_the_seed():
    env = omnigym.make("MCU/Random-v0", composite=True, category="Tool-use")
    drawn = [env.reset(seed=seed)[1]["composition"] for seed in range(12)]
    assert drawn == [env.reset(seed=seed)[1]["composition"] for seed in range(12)]
    assert {tree["op"] for tree in drawn} == {"and", "or", "then"}
    index = omnigym.envs.mcu.tasks.index()
    for tree in drawn:
        names = [leaf["task"] for leaf in tree["parts"]]
        assert len(set(names)) == 2 and all(index[n]["category"] == "Tool-use" for n in names)


def test_random_composite_env_redraws_pairs_whose_requirements_conflict(monkeypatch):
    from omnigym.envs.mcu import compose_env

    real = compose_env.load_task

    def load(name):
        task = real(name)
        return dataclasses.replace(task, requires={"time": "day"}) if name == "eat_bread" else task

    monkeypatch.setattr(compose_env, "load_task", load)
    env = omnigym.make("MCU/Random-v0", composite=True).unwrapped
    env.names = ["sleep_in_bed", "eat_bread", "drop_diamond"]
    pairs = set()
    for seed in range(20):
        env.reset(seed=seed)
        pairs.add(frozenset(part.name for part in env.parts))
    assert pairs == {
        frozenset({"sleep_in_bed", "drop_diamond"}),
        frozenset({"eat_bread", "drop_diamond"}),
    }
