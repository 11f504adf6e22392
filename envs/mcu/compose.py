"""Composite MCU tasks: atomic tasks joined by ``and``, ``or`` and ``then`` into one task.

MCU (Zheng et al., "MCU: An Evaluation Framework for Open-Ended Game Agents", ICML 2025;
``docs/mcu.md``) builds harder tasks by composing atomic ones ("A and B or C", "A, then B").
MCU leaves the precedence open; here ``then`` splits the list into stages (it binds loosest) and,
within a stage, ``and`` binds tighter than ``or``. This module parses the operator list into a
tree, writes the joined instruction, checks that the parts' ``requires`` agree, and merges the
parts' init commands into one scene:

- commands other than items given are kept once each (a union);
- items given (``give``, and ``replaceitem`` into a hand, hotbar or inventory slot) are summed
  over ``and`` and ``then`` and take the maximum over ``or``;
- each part's placements (``setblock``, ``fill``, ``summon``) move by a seeded offset so the
  parts' footprints do not overlap, never closer to the player and inside the arena.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from omnigym.envs.mcu.difficulty import (
    ARENA_REACH,
    SCENE_VERBS,
    corners,
    moved,
    relative_placement,
)
from omnigym.envs.mcu.init_commands import ARMOR_SLOTS, Command
from omnigym.envs.mcu.predicates import Predicate
from omnigym.envs.mcu.tasks import Milestone, Task

OPS = ("and", "or", "then")
JOINERS = {"and": " and ", "or": " or ", "then": ", then "}
OFFSET = 10
"""Largest shift, per axis, of a part's placements."""
GAP = 1
"""Free nodes kept between two parts' footprints."""
LAYOUT_TRIES = 400


def parse(names: list[str], ops: list[str]) -> dict[str, Any]:
    """The composition tree: ``{"task": name}`` leaves under ``{"op": ..., "parts": [...]}``
    nodes (``then`` over ``or`` over ``and``; a node with one part is its part)."""
    if len(names) < 1 or len(set(names)) != len(names):
        raise ValueError(f"tasks must name one or more distinct tasks, got {names!r}")
    if len(ops) != len(names) - 1:
        raise ValueError(f"ops must have one entry fewer than tasks: {len(names)} tasks, {ops!r}")
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        raise ValueError(f"ops must each be one of {OPS}, got {unknown}")
    stages: list[list[list[dict]]] = [[[{"task": names[0]}]]]
    for op, name in zip(ops, names[1:], strict=True):
        leaf = {"task": name}
        if op == "then":
            stages.append([[leaf]])
        elif op == "or":
            stages[-1].append([leaf])
        else:
            stages[-1][-1].append(leaf)
    return _node("then", [_node("or", [_node("and", g) for g in stage]) for stage in stages])


def _node(op: str, parts: list[dict]) -> dict[str, Any]:
    return parts[0] if len(parts) == 1 else {"op": op, "parts": parts}


def leaves(tree: dict[str, Any]) -> list[str]:
    """The task names of a tree, in reading order."""
    if "task" in tree:
        return [tree["task"]]
    return [name for part in tree["parts"] for name in leaves(part)]


def text(parts: list[Task], ops: list[str]) -> str:
    """The parts' instructions joined by their operators ("A and B, then C.")."""
    clauses = [part.text.strip().rstrip(".") for part in parts]
    clauses[1:] = [c[:1].lower() + c[1:] for c in clauses[1:]]
    joined = clauses[0] + "".join(JOINERS[op] + c for op, c in zip(ops, clauses[1:], strict=True))
    return joined + "."


def check_requires(parts: list[Task]) -> None:
    """Raises ``ValueError`` naming both tasks when two parts require different values of the
    same condition (``time: day`` and ``time: night``)."""
    seen: dict[str, tuple[str, Any]] = {}
    for part in parts:
        for key, value in part.requires.items():
            if key in seen and seen[key][1] != value:
                first, other = seen[key]
                raise ValueError(
                    f"tasks {first!r} and {part.name!r} conflict: {first!r} requires "
                    f"{key}: {other}, {part.name!r} requires {key}: {value}"
                )
            seen.setdefault(key, (part.name, value))


def _given(command: Command) -> tuple[tuple[str, int], int] | None:
    """``((item, damage), count)`` a command hands the player into the inventory, if it does
    (worn tools stay apart from unworn ones)."""
    if command.verb == "give":
        damage = command.args[2] if len(command.args) > 2 else 0
        return (command.args[0], damage), command.args[1]
    if command.verb == "replaceitem" and command.args[0] not in ARMOR_SLOTS:
        return (command.args[1], 0), command.args[2]
    return None


