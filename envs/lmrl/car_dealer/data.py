"""Car Dealer's data: ``data/car_dealer.yaml`` parsed and checked, its keywords indexed, and the
text helpers that read and write the conversation (amounts, keywords, readable utterances).

Follows the Car Dealer task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232). Every
number, name and phrase of the task lives in the data file (the brands, the brand x type MSRP
table and the phrasings are ours; LMRL-Gym's come from its GPT-3.5 prompts).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from omnigym.envs.lmrl.text_task import ACTION_MAX_LENGTH

DATA_PATH = Path(__file__).parent.parent / "data" / "car_dealer.yaml"
STYLES = ("discount-giver", "feature-talker", "concise")
OBSERVATION_MAX_LENGTH = 32768
START = "Start"
SELLER = "Seller: "
BUYER = "Buyer: "
LISTEN = ("discount", "asks_features", "asks_budget")
"""Keyword categories of ``listen`` in the data file."""
SELLER_READS = ("budget", "too_expensive", "way_too_expensive")
"""Buyer line kinds the scripted sellers recognise (besides cues, prices, brands, features)."""
BUYER_LINE_ORDER = (
    "want",
    "unreadable",
    "wrong_brand",
    "features",
    "budget",
    "budget_refusal",
    "way_too_expensive",
    "too_expensive",
    "ask_discount",
    "ask_feature",
    "ask_price",
    "accept",
    "walk_away",
)
"""Every kind of buyer line, in the order they appear within a reply."""

_READABLE = re.compile(r"[ -~\n]*")
_LETTER_OR_DIGIT = re.compile(r"[A-Za-z0-9]")
_WORD = re.compile(r"[a-z0-9]+")


def _alternation(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


def words(text: str) -> list[str]:
    """``text`` as the keyword matcher reads it: its lower-case runs of letters and digits."""
    return _WORD.findall(text.lower())


class KeywordIndex:
    """Whole-word phrase look-up: which ``(category, name)`` keywords a text mentions.

    A dictionary from each phrase's first word keeps a look-up to one pass over the text's
    words (regular-expression alternations over the same phrases are several times slower).
    """

    def __init__(self, entries: Iterable[tuple[str, str, str]]) -> None:
        self._by_first_word: dict[str, list[tuple[list[str], str, str]]] = {}
        for category, name, phrase in entries:
            phrase_words = words(phrase)
            if not phrase_words:
                raise ValueError(f"{DATA_PATH.name}: keyword {phrase!r} of {name!r} has no word")
            self._by_first_word.setdefault(phrase_words[0], []).append(
                (phrase_words, category, name)
            )

    def find(self, text: str) -> dict[str, list[str]]:
        """``{category: [name, ...]}`` of every keyword in ``text``, in order of mention."""
        found: dict[str, list[str]] = {}
        text_words = words(text)
        first_words = self._by_first_word
        for index in [i for i, word in enumerate(text_words) if word in first_words]:
            for phrase, category, name in first_words[text_words[index]]:
                if len(phrase) == 1 or text_words[index : index + len(phrase)] == phrase:
                    found.setdefault(category, []).append(name)
        return found


def spoken_list(items: list[str]) -> str:
    """``a, b and c``: how the buyer and the sellers list features."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def money(amount: float) -> str:
    """``amount`` as the buyer and the scripted sellers write it: ``$50,000``."""
    return f"${amount:,.0f}"


def readable(text: str) -> bool:
    """Whether a seller (or duo buyer) utterance can be read at all: at most 256 printable
    characters with a letter or digit (the package docstring)."""
    return (
        len(text) <= ACTION_MAX_LENGTH
        and _READABLE.fullmatch(text) is not None
        and _LETTER_OR_DIGIT.search(text) is not None
    )


@dataclass(frozen=True)
class Strategy:
    """A buyer's bargaining strategy (``strategies`` in the data file)."""

    name: str
    condition: str
    patience: int
    cue: str
    understated_by: float = 0.0
    features_needed: int = 0
    deal_within: int = 0
    max_words: int = 0


