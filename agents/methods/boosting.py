"""Agnostic boosters with and without unlabelled data on ``Methods/AgnosticBoosting-v0``.

Ghai, Singh, "Sample-Optimal Agnostic Boosting with Unlabeled Data", ICML 2025
(``docs/methods.md``). Every agent answers one value in [−1, 1] per test point (its sign is the
label), having seen the labelled points, the unlabelled pool and the test features of the
observation.

The three potential boosters share one potential, one weak learner and one update, and differ
only in where each round's samples come from. The potential is φ(z, y) = ψ(z) − y·z with ψ the
Huber function (ψ(z) = z²/2 for |z| ≤ 1, |z| − ½ beyond), so ψ′(z) = clip(z, −1, 1) and
φ(·, y) is a smoothed hinge. A round moves H along the negative functional gradient
y − ψ′(H(x)), whose correlation with a hypothesis h splits in two:

    E[h(x)·(y − ψ′(H(x)))] = E_labelled[h(x)·y] − E_x[h(x)·ψ′(H(x))].

The first term does not depend on H and the second needs no label. Each round's surrogate sample
(:func:`surrogate_targets`) is the half-and-half mixture of the labelled points (x, y) and of
points x relabelled +1 with probability (1 − ψ′(H(x)))/2, else −1, so that its correlation with
any h is half the one above; a decision stump (:class:`StumpGrid`, the weak learner) maximises
it and H ← H + η·h. After T rounds the answer is clip(H, −1, 1) on the test points.

- ``boost-unlabeled`` (:class:`UnlabeledBoostingAgent`, the paper's method): the labelled term
  reuses all m labelled points in every round; the relabelled term takes a fresh slice of the
  unlabelled pool each round (the pool split into T disjoint slices).
- ``boost-reuse`` (:class:`SampleReuseBoostingAgent`, Ghai–Singh 2024 style): labelled points
  only, all m reused in every round for both terms.
- ``boost-sample-split`` (:class:`SampleSplitBoostingAgent`, Kalai–Kanade 2009 / Brukhim et al.
  2020 style): labelled points only, split into T disjoint slices, one fresh slice per round for
  both terms.
- ``adaboost`` (:class:`AdaBoostAgent`): discrete AdaBoost over the same stumps on the m labels.
- ``gradient-boosting`` (:class:`GradientBoostingAgent`): scikit-learn's histogram gradient
  boosting (log loss, its defaults) on the m labels.
- ``best-in-class-reference`` (:class:`BestInClassReference`): **a privileged reference, not a
  method**: it reads the instance's best-in-class rule from the environment it is built for and
  answers that rule's labels (excess error exactly 0). It never sees the test labels.

Departures from the paper: the paper's own potential, step size η and round count T (set there from
the weak learner's edge γ and the target ε) could not be read from the public material available to
us (the abstract and the 2024 paper's summary); we take ψ′ = clip(z, −1, 1) and one fixed (T, η)
(:class:`Settings`) for all three potential boosters, so that the comparison isolates where the
samples come from. The labelled-only baselines use that same potential and surrogate sample, where
the 2024 booster has its own potential (max((z + 2)·e^(−z), 2 − z)) and mixes fresh and reused
samples. The surrogate sample reaches the weak learner in its reweighting form: the mixture's coin
becomes half the weight on each half, and a relabelled point carries its expected label −ψ′(H(x)) as
a signed weight instead of a random ±1 (Kalai and Kanade's relabelling is the sampling form of the
same weights). With 66 fresh unlabelled points a round at the paper's size, the coin flips add noise
that in our trials put the unlabelled booster behind reuse at m = 1600. The weak learner is an exact
weighted stump over a threshold grid fixed by the labelled points, not an oracle with a stated edge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits


@dataclass(frozen=True)
class Settings:
    """What the potential boosters share: T rounds of step η.

    T·η = 15 lets a margin saturate ψ′ at ±1 many times over (1/η = 20 rounds suffice), so
    the potential is driven near its minimum rather than stopped early. The comparison is
    sensitive to T: in our trials at T = 1000, η = 0.02 the unlabelled booster led reuse at every
    budget up to m = 1600 (it only ties there at T = 300), while sample splitting got fewer
    than two labels a round and stayed near a constant answer.
    """

    rounds: int = 300
    step: float = 0.05


# ---- the weak learner: weighted decision stumps on a threshold grid ---------------------------

#: At most this many thresholds per feature (evenly spaced in rank among the midpoints).
MAX_THRESHOLDS = 512


@dataclass(frozen=True)
class Stump:
    """h(x) = sign·(+1 if x[feature] > threshold else −1); ``index`` is the threshold's place in
    its :class:`StumpGrid` (−1 and threshold −inf: the constant stump)."""

    feature: int
    index: int
    threshold: float
    sign: float


def vote(stumps: Sequence[Stump], weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Σ_t weights_t·h_t(x), shape (n,), without an (n, T) table of every stump's output.

    Per feature, Σ_t w_t·s_t·(2·[x > θ_t] − 1) is twice the weighted signs of the thresholds
    below x, less all of them: a cumulative sum over the sorted thresholds.
    """
    features = np.array([stump.feature for stump in stumps])
    thresholds = np.array([stump.threshold for stump in stumps])
    signed = weights * np.array([stump.sign for stump in stumps])
    total = np.full(len(x), -signed.sum())
    for feature in np.unique(features):
        mine = features == feature
        order = np.argsort(thresholds[mine])
        below = np.concatenate([[0.0], np.cumsum(signed[mine][order])])
        total += 2.0 * below[np.searchsorted(thresholds[mine][order], x[:, feature], "left")]
    return total


