"""No-press Diplomacy as a PettingZoo ``ParallelEnv`` over the real ``diplomacy`` engine.

Follows ``docs/diplomacy.md``: the adjudicator is the DATC-compliant engine of the
``diplomacy`` package (MILA; Paquette et al., NeurIPS 2019; AGPL-3.0, the optional extra
``omnigym[diplomacy]``, imported when an environment is made, never vendored), wrapped as the
DipLLM paper plays it (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025): one step per phase, all seven powers ordering at once, sum-of-squares
scores at the end.

=============== ================================================================================
agents          the map's seven powers (``AUSTRIA`` ... ``TURKEY``)
action          ``index``: ``MultiDiscrete([K + 1] * max_units)``; ``orders``:
                ``Sequence(Text(64))`` of order strings in engine syntax
observation     ``Dict(board Box(0, 1, (n_locations, 38)), phase Box(0, 1, (5,)),
                year Box(0, 1, (1,)), own Box(-1, 1, (3,)), action_mask Box(0, 1,
                (max_units, K + 1), int8)[, text Text(4096)])``
=============== ================================================================================

Where this wrapper departs from the bare engine, and why:

- Invalid orders are never silent. The engine drops an invalid order without a word
  under its default rule ``IGNORE_ERRORS``; here every invalid order is dropped *by the env*,
  listed in ``infos[power]["invalid_orders"]`` with a reason and counted; after ``set_orders``
  the orders the engine recorded are compared with those passed and any further drop is reported
  too. ``strict=True`` raises ``ValueError`` instead and leaves the game as it was.
- Orders reach the engine with ``set_orders(..., expand=False)``: every order passed is one of
  the engine's own legal strings, which its validation takes as written, and skipping the
  expansion (the parsing of loosely written orders) makes the engine's order intake about 8
  times faster. The DATC and random-play tests check that adjudication is the same as through
  the engine's default path.
- ``copy.deepcopy(env)`` gives an independent game (for rollouts): the engine's own deepcopy
  keeps a stale unit-owner cache that makes the copy refuse every order, so it is cleared.
- ``to_saved_game()`` is the engine's saved-game export with each phase's wall-clock
  ``timestamp`` replaced by the phase's index and a game id drawn from ``reset(seed)``, so the
  same seed and actions give the same JSON.
- Actions for powers that already left the game are ignored and counted (``ignored_actions`` in
  the final metrics); names that are no power of the map raise ``ValueError``.
- Power ``centres/units/builds`` in ``own`` and the ``sc_delta`` shaping are divided by the
  map's number of supply centres (34 on the standard map).
"""

from __future__ import annotations

import copy
import numbers
import re
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from omnigym.envs.diplomacy.board import (
    ADJUSTS_HERE,
    N_FEATURES,
    PHASES,
    BoardEncoder,
    sum_of_squares,
    text_view,
)
from omnigym.envs.diplomacy.orders import PhaseOrders, engine_drops
from omnigym.spaces import describe, text_space

MAP_IDS = {"standard": "Diplomacy/Standard-v0", "pure": "Diplomacy/Pure-v0"}
"""Maps whose convoy table ships with (or is instant for) the engine, and their ids."""
ACTION_FORMATS = ("index", "orders")
REWARD_SHAPINGS = ("none", "sc_delta")
ORDER_LENGTH = 64
TEXT_LENGTH = 4096
ENGINE_RULES = ("SOLITAIRE", "NO_PRESS", "IGNORE_ERRORS", "POWER_CHOICE")
"""The engine's default rules; a loaded saved game gets back those its export leaves out."""
_PHASE_NAME = re.compile(r"[A-Z]\d{3,4}[A-Z]")


def load_engine(env_id: str) -> Any:
    """The ``diplomacy`` package, or an ``ImportError`` naming the extra when it is missing."""
    try:
        import diplomacy
        import diplomacy.utils.exceptions
        import diplomacy.utils.export
    except ImportError as error:
        raise ImportError(
            f"{env_id} needs the optional extra: pip install 'omnigym[diplomacy]' (AGPL-3.0)"
        ) from error
    return diplomacy


