"""The engine's own DATC cases, fed through ``DiplomacyEnv.step()``.

The ``diplomacy`` package ships the DATC adjudication cases (Kruijswijk's Diplomacy Adjudicator
Test Cases) as ``diplomacy/tests/test_datc.py``. This harness reads that file's syntax tree (it
imports nothing from it): for each case it collects the position set-up calls (``clear_units``,
``clear_centers``, ``set_units``, ``set_centers``, ``move_to_phase``), the orders given before
each ``process`` and the owners the case asserts (``owner_name(game, unit) == power``). Each
case is then played twice: on a bare engine ``Game`` exactly as the case does, and through the
env: the position is exported with the engine's saved-game function, loaded with
``reset(options={"saved_game": ...})`` and each turn's orders are given as ``orders`` actions.
The positions after every turn (units, dislodged units with their retreats, centres) must be
identical, the case's owner assertions must hold on the env's game, and every order the engine
would drop must appear in the env's ``invalid_orders``.

The env accepts only strings from its legal lists, while DATC writes orders loosely (``F GAS -
SPA`` for ``F GAS - SPA/NC``, ``A LON - BEL`` for a convoyed move). The harness therefore gives
each order in the engine's own reading of it (what ``set_orders`` records for it alone), with
``VIA`` added where the legal list says it; orders the engine drops are given as written. One
case has an order the engine accepts that no legal list holds (a support of a move only a
convoy could make, DATC 6.D.31): it is checked separately.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import omnigym

SET_UP = ("clear_units", "clear_centers", "set_units", "set_centers", "move_to_phase")
INEXPRESSIBLE = {"test_6_d_31"}
"""Cases with an order the engine accepts that is in no legal list (see module docstring)."""


@dataclass
class DatcCase:
    name: str
    set_up: list[tuple[str, list]] = field(default_factory=list)
    turns: list[dict[str, list[str]]] = field(default_factory=list)
    owners: list[tuple[int, str, str | None]] = field(default_factory=list)
    """(turns processed, unit, expected owner) from the case's ``owner_name`` assertions."""


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return None


def _statements(body: list[ast.stmt]):
    """The statements of a case, with the bodies of ``if game.phase_type == ...`` inlined (the
    env's game is in that phase after loading the position)."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _statements(statement.body)
        else:
            yield statement


def _parse(function: ast.FunctionDef) -> DatcCase | None:
    """The case ``function`` describes, or None when it does something this harness does not
    model (set-up after the first orders, other calls)."""
    case = DatcCase(function.name)
    turn: dict[str, list[str]] = {}
    for statement in _statements(function.body):
        if isinstance(statement, ast.Assign) and _call_name(statement.value) == "create_game":
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            name = _call_name(statement.value)
            args = [ast.literal_eval(arg) for arg in statement.value.args[1:]]
            if name in SET_UP:
                if case.turns or turn:
                    return None
                case.set_up.append((name, args))
            elif name == "set_orders":
                power, orders = args
                turn.setdefault(power, []).extend([orders] if isinstance(orders, str) else orders)
            elif name == "process":
                case.turns.append(turn)
                turn = {}
            else:
                return None
            continue
        if isinstance(statement, ast.Assert):
            test = statement.test
            if (
                isinstance(test, ast.Compare)
                and _call_name(test.left) == "owner_name"
                and isinstance(test.ops[0], ast.Eq | ast.Is)
            ):
                unit = ast.literal_eval(test.left.args[1])
                owner = ast.literal_eval(test.comparators[0])
                case.owners.append((len(case.turns), unit, owner))
            continue
        return None
    return case if case.turns else None


_DATC_SPEC = importlib.util.find_spec("diplomacy.tests.test_datc")


def load_cases() -> list[DatcCase]:
    tree = ast.parse(Path(_DATC_SPEC.origin).read_text())
    suite = next(node for node in tree.body if isinstance(node, ast.ClassDef))
    cases = []
    for function in suite.body:
        if isinstance(function, ast.FunctionDef) and function.name.startswith("test_6_"):
            case = _parse(function)
            if case is not None and case.name not in INEXPRESSIBLE:
                cases.append(case)
    return cases


CASES = load_cases()


def _set_up(game, case: DatcCase) -> None:
    for name, args in case.set_up:
        if name == "move_to_phase":
            game.set_current_phase(*args)
        else:
            getattr(game, name)(*args)


def _position(game) -> dict:
    state = game.get_state()
    return {
        "phase": state["name"],
        "units": {power: sorted(units) for power, units in state["units"].items()},
        "retreats": {
            power: {unit: sorted(options) for unit, options in retreats.items()}
            for power, retreats in state["retreats"].items()
        },
        "centers": {power: sorted(centers) for power, centers in state["centers"].items()},
    }


def _owner(game, unit: str) -> str | None:
    """The power with ``unit`` on the board, dislodged units aside (coast-exact when ``unit``
    names a coast), as the engine's ``_unit_owner`` reads it."""
    for power, units in game.get_state()["units"].items():
        for placed in units:
            if placed[0] == "*":
                continue
            if placed == unit or ("/" not in unit and placed.split("/")[0] == unit):
                return power
    return None


