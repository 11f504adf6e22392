"""LMRL-Gym's Car Dealer: sell a car to a scripted buyer, alone or against a buyer agent.

Follows the Car Dealer task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232): the
agent is a car seller talking with a buyer who has a personality, a wanted brand and type,
wanted features, a budget and a bargaining strategy; the episode ends when the buyer decides,
and a sale is rewarded by its price. ``LMRL/CarDealer-v0`` is the single-agent form (the buyer
is scripted); ``LMRL/CarDealerDuo-v0`` lets an agent play the buyer too (PettingZoo). Every
number, name and phrase lives in ``data/car_dealer.yaml``; this module holds only the rules
that read it.

Departures from LMRL-Gym:

- The buyer is the rule-based state machine of spec ``lmrl.md`` §3.8, not a language model
  fine-tuned on GPT-3.5 dialogues. It reads the seller's utterance with keyword patterns: dollar
  amounts (the offer is the last one of at least $1,000), discount words, feature names and
  brand names. It keeps a satisfaction and a patience counter, and accepts the standing offer
  when its price is at most ``budget * (1 + slack * s)`` (``s`` grows with satisfaction up to
  1, so never above ``budget * (1 + slack)``), its strategy's condition holds (a discount
  given, enough wanted features mentioned, or a deal within a few turns) and it has not
  walked away. It walks away when its patience runs out, and at the latest on its reply that
  makes the 50th line of the conversation. Keyword matching is the rule: a negation ("no
  sunroof") counts as a mention.
- The seller speaks first: the observation at reset is ``Start``. The buyer's first reply
  names the car it wants and shows its strategy; it answers questions about its features and
  its budget (a discount-seeker understates its budget; some personalities refuse to say).
- An unreadable seller utterance (empty, longer than 256 characters, characters outside the
  printable charset, or no letter or digit at all) is flagged with ``info["invalid_action"]``
  and penalised as the buyer would: it costs the buyer one more patience point and one
  satisfaction point, and is otherwise ignored. Rewards come only with the decision, so the
  penalty is a smaller chance of a sale, and the analytic minimum return stays 0.
- Rewards (spec §3.8): ``reward_mode="ratio"`` (default; LMRL's code) pays price / ((budget +
  MSRP) / 2) for a sale and 0 otherwise; ``"code"`` adds LMRL's code's −(budget − MSRP) / MSRP
  for no sale; ``"revenue"`` pays price / 1000 (the paper's "sale price"). The final step's
  ``normalized_score`` always scores the decision's ratio reward, the one LMRL normalizes.
- ``terminated`` means the buyer decided; a rejection forced by the 50-line cap is
  ``truncated``.
- The profile's values (13 brands, the brand x type MSRP table, the phrasings) are ours;
  LMRL-Gym's come from its GPT-3.5 prompts.
- Normalized score: spec §6 gives only LMRL's minimum (0). Our ``avg`` is the mean return of
  the behaviour dataset and ``max`` the oracle's, as for the other tasks. The dataset matches
  LMRL's success rate (0.53) but not its mean return (0.562): our buyer never pays more than
  10 % over its budget and the dataset's sellers open near the list price, so a sale's ratio is
  usually below 1 (mean return about 0.40).
- ``LMRL/CarDealerDuo-v0`` (ours; LMRL's buyer is always a simulator): the buyer decides in its
  own words, read with the ``decision`` patterns of the data file.

Agents. :class:`CarDealerBehaviour` (the dataset policy) mixes three scripted seller styles,
discount-giver, feature-talker and concise, that open near the list price and cut it a little
every turn. :class:`CarDealerOracle` plays the same three styles, choosing each turn the one
that suits the strategy the buyer has shown, and prices from what the buyer has said: it asks
for the budget, undoes the discount-seeker's understatement and narrows the possible budgets
after every reaction. It reads only ``info["last_message"]``, its own past utterances and the
public data file, never the hidden profile.

The buyer's rules are written by hand because they are the task itself; no library models a
car buyer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv

from omnigym.envs.lmrl.normalization import normalize
from omnigym.envs.lmrl.text_task import (
    ACTION_MAX_LENGTH,
    ScriptedBehaviour,
    TextTaskEnv,
    Turn,
    require_choice,
    require_finite_number,
    transcript_line,
)
from omnigym.spaces import require_text_action, text_space

DATA_PATH = Path(__file__).parent / "data" / "car_dealer.yaml"
REWARD_MODES = ("ratio", "code", "revenue")
STYLES = ("discount-giver", "feature-talker", "concise")
OBSERVATION_MAX_LENGTH = 32768
START = "Start"
SELLER = "Seller: "
BUYER = "Buyer: "
PROFILE_KEYS = ("personality", "brand", "type", "features", "budget", "strategy")
LISTEN = ("discount", "asks_features", "asks_budget")
"""Keyword categories of ``listen`` in the data file."""
SELLER_READS = ("budget", "too_expensive", "way_too_expensive")
"""Buyer line kinds the scripted sellers recognise (besides cues, prices, brands, features)."""
STYLE_FOR_STRATEGY = {
    "discount-seeker": "discount-giver",
    "feature-seeker": "feature-talker",
    "impatient": "concise",
}
STRATEGY_ASKS = {"discount": "ask_discount", "features": "ask_feature"}
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


def _spoken_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def money(amount: float) -> str:
    """``amount`` as the buyer and the scripted sellers write it: ``$50,000``."""
    return f"${amount:,.0f}"


def readable(text: str) -> bool:
    """Whether a seller (or duo buyer) utterance can be read at all (see the module docstring)."""
    return (
        len(text) <= ACTION_MAX_LENGTH
        and _READABLE.fullmatch(text) is not None
        and _LETTER_OR_DIGIT.search(text) is not None
    )


# -- the data ---------------------------------------------------------------------------------


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
            "features": len(_spoken_list(list(self.feature_names.values()))),
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


@dataclass(frozen=True)
class BuyerProfile:
    """Who the buyer is: drawn at reset, hidden from the seller."""

    personality: str
    brand: str
    car_type: str
    features: tuple[str, ...]
    budget: float
    strategy: str

    @classmethod
    def sample(cls, rng: np.random.Generator, data: CarDealerData) -> BuyerProfile:
        """A profile drawn uniformly field by field (1-4 features, without repeats)."""
        # One draw for everything: six uniform fields, then a random order of the features.
        draws = rng.random(6 + len(data.features))
        pick = draws[:6].tolist()
        low, high = data.feature_count
        count = low + int(pick[0] * (high - low + 1))
        chosen = sorted(np.argsort(draws[6:])[:count].tolist())
        return cls(
            personality=data.personality_names[int(pick[1] * len(data.personality_names))],
            brand=data.brands[int(pick[2] * len(data.brands))],
            car_type=data.types[int(pick[3] * len(data.types))],
            features=tuple(data.features[index] for index in chosen),
            budget=data.budgets[int(pick[4] * len(data.budgets))],
            strategy=data.strategy_names[int(pick[5] * len(data.strategy_names))],
        )

    def pinned(self, option: Any, data: CarDealerData) -> BuyerProfile:
        """This profile with the fields given in ``options["buyer"]`` replaced, validated."""
        if not isinstance(option, Mapping):
            raise ValueError(f"options['buyer'] must be a dict, got {option!r}")
        unknown = set(option) - set(PROFILE_KEYS)
        if unknown:
            raise ValueError(
                f"options['buyer'] has unknown keys {sorted(unknown)}; known: {PROFILE_KEYS}"
            )
        choices = {
            "personality": tuple(data.personalities),
            "brand": data.brands,
            "type": data.types,
            "strategy": tuple(data.strategies),
        }
        for key, allowed in choices.items():
            if key in option and option[key] not in allowed:
                raise ValueError(f"options['buyer']['{key}'] must be one of {allowed}")
        features = self.features
        if "features" in option:
            low, high = data.feature_count
            given = option["features"]
            names = list(given) if isinstance(given, (list, tuple)) else [None]
            if (
                not all(name in data.features for name in names)
                or len(set(names)) != len(names)
                or not low <= len(names) <= high
            ):
                raise ValueError(
                    f"options['buyer']['features'] must be a list of {low}-{high} distinct "
                    f"features of {data.features}, got {given!r}"
                )
            features = tuple(name for name in data.features if name in names)
        budget = self.budget
        if "budget" in option:
            if option["budget"] not in data.budgets:
                raise ValueError(f"options['buyer']['budget'] must be one of {data.budgets}")
            budget = float(option["budget"])
        return BuyerProfile(
            personality=option.get("personality", self.personality),
            brand=option.get("brand", self.brand),
            car_type=option.get("type", self.car_type),
            features=features,
            budget=budget,
            strategy=option.get("strategy", self.strategy),
        )

    def describe(self) -> str:
        """The duo buyer's view of its own profile, one line."""
        return (
            f"Buyer profile: personality {self.personality}; car {self.brand} {self.car_type}; "
            f"features {', '.join(self.features)}; budget {money(self.budget)}; "
            f"strategy {self.strategy}"
        )


