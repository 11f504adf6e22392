"""The base class of the Craft tasks: what a Craftium task defines, and the table it reads.

A Craftium task (Malagón, Ceberio, Lozano, ICML 2025) is a Luanti world plus a Lua mod that sets
rewards and terminations. Here a task is a small class: ``build_world`` makes the pristine world
(cached by the environment per map seed), ``reset`` spawns the players and entities of an episode
from the simulation's generator, ``frame`` scores one frame from its events, ``end_step`` adds the
per-step reward and says whether the episode is over, and ``final_info`` gives the final step's
``success``, ``normalized_score`` and ``metrics`` (the keys omnigym's evaluators read). Numbers that
are data (episode length, actions, score range, task parameters) live in ``data/tasks/*.yaml``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import yaml

from omnigym.envs.craft.digging import Tool, ToolTable
from omnigym.envs.craft.engine import DATA_DIR, MaterialTable, World

if TYPE_CHECKING:
    from omnigym.envs.craft.core import CraftSim, FrameEvents


@functools.cache
def task_table(folder: str | None = None) -> dict[str, dict[str, Any]]:
    """Every task's entry from the YAML files of ``data/tasks/`` (read once), by task name."""
    table: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(folder or DATA_DIR / "tasks").glob("*.yaml")):
        for name, entry in (yaml.safe_load(path.read_text()) or {}).items():
            if name in table:
                raise ValueError(f"{path}: task {name} is defined twice")
            table[name] = entry
    return table


@functools.cache
def shared_materials() -> MaterialTable:
    """The packaged material table, loaded once per process (it is immutable)."""
    return MaterialTable.load()


@functools.cache
def shared_tools() -> ToolTable:
    """The packaged tool table, loaded once per process."""
    return ToolTable.load()


def walled_floor(
    materials: MaterialTable,
    interior: tuple[tuple[int, int], tuple[int, int]],
    floor_y: int,
    wall_height: int,
    wall: str,
    floor: str,
) -> World:
    """A lit, roofless arena: a floor of ``floor`` nodes over the inclusive node ranges
    ``interior = ((x0, x1), (z0, z1))`` at height ``floor_y``, ringed by ``wall`` nodes that rise
    ``wall_height`` nodes above it. The grid is the arena's bounding box."""
    (x0, x1), (z0, z1) = interior
    lo = (x0 - 1, floor_y, z0 - 1)
    hi = (x1 + 1, floor_y + wall_height, z1 + 1)
    shape = tuple(b - a + 1 for a, b in zip(lo, hi, strict=True))
    world = World(materials, shape, origin=lo)
    world.fill(lo, hi, wall)
    world.fill((x0, floor_y + 1, z0), (x1, hi[1], z1), "air")
    world.fill((x0, floor_y, z0), (x1, floor_y, z1), floor)
    world.compute_light()
    return world