def _engine_positions(case: DatcCase) -> list[dict]:
    from diplomacy import Game

    game = Game()
    _set_up(game, case)
    positions = []
    for turn in case.turns:
        for power, orders in turn.items():
            game.set_orders(power, orders)
        game.process()
        positions.append(_position(game))
    return positions


def _legal_form(game, power: str, order: str, info: dict) -> tuple[str, str | None]:
    """What the harness passes for a DATC ``order`` and the engine's reading of it.

    The engine's reading is the order it records when given ``order`` alone on a copy of
    ``game`` (``None`` when it drops the order). A recorded convoyed move without ``VIA`` is
    given as the legal list's ``VIA`` form; an order the engine drops is passed as written (the
    env must report it)."""
    scratch = copy.deepcopy(game)
    scratch.clear_cache()  # the engine's deepcopy keeps a unit-owner cache of the old powers
    scratch.clear_orders()
    scratch.set_orders(power, [order])
    recorded = scratch.get_orders(power)
    if not recorded:
        return order, None
    [reading] = recorded
    words = reading.split()
    legal = info["possible_orders"].get(words[1][:3], []) if len(words) > 1 else []
    if reading not in legal and f"{reading} VIA" in legal:
        return f"{reading} VIA", reading
    return reading, reading


@dataclass
class EnvRun:
    env: object
    positions: list[dict]
    reports: list[dict[str, list[dict]]]
    dropped: list[tuple[str, str]]
    """(power, order) the engine drops, per its own reading."""
    inexpressible: list[tuple[str, str]]
    """(power, order) the engine accepts whose reading is in no legal list."""


def _env_run(env, case: DatcCase) -> EnvRun:
    from diplomacy import Game
    from diplomacy.utils.export import to_saved_game_format

    game = Game()
    _set_up(game, case)
    _, infos = env.reset(options={"saved_game": to_saved_game_format(game)})
    run = EnvRun(env, [], [], [], [])
    for turn in case.turns:
        actions = {power: [] for power in env.agents}
        for power in env.agents:
            for order in turn.get(power, []):
                given, reading = _legal_form(env.unwrapped.game, power, order, infos[power])
                actions[power].append(given)
                legal = infos[power]["possible_orders"]
                if reading is None:
                    run.dropped.append((power, order))
                elif not any(given in orders for orders in legal.values()):
                    run.inexpressible.append((power, order))
        _, _, _, _, infos = env.step(actions)
        run.positions.append(_position(env.unwrapped.game))
        run.reports.append({power: info["invalid_orders"] for power, info in infos.items()})
    return run


@pytest.fixture(scope="module")
def env():
    return omnigym.make("Diplomacy/Standard-v0", action_format="orders")


def test_the_harness_reads_at_least_thirty_datc_cases_with_orders():
    with_orders = [case for case in CASES if any(turn for turn in case.turns)]
    assert len(with_orders) >= 30
    assert len(CASES) >= 150


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_datc_case_through_step_matches_the_engine_and_the_case(env, case):
    run = _env_run(env, case)
    assert run.inexpressible == []
    assert run.positions == _engine_positions(case)
    # The case's own expectations about who stands where after its last turn.
    game = env.unwrapped.game
    checked = [(unit, owner) for turns, unit, owner in case.owners if turns == len(case.turns)]
    assert [(unit, _owner(game, unit)) for unit, _ in checked] == checked
    # Never silent: every order the engine would drop is reported by the env.
    reported = {
        (power, entry["order"])
        for report in run.reports
        for power, entries in report.items()
        for entry in entries
    }
    assert set(run.dropped) <= reported


def test_datc_6_a_1_illegal_move_is_reported_and_the_fleet_holds(env):
    case = next(case for case in CASES if case.name == "test_6_a_1")
    run = _env_run(env, case)
    [entry] = run.reports[0]["ENGLAND"]
    assert entry["order"] == "F NTH - PIC"
    assert "legal orders of NTH" in entry["reason"]
    assert _owner(env.unwrapped.game, "F NTH") == "ENGLAND"


def test_datc_6_d_31_support_of_a_convoy_has_no_legal_list_form(env):
    """The one DATC case the env cannot express: the engine accepts ``F BLA S A RUM - ARM``
    (support of a move only a convoy could make) but lists no such order; the env reports it."""
    function = next(
        node
        for node in ast.walk(ast.parse(Path(_DATC_SPEC.origin).read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "test_6_d_31"
    )
    run = _env_run(env, _parse(function))
    assert ("TURKEY", "F BLA S A RUM - ARM") in run.inexpressible
    reported = [entry["order"] for entry in run.reports[0]["TURKEY"]]
    assert "F BLA S A RUM - ARM" in reported
