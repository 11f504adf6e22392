"""The 2-D integrator of AMF's Gaussian-process experiments, and its scripted expert.

Bagatella, Hübotter, Martius, Krause, "Active Fine-Tuning of Multi-Task Policies", ICML 2025
(``docs/amf.md``). A point starts at the origin and moves by ``DT`` times its action, a
velocity in [−1, 1]²; task c puts the goal on the unit circle at angle 2πc/12. The expert
steers towards the goal, a = clip(2·(g − p), −1, 1), plus Gaussian noise of standard deviation
0.1: the noisy expert whose demonstrations the policies of :mod:`.learners` are cloned from.

What lives here is shared by both environments of the paper: the dynamics and rewards
(:func:`rollout`, vectorised over many episodes), the expert (:func:`expert_mean`,
:func:`demonstrate`) and :class:`MultiTaskReach`, one reaching episode as a Gymnasium
environment.

Departures from the paper: an executed action is the expert's (or policy's) noisy action
clipped to the action box, while a demonstration records the noisy action itself, so that its
log-density under the expert is an exact Gaussian one (the importance weights of AMF's
state estimates read it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from omnigym.spaces import require_action

TASKS = 12
HORIZON = 30
DT = 0.1
EXPERT_GAIN = 2.0
EXPERT_NOISE = 0.1
#: A reach succeeds when the final position is this close to the goal.
SUCCESS_RADIUS = 0.1
#: No coordinate of the position can leave [−bound, bound] in one episode (|a_i| ≤ 1).
POSITION_BOUND = HORIZON * DT
OBSERVATION_SIZE, ACTION_SIZE = 4, 2

Policy = Callable[[np.ndarray], np.ndarray]
"""Observations (n, 4) -> mean actions (n, 2)."""


def task_angle(task: int | np.ndarray) -> np.ndarray:
    """The goal angle 2πc/12 of task(s) ``task``."""
    return 2.0 * np.pi * np.asarray(task, dtype=np.float64) / TASKS


def goal(angle: np.ndarray) -> np.ndarray:
    """Goals on the unit circle, (..., 2), for angles (...)."""
    return np.stack([np.cos(angle), np.sin(angle)], axis=-1)


def observe(position: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """The observation (p_x, p_y, cos θ, sin θ), (..., 4)."""
    return np.concatenate([position, goal(angle)], axis=-1)


def expert_mean(observation: np.ndarray) -> np.ndarray:
    """The expert's action before its noise: clip(2·(g − p), −1, 1), (..., 2)."""
    return np.clip(EXPERT_GAIN * (observation[..., 2:] - observation[..., :2]), -1.0, 1.0)


def gaussian_log_density(action: np.ndarray, mean: np.ndarray, variance: Any) -> np.ndarray:
    """log N(action; mean, variance·I) over the last axis (isotropic; ``variance`` broadcasts
    against the leading axes)."""
    variance = np.asarray(variance, dtype=np.float64)
    squared = np.sum((action - mean) ** 2, axis=-1)
    return -0.5 * squared / variance - 0.5 * action.shape[-1] * np.log(2 * np.pi * variance)


@dataclass(frozen=True, eq=False)
class Demonstration:
    """One expert episode of ``task``: the observation before each step, the expert's noisy
    action there (executed clipped) and that action's log-density under the expert."""

    task: int
    observations: np.ndarray
    actions: np.ndarray
    log_probs: np.ndarray

    # Equal by value: Gymnasium's determinism check compares the infos of two seeded steps.
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Demonstration)
            and self.task == other.task
            and np.array_equal(self.observations, other.observations)
            and np.array_equal(self.actions, other.actions)
        )


def demonstrate(task: int, rng: np.random.Generator) -> Demonstration:
    """The expert's demonstration of ``task``, its noise drawn from ``rng``."""
    angle = task_angle(task)
    position = np.zeros(2)
    observations, actions = np.empty((HORIZON, OBSERVATION_SIZE)), np.empty((HORIZON, 2))
    for t in range(HORIZON):
        observations[t] = observe(position, angle)
        actions[t] = expert_mean(observations[t]) + EXPERT_NOISE * rng.standard_normal(2)
        position = position + DT * np.clip(actions[t], -1.0, 1.0)
    log_probs = gaussian_log_density(actions, expert_mean(observations), EXPERT_NOISE**2)
    for array in (observations, actions, log_probs):
        array.flags.writeable = False
    return Demonstration(int(task), observations, actions, log_probs)


