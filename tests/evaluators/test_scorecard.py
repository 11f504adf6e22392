"""Scorecards: grouping episode records into per-(env, agent) summaries, comparisons and files."""

import json
import sys
import types

import pytest

from omnigym import registry
from omnigym.evaluators.scorecard import (
    build_scorecard,
    family_normalizer,
    format_table,
    write_scorecard,
)
from omnigym.evaluators.stats import probability_of_improvement, summarize

SUMMARY_KEYS = {"mean", "median", "iqm", "ci95"}
FAST = {"n_resamples": 200}


def episode(env_id="Fake/Maze-v0", agent="scripted", seed=0, episode=0, ret=1.0, **fields):
    """One episode record as stored in episodes.jsonl, with overridable fields."""
    record = {
        "env_id": env_id,
        "agent": agent,
        "seed": seed,
        "episode": episode,
        "episode_seed": 1000 * seed + episode,
        "return": ret,
        "length": 10,
        "success": None,
        "cost": None,
        "normalized_score": None,
        "metrics": {},
        "achievements": [],
        "terminated": True,
        "truncated": False,
        "wall_time": 0.01,
    }
    record.update(fields)
    return record


def runs(env_id, agent, returns, **fields):
    """Episodes of ``returns`` spread over seeds 0 and 1 (first half seed 0)."""
    half = len(returns) // 2
    return [
        episode(env_id, agent, seed=int(i >= half), episode=i, ret=r, **fields)
        for i, r in enumerate(returns)
    ]


@pytest.fixture
def fake_normalizer(monkeypatch):
    """Registers a normalizer ``2·x + 100`` for "Fake/Normalized-v0" through the registry."""
    module = types.ModuleType("fake_family_normalization")
    calls = []

    def normalize_summary(env_id, summary):
        calls.append((env_id, summary))
        scale = lambda x: 2 * x + 100  # noqa: E731
        return {
            "mean": scale(summary["mean"]),
            "median": scale(summary["median"]),
            "iqm": scale(summary["iqm"]),
            "ci95": [scale(v) for v in summary["ci95"]],
        }

    module.normalize_summary = normalize_summary
    monkeypatch.setitem(sys.modules, module.__name__, module)
    real_spec = registry.spec
    info = registry.EnvInfo(
        id="Fake/Normalized-v0",
        entry_point="fake:Env",
        family="Fake",
        kind="single",
        obs_kind="vector",
        paper="none",
        normalizer=f"{module.__name__}:normalize_summary",
    )
    monkeypatch.setattr(
        registry, "spec", lambda env_id: info if env_id == info.id else real_spec(env_id)
    )
    return calls


def test_scorecard_has_exactly_the_documented_keys():
    card = build_scorecard(runs("Fake/Maze-v0", "scripted", [1.0, 2.0, 3.0, 4.0]), **FAST)
    assert set(card) == {"results", "comparisons", "agents", "envs"}
    (result,) = card["results"]
    assert set(result) == {"env_id", "agent", "episodes", "return", "success_rate", "metrics"}
    assert set(result["return"]) == SUMMARY_KEYS
    assert result["episodes"] == 4
    assert result["return"]["mean"] == pytest.approx(2.5)


def test_return_summary_is_stratified_by_seed():
    records = runs("Fake/Maze-v0", "scripted", [0.0, 0.0, 0.0, 10.0, 10.0, 10.0])
    card = build_scorecard(records, **FAST)
    expected = summarize([0.0, 0.0, 0.0, 10.0, 10.0, 10.0], [0, 0, 0, 1, 1, 1], **FAST)
    assert card["results"][0]["return"] == expected
    assert expected["ci95"] == pytest.approx([5.0, 5.0])


