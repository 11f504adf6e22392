"""AMF and its baselines: which task to ask the expert for a demonstration of.

Bagatella, Hübotter, Martius, Krause, "Active Fine-Tuning of Multi-Task Policies", ICML 2025
(``docs/amf.md``), on ``Methods/ActiveFineTuning-v0``. Each round the fine-tuner requests one
demonstration; AMF requests the task whose demonstration tells most about the expert's actions
at the states the fine-tuned policy will visit on the target tasks:

    c_n = argmax_c′  Σ_c μ_c · E[ Σ_t I(π*(s_t, c); τ(c′) | D) ],

the information gain, under the policy's posterior (:mod:`omnigym.envs.methods.amf.learners`:
an exact GP, or the MLP's last-layer gradient-embedding kernel), between the expert's action at
each state s_t the learner will visit on task c and a demonstration τ(c′), summed over the
trajectory. For Gaussian posteriors with noise σ² it is a log-determinant
(:func:`information_gain`),

    I(π*(X); τ(c′)) = ½ log det Σ_X − ½ log det Σ_{X|X′},

with Σ_X the predictive covariance of the expert's actions at the query states X (here one
state at a time) and Σ_{X|X′} the same after observing them at the demonstration's states X′;
it is summed over the two action dimensions (independent outputs sharing the kernel).

The module reads top to bottom:

1. :func:`information_gain`, batched over many (query, candidate) pairs;
2. the state estimates (:func:`future_states`): the learner's future states on task c are the
   states of the demonstrations of c already collected (the last
   :attr:`AMFSettings.query_demonstrations`), weighted by the importance weights
   Π_t π_n(a_t | s_t) / π*(a_t | s_t) of the current policy π_n against the expert
   (self-normalised per task; the demonstrations log the expert's densities), or, for a task
   with none yet, a rollout of the current policy's mean actions. A candidate's demonstration
   states X′ are those of its latest demonstration, or the same rollout when it has none;
3. :class:`AMFAgent`; the baselines :class:`UniformAgent` (tasks drawn from μ),
   :class:`RoundRobinAgent`, :class:`LeastDemonstratedAgent`; the privileged
   :class:`RebalancingAgent`, which reads the pre-training counts (a fine-tuner does not have
   them) and requests so the total becomes proportional to μ; and :class:`ExpertAgent`, the
   scripted expert on ``Methods/MultiTaskReach-v0``.

With a batch of requests between refits, AMF conditions on the demonstrations already received
but not yet fitted (their states are known; the posterior covariance does not depend on the
actions), so one batch spreads over tasks as the paper's batch selection does.

Departures from the paper: trajectories enter the information gain at every third state (10 of
30), and the importance weights use the expert's logged densities rather than an estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from omnigym.envs.methods.amf.fine_tuning import FineTuningInstance
from omnigym.envs.methods.amf.reach import (
    ACTION_SIZE,
    EXPERT_NOISE,
    TASKS,
    Demonstration,
    expert_mean,
    gaussian_log_density,
    rollout,
    task_angle,
)

# ---- 1. the information gain ------------------------------------------------------------------


def log_det(matrices: np.ndarray) -> np.ndarray:
    """log det of symmetric positive definite matrices (..., n, n), by Cholesky."""
    factor = np.linalg.cholesky(matrices)
    return 2.0 * np.sum(np.log(np.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)


def information_gain(
    query: np.ndarray, cross: np.ndarray, candidate: np.ndarray, noise_variance: float
) -> np.ndarray:
    """I(y(X); y(X′)) = ½ log det Σ_X − ½ log det Σ_{X|X′} for one output dimension.

    ``query`` (J, T, T) is the posterior covariance of the latent function at each query set
    X_j, ``candidate`` (C, T′, T′) at each candidate set X′_c, and ``cross`` (J, C, T, T′)
    between them; noise of variance ``noise_variance`` is added to both sides' observations.
    Returns (J, C) gains in nats.
    """
    query = query + noise_variance * np.eye(query.shape[-1])
    candidate = candidate + noise_variance * np.eye(candidate.shape[-1])
    factor = np.linalg.cholesky(candidate)  # (C, T′, T′)
    whitened = np.linalg.solve(factor[None], np.swapaxes(cross, -1, -2))  # (J, C, T′, T)
    conditional = query[:, None] - np.swapaxes(whitened, -1, -2) @ whitened
    return 0.5 * (log_det(query)[:, None] - log_det(conditional))


# ---- 2. the states the learner will visit ------------------------------------------------------


@dataclass(frozen=True)
class AMFSettings:
    """AMF's estimation settings."""

    #: Every ``stride``-th state of a 30-step trajectory enters the information gain.
    stride: int = 3
    #: At most this many of a task's latest demonstrations estimate its future states.
    query_demonstrations: int = 4


