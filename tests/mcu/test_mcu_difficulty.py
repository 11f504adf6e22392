"""Difficulty levels: each hard transform changes the scene in the way info["perturbations"]
records, the same seed gives the same perturbations, and medium applies one or two."""

import math

import numpy as np
import pytest

import omnigym
from omnigym.envs.mcu import difficulty, oracles
from omnigym.envs.mcu.env import AtomicEnv
from omnigym.envs.mcu.evaluation import relevant
from omnigym.envs.mcu.registries import registry
from omnigym.envs.mcu.tasks import list_tasks, load_task
from omnigym.envs.mcu.world import GROUND_BLOCKS


def _pair(task, seed=0):
    simple, hard = AtomicEnv(task), AtomicEnv(task, difficulty="hard")
    simple.reset(seed=seed)
    _, info = hard.reset(seed=seed)
    return simple.unwrapped.world, hard.unwrapped.world, info


def _inventory(world):
    counts = {}
    for content in world.player.inventory.slots:
        if content is not None:
            counts[content[0]] = counts.get(content[0], 0) + content[1]
    return counts


def _scene_blocks(world):
    """Non-ground blocks of the arena above the ground: node -> block."""
    return {
        (x, y, z): world.block((x, y, z))
        for x in range(-20, 21)
        for y in range(5, 10)
        for z in range(-20, 21)
        if world.block((x, y, z)) not in ("air", "ignore", *GROUND_BLOCKS)
    }


def test_hard_combat_applies_every_transform_that_fits_it():
    _, _, info = _pair("combat_spiders")
    assert info["difficulty"] == "hard"
    assert info["perturbations"][:2] == ["fewer_resources", "distractor_items"]
    assert info["perturbations"][2] in ("night", "thunder", "blindness")
    assert info["perturbations"][3:] == ["hostile_mobs", "displaced_target"]


def test_fewer_resources_downgrades_the_tool_one_tier_and_cuts_spare_food():
    simple, hard, _ = _pair("combat_spiders")
    assert _inventory(simple)["diamond_sword"] == 1 and "diamond_sword" not in _inventory(hard)
    assert _inventory(hard)["iron_sword"] == 1
    assert _inventory(simple)["cooked_beef"] == 4 and _inventory(hard)["cooked_beef"] == 1


def test_a_tool_is_not_downgraded_below_what_the_task_needs_to_harvest():
    _, hard, info = _pair("mine_iron_ore")
    assert "fewer_resources" not in info["perturbations"]
    assert _inventory(hard)["stone_pickaxe"] == 1


def test_distractors_are_fifteen_to_twenty_five_stacks_the_task_does_not_use():
    simple, hard, _ = _pair("craft_to_clock")
    extra = set(_inventory(hard)) - set(_inventory(simple))
    assert 15 <= len(extra) <= 25
    assert not extra & relevant(load_task("craft_to_clock"))
    assert all(_inventory(simple)[k] == _inventory(hard)[k] for k in _inventory(simple))


@pytest.mark.parametrize("seed", range(4))
def test_darkness_shrinks_the_visibility_radius(seed):
    simple, hard, info = _pair("find_diamond", seed)
    shade = info["perturbations"][1]
    assert shade in ("night", "thunder", "blindness")
    assert hard.visibility() < simple.visibility()
    assert {
        "night": not hard.is_day(),
        "thunder": hard.weather == "thunder",
        "blindness": "blindness" in hard.effects,
    }[shade]


def test_darkness_on_a_night_task_is_thunder_or_blindness():
    for seed in range(4):
        _, hard, info = _pair("sleep_in_bed", seed)
        assert not hard.is_day() and info["perturbations"][1] in ("thunder", "blindness")


def test_hostile_mobs_join_a_fight_against_a_hostile_mob():
    simple, hard, _ = _pair("combat_spiders")
    assert [m.kind.name for m in simple.mobs] == ["spider"]
    extra = [m for m in hard.mobs if m.kind.name != "spider"]
    assert 1 <= len(extra) <= 2 and all(m.hostile for m in extra)
    assert all(max(abs(m.position[0]), abs(m.position[2])) >= 8 for m in extra)


def test_decoys_are_look_alike_blocks_near_the_target():
    simple, hard, info = _pair("mine_iron_ore")
    assert "decoys" in info["perturbations"]
    before, after = _scene_blocks(simple), _scene_blocks(hard)
    decoys = {cell: block for cell, block in after.items() if block != "iron_ore"}
    assert set(before.values()) == {"iron_ore"} and 2 <= len(decoys) <= 4
    reg = registry()
    assert all(reg.blocks[b].tool == "pickaxe" for b in decoys.values())
    (ore,) = [cell for cell, block in after.items() if block == "iron_ore"]
    assert all(max(abs(c[0] - ore[0]), abs(c[2] - ore[2])) <= 4 for c in decoys)


