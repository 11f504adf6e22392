"""Craftium's ``ProcDungeons``: find the objective in a dungeon built from an ASCII map.

Follows Craftium's procedural-dungeons environment (Malagón, Ceberio, Lozano, ICML 2025). The world
is the map of ``minetest_conf["ascii_map"]`` (format in ``dungeons.py``) standing on flat ground:
``#`` is ``wall_material``, ``%`` a glass ceiling, ``@`` the player, ``O`` the objective and
``a``–``d`` monsters of tiers a–d.

- **Actions** (after the no-op) and ``mouse_mov``: ``data/tasks/proc_dungeons.yaml``
  (``Discrete(10)``).
- **Observation**: 64×64 RGB first-person frames.
- **Starting state**: the player stands on the cell of ``@`` facing +z (rows grow along +z),
  wielding a steel sword; a ``objective_item`` item entity (``default:diamond``) drawn at twice
  an item's size stands on each ``O``; a monster of the cell's tier on each of ``a``–``d``
  (entity kinds ``monster_a`` … ``monster_d``, stats overridable per tier through
  ``minetest_conf["monster_a"]`` … as dicts of ``mobs.yaml`` fields, e.g. ``{"hp": 30}``).
- **Reward**: ``rwd_kill_monster`` (0.5) per monster killed, ``rwd_objective`` (10) when the
  objective is punched, which picks it up.
- **Episode end**: terminated when an objective is collected or on lethal damage; truncated
  after 4000 steps.
- **Success and score**: success = objective collected; the normalized score maps returns
  0 … ``rwd_objective + rwd_kill_monster · (monsters in the map)`` to 0 … 100.
- **Metrics**: ``kills``, ``damage_taken``; ``info["task"]`` holds ``kills``,
  ``monsters_left`` and ``collected`` on every step.

The built-in default map (``data/tasks/proc_dungeons.yaml``) is this project's own: two rooms
carved in a steel block, joined by a diagonal corridor, one tier-b monster beside the objective in
the far room, a glass ceiling; its maximum return is 10.5.

Departures from Craftium: monster tiers are this project's own kinds instead of mobs_monster
species; the world depends only on the map and the wall material, so the ``seed`` kwarg (Craftium's
engine seed) and ``options["world_seed"]`` leave it unchanged; a bad map raises ``ValueError``
naming the line and column when the environment is made, where Craftium fails inside its engine.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import numpy as np

from omnigym.envs.craft.core import CraftSim, FrameEvents
from omnigym.envs.craft.dungeons import MONSTER_TIERS, DungeonMap, parse_ascii_map
from omnigym.envs.craft.engine import World
from omnigym.envs.craft.entities import Kind, KindTable
from omnigym.envs.craft.tasks.base import Task

SWORD = "default:sword_steel"
GLASS = "default:glass"
MARGIN = 2
"""Nodes of flat ground around the map on each side."""
HEADROOM = 2
"""Air layers above the map's top layer."""
MONSTER_KINDS = {tier: f"monster_{tier}" for tier in MONSTER_TIERS}
"""Map character → entity kind."""
_MONSTER_KIND_NAMES = frozenset(MONSTER_KINDS.values())
_KIND_FIELDS = {
    f.name: str(f.type) for f in fields(Kind) if f.name not in ("name", "id", "behaviour", "leap")
}
"""Monster stats a ``monster_*`` override may set, with their types (``entities.Kind``)."""


@functools.cache
def _base_kinds() -> KindTable:
    """The packaged kind table, read once (tables are immutable)."""
    return KindTable.load()