def importance_weights(learner: Any, demonstrations: Sequence[Demonstration]) -> np.ndarray:
    """Self-normalised weights Π_t π_n(a_t | s_t) / π*(a_t | s_t) of ``demonstrations`` of one
    task, π_n the learner's predictive Gaussian N(mean, (σ² + posterior variance)·I)."""
    observations = np.stack([d.observations for d in demonstrations])
    actions = np.stack([d.actions for d in demonstrations])
    flat = observations.reshape(-1, observations.shape[-1])
    mean = learner(flat).reshape(actions.shape)
    variance = (learner.noise_variance + learner.variance(flat)).reshape(actions.shape[:2])
    learner_log = gaussian_log_density(actions, mean, variance)
    log_weights = np.sum(learner_log - np.stack([d.log_probs for d in demonstrations]), axis=1)
    weights = np.exp(log_weights - log_weights.max())
    return weights / weights.sum()


@dataclass(frozen=True)
class StateEstimates:
    """Query state sets (J, T, 4) with their task and weight (μ_c times the importance weight),
    and one candidate state set per task (12, T, 4)."""

    queries: np.ndarray
    query_weights: np.ndarray
    candidates: np.ndarray


def future_states(instance: FineTuningInstance, settings: AMFSettings) -> StateEstimates:
    """The query and candidate state sets of the module docstring, for every task."""
    learner, stride = instance.learner, settings.stride
    by_task: dict[int, list[Demonstration]] = {c: [] for c in range(TASKS)}
    for demonstration in (*instance.pretraining, *instance.demonstrations):
        by_task[demonstration.task].append(demonstration)
    missing = [c for c in range(TASKS) if not by_task[c]]
    rollouts = {}
    if missing:
        observations, _ = rollout(learner, task_angle(np.array(missing)))
        rollouts = dict(zip(missing, observations[:, ::stride], strict=True))
    queries, weights = [], []
    for task in np.flatnonzero(instance.mu > 0):
        known = by_task[task][-settings.query_demonstrations :]
        if known:
            queries += [d.observations[::stride] for d in known]
            weights += list(instance.mu[task] * importance_weights(learner, known))
        else:
            queries.append(rollouts[task])
            weights.append(instance.mu[task])
    candidates = [
        by_task[c][-1].observations[::stride] if by_task[c] else rollouts[c] for c in range(TASKS)
    ]
    return StateEstimates(np.stack(queries), np.array(weights), np.stack(candidates))


def condition(covariance: np.ndarray, observed: int, noise_variance: float) -> np.ndarray:
    """``covariance`` after noisy observations at its last ``observed`` points (a Schur
    complement)."""
    block = covariance[-observed:, -observed:] + noise_variance * np.eye(observed)
    cross = covariance[:, -observed:]
    return covariance - cross @ np.linalg.solve(block, cross.T)


# ---- 3. the agents -----------------------------------------------------------------------------


