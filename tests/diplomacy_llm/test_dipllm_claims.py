"""The DipLLM claims checker (scenarios/claims/dipllm.py) on synthetic match summaries: each of
claims 1-3 passes and fails, a missing agent leaves a claim not run, the rates are recorded."""

import pytest

from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import Scenario
from omnigym.scenarios.claims.dipllm import check

TABLE = "Diplomacy/Standard-v0 vs greedy"
GREEDY = "diplomacy_greedy"
# SoS against six greedy bots where every claim holds: AF above joint, EW above BC, the full
# data above the small, the small EW model level with the large BC one, AF+EW above 1/7.
PASSING = {
    "AF+EW": 0.20,
    "AF+BC": 0.10,
    "joint+EW": 0.03,
    "joint+BC": 0.02,
    "AF+EW small": 0.09,
    "AF+BC large": 0.09,
    "random": 0.004,
}


def row(sos, games=140, half_width=0.1):
    rate = {"mean": sos / 2, "ci95": [0.0, sos]}
    return {
        "games": games,
        "sos": {"mean": sos, "ci95": [sos * (1 - half_width), sos * (1 + half_width)]},
        "win_rate": rate,
        "draw_rate": rate,
        "survival_rate": rate,
        "defeat_rate": rate,
    }


def fake_run(tmp_path, sos, extra=None, half_width=0.1, more_diagnostics=()):
    """A finished run whose matches against greedy have these mean SoS, each with a 95% CI of
    ± ``half_width`` of it (and ``extra`` tables), with training diagnostics giving each learned
    agent's games (and ``more_diagnostics``)."""
    matches = {
        TABLE: {label: {GREEDY: row(value, half_width=half_width)} for label, value in sos.items()}
    }
    matches.update(extra or {})
    games = {"AF+EW small": 100, "AF+BC large": 400}
    diagnostics = [
        {"stage": "train", "agent": label, "seed": 0, "games": games.get(label, 500)}
        for label in sos
        if label != "random"
    ]
    diagnostics += list(more_diagnostics)
    scorecard = {
        "dipllm": {"env_label": TABLE, "opponent": GREEDY, "max_year": 1910, "matches": matches}
    }
    scenario = Scenario.model_validate(
        {"name": "dipllm", "envs": ["Diplomacy/Standard-v0"], "agents": ["diplomacy_random"]}
    )
    return Run(scenario, {"opponent": GREEDY}, RunFolder(tmp_path), scorecard, [], diagnostics)


def statuses(tmp_path, **changes):
    return [c["status"] for c in check(fake_run(tmp_path, {**PASSING, **changes}))]


def test_every_claim_passes_when_the_ablation_ordering_holds(tmp_path):
    claims = check(fake_run(tmp_path, PASSING))
    assert [c["id"] for c in claims] == [1, 2, 3, 4]
    assert [c["status"] for c in claims] == ["pass", "pass", "pass", "recorded"]
    assert claims[0]["measured"]["sos"]["AF+EW"] == {
        "mean": 0.20,
        "ci95": [pytest.approx(0.18), pytest.approx(0.22)],
        "games": 140,
    }
    assert claims[0]["measured"]["AF+EW above AF+BC, CIs disjoint"] is True
    assert claims[0]["paper"]["sos"] == {
        "AF+EW": 0.294,
        "AF+BC": 0.099,
        "joint+EW": 0.008,
        "joint+BC": 0.002,
    }
    assert claims[2]["measured"]["games_trained_on"] == {"AF+EW small": 100, "AF+BC large": 400}


@pytest.mark.parametrize(
    "changes",
    [
        {"AF+BC": 0.25},  # BC above EW
        {"AF+BC": 0.19},  # BC below EW, within its CI
        {"joint+EW": 0.21},  # the joint head above AF+EW
        {"joint+BC": 0.15},  # a joint variant above AF+BC
    ],
)
def test_claim_1_fails_when_any_ordering_breaks(tmp_path, changes):
    assert statuses(tmp_path, **changes)[0] == "fail"


