"""Reference bots for no-press Diplomacy (``docs/diplomacy.md``): random, greedy and defensive.

The Diplomacy literature evaluates against DipNet, DNVI and Cicero (DipLLM, Xu et al., ICML
2025); their weights are not available offline, so these scripted players stand in for them:

- :class:`RandomBot` orders each unit uniformly at random from its legal orders;
- :class:`GreedySCBot` sends every unit toward the nearest supply centre its power does not own,
  one unit per centre where it can, supports an own attack into a province an enemy can
  contest when a second unit wants it too (or has nothing better to do), keeps a unit on an own
  home centre that an enemy can enter, convoys an army stuck on an island over one own fleet,
  and builds at the home centres nearest to unowned centres;
- :class:`DefensiveBot` garrisons its own centres, supports threatened garrisons to hold, fills
  empty threatened centres, takes only uncontested neighbouring centres, and builds where its
  centres are threatened.

All three read only what the environment puts in ``info`` (``state``, ``phase``,
``orderable_locations``, ``possible_orders``, ``action_format``, ``map_name``; ``power`` where
given, else the power is read off the board) plus the engine's map (``diplomacy.Map``): from
it, once per map and process, :func:`map_graph` builds the adjacency of each unit type
(armies on land and coasts, fleets on water and on each coast of a split province) and
breadth-first-search distances from every location to every province.
Every order a bot emits is one of ``info["possible_orders"]``, so it is always legal; in
adjustment phases a bot orders exactly as many builds or removals as its power is due, so the
engine never drops a surplus one. Randomness (the random bot's choices, the heuristic bots' tie
breaks) comes from a NumPy generator seeded by the constructor's ``seed`` and again by
``reset(seed)``: same seed, same board, same orders (:class:`~.base.PowerAgent`, which also
encodes the orders with :func:`omnigym.envs.diplomacy.orders.orders_to_action` under
``action_format="index"``).

Departures from the usual one-line descriptions of such bots (random, greedy for supply centres,
defensive): the greedy bot also convoys (over a single own
fleet) so that England's armies are not stranded, and retreats to the province fewest enemy
units can enter; the defensive bot expands into neighbouring centres no enemy can contest, so
it does not sit on its home centres for the whole game. The bots know nothing of other powers'
intentions (no press, no search).
"""

from __future__ import annotations

from abc import abstractmethod
from collections import Counter, deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from .base import PowerAgent

#: Distance of a province no path reaches (larger than any path on a map).
UNREACHABLE = 10_000

Unit = tuple[str, str]  # (unit type "A" or "F", location such as "PAR" or "STP/SC")


def province(location: str) -> str:
    """The province of a location: ``"STP/SC"`` -> ``"STP"``."""
    return location.split("/", 1)[0]


@dataclass(frozen=True)
class MapGraph:
    """What the bots need of one map, precomputed: supply centres, the locations each unit can
    move to, the provinces it can enter (= support into), and move counts to every province."""

    name: str
    supply_centres: tuple[str, ...]
    moves: dict[Unit, tuple[str, ...]]
    reach: dict[Unit, frozenset[str]]
    distance: dict[Unit, dict[str, int]]

    def steps(self, unit: Unit, target: str) -> int:
        """Moves a unit needs to enter province ``target`` (``UNREACHABLE`` if none)."""
        return self.distance[unit].get(target, UNREACHABLE)

    def nearest(self, unit: Unit, targets: Iterable[str]) -> int:
        """Moves to the nearest of ``targets`` (``UNREACHABLE`` when there is none)."""
        distances = self.distance[unit]
        return min((distances.get(target, UNREACHABLE) for target in targets), default=UNREACHABLE)


@cache
def map_graph(map_name: str) -> MapGraph:
    """The :class:`MapGraph` of the engine's map ``map_name``, built once per process."""
    import diplomacy  # the optional extra; imported only when a bot first plays

    game_map = diplomacy.Map(map_name)
    locations = list(dict.fromkeys(location.upper() for location in game_map.locs))
    moves: dict[Unit, tuple[str, ...]] = {}
    for unit_type in ("A", "F"):
        nodes = [loc for loc in locations if game_map.is_valid_unit(f"{unit_type} {loc}")]
        for here in nodes:
            moves[(unit_type, here)] = tuple(
                there
                for there in nodes
                if there != here and game_map.abuts(unit_type, here, "-", there)
            )
    reach = {unit: frozenset(province(there) for there in nexts) for unit, nexts in moves.items()}
    distance = {unit: _province_distances(unit, moves) for unit in moves}
    return MapGraph(map_name, tuple(sorted(game_map.scs)), moves, reach, distance)


