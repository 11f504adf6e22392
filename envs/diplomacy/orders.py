"""Legal order lists of a Diplomacy phase, action <-> order conversion, and the invalid-order
checks of the Diplomacy env (``docs/diplomacy.md``).

The legal orders are the ``diplomacy`` engine's own (``Game.get_all_possible_orders``, MILA;
Paquette et al., NeurIPS 2019), sorted lexicographically per location; the order of a power's
rows is the engine's sorted ``get_orderable_locations``. Nothing here imports the engine: a
:class:`PhaseOrders` is built from the two dictionaries the engine returns, once per phase, and
shared by every power.

Agents use the two public helpers, which read only a power's ``info``:

- :func:`orders_to_action` turns order strings into the ``index`` action (row d = the d-th
  orderable location, value j >= 1 = the j-th legal order there, 0 = no order);
- :func:`action_to_orders` turns an ``index`` action back into order strings.

The env validates actions with :meth:`PhaseOrders.read_index_action` and
:meth:`PhaseOrders.read_order_strings`. Both drop, and report as ``{"order", "reason"}``, every
order that is invalid: a non-zero value on a row past the orderable locations or past the
legal list (a masked-out value), an order string not in its location's legal list, an order for
a location the power cannot order, a second order for one location and an unparseable string.
An index entry that picks no order is reported with ``order`` reading ``"row d = v"``.
Order strings are compared after upper-casing and collapsing white space; nothing else is
rewritten (a convoyed move must say ``VIA`` as the engine's list does). In an adjustment phase,
builds (or disbands) beyond the number the power may make are dropped too, in row order, as the
engine would void them one by one (DATC 6.I.1).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

WAIVE = "WAIVE"
"""The adjustment-phase order that declines one build; it names no location."""


def order_location(order: str) -> str | None:
    """The province an order string is for (``"F STP/SC - BOT"`` -> ``"STP"``), ``None`` for
    ``WAIVE`` and for strings that do not start with a unit (``A``/``F`` and a location)."""
    words = order.split()
    if len(words) < 2 or words[0] not in ("A", "F") or len(words[1]) < 3:
        return None
    return words[1][:3]


def as_action(
    orders: Sequence[str], observation: Mapping[str, Any], info: Mapping[str, Any]
) -> Any:
    """``orders`` in the env's action format: the list itself for ``"orders"``, else the
    ``index`` array (rows from the observation's ``action_mask``). What every order-choosing
    agent returns from ``act``."""
    if info["action_format"] == "index":
        return orders_to_action(orders, info, observation["action_mask"].shape[0])
    return list(orders)


def orders_to_action(orders: Sequence[str], info: Mapping[str, Any], max_units: int) -> np.ndarray:
    """The ``index`` action (``int64`` array of ``max_units``) that submits ``orders``.

    ``info`` is the power's info (``orderable_locations`` and ``possible_orders``). A ``WAIVE``
    takes the first row that no other order uses and whose list holds ``WAIVE``. Raises
    ``ValueError`` for an order that is not in its location's legal list, a second order for a
    location, or a location past ``max_units`` rows.
    """
    locations = list(info["orderable_locations"])
    legal = info["possible_orders"]
    action = np.zeros(max_units, dtype=np.int64)
    waives = []
    for order in orders:
        if order == WAIVE:
            waives.append(order)
            continue
        location = order_location(order)
        if location not in legal or order not in legal[location]:
            raise ValueError(f"order {order!r} is not in the legal orders of phase {info['phase']}")
        row = locations.index(location)
        if row >= max_units:
            raise ValueError(
                f"order {order!r} is for row {row}, past the action's {max_units} rows (max_units)"
            )
        if action[row]:
            raise ValueError(f"a second order for {location}: {order!r}")
        action[row] = legal[location].index(order) + 1
    for _ in waives:
        free = [
            row
            for row, location in enumerate(locations[:max_units])
            if not action[row] and WAIVE in legal[location]
        ]
        if not free:
            raise ValueError(f"no free build row for WAIVE in phase {info['phase']}")
        action[free[0]] = legal[locations[free[0]]].index(WAIVE) + 1
    return action


def action_to_orders(action: Any, info: Mapping[str, Any]) -> list[str]:
    """The order strings an ``index`` action submits, in row order (0 rows submit nothing).

    Raises ``ValueError`` for a non-zero value on a row past the orderable locations or past its
    location's legal list.
    """
    locations = info["orderable_locations"]
    legal = info["possible_orders"]
    values = np.asarray(action).reshape(-1)
    orders = []
    for row in np.flatnonzero(values).tolist():
        value = int(values[row])
        if row >= len(locations) or not 0 < value <= len(legal[locations[row]]):
            raise ValueError(f"row {row} value {value} picks no legal order in {info['phase']}")
        orders.append(legal[locations[row]][value - 1])
    return orders


def _invalid(order: str, reason: str) -> dict[str, str]:
    return {"order": order, "reason": reason}


class PhaseOrders:
    """The legal orders of one phase, computed once and shared by all powers.

    Args:
        phase: the short phase name (``"S1901M"``).
        orderable: power -> sorted orderable locations (``Game.get_orderable_locations()``).
        possible: location -> legal orders (``Game.get_all_possible_orders()``).
        adjustments: power -> builds (> 0) or disbands (< 0) allowed, for adjustment phases.
        max_orders: K, the legal orders an index row exposes.
        max_units: rows of an index action.

    Attributes:
        locations: power -> orderable locations (sorted).
        legal: orderable location -> sorted tuple of its legal orders.
    """

    def __init__(
        self,
        phase: str,
        orderable: Mapping[str, list[str]],
        possible: Mapping[str, list[str]],
        adjustments: Mapping[str, int],
        max_orders: int,
        max_units: int,
    ):
        self.phase = phase
        self.locations = orderable
        self.legal = {
            location: tuple(sorted(possible[location]))
            for locations in orderable.values()
            for location in locations
        }
        self.adjustments = adjustments
        self.max_orders = max_orders
        self.max_units = max_units
        self._sets: dict[str, frozenset[str]] = {}

    def sizes(self, locations: Sequence[str]) -> list[int]:
        """The number of legal orders of each of ``locations`` (uncapped)."""
        legal = self.legal
        return [len(legal[location]) for location in locations]

    def truncated(self, power: str) -> int:
        """``power``'s locations an index action cannot fully reach: those with more than K
        legal orders, plus those past ``max_units`` rows."""
        locations = self.locations[power]
        longer = sum(len(self.legal[location]) > self.max_orders for location in locations)
        return longer + max(len(locations) - self.max_units, 0)

    def possible_orders(self, power: str) -> dict[str, list[str]]:
        """``info["possible_orders"]`` of ``power``: fresh lists, so an agent may change them."""
        return {location: list(self.legal[location]) for location in self.locations[power]}

    def read_index_action(
        self, power: str, action: Sequence[int]
    ) -> tuple[list[str], list[dict[str, str]]]:
        """The orders of an in-space ``index`` action (a list of ints) and its invalid entries
        (rows past the orderable locations, values past the legal list)."""
        locations = self.locations[power]
        orders, invalid = [], []
        for row, value in enumerate(action):
            if not value:
                continue
            if row >= len(locations):
                invalid.append(
                    _invalid(
                        f"row {row} = {value}",
                        f"{power} has {len(locations)} orderable locations in {self.phase}; "
                        f"row {row} must be 0",
                    )
                )
                continue
            legal = self.legal[locations[row]]
            if value > min(len(legal), self.max_orders):
                invalid.append(
                    _invalid(
                        f"row {row} = {value}",
                        f"{locations[row]} has {len(legal)} legal orders in {self.phase} "
                        f"(values 1..{min(len(legal), self.max_orders)}); {value} is masked out",
                    )
                )
                continue
            orders.append(legal[value - 1])
        return self._within_adjustments(power, orders, invalid)

    def read_order_strings(
        self, power: str, strings: Sequence[str]
    ) -> tuple[list[str], list[dict[str, str]]]:
        """The valid orders among ``strings`` (in their canonical form) and the invalid ones."""
        locations = self.locations[power]
        orders, invalid, ordered = [], [], set()
        for text in strings:
            order = " ".join(text.upper().split())
            if order == WAIVE:
                if any(WAIVE in self.legal[location] for location in locations):
                    orders.append(order)
                else:
                    invalid.append(_invalid(text, f"{power} has no build to waive in {self.phase}"))
                continue
            location = order_location(order)
            if location is None:
                invalid.append(
                    _invalid(text, "unparseable: an order starts with A or F and a location")
                )
            elif location not in locations:
                shown = ", ".join(locations) or "none"
                invalid.append(
                    _invalid(
                        text,
                        f"{location} is not a location {power} can order in {self.phase} "
                        f"(orderable: {shown})",
                    )
                )
            elif location in ordered:
                invalid.append(_invalid(text, f"a second order for {location}"))
            elif order not in self._legal_set(location):
                invalid.append(_invalid(text, self._not_legal(order, location)))
            else:
                ordered.add(location)
                orders.append(order)
        return self._within_adjustments(power, orders, invalid)

    def _legal_set(self, location: str) -> frozenset[str]:
        legal = self._sets.get(location)
        if legal is None:
            legal = self._sets[location] = frozenset(self.legal[location])
        return legal

    def _not_legal(self, order: str, location: str) -> str:
        close = difflib.get_close_matches(order, self.legal[location], n=1, cutoff=0.8)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return (
            f"not in the {len(self.legal[location])} legal orders of {location} "
            f"in {self.phase}{hint}"
        )

    def _within_adjustments(
        self, power: str, orders: list[str], invalid: list[dict[str, str]]
    ) -> tuple[list[str], list[dict[str, str]]]:
        """Drop builds or disbands past the number allowed (the engine voids them in order)."""
        allowed = self.adjustments.get(power, 0)
        if self.phase[-1] != "A" or not orders:
            return orders, invalid
        kind, limit = ("B", allowed) if allowed > 0 else ("D", -allowed)
        kept, used = [], 0
        for order in orders:
            if order.endswith(" " + kind):
                if used >= limit:
                    noun = "builds" if kind == "B" else "disbands"
                    invalid.append(
                        _invalid(order, f"{power} may make {limit} {noun} in {self.phase}")
                    )
                    continue
                used += 1
            kept.append(order)
        return kept, invalid


def engine_drops(
    passed: Sequence[str], recorded: Sequence[str], errors: Sequence[str]
) -> list[dict[str, str]]:
    """The passed orders the engine did not record after ``set_orders`` (``WAIVE`` is never
    recorded), with the engine's own error messages as the reason."""
    kept = set(recorded)
    detail = "; ".join(errors) or "no error given"
    return [
        _invalid(order, f"dropped by the engine ({detail})")
        for order in passed
        if order != WAIVE and order not in kept
    ]
