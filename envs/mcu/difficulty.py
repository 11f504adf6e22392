"""Difficulty levels of MCU tasks: seeded perturbations of a task's scene at reset.

MCU (Zheng et al., "MCU: An Evaluation Framework for Open-Ended Game Agents", ICML 2025;
``docs/mcu.md``) ships each task in a simple and a hard version and reports a medium level in
between. Here ``simple`` is the task file as written; the other levels apply transforms that fit
the task, drawn from the environment's ``np_random`` at every reset:

- ``fewer_resources``: a given tool one tier lower (diamond → iron → stone → wooden) when the
  lower tier still harvests what the task mines, and given food the task does not ask for cut to
  one;
- ``distractor_items``: 15–25 stacks of items the task does not use added to the inventory
  (fewer when the inventory lacks room: six slots stay free for what the task makes);
- ``night``, ``thunder`` or ``blindness``: one of the three that the scene does not already
  have, so the visibility radius shrinks;
- ``hostile_mobs`` (combat tasks against hostile or neutral mobs: one or two more hostile mobs
  8–12 nodes away) or ``decoys`` (other tasks with a scene: two to four target-like blocks, or
  one or two other passive mobs, two to four nodes from the task's own);
- ``displaced_target``: everything the init commands place or summon moved 5–10 nodes in one
  of eight directions, never closer to the player and inside the arena.

``hard`` applies every transform that fits the task (as MCU's hard configs do), ``medium`` one
or two of them. :func:`build` returns the names applied, in the order above (the five names,
with the third and fourth naming the variant drawn); the same task, level and seed give the
same names and the same scene.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from omnigym.envs.mcu import init_commands
from omnigym.envs.mcu.evaluation import given, mine_targets, relevant
from omnigym.envs.mcu.init_commands import Command, Coordinate
from omnigym.envs.mcu.registries import Registry
from omnigym.envs.mcu.tasks import Task
from omnigym.envs.mcu.world import GROUND_BLOCKS, NIGHT, SPAWN, MCUWorld

DIFFICULTIES = ("simple", "medium", "hard")
TRANSFORMS = (
    "fewer_resources",
    "distractor_items",
    "darkness",
    "extra_entities",
    "displaced_target",
)
LOWER_TIER = {"diamond": "iron", "iron": "stone", "stone": "wooden"}
DISTRACTORS = (15, 25)
FREE_SLOTS = 6
BLIND_TICKS = 4 * 1200
SHIFT = (5, 10)
ARENA_REACH = 18
"""Largest ``|x|`` or ``|z|`` a displaced placement may take (the arena's edge is at 20)."""
HOSTILE_RING = (8, 12)
DECOY_RING = (2, 4)
SCENE_VERBS = ("setblock", "fill", "fillbiome", "summon")
NAME_ARG = {"summon": 0, "setblock": 1, "fill": 2, "fillbiome": 2}
"""Where a scene command names its block or mob."""
FUNCTIONAL_TAGS = frozenset({"bed"})
FUNCTIONAL_BLOCKS = frozenset({"crafting_table", "furnace", "bedrock"})


def check(difficulty: str) -> str:
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")
    return difficulty


def build(world: MCUWorld, task: Task, difficulty: str, rng: np.random.Generator) -> list[str]:
    """Runs the task's init commands on ``world`` at ``difficulty``; returns the perturbations
    applied (none for ``simple``, which draws nothing from ``rng``)."""
    check(difficulty)
    commands = list(task.init)
    if difficulty == "simple":
        _run(world, commands)
        return []
    reg = world.registry
    options = applicable(task, reg)
    if difficulty == "hard":
        chosen = options
    else:
        k = min(len(options), 1 + int(rng.integers(2)))
        chosen = [options[i] for i in sorted(rng.choice(len(options), size=k, replace=False))]
    applied: dict[str, str] = {}
    if "fewer_resources" in chosen:
        commands = _fewer(commands, task, reg)
        applied["fewer_resources"] = "fewer_resources"
    if "displaced_target" in chosen:
        shifted = _displace(commands, rng)
        if shifted is not None:
            commands = shifted
            applied["displaced_target"] = "displaced_target"
    _run(world, commands)
    if "distractor_items" in chosen:
        _distract(world, task, rng)
        applied["distractor_items"] = "distractor_items"
    if "darkness" in chosen:
        applied["darkness"] = _darken(world, rng)
    if "extra_entities" in chosen:
        variant = _crowd(world, task, commands, rng)
        if variant:
            applied["extra_entities"] = variant
    return [applied[name] for name in TRANSFORMS if name in applied]


def applicable(task: Task, reg: Registry) -> list[str]:
    """The transforms that fit ``task``, in :data:`TRANSFORMS` order."""
    scene = any(c.verb in SCENE_VERBS and relative_placement(c) for c in task.init)
    fits = {
        "fewer_resources": _fewer(list(task.init), task, reg) != list(task.init),
        "distractor_items": True,
        "darkness": True,
        "extra_entities": scene,
        "displaced_target": scene,
    }
    return [name for name in TRANSFORMS if fits[name]]


def _run(world: MCUWorld, commands: list[Command]) -> None:
    for command in commands:
        init_commands.apply(world, command)


def lower_tier(reg: Registry, item: str, blocks: list) -> str | None:
    """The same tool one tier lower, if it exists and still harvests every block of ``blocks``
    that its kind digs."""
    info = reg.items[item]
    lower = f"{LOWER_TIER.get(info.tier or '', '')}_{info.tool}"
    if info.tool is None or info.tier not in LOWER_TIER or lower not in reg.items:
        return None
    if any(block.tool == info.tool and not reg.can_harvest(block, lower) for block in blocks):
        return None
    return lower


def _fewer(commands: list[Command], task: Task, reg: Registry) -> list[Command]:
    """Tools one tier lower and spare food cut to one, except items the task's predicates name
    (dropping a stone sword needs that very sword)."""
    blocks = [reg.blocks[name] for name in sorted(mine_targets(task, reg))]
    concerned = relevant(task, reg)
    named = {n for p in (task.success, *(m.when for m in task.milestones)) for n in p.names()}
    out = []
    for command in commands:
        slot = {"replaceitem": 1, "give": 0}.get(command.verb)
        item = None if slot is None else command.args[slot]
        if item is not None and item not in named:
            args = list(command.args)
            if lower := lower_tier(reg, item, blocks):
                args[slot] = lower
            elif command.verb == "give" and reg.items[item].food and item not in concerned:
                args[1] = min(args[1], 1)
            command = replace(command, args=tuple(args))
        out.append(command)
    return out


def relative_placement(command: Command) -> bool:
    return all(axis.relative for corner in corners(command) for axis in corner)


def corners(command: Command) -> list[tuple[Coordinate, ...]]:
    if command.verb == "summon":
        return [command.args[1]]
    if command.verb == "setblock":
        return [command.args[0]]
    return [command.args[0], command.args[1]]


def _shift(coordinates: tuple[Coordinate, ...], dx: int, dz: int) -> tuple[Coordinate, ...]:
    x, y, z = coordinates
    return (replace(x, value=x.value + dx), y, replace(z, value=z.value + dz))


def _displace(commands: list[Command], rng: np.random.Generator) -> list[Command] | None:
    """The commands with every relative placement moved by one drawn offset (``None`` when no
    offset of 16 draws keeps them inside the arena and no closer to the player)."""
    spots = [
        (c[0].value, c[2].value)
        for command in commands
        if command.verb in SCENE_VERBS and relative_placement(command)
        for c in corners(command)
    ]
    for _ in range(16):
        size = int(rng.integers(SHIFT[0], SHIFT[1] + 1))
        angle = int(rng.integers(8)) * math.pi / 4
        dx, dz = round(size * math.sin(angle)), round(size * math.cos(angle))
        if all(
            max(abs(x + dx), abs(z + dz)) <= ARENA_REACH
            and math.hypot(x + dx, z + dz) >= max(math.hypot(x, z), 2)
            for x, z in spots
        ):
            return [moved(command, dx, dz) for command in commands]
    return None


def moved(command: Command, dx: int, dz: int) -> Command:
    if command.verb not in SCENE_VERBS or not relative_placement(command):
        return command
    args = list(command.args)
    if command.verb == "summon":
        args[1] = _shift(args[1], dx, dz)
    else:
        args[0] = _shift(args[0], dx, dz)
        if command.verb in ("fill", "fillbiome"):
            args[1] = _shift(args[1], dx, dz)
    return replace(command, args=tuple(args))


def distractor_pool(reg: Registry) -> list[str]:
    """Items no recipe, furnace or fight uses: no tools, armour, food, fuel, smelting inputs,
    recipe inputs or outputs."""
    inputs = {
        member
        for recipe in reg.recipes.values()
        for ingredient, _ in recipe.inputs
        for member in reg.members(ingredient)
    }
    return [
        name
        for name, info in reg.items.items()
        if info.tool is None
        and info.slot is None
        and not info.food
        and name not in reg.fuels
        and name not in inputs
        and name not in reg.smelting
        and name not in reg.recipes
    ]


def _distract(world: MCUWorld, task: Task, rng: np.random.Generator) -> None:
    reg = world.registry
    concerned = relevant(task, reg) | given(task)
    pool = [name for name in distractor_pool(reg) if name not in concerned]
    free = sum(slot is None for slot in world.player.inventory.slots) - FREE_SLOTS
    k = min(int(rng.integers(DISTRACTORS[0], DISTRACTORS[1] + 1)), len(pool), max(free, 0))
    for i in rng.choice(len(pool), size=k, replace=False):
        world.give(pool[i], int(rng.integers(1, reg.items[pool[i]].stack + 1)))


def _darken(world: MCUWorld, rng: np.random.Generator) -> str:
    options = [
        name
        for name, missing in (
            ("night", world.is_day()),
            ("thunder", world.weather != "thunder"),
            ("blindness", "blindness" not in world.effects),
        )
        if missing
    ]
    choice = options[int(rng.integers(len(options)))]
    if choice == "night":
        world.time = NIGHT
    elif choice == "thunder":
        world.weather = "thunder"
    else:
        world.effects["blindness"] = BLIND_TICKS
    return choice


def _scene(commands: list[Command]) -> list[tuple[str, str, tuple[int, int, int]]]:
    """``(verb, name, node)`` of each relative placement (a fill by its first corner)."""
    out = []
    for command in commands:
        if command.verb in SCENE_VERBS and relative_placement(command):
            name = command.args[NAME_ARG[command.verb]]
            cell = tuple(c.resolve(b) for c, b in zip(corners(command)[0], SPAWN, strict=True))
            out.append((command.verb, name, cell))
    return out


def _crowd(world: MCUWorld, task: Task, commands: list[Command], rng) -> str | None:
    """Adds hostile mobs (combat against a non-passive mob) or decoys; returns which, or
    ``None`` when there is nothing to imitate or no room."""
    reg = world.registry
    scene = _scene(commands)
    target = task.oracle.get("mob")
    if task.oracle["solver"] == "combat" and reg.mobs[target].behaviour != "passive":
        kinds = sorted(n for n, m in reg.mobs.items() if m.behaviour == "hostile" and n != target)
        cells = _free_cells(world, [SPAWN], HOSTILE_RING, 1 + int(rng.integers(2)), rng)
        for cell in cells:
            world.summon(kinds[int(rng.integers(len(kinds)))], cell)
        return "hostile_mobs" if cells else None
    concerned = relevant(task, reg)
    mobs = [(n, c) for verb, n, c in scene if verb == "summon"]
    if mobs:
        kinds = sorted(
            n
            for n, m in reg.mobs.items()
            if m.behaviour == "passive" and n not in concerned and n not in dict(mobs)
        )
        if not kinds:
            return None
        cells = _free_cells(world, [c for _, c in mobs], DECOY_RING, 1 + int(rng.integers(2)), rng)
        for cell in cells:
            world.summon(kinds[int(rng.integers(len(kinds)))], cell)
        return "decoys" if cells else None
    placed = {n for _, n, _ in scene}
    like = _look_alikes(reg, placed, concerned)
    if not like:
        return None
    anchors = [c for _, _, c in scene]
    cells = _free_cells(world, anchors, DECOY_RING, 2 + int(rng.integers(3)), rng, ground=False)
    for cell in cells:
        world.grid.set(*cell, like[int(rng.integers(len(like)))])
    return "decoys" if cells else None


def _look_alikes(reg: Registry, placed: set[str], concerned: frozenset[str]) -> list[str]:
    """Solid blocks dug with the same tool as a placed block, none the task concerns."""
    tools = {reg.blocks[name].tool for name in placed if name in reg.blocks}
    return sorted(
        name
        for name, block in reg.blocks.items()
        if block.tool in tools
        and block.solid
        and block.hardness >= 0
        and name not in placed
        and name not in concerned
        and name not in GROUND_BLOCKS
        and name not in FUNCTIONAL_BLOCKS
        and not block.tags & FUNCTIONAL_TAGS
    )


def _free_cells(world: MCUWorld, anchors, ring, n: int, rng, ground: bool = True) -> list:
    """Up to ``n`` distinct free nodes ``ring`` nodes (Chebyshev) from a random anchor, at the
    anchor's height (standable ones when ``ground``), away from the player."""
    low, high = ring
    px, _, pz = world.position
    out: list[tuple[int, int, int]] = []
    for _ in range(20 * n):
        if len(out) == n:
            break
        ax, ay, az = anchors[int(rng.integers(len(anchors)))]
        dx, dz = (int(v) for v in rng.integers(-high, high + 1, size=2))
        cell = (ax + dx, ay, az + dz)
        if (
            max(abs(dx), abs(dz)) < low
            or max(abs(cell[0]), abs(cell[2])) > ARENA_REACH
            or max(abs(cell[0] - px), abs(cell[2] - pz)) <= 1
            or cell in out
            or world.block(cell) != "air"
            or (ground and not world.standable(*cell))
            or any(m.position == cell for m in world.mobs)
        ):
            continue
        out.append(cell)
    return out
