"""The MCU claims experiment plays the curated suite read from the registry, plus the parts and
`and` twins the composition claim compares against."""

from pathlib import Path

import pytest

from omnigym.envs.mcu.suite import curated
from omnigym.evaluators.mcu_experiment import MCUExperiment
from omnigym.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "claims" / "mcu.yaml"


def experiment(tmp_path, quick=False):
    scenario = load_scenario(SCENARIO)
    return MCUExperiment(scenario.quickened() if quick else scenario, tmp_path)


def test_the_suite_is_every_curated_id_then_parts_and_and_twins(tmp_path):
    suite = {env.display: (env, meta) for env, meta in experiment(tmp_path).suite()}
    assert {entry.env_id for entry in curated()} <= set(suite)
    # every part of the curated compositions is a curated simple id: no extra part envs
    assert not [label for label in suite if label.endswith("(part)")]
    twin, meta = suite["MCU/collect_wood_and_craft_to_clock (and of then)"]
    assert twin.kwargs == {"tasks": ["collect_wood", "craft_to_clock"], "ops": ["and"]}
    assert meta["role"] == "twin" and meta["category"] == "Composite"
    hard = suite["MCU/build_pillar-hard-v0"][1]
    assert (hard["kind"], hard["difficulty"], hard["train"]) == ("creative", "hard", "build_pillar")
    assert "MCU/collect_wood-simple (part)" not in suite  # a curated simple id already


def test_the_quick_profile_keeps_the_listed_ids_and_their_parts(tmp_path):
    suite = experiment(tmp_path, quick=True).suite()
    labels = [env.display for env, _ in suite]
    assert labels[-1] == "MCU/find_cow-simple (part)" and len(labels) == 8
    part, meta = suite[-1]
    assert (part.id, part.kwargs, meta["role"]) == ("MCU/Atomic-v0", {"task": "find_cow"}, "part")


def test_an_unknown_id_in_only_is_refused(tmp_path):
    scenario = load_scenario(SCENARIO)
    scenario = scenario.model_copy(update={"options": {"only": ["MCU/nothing-v0"]}})
    with pytest.raises(ValueError, match="MCU/nothing-v0"):
        MCUExperiment(scenario, tmp_path)
