"""Aggregate statistics (rliable): IQM, stratified bootstrap CIs, probability of improvement,
performance profiles."""

import warnings

import numpy as np
import pytest

from omnigym.evaluators.stats import (
    iqm,
    performance_profile,
    probability_of_improvement,
    summarize,
)


def test_iqm_is_the_mean_of_the_middle_half():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == pytest.approx(4.5)
    assert iqm([8, 1, 7, 2, 6, 3, 5, 4]) == pytest.approx(4.5)


def test_iqm_ignores_the_outer_quartiles():
    assert iqm([-1000, 0, 1, 1, 1, 1, 2, 1000]) == pytest.approx(1.0)


def test_summarize_reports_mean_median_and_iqm():
    summary = summarize([1, 2, 3, 4, 5, 6, 7, 100], n_resamples=200)
    assert set(summary) == {"mean", "median", "iqm", "ci95"}
    assert summary["mean"] == pytest.approx(16.0)
    assert summary["median"] == pytest.approx(4.5)
    assert summary["iqm"] == pytest.approx(4.5)


def test_constant_data_has_a_point_interval_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = summarize([0.1, 0.1, 0.1, 0.1], strata=[0, 0, 1, 1])
    assert summary == {"mean": 0.1, "median": 0.1, "iqm": 0.1, "ci95": [0.1, 0.1]}


def test_single_value_has_a_point_interval():
    assert summarize([-7.0]) == {"mean": -7.0, "median": -7.0, "iqm": -7.0, "ci95": [-7.0, -7.0]}


def test_large_normal_sample_interval_matches_normal_theory():
    values = np.random.default_rng(3).normal(3.0, 2.0, size=2000)
    half_width = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
    low, high = summarize(values)["ci95"]
    assert low == pytest.approx(values.mean() - half_width, abs=0.1 * half_width)
    assert high == pytest.approx(values.mean() + half_width, abs=0.1 * half_width)


def test_interval_covers_the_true_mean_about_95_percent_of_the_time():
    seeds = np.repeat([0, 1, 2], 10)
    covered = 0
    for draw in range(200):
        values = np.random.default_rng(draw).normal(1.0, 1.0, size=30)
        low, high = summarize(values, seeds, n_resamples=999, random_state=draw)["ci95"]
        covered += low <= 1.0 <= high
    assert 0.88 <= covered / 200 <= 0.99


def test_stratified_interval_removes_between_seed_variation():
    values = [0.0, 0.0, 0.0, 10.0, 10.0, 10.0]
    seeds = [0, 0, 0, 1, 1, 1]
    # Each seed's episodes are constant, so every stratified resample has the same mean.
    assert summarize(values, seeds)["ci95"] == pytest.approx([5.0, 5.0])
    low, high = summarize(values)["ci95"]
    assert low < 3.0 and high > 7.0


def test_stratified_interval_is_narrower_when_seeds_differ_in_level():
    rng = np.random.default_rng(0)
    seeds = np.repeat([0, 1, 2], 20)
    values = rng.normal(0.0, 1.0, size=60) + 5.0 * seeds
    stratified_low, stratified_high = summarize(values, seeds)["ci95"]
    pooled_low, pooled_high = summarize(values)["ci95"]
    assert stratified_high - stratified_low < 0.5 * (pooled_high - pooled_low)


def test_strata_with_fewer_than_two_values_fall_back_to_one_sample():
    values = [1.0, 4.0, 2.0, 8.0, 5.0]
    assert summarize(values, strata=[0, 1, 2, 3, 4]) == summarize(values)
    assert summarize(values, strata=[0, 0, 1, 1, 2]) == summarize(values)


def test_summarize_is_deterministic_given_random_state():
    values = np.random.default_rng(1).exponential(size=40)
    assert summarize(values, random_state=7) == summarize(values, random_state=7)
    assert summarize(values, random_state=7)["ci95"] != summarize(values, random_state=8)["ci95"]


def test_summarize_output_is_plain_finite_floats():
    summary = summarize(np.arange(12.0), strata=np.repeat([3, 4], 6))
    numbers = [summary["mean"], summary["median"], summary["iqm"], *summary["ci95"]]
    assert all(type(x) is float and np.isfinite(x) for x in numbers)


@pytest.mark.parametrize(
    ("values", "strata", "message"),
    [
        ([], None, "empty"),
        ([1.0, float("nan")], None, "non-finite"),
        ([1.0, 2.0], [0], "2 values"),
    ],
)
def test_summarize_rejects_bad_input(values, strata, message):
    with pytest.raises(ValueError, match=message):
        summarize(values, strata)


def test_probability_of_improvement_hand_values():
    assert probability_of_improvement([1, 2], [0, 0]) == 1.0
    assert probability_of_improvement([0, 0], [1, 2]) == 0.0
    assert probability_of_improvement([3, 1, 2], [3, 1, 2]) == 0.5
    # Pairs (x, y): (0,1) 0, (0,2) 0, (2,1) 1, (2,2) ½, (3,1) 1, (3,2) 1 -> 3.5 / 6.
    assert probability_of_improvement([0, 2, 3], [1, 2]) == pytest.approx(3.5 / 6)


def test_probability_of_improvement_is_complementary():
    x, y = [0.3, 1.2, 2.2, 0.9], [1.0, 0.1, 2.2]
    assert probability_of_improvement(x, y) + probability_of_improvement(y, x) == pytest.approx(1)


def test_probability_of_improvement_averages_over_envs():
    assert probability_of_improvement([[1, 2], [5]], [[0, 0], [5]]) == pytest.approx(0.75)
    by_env_x = {"Maze": [1.0], "Wordle": [0.0]}
    by_env_y = {"Wordle": [0.0], "Maze": [2.0]}
    assert probability_of_improvement(by_env_x, by_env_y) == pytest.approx(0.25)


def test_probability_of_improvement_rejects_mismatched_envs():
    with pytest.raises(ValueError, match="different tasks"):
        probability_of_improvement({"Maze": [1.0]}, {"Wordle": [1.0]})


def test_performance_profile_weights_every_env_equally():
    scores = {"Maze": [0.0, 1.0, 2.0, 3.0], "Wordle": [10.0]}
    profile = performance_profile(scores, [-1.0, 0.5, 5.0, 20.0])
    np.testing.assert_allclose(profile, [1.0, (0.75 + 1.0) / 2, 0.5, 0.0])


def test_performance_profile_counts_scores_strictly_above_tau():
    np.testing.assert_allclose(performance_profile({"Maze": [1.0, 2.0]}, [1.0, 2.0]), [0.5, 0.0])
