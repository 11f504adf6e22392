"""Circle: run fast along a circle of radius 2 while staying between two boundaries.

Mirrors Bullet-Safety-Gym's ``SafetyBallCircle``/``SafetyCarCircle`` (Gronauer, 2022), DSRL's
BulletGym circle tasks, and Safety-Gymnasium's ``Circle`` levels, as a kinematic NumPy task
(``docs/safety.md``). Level 2 narrows the boundaries from |x| ≤ 1.5 to |x| ≤ 1.1.
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from omnigym.envs.safety.core import PlanarEnv


class CircleEnv(PlanarEnv):
    """Circle counter-clockwise around the origin at radius 2 without crossing |x| = boundary.

    ## Action space
    ``Box(-1, 1, (2,), float32)``: Point (forward, turn), Car (left wheel, right wheel).

    ## Observation space
    ``Box(-inf, inf, (9,), float32)``: robot group (v, ω, sin θ, cos θ); ``reward`` group
    (x, y, ‖p‖ − 2); ``cost`` group (boundary − x, boundary + x), the distances to the two
    boundaries (negative beyond them).

    ## Rewards
    (−u·y + v·x) / (1 + |‖p‖ − 2|) with (u, v) the world-frame velocity after the step: the
    counter-clockwise speed, discounted away from the circle.

    ## Cost
    ``info["cost"]`` = 1 when |x| > boundary (level 1: 1.5, level 2: 1.1), else 0.

    ## Starting state
    Robot uniform in [−0.5, 0.5]², uniform heading, at rest.

    ## Episode end
    Truncation after 300 steps; never terminates.

    ## Arguments
    ``robot`` ("Point" or "Car"), ``level`` (1 or 2), ``target_cost`` (κ, default 20).
    """

    family = "Circle"
    obs_groups = {"robot": slice(0, 4), "reward": slice(4, 7), "cost": slice(7, 9)}

    def __init__(self, robot: str = "Point", level: int = 1, target_cost: float | None = None):
        super().__init__(robot=robot, level=level, target_cost=target_cost)
        self.boundary = float(self.constants["levels"][level]["boundary"])
        self.circle_radius = float(self.constants["circle_radius"])
        self.start_half = float(self.constants["start_half"])
        self.observation_space = spaces.Box(-np.inf, np.inf, (9,), np.float32)

    @property
    def env_id(self) -> str:
        return f"Safe/{self.robot}Circle{self.level}-v0"

    def _observation(self) -> np.ndarray:
        x, y = self._x, self._y
        ring = math.hypot(x, y) - self.circle_radius
        return np.array(
            [*self._robot_group(), x, y, ring, self.boundary - x, self.boundary + x], np.float32
        )

    def _start(self) -> np.ndarray:
        x, y = self.np_random.uniform(-self.start_half, self.start_half, 2)
        self._place_robot(x, y, self.np_random.uniform(-math.pi, math.pi))
        return self._observation()

    def _transition(self, action: list[float]) -> tuple[np.ndarray, float, float]:
        self._move_robot(action)
        x, y = self._x, self._y
        u = self._speed * math.cos(self._heading)
        v = self._speed * math.sin(self._heading)
        reward = (-u * y + v * x) / (1.0 + abs(math.hypot(x, y) - self.circle_radius))
        cost = 1.0 if abs(x) > self.boundary else 0.0
        return self._observation(), reward, cost