class Task:
    """Rules of one task. Subclasses set ``name`` and implement ``build_world`` and ``reset``.

    Args:
        conf: task parameters (``minetest_conf`` keys listed under ``params`` in the table);
            missing ones take the table's defaults.
        n_players: bodies in the world (2 for ``MultiAgentCombat``).
    """

    name: ClassVar[str]
    width: ClassVar[int] = 64
    height: ClassVar[int] = 64
    fov: ClassVar[float] = 72.0
    backends: ClassVar[tuple[str, ...]] = ("embedded", "luanti", "minetest")
    """The ``CraftEnv`` backends that can run the task."""

    def __init__(self, conf: Mapping[str, Any] | None = None, n_players: int = 1):
        table = task_table()[self.name]
        self.table = table
        self.id: str = table["id"]
        self.actions: tuple[str, ...] = tuple(table["actions"])
        self.mouse_mov: float = float(table["mouse_mov"])
        self.max_timesteps: int = int(table["max_timesteps"])
        self.enable_damage: bool = bool(table.get("enable_damage", True))
        self.params: dict[str, Any] = dict(table.get("params") or {})
        self.conf = {**self.params, **dict(conf or {})}
        self.n_players = n_players
        self.materials = shared_materials()
        self.tools = shared_tools()
        self.rewards = np.zeros(n_players)
        self.check_conf()

    # ---- world and episode ------------------------------------------------------------------

    def check_conf(self) -> None:
        """Validates ``self.conf``; raises ``ValueError`` naming the parameter."""

    def world_key(self, map_seed: int | None) -> Any:
        """What the pristine world depends on (the environment caches worlds by it)."""
        return map_seed

    def build_world(self, map_seed: int | None) -> World:
        """The pristine world for ``map_seed`` (None: the task's canonical world)."""
        raise NotImplementedError

    def reset(self, sim: CraftSim) -> None:
        """Places the players and entities of a new episode, using ``sim.rng``."""
        raise NotImplementedError

    def begin_episode(self) -> None:
        """Clears the per-episode counters (called by the environment before ``reset``)."""
        self.rewards = np.zeros(self.n_players)

    def luanti_data(self, world: World) -> dict[str, Any]:
        """What the task's Lua mod reads as ``omnigym.conf.task`` under the Luanti backend
        (spawn point, tools, entities), given the pristine world; nothing by default."""
        return {}

    # ---- rules ------------------------------------------------------------------------------

    def frame(self, sim: CraftSim, events: list[FrameEvents]) -> bool:
        """Scores one frame (adds to ``self.rewards``); True ends the episode at once."""
        return False

    def end_step(self, sim: CraftSim) -> tuple[np.ndarray, bool]:
        """Per-step rewards added to the frames' rewards, and whether the episode is over.

        Returns the step's reward per player and the termination flag; clears the accumulator.
        The default ends the episode when every player is dead.
        """
        rewards = self.rewards
        self.rewards = np.zeros(self.n_players)
        return rewards, not any(avatar.alive for avatar in sim.avatars)

    def player_punched(self, sim: CraftSim, hitter: int, victim: int, tool: Tool) -> None:
        """A punch of player ``hitter`` landed on player ``victim``: the tool's damage."""
        sim.hurt(victim, tool.damage)

    def frame_light(self, sim: CraftSim) -> np.ndarray:
        """The light grid frames are drawn with (OpenWorld dims it at night)."""
        return sim.world.light

    def decorate_frame(self, sim: CraftSim, frame: np.ndarray, viewer: int = 0) -> None:
        """Draws on a rendered frame in place (OpenWorld's HUD); nothing by default."""

    def time_of_day(self, sim: CraftSim) -> float:
        """Luanti's time of day in [0, 1) (0.5 is midday); fixed at midday by default."""
        return 0.5

    # ---- facts ------------------------------------------------------------------------------

    def info(self, sim: CraftSim) -> dict[str, Any]:
        """Counters of the episode so far (``info["task"]``)."""
        return {}

    def success(self, sim: CraftSim) -> bool:
        raise NotImplementedError

    def metrics(self, sim: CraftSim) -> dict[str, float]:
        """Final-step metrics: of ``trunks_dug``, ``kills``, ``damage_taken``, ``min_y``,
        ``distance`` and ``rounds_cleared``, those that apply to the task."""
        avatar = sim.avatars[0]
        return {
            "damage_taken": float(avatar.damage_taken),
            "distance": float(avatar.distance),
            "min_y": float(avatar.min_y),
        }

    def normalized_score(self, episode_return: float) -> float:
        """``100 · (R − R_lo) / (R_hi − R_lo)``, clipped to [0, 100]."""
        lo, hi = self.score_range()
        return float(np.clip(100.0 * (episode_return - lo) / (hi - lo), 0.0, 100.0))

    def score_range(self) -> tuple[float, float]:
        score = self.table["score"]
        return float(score["lo"]), float(score["hi"])

    def final_info(self, sim: CraftSim, episode_return: float) -> dict[str, Any]:
        """The final step's ``success``, ``normalized_score`` and ``metrics``."""
        return {
            "success": bool(self.success(sim)),
            "normalized_score": self.normalized_score(episode_return),
            "metrics": self.metrics(sim),
        }