class ProcDungeonsTask(Task):
    """The dungeon of ``minetest_conf["ascii_map"]`` (``Craft/ProcDungeons-v0``)."""

    name = "ProcDungeons"

    # ---- configuration ----------------------------------------------------------------------

    def check_conf(self) -> None:
        conf = self.conf
        text = conf["ascii_map"]
        if not isinstance(text, str):
            raise ValueError(f"minetest_conf['ascii_map'] must be a str, got {type(text).__name__}")
        self.dungeon: DungeonMap = _parse(text)
        for key in ("rwd_objective", "rwd_kill_monster"):
            value = conf[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"minetest_conf[{key!r}] must be a number, got {value!r}")
        wall = conf["wall_material"]
        solid = wall in self.materials and self.materials[wall].walkable
        if not (solid and self.materials[wall].visible):
            raise ValueError(
                f"minetest_conf['wall_material'] must name a solid node of materials.yaml, "
                f"got {wall!r}"
            )
        item = conf["objective_item"]
        if not isinstance(item, str) or not (
            item in self.materials or item in self.materials.items or item in self.tools
        ):
            raise ValueError(
                f"minetest_conf['objective_item'] must name a node, item or tool, got {item!r}"
            )
        kinds = _base_kinds()
        for tier, kind in MONSTER_KINDS.items():
            key = f"monster_{tier}"
            overrides = conf[key]
            if not isinstance(overrides, Mapping):
                raise ValueError(f"minetest_conf[{key!r}] must be a dict, got {overrides!r}")
            unknown = sorted(set(overrides) - _KIND_FIELDS.keys())
            if unknown:
                raise ValueError(
                    f"minetest_conf[{key!r}] has unknown fields {unknown}; "
                    f"fields are {sorted(_KIND_FIELDS)}"
                )
            if overrides:
                changes = {f: _stat(key, f, v) for f, v in overrides.items()}
                kinds = kinds.replace(kind, **changes)
        self.kinds = kinds

    def world_key(self, map_seed: int | None) -> Any:
        return self.conf["ascii_map"], self.conf["wall_material"]

    def score_range(self) -> tuple[float, float]:
        conf = self.conf
        best = conf["rwd_objective"] + conf["rwd_kill_monster"] * len(self.dungeon.monsters)
        return 0.0, float(best)

    # ---- world and episode ------------------------------------------------------------------

    def build_world(self, map_seed: int | None) -> World:
        """The map on flat ground: cell ``(x, layer, z)`` is node ``(x, layer, z)``."""
        dungeon = self.dungeon
        width, layers, depth = dungeon.shape
        origin = (-MARGIN, 0, -MARGIN)
        shape = (width + 2 * MARGIN, layers + HEADROOM, depth + 2 * MARGIN)
        world = World(self.materials, shape, origin=origin)
        world.fill(
            (-MARGIN, 0, -MARGIN), (width + MARGIN - 1, 0, depth + MARGIN - 1), self.table["ground"]
        )
        inside = (slice(MARGIN, MARGIN + width), slice(0, layers), slice(MARGIN, MARGIN + depth))
        region = world.content[inside]
        region[dungeon.walls] = self.materials.id(self.conf["wall_material"])
        region[dungeon.glass] = self.materials.id(GLASS)
        world.compute_light()
        return world

    def reset(self, sim: CraftSim) -> None:
        dungeon = self.dungeon
        player = sim.avatars[0].player
        player.position[:] = _standing(dungeon.player)
        player.yaw, player.pitch = 0.0, 0.0
        player.inventory.add(SWORD)
        sim.entities.kinds = self.kinds
        look = self.table["objective"]
        for cell in dungeon.objectives:
            sim.entities.spawn(
                "item",
                _standing(cell),
                item=self.conf["objective_item"],
                scale=float(look["scale"]),
                color=look["color"],
            )
        for tier, cell in dungeon.monsters:
            sim.entities.spawn(MONSTER_KINDS[tier], _standing(cell))
        self.kills = 0
        self.collected = False

    def luanti_data(self, world: World) -> dict[str, Any]:
        dungeon, conf = self.dungeon, self.conf
        monsters = []
        for tier, cell in dungeon.monsters:
            kind = self.kinds[MONSTER_KINDS[tier]]
            monsters.append(
                {
                    "kind": kind.name,
                    "pos": _standing(cell).tolist(),
                    "size": list(kind.size),
                    **{
                        stat: getattr(kind, stat)
                        for stat in ("hp", "damage", "speed", "reach", "view_range")
                    },
                    "attack_interval": kind.attack_interval,
                    "color": list(kind.color),
                }
            )
        return {
            "spawn": _standing(dungeon.player).tolist(),
            "sword": SWORD,
            "objectives": [_standing(cell).tolist() for cell in dungeon.objectives],
            "objective_item": conf["objective_item"],
            "objective_color": list(self.table["objective"]["color"]),
            "monsters": monsters,
            "rwd_objective": conf["rwd_objective"],
            "rwd_kill_monster": conf["rwd_kill_monster"],
        }

    # ---- rules ------------------------------------------------------------------------------

    def frame(self, sim: CraftSim, events: list[FrameEvents]) -> bool:
        for punch in events[0].punches:
            if punch.killed and punch.kind in _MONSTER_KIND_NAMES:
                self.kills += 1
                self.rewards[0] += self.conf["rwd_kill_monster"]
            elif punch.picked_up is not None and punch.picked_up[0] == self.conf["objective_item"]:
                self.collected = True
                self.rewards[0] += self.conf["rwd_objective"]
        return self.collected

    def end_step(self, sim: CraftSim) -> tuple[np.ndarray, bool]:
        rewards, dead = super().end_step(sim)
        return rewards, dead or self.collected

    # ---- facts ------------------------------------------------------------------------------

    def info(self, sim: CraftSim) -> dict[str, Any]:
        return {
            "kills": self.kills,
            "monsters_left": len(self.dungeon.monsters) - self.kills,
            "collected": self.collected,
        }

    def success(self, sim: CraftSim) -> bool:
        return self.collected

    def metrics(self, sim: CraftSim) -> dict[str, float]:
        return {
            "kills": float(self.kills),
            "damage_taken": float(sim.avatars[0].damage_taken),
        }


@functools.lru_cache(maxsize=8)
def _parse(text: str) -> DungeonMap:
    """``parse_ascii_map``, remembered for the last few maps (tasks re-check on conf changes)."""
    return parse_ascii_map(text)


def _stat(key: str, name: str, value: Any) -> Any:
    """A monster stat override, checked against the stat's type in ``entities.Kind``."""
    kind = _KIND_FIELDS[name]
    numbers = value if isinstance(value, list | tuple) else [value]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers):
        raise ValueError(f"minetest_conf[{key!r}][{name!r}] must be numeric, got {value!r}")
    if kind.startswith("tuple"):
        size = kind.count(",") + 1
        if not isinstance(value, list | tuple) or len(value) != size:
            raise ValueError(
                f"minetest_conf[{key!r}][{name!r}] must be {size} numbers, got {value!r}"
            )
        cast = int if "int" in kind else float
        return tuple(cast(v) for v in value)
    if isinstance(value, list | tuple) or (kind == "int" and not isinstance(value, int)):
        raise ValueError(f"minetest_conf[{key!r}][{name!r}] must be one {kind}, got {value!r}")
    return int(value) if kind == "int" else float(value)


def _standing(cell: tuple[int, int, int]) -> np.ndarray:
    """Position of a body standing on the floor below map cell ``cell`` (x, layer, z)."""
    x, y, z = cell
    return np.array([float(x), y - 0.5, float(z)])
