"""Achievement success rates and the Crafter score (evaluators/achievements.py)."""

import math

import pytest

from omnigym.evaluators.achievements import achievement_summary, crafter_score, success_rates

# Three episodes, four achievements. Unlocked at least once: a in episodes 1 and 2, b in 2,
# c in 1 and 3, d never. Rates: a = c = 200/3 %, b = 100/3 %, d = 0 %.
# Score: exp((2 ln(1 + 200/3) + ln(1 + 100/3) + ln 1) / 4) − 1
#      = ((203/3)² · (103/3))^(1/4) − 1 = 157204.7037^(1/4) − 1 = 18.91207 (to 5 decimals).
EPISODES = [
    {"a": 1, "b": 0, "c": 2, "d": 0},
    {"a": 3, "b": 1, "c": 0, "d": 0},
    {"a": 0, "b": 0, "c": 1, "d": 0},
]
RATES = {"a": 200 / 3, "b": 100 / 3, "c": 200 / 3, "d": 0.0}
SCORE = 18.912068796316387


def test_success_rates_are_the_percent_of_episodes_with_a_count_of_at_least_one():
    rates = success_rates(EPISODES)
    assert list(rates) == ["a", "b", "c", "d"]
    for name, rate in RATES.items():
        assert rates[name] == pytest.approx(rate)


def test_success_rates_over_given_names_count_missing_ones_as_zero():
    assert success_rates([{"a": 1}], names=["a", "z"]) == {"a": 100.0, "z": 0.0}


def test_crafter_score_matches_the_hand_computation():
    assert crafter_score(RATES) == pytest.approx(SCORE, abs=1e-5)


def test_crafter_score_is_the_rate_when_all_rates_are_equal():
    assert crafter_score({"x": 25.0, "y": 25.0}) == pytest.approx(25.0)
    assert crafter_score({"x": 0.0, "y": 0.0}) == 0.0
    assert crafter_score({"x": 100.0}) == pytest.approx(100.0)


def test_crafter_score_rejects_empty_and_out_of_range_rates():
    with pytest.raises(ValueError, match="at least one"):
        crafter_score({})
    with pytest.raises(ValueError, match="b must be in"):
        crafter_score({"a": 5.0, "b": 101.0})


def test_achievement_summary_reads_records_with_count_dicts():
    records = [{"return": 1.0, "achievements": episode} for episode in EPISODES]
    summary = achievement_summary(records)
    assert summary["episodes"] == 3
    assert summary["success_rates"] == pytest.approx(RATES)
    assert summary["score"] == pytest.approx(SCORE, abs=1e-5)


def test_achievement_summary_reads_name_lists_and_skips_records_without_achievements():
    records = [
        {"achievements": ["a", "b"]},
        {"achievements": ["a"]},
        {"return": 0.0},
        {"achievements": None},
    ]
    summary = achievement_summary(records)
    assert summary["episodes"] == 2
    assert summary["success_rates"] == {"a": 100.0, "b": 50.0}
    assert summary["score"] == pytest.approx(math.sqrt(101.0 * 51.0) - 1.0)


def test_achievement_summary_without_achievements_has_no_score():
    assert achievement_summary([{"return": 1.0}]) == {
        "episodes": 0,
        "success_rates": {},
        "score": None,
    }