# -- the negotiation both forms share ---------------------------------------------------------


@dataclass(frozen=True)
class Heard:
    """What the buyer makes of one seller utterance."""

    readable: bool
    offer: float | None = None
    discount: bool = False
    features: frozenset[str] = frozenset()
    brands: frozenset[str] = frozenset()
    asks_features: bool = False
    asks_budget: bool = False
    words: int = 0


@dataclass(frozen=True)
class Decision:
    """The buyer's decision and what it pays each side."""

    accepted: bool
    price: float | None
    msrp: float
    budget: float
    features_met: bool

    @property
    def ratio(self) -> float:
        """LMRL's reward: price / ((budget + MSRP) / 2) for a sale, else 0."""
        if not self.accepted:
            return 0.0
        return self.price / ((self.budget + self.msrp) / 2.0)

    def seller_reward(self, reward_mode: str) -> float:
        if reward_mode == "revenue":
            return self.price / 1000.0 if self.accepted else 0.0
        if reward_mode == "code" and not self.accepted:
            return -(self.budget - self.msrp) / self.msrp
        return self.ratio

    def buyer_reward(self) -> float:
        """1 − price / budget for a deal that has every wanted feature, else 0."""
        if self.accepted and self.features_met:
            return 1.0 - self.price / self.budget
        return 0.0

    def as_info(self) -> dict[str, Any]:
        return {
            "outcome": "accept" if self.accepted else "reject",
            "price": self.price,
            "msrp": self.msrp,
        }


