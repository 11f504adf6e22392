"""Agnostic boosting with few labels and many unlabelled points, as a task.

Ghai, Singh, "Sample-Optimal Agnostic Boosting with Unlabeled Data", ICML 2025
(``docs/methods.md``). The boosters (the paper's, the labelled-only ones it improves on, AdaBoost
and gradient boosting) are the agents of :mod:`omnigym.agents.methods.boosting`.

Each instance is an agnostic binary classification problem in R¹⁰ whose best-in-class rule is
known:

- features x ∼ N(0, I₁₀) for the labelled and the test points;
- the rule r (``rule=``): a ``"halfspace"`` sign(w·x + b) with w uniform on the unit sphere and
  b ∼ U(−½, ½), or a depth-2 ``"tree"``: a root split x_a ≤ t_a, one split per child
  (x_b vs t_b on the left, x_c vs t_c on the right; a, b, c distinct features), thresholds
  ∼ U(−½, ½) and a random orientation per child (which side of its split is positive);
- the label y = r(x), flipped with probability
  p(x) = :data:`UNIFORM_NOISE` + :data:`BOUNDARY_NOISE_PEAK`·exp(−d(x) / :data:`BOUNDARY_WIDTH`),
  d(x) the Euclidean distance from x to r's decision boundary: 15 % random noise plus boundary-
  concentrated noise that flips ≈ 10 % of the points (10.1 % for a halfspace through the mean).
  p(x) ≤ 0.45 < ½ everywhere, so r is the Bayes-optimal classifier: no rule of any class errs
  less in expectation, and r is the best-in-class rule whatever class a booster searches;
- an unlabelled pool from the marginal N(``shift``·1, I₁₀): ``shift`` = 0 is the labelled
  marginal, ``shift`` = 0.3 moves every coordinate's mean by 0.3 (the mismatch the claims scenario
  runs).

A method sees the ``m`` labelled points, the unlabelled pool and the test features, and answers
one value in [−1, 1] per test point: its sign is the predicted label (a zero is a coin flip,
counted as half an error). The score is the test error against the hidden noisy test labels, less
the test error of r on the same points (the excess error, ≈ 0 for a learner as good as r).

Draws are seeded through four independent child streams (rule, labelled set, pool, test set), so
for one seed the rule, the pool and the test set do not depend on ``m``, and ``shift`` moves the
pool without changing anything else: instances at different budgets or shifts are paired.

Departures from the paper: the paper's analysis is distribution-free and its experiments use
benchmark data sets; this generator is ours, built so that the best-in-class error is known exactly
(the Bayes error is ≈ 0.25 at every draw). The paper's mismatch result bounds the cost of a
labelled/unlabelled marginal mismatch in general; here the mismatch is one mean shift.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from .core import MethodEnv

N_FEATURES = 10
#: (unlabelled pool, test points) per size.
SAMPLES = {"small": (4_000, 4_000), "paper": (20_000, 20_000)}
#: The labelled budgets of the claims scenario's sweep (``m`` may be any positive integer up to
#: :data:`MAX_LABELLED`).
BUDGETS = (100, 200, 400, 800, 1600)
MAX_LABELLED = 100_000
RULES = ("halfspace", "tree")
UNIFORM_NOISE = 0.15
BOUNDARY_NOISE_PEAK = 0.3
BOUNDARY_WIDTH = 0.5
#: The unlabelled marginal's mean may move by at most this much per coordinate.
MAX_SHIFT = 5.0


def _signs(values: np.ndarray) -> np.ndarray:
    """+1 where ``values`` > 0, else −1, as int8."""
    return np.where(values > 0, 1, -1).astype(np.int8)


@dataclass(frozen=True)
class Halfspace:
    """The rule sign(w·x + b) with ‖w‖ = 1."""

    normal: np.ndarray
    offset: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        return _signs(x @ self.normal + self.offset)

    def boundary_distance(self, x: np.ndarray) -> np.ndarray:
        return np.abs(x @ self.normal + self.offset)


@dataclass(frozen=True)
class DepthTwoTree:
    """The rule: root x_a ≤ t_a goes left; child k labels s_k·sign(x_{f_k} − t_k).

    ``features`` = (a, f_left, f_right), ``thresholds`` = (t_a, t_left, t_right), ``signs`` =
    (s_left, s_right); the three features are distinct.
    """

    features: tuple[int, int, int]
    thresholds: tuple[float, float, float]
    signs: tuple[int, int]

    def _child_labels(self, x: np.ndarray) -> np.ndarray:
        """The label each child would give every point, shape (n, 2)."""
        _, left, right = self.features
        return np.stack(
            [
                self.signs[0] * _signs(x[:, left] - self.thresholds[1]),
                self.signs[1] * _signs(x[:, right] - self.thresholds[2]),
            ],
            axis=1,
        ).astype(np.int8)

    def _child(self, x: np.ndarray) -> np.ndarray:
        return (x[:, self.features[0]] > self.thresholds[0]).astype(np.intp)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self._child_labels(x)[np.arange(len(x)), self._child(x)]

    def boundary_distance(self, x: np.ndarray) -> np.ndarray:
        """Exact distance to the nearest point the tree labels otherwise.

        Such a point lies across the own child's split, or in the other child's region on the
        side of its split that disagrees: the distance to that box is the root distance and, if
        the other child already disagrees at x, nothing more, else also its split distance.
        """
        rows, child = np.arange(len(x)), self._child(x)
        labels = self._child_labels(x)
        split = np.abs(x[:, list(self.features[1:])] - np.array(self.thresholds[1:]))
        own = split[rows, child]
        root = np.abs(x[:, self.features[0]] - self.thresholds[0])
        other = 1 - child
        disagrees = labels[rows, other] != labels[rows, child]
        across = np.hypot(root, np.where(disagrees, 0.0, split[rows, other]))
        return np.minimum(own, across)


Rule = Halfspace | DepthTwoTree


def draw_rule(kind: str, rng: np.random.Generator) -> Rule:
    """A random best-in-class rule of ``kind`` (see the module docstring)."""
    if kind == "halfspace":
        normal = rng.standard_normal(N_FEATURES)
        return Halfspace(normal / np.linalg.norm(normal), float(rng.uniform(-0.5, 0.5)))
    features = tuple(int(f) for f in rng.choice(N_FEATURES, 3, replace=False))
    thresholds = tuple(float(t) for t in rng.uniform(-0.5, 0.5, 3))
    signs = tuple(int(s) for s in rng.choice([-1, 1], 2))
    return DepthTwoTree(features, thresholds, signs)


def flip_probability(rule: Rule, x: np.ndarray) -> np.ndarray:
    """p(x): uniform noise plus noise that peaks on the rule's decision boundary."""
    distance = rule.boundary_distance(x)
    return UNIFORM_NOISE + BOUNDARY_NOISE_PEAK * np.exp(-distance / BOUNDARY_WIDTH)


