"""Shared machinery of the Safe tasks: constants, the episode loop, robots and pseudo-lidar.

The tasks mirror the families of DSRL (Liu et al., "Datasets and Benchmarks for Offline Safe
Reinforcement Learning", DMLR 2024), whose Safety-Gymnasium and Bullet-Safety-Gym tasks are
MuJoCo/Bullet simulations; here they are small NumPy/Numba environments (``docs/safety.md``).

Departures from those simulators, all for speed and determinism: robots are kinematic (Point:
first-order lag on forward speed and a commanded turn rate; Car: the same from two wheel
commands), walls clamp the position, objects other than the Push box never move when touched, and
the per-step cost is 1 when any constraint is violated (not the sum over violations).

:class:`SafeEnv` runs the episode (action check, horizon, ``info["cost"]``, the final-step
metrics of DSRL's protocol); :class:`PlanarEnv` adds a Point or Car robot in the 6 × 6 arena;
:class:`ObjectEnv` adds objects sensed by 16-bin pseudo-lidars, one block of bins per object
kind, computed for all objects at once by one Numba kernel (:func:`sense`).
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml
from gymnasium import spaces
from numba import njit

from omnigym.spaces import describe

DATA = Path(__file__).parent / "data"
REFERENCES_PATH = DATA / "references.yaml"
"""Optional per-id reference returns (``min_reward``, ``max_reward``) for normalized reward."""

with open(DATA / "tasks.yaml", encoding="utf-8") as _file:
    TASKS: dict[str, Any] = yaml.safe_load(_file)
WORLD = TASKS["world"]
ROBOTS = TASKS["robots"]
FAMILIES = TASKS["families"]

DT = float(WORLD["dt"])
ROBOT_RADIUS = float(WORLD["robot_radius"])
LIDAR_BINS = int(WORLD["lidar_bins"])
LIDAR_RANGE = float(WORLD["lidar_range"])
TWO_PI = 2.0 * math.pi


def load_references(path: Path | None = None) -> dict[str, dict[str, float]]:
    """Reference returns by env id from ``references.yaml``; empty when the file is absent."""
    path = REFERENCES_PATH if path is None else path
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as file:
        return yaml.safe_load(file) or {}


def check_target_cost(value: Any) -> float:
    """``value`` as a float cost budget κ ≥ 0, else ``ValueError`` naming ``target_cost``."""
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"target_cost must be a finite number >= 0, got {value!r}")
    return float(value)


def normalized_cost(episode_cost: float, target_cost: float) -> float:
    """DSRL's normalized cost (C + ε) / (κ + ε), with ε = 1 when κ = 0 and 0 otherwise."""
    epsilon = 1.0 if target_cost == 0 else 0.0
    return (episode_cost + epsilon) / (target_cost + epsilon)


@njit(cache=True)
def sense(x, y, heading, positions, channels, cost_radii, out, offset, bins, lidar_range):
    """Fill the lidar bins of ``out`` and count constraint violations, all objects at once.

    Object ``i`` at ``positions[i]`` is seen by the lidar block ``channels[i]``; blocks of
    ``bins`` bins start at ``out[offset]``, which must be zero there. Bin 0 points straight ahead
    and bins go counter-clockwise; a bin holds the largest 1 − distance / ``lidar_range`` of its
    objects, floored at 0. Object ``i`` violates the constraint when the robot's
    centre is closer than ``cost_radii[i]`` (negative: never). Returns the violation count.
    """
    bin_width = 2.0 * math.pi / bins
    violations = 0
    for i in range(positions.shape[0]):
        dx = positions[i, 0] - x
        dy = positions[i, 1] - y
        distance = math.sqrt(dx * dx + dy * dy)
        if distance < cost_radii[i]:
            violations += 1
        value = 1.0 - distance / lidar_range
        if value <= 0.0:
            continue
        angle = math.atan2(dy, dx) - heading
        angle -= 2.0 * math.pi * math.floor(angle / (2.0 * math.pi))
        index = int(angle / bin_width)
        if index >= bins:
            index = bins - 1
        k = offset + channels[i] * bins + index
        if value > out[k]:
            out[k] = value
    return violations


