"""Wordle: word lists, feedback, reward rules, hidden word, oracle."""

import numpy as np
import pytest

import omnigym
from omnigym.agents.lmrl.wordle import WordleOracle
from omnigym.envs.lmrl.normalization import load_constants, normalize
from omnigym.envs.lmrl.wordle import (
    FEEDBACK_TEXT,
    WordleEnv,
    feedback_table,
    guess_index,
    word_lists,
)

ANSWERS, GUESSES = word_lists()


def reference_feedback(guess: str, answer: str) -> str:
    """Wordle's rule written the obvious way: greens, then yellows left to right."""
    marks = ["b"] * 5
    spare: dict[str, int] = {}
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            marks[i] = "g"
        else:
            spare[a] = spare.get(a, 0) + 1
    for i, g in enumerate(guess):
        if marks[i] != "g" and spare.get(g, 0) > 0:
            marks[i] = "y"
            spare[g] -= 1
    return " ".join(marks)


def test_word_lists_are_2129_common_answers_inside_11406_guesses():
    assert (len(ANSWERS), len(GUESSES)) == (2129, 11406)
    assert set(ANSWERS) <= set(GUESSES)
    assert all(len(w) == 5 and w.isascii() and w.isalpha() and w.islower() for w in GUESSES)


def test_small_vocabulary_keeps_the_first_400_answers_and_4667_guesses():
    answers, guesses = word_lists("small")
    assert (len(answers), len(guesses)) == (400, 4667)
    assert set(answers) <= set(ANSWERS) and set(answers) <= set(guesses)


@pytest.mark.parametrize("word", ["apple", "there", "spoon"])
def test_common_words_can_be_pinned_as_the_hidden_word(word):
    env = WordleEnv()
    env.reset(options={"word": word})
    _, reward, terminated, _, info = env.step(word)
    assert (reward, terminated, info["success"]) == (0.0, True, True)


def test_unknown_vocabulary_is_refused_by_name():
    with pytest.raises(ValueError, match="vocabulary"):
        WordleEnv(vocabulary="huge")


def test_pinned_word_outside_the_small_answers_names_the_vocabulary_kwarg():
    with pytest.raises(ValueError, match="vocabulary kwarg"):
        WordleEnv(vocabulary="small").reset(options={"word": "apple"})


def test_list_guesses_puts_the_guess_list_in_every_info():
    env = WordleEnv(list_guesses=True)
    _, info = env.reset(seed=0)
    assert info["legal_actions"] is GUESSES
    assert env.step("crane")[4]["legal_actions"] is GUESSES
    assert "legal_actions" not in WordleEnv().reset(seed=0)[1]
    with pytest.raises(ValueError, match="list_guesses"):
        WordleEnv(list_guesses="yes")


def test_behaviour_and_oracle_play_the_env_vocabulary():
    env = omnigym.make("LMRL/Wordle-v0", vocabulary="small")
    behaviour = omnigym.make_agent("behavior", env=env, env_id="LMRL/Wordle-v0")
    oracle = omnigym.make_agent("oracle", env=env, env_id="LMRL/Wordle-v0")
    small_guesses = set(word_lists("small")[1])
    for agent in (behaviour, oracle):
        agent.reset(0)
        observation, info = env.reset(seed=0)
        done = False
        while not done:
            guess = agent.act(observation, info)
            assert guess in small_guesses
            observation, _, done, _, info = env.step(guess)


def test_feedback_table_matches_the_wordle_rule_including_duplicates():
    table = feedback_table()
    rng = np.random.default_rng(0)
    for row, column in zip(
        rng.integers(len(GUESSES), size=3000), rng.integers(len(ANSWERS), size=3000), strict=True
    ):
        assert FEEDBACK_TEXT[table[row, column]] == reference_feedback(
            GUESSES[row], ANSWERS[column]
        )
    # Extra copies of a letter are b: "speed" has two e's, "abide" one.
    assert FEEDBACK_TEXT[table[guess_index()["speed"], ANSWERS.index("abide")]] == "b b y b y"


def test_transcript_has_wordle_header_spaced_guess_and_feedback_lines():
    env = WordleEnv()
    env.reset(options={"word": "abide"})
    observation, reward, terminated, _, info = env.step("Speed")
    assert observation == "Wordle:\ns p e e d\nb b y b y"
    assert (reward, terminated, info["invalid_action"]) == (-1.0, False, False)