def noisy_labels(rule: Rule, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """r(x) flipped with probability p(x), as int8 ±1."""
    flipped = rng.random(len(x)) < flip_probability(rule, x)
    return np.where(flipped, -rule.predict(x), rule.predict(x)).astype(np.int8)


def classification_error(solution: np.ndarray, labels: np.ndarray) -> float:
    """The error of sign(solution) against ±1 ``labels``, a zero answer counting ½."""
    return float(np.mean(0.5 * (1.0 - np.sign(solution) * labels)))


@dataclass(frozen=True)
class BoostingInstance:
    """What scoring needs: the best-in-class rule and the hidden noisy test labels."""

    rule: Rule
    test_labels: np.ndarray
    best_in_class_error: float


def _check_number(name: str, value: object, low: float, high: float, integer: bool) -> None:
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not low <= value <= high:
        noun = "an integer" if integer else "a number"
        raise ValueError(f"{name} must be {noun} in [{low:g}, {high:g}], got {value!r}")


class AgnosticBoosting(MethodEnv):
    """Classify test points from ``m`` noisy labels and an unlabelled pool, against the best rule.

    ## Description

    One step. ``reset`` draws a best-in-class rule, ``m`` labelled points with agnostic label
    noise, an unlabelled pool (its marginal shifted by ``shift``) and test features, from the
    generator of the module docstring; ``step`` takes one value per test point and scores its
    signs against the hidden noisy test labels.

    ## Action space

    ``Box(-1, 1, (n_test,), float64)``: the sign of each value is the predicted label; a zero is
    counted as half an error.

    ## Observation space

    ``Dict`` with ``labelled_features`` ``Box(-inf, inf, (m, 10), float64)``, ``labels``
    ``Box(-1, 1, (m,), int8)`` (values ±1), ``unlabelled_features``
    ``Box(-inf, inf, (n_unlabelled, 10), float64)`` and ``test_features``
    ``Box(-inf, inf, (n_test, 10), float64)``. (n_unlabelled, n_test) is (4000, 4000) at
    ``size="small"``, (20000, 20000) at ``size="paper"``.

    ## Rewards

    −excess error: −(test error − the best-in-class rule's test error on the same points).
    ``info["metrics"]`` holds ``accuracy`` (1 − test error), ``excess_error``, ``test_error`` and
    ``best_in_class_error``. A non-finite answer is a failed episode: reward −1 and
    ``info["invalid_action"]``.

    ## Starting state

    Each ``reset(seed)`` draws a fresh instance from ``self.np_random``.

    ## Episode end

    After the one step (``terminated=True``).

    ## Arguments

    ``m`` (the labelled budget, an integer in [1, 100000]; default 100; the claims scenario sweeps
    :data:`BUDGETS`), ``shift`` (the unlabelled marginal's mean shift per coordinate, in [−5, 5];
    default 0), ``rule`` (``"halfspace"`` or ``"tree"``; default ``"halfspace"``) and ``size``
    (``"small"`` or ``"paper"``).
    """

    invalid_reward = -1.0

    def __init__(
        self, size: str = "small", m: int = 100, shift: float = 0.0, rule: str = "halfspace"
    ):
        super().__init__(size)
        _check_number("m", m, 1, MAX_LABELLED, integer=True)
        _check_number("shift", shift, -MAX_SHIFT, MAX_SHIFT, integer=False)
        if rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
        self.m, self.shift, self.rule = int(m), float(shift), rule
        self.n_unlabelled, self.n_test = SAMPLES[self.size]

        def features(n: int) -> spaces.Box:
            return spaces.Box(-np.inf, np.inf, (n, N_FEATURES), np.float64)

        self.observation_space = spaces.Dict(
            {
                "labelled_features": features(self.m),
                "labels": spaces.Box(-1, 1, (self.m,), np.int8),
                "unlabelled_features": features(self.n_unlabelled),
                "test_features": features(self.n_test),
            }
        )
        self.action_space = spaces.Box(-1.0, 1.0, (self.n_test,), np.float64)

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], BoostingInstance]:
        rule_rng, labelled_rng, pool_rng, test_rng = rng.spawn(4)
        rule = draw_rule(self.rule, rule_rng)
        labelled = labelled_rng.standard_normal((self.m, N_FEATURES))
        labels = noisy_labels(rule, labelled, labelled_rng)
        pool = pool_rng.standard_normal((self.n_unlabelled, N_FEATURES)) + self.shift
        test = test_rng.standard_normal((self.n_test, N_FEATURES))
        test_labels = noisy_labels(rule, test, test_rng)
        observation = {
            "labelled_features": labelled,
            "labels": labels,
            "unlabelled_features": pool,
            "test_features": test,
        }
        best = classification_error(rule.predict(test).astype(np.float64), test_labels)
        return observation, BoostingInstance(rule, test_labels, best)

    def score(self, solution: np.ndarray) -> tuple[float, dict[str, float]]:
        error = classification_error(solution, self.instance.test_labels)
        excess = error - self.instance.best_in_class_error
        metrics = {
            "accuracy": 1.0 - error,
            "excess_error": excess,
            "test_error": error,
            "best_in_class_error": self.instance.best_in_class_error,
        }
        return -excess, metrics
