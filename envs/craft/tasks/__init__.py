"""The Craftium tasks, one module each; ``TASKS`` maps task names to their classes' entry points.

Modules are imported when a task is made, so making ``Room`` does not build OpenWorld's terrain
code.
"""

from __future__ import annotations

import importlib

TASKS = {
    "Room": "room:RoomTask",
    "SmallRoom": "room:SmallRoomTask",
    "ChopTree": "chop_tree:ChopTreeTask",
    "Speleo": "speleo:SpeleoTask",
    "SpidersAttack": "spiders_attack:SpidersAttackTask",
    "OpenWorld": "open_world:OpenWorldTask",
    "ProcDungeons": "proc_dungeons:ProcDungeonsTask",
    "MultiAgentCombat": "combat:CombatTask",
    "LuaTask": "lua_task:LuaTask",
}
"""Task name (Craftium's, as in ``Craft/<name>-v0``) → ``module:Class`` inside this package."""


def task_class(name: str) -> type:
    """The task class of ``name``; ``ValueError`` listing the task names otherwise."""
    try:
        entry = TASKS[name]
    except (KeyError, TypeError):
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {name!r}") from None
    module, _, attr = entry.partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
