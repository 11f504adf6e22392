"""The oracle of LMRL-Gym's Car Dealer (``LMRL/CarDealer-v0``): the best scripted seller.

LMRL-Gym (Abdulhai et al., ICML 2025) takes the normalized score's 100 from its best runs; here
it is this oracle's mean return (``docs/lmrl.md``). It speaks in the three scripted seller
styles of :mod:`omnigym.envs.lmrl.car_dealer.agents`, picking each turn the one that suits the
strategy the buyer has shown, and prices from what the buyer has said: it asks for the budget,
undoes the discount-seeker's understatement and narrows the possible budgets after every
reaction. It reads only ``info["last_message"]``, its own past utterances and the public data
file, never the hidden profile.
"""

from __future__ import annotations

import math
from typing import Any

from omnigym.envs.lmrl.car_dealer import BuyerReading, load_data, offer_line, seller_line

STYLE_FOR_STRATEGY = {
    "discount-seeker": "discount-giver",
    "feature-seeker": "feature-talker",
    "impatient": "concise",
}


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
        return offer_line(data, style, reading, price, previous, features)

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
