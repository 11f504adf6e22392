"""Animals, villagers, farming, water, biomes and structures: the rules behind the new task
families."""

import numpy as np
import pytest

from omnigym.envs.mcu import init_commands, structures
from omnigym.envs.mcu.commands import InvalidCommand, execute
from omnigym.envs.mcu.registries import registry
from omnigym.envs.mcu.world import BREATH

from .helpers import bare_world, make_task


def _apply(world, *texts):
    for text in texts:
        init_commands.apply(world, init_commands.parse(text, "test", registry()))


def test_feeding_leashing_trapping_and_shearing_act_on_the_mob_ahead():
    world = bare_world()
    _apply(world, "summon sheep ~0 ~0 ~2", "give @s wheat 1", "give @s lead 1")
    _apply(world, "give @s oak_boat 1", "give @s shears 1")
    sheep = world.mobs[0]
    execute(world, "use wheat")
    execute(world, "use shears")
    assert world.events["fed", "sheep"] == 1 and world.count("white_wool") == 2
    execute(world, "use lead")
    assert sheep.leashed and world.events["leashed", "sheep"] == 1
    execute(world, "use oak_boat")
    assert sheep.trapped and world.events["trapped", "sheep"] == 1
    where = sheep.position
    execute(world, "wait 20")
    assert sheep.position == where
    with pytest.raises(InvalidCommand, match="cannot be used"):
        execute(world, "use shears")


def test_a_leashed_mob_follows_the_player():
    world = bare_world()
    _apply(world, "summon cow ~0 ~0 ~2", "give @s lead 1")
    execute(world, "use lead")
    execute(world, "turn around")
    execute(world, "move forward 8")
    execute(world, "wait 20")
    cow = world.mobs[0]
    x, _, z = world.position
    assert max(abs(cow.position[0] - x), abs(cow.position[2] - z)) <= 2


def test_taming_takes_tries_drawn_from_the_world_rng():
    world = bare_world(seed=1)
    _apply(world, "summon wolf ~0 ~0 ~2", "give @s bone 20")
    tries = 0
    while not world.mobs[0].tamed:
        execute(world, "use bone")
        tries += 1
    assert world.events["tamed", "wolf"] == 1 and world.count("bone") == 20 - tries
    _apply(world, "summon horse ~0 ~0 ~1")
    world.mobs = world.mobs[1:]
    world.mobs[0].trapped = True  # keeps it in front while riding attempts pass
    rides = 0
    while not world.mobs[0].tamed:
        execute(world, "ride")
        rides += 1
    assert rides >= 1 and world.events["tamed", "horse"] == 1


def test_trading_with_a_villager_in_range_both_ways():
    world = bare_world()
    _apply(world, "summon farmer ~0 ~0 ~6", "give @s wheat 40")
    with pytest.raises(InvalidCommand, match="no villager"):
        execute(world, "trade wheat")
    world.mobs[0].trapped = True
    world.mobs[0].position = (0, 5, 2)
    execute(world, "trade wheat 2")
    assert world.count("wheat") == 0 and world.count("emerald") == 2
    execute(world, "trade bread")
    assert world.count("bread") == 6 and world.events["traded", "bread"] == 1
    with pytest.raises(InvalidCommand, match="needs 2 emerald, you have 1"):
        execute(world, "trade apple 2")


def test_a_hoe_tills_grass_and_a_seed_plants_on_farmland():
    world = bare_world()
    world.give("iron_hoe")
    world.give("wheat_seeds", 2)
    world.look(45)
    with pytest.raises(InvalidCommand, match="cannot be used"):
        execute(world, "use wheat_seeds")
    execute(world, "use iron_hoe")
    assert world.block((0, 4, 1)) == "farmland" and world.events["used", "iron_hoe"] == 1
    execute(world, "use wheat_seeds")
    assert world.block((0, 5, 1)) == "wheat_crop" and world.events["planted", "wheat_seeds"] == 1