def _province_distances(start: Unit, moves: dict[Unit, tuple[str, ...]]) -> dict[str, int]:
    """Breadth-first search from ``start``: province -> fewest moves to enter it."""
    unit_type, origin = start
    seen = {origin: 0}
    result = {province(origin): 0}
    queue = deque([origin])
    while queue:
        here = queue.popleft()
        for there in moves[(unit_type, here)]:
            if there not in seen:
                seen[there] = seen[here] + 1
                result.setdefault(province(there), seen[there])
                queue.append(there)
    return result


def own_power(info: dict[str, Any]) -> str | None:
    """The power whose ``info`` this is: ``info["power"]`` where the environment gives it, else
    read from the board (the power whose units, or when building whose build sites, stand on
    the orderable locations; None when nothing is to be ordered)."""
    if "power" in info:
        return info["power"]
    locations = info["orderable_locations"]
    if not locations:
        return None
    wanted = province(locations[0])
    state, phase_type = info["state"], info["phase"][-1]
    for power, units in state["units"].items():
        if phase_type == "A" and state["builds"][power]["count"] > 0:
            candidates = state["builds"][power]["homes"]
        else:  # units on the board, or dislodged ones ("*A PAR") in a retreat phase
            retreating = phase_type == "R"
            candidates = [unit.split()[1] for unit in units if unit.startswith("*") == retreating]
        if any(province(location) == wanted for location in candidates):
            return power
    raise ValueError(f"no power orders {wanted!r} in phase {info['phase']}")


def move_destination(order: str) -> str | None:
    """Where a move order goes (``"A YOR - NWY VIA"`` -> ``"NWY"``); None for other orders."""
    words = order.split()
    return words[3] if len(words) > 3 and words[2] == "-" else None


def _unit_of(order: str) -> Unit:
    """The unit an order is for: ``"F STP/SC - BOT"`` -> ``("F", "STP/SC")``."""
    unit_type, location = order.split(maxsplit=2)[:2]
    return unit_type, location


class Board:
    """One power's reading of ``info["state"]``: who owns and occupies what, and how many enemy
    units can enter each province this phase."""

    def __init__(self, info: dict[str, Any]) -> None:
        state = info["state"]
        self.info = info
        self.graph = map_graph(info["map_name"])
        self.phase_type = info["phase"][-1]
        self.power = own_power(info)
        #: Orderable location -> its legal orders.
        self.legal: dict[str, list[str]] = {
            loc: info["possible_orders"][loc] for loc in info["orderable_locations"]
        }
        self.owner = {
            centre: power for power, centres in state["centers"].items() for centre in centres
        }
        self.my_centres = set(state["centers"].get(self.power, ()))
        self.my_homes = set(state["homes"].get(self.power, ())) & self.my_centres
        self.targets = [c for c in self.graph.supply_centres if self.owner.get(c) != self.power]
        self.build_count = state["builds"].get(self.power, {}).get("count", 0)
        self.occupant: dict[str, tuple[str, Unit]] = {}
        self.enemy_reach: Counter[str] = Counter()
        for power, units in state["units"].items():
            for text in units:
                if text.startswith("*"):
                    continue
                unit = _unit_of(text)
                self.occupant[province(unit[1])] = (power, unit)
                if power != self.power:
                    self.enemy_reach.update(self.graph.reach[unit])

    def own_units(self) -> dict[str, Unit]:
        """Orderable location -> the own unit ordered there (movement and retreat phases)."""
        units = {}
        for location, orders in self.legal.items():
            unit_orders = [order for order in orders if order != "WAIVE"]
            if unit_orders:
                units[location] = _unit_of(unit_orders[0])
        return units

    def enemy_at(self, place: str) -> bool:
        """Another power's unit stands on province ``place``."""
        occupant = self.occupant.get(place)
        return occupant is not None and occupant[0] != self.power

    def contested(self, place: str) -> bool:
        """An enemy unit stands on ``place`` or can enter it this phase."""
        return self.enemy_at(place) or self.enemy_reach[place] > 0

    def move_into(self, unit: Unit, place: str, legal: list[str]) -> str | None:
        """The legal order moving ``unit`` into province ``place`` (any coast), or None."""
        for there in self.graph.moves[unit]:
            order = f"{unit_text(unit)} - {there}"
            if province(there) == place and order in legal:
                return order
        return None


