"""Bipartite ranking from two binary labels: loss versus label aggregation, as a task.

Lukasik, Chen, Narasimhan, Menon, Jitkrittum, Yu, Reddi, Fu, Bateni, Kumar, "Bipartite Ranking
From Multiple Labels: On Loss Versus Label Aggregation", ICML 2025 (``docs/methods.md``).

Each instance is the paper's synthetic two-label problem: features x ∼ N(0, I₄), two labels
drawn independently given x with

    η₁(x) = σ(s·(x₁ − t₁)),  t₁ = Φ⁻¹(1 − π₁),        η₂(x) = σ(s·x₂),

so label 1 has prevalence ≈ ``pi1`` (the knob) and label 2 prevalence ½; ``sharpness`` s = 40
makes both labels near-deterministic, s = 8 noisy. x₃ and x₄ are pure noise. A ranker sees the
labelled training set and the unlabelled test features and answers one score per test point.

The score is read three ways (the paper's quantities):

- ``auc_1``, ``auc_2``: the AUC of the scores against each hidden test label (exact ties ½);
- ``mixed_pair_preference``: P[f(x) > f(x′) | (Y₁, Y₂) = (1, 0), (Y₁′, Y₂′) = (0, 1)] over all
  such test pairs, a pair whose scores differ by at most 0.05·std(f) counting ½ (our
  tie-aware form: a ranker that treats the two kinds of mixed example alike scores ½, one that
  puts every label-1-only example above every label-2-only example scores 1);
- ``mixed_pair_ties``: the fraction of those pairs that are ties.

The theory the task probes: loss aggregation (maximise Σ_k a_k·AUC_k) has Bayes-optimal scorer
Σ_k a_k·η_k(x) / (π_k(1 − π_k)), so as π₁ falls label 1's weight grows and it alone decides how
mixed pairs are ordered ("label dictatorship"); label aggregation (rank by the aggregated label
Ȳ = Y₁ + Y₂) has Bayes-optimal scorer E[Ȳ | x] = η₁ + η₂ and orders (1, 1) ≻ {(1, 0) ∼ (0, 1)} ≻
(0, 0) whatever the prevalences. :func:`conditional_probabilities` and :func:`prevalences` are
this generator's known η and π, public so that the *reference* agents
(``omnigym.agents.methods.ranking``) can build the Bayes-optimal scorers; learning agents use
only the observation.

Departures from the paper: the sizes are ours (20k training and 50k test points at
``size="paper"``, 2k and 5k at ``size="small"``), and the mixed-pair preference counts
near-ties (|Δf| ≤ 0.05·std f) as ½ where the paper reads the ordering off its Bayes-optimal
scorers: a learned scorer never ties exactly, and without a tolerance the estimation noise of a
balanced ranker would hide its ties. The tolerance is ours, not the paper's.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from scipy import integrate, special, stats

from .core import MethodEnv

N_FEATURES = 4
#: (training points, test points) per size.
SAMPLES = {"small": (2_000, 5_000), "paper": (20_000, 50_000)}
#: ``pi1`` must leave at least this many expected examples of each mixed kind in the test set,
#: so that every metric is defined (the chance of a draw without any is then below 1e-4).
MIN_EXPECTED_MIXED = 10
#: Two scores closer than this fraction of the scores' standard deviation are a tie.
TIE_FRACTION = 0.05


def label_threshold(pi1: float) -> float:
    """t₁ = Φ⁻¹(1 − π₁): the x₁ above which label 1 is (for large sharpness) positive."""
    return float(stats.norm.ppf(1.0 - pi1))


def conditional_probabilities(x: np.ndarray, pi1: float, sharpness: float) -> np.ndarray:
    """η(x) = (P[Y₁ = 1 | x], P[Y₂ = 1 | x]) of this generator, shape ``(len(x), 2)``."""
    x = np.asarray(x, dtype=np.float64)
    return np.stack(
        [
            special.expit(sharpness * (x[:, 0] - label_threshold(pi1))),
            special.expit(sharpness * x[:, 1]),
        ],
        axis=1,
    )


def prevalences(pi1: float, sharpness: float) -> np.ndarray:
    """The exact label prevalences π_k = E[η_k(x)] of this generator.

    π₂ is ½ by symmetry; π₁ is E[σ(s·(x₁ − t₁))] for x₁ ∼ N(0, 1), which tends to ``pi1`` as the
    sharpness grows (integrated numerically: the logistic is not the normal CDF).
    """
    threshold = label_threshold(pi1)

    def density(z: float) -> float:
        return special.expit(sharpness * (z - threshold)) * stats.norm.pdf(z)

    # Split at the threshold, where the logistic turns: quad then resolves the step.
    below, _ = integrate.quad(density, -np.inf, threshold)
    above, _ = integrate.quad(density, threshold, np.inf)
    return np.array([below + above, 0.5])


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """AUC of ``scores`` against binary ``labels`` (Mann–Whitney, exact ties ½); NaN when one
    class is absent."""
    positive = labels.astype(bool)
    n_positive = int(positive.sum())
    n_negative = positive.size - n_positive
    if n_positive == 0 or n_negative == 0:
        return float("nan")
    ranks = stats.rankdata(scores)
    wins = ranks[positive].sum() - n_positive * (n_positive + 1) / 2
    return float(wins / (n_positive * n_negative))


def mixed_pair_preference(
    scores: np.ndarray, labels: np.ndarray, tie_fraction: float = TIE_FRACTION
) -> tuple[float, float]:
    """``(preference, tie rate)`` over the pairs of a (1, 0) and a (0, 1) example.

    ``labels`` has shape ``(n, 2)``. The preference is P[f(x) > f(x′)] for x labelled (1, 0) and
    x′ labelled (0, 1), a pair with |f(x) − f(x′)| ≤ ``tie_fraction``·std(f) counting ½ (std
    over all ``scores``); the tie rate is the fraction of such pairs. Both are NaN when either
    kind of mixed example is absent.
    """
    first_only = scores[(labels[:, 0] == 1) & (labels[:, 1] == 0)]
    second_only = np.sort(scores[(labels[:, 0] == 0) & (labels[:, 1] == 1)])
    if first_only.size == 0 or second_only.size == 0:
        return float("nan"), float("nan")
    tolerance = tie_fraction * float(np.std(scores))
    below = np.searchsorted(second_only, first_only - tolerance, side="left")
    not_above = np.searchsorted(second_only, first_only + tolerance, side="right")
    pairs = first_only.size * second_only.size
    wins, ties = float(below.sum()), float((not_above - below).sum())
    return (wins + 0.5 * ties) / pairs, ties / pairs


class MultiLabelRanking(MethodEnv):
    """Rank test points from a training set labelled by two binary labels of unequal prevalence.

    ## Description

    One step. ``reset`` draws a training set of features with two binary labels and a test set
    of features (their labels hidden) from the generator of the module docstring; ``step``
    takes one score per test point and scores the ranking it induces.

    ## Action space

    ``Box(-inf, inf, (n_test,), float64)``: the scores of the test points (higher ranks first).
    Only their order matters, plus their spread for the tie tolerance of the mixed-pair metric.

    ## Observation space

    ``Dict`` with ``train_features`` ``Box(-inf, inf, (n_train, 4), float64)``, ``train_labels``
    ``MultiBinary((n_train, 2))`` (columns: label 1, label 2) and ``test_features``
    ``Box(-inf, inf, (n_test, 4), float64)``. (n_train, n_test) is (2000, 5000) at
    ``size="small"``, (20000, 50000) at ``size="paper"``.

    ## Rewards

    The mean of ``auc_1`` and ``auc_2``. ``info["metrics"]`` holds ``auc_1``, ``auc_2``,
    ``auc_mean``, ``mixed_pair_preference`` and ``mixed_pair_ties`` (a metric is NaN when its
    pairs are absent from the draw, which ``pi1``'s bounds make vanishingly rare). Non-finite
    scores are a failed answer: reward 0 (the worst AUC) and ``info["invalid_action"]``.

    ## Starting state

    Each ``reset(seed)`` draws a fresh instance from ``self.np_random``.

    ## Episode end

    After the one step (``terminated=True``).

    ## Arguments

    ``size`` (``"small"`` or ``"paper"``), ``pi1`` (the prevalence of label 1, default 0.05; it
    must leave :data:`MIN_EXPECTED_MIXED` expected test examples of each mixed kind: 0.004 to
    0.996 at ``size="small"``, 0.0004 to 0.9996 at ``size="paper"``) and ``sharpness``
    (s > 0; default 40).
    """

    invalid_reward = 0.0

    def __init__(self, size: str = "small", pi1: float = 0.05, sharpness: float = 40.0):
        super().__init__(size)
        self.n_train, self.n_test = SAMPLES[self.size]
        lowest = 2 * MIN_EXPECTED_MIXED / self.n_test
        if (
            isinstance(pi1, bool)
            or not isinstance(pi1, int | float)
            or not lowest <= pi1 <= 1.0 - lowest
        ):
            raise ValueError(
                f"pi1 must be a prevalence in [{lowest:g}, {1 - lowest:g}] at size={size!r} "
                f"(at least {MIN_EXPECTED_MIXED} expected test examples of each mixed kind), "
                f"got {pi1!r}"
            )
        if (
            isinstance(sharpness, bool)
            or not isinstance(sharpness, int | float)
            or not 0.0 < sharpness < np.inf
        ):
            raise ValueError(f"sharpness must be a positive finite number, got {sharpness!r}")
        self.pi1 = float(pi1)
        self.sharpness = float(sharpness)
        features = spaces.Box(-np.inf, np.inf, (self.n_train, N_FEATURES), np.float64)
        self.observation_space = spaces.Dict(
            {
                "train_features": features,
                "train_labels": spaces.MultiBinary((self.n_train, 2)),
                "test_features": spaces.Box(-np.inf, np.inf, (self.n_test, N_FEATURES), np.float64),
            }
        )
        self.action_space = spaces.Box(-np.inf, np.inf, (self.n_test,), np.float64)

    def _labelled(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.standard_normal((n, N_FEATURES))
        eta = conditional_probabilities(x, self.pi1, self.sharpness)
        labels = (rng.random((n, 2)) < eta).astype(np.int8)
        return x, labels

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
        train_features, train_labels = self._labelled(rng, self.n_train)
        test_features, test_labels = self._labelled(rng, self.n_test)
        observation = {
            "train_features": train_features,
            "train_labels": train_labels,
            "test_features": test_features,
        }
        return observation, test_labels

    def score(self, solution: np.ndarray) -> tuple[float, dict[str, float]]:
        labels = self.instance
        auc_1, auc_2 = auc(solution, labels[:, 0]), auc(solution, labels[:, 1])
        preference, ties = mixed_pair_preference(solution, labels)
        auc_mean = (auc_1 + auc_2) / 2
        metrics = {
            "auc_1": auc_1,
            "auc_2": auc_2,
            "auc_mean": auc_mean,
            "mixed_pair_preference": preference,
            "mixed_pair_ties": ties,
        }
        return auc_mean, metrics
