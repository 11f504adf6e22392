"""Car Dealer's scripted sellers: the behaviour policy of the dataset and the oracle.

Follows the Car Dealer task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232), whose
data come from GPT-3.5 sellers; here the sellers are scripted. :class:`CarDealerBehaviour` (the
dataset policy) mixes three scripted seller styles, discount-giver, feature-talker and concise,
that open near the list price and cut it a little every turn. :class:`CarDealerOracle` plays the
same three styles, choosing each turn the one that suits the strategy the buyer has shown, and
prices from what the buyer has said: it asks for the budget, undoes the discount-seeker's
understatement and narrows the possible budgets after every reaction. It reads only
``info["last_message"]``, its own past utterances and the public data file, never the hidden
profile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omnigym.envs.lmrl.text_task import ScriptedBehaviour, require_finite_number

from .data import BUYER, STYLES, CarDealerData, load_data, money, spoken_list

STYLE_FOR_STRATEGY = {
    "discount-seeker": "discount-giver",
    "feature-seeker": "feature-talker",
    "impatient": "concise",
}


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
        features=spoken_list(names) or "everything you need",
    )


def _rotating_features(data: CarDealerData, offers_made: int) -> list[str]:
    count = data.features_per_offer
    return [data.features[(offers_made * count + i) % len(data.features)] for i in range(count)]


def _list_price(price: float, previous: float | None, msrp: float) -> float:
    """The price a discount-giver says it cuts from: its last offer or the MSRP, or 10 % over
    the new price when both are lower."""
    reference = max(previous or 0.0, msrp)
    return reference if reference > price else math.ceil(price * 1.1 / 100.0) * 100.0


def _offer_line(
    data: CarDealerData,
    style: str,
    reading: BuyerReading,
    price: float,
    previous: float | None,
    features: Iterable[str],
) -> str:
    """An offer of ``price`` for the car the buyer wants, in ``style``'s wording, after the
    seller's offer ``previous`` (None for the first)."""
    return seller_line(
        data,
        style,
        "offer",
        car=reading.car(data),
        price=price,
        list_price=_list_price(price, previous, reading.msrp(data)),
        features=features,
    )


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
        return _offer_line(data, style, reading, price, previous, features)


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
        previous = self._offer[0] if self._offer else None
        self._offer = (price, satisfaction)
        self._said_features |= set(features)
        self._discounts += style == "discount-giver"
        return _offer_line(data, style, reading, price, previous, features)

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