def unit_text(unit: Unit) -> str:
    """A unit in order syntax: ``("F", "STP/SC")`` -> ``"F STP/SC"``."""
    return f"{unit[0]} {unit[1]}"


class _Bot(PowerAgent):
    """A reference bot: built from the omnigym agent arguments, with a random tie-breaker."""

    def __init__(self, env: Any = None, seed: int = 0) -> None:
        # ``env`` is accepted for the omnigym agent protocol; the bots read everything from info.
        super().__init__(seed)

    def _jitter(self) -> float:
        """A random tie-breaker, so that a bot's equal choices vary with its seed."""
        return float(self._rng.random())


class RandomBot(_Bot):
    """A uniformly random legal order per orderable location; in adjustment phases exactly the
    due number of builds (each a random legal build or waive at a random site) or removals."""

    def orders(self, info: dict[str, Any]) -> list[str]:
        locations = info["orderable_locations"]
        legal = info["possible_orders"]
        if info["phase"][-1] == "A":
            count = info["state"]["builds"][own_power(info)]["count"]
            chosen = self._rng.permutation(len(locations))[: abs(count)]
            locations = [locations[i] for i in sorted(chosen)]
        return [legal[loc][int(self._rng.integers(len(legal[loc])))] for loc in locations]


class _HeuristicBot(_Bot):
    """Dispatches a phase to the bot's movement, retreat, build or removal rule; each rule
    returns location -> order, built only from (or checked against) the legal lists."""

    def orders(self, info: dict[str, Any]) -> list[str]:
        board = Board(info)
        if board.phase_type == "M":
            plan = self._movement(board)
        elif board.phase_type == "R":
            plan = self._retreats(board)
        elif board.build_count > 0:
            plan = self._builds(board)
        else:
            plan = self._removals(board)
        return [plan[loc] for loc in info["orderable_locations"] if loc in plan]

    @abstractmethod
    def _movement(self, board: Board) -> dict[str, str]:
        """Location -> order for a movement phase."""

    @abstractmethod
    def _retreat_goals(self, board: Board) -> Collection[str]:
        """The provinces a retreat should land on or near."""

    def _retreat_key(self, board: Board, unit: Unit) -> tuple:
        """Sort key of a retreat of the (relocated) ``unit``, smaller is better: where the
        fewest enemy units can follow; then on one of the bot's goals; then near them."""
        place, goals = province(unit[1]), self._retreat_goals(board)
        return (board.enemy_reach[place], place not in goals, board.graph.nearest(unit, goals))

    @abstractmethod
    def _build_key(self, board: Board, unit: Unit, planned: list[Unit]) -> tuple:
        """Sort key of building ``unit`` after the ``planned`` builds: smaller is better."""

    @abstractmethod
    def _removal_key(self, board: Board, unit: Unit) -> tuple:
        """Sort key of disbanding ``unit``: the smallest keys are removed."""

    def _retreats(self, board: Board) -> dict[str, str]:
        """Each dislodged unit takes its best retreat by ``_retreat_key``; it disbands only when
        no retreat is legal."""
        plan = {}
        for loc, orders in board.legal.items():
            retreats = [
                (self._retreat_key(board, (order[0], order.split()[3])), self._jitter(), order)
                for order in orders
                if " R " in order
            ]
            disbands = [order for order in orders if order.endswith(" D")]
            plan[loc] = min(retreats)[-1] if retreats else disbands[0]
        return plan

    def _builds(self, board: Board) -> dict[str, str]:
        """As many builds as are due, one per site, each the best by ``_build_key``."""
        legal = board.legal
        planned: list[Unit] = []
        plan: dict[str, str] = {}
        for _ in range(min(board.build_count, len(legal))):
            loc, order = min(
                (self._build_key(board, _unit_of(order), planned), self._jitter(), loc, order)
                for loc, orders in legal.items()
                if loc not in plan
                for order in orders
                if order != "WAIVE"
            )[2:]
            plan[loc] = order
            planned.append(_unit_of(order))
        return plan

    def _removals(self, board: Board) -> dict[str, str]:
        """As many removals as are due, of the units with the smallest ``_removal_key``."""
        legal = board.legal
        disbands = {
            loc: order for loc, orders in legal.items() for order in orders if order.endswith(" D")
        }
        ranked = sorted(
            (self._removal_key(board, _unit_of(order)), self._jitter(), loc)
            for loc, order in disbands.items()
        )
        due = -board.build_count
        return {loc: disbands[loc] for _, _, loc in ranked[:due]}


