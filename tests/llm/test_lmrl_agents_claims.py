"""The claims of LMRL-Gym's language-model baselines (omnigym.scenarios.claims.lmrl_agents),
checked on synthetic runs: each of claims 1-7, 9 and 10 passes on a run with the paper's pattern
and fails when one number breaks it; claim 8 is recorded, or not run without PPO."""

import numpy as np
import pytest

from omnigym.envs.lmrl.normalization import constants_for
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.evaluators.scorecard import build_scorecard
from omnigym.scenario import Scenario
from omnigym.scenarios.claims.lmrl_agents import (
    BC,
    FILTERED_BC,
    ILQL,
    MC,
    ORACLE,
    PAPER_TABLE_2,
    PPO,
    RANDOM,
    check,
)

# Normalized scores with the paper's pattern: filtered BC >= BC, MC and ILQL above BC, every
# method lower on PO than on FO, BC near 50, RL best on the PO tasks.
PATTERN = {
    "LMRL/MazeFO-v0": {BC: 50, FILTERED_BC: 60, MC: 70, ILQL: 80, PPO: 55},
    "LMRL/MazePO-v0": {BC: 45, FILTERED_BC: 46, MC: 50, ILQL: 60, PPO: 40},
    "LMRL/TextNavFO-v0": {BC: 52, FILTERED_BC: 62, MC: 70, ILQL: 85, PPO: 80},
    "LMRL/TextNavPO-v0": {BC: 48, FILTERED_BC: 55, MC: 65, ILQL: 75, PPO: 78},
    "LMRL/Wordle-v0": {BC: 60, FILTERED_BC: 60, MC: 70, ILQL: 72, PPO: 61},
    "LMRL/TwentyQuestions-v0": {BC: 50, FILTERED_BC: 55, MC: 70, ILQL: 65, PPO: 60},
}
CHECKED = (1, 2, 3, 4, 5, 6, 7, 9, 10)


def return_for(env_id, score):
    """The return whose LMRL normalized score on ``env_id`` is ``score`` (the inverse map)."""
    c = constants_for(env_id)
    if score <= 50:
        return c["min"] + score / 50 * (c["avg"] - c["min"])
    return c["avg"] + (score - 50) / 50 * (c["max"] - c["avg"])


def synthetic_run(tmp_path, pattern, oracle=100.0, seeds=(0, 1, 2), episodes=4):
    """A finished run whose mean return per task and agent lands on ``pattern``'s scores (random
    at 0, the oracle at ``oracle``), with a little spread between episodes."""
    records = []
    for env_id, scores in pattern.items():
        for agent, score in {**scores, RANDOM: 0.0, ORACLE: oracle}.items():
            center = return_for(env_id, score)
            spread = 1e-3 * abs(center) + 1e-3
            for seed in seeds:
                for episode, offset in enumerate(np.linspace(-spread, spread, episodes)):
                    records.append(
                        {
                            "env_id": env_id,
                            "agent": agent,
                            "seed": seed,
                            "episode": episode,
                            "return": float(center + offset),
                            "length": 10,
                            "success": score > 50,
                            "normalized_score": None,
                            "metrics": {},
                        }
                    )
    scenario = Scenario.model_validate(
        {"name": "synthetic", "envs": list(pattern), "agents": [RANDOM]}
    )
    scorecard = build_scorecard(records, n_resamples=200)
    return Run(scenario, {}, RunFolder(tmp_path), scorecard, records)


def statuses(tmp_path, pattern, **kwargs):
    claims = check(synthetic_run(tmp_path, pattern, **kwargs))
    assert [entry["id"] for entry in claims] == list(range(1, 11))
    return {entry["id"]: entry for entry in claims}


def changed(**cells):
    """``PATTERN`` with ``cells`` (``"env|agent": score``) replaced."""
    pattern = {env: dict(scores) for env, scores in PATTERN.items()}
    for cell, score in cells.items():
        env, agent = cell.split("|")
        pattern[env][agent] = score
    return pattern


def without(agent):
    """``PATTERN`` without ``agent``."""
    return {env: {a: v for a, v in scores.items() if a != agent} for env, scores in PATTERN.items()}


def test_every_claim_passes_on_a_run_with_the_paper_pattern(tmp_path):
    result = statuses(tmp_path, PATTERN)
    assert {n: result[n]["status"] for n in CHECKED} == dict.fromkeys(CHECKED, "pass")
    assert result[8]["status"] == "recorded"