class Negotiation:
    """The conversation's facts that every form shares: lines said, the standing offer, the
    features mentioned, and the decision's rewards."""

    def __init__(self, data: CarDealerData, profile: BuyerProfile) -> None:
        self.data = data
        self.profile = profile
        self.msrp = data.msrp[profile.brand, profile.car_type]
        self.items = 0
        self.offer: float | None = None
        self.mentioned: set[str] = set()
        self.decision: Decision | None = None

    def hear_seller(self, text: str) -> Heard:
        """Read one seller utterance and update the standing offer and the features mentioned.

        A discount is given when the utterance has a discount word and its offer is below a
        price it cuts from: the standing offer, an earlier amount in the same utterance ("lists
        at $X, discount to $Y") or the MSRP.
        """
        self.items += 1
        if not readable(text):
            return Heard(readable=False)
        data = self.data
        amounts = [amount for amount in data.amounts(text) if amount >= data.min_offer]
        found = data.keywords.find(text)
        offer = amounts[-1] if amounts else None
        discount = False
        if offer is not None:
            reference = max([self.offer or 0.0, self.msrp, *amounts[:-1]])
            discount = offer < reference and "discount" in found
            self.offer = offer
        features = frozenset(found.get("feature", ()))
        self.mentioned |= features
        return Heard(
            readable=True,
            offer=offer,
            discount=discount,
            features=features,
            brands=frozenset(found.get("brand", ())),
            asks_features="asks_features" in found,
            asks_budget="asks_budget" in found,
            words=len(text.split()),
        )

    def hear_buyer(self) -> None:
        self.items += 1

    @property
    def cap_reached(self) -> bool:
        return self.items >= self.data.history_cap

    def settle(self, accepted: bool) -> Decision:
        self.decision = Decision(
            accepted=accepted,
            price=self.offer if accepted else None,
            msrp=self.msrp,
            budget=self.profile.budget,
            features_met=set(self.profile.features) <= self.mentioned,
        )
        return self.decision


class ScriptedBuyer:
    """The buyer of ``LMRL/CarDealer-v0``: a state machine over one profile (module docstring).

    Satisfaction rises by one when the seller first names the buyer's brand, for each wanted
    feature it mentions for the first time and for each discount; it falls by one for another
    brand named, an unreadable utterance and a new offer way over the budget. Patience falls by
    the data's ``patience_cost`` every seller turn and rises with each discount.
    """

    def __init__(self, data: CarDealerData, profile: BuyerProfile) -> None:
        self.data = data
        self.profile = profile
        self.personality = data.personalities[profile.personality]
        self.strategy = data.strategies[profile.strategy]
        self.patience = self.strategy.patience
        self.satisfaction = 0
        self.turns = 0
        self.discounts = 0
        self.brand_named = False
        self.wanted_mentioned: set[str] = set()

    def ceiling(self) -> float:
        return self.data.ceiling(self.profile.budget, self.satisfaction)

    def condition_met(self) -> bool:
        strategy = self.strategy
        if strategy.condition == "discount":
            return self.discounts > 0
        if strategy.condition == "features":
            needed = min(strategy.features_needed, len(self.profile.features))
            return len(self.wanted_mentioned) >= needed
        return self.turns <= strategy.deal_within

    def respond(
        self, heard: Heard, negotiation: Negotiation, rng: np.random.Generator
    ) -> tuple[str, bool | None]:
        """The buyer's reply to ``heard`` and its decision (True accept, False reject, None
        not yet). ``negotiation`` has already heard the utterance."""
        self.turns += 1
        said = self._opening() if self.turns == 1 else {}
        cost = self._listen(heard, said)
        self.patience -= cost
        decision = self._react(heard, negotiation, said)
        if decision is None and self._walks_away(negotiation):
            said["walk_away"] = self.personality.lines["walk_away"]
            decision = False
        prefixes = self.personality.prefixes
        prefix = prefixes[int(rng.integers(len(prefixes)))] if len(prefixes) > 1 else prefixes[0]
        return " ".join(text for text in (prefix, *said.values()) if text), decision

    def _opening(self) -> dict[str, str]:
        """The first reply's lines: the wanted car and the strategy's cue."""
        profile = self.profile
        car = self.data.type_names[profile.car_type]
        said = {
            "want": self.personality.lines["want"].format(brand=profile.brand, car=car),
            "cue": self.strategy.cue,
        }
        if self.personality.volunteers_features:
            said["features"] = self._features_line()
        return said

    def _listen(self, heard: Heard, said: dict[str, str]) -> int:
        """Update satisfaction from ``heard``, answer its questions; return the patience cost."""
        data, lines, profile = self.data, self.personality.lines, self.profile
        cost = data.patience_cost["turn"]
        if not heard.readable:
            self.satisfaction -= 1
            said["unreadable"] = lines["unreadable"]
            return cost + data.patience_cost["unreadable"]
        if self.strategy.max_words and heard.words > self.strategy.max_words:
            cost += data.patience_cost["long_utterance"]
        if profile.brand in heard.brands:
            self.satisfaction += not self.brand_named
            self.brand_named = True
        elif heard.brands:
            cost += data.patience_cost["wrong_brand"]
            self.satisfaction -= 1
            car = data.type_names[profile.car_type]
            said["wrong_brand"] = lines["wrong_brand"].format(brand=profile.brand, car=car)
        new = (heard.features & set(profile.features)) - self.wanted_mentioned
        self.satisfaction += len(new)
        self.wanted_mentioned |= new
        if heard.discount:
            self.satisfaction += 1
            self.discounts += 1
            self.patience += data.patience_restored_per_discount
        if heard.asks_features:
            said["features"] = self._features_line()
        if heard.asks_budget and self.personality.shares_budget:
            stated = data.stated_budget(profile.budget, profile.strategy)
            said["budget"] = lines["budget"].format(amount=money(stated))
        elif heard.asks_budget:
            said["budget_refusal"] = lines["budget_refusal"]
        return cost

    def _walks_away(self, negotiation: Negotiation) -> bool:
        """Out of patience, past an impatient buyer's deadline, or at the conversation's cap."""
        strategy = self.strategy
        return (
            self.patience <= 0
            or (strategy.condition == "quick" and self.turns >= strategy.deal_within)
            or negotiation.items + 1 >= self.data.history_cap
        )

    def _react(self, heard: Heard, negotiation: Negotiation, said: dict[str, str]) -> bool | None:
        """React to the standing offer: accept it, or say what is wrong with it."""
        lines, offer = self.personality.lines, negotiation.offer
        if offer is None:
            if not said:
                said["ask_price"] = lines["ask_price"]
            return None
        if offer > self.ceiling():
            if offer > self.profile.budget * self.data.way_over_ratio:
                said["way_too_expensive"] = lines["way_too_expensive"]
                self.satisfaction -= heard.offer is not None
            else:
                said["too_expensive"] = lines["too_expensive"]
        elif self.condition_met():
            said["accept"] = lines["accept"]
            return True
        ask = STRATEGY_ASKS.get(self.strategy.condition)
        if ask == "ask_discount" and not self.condition_met():
            said[ask] = lines[ask]
        elif ask == "ask_feature" and not self.condition_met():
            missing = [f for f in self.profile.features if f not in self.wanted_mentioned]
            said[ask] = lines[ask].format(feature=self.data.feature_names[missing[0]])
        return None

    def _features_line(self) -> str:
        features = list(self.profile.features)
        if self.personality.features_told == "one":
            features = features[:1]
        names = [self.data.feature_names[name] for name in features]
        return self.personality.lines["features"].format(features=_spoken_list(names))


