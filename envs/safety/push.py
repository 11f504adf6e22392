"""Push: push a box onto a goal while avoiding hazards (and pillars at level 2).

Mirrors Safety-Gymnasium's ``SafetyPointPush``/``SafetyCarPush`` (Ji et al., 2023) as a kinematic
NumPy task (``docs/safety.md``). Departures: contact is kinematic — while the robot touches the
box, the box moves with the robot's velocity component along the contact normal (only when it
points into the box); pillars do not block, touching one costs 1 per step.
"""

from __future__ import annotations

import math

import numpy as np

from omnigym.envs.safety.core import DT, ROBOT_RADIUS, WORLD, ObjectEnv


class PushEnv(ObjectEnv):
    """Push the box onto the goal; the goal respawns after each delivery.

    ## Action space
    ``Box(-1, 1, (2,), float32)``: Point (forward, turn), Car (left wheel, right wheel).

    ## Observation space
    ``Box(-inf, inf, (68,), float32)``: robot group (v, ω, sin θ, cos θ), then 16-bin lidars of
    the box and the goal (``reward``), hazards and pillars (``cost``). Level 1 has no pillars:
    their bins read 0.

    ## Rewards
    Decrease of the box–goal distance, plus 1 when the box's centre comes within ``goal_radius``
    (0.3) of the goal, which then respawns elsewhere.

    ## Cost
    ``info["cost"]`` = 1 when the robot's centre is inside a hazard or it touches a pillar.

    ## Starting state
    Robot, box, goal, hazards (4; level 2: 8) and pillars (level 2: 4) drawn uniformly in
    [−2.5, 2.5]² at least 0.6 apart; uniform heading.

    ## Episode end
    Truncation after 300 steps; never terminates.

    ## Arguments
    ``robot`` ("Point" or "Car"), ``level`` (1 or 2), ``target_cost`` (κ, default 12).
    """

    family = "Push"
    reward_channels = ("box", "goal")
    cost_channels = ("hazard", "pillar")

    def __init__(self, robot: str = "Point", level: int = 1, target_cost: float | None = None):
        super().__init__(robot=robot, level=level, target_cost=target_cost)
        counts = self.constants["levels"][level]
        self.hazard_count = int(counts["hazards"])
        self.pillar_count = int(counts["pillars"])
        self.goal_radius = float(self.constants["goal_radius"])
        self.hazard_radius = float(self.constants["hazard_radius"])
        self.box_radius = float(self.constants["box_radius"])
        self.box_contact = ROBOT_RADIUS + self.box_radius
        self.pillar_contact = ROBOT_RADIUS + float(self.constants["pillar_radius"])
        self._box_limit = float(WORLD["arena_half"]) - self.box_radius
        self._box_distance = 0.0

    @property
    def env_id(self) -> str:
        return f"Safe/{self.robot}Push{self.level}-v0"

    @property
    def box_position(self) -> np.ndarray:
        """The box's centre, a copy."""
        return self._positions[0].copy()

    @property
    def goal_position(self) -> np.ndarray:
        """The goal's centre, a copy."""
        return self._positions[1].copy()

    @property
    def hazard_positions(self) -> np.ndarray:
        """Hazard centres, ``(hazard_count, 2)``, a copy."""
        return self._positions[self._hazards].copy()

    @property
    def pillar_positions(self) -> np.ndarray:
        """Pillar centres, ``(pillar_count, 2)``, a copy (empty at level 1)."""
        return self._positions[self._pillars].copy()

    def _start(self) -> np.ndarray:
        taken = self._draw_robot()
        points = self._free_points(2 + self.hazard_count + self.pillar_count, taken)
        _, _, self._hazards, self._pillars = self._set_objects(
            [
                (points[:1], "box", -1.0),
                (points[1:2], "goal", -1.0),
                (points[2 : 2 + self.hazard_count], "hazard", self.hazard_radius),
                (points[2 + self.hazard_count :], "pillar", self.pillar_contact),
            ]
        )
        self._box_distance = self._box_to_goal()
        return self._sense()[0]

    def _box_to_goal(self) -> float:
        positions = self._positions
        return math.hypot(positions[0, 0] - positions[1, 0], positions[0, 1] - positions[1, 1])

    def _push_box(self) -> None:
        box = self._positions[0]
        dx, dy = box[0] - self._x, box[1] - self._y
        distance = math.hypot(dx, dy)
        if distance >= self.box_contact or distance == 0.0:
            return
        nx, ny = dx / distance, dy / distance
        along = self._speed * (math.cos(self._heading) * nx + math.sin(self._heading) * ny)
        if along > 0.0:
            limit = self._box_limit
            box[0] = min(max(box[0] + along * nx * DT, -limit), limit)
            box[1] = min(max(box[1] + along * ny * DT, -limit), limit)

    def _transition(self, action: list[float]) -> tuple[np.ndarray, float, float]:
        self._move_robot(action)
        self._push_box()
        distance = self._box_to_goal()
        reward = self._box_distance - distance
        if distance <= self.goal_radius:
            reward += 1.0
            others = np.concatenate(
                [[[self._x, self._y]], self._positions[[0, *range(2, len(self._positions))]]]
            )
            self._positions[1] = self._free_points(1, others)[0]
            distance = self._box_to_goal()
        self._box_distance = distance
        observation, cost = self._sense()
        return observation, reward, cost
