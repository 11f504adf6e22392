"""Scripted dungeon crawler for ``Craft/ProcDungeons-v0``: kill every monster, then take the prize.

Reads the simulation (``env.unwrapped``): the world grid, the player's pose and the entities.
The target is the nearest live monster, or the objective once none is left. The agent walks a
breadth-first path over the dungeon's floor cells (8-connected; a diagonal step needs both
orthogonal cells free), steering at the farthest of the next few path cells that a straight line
reaches without brushing a wall. It turns with ``mouse x±`` when the heading is off by more than
``WALK_TOLERANCE``, holds ``forward`` below ``SPEED_CAP`` and uses the steps above it to correct
the heading while it slows. Near the target it turns and tilts toward the target's box until the
view ray meets it, then holds ``dig``: a sword punch on a monster, a pick-up on the objective.

It plans on the map's first floor (layer 1 of the ASCII map, where ``@`` stands), which is the
only floor of Craftium's maps and of ``RandomMapGen``'s. No look-ahead for monsters' attacks: on
maps with many strong monsters it can die (it clears tasks 0-9 of ``sequence0_25``).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from omnigym.envs.craft.digging import pointed_node
from omnigym.envs.craft.engine import node_at

SPEED_CAP = 5.0
"""Horizontal speed (nodes/s) above which the agent stops pressing forward."""
WALK_TOLERANCE = 20.0
"""Heading error (degrees) beyond which the agent turns on the spot instead of walking."""
LOOK_AHEAD = 6
"""Path cells considered as the next steering point."""
BODY_RADIUS = 0.4
"""Clearance (nodes) a steering line keeps from walls: half the player's width plus slack."""
FIGHT_DISTANCE = 2.8
"""Horizontal distance (nodes) within which the agent aims at a monster instead of walking."""
PICK_DISTANCE = 2.2
"""Horizontal distance within which the agent aims at the objective."""
_NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))


