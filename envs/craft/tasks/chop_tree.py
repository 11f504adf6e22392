"""Craftium's ``ChopTree``: fell trunk nodes in a dense forest with a steel axe.

Follows Craftium's chop-tree task (Malagón, Ceberio, Lozano, ICML 2025).

- **World**: ``terrain.generate_forest`` (48×32×48 nodes of rolling grass hills under a dense
  forest of minetest_game's five tree kinds). The ``seed`` kwarg is the forest's seed; None
  selects the canonical forest (``world.canonical_seed`` in ``data/tasks/chop_tree.yaml``).
- **Start**: the player stands on the ground of the centre column of the map (the terrain's
  spawn, inside a clearing with no trunk), pitch 0, facing a yaw drawn uniformly from [0, 360)
  with the episode's generator, so episodes differ by reset seed. It wields a steel axe
  (``default:axe_steel``) in hotbar slot 1 and holds nothing else.

Actions (after the no-op) and ``mouse_mov``: ``data/tasks/chop_tree.yaml`` (``Discrete(8)``). Reward
+1 for every trunk node dug: every node whose name contains ``tree`` (``default:tree``,
``jungletree``, ``pine_tree``, ``acacia_tree``, ``aspen_tree``), summed over the frames of a step. A
trunk node of group ``choppy=2`` (apple, jungle, acacia) takes 1.4 s = 280 frames with the steel axe
at the default 200 FPS; pine and aspen (``choppy=3``) take 1.0 s. The episode terminates when the
player dies (damage on: falls); truncation after 2000 steps. Success: at least one trunk node dug.
``info["task"]``: ``trunks_dug``; final ``metrics``: ``trunks_dug``, ``damage_taken``, ``distance``,
``min_y``. Score range: 0 to the mean return of the scripted chopper
(``agents/craft/chop_tree.py``).

Departures from Craftium: its forest is a shipped Luanti map; this one is generated. Craftium's map
fixes the spawn pose; here the yaw is drawn from the episode's generator (see above), the only thing
the reset seed changes, so that seeds give different episodes.
"""

from __future__ import annotations

import numpy as np

from omnigym.envs.craft.core import CraftSim, FrameEvents
from omnigym.envs.craft.engine import MaterialTable, World
from omnigym.envs.craft.tasks.base import Task
from omnigym.envs.craft.terrain import generate_forest

TRUNK_MARK = "tree"
"""A node counts as a trunk when its name contains this (Craftium's rule)."""


def trunk_names(materials: MaterialTable) -> frozenset[str]:
    """Names of every trunk node of the material table."""
    return frozenset(m.name for m in materials if TRUNK_MARK in m.name)


class ChopTreeTask(Task):
    """A dense forest, a steel axe, +1 per trunk node (``Craft/ChopTree-v0``)."""

    name = "ChopTree"

    def __init__(self, conf=None, n_players: int = 1):
        super().__init__(conf, n_players)
        world = self.table["world"]
        self.canonical_seed = int(world["canonical_seed"])
        self.tool = str(world["tool"])
        if self.tool not in self.tools:
            raise ValueError(f"ChopTree: world.tool {self.tool!r} is not in tools.yaml")
        self.trunk_names = trunk_names(self.materials)
        self.trunk_ids = np.array(
            sorted(self.materials.id(name) for name in self.trunk_names), dtype=np.uint16
        )
        self.trunks_dug = 0

    def build_world(self, map_seed: int | None) -> World:
        seed = self.canonical_seed if map_seed is None else map_seed
        return generate_forest(self.materials, seed).world

    def reset(self, sim: CraftSim) -> None:
        player = sim.avatars[0].player
        player.position[:] = spawn_position(sim.world)
        player.yaw = float(sim.rng.uniform(0.0, 360.0))
        player.pitch = 0.0
        player.inventory.slots[0] = (self.tool, 1)
        player.inventory.select(0)
        self.trunks_dug = 0

    def luanti_data(self, world: World) -> dict:
        return {"spawn": spawn_position(world).tolist(), "tool": self.tool}

    def frame(self, sim: CraftSim, events: list[FrameEvents]) -> bool:
        for dug in events[0].dug:
            if dug.name in self.trunk_names:
                self.trunks_dug += 1
                self.rewards[0] += 1.0
        return False

    def info(self, sim: CraftSim) -> dict:
        return {"trunks_dug": self.trunks_dug}

    def success(self, sim: CraftSim) -> bool:
        return self.trunks_dug >= 1

    def metrics(self, sim: CraftSim) -> dict[str, float]:
        return {**super().metrics(sim), "trunks_dug": float(self.trunks_dug)}


def spawn_position(world: World) -> np.ndarray:
    """The standing position on the centre column of the forest (the terrain's spawn).

    ``generate_forest`` keeps a trunk-free clearing around the centre and spawns there; this
    finds the same place from the grid alone: the lowest node of the centre column with a
    walkable node under it and room for the body (two non-walkable nodes), feet on its floor.
    """
    sx, _, sz = world.shape
    cx, cz = sx // 2, sz // 2
    walkable = world.materials.walkable[world.content[cx, :, cz]]
    room = walkable[:-2] & ~walkable[1:-1] & ~walkable[2:]
    if not room.any():
        raise ValueError("the centre column of the forest has no room to stand")
    floor = int(np.argmax(room))
    origin = world.origin
    return np.array([float(cx + origin[0]), float(floor + origin[1]) + 0.5, float(cz + origin[2])])


__all__ = ["ChopTreeTask", "spawn_position", "trunk_names"]
