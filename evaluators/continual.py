"""Continual-learning evaluation: a task sequence, the performance matrix, final performance and
forgetting.

Follows the protocol Craftium uses for its procedural-dungeon sequence (``docs/craft.md``) and the
usual continual-RL metrics (Chaudhry et al., ECCV 2018; Wołczyk et al., NeurIPS 2021): the agent
learns the tasks one after another; after stage ``i`` it is evaluated on every task ``j``, giving
the matrix ``R[i, j]``. Then

- **average final performance** = mean over ``j`` of ``R[N − 1, j]``;
- **forgetting** of task ``j < N − 1`` = ``max_{j ≤ i < N − 1} R[i, j] − R[N − 1, j]`` (the best
  it ever did on ``j`` after learning it, minus what it does at the end); the last task has none.

The score of an evaluation is the mean ``normalized_score`` of its episodes when the environment
reports one (every Craft task does), else the mean return.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .rollout import run_episode


@dataclass(frozen=True)
class ContinualResult:
    """The performance matrix and its two summaries."""

    matrix: np.ndarray
    """``R[i, j]``: score on task ``j`` after learning tasks ``0 … i``."""
    average_final_performance: float
    forgetting: np.ndarray
    """Per task ``j < N − 1``; empty for a one-task sequence."""

    @property
    def average_forgetting(self) -> float:
        return float(self.forgetting.mean()) if len(self.forgetting) else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "matrix": self.matrix.tolist(),
            "average_final_performance": self.average_final_performance,
            "forgetting": self.forgetting.tolist(),
            "average_forgetting": self.average_forgetting,
        }


def continual_metrics(matrix: Any) -> ContinualResult:
    """Average final performance and per-task forgetting of a square matrix ``R[i, j]``."""
    R = np.asarray(matrix, dtype=np.float64)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] == 0:
        raise ValueError(f"the performance matrix must be square and non-empty, got {R.shape}")
    n = R.shape[0]
    forgetting = np.array([R[j : n - 1, j].max() - R[n - 1, j] for j in range(n - 1)])
    return ContinualResult(R, float(R[n - 1].mean()), forgetting)


def evaluate_continual(
    agent: Any,
    factories: Sequence[Callable[[], Any]],
    train_budget: int = 0,
    episodes: int = 5,
    seed: int = 0,
) -> ContinualResult:
    """Learns the tasks of ``factories`` in order and evaluates on all of them after each stage.

    Args:
        agent: any agent; its ``learn(env, budget)`` is called at each stage when it has one and
            ``train_budget > 0`` (a fixed policy is evaluated as is: no forgetting).
        factories: zero-argument callables that build each task's environment (e.g.
            ``omnigym.envs.craft.extra.crl_dungeons.continual_sequence()``).
        train_budget: environment steps per stage.
        episodes: evaluation episodes per task and stage (episode seeds as in ``evaluate``).
        seed: run seed.
    """
    if not factories:
        raise ValueError("factories must hold at least one task")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    envs = [make_env() for make_env in factories]
    learn = getattr(agent, "learn", None)
    n = len(envs)
    matrix = np.zeros((n, n))
    try:
        for stage, env in enumerate(envs):
            if learn is not None and train_budget > 0:
                learn(env, train_budget)
            for task, eval_env in enumerate(envs):
                records = [run_episode(eval_env, agent, seed, e) for e in range(episodes)]
                matrix[stage, task] = _score(records)
    finally:
        for env in envs:
            env.close()
    return continual_metrics(matrix)


def _score(records: list[dict[str, Any]]) -> float:
    scores = [r["normalized_score"] for r in records]
    if all(score is not None for score in scores):
        return float(np.mean(scores))
    return float(np.mean([r["return"] for r in records]))
