"""MCU's six evaluation dimensions, computed from an episode's log instead of a video judge.

MCU (Zheng et al., "MCU: An Evaluation Framework for Open-Ended Game Agents", ICML 2025) rates
every episode on six dimensions, 0 to 10, with its AutoEval judge: Task Progress, Action Control,
Error Recognition and Correction, Creative Attempts, Task Completion Efficiency, and Material
Selection and Usage, read in bands (0 unrelated, 1–3 barely, 4–6 partially, 7–9 mostly, 10
completely). Here each dimension is a formula over the :class:`~omnigym.envs.mcu.episode_log`
records of one episode, the task file and the oracle's step count (``docs/mcu.md`` states the
formulas); scores are rounded to one decimal. Every function is pure: the same records give the
same scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from omnigym.envs.mcu.episode_log import Act, Cell, StepRecord
from omnigym.envs.mcu.registries import Registry, registry
from omnigym.envs.mcu.tasks import Task

DIMENSIONS = (
    "task_progress",
    "action_control",
    "error_recognition_and_correction",
    "creative_attempts",
    "task_completion_efficiency",
    "material_selection_and_usage",
)
BANDS = ((0, "unrelated"), (3, "barely"), (6, "partially"), (9, "mostly"), (10, "completely"))
"""Upper bound of each band on the rounded score, and its name (MCU's rubric)."""
STRUCTURE_CATEGORIES = ("Build", "Art")
COMBAT_CATEGORIES = ("Combat",)
STATION_ACTS = ("brew", "enchant", "trade", "repair", "combine")
"""Acts at a station or villager that use up materials; each names the item it makes or
trades."""
MATERIAL_ACTS = ("craft", "smelt", "mine", "attack", "place", *STATION_ACTS)
MATERIAL_FUNCTIONS = frozenset(
    {
        "mined",
        "placed",
        "crafted",
        "smelted",
        "killed",
        "damaged",
        "structure",
        "climbed",
        "inventory_has",
        "brewed",
        "enchanted",
        "traded",
        "repaired",
        "combined",
    }
)
"""Predicate functions whose tasks need material acts (:data:`MATERIAL_ACTS`)."""
NO_ERROR_SCORE = {True: 5.0, False: 0.0}
"""Error Recognition and Correction when no error happened: 5 on success, 0 on failure."""


def band(score: float | None) -> str | None:
    """MCU's band of a 0–10 score (on the score rounded half up to an integer)."""
    if score is None:
        return None
    rounded = math.floor(score + 0.5)
    return next(name for top, name in BANDS if rounded <= top)


def _score(fraction: float) -> float:
    return round(10.0 * min(max(fraction, 0.0), 1.0), 1)


def _expand(reg: Registry, names) -> frozenset[str]:
    return frozenset(member for name in names for member in reg.members(name))


def _predicates(task: Task):
    return (task.success, *(m.when for m in task.milestones))


def relevant(task: Task, reg: Registry | None = None) -> frozenset[str]:
    """The items, blocks and mobs a task concerns: its ``relevant`` field and every name its
    success and milestone predicates mention, ``#tags`` expanded."""
    reg = reg or registry()
    names = {name for names in task.relevant.values() for name in names}
    for predicate in _predicates(task):
        names |= predicate.names()
    return _expand(reg, names)


def mine_targets(task: Task, reg: Registry | None = None) -> frozenset[str]:
    """The blocks a task wants mined: ``mined(b)`` arguments, and blocks the task wants held
    (``inventory_has(oak_log)``: collecting wood)."""
    reg = reg or registry()
    names = {
        arg
        for predicate in _predicates(task)
        for function, args in predicate.calls()
        if function in ("mined", "inventory_has")
        for arg in args[:1]
    }
    return frozenset(name for name in _expand(reg, names) if name in reg.blocks)


def given(task: Task) -> frozenset[str]:
    """Items the task's init commands hand the player (``give``, ``replaceitem``)."""
    names = set()
    for command in task.init:
        if command.verb == "give":
            names.add(command.args[0])
        elif command.verb == "replaceitem":
            names.add(command.args[1])
    return frozenset(names)


def placed_structure(records: Sequence[StepRecord]) -> dict[Cell, str]:
    """The blocks the agent placed that still stand at the end: node -> block."""
    standing: dict[Cell, str] = {}
    for act in _acts(records):
        if act.kind == "place":
            standing[act.cell] = act.name
        elif act.kind == "mine":
            standing.pop(act.cell, None)
    return standing


def _acts(records: Sequence[StepRecord]):
    return (act for record in records for act in record.acts)


def task_progress(records: Sequence[StepRecord], task: Task) -> float:
    """10 × the weight of the milestones reached; success counts as 10."""
    if any(record.success for record in records):
        return 10.0
    if not records:
        return 0.0
    reached = records[-1].reached
    return _score(sum(m.weight for m, hit in zip(task.milestones, reached, strict=True) if hit))


def action_control(records: Sequence[StepRecord], concerned: frozenset[str]) -> float:
    """10 × (1 − wasted / commands). Wasted: invalid commands, commands without effect
    (``noop``, ``wait``, turning a look that is already at its limit, ...), and commands that
    mine, place or attack something the task does not concern."""
    if not records:
        return 0.0
    wasted = sum(
        record.invalid
        or not record.effect
        or any(
            act.kind in ("mine", "place", "attack") and act.name not in concerned
            for act in record.acts
        )
        for record in records
    )
    return _score(1.0 - wasted / len(records))


def errors_and_corrections(
    records: Sequence[StepRecord], task: Task, reg: Registry | None = None
) -> tuple[int, int]:
    """Detected errors and how many were corrected later in the episode:

    - a block mined that is not one the task wants mined (when it wants some), corrected by
      mining a wanted block afterwards;
    - a block placed that the task does not concern, corrected by mining that node afterwards;
    - a block mined with too low a tool tier (so it dropped nothing), corrected by mining the
      same block afterwards with a tool that harvests it.

    Mining a block the agent placed itself is never an error.
    """
    reg = reg or registry()
    concerned, targets = relevant(task, reg), mine_targets(task, reg)
    standing: dict[Cell, str] = {}
    misplaced: set[Cell] = set()
    wrong_blocks = 0
    wrong_tiers: dict[str, int] = {}
    errors = corrected = 0
    for act in _acts(records):
        if act.kind == "place":
            standing[act.cell] = act.name
            if act.name not in concerned:
                errors += 1
                misplaced.add(act.cell)
        elif act.kind == "mine":
            if act.cell in standing:
                del standing[act.cell]
                if act.cell in misplaced:
                    misplaced.discard(act.cell)
                    corrected += 1
                continue
            if targets and act.name not in targets:
                errors += 1
                wrong_blocks += 1
                continue
            corrected += wrong_blocks
            wrong_blocks = 0
            block = reg.blocks[act.name]
            if act.harvested:
                corrected += wrong_tiers.pop(act.name, 0)
            elif block.tier != "none" and block.drops:
                errors += 1
                wrong_tiers[act.name] = wrong_tiers.get(act.name, 0) + 1
    return errors, corrected


def error_recognition_and_correction(
    records: Sequence[StepRecord], task: Task, success: bool, reg: Registry | None = None
) -> float:
    """10 × corrected / errors; with no error, 5 on success and 0 on failure."""
    errors, corrected = errors_and_corrections(records, task, reg)
    if not errors:
        return NO_ERROR_SCORE[bool(success)]
    return _score(corrected / errors)


def symmetry(structure: dict[Cell, str]) -> float:
    """The best mirror symmetry of a structure across a vertical plane through the middle of its
    box: the fraction of its blocks whose mirror node holds the same block. Axes along which
    the box is one node wide do not count (a lone column is not a symmetric design)."""
    best = 0.0
    for axis in (0, 2):
        values = [cell[axis] for cell in structure]
        lo, hi = min(values, default=0), max(values, default=0)
        if hi == lo:
            continue
        same = 0
        for cell, block in structure.items():
            mirror = list(cell)
            mirror[axis] = lo + hi - cell[axis]
            same += structure.get(tuple(mirror)) == block
        best = max(best, same / len(structure))
    return best


def creative_attempts(records: Sequence[StepRecord], task: Task, reg: Registry | None = None):
    """Build and Art: 10 × clip(0.5·d/3 + 0.5·sym), d the number of kinds of blocks the task
    does not name among the blocks the agent placed (and left standing), sym their
    :func:`symmetry`. Combat: 10 × clip((distinct weapons − 1)/2 + 0.5·t), t = 1 when the agent
    hit a mob from higher ground it built. Other categories: 0."""
    if task.category in STRUCTURE_CATEGORIES:
        structure = placed_structure(records)
        concerned = relevant(task, reg)
        decorative = {block for block in structure.values() if block not in concerned}
        return _score(0.5 * len(decorative) / 3 + 0.5 * symmetry(structure))
    if task.category in COMBAT_CATEGORIES:
        attacks = [act for act in _acts(records) if act.kind == "attack"]
        weapons = {act.tool for act in attacks if act.tool is not None}
        high = any(act.high_ground for act in attacks)
        return _score((len(weapons) - 1) / 2 + 0.5 * high)
    return 0.0


def task_completion_efficiency(
    progress: float, steps: int, oracle_steps: int | None
) -> float | None:
    """(progress / 10) × 10 × clip(oracle steps / steps); ``None`` without an oracle count."""
    if oracle_steps is None:
        return None
    if steps <= 0:
        return 0.0
    return _score(progress / 10.0 * min(oracle_steps / steps, 1.0))


def _best(act: Act, reg: Registry) -> bool:
    """Whether a mine or attack act used the best item the player held (or the hand)."""
    options = (None, *act.inventory)
    if act.kind == "attack":

        def value(item):
            return reg.items[item].damage if item else 1
    else:
        block = reg.blocks[act.name]

        def value(item):
            return (reg.can_harvest(block, item), -reg.dig_ticks(block, item))

    return value(act.tool) >= max(value(item) for item in options)


def _fitting(act: Act, concerned: frozenset[str], reg: Registry) -> bool:
    """Whether a material act used a correct or best item: a mine or attack on something the
    task concerns, with the best held item; a craft, smelt, place, brew, enchant, trade,
    repair or combine of something the task concerns."""
    if act.kind in ("mine", "attack"):
        return act.name in concerned and _best(act, reg)
    if act.kind == "smelt":
        return act.name in concerned or reg.smelting.get(act.name) in concerned
    return act.name in concerned


def material_selection_and_usage(
    records: Sequence[StepRecord], task: Task, reg: Registry | None = None
) -> float | None:
    """10 × (fraction of material acts (:data:`MATERIAL_ACTS`: craft, smelt, mine, attack,
    place, and the station and trading acts brew, enchant, trade, repair, combine) that used a
    correct or the best held item) × (1 − fraction of the given materials overused); ``None``
    when the task needs none of these acts. Correct: a mine or attack on something the task
    concerns with the held item that harvests and digs fastest, or hits hardest; any other
    material act on something the task concerns.
    Overused: some of a given material went into an act that was not correct, or was dropped
    although the task does not ask for it."""
    reg = reg or registry()
    functions = {function for p in _predicates(task) for function, _ in p.calls()}
    if not functions & MATERIAL_FUNCTIONS:
        return None
    concerned = relevant(task, reg)
    dropped = {args[0] for p in _predicates(task) for f, args in p.calls() if f == "dropped"}
    wanted_drops = _expand(reg, dropped)
    fitting, overused = 0, set()
    acts = [act for act in _acts(records) if act.kind in MATERIAL_ACTS or act.kind == "drop"]
    for act in acts:
        if act.kind == "drop":
            wasteful = act.name not in wanted_drops
        else:
            wasteful = not _fitting(act, concerned, reg)
            fitting += not wasteful
        if wasteful:
            overused.update(item for item, _ in act.consumed)
    used = sum(act.kind != "drop" for act in acts)
    if not used:
        return 0.0
    materials = given(task)
    overuse = len(overused & materials) / len(materials) if materials else 0.0
    return _score(fitting / used * (1.0 - overuse))


def evaluate(
    records: Sequence[StepRecord], task: Task, oracle_steps: int | None = None
) -> dict[str, float | None]:
    """The six scores of one episode (0–10, one decimal; ``None`` where not defined)."""
    reg = registry()
    success = any(record.success for record in records)
    progress = task_progress(records, task)
    return {
        "task_progress": progress,
        "action_control": action_control(records, relevant(task, reg)),
        "error_recognition_and_correction": error_recognition_and_correction(
            records, task, success, reg
        ),
        "creative_attempts": creative_attempts(records, task, reg),
        "task_completion_efficiency": task_completion_efficiency(
            progress, len(records), oracle_steps
        ),
        "material_selection_and_usage": material_selection_and_usage(records, task, reg),
    }