def test_spaced_guess_as_in_the_transcript_is_accepted():
    env = WordleEnv()
    env.reset(options={"word": "abide"})
    _, reward, terminated, _, info = env.step("a b i d e")
    assert (reward, terminated, info["success"]) == (0.0, True, True)


def test_solving_guess_rewards_zero_and_succeeds():
    env = omnigym.make("LMRL/Wordle-v0")
    env.reset(seed=0, options={"word": "azure"})
    assert env.step("crane")[1] == -1.0
    _, reward, terminated, truncated, info = env.step("azure")
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["success"] is True
    assert info["last_message"] == "g g g g g"
    assert info["episode_return"] == -1.0
    assert info["normalized_score"] == normalize("LMRL/Wordle-v0", -1.0)


def test_six_invalid_guesses_return_minus_six_with_empty_feedback():
    env = omnigym.make("LMRL/Wordle-v0")
    env.reset(seed=0)
    for turn, guess in enumerate(["xyzzy", "toolong", "", "12345", "abcde", "qqqqq"]):
        observation, reward, terminated, truncated, info = env.step(guess)
        assert reward == -1.0
        assert info["invalid_action"] is True
        assert info["last_message"] == ""
        assert terminated == (turn == 5) and not truncated
    assert info["episode_return"] == -6.0
    assert info["success"] is False
    assert info["normalized_score"] == 0.0
    assert observation.split("\n")[2::2] == [""] * 6


@pytest.mark.parametrize("seed", range(10))
def test_fixed_hidden_word_does_not_depend_on_earlier_guesses(seed):
    first, second = WordleEnv(hidden="fixed"), WordleEnv(hidden="fixed")
    first.reset(seed=seed)
    second.reset(seed=seed)
    first.step("crane")
    first.step("pious")
    feedback = first.step("moldy")[4]["last_message"]
    assert second.step("moldy")[4]["last_message"] == feedback


@pytest.mark.parametrize("seed", range(20))
def test_consistent_hidden_word_keeps_some_answer_consistent_with_all_feedback(seed):
    env = WordleEnv(hidden="consistent")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    played = []
    for _ in range(6):
        guess = GUESSES[rng.integers(len(GUESSES))]
        _, _, terminated, _, info = env.step(guess)
        played.append((guess, info["last_message"]))
        if terminated:
            break
    left = [a for a in ANSWERS if all(reference_feedback(g, a) == line for g, line in played)]
    assert len(left) == info["metrics"]["candidates_left"] >= 1


def test_pinned_word_must_be_an_answer():
    with pytest.raises(ValueError, match="word"):
        WordleEnv().reset(options={"word": "zzzzz"})


def test_longest_episode_transcript_fits_the_observation_space():
    env = WordleEnv()
    env.reset(seed=0)
    for _ in range(6):
        observation, *_ = env.step("w" * 400)
    assert len(observation) > 6 * 256
    assert env.observation_space.contains(observation)


def _oracle_returns(seeds):
    env = omnigym.make("LMRL/Wordle-v0")
    oracle = omnigym.make_agent("oracle", env=env, env_id="LMRL/Wordle-v0")
    returns, scores = [], []
    for seed in seeds:
        oracle.reset(seed)
        observation, info = env.reset(seed=seed)
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(oracle.act(observation, info))
            done = terminated or truncated
        returns.append(info["episode_return"])
        scores.append(info["normalized_score"])
    return np.array(returns), np.array(scores)


def test_oracle_mean_return_reaches_the_normalization_max():
    returns, _ = _oracle_returns(range(1000, 1300))
    assert returns.mean() >= load_constants()["LMRL/Wordle-v0"]["max"] - 0.15
    assert returns.min() > -6.0


def test_oracle_scores_at_least_90_on_50_episodes():
    _, scores = _oracle_returns(range(50))
    assert scores.mean() >= 90.0


def test_oracle_keeps_its_own_state_with_obs_mode_last():
    env = omnigym.make("LMRL/Wordle-v0", obs_mode="last", hidden="fixed")
    oracle = WordleOracle(env)
    observation, info = env.reset(seed=2, options={"word": "badly"})
    done = False
    while not done:
        observation, _, done, _, info = env.step(oracle.act(observation, info))
    assert info["success"] and info["turn"] <= 5
