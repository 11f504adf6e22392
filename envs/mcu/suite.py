"""The curated MCU suite, read from the registry, and the labels its tables are grouped by.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) reports scores by task category, difficulty and
programmatic versus creative tasks. :func:`curated` lists the registered curated ids (every
``MCU/`` id with fixed kwargs: ``MCU/<task>-simple-v0``, ``MCU/<task>-hard-v0`` and the curated
compositions), so new curated ids are picked up without editing this module; :func:`labels` gives
one id's task, category, subcategory, difficulty and kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from omnigym.registry import list_envs

CREATIVE_CATEGORIES = ("Build", "Art")
OPEN_ENDED_TOOL_USE = ("use_",)
"""Name prefixes of Tool-use templates with open-ended outcomes (``use_<tool>_on_<target>``),
creative like Build and Art; the other Tool-use tasks (eat, drink, sleep) are programmatic."""
COMPOSITE = "Composite"


@dataclass(frozen=True)
class SuiteEntry:
    """One curated id: its ``tasks`` (one for an atomic id), ``ops`` (compositions),
    ``difficulty``."""

    env_id: str
    tasks: tuple[str, ...]
    ops: tuple[str, ...]
    difficulty: str

    @property
    def composite(self) -> bool:
        return len(self.tasks) > 1


@cache
def curated() -> tuple[SuiteEntry, ...]:
    """Every curated ``MCU/`` id, in registry order."""
    found = []
    for info in list_envs(family="MCU"):
        kwargs = info.kwargs or {}
        tasks = kwargs.get("tasks") or ([kwargs["task"]] if "task" in kwargs else [])
        if tasks:
            found.append(
                SuiteEntry(
                    info.id,
                    tuple(tasks),
                    tuple(kwargs.get("ops", ())),
                    kwargs.get("difficulty", "simple"),
                )
            )
    return tuple(found)


def is_creative(task: str, category: str) -> bool:
    """Creative tasks: Build, Art and the open-ended Tool-use templates."""
    return category in CREATIVE_CATEGORIES or (
        category == "Tool-use" and task.startswith(OPEN_ENDED_TOOL_USE)
    )


def labels(tasks: tuple[str, ...] | list[str], difficulty: str) -> dict[str, str]:
    """``task``, ``category``, ``subcategory``, ``difficulty`` and ``kind`` (programmatic or
    creative) of a task, or of a composition (category ``Composite``; creative when a part
    is)."""
    from omnigym.envs.mcu.tasks import index

    entries = index()
    kinds = [is_creative(t, entries[t]["category"]) for t in tasks]
    if len(tasks) == 1:
        entry = entries[tasks[0]]
        category, subcategory = entry["category"], entry["subcategory"]
    else:
        category = subcategory = COMPOSITE
    return {
        "task": "+".join(tasks),
        "category": category,
        "subcategory": subcategory,
        "difficulty": difficulty,
        "kind": "creative" if any(kinds) else "programmatic",
    }
