"""The MCU oracles for building, redstone, farming and water: pillar-walk a wall or a hut ring
(place a column looking straight down, step off it, repeat), place lamp-and-lever pairs and
switch them on, till and plant, dive into a pool and stay under."""

from __future__ import annotations

from typing import Any

from omnigym.envs.mcu.oracles.navigation import (
    Commands,
    aim_at,
    best_tool,
    pitch_to,
    turn_to,
    walk,
)
from omnigym.envs.mcu.oracles.solvers import craft_items
from omnigym.envs.mcu.world import FACINGS, MCUWorld

HUT_RING = ((1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2), (0, 1))
"""The ring of a 3 × 3 hut after its first column (at the start node), as ``(dx, dz)``."""
MAX_WAIT = 20


def _column(world: MCUWorld, blocks: list[str]) -> Commands:
    yield from pitch_to(world, 90)
    for block in blocks:
        yield f"place {block}"


def wall(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """A straight wall ``length`` columns long and ``height`` tall, built walking north."""
    yield from turn_to(world, 0)
    for i in range(params["length"]):
        if i:
            yield "move forward 1"
        yield from _column(world, [params["block"]] * params["height"])


def hut(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """A 3 × 3 ring of columns ``height`` tall around one free node (an oak door at the foot of
    the first column when ``door``)."""
    block, height = params["block"], params["height"]
    x0, _, z0 = world.position
    first = ["oak_door"] + [block] * (height - 1) if params.get("door") else [block] * height
    yield from _column(world, first)
    for dx, dz in HUT_RING:
        x, _, z = world.position
        yield from turn_to(world, FACINGS.index((x0 + dx - x, z0 + dz - z)))
        yield "move forward 1"
        yield from _column(world, [block] * height)


def lamp(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """``count`` redstone lamps, each with a lever placed beside it and switched on (crafting
    the lamps first when the inventory lacks them)."""
    count = params.get("count", 1)
    if world.count("redstone_lamp") < count:
        yield from craft_items(world, "redstone_lamp", count - world.count("redstone_lamp"))
    if world.count("lever") < count:
        yield from craft_items(world, "lever", count - world.count("lever"))
    yield from turn_to(world, 0)
    for i in range(count):
        if i:
            yield "move right 3"
        yield from pitch_to(world, 45)
        yield "place redstone_lamp"
        yield "move back 1"
        yield "place lever"
        yield "use"


def plant(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Plants ``count`` seeds on farmland: on the farmland of the scene, or (given ``hoe``)
    tilling the grass ahead with the best hoe held first."""
    seed, count = params["seed"], params.get("count", 1)
    hoe = best_tool(world, "hoe") if params.get("hoe") else None
    yield from turn_to(world, 0)
    while world.events["planted", seed] < count:
        if hoe is None:
            free = {c for c in world.cells_of("farmland", 40) if world.block(_up(c)) == "air"}
            if not free:
                return
            yield from aim_at(world, free)
        else:
            if world.events["planted", seed]:
                yield "move right 2"
            yield from pitch_to(world, 45)
            yield f"use {hoe}"
        yield f"use {seed}"


def till(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Tills the grass in front with ``hoe``."""
    yield from pitch_to(world, 45)
    yield f"use {params['hoe']}"


def _up(cell):
    return cell[0], cell[1] + 1, cell[2]


def dive(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Walks into water deep enough to cover the head and stays under for ``ticks`` ticks."""
    yield from walk(world, lambda c: world.water(c[0], c[1] + 1, c[2]))
    while world.underwater() and world.underwater_ticks < params["ticks"]:
        yield f"wait {min(MAX_WAIT, params['ticks'] - world.underwater_ticks)}"


SOLVERS = {"wall": wall, "hut": hut, "lamp": lamp, "plant": plant, "till": till, "dive": dive}
