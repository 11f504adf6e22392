"""Scripted fighter for ``Craft/SpidersAttack-v0``: face the nearest spider, close in, strike.

Reads the spiders, the player's pose and the sword's punch timer from the simulation
(``env.unwrapped``). The sword reaches 4 nodes and a spider 2, so the fighter strikes from
outside the spider's reach and sidesteps while the sword recharges. Each step it takes one of
the task's ``Discrete(10)`` actions, in this order of priority:

1. ``left`` or ``right`` (whichever heads toward the cage's centre) while the sword is
   recharging and the nearest spider is closer than ``retreat`` nodes, feet to feet;
2. ``dig`` when the view ray meets a spider within the interaction range (the cage holds no
   node that could stand in between);
3. ``mouse x±`` while the yaw toward the nearest spider's body centre is off by more than half a
   turn step, then ``mouse y±`` for the pitch;
4. ``forward`` while that spider is farther than ``close`` nodes, else ``dig``.

With no spider alive (between rounds) it levels its view and waits.
"""

from __future__ import annotations

import math
from typing import Any


class SpidersAttackScripted:
    """Aim-then-strike controller over the registered ``Discrete(10)`` action set.

    Args:
        env: the environment (wrapped or not); its ``unwrapped`` simulation is read.
        close: feet-to-feet distance (nodes) under which it stops walking toward a spider.
        retreat: feet-to-feet distance (nodes) under which it sidesteps while the sword
            recharges.
    """

    def __init__(self, env: Any, close: float = 3.0, retreat: float = 2.8, **_kwargs: Any) -> None:
        self.env = env
        self.retreat = float(retreat)
        self.close = float(close)
        base = env.unwrapped
        self.actions = ("noop", *base.task.actions)
        yaw_step, pitch_step = base.camera_step()
        self.yaw_band, self.pitch_band = yaw_step / 2, pitch_step / 2

    def reset(self, seed: int | None = None) -> None:
        """Stateless: nothing to reset."""

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        base = self.env.unwrapped
        sim = base.sim
        config = sim.config
        player = sim.avatars[0].player
        eye = player.eye(config.eye_height)
        spiders = [e for e in sim.entities if e.kind == "spider" and not e.removed]
        if not spiders:
            return self._pitch_toward(0.0, player.pitch, self.actions.index("noop"))
        p = player.position
        target = min(spiders, key=lambda e: float(((e.position - p) ** 2).sum()))
        avatar = sim.avatars[0]
        interval = sim.tools.wielded_tool(player.inventory.wielded).full_punch_interval
        ready = sim.time - avatar.last_punch + base.mt_dtime >= interval
        feet = math.hypot(target.position[0] - p[0], target.position[2] - p[2])
        if not ready and feet < self.retreat:
            return self._strafe(base.task, player)
        pointed = sim.entities.pointed(eye, player.look_direction(), config.interaction_range)
        if pointed is not None and pointed[0].kind == "spider":
            return self.actions.index("dig")
        _, height = target.half_extents()
        dx, dz = target.position[0] - eye[0], target.position[2] - eye[2]
        dy = target.position[1] + height / 2 - eye[1]
        horizontal = math.hypot(dx, dz)
        yaw = math.degrees(math.atan2(-dx, dz))  # yaw 0 faces +z, yaw 90 faces -x
        yaw_error = (yaw - player.yaw + 180.0) % 360.0 - 180.0
        if yaw_error > self.yaw_band:
            return self.actions.index("mouse x-")  # turn left: yaw grows
        if yaw_error < -self.yaw_band:
            return self.actions.index("mouse x+")
        pitch = math.degrees(math.atan2(-dy, horizontal))  # pitch > 0 looks down
        move = "forward" if feet > self.close else "dig"
        return self._pitch_toward(pitch, player.pitch, self.actions.index(move))

    def _strafe(self, task, player) -> int:
        (x0, x1), (z0, z1) = task.interior
        cx, cz = (x0 + x1) / 2 - player.position[0], (z0 + z1) / 2 - player.position[2]
        yaw = math.radians(player.yaw)
        toward_centre = math.cos(yaw) * cx + math.sin(yaw) * cz
        return self.actions.index("right" if toward_centre > 0 else "left")

    def _pitch_toward(self, pitch: float, current: float, otherwise: int) -> int:
        error = pitch - current
        if error > self.pitch_band:
            return self.actions.index("mouse y-")  # look down: pitch grows
        if error < -self.pitch_band:
            return self.actions.index("mouse y+")
        return otherwise
