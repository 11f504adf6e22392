"""Offline datasets: generator determinism, fixtures, success rates."""

import json

import numpy as np
import pytest

import omnigym
from omnigym.cli import main as omnigym_main
from omnigym.envs.lmrl.datasets import (
    FIXTURE_EPISODES,
    behaviour_class,
    dataset_env_ids,
    generate,
    load_dataset,
    load_fixture,
    main,
    stats_path,
    write_dataset,
)
from omnigym.envs.lmrl.normalization import dataset_average, load_constants

CHEAP = ["LMRL/MazeFO-v0", "LMRL/MazePO-v0", "LMRL/Wordle-v0"]


@pytest.mark.parametrize("name", ["data.jsonl.gz", "data.jsonl"])
def test_generator_writes_byte_identical_files_for_the_same_seed(name, tmp_path):
    first = write_dataset("LMRL/Wordle-v0", 5, 7, tmp_path / "a" / name)
    second = write_dataset("LMRL/Wordle-v0", 5, 7, tmp_path / "b" / name)
    assert first == second
    for file in (name, "data.stats.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()


def test_different_seeds_give_different_episodes():
    assert list(generate("LMRL/Wordle-v0", 5, 0)) != list(generate("LMRL/Wordle-v0", 5, 1))


def test_module_cli_writes_the_dataset_and_its_stats(tmp_path):
    out = tmp_path / "maze.jsonl.gz"
    main(["--env", "LMRL/MazePO-v0", "--episodes", "3", "--seed", "2", "--out", str(out)])
    records = load_dataset(out)
    stats = json.loads(stats_path(out).read_text())
    assert len(records) == stats["episodes"] == 3
    assert stats["mean_return"] == pytest.approx(np.mean([r["return"] for r in records]))


def test_omnigym_dataset_command_writes_plain_jsonl(tmp_path, capsys):
    out = tmp_path / "wordle.jsonl"
    args = ["dataset", "LMRL/Wordle-v0", "--episodes", "4", "--seed", "1", "--out", str(out)]
    assert omnigym_main(args) == 0
    assert len(out.read_text().splitlines()) == 4
    assert json.loads(capsys.readouterr().out)["episodes"] == 4


def test_omnigym_dataset_refuses_an_env_without_one(tmp_path):
    assert omnigym_main(["dataset", "LMRL/CarDealerDuo-v0", "--out", str(tmp_path / "x")]) == 2


@pytest.mark.parametrize("env_id", dataset_env_ids())
def test_fixture_loads_with_the_documented_fields_and_consistent_turns(env_id):
    records = load_fixture(env_id)
    assert len(records) == FIXTURE_EPISODES
    for record in records:
        assert {"task", "seed", "behaviour", "turns", "return", "success", "truncated"} <= set(
            record
        )
        assert record["task"] == env_id
        roles = [turn["role"] for turn in record["turns"]]
        assert roles == ["env"] + ["agent", "env"] * (len(roles) // 2)
        assert all(turn["reward"] == 0.0 for turn in record["turns"] if turn["role"] == "env")
        assert sum(turn["reward"] for turn in record["turns"]) == pytest.approx(record["return"])


@pytest.mark.parametrize("env_id", CHEAP)
def test_fixture_equals_a_regeneration(env_id):
    assert load_fixture(env_id) == list(generate(env_id, FIXTURE_EPISODES, 0))


@pytest.mark.parametrize("env_id", CHEAP)
def test_fixture_episode_replays_in_the_environment(env_id):
    record = load_fixture(env_id)[0]
    env = omnigym.make(env_id)
    _, info = env.reset(seed=record["seed"])
    for agent_turn, env_turn in zip(record["turns"][1::2], record["turns"][2::2], strict=True):
        _, reward, *_, info = env.step(agent_turn["text"])
        assert (reward, info["last_message"]) == (agent_turn["reward"], env_turn["text"])


def test_maze_dataset_succeeds_only_from_the_goal_sub_maze_and_beats_random_play():
    records = list(
        generate("LMRL/MazeFO-v0", behaviour_class("LMRL/MazeFO-v0").default_episodes, 0)
    )
    assert all(r["behaviour"]["sub_maze"] == "centre" for r in records if r["success"])
    assert 0.4 < np.mean([r["success"] for r in records]) < 0.7


@pytest.mark.parametrize("env_id", ["LMRL/MazeFO-v0", "LMRL/MazePO-v0"])
def test_maze_normalization_average_matches_a_regeneration(env_id):
    assert dataset_average(env_id) == pytest.approx(load_constants()[env_id]["avg"], abs=1e-4)


@pytest.mark.slow
def test_wordle_dataset_success_rate_and_average_match_lmrl_and_the_constants():
    behaviour = behaviour_class("LMRL/Wordle-v0")
    records = list(generate("LMRL/Wordle-v0", behaviour.default_episodes, 0))
    assert abs(np.mean([r["success"] for r in records]) - behaviour.lmrl_success) <= 0.05
    average = np.mean([r["return"] for r in records])
    assert average == pytest.approx(load_constants()["LMRL/Wordle-v0"]["avg"], abs=1e-4)