def test_measured_holds_our_scores_with_intervals_and_paper_holds_table_2(tmp_path):
    result = statuses(tmp_path, PATTERN)
    ours = result[1]["measured"]["LMRL/MazeFO-v0"][MC]
    assert ours["mean"] == pytest.approx(70, abs=0.5)
    low, high = ours["ci95"]
    assert low <= ours["mean"] <= high
    assert result[1]["paper"]["LMRL/MazeFO-v0"] == {BC: 58.2, MC: 75.0, ILQL: 99.9}
    assert result[4]["paper"] == {env: {BC: PAPER_TABLE_2[env][BC]} for env in list(PATTERN)[:4]}
    assert set(result[8]["paper"]) == set(PATTERN)


# Each case breaks one claim (and those that contain it: 6 covers every task that 2 covers).
FAILURES = {
    "mc_not_above_bc_on_wordle": ({"LMRL/Wordle-v0|MC": 59.0}, {1}),
    "filtered_bc_below_bc_on_text_nav_fo": ({"LMRL/TextNavFO-v0|BC": 63.0}, {2, 6}),
    "filtered_bc_higher_on_po_than_fo": ({"LMRL/TextNavPO-v0|%BC": 63.0}, {3}),
    "bc_outside_its_band_on_maze_po": ({"LMRL/MazePO-v0|BC": 20.0}, {4}),
    "filtered_bc_below_bc_on_wordle": ({"LMRL/Wordle-v0|%BC": 59.0}, {6}),
    "filtered_bc_best_on_twenty_questions": ({"LMRL/TwentyQuestions-v0|%BC": 75.0}, {7}),
    "bc_no_better_than_random_on_twenty_questions": ({"LMRL/TwentyQuestions-v0|BC": 0.0}, {9}),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_breaking_a_claims_pattern_fails_that_claim_only(tmp_path, case):
    cells, failing = FAILURES[case]
    result = statuses(tmp_path, changed(**cells))
    expected = {n: "fail" if n in failing else "pass" for n in CHECKED}
    assert {n: result[n]["status"] for n in CHECKED} == expected


def test_an_oracle_below_95_fails_claim_five_only(tmp_path):
    result = statuses(tmp_path, PATTERN, oracle=90.0)
    expected = {n: "fail" if n == 5 else "pass" for n in CHECKED}
    assert {n: result[n]["status"] for n in CHECKED} == expected
    assert result[5]["measured"]["LMRL/Wordle-v0"][ORACLE]["mean"] == pytest.approx(90, abs=0.5)


def test_claims_without_their_agents_are_not_run_and_say_what_is_missing(tmp_path):
    result = statuses(tmp_path, without(ILQL))
    assert result[1]["status"] == "not run"
    assert "ILQL-lite on LMRL/MazeFO-v0" in result[1]["measured"]["missing"]
    assert result[3]["status"] == "not run"
    assert result[7]["status"] == "not run"
    assert result[2]["status"] == "pass"


def test_claims_on_tasks_the_run_lacks_are_not_run(tmp_path):
    result = statuses(tmp_path, {"LMRL/Wordle-v0": PATTERN["LMRL/Wordle-v0"]})
    assert {n: result[n]["status"] for n in CHECKED} == {
        1: "not run",
        2: "not run",
        3: "not run",
        4: "not run",
        5: "pass",
        6: "pass",
        7: "not run",
        9: "not run",
        10: "not run",
    }


def test_the_record_of_ppo_is_not_run_without_ppo(tmp_path):
    result = statuses(tmp_path, without(PPO))
    assert result[8]["status"] == "not run"
    assert result[8]["measured"] == {"missing": [PPO]}


def test_rl_above_bc_needs_disjoint_intervals_on_three_tasks(tmp_path):
    # RL level with BC everywhere but on the two Text-Nav tasks: two tasks are not three.
    level = {
        f"{env}|{agent}": PATTERN[env][BC]
        for env in PATTERN
        if not env.startswith("LMRL/TextNav")
        for agent in (MC, ILQL, PPO)
    }
    result = statuses(tmp_path, changed(**level))
    assert result[10]["status"] == "fail"
    assert set(result[10]["measured"]["tasks_with_rl_above_bc"]) == {
        "LMRL/TextNavFO-v0",
        "LMRL/TextNavPO-v0",
    }
    passing = statuses(tmp_path / "pattern", PATTERN)[10]
    assert passing["status"] == "pass"
    assert passing["measured"]["tasks_with_rl_above_bc"]["LMRL/MazePO-v0"] == [MC, ILQL]
    assert passing["paper"]["LMRL/Wordle-v0"] == {BC: 79.9, MC: 94.9, ILQL: 97.7, PPO: 84.2}