class AMFAgent:
    """AMF: request the task of largest expected information gain (see the module docstring).

    Deterministic: ties go to the lowest task index.
    """

    def __init__(self, stride: int = 3, query_demonstrations: int = 4):
        if stride < 1 or query_demonstrations < 1:
            raise ValueError(
                f"stride and query_demonstrations must be >= 1, got {stride}, "
                f"{query_demonstrations}"
            )
        self.settings = AMFSettings(stride, query_demonstrations)

    def scores(self, instance: FineTuningInstance) -> np.ndarray:
        """The expected information gain (nats) of a demonstration of each task (12,)."""
        with threadpool_limits(limits=1, user_api="blas"):
            return self._scores(instance)

    def _scores(self, instance: FineTuningInstance) -> np.ndarray:
        learner, noise = instance.learner, instance.learner.noise_variance
        estimates = future_states(instance, self.settings)
        queries, candidates = estimates.queries, estimates.candidates
        pending = instance.demonstrations[len(instance.demonstrations) - instance.pending :]
        received = [d.observations[:: self.settings.stride] for d in pending]
        points = np.concatenate([*queries, *candidates, *received])
        covariance = learner.posterior_covariance(points)
        if received:
            covariance = condition(covariance, sum(map(len, received)), noise)
        count, size = queries.shape[:2]
        # Each query state is its own set: the gain is summed over the trajectory's states.
        query_index = np.arange(count * size)[:, None]
        candidate_index = count * size + np.arange(TASKS * size).reshape(TASKS, size)
        gains = information_gain(
            covariance[query_index[:, :, None], query_index[:, None, :]],
            covariance[query_index[:, None, :, None], candidate_index[None, :, None, :]],
            covariance[candidate_index[:, :, None], candidate_index[:, None, :]],
            noise,
        )
        per_trajectory = gains.reshape(count, size, TASKS).sum(axis=1)
        return ACTION_SIZE * estimates.query_weights @ per_trajectory

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        return int(np.argmax(self.scores(info["instance"])))


class _SeededAgent:
    """A baseline that breaks ties (or draws) with its own seeded generator."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def _pick(self, scores: np.ndarray) -> int:
        """A uniformly drawn index among the maxima of ``scores``."""
        best = np.flatnonzero(np.isclose(scores, scores.max()))
        return int(self.rng.choice(best))


class UniformAgent(_SeededAgent):
    """Uniform sampling: each request's task drawn from the target distribution μ."""

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        return int(self.rng.choice(TASKS, p=info["instance"].mu))


class RoundRobinAgent:
    """Tasks of positive μ in index order, over and over."""

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        tasks = np.flatnonzero(info["instance"].mu > 0)
        return int(tasks[observation["round"] % len(tasks)])


class LeastDemonstratedAgent(_SeededAgent):
    """The task with the fewest requested demonstrations relative to μ (ties drawn at random);
    it does not see the pre-training data."""

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        mu = info["instance"].mu
        share = np.where(mu > 0, observation["demos_per_task"] / np.maximum(mu, 1e-12), np.inf)
        return self._pick(-share)


class RebalancingAgent(_SeededAgent):
    """Privileged reference: knows the pre-training counts and requests the task furthest
    below its μ-share of all demonstrations (pre-training included) after this request, so the
    total becomes proportional to μ (ties drawn at random)."""

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        mu = info["instance"].mu
        totals = observation["pretrain_per_task"] + observation["demos_per_task"]
        deficit = mu * (totals.sum() + 1) - totals
        return self._pick(np.where(mu > 0, deficit, -np.inf))


class ExpertAgent(_SeededAgent):
    """The scripted noisy expert of ``Methods/MultiTaskReach-v0``: clip(2·(g − p), −1, 1) plus
    N(0, 0.1²) noise, clipped to the action box."""

    def act(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        noisy = expert_mean(np.asarray(observation)) + EXPERT_NOISE * self.rng.standard_normal(2)
        return np.clip(noisy, -1.0, 1.0)
