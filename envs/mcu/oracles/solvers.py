"""The MCU oracles for gathering, crafting, fighting and moving: mine, collect, craft, smelt,
combat, sleep, pillar, find, place, drop and eat (plus station placement shared with the other
solver modules)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from omnigym.envs.mcu.crafting import STATION_RANGE
from omnigym.envs.mcu.oracles.navigation import (
    Cell,
    Commands,
    aim_at,
    best_tool,
    close_in,
    equip,
    pitch_to,
    walk,
)
from omnigym.envs.mcu.planner import needs_table, plan
from omnigym.envs.mcu.world import MCUWorld

LOW_HEALTH = 6
THREAT_RANGE = 2
"""Hostile mobs this close (Chebyshev) are fought first, whatever the task's target."""


def mine(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Digs the nearest reachable ``block`` until ``count`` have been mined, with the best
    fitting tool."""
    blocks = world.registry.members(params["block"])
    goal = params.get("count", 1)
    while sum(world.events["mined", b] for b in blocks) < goal:
        cells = {c for b in blocks for c in world.cells_of(b, 40)}
        yield from aim_at(world, cells)
        target = world.target()
        if target not in cells:
            return
        yield from equip(world, best_tool(world, world.registry.blocks[world.block(target)].tool))
        yield "mine"


def collect(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Mines ``block`` (a block or ``#tag``) until the inventory holds ``count`` of ``item``."""
    members = world.registry.members(params["item"])
    while sum(world.count(m) for m in members) < params["count"]:
        mined = sum(world.events["mined", b] for b in world.registry.members(params["block"]))
        yield from mine(world, {"block": params["block"], "count": mined + 1})
        if sum(world.events["mined", b] for b in world.registry.members(params["block"])) == mined:
            return


def reach_station(world: MCUWorld, station: str) -> Commands:
    """Walks within range of the nearest ``station`` in the arena (when one stands there), else
    places one in front (crafting it first if there is none in the inventory)."""
    cells = world.cells_of(station, 40)
    if cells:
        cell = cells[0]
        yield from walk(world, lambda c: math.dist(c, cell) <= STATION_RANGE - 1)
    if not world.cells_of(station, STATION_RANGE):
        yield from place_station(world, station)


def place_station(world: MCUWorld, station: str) -> Commands:
    """Places ``station`` on the ground in front (crafting it first if there is none)."""
    if not world.count(station):
        yield from craft_items(world, station, 1)
    yield from pitch_to(world, 45)
    for _ in range(4):
        cell = world.placement()
        if cell is not None and cell[1] == world.position[1]:
            break
        yield "turn left"
    yield f"place {station}"
    yield from pitch_to(world, 0)


def craft_items(world: MCUWorld, item: str, count: int) -> Commands:
    """Crafts ``count`` of ``item`` through its recipe tree, placing a table when needed."""
    have = Counter({name: world.count(name) for name in world.registry.items})
    crafts, _ = plan(world.registry, item, count, have)
    if needs_table(world.registry, crafts) and not world.cells_of("crafting_table", STATION_RANGE):
        yield from reach_station(world, "crafting_table")
        have = Counter({name: world.count(name) for name in world.registry.items})
        crafts, _ = plan(world.registry, item, count, have)
    for name, n in crafts:
        yield f"craft {name} {n}"


def craft(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield from craft_items(world, params["item"], params.get("count", 1))


def smelt(world: MCUWorld, params: dict[str, Any]) -> Commands:
    if not world.cells_of("furnace", STATION_RANGE):
        yield from reach_station(world, "furnace")
    yield f"smelt {params['input']} {params.get('count', 1)}"


def combat(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Kills ``count`` of ``mob``: best weapon, approach, attack (any hostile mob within two
    nodes first); eats when health is low."""
    mob_name = params["mob"]
    goal = params.get("count", 1)
    weapon = best_tool(world, "sword") or best_tool(world, "axe")
    yield from equip(world, weapon)
    while world.events["killed", mob_name] < goal:
        if world.health < LOW_HEALTH:
            food = [n for n in world.registry.items if world.registry.items[n].food]
            food = [n for n in food if world.count(n)]
            if food:
                yield f"eat {food[0]}"
                yield from equip(world, weapon)
        targets = [m for m in world.mobs if m.kind.name == mob_name]
        if not targets:
            return
        x, _, z = world.position
        threats = [
            m
            for m in world.mobs
            if m.hostile and max(abs(m.position[0] - x), abs(m.position[2] - z)) <= THREAT_RANGE
        ]
        targets = threats or targets
        ahead = world.mob_ahead()
        if ahead is not None and (ahead.kind.name == mob_name or ahead.hostile):
            yield from pitch_to(world, 0)
            yield "attack"
            continue
        mob = min(targets, key=lambda m: (world.distance_to(m.position), m.uid))
        yield from close_in(world, mob)


def sleep(world: MCUWorld, params: dict[str, Any]) -> Commands:
    beds = [c for b in world.registry.tags["bed"] for c in world.cells_of(b, 40)]
    if not beds:
        return
    bed = min(beds, key=lambda c: (world.distance_to(c), c))
    yield from walk(world, lambda c: max(abs(a - b) for a, b in zip(c, bed, strict=True)) <= 1)
    yield "sleep"


def pillar(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield from pitch_to(world, 90)
    for _ in range(params["height"]):
        yield f"place {params['block']}"


def find(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Walks to within ``radius`` of a ``block`` or a ``mob`` (followed as it moves), or into
    a ``biome``."""
    radius = params.get("radius", 2)
    if "biome" in params:
        yield from walk(world, lambda c: world.biome_at(c) == params["biome"])
        return
    if "mob" in params:
        mobs = [m for m in world.mobs if m.kind.name == params["mob"]]
        if not mobs:
            return

        def target() -> Cell:
            return mobs[0].position
    else:
        cells = world.cells_of(params["block"], 40)
        if not cells:
            return

        def target() -> Cell:
            return cells[0]

    yield from walk(
        world, lambda c: sum((a - b) ** 2 for a, b in zip(c, target(), strict=True)) <= radius**2
    )


def place(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Places ``count`` blocks on the ground in a row, stepping aside after each."""
    block = params["block"]
    yield from pitch_to(world, 45)
    while world.events["placed", block] < params["count"]:
        cell = world.placement()
        if cell is not None and cell[1] == world.position[1]:
            yield f"place {block}"
        yield "move left 2"


def drop(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield f"drop {params['item']} {params.get('count', 1)}"


def eat(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield f"eat {params['item']}"
