"""Scripted descender for ``Craft/Speleo-v0``: find the deepest reachable floor, walk there.

Reads the world grid and the player's pose from the simulation (``env.unwrapped.sim``), as
scripted controllers may. On the first step of an episode it searches the cave (cheapest first
over the cells a body can stand in, moving to a neighbouring column by walking, jumping one
node up or dropping at most ``MAX_DROP`` nodes, never into a damaging node such as lava) for the
deepest cell it can reach, keeping to the middle of corridors, and keeps the path there. Then
each step it turns (``mouse x±``) toward the path node ``LOOKAHEAD`` nodes past the nearest one,
walks (``forward``) when facing it and slower than ``MAX_SPEED``, jumps when walking makes no
progress, and stands still at the end. The agent sets Speleo's score ``hi``
(``data/tasks/speleo.yaml``).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from omnigym.envs.craft.engine import World, node_at

MAX_DROP = 4
"""Deepest drop (nodes) the search allows; Luanti's fall damage starts past 5."""
WALL_COST = 3.0
"""Cost of a path step into a cell beside a wall (1 elsewhere)."""
LOOKAHEAD = 2
"""Path nodes between the nearest one and the one the agent heads for."""
SEARCH_AHEAD = 8
"""Path nodes past the last nearest one searched for the new nearest one."""
WALK_CONE = 15.0
"""Largest yaw error (degrees) at which the agent walks instead of turning."""
MAX_SPEED = 15.0
"""Horizontal speed (nodes/s) above which the agent stops pressing ``forward``."""
STUCK_STEPS = 8
"""Walking steps on the ground slower than ``STUCK_SPEED`` before a jump."""
STUCK_SPEED = 0.05
"""Horizontal speed (nodes/s) under which a walking body counts as blocked."""


def descent_path(world: World, start: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """The cheapest path of standing cells (feet nodes) from ``start`` to the deepest one.

    A standing cell has a walkable node under it and two non-walkable, harmless nodes (feet
    and head). From a cell the body moves to a standing cell of a side neighbour column that is
    one node higher (a jump, with room over the head), level, or at most ``MAX_DROP`` lower with
    nothing in the way of the fall. A step costs 1, or ``WALL_COST`` into a cell beside a wall,
    so the path keeps to the middle of corridors. ``start`` is a feet node; the search starts at
    the first standing cell at or under it. Among the deepest reachable cells the cheapest wins.
    """
    materials = world.materials
    walkable = materials.walkable[world.content]
    harm = np.isin(world.content, [m.id for m in materials if m.damage_per_second > 0])
    body = ~walkable & ~harm
    stand = np.zeros_like(walkable)
    stand[:, 1:-1, :] = walkable[:, :-2, :] & body[:, 1:-1, :] & body[:, 2:, :]
    room = np.zeros_like(walkable)  # feet and head free in all four side columns
    room[1:-1, :-1, 1:-1] = np.all(
        [
            ~walkable[2:, :-1, 1:-1] & ~walkable[2:, 1:, 1:-1],
            ~walkable[:-2, :-1, 1:-1] & ~walkable[:-2, 1:, 1:-1],
            ~walkable[1:-1, :-1, 2:] & ~walkable[1:-1, 1:, 2:],
            ~walkable[1:-1, :-1, :-2] & ~walkable[1:-1, 1:, :-2],
        ],
        axis=0,
    )
    origin = world.origin
    x, y, z = (int(v) for v in np.asarray(start) - origin)
    while y > 0 and not stand[x, y, z]:
        y -= 1
    if not stand[x, y, z]:
        raise ValueError(f"no standing cell at or under {start}")
    sx, sy, sz = stand.shape
    first = (x, y, z)
    cost = {first: 0.0}
    parent = {first: None}
    heap = [(0.0, first)]
    best = first
    while heap:
        here, cell = heapq.heappop(heap)
        if here > cost[cell]:
            continue
        cx, cy, cz = cell
        if cy < best[1]:
            best = cell
        for dx, dz in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nx, nz = cx + dx, cz + dz
            if not (0 <= nx < sx and 0 <= nz < sz):
                continue
            for ny in range(min(cy + 1, sy - 2), max(cy - MAX_DROP, 1) - 1, -1):
                if not stand[nx, ny, nz]:
                    continue
                if ny > cy and walkable[cx, cy + 2, cz]:
                    continue  # no room to jump
                if ny < cy and walkable[nx, ny : cy + 2, nz].any():
                    continue  # something in the way of the fall
                step = here + (1.0 if room[nx, ny, nz] else WALL_COST)
                if step < cost.get((nx, ny, nz), math.inf):
                    cost[(nx, ny, nz)] = step
                    parent[(nx, ny, nz)] = cell
                    heapq.heappush(heap, (step, (nx, ny, nz)))
    path = []
    cell = best
    while cell is not None:
        path.append(tuple(int(v) for v in np.asarray(cell) + origin))
        cell = parent[cell]
    return path[::-1]


class SpeleoScripted:
    """Path-following descender over Speleo's ``Discrete(7)`` action set.

    Args:
        env: the Speleo environment (registered id or ``DiscreteActionWrapper`` over
            ``CraftEnv(task="Speleo")``).
    """

    def __init__(self, env: Any = None, **_kwargs: Any) -> None:
        if env is None:
            raise ValueError("SpeleoScripted needs env: it reads the simulation")
        self.env = env
        base = env.unwrapped
        names = ("noop", *base.task.actions)
        self.noop = 0
        self.forward = names.index("forward")
        self.jump = names.index("jump")
        self.left, self.right = names.index("mouse x-"), names.index("mouse x+")
        self.yaw_step, _ = base.camera_step()
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Forgets the path; the next step searches the cave again."""
        self.path: np.ndarray | None = None
        self.progress = 0
        self.walk_steps = 0

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        sim = self.env.unwrapped.sim
        player = sim.avatars[0].player
        if self.path is None:
            self.path = np.array(descent_path(sim.world, node_at(player.position)), dtype=float)
        window = self.path[self.progress : self.progress + SEARCH_AHEAD + 1]
        gaps = np.hypot(window[:, 0] - player.position[0], window[:, 2] - player.position[2])
        self.progress += int(np.argmin(gaps))
        if self.progress == len(self.path) - 1 and gaps.min() < 0.5:
            return self.noop
        target = self.path[min(self.progress + LOOKAHEAD, len(self.path) - 1)]
        dx, dz = target[0] - player.position[0], target[2] - player.position[2]
        error = _angle(math.degrees(math.atan2(-dx, dz)) - player.yaw)
        if abs(error) > max(WALK_CONE, self.yaw_step / 2):
            self.walk_steps = 0
            return self.left if error > 0 else self.right
        speed = math.hypot(player.velocity[0], player.velocity[2])
        if speed > MAX_SPEED:
            return self.noop
        stuck = player.on_ground and speed < STUCK_SPEED
        self.walk_steps = self.walk_steps + 1 if stuck else 0
        if self.walk_steps >= STUCK_STEPS:
            self.walk_steps = 0
            return self.jump
        return self.forward


def _angle(degrees: float) -> float:
    """An angle wrapped into [−180, 180)."""
    return (degrees + 180.0) % 360.0 - 180.0
