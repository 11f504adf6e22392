"""The game rules behind the commands: digging, tools, crafting, smelting, movement, sleep."""

import pytest

from omnigym.envs.mcu.commands import InvalidCommand, execute
from omnigym.envs.mcu.registries import registry

from .helpers import bare_world


def test_dig_time_follows_minecraft_hardness_and_tool_speed():
    reg = registry()
    stone, obsidian, log = reg.blocks["stone"], reg.blocks["obsidian"], reg.blocks["oak_log"]
    assert reg.dig_ticks(stone, "wooden_pickaxe") == 5  # 1.5 x 1.5 / 2 = 1.125 s
    assert reg.dig_ticks(stone, None) == 30  # 1.5 x 5 s by hand, no drop
    assert reg.dig_ticks(obsidian, "diamond_pickaxe") == 38  # 50 x 1.5 / 8 = 9.375 s
    assert reg.dig_ticks(log, None) == 12


def test_mining_below_the_tool_tier_takes_the_block_but_drops_nothing():
    world = bare_world()
    world.grid.set(0, 5, 1, "iron_ore")
    world.give("wooden_pickaxe")
    world.wield("wooden_pickaxe")
    world.look(45)
    execute(world, "mine")
    assert world.block((0, 5, 1)) == "air" and world.events["mined", "iron_ore"] == 1
    assert world.count("iron_ore") == 0
    world.grid.set(0, 5, 1, "iron_ore")
    world.give("stone_pickaxe")
    execute(world, "equip stone_pickaxe")
    execute(world, "mine")
    assert world.count("iron_ore") == 1


def test_a_tool_wears_with_use_and_breaks():
    world = bare_world()
    world.give("golden_shovel")
    world.wield("golden_shovel")
    selected = world.player.inventory.selected
    assert world.wear[selected] == 32
    world.wear[selected] = 1
    world.look(90)
    execute(world, "mine")
    assert world.count("golden_shovel") == 0 and "golden_shovel broke" in world.log


def test_three_by_three_recipes_need_a_crafting_table_within_four_nodes():
    world = bare_world()
    world.give("cobblestone", 8)
    world.give("oak_log", 1)
    with pytest.raises(InvalidCommand, match="crafting table"):
        execute(world, "craft furnace")
    execute(world, "craft oak planks 4")
    assert world.count("oak_planks") == 4
    world.grid.set(3, 5, 2, "crafting_table")
    execute(world, "craft furnace")
    assert world.count("furnace") == 1 and world.count("cobblestone") == 0
    assert world.events["crafted", "furnace"] == 1


def test_tagged_ingredients_take_any_member():
    world = bare_world()
    world.give("birch_planks", 1)
    world.give("spruce_planks", 1)
    execute(world, "craft stick")
    assert world.count("stick") == 4
    assert world.count("birch_planks") + world.count("spruce_planks") == 0


def test_smelting_needs_a_furnace_and_fuel_and_takes_ten_seconds_per_item():
    world = bare_world()
    world.give("iron_ore", 2)
    with pytest.raises(InvalidCommand, match="furnace"):
        execute(world, "smelt iron_ore 2")
    world.grid.set(1, 5, 1, "furnace")
    with pytest.raises(InvalidCommand, match="fuel"):
        execute(world, "smelt iron_ingot 2")
    world.give("oak_planks", 2)
    execute(world, "smelt iron_ingot 2")
    assert world.count("iron_ingot") == 2 and world.count("oak_planks") == 0
    assert world.ticks == 80 and world.events["smelted", "iron_ingot"] == 2


def test_walking_steps_up_one_node_and_is_blocked_by_two():
    world = bare_world()
    world.grid.set(0, 5, 1, "dirt")
    execute(world, "move forward")
    assert world.position == (0, 6, 1)
    world.grid.fill((0, 6, 2), (0, 7, 2), "stone")
    with pytest.raises(InvalidCommand, match="blocked"):
        execute(world, "move forward")


def test_falling_more_than_three_nodes_hurts():
    world = bare_world()
    world.teleport((0, 11, 0))
    world.fall()
    assert world.position == (0, 5, 0) and world.health == 17.0


def test_strafing_is_relative_to_facing():
    world = bare_world()
    execute(world, "move left")
    assert world.position == (-1, 5, 0)
    execute(world, "turn around")
    execute(world, "move right 2")
    assert world.position == (-3, 5, 0)


def test_sleep_needs_night_a_bed_in_reach_and_no_monster_near():
    world = bare_world()
    world.grid.set(0, 5, 2, "red_bed")
    with pytest.raises(InvalidCommand, match="night"):
        execute(world, "sleep")
    world.time = 15000
    world.summon("zombie", (6, 5, 0))
    with pytest.raises(InvalidCommand, match="monsters"):
        execute(world, "sleep")
    world.mobs.clear()
    execute(world, "sleep")
    assert world.is_day() and world.events["slept_in", "red_bed"] == 1


def test_hostile_mobs_chase_and_hit_and_armour_softens_the_blow():
    world = bare_world()
    world.summon("zombie", (4, 5, 0))
    for _ in range(12):
        world.tick()
    assert world.mobs[0].position == (1, 5, 0) and world.health < 20
    armoured = bare_world()
    armoured.armor["chestplate"] = ("diamond_chestplate", 363)
    armoured.hurt(10, "test")
    assert armoured.health == pytest.approx(20 - 10 * (1 - 0.32))


def test_attack_kills_and_collects_the_drops():
    world = bare_world()
    world.summon("chicken", (1, 5, 1))
    world.give("iron_sword")
    world.wield("iron_sword")
    execute(world, "attack")
    assert not world.mobs and world.events["killed", "chicken"] == 1
    assert world.count("feather") == 1 and world.count("chicken") == 1
