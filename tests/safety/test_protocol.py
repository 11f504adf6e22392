"""DSRL's protocol (omnigym.evaluators.dsrl) and the Safe experiment
(omnigym.evaluators.dsrl_experiment): formulas on synthetic records, the plan of units, the
tables, and a smoke run of the claims experiment on real tasks and agents."""

import json
from pathlib import Path

import pytest

from omnigym.evaluators.dsrl import (
    calibration,
    format_diagnostics,
    format_safety_tables,
    level2_id,
    loss_summary,
    protocol_rows,
    safety_tables,
    suite_average,
    thresholds,
)
from omnigym.evaluators.dsrl_experiment import DSRLExperiment
from omnigym.evaluators.store import read_records
from omnigym.scenario import Scenario, load_scenario

ROOT = Path(__file__).resolve().parents[2]
GOAL = "Safe/PointGoal1-v0"


def _record(agent, seed, episode, cost, reward, kappa, kappa_free=False, env=GOAL, task=GOAL):
    return {
        "env_id": env,
        "task": task,
        "agent": agent if kappa_free else f"{agent} κ={kappa:g}",
        "agent_base": agent,
        "seed": seed,
        "episode": episode,
        "return": reward,
        "cost": cost,
        "target_cost": kappa,
        "kappa_free": kappa_free,
        "metrics": {"normalized_reward": reward},
    }


def test_thresholds_are_dsrls_scaled_to_the_horizon_with_a_strict_low_one():
    assert thresholds(GOAL) == ((6.0, 12.0, 24.0), 3.0)
    assert thresholds("Safe/PointCircle1-v0") == ((10.0, 20.0, 40.0), 5.0)
    assert level2_id(GOAL) == "Safe/PointGoal2-v0"
    assert level2_id("Safe/PointRun-v0") is None and level2_id("Safe/PointGoal2-v0") is None


def test_a_kappa_free_agent_is_scored_at_every_threshold_from_one_set_of_episodes():
    records = [
        _record("FISOR", s, e, cost=12.0, reward=0.5, kappa=3, kappa_free=True)
        for s in (0, 1)
        for e in range(3)
    ]
    [dsrl] = protocol_rows(records, "dsrl")
    expected = (12 / 6 + 12 / 12 + 12 / 24) / 3
    assert dsrl["normalized_cost"]["mean"] == pytest.approx(expected)
    assert dsrl["episodes"] == 6 and dsrl["safe"] is False
    assert set(dsrl["by_threshold"]) == {"6", "12", "24"}
    [strict] = protocol_rows(records, "strict")
    assert strict["normalized_cost"]["mean"] == pytest.approx(4.0)
    assert strict["normalized_reward"]["mean"] == pytest.approx(0.5)


def test_a_kappa_dependent_agent_averages_its_own_episodes_per_threshold():
    costs = {6: 3.0, 12: 12.0, 24: 12.0, 3: 0.0}
    records = [
        _record("BC-Safe", 0, e, cost=c, reward=k / 24, kappa=k)
        for k, c in costs.items()
        for e in range(2)
    ]
    [row] = protocol_rows(records, "dsrl")
    assert row["normalized_cost"]["mean"] == pytest.approx((0.5 + 1.0 + 0.5) / 3)
    assert row["normalized_reward"]["mean"] == pytest.approx((6 + 12 + 24) / 72)
    assert row["safe"] and row["by_threshold"]["12"]["cost"] == 12.0
    # Missing a threshold: no DSRL row rather than a silently partial average.
    partial = [r for r in records if r["target_cost"] != 24]
    assert protocol_rows(partial, "dsrl") == []
    assert len(protocol_rows(partial, "strict")) == 1


def test_a_zero_threshold_uses_epsilon_one():
    from omnigym.envs.safety.core import normalized_cost

    assert normalized_cost(0.0, 0.0) == 1.0 and normalized_cost(2.0, 0.0) == 3.0


def test_suite_average_counts_safe_and_near_zero_tasks():
    rows = []
    for task, cost in (("a", 0.0), ("b", 3.0), ("c", 30.0)):
        recs = [
            _record("X", s, 0, cost=cost, reward=0.2, kappa=3, env=task, task=task, kappa_free=True)
            for s in (0, 1, 2)
        ]
        for r in recs:
            r["env_id"] = GOAL  # thresholds come from a real id; tasks stay distinct by name
        row = protocol_rows(recs, "strict")[0]
        rows.append({**row, "task": task, "env_id": task})
    average = suite_average(rows)
    assert average["tasks"] == 3 and average["safe_tasks"] == 2 and average["near_zero_tasks"] == 1
    assert average["normalized_cost"]["mean"] == pytest.approx((0 + 1 + 10) / 3)