# -- the single-agent environment -------------------------------------------------------------


class CarDealerEnv(TextTaskEnv):
    """Sell a car to a scripted buyer with a hidden profile.

    ## Description
    LMRL-Gym's Car Dealer (Abdulhai et al., ICML 2025). The agent is the seller. At reset a
    buyer profile is drawn: a personality (10, which sets its phrasing), a brand (13) and type
    (6) of car, 1-4 wanted features (of 8), a budget ($10k-$90k) and a strategy
    (discount-seeker, feature-seeker, impatient). The buyer is the scripted state machine
    described in the module docstring; its first reply names the car it wants and shows its
    strategy, and it answers questions about its features and budget.

    ## Action Space
    ``Text(max_length=256)``, printable: the seller's utterance. The offer is its last dollar
    amount (``$27,500`` or ``$27.5k``). An unreadable utterance (empty, over 256 characters,
    characters outside the charset, or no letter or digit) costs the buyer one more patience
    and satisfaction point and sets ``info["invalid_action"]``. A non-``str`` action raises
    ``ValueError``.

    ## Observation Space
    ``Text(max_length=32768)``: the transcript ``Start`` then ``Seller: ...`` and
    ``Buyer: ...`` lines (``obs_mode="transcript"``), or the latest line (``obs_mode="last"``).
    The longest conversation (25 exchanges of 256-character utterances and the longest buyer
    replies) fits.

    ## Rewards
    Only on the decision. ``reward_mode="ratio"`` (default): a sale pays price / ((budget +
    MSRP) / 2), no sale 0. ``"code"``: no sale pays −(budget − MSRP) / MSRP (LMRL's code).
    ``"revenue"``: a sale pays price / 1000. The normalized score scores the ratio reward.

    ## Starting State
    A profile drawn uniformly field by field; ``options={"buyer": {...}}`` pins any of its
    fields (``personality``, ``brand``, ``type``, ``features``, ``budget``, ``strategy``).

    ## Episode End
    Terminated when the buyer accepts (``info["success"] = True``) or walks away; truncated
    when it rejects because the conversation reached 50 lines. The final step's
    ``info["decision"]`` is ``{"outcome": "accept" | "reject", "price", "msrp"}``; ``metrics``
    add ``sale``, ``price``, ``msrp``, ``budget``, ``ratio``, ``satisfaction``,
    ``patience_left``, ``wanted_features_mentioned`` and ``discounts``.

    ## Arguments
    ``reward_mode`` (``"ratio"``, ``"code"`` or ``"revenue"``), ``obs_mode`` (``"transcript"``
    or ``"last"``), ``render_mode`` (``None`` or ``"ansi"``).
    """

    observation_max_length = OBSERVATION_MAX_LENGTH
    score_id = "LMRL/CarDealer-v0"
    min_return = 0.0
    evaluation_episodes = 1000

    def __init__(
        self,
        reward_mode: str = "ratio",
        obs_mode: str = "transcript",
        render_mode: str | None = None,
    ) -> None:
        self.reward_mode = require_choice("reward_mode", reward_mode, REWARD_MODES)
        super().__init__(obs_mode=obs_mode, render_mode=render_mode)
        self.data = load_data()
        self._negotiation: Negotiation | None = None
        self._buyer: ScriptedBuyer | None = None

    def _begin(self, options: dict[str, Any]) -> str:
        profile = BuyerProfile.sample(self.np_random, self.data)
        if "buyer" in options:
            profile = profile.pinned(options["buyer"], self.data)
        self._negotiation = Negotiation(self.data, profile)
        self._buyer = ScriptedBuyer(self.data, profile)
        return START

    def _play(self, action: str) -> Turn:
        negotiation = self._negotiation
        heard = negotiation.hear_seller(action)
        reply, accepted = self._buyer.respond(heard, negotiation, self.np_random)
        negotiation.hear_buyer()
        message = BUYER + reply
        if accepted is None:
            return Turn(message=message, reward=0.0, invalid=not heard.readable)
        decision = negotiation.settle(accepted)
        capped = not accepted and negotiation.cap_reached
        return Turn(
            message=message,
            reward=decision.seller_reward(self.reward_mode),
            terminated=not capped,
            truncated=capped,
            invalid=not heard.readable,
            success=accepted,
        )

    def _render_action(self, line: str) -> str:
        return SELLER + line

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            decision = self._negotiation.decision
            info["decision"] = decision.as_info()
            info["normalized_score"] = normalize(self.score_id, decision.ratio)
        return observation, reward, terminated, truncated, info

    def _metrics(self) -> dict[str, float]:
        decision, buyer = self._negotiation.decision, self._buyer
        return {
            "sale": float(decision.accepted),
            "price": float(decision.price or 0.0),
            "msrp": decision.msrp,
            "budget": decision.budget,
            "ratio": decision.ratio,
            "satisfaction": float(buyer.satisfaction),
            "patience_left": float(buyer.patience),
            "wanted_features_mentioned": float(len(buyer.wanted_mentioned)),
            "discounts": float(buyer.discounts),
        }


