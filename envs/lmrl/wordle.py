"""LMRL-Gym's Wordle with a hidden word that stays consistent, and its dataset's behaviour.

Follows the Wordle task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232): six guesses
at a hidden 5-letter word, with per-letter ``g``/``y``/``b`` feedback, −1 per guess that does not
solve it. As in LMRL, by default the hidden word is re-drawn at every guess uniformly among the
answers still consistent with all feedback so far (``hidden="consistent"``), which is the same
distribution of games as one word drawn at reset; ``hidden="fixed"`` draws it once.

Departures: the word lists are derived from SCOWL (Debian ``wamerican``) by
``wordlists.py`` (400 answers, 4,667 guesses) instead of the official Wordle lists;
six guesses used up is ``terminated`` (the game is lost), not ``truncated``.

Feedback for every (guess, answer) pair is precomputed once per process as a code matrix, so a
step is a row look-up and a NumPy filter of the consistent answers. The entropy-maximising oracle
reads the same matrix (:mod:`omnigym.agents.lmrl.wordle`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from omnigym.envs.lmrl.text_task import (
    ACTION_MAX_LENGTH,
    ScriptedBehaviour,
    TextTaskEnv,
    Turn,
    require_choice,
    require_finite_number,
)

DATA = Path(__file__).parent / "data"
WORD_LENGTH = 5
MAX_GUESSES = 6
FEEDBACK_LETTERS = "byg"
"""Per-letter feedback, as a base-3 digit: absent, elsewhere in the word, right place."""
CODE_COUNT = 3**WORD_LENGTH
SOLVED = CODE_COUNT - 1
HIDDEN_RULES = ("consistent", "fixed")


@cache
def word_lists() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(answers, guesses)``: the committed lists; every answer is also a guess."""
    answers = tuple((DATA / "wordle_answers.txt").read_text(encoding="ascii").split())
    guesses = tuple((DATA / "wordle_guesses.txt").read_text(encoding="ascii").split())
    return answers, guesses


@cache
def guess_index() -> dict[str, int]:
    """Row of each guess-list word in :func:`feedback_table`."""
    return {word: row for row, word in enumerate(word_lists()[1])}


def _letters(words: tuple[str, ...]) -> np.ndarray:
    return np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8).reshape(-1, WORD_LENGTH)


@cache
def feedback_table() -> np.ndarray:
    """``uint8[guesses, answers]``: the feedback code of each guess against each answer.

    The code of a feedback is the base-3 number whose digit ``i`` is the feedback of letter
    ``i`` (``FEEDBACK_LETTERS``). Duplicate letters score as in Wordle: greens first, then a
    letter is yellow while the answer's copies of it outside the greens outnumber the copies
    already marked yellow to its left.
    """
    answers, guesses = word_lists()
    g = _letters(guesses)[:, None, :]
    a = _letters(answers)[None, :, :]
    green = g == a
    code = np.zeros(green.shape[:2], dtype=np.int16)
    for i in range(WORD_LENGTH):
        spare = sum((a[:, :, k] == g[:, :, i]) & ~green[:, :, k] for k in range(WORD_LENGTH))
        marked = sum((g[:, :, j] == g[:, :, i]) & ~green[:, :, j] for j in range(i))
        yellow = ~green[:, :, i] & (spare > marked)
        code += (2 * green[:, :, i] + yellow) * 3**i
    return code.astype(np.uint8)


@cache
def answer_rows() -> np.ndarray:
    """The guess-list row of each answer."""
    index = guess_index()
    return np.array([index[word] for word in word_lists()[0]])


