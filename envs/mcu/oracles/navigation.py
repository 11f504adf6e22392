"""Moving and aiming for the MCU oracles: breadth-first search over the nodes the player can
stand on (the walking rules of ``move``: one-node step-up, falls of at most 3 nodes, any depth
into water), turning, looking, and which standing node, facing and pitch point at a node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

from omnigym.envs.mcu.registries import TIER_LEVELS
from omnigym.envs.mcu.world import FACINGS, PITCHES, RAYS, MCUWorld

Commands = Iterator[str]
Cell = tuple[int, int, int]
MAX_FALL = 3
REACH = max(max(forward, abs(up)) for rays in RAYS.values() for forward, up in rays)
"""The farthest a look reaches along any axis from the feet node."""


def neighbours(world: MCUWorld, cell: Cell) -> Iterator[tuple[int, Cell]]:
    """``(direction, cell)`` for each node one ``move`` reaches from ``cell``."""
    x, y, z = cell
    for direction, (dx, dz) in enumerate(FACINGS):
        nx, nz = x + dx, z + dz
        if not world.solid(nx, y, nz) and not world.solid(nx, y + 1, nz):
            ny = y
            while not world.solid(nx, ny - 1, nz) and y - ny <= MAX_FALL:
                ny -= 1
            while not world.solid(nx, ny - 1, nz) and world.water(nx, ny - 1, nz):
                ny -= 1
            if y - ny <= MAX_FALL or world.water(nx, ny, nz):
                yield direction, (nx, ny, nz)
        elif world.can_step_up(cell, nx, nz):
            yield direction, (nx, y + 1, nz)


def route(world: MCUWorld, goal: Callable[[Cell], bool]) -> list[int] | None:
    """Directions of a shortest walk from the player to a node where ``goal`` holds."""
    start = world.position
    parents: dict[Cell, tuple[Cell, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if goal(cell):
            directions = []
            while parents[cell] is not None:
                cell, direction = parents[cell]
                directions.append(direction)
            return directions[::-1]
        for direction, nxt in neighbours(world, cell):
            if nxt not in parents:
                parents[nxt] = (cell, direction)
                queue.append(nxt)
    return None


def turn_to(world: MCUWorld, direction: int) -> Commands:
    quarter = (direction - world.facing) % 4
    if quarter:
        yield {1: "turn left", 2: "turn around", 3: "turn right"}[quarter]


def pitch_to(world: MCUWorld, pitch: int) -> Commands:
    while world.pitch != pitch:
        yield "look down" if world.pitch < pitch else "look up"


def walk(world: MCUWorld, goal: Callable[[Cell], bool]) -> Commands:
    """Walks until ``goal`` holds at the player's node (re-planning after every command)."""
    while not goal(world.position):
        directions = route(world, goal)
        if not directions:
            return
        if world.facing != directions[0]:
            yield from turn_to(world, directions[0])
            continue
        run = 1
        while run < len(directions) and run < 8 and directions[run] == directions[0]:
            run += 1
        yield f"move forward {run}"


def pointed(world: MCUWorld, stand: Cell) -> dict[Cell, tuple[int, int]]:
    """Every node that some ``(facing, pitch)`` points at from ``stand``, with that look."""
    pointable = world.registry.materials.pointable
    found: dict[Cell, tuple[int, int]] = {}
    for facing, (dx, dz) in enumerate(FACINGS):
        for pitch in PITCHES:
            for forward, up in RAYS[pitch]:
                ray = (stand[0] + forward * dx, stand[1] + up, stand[2] + forward * dz)
                if pointable[world.grid.get(*ray)]:
                    found.setdefault(ray, (facing, pitch))
                    break
    return found


def within_reach(stand: Cell, cells: set[Cell]) -> bool:
    """Whether one of ``cells`` lies within :data:`REACH` of ``stand`` on every axis: a cheap
    test that :func:`pointed` can only pass where it holds."""
    x, y, z = stand
    return any(
        abs(cx - x) <= REACH and abs(cy - y) <= REACH and abs(cz - z) <= REACH
        for cx, cy, cz in cells
    )


def aim_at(world: MCUWorld, cells: set[Cell]) -> Commands:
    """Walks to where one of ``cells`` can be pointed at, and points at the nearest such."""

    def can_point(stand: Cell) -> bool:
        return within_reach(stand, cells) and not cells.isdisjoint(pointed(world, stand))

    yield from walk(world, can_point)
    looks = pointed(world, world.position)
    reachable = sorted(cells & set(looks), key=lambda c: (world.distance_to(c), c))
    if reachable:
        facing, pitch = looks[reachable[0]]
        yield from turn_to(world, facing)
        yield from pitch_to(world, pitch)


def best_tool(world: MCUWorld, kind: str) -> str | None:
    items = world.registry.items
    tools = [name for name in items if items[name].tool == kind and world.count(name)]
    return max(tools, key=lambda n: (TIER_LEVELS[items[n].tier], n), default=None)


def equip(world: MCUWorld, item: str | None) -> Commands:
    if item is not None and world.player.inventory.wielded != item:
        yield f"equip {item}"


def close_in(world: MCUWorld, mob) -> Commands:
    """One move toward ``mob``: when next to it, turn to it (waiting a tick if something else
    is in the swing's way); else one step along a shortest route to a node beside it (or a
    short wait when there is none)."""
    x, _, z = world.position
    mx, _, mz = mob.position
    if max(abs(mx - x), abs(mz - z)) <= 1:
        dx, dz = mx - x, mz - z
        yield from turn_to(world, FACINGS.index((dx, 0) if abs(dx) >= abs(dz) else (0, dz)))
        if world.mob_ahead() is not mob:  # nothing, or another animal, in the way
            yield "wait 1"
        return
    directions = route(
        world, lambda c, m=mob.position: max(abs(c[0] - m[0]), abs(c[2] - m[2])) <= 1
    )
    if not directions:
        yield "wait 2"
        return
    yield from turn_to(world, directions[0])
    yield "move forward 1"
