"""Brewing, enchanting and the anvil: stations in range, costs, chains and outcomes."""

import pytest

from omnigym.envs.mcu import init_commands, observe
from omnigym.envs.mcu.commands import InvalidCommand, execute
from omnigym.envs.mcu.registries import registry

from .helpers import bare_world


def _apply(world, *texts):
    for text in texts:
        init_commands.apply(world, init_commands.parse(text, "test", registry()))


def test_brewing_needs_a_stand_fuel_and_the_base_and_takes_eighty_ticks():
    world = bare_world()
    _apply(world, "give @s water_bottle 3", "give @s nether_wart 1")
    with pytest.raises(InvalidCommand, match="blaze_powder"):
        execute(world, "brew awkward_potion 3")
    world.give("blaze_powder", 1)
    with pytest.raises(InvalidCommand, match="brewing stand"):
        execute(world, "brew awkward_potion 3")
    world.grid.set(2, 5, 2, "brewing_stand")
    ticks = world.ticks
    execute(world, "brew awkward_potion 3")
    assert world.ticks - ticks == 80 and world.count("awkward_potion") == 3
    assert world.count("water_bottle") == 0 and world.count("blaze_powder") == 0
    assert world.brew_fuel == 19 and world.events["brewed", "awkward_potion"] == 3
    with pytest.raises(InvalidCommand, match="cannot be brewed"):
        execute(world, "brew water_bottle")


def test_drinking_a_potion_gives_its_effect_and_the_bottle_back():
    world = bare_world()
    world.give("night_vision_potion")
    world.time = 13000
    assert world.visibility() == 8
    execute(world, "drink night_vision_potion")
    assert world.visibility() == 24 and world.count("glass_bottle") == 1
    assert world.events["drank", "night_vision_potion"] == 1
    world.health = 10
    world.give("healing_potion")
    execute(world, "use healing_potion")
    assert world.health == 14


def test_enchanting_costs_lapis_and_levels_and_fits_only_its_tools():
    world = bare_world()
    _apply(world, "give @s iron_pickaxe 1", "give @s lapis_lazuli 3", "xp add @s 3 levels")
    world.grid.set(2, 5, 2, "enchanting_table")
    with pytest.raises(InvalidCommand, match="does not fit"):
        execute(world, "enchant iron_pickaxe with sharpness")
    execute(world, "enchant iron pickaxe with efficiency")
    assert world.levels == 2 and world.count("lapis_lazuli") == 2
    assert world.events["enchanted", "iron_pickaxe", "efficiency"] == 1
    world.give("stick")
    execute(world, "equip stick")
    execute(world, "equip iron_pickaxe")
    assert "iron_pickaxe (efficiency)" in observe.text(world, frozenset())
    with pytest.raises(InvalidCommand, match="without efficiency"):
        execute(world, "enchant iron_pickaxe with efficiency")
    with pytest.raises(InvalidCommand, match="costs 3 lapis"):
        execute(world, "enchant iron_pickaxe with fortune")


def test_the_anvil_repairs_with_material_renames_and_combines_for_levels():
    world = bare_world()
    _apply(
        world,
        "give @s iron_sword{Damage:150} 1",
        "give @s iron_ingot 4",
        "experience add @s 4 levels",
    )
    slot = next(i for i, c in enumerate(world.player.inventory.slots) if c)
    assert world.wear[slot] == 100
    with pytest.raises(InvalidCommand, match="anvil"):
        execute(world, "repair iron_sword")
    world.grid.set(2, 5, 2, "anvil")
    execute(world, "repair iron_sword")
    assert world.wear[slot] == 250 and world.count("iron_ingot") == 1 and world.levels == 3
    execute(world, "rename iron_sword to Sting")
    assert world.names[slot] == "sting" and world.events["renamed", "iron_sword"] == 1
    _apply(world, "give @s iron_sword{Damage:200} 1")
    execute(world, "combine iron_sword and iron_sword")
    assert world.count("iron_sword") == 1 and world.levels == 0
    assert world.events["combined", "iron_sword"] == 1
    with pytest.raises(InvalidCommand, match="costs 1 experience levels"):
        execute(world, "rename iron_sword to Sting")