def test_results_are_sorted_by_env_then_agent():
    records = (
        runs("Fake/Wordle-v0", "b", [1.0, 2.0])
        + runs("Fake/Maze-v0", "b", [1.0, 2.0])
        + runs("Fake/Wordle-v0", "a", [1.0, 2.0])
        + runs("Fake/Maze-v0", "a", [1.0, 2.0])
    )
    card = build_scorecard(records, **FAST)
    order = [(r["env_id"], r["agent"]) for r in card["results"]]
    assert order == [
        ("Fake/Maze-v0", "a"),
        ("Fake/Maze-v0", "b"),
        ("Fake/Wordle-v0", "a"),
        ("Fake/Wordle-v0", "b"),
    ]
    assert card["envs"] == ["Fake/Maze-v0", "Fake/Wordle-v0"]
    assert card["agents"] == ["a", "b"]


def test_comparisons_cover_every_ordered_agent_pair_per_env():
    records = (
        runs("Fake/Maze-v0", "oracle", [5.0, 6.0])
        + runs("Fake/Maze-v0", "random", [0.0, 6.0])
        + runs("Fake/Maze-v0", "bc", [1.0, 2.0])
        + runs("Fake/Wordle-v0", "bc", [1.0, 2.0])
    )
    card = build_scorecard(records, **FAST)
    pairs = {(c["env_id"], c["agent_x"], c["agent_y"]) for c in card["comparisons"]}
    assert len(card["comparisons"]) == len(pairs) == 6
    assert all(env == "Fake/Maze-v0" for env, _, _ in pairs)
    poi = {
        (c["agent_x"], c["agent_y"]): c["probability_of_improvement"] for c in card["comparisons"]
    }
    assert set(card["comparisons"][0]) == {
        "env_id",
        "agent_x",
        "agent_y",
        "probability_of_improvement",
    }
    assert poi[("oracle", "bc")] == 1.0
    assert poi[("oracle", "random")] == pytest.approx(probability_of_improvement([5, 6], [0, 6]))
    assert poi[("random", "oracle")] == pytest.approx(1 - poi[("oracle", "random")])


def test_success_rate_counts_reporting_episodes_and_is_none_when_none_report():
    records = runs("Fake/Maze-v0", "scripted", [1.0, 2.0, 3.0, 4.0], success=None)
    records[0]["success"], records[1]["success"], records[2]["success"] = True, False, True
    records += runs("Fake/Wordle-v0", "scripted", [1.0, 2.0])
    rates = {r["env_id"]: r["success_rate"] for r in build_scorecard(records, **FAST)["results"]}
    assert rates == {"Fake/Maze-v0": pytest.approx(2 / 3), "Fake/Wordle-v0": None}


def test_registered_normalizer_maps_the_return_summary(fake_normalizer):
    records = runs("Fake/Normalized-v0", "scripted", [1.0, 2.0, 3.0, 6.0], normalized_score=999.0)
    (result,) = build_scorecard(records, **FAST)["results"]
    returns = result["return"]
    assert fake_normalizer == [("Fake/Normalized-v0", returns)]
    assert result["normalized_score"] == {
        "mean": 2 * returns["mean"] + 100,
        "median": 2 * returns["median"] + 100,
        "iqm": 2 * returns["iqm"] + 100,
        "ci95": [2 * returns["ci95"][0] + 100, 2 * returns["ci95"][1] + 100],
    }


def test_family_normalizer_is_none_for_unregistered_envs():
    assert family_normalizer("Nowhere/Unregistered-v0") is None


def test_family_normalizer_resolves_the_registered_function(fake_normalizer):
    normalizer = family_normalizer("Fake/Normalized-v0")
    assert normalizer("Fake/Normalized-v0", {"mean": 1, "median": 1, "iqm": 1, "ci95": [0, 2]}) == {
        "mean": 102,
        "median": 102,
        "iqm": 102,
        "ci95": [100, 104],
    }


def test_episode_normalized_scores_are_summarized_without_a_normalizer():
    records = runs("Fake/Maze-v0", "scripted", [1.0, 2.0, 3.0, 4.0])
    for record, score in zip(records, [10.0, 20.0, 30.0, 40.0], strict=True):
        record["normalized_score"] = score
    (result,) = build_scorecard(records, **FAST)["results"]
    assert result["normalized_score"] == summarize([10, 20, 30, 40], [0, 0, 1, 1], **FAST)


