"""Offline datasets (spec lmrl.md §4): generator determinism, fixtures, success rates."""

import json

import numpy as np
import pytest

import omnigym
from omnigym.envs.lmrl.datasets import (
    DEFAULT_EPISODES,
    LMRL_SUCCESS,
    TASK_ENV_IDS,
    generate,
    load_dataset,
    load_fixture,
    main,
    write_dataset,
)
from omnigym.envs.lmrl.normalization import dataset_average, load_constants

TASKS = ["maze_fo", "maze_po", "wordle"]


@pytest.mark.parametrize("task", TASKS)
def test_generator_writes_byte_identical_files_for_the_same_seed(task, tmp_path):
    first = write_dataset(task, 5, 7, tmp_path / "a")
    second = write_dataset(task, 5, 7, tmp_path / "b")
    assert first == second
    for name in (f"{task}.jsonl.gz", f"{task}.stats.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_different_seeds_give_different_episodes():
    assert list(generate("wordle", 5, 0)) != list(generate("wordle", 5, 1))


def test_cli_writes_the_dataset_and_its_stats(tmp_path):
    main(["--task", "maze_po", "--episodes", "3", "--seed", "2", "--out", str(tmp_path)])
    records = load_dataset(tmp_path / "maze_po.jsonl.gz")
    stats = json.loads((tmp_path / "maze_po.stats.json").read_text())
    assert len(records) == stats["episodes"] == 3
    assert stats["mean_return"] == pytest.approx(np.mean([r["return"] for r in records]))


@pytest.mark.parametrize("task", TASKS)
def test_fixture_loads_with_the_spec_fields_and_consistent_turns(task):
    records = load_fixture(task)
    assert len(records) == 100
    for record in records:
        assert {"task", "seed", "behaviour", "turns", "return", "success", "truncated"} <= set(
            record
        )
        assert record["task"] == task
        roles = [turn["role"] for turn in record["turns"]]
        assert roles == ["env"] + ["agent", "env"] * (len(roles) // 2)
        assert all(turn["reward"] == 0.0 for turn in record["turns"] if turn["role"] == "env")
        assert sum(turn["reward"] for turn in record["turns"]) == record["return"]
        assert record["success"] == (record["turns"][-2]["reward"] == 0.0)


@pytest.mark.parametrize("task", TASKS)
def test_fixture_equals_a_regeneration(task):
    assert load_fixture(task) == list(generate(task, 100, 0))


@pytest.mark.parametrize("task", TASKS)
def test_fixture_episode_replays_in_the_environment(task):
    record = load_fixture(task)[0]
    env = omnigym.make(TASK_ENV_IDS[task])
    options = {"start": record["behaviour"]["start"]} if "start" in record["behaviour"] else {}
    observation, _ = env.reset(seed=record["seed"], options=options)
    for turn in record["turns"][1::2]:
        observation, *_ = env.step(turn["text"])
    assert observation == "\n".join(turn["text"] for turn in record["turns"])


def test_maze_dataset_success_rate_is_within_five_points_of_lmrl():
    records = list(generate("maze_fo", DEFAULT_EPISODES["maze_fo"], 0))
    success = np.mean([r["success"] for r in records])
    assert abs(success - LMRL_SUCCESS["maze_fo"]) <= 0.05
    assert all(r["behaviour"]["sub_maze"] == "centre" for r in records if r["success"])


def test_maze_normalization_average_matches_a_regeneration():
    for env_id in ("LMRL/MazeFO-v0", "LMRL/MazePO-v0"):
        assert dataset_average(env_id) == pytest.approx(load_constants()[env_id]["avg"], abs=1e-4)


@pytest.mark.slow
def test_wordle_dataset_success_rate_and_average_match_lmrl_and_the_constants():
    records = list(generate("wordle", DEFAULT_EPISODES["wordle"], 0))
    success = np.mean([r["success"] for r in records])
    assert abs(success - LMRL_SUCCESS["wordle"]) <= 0.05
    average = np.mean([r["return"] for r in records])
    assert average == pytest.approx(load_constants()["LMRL/Wordle-v0"]["avg"], abs=1e-4)
