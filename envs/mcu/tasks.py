"""MCU task files: one YAML file per atomic task, loaded and checked into a :class:`Task`.

Follows the task configs of MCU (Zheng et al., ICML 2025; ``docs/mcu.md``): a name, an
instruction and init commands, plus what MCU leaves to its video judge, written down here:
a success predicate and weighted milestones (:mod:`omnigym.envs.mcu.predicates`). Fields:
``name``, ``category``, ``subcategory``, ``text``, ``init_commands``, ``success``,
``milestones`` (``{when, weight}``, weights summing to 1), ``relevant`` (items, blocks, mobs),
``requires``, ``rubric``, ``oracle`` (the scripted solver and its parameters) and ``max_steps``
(default 600, MCU's episode length). Verified tasks live in ``data/tasks/`` with an index.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import yaml

from omnigym.envs.mcu import init_commands
from omnigym.envs.mcu.predicates import Predicate, compile_predicate
from omnigym.envs.mcu.registries import registry

TASK_DIR = Path(__file__).parent / "data" / "tasks"
INDEX = TASK_DIR / "index.yaml"
MAX_STEPS = 600
FIELDS = {
    "name",
    "category",
    "subcategory",
    "text",
    "init_commands",
    "success",
    "milestones",
    "relevant",
    "requires",
    "rubric",
    "oracle",
    "max_steps",
}
REQUIRED = ("name", "category", "subcategory", "text", "success", "milestones", "oracle")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML has it: several hundred task files load in a blink."""


@dataclass(frozen=True)
class Milestone:
    when: Predicate
    weight: float


@dataclass(frozen=True)
class Task:
    """One loaded task; ``init`` holds its parsed init commands (unknown names skipped).
    ``oracle_steps`` is the oracle's command count on seed 0, from the index (``None`` for a
    task that is not in it)."""

    name: str
    category: str
    subcategory: str
    text: str
    init: tuple[init_commands.Command, ...]
    success: Predicate
    milestones: tuple[Milestone, ...]
    oracle: dict
    relevant: dict = field(default_factory=dict)
    requires: dict = field(default_factory=dict)
    rubric: str = ""
    max_steps: int = MAX_STEPS
    oracle_steps: int | None = None
    source: dict = field(default_factory=dict, compare=False, repr=False)


def parse_task(data: dict, where: str, lines: dict[str, int] | None = None) -> Task:
    """Checks and compiles a task mapping; errors and warnings name ``where`` (the file), the
    field and, when ``lines`` maps fields to line numbers (:func:`load_task_file`), the line."""
    lines = lines or {}

    def at(key: str) -> str:
        return f"{where}: line {lines[key]}: {key}" if key in lines else f"{where}: {key}"

    if not isinstance(data, dict):
        raise ValueError(f"{where}: a task file holds a mapping of fields")
    unknown = sorted(set(data) - FIELDS)
    missing = [name for name in REQUIRED if name not in data]
    if unknown or missing:
        raise ValueError(f"{where}: unknown fields {unknown}, missing fields {missing}")
    reg = registry()
    init = tuple(
        command
        for i, text in enumerate(data.get("init_commands", ()))
        if (command := init_commands.parse(text, at(f"init_commands[{i}]"), reg))
    )
    milestones = tuple(
        Milestone(
            compile_predicate(m["when"], at(f"milestones[{i}].when"), reg), float(m["weight"])
        )
        for i, m in enumerate(data["milestones"])
    )
    total = sum(m.weight for m in milestones)
    if milestones and abs(total - 1.0) > 1e-6:
        raise ValueError(f"{where}: milestone weights sum to {total}, not 1")
    max_steps = int(data.get("max_steps", MAX_STEPS))
    if max_steps < 1:
        raise ValueError(f"{where}: max_steps must be positive, got {max_steps}")
    return Task(
        name=data["name"],
        category=data["category"],
        subcategory=data["subcategory"],
        text=str(data["text"]),
        init=init,
        success=compile_predicate(data["success"], at("success"), reg),
        milestones=milestones,
        oracle=dict(data["oracle"]),
        relevant=dict(data.get("relevant", {})),
        requires=dict(data.get("requires", {})),
        rubric=str(data.get("rubric", "")),
        max_steps=max_steps,
        source=data,
    )


def load_task_file(path: str | Path) -> Task:
    """Loads one task file; messages name the file and the line of the field at fault."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    return parse_task(yaml.load(text, Loader=_LOADER), str(path), _field_lines(text))


def _field_lines(text: str) -> dict[str, int]:
    """1-based line of each top-level field, each ``init_commands[i]`` and each
    ``milestones[i].when`` of a task file."""
    root = yaml.compose(text, Loader=_LOADER)
    lines: dict[str, int] = {}
    if not isinstance(root, yaml.MappingNode):
        return lines
    for key, value in root.value:
        lines[key.value] = value.start_mark.line + 1
        if key.value in ("init_commands", "milestones") and isinstance(value, yaml.SequenceNode):
            for i, item in enumerate(value.value):
                if key.value == "init_commands":
                    lines[f"init_commands[{i}]"] = item.start_mark.line + 1
                elif isinstance(item, yaml.MappingNode):
                    for field_key, field_value in item.value:
                        if field_key.value == "when":
                            lines[f"milestones[{i}].when"] = field_value.start_mark.line + 1
    return lines


@cache
def index() -> dict[str, dict]:
    """The verified tasks: name -> its index entry (category, subcategory, oracle steps)."""
    if not INDEX.exists():
        return {}
    entries = yaml.load(INDEX.read_text(encoding="utf-8"), Loader=_LOADER)["tasks"]
    return {entry["name"]: entry for entry in entries}


@cache
def load_task(name: str) -> Task:
    """The verified task ``name``; ``ValueError`` naming ``task`` and close names if unknown."""
    if name not in index():
        close = difflib.get_close_matches(name, list(index()), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"task={name!r} is not a verified MCU task{hint}")
    task = load_task_file(TASK_DIR / f"{name}.yaml")
    return replace(task, oracle_steps=int(index()[name]["oracle_steps"]))


def list_tasks(category: str | None = None, subcategory: str | None = None) -> list[str]:
    return [
        name
        for name, entry in index().items()
        if category in (None, entry["category"]) and subcategory in (None, entry["subcategory"])
    ]