def test_tables_mark_safe_bold_unsafe_grey_and_star_the_best_safe_reward():
    records = [
        _record("A", 0, 0, cost=0.0, reward=0.3, kappa=3, kappa_free=True),
        _record("B", 0, 0, cost=1.0, reward=0.6, kappa=3, kappa_free=True),
        _record("C", 0, 0, cost=9.0, reward=0.9, kappa=3, kappa_free=True),
    ]
    tables = safety_tables(records, ["strict"])
    text = format_safety_tables(tables, ["A", "B", "C"])
    assert "**0.30 / 0.00**" in text and "**0.60 / 0.33** ★" in text
    assert '<span style="color:gray">0.90 / 3.00</span>' in text


def test_loss_summary_averages_each_curve_over_ten_windows():
    summary = loss_summary({"q_h": list(range(100)), "short": [3.0, 1.0], "empty": []})
    assert summary["q_h"][0] == [10, 4.5] and summary["q_h"][-1] == [100, 94.5]
    assert len(summary["q_h"]) == 10
    assert summary["short"] == [[1, 3.0], [2, 1.0]] and "empty" not in summary


def test_calibration_compares_predicted_feasibility_with_realised_cost():
    result = calibration([-1.0, -0.5, 0.0, 2.0], [0.0, 4.0, 0.0, 6.0])
    assert result == {
        "episodes": 4,
        "value": pytest.approx(0.125),
        "predicted_feasible": 0.75,
        "violated_when_feasible": pytest.approx(1 / 3),
        "cost_when_feasible": pytest.approx(4 / 3),
        "cost_when_infeasible": 6.0,
    }
    assert calibration([1.0], [0.0])["cost_when_feasible"] is None


def test_diagnostics_table_shows_policy_shares_calibration_and_losses():
    entry = {
        "agent": "SDQC",
        "plays": [
            {
                "env_id": GOAL,
                "regions": {"pi_h": 0.25, "pi_r": 0.75},
                "calibration": calibration([-1.0, 1.0], [0.0, 2.0]),
            }
        ],
        "losses": {"q_h": [[5, 8.0], [10, 2.0]]},
    }
    text = format_diagnostics([entry], ["SDQC"])
    assert f"| SDQC | {GOAL} | pi_h 0.25 · pi_r 0.75 | 0.50 | 0.00 / 2.00 |" in text
    assert "| SDQC | q_h | 8 | 2 |" in text


EXPERIMENT = "omnigym.evaluators.dsrl_experiment:DSRLExperiment"


def plan(scenario, folder):
    return DSRLExperiment(scenario, folder).units


def _scenario(**options):
    return Scenario.model_validate(
        {
            "name": "plan",
            "experiment": EXPERIMENT,
            "envs": [GOAL, "Safe/PointRun-v0"],
            "agents": [
                {"name": "bc_all", "train": {"budget": 1}},
                {"name": "bc_safe", "train": {"budget": 1}},
                {"name": "cdt", "train": {"budget": 1}},
                {"name": "sdqc", "train": {"budget": 1}, "envs": [GOAL]},
            ],
            "seeds": [0, 1],
            "episodes": 2,
            "options": options,
        }
    )


def test_plan_trains_per_threshold_only_agents_that_need_it():
    units = plan(_scenario(), Path("out"))
    count = {}
    for unit in units:
        count[(unit.task, unit.agent.name)] = count.get((unit.task, unit.agent.name), 0) + 1
    # 3 DSRL thresholds + the strict one, per seed; one unit per seed for the others.
    assert count[(GOAL, "bc_safe")] == 8 and count[(GOAL, "bc_all")] == 2
    assert count[(GOAL, "cdt")] == 2 and count[(GOAL, "sdqc")] == 2
    assert ("Safe/PointRun-v0", "sdqc") not in count
    cdt = next(u for u in units if u.task == GOAL and u.agent.name == "cdt")
    # Told each threshold, plus the level-2 twin at the strict one.
    assert [(p.env_id, p.target_cost) for p in cdt.plays] == [
        (GOAL, 3.0),
        (GOAL, 6.0),
        (GOAL, 12.0),
        (GOAL, 24.0),
        ("Safe/PointGoal2-v0", 3.0),
    ]
    run = next(u for u in units if u.task == "Safe/PointRun-v0" and u.agent.name == "bc_all")
    assert [p.env_id for p in run.plays] == ["Safe/PointRun-v0"]  # no level 2 to shift to
    strict_only = plan(_scenario(protocols=["strict"], shift=False), Path("out"))
    assert all(len(u.plays) == 1 for u in strict_only)
    with pytest.raises(ValueError, match="unknown options"):
        plan(_scenario(thresholds=[1]), Path("out"))


def test_the_grid_adds_one_agent_per_value_on_its_env_and_seeds():
    scenario = _scenario(
        grid={
            "agent": "sdqc",
            "env": GOAL,
            "seeds": [1],
            "values": {"delta": [0.0, 10.0], "nu": [0.1]},
        }
    )
    grid = [u for u in plan(scenario, Path("out")) if u.agent.display.startswith("sdqc ")]
    # nu = 0.1 is SDQC's default only when given in kwargs; both deltas are new.
    assert sorted({u.agent.display for u in grid}) == [
        "sdqc delta=0.0",
        "sdqc delta=10.0",
        "sdqc nu=0.1",
    ]
    assert {(u.task, u.seed) for u in grid} == {(GOAL, 1)}