def test_claim_1_fails_when_af_ew_is_above_af_bc_within_the_noise(tmp_path):
    # AF+EW 0.20 [0.14, 0.26] and AF+BC 0.17 [0.119, 0.221]: the means ordered, the CIs overlap
    claims = check(fake_run(tmp_path, {**PASSING, "AF+BC": 0.17}, half_width=0.3))
    assert claims[0]["status"] == "fail"
    assert claims[0]["measured"]["AF+EW above AF+BC, CIs disjoint"] is False
    assert [c["status"] for c in claims[1:3]] == ["pass", "pass"]


def test_claim_1_reports_the_q_noise_and_target_shift_the_fine_tuning_rested_on(tmp_path):
    noise = {"lam": 0.5, "groups": 900, "se_difference": 0.06, "spread": 0.2, "top_change": 0.1}
    q = {"stage": "q", "groups": 1000, "rollouts": 16, "continuation": "greedy", "seconds": 1.0}
    shifts = [
        {"stage": "train", "agent": "AF+EW", "seed": seed, "games": 500, "target_shift": shift}
        for seed, shift in enumerate([0.12, 0.15])
    ]
    claims = check(fake_run(tmp_path, PASSING, more_diagnostics=[{**q, "noise": noise}, *shifts]))
    measured = claims[0]["measured"]
    assert measured["q"] == {
        "groups": 1000,
        "rollouts": 16,
        "continuation": "greedy",
        "noise": noise,
    }
    assert measured["AF+EW target_shift"] == [0.12, 0.15]
    assert claims[0]["status"] == "pass"
    # Without a Q stage (behaviour-cloned agents only) nothing is invented.
    assert "q" not in check(fake_run(tmp_path, PASSING))[0]["measured"]


@pytest.mark.parametrize(
    "changes",
    [
        {"AF+EW": 0.13, "AF+BC": 0.12},  # below the equal share 1/7
        {"AF+EW small": 0.22, "AF+BC large": 0.0},  # the small data beats the full data
    ],
)
def test_claim_2_fails_below_the_equal_share_or_below_the_small_data(tmp_path, changes):
    assert statuses(tmp_path, **changes)[1] == "fail"


def test_claim_3_fails_when_the_large_bc_model_is_ahead(tmp_path):
    assert statuses(tmp_path)[2] == "pass"  # level: matches
    assert statuses(tmp_path, **{"AF+BC large": 0.091})[2] == "fail"


def test_claims_without_their_agents_are_not_run(tmp_path):
    sos = {label: value for label, value in PASSING.items() if label not in ("joint+BC",)}
    claims = check(fake_run(tmp_path, sos))
    assert [c["status"] for c in claims] == ["not run", "pass", "pass", "recorded"]
    assert claims[0]["measured"]["sos"]["joint+BC"] is None
    small = {"AF+EW": 0.2, "random": 0.0}
    assert [c["status"] for c in check(fake_run(tmp_path, small))][:3] == ["not run"] * 3


def test_rates_against_every_opponent_are_recorded_and_no_games_mean_not_run(tmp_path):
    defensive = {
        "Diplomacy/Standard-v0 vs defensive": {"AF+EW": {"b": row(0.15, games=7, half_width=0.5)}}
    }
    recorded = check(fake_run(tmp_path, PASSING, extra=defensive))[3]
    assert recorded["measured"]["Diplomacy/Standard-v0 vs defensive"]["AF+EW"]["b"] == {
        "sos": {"mean": 0.15, "ci95": [0.075, pytest.approx(0.225)]},
        "win_rate": {"mean": 0.075, "ci95": [0.0, 0.15]},
        "draw_rate": {"mean": 0.075, "ci95": [0.0, 0.15]},
        "survival_rate": {"mean": 0.075, "ci95": [0.0, 0.15]},
        "defeat_rate": {"mean": 0.075, "ci95": [0.0, 0.15]},
        "games": 7,
    }
    assert recorded["paper"]["against its opponent pool"]["DipLLM"]["sos"] == 0.230
    assert [c["status"] for c in check(fake_run(tmp_path, {}))] == ["not run"] * 4
