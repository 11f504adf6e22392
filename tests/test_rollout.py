"""evaluate(): episode identity, seeding, workers and the resumable episode store."""

import json

import pytest

from omnigym.evaluators import evaluate
from omnigym.evaluators.rollout import MEASURED_KEYS, episode_seeds
from omnigym.evaluators.store import EpisodeStore, read_records

ENV = "LMRL/MazeFO-v0"


def _comparable(records):
    return [{k: v for k, v in r.items() if k not in MEASURED_KEYS} for r in records]


def test_records_carry_the_documented_keys():
    (record,) = evaluate(ENV, "oracle", episodes=1)
    assert set(record) == {
        "env_id", "agent", "seed", "episode", "episode_seed", "return", "length", "success",
        "cost", "normalized_score", "metrics", "achievements", "terminated", "truncated",
        "wall_time", "cpu_seconds", "peak_rss_mb",
    }  # fmt: skip
    assert record["env_id"] == ENV and record["agent"] == "oracle"
    assert record["success"] is True and record["cost"] is None
    assert record["metrics"]["turns"] == record["length"]
    assert record["cpu_seconds"] >= 0 and record["peak_rss_mb"] > 0


def test_episode_seeds_depend_only_on_seed_and_index():
    assert episode_seeds(0, 3) == episode_seeds(0, 3)
    assert len({episode_seeds(seed, episode) for seed in range(5) for episode in range(50)}) == 250


def test_evaluate_is_reproducible():
    first = evaluate(ENV, "random", episodes=4, seeds=[0, 1])
    second = evaluate(ENV, "random", episodes=4, seeds=[0, 1])
    assert _comparable(first) == _comparable(second)
    assert [(r["seed"], r["episode"]) for r in first] == [(s, e) for s in (0, 1) for e in range(4)]


@pytest.mark.slow
def test_two_workers_give_the_same_records_as_one():
    serial = evaluate(ENV, "random", episodes=6, seeds=[0, 1])
    parallel = evaluate(ENV, "random", episodes=6, seeds=[0, 1], workers=2)
    assert _comparable(serial) == _comparable(parallel)


def test_store_resumes_without_replaying_or_duplicating(tmp_path):
    with EpisodeStore(tmp_path) as store:
        evaluate(ENV, "random", episodes=3, seeds=[0], store=store)
    played = []
    with EpisodeStore(tmp_path) as store:
        records = evaluate(
            ENV, "random", episodes=5, seeds=[0], store=store, on_episode=played.append
        )
    assert [r["episode"] for r in played] == [3, 4]
    assert [r["episode"] for r in records] == [0, 1, 2, 3, 4]
    assert len(read_records(tmp_path / "episodes.jsonl")) == 5


def test_store_cuts_a_partial_last_line(tmp_path):
    with EpisodeStore(tmp_path) as store:
        evaluate(ENV, "random", episodes=2, seeds=[0], store=store)
    path = tmp_path / "episodes.jsonl"
    path.write_text(path.read_text() + '{"env_id": "LMRL/Maz')
    with EpisodeStore(tmp_path) as store:
        evaluate(ENV, "random", episodes=3, seeds=[0], store=store)
    lines = path.read_text().splitlines()
    assert [json.loads(line)["episode"] for line in lines] == [0, 1, 2]


def test_store_without_records_writes_nothing(tmp_path):
    EpisodeStore(tmp_path / "never").close()
    assert not (tmp_path / "never").exists()


def test_agent_objects_can_be_evaluated_directly():
    import omnigym

    env = omnigym.make(ENV)
    agent = omnigym.make_agent("oracle", env=env, env_id=ENV)
    records = evaluate(ENV, agent, episodes=2, label="mine")
    assert [r["agent"] for r in records] == ["mine", "mine"]
    assert all(r["success"] for r in records)


def test_bad_counts_are_rejected():
    with pytest.raises(ValueError, match="episodes"):
        evaluate(ENV, "random", episodes=0)
    with pytest.raises(ValueError, match="workers"):
        evaluate(ENV, "random", workers=0)