class SafeEnv(gym.Env):
    """Base of every Safe task: the step loop, action check, cost budget and final metrics.

    Subclasses set ``family``, ``action_space``, ``observation_space`` and ``obs_groups`` and
    implement ``_start()`` (draw the episode's layout, return the first observation) and
    ``_transition(action)`` (advance one step with a checked ``float`` action list, return
    ``(observation, reward, cost)``).
    """

    metadata = {"render_modes": []}
    family = ""

    def __init__(self, level: int = 1, target_cost: float | None = None):
        self.constants = FAMILIES[self.family]
        levels = sorted(self.constants.get("levels", {1: None}))
        if level not in levels:
            raise ValueError(f"level must be one of {levels}, got {level!r}")
        self.level = level
        self.horizon = int(self.constants["horizon"])
        thresholds = self.constants["thresholds"]
        self.target_cost = check_target_cost(
            thresholds[len(thresholds) // 2] if target_cost is None else target_cost
        )
        self.references = load_references().get(self.env_id)
        self._steps = 0
        self._episode_cost = 0.0
        self._episode_return = 0.0

    @property
    def env_id(self) -> str:
        """The registered id of this configuration (keys ``references.yaml``)."""
        raise NotImplementedError

    def set_target_cost(self, target_cost: float) -> None:
        """Set κ, the episode cost budget behind ``normalized_cost`` and ``success``."""
        self.target_cost = check_target_cost(target_cost)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._steps = 0
        self._episode_cost = 0.0
        self._episode_return = 0.0
        return self._start(), {"cost": 0.0}

    def step(self, action):
        values = self._check_action(action)
        observation, reward, cost = self._transition(values)
        self._steps += 1
        self._episode_cost += cost
        self._episode_return += reward
        truncated = self._steps >= self.horizon
        # The reward is repeated in ``info`` for agents that condition on returns-to-go (CDT):
        # the agent protocol hands them only ``(observation, info)``.
        info = {"cost": cost, "reward": reward}
        if truncated:
            metrics = self.episode_metrics()
            info["metrics"] = metrics
            info["success"] = self._episode_cost <= self.target_cost
            if "normalized_score" in metrics:
                info["normalized_score"] = metrics["normalized_score"]
        return observation, reward, False, truncated, info

    def episode_metrics(self) -> dict[str, float]:
        """Episode return and cost so far, normalized as in DSRL: reward
        (R − R_min) / (R_max − R_min), cost (C + ε) / (κ + ε) with ε = 1 when κ = 0.

        ``normalized_reward`` and ``normalized_score`` appear only when ``references.yaml``
        holds this id's reference returns.
        """
        metrics = {
            "episode_return": self._episode_return,
            "episode_cost": self._episode_cost,
            "normalized_cost": normalized_cost(self._episode_cost, self.target_cost),
        }
        if self.references is not None:
            low = float(self.references["min_reward"])
            high = float(self.references["max_reward"])
            metrics["normalized_reward"] = (self._episode_return - low) / (high - low)
            metrics["normalized_score"] = 100.0 * metrics["normalized_reward"]
        return metrics

    def _check_action(self, action) -> list[float]:
        # Two float comparisons per component instead of Box.contains: this runs every step.
        try:
            array = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            array = None
        if array is not None and array.shape == self.action_space.shape:
            values = array.tolist()
            if all(-1.0 <= value <= 1.0 for value in values):
                return values
        raise ValueError(
            f"action {action!r} is not in the action space {describe(self.action_space)}"
        )

    def _start(self) -> np.ndarray:
        raise NotImplementedError

    def _transition(self, action: list[float]) -> tuple[np.ndarray, float, float]:
        raise NotImplementedError


class PlanarEnv(SafeEnv):
    """A Point or Car robot in the arena.

    Point, action (forward, turn): v ← v + (v_max·a₀ − v)·dt/τ, θ ← θ + ω_max·a₁·dt. Car, action
    (left wheel, right wheel): the same lag toward v_max·(a_l + a_r)/2, ω = ω_max·(a_r − a_l)/2.
    Then the robot moves v·dt along its new heading and walls clamp its centre to
    ``x_bounds`` × ``y_bounds``. The robot group of the observation is (v, ω, sin θ, cos θ).
    """

    x_bounds = (-WORLD["arena_half"] + ROBOT_RADIUS, WORLD["arena_half"] - ROBOT_RADIUS)
    y_bounds = x_bounds

    def __init__(self, robot: str = "Point", level: int = 1, target_cost: float | None = None):
        if robot not in ("Point", "Car"):
            raise ValueError(f"robot must be 'Point' or 'Car', got {robot!r}")
        self.robot = robot
        super().__init__(level=level, target_cost=target_cost)
        params = ROBOTS[robot]
        self.v_max = float(params["v_max"])
        self.tau = float(params["tau"])
        self.omega_max = float(params["omega_max"])
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._x = self._y = self._heading = self._speed = self._turn_rate = 0.0

    @property
    def robot_position(self) -> np.ndarray:
        """The robot's centre (x, y), a copy."""
        return np.array([self._x, self._y])

    @property
    def robot_heading(self) -> float:
        """Heading θ in radians, counter-clockwise from +x, in [−π, π]."""
        return self._heading

    @property
    def robot_speed(self) -> float:
        """Forward speed v (negative when reversing)."""
        return self._speed

    @property
    def robot_turn_rate(self) -> float:
        """Turn rate ω of the last step, rad/s."""
        return self._turn_rate

    @property
    def robot_velocity(self) -> np.ndarray:
        """World-frame velocity (u, v) = v·(cos θ, sin θ), a copy."""
        return np.array(
            [self._speed * math.cos(self._heading), self._speed * math.sin(self._heading)]
        )

    def _place_robot(self, x: float, y: float, heading: float) -> None:
        self._x, self._y, self._heading = float(x), float(y), float(heading)
        self._speed = self._turn_rate = 0.0

    def _move_robot(self, action: list[float]) -> None:
        first, second = action
        if self.robot == "Point":
            command, turn_rate = self.v_max * first, self.omega_max * second
        else:
            command = self.v_max * 0.5 * (first + second)
            turn_rate = self.omega_max * 0.5 * (second - first)
        self._speed += (command - self._speed) * DT / self.tau
        self._turn_rate = turn_rate
        self._heading = math.remainder(self._heading + turn_rate * DT, TWO_PI)
        low, high = self.x_bounds
        self._x = min(max(self._x + self._speed * math.cos(self._heading) * DT, low), high)
        low, high = self.y_bounds
        self._y = min(max(self._y + self._speed * math.sin(self._heading) * DT, low), high)

    def _robot_group(self) -> list[float]:
        return [self._speed, self._turn_rate, math.sin(self._heading), math.cos(self._heading)]


class ObjectEnv(PlanarEnv):
    """A planar task whose objects are sensed by pseudo-lidars (Goal, Button, Push).

    Subclasses name their lidar blocks in ``reward_channels`` then ``cost_channels``; the
    observation is the robot group followed by ``LIDAR_BINS`` bins per block, so
    ``obs_groups`` is ``robot`` = 0:4, ``reward`` = the reward blocks, ``cost`` = the rest.
    Every object lives in one row of ``_positions`` with its block in ``_channels`` and its
    violation radius in ``_cost_radii`` (negative: no cost).
    """

    reward_channels: tuple[str, ...] = ()
    cost_channels: tuple[str, ...] = ()

    def __init__(self, robot: str = "Point", level: int = 1, target_cost: float | None = None):
        super().__init__(robot=robot, level=level, target_cost=target_cost)
        reward_end = 4 + LIDAR_BINS * len(self.reward_channels)
        size = reward_end + LIDAR_BINS * len(self.cost_channels)
        self.obs_groups = {
            "robot": slice(0, 4),
            "reward": slice(4, reward_end),
            "cost": slice(reward_end, size),
        }
        self.channels = self.reward_channels + self.cost_channels
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self._buffer = np.zeros(size)
        self._positions = np.zeros((0, 2))
        self._channels = np.zeros(0, dtype=np.int64)
        self._cost_radii = np.zeros(0)
        self.placement_half = float(WORLD["placement_half"])
        self.min_separation = float(self.constants["min_separation"])

    def _distance_to(self, row: int) -> float:
        """Distance from the robot's centre to object ``row``."""
        return math.hypot(self._positions[row, 0] - self._x, self._positions[row, 1] - self._y)

    def _channel(self, name: str) -> int:
        return self.channels.index(name)

    def _sense(self) -> tuple[np.ndarray, float]:
        """The observation and the step's cost at the current state."""
        buffer = self._buffer
        buffer[4:] = 0.0
        buffer[:4] = self._robot_group()
        violations = sense(
            self._x,
            self._y,
            self._heading,
            self._positions,
            self._channels,
            self._cost_radii,
            buffer,
            4,
            LIDAR_BINS,
            LIDAR_RANGE,
        )
        return buffer.astype(np.float32), 1.0 if violations else 0.0

    def _free_points(self, count: int, taken: np.ndarray) -> np.ndarray:
        """``count`` points in the placement square, each ``min_separation`` from ``taken``
        and from one another, drawn from ``np_random`` by rejection."""
        points = list(taken)
        found = []
        half = self.placement_half
        while len(found) < count:
            candidate = self.np_random.uniform(-half, half, 2)
            if all(math.dist(candidate, point) >= self.min_separation for point in points):
                points.append(candidate)
                found.append(candidate)
        return np.array(found).reshape(count, 2)

    def _draw_robot(self) -> np.ndarray:
        """Place the robot uniformly with a uniform heading; return its position as ``taken``."""
        x, y = self.np_random.uniform(-self.placement_half, self.placement_half, 2)
        self._place_robot(x, y, self.np_random.uniform(-math.pi, math.pi))
        return np.array([[self._x, self._y]])

    def _set_objects(self, groups: list[tuple[np.ndarray, str, float]]) -> list[slice]:
        """Store ``(positions, channel name, cost radius)`` groups; return each group's rows."""
        rows, start = [], 0
        for positions, _, _ in groups:
            rows.append(slice(start, start + len(positions)))
            start += len(positions)
        self._positions = np.concatenate([positions for positions, _, _ in groups])
        self._channels = np.concatenate(
            [np.full(len(p), self._channel(name), dtype=np.int64) for p, name, _ in groups]
        )
        self._cost_radii = np.concatenate([np.full(len(p), radius) for p, _, radius in groups])
        return rows
