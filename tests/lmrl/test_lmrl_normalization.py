"""LMRL-Gym's normalized score and the committed constants."""

import numpy as np
import pytest

import omnigym
from omnigym.agents.lmrl.normalization import oracle_returns, recompute
from omnigym.envs.lmrl.datasets import dataset_env_ids
from omnigym.envs.lmrl.normalization import (
    load_constants,
    normalize,
    normalize_summary,
    normalized_score,
)
from omnigym.registry import load_entry_point

LMRL_FO_MAZE = {"min": -101.0, "avg": -83.0, "max": -6.84}
LMRL_CHESS = {"min": -401.0, "avg": 0.21, "max": 1.0}
LMRL_WORDLE = {"min": -6.0, "avg": -4.12, "max": -1.94}


def test_reproduces_lmrl_table_2_fo_maze_ilql_from_its_return():
    assert round(normalize("LMRL/MazeFO-v0", -6.97, constants=LMRL_FO_MAZE), 1) == 99.9


def test_reproduces_lmrl_table_2_chess_ppo_from_its_return():
    assert round(normalize("LMRL/Chess-v0", -16.0, constants=LMRL_CHESS), 1) == 48.0


@pytest.mark.parametrize(("ret", "score"), [(-6.0, 0.0), (-4.12, 50.0), (-1.94, 100.0)])
def test_wordle_anchor_returns_map_to_0_50_100_with_lmrl_constants(ret, score):
    assert normalize("LMRL/Wordle-v0", ret, constants=LMRL_WORDLE) == pytest.approx(score)


def test_score_is_piecewise_linear_around_the_dataset_average():
    assert normalized_score(-5.06, -6.0, -4.12, -1.94) == pytest.approx(25.0)
    assert normalized_score(-3.03, -6.0, -4.12, -1.94) == pytest.approx(75.0)


def test_score_is_not_clipped_beyond_the_oracle_or_below_the_minimum():
    assert normalize("LMRL/Wordle-v0", 0.0, constants=LMRL_WORDLE) > 100.0
    assert normalize("LMRL/MazeFO-v0", -120.0, constants=LMRL_FO_MAZE) < 0.0


def test_normalize_summary_maps_every_statistic_and_the_interval_bounds():
    summary = {"mean": -3.0, "median": -4.5, "iqm": -2.5, "ci95": [-3.5, -2.8]}
    result = normalize_summary("LMRL/Wordle-v0", summary, constants=LMRL_WORDLE)
    assert set(result) == {"mean", "median", "iqm", "ci95"}
    for key in ("mean", "median", "iqm"):
        assert result[key] == normalize("LMRL/Wordle-v0", summary[key], constants=LMRL_WORDLE)
    low, high = result["ci95"]
    assert low < result["mean"] < high
    assert high == normalize("LMRL/Wordle-v0", -2.8, constants=LMRL_WORDLE)


def test_normalize_summary_uses_the_committed_constants_by_default():
    result = normalize_summary("LMRL/MazeFO-v0", {"mean": -101.0})
    assert result == {"mean": 0.0}


def test_unknown_env_id_names_the_known_ids():
    with pytest.raises(ValueError, match="LMRL/MazeFO-v0"):
        normalize("LMRL/Nope-v0", 0.0)


@pytest.mark.parametrize("env_id", dataset_env_ids())
def test_every_task_has_constants_with_its_analytic_minimum_and_ordered_anchors(env_id):
    entry = load_constants()[env_id]
    env_class = load_entry_point(omnigym.spec(env_id).entry_point)
    assert entry["min"] == env_class.min_return
    assert entry["min"] < entry["avg"] < entry["max"]


@pytest.mark.parametrize("env_id", ["LMRL/MazeFO-v0", "LMRL/MazePO-v0"])
def test_maze_max_matches_a_regeneration_of_the_oracle_protocol(env_id):
    assert np.mean(oracle_returns(env_id)) == pytest.approx(load_constants()[env_id]["max"])


@pytest.mark.parametrize("env_id", ["LMRL/MazeFO-v0", "LMRL/MazePO-v0", "LMRL/Wordle-v0"])
def test_oracle_scores_at_least_95_on_its_own_env(env_id):
    assert normalize(env_id, load_constants()[env_id]["max"]) == pytest.approx(100.0)
    returns = oracle_returns(env_id, runs=200)
    assert normalize(env_id, float(np.mean(returns))) >= 95.0


@pytest.mark.slow
def test_wordle_max_matches_a_regeneration_of_the_oracle_protocol():
    returns = oracle_returns("LMRL/Wordle-v0")
    assert np.mean(returns) == pytest.approx(load_constants()["LMRL/Wordle-v0"]["max"], abs=1e-4)


REGENERATED = [
    "LMRL/TextNavFO-v0",
    "LMRL/TextNavPO-v0",
    "LMRL/TwentyQuestions-v0",
    "LMRL/GuessMyCity-v0",
    "LMRL/CarDealer-v0",
]
"""Tasks whose constants regenerate in seconds (Maze and Wordle have their own tests above; Chess
and Endgames take minutes of Stockfish time: `--recompute --only` them by hand)."""


@pytest.mark.slow
@pytest.mark.parametrize("env_id", REGENERATED)
def test_committed_constants_match_a_regeneration(env_id):
    expected = load_constants()[env_id]
    assert recompute(env_id) == pytest.approx(
        {key: expected[key] for key in ("min", "avg", "max")}, abs=1e-4
    )
