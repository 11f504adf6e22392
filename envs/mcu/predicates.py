"""Success and milestone predicates of MCU tasks, parsed by a small grammar (no ``eval``).

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) judges success afterwards from video with a
vision-language model; here each task file states its success and milestones as predicates over
the world state and the episode's event counters, checked after every command. Grammar::

    expr  := conj ("or" conj)*
    conj  := neg ("and" neg)*
    neg   := "not" neg | atom
    atom  := "(" expr ")" | call [(">=" | "<=" | "==") number]
    call  := name ["(" arg ("," arg)* ")"]

Every call is a number; a call without a comparison holds when it is at least 1. Arguments are
registry names, ``#tags`` (``#logs``: any log), or numbers. A malformed predicate, an unknown
function or an unknown name raises ``ValueError`` naming the task file, the field and the
character position.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from omnigym.envs.mcu.registries import Registry
from omnigym.envs.mcu.structures import MEASURES
from omnigym.envs.mcu.world import MCUWorld

_TOKEN = re.compile(r"\s*(?:(>=|<=|==)|([(),])|(#?[A-Za-z_][A-Za-z0-9_]*)|(-?\d+(?:\.\d+)?))")
COMPARISONS = {">=": float.__ge__, "<=": float.__le__, "==": float.__eq__}
EVENT_COUNTERS = {
    "crafted": "items",
    "smelted": "items",
    "mined": "blocks",
    "placed": "blocks",
    "killed": "mobs",
    "damaged": "mobs",
    "dropped": "items",
    "ate": "items",
    "slept_in": "blocks",
    "brewed": "items",
    "drank": "items",
    "traded": "items",
    "repaired": "items",
    "renamed": "items",
    "combined": "items",
    "planted": "items",
    "used": "items",
    "tamed": "mobs",
    "leashed": "mobs",
    "tied": "mobs",
    "fed": "mobs",
}
"""Counters of the event log: function -> the registry its argument names."""
STRUCTURES = tuple(MEASURES)


def _names(world: MCUWorld, name: str) -> tuple[str, ...]:
    return world.registry.members(name)


def _event(kind: str) -> Callable[[MCUWorld, str], float]:
    return lambda world, name: float(sum(world.events[kind, n] for n in _names(world, name)))


def _inventory_has(world: MCUWorld, item: str, n: float = 1) -> float:
    return float(sum(world.count(name) for name in _names(world, item)) >= n)


def _near(world: MCUWorld, name: str, radius: float) -> float:
    if name in world.registry.mobs:
        return float(
            any(m.kind.name == name and world.distance_to(m.position) <= radius for m in world.mobs)
        )
    return float(any(world.cells_of(block, int(radius)) for block in _names(world, name)))


def _enchanted(world: MCUWorld, item: str, enchantment: str | None = None) -> float:
    key = ("enchanted", item) if enchantment is None else ("enchanted", item, enchantment)
    return float(world.events[key])


FUNCTIONS: dict[str, tuple[tuple[str, ...], int, Callable]] = {
    **{name: ((kind,), 1, _event(name)) for name, kind in EVENT_COUNTERS.items()},
    "inventory_has": (("items", "number"), 1, _inventory_has),
    "near": (("any", "number"), 2, _near),
    "y_below": (("number",), 1, lambda world, h: float(world.position[1] < h)),
    "climbed": (("number",), 1, lambda world, h: float(world.max_y - world.start_y >= h)),
    "structure": (
        ("structure", "number"),
        2,
        lambda world, template, n: float(MEASURES[template](world) >= n),
    ),
    "enchanted": (("items", "enchantment"), 1, _enchanted),
    "trapped": (
        ("mobs",),
        1,
        lambda world, name: float(
            sum(m.kind.name in _names(world, name) and world.penned(m) for m in world.mobs)
        ),
    ),
    "in_biome": (("biome",), 1, lambda world, b: float(world.biome() == b)),
    "underwater_ticks": ((), 0, lambda world: float(world.underwater_ticks)),
    "levels": ((), 0, lambda world: float(world.levels)),
}
"""name -> (argument kinds, how many are required, evaluator)."""


@dataclass(frozen=True)
class Predicate:
    """A compiled predicate: ``predicate(world)`` is True when it holds."""

    source: str
    tree: tuple

    def __call__(self, world: MCUWorld) -> bool:
        return _holds(self.tree, world)

    def names(self) -> set[str]:
        """Every registry name its calls mention (for a task's ``relevant`` set)."""
        return {arg for _, args in self.calls() for arg in args if isinstance(arg, str)}

    def calls(self) -> list[tuple[str, tuple]]:
        """Every call as ``(function, arguments)``, in reading order."""
        found: list[tuple[str, tuple]] = []
        _collect(self.tree, found)
        return found


def _collect(tree: tuple, found: list[tuple[str, tuple]]) -> None:
    if tree[0] == "call":
        found.append((tree[1], tree[2]))
    else:
        for child in tree[1:]:
            if isinstance(child, tuple):
                _collect(child, found)
            elif isinstance(child, list):
                for item in child:
                    _collect(item, found)


def _value(call: tuple, world: MCUWorld) -> float:
    _, name, args = call
    return FUNCTIONS[name][2](world, *args)


def _holds(tree: tuple, world: MCUWorld) -> bool:
    kind = tree[0]
    if kind == "or":
        return any(_holds(child, world) for child in tree[1])
    if kind == "and":
        return all(_holds(child, world) for child in tree[1])
    if kind == "not":
        return not _holds(tree[1], world)
    if kind == "cmp":
        return COMPARISONS[tree[1]](_value(tree[2], world), tree[3])
    return _value(tree, world) >= 1


class _Parser:
    def __init__(self, text: str, where: str, registry: Registry):
        self.text, self.where, self.registry = text, where, registry
        self.tokens: list[tuple[str, str, int]] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                if text[position:].strip() == "":
                    break
                position += len(text[position:]) - len(text[position:].lstrip())
                self.fail(position, f"unexpected character {text[position]!r}")
            for group, kind in zip(match.groups(), ("cmp", "punct", "name", "number"), strict=True):
                if group is not None:
                    self.tokens.append((kind, group, match.start(match.lastindex)))
            position = match.end()
        self.index = 0

    def fail(self, position: int, message: str):
        raise ValueError(f"{self.where}: position {position}: {message} in {self.text!r}")

    def peek(self) -> tuple[str, str, int]:
        if self.index < len(self.tokens):
            return self.tokens[self.index]
        return ("end", "", len(self.text))

    def take(self, value: str | None = None, kind: str | None = None) -> tuple[str, str, int]:
        token = self.peek()
        if (value is not None and token[1] != value) or (kind is not None and token[0] != kind):
            expected = repr(value) if value is not None else f"a {kind}"
            found = "the end" if token[0] == "end" else repr(token[1])
            self.fail(token[2], f"expected {expected}, found {found}")
        self.index += 1
        return token

    def parse(self) -> tuple:
        tree = self.disjunction()
        if self.peek()[0] != "end":
            self.fail(self.peek()[2], f"unexpected {self.peek()[1]!r}")
        return tree

    def disjunction(self) -> tuple:
        parts = [self.conjunction()]
        while self.peek()[1] == "or":
            self.take("or")
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else ("or", parts)

    def conjunction(self) -> tuple:
        parts = [self.negation()]
        while self.peek()[1] == "and":
            self.take("and")
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else ("and", parts)

    def negation(self) -> tuple:
        if self.peek()[1] == "not":
            self.take("not")
            return ("not", self.negation())
        return self.atom()

    def atom(self) -> tuple:
        if self.peek()[1] == "(":
            self.take("(")
            tree = self.disjunction()
            self.take(")")
            return tree
        call = self.call()
        if self.peek()[0] == "cmp":
            op = self.take(kind="cmp")[1]
            return ("cmp", op, call, float(self.take(kind="number")[1]))
        return call

    def call(self) -> tuple:
        _, name, position = self.take(kind="name")
        if name not in FUNCTIONS:
            self.fail(position, f"unknown function {name!r} (known: {', '.join(FUNCTIONS)})")
        kinds, required, _ = FUNCTIONS[name]
        args: list = []
        if self.peek()[1] == "(":
            self.take("(")
            while True:
                if len(args) == len(kinds):
                    self.fail(self.peek()[2], f"{name} takes at most {len(kinds)} arguments")
                args.append(self.argument(kinds[len(args)]))
                if self.peek()[1] != ",":
                    break
                self.take(",")
            self.take(")")
        if len(args) < required:
            self.fail(position, f"{name} takes at least {required} arguments")
        return ("call", name, tuple(args))

    def argument(self, kind: str):
        if kind == "number":
            return float(self.take(kind="number")[1])
        _, value, position = self.take(kind="name")
        registry = self.registry
        if value.startswith("#"):
            if value[1:] not in registry.tags:
                self.fail(position, f"unknown tag {value!r}")
            return value
        known = {
            "items": registry.items,
            "blocks": registry.blocks,
            "mobs": registry.mobs,
            "structure": STRUCTURES,
            "enchantment": registry.enchantments,
            "biome": registry.biomes,
            "any": {**registry.items, **registry.blocks, **registry.mobs},
        }[kind]
        if value not in known:
            self.fail(position, f"unknown {kind.rstrip('s')} {value!r}")
        return value


def compile_predicate(text: str, where: str, registry: Registry) -> Predicate:
    """Parses ``text``; ``where`` names the task file and field in error messages."""
    return Predicate(str(text), _Parser(str(text), where, registry).parse())