# -- scripted sellers -------------------------------------------------------------------------


@dataclass
class BuyerReading:
    """What a seller has learned from the buyer's lines so far (public information only)."""

    brand: str | None = None
    car_type: str | None = None
    wanted: list[str] = field(default_factory=list)
    stated_budget: float | None = None
    strategy: str | None = None
    kinds: set[str] = field(default_factory=set)

    def read(self, data: CarDealerData, message: str) -> None:
        """Update from one buyer line (``info["last_message"]``, ``Buyer: `` prefix or not)."""
        text = message.removeprefix(BUYER)
        self.kinds = data.buyer_line_kinds(text)
        found = data.keywords.find(text)
        if self.brand is None:
            self.brand = next(iter(found.get("brand", ())), None)
        if self.car_type is None:
            self.car_type = next(iter(found.get("type", ())), None)
        for feature in found.get("feature", ()):
            if feature not in self.wanted:
                self.wanted.append(feature)
        if "budget" in self.kinds:
            self.stated_budget = next(iter(data.amounts(text)), None)
        for name in data.strategies:
            if f"cue {name}" in self.kinds:
                self.strategy = name

    def car(self, data: CarDealerData) -> str:
        """How the seller names the car: as the buyer did, or just "car"."""
        if self.brand is None or self.car_type is None:
            return "car"
        return data.car_name(self.brand, self.car_type)

    def msrp(self, data: CarDealerData) -> float:
        """The list price of the car the buyer wants (the median list price until known)."""
        if self.brand is None or self.car_type is None:
            return data.median_msrp
        return data.msrp[self.brand, self.car_type]


def seller_line(
    data: CarDealerData,
    style: str,
    kind: str,
    car: str = "car",
    price: float = 0.0,
    list_price: float = 0.0,
    features: Iterable[str] = (),
) -> str:
    """A scripted seller's utterance: ``kind`` is ``greeting``, ``greeting_with_budget`` or
    ``offer`` in ``style``'s wording."""
    names = [data.feature_names[name] for name in features]
    return data.seller_styles[style][kind].format(
        car=car,
        price=money(price),
        list_price=money(list_price),
        features=_spoken_list(names) or "everything you need",
    )


def _rotating_features(data: CarDealerData, offers_made: int) -> list[str]:
    count = data.features_per_offer
    return [data.features[(offers_made * count + i) % len(data.features)] for i in range(count)]


def _list_price(price: float, previous: float | None, msrp: float) -> float:
    """The price a discount-giver says it cuts from: its last offer or the MSRP, or 10 % over
    the new price when both are lower."""
    reference = max(previous or 0.0, msrp)
    return reference if reference > price else math.ceil(price * 1.1 / 100.0) * 100.0


