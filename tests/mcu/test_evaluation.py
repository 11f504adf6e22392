"""MCU's six dimensions: exact values on hand-built episode logs, and on real oracle episodes."""

import math

import pytest

from omnigym.envs.mcu import oracles
from omnigym.envs.mcu.env import AtomicEnv
from omnigym.envs.mcu.episode_log import Act, StepRecord
from omnigym.envs.mcu.evaluation import (
    DIMENSIONS,
    action_control,
    band,
    creative_attempts,
    error_recognition_and_correction,
    evaluate,
    material_selection_and_usage,
    relevant,
    task_completion_efficiency,
    task_progress,
)

from .helpers import make_env, make_task


def step(*acts, invalid=False, effect=True, reached=(False,), success=False, command="cmd"):
    return StepRecord(command, invalid, effect, tuple(acts), tuple(reached), success)


def mine(block, cell=(0, 5, 1), tool=None, harvested=True, inventory=()):
    return Act("mine", block, cell, tool, harvested, inventory=tuple(inventory))


def place(block, cell):
    return Act("place", block, cell, consumed=((block, 1),))


def attack(mob, tool, high_ground=False):
    return Act("attack", mob, tool=tool, high_ground=high_ground, inventory=(tool,))


MINE_STONE = make_task(relevant={"blocks": ["stone"]})
STAGED = make_task(
    success="mined(stone) >= 2",
    milestones=[
        {"when": "mined(stone) >= 1", "weight": 0.3},
        {"when": "mined(stone) >= 2", "weight": 0.7},
    ],
)
FIND = make_task(success="near(diamond_ore, 2)", category="Find & Navigation")
BUILD = make_task(
    ["give @s dirt 5"],
    success="structure(pillar, 5)",
    category="Build",
    subcategory="Decorative Art",
    relevant={"items": ["dirt"], "blocks": ["dirt"]},
)
COMBAT = make_task(
    ["replaceitem entity @s weapon.mainhand iron_sword"],
    success="killed(zombie) >= 1",
    category="Combat",
    subcategory="Fight Mobs",
    relevant={"items": ["iron_sword"], "mobs": ["zombie"]},
)
CRAFT_CLOCK = make_task(
    ["give @s gold_ingot 4", "give @s redstone 1"],
    success="crafted(clock) >= 1",
    category="Craft Tools",
    subcategory="Craft Items",
    relevant={"items": ["clock", "gold_ingot", "redstone"]},
)


@pytest.mark.parametrize(
    ("score", "name"),
    [
        (0.0, "unrelated"),
        (0.4, "unrelated"),
        (0.5, "barely"),
        (3.4, "barely"),
        (4.0, "partially"),
        (6.4, "partially"),
        (7.0, "mostly"),
        (9.4, "mostly"),
        (9.5, "completely"),
        (10.0, "completely"),
        (None, None),
    ],
)
def test_band_is_mcus_band_of_the_rounded_score(score, name):
    assert band(score) == name


def test_task_progress_is_the_weight_of_the_milestones_reached_and_ten_on_success():
    assert task_progress([], STAGED) == 0.0
    assert task_progress([step(reached=(True, False))], STAGED) == 3.0
    assert task_progress([step(reached=(False, True))], STAGED) == 7.0
    assert task_progress([step(reached=(False, False), success=True)], STAGED) == 10.0


def test_action_control_counts_invalid_idle_and_unrelated_commands_as_wasted():
    records = [
        step(invalid=True, effect=False),
        step(effect=False, command="noop"),
        step(mine("grass_block")),
        step(place("dirt", (0, 5, 1))),
        step(attack("cow", None)),
        step(mine("stone")),
        *[step(command="move forward")] * 4,
    ]
    assert action_control(records, relevant(MINE_STONE)) == 5.0
    assert action_control([], relevant(MINE_STONE)) == 0.0


def test_error_recognition_without_errors_is_five_on_success_and_zero_on_failure():
    records = [step(mine("stone"), success=True)]
    assert error_recognition_and_correction(records, MINE_STONE, success=True) == 5.0
    assert error_recognition_and_correction(records[:0], MINE_STONE, success=False) == 0.0


def test_a_wrong_block_mined_then_the_target_mined_is_a_corrected_error():
    records = [step(mine("dirt")), step(mine("stone"))]
    assert error_recognition_and_correction(records, MINE_STONE, success=True) == 10.0
    late = [step(mine("stone")), step(mine("dirt"))]
    assert error_recognition_and_correction(late, MINE_STONE, success=True) == 0.0


def test_a_misplaced_block_removed_corrects_it_and_mining_it_is_no_new_error():
    records = [
        step(mine("dirt")),  # wrong block, never followed by stone: uncorrected
        step(place("oak_planks", (3, 5, 3))),  # misplaced ...
        step(mine("oak_planks", cell=(3, 5, 3))),  # ... and removed
    ]
    assert error_recognition_and_correction(records, MINE_STONE, success=False) == 5.0


