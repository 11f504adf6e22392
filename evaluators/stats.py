"""Aggregate statistics over episode scores, following rliable (Agarwal et al., NeurIPS 2021,
"Deep Reinforcement Learning at the Edge of the Statistical Precipice").

Every function here is small and pure: arrays of scores in, numbers or arrays out. Aggregation
across (env, agent) groups lives in :mod:`omnigym.evaluators.scorecard` and plotting in
:mod:`omnigym.evaluators.report`.

- :func:`iqm` is the interquartile mean, the mean of the middle 50% of scores
  (``scipy.stats.trim_mean(x, 0.25)``, as in rliable).
- :func:`summarize` gives mean, median, IQM and a stratified percentile bootstrap confidence
  interval of the mean (``scipy.stats.bootstrap``). The strata are the run seeds: each seed's
  episodes are resampled on their own, so every bootstrap replicate keeps the same number of
  episodes per seed, as rliable's stratified bootstrap keeps the number of runs per task.
- :func:`probability_of_improvement` is P(X > Y) + ½·P(X = Y), the Mann–Whitney U statistic
  divided by n·m, averaged over tasks when given one score list per task (rliable).
- :func:`performance_profile` is the fraction of scores above each threshold τ, each task
  weighted equally (rliable's score distribution).

Departures from rliable: the bootstrap is scipy's rather than rliable's own resampler, and
:func:`summarize` bootstraps the mean only (rliable can bootstrap any aggregate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

#: Resamples per bootstrap; scipy's default, enough for stable 95% percentile intervals.
DEFAULT_RESAMPLES = 9999

#: Upper bound on the floats one bootstrap batch holds (resamples × values), about 16 MB.
_BATCH_ELEMENTS = 2_000_000


def iqm(x: Any) -> float:
    """Interquartile mean: the mean after cutting the lowest and highest 25% of ``x``.

    ``iqm([1, 2, 3, 4, 5, 6, 7, 8])`` is the mean of ``[3, 4, 5, 6]``, 4.5.
    """
    values = _finite_1d(x, "x")
    return float(stats.trim_mean(values, 0.25))


def summarize(
    values: Any,
    strata: Any = None,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    random_state: int = 0,
) -> dict[str, Any]:
    """Mean, median, IQM and a bootstrap confidence interval of the mean of ``values``.

    Returns ``{"mean", "median", "iqm", "ci95": [lo, hi]}`` as plain floats (``ci95`` holds the
    ``confidence`` interval; the key keeps its name for any level).

    ``strata`` (one label per value, e.g. the run seed) makes the bootstrap stratified: each
    stratum is resampled independently and the statistic is the mean of all resampled values
    together. Strata need two values each to be resampled, so when any stratum holds fewer than
    two values the bootstrap falls back to resampling all values as one sample. A single value or
    constant data has no spread to resample and gets the interval ``[x, x]``. The result is a
    deterministic function of the inputs and ``random_state``.
    """
    data = _finite_1d(values, "values")
    samples = _stratify(data, strata)
    if np.ptp(data) == 0:
        constant = float(data[0])
        return {"mean": constant, "median": constant, "iqm": constant, "ci95": [constant, constant]}
    total = data.size

    def pooled_mean(*resampled: np.ndarray, axis: int) -> np.ndarray:
        return sum(sample.sum(axis=axis) for sample in resampled) / total

    result = stats.bootstrap(
        samples,
        pooled_mean,
        n_resamples=n_resamples,
        batch=max(1, _BATCH_ELEMENTS // total),
        vectorized=True,
        paired=False,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(random_state),
    )
    low, high = result.confidence_interval
    return {
        "mean": float(np.mean(data)),
        "median": float(np.median(data)),
        "iqm": float(stats.trim_mean(data, 0.25)),
        "ci95": [float(low), float(high)],
    }


def probability_of_improvement(x: Any, y: Any) -> float:
    """P(X > Y) + ½·P(X = Y) for scores ``x`` of one agent and ``y`` of another.

    ``x`` and ``y`` are either one task's scores (1-D), or one score list per task (a sequence
    of 1-D score lists, or a mapping task -> scores with the same tasks on both sides); per-task
    probabilities are then averaged over tasks, as rliable does.
    ``probability_of_improvement([1, 2], [0, 0])`` is 1.0; equal samples give 0.5.
    """
    tasks_x, tasks_y = _per_task(x, "x"), _per_task(y, "y")
    if isinstance(tasks_x, dict) != isinstance(tasks_y, dict):
        raise ValueError("x and y must both be mappings of task -> scores, or both not")
    if isinstance(tasks_x, dict):
        if set(tasks_x) != set(tasks_y):
            raise ValueError(
                f"x and y cover different tasks: {sorted(tasks_x)} vs {sorted(tasks_y)}"
            )
        pairs = [(tasks_x[task], tasks_y[task]) for task in tasks_x]
    else:
        if len(tasks_x) != len(tasks_y):
            raise ValueError(f"x has {len(tasks_x)} tasks but y has {len(tasks_y)}")
        pairs = list(zip(tasks_x, tasks_y, strict=True))
    per_task = [
        stats.mannwhitneyu(scores_x, scores_y).statistic / (scores_x.size * scores_y.size)
        for scores_x, scores_y in pairs
    ]
    return float(np.mean(per_task))


def performance_profile(scores_by_env: Mapping[str, Any], taus: Any) -> np.ndarray:
    """Fraction of scores strictly above each threshold in ``taus``, each env weighted equally.

    ``scores_by_env`` maps env id -> that env's scores (runs, or one aggregate score per env);
    the result has one fraction in [0, 1] per tau, ready to plot against ``taus``.
    """
    if not scores_by_env:
        raise ValueError("scores_by_env is empty")
    thresholds = np.asarray(taus, dtype=float).reshape(-1)
    fractions = [
        np.mean(_finite_1d(scores, env_id)[:, None] > thresholds[None, :], axis=0)
        for env_id, scores in scores_by_env.items()
    ]
    return np.mean(fractions, axis=0)


def _finite_1d(x: Any, name: str) -> np.ndarray:
    values = np.asarray(x, dtype=float).reshape(-1)
    if values.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} has {int(np.sum(~np.isfinite(values)))} non-finite values")
    return values


def _stratify(data: np.ndarray, strata: Any) -> tuple[np.ndarray, ...]:
    """One sample per stratum, or all of ``data`` as one sample (see :func:`summarize`)."""
    if strata is None:
        return (data,)
    labels = np.asarray(strata).reshape(-1)
    if labels.size != data.size:
        raise ValueError(f"strata has {labels.size} labels for {data.size} values")
    samples = tuple(data[labels == label] for label in np.unique(labels))
    if any(sample.size < 2 for sample in samples):
        return (data,)
    return samples


def _per_task(x: Any, name: str) -> dict[Any, np.ndarray] | list[np.ndarray]:
    if isinstance(x, Mapping):
        if not x:
            raise ValueError(f"{name} has no tasks")
        return {task: _finite_1d(scores, f"{name}[{task!r}]") for task, scores in x.items()}
    if isinstance(x, Sequence | np.ndarray) and len(x) and np.ndim(x[0]) >= 1:
        return [_finite_1d(scores, f"{name}[{i}]") for i, scores in enumerate(x)]
    return [_finite_1d(x, name)]