class GreedySCBot(_HeuristicBot):
    """Each unit heads for the nearest supply centre its power does not own (module
    docstring); the seed only breaks ties."""

    def _movement(self, board: Board) -> dict[str, str]:
        legal = board.legal
        units = board.own_units()
        plan: dict[str, str] = {}
        staying: set[str] = set()  # provinces an own unit keeps this phase
        for loc, unit in units.items():
            here = province(unit[1])
            if here in board.my_homes and board.contested(here):
                plan[loc] = f"{unit_text(unit)} H"
                staying.add(here)
        free = {loc: unit for loc, unit in units.items() if loc not in plan}
        assignment = self._assign(free, board)
        for loc, (target, steps) in assignment.items():
            if steps == 0:
                plan[loc] = f"{unit_text(free[loc])} H"
                staying.add(target)
        moving: dict[str, Unit] = {}  # destination province -> own unit moving there
        movers = sorted(
            (steps, self._jitter(), loc) for loc, (_, steps) in assignment.items() if steps > 0
        )
        for steps, _, loc in movers:
            unit = free[loc]
            plan[loc] = self._step(
                unit, assignment[loc][0], steps, board, legal[loc], staying, moving
            )
            destination = move_destination(plan[loc])
            if destination is not None:
                moving[province(destination)] = unit
            else:
                staying.add(province(unit[1]))
        idle = [loc for loc in free if loc not in assignment]
        self._convoy(idle, free, board, legal, plan, moving)
        for loc in idle:
            if loc not in plan:
                plan[loc] = self._support_or_hold(free[loc], board, legal[loc], moving)
        return plan

    def _assign(self, units: dict[str, Unit], board: Board) -> dict[str, tuple[str, int]]:
        """Unit location -> (target centre, moves to it): closest pairs first, each target
        once; units left over (more units than reachable targets) take their nearest target.
        Units no target is reachable from are left out."""
        graph = board.graph
        pairs = sorted(
            (steps, self._jitter(), loc, target)
            for loc, unit in units.items()
            for target in board.targets
            if (steps := graph.steps(unit, target)) < UNREACHABLE
        )
        assignment: dict[str, tuple[str, int]] = {}
        taken: set[str] = set()
        for steps, _, loc, target in pairs:
            if loc not in assignment and target not in taken:
                assignment[loc] = (target, steps)
                taken.add(target)
        for steps, _, loc, target in pairs:
            if loc not in assignment:
                assignment[loc] = (target, steps)
        return assignment

    def _step(
        self,
        unit: Unit,
        target: str,
        steps: int,
        board: Board,
        legal: list[str],
        staying: set[str],
        moving: dict[str, Unit],
    ) -> str:
        """The order of a unit heading for ``target``, ``steps`` moves away.

        In turn: a move along a shortest path that no own unit blocks (see
        :meth:`_open_moves`); support for the own unit already moving there when an enemy can
        contest that province; a free move toward the next nearest target; support or hold.
        """
        options = self._open_moves(unit, target, steps, board, legal, staying, moving)
        if options:
            return options[0]
        for there in board.graph.moves[unit]:
            place = province(there)
            if (
                place in moving
                and board.contested(place)
                and board.graph.steps((unit[0], there), target) == steps - 1
            ):
                support = f"{unit_text(unit)} S {unit_text(moving[place])} - {place}"
                if support in legal:
                    return support
        others = sorted(
            (board.graph.steps(unit, other), self._jitter(), other)
            for other in board.targets
            if other != target and board.graph.steps(unit, other) < UNREACHABLE
        )
        for other_steps, _, other in others:
            options = self._open_moves(unit, other, other_steps, board, legal, staying, moving)
            if options:
                return options[0]
        return self._support_or_hold(unit, board, legal, moving)

    def _open_moves(
        self,
        unit: Unit,
        target: str,
        steps: int,
        board: Board,
        legal: list[str],
        staying: set[str],
        moving: dict[str, Unit],
    ) -> list[str]:
        """Legal moves one step closer to ``target`` into provinces no own unit keeps, enters,
        or leaves toward this unit's province (a swap bounces); unowned centres first."""
        graph = board.graph
        swapping_in = moving.get(province(unit[1]))
        ranked = []
        for there in graph.moves[unit]:
            place = province(there)
            order = f"{unit_text(unit)} - {there}"
            if (
                graph.steps((unit[0], there), target) == steps - 1
                and order in legal
                and place not in staying
                and place not in moving
                and (swapping_in is None or board.occupant.get(place, ("", None))[1] != swapping_in)
            ):
                ranked.append((place not in board.targets, self._jitter(), order))
        return [order for *_, order in sorted(ranked)]

    def _convoy(
        self,
        idle: list[str],
        units: dict[str, Unit],
        board: Board,
        legal: dict[str, list[str]],
        plan: dict[str, str],
        moving: dict[str, Unit],
    ) -> None:
        """Convoy each army that no land path leads to a target over one own fleet, to the
        landing nearest a target; the fleet (idle, or giving up its move or support for the
        phase) must not be holding a province."""
        graph = board.graph
        fleets = {
            loc: unit
            for loc, unit in units.items()
            if unit[0] == "F" and not plan.get(loc, "").endswith(" H")
        }
        for loc in idle:
            army = units[loc]
            if army[0] != "A":
                continue
            best = None
            for order in legal[loc]:
                landing = order.split()[3] if order.endswith(" VIA") else None
                if landing is None or landing in moving:
                    continue
                distance = 0
                if landing not in board.targets:
                    distance = 1 + graph.nearest(("A", landing), board.targets)
                if distance >= UNREACHABLE:
                    continue
                for fleet_loc, fleet in fleets.items():
                    convoy = f"{unit_text(fleet)} C {unit_text(army)} - {landing}"
                    if convoy in legal[fleet_loc]:
                        choice = (distance, self._jitter(), order, fleet_loc, convoy)
                        best = choice if best is None else min(best, choice)
            if best is not None:
                _, _, order, fleet_loc, convoy = best
                given_up = move_destination(plan.get(fleet_loc, ""))
                if given_up is not None:
                    del moving[province(given_up)]
                plan[loc], plan[fleet_loc] = order, convoy
                moving[move_destination(order)] = army
                del fleets[fleet_loc]

    def _support_or_hold(
        self, unit: Unit, board: Board, legal: list[str], moving: dict[str, Unit]
    ) -> str:
        """Support an own move into the most contested neighbouring province, else hold."""
        supports = [
            (-board.enemy_reach[place], self._jitter(), order)
            for place, mover in moving.items()
            if board.contested(place)
            and (order := f"{unit_text(unit)} S {unit_text(mover)} - {place}") in legal
        ]
        return min(supports)[2] if supports else f"{unit_text(unit)} H"

    def _retreat_goals(self, board: Board) -> Collection[str]:
        return board.targets

    def _build_key(self, board: Board, unit: Unit, planned: list[Unit]) -> tuple:
        """Nearest to a target no planned build aims at; then the type the power has fewer of."""
        aimed = {self._nearest_target(board, built) for built in planned}
        open_targets = [target for target in board.targets if target not in aimed]
        types = Counter(text.lstrip("*")[0] for text in board.info["state"]["units"][board.power])
        types.update(built[0] for built in planned)
        return (board.graph.nearest(unit, open_targets or board.targets), types[unit[0]])

    def _nearest_target(self, board: Board, unit: Unit) -> str | None:
        return min(board.targets, key=lambda target: board.graph.steps(unit, target), default=None)

    def _removal_key(self, board: Board, unit: Unit) -> tuple:
        """Farthest from any target first."""
        return (-board.graph.nearest(unit, board.targets),)


