"""Button: press the target button among four, avoiding hazards, wrong buttons and gremlins.

Mirrors Safety-Gymnasium's ``SafetyPointButton``/``SafetyCarButton`` (Ji et al., 2023), tasks of
DSRL's SafetyGym suite, as a kinematic NumPy task (``docs/safety.md``). As there, buttons are
inactive from a press until ``press_delay`` steps after it (the press step counts), so leaving
the old target costs nothing.
Departures: gremlins follow fixed circles instead of being pushed around, and do not block.
"""

from __future__ import annotations

import math

import numpy as np

from omnigym.envs.safety.core import DT, ROBOT_RADIUS, ObjectEnv


class ButtonEnv(ObjectEnv):
    """Press the target button; a new target is drawn among the others after each press.

    ## Action space
    ``Box(-1, 1, (2,), float32)``: Point (forward, turn), Car (left wheel, right wheel).

    ## Observation space
    ``Box(-inf, inf, (68,), float32)``: robot group (v, ω, sin θ, cos θ), then 16-bin lidars of
    the target button (``reward``), hazards, wrong buttons and gremlins (``cost``). Level 1 has
    no gremlins: their bins read 0.

    ## Rewards
    Decrease of the distance to the target button, plus 1 on pressing it (the robot touching
    it); a new target is drawn and every button is inactive from the press step until
    ``press_delay`` (10) steps after it.

    ## Cost
    ``info["cost"]`` = 1 when the robot's centre is inside a hazard, or it touches an active
    wrong button or a gremlin, else 0.

    ## Starting state
    Robot, 4 buttons, hazards (4; level 2: 8) and gremlin orbit centres (level 2: 2) drawn
    uniformly in [−2.5, 2.5]² at least 0.6 apart; uniform heading and gremlin phases.

    ## Episode end
    Truncation after 300 steps; never terminates.

    ## Arguments
    ``robot`` ("Point" or "Car"), ``level`` (1 or 2), ``target_cost`` (κ, default 12).
    """

    family = "Button"
    reward_channels = ("target",)
    cost_channels = ("hazard", "button", "gremlin")

    def __init__(self, robot: str = "Point", level: int = 1, target_cost: float | None = None):
        super().__init__(robot=robot, level=level, target_cost=target_cost)
        counts = self.constants["levels"][level]
        self.button_count = int(self.constants["buttons"])
        self.hazard_count = int(counts["hazards"])
        self.gremlin_count = int(counts["gremlins"])
        self.hazard_radius = float(self.constants["hazard_radius"])
        self.press_radius = ROBOT_RADIUS + float(self.constants["button_radius"])
        self.gremlin_contact = ROBOT_RADIUS + float(self.constants["gremlin_radius"])
        self.gremlin_orbit = float(self.constants["gremlin_orbit"])
        self.gremlin_speed = float(self.constants["gremlin_speed"])
        self.press_delay = int(self.constants["press_delay"])
        self._target = 0
        self._target_distance = 0.0
        self._inactive_steps = 0
        self._gremlin_centres = np.zeros((0, 2))
        self._gremlin_track = np.zeros((self.horizon + 1, 0, 2))

    @property
    def env_id(self) -> str:
        return f"Safe/{self.robot}Button{self.level}-v0"

    @property
    def button_positions(self) -> np.ndarray:
        """Button centres, ``(4, 2)``, a copy."""
        return self._positions[: self.button_count].copy()

    @property
    def target_button(self) -> int:
        """Index of the target button in ``button_positions``."""
        return self._target

    @property
    def buttons_active(self) -> bool:
        """False from a press until ``press_delay`` steps after it."""
        return self._inactive_steps == 0

    @property
    def hazard_positions(self) -> np.ndarray:
        """Hazard centres, ``(hazard_count, 2)``, a copy."""
        return self._positions[self._hazards].copy()

    @property
    def gremlin_positions(self) -> np.ndarray:
        """Gremlin centres now, ``(gremlin_count, 2)``, a copy (empty at level 1)."""
        return self._positions[self._gremlins].copy()

    def _start(self) -> np.ndarray:
        taken = self._draw_robot()
        points = self._free_points(
            self.button_count + self.hazard_count + self.gremlin_count, taken
        )
        hazards_end = self.button_count + self.hazard_count
        self._gremlin_centres = points[hazards_end:]
        phases = self.np_random.uniform(-math.pi, math.pi, self.gremlin_count)
        # The whole episode's gremlin positions at once: a step then only copies its row.
        angles = phases + self.gremlin_speed * DT * np.arange(self.horizon + 1)[:, None]
        orbits = self.gremlin_orbit * np.stack([np.cos(angles), np.sin(angles)], axis=2)
        self._gremlin_track = self._gremlin_centres + orbits
        _, self._hazards, self._gremlins = self._set_objects(
            [
                (points[: self.button_count], "button", self.press_radius),
                (points[self.button_count : hazards_end], "hazard", self.hazard_radius),
                (self._gremlin_track[0], "gremlin", self.gremlin_contact),
            ]
        )
        self._inactive_steps = 0
        self._retarget(int(self.np_random.integers(self.button_count)))
        return self._sense()[0]

    def _retarget(self, target: int) -> None:
        self._target = target
        self._channels[: self.button_count] = self._channel("button")
        self._channels[target] = self._channel("target")
        active = self.press_radius if self._inactive_steps == 0 else -1.0
        self._cost_radii[: self.button_count] = active
        self._cost_radii[target] = -1.0
        self._target_distance = self._distance_to(target)

    def _transition(self, action: list[float]) -> tuple[np.ndarray, float, float]:
        self._move_robot(action)
        if self.gremlin_count:
            # Past the horizon (stepping on after truncation) gremlins stay at their last point.
            step = min(self._steps + 1, self.horizon)
            self._positions[self._gremlins] = self._gremlin_track[step]
        distance = self._distance_to(self._target)
        reward = self._target_distance - distance
        self._target_distance = distance
        if self._inactive_steps:
            self._inactive_steps -= 1
            if self._inactive_steps == 0:
                self._retarget(self._target)
        elif distance < self.press_radius:
            reward += 1.0
            self._inactive_steps = self.press_delay
            others = [index for index in range(self.button_count) if index != self._target]
            self._retarget(others[int(self.np_random.integers(len(others)))])
        observation, cost = self._sense()
        return observation, reward, cost
