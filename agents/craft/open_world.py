"""Scripted controller for Craft's ``OpenWorld``: chop, then dig down.

Reads the simulator (``env.unwrapped.sim``), as scripted controllers may. Before the wood stage
it walks to the nearest trunk node (lowest first), turns its camera onto it and holds ``dig``
until two trunk nodes are gone; a wall in the way is jumped, and a target it cannot reach in
``give_up_steps`` steps is dropped for the next one. From the wood stage on it wields the first
hotbar slot (the new pickaxe), looks straight down and digs a shaft, which reaches stone (the
stone stage) and, deeper, whatever ore the shaft crosses. It neither hunts nor fights.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from omnigym.envs.craft.digging import pointed_node
from omnigym.envs.craft.engine import node_at

SEARCH_RADIUS = 24
"""Horizontal half-size (nodes) of the box searched for trunks around the player."""
SEARCH_BELOW, SEARCH_ABOVE = 3, 6
DIG_DISTANCE = 2.5
"""Horizontal distance from the eye to a trunk's centre at which the agent stops and aims."""
STUCK_MOVE = 0.05
"""Less horizontal movement than this (nodes) over a forward step means a wall is in the way."""


class OpenWorldScripted:
    """Chops the nearest trees to the wood stage, then digs straight down.

    Args:
        env: the ``Craft/OpenWorld-v0`` environment (any wrapper over ``CraftEnv`` with the
            task's ``DiscreteActionWrapper`` actions).
        give_up_steps: steps spent on one trunk before trying another.
    """

    def __init__(self, env: Any = None, give_up_steps: int = 400, **kwargs: Any):
        if env is None:
            raise ValueError("OpenWorldScripted needs env (it reads env.unwrapped.sim)")
        self.env = env
        self.give_up_steps = int(give_up_steps)
        base = env.unwrapped
        task = base.task
        # Index i of the wrapper presses actions[i - 1]; index 0 is the no-op.
        self.index = {name: i + 1 for i, name in enumerate(task.actions)}
        yaw_step, pitch_step = base.camera_step()
        # Within half a turn step the next turn would overshoot by more than it corrects.
        self.yaw_tolerance = yaw_step / 2 + 1e-6
        self.pitch_tolerance = pitch_step / 2 + 1e-6
        materials = task.materials
        self.trunk_ids = np.array(
            sorted(m.id for m in materials if "tree" in m.groups), dtype=np.uint16
        )
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.target: tuple[int, int, int] | None = None
        self.target_steps = 0
        self.given_up: set[tuple[int, int, int]] = set()
        self._last_position: np.ndarray | None = None
        self._walked = False

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        base = self.env.unwrapped
        sim = base.sim
        player = sim.avatars[0].player
        walked, self._walked = self._walked, False
        stuck = walked and self._moved(player.position) < STUCK_MOVE
        self._last_position = player.position.copy()
        if base.task.stage == 0:
            return self._chop(sim, player, stuck)
        return self._dig_down(sim, player)

    def _moved(self, position: np.ndarray) -> float:
        last = self._last_position
        return math.inf if last is None else math.hypot(*(position - last)[[0, 2]])

    # ---- chopping ---------------------------------------------------------------------------

    def _chop(self, sim, player, stuck: bool) -> int:
        world = sim.world
        pointed = pointed_node(world, player, sim.config, sim.kernel)
        if pointed is not None and world.get(*pointed.node) in self.trunk_ids:
            return self.index["dig"]
        if self.target is None or world.get(*self.target) not in self.trunk_ids:
            self.target, self.target_steps = self._nearest_trunk(world, player.position), 0
        self.target_steps += 1
        if self.target is not None and self.target_steps > self.give_up_steps:
            self.given_up.add(self.target)
            self.target, self.target_steps = self._nearest_trunk(world, player.position), 0
        if self.target is None:
            return self._walk(stuck)
        eye = player.eye(sim.config.eye_height)
        delta = np.asarray(self.target, dtype=np.float64) - eye
        horizontal = math.hypot(delta[0], delta[2])
        turn = self._turn_yaw(player, math.degrees(math.atan2(-delta[0], delta[2])))
        if turn:
            return turn
        if horizontal > DIG_DISTANCE:
            return self._walk(stuck)
        turn = self._turn_pitch(player, math.degrees(math.atan2(-delta[1], horizontal)))
        return turn or self.index["dig"]

    def _walk(self, stuck: bool) -> int:
        if stuck:
            return self.index["jump"]
        self._walked = True
        return self.index["forward"]

    def _nearest_trunk(self, world, position) -> tuple[int, int, int] | None:
        """The nearest trunk node in a box around the player, lower nodes first."""
        px, py, pz = node_at(position)
        origin = world.origin
        lo = np.maximum(
            np.array([px - SEARCH_RADIUS, py - SEARCH_BELOW, pz - SEARCH_RADIUS]) - origin, 0
        )
        hi = np.minimum(
            np.array([px + SEARCH_RADIUS, py + SEARCH_ABOVE, pz + SEARCH_RADIUS]) - origin + 1,
            world.shape,
        )
        box = world.content[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]]
        cells = np.argwhere(np.isin(box, self.trunk_ids)) + lo + origin
        if self.given_up:
            keep = [tuple(int(v) for v in c) not in self.given_up for c in cells]
            cells = cells[np.asarray(keep, dtype=bool)]
        if not len(cells):
            return None
        # Height costs more than distance, so a tree is felled from its base up.
        cost = (cells[:, 0] - px) ** 2 + (cells[:, 2] - pz) ** 2 + 4 * (cells[:, 1] - py) ** 2
        return tuple(int(v) for v in cells[int(np.argmin(cost))])

    # ---- digging down -----------------------------------------------------------------------

    def _dig_down(self, sim, player) -> int:
        if player.inventory.selected != 0:
            return self.index["slot_1"]
        turn = self._turn_pitch(player, 90.0)
        if turn:
            return turn
        if pointed_node(sim.world, player, sim.config, sim.kernel) is None:
            return self.index["forward"]
        return self.index["dig"]

    # ---- camera -----------------------------------------------------------------------------

    def _turn_yaw(self, player, yaw: float) -> int:
        diff = (yaw - player.yaw + 180.0) % 360.0 - 180.0
        if abs(diff) <= self.yaw_tolerance:
            return 0
        return self.index["mouse x-"] if diff > 0 else self.index["mouse x+"]

    def _turn_pitch(self, player, pitch: float) -> int:
        pitch = min(pitch, 90.0 - self.pitch_tolerance)
        diff = pitch - player.pitch
        if abs(diff) <= self.pitch_tolerance:
            return 0
        return self.index["mouse y-"] if diff > 0 else self.index["mouse y+"]