def test_a_too_low_tool_tier_replaced_by_a_fitting_one_is_a_corrected_error():
    task = make_task(success="mined(iron_ore) >= 1")
    weak = mine("iron_ore", tool="wooden_pickaxe", harvested=False)
    strong = mine("iron_ore", cell=(1, 5, 1), tool="stone_pickaxe")
    assert error_recognition_and_correction([step(weak), step(strong)], task, True) == 10.0
    assert error_recognition_and_correction([step(weak)], task, False) == 0.0
    both = [step(weak), step(mine("dirt"))]  # the tier error and a wrong block: 0 of 2
    assert error_recognition_and_correction(both, task, False) == 0.0


def test_creative_attempts_of_a_build_rewards_decorative_kinds_and_symmetry():
    records = [
        step(place("dirt", (0, 5, 0))),
        step(place("dirt", (2, 5, 0))),
        step(place("oak_planks", (1, 5, 0))),
        step(place("glass", (1, 6, 0))),
        step(place("bricks", (5, 5, 0))),
        step(mine("bricks", cell=(5, 5, 0))),  # removed again: not part of the structure
    ]
    # d = 2 (oak_planks, glass), sym = 1 across x: 10 * (0.5 * 2/3 + 0.5) = 8.33
    assert creative_attempts(records, BUILD) == 8.3
    lone = [step(place("dirt", (0, 5 + h, 0))) for h in range(5)]
    assert creative_attempts(lone, BUILD) == 0.0  # a lone column: no width to mirror
    lopsided = [step(place("dirt", (0, 5, 0))), step(place("glass", (1, 5, 0)))]
    assert creative_attempts(lopsided, BUILD) == 1.7  # d = 1, sym = 0


def test_creative_attempts_in_combat_rewards_weapons_and_built_high_ground():
    sword, axe = attack("zombie", "iron_sword"), attack("zombie", "iron_axe")
    assert creative_attempts([step(sword)], COMBAT) == 0.0
    assert creative_attempts([step(sword), step(axe)], COMBAT) == 5.0
    high = attack("zombie", "iron_sword", high_ground=True)
    assert creative_attempts([step(high)], COMBAT) == 5.0
    assert creative_attempts([step(high), step(axe)], COMBAT) == 10.0
    assert creative_attempts([step(attack("zombie", None))], COMBAT) == 0.0


def test_creative_attempts_of_other_categories_is_zero():
    assert creative_attempts([step(place("glass", (0, 5, 0)))], MINE_STONE) == 0.0


def test_efficiency_scales_progress_by_the_oracle_step_ratio():
    assert task_completion_efficiency(10.0, 10, 5) == 5.0
    assert task_completion_efficiency(10.0, 4, 5) == 10.0
    assert task_completion_efficiency(6.0, 12, 6) == 3.0
    assert task_completion_efficiency(10.0, 0, 5) == 0.0
    assert task_completion_efficiency(10.0, 5, None) is None


def test_material_is_null_when_the_task_needs_no_craft_mine_attack_or_place():
    assert material_selection_and_usage([step(mine("stone"))], FIND) is None


def test_material_scores_the_best_held_tool_and_zero_without_any_act():
    held = ("stone_pickaxe", "wooden_pickaxe")
    weak = mine("stone", tool="wooden_pickaxe", inventory=held)
    best = mine("stone", tool="stone_pickaxe", inventory=held)
    assert material_selection_and_usage([step(weak), step(best)], MINE_STONE) == 5.0
    assert material_selection_and_usage([step(mine("stone"))], MINE_STONE) == 10.0  # hand: best
    assert material_selection_and_usage([step(mine("dirt"))], MINE_STONE) == 0.0  # not a target
    assert material_selection_and_usage([step(command="noop")], MINE_STONE) == 0.0


def test_material_counts_weapons_and_placements():
    records = [step(Act("attack", "zombie", tool=None, inventory=("iron_sword",)))]
    assert material_selection_and_usage(records, COMBAT) == 0.0
    records.append(step(attack("zombie", "iron_sword")))
    assert material_selection_and_usage(records, COMBAT) == 5.0
    placed = [step(place("dirt", (0, 5, 0))), step(place("glass", (1, 5, 0)))]
    assert material_selection_and_usage(placed, BUILD) == 5.0


def test_material_discounts_given_materials_spent_on_unrelated_crafts_or_dropped():
    clock = Act("craft", "clock", consumed=(("gold_ingot", 4), ("redstone", 1)))
    block = Act("craft", "gold_block", consumed=(("gold_ingot", 9),))
    assert material_selection_and_usage([step(clock)], CRAFT_CLOCK) == 10.0
    # half the crafts fit, and one of the two given materials was overused: 10 * 0.5 * 0.5
    assert material_selection_and_usage([step(block), step(clock)], CRAFT_CLOCK) == 2.5
    dropped = Act("drop", "redstone", consumed=(("redstone", 1),))
    assert material_selection_and_usage([step(clock), step(dropped)], CRAFT_CLOCK) == 5.0


