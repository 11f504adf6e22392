"""LMRL-Gym's Wordle with a hidden word that stays consistent, and its dataset's behaviour.

Follows the Wordle task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232): six guesses
at a hidden 5-letter word, with per-letter ``g``/``y``/``b`` feedback, −1 per guess that does not
solve it. As in LMRL, by default the hidden word is re-drawn at every guess uniformly among the
answers still consistent with all feedback so far (``hidden="consistent"``), which is the same
distribution of games as one word drawn at reset; ``hidden="fixed"`` draws it once.

Departures: the word lists are derived from SCOWL (Debian's word-list packages) by
``wordlists.py`` instead of the official Wordle lists: by default 2,129 common answers and 11,406
valid guesses (``vocabulary="small"``: the task's first lists, 400 answers and 4,667 guesses);
six guesses used up is ``terminated`` (the game is lost), not ``truncated``.

Feedback for every (guess, answer) pair is precomputed once per process and vocabulary as a code
matrix (about a second for the default lists), so a step is a row look-up and a NumPy filter of
the consistent answers. The entropy-maximising oracle reads the same matrix
(:mod:`omnigym.agents.lmrl.wordle`).
"""

from __future__ import annotations

from functools import cache
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
from omnigym.envs.lmrl.wordlists import list_files

WORD_LENGTH = 5
MAX_GUESSES = 6
FEEDBACK_LETTERS = "byg"
"""Per-letter feedback, as a base-3 digit: absent, elsewhere in the word, right place."""
CODE_COUNT = 3**WORD_LENGTH
SOLVED = CODE_COUNT - 1
HIDDEN_RULES = ("consistent", "fixed")
VOCABULARIES = ("standard", "small")
"""The word lists of ``wordlists.py``: 2,129 answers and 11,406 guesses, or 400 and 4,667."""
_TABLE_ROWS = 512
"""Guesses per block of :func:`feedback_table` (bounds its temporary arrays to a few MB)."""


