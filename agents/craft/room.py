"""Scripted walker for ``Craft/Room-v0`` and ``Craft/SmallRoom-v0``: face the target, walk to it.

Reads the target's node (``info["task"]["target"]``) and the player's pose (``info``'s
``player_pos`` and ``player_yaw``, Craftium's keys), so it plays both backends, the embedded
engine and Luanti. It turns with the task's ``mouse x±`` actions until the target lies within
half a turn of the view, then holds ``forward``. The collision with the target block stops it,
inside the task's threshold.
"""

from __future__ import annotations

import math
from typing import Any


class RoomScripted:
    """Turn-then-walk controller over the registered ``Discrete(4)`` action set."""

    def __init__(self, env: Any, **_kwargs: Any) -> None:
        self.env = env
        base = env.unwrapped
        self.actions = ("noop", *base.task.actions)
        self.turn_per_step, _ = base.camera_step()

    def reset(self, seed: int | None = None) -> None:
        """Stateless: nothing to reset."""

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        tx, _, tz = info["task"]["target"]
        x, _, z = info["player_pos"]
        dx, dz = tx - float(x), tz - float(z)
        desired = math.degrees(math.atan2(-dx, dz))  # yaw 0 faces +z, yaw 90 faces -x
        error = (desired - info["player_yaw"] + 180.0) % 360.0 - 180.0
        if error > self.turn_per_step / 2:
            return self.actions.index("mouse x-")  # turn left: yaw grows
        if error < -self.turn_per_step / 2:
            return self.actions.index("mouse x+")
        return self.actions.index("forward")
