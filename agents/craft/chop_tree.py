"""Scripted chopper for ``Craft/ChopTree-v0``: pick the nearest trunk node, walk to it, dig it.

Reads the world grid and the player's pose from the simulation (``env.unwrapped.sim``), as
scripted controllers may. Each step, in order:

1. dig whatever trunk node the view points at;
2. otherwise aim at the target: the trunk node that is cheapest to reach (horizontal distance
   from the player plus twice its height above the eye), chosen again whenever the current one
   is gone; turn with ``mouse x±`` toward its yaw, walk (``forward``) while it is beyond digging
   reach, jump when walking makes no progress, then tilt with ``mouse y±`` onto it;
3. when aimed at the target but pointing at something nearer in the way (leaves), dig that.

A target the agent cannot get at within ``patience`` steps is given up for the episode. The
agent sets ChopTree's score ``hi`` (``data/tasks/chop_tree.yaml``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from omnigym.envs.craft.digging import pointed_node

REACH = 3.4
"""Eye-to-centre distance (nodes) within which the agent stops walking and aims."""
NEAR = 1.2
"""Horizontal distance (nodes) under which the agent never walks toward the target."""
WALK_CONE = 25.0
"""Largest yaw error (degrees) at which the agent still walks."""
STUCK_STEPS = 8
"""Walking steps with almost no horizontal progress before a jump."""


class ChopTreeScripted:
    """Nearest-trunk chopper over ChopTree's ``Discrete(8)`` action set.

    Args:
        env: the ChopTree environment (registered id or ``DiscreteActionWrapper`` over
            ``CraftEnv(task="ChopTree")``).
        patience: steps spent on one target before giving it up.
    """

    def __init__(self, env: Any = None, patience: int = 400, **_kwargs: Any) -> None:
        if env is None:
            raise ValueError("ChopTreeScripted needs env: it reads the simulation")
        self.env = env
        self.patience = int(patience)
        base = env.unwrapped
        names = ("noop", *base.task.actions)
        self.forward = names.index("forward")
        self.jump = names.index("jump")
        self.dig = names.index("dig")
        self.left, self.right = names.index("mouse x-"), names.index("mouse x+")
        self.up, self.down = names.index("mouse y+"), names.index("mouse y-")
        self.yaw_step, self.pitch_step = base.camera_step()
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Forgets the target, the given-up nodes and the progress record."""
        self.target: tuple[int, int, int] | None = None
        self.given_up: set[tuple[int, int, int]] = set()
        self.target_steps = 0
        self.walk_steps = 0
        self.last_xz: np.ndarray | None = None

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        base = self.env.unwrapped
        sim, task = base.sim, base.task
        world, player, config = sim.world, sim.avatars[0].player, base.config
        pointed = pointed_node(world, player, config, sim.kernel)
        trunk_ids = task.trunk_ids
        if pointed is not None and world.get(*pointed.node) in trunk_ids:
            self.walk_steps = 0
            return self.dig
        if self.target is None or world.get(*self.target) not in trunk_ids:
            self._choose_target(world, player, config.eye_height, trunk_ids)
        elif self.target_steps >= self.patience:
            self.given_up.add(self.target)
            self._choose_target(world, player, config.eye_height, trunk_ids)
        if self.target is None:
            return self.left  # nothing left to chop: look around
        self.target_steps += 1
        eye = player.eye(config.eye_height)
        delta = np.asarray(self.target, dtype=np.float64) - eye
        horizontal = math.hypot(delta[0], delta[2])
        yaw_error = _angle(math.degrees(math.atan2(-delta[0], delta[2])) - player.yaw)
        pitch_error = math.degrees(math.atan2(-delta[1], horizontal)) - player.pitch
        far = np.linalg.norm(delta) > REACH and horizontal > NEAR
        if abs(yaw_error) > (WALK_CONE if far else self.yaw_step / 2):
            self.walk_steps = 0
            return self.left if yaw_error > 0 else self.right
        if far:
            return self._walk(player)
        if abs(pitch_error) > self.pitch_step / 2:
            return self.down if pitch_error > 0 else self.up
        if pointed is not None and pointed.distance < np.linalg.norm(delta):
            return self.dig  # something (leaves) stands between the eye and the target
        return self._walk(player)

    def _walk(self, player) -> int:
        xz = player.position[[0, 2]].copy()
        moved = self.last_xz is None or np.abs(xz - self.last_xz).max() > 0.01
        self.last_xz = xz
        self.walk_steps = 0 if moved else self.walk_steps + 1
        if self.walk_steps >= STUCK_STEPS:
            self.walk_steps = 0
            return self.jump
        return self.forward

    def _choose_target(self, world, player, eye_height: float, trunk_ids: np.ndarray) -> None:
        nodes = np.argwhere(np.isin(world.content, trunk_ids)) + world.origin
        self.target, self.target_steps = None, 0
        if not len(nodes):
            return
        eye = player.eye(eye_height)
        horizontal = np.hypot(nodes[:, 0] - eye[0], nodes[:, 2] - eye[2])
        cost = horizontal + 2.0 * np.maximum(nodes[:, 1] - eye[1], 0.0)
        for index in np.argsort(cost, kind="stable"):
            node = tuple(int(v) for v in nodes[index])
            if node not in self.given_up:
                self.target = node
                return


def _angle(degrees: float) -> float:
    """An angle wrapped into [−180, 180)."""
    return (degrees + 180.0) % 360.0 - 180.0
