"""Reading claims numbers off a scorecard (omnigym.evaluators.claims)."""

import pytest

from omnigym.evaluators.claims import claim, metric_summary, sweep
from omnigym.evaluators.scorecard import build_scorecard


def _scorecard():
    records = [
        {
            "env_id": f"m={m}",
            "agent": agent,
            "seed": seed,
            "episode": 0,
            "return": 0.0,
            "metrics": {"error": error + 0.01 * seed},
        }
        for agent, errors in {"a": {100: 0.3, 400: 0.2}, "b": {400: 0.1}}.items()
        for m, error in errors.items()
        for seed in (0, 1)
    ]
    return build_scorecard(records, n_resamples=200)


def test_a_metric_summary_is_the_scorecard_mean_and_ci_or_none():
    result = _scorecard()["results"][0]
    summary = metric_summary(result, "error")
    assert set(summary) == {"mean", "ci95"} and summary["mean"] == pytest.approx(0.305)
    assert summary["ci95"][0] <= summary["mean"] <= summary["ci95"][1]
    assert metric_summary(result, "accuracy") is None


def test_a_sweep_keys_an_agent_s_metric_by_knob_over_the_envs_it_ran():
    envs = {400: "m=400", 100: "m=100", 1600: "m=1600"}
    found = sweep(_scorecard(), envs, "a", "error")
    assert list(found) == [100, 400]
    assert found[400]["mean"] == pytest.approx(0.205)
    assert list(sweep(_scorecard(), envs, "b", "error")) == [400]
    assert sweep(_scorecard(), envs, "c", "error") == {}


def test_a_claim_refuses_an_unknown_status():
    with pytest.raises(ValueError, match="status"):
        claim(1, "x", "maybe")