def test_decoy_animals_join_a_hunt():
    simple, hard, info = _pair("hunt_cow")
    assert "decoys" in info["perturbations"]
    others = [m.kind.name for m in hard.mobs if m.kind.name != "cow"]
    assert [m.kind.name for m in simple.mobs] == ["cow"] and 1 <= len(others) <= 2
    assert all(registry().mobs[name].behaviour == "passive" for name in others)


@pytest.mark.parametrize("task", ["find_diamond", "combat_spiders", "sleep_in_bed"])
def test_the_target_is_displaced_five_to_ten_nodes_and_never_closer(task):
    simple, hard, info = _pair(task)
    assert "displaced_target" in info["perturbations"]
    if simple.mobs:
        before, after = simple.mobs[0].position, hard.mobs[0].position
    else:
        (before,) = [c for c, b in _scene_blocks(simple).items()]
        (after,) = [c for c, b in _scene_blocks(hard).items() if b == simple.block(before)]
    shift = math.hypot(after[0] - before[0], after[2] - before[2])
    assert 5 - 0.5 <= shift <= 10 + 0.5
    assert math.hypot(after[0], after[2]) >= math.hypot(before[0], before[2])


def test_tasks_without_a_scene_get_only_the_transforms_that_fit():
    assert difficulty.applicable(load_task("build_pillar"), registry()) == [
        "distractor_items",
        "darkness",
    ]
    _, _, info = _pair("build_pillar")
    assert info["perturbations"][0] == "distractor_items" and len(info["perturbations"]) == 2


def test_the_same_seed_gives_the_same_perturbations_and_scene():
    for level in ("medium", "hard"):
        first = AtomicEnv("hunt_cow", difficulty=level)
        second = AtomicEnv("hunt_cow", difficulty=level)
        for seed in range(5):
            obs_a, info_a = first.reset(seed=seed)
            obs_b, info_b = second.reset(seed=seed)
            assert info_a["perturbations"] == info_b["perturbations"]
            assert obs_a["text"] == obs_b["text"]
            assert np.array_equal(obs_a["inventory"], obs_b["inventory"])


def test_medium_applies_one_or_two_transforms_drawn_from_the_seed():
    env = AtomicEnv("combat_spiders", difficulty="medium")
    drawn = [tuple(env.reset(seed=seed)[1]["perturbations"]) for seed in range(12)]
    assert all(1 <= len(d) <= 2 for d in drawn) and len(set(drawn)) > 2


def test_simple_applies_nothing():
    _, info = AtomicEnv("combat_spiders").reset(seed=0)
    assert info["perturbations"] == [] and info["difficulty"] == "simple"


@pytest.mark.parametrize("entry", ["AtomicEnv", "Random"])
def test_an_unknown_difficulty_raises_naming_difficulty(entry):
    with pytest.raises(ValueError, match="difficulty"):
        if entry == "AtomicEnv":
            AtomicEnv("combat_spiders", difficulty="extreme")
        else:
            omnigym.make("MCU/Random-v0", difficulty="extreme")


def test_every_hard_variant_of_a_seeded_sample_is_oracle_solvable():
    names = list_tasks()
    for i in np.random.default_rng(1).choice(len(names), size=20, replace=False):
        result = oracles.run(AtomicEnv(names[i], difficulty="hard"), 0)
        assert result["success"], (names[i], result["reason"])


def test_the_hunting_oracle_waits_out_a_decoy_standing_between_it_and_its_prey():
    result = oracles.run(AtomicEnv("hunt_pig_x2_with_diamond_sword", difficulty="hard"), 0)
    assert result["success"], result["reason"]


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("brew_night_vision_potion", {"distractor_items", "decoys", "displaced_target"}),
        ("sell_wheat", {"distractor_items", "decoys", "displaced_target"}),
        ("repair_iron_pickaxe", {"distractor_items", "decoys", "displaced_target"}),
        ("tame_wolf", {"distractor_items", "decoys", "displaced_target"}),
        ("find_desert", {"distractor_items", "decoys", "displaced_target"}),
        ("dive", {"distractor_items", "displaced_target"}),
        ("plant_carrot_with_iron_hoe", {"fewer_resources", "distractor_items"}),
        ("build_house", {"distractor_items"}),
        ("drink_healing_potion", {"distractor_items"}),
    ],
)
def test_hard_variants_of_the_new_families_get_the_transforms_that_fit_them(task, expected):
    env = AtomicEnv(task, difficulty="hard")
    _, info = env.reset(seed=0)
    darkness = {"night", "thunder", "blindness"}
    applied = set(info["perturbations"])
    assert applied - darkness == expected and len(applied & darkness) == 1
    if "displaced_target" in expected:
        simple = AtomicEnv(task)
        simple.reset(seed=0)
        assert simple.world.grid.content.tobytes() != env.world.grid.content.tobytes() or [
            m.position for m in simple.world.mobs
        ] != [m.position for m in env.world.mobs]
