"""DipLLM-lite's tokens and text: the word-level tokenizer, the board text the model reads and
the choices a location may take.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025), which prompts its language model with a text view of the board; here
the text is the env's own text view and the tokens are its words (the map's locations, powers,
phase names, unit and order words and the few words of the view), since the model is trained
from scratch (:mod:`omnigym.llm_agents.dipllm`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from omnigym.envs.diplomacy.board import text_view

NONE = "<none>"
"""The "no order" choice (the env's index 0) of an adjustment-phase location."""
MAX_ORDER_WORDS = 7
"""Words of the longest order (``A PAR S A BUR - MUN``, ``F ENG C A LON - BRE``)."""

SPECIALS = ("<pad>", "<unk>", "<bos>", NONE, "<joint>", "@")
PAD, UNK, BOS, NONE_ID, JOINT, ASK = range(len(SPECIALS))
PUNCTUATION = (",", ";", ":", "(", ")", "\n")
TEXT_WORDS = (
    "phase",
    "units",
    "centres",
    "dislodged",
    "retreat",
    "to",
    "nowhere",
    "adjust",
    "you",
    "are",
    "orderable",
    "none",
)
ORDER_WORDS = ("A", "F", "-", "H", "S", "C", "B", "D", "R", "VIA", "WAIVE")
PHASE_KINDS = ("SM", "SR", "FM", "FR", "WA")
_WORD = re.compile(r"\n|[,;:()]|[^\s,;:()]+")
_NO_SPACE_BEFORE = frozenset({",", ";", ":", ")", "\n"})
_NO_SPACE_AFTER = frozenset({"(", "\n"})


class Tokenizer:
    """Word-level tokens over the board text of :func:`board_text` and over order strings.

    A word is a run of characters other than white space and ``, ; : ( )``; each of those
    punctuation marks and each newline is a token of its own. ``decode`` puts the spaces back as
    the env's text view writes them (none before ``, ; : )`` or around a newline, none after
    ``(``), so ``decode(encode(text)) == text`` for every board text and order string made of
    known words. Unknown words become ``<unk>``.
    """

    def __init__(self, vocabulary: Sequence[str]):
        self.vocabulary = list(vocabulary)
        if tuple(self.vocabulary[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with the special tokens {list(SPECIALS)}")
        self.ids = {word: i for i, word in enumerate(self.vocabulary)}
        if len(self.ids) != len(self.vocabulary):
            raise ValueError("the vocabulary repeats a word")

    @classmethod
    def for_map(cls, map_name: str, years: int = 101) -> Tokenizer:
        """The vocabulary of the engine's map ``map_name``: its locations (coasts included),
        powers, phase names of ``years`` years, adjustment counts and the order and text words."""
        import diplomacy  # the optional extra

        game_map = diplomacy.Map(map_name)
        locations = sorted({location.upper() for location in game_map.locs})
        counts = [f"{n:+d}" for n in range(-len(game_map.scs), len(game_map.scs) + 1) if n]
        first = game_map.first_year
        phases = [
            f"{kind[0]}{year}{kind[1]}"
            for year in range(first, first + years)
            for kind in PHASE_KINDS
        ]
        words = [
            *SPECIALS,
            *PUNCTUATION,
            *TEXT_WORDS,
            *ORDER_WORDS,
            *counts,
            *game_map.powers,
            *locations,
            *phases,
        ]
        return cls(list(dict.fromkeys(words)))

    def __len__(self) -> int:
        return len(self.vocabulary)

    def encode(self, text: str) -> list[int]:
        ids = self.ids
        return [ids.get(word, UNK) for word in _WORD.findall(text)]

    def decode(self, token_ids: Iterable[int]) -> str:
        parts: list[str] = []
        previous = "\n"
        for token in token_ids:
            word = self.vocabulary[int(token)]
            if parts and word not in _NO_SPACE_BEFORE and previous not in _NO_SPACE_AFTER:
                parts.append(" ")
            parts.append(word)
            previous = word
        return "".join(parts)

    def order_words(self, order: str) -> list[int]:
        """The token ids of an order's words (``<none>`` is one token)."""
        words = [NONE_ID] if order == NONE else self.encode(order)
        if len(words) > MAX_ORDER_WORDS:
            raise ValueError(f"order {order!r} has more than {MAX_ORDER_WORDS} words")
        return words

    def order_slots(self, orders: Sequence[str]) -> np.ndarray:
        """``(len(orders), MAX_ORDER_WORDS)`` word ids, padded with ``<pad>``."""
        slots = np.full((len(orders), MAX_ORDER_WORDS), PAD, dtype=np.int64)
        for row, order in enumerate(orders):
            words = self.order_words(order)
            slots[row, : len(words)] = words
        return slots


def board_view(state: Mapping[str, Any]) -> str:
    """The env's text view of a board state: phase, then every power's units, centres,
    retreats and adjustments."""
    return text_view(state, sorted(state["units"]))


def turn_text(view: str, power: str, locations: Sequence[str]) -> str:
    """What the model reads: the board view and whose turn it is, as the env's ``text``
    observation writes it."""
    return f"{view}\nyou are {power}; orderable: {', '.join(locations) or 'none'}"


def board_text(info: Mapping[str, Any]) -> str:
    """:func:`turn_text` of a power's ``info``."""
    return turn_text(board_view(info["state"]), info["power"], info["orderable_locations"])


def adjustment_count(info: Mapping[str, Any]) -> int:
    """Builds (> 0) or removals (< 0) the power of ``info`` is due; 0 outside adjustments."""
    if info["phase"][-1] != "A":
        return 0
    return int(info["state"]["builds"][info["power"]]["count"])


def choices(legal: Sequence[Any], adjust: int, adjusted: int, none: Any = NONE) -> list[Any]:
    """The orders a location may take, given ``adjusted`` builds or removals already ordered:
    its legal orders; in an adjustment phase also ``none`` first, and only ``none`` once the
    ``|adjust|`` due ones are ordered. (Orders are strings, or ids with ``none=0``.)"""
    if adjust == 0:
        return list(legal)
    if adjusted >= abs(adjust):
        return [none]
    return [none, *legal]