def test_the_claims_scenario_and_its_quick_profile_load():
    scenario = load_scenario(ROOT / "scenarios/claims/sdqc.yaml")
    quick = scenario.quickened()
    assert len(plan(quick, Path("out"))) < len(plan(scenario, Path("out")))
    assert quick.options["grid"] is None
    assert scenario.claims == "omnigym.scenarios.claims.sdqc:check"


def test_smoke_run_trains_every_agent_plays_scores_and_checks_the_claims(tmp_path):
    from omnigym.cli import main

    tiny = {"hidden": [16]}
    path = tmp_path / "smoke.yaml"
    agents = [
        {"name": "bc_all", "label": "BC-All", "kwargs": tiny},
        {"name": "bc_safe", "label": "BC-Safe", "kwargs": tiny},
        {"name": "bcq_lag", "label": "BCQ-Lag", "kwargs": {"hidden": [16], "batch_size": 32}},
        {"name": "cdt", "label": "CDT", "kwargs": {"embed_dim": 16, "batch_size": 4}},
        {"name": "fisor", "label": "FISOR", "kwargs": {"hidden": [16], "batch_size": 32}},
        {"name": "sdqc", "label": "SDQC", "kwargs": {"hidden": 16, "batch_size": 32}},
        {
            "name": "sdqc",
            "label": "SDQC δ=0",
            "envs": [GOAL],
            "kwargs": {"hidden": 16, "batch_size": 32, "delta": 0.0},
        },
    ]
    scenario = {
        "name": "smoke",
        "experiment": EXPERIMENT,
        "claims": "omnigym.scenarios.claims.sdqc:check",
        "envs": [GOAL, "Safe/PointRun-v0"],
        "agents": [{**a, "train": {"budget": 4}} for a in agents],
        "episodes": 1,
        "seeds": [0],
        "options": {"dataset": {"n_traj": 20}},
    }
    path.write_text(json.dumps(scenario))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 0
    records = read_records(out / "episodes.jsonl")
    labels = {r["agent"] for r in records}
    assert {
        "BC-All",
        "BC-Safe κ=3",
        "BC-Safe κ=24",
        "CDT κ=12",
        "SDQC (Safe/PointGoal1-v0)",
    } <= labels
    card = json.loads((out / "scorecard.json").read_text())
    strict = card["safety"]["protocols"]["strict"]["rows"]
    assert {(r["env_id"], r["agent"]) for r in strict} >= {
        (GOAL, "SDQC"),
        ("Safe/PointGoal2-v0", "SDQC"),
        ("Safe/PointRun-v0", "BCQ-Lag"),
    }
    diagnostics = card["safety"]["diagnostics"]
    assert {d["agent"] for d in diagnostics if "knn_q_consistency" in d} == {"SDQC", "SDQC δ=0"}
    assert all(d["train_seconds"] > 0 and d["updates"] == 4 for d in diagnostics)
    assert len([d for d in diagnostics if d["agent"] == "BC-Safe"]) == 8  # 2 tasks x 4 κ
    trained = [d for d in diagnostics if "train_seconds" in d]
    assert all(len(curve) == 4 for d in trained for curve in d["losses"].values())
    # 4 updates leave none for SDQC's behaviour CVAE (10% of the budget, rounded).
    assert {"q_h", "v_h_low", "pi_r"} <= set(
        next(d for d in trained if d["agent"] == "SDQC")["losses"]
    )
    for label in ("SDQC", "FISOR"):
        plays = [p for d in diagnostics if d["agent"] == label for p in d.get("plays", ())]
        assert {p["env_id"] for p in plays} >= {GOAL, "Safe/PointGoal2-v0"}
        assert all(sum(p["regions"].values()) == pytest.approx(1.0) for p in plays)
        assert all(p["calibration"]["episodes"] == 1 for p in plays)
    summary = (out / "scorecard.md").read_text()
    assert "## Training time" in summary and "## Feasibility while playing" in summary
    assert "## Losses" in summary
    # The checker reads this run's tables (each claim's verdicts: test_sdqc_claims.py).
    claims = json.loads((out / "claims.json").read_text())["claims"]
    assert [c["id"] for c in claims] == list(range(1, 10))
    fisor = [r for r in strict if r["agent"] == "FISOR" and r["task"] == r["env_id"]]
    assert claims[3]["measured"]["average_cost"]["FISOR"]["mean"] == pytest.approx(
        sum(r["normalized_cost"]["mean"] for r in fisor) / len(fisor)
    )
    assert claims[8]["status"] == "not run"  # no grid in the smoke run
    assert "## Claims" in (out / "claims.md").read_text()
    assert "## strict protocol" in (out / "scorecard.md").read_text()
    # Checkpoints load with weights_only (OfflineAgent.load) and a second run plays nothing new.
    before = (out / "episodes.jsonl").read_text()
    assert main(["run", str(path), "--out", str(out)]) == 0
    assert (out / "episodes.jsonl").read_text() == before
