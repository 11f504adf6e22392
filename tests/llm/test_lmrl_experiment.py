"""The LM agents' experiment (omnigym.llm_agents.lmrl_experiment): its options, its tables, the
scenario file, and (slow) a micro run end to end that hands BC on and resumes without replaying."""

import json

import pytest
import yaml

from omnigym.evaluators.experiment import run_scenario
from omnigym.llm_agents.lmrl_experiment import (
    LMRLAgentsExperiment,
    format_comparison,
    format_imitation,
    format_timings,
)
from omnigym.scenario import Scenario, load_scenario
from omnigym.scenarios.claims.lmrl_agents import (
    BC,
    FILTERED_BC,
    ILQL,
    MC,
    ORACLE,
    PAPER_TABLE_2,
    PPO,
    RANDOM,
)
from tests.llm.conftest import MAZE, require_llm_stack

EXPERIMENT = "omnigym.llm_agents.lmrl_experiment:LMRLAgentsExperiment"


def _scenario(**options):
    return Scenario.model_validate(
        {
            "name": "micro",
            "experiment": EXPERIMENT,
            "claims": "omnigym.scenarios.claims.lmrl_agents:check",
            "envs": [MAZE],
            "agents": [
                {"name": "omnigym.llm_agents.bc:BCAgent", "label": BC, "train": {"budget": 1}},
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


def test_options_refuse_labels_that_are_not_trained_agents(tmp_path):
    experiment = LMRLAgentsExperiment(_scenario(start_from={MC: BC}), tmp_path)
    assert experiment.options["start_from"] == {MC: BC}
    with pytest.raises(ValueError, match="random"):
        LMRLAgentsExperiment(_scenario(start_from={MC: RANDOM}), tmp_path)
    with pytest.raises(ValueError, match="ILQL"):
        LMRLAgentsExperiment(_scenario(agent_kwargs={ILQL: {}}), tmp_path)
    with pytest.raises(ValueError, match="unknown options"):
        LMRLAgentsExperiment(_scenario(budget=3), tmp_path)


def test_options_refuse_agents_that_start_from_each_other(tmp_path):
    with pytest.raises(ValueError, match="circle"):
        LMRLAgentsExperiment(_scenario(start_from={MC: BC, BC: MC}), tmp_path)


def test_agent_kwargs_are_laid_over_the_agents_own(tmp_path):
    experiment = LMRLAgentsExperiment(_scenario(agent_kwargs={MC: {"temperature": 0.5}}), tmp_path)
    kwargs = {agent.display: agent.kwargs for agent in experiment.agents}
    assert kwargs[MC] == {"temperature": 0.5}
    assert kwargs[BC] == {}


def test_task_agent_kwargs_are_laid_over_those_on_their_task_only(tmp_path):
    options = {
        "agent_kwargs": {MC: {"temperature": 0.5, "candidates": 4}},
        "task_agent_kwargs": {MAZE: {MC: {"temperature": 0.0}}},
    }
    experiment = LMRLAgentsExperiment(_scenario(**options), tmp_path)
    on_maze = {agent.display: agent.kwargs for agent in experiment.agents_on(MAZE)}
    assert on_maze[MC] == {"temperature": 0.0, "candidates": 4}
    elsewhere = {agent.display: agent.kwargs for agent in experiment.agents_on("LMRL/MazePO-v0")}
    assert elsewhere[MC] == {"temperature": 0.5, "candidates": 4}
    with pytest.raises(ValueError, match="not a scenario env"):
        LMRLAgentsExperiment(_scenario(task_agent_kwargs={"LMRL/Wordle-v0": {}}), tmp_path)
    with pytest.raises(ValueError, match="ILQL"):
        LMRLAgentsExperiment(_scenario(task_agent_kwargs={MAZE: {ILQL: {}}}), tmp_path)


def _scorecard(scores):
    return {
        "envs": sorted({env for env, _ in scores}),
        "results": [
            {"env_id": env, "agent": agent, "normalized_score": {"mean": m, "ci95": [m - 1, m + 1]}}
            for (env, agent), m in scores.items()
        ],
    }


def test_comparison_puts_our_scores_beside_the_papers_then_the_untrained_agents():
    scorecard = _scorecard({(MAZE, BC): 40.0, (MAZE, ILQL): 80.0, (MAZE, ORACLE): 100.0})
    table = format_comparison(scorecard, [BC, ILQL], [RANDOM, ORACLE], PAPER_TABLE_2)
    lines = table.splitlines()
    assert lines[0] == "## Normalized scores beside the paper's"
    assert f"| {MAZE} | 40.0 [39.0, 41.0] | 58.2 | 80.0 [79.0, 81.0] | 99.9 |" in lines
    assert "| task | random | oracle |" in lines
    assert f"| {MAZE} | — | 100.0 [99.0, 101.0] |" in lines


def test_comparison_without_paper_scores_shows_ours_only():
    scorecard = _scorecard({(MAZE, BC): 40.0})
    lines = format_comparison(scorecard, [BC], [], {}).splitlines()
    assert lines[0] == "## Normalized scores"
    assert f"| {MAZE} | 40.0 [39.0, 41.0] |" in lines


def test_paper_scores_name_the_checkers_table_or_fail_before_the_run(tmp_path):
    table = "omnigym.scenarios.claims.lmrl_agents:PAPER_TABLE_2"
    experiment = LMRLAgentsExperiment(_scenario(paper_scores=table), tmp_path)
    assert experiment.paper is PAPER_TABLE_2
    with pytest.raises(ValueError, match="paper_scores"):
        LMRLAgentsExperiment(_scenario(paper_scores="omnigym.nowhere:TABLE"), tmp_path)


def test_timings_sum_wall_and_cpu_seconds_per_agent_from_the_latest_lines():
    where = {"agent": BC, "seed": 0}
    diagnostics = [
        {"stage": "train", "env_id": env, **where, "seconds": 10, "cpu_seconds": 8}
        for env in (MAZE, "LMRL/MazePO-v0")
    ]
    diagnostics.insert(
        0, {"stage": "train", "env_id": MAZE, **where, "seconds": 99, "cpu_seconds": 9}
    )
    diagnostics.append(
        {"stage": "evaluate", "env_id": MAZE, **where, "seconds": 3, "cpu_seconds": 2}
    )
    row = next(line for line in format_timings(diagnostics).splitlines() if line.startswith("| BC"))
    assert row == "| BC | 20 | 16 | 3 | 2 |"


def test_imitation_turns_must_be_a_count(tmp_path):
    assert LMRLAgentsExperiment(_scenario(), tmp_path).options["imitation_turns"] == 200
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="imitation_turns"):
            LMRLAgentsExperiment(_scenario(imitation_turns=bad), tmp_path)


def test_imitation_table_averages_the_latest_line_of_each_seed():
    def line(seed, accuracy):
        return {
            "stage": "imitation",
            "env_id": MAZE,
            "agent": BC,
            "seed": seed,
            "turns": 10,
            "held_out_loss": 1.0,
            "token_accuracy": accuracy,
            "majority_token_rate": 0.5,
            "action_accuracy": accuracy / 2,
            "majority_action_rate": 0.25,
        }

    diagnostics = [line(0, 0.1), line(0, 0.6), line(1, 0.8)]
    assert format_imitation([{"stage": "train", "env_id": MAZE, "agent": BC, "seed": 0}]) == ""
    row = next(r for r in format_imitation(diagnostics).splitlines() if r.startswith(f"| {MAZE}"))
    assert row == f"| {MAZE} | {BC} | 1.000 | 0.700 (0.500) | 0.350 (0.250) | 20 |"


def test_the_claims_scenario_file_loads_with_its_experiment_and_quick_profile(tmp_path):
    from pathlib import Path

    from omnigym.scenarios import __file__ as scenarios_init

    scenario = load_scenario(Path(scenarios_init).parent / "claims" / "lmrl_agents.yaml")
    assert scenario.name == "lmrl_agents"
    assert scenario.experiment == EXPERIMENT
    assert scenario.claims == "omnigym.scenarios.claims.lmrl_agents:check"
    assert {BC, FILTERED_BC, MC, ILQL, PPO, RANDOM, ORACLE} <= {a.display for a in scenario.agents}
    quick = LMRLAgentsExperiment(scenario.quickened(), tmp_path)
    assert quick.options["start_from"] == {MC: BC, ILQL: BC, PPO: BC}
    assert quick.options["agent_kwargs"][BC] == {"dataset_episodes": None}
    assert quick.paper is PAPER_TABLE_2
    assert quick.options["imitation_turns"] == 50
    kwargs = {env.id: env.kwargs for env in scenario.envs}
    assert kwargs["LMRL/Wordle-v0"] == {"list_guesses": True}
    assert kwargs["LMRL/TwentyQuestions-v0"] == {"list_questions": True}


@pytest.mark.slow
def test_a_micro_run_hands_bc_on_writes_its_claims_and_resumes_without_replaying(tmp_path):
    require_llm_stack()
    micro = {
        "tiny": {"layers": 1, "width": 32, "heads": 2, "context": 128, "vocab_size": 300},
        "max_prompt_tokens": 48,
        "batch_size": 4,
    }
    table = "omnigym.scenarios.claims.lmrl_agents:PAPER_TABLE_2"
    scenario = _scenario(
        start_from={MC: BC}, agent_kwargs={BC: micro}, paper_scores=table, imitation_turns=8
    )
    scenario = scenario.model_copy(update={"episodes": 1})
    played = []
    output = run_scenario(scenario, tmp_path, on_episode=played.append)
    assert sorted(r["agent"] for r in played) == sorted([BC, MC, RANDOM])
    claims = json.loads((tmp_path / "claims.json").read_text())["claims"]
    assert [entry["id"] for entry in claims] == list(range(1, 11))
    summary = (tmp_path / "scorecard.md").read_text()
    assert "## Normalized scores beside the paper's" in summary and "## Timings" in summary
    assert f"| {MAZE} | {BC} |" in summary.split("## Imitation of held-out dataset turns")[1]
    bc = tmp_path / "checkpoints" / "LMRL_MazeFO-v0" / BC / "seed0"
    assert bc.is_dir()
    mc = tmp_path / "checkpoints" / "LMRL_MazeFO-v0" / MC / "seed0" / "agent.json"
    assert json.loads(mc.read_text())["config"]["policy"] == str(bc)
    lines = [json.loads(line) for line in (tmp_path / "diagnostics.jsonl").read_text().splitlines()]
    assert sorted((d["stage"], d["agent"]) for d in lines if d["stage"] == "train") == [
        ("train", BC),
        ("train", MC),
    ]
    (imitation,) = [d for d in lines if d["stage"] == "imitation"]
    assert imitation["agent"] == BC and imitation["turns"] == 8
    assert 0 <= imitation["token_accuracy"] <= 1 and 0 < imitation["majority_token_rate"] <= 1
    stored = yaml.safe_load((tmp_path / "scenario.yaml").read_text())
    assert stored["name"] == "micro"
    again = []
    rerun = run_scenario(scenario, tmp_path, on_episode=again.append)
    assert again == []
    assert rerun.scorecard["results"] == output.scorecard["results"]