def word_lists(vocabulary: str = "standard") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(answers, guesses)``: the committed lists of ``vocabulary``; every answer is a guess."""
    return _word_lists(require_choice("vocabulary", vocabulary, VOCABULARIES))


# The functions of a vocabulary are cached under its name given positionally, so that the
# default and an explicit "standard" share one copy (``functools.cache`` keys on how a function
# is called).
@cache
def _word_lists(vocabulary: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    answers, guesses = (
        tuple(path.read_text(encoding="ascii").split()) for path in list_files(vocabulary)
    )
    return answers, guesses


def guess_index(vocabulary: str = "standard") -> dict[str, int]:
    """Row of each guess-list word in :func:`feedback_table`."""
    return _guess_index(vocabulary)


@cache
def _guess_index(vocabulary: str) -> dict[str, int]:
    return {word: row for row, word in enumerate(word_lists(vocabulary)[1])}


def _letters(words: tuple[str, ...]) -> np.ndarray:
    return np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8).reshape(-1, WORD_LENGTH)


def feedback_table(vocabulary: str = "standard") -> np.ndarray:
    """``uint8[guesses, answers]``: the feedback code of each guess against each answer.

    The code of a feedback is the base-3 number whose digit ``i`` is the feedback of letter
    ``i`` (``FEEDBACK_LETTERS``). Duplicate letters score as in Wordle: greens first, then a
    letter is yellow while the answer's copies of it outside the greens outnumber the copies
    already marked yellow to its left. Computed in blocks of guesses.
    """
    return _feedback_table(vocabulary)


@cache
def _feedback_table(vocabulary: str) -> np.ndarray:
    answers, guesses = word_lists(vocabulary)
    a = _letters(answers)[None, :, :]
    letters = _letters(guesses)
    table = np.empty((len(guesses), len(answers)), dtype=np.uint8)
    for start in range(0, len(guesses), _TABLE_ROWS):
        g = letters[start : start + _TABLE_ROWS, None, :]
        green = g == a
        code = np.zeros(green.shape[:2], dtype=np.uint8)
        for i in range(WORD_LENGTH):
            spare = np.zeros(green.shape[:2], dtype=np.int8)
            for k in range(WORD_LENGTH):
                spare += (a[:, :, k] == g[:, :, i]) & ~green[:, :, k]
            marked = np.zeros(green.shape[:2], dtype=np.int8)
            for j in range(i):
                marked += (g[:, :, j] == g[:, :, i]) & ~green[:, :, j]
            yellow = ~green[:, :, i] & (spare > marked)
            code += (2 * green[:, :, i] + yellow).astype(np.uint8) * np.uint8(3**i)
        table[start : start + _TABLE_ROWS] = code
    return table


def answer_rows(vocabulary: str = "standard") -> np.ndarray:
    """The guess-list row of each answer."""
    return _answer_rows(vocabulary)


@cache
def _answer_rows(vocabulary: str) -> np.ndarray:
    index = guess_index(vocabulary)
    return np.array([index[word] for word in word_lists(vocabulary)[0]])


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
    it is in the guess list (``data/wordle_guesses.txt``, 11,406 words; ``vocabulary="small"``:
    ``data/wordle_guesses_small.txt``, 4,667). An invalid guess uses a turn, costs −1, gets an
    empty feedback line and sets ``info["invalid_action"]``. A non-``str`` action raises
    ``ValueError``. With ``list_guesses=True`` every ``info`` carries the guess list as
    ``info["legal_actions"]`` (one shared tuple), so that an agent can decode over real words.

    ## Observation Space
    ``Text(max_length=2048)``: the transcript ``Wordle:`` then, per guess, the guess with its
    letters spaced (``c r a n e``) and the feedback line (``b b y g b``), one per line
    (``obs_mode="transcript"``), or only the latest feedback line (``obs_mode="last"``).

    ## Rewards
    −1 for every guess that does not solve the word, 0 for the solving one: returns in [−6, 0].
    The final step's ``normalized_score`` uses the default vocabulary's constants whatever the
    ``vocabulary`` (``docs/lmrl.md``).

    ## Starting State
    All answers possible (``data/wordle_answers.txt``: the 2,129 common 5-letter words of
    SCOWL's size-35 list that do not look inflected; ``vocabulary="small"``: 400 of them);
    ``options={"word": w}`` pins the hidden word to the answer ``w`` for the episode, in either
    ``hidden`` mode.

    ## Episode End
    Terminated when the word is guessed (``info["success"] = True``) or after six guesses.

    ## Arguments
    ``hidden`` (``"consistent"`` or ``"fixed"``), ``vocabulary`` (``"standard"`` or
    ``"small"``), ``list_guesses`` (``bool``), ``obs_mode`` (``"transcript"`` or ``"last"``),
    ``render_mode`` (``None`` or ``"ansi"``).
    """

    observation_max_length = 2048
    score_id = "LMRL/Wordle-v0"
    min_return = -6.0
    evaluation_episodes = 2000
    """Oracle episodes (reset seeds 0..1999) behind the normalized 100; LMRL gives no count."""

    def __init__(
        self,
        hidden: str = "consistent",
        vocabulary: str = "standard",
        list_guesses: bool = False,
        obs_mode: str = "transcript",
        render_mode: str | None = None,
    ) -> None:
        self.hidden = require_choice("hidden", hidden, HIDDEN_RULES)
        self.vocabulary = require_choice("vocabulary", vocabulary, VOCABULARIES)
        if not isinstance(list_guesses, bool):
            raise ValueError(f"list_guesses must be a bool, got {list_guesses!r}")
        self.list_guesses = list_guesses
        super().__init__(obs_mode=obs_mode, render_mode=render_mode)
        self.answers, self.guesses = word_lists(vocabulary)
        self._index = guess_index(vocabulary)
        self._table = feedback_table(vocabulary)
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
                raise ValueError(
                    f"options['word'] must be a word of the {self.vocabulary!r} answer list "
                    f"(the vocabulary kwarg), got {word!r}"
                )
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

    def _legal_actions(self) -> tuple[str, ...] | None:
        return self.guesses if self.list_guesses else None

    def _metrics(self) -> dict[str, float]:
        return {"candidates_left": float(len(self._consistent))}


class WordleBehaviour(ScriptedBehaviour):
    """Random guess-list words mixed with random consistent answers.

    Each guess is, with probability ``random_probability``, a uniformly random word of the guess
    list, else a uniformly random answer consistent with the feedback so far (read from
    ``info["last_message"]``, as a player would), from the env's vocabulary. LMRL mixes 66 %
    random words; with the 2,129-answer list that succeeds in 55 % of episodes, so the default
    is 53 %, which succeeds in 71 % (LMRL's dataset: 70 %; with ``vocabulary="small"`` the
    same mixture succeeds more often).
    """

    policy = "wordle_random_or_consistent"
    default_episodes = 20000
    lmrl_success = 0.70

    def __init__(self, env: Any, random_probability: float = 0.53) -> None:
        super().__init__(env)
        self.random_probability = require_finite_number("random_probability", random_probability)
        vocabulary = getattr(env.unwrapped, "vocabulary", "standard")
        self._guesses = word_lists(vocabulary)[1]
        self._table = feedback_table(vocabulary)
        self._answer_rows = answer_rows(vocabulary)
        self._answers = len(self._answer_rows)
        self._consistent = np.arange(self._answers)
        self._last_row = 0

    def parameters(self) -> dict[str, Any]:
        return {"policy": self.policy, "random_probability": self.random_probability}

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self._consistent = np.arange(self._answers)
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
