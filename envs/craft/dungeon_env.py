"""``make_dungeon_env``: a ``Craft/ProcDungeons-v0`` environment on a given or generated map.

Follows Craftium's ``craftium.make_dungeon_env`` (Malagón, Ceberio, Lozano, ICML 2025): when no
ASCII map is given, one is drawn with ``dungeons.RandomMapGen`` and rasterised with ``wall_height``
wall layers and a glass ceiling; the map and the task's default parameters
(``data/tasks/proc_dungeons.yaml``), overridden by the caller's ``minetest_conf``, go into
``minetest_conf``; the environment is made by id through ``gymnasium.make``, so it carries the
registered ``DiscreteActionWrapper``.

Departures from Craftium: the generator is seeded by the ``seed`` kwarg (Craftium draws from NumPy's
global RNG), so the same seed gives the same map; ``mapgen_kwargs`` may set its own ``seed``, which
wins. The caller's ``minetest_conf`` is copied, never modified (Craftium writes into its
module-level default dict).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from omnigym.envs.craft.dungeons import RandomMapGen
from omnigym.envs.craft.tasks.base import task_table

DUNGEON_ID = "omnigym:Craft/ProcDungeons-v0"


def default_dungeon_conf() -> dict[str, Any]:
    """The ProcDungeons task parameters with their defaults (the built-in map included)."""
    return dict(task_table()["ProcDungeons"]["params"])


def make_dungeon_env(
    ascii_map: str | None = None,
    mapgen_kwargs: Mapping[str, Any] | None = None,
    wall_height: int = 5,
    return_map_str: bool = False,
    **gym_kwargs: Any,
):
    """Make ``Craft/ProcDungeons-v0`` on ``ascii_map``, or on a map drawn by ``RandomMapGen``.

    Args:
        ascii_map: the dungeon in the ASCII format of ``dungeons.py``; None draws one.
        mapgen_kwargs: ``RandomMapGen`` arguments (used only when ``ascii_map`` is None); its
            ``seed`` defaults to ``gym_kwargs["seed"]``.
        wall_height: wall layers of a drawn map.
        return_map_str: also return the map.
        **gym_kwargs: passed to ``gymnasium.make``; ``minetest_conf`` entries override the
            task's default parameters.

    Returns:
        The environment, or ``(env, ascii_map)`` when ``return_map_str``.

    Raises:
        ValueError: a bad map (naming its line and column) or generator argument.
    """
    if ascii_map is None:
        kwargs = {"seed": gym_kwargs.get("seed"), **dict(mapgen_kwargs or {})}
        ascii_map = RandomMapGen(**kwargs).rasterize(wall_height=wall_height)
    user_conf = gym_kwargs.pop("minetest_conf", None) or {}
    if not isinstance(user_conf, Mapping):
        raise ValueError(f"minetest_conf must be a dict, got {user_conf!r}")
    conf = {**default_dungeon_conf(), **user_conf, "ascii_map": ascii_map}
    env = gym.make(DUNGEON_ID, minetest_conf=conf, **gym_kwargs)
    if return_map_str:
        return env, ascii_map
    return env
