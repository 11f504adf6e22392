"""Loss aggregation, label aggregation and their references on ``Methods/MultiLabelRanking-v0``.

Lukasik, Chen, Narasimhan, Menon, Jitkrittum, Yu, Reddi, Fu, Bateni, Kumar, "Bipartite Ranking
From Multiple Labels: On Loss Versus Label Aggregation", ICML 2025 (``docs/methods.md``).

Every agent answers one score per test point of the observation (``test_features``), having
seen the labelled training set (``train_features``, ``train_labels``):

- ``loss-aggregation`` (:class:`LossAggregationAgent`): the plug-in form of the Bayes-optimal
  scorer of Σ_k a_k·AUC_k, namely Σ_k w_k·η̂_k(x) with w_k = a_k / (π̂_k(1 − π̂_k))
  (:func:`loss_aggregation_weights`), η̂_k a gradient-boosted classifier per label and π̂_k the
  training prevalence;
- ``label-aggregation`` (:class:`LabelAggregationAgent`): a gradient-boosted regressor of the
  aggregated label Ȳ = Σ_k a_k·Y_k, i.e. an estimate of E[Ȳ | x];
- ``single-label-1``, ``single-label-2``: a gradient-boosted classifier of one label alone;
- ``bayes-loss-aggregation-reference`` and ``bayes-label-aggregation-reference``: **privileged
  references, not methods**. They read the generator's known parameters (``pi1``,
  ``sharpness``) from the environment they are built for and score with the true η of
  :func:`omnigym.envs.methods.ranking.conditional_probabilities` (and the exact prevalences of
  :func:`~omnigym.envs.methods.ranking.prevalences`): they are the Bayes-optimal scorers the
  learners estimate. They never see the test labels.

Departures from the paper: loss aggregation is learned by its plug-in Bayes-optimal form (one
classifier per label, reweighted by the estimated prevalences) rather than by minimising the
weighted sum of per-label pairwise surrogate losses; both have the same population optimum and the
plug-in form shows the prevalence weights the claim is about. The gradient-boosted models are
scikit-learn's histogram GBDT with its defaults and early stopping on a 10% validation split; the
paper's model class and tuning are not reproduced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from omnigym.envs.methods.ranking import conditional_probabilities, prevalences


def loss_aggregation_weights(
    prevalence: Sequence[float], label_weights: Sequence[float] | None = None
) -> np.ndarray:
    """w_k = a_k / (π_k(1 − π_k)): how the Bayes-optimal scorer of Σ_k a_k·AUC_k weighs η_k.

    AUC_k divides its pair count by π_k(1 − π_k), so a rare label's pairs weigh more; ``a``
    defaults to all ones.
    """
    pi = np.asarray(prevalence, dtype=np.float64)
    if np.any((pi <= 0.0) | (pi >= 1.0)):
        raise ValueError(f"prevalences must lie strictly between 0 and 1, got {pi.tolist()}")
    a = np.ones_like(pi) if label_weights is None else np.asarray(label_weights, np.float64)
    if a.shape != pi.shape:
        raise ValueError(f"label_weights has shape {a.shape}, expected {pi.shape}")
    return a / (pi * (1.0 - pi))


@dataclass(frozen=True)
class Boosting:
    """Settings of the gradient-boosted models (scikit-learn's histogram GBDT)."""

    max_iter: int = 100
    learning_rate: float = 0.1
    validation_fraction: float = 0.1  # held out for early stopping
    n_iter_no_change: int = 10

    def options(self, random_state: int) -> dict[str, Any]:
        return {
            "max_iter": self.max_iter,
            "learning_rate": self.learning_rate,
            "early_stopping": True,
            "validation_fraction": self.validation_fraction,
            "n_iter_no_change": self.n_iter_no_change,
            "random_state": random_state,
        }


class _BoostedRanker:
    """What the learning agents share: their settings, their seed and the fitting.

    ``label_weights`` are the a_k of the module docstring; ``max_iter`` and ``learning_rate``
    go to the boosted models; ``threads`` is the OpenMP threads each fit may use.
    """

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        label_weights: Sequence[float] = (1.0, 1.0),
        max_iter: int = 100,
        learning_rate: float = 0.1,
        threads: int = 1,
    ):
        self.label_weights = np.asarray(label_weights, dtype=np.float64)
        if self.label_weights.shape != (2,) or not np.all(self.label_weights > 0):
            raise ValueError(f"label_weights must be two positive numbers, got {label_weights!r}")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        self.boosting = Boosting(max_iter=max_iter, learning_rate=learning_rate)
        self.threads = threads
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def _random_state(self) -> int:
        return int(self._rng.integers(2**31 - 1))

    def _one_thread_each(self) -> threadpool_limits:
        # scikit-learn's GBDT is OpenMP-parallel over every core by default; the evaluator
        # already runs one episode per worker process, and on a shared CPU more threads per
        # fit only contend (a fit can slow down twentyfold), hence ``threads`` (default 1).
        return threadpool_limits(limits=self.threads, user_api="openmp")

    def _probability(self, features: np.ndarray, labels: np.ndarray, test: np.ndarray):
        """η̂(test) of one binary label (a constant when the training set has one class)."""
        if labels.min() == labels.max():
            return np.full(len(test), float(labels[0]))
        model = HistGradientBoostingClassifier(**self.boosting.options(self._random_state()))
        with self._one_thread_each():
            return model.fit(features, labels).predict_proba(test)[:, 1]


