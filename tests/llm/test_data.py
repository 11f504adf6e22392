"""Training examples from the LMRL datasets (omnigym.llm_agents.data): each agent turn's
observation is what the env shows in play, returns-to-go add up, a record that does not replay
is refused, and the filtered-BC filters keep what LMRL-Gym's %BC keeps."""

import math

import pytest

from tests.llm.conftest import MAZE, WORDLE, require_llm_stack

require_llm_stack()

import omnigym  # noqa: E402
from omnigym.envs.lmrl.datasets import fixture_path, load_fixture  # noqa: E402
from omnigym.llm_agents.data import (  # noqa: E402
    EpisodeFilter,
    dataset_examples,
    episode_examples,
    filter_episodes,
    lmrl_filter,
    load_records,
    returns_to_go,
)
from omnigym.llm_agents.policy import format_prompt  # noqa: E402


def test_examples_hold_the_observation_the_policy_reads_in_play():
    records = load_fixture(WORDLE)[:5]
    examples = dataset_examples(records)
    env = omnigym.make(WORDLE)
    index = 0
    for episode, record in enumerate(records):
        observation, info = env.reset(seed=record["seed"])
        for t, turn in enumerate(record["turns"][1::2]):
            example = examples[index]
            assert (example.episode, example.turn) == (episode, t)
            assert example.observation == observation
            assert example.completion == turn["text"]
            assert example.prompt == format_prompt(WORDLE, observation)
            observation, *_ = env.step(turn["text"])
            index += 1
    assert index == len(examples)
    # Wordle's transcript spaces a guess's letters, unlike the record's agent turns
    later = next(e for e in examples if e.turn == 1)
    assert " ".join(examples[0].completion) in later.observation


def test_examples_carry_rewards_returns_to_go_and_the_episode_outcome():
    record = load_fixture(MAZE)[0]
    examples = dataset_examples([record])
    rewards = [turn["reward"] for turn in record["turns"][1::2]]
    assert [e.reward for e in examples] == rewards
    assert [e.return_to_go for e in examples] == [sum(rewards[t:]) for t in range(len(rewards))]
    assert examples[0].return_to_go == record["return"]
    assert {(e.episode_return, e.success) for e in examples} == {
        (record["return"], record["success"])
    }
    assert all(
        e.legal_actions == ("move up", "move down", "move left", "move right") for e in examples
    )


def test_returns_to_go_discount_by_gamma():
    assert returns_to_go([-1.0, -1.0, 0.0], gamma=0.5) == [-1.5, -1.0, 0.0]
    with pytest.raises(ValueError, match="gamma"):
        dataset_examples(load_fixture(MAZE)[:1], gamma=1.5)


def test_a_record_that_does_not_replay_is_refused():
    record = load_fixture(MAZE)[0]
    turns = [dict(turn) for turn in record["turns"]]
    turns[1]["reward"] = 5.0
    with pytest.raises(ValueError, match="agent turn 0 earns -1.0 on replay, 5.0 in the record"):
        episode_examples({**record, "turns": turns}, omnigym.make(MAZE))
    turns = [dict(turn) for turn in record["turns"]]
    turns[2]["text"] = "somewhere else"
    with pytest.raises(ValueError, match="diverges before agent turn 1"):
        episode_examples({**record, "turns": turns}, omnigym.make(MAZE))


def test_chess_examples_are_read_off_the_record_with_their_legal_moves():
    pytest.importorskip("chess", reason="chess datasets need python-chess (the chess extra)")
    records = load_fixture("LMRL/Endgames-v0")[:3]
    examples = dataset_examples(records)
    positions = [turn["text"] for r in records for turn in r["turns"][0::2][: len(r["turns"]) // 2]]
    assert [example.observation for example in examples] == positions  # the env's observation
    assert all(example.completion in example.legal_actions for example in examples)


def test_datasets_load_from_an_env_id_a_file_an_env_and_records(tmp_path):
    env_id, records = load_records(MAZE)
    assert env_id == MAZE and len(records) == 100
    assert load_records(fixture_path(MAZE))[1] == records
    assert load_records(omnigym.make(MAZE))[1] == records
    assert load_records(records[:3])[1] == records[:3]
    fresh = load_records(MAZE, episodes=4, seed=2)[1]
    assert len(fresh) == 4 and fresh == load_records(MAZE, episodes=4, seed=2)[1]
    with pytest.raises(ValueError, match="mixes tasks"):
        load_records(records[:2] + load_fixture(WORDLE)[:1])


# ---- filtered BC -----------------------------------------------------------------------------


def test_filters_keep_successes_on_the_capability_tasks():
    for env_id in ("LMRL/MazeFO-v0", "LMRL/MazePO-v0", "LMRL/TextNavFO-v0", "LMRL/TextNavPO-v0"):
        records = load_fixture(env_id)
        kept = filter_episodes(records)
        assert kept == [r for r in records if r["success"]]
        assert 0 < len(kept) < len(records)
    assert (
        lmrl_filter("LMRL/Chess-v0") == lmrl_filter("LMRL/Endgames-v0") == EpisodeFilter("success")
    )


@pytest.mark.parametrize(
    ("env_id", "fraction"),
    [
        (WORDLE, 0.3),
        ("LMRL/TwentyQuestions-v0", 0.1),
        ("LMRL/GuessMyCity-v0", 0.1),
        ("LMRL/CarDealer-v0", 0.1),
    ],
)
def test_filters_keep_the_top_returns_on_wordle_and_the_dialogue_tasks(env_id, fraction):
    records = load_fixture(env_id)
    kept = filter_episodes(records)
    assert len(kept) == math.ceil(fraction * len(records))
    dropped = [r for r in records if r not in kept]
    assert min(r["return"] for r in kept) >= max(r["return"] for r in dropped)
    assert kept == [r for r in records if r in kept]  # dataset order


def test_top_filter_breaks_ties_in_dataset_order():
    records = [{"task": WORDLE, "return": value, "success": True} for value in (-2, -1, -2, -2)]
    kept = filter_episodes(records, rule=EpisodeFilter("top", 0.5))
    assert kept == [records[0], records[1]]


def test_a_filter_that_keeps_nothing_is_an_error():
    failures = [r for r in load_fixture(MAZE) if not r["success"]]
    with pytest.raises(ValueError, match="keeps none"):
        filter_episodes(failures)
    with pytest.raises(ValueError, match="no filtered-BC rule"):
        filter_episodes(failures, "Other/Task-v0")
