"""Composition: the operator precedence, the joined instruction, the merged scene, requires
conflicts, and success and progress on scripted traces."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.envs.mcu.compose import merge, parse
from omnigym.envs.mcu.compose_env import ComposeEnv
from tests.mcu.helpers import make_task


def _drop_task(name, item, count, init=None, **fields):
    success = f"dropped({item}) >= {count}"
    marks = [{"when": f"dropped({item}) >= {k}", "weight": 1 / count} for k in range(1, count + 1)]
    return make_task(
        init or [f"give @s {item} {count}"],
        success,
        name=name,
        category="Motion",
        subcategory="Drop Items",
        text=f"Drop {count} {item}.",
        milestones=marks,
        oracle={"solver": "drop", "item": item, "count": count},
        **fields,
    )


def _leaf(name):
    return {"task": name}


def test_then_splits_stages_and_and_binds_tighter_than_or():
    assert parse(["a", "b", "c"], ["and", "or"]) == {
        "op": "or",
        "parts": [{"op": "and", "parts": [_leaf("a"), _leaf("b")]}, _leaf("c")],
    }
    assert parse(["a", "b", "c"], ["or", "and"]) == {
        "op": "or",
        "parts": [_leaf("a"), {"op": "and", "parts": [_leaf("b"), _leaf("c")]}],
    }
    assert parse(["a", "b", "c", "d"], ["and", "then", "or"]) == {
        "op": "then",
        "parts": [
            {"op": "and", "parts": [_leaf("a"), _leaf("b")]},
            {"op": "or", "parts": [_leaf("c"), _leaf("d")]},
        ],
    }
    assert parse(["a"], []) == _leaf("a")


@pytest.mark.parametrize(
    ("names", "ops", "message"),
    [(["a", "b"], [], "ops"), (["a", "b"], ["xor"], "ops"), (["a", "a"], ["and"], "tasks")],
)
def test_malformed_compositions_raise_naming_the_argument(names, ops, message):
    with pytest.raises(ValueError, match=message):
        parse(names, ops)


def test_sleep_in_bed_and_combat_zombies_builds_one_scene():
    env = ComposeEnv(["sleep_in_bed", "combat_zombies"], ["and"])
    observation, info = env.reset(seed=0)
    assert observation["task"] == "Sleep in the white bed and kill the zombie."
    assert info["composition"] == {
        "op": "and",
        "parts": [_leaf("sleep_in_bed"), _leaf("combat_zombies")],
    }
    world = env.world
    assert world.cells_of("white_bed", 40) and [m.kind.name for m in world.mobs] == ["zombie"]
    assert world.count("diamond_sword") == 1 and not world.is_day()
    assert not info["success"] and info["progress"] == 0.0


def test_the_instruction_joins_parts_and_writes_then_with_a_comma():
    env = ComposeEnv(["collect_wood", "craft_to_clock", "find_diamond"], ["then", "or"])
    assert env.task.text == "Collect wood, then craft a clock or find a diamond and go next to it."


def test_gives_are_summed_for_and_and_then_and_maximal_for_or():
    a, b = _drop_task("drop_a", "stick", 3), _drop_task("drop_b", "stick", 5)
    rng = np.random.default_rng(0)
    for op, expected in (("and", 8), ("then", 8), ("or", 5)):
        task = merge([a, b], parse(["drop_a", "drop_b"], [op]), [op], rng)
        gives = [c.args for c in task.init if c.verb == "give"]
        assert gives == [("stick", expected)], op


def test_placements_move_by_seeded_offsets_without_overlap():
    a = _drop_task("drop_a", "stick", 1, ["give @s stick 1", "setblock ~3 ~0 ~5 stone"])
    b = _drop_task("drop_b", "dirt", 1, ["give @s dirt 1", "setblock ~3 ~0 ~5 stone"])
    tree = parse(["drop_a", "drop_b"], ["and"])

    def spots(seed):
        task = merge([a, b], tree, ["and"], np.random.default_rng(seed))
        return [tuple(v.value for v in c.args[0]) for c in task.init if c.verb == "setblock"]

    first = spots(0)
    assert first == spots(0) and len(first) == 2 and first[0] != first[1]
    (x0, _, z0), (x1, _, z1) = first
    assert max(abs(x0 - x1), abs(z0 - z1)) >= 2
    assert all(np.hypot(x, z) >= np.hypot(3, 5) for x, _, z in first)
    assert any(spots(seed) != first for seed in range(1, 6))


def test_a_day_night_conflict_raises_naming_both_tasks():
    day = _drop_task("drop_by_day", "stick", 1, requires={"time": "day"})
    with pytest.raises(ValueError, match="drop_by_day.*sleep_in_bed|sleep_in_bed.*drop_by_day"):
        ComposeEnv([day, "sleep_in_bed"], ["and"])


def _trace(op, commands):
    a = _drop_task("drop_a", "stick", 2)
    b = _drop_task("drop_b", "dirt", 1, ["give @s dirt 2"])
    env = ComposeEnv([a, b], [op])
    _, info = env.reset(seed=0)
    progress, total = [info["progress"]], 0.0
    for command in commands:
        _, reward, terminated, _, info = env.step(command)
        total += reward
        progress.append(info["progress"])
    assert total == pytest.approx(progress[-1])
    return progress, info


def test_and_succeeds_when_all_parts_have_and_progress_is_their_mean():
    progress, info = _trace("and", ["drop stick", "drop dirt", "drop stick"])
    assert progress == pytest.approx([0.0, 0.25, 0.75, 1.0]) and info["success"]
    assert info["metrics"]["task_progress"] == 10.0


def test_or_succeeds_when_any_part_has_and_progress_is_the_maximum():
    progress, info = _trace("or", ["drop stick", "drop dirt"])
    assert progress == pytest.approx([0.0, 0.5, 1.0]) and info["success"]


def test_then_counts_stages_in_order_and_acts_before_a_stage_do_not_count_for_it():
    progress, info = _trace("then", ["drop dirt", "drop stick", "drop stick", "drop dirt"])
    # the early dirt is spent before its stage; the stage needs a new drop
    assert progress == pytest.approx([0.0, 0.0, 0.25, 0.5, 1.0]) and info["success"]


def test_an_unfinished_composition_scores_its_progress():
    a, b = _drop_task("drop_a", "stick", 2), _drop_task("drop_b", "dirt", 1)
    env = ComposeEnv([a, b], ["and"])
    env.reset(seed=0)
    env.step("drop stick")
    info = {}
    for _ in range(a.max_steps - 1):
        *_, truncated, info = env.step("noop")
    assert truncated and info["metrics"]["task_progress"] == 2.5
    assert np.isnan(info["metrics"]["task_completion_efficiency"])


@pytest.mark.parametrize("level", ["simple", "hard"])
def test_compose_passes_check_env(level):
    env = omnigym.make(
        "MCU/Compose-v0", tasks=["sleep_in_bed", "combat_zombies"], ops=["and"], difficulty=level
    )
    check_env(env.unwrapped, skip_render_check=True)
    _, info = env.reset(seed=0)
    assert (info["perturbations"] != []) == (level == "hard")


CURATED = [
    info.id
    for info in omnigym.list_envs(family="MCU")
    if info.entry_point.endswith("ComposeEnv") and info.kwargs.get("tasks")
]


def test_twenty_curated_compositions_are_registered():
    assert len(CURATED) == 20


@pytest.mark.parametrize("env_id", CURATED)
def test_the_oracle_solves_each_curated_composition(env_id):
    env = omnigym.make(env_id)
    agent = omnigym.make_agent("oracle", env=env, env_id=env_id)
    agent.reset(0)
    observation, info = env.reset(seed=0)
    terminated = truncated = False
    while not (terminated or truncated):
        observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
    assert info["success"], env_id