def check_map(map_name: Any, allow_uncached_map: bool) -> None:
    """Reject maps without a shipped convoy table before the engine loads anything."""
    if not isinstance(map_name, str) or not map_name:
        raise ValueError(f"map_name must be a non-empty str, got {map_name!r}")
    if map_name not in MAP_IDS and not allow_uncached_map:
        raise ValueError(
            f"map {map_name!r} has no cached convoy table in the diplomacy package; its first "
            "load can take minutes (about 7.5 for 'world'); pass allow_uncached_map=True to "
            "accept that"
        )


def _check_int(name: str, value: Any, low: int) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


class OrderIndexSpace(spaces.MultiDiscrete):
    """``MultiDiscrete([K + 1] * max_units)`` whose ``sample`` also takes the observation's 2-D
    ``action_mask`` (one row per unit), which PettingZoo's API tests pass as is."""

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if isinstance(mask, np.ndarray) and mask.ndim == 2:
            mask = tuple(mask)
        return super().sample(mask=mask, probability=probability)


class OrderStringsSpace(spaces.Sequence):
    """``Sequence(Text(64))`` of order strings. ``sample`` ignores a 2-D ``action_mask``: the
    mask indexes legal lists (``info["possible_orders"]``) that a space cannot see."""

    def sample(self, mask: Any = None, probability: Any = None) -> tuple[str, ...]:
        if isinstance(mask, np.ndarray):
            mask = None
        return super().sample(mask=mask, probability=probability)