FEEDBACK_TEXT = tuple(
    " ".join(FEEDBACK_LETTERS[code // 3**i % 3] for i in range(WORD_LENGTH))
    for code in range(CODE_COUNT)
)
"""The transcript line of each feedback code, e.g. ``"g b y b b"``."""
_FEEDBACK_CODE = {text: code for code, text in enumerate(FEEDBACK_TEXT)}


def feedback_code(text: str) -> int:
    """The code of a feedback line such as ``"g b y b b"``."""
    return _FEEDBACK_CODE[text]


class WordleEnv(TextTaskEnv):
    """Guess a hidden 5-letter word in six tries from per-letter feedback.

    ## Description
    LMRL-Gym's Wordle (Abdulhai et al., ICML 2025). After each guess every letter is marked
    ``g`` (right place), ``y`` (in the word elsewhere) or ``b`` (not in the word; a letter
    guessed more often than the word holds it is ``b`` for the extra copies). With
    ``hidden="consistent"`` the hidden word is drawn at each guess uniformly among the answers
    consistent with all feedback so far (LMRL's rule); with ``hidden="fixed"`` once at reset.

    ## Action Space
    ``Text(max_length=256)``, printable. A guess is matched after lower-casing and removing
    whitespace (so the transcript's spaced form ``c r a n e`` is accepted too); it is valid if
    it is in the 4,667-word guess list (``data/wordle_guesses.txt``). An invalid guess uses a
    turn, costs −1, gets an empty feedback line and sets ``info["invalid_action"]``. A
    non-``str`` action raises ``ValueError``.

    ## Observation Space
    ``Text(max_length=2048)``: the transcript ``Wordle:`` then, per guess, the guess with its
    letters spaced (``c r a n e``) and the feedback line (``b b y g b``), one per line
    (``obs_mode="transcript"``), or only the latest feedback line (``obs_mode="last"``).

    ## Rewards
    −1 for every guess that does not solve the word, 0 for the solving one: returns in [−6, 0].

    ## Starting State
    All 400 answers (``data/wordle_answers.txt``) possible; ``options={"word": w}`` pins the
    hidden word to the answer ``w`` for the episode, in either ``hidden`` mode.

    ## Episode End
    Terminated when the word is guessed (``info["success"] = True``) or after six guesses.

    ## Arguments
    ``hidden`` (``"consistent"`` or ``"fixed"``), ``obs_mode`` (``"transcript"`` or
    ``"last"``), ``render_mode`` (``None`` or ``"ansi"``).
    """

    observation_max_length = 2048
    score_id = "LMRL/Wordle-v0"
    min_return = -6.0
    evaluation_episodes = 2000
    """Oracle episodes (reset seeds 0..1999) behind the normalized 100; LMRL gives no count."""

    def __init__(
        self,
        hidden: str = "consistent",
        obs_mode: str = "transcript",
        render_mode: str | None = None,
    ) -> None:
        self.hidden = require_choice("hidden", hidden, HIDDEN_RULES)
        super().__init__(obs_mode=obs_mode, render_mode=render_mode)
        self.answers, self.guesses = word_lists()
        self._index = guess_index()
        self._table = feedback_table()
        self._answer_number = {word: column for column, word in enumerate(self.answers)}
        self._consistent = np.arange(len(self.answers))
        self._target: int | None = None
        self._guesses_made = 0

    def _begin(self, options: dict[str, Any]) -> str:
        self._consistent = np.arange(len(self.answers))
        self._guesses_made = 0
        if "word" in options:
            word = options["word"]
            if word not in self._answer_number:
                raise ValueError(f"options['word'] must be a word of the answer list, got {word!r}")
            self._target = self._answer_number[word]
        elif self.hidden == "fixed":
            self._target = int(self.np_random.integers(len(self.answers)))
        else:
            self._target = None
        return "Wordle:"

    def _play(self, action: str) -> Turn:
        self._guesses_made += 1
        out_of_guesses = self._guesses_made >= MAX_GUESSES
        row = self._index.get("".join(action.lower().split()))
        if row is None:
            return Turn(message="", reward=-1.0, terminated=out_of_guesses, invalid=True)
        if self._target is None:
            target = self._consistent[self.np_random.integers(len(self._consistent))]
        else:
            target = self._target
        code = self._table[row, target]
        self._consistent = self._consistent[self._table[row, self._consistent] == code]
        solved = code == SOLVED
        return Turn(
            message=FEEDBACK_TEXT[code],
            reward=0.0 if solved else -1.0,
            terminated=solved or out_of_guesses,
            success=bool(solved),
        )

    def _render_action(self, line: str) -> str:
        return " ".join("".join(line.lower().split()))[:ACTION_MAX_LENGTH]

    def _metrics(self) -> dict[str, float]:
        return {"candidates_left": float(len(self._consistent))}


class WordleBehaviour(ScriptedBehaviour):
    """Random guess-list words mixed with random consistent answers.

    Each guess is, with probability ``random_probability``, a uniformly random word of the guess
    list, else a uniformly random answer consistent with the feedback so far (read from
    ``info["last_message"]``, as a player would).
    """

    policy = "wordle_random_or_consistent"
    default_episodes = 20000
    lmrl_success = 0.70

    def __init__(self, env: Any, random_probability: float = 0.66) -> None:
        super().__init__(env)
        self.random_probability = require_finite_number("random_probability", random_probability)
        self._guesses = word_lists()[1]
        self._table = feedback_table()
        self._answer_rows = answer_rows()
        self._consistent = np.arange(len(word_lists()[0]))
        self._last_row = 0

    def parameters(self) -> dict[str, Any]:
        return {"policy": self.policy, "random_probability": self.random_probability}

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self._consistent = np.arange(len(word_lists()[0]))
        else:
            code = feedback_code(info["last_message"])
            self._consistent = self._consistent[
                self._table[self._last_row, self._consistent] == code
            ]
        if self.rng.random() < self.random_probability:
            self._last_row = int(self.rng.integers(len(self._guesses)))
        else:
            pick = self._consistent[int(self.rng.integers(len(self._consistent)))]
            self._last_row = int(self._answer_rows[pick])
        return self._guesses[self._last_row]
