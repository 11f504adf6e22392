"""The oracle of LMRL-Gym's Wordle (``LMRL/Wordle-v0``): an entropy-maximising player.

LMRL-Gym (Abdulhai et al., ICML 2025) scores Wordle against a strong scripted player. This one
keeps the answers consistent with the feedback it has read and guesses the word whose feedback
carries the most information, from the public word lists and feedback matrix of
:mod:`omnigym.envs.lmrl.wordle`. Its mean return is the normalized score's 100
(``docs/lmrl.md``).
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

import numpy as np

from omnigym.envs.lmrl.wordle import (
    CODE_COUNT,
    answer_rows,
    feedback_code,
    feedback_table,
    word_lists,
)


@cache
def _x_log_x(vocabulary: str) -> np.ndarray:
    counts = np.arange(len(word_lists(vocabulary)[0]) + 1, dtype=np.float64)
    return counts * np.log2(np.maximum(counts, 1.0))


def best_guess(consistent: np.ndarray, vocabulary: str = "standard") -> int:
    """The guess-list row that maximises the entropy of the feedback over ``consistent``.

    Ties go to a word that may itself be the answer, then to the first in the list; with one or
    two candidates left the oracle simply guesses the first of them.
    """
    rows = answer_rows(vocabulary)
    if len(consistent) <= 2:
        return int(rows[consistent[0]])
    codes = feedback_table(vocabulary)[:, consistent].astype(np.intp)
    codes += np.arange(codes.shape[0])[:, None] * CODE_COUNT
    counts = np.bincount(codes.ravel(), minlength=codes.shape[0] * CODE_COUNT)
    # H = log k - (1/k) sum c log c; maximising H is minimising sum c log c.
    spread = _x_log_x(vocabulary)[counts].reshape(-1, CODE_COUNT).sum(axis=1)
    spread[rows[consistent]] -= 1e-9
    return int(np.argmin(spread))


@lru_cache(maxsize=1024)
def _second_guess(vocabulary: str, consistent: bytes) -> int:
    """:func:`best_guess` after the opening guess: at most 243 consistent sets can follow it
    and they are the largest, so the oracle scores each once per process."""
    return best_guess(np.frombuffer(consistent, dtype=np.intp), vocabulary)


@cache
def _opening_guess(vocabulary: str) -> int:
    return best_guess(np.arange(len(word_lists(vocabulary)[0])), vocabulary)


class WordleOracle:
    """Entropy-maximising Wordle player: each guess maximises the information of its feedback.

    Keeps the answers consistent with its own guesses and the feedback lines it has read (from
    ``info["last_message"]``), and guesses with :func:`best_guess`. The opening guess is the same
    every game and computed once per process. Of ``env`` it reads only the word lists' name
    (``vocabulary``, default ``"standard"``): the lists are public data.
    """

    def __init__(self, env: Any = None) -> None:
        self.vocabulary = getattr(getattr(env, "unwrapped", None), "vocabulary", "standard")
        self._answers = len(word_lists(self.vocabulary)[0])
        self._table = feedback_table(self.vocabulary)
        self._consistent = np.arange(self._answers)
        self._last_guess = _opening_guess(self.vocabulary)

    def reset(self, seed: int | None = None) -> None:
        self._consistent = np.arange(self._answers)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self._consistent = np.arange(self._answers)
            self._last_guess = _opening_guess(self.vocabulary)
        else:
            code = feedback_code(info["last_message"])
            row = self._table[self._last_guess]
            self._consistent = self._consistent[row[self._consistent] == code]
            if info["turn"] == 1:
                key = self._consistent.astype(np.intp).tobytes()
                self._last_guess = _second_guess(self.vocabulary, key)
            else:
                self._last_guess = best_guess(self._consistent, self.vocabulary)
        return word_lists(self.vocabulary)[1][self._last_guess]
