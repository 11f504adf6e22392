"""``LMRL/CarDealer-v0``: sell a car to a scripted buyer with a hidden profile.

Follows the Car Dealer task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232); the
package docstring (:mod:`omnigym.envs.lmrl.car_dealer`) gives the departures.
"""

from __future__ import annotations

from typing import Any

from omnigym.envs.lmrl.normalization import normalize
from omnigym.envs.lmrl.text_task import TextTaskEnv, Turn, require_choice

from .buyer import REWARD_MODES, BuyerProfile, Negotiation, ScriptedBuyer
from .data import BUYER, OBSERVATION_MAX_LENGTH, SELLER, START, load_data


class CarDealerEnv(TextTaskEnv):
    """Sell a car to a scripted buyer with a hidden profile.

    ## Description
    LMRL-Gym's Car Dealer (Abdulhai et al., ICML 2025). The agent is the seller. At reset a
    buyer profile is drawn: a personality (10, which sets its phrasing), a brand (13) and type
    (6) of car, 1-4 wanted features (of 8), a budget ($10k-$90k) and a strategy
    (discount-seeker, feature-seeker, impatient). The buyer is the scripted state machine
    described in the package docstring; its first reply names the car it wants and shows its
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
