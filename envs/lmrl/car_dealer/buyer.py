"""Car Dealer's buyer: its hidden profile, the negotiation both forms share (the standing offer,
the features mentioned, the decision and its rewards) and the scripted buyer of
``LMRL/CarDealer-v0``.

Follows the Car Dealer task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232), whose
buyer is a language model fine-tuned on GPT-3.5 dialogues; here it is the rule-based state
machine that the package docstring (:mod:`omnigym.envs.lmrl.car_dealer`) describes, with the
departures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import CarDealerData, money, readable, spoken_list

REWARD_MODES = ("ratio", "code", "revenue")
PROFILE_KEYS = ("personality", "brand", "type", "features", "budget", "strategy")
STRATEGY_ASKS = {"discount": "ask_discount", "features": "ask_feature"}


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
    """The buyer of ``LMRL/CarDealer-v0``: a state machine over one profile (package docstring).

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
        return self.personality.lines["features"].format(features=spoken_list(names))
