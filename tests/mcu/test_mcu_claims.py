"""The claims of MCU (omnigym.scenarios.claims.mcu), checked on synthetic runs: each of claims
1-6 passes on a run with the expected pattern and fails when one number breaks it; a claim whose
agents or envs the run lacks is not run."""

import copy

import pytest

from omnigym.envs.mcu.evaluation import DIMENSIONS
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import Scenario
from omnigym.scenarios.claims.mcu import BC, ORACLE, PPO, RANDOM, check


def meta(tasks, difficulty="simple", kind="programmatic", role="suite", ops=()):
    return {
        "task": "+".join(tasks),
        "category": "Composite" if len(tasks) > 1 else "Mine Blocks",
        "subcategory": "Ore",
        "difficulty": difficulty,
        "kind": kind,
        "tasks": list(tasks),
        "ops": list(ops),
        "role": role,
        "train": "+".join(tasks),
    }


ENVS = {
    "MCU/mine-simple-v0": meta(["mine"]),
    "MCU/mine-hard-v0": meta(["mine"], "hard"),
    "MCU/pillar-simple-v0": meta(["pillar"], kind="creative"),
    "MCU/pillar-hard-v0": meta(["pillar"], "hard", kind="creative"),
    "MCU/mine_and_pillar-v0": meta(["mine", "pillar"], ops=["and"]),
    "MCU/mine_or_pillar-v0": meta(["mine", "pillar"], ops=["or"]),
    "MCU/mine_then_pillar-v0": meta(["mine", "pillar"], ops=["then"]),
    "MCU/mine_and_pillar (and of then)": meta(["mine", "pillar"], role="twin", ops=["and"]),
}
# Task Progress (0-10) per env and agent; success when 10.
PATTERN = {
    ORACLE: dict.fromkeys(ENVS, 10.0),
    RANDOM: dict.fromkeys(ENVS, 0.5),
    BC: {
        "MCU/mine-simple-v0": 10.0,
        "MCU/mine-hard-v0": 2.0,
        "MCU/pillar-simple-v0": 6.0,
        "MCU/pillar-hard-v0": 1.0,
        "MCU/mine_and_pillar-v0": 6.0,
        "MCU/mine_or_pillar-v0": 10.0,
        "MCU/mine_then_pillar-v0": 5.0,
        "MCU/mine_and_pillar (and of then)": 6.0,
    },
}
PATTERN[PPO] = dict(PATTERN[BC])
PILLAR_HARD = ("MCU/pillar-hard-v0",)
# Other dimensions (0-10): error recognition and creative attempts lowest for the learners.
OTHERS = {
    "action_control": 6.0,
    "error_recognition_and_correction": 1.0,
    "creative_attempts": 0.5,
    "task_completion_efficiency": 4.0,
    "material_selection_and_usage": 5.0,
}


def synthetic_run(tmp_path, pattern=PATTERN, others=OTHERS, envs=ENVS, seeds=(0, 1, 2)):
    records = []
    for agent, progress in pattern.items():
        for env_id, value in progress.items():
            for seed in seeds:
                for episode in range(2):
                    metrics = dict.fromkeys(DIMENSIONS, 0.0) | others | {"task_progress": value}
                    records.append(
                        {
                            "env_id": env_id,
                            "agent": agent,
                            "seed": seed,
                            "episode": episode,
                            "success": value == 10.0,
                            "metrics": metrics,
                        }
                    )
    scenario = Scenario(name="mcu", envs=["MCU/Atomic-v0"], agents=["oracle"])
    scorecard = {"mcu": {"envs": envs}}
    return Run(scenario, {}, RunFolder(tmp_path), scorecard, records)


def statuses(run):
    return {entry["id"]: entry["status"] for entry in check(run)}


def test_every_claim_passes_on_the_expected_pattern(tmp_path):
    assert statuses(synthetic_run(tmp_path)) == dict.fromkeys(range(1, 7), "pass")


def broken(agent, env, value, *more):
    """PATTERN with ``agent``'s Task Progress on ``env`` (and on ``more`` envs) set to ``value``."""
    pattern = copy.deepcopy(PATTERN)
    for label in (env, *more):
        pattern[agent][label] = value
    return pattern


@pytest.mark.parametrize(
    ("number", "pattern", "others"),
    [
        (1, broken(ORACLE, "MCU/pillar-hard-v0", 9.0), OTHERS),
        (2, {**PATTERN, RANDOM: dict.fromkeys(ENVS, 2.0)}, OTHERS),
        (2, broken(RANDOM, "MCU/mine-simple-v0", 10.0), OTHERS),
        (3, broken(BC, "MCU/mine-hard-v0", 6.0, "MCU/mine-simple-v0", *PILLAR_HARD), OTHERS),
        (4, broken(BC, "MCU/pillar-simple-v0", 10.0, "MCU/pillar-hard-v0"), OTHERS),
        (5, PATTERN, {**OTHERS, "material_selection_and_usage": 0.2}),
        (6, broken(BC, "MCU/mine_and_pillar-v0", 10.0), OTHERS),
        (6, broken(PPO, "MCU/mine_or_pillar-v0", 0.0), OTHERS),
        (6, broken(BC, "MCU/mine_then_pillar-v0", 10.0), OTHERS),
    ],
)
def test_each_claim_fails_when_its_number_breaks(tmp_path, number, pattern, others):
    assert statuses(synthetic_run(tmp_path, pattern, others))[number] == "fail"


def test_claims_without_their_agents_or_envs_are_not_run(tmp_path):
    atomic = {label: m for label, m in ENVS.items() if len(m["tasks"]) == 1}
    found = statuses(synthetic_run(tmp_path, {ORACLE: PATTERN[ORACLE]}, envs=atomic))
    assert found == {1: "pass", 2: "not run", 3: "not run", 4: "not run", 5: "not run"} | {
        6: "not run"
    }