class LossAggregationAgent(_BoostedRanker):
    """Loss aggregation: Σ_k w_k·η̂_k with w_k = a_k / (π̂_k(1 − π̂_k)) (see the module).

    π̂_k is the training prevalence, kept at least 1/n from 0 and 1 so the weights stay finite.
    """

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        features, labels = observation["train_features"], observation["train_labels"]
        test = observation["test_features"]
        n = len(labels)
        pi_hat = np.clip(labels.mean(axis=0), 1.0 / n, 1.0 - 1.0 / n)
        weights = loss_aggregation_weights(pi_hat, self.label_weights)
        eta_hat = np.stack([self._probability(features, labels[:, k], test) for k in (0, 1)], 1)
        return eta_hat @ weights


class LabelAggregationAgent(_BoostedRanker):
    """Label aggregation: a regressor of Ȳ = Σ_k a_k·Y_k, scoring by its estimate of E[Ȳ | x]."""

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        aggregated = observation["train_labels"] @ self.label_weights
        model = HistGradientBoostingRegressor(**self.boosting.options(self._random_state()))
        with self._one_thread_each():
            model.fit(observation["train_features"], aggregated)
            return model.predict(observation["test_features"])


class _SingleLabelAgent(_BoostedRanker):
    label = 0  # the column of train_labels this ranker learns

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        labels = observation["train_labels"][:, self.label]
        return self._probability(
            observation["train_features"], labels, observation["test_features"]
        )


class SingleLabel1Agent(_SingleLabelAgent):
    """Ranks by η̂₁ alone: a classifier of label 1, label 2 ignored."""

    label = 0


class SingleLabel2Agent(_SingleLabelAgent):
    """Ranks by η̂₂ alone: a classifier of label 2, label 1 ignored."""

    label = 1


class _BayesReference:
    """A privileged reference: scores Σ_k c_k·η_k(x) with the generator's true η (see module)."""

    def __init__(self, env: Any = None, seed: int = 0):
        if env is None:
            raise ValueError(
                f"{type(self).__name__} is a privileged reference: it needs the environment "
                "whose generator parameters (pi1, sharpness) it reads"
            )
        generator = env.unwrapped
        self.pi1, self.sharpness = generator.pi1, generator.sharpness
        self.coefficients = self._coefficients()

    def _coefficients(self) -> np.ndarray:
        raise NotImplementedError

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: a reference is deterministic."""

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        eta = conditional_probabilities(observation["test_features"], self.pi1, self.sharpness)
        return eta @ self.coefficients


class BayesLossAggregationReference(_BayesReference):
    """Reference (privileged): the Bayes-optimal loss-aggregation scorer Σ_k η_k/(π_k(1 − π_k))
    from the true η and exact prevalences."""

    def _coefficients(self) -> np.ndarray:
        return loss_aggregation_weights(prevalences(self.pi1, self.sharpness))


class BayesLabelAggregationReference(_BayesReference):
    """Reference (privileged): the Bayes-optimal label-aggregation scorer E[Y₁ + Y₂ | x] =
    η₁ + η₂ from the true η."""

    def _coefficients(self) -> np.ndarray:
        return np.ones(2)
