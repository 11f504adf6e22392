"""The LMRL agents claims runner (omnigym.llm_agents.lmrl_claims): the claims checker on
synthetic episode records, its tables, its options, and (slow) a micro run end to end."""

import json

import numpy as np
import pytest
import yaml

from omnigym.envs.lmrl.normalization import constants_for
from omnigym.evaluators.scorecard import build_scorecard
from omnigym.llm_agents.lmrl_claims import (
    BC,
    FILTERED_BC,
    ILQL,
    MC,
    ORACLE,
    PPO,
    RANDOM,
    claims,
    format_comparison,
    format_timings,
    options_of,
)
from omnigym.scenario import Scenario, load_scenario
from tests.llm.conftest import MAZE, require_llm_stack

TASKS = (
    "LMRL/MazeFO-v0",
    "LMRL/MazePO-v0",
    "LMRL/TextNavFO-v0",
    "LMRL/TextNavPO-v0",
    "LMRL/Wordle-v0",
    "LMRL/TwentyQuestions-v0",
)
# Normalized scores with the paper's pattern: filtered BC >= BC, MC and ILQL above BC, every
# method lower on PO than on FO, BC near 50, the oracle at 100, RL best on PO.
PATTERN = {
    "LMRL/MazeFO-v0": {BC: 50, FILTERED_BC: 60, MC: 70, ILQL: 80, PPO: 55},
    "LMRL/MazePO-v0": {BC: 45, FILTERED_BC: 46, MC: 50, ILQL: 60, PPO: 40},
    "LMRL/TextNavFO-v0": {BC: 52, FILTERED_BC: 62, MC: 70, ILQL: 85, PPO: 80},
    "LMRL/TextNavPO-v0": {BC: 48, FILTERED_BC: 55, MC: 65, ILQL: 75, PPO: 78},
    "LMRL/Wordle-v0": {BC: 60, FILTERED_BC: 60, MC: 70, ILQL: 72, PPO: 61},
    "LMRL/TwentyQuestions-v0": {BC: 50, FILTERED_BC: 55, MC: 70, ILQL: 65, PPO: 60},
}


def return_for(env_id, score):
    """The return whose LMRL normalized score on ``env_id`` is ``score`` (the inverse map)."""
    c = constants_for(env_id)
    if score <= 50:
        return c["min"] + score / 50 * (c["avg"] - c["min"])
    return c["avg"] + (score - 50) / 50 * (c["max"] - c["avg"])


def synthetic_records(pattern, seeds=(0, 1, 2), episodes=4):
    """Episode records whose mean return on each task lands on ``pattern``'s scores, with
    a little spread between episodes (plus random at 0 and the oracle at 100)."""
    records = []
    for env_id, scores in pattern.items():
        for agent, score in {**scores, RANDOM: 0.0, ORACLE: 100.0}.items():
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
    return records


def checked(pattern):
    records = synthetic_records(pattern)
    scorecard = build_scorecard(records, n_resamples=200)
    return {entry["claim"]: entry for entry in claims(scorecard)["claims"]}, scorecard


def test_every_claim_passes_on_a_run_with_the_paper_pattern():
    result, _ = checked(PATTERN)
    assert {n: result[n]["status"] for n in range(1, 8)} == dict.fromkeys(range(1, 8), "pass")
    assert result[8]["status"] == "recorded"
    maze_mc = result[1]["numbers"]["LMRL/MazeFO-v0"][MC]
    assert maze_mc["mean"] == pytest.approx(70, abs=0.5)
    low, high = maze_mc["ci95"]
    assert low <= maze_mc["mean"] <= high


def test_mc_not_above_bc_on_wordle_fails_claim_one_only():
    pattern = {env: dict(scores) for env, scores in PATTERN.items()}
    pattern["LMRL/Wordle-v0"][MC] = 59.0
    result, _ = checked(pattern)
    assert result[1]["status"] == "fail"
    assert all(result[n]["status"] == "pass" for n in range(2, 8))


def test_po_above_fo_for_one_method_fails_claim_three():
    pattern = {env: dict(scores) for env, scores in PATTERN.items()}
    pattern["LMRL/TextNavPO-v0"][FILTERED_BC] = 63.0
    result, _ = checked(pattern)
    assert result[3]["status"] == "fail"


def test_bc_outside_its_band_and_a_weak_oracle_fail_claims_four_and_five():
    pattern = {env: dict(scores) for env, scores in PATTERN.items()}
    pattern["LMRL/MazePO-v0"][BC] = 20.0
    records = [
        {**r, "return": return_for(r["env_id"], 90.0)} if r["agent"] == ORACLE else r
        for r in synthetic_records(pattern)
    ]
    scorecard = build_scorecard(records, n_resamples=200)
    result = {entry["claim"]: entry for entry in claims(scorecard)["claims"]}
    assert result[4]["status"] == "fail"
    assert result[5]["status"] == "fail"


def test_bc_best_on_a_partially_observed_task_fails_claim_seven():
    pattern = {env: dict(scores) for env, scores in PATTERN.items()}
    pattern["LMRL/MazePO-v0"][FILTERED_BC] = 61.0
    result, _ = checked(pattern)
    assert result[7]["status"] == "fail"


