"""Goal: drive to a goal while avoiding hazards (and vases at level 2).

Mirrors Safety-Gymnasium's ``SafetyPointGoal``/``SafetyCarGoal`` (Ji et al., 2023), the tasks of
DSRL's SafetyGym suite, as a kinematic NumPy task (``docs/safety.md``). Departure: vases do not
move or block the robot; touching one costs 1 per step.
"""

from __future__ import annotations

import numpy as np

from omnigym.envs.safety.core import ROBOT_RADIUS, ObjectEnv


class GoalEnv(ObjectEnv):
    """Drive a Point or Car robot to a goal that respawns when reached.

    ## Action space
    ``Box(-1, 1, (2,), float32)``: Point (forward, turn), Car (left wheel, right wheel).

    ## Observation space
    ``Box(-inf, inf, (52,), float32)``: robot group (v, ω, sin θ, cos θ), then 16-bin lidars of
    the goal (``reward``), hazards and vases (``cost``). Level 1 has no vases: their bins read 0.

    ## Rewards
    Decrease of the robot–goal distance, plus 1 when the robot's centre comes within
    ``goal_radius`` (0.3) of the goal, which then respawns elsewhere.

    ## Cost
    ``info["cost"]`` = 1 when the robot's centre is inside a hazard (radius 0.2) or the robot
    touches a vase, else 0.

    ## Starting state
    Robot, goal, hazards (4; level 2: 8) and vases (level 2: 4) drawn uniformly in
    [−2.5, 2.5]² at least 0.5 apart; uniform heading.

    ## Episode end
    Truncation after 300 steps; never terminates.

    ## Arguments
    ``robot`` ("Point" or "Car"), ``level`` (1 or 2), ``target_cost`` (κ, default 12).
    """

    family = "Goal"
    reward_channels = ("goal",)
    cost_channels = ("hazard", "vase")

    def __init__(self, robot: str = "Point", level: int = 1, target_cost: float | None = None):
        super().__init__(robot=robot, level=level, target_cost=target_cost)
        counts = self.constants["levels"][level]
        self.hazard_count = int(counts["hazards"])
        self.vase_count = int(counts["vases"])
        self.goal_radius = float(self.constants["goal_radius"])
        self.hazard_radius = float(self.constants["hazard_radius"])
        self.vase_radius = float(self.constants["vase_radius"])
        self._goal_distance = 0.0

    @property
    def env_id(self) -> str:
        return f"Safe/{self.robot}Goal{self.level}-v0"

    @property
    def goal_position(self) -> np.ndarray:
        """The goal's centre, a copy."""
        return self._positions[0].copy()

    @property
    def hazard_positions(self) -> np.ndarray:
        """Hazard centres, ``(hazard_count, 2)``, a copy."""
        return self._positions[self._hazards].copy()

    @property
    def vase_positions(self) -> np.ndarray:
        """Vase centres, ``(vase_count, 2)``, a copy (empty at level 1)."""
        return self._positions[self._vases].copy()

    def _start(self) -> np.ndarray:
        taken = self._draw_robot()
        points = self._free_points(1 + self.hazard_count + self.vase_count, taken)
        _, self._hazards, self._vases = self._set_objects(
            [
                (points[:1], "goal", -1.0),
                (points[1 : 1 + self.hazard_count], "hazard", self.hazard_radius),
                (points[1 + self.hazard_count :], "vase", ROBOT_RADIUS + self.vase_radius),
            ]
        )
        self._goal_distance = self._distance_to(0)
        return self._sense()[0]

    def _transition(self, action: list[float]) -> tuple[np.ndarray, float, float]:
        self._move_robot(action)
        distance = self._distance_to(0)
        reward = self._goal_distance - distance
        if distance <= self.goal_radius:
            reward += 1.0
            others = np.concatenate([[[self._x, self._y]], self._positions[1:]])
            self._positions[0] = self._free_points(1, others)[0]
            distance = self._distance_to(0)
        self._goal_distance = distance
        observation, cost = self._sense()
        return observation, reward, cost
