"""LMRL-Gym's Car Dealer: sell a car to a scripted buyer, alone or against a buyer agent.

Follows the Car Dealer task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232): the
agent is a car seller talking with a buyer who has a personality, a wanted brand and type,
wanted features, a budget and a bargaining strategy; the episode ends when the buyer decides,
and a sale is rewarded by its price. ``LMRL/CarDealer-v0`` is the single-agent form (the buyer
is scripted); ``LMRL/CarDealerDuo-v0`` lets an agent play the buyer too (PettingZoo). Every
number, name and phrase lives in ``data/car_dealer.yaml``; this package holds only the rules
that read it.

Departures from LMRL-Gym:

- The buyer is a rule-based state machine, not a language model
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
- Rewards: ``reward_mode="ratio"`` (default; LMRL's code) pays price / ((budget +
  MSRP) / 2) for a sale and 0 otherwise; ``"code"`` adds LMRL's code's −(budget − MSRP) / MSRP
  for no sale; ``"revenue"`` pays price / 1000 (the paper's "sale price"). The final step's
  ``normalized_score`` always scores the decision's ratio reward, the one LMRL normalizes.
- ``terminated`` means the buyer decided; a rejection forced by the 50-line cap is
  ``truncated``.
- The profile's values (13 brands, the brand x type MSRP table, the phrasings) are ours;
  LMRL-Gym's come from its GPT-3.5 prompts.
- Normalized score: LMRL-Gym gives only the minimum (0). Our ``avg`` is the mean return of
  the behaviour dataset and ``max`` the oracle's, as for the other tasks. The dataset matches
  LMRL's success rate (0.53) but not its mean return (0.562): our buyer never pays more than
  10 % over its budget and the dataset's sellers open near the list price, so a sale's ratio is
  usually below 1 (mean return about 0.40).
- ``LMRL/CarDealerDuo-v0`` (ours; LMRL's buyer is always a simulator): the buyer decides in its
  own words, read with the ``decision`` patterns of the data file.

The scripted seller (:mod:`.agents`): :class:`CarDealerBehaviour`, the dataset policy, mixes
three scripted seller styles; the oracle (:mod:`omnigym.agents.lmrl.car_dealer`) plays the same
styles, picked for the buyer at hand, and prices from what the buyer has said, never from the
hidden profile. The dataset policy is the task's data generator and stays with the task.

The buyer's rules are written by hand because they are the task itself; no library models a
car buyer.

Modules: :mod:`.data` (the data file and the text helpers), :mod:`.buyer` (profile, negotiation,
scripted buyer), :mod:`.env` (:class:`CarDealerEnv`), :mod:`.agents` (the scripted seller's
pieces and :class:`CarDealerBehaviour`) and :mod:`.duo` (the two-agent forms).
"""

from .agents import BuyerReading, CarDealerBehaviour, offer_line, seller_line
from .buyer import REWARD_MODES, BuyerProfile, Decision, Heard, Negotiation, ScriptedBuyer
from .data import (
    DATA_PATH,
    CarDealerData,
    KeywordIndex,
    Personality,
    Strategy,
    load_data,
    money,
    readable,
    words,
)
from .duo import CarDealerDuoAECEnv, CarDealerDuoParallelEnv, TextObservation
from .env import CarDealerEnv

__all__ = [
    "DATA_PATH",
    "REWARD_MODES",
    "BuyerProfile",
    "BuyerReading",
    "CarDealerBehaviour",
    "CarDealerData",
    "CarDealerDuoAECEnv",
    "CarDealerDuoParallelEnv",
    "CarDealerEnv",
    "Decision",
    "Heard",
    "KeywordIndex",
    "Negotiation",
    "Personality",
    "ScriptedBuyer",
    "Strategy",
    "TextObservation",
    "load_data",
    "money",
    "offer_line",
    "readable",
    "seller_line",
    "words",
]
