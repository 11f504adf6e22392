"""The MCU oracles for animals, villagers and tools used on things: face the mob (following it as
it wanders) and use the item on it, or aim at the block or water and use the tool; walk up to a
villager that deals in an item and trade."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from omnigym.envs.mcu.interact import TIE_RANGE, TRADE_RANGE, traders
from omnigym.envs.mcu.oracles.navigation import (
    Cell,
    Commands,
    aim_at,
    close_in,
    pitch_to,
    route,
    turn_to,
    walk,
)
from omnigym.envs.mcu.world import FACINGS, PEN_SIZE, MCUWorld, MobState

MAX_TRIES = 40


def face_mob(world: MCUWorld, wanted: Callable[[MobState], bool]) -> Commands:
    """Walks next to the nearest mob ``wanted`` accepts and turns to it, until the swing reaches
    one (re-planning as it moves); stops when there is none."""
    for _ in range(MAX_TRIES * 4):
        ahead = world.mob_ahead()
        if ahead is not None and wanted(ahead):
            yield from pitch_to(world, 0)
            return
        mobs = [m for m in world.mobs if wanted(m)]
        if not mobs:
            return
        mob = min(mobs, key=lambda m: (world.distance_to(m.position), m.uid))
        yield from close_in(world, mob)


def _kind(name: str) -> Callable[[MobState], bool]:
    return lambda mob: mob.kind.name == name


def feed(world: MCUWorld, params: dict[str, Any]) -> Commands:
    mob, goal = params["mob"], params.get("count", 1)
    while world.events["fed", mob] < goal and world.count(params["item"]):
        yield from face_mob(world, _kind(mob))
        yield f"use {params['item']}"


def tame(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Tries to tame ``mob`` with ``item`` (``ride`` for a horse) until it is tamed."""
    mob, item = params["mob"], params["item"]
    for _ in range(MAX_TRIES):
        if world.events["tamed", mob] or (item != "ride" and not world.count(item)):
            return
        yield from face_mob(world, lambda m: m.kind.name == mob and not m.tamed)
        yield "ride" if item == "ride" else f"use {item}"


def use_on_mob(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Uses ``item`` once on a ``mob`` (a lead, a boat, shears, a bucket)."""
    yield from face_mob(world, _kind(params["mob"]))
    yield f"use {params['item']}"


def use_on_water(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Stands beside water one node down, looks down at it and uses ``item``."""

    def beside(cell) -> bool:
        x, y, z = cell
        return any(world.water(x + dx, y - 1, z + dz) for dx, dz in FACINGS)

    yield from walk(world, beside)
    x, y, z = world.position
    yield from turn_to(
        world, next(d for d, (dx, dz) in enumerate(FACINGS) if world.water(x + dx, y - 1, z + dz))
    )
    yield from pitch_to(world, 45)
    yield f"use {params['item']}"


def trade(world: MCUWorld, params: dict[str, Any]) -> Commands:
    item = params["item"]
    trades = world.registry.trades

    def deals(mob: MobState) -> bool:
        table = trades.get(mob.kind.name)
        return table is not None and (item in table.buys or item in table.sells)

    for _ in range(MAX_TRIES * 4):
        if traders(world, item):
            yield f"trade {item} {params.get('times', 1)}"
            return
        mobs = [m for m in world.mobs if deals(m)]
        if not mobs:
            return
        mob = min(mobs, key=lambda m: (world.distance_to(m.position), m.uid))
        directions = route(
            world,
            lambda c, m=mob.position: (
                sum((a - b) ** 2 for a, b in zip(c, m, strict=True)) <= (TRADE_RANGE - 1) ** 2
            ),
        )
        if not directions:
            yield "wait 2"
            continue
        yield from turn_to(world, directions[0])
        yield "move forward 1"


def fence_in(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Pens in a ``mob`` by placing a fence on the free node, nearest the player, whose
    filling leaves the mob at most :data:`PEN_SIZE` nodes to walk to; stands outside the pen,
    facing that node, looking down at 45 degrees."""
    name = params["mob"]
    for _ in range(MAX_TRIES):
        mobs = [m for m in world.mobs if m.kind.name == name]
        if not mobs or any(world.penned(m) for m in mobs):
            return
        mob = min(mobs, key=lambda m: (world.distance_to(m.position), m.uid))
        found = _gap(world, mob.position)
        if found is None:
            return
        gap, stands = found
        yield from walk(world, stands.__contains__)
        if world.position not in stands:
            return
        x, _, z = world.position
        yield from turn_to(world, FACINGS.index((gap[0] - x, gap[2] - z)))
        yield from pitch_to(world, 45)
        if any(m.position == gap for m in world.mobs):
            yield "wait 1"
            continue
        yield "place oak_fence"


def _gap(world: MCUWorld, start) -> tuple[Cell, set[Cell]] | None:
    """A node whose filling pens in a mob at ``start``, and the nodes to place it from."""
    region = world.reachable(start, 4 * PEN_SIZE)
    for gap in sorted(region - {start}, key=lambda c: (world.distance_to(c), c)):
        pen = world.reachable(start, PEN_SIZE, blocked={gap})
        if len(pen) > PEN_SIZE:
            continue
        stands = {
            (gap[0] - dx, gap[1], gap[2] - dz)
            for dx, dz in FACINGS
            if world.standable(gap[0] - dx, gap[1], gap[2] - dz)
        }
        if stands - pen:
            return gap, stands - pen
    return None


def tie(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Leashes ``mob``, walks to where a fence can be pointed at and ties it there."""
    name = params["mob"]
    yield from use_on_mob(world, {"mob": name, "item": "lead"})
    fences = {c for b in world.registry.tags["fence"] for c in world.cells_of(b, 40)}
    for _ in range(MAX_TRIES):
        if world.events["tied", name] or not fences:
            return
        yield from aim_at(world, fences)
        post = world.target()
        if post in fences and any(
            m.leashed and math.dist(m.position, post) <= TIE_RANGE for m in world.mobs
        ):
            yield "use"
        else:
            yield "wait 1"


def drink(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield f"drink {params['potion']}"


SOLVERS = {
    "fence_in": fence_in,
    "tie": tie,
    "drink": drink,
    "feed": feed,
    "tame": tame,
    "use_on_mob": use_on_mob,
    "use_on_water": use_on_water,
    "trade": trade,
}