def test_cost_appears_only_when_episodes_report_it():
    records = runs("Fake/Safe-v0", "scripted", [1.0, 2.0, 3.0, 4.0], cost=2.0)
    records[3]["cost"] = 6.0
    records += runs("Fake/Maze-v0", "scripted", [1.0, 2.0])
    results = {r["env_id"]: r for r in build_scorecard(records, **FAST)["results"]}
    assert results["Fake/Safe-v0"]["cost"]["mean"] == pytest.approx(3.0)
    assert "cost" not in results["Fake/Maze-v0"]
    assert "normalized_score" not in results["Fake/Maze-v0"]


def test_metrics_are_summarized_over_the_episodes_that_report_them():
    records = runs("Fake/Maze-v0", "scripted", [1.0, 2.0, 3.0, 4.0])
    for record, turns in zip(records, [2.0, 4.0, 6.0, 8.0], strict=True):
        record["metrics"] = {"turns": turns}
    records[0]["metrics"]["invalid_actions"] = 3.0
    metrics = build_scorecard(records, **FAST)["results"][0]["metrics"]
    assert set(metrics) == {"invalid_actions", "turns"}
    assert metrics["turns"]["mean"] == pytest.approx(5.0)
    assert metrics["invalid_actions"] == {
        "mean": 3.0,
        "median": 3.0,
        "iqm": 3.0,
        "ci95": [3.0, 3.0],
    }


def test_build_scorecard_is_deterministic():
    records = runs("Fake/Maze-v0", "a", [0.5, 1.5, 2.0, 7.0]) + runs("Fake/Maze-v0", "b", [1, 2])
    assert build_scorecard(records, **FAST) == build_scorecard(records, **FAST)


def test_build_scorecard_rejects_no_records():
    with pytest.raises(ValueError, match="no episode records"):
        build_scorecard([])


def test_write_scorecard_writes_json_and_markdown(tmp_path):
    records = runs("Fake/Maze-v0", "oracle", [5.0, 6.0], success=True) + runs(
        "Fake/Maze-v0", "random", [0.0, 1.0], success=False
    )
    card = build_scorecard(records, **FAST)
    json_path, md_path = write_scorecard(card, tmp_path / "out")
    assert json.loads(json_path.read_text()) == card
    markdown = md_path.read_text()
    assert markdown.startswith("# Scorecard\n")
    assert "1 env · 2 agents · 4 episodes" in markdown
    assert "## Fake/Maze-v0" in markdown
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "scorecard.json",
        "scorecard.md",
    ]


def test_format_table_shows_intervals_success_and_improvement_lines():
    records = runs("Fake/Maze-v0", "oracle", [5.0, 5.0], success=True) + runs(
        "Fake/Maze-v0", "random", [0.0, 0.0], success=False
    )
    table = format_table(build_scorecard(records, **FAST))
    assert "| agent | episodes | return [95% CI] | return IQM | success |" in table
    assert "| oracle | 2 | 5.00 [5.00, 5.00] | 5.00 | 100% |" in table
    assert "| random | 2 | 0.00 [0.00, 0.00] | 0.00 | 0% |" in table
    assert "- P(oracle > random) = 1.00" in table
    assert "normalized" not in table and "cost" not in table


def test_achievement_episodes_get_rates_and_a_crafter_score_column():
    counts = [{"collect_wood": 2, "place_torch": 0}, {"collect_wood": 0, "place_torch": 1}]
    records = [
        episode(agent="scripted", episode=i, achievements=counts[i % 2]) for i in range(4)
    ] + runs("Fake/Maze-v0", "random", [0.0, 0.0])
    card = build_scorecard(records, **FAST)
    scripted = next(r for r in card["results"] if r["agent"] == "scripted")
    # Both achievements unlocked in half of the episodes: S = exp(ln 51) - 1 = 50.
    assert scripted["achievements"]["success_rates"] == {"collect_wood": 50.0, "place_torch": 50.0}
    assert scripted["achievements"]["score"] == pytest.approx(50.0)
    random_row = next(r for r in card["results"] if r["agent"] == "random")
    assert "achievements" not in random_row
    table = format_table(card)
    assert "Crafter score" in table and "| 50.00 |" in table