class ProcDungeonsScripted:
    """Path-finding fighter over the registered ``Discrete(10)`` action set."""

    def __init__(self, env: Any = None, **_kwargs: Any) -> None:
        if env is None:
            raise ValueError("ProcDungeonsScripted needs the env it plays (env=...)")
        self.env = env
        base = env.unwrapped
        self.actions = ("noop", *base.task.actions)
        self.yaw_step, self.pitch_step = base.camera_step()
        self._world = None
        self._free: np.ndarray | None = None
        self._fields: dict[tuple[int, int], np.ndarray] = {}

    def reset(self, seed: int | None = None) -> None:
        """Forgets the floor plan; it is read again from the next episode's world."""
        self._world = None

    # ---- floor plan -------------------------------------------------------------------------

    def _floor_plan(self, sim) -> None:
        """Free cells ``[x, z]`` (grid indices): solid floor, two clear layers above it."""
        world = sim.world
        walkable = sim.materials.walkable[world.content]
        floor_y = 0 - int(world.origin[1])
        self._free = walkable[:, floor_y, :] & ~walkable[:, floor_y + 1, :]
        self._free &= ~walkable[:, floor_y + 2, :]
        self._origin = (int(world.origin[0]), int(world.origin[2]))
        self._fields = {}
        self._world = world

    def _cell(self, x: float, z: float) -> tuple[int, int]:
        nx, _, nz = node_at((x, 0.0, z))
        return nx - self._origin[0], nz - self._origin[1]

    def _is_free(self, i: int, k: int) -> bool:
        free = self._free
        return 0 <= i < free.shape[0] and 0 <= k < free.shape[1] and bool(free[i, k])

    def _distances(self, goal: tuple[int, int]) -> np.ndarray:
        """Path lengths (in moves) to ``goal`` from every free cell; −1 where unreachable."""
        field = self._fields.get(goal)
        if field is not None:
            return field
        field = np.full(self._free.shape, -1, dtype=np.int64)
        if self._is_free(*goal):
            field[goal] = 0
            queue = deque([goal])
            while queue:
                i, k = queue.popleft()
                for di, dk in _NEIGHBOURS:
                    ni, nk = i + di, k + dk
                    if not self._is_free(ni, nk) or field[ni, nk] >= 0:
                        continue
                    if di and dk and not (self._is_free(i + di, k) and self._is_free(i, k + dk)):
                        continue
                    field[ni, nk] = field[i, k] + 1
                    queue.append((ni, nk))
        self._fields[goal] = field
        return field

    def _path(self, start: tuple[int, int], goal: tuple[int, int]) -> list[tuple[int, int]]:
        """Up to ``LOOK_AHEAD`` cells from ``start`` (excluded) down the distance field."""
        field = self._distances(goal)
        path, cell = [], start
        if not self._is_free(*cell) or field[cell] < 0:
            return path
        while field[cell] > 0 and len(path) < LOOK_AHEAD:
            i, k = cell
            options = [
                (int(field[i + di, k + dk]), (i + di, k + dk))
                for di, dk in _NEIGHBOURS
                if self._is_free(i + di, k + dk) and 0 <= field[i + di, k + dk] < field[cell]
            ]
            cell = min(options)[1]
            path.append(cell)
        return path

    def _clear_line(self, start: np.ndarray, end: np.ndarray) -> bool:
        """True when a body of ``BODY_RADIUS`` moving from ``start`` to ``end`` (x, z) meets no
        blocked cell."""
        samples = max(2, int(np.hypot(*(end - start)) / 0.2) + 1)
        for t in np.linspace(0.0, 1.0, samples):
            x, z = start + t * (end - start)
            for ox in (-BODY_RADIUS, BODY_RADIUS):
                for oz in (-BODY_RADIUS, BODY_RADIUS):
                    if not self._is_free(*self._cell(x + ox, z + oz)):
                        return False
        return True

    # ---- acting -----------------------------------------------------------------------------

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        base = self.env.unwrapped
        sim = base.sim
        if self._world is not sim.world:
            self._floor_plan(sim)
        player = sim.avatars[0].player
        target = self._target(sim, player.position)
        if target is None:
            return self.actions.index("noop")
        monster = target.kind != "item"
        here = np.array([player.position[0], player.position[2]])
        there = np.array([target.position[0], target.position[2]])
        reach = FIGHT_DISTANCE if monster else PICK_DISTANCE
        if np.hypot(*(there - here)) <= reach:
            return self._strike(sim, player, target)
        start, goal = self._cell(*here), self._cell(*there)
        aim = there
        for i, k in reversed(self._path(start, goal)):
            centre = np.array([i + self._origin[0], k + self._origin[1]], dtype=np.float64)
            if self._clear_line(here, centre):
                aim = centre
                break
        return self._walk(player, aim - here)

    def _target(self, sim, position: np.ndarray):
        monsters = [e for e in sim.entities if e.kind.startswith("monster_") and not e.removed]
        pool = monsters or [e for e in sim.entities if e.kind == "item" and not e.removed]
        if not pool:
            return None
        return min(pool, key=lambda e: float(np.sum((e.position - position) ** 2)))

    def _turn(self, error: float) -> int:
        return self.actions.index("mouse x-" if error > 0 else "mouse x+")

    def _walk(self, player, delta: np.ndarray) -> int:
        error = _yaw_error(player.yaw, delta)
        speed = math.hypot(player.velocity[0], player.velocity[2])
        if abs(error) > WALK_TOLERANCE:
            return self._turn(error)
        if speed >= SPEED_CAP:
            return (
                self._turn(error) if abs(error) > self.yaw_step / 2 else self.actions.index("noop")
            )
        return self.actions.index("forward")

    def _strike(self, sim, player, target) -> int:
        """Aims at the target's box and holds ``dig`` once the view ray meets it."""
        config = sim.config
        eye = player.eye(config.eye_height)
        node = pointed_node(sim.world, player, config, sim.kernel)
        limit = min(config.interaction_range, node.distance if node is not None else math.inf)
        pointed = sim.entities.pointed(eye, player.look_direction(), limit)
        if pointed is not None and pointed[0] is target:
            return self.actions.index("dig")
        _, height = target.half_extents()
        centre = target.position + (0.0, 0.5 * height, 0.0)
        delta = centre - eye
        yaw_error = _yaw_error(player.yaw, delta[[0, 2]])
        pitch = math.degrees(math.atan2(-delta[1], math.hypot(delta[0], delta[2])))
        pitch_error = pitch - player.pitch
        if abs(yaw_error) > self.yaw_step / 2:
            return self._turn(yaw_error)
        if abs(pitch_error) > self.pitch_step / 2:
            return self.actions.index("mouse y-" if pitch_error > 0 else "mouse y+")
        return self.actions.index("dig")


def _yaw_error(yaw: float, delta: np.ndarray) -> float:
    """Signed degrees to turn (positive = left) to face the horizontal direction (dx, dz)."""
    desired = math.degrees(math.atan2(-delta[0], delta[1]))  # yaw 0 faces +z, 90 faces -x
    return (desired - yaw + 180.0) % 360.0 - 180.0
