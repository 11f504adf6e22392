"""``LMRL/CarDealerDuo-v0``: Car Dealer for two agents, a seller and a buyer, in PettingZoo's AEC
and Parallel forms.

Follows the Car Dealer task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232); the
two-player form is ours (LMRL's buyer is always a simulator): the buyer decides in its own
words, read with the ``decision`` patterns of the data file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv

from omnigym.envs.lmrl.text_task import ACTION_MAX_LENGTH, require_choice, transcript_line
from omnigym.spaces import require_text_action, text_space

from .buyer import REWARD_MODES, BuyerProfile, Negotiation
from .data import BUYER, OBSERVATION_MAX_LENGTH, SELLER, START, load_data, readable

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
    LMRL-Gym's Car Dealer with the buyer played by an agent too (``docs/lmrl.md``). The
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