class DiplomacyEnv(ParallelEnv):
    """Diplomacy, one step per phase, the seven powers ordering simultaneously.

    **Description.** The real ``diplomacy`` engine adjudicates (DATC-compliant); the env adds
    legal-order lists per unit, index or string actions, board tensors and sum-of-squares scores.

    **Action space.** ``action_format="index"``: ``MultiDiscrete([K + 1] * max_units)``; row d is
    the d-th of ``infos[power]["orderable_locations"]``; 0 = no order (the engine default: hold,
    disband when retreating, waive a build), j >= 1 the j-th of
    ``infos[power]["possible_orders"][location]`` (sorted lexicographically). Rows past the
    orderable locations must be 0. ``action_format="orders"``: a list or tuple of order strings
    (``"A PAR - BUR"``, ``"F BRE B"``, ``"WAIVE"``). A power with nothing to order submits an
    all-zero action (or ``[]``). Values outside the space raise ``ValueError``; legal-space
    values that are no legal order are dropped and reported (module docstring).

    **Observation space.** ``Dict``: ``board`` (``board.py``: 37 common columns + this power's
    adjustment column), ``phase`` one-hot over S-M, S-R, F-M, F-R, W-A (all 0 once the game is
    over), ``year`` (year - first year) / 100, ``own`` (centres, units, builds (+) or removals
    (-), each divided by the map's centres), ``action_mask`` (1 where a value is legal; 0 always
    is) and, with ``text_observation=True``, ``text``: the phase, every power's units and centres
    and this power's orderable locations.

    **Infos** (every power, every step): ``power``, ``phase``, ``map_name``, ``action_format``,
    ``orderable_locations``, ``possible_orders`` (fresh lists), ``state`` (the engine's
    ``get_state()`` keys ``name, units, centers, homes, retreats, builds``: a copy made once per
    phase and shared by every power's info, so read it and do not change it),
    ``invalid_orders`` (list of ``{"order", "reason"}``) and ``invalid_action``. A power's final
    info adds ``success`` (solo win), ``normalized_score`` (100 x SoS) and ``metrics``: ``sos,
    centers, won, drawn, survived, eliminated, invalid_orders, orders_truncated, phases,
    ignored_actions`` (``won + survived + eliminated = 1``; ``drawn``: alive at a game's end
    without a solo; ``orders_truncated``: index-row locations past ``max_units`` or with more
    than K legal orders; ``ignored_actions``: actions given for powers no longer playing).

    **Rewards.** 0 per step (``reward_shaping="sc_delta"``: the change in own centres / the
    map's centres, which happens when a year's fall turn ends) plus, at the game's end, each
    remaining power's SoS: 1 for a solo winner and 0 for the rest, else C_i² / Σ C_j².

    **Starting state.** The map's 1901 position; ``reset(options={"saved_game": dict})`` starts
    from the last phase of a saved game (the engine's export format) instead. Other option keys
    are ignored.

    **Episode end.** A solo win terminates every power. A power with no units and no centres is
    terminated (SoS 0) and leaves ``agents``. After the last phase of ``max_year`` the env calls
    the engine's ``draw()`` and truncates every remaining power; the engine's own draw after 100
    years is a truncation too.

    Args:
        map_name: "standard" or "pure"; other maps need ``allow_uncached_map=True``.
        max_year: the last year played (default 1935).
        action_format: "index" (default) or "orders".
        max_orders_per_location: K, the legal orders an index row exposes (default 128).
        max_units: rows of an index action and of the mask (default 17).
        reward_shaping: "none" (default) or "sc_delta".
        text_observation: add the ``text`` observation.
        strict: raise ``ValueError`` on an invalid order instead of dropping it.
        allow_uncached_map: accept a map whose convoy table the engine must first build.
        render_mode: None or "ansi".
    """

    metadata = {"name": "diplomacy_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        map_name: str = "standard",
        max_year: int = 1935,
        action_format: str = "index",
        max_orders_per_location: int = 128,
        max_units: int = 17,
        reward_shaping: str = "none",
        text_observation: bool = False,
        strict: bool = False,
        allow_uncached_map: bool = False,
        render_mode: str | None = None,
    ):
        allow_uncached_map = _check_bool("allow_uncached_map", allow_uncached_map)
        check_map(map_name, allow_uncached_map)
        self.max_year = _check_int("max_year", max_year, 1)
        self.action_format = _check_choice("action_format", action_format, ACTION_FORMATS)
        self.max_orders = _check_int("max_orders_per_location", max_orders_per_location, 1)
        self.max_units = _check_int("max_units", max_units, 1)
        self.reward_shaping = _check_choice("reward_shaping", reward_shaping, REWARD_SHAPINGS)
        self.text_observation = _check_bool("text_observation", text_observation)
        self.strict = _check_bool("strict", strict)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.map_name = map_name
        self.env_id = MAP_IDS.get(map_name, "Diplomacy/Standard-v0")
        self._engine = load_engine(self.env_id)
        self.game = self._engine.Game(game_id=f"omnigym-{map_name}", map_name=map_name)
        game_map = self.game.map
        if game_map.error:
            errors = "; ".join(str(error) for error in game_map.error)
            raise ValueError(f"map_name {map_name!r}: the engine cannot load it ({errors})")
        if self.max_year < game_map.first_year:
            raise ValueError(
                f"max_year must be >= the map's first year {game_map.first_year}, got {max_year!r}"
            )
        self.possible_agents = list(game_map.powers)
        self._power_index = {power: i for i, power in enumerate(self.possible_agents)}
        self.n_centres = len(game_map.scs)
        self.board = BoardEncoder(
            self.possible_agents, game_map.locs, game_map.scs, self.game.get_state()["homes"]
        )
        self.action_spaces = {agent: self._action_space() for agent in self.possible_agents}
        self.observation_spaces = {
            agent: self._observation_space() for agent in self.possible_agents
        }
        self.state_space = spaces.Box(0.0, 1.0, (self.board.n_locations, N_FEATURES), np.float32)
        self._values = np.arange(self.max_orders + 1)
        self._mask_rows = np.ones((1, self.max_orders + 1), dtype=np.int8)
        self._mask_rows[0, 1:] = 0
        self.agents: list[str] = []
        self._np_random, _ = seeding.np_random(None)
        self._reset_counters()
        self._refresh()

    # ---- spaces -------------------------------------------------------------------------------

    def _action_space(self) -> spaces.Space:
        if self.action_format == "index":
            return OrderIndexSpace([self.max_orders + 1] * self.max_units)
        return OrderStringsSpace(text_space(ORDER_LENGTH))

    def _observation_space(self) -> spaces.Dict:
        entries: dict[str, spaces.Space] = {
            "board": spaces.Box(0.0, 1.0, (self.board.n_locations, N_FEATURES), np.float32),
            "phase": spaces.Box(0.0, 1.0, (len(PHASES),), np.float32),
            "year": spaces.Box(0.0, 1.0, (1,), np.float32),
            "own": spaces.Box(-1.0, 1.0, (3,), np.float32),
            "action_mask": spaces.Box(0, 1, (self.max_units, self.max_orders + 1), np.int8),
        }
        if self.text_observation:
            entries["text"] = text_space(TEXT_LENGTH)
        return spaces.Dict(entries)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self._known(agent)]

    def _known(self, agent: Any) -> str:
        if agent not in self._power_index:
            raise ValueError(f"unknown agent {agent!r}; the powers are {self.possible_agents}")
        return agent

    # ---- PettingZoo API -----------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None):
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
        saved = (options or {}).get("saved_game")
        game_id = f"omnigym-{int(self._np_random.integers(2**62)):016x}"
        if saved is None:
            self.game = self._engine.Game(game_id=game_id, map_name=self.map_name)
        else:
            self.game = self._load(saved, game_id)
        self.board.set_homes(self.game.get_state()["homes"])
        self._reset_counters()
        self._refresh()
        self.agents = [
            power for power in self.possible_agents if not self.game.powers[power].is_eliminated()
        ]
        observations = {agent: self._observations[agent] for agent in self.agents}
        infos = {agent: self._info(agent, []) for agent in self.agents}
        return observations, infos

    def step(self, actions: Mapping[str, Any]):
        if not self.agents:
            raise RuntimeError(
                f"{self.env_id}: call reset() before step() (the episode is over or not started)"
            )
        if not isinstance(actions, Mapping):
            raise ValueError(f"actions must be a dict of power name to action, got {actions!r}")
        unknown = [agent for agent in actions if agent not in self._power_index]
        if unknown:
            raise ValueError(
                f"actions for {unknown}, which are no powers; the powers are {self.possible_agents}"
            )
        acting = self.agents
        missing = [agent for agent in acting if agent not in actions]
        if missing:
            raise ValueError(
                f"actions are missing for {missing}; every power in env.agents submits each phase "
                "(all zeros / [] for no orders)"
            )
        submitted, invalid = {}, {}
        for power in acting:
            submitted[power], invalid[power] = self._read(power, actions[power])
        if self.strict:
            self._raise_first(invalid)
        # Only now, with every action in its space, does the step change any state.
        self._ignored_actions += len(actions) - len(acting)
        if self.action_format == "index":
            for power in acting:
                self._truncated[power] += self._phase_orders.truncated(power)
        game = self.game
        for power in acting:
            orders = submitted[power]
            if orders:
                errors_before = len(game.error)
                game.set_orders(power, orders, expand=False)
                drops = engine_drops(orders, game.get_orders(power), game.error[errors_before:])
                if drops:
                    invalid[power] = invalid[power] + drops
        if self.strict and any(invalid.values()):
            game.clear_orders()
            self._raise_first(invalid)
        centres_before = self._centre_counts
        game.process()
        self._phases += 1
        if not game.is_game_done and self._year_of(game.get_current_phase()) > self.max_year:
            game.draw()
        self._refresh()
        return self._outcome(acting, invalid, centres_before)

    def _read(self, power: str, action: Any) -> tuple[list[str], list[dict[str, str]]]:
        """The valid orders of ``power``'s action and its invalid ones; ``ValueError`` when the
        action lies outside the action space."""
        space = self.action_spaces[power]
        if self.action_format == "orders":
            if not isinstance(action, list | tuple) or not all(
                isinstance(order, str) for order in action
            ):
                raise ValueError(
                    f"action {action!r} of {power} is not in the action space {describe(space)}: "
                    "expected a list or tuple of order strings"
                )
            return self._phase_orders.read_order_strings(power, action)
        try:
            values = np.asarray(action)
        except (TypeError, ValueError):
            values = np.asarray(None, dtype=object)
        if values.shape != (self.max_units,) or values.dtype.kind not in "iu":
            values = None
        else:
            values = values.tolist()
        if values is None or min(values) < 0 or max(values) > self.max_orders:
            raise ValueError(
                f"action {action!r} of {power} is not in the action space {describe(space)}: "
                f"expected {self.max_units} integers in 0..{self.max_orders}"
            )
        return self._phase_orders.read_index_action(power, values)

    @staticmethod
    def _raise_first(invalid: Mapping[str, list[dict[str, str]]]) -> None:
        for power, entries in invalid.items():
            if entries:
                first = entries[0]
                raise ValueError(
                    f"{power}: order {first['order']!r} is invalid: {first['reason']} (strict=True)"
                )

    def _outcome(self, acting: list[str], invalid: dict, centres_before: dict[str, int]):
        game = self.game
        done = game.is_game_done
        winner = self._winner() if done else None
        rewards = dict.fromkeys(acting, 0.0)
        if self.reward_shaping == "sc_delta":
            for power in acting:
                delta = self._centre_counts[power] - centres_before[power]
                rewards[power] = delta / self.n_centres
        terminations = dict.fromkeys(acting, done and winner is not None)
        truncations = dict.fromkeys(acting, done and winner is None)
        if not done:
            for power in acting:
                terminations[power] = game.powers[power].is_eliminated()
        scores = None
        if done:
            counts = [self._centre_counts[power] for power in self.possible_agents]
            scores = sum_of_squares(counts, game.win if winner else None)
            for power in acting:
                rewards[power] += float(scores[self._power_index[power]])
        observations = {agent: self._observations[agent] for agent in acting}
        infos = {}
        for power in acting:
            self._invalid_counts[power] += len(invalid[power])
            infos[power] = self._info(power, invalid[power])
            if terminations[power] or truncations[power]:
                infos[power].update(self._final(power, scores, winner))
        self.agents = [power for power in acting if not (terminations[power] or truncations[power])]
        return observations, rewards, terminations, truncations, infos

    def _winner(self) -> str | None:
        victors = self.game.outcome[1:]
        if len(victors) == 1 and self._centre_counts[victors[0]] >= self.game.win:
            return victors[0]
        return None

    def _final(self, power: str, scores: np.ndarray | None, winner: str | None) -> dict[str, Any]:
        sos = 0.0 if scores is None else float(scores[self._power_index[power]])
        eliminated = self.game.powers[power].is_eliminated()
        won = power == winner
        metrics = {
            "sos": sos,
            "centers": float(self._centre_counts[power]),
            "won": float(won),
            "drawn": float(winner is None and scores is not None and not eliminated),
            "survived": float(not won and not eliminated),
            "eliminated": float(eliminated),
            "invalid_orders": float(self._invalid_counts[power]),
            "orders_truncated": float(self._truncated[power]),
            "phases": float(self._phases),
            "ignored_actions": float(self._ignored_actions),
        }
        return {"success": won, "normalized_score": 100.0 * sos, "metrics": metrics}

    # ---- per-phase work -----------------------------------------------------------------------

    def _reset_counters(self) -> None:
        self._phases = 0
        self._ignored_actions = 0
        self._invalid_counts = dict.fromkeys(self.possible_agents, 0)
        self._truncated = dict.fromkeys(self.possible_agents, 0)

    def _refresh(self) -> None:
        """Everything the new phase's observations and infos share, computed once."""
        game = self.game
        state = game.get_state()
        name = state["name"]
        if game.is_game_done:
            orderable = {power: [] for power in self.possible_agents}
            possible: dict[str, list[str]] = {}
        else:
            orderable = game.get_orderable_locations()
            possible = game.get_all_possible_orders()
            self._year = self._year_of(name)
        adjusting = name[-1] == "A"
        builds = state["builds"]
        adjustments = {power: builds[power]["count"] for power in builds} if adjusting else {}
        self._phase_orders = PhaseOrders(
            name, orderable, possible, adjustments, self.max_orders, self.max_units
        )
        self._state = state
        self._adjusting = adjusting
        self._common = self.board.encode(state)
        powers = game.powers
        self._centre_counts = {power: len(powers[power].centers) for power in builds}
        self._info_state = {
            "name": name,
            "units": state["units"],
            "centers": state["centers"],
            "homes": state["homes"],
            "retreats": {
                p: {unit: list(options) for unit, options in retreats.items()}
                for p, retreats in state["retreats"].items()
            },
            "builds": builds,
        }
        self._observations = self._observe_all()

    @staticmethod
    def _year_of(phase: str) -> int:
        return int(phase[1:-1])

    def _mask_rows_up_to(self, top: int) -> np.ndarray:
        """Row c: the mask of an index row with c legal orders (values 0..c), for c <= top;
        grown on demand, so its size follows the longest legal list rather than K."""
        if len(self._mask_rows) <= top:
            rows = np.arange(top + 1)[:, None]
            self._mask_rows = (self._values[None, :] <= rows).astype(np.int8)
        return self._mask_rows

    def _observe_all(self) -> dict[str, dict[str, Any]]:
        """Every power's observation of the current phase, built with one NumPy operation per
        entry for all powers together; each power gets views of its own slices."""
        agents = self.possible_agents
        n_powers = len(agents)
        orders, state, game = self._phase_orders, self._state, self.game
        boards = np.empty((n_powers, self.board.n_locations, N_FEATURES), dtype=np.float32)
        boards[:] = self._common
        counts = np.zeros((n_powers, self.max_units), dtype=np.int64)
        for i, power in enumerate(agents):
            locations = orders.locations[power]
            if locations:
                counts[i, : len(locations)] = orders.sizes(locations[: self.max_units])
                if self._adjusting:
                    boards[i, self.board.adjustment_rows(locations), ADJUSTS_HERE] = 1.0
        np.minimum(counts, self.max_orders, out=counts)
        masks = self._mask_rows_up_to(int(counts.max()))[counts]
        phases = np.zeros((n_powers, len(PHASES)), dtype=np.float32)
        name = state["name"]
        if name[0] + name[-1] in PHASES:
            phases[:, PHASES.index(name[0] + name[-1])] = 1.0
        year = min((self._year - game.map.first_year) / 100, 1.0)
        years = np.full((n_powers, 1), year, dtype=np.float32)
        builds, powers = state["builds"], game.powers
        own = np.array(
            [
                [len(powers[p].centers), len(powers[p].units), builds[p].get("count", 0)]
                for p in agents
            ],
            dtype=np.float32,
        )
        own /= self.n_centres
        observations = {
            power: {
                "board": boards[i],
                "phase": phases[i],
                "year": years[i],
                "own": own[i],
                "action_mask": masks[i],
            }
            for i, power in enumerate(agents)
        }
        if self.text_observation:
            common = text_view(state, agents)
            for power in agents:
                locations = ", ".join(orders.locations[power]) or "none"
                text = f"{common}\nyou are {power}; orderable: {locations}"
                observations[power]["text"] = text[:TEXT_LENGTH]
        return observations

    def _info(self, power: str, invalid: list[dict[str, str]]) -> dict[str, Any]:
        orders = self._phase_orders
        return {
            "power": power,
            "phase": orders.phase,
            "map_name": self.map_name,
            "action_format": self.action_format,
            "orderable_locations": list(orders.locations[power]),
            "possible_orders": orders.possible_orders(power),
            "state": self._info_state,
            "invalid_orders": invalid,
            "invalid_action": bool(invalid),
        }

    # ---- saved games, state, rendering --------------------------------------------------------

    def _load(self, saved: Any, game_id: str) -> Any:
        """A game continuing from the last phase of ``saved`` (the engine's export format)."""
        if not isinstance(saved, Mapping):
            raise ValueError(f"options['saved_game'] must be a dict, got {type(saved).__name__}")
        if saved.get("map", "standard") != self.map_name:
            raise ValueError(
                f"saved game is on map {saved.get('map', 'standard')!r}; this env plays "
                f"{self.map_name!r}"
            )
        phases = saved.get("phases")
        if not isinstance(phases, list) or not phases:
            raise ValueError("saved game has no phases")
        game_map = self.game.map
        for i, phase in enumerate(phases):
            name = phase.get("name") if isinstance(phase, Mapping) else None
            if (
                not isinstance(name, str)
                or not _PHASE_NAME.fullmatch(name)
                or game_map.phase_long(name) == "?????"
            ):
                raise ValueError(
                    f"saved game phase {i} has a bad name {name!r} (phases are named like "
                    f"'S1901M', 'F1901R', 'W1901A' on map {self.map_name!r})"
                )
        last = phases[-1]["name"]
        if self._year_of(last) > self.max_year:
            raise ValueError(f"saved game's last phase {last} is past max_year {self.max_year}")
        try:
            game = self._engine.utils.export.from_saved_game_format(
                {**saved, "id": saved.get("id") or game_id}
            )
        except (
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
            self._engine.utils.exceptions.DiplomacyException,
        ) as error:
            raise ValueError(f"saved game could not be loaded: {error!r}") from error
        for rule in ENGINE_RULES:
            game.add_rule(rule)
        if game.is_game_done:
            raise ValueError(f"saved game is already over (phase {game.get_current_phase()})")
        return game

    def __deepcopy__(self, memo: dict) -> DiplomacyEnv:
        """An independent copy (for rollouts from the current position). The engine's
        ``Game.__deepcopy__`` copies its unit-owner cache apart from the powers it points to,
        after which every order is refused as "unorderable"; the copy's caches are cleared."""
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            shared = key == "_engine"
            setattr(clone, key, value if shared else copy.deepcopy(value, memo))
        clone.game.clear_cache()
        return clone

    def to_saved_game(self) -> dict[str, Any]:
        """The game so far in the engine's saved-game JSON format (``to_saved_game_format``),
        with each phase's wall-clock timestamp replaced by the phase's index."""
        saved = self._engine.utils.export.to_saved_game_format(self.game)
        for index, phase in enumerate(saved["phases"]):
            phase["state"]["timestamp"] = index
        return saved

    def state(self) -> np.ndarray:
        """The global board: the common columns plus, in column 37, every power's adjustment
        locations."""
        board = self._common.copy()
        if self._adjusting:
            locations = self._phase_orders.locations
            provinces = [place for power in self.possible_agents for place in locations[power]]
            board[self.board.adjustment_rows(provinces), ADJUSTS_HERE] = 1.0
        return board

    def render(self) -> str | None:
        """The board as text (``render_mode="ansi"``): phase, units, centres, adjustments."""
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None; pass render_mode='ansi'")
            return None
        counts = ", ".join(
            f"{power} {self._centre_counts[power]}" for power in self.possible_agents
        )
        return f"{text_view(self.game.get_state(), self.possible_agents)}\ncentres: {counts}"

    def close(self) -> None:
        """Nothing to release: the engine runs in this process."""