@dataclass(frozen=True)
class Personality:
    """A buyer's phrasing and openness (``personalities`` in the data file)."""

    name: str
    prefixes: tuple[str, ...]
    shares_budget: bool
    features_told: str
    volunteers_features: bool
    lines: Mapping[str, str]


class CarDealerData:
    """``data/car_dealer.yaml``, checked, with its keywords indexed and patterns compiled."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.history_cap = int(raw["history_cap"])
        self.slack = float(raw["slack"])
        self.full_satisfaction = int(raw["full_satisfaction"])
        self.way_over_ratio = float(raw["way_over_ratio"])
        self.patience_cost = {key: int(value) for key, value in raw["patience_cost"].items()}
        self.patience_restored_per_discount = int(raw["patience_restored_per_discount"])
        self.budgets = tuple(float(budget) for budget in raw["budgets"])
        self.feature_count = tuple(int(count) for count in raw["feature_count"])
        self.strategies = {
            name: Strategy(name=name, **spec) for name, spec in raw["strategies"].items()
        }
        self.brands = tuple(raw["brands"])
        self.types = tuple(raw["types"])
        self.type_names = {name: spec["name"] for name, spec in raw["types"].items()}
        self.msrp = {
            (brand, car_type): float(price)
            for brand, prices in raw["msrp"].items()
            for car_type, price in zip(self.types, prices, strict=True)
        }
        self.features = tuple(raw["features"])
        self.feature_names = {name: spec["name"] for name, spec in raw["features"].items()}
        self.lines = dict(raw["lines"])
        self.personalities = {
            name: Personality(
                name=name,
                prefixes=tuple(spec["prefixes"]),
                shares_budget=bool(spec["shares_budget"]),
                features_told=spec["features_told"],
                volunteers_features=bool(spec["volunteers_features"]),
                lines={**self.lines, **spec.get("lines", {})},
            )
            for name, spec in raw["personalities"].items()
        }
        self.personality_names = tuple(self.personalities)
        self.strategy_names = tuple(self.strategies)
        self.seller_styles = {style: dict(raw["seller_styles"][style]) for style in STYLES}
        self.features_per_offer = int(raw["features_per_offer"])
        self.median_msrp = float(np.median(list(self.msrp.values())))

        listen = raw["listen"]
        self.price_pattern = re.compile(listen["price"], re.IGNORECASE)
        self.min_offer = float(listen["min_offer"])
        self.reject_pattern = _alternation(raw["decision"]["reject"])
        self.accept_pattern = _alternation(raw["decision"]["accept"])
        self.keywords = KeywordIndex(
            [
                *(
                    (category, category, phrase)
                    for category in LISTEN
                    for phrase in listen[category]
                ),
                *(
                    ("brand", brand, phrase)
                    for brand, phrases in raw["brands"].items()
                    for phrase in phrases
                ),
                *(
                    (category, name, phrase)
                    for category, table in (("type", raw["types"]), ("feature", raw["features"]))
                    for name, spec in table.items()
                    for phrase in spec["keywords"]
                ),
            ]
        )
        # A scripted seller recognises a buyer line by its wording up to the first placeholder,
        # in any personality's variant.
        self.buyer_line_leads = {
            kind: tuple({p.lines[kind].split("{")[0] for p in self.personalities.values()})
            for kind in SELLER_READS
        }
        self.buyer_line_leads.update(
            {f"cue {name}": (strategy.cue,) for name, strategy in self.strategies.items()}
        )
        self._check()

    def _check(self) -> None:
        if set(self.msrp) != {
            (brand, car_type) for brand in self.brands for car_type in self.types
        }:
            raise ValueError(f"{DATA_PATH.name}: msrp must give every brand x type price")
        conditions = {"discount", "features", "quick"}
        for strategy in self.strategies.values():
            if strategy.condition not in conditions:
                raise ValueError(f"{DATA_PATH.name}: unknown condition {strategy.condition!r}")
        for personality in self.personalities.values():
            if personality.features_told not in ("all", "one"):
                raise ValueError(f"{DATA_PATH.name}: features_told of {personality.name}")
            if set(personality.lines) != set(BUYER_LINE_ORDER):
                raise ValueError(
                    f"{DATA_PATH.name}: the lines of {personality.name} must be "
                    f"{', '.join(BUYER_LINE_ORDER)}"
                )
        # The longest conversation: every seller line 256 characters, every reply the longest.
        exchange = len(SELLER) + ACTION_MAX_LENGTH + len(BUYER) + self.longest_buyer_reply() + 2
        if len(START) + (self.history_cap + 1) // 2 * exchange > OBSERVATION_MAX_LENGTH:
            raise ValueError(
                f"{DATA_PATH.name}: the longest conversation would not fit in "
                f"{OBSERVATION_MAX_LENGTH} characters"
            )
        for kind, leads in self.buyer_line_leads.items():
            if not all(leads):
                raise ValueError(f"{DATA_PATH.name}: every {kind} line must start with words")

    # -- reading text --

    def amounts(self, text: str) -> list[float]:
        """The finite dollar amounts in ``text``, in order (``$30,000``, ``$30k``)."""
        values = []
        for match in self.price_pattern.finditer(text):
            value = float(match.group(1).replace(",", ""))
            if match.group(2):
                value *= 1000.0
            if math.isfinite(value):
                values.append(value)
        return values

    def buyer_line_kinds(self, text: str) -> set[str]:
        """Which :data:`SELLER_READS` lines and strategy cues a buyer's reply contains."""
        return {
            kind
            for kind, leads in self.buyer_line_leads.items()
            if any(lead in text for lead in leads)
        }

    def decision_in(self, text: str) -> bool | None:
        """A duo buyer's utterance as a decision: ``False`` reject, ``True`` accept, or None."""
        if self.reject_pattern.search(text):
            return False
        if self.accept_pattern.search(text):
            return True
        return None

    # -- numbers --

    def ceiling(self, budget: float, satisfaction: int) -> float:
        """The highest price a buyer with ``budget`` and ``satisfaction`` accepts."""
        share = min(1.0, max(0, satisfaction) / self.full_satisfaction)
        return budget * (1.0 + self.slack * share)

    def stated_budget(self, budget: float, strategy: str) -> float:
        """What a buyer with ``budget`` and ``strategy`` says its budget is."""
        understated = budget * (1.0 - self.strategies[strategy].understated_by)
        return math.floor(understated / 1000.0) * 1000.0

    def car_name(self, brand: str, car_type: str) -> str:
        return f"{brand} {self.type_names[car_type]}"

    def longest_buyer_reply(self) -> int:
        """An upper bound on the length of one scripted buyer reply (every line kind at once,
        each in its longest personality's wording with the longest values filled in)."""
        longest = {
            "brand": max(map(len, self.brands)),
            "car": max(map(len, self.type_names.values())),
            "feature": max(map(len, self.feature_names.values())),
            "features": len(spoken_list(list(self.feature_names.values()))),
            "amount": len(money(max(self.budgets))),
        }
        total = max(len(prefix) for p in self.personalities.values() for prefix in p.prefixes)
        total += max(len(strategy.cue) for strategy in self.strategies.values()) + 1
        for kind in BUYER_LINE_ORDER:
            template = max((p.lines[kind] for p in self.personalities.values()), key=len)
            fills = sum(longest[name] for name in re.findall(r"\{([a-z]+)\}", template))
            total += len(template) + fills + 1
        return total


@cache
def load_data(path: Path = DATA_PATH) -> CarDealerData:
    """The Car Dealer data file, parsed once per process."""
    return CarDealerData(yaml.safe_load(Path(path).read_text(encoding="utf-8")))


# -- the buyer's profile ----------------------------------------------------------------------