SELL_WHEAT = make_task(
    ["give @s wheat 20"],
    success="traded(wheat) >= 1",
    category="Trade",
    subcategory="Sell Goods",
    relevant={"items": ["wheat", "emerald"], "mobs": ["farmer"]},
)
BREW = make_task(
    ["give @s nether_wart 1", "give @s water_bottle 1", "give @s sugar 1"],
    success="brewed(awkward_potion) >= 1",
    category="Craft Tools",
    subcategory="Brew Potions",
    relevant={"items": ["awkward_potion", "nether_wart", "water_bottle"]},
)


def test_material_counts_brewing_and_trading_acts():
    sold = Act("trade", "wheat", consumed=(("wheat", 20),))
    wrong = Act("trade", "bread", consumed=(("emerald", 1),))
    assert material_selection_and_usage([step(sold)], SELL_WHEAT) == 10.0
    assert material_selection_and_usage([step(wrong), step(sold)], SELL_WHEAT) == 5.0
    awkward = Act("brew", "awkward_potion", consumed=(("nether_wart", 1), ("water_bottle", 1)))
    swift = Act("brew", "swiftness_potion", consumed=(("sugar", 1), ("awkward_potion", 1)))
    assert material_selection_and_usage([step(awkward)], BREW) == 10.0
    # one of two brews fits, and one of the three given materials (sugar) was overused
    assert material_selection_and_usage([step(awkward), step(swift)], BREW) == 3.3
    assert material_selection_and_usage([step(command="noop")], BREW) == 0.0


def test_evaluate_returns_the_six_dimensions():
    scores = evaluate([step(mine("stone"), reached=(True,), success=True)], MINE_STONE, 1)
    assert tuple(scores) == DIMENSIONS
    assert scores == {
        "task_progress": 10.0,
        "action_control": 10.0,
        "error_recognition_and_correction": 5.0,
        "creative_attempts": 0.0,
        "task_completion_efficiency": 10.0,
        "material_selection_and_usage": 10.0,
    }


def test_the_world_logs_acts_with_tool_harvest_and_inventory():
    env = make_env(["setblock ~0 ~1 ~1 stone", "give @s dirt 2"])
    env.step("mine")
    (act,) = env.records[-1].acts
    assert (act.kind, act.name, act.cell, act.tool, act.harvested) == (
        "mine",
        "stone",
        (0, 6, 1),
        "dirt",  # the held stack, not a tool: the hand's speed, no drop
        False,
    )
    assert act.inventory == ("dirt",)
    env.step("look down")
    env.step("look down")
    env.step("place dirt")
    assert env.records[-1].acts == (Act("place", "dirt", (0, 5, 0), consumed=(("dirt", 1),)),)
    env.step("noop")
    assert [r.effect for r in env.records] == [True, True, True, True, False]


def test_a_hit_from_a_built_pillar_is_high_ground():
    env = make_env(
        ["replaceitem entity @s weapon.mainhand iron_sword", "give @s dirt 2"],
        success="killed(zombie) >= 1",
    )
    env.step("look down")
    env.step("look down")
    env.step("place dirt")
    env.step("look ahead")
    env.world.summon("zombie", (0, 5, 1))
    env.step("attack")
    (act,) = env.records[-1].acts
    assert act.kind == "attack" and act.tool == "iron_sword" and act.high_ground


@pytest.mark.parametrize("name", ["combat_spiders", "craft_to_clock", "build_pillar"])
def test_an_oracle_episode_scores_ten_on_progress_and_efficiency_on_its_own_seed(name):
    env = AtomicEnv(name)
    env.reset(seed=0)
    for command in oracles.solve(env.world, env.task.oracle):
        _, _, terminated, truncated, info = env.step(command)
        if terminated or truncated:
            break
    assert info["success"] is True and info["normalized_score"] == 100.0
    metrics = info["metrics"]
    assert set(metrics) == {*DIMENSIONS, "steps", "ticks", "oracle_steps", "invalid_commands"}
    assert metrics["task_progress"] == 10.0
    assert metrics["task_completion_efficiency"] == 10.0
    assert metrics["oracle_steps"] == metrics["steps"] == len(env.records)


def test_a_task_outside_the_index_reports_nan_where_a_score_is_undefined():
    env = make_env(success="near(diamond_ore, 2)", max_steps=2)
    env.step("fly")
    *_, truncated, info = env.step("noop")
    assert truncated and info["normalized_score"] == 0.0
    metrics = info["metrics"]
    assert math.isnan(metrics["oracle_steps"])
    assert math.isnan(metrics["task_completion_efficiency"])
    assert math.isnan(metrics["material_selection_and_usage"])
    assert metrics["action_control"] == 0.0 and metrics["invalid_commands"] == 1.0