def rollout(
    policy: Policy, angles: np.ndarray, noise: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Episodes of ``policy`` from the origin, one per angle, all in step.

    ``noise`` (n, HORIZON, 2) holds standard normal draws, scaled by the expert's noise and added
    to the policy's mean action (the policy as a model of the noisy expert); without it the
    mean action is played. Returns the observations before each step (n, HORIZON, 4) and the
    returns (n,), the sum of −‖p − g‖ after each step.
    """
    angles = np.asarray(angles, dtype=np.float64)
    goals = goal(angles)
    position = np.zeros((len(angles), 2))
    observations = np.empty((len(angles), HORIZON, OBSERVATION_SIZE))
    returns = np.zeros(len(angles))
    for t in range(HORIZON):
        observations[:, t] = observe(position, angles)
        action = policy(observations[:, t])
        if noise is not None:
            action = action + EXPERT_NOISE * noise[:, t]
        position = position + DT * np.clip(action, -1.0, 1.0)
        returns -= np.linalg.norm(position - goals, axis=1)
    return observations, returns


class MultiTaskReach(gym.Env):
    """Reach the goal of one task of the 2-D integrator.

    ## Description

    AMF's 2-D integrator (Bagatella et al., ICML 2025): a point starts at the origin and is
    moved by its velocity, p ← p + 0.1·a. Task c ∈ {0, …, 11} puts the goal g_c on the unit
    circle at angle θ_c = 2πc/12 (``continuous=True``: any angle). The scripted expert plays
    clip(2·(g − p), −1, 1) plus N(0, 0.1²) noise (agent ``expert``).

    ## Action space

    ``Box(-1, 1, (2,), float64)``: the velocity.

    ## Observation space

    ``Box((-3, -3, -1, -1), (3, 3, 1, 1), (4,), float64)``: the position p and the goal
    direction (cos θ_c, sin θ_c).

    ## Rewards

    −‖p − g_c‖ after each step (about −6 for the expert over an episode, −30 for standing
    still).

    ## Starting state

    p = 0; the task is ``task`` or, when None, drawn uniformly at ``reset``
    (``info["task"]``, ``info["angle"]``).

    ## Episode end

    Truncated after 30 steps. The final ``info`` has ``success`` (‖p − g_c‖ ≤ 0.1) and
    ``metrics``: ``final_distance``.

    ## Arguments

    ``task`` (None or 0…11), ``continuous`` (draw the angle uniformly; ``task`` must be None).
    """

    metadata = {"render_modes": []}

    def __init__(self, task: int | None = None, continuous: bool = False):
        if task is not None and (isinstance(task, bool) or task not in range(TASKS)):
            raise ValueError(f"task must be None or an integer in 0..{TASKS - 1}, got {task!r}")
        if not isinstance(continuous, bool):
            raise ValueError(f"continuous must be True or False, got {continuous!r}")
        if continuous and task is not None:
            raise ValueError("continuous=True draws the angle; task must be None")
        self.task, self.continuous = task, continuous
        bound = np.array([POSITION_BOUND, POSITION_BOUND, 1.0, 1.0])
        self.observation_space = spaces.Box(-bound, bound, (OBSERVATION_SIZE,), np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, (ACTION_SIZE,), np.float64)
        self._position: np.ndarray | None = None
        self._angle, self._steps = 0.0, 0

    def _observation(self) -> np.ndarray:
        clipped = np.clip(self._position, -POSITION_BOUND, POSITION_BOUND)
        return observe(clipped, np.float64(self._angle))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if self.continuous:
            task, self._angle = None, float(self.np_random.uniform(0.0, 2.0 * math.pi))
        else:
            task = self.task if self.task is not None else int(self.np_random.integers(TASKS))
            self._angle = float(task_angle(task))
        self._position, self._steps = np.zeros(2), 0
        return self._observation(), {"task": task, "angle": self._angle}

    def step(self, action: Any):
        if self._position is None:
            raise RuntimeError(f"{type(self).__name__}.step() before reset() or after the end")
        require_action(action, self.action_space)
        self._position = self._position + DT * np.asarray(action, dtype=np.float64)
        self._steps += 1
        distance = float(np.linalg.norm(self._position - goal(np.float64(self._angle))))
        observation, info = self._observation(), {}
        truncated = self._steps == HORIZON
        if truncated:
            info = {"success": distance <= SUCCESS_RADIUS, "metrics": {"final_distance": distance}}
            self._position = None
        return observation, -distance, False, truncated, info