def _gives(tree: dict[str, Any], by_name: dict[str, Task]) -> Counter:
    if "task" in tree:
        out: Counter = Counter()
        for command in by_name[tree["task"]].init:
            if (item := _given(command)) is not None:
                out[item[0]] += item[1]
        return out
    counts = [_gives(part, by_name) for part in tree["parts"]]
    total: Counter = Counter()
    for count in counts:
        total = total | count if tree["op"] == "or" else total + count
    return total


def _spots(commands: tuple[Command, ...]) -> list[tuple[int, int]]:
    return [
        (c[0].value, c[2].value)
        for command in commands
        if command.verb in SCENE_VERBS and relative_placement(command)
        for c in corners(command)
    ]


def _fits(spots: list, dx: int, dz: int, taken: list) -> bool:
    """Every spot moved stays in the arena and no closer to the player (at least two nodes
    away), and the moved box keeps :data:`GAP` nodes from every box in ``taken``."""
    if not all(
        max(abs(x + dx), abs(z + dz)) <= ARENA_REACH
        and math.hypot(x + dx, z + dz) >= max(math.hypot(x, z), 2)
        for x, z in spots
    ):
        return False
    x0, z0, x1, z1 = _box(spots, dx, dz)
    return all(
        x0 > t[2] + GAP or x1 < t[0] - GAP or z0 > t[3] + GAP or z1 < t[1] - GAP for t in taken
    )


def _box(spots: list, dx: int, dz: int) -> tuple[int, int, int, int]:
    xs, zs = zip(*spots, strict=True)
    return min(xs) + dx, min(zs) + dz, max(xs) + dx, max(zs) + dz


def layout(parts: list[Task], rng: np.random.Generator) -> list[tuple[int, int]]:
    """A seeded ``(dx, dz)`` per part such that the parts' placement boxes, shifted, keep
    :data:`GAP` nodes apart, inside the arena and no closer to the player."""
    taken: list[tuple[int, int, int, int]] = []
    offsets = []
    for part in parts:
        spots = _spots(part.init)
        if not spots:
            offsets.append((0, 0))
            continue
        for _ in range(LAYOUT_TRIES):
            dx, dz = (int(v) for v in rng.integers(-OFFSET, OFFSET + 1, size=2))
            if _fits(spots, dx, dz, taken):
                break
        else:
            raise ValueError(f"no room in the arena for task {part.name!r} beside the others")
        taken.append(_box(spots, dx, dz))
        offsets.append((dx, dz))
    return offsets


def merge(
    parts: list[Task], tree: dict[str, Any], ops: list[str], rng: np.random.Generator
) -> Task:
    """One task holding the composition: the merged scene, the joined instruction, every
    part's milestones (weights shared evenly between parts), and a success predicate that
    ignores order (the composite environment tracks stages itself)."""
    check_requires(parts)
    by_name = {part.name: part for part in parts}
    commands: list[Command] = []
    for part, (dx, dz) in zip(parts, layout(parts, rng), strict=True):
        for command in part.init:
            if _given(command) is None and (shifted := moved(command, dx, dz)) not in commands:
                commands.append(shifted)
    gives = [
        Command("give", (item, n, damage) if damage else (item, n), "composition")
        for (item, damage), n in _gives(tree, by_name).items()
    ]
    relevant: dict[str, list[str]] = {}
    for part in parts:
        for key, names in part.relevant.items():
            relevant[key] = sorted(set(relevant.get(key, ())) | set(names))
    categories = {part.category for part in parts}
    return Task(
        name=_name(tree),
        category=categories.pop() if len(categories) == 1 else "Composite",
        subcategory="Composite",
        text=text(parts, ops),
        init=tuple(gives + commands),
        success=_success(tree, by_name),
        milestones=tuple(
            Milestone(m.when, m.weight / len(parts)) for part in parts for m in part.milestones
        ),
        oracle={"solver": "sequence", "parts": [part.oracle for part in parts]},
        relevant=relevant,
        requires={k: v for part in parts for k, v in part.requires.items()},
        max_steps=max(part.max_steps for part in parts),
    )


def _name(tree: dict[str, Any]) -> str:
    if "task" in tree:
        return tree["task"]
    return f"_{tree['op']}_".join(_name(part) for part in tree["parts"])


def _success(tree: dict[str, Any], by_name: dict[str, Task]) -> Predicate:
    """The parts' success predicates under ``and`` (also for ``then``) and ``or``."""
    if "task" in tree:
        return by_name[tree["task"]].success
    op = "or" if tree["op"] == "or" else "and"
    parts = [_success(part, by_name) for part in tree["parts"]]
    source = f" {op} ".join(f"({part.source})" for part in parts)
    return Predicate(source, (op, [part.tree for part in parts]))
