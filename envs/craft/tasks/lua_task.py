"""``LuaTask``: any Craftium-style Lua task mod, run by the Luanti backend (``Craft/LuaTask-v0``).

Craftium's users write a task as a Luanti mod (Malagón, Ceberio, Lozano, ICML 2025): an
``init.lua`` that builds or loads its world, calls ``set_reward``/``set_reward_once`` and
``set_termination``, and resets on ``get_soft_reset``. This class only carries the id's metadata
(actions, episode length, score range, ``data/tasks/lua_task.yaml``); the rules are the mod's.
Without ``task_mod`` the id runs the packaged ``omnigym_platform`` mod; ``docs/craft.md`` walks
through the example mod in ``docs/craft_task_mod/``. The embedded engine cannot run Lua, so the
task exists only with ``backend="luanti"``.
"""

from __future__ import annotations

from omnigym.envs.craft.tasks.base import Task


class LuaTask(Task):
    """A user's Lua task mod (``Craft/LuaTask-v0``)."""

    name = "LuaTask"
    backends = ("luanti", "minetest")
