"""Velocity: a 1-D runner rewarded for speed and charged for exceeding a speed limit.

Mirrors the velocity-constrained locomotion tasks of Safety-Gymnasium (``SafetyHalfCheetah
Velocity`` and kin, DSRL's velocity suite) with the body reduced to a 1-D mass under a force and
linear drag (``docs/safety.md``): du/dt = f·a − k·u, so the top speed is u_max = f / k.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from omnigym.envs.safety.core import DT, ROBOTS, SafeEnv


class VelocityEnv(SafeEnv):
    """Push the runner forward as fast as the speed limit allows.

    ## Action space
    ``Box(-1, 1, (1,), float32)``: the force a (scaled by f).

    ## Observation space
    ``Box(-inf, inf, (3,), float32)``: ``robot`` (u), ``reward`` (the last action a, which the
    reward charges), ``cost`` (0.7·u_max − u, the margin to the speed limit).

    ## Rewards
    u − 0.1·a² with u the velocity after the step.

    ## Cost
    ``info["cost"]`` = 1 when u > 0.7·u_max, else 0.

    ## Starting state
    x = 0, u uniform in [−0.05, 0.05].

    ## Episode end
    Truncation after 300 steps; never terminates.

    ## Arguments
    ``target_cost`` (κ, default 12).
    """

    family = "Velocity"
    obs_groups = {"robot": slice(0, 1), "reward": slice(1, 2), "cost": slice(2, 3)}

    def __init__(self, target_cost: float | None = None):
        super().__init__(target_cost=target_cost)
        self.force = float(ROBOTS["Runner"]["force"])
        self.drag = float(ROBOTS["Runner"]["drag"])
        self.u_max = self.force / self.drag
        self.speed_limit = float(self.constants["speed_limit"]) * self.u_max
        self.action_cost = float(self.constants["action_cost"])
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.observation_space = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self._position = self._velocity = self._last_action = 0.0

    @property
    def env_id(self) -> str:
        return "Safe/RunnerVelocity-v0"

    @property
    def runner_position(self) -> float:
        """Position x along the track."""
        return self._position

    @property
    def runner_velocity(self) -> float:
        """Velocity u."""
        return self._velocity

    def _observation(self) -> np.ndarray:
        velocity = self._velocity
        return np.array([velocity, self._last_action, self.speed_limit - velocity], np.float32)

    def _start(self) -> np.ndarray:
        self._position = 0.0
        self._velocity = float(self.np_random.uniform(-0.05, 0.05))
        self._last_action = 0.0
        return self._observation()

    def _transition(self, action: list[float]) -> tuple[np.ndarray, float, float]:
        force = action[0]
        self._velocity += (self.force * force - self.drag * self._velocity) * DT
        self._position += self._velocity * DT
        self._last_action = force
        reward = self._velocity - self.action_cost * force * force
        return self._observation(), reward, 1.0 if self._velocity > self.speed_limit else 0.0