def test_claims_without_their_agents_are_not_run():
    pattern = {
        env: {agent: score for agent, score in scores.items() if agent != ILQL}
        for env, scores in PATTERN.items()
    }
    result, _ = checked(pattern)
    assert result[1]["status"] == "not run"
    assert result[3]["status"] == "not run"
    assert result[2]["status"] == "pass"


def test_comparison_puts_our_scores_beside_table_2():
    _, scorecard = checked(PATTERN)
    table = format_comparison(scorecard)
    maze_row = next(line for line in table.splitlines() if line.startswith("| LMRL/MazeFO-v0"))
    assert "58.2" in maze_row and "99.9" in maze_row  # the paper's BC and ILQL
    assert "80.0 [" in maze_row  # our ILQL, with its interval


def test_timings_sum_wall_and_cpu_seconds_per_agent():
    where = {"agent": BC, "seed": 0}
    diagnostics = [
        {"step": "train", "env_id": env, **where, "seconds": 10, "cpu_seconds": 8}
        for env in TASKS[:2]
    ]
    play = {"step": "evaluate", "env_id": MAZE, **where, "seconds": 3, "cpu_seconds": 2}
    diagnostics.append(play)
    row = next(line for line in format_timings(diagnostics).splitlines() if line.startswith("| BC"))
    assert row == "| BC | 20 | 16 | 3 | 2 |"


def _scenario(**options):
    return Scenario.model_validate(
        {
            "name": "micro",
            "runner": "omnigym.llm_agents.lmrl_claims",
            "envs": [MAZE],
            "agents": [
                {
                    "name": "omnigym.llm_agents.lmrl_claims:bc_agent",
                    "label": BC,
                    "train": {"budget": 1},
                },
                {
                    "name": "omnigym.llm_agents.mc_returns:MCReturnsAgent",
                    "label": MC,
                    "train": {"budget": 1},
                },
                RANDOM,
            ],
            "options": options,
        }
    )


def test_bc_agent_builds_the_tiny_model_a_yaml_mapping_describes():
    require_llm_stack()
    from omnigym.llm_agents.bc import FilteredBCAgent
    from omnigym.llm_agents.lmrl_claims import bc_agent
    from omnigym.llm_agents.models import TinyConfig

    agent = bc_agent(seed=2, filtered=True, tiny={"layers": 1, "width": 32}, batch_size=4)
    assert isinstance(agent, FilteredBCAgent)
    assert agent.config.tiny == TinyConfig(layers=1, width=32)
    assert agent.config.batch_size == 4


def test_options_refuse_labels_that_are_not_trained_agents():
    assert options_of(_scenario(start_from={MC: BC}))["start_from"] == {MC: BC}
    with pytest.raises(ValueError, match="random"):
        options_of(_scenario(start_from={MC: RANDOM}))
    with pytest.raises(ValueError, match="ILQL"):
        options_of(_scenario(agent_kwargs={ILQL: {}}))
    with pytest.raises(ValueError, match="unknown options"):
        options_of(_scenario(budget=3))


def test_the_claims_scenario_file_loads():
    from pathlib import Path

    from omnigym.scenarios import __file__ as scenarios_init

    scenario = load_scenario(Path(scenarios_init).parent / "claims" / "lmrl_agents.yaml")
    labels = {agent.display for agent in scenario.agents}
    assert {BC, FILTERED_BC, MC, ILQL, PPO, RANDOM, ORACLE} <= labels
    assert options_of(scenario)["start_from"] == {MC: BC, ILQL: BC, PPO: BC}
    assert options_of(scenario.quickened())["subfolder"] == "quick"


@pytest.mark.slow
def test_a_micro_run_writes_its_claims_and_resumes_without_replaying(tmp_path):
    require_llm_stack()
    from omnigym.llm_agents.lmrl_claims import run_scenario

    micro = {
        "tiny": {"layers": 1, "width": 32, "heads": 2, "context": 128, "vocab_size": 300},
        "max_prompt_tokens": 48,
        "batch_size": 4,
    }
    scenario = _scenario(start_from={MC: BC}, agent_kwargs={BC: micro})
    scenario = scenario.model_copy(update={"episodes": 1})
    played = []
    output = run_scenario(scenario, tmp_path, on_episode=played.append)
    assert sorted(r["agent"] for r in played) == sorted([BC, MC, RANDOM])
    written = json.loads((tmp_path / "claims.json").read_text())
    assert [entry["claim"] for entry in written["claims"]] == list(range(1, 9))
    assert "Table 2" in (tmp_path / "claims.md").read_text()
    assert (tmp_path / "checkpoints").is_dir()
    stored = yaml.safe_load((tmp_path / "scenario.yaml").read_text())
    assert stored["name"] == "micro"
    again = []
    rerun = run_scenario(scenario, tmp_path, on_episode=again.append)
    assert again == []
    assert rerun.scorecard["results"] == output.scorecard["results"]