class StumpGrid:
    """The weak learner: the decision stump of largest weighted correlation, fit by histograms.

    Thresholds are the midpoints between neighbouring distinct labelled values of each feature
    (thinned to :data:`MAX_THRESHOLDS`), so every booster searches the same class, fixed by the
    labelled points. A point's bin in a feature is the number of thresholds below it; the
    correlation of "+1 above threshold k" with signed weights is their total less twice the sum
    over bins ≤ k. The constant stump competes too: a sample without signal gives a constant,
    not a random split.
    """

    def __init__(self, labelled_x: np.ndarray):
        columns = []
        for feature in range(labelled_x.shape[1]):
            values = np.unique(labelled_x[:, feature])
            edges = 0.5 * (values[1:] + values[:-1])
            if len(edges) > MAX_THRESHOLDS:
                keep = np.linspace(0, len(edges) - 1, MAX_THRESHOLDS).round().astype(np.intp)
                edges = edges[keep]
            columns.append(edges)
        self.counts = np.array([len(edges) for edges in columns])
        width = int(self.counts.max())
        self.edges = np.full((labelled_x.shape[1], width), np.inf)
        for feature, edges in enumerate(columns):
            self.edges[feature, : len(edges)] = edges
        self._offsets = np.arange(labelled_x.shape[1]) * (width + 1)

    def bins(self, x: np.ndarray) -> np.ndarray:
        """Each point's bin per feature, shape (n, d), column-major (rounds read columns)."""
        bins = np.empty(x.shape, dtype=np.intp, order="F")
        for feature, edges in enumerate(self.edges):
            bins[:, feature] = np.searchsorted(edges[: self.counts[feature]], x[:, feature])
        return bins

    def histogram(self, bins: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The sum of ``targets`` per (feature, bin), shape (d, width + 1)."""
        features, width = self.edges.shape
        flat = (bins + self._offsets).ravel(order="F")
        counts = np.bincount(flat, np.tile(targets, features), features * (width + 1))
        return counts.reshape(features, width + 1)

    def best(self, histogram: np.ndarray) -> Stump:
        """The stump of largest |correlation| with the weights summed in ``histogram``."""
        total = float(histogram[0].sum())
        constant = Stump(0, -1, -np.inf, 1.0 if total >= 0 else -1.0)
        width = self.edges.shape[1]
        if width == 0:
            return constant
        correlation = total - 2.0 * np.cumsum(histogram, axis=1)[:, :width]
        valid = np.arange(width) < self.counts[:, None]
        score = np.where(valid, np.abs(correlation), -1.0)
        feature, index = np.unravel_index(int(np.argmax(score)), score.shape)
        if score[feature, index] <= abs(total):
            return constant
        sign = 1.0 if correlation[feature, index] >= 0 else -1.0
        return Stump(int(feature), int(index), float(self.edges[feature, index]), sign)

    @staticmethod
    def output(stump: Stump, bins: np.ndarray) -> np.ndarray:
        """h(x) at binned points: x > threshold k exactly when x's bin exceeds k."""
        return np.where(bins[:, stump.feature] > stump.index, stump.sign, -stump.sign)


# ---- the potential boosters ------------------------------------------------------------------


def ensemble_gradient(margin: np.ndarray) -> np.ndarray:
    """ψ′(H) = clip(H, −1, 1): the ensemble term of the potential's gradient."""
    return np.minimum(np.maximum(margin, -1.0), 1.0)


def surrogate_targets(
    labels: np.ndarray, relabelled_margin: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One round's signed weights: ``(labelled half, relabelled half)``.

    Half the weight is on the labelled points with their labels y; half on the relabelled
    points with their expected relabelled label −ψ′(H(x)) (+1 with probability
    (1 − ψ′(H(x)))/2, else −1), so that a stump's correlation with the weights is
    ½·(E_labelled[h·y] − E_relabelled[h·ψ′(H)]).
    """
    labelled = 0.5 * labels / len(labels)
    relabelled = -0.5 * ensemble_gradient(relabelled_margin) / len(relabelled_margin)
    return labelled, relabelled


def potential_boost(
    grid: StumpGrid,
    labelled_bins: np.ndarray,
    labels: np.ndarray,
    source_bins: np.ndarray,
    schedule: Sequence[tuple[np.ndarray, np.ndarray]],
    step: float,
) -> list[Stump]:
    """Run the potential booster; ``schedule`` gives per round (labelled rows, rows of
    ``source_bins`` to relabel). H is kept on all the source points, one stump added per round."""
    margin = np.zeros(len(source_bins))
    fitted = []
    for labelled_rows, source_rows in schedule:
        labelled, relabelled = surrogate_targets(labels[labelled_rows], margin[source_rows])
        histogram = grid.histogram(labelled_bins[labelled_rows], labelled)
        histogram += grid.histogram(source_bins[source_rows], relabelled)
        stump = grid.best(histogram)
        fitted.append(stump)
        margin += step * grid.output(stump, source_bins)
    return fitted


def _slices(n: int, parts: int, rng: np.random.Generator) -> list[np.ndarray]:
    """A random permutation of range(n) cut into min(parts, n) disjoint, non-empty slices."""
    return np.array_split(rng.permutation(n), min(parts, n))


def _check_rounds(rounds: Any) -> int:
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    return rounds


class _PotentialBooster:
    """What the three potential boosters share: settings, seed and the answer on test points.

    ``rounds`` (T) and ``step`` (η) are :class:`Settings`.
    """

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        rounds: int = Settings.rounds,
        step: float = Settings.step,
    ):
        if isinstance(step, bool) or not isinstance(step, int | float) or not 0.0 < step <= 1.0:
            raise ValueError(f"step must be a number in (0, 1], got {step!r}")
        self.settings = Settings(rounds=_check_rounds(rounds), step=float(step))
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def _plan(
        self, observation: Mapping[str, np.ndarray], grid: StumpGrid, labelled_bins: np.ndarray
    ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        """``(source_bins, schedule)`` for :func:`potential_boost`."""
        raise NotImplementedError

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        labels = observation["labels"].astype(np.float64)
        grid = StumpGrid(observation["labelled_features"])
        labelled_bins = grid.bins(observation["labelled_features"])
        source_bins, schedule = self._plan(observation, grid, labelled_bins)
        step = self.settings.step
        stumps = potential_boost(grid, labelled_bins, labels, source_bins, schedule, step)
        margin = vote(stumps, np.full(len(stumps), step), observation["test_features"])
        return ensemble_gradient(margin)


class UnlabeledBoostingAgent(_PotentialBooster):
    """The paper's booster: all labels reused every round, a fresh unlabelled slice per round."""

    def _plan(self, observation, grid, labelled_bins):
        pool = observation["unlabelled_features"]
        everyone = np.arange(len(observation["labels"]))
        slices = _slices(len(pool), self.settings.rounds, self._rng)
        return grid.bins(pool), [(everyone, rows) for rows in slices]


class SampleReuseBoostingAgent(_PotentialBooster):
    """Labelled points only, all of them reused every round for both terms."""

    def _plan(self, observation, grid, labelled_bins):
        everyone = np.arange(len(observation["labels"]))
        return labelled_bins, [(everyone, everyone)] * self.settings.rounds


class SampleSplitBoostingAgent(_PotentialBooster):
    """Labelled points only, a fresh disjoint slice per round (min(T, m) rounds)."""

    def _plan(self, observation, grid, labelled_bins):
        slices = _slices(len(observation["labels"]), self.settings.rounds, self._rng)
        return labelled_bins, [(rows, rows) for rows in slices]


# ---- baselines on the labels alone -----------------------------------------------------------


class AdaBoostAgent:
    """Discrete AdaBoost (Freund and Schapire, 1997) over the same stumps on the m labels.

    ``rounds`` rounds (default T of :class:`Settings`); the answer is Σ_t α_t·h_t / Σ_t α_t, in
    [−1, 1]. A stump's weighted error is floored at 1e−6 (a finite α); a stump with no edge
    ends boosting.
    """

    def __init__(self, env: Any = None, seed: int = 0, rounds: int = Settings.rounds):
        self.rounds = _check_rounds(rounds)

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: AdaBoost over the stump grid is deterministic."""

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        labels = observation["labels"].astype(np.float64)
        grid = StumpGrid(observation["labelled_features"])
        bins = grid.bins(observation["labelled_features"])
        weights = np.full(len(labels), 1.0 / len(labels))
        fitted, alphas = [], []
        for _ in range(self.rounds):
            stump = grid.best(grid.histogram(bins, weights * labels))
            outputs = grid.output(stump, bins)
            error = float(weights[outputs != labels].sum())
            if error >= 0.5:
                break
            alpha = 0.5 * np.log((1.0 - max(error, 1e-6)) / max(error, 1e-6))
            fitted.append(stump)
            alphas.append(alpha)
            weights = weights * np.exp(-alpha * labels * outputs)
            weights /= weights.sum()
        if not fitted:
            return np.zeros(len(observation["test_features"]))
        alphas = np.array(alphas)
        return vote(fitted, alphas, observation["test_features"]) / alphas.sum()


class GradientBoostingAgent:
    """scikit-learn's histogram gradient boosting on the m labels; the answer is 2·p̂(+1) − 1.

    ``threads`` is the OpenMP threads the fit may use (the evaluator already runs one episode
    per worker process).
    """

    def __init__(self, env: Any = None, seed: int = 0, threads: int = 1):
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        self.threads = threads
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        labels, test = observation["labels"], observation["test_features"]
        if labels.min() == labels.max():
            return np.full(len(test), float(labels[0]))
        model = HistGradientBoostingClassifier(random_state=int(self._rng.integers(2**31 - 1)))
        with threadpool_limits(limits=self.threads, user_api="openmp"):
            model.fit(observation["labelled_features"], labels)
            positive = model.predict_proba(test)[:, list(model.classes_).index(1)]
        return 2.0 * positive - 1.0


class BestInClassReference:
    """Reference (privileged): the instance's best-in-class rule, read from the environment."""

    def __init__(self, env: Any = None, seed: int = 0):
        if env is None:
            raise ValueError(
                "BestInClassReference is a privileged reference: it needs the environment whose "
                "best-in-class rule it reads"
            )
        self.env = env

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: a reference is deterministic."""

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        rule = self.env.unwrapped.instance.rule
        return rule.predict(observation["test_features"]).astype(np.float64)