def test_water_fills_bottles_drowns_without_breath_and_counts_ticks_under():
    world = bare_world()
    _apply(world, "fill ~-1 ~-2 ~1 ~1 ~-1 ~3 water", "give @s glass_bottle 1")
    world.look(45)
    execute(world, "use glass_bottle")
    assert world.count("water_bottle") == 1
    execute(world, "move forward 2")
    assert world.position == (0, 3, 2) and world.underwater()
    under = world.underwater_ticks
    execute(world, "wait 20")
    assert world.underwater_ticks == under + 20 and world.air == BREATH - under - 20
    for _ in range(3):
        execute(world, "wait 20")
    assert world.health < 20 and world.air == 0


def test_fillbiome_marks_a_patch_the_player_can_walk_into():
    world = bare_world()
    _apply(world, "fillbiome ~-1 ~-1 ~2 ~1 ~0 ~4 desert")
    assert world.biome() == "plains"
    execute(world, "move forward 2")
    assert world.biome() == "desert"
    task = make_task(success="in_biome(desert)")
    assert task.success(world)


def test_fences_cannot_be_stepped_onto():
    world = bare_world()
    world.grid.set(0, 5, 1, "oak_fence")
    with pytest.raises(InvalidCommand, match="blocked"):
        execute(world, "move forward")
    world.grid.set(0, 5, 1, "dirt")
    execute(world, "move forward")
    assert world.position == (0, 6, 1)


def test_structures_measure_walls_huts_houses_and_lamps():
    world = bare_world()
    for x in range(3):
        world.placed |= {(x, 5, 4), (x, 6, 4)}
    assert structures.wall(world) == 3 and structures.row(world) == 3
    ring = [(5 + dx, 5 + y, 5 + dz) for dx in range(3) for dz in range(3) for y in range(2)]
    world.placed |= {c for c in ring if (c[0], c[2]) != (6, 6)}
    assert structures.hut(world) == 2 and structures.house(world) == 0
    world.grid.set(5, 5, 5, "oak_door")
    assert structures.house(world) == 2
    world.grid.set(-3, 5, 3, "redstone_lamp")
    world.grid.set(-3, 5, 2, "lever")
    assert structures.lamp(world) == 0
    world.powered.add((-3, 5, 2))
    assert structures.lamp(world) == 1


def test_the_report_names_the_biome_level_and_mob_states():
    from omnigym.envs.mcu import observe

    world = bare_world()
    _apply(world, "summon cow ~0 ~0 ~3", "xp add @s 14 points")
    world.mobs[0].leashed = True
    report = observe.text(world, frozenset())
    assert "biome: plains" in report and "level 2" in report and "cow (leashed)" in report
    assert np.isfinite(observe.stats(world)).all()


def test_a_fenced_mob_is_trapped_once_the_pen_is_closed():
    world = bare_world()
    pen = [(-1, 3), (1, 3), (-1, 4), (1, 4), (-1, 5), (1, 5), (0, 6)]
    for x, z in pen:
        world.grid.set(x, 5, z, "oak_fence")
    _apply(world, "summon pig ~0 ~0 ~5", "give @s oak_fence 1")
    pig = world.mobs[0]
    task = make_task(success="trapped(pig) >= 1")
    assert not world.penned(pig) and not task.success(world)
    execute(world, "move forward 1")
    world.look(45)
    execute(world, "place oak_fence")
    assert world.block((0, 5, 2)) == "oak_fence"
    assert world.penned(pig) and task.success(world)


def test_a_leashed_mob_is_tied_to_the_fence_looked_at():
    world = bare_world()
    _apply(world, "summon cow ~0 ~0 ~2", "give @s lead 1", "setblock ~0 ~0 ~-1 oak_fence")
    execute(world, "use lead")
    execute(world, "turn around")
    execute(world, "look down")
    execute(world, "use")
    cow = world.mobs[0]
    assert cow.tied and not cow.leashed and world.events["tied", "cow"] == 1
    where = cow.position
    execute(world, "wait 20")
    assert cow.position == where
