"""Craftium's ``Room`` and ``SmallRoom``: walk to the orange block in a closed room.

Follows Craftium's room tasks (Malagón, Ceberio, Lozano, ICML 2025).

- **Room**: a closed room whose interior spans x ∈ [−13.2, 4.2], z ∈ [−24.2, −0.8]. The agent
  starts uniformly in x ∈ [−13.2, 4.2], z ∈ [−15.2, −10] at y = 6 facing +z; the target, one
  ``default:coral_orange`` block, stands uniformly in x ∈ [−13.2, 4.2], z ∈ [−9, −0.8].
- **SmallRoom**: a 10×10 room whose floor node spans y ∈ [4.5, 5.5]; the agent starts standing
  at (5, 5.5, 1) facing +z; the target stands uniformly in x ∈ [1, 9], z ∈ [5, 9].

Reward −1 per step. The episode terminates when the horizontal squared distance between the
agent and the target is below 5.0 (Room) or 3.0 (SmallRoom); truncation after 1000 / 500 steps.
Actions (after the no-op) and ``mouse_mov``: ``data/tasks/room.yaml`` (``Discrete(4)``).

Departures: Craftium's rooms are shipped map files; these are built from their published
coordinates (walls of ``default:stonebrick``, floor of ``default:stone``, lit by sunlight). The
target's sampled position is rounded to the node that holds it, since blocks sit on nodes; the
distance test uses the node centre.
"""

from __future__ import annotations

import math

import numpy as np

from omnigym.envs.craft.core import CraftSim
from omnigym.envs.craft.engine import World
from omnigym.envs.craft.tasks.base import Task, walled_floor

WALL = "default:stonebrick"
FLOOR = "default:stone"
TARGET = "default:coral_orange"


class RoomTask(Task):
    """The large room (``Craft/Room-v0``)."""

    name = "Room"
    interior = ((-13.2, 4.2), (-24.2, -0.8))  # x and z ranges
    floor_y = 5  # top face of the floor node at 5.5
    wall_height = 5
    spawn_x, spawn_z = (-13.2, 4.2), (-15.2, -10.0)
    spawn_y = 6.0
    target_x, target_z = (-13.2, 4.2), (-9.0, -0.8)
    threshold = 5.0

    def build_world(self, map_seed: int | None) -> World:
        (x0, x1), (z0, z1) = self.interior
        nodes = ((_node(x0), _node(x1)), (_node(z0), _node(z1)))
        return walled_floor(self.materials, nodes, self.floor_y, self.wall_height, WALL, FLOOR)

    def spawn_position(self, rng: np.random.Generator) -> np.ndarray:
        x = rng.uniform(*self.spawn_x)
        z = rng.uniform(*self.spawn_z)
        return np.array([x, self.spawn_y, z])

    def reset(self, sim: CraftSim) -> None:
        rng = sim.rng
        player = sim.avatars[0].player
        player.position[:] = self.spawn_position(rng)
        player.yaw, player.pitch = 0.0, 0.0
        tx = rng.uniform(*self.target_x)
        tz = rng.uniform(*self.target_z)
        self.target = (_node(tx), self.floor_y + 1, _node(tz))
        sim.world.set(*self.target, TARGET)
        self.reached = False

    def distance2(self, sim: CraftSim) -> float:
        p = sim.avatars[0].player.position
        return (p[0] - self.target[0]) ** 2 + (p[2] - self.target[2]) ** 2

    def frame(self, sim: CraftSim, events) -> bool:
        self.reached = self.reached or self.distance2(sim) < self.threshold
        return self.reached

    def end_step(self, sim: CraftSim) -> tuple[np.ndarray, bool]:
        return np.array([-1.0]), self.reached

    def info(self, sim: CraftSim) -> dict:
        return {"target": self.target, "distance2": float(self.distance2(sim))}

    def success(self, sim: CraftSim) -> bool:
        return self.reached


class SmallRoomTask(RoomTask):
    """The 10×10 room (``Craft/SmallRoom-v0``)."""

    name = "SmallRoom"
    interior = ((0.0, 9.0), (0.0, 9.0))
    target_x, target_z = (1.0, 9.0), (5.0, 9.0)
    threshold = 3.0

    def spawn_position(self, rng: np.random.Generator) -> np.ndarray:
        return np.array([5.0, 5.5, 1.0])


def _node(v: float) -> int:
    """The node index holding coordinate ``v`` (Luanti's rounding)."""
    return int(math.floor(v + 0.5))