def _require_range(name: str, value: Any) -> tuple[float, float]:
    """``value`` as a ``(low, high)`` pair of finite numbers, or ``ValueError`` naming ``name``."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"{name} must be a (low, high) pair, got {value!r}")
    low, high = (require_finite_number(name, bound) for bound in value)
    if low > high:
        raise ValueError(f"{name} must have low <= high, got {value!r}")
    return low, high


class CarDealerBehaviour(ScriptedBehaviour):
    """The Car Dealer dataset policy: a mixture of three scripted seller styles (spec §4).

    Each episode draws a style (``style_weights`` over discount-giver, feature-talker,
    concise), an opening markup over the list price (uniform in ``markup``) and a price cut
    per turn (uniform in ``cut``). The seller greets in its style, then makes an offer every
    turn: the list price times (1 + markup) first, then each offer ``cut`` lower than the last,
    never below ``floor`` times the list price. Each utterance is in the episode's style, or
    with probability ``deviation`` in one of the other two. A discount-giver quotes the price
    it cuts from; a feature-talker names the features the buyer has mentioned, or goes round the
    feature list. It reads only the buyer's lines; it never asks for the budget.
    """

    policy = "car_dealer_seller_mixture"
    default_episodes = 5000
    lmrl_success = 0.53

    def __init__(
        self,
        env: Any,
        style_weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
        deviation: float = 0.25,
        markup: tuple[float, float] = (0.0, 0.2),
        cut: tuple[float, float] = (0.05, 0.15),
        floor: float = 0.5,
    ) -> None:
        super().__init__(env)
        weights = [require_finite_number("style_weights", w) for w in style_weights]
        if len(weights) != len(STYLES) or min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(f"style_weights must be 3 non-negative weights, got {style_weights}")
        self.style_weights = np.array(weights) / sum(weights)
        self.deviation = require_finite_number("deviation", deviation)
        if not 0.0 <= self.deviation <= 1.0:
            raise ValueError(f"deviation must be a probability, got {deviation!r}")
        self.markup = _require_range("markup", markup)
        self.cut = _require_range("cut", cut)
        self.floor = require_finite_number("floor", floor)
        self.data = load_data()
        self._style = STYLES[0]
        self._markup = self._cut = 0.0
        self._reading = BuyerReading()
        self._price: float | None = None
        self._offers = 0

    def parameters(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "style": self._style,
            "markup": self._markup,
            "cut": self._cut,
            "deviation": self.deviation,
            "floor": self.floor,
        }

    def act(self, observation: str, info: dict[str, Any]) -> str:
        data = self.data
        if info["turn"] == 0:
            self._style = STYLES[int(self.rng.choice(len(STYLES), p=self.style_weights))]
            self._markup = float(self.rng.uniform(*self.markup))
            self._cut = float(self.rng.uniform(*self.cut))
            self._reading = BuyerReading()
            self._price = None
            self._offers = 0
            return seller_line(data, self._style, "greeting")
        reading = self._reading
        reading.read(data, info["last_message"])
        style = self._style
        if self.rng.random() < self.deviation:
            others = [other for other in STYLES if other != style]
            style = others[int(self.rng.integers(len(others)))]
        msrp = reading.msrp(data)
        previous = self._price
        if previous is None:
            price = msrp * (1.0 + self._markup)
        else:
            price = max(self.floor * msrp, previous * (1.0 - self._cut))
        self._price = price = round(price, -2)
        features = reading.wanted or _rotating_features(data, self._offers)
        self._offers += 1
        return seller_line(
            data,
            style,
            "offer",
            car=reading.car(data),
            price=price,
            list_price=_list_price(price, previous, msrp),
            features=features,
        )


class CarDealerOracle:
    """The best of the three scripted seller styles for the buyer at hand, picked each turn.

    Reads only ``info["last_message"]`` (the buyer's latest line), ``info["turn"]``, its own
    past utterances and the public data file; never the profile. It opens by asking for the
    car, the features and the budget; from the replies it learns the wanted car and features,
    the stated budget, if any (undoing a discount-seeker's public understatement rule), and the
    strategy (the buyer's cue). Each later turn it speaks in the style that meets that
    strategy's condition (discount-seeker: discount-giver; feature-seeker: feature-talker,
    naming the known wanted features; impatient: concise, which keeps within its word limit),
    and offers the highest price the most generous budget still possible would accept, given
    the satisfaction its own utterances have earned. Each "too expensive" or "way over"
    reaction rules budgets out; an offer that draws neither rules out the budgets that would
    have refused it.
    """

    def __init__(self, env: Any = None) -> None:
        self.data = load_data()
        self._begin()

    def reset(self, seed: int | None = None) -> None:
        self._begin()

    def _begin(self) -> None:
        self._reading = BuyerReading()
        self._candidates = list(self.data.budgets)
        self._offer: tuple[float, int] | None = None
        self._said_features: set[str] = set()
        self._discounts = 0
        self._way_over = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        data = self.data
        if info["turn"] == 0:
            self._begin()
            return seller_line(data, "feature-talker", "greeting_with_budget")
        reading = self._reading
        reading.read(data, info["last_message"])
        self._narrow_budgets()
        style = STYLE_FOR_STRATEGY.get(reading.strategy, "discount-giver")
        features = reading.wanted if style == "feature-talker" else []
        satisfaction = (
            (reading.brand is not None)
            + len(set(reading.wanted) & (self._said_features | set(features)))
            + self._discounts
            + (style == "discount-giver")
            - self._way_over
        )
        budget = max(self._candidates) if self._candidates else min(data.budgets)
        price = float(math.floor(data.ceiling(budget, satisfaction)))
        msrp = reading.msrp(data)
        previous = self._offer[0] if self._offer else None
        self._offer = (price, satisfaction)
        self._said_features |= set(features)
        self._discounts += style == "discount-giver"
        return seller_line(
            data,
            style,
            "offer",
            car=reading.car(data),
            price=price,
            list_price=_list_price(price, previous, msrp),
            features=features,
        )

    def _narrow_budgets(self) -> None:
        """Keep the budgets consistent with the buyer's latest line."""
        data, reading = self.data, self._reading
        kept = self._candidates
        if "budget" in reading.kinds and reading.stated_budget is not None:
            strategies = [reading.strategy] if reading.strategy else list(data.strategies)
            kept = [
                budget
                for budget in kept
                if any(
                    data.stated_budget(budget, strategy) == reading.stated_budget
                    for strategy in strategies
                )
            ]
        if self._offer is not None:
            price, satisfaction = self._offer
            if "way_too_expensive" in reading.kinds:
                self._way_over += 1
                kept = [b for b in kept if b * data.way_over_ratio < price]
            elif "too_expensive" in reading.kinds:
                kept = [
                    b
                    for b in kept
                    if data.ceiling(b, satisfaction) < price <= b * data.way_over_ratio
                ]
            else:
                kept = [b for b in kept if data.ceiling(b, satisfaction) >= price]
        self._candidates = kept


# -- the two-player form ----------------------------------------------------------------------

ROLES = ("seller", "buyer")


class TextObservation(str):
    """A duo observation: a ``str`` that also carries the ``Text`` space's NumPy ``dtype``.

    PettingZoo's AEC ``api_test`` compares each observation's ``dtype`` with its space's, which
    a plain ``str`` lacks; the value is otherwise an ordinary string.
    """

    __slots__ = ()
    dtype = text_space(1).dtype


class _DuoGame:
    """The conversation of the duo forms: whose turn it is, what each side has said, and the
    end. The seller's side is read by the same :class:`Negotiation` as in the single-agent
    form; the buyer's decision is read from its own words (``decision`` in the data file)."""

    def __init__(self, reward_mode: str) -> None:
        self.reward_mode = require_choice("reward_mode", reward_mode, REWARD_MODES)
        self.data = load_data()
        self.np_random: np.random.Generator | None = None
        self.negotiation: Negotiation | None = None
        self.transcript = START
        self.last_line = START
        self.to_move = "seller"
        self.turns = dict.fromkeys(ROLES, 0)
        self.ended = False
        self.truncated = False

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> None:
        if seed is not None or self.np_random is None:
            self.np_random, _ = seeding.np_random(seed)
        profile = BuyerProfile.sample(self.np_random, self.data)
        if options and "buyer" in options:
            profile = profile.pinned(options["buyer"], self.data)
        self.negotiation = Negotiation(self.data, profile)
        self.transcript = self.last_line = START
        self.to_move = "seller"
        self.turns = dict.fromkeys(ROLES, 0)
        self.ended = self.truncated = False

    def speak(self, text: str) -> bool:
        """The player to move says ``text``; returns whether it was invalid."""
        role, negotiation = self.to_move, self.negotiation
        if role == "seller":
            invalid = not negotiation.hear_seller(text).readable
            line = SELLER + transcript_line(text)
        else:
            negotiation.hear_buyer()
            decision = self.data.decision_in(text) if readable(text) else None
            # Accepting before any offer is not a decision.
            invalid = not readable(text) or (decision is True and negotiation.offer is None)
            if decision is not None and not invalid:
                negotiation.settle(decision)
                self.ended = True
            elif negotiation.cap_reached:
                negotiation.settle(False)
                self.ended = self.truncated = True
            line = BUYER + transcript_line(text)
        self.transcript = f"{self.transcript}\n{line}"
        self.last_line = line
        self.turns[role] += 1
        self.to_move = "buyer" if role == "seller" else "seller"
        return invalid

    def rewards(self) -> dict[str, float]:
        decision = self.negotiation.decision
        if decision is None:
            return dict.fromkeys(ROLES, 0.0)
        return {
            "seller": decision.seller_reward(self.reward_mode),
            "buyer": decision.buyer_reward(),
        }

    def observation(self, role: str) -> TextObservation:
        if role == "buyer":
            return TextObservation(f"{self.negotiation.profile.describe()}\n{self.transcript}")
        return TextObservation(self.transcript)

    def info(self, role: str, invalid: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "last_message": self.last_line,
            "invalid_action": invalid,
            "turn": self.turns[role],
            "to_move": not self.ended and self.to_move == role,
        }
        if self.ended:
            info["decision"] = self.negotiation.decision.as_info()
        return info


_DUO_DOC = """

    | agents | ``seller``, ``buyer`` (the seller speaks first, then they alternate) |
    |---|---|
    | action | ``Text(max_length=256)``, printable: the agent's utterance |
    | observation | ``Text(max_length=32768)``: seller, the transcript ``Start``, ``Seller: ...``,
    ``Buyer: ...``; buyer, its profile line (``Buyer profile: ...``) then the transcript |

    ## Description
    LMRL-Gym's Car Dealer with the buyer played by an agent too (spec ``lmrl.md`` §3.8). The
    seller's utterances are read as in ``LMRL/CarDealer-v0`` (the offer is the last dollar
    amount of at least $1,000). The buyer decides with its words: a line with "no deal", "I
    reject", "goodbye" or "bye" rejects; otherwise one with "deal!", "I accept" or "I'll take
    it" accepts the standing offer (accepting before any offer is invalid and decides nothing).

    ## Starting State
    A buyer profile drawn as in ``LMRL/CarDealer-v0`` (``reset(options={"buyer": {...}})`` pins
    any of its fields); the seller speaks first.

    ## Rewards
    On the decision: the seller as in ``LMRL/CarDealer-v0`` (``reward_mode``); the buyer, on a
    deal whose seller mentioned every feature the buyer wants, 1 − price / budget, else 0.

    ## Episode End
    Both agents terminate on the buyer's decision; both are truncated when the conversation
    reaches 50 lines without one (no deal). ``infos[agent]["decision"]`` is then
    ``{"outcome", "price", "msrp"}``.

    ## Info
    ``last_message`` (the latest line), ``invalid_action`` (an unreadable utterance, an
    acceptance with no offer on the table{extra}), ``turn`` (the agent's own turns so far) and
    ``to_move`` (whether the agent speaks next).

    ## Arguments
    ``reward_mode`` (``"ratio"``, ``"code"`` or ``"revenue"``), ``render_mode`` (``None`` or
    ``"ansi"``).
    """


class _DuoSpaces:
    """The agents, spaces and rendering both duo forms share."""

    possible_agents = list(ROLES)

    def _setup(self, reward_mode: str, render_mode: str | None) -> None:
        if render_mode is not None:
            require_choice("render_mode", render_mode, ("ansi",))
        self.render_mode = render_mode
        self.game = _DuoGame(reward_mode)
        self.reward_mode = self.game.reward_mode
        self._action_spaces = {role: text_space(ACTION_MAX_LENGTH) for role in ROLES}
        self._observation_spaces = {role: text_space(OBSERVATION_MAX_LENGTH) for role in ROLES}

    def observation_space(self, agent: str) -> Any:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self._action_spaces[agent]

    def render(self) -> str | None:
        return self.game.transcript if self.render_mode == "ansi" else None

    def close(self) -> None:
        """Nothing to release: the game holds no process or file."""


class CarDealerDuoAECEnv(_DuoSpaces, AECEnv):
    __doc__ = "Car Dealer for two agents, turn by turn (PettingZoo AEC)." + _DUO_DOC.replace(
        "{extra}", ""
    )

    metadata = {"name": "car_dealer_duo_v0", "render_modes": ["ansi"]}

    def __init__(self, reward_mode: str = "ratio", render_mode: str | None = None) -> None:
        super().__init__()
        self._setup(reward_mode, render_mode)
        self.agents: list[str] = []

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.game.reset(seed, options)
        self.agents = list(ROLES)
        self.rewards = dict.fromkeys(ROLES, 0.0)
        self._cumulative_rewards = dict.fromkeys(ROLES, 0.0)
        self.terminations = dict.fromkeys(ROLES, False)
        self.truncations = dict.fromkeys(ROLES, False)
        self.infos = {role: self.game.info(role, invalid=False) for role in ROLES}
        self.agent_selection = self.game.to_move

    def observe(self, agent: str) -> str:
        return self.game.observation(agent)

    def step(self, action: str | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        require_text_action(action, self._action_spaces[agent])
        self._cumulative_rewards[agent] = 0.0
        game = self.game
        invalid = game.speak(action)
        self.rewards = game.rewards()
        for role in ROLES:
            self.terminations[role] = game.ended and not game.truncated
            self.truncations[role] = game.truncated
            self.infos[role] = game.info(role, invalid=invalid and role == agent)
        self.agent_selection = game.to_move
        self._accumulate_rewards()


class CarDealerDuoParallelEnv(_DuoSpaces, ParallelEnv):
    __doc__ = (
        "Car Dealer for two agents, both acting every step (PettingZoo Parallel).\n\n    Each "
        'step only the agent to move speaks (``infos[agent]["to_move"]``); the other\'s action\n'
        "    is ignored."
        + _DUO_DOC.replace("{extra}", ", or a non-empty action from the agent not to move")
    )

    metadata = {"name": "car_dealer_duo_v0", "render_modes": ["ansi"]}

    def __init__(self, reward_mode: str = "ratio", render_mode: str | None = None) -> None:
        self._setup(reward_mode, render_mode)
        self.agents: list[str] = []

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        self.game.reset(seed, options)
        self.agents = list(ROLES)
        observations = {role: self.game.observation(role) for role in ROLES}
        return observations, {role: self.game.info(role, invalid=False) for role in ROLES}

    def step(self, actions: dict[str, str | None]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise RuntimeError("the episode is over: call reset() before step()")
        game = self.game
        speaker = game.to_move
        if speaker not in actions:
            raise ValueError(f"the {speaker} is to move: actions must include {speaker!r}")
        for role, action in actions.items():
            if role not in ROLES:
                raise ValueError(f"unknown agent {role!r}; agents are {ROLES}")
            if action is not None or role == speaker:
                require_text_action(action, self._action_spaces[role])
        listener = "buyer" if speaker == "seller" else "seller"
        spoke_out_of_turn = bool(actions.get(listener))
        invalid = game.speak(actions[speaker])
        flags = {speaker: invalid, listener: spoke_out_of_turn}
        observations = {role: game.observation(role) for role in ROLES}
        rewards = game.rewards()
        terminations = dict.fromkeys(ROLES, game.ended and not game.truncated)
        truncations = dict.fromkeys(ROLES, game.truncated)
        infos = {role: game.info(role, invalid=flags[role]) for role in ROLES}
        if game.ended:
            self.agents = []
        return observations, rewards, terminations, truncations, infos
