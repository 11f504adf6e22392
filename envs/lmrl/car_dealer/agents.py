"""Car Dealer's scripted seller: what a seller reads of the buyer, its lines, the dataset policy.

Follows the Car Dealer task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232), whose
data come from GPT-3.5 sellers; here the sellers are scripted. :class:`CarDealerBehaviour` (the
dataset policy) mixes three scripted seller styles, discount-giver, feature-talker and concise,
that open near the list price and cut it a little every turn. :class:`BuyerReading` (what the
buyer's lines have told a seller), :func:`seller_line` and :func:`offer_line` (a style's
wording) are the pieces every scripted seller speaks with; the oracle
(:mod:`omnigym.agents.lmrl.car_dealer`) plays the same styles. They read only the buyer's
lines and the public data file, never the hidden profile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omnigym.envs.lmrl.text_task import ScriptedBehaviour, require_finite_number

from .data import BUYER, STYLES, CarDealerData, load_data, money, spoken_list


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


def offer_line(
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
    """The Car Dealer dataset policy: a mixture of three scripted seller styles.

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
        return offer_line(data, style, reading, price, previous, features)
