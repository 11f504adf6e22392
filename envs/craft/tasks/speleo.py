"""Craftium's ``Speleo``: go as deep as possible in a closed, torch-lit cave.

Follows Craftium's speleology task (Malagón, Ceberio, Lozano, ICML 2025).

- **World**: a cave carved in stone (``default:stone``), closed on every side, lit only by
  torches (``default:torch``, light 12) and a lava pool. It winds down from an entrance chamber
  whose floor's top is at y = 5.5 (air up to y = 8.5) to a deepest chamber whose floor's top is
  at y = −24.5. Between them run 3-node-wide corridors along a self-avoiding walk of straight
  legs on a lattice (turns of 90°); every leg descends one to three nodes, as stairs of one node
  or as one ledge, never more than a body survives falling. One point of the corridor has a
  side alcove floored with lava (``default:lava_source``, 8 damage per second). Every number is in
  ``data/tasks/speleo.yaml`` (``cave``). The ``seed`` kwarg selects the winding (the walk, the
  descent of each leg, where the lava is); None is the canonical cave.
- **Start**: Craftium's spawn (24.3, 5.5, −36.3) in the entrance chamber, pitch 0, yaw drawn
  uniformly from [0, 360) with the episode's generator (the only thing a reset seed changes).

Actions (after the no-op) and ``mouse_mov``: ``data/tasks/speleo.yaml`` (``Discrete(7)``). Reward
−(player y) on every step (Craftium's per-step reward, given once per step), so the deeper the
player stands the more it earns. The episode terminates when the player dies (a fall, lava);
truncation after 500 steps. Success: the feet reached the lowest two node layers of the cave (y
below the deepest floor's top + 2). ``info["task"]``: ``y``, ``min_y``; final ``metrics``:
``min_y``, ``damage_taken``, ``distance``. Score range: the mean returns of the no-op policy and of
the scripted descender (``agents/craft/speleo.py``).

Departures from Craftium:

- Craftium's cave is a shipped Luanti map with natural shapes; this one is generated from the
  published endpoints (spawn and depth range) and is made of straight legs.
- The spawn yaw is drawn from the episode's generator so that the reset seed changes the episode;
  Craftium's map fixes the spawn pose.
- At Craftium's default ``frameskip=1`` with ``fps_max=200`` an episode lasts 2.5 s of game
  time. With the published gravity and fall damage no body descends 30 nodes that fast and
  lives (harmless drops of 5 nodes take 0.7 s each, so 4.3 s for the depth; a free fall of 30
  nodes kills), so the bottom, and success, need a larger ``frameskip``: the scripted
  descender reaches it from ``frameskip=3`` on. That follows from the published constants and
  is kept; the score range is measured at the default ``frameskip=1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from omnigym.envs.craft.core import CraftSim
from omnigym.envs.craft.engine import AIR, MaterialTable, World, node_at
from omnigym.envs.craft.tasks.base import Task

TORCH = "default:torch"
LAVA = "default:lava_source"
DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))
"""Lattice steps (x, z) of the walk the corridors follow."""
MAX_WALK_TRIES = 1000


@dataclass(frozen=True)
class CaveParams:
    """The ``cave`` entry of ``data/tasks/speleo.yaml`` (its comment describes every field)."""

    canonical_seed: int
    spawn: tuple[float, float, float]
    top_floor: int
    bottom_floor: int
    legs: int
    leg: int
    drop_per_leg: int
    ledge_chance: float
    half_width: int
    headroom: int
    torch_every: int
    wall: str
    lava_pool: int

    @classmethod
    def from_table(cls, entry: dict) -> CaveParams:
        params = cls(**dict(entry, spawn=tuple(float(v) for v in entry["spawn"])))
        depth = params.top_floor - params.bottom_floor
        if not params.legs <= depth <= params.legs * params.drop_per_leg:
            raise ValueError(
                f"Speleo cave: {params.legs} legs of 1..{params.drop_per_leg} nodes cannot "
                f"descend {depth} nodes"
            )
        if not 1 <= params.drop_per_leg <= params.leg - 2:
            raise ValueError("Speleo cave: drop_per_leg must be in [1, leg - 2]")
        if params.leg < 2 * params.half_width + 3:
            raise ValueError("Speleo cave: leg must leave a wall between parallel corridors")
        return params


@dataclass(frozen=True)
class Cave:
    """A carved cave: the world and the corridor's centre line, one ``(x, floor y, z)`` per
    node from the spawn's to the deepest chamber's."""

    world: World
    path: tuple[tuple[int, int, int], ...]


def carve_cave(materials: MaterialTable, params: CaveParams, seed: int) -> Cave:
    """Builds the cave of ``seed`` (see the module docstring); the same seed, the same grid."""
    rng = np.random.default_rng(seed)
    lattice = _lattice_walk(params.legs, rng)
    drops = _leg_drops(params, rng)
    sx, _, sz = node_at(params.spawn)
    floor = params.top_floor
    path = [(sx, floor, sz)]
    for k in range(params.legs):
        (ax, az), (bx, bz) = lattice[k], lattice[k + 1]
        dx, dz = bx - ax, bz - az
        cell_drops = _cell_drops(params, int(drops[k]), rng)
        for j in range(1, params.leg + 1):
            floor -= cell_drops[j - 1]
            path.append((sx + params.leg * ax + j * dx, floor, sz + params.leg * az + j * dz))
    alcove = _lava_alcove(lattice, rng)

    hw, room = params.half_width, params.half_width + 1
    xs = [p[0] for p in path]
    zs = [p[2] for p in path]
    reach = room + params.lava_pool
    lo = (min(xs) - reach - 1, params.bottom_floor - 1, min(zs) - reach - 1)
    hi = (max(xs) + reach + 1, params.top_floor + params.headroom + 1, max(zs) + reach + 1)
    shape = tuple(b - a + 1 for a, b in zip(lo, hi, strict=True))
    world = World(materials, shape, origin=lo, fill=params.wall)

    for i, (x, f, z) in enumerate(path):
        upper = max(f, path[i - 1][1]) if i else f
        r = room if i in (0, len(path) - 1) else hw
        world.fill((x - r, f + 1, z - r), (x + r, upper + params.headroom, z + r), AIR)
    if alcove is not None and params.lava_pool > 0:
        k, (dx, dz) = alcove
        x, f, z = path[k * params.leg]
        near, far = hw + 1, hw + params.lava_pool
        box = _span(x, dx, near, far, hw), _span(z, dz, near, far, hw)
        world.fill((box[0][0], f + 1, box[1][0]), (box[0][1], f + params.headroom, box[1][1]), AIR)
        world.fill((box[0][0], f, box[1][0]), (box[0][1], f, box[1][1]), LAVA)
    for i in range(0, len(path), params.torch_every):
        x, f, z = path[i]
        nx, nz = _side(path, i)
        side = 1 if (i // params.torch_every) % 2 == 0 else -1
        spot = (x + side * hw * nx, f + params.headroom, z + side * hw * nz)
        if world.get(*spot) == AIR:
            world.set(*spot, TORCH)
    world.compute_light()
    return Cave(world, tuple(path))


def _lattice_walk(legs: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """A self-avoiding walk of ``legs`` unit steps from (0, 0), redrawn until one fits."""
    for _ in range(MAX_WALK_TRIES):
        walk = [(0, 0)]
        seen = {(0, 0)}
        while len(walk) <= legs:
            x, z = walk[-1]
            free = [(x + dx, z + dz) for dx, dz in DIRECTIONS if (x + dx, z + dz) not in seen]
            if not free:
                break
            step = free[int(rng.integers(len(free)))]
            walk.append(step)
            seen.add(step)
        if len(walk) == legs + 1:
            return walk
    raise ValueError(f"Speleo cave: no self-avoiding walk of {legs} legs found")


def _leg_drops(params: CaveParams, rng: np.random.Generator) -> np.ndarray:
    """Nodes each leg descends: at least one, at most ``drop_per_leg``, summing to the depth."""
    drops = np.ones(params.legs, dtype=np.int64)
    for _ in range(params.top_floor - params.bottom_floor - params.legs):
        open_legs = np.flatnonzero(drops < params.drop_per_leg)
        drops[open_legs[int(rng.integers(len(open_legs)))]] += 1
    return drops


def _cell_drops(params: CaveParams, drop: int, rng: np.random.Generator) -> np.ndarray:
    """How far each node of a leg lies below the previous one; the first and last node of a leg
    (the corners) stay level with their neighbours so turns happen on flat ground."""
    cells = np.zeros(params.leg, dtype=np.int64)
    inner = np.arange(1, params.leg - 1)
    if rng.random() < params.ledge_chance:
        cells[rng.choice(inner)] = drop
    else:
        cells[rng.choice(inner, size=drop, replace=False)] = 1
    return cells


def _lava_alcove(lattice, rng: np.random.Generator):
    """A lattice point of the walk (not the first or last) and a direction toward a lattice
    point the walk never visits, so the alcove there touches no other corridor; None when no
    point has one."""
    visited = set(lattice)
    options = [
        (k, (dx, dz))
        for k in range(1, len(lattice) - 1)
        for dx, dz in DIRECTIONS
        if (lattice[k][0] + dx, lattice[k][1] + dz) not in visited
    ]
    if not options:
        return None
    return options[int(rng.integers(len(options)))]


def _span(centre: int, direction: int, near: int, far: int, half_width: int) -> tuple[int, int]:
    """Node range along one axis of a box ``near..far`` nodes from ``centre`` in ``direction``
    (0: the box is ``2·half_width + 1`` wide around ``centre`` on this axis)."""
    if direction == 0:
        return centre - half_width, centre + half_width
    a, b = centre + direction * near, centre + direction * far
    return min(a, b), max(a, b)


def _side(path, i: int) -> tuple[int, int]:
    """A horizontal unit vector across the corridor at path node ``i``."""
    j = min(i + 1, len(path) - 1)
    k = j - 1
    dx, dz = path[j][0] - path[k][0], path[j][2] - path[k][2]
    return abs(dz), abs(dx)


class SpeleoTask(Task):
    """Descend a torch-lit cave; reward −y per step (``Craft/Speleo-v0``)."""

    name = "Speleo"

    def __init__(self, conf=None, n_players: int = 1):
        super().__init__(conf, n_players)
        self.cave = CaveParams.from_table(self.table["cave"])
        # Success: the feet went below this y, into the lowest two node layers of the cave.
        self.goal_y = self.cave.bottom_floor + 0.5 + 2.0

    def build_world(self, map_seed: int | None) -> World:
        seed = self.cave.canonical_seed if map_seed is None else map_seed
        return carve_cave(self.materials, self.cave, seed).world

    def reset(self, sim: CraftSim) -> None:
        player = sim.avatars[0].player
        player.position[:] = self.cave.spawn
        player.yaw = float(sim.rng.uniform(0.0, 360.0))
        player.pitch = 0.0

    def end_step(self, sim: CraftSim) -> tuple[np.ndarray, bool]:
        rewards, terminated = super().end_step(sim)
        rewards[0] -= float(sim.avatars[0].player.position[1])
        return rewards, terminated

    def info(self, sim: CraftSim) -> dict:
        avatar = sim.avatars[0]
        return {"y": float(avatar.player.position[1]), "min_y": float(avatar.min_y)}

    def success(self, sim: CraftSim) -> bool:
        return sim.avatars[0].min_y < self.goal_y
