"""What an MCU agent observes: a text report, agent-aligned voxels, inventory counts, stats.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) gives agents 128×128 video frames; the symbolic
game here gives what those frames show (and what a text agent needs) directly, limited by the
visibility radius, so night, weather and blindness change what can be seen.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from omnigym.envs.mcu.world import (
    EFFECTS,
    FACING_NAMES,
    FACINGS,
    GROUND_BLOCKS,
    WEATHERS,
    MCUWorld,
)

TEXT_LIMIT = 4096
VOXEL_RADII = (4, 2, 4)
"""Right, up and forward half-extents of the voxel window (shape 9 × 5 × 9)."""
TERRAIN = frozenset({"air", "ignore", "unknown"}) | GROUND_BLOCKS
"""Blocks the text report lists only when the task concerns them."""
STAT_NAMES = (
    "health",
    "hunger",
    "x",
    "y",
    "z",
    "facing",
    "pitch",
    "time",
    "weather",
    "visibility",
    "armor",
    "effects",
)
"""What each entry of the ``stats`` observation holds, in order."""
N_STATS = len(STAT_NAMES)


def frame(world: MCUWorld) -> tuple[np.ndarray, np.ndarray]:
    """Right and forward unit vectors ``(dx, dz)`` of the player's facing."""
    forward = FACINGS[world.facing]
    right = FACINGS[(world.facing + 3) % 4]
    return np.array(right), np.array(forward)


def relative(world: MCUWorld, cell) -> tuple[int, int, int]:
    """``(right, up, forward)`` of ``cell`` from the player's feet."""
    right, forward = frame(world)
    x, y, z = world.position
    d = np.array([cell[0] - x, cell[2] - z])
    return int(d @ right), int(cell[1] - y), int(d @ forward)


@cache
def _voxel_index(facing: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rx, ry, rz = VOXEL_RADII
    fx, fz = FACINGS[facing]
    sx, sz = FACINGS[(facing + 3) % 4]
    r, u, f = np.meshgrid(
        np.arange(-rx, rx + 1), np.arange(-ry, ry + 1), np.arange(-rz, rz + 1), indexing="ij"
    )
    return rz + r * sz + f * fz, ry + u, rx + r * sx + f * fx


def voxels(world: MCUWorld) -> np.ndarray:
    """Block ids around the feet, ``[right, up, forward]``, −1 beyond the visibility radius."""
    crop = world.grid.voxels_around(world.position, VOXEL_RADII).astype(np.int16)
    iz, iy, ix = _voxel_index(world.facing)
    out = crop[iz, iy, ix]
    out[_squared_distance() > world.visibility() ** 2] = -1
    return out


@cache
def _squared_distance() -> np.ndarray:
    rx, ry, rz = VOXEL_RADII
    r, u, f = np.meshgrid(
        np.arange(-rx, rx + 1), np.arange(-ry, ry + 1), np.arange(-rz, rz + 1), indexing="ij"
    )
    return r * r + u * u + f * f


def inventory(world: MCUWorld) -> np.ndarray:
    counts = np.zeros(len(world.registry.item_names), dtype=np.int32)
    for content in world.player.inventory.slots:
        if content is not None:
            counts[world.registry.item_index[content[0]]] += content[1]
    return counts


def stats(world: MCUWorld) -> np.ndarray:
    x, y, z = world.position
    flags = sum(1 << EFFECTS.index(name) for name in world.effects)
    return np.array(
        [
            world.health,
            world.hunger,
            x,
            y,
            z,
            world.facing,
            world.pitch,
            world.time,
            WEATHERS.index(world.weather),
            world.visibility(),
            world.armor_points(),
            flags,
        ],
        dtype=np.float32,
    )


def _where(world: MCUWorld, cell) -> str:
    r, u, f = relative(world, cell)
    return f"right {r} up {u} forward {f}"


def text(world: MCUWorld, relevant: frozenset[str]) -> str:
    """The text report: state, what is in view (relevant and notable blocks, mobs), inventory
    and the events of the last command."""
    x, y, z = world.position
    radius = world.visibility()
    held = world.player.inventory.wielded or "nothing"
    target = world.target()
    armor = ", ".join(s[0] for s in world.armor.values() if s) or "none"
    lines = [
        f"position: x={x} y={y} z={z}, facing {FACING_NAMES[world.facing]}, pitch {world.pitch}",
        f"biome: {world.biome()}, time: {'day' if world.is_day() else 'night'} ({world.time}),"
        f" weather {world.weather}, visibility {radius}",
        f"health {world.health:.0f}/20, hunger {world.hunger}/20, armor {armor},"
        f" effects: {', '.join(sorted(world.effects)) or 'none'}, level {world.levels}"
        + (f", air {world.air}" if world.underwater() else ""),
        f"holding: {held}",
        f"looking at: {world.block(target) if target else 'nothing'}"
        + (f" ({_where(world, target)})" if target else ""),
    ]
    blocks = []
    box, _ = world.around(radius)
    names = world.registry.materials
    for cid in np.flatnonzero(np.bincount(box.ravel(), minlength=len(names.colors))):
        name = names.name(int(cid))
        if name in TERRAIN and name not in relevant:
            continue
        cells = world.found(name, radius)
        if len(cells):
            blocks.append(f"{name} x{len(cells)} (nearest {_where(world, cells[0])})")
    lines.append("blocks in view: " + ("; ".join(blocks) or "none"))
    mobs = [
        f"{m.kind.name}{_mob_state(m)} hp {m.health:.0f} ({_where(world, m.position)})"
        for m in sorted(world.mobs, key=lambda m: (world.distance_to(m.position), m.uid))
        if world.distance_to(m.position) <= radius
    ]
    lines.append("mobs in view: " + ("; ".join(mobs) or "none"))
    items = [f"{name} x{world.count(name)}" for name in _held_items(world)]
    items += [
        f"{world.player.inventory.slots[slot][0]} ({', '.join(extras)})"
        for slot in sorted(set(world.enchantments) | set(world.names))
        if world.player.inventory.slots[slot]
        and (extras := [*world.enchantments.get(slot, ()), *_named(world, slot)])
    ]
    lines.append("inventory: " + (", ".join(items) or "empty"))
    lines.append("events: " + ("; ".join(world.log) or "none"))
    report = "\n".join(lines)
    if len(report) > TEXT_LIMIT:
        report = report[: TEXT_LIMIT - 3] + "..."
    return report


def _held_items(world: MCUWorld) -> list[str]:
    seen: dict[str, None] = {}
    for content in world.player.inventory.slots:
        if content is not None:
            seen[content[0]] = None
    return list(seen)


def _named(world: MCUWorld, slot: int) -> list[str]:
    return [f"named {world.names[slot]!r}"] if slot in world.names else []


def _mob_state(mob) -> str:
    states = [s for s in ("tamed", "leashed", "trapped") if getattr(mob, s)]
    return f" ({', '.join(states)})" if states else ""
