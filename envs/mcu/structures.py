"""Structures the player builds, measured from the blocks it placed (for ``structure(...)``).

MCU's Build tasks (Zheng et al., ICML 2025; ``docs/mcu.md``) are judged from video; here each
structure template is a measure over the nodes the player placed that still stand:

- ``pillar``: the tallest vertical run of placed blocks;
- ``row`` and ``wall``: the longest straight line (along x or z) of neighbouring columns on the
  same ground, each at least 1 (row) or 2 (wall) placed blocks tall;
- ``hut``: the height of the lowest of the 8 columns ringing some node, on the same ground (a
  3 × 3 shelter with one room); ``house``: the same with an oak door at the foot of a column;
- ``lamp``: how many redstone lamps touch a lever that is switched on.
"""

from __future__ import annotations

from collections.abc import Callable

from omnigym.envs.mcu.world import MCUWorld

Column = tuple[int, int]
RING = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))
NEIGHBOURS = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))


def columns(world: MCUWorld) -> dict[Column, tuple[int, int]]:
    """``(x, z) -> (base y, height)`` of the tallest run of placed blocks in each column."""
    out: dict[Column, tuple[int, int]] = {}
    for x, y, z in world.placed:
        if (x, y - 1, z) in world.placed:
            continue
        run = 1
        while (x, y + run, z) in world.placed:
            run += 1
        if run > out.get((x, z), (0, 0))[1]:
            out[(x, z)] = (y, run)
    return out


def pillar(world: MCUWorld) -> int:
    return max((h for _, h in columns(world).values()), default=0)


def _line(world: MCUWorld, tall: int) -> int:
    cols = {c: base for c, (base, h) in columns(world).items() if h >= tall}
    best = 0
    for (x, z), base in cols.items():
        for dx, dz in ((1, 0), (0, 1)):
            if cols.get((x - dx, z - dz)) == base:
                continue
            run = 1
            while cols.get((x + run * dx, z + run * dz)) == base:
                run += 1
            best = max(best, run)
    return best


def row(world: MCUWorld) -> int:
    return _line(world, 1)


def wall(world: MCUWorld) -> int:
    return _line(world, 2)


def _ring(world: MCUWorld, door: bool) -> int:
    cols = columns(world)
    best = 0
    centres = {(x + dx, z + dz) for x, z in cols for dx, dz in RING}
    for cx, cz in centres:
        ring = [cols.get((cx + dx, cz + dz)) for dx, dz in RING]
        if any(c is None for c in ring) or len({base for base, _ in ring}) != 1:
            continue
        base = ring[0][0]
        if door and not any(world.block((cx + dx, base, cz + dz)) == "oak_door" for dx, dz in RING):
            continue
        best = max(best, min(h for _, h in ring))
    return best


def hut(world: MCUWorld) -> int:
    return _ring(world, door=False)


def house(world: MCUWorld) -> int:
    return _ring(world, door=True)


def lamp(world: MCUWorld) -> int:
    """Redstone lamps next to a switched-on lever."""
    levers = {cell for cell in world.powered if world.block(cell) == "lever"}
    lamps = {
        (x + dx, y + dy, z + dz)
        for x, y, z in levers
        for dx, dy, dz in NEIGHBOURS
        if world.block((x + dx, y + dy, z + dz)) == "redstone_lamp"
    }
    return len(lamps)


MEASURES: dict[str, Callable[[MCUWorld], int]] = {
    "pillar": pillar,
    "row": row,
    "wall": wall,
    "hut": hut,
    "house": house,
    "lamp": lamp,
}
