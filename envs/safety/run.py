"""Run: go as far as possible along +x inside a corridor, under a speed limit.

Mirrors Bullet-Safety-Gym's ``SafetyBallRun``/``SafetyCarRun`` (Gronauer, 2022), DSRL's BulletGym
run tasks, as a kinematic NumPy task (``docs/safety.md``). Departure from the 6 × 6 arena of the
other tasks: the corridor is unbounded along x (walls only at |y| = 3), so a 200-step episode
can cover its full length.
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from omnigym.envs.safety.core import PlanarEnv


class RunEnv(PlanarEnv):
    """Run along +x while keeping |y| ≤ 0.5 and the speed ≤ 0.8·v_max.

    ## Action space
    ``Box(-1, 1, (2,), float32)``: Point (forward, turn), Car (left wheel, right wheel).

    ## Observation space
    ``Box(-inf, inf, (9,), float32)``: robot group (v, ω, sin θ, cos θ); ``reward`` group
    (u, v), the world-frame velocity; ``cost`` group (0.5 − y, 0.5 + y, 0.8·v_max − |v|), the
    distances to the two boundaries and the margin to the speed limit.

    ## Rewards
    Progress along +x in the step.

    ## Cost
    ``info["cost"]`` = 1 when |y| > 0.5 or |v| > 0.8·v_max, else 0.

    ## Starting state
    x = 0, y uniform in [−0.2, 0.2], heading uniform in [−0.5, 0.5], at rest.

    ## Episode end
    Truncation after 200 steps; never terminates.

    ## Arguments
    ``robot`` ("Point" or "Car"), ``target_cost`` (κ, default 20).
    """

    family = "Run"
    obs_groups = {"robot": slice(0, 4), "reward": slice(4, 6), "cost": slice(6, 9)}
    x_bounds = (-math.inf, math.inf)

    def __init__(self, robot: str = "Point", target_cost: float | None = None):
        super().__init__(robot=robot, target_cost=target_cost)
        self.boundary = float(self.constants["boundary"])
        self.speed_limit = float(self.constants["speed_limit"]) * self.v_max
        self.start_y = float(self.constants["start_y"])
        self.start_heading = float(self.constants["start_heading"])
        self.observation_space = spaces.Box(-np.inf, np.inf, (9,), np.float32)

    @property
    def env_id(self) -> str:
        return f"Safe/{self.robot}Run-v0"

    def _observation(self) -> np.ndarray:
        speed, heading, y = self._speed, self._heading, self._y
        return np.array(
            [
                *self._robot_group(),
                speed * math.cos(heading),
                speed * math.sin(heading),
                self.boundary - y,
                self.boundary + y,
                self.speed_limit - abs(speed),
            ],
            np.float32,
        )

    def _start(self) -> np.ndarray:
        y = self.np_random.uniform(-self.start_y, self.start_y)
        heading = self.np_random.uniform(-self.start_heading, self.start_heading)
        self._place_robot(0.0, y, heading)
        return self._observation()

    def _transition(self, action: list[float]) -> tuple[np.ndarray, float, float]:
        before = self._x
        self._move_robot(action)
        reward = self._x - before
        violated = abs(self._y) > self.boundary or abs(self._speed) > self.speed_limit
        return self._observation(), reward, 1.0 if violated else 0.0