class DefensiveBot(_HeuristicBot):
    """Garrisons and supports its own centres first (module docstring); the seed only breaks
    ties."""

    def _movement(self, board: Board) -> dict[str, str]:
        legal = board.legal
        units = board.own_units()
        plan: dict[str, str] = {}
        moving: set[str] = set()  # destination provinces of own moves
        held = {province(unit[1]) for unit in units.values()}
        # Garrisons on threatened own centres, and units on unowned centres (taken in the fall),
        # stay.
        for loc, unit in units.items():
            here = province(unit[1])
            threatened = here in board.my_centres and board.contested(here)
            if threatened or here in board.targets:
                plan[loc] = f"{unit_text(unit)} H"
        # Empty threatened own centres get the nearest free unit, off-centre units first.
        empty = sorted(
            (-board.enemy_reach[centre], self._jitter(), centre)
            for centre in sorted(board.my_centres)
            if centre not in held and board.contested(centre)
        )
        for _, _, centre in empty:
            fillers = [
                (province(unit[1]) in board.my_centres, self._jitter(), loc, order)
                for loc, unit in units.items()
                if loc not in plan and (order := board.move_into(unit, centre, legal[loc]))
            ]
            if fillers:
                loc, order = min(fillers)[2:]
                plan[loc] = order
                moving.add(centre)
        # Free neighbours support threatened garrisons, the least supported first, as many
        # supports as enemy units can attack.
        garrisons = {
            province(units[loc][1]): units[loc]
            for loc, order in plan.items()
            if order.endswith(" H") and province(units[loc][1]) in board.my_centres
        }
        supports: Counter[str] = Counter()
        for loc, unit in units.items():
            if loc in plan:
                continue
            options = [
                (supports[place] - board.enemy_reach[place], self._jitter(), place, order)
                for place, garrison in garrisons.items()
                if supports[place] < board.enemy_reach[place]
                and (order := f"{unit_text(unit)} S {unit_text(garrison)}") in legal[loc]
            ]
            if options:
                place, order = min(options)[2:]
                plan[loc] = order
                supports[place] += 1
        # The rest take an uncontested neighbouring centre, else (off own centres) head for the
        # nearest own centre nobody garrisons, else hold.
        unguarded = [centre for centre in sorted(board.my_centres) if centre not in held]
        for loc, unit in units.items():
            if loc in plan:
                continue
            grabs = [
                (self._jitter(), order)
                for place in sorted(board.graph.reach[unit])
                if place in board.targets
                and place not in moving
                and place not in board.occupant
                and not board.contested(place)
                and (order := board.move_into(unit, place, legal[loc]))
            ]
            if grabs:
                order = min(grabs)[1]
            elif province(unit[1]) not in board.my_centres:
                order = self._toward(unit, unguarded, board, legal[loc], moving, held)
            else:
                order = f"{unit_text(unit)} H"
            plan[loc] = order
            destination = move_destination(order)
            if destination is not None:
                moving.add(province(destination))
        return plan

    def _toward(
        self,
        unit: Unit,
        places: list[str],
        board: Board,
        legal: list[str],
        moving: set[str],
        held: set[str],
    ) -> str:
        """One move on a shortest path to the nearest of ``places`` into a province no own unit
        holds or enters; hold when there is none."""
        graph = board.graph
        steps = graph.nearest(unit, places)
        options = [
            (self._jitter(), order)
            for there in graph.moves[unit]
            if province(there) not in moving
            and province(there) not in held
            and graph.nearest((unit[0], there), places) == steps - 1
            and (order := f"{unit_text(unit)} - {there}") in legal
        ]
        return min(options)[1] if options and steps < UNREACHABLE else f"{unit_text(unit)} H"

    def _retreat_goals(self, board: Board) -> Collection[str]:
        return board.my_centres

    def _build_key(self, board: Board, unit: Unit, planned: list[Unit]) -> tuple:
        """The most threatened site; then the type that can enter the most threatened own
        centres; then the more mobile type."""
        threatened = {centre for centre in board.my_centres if board.contested(centre)}
        reach = board.graph.reach[unit]
        return (
            -board.enemy_reach[province(unit[1])],
            -len(reach & threatened),
            -len(reach),
        )

    def _removal_key(self, board: Board, unit: Unit) -> tuple:
        """Farthest from any own centre first; then the least threatened position."""
        return (
            -board.graph.nearest(unit, board.my_centres),
            board.enemy_reach[province(unit[1])],
        )
