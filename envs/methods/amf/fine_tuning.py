"""Active multi-task fine-tuning as an environment: one step is one demonstration request.

Bagatella, Hübotter, Martius, Krause, "Active Fine-Tuning of Multi-Task Policies", ICML 2025
(``docs/amf.md``). A multi-task policy for the 2-D integrator of :mod:`.reach` is pre-trained
by behaviour cloning on a fixed set of demonstrations; then, for ``budget`` rounds, the agent
names the task it wants one more expert demonstration of, and the policy is refitted every
``batch`` requests. The agent's score is the multi-task return the fine-tuned policy reaches
under the target task distribution μ. AMF and its baselines are the agents of
:mod:`omnigym.agents.methods.amf`.

Departures from the paper: the pre-training sets (:func:`pretraining_counts`) and the
evaluation (16 noisy rollouts per task with the same noise at every refit, so that a change of
return is the policy's and not the noise's) are ours; the learners' departures are in
:mod:`.learners`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from threadpoolctl import threadpool_limits

from omnigym.spaces import require_action

from .learners import GaussianProcessPolicy, MLPPolicy, fine_tune, pretrain
from .reach import (
    ACTION_SIZE,
    HORIZON,
    TASKS,
    Demonstration,
    Policy,
    demonstrate,
    expert_mean,
    rollout,
    task_angle,
)

LEARNERS = ("gp", "mlp")
DEFAULT_BATCH = {"gp": 1, "mlp": 4}
#: Pre-training demonstrations in all, spread over the tasks that ``pretraining`` covers.
PRETRAINING_DEMOS = 12
#: Evaluation rollouts per task; the multi-task return is their mean, weighted by μ.
EVALUATION_ROLLOUTS = 16


def pretraining_counts(pretraining: str) -> np.ndarray:
    """Pre-training demonstrations per task (12,) for a ``pretraining`` setting.

    ``"uniform"``: one of every task; ``"skewed:k"`` (1 ≤ k ≤ 12): the 12 spread over tasks
    0…k−1 (the first tasks get the remainder); ``"mismatched"``: two of each even task, none of
    the odd ones. Anything else raises ``ValueError`` naming ``pretraining``.
    """
    counts = np.zeros(TASKS, dtype=np.int64)
    if pretraining == "uniform":
        counts[:] = PRETRAINING_DEMOS // TASKS
        return counts
    if pretraining == "mismatched":
        counts[0::2] = PRETRAINING_DEMOS // (TASKS // 2)
        return counts
    kind, _, covered = str(pretraining).partition(":")
    if kind == "skewed" and covered.isdigit() and 1 <= int(covered) <= TASKS:
        share, extra = divmod(PRETRAINING_DEMOS, int(covered))
        counts[: int(covered)] = share
        counts[:extra] += 1
        return counts
    raise ValueError(
        f"pretraining must be 'uniform', 'mismatched' or 'skewed:k' with k in 1..{TASKS}, "
        f"got {pretraining!r}"
    )


def check_mu(mu: Sequence[float] | None) -> np.ndarray:
    """The target task distribution: ``mu`` normalised (uniform when None)."""
    if mu is None:
        return np.full(TASKS, 1.0 / TASKS)
    weights = np.asarray(mu, dtype=np.float64)
    if weights.shape != (TASKS,) or not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(f"mu must be {TASKS} non-negative weights, got {mu!r}")
    if weights.sum() <= 0:
        raise ValueError(f"mu must have a positive weight, got {mu!r}")
    return weights / weights.sum()


@dataclass(frozen=True, eq=False)
class FineTuningInstance:
    """What ``info["instance"]`` shows an agent: the policy as last refitted, the
    pre-training and requested demonstrations (in request order; the last ``pending`` of them
    are not in the policy yet) and the target distribution μ."""

    learner: GaussianProcessPolicy | MLPPolicy
    pretraining: tuple[Demonstration, ...]
    demonstrations: tuple[Demonstration, ...]
    pending: int
    mu: np.ndarray

    # Equal by value (Gymnasium's determinism check compares infos): the policy is a function
    # of the demonstrations and the episode's seed, so they stand for it.
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FineTuningInstance)
            and type(self.learner) is type(other.learner)
            and (self.pretraining, self.demonstrations, self.pending)
            == (other.pretraining, other.demonstrations, other.pending)
            and np.array_equal(self.mu, other.mu)
        )


class ActiveFineTuning(gym.Env):
    """Choose which task to ask the expert for a demonstration of, ``budget`` times.

    ## Description

    ``reset`` draws the pre-training demonstrations of the 2-D integrator's expert
    (``pretraining``) and fits the ``learner`` to them: an exact Gaussian process
    (``"gp"``) or an MLP trained by behaviour cloning (``"mlp"``; fine-tuned on the new
    demonstrations only, with the adaptive prior when ``adaptive_prior``). Each step requests
    one demonstration of the chosen task (rolled out by the seeded expert); the policy is
    refitted when ``batch`` requests are pending and at the last round. ``info["instance"]`` is
    a :class:`FineTuningInstance` (the policy, the demonstrations, μ) on every step.

    ## Action space

    ``Discrete(12)``: the task to request a demonstration of.

    ## Observation space

    ``Dict``: ``demos_per_task`` ``Box(0, budget, (12,), int64)`` (requests so far),
    ``pretrain_per_task`` ``Box(0, 12, (12,), int64)`` (the pre-training demonstrations; only
    the privileged ``rebalancing`` agent reads them) and ``round`` ``Discrete(budget + 1)``.

    ## Rewards

    At each refit, the change in multi-task return (the μ-weighted mean over tasks of 16
    evaluation rollouts each) since the previous refit; 0 between refits. The episode's
    return is the final minus the pre-trained multi-task return.

    ## Starting state

    The pre-trained policy, no request yet.

    ## Episode end

    Terminated after ``budget`` requests. The final ``info`` has ``normalized_score`` = 100 ×
    (final − pre-trained)/(expert − pre-trained) and ``metrics``: ``multitask_return``,
    ``pretrained_return``, ``expert_return``, ``random_return``, ``return_task_<c>``,
    ``demos_task_<c>``, ``forgetting`` (the largest drop of a pre-trained task's return, as a
    fraction of its expert-minus-random gap, 0 when none dropped) and
    ``multitask_return_after_<n>`` after each refit at n requests.

    ## Arguments

    ``learner`` (``"gp"`` or ``"mlp"``), ``pretraining`` (``"uniform"``, ``"skewed:k"``,
    ``"mismatched"``; see :func:`pretraining_counts`), ``budget`` (requests, default 20),
    ``batch`` (requests per refit; None: 1 for the GP, 4 for the MLP), ``adaptive_prior``
    (the MLP's forgetting control, default True; the GP forgets nothing), ``mu`` (12 task
    weights; None: uniform).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        learner: str = "gp",
        pretraining: str = "uniform",
        budget: int = 20,
        batch: int | None = None,
        adaptive_prior: bool = True,
        mu: Sequence[float] | None = None,
    ):
        if learner not in LEARNERS:
            raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
        self.pretrain_per_task = pretraining_counts(pretraining)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"budget must be a positive integer, got {budget!r}")
        batch = DEFAULT_BATCH[learner] if batch is None else batch
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch must be None or a positive integer, got {batch!r}")
        if not isinstance(adaptive_prior, bool):
            raise ValueError(f"adaptive_prior must be True or False, got {adaptive_prior!r}")
        self.learner_kind, self.pretraining, self.budget, self.batch = (
            learner,
            pretraining,
            budget,
            batch,
        )
        self.adaptive_prior, self.mu = adaptive_prior, check_mu(mu)
        self.observation_space = spaces.Dict(
            {
                "demos_per_task": spaces.Box(0, budget, (TASKS,), np.int64),
                "pretrain_per_task": spaces.Box(0, int(PRETRAINING_DEMOS), (TASKS,), np.int64),
                "round": spaces.Discrete(budget + 1),
            }
        )
        self.action_space = spaces.Discrete(TASKS)
        self._learner: GaussianProcessPolicy | MLPPolicy | None = None
        self._done = True

    # ---- the learner ----------------------------------------------------------------------

    def _fit_pretrained(self) -> None:
        rng = self.np_random
        self._pretraining = tuple(
            demonstrate(task, rng)
            for task in range(TASKS)
            for _ in range(self.pretrain_per_task[task])
        )
        if self.learner_kind == "gp":
            self._learner = GaussianProcessPolicy.fit(self._pretraining)
        else:
            self._network = pretrain(self._pretraining, rng)
            self._learner = fine_tune(self._network, self._pretraining, (), self.adaptive_prior)

    def _refit(self) -> None:
        if self.learner_kind == "gp":
            self._learner = self._learner.extended(self._requested[-self._pending :])
        else:
            self._learner = fine_tune(
                self._network, self._pretraining, tuple(self._requested), self.adaptive_prior
            )
        self._pending = 0

    def task_returns(self, policy: Policy) -> np.ndarray:
        """Mean return per task (12,) of ``policy`` over this episode's evaluation noise."""
        _, returns = rollout(policy, self._angles, self._noise)
        return returns.reshape(TASKS, EVALUATION_ROLLOUTS).mean(axis=1)

    # ---- Gymnasium API --------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        with threadpool_limits(limits=1, user_api="blas"):
            return self._reset()

    def _reset(self):
        rng = self.np_random
        self._angles = np.repeat(task_angle(np.arange(TASKS)), EVALUATION_ROLLOUTS)
        self._noise = rng.standard_normal((len(self._angles), HORIZON, ACTION_SIZE))
        moves = rng.uniform(-1.0, 1.0, (HORIZON, len(self._angles), ACTION_SIZE))
        step = iter(moves)
        self.expert_returns = self.task_returns(expert_mean)
        self.random_returns = self.task_returns(lambda observations: next(step))
        self._requested: list[Demonstration] = []
        self._pending, self._round, self._curve = 0, 0, {}
        self._fit_pretrained()
        self.pretrained_returns = self.task_returns(self._learner)
        self._returns = self.pretrained_returns
        self._done = False
        return self._observation(), {"instance": self._instance()}

    def _observation(self) -> dict[str, Any]:
        demos = np.bincount([d.task for d in self._requested], minlength=TASKS).astype(np.int64)
        return {
            "demos_per_task": demos,
            "pretrain_per_task": self.pretrain_per_task.copy(),
            "round": self._round,
        }

    def _instance(self) -> FineTuningInstance:
        return FineTuningInstance(
            self._learner, self._pretraining, tuple(self._requested), self._pending, self.mu
        )

    def step(self, action: Any):
        if self._done:
            raise RuntimeError(f"{type(self).__name__}.step() before reset() or after the end")
        require_action(action, self.action_space)
        with threadpool_limits(limits=1, user_api="blas"):
            return self._step(int(action))

    def _step(self, action: int):
        self._requested.append(demonstrate(action, self.np_random))
        self._pending += 1
        self._round += 1
        terminated = self._round == self.budget
        reward = 0.0
        if self._pending == self.batch or terminated:
            self._refit()
            before, self._returns = self._returns, self.task_returns(self._learner)
            reward = float(self.mu @ self._returns - self.mu @ before)
            self._curve[self._round] = float(self.mu @ self._returns)
        info: dict[str, Any] = {"instance": self._instance()}
        if terminated:
            self._done = True
            info.update(self._final_info())
        return self._observation(), reward, terminated, False, info

    def _final_info(self) -> dict[str, Any]:
        final, pretrained = float(self.mu @ self._returns), float(self.mu @ self.pretrained_returns)
        expert, random = float(self.mu @ self.expert_returns), float(self.mu @ self.random_returns)
        gap = self.expert_returns - self.random_returns
        drops = (self.pretrained_returns - self._returns) / gap
        covered = self.pretrain_per_task > 0
        counts = self._observation()["demos_per_task"]
        metrics = {
            "multitask_return": final,
            "pretrained_return": pretrained,
            "expert_return": expert,
            "random_return": random,
            "forgetting": float(max(0.0, drops[covered].max())),
            **{f"return_task_{c}": float(self._returns[c]) for c in range(TASKS)},
            **{f"demos_task_{c}": float(counts[c]) for c in range(TASKS)},
            **{f"multitask_return_after_{n}": value for n, value in self._curve.items()},
        }
        normalized = 100.0 * (final - pretrained) / max(expert - pretrained, 1e-9)
        return {"normalized_score": normalized, "metrics": metrics}
