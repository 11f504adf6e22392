"""Craftium's ``OpenWorld``: survive, hunt and climb the tools track in a generated world.

Follows Craftium's open-world task (Malagón, Ceberio, Lozano, ICML 2025) and, for the achievements
and their score, Crafter (Hafner, ICLR 2022).

- **World**: ``terrain.generate_open_world`` (256×80×256, biomes, trees, ores at depth, caves,
  still water), from the map seed (``seed`` kwarg; None is ``rules.canonical_seed``). The player
  starts on the spawn column near the centre, facing a random heading, with a stone axe and 256
  torches; animals (chicken, sheep, pig, cow) and villagers stand on the surface around it.
- **Day and night**: the time of day advances one ``day_frames``-th per frame; at night frames
  are drawn with the light grid clipped to the sun's level, and monsters of tiers a–d spawn in
  dark cells near the player (surface at night, caves at any hour), a few at a time.
- **Tools track**: 2 trunk nodes dug → +128 and wood pickaxe and sword; 3 stone → +256, stone
  tools; 3 iron ore → +1024, steel tools; 1 diamond ore → +2048, diamond tools. Each stage
  replaces the tools in the inventory. The track totals 3456, the score range.
- **Hunting** (``minetest_conf["hunt_reward"]``): ``"per_punch"`` (default, Craftium's code) pays
  each landed punch's damage on monsters, half of it on animals and −10 on villagers;
  ``"per_kill"`` (Craftium's documentation) pays 16/32/64/128 for a chicken/sheep/pig/cow and
  32/64/128/256 for monster tiers a–d.
- **Episode end**: death terminates; truncation after 10 000 steps. Success: diamond stage.
- **Achievements**: the twenty names of ``ACHIEVEMENTS``, counted Crafter's way (unlocks this
  episode), under ``info()["achievements"]`` and in ``final_info``.

All numbers are in ``data/tasks/open_world.yaml`` under ``rules``.

Departures from Craftium: VoxeLibre's animals and mobs_monster species are replaced by the engine's
own kinds; stage tool sets keep the torches the player still carries, so ``place_torch`` stays
possible after the first stage; the light grid is not updated by digging or placing (torches placed
by the player do not light their surroundings); the sky keeps its day colour at night; animals do
not respawn. Frame rules read only the frame's events, and spawning samples a few cells around the
player from the height map, so no rule scans the grid.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from omnigym.envs.craft import terrain
from omnigym.envs.craft.core import CraftSim, FrameEvents
from omnigym.envs.craft.engine import AIR, HOTBAR_SIZE, World
from omnigym.envs.craft.tasks.base import Task

ACHIEVEMENTS = (
    "collect_wood",
    "collect_stone",
    "collect_coal",
    "collect_iron",
    "collect_diamond",
    "earn_wood_tools",
    "earn_stone_tools",
    "earn_iron_tools",
    "earn_diamond_tools",
    "place_torch",
    "place_block",
    "hunt_chicken",
    "hunt_sheep",
    "hunt_pig",
    "hunt_cow",
    "defeat_monster_a",
    "defeat_monster_b",
    "defeat_monster_c",
    "defeat_monster_d",
    "survive_night",
)
"""OpenWorld's twenty achievements, in the order of ``info["achievements"]``."""
HUNT_REWARDS = ("per_punch", "per_kill")
TORCH = "default:torch"
SURFACE_CACHE_SIZE = 8


@dataclass(frozen=True)
class Surface:
    """What spawning needs of a generated world: its height map and the player's spawn point."""

    heightmap: np.ndarray
    spawn: tuple[float, float, float]


_SURFACES: collections.OrderedDict[int, Surface] = collections.OrderedDict()
"""Surfaces of the generated worlds by map seed, kept beside the environment's world cache
(which holds the grids) so that spawning never scans a grid for the ground."""


def _keep_surface(seed: int, result: terrain.TerrainResult) -> None:
    _SURFACES[seed] = Surface(result.heightmap.astype(np.int16), result.spawn)
    _SURFACES.move_to_end(seed)
    while len(_SURFACES) > SURFACE_CACHE_SIZE:
        _SURFACES.popitem(last=False)


class OpenWorldTask(Task):
    """The open world (``Craft/OpenWorld-v0``); the module docstring gives the rules.

    Args:
        conf: task parameters (``minetest_conf``): ``hunt_reward``, ``"per_punch"`` (default)
            or ``"per_kill"``.
        n_players: bodies in the world; the rules score player 0 (OpenWorld is single-agent).

    Beyond ``Task``'s hooks: ``decorate_frame`` draws the HUD into a rendered frame, and
    ``info()["achievements"]`` holds the achievement counts of the episode so far.
    """

    name = "OpenWorld"
    width = 320
    height = 180
    fov = 90.0

    def __init__(self, conf=None, n_players: int = 1):
        super().__init__(conf, n_players)
        rules = self.table["rules"]
        self.rules = rules
        self.stages = list(rules["stages"])
        self._category_of = self._dug_categories(rules["dug_categories"])
        self._group_of = {
            kind: group for group, kinds in rules["hunt_groups"].items() for kind in kinds
        }
        monsters = rules["monsters"]
        self._monster_kinds = list(monsters["weights"])
        weights = np.array([monsters["weights"][k] for k in self._monster_kinds], dtype=float)
        self._monster_weights = weights / weights.sum()
        self._check_interval = int(monsters["interval_frames"])
        day = rules["day"]
        self.day_frames = int(day["day_frames"])
        self.start_time = float(day["start_time"])
        self.day_light = int(day["day_light"])
        self.night_light = int(day["night_light"])
        hud = rules["hud"]
        self._hud = {
            key: np.array(value, dtype=np.uint8)
            for key, value in hud.items()
            if key != "tool_colors"
        }
        self._tool_colors = {k: np.array(v, dtype=np.uint8) for k, v in hud["tool_colors"].items()}
        self._world_seed = int(rules["canonical_seed"])
        self._dim_light: np.ndarray | None = None
        self._dim_level = -1
        self.sun = self.day_light
        self.begin_episode()

    def _dug_categories(self, spec: dict[str, dict[str, Any]]) -> dict[str, str]:
        """Node name → category, the first matching entry of ``dug_categories`` winning."""
        category_of: dict[str, str] = {}
        for material in self.materials:
            for category, rule in spec.items():
                if material.name in rule.get("nodes", ()) or rule.get("group") in material.groups:
                    category_of[material.name] = category
                    break
        return category_of

    def check_conf(self) -> None:
        if self.conf["hunt_reward"] not in HUNT_REWARDS:
            raise ValueError(
                f"minetest_conf['hunt_reward'] must be one of {HUNT_REWARDS}, "
                f"got {self.conf['hunt_reward']!r}"
            )

    # ---- world and episode ------------------------------------------------------------------

    def world_key(self, map_seed: int | None) -> int:
        # The environment asks for the key right before loading the world of the next episode;
        # the key is also the one the height map is kept under.
        self._world_seed = int(self.rules["canonical_seed"] if map_seed is None else map_seed)
        return self._world_seed

    def build_world(self, map_seed: int | None) -> World:
        seed = self.world_key(map_seed)
        result = terrain.generate_open_world(self.materials, seed)
        _keep_surface(seed, result)
        return result.world

    def _surface(self) -> Surface:
        surface = _SURFACES.get(self._world_seed)
        if surface is None:
            # Dropped from the small cache while the environment still holds the grid: rebuild.
            self.build_world(self._world_seed)
            surface = _SURFACES[self._world_seed]
        _SURFACES.move_to_end(self._world_seed)
        return surface

    def begin_episode(self) -> None:
        super().begin_episode()
        self.achievements = dict.fromkeys(ACHIEVEMENTS, 0)
        self.dug = dict.fromkeys(self.rules["dug_categories"], 0)
        self.stage = 0
        self.tools_return = 0.0
        self.hunt_return = 0.0
        self.kills = 0
        self._night_seen = False

    def reset(self, sim: CraftSim) -> None:
        rng = sim.rng
        surface = self._surface()
        self.heightmap = surface.heightmap
        self._dim_level = -1
        if self._dim_light is None or self._dim_light.shape != sim.world.shape:
            self._dim_light = np.empty_like(sim.world.light)
        player = sim.avatars[0].player
        player.position[:] = surface.spawn
        player.yaw, player.pitch = float(rng.uniform(0.0, 360.0)), 0.0
        inventory = player.inventory
        inventory.clear()
        for item, count in self.rules["start_items"]:
            inventory.add(item, int(count))
        inventory.select(0)
        center = player.position
        low, high = self.rules["spawn_radius"]
        tries = int(self.rules["spawn_tries"])
        for kind, count in self.rules["animals"].items():
            for _ in range(int(count)):
                self._spawn_on_surface(sim, kind, center, low, high, tries)
        for _ in range(int(self.rules["villagers"])):
            self._spawn_on_surface(sim, "villager", center, low, high, tries)
        self.sun = self.sun_level(self.time_of_day(sim))

    def _spawn_on_surface(self, sim, kind, center, low, high, tries) -> bool:
        for _ in range(tries):
            cell = self._surface_cell(sim, center, low, high)
            if cell is not None:
                x, y, z = cell
                sim.entities.spawn(kind, (x, y - 0.5, z), yaw=float(sim.rng.uniform(0.0, 360.0)))
                return True
        return False

    def _surface_cell(self, sim, center, low, high) -> tuple[int, int, int] | None:
        """A random free cell on the surface at a horizontal distance in [low, high]."""
        rng = sim.rng
        angle = rng.uniform(0.0, 2.0 * math.pi)
        distance = rng.uniform(low, high)
        # Terrain worlds have their origin at (0, 0, 0): grid indices are node coordinates.
        x = _node(center[0] + distance * math.cos(angle))
        z = _node(center[2] + distance * math.sin(angle))
        sx, sy, sz = self.heightmap.shape[0], sim.world.shape[1], self.heightmap.shape[1]
        if not (0 <= x < sx and 0 <= z < sz):
            return None
        y = int(self.heightmap[x, z]) + 1
        if y + 1 >= sy or not self._standable(sim.world.content, x, y, z):
            return None
        return x, y, z

    def _standable(self, content: np.ndarray, x: int, y: int, z: int) -> bool:
        """Air at feet and head over walkable ground."""
        return (
            y >= 1
            and content[x, y, z] == AIR
            and content[x, y + 1, z] == AIR
            and bool(self.materials.walkable[content[x, y - 1, z]])
        )

    # ---- day and night ----------------------------------------------------------------------

    def time_of_day(self, sim: CraftSim) -> float:
        return (self.start_time + sim.frames / self.day_frames) % 1.0

    def sun_level(self, time: float) -> int:
        """The sunlight level (``night_light`` … ``day_light``) at ``time`` of day."""
        day = self.rules["day"]
        (rise0, rise1), (set0, set1) = day["sunrise"], day["sunset"]
        if rise1 <= time <= set0:
            fraction = 1.0
        elif rise0 < time < rise1:
            fraction = (time - rise0) / (rise1 - rise0)
        elif set0 < time < set1:
            fraction = (set1 - time) / (set1 - set0)
        else:
            fraction = 0.0
        return int(round(self.night_light + fraction * (self.day_light - self.night_light)))

    def frame_light(self, sim: CraftSim) -> np.ndarray:
        if self.sun >= self.day_light:
            return sim.world.light
        if self._dim_level != self.sun:
            np.minimum(sim.world.light, self.sun, out=self._dim_light)
            self._dim_level = self.sun
        return self._dim_light

    # ---- rules ------------------------------------------------------------------------------

    def frame(self, sim: CraftSim, events: list[FrameEvents]) -> bool:
        ev = events[0]
        for dug in ev.dug:
            category = self._category_of.get(dug.name)
            if category is not None:
                self.dug[category] += 1
                self.achievements[f"collect_{category}"] += 1
        if ev.dug:
            self._advance_stages(sim)
        for punch in ev.punches:
            self._score_punch(punch)
        for where in ev.placed:
            placed = "place_torch" if sim.world.get_name(*where) == TORCH else "place_block"
            self.achievements[placed] += 1
        self._tick_day(sim)
        if sim.frames % self._check_interval == 0:
            self._spawn_monsters(sim)
        return False

    def _advance_stages(self, sim: CraftSim) -> None:
        while self.stage < len(self.stages):
            stage = self.stages[self.stage]
            if self.dug[stage["category"]] < int(stage["count"]):
                return
            self.rewards[0] += float(stage["reward"])
            self.tools_return += float(stage["reward"])
            self.achievements[f"earn_{stage['name']}_tools"] += 1
            self._give_tools(sim.avatars[0].player.inventory, stage["tools"])
            self.stage += 1

    def _give_tools(self, inventory, tools) -> None:
        kept = [(item, inventory.count(item)) for item in self.rules["kept_items"]]
        inventory.clear()
        for tool in tools:
            inventory.add(tool, 1)
        for item, count in kept:
            if count:
                inventory.add(item, count)
        inventory.select(0)

    def _score_punch(self, punch) -> None:
        group = self._group_of.get(punch.kind)
        if group is None:
            return
        if self.conf["hunt_reward"] == "per_punch":
            reward = float(self.rules["per_punch_fixed"].get(group, 0.0))
            reward += punch.damage * float(self.rules["per_punch_factor"].get(group, 0.0))
        else:
            reward = float(self.rules["per_kill"].get(punch.kind, 0.0)) if punch.killed else 0.0
        self.rewards[0] += reward
        self.hunt_return += reward
        if punch.killed:
            self.kills += 1
            if group == "animal":
                self.achievements[f"hunt_{punch.kind}"] += 1
            elif group == "monster":
                self.achievements[f"defeat_{punch.kind}"] += 1

    def _tick_day(self, sim: CraftSim) -> None:
        self.sun = self.sun_level(self.time_of_day(sim))
        if self.sun <= self.night_light:
            self._night_seen = True
        elif self._night_seen and self.sun >= self.day_light and sim.avatars[0].alive:
            self._night_seen = False
            self.achievements["survive_night"] += 1

    def _spawn_monsters(self, sim: CraftSim) -> None:
        rules = self.rules["monsters"]
        player = sim.avatars[0].player
        position = player.position
        limit2 = float(rules["despawn_distance"]) ** 2
        live = 0
        for entity in sim.entities:
            if entity.removed or self._group_of.get(entity.kind) != "monster":
                continue
            if float(np.sum((entity.position - position) ** 2)) > limit2:
                entity.removed = True
            else:
                live += 1
        if live >= int(rules["cap"]):
            return
        rng = sim.rng
        low, high = rules["radius"]
        light = sim.world.light
        for attempt in range(int(rules["tries"])):
            if attempt % 2 == 0:
                cell = self._surface_cell(sim, position, low, high)
            else:
                cell = self._cave_cell(sim, position, low, high, int(rules["height"]))
            if cell is None:
                continue
            x, y, z = cell
            if min(int(light[x, y, z]), self.sun) > int(rules["max_light"]):
                continue
            kind = self._monster_kinds[
                int(rng.choice(len(self._monster_kinds), p=self._monster_weights))
            ]
            sim.entities.spawn(kind, (x, y - 0.5, z), yaw=float(rng.uniform(0.0, 360.0)))
            return

    def _cave_cell(self, sim, center, low, high, height) -> tuple[int, int, int] | None:
        """A random standable cell near the player's height at a horizontal distance in
        [low, high]."""
        rng = sim.rng
        angle = rng.uniform(0.0, 2.0 * math.pi)
        distance = rng.uniform(low, high)
        x = _node(center[0] + distance * math.cos(angle))
        z = _node(center[2] + distance * math.sin(angle))
        y = _node(center[1]) + int(rng.integers(-height, height + 1))
        sx, sy, sz = sim.world.shape
        if not (0 <= x < sx and 1 <= y < sy - 1 and 0 <= z < sz):
            return None
        if not self._standable(sim.world.content, x, y, z):
            return None
        return x, y, z

    # ---- HUD --------------------------------------------------------------------------------

    def decorate_frame(self, sim: CraftSim, frame: np.ndarray, viewer: int = 0) -> None:
        """Draws the hotbar and the health bar into ``frame`` (RGB or grey), in place.

        The hotbar is a row of ``HOTBAR_SIZE`` slots at the bottom centre, each filled with its
        item's colour, the wielded one framed; the health bar above it is as wide as the hotbar
        times hp / hp_max.
        """
        h, w = frame.shape[0], frame.shape[1]
        avatar = sim.avatars[viewer]
        inventory = avatar.player.inventory
        slot = max(3, h // 16)
        bar_w = HOTBAR_SIZE * (slot + 1) + 1
        if bar_w > w or 2 * slot + 3 > h:
            return
        left = (w - bar_w) // 2
        top = h - slot - 2
        paint = _painter(frame)
        hud = self._hud
        paint(top - 1, top + slot + 1, left, left + bar_w, hud["border_color"])
        for i in range(HOTBAR_SIZE):
            x0 = left + 1 + i * (slot + 1)
            if i == inventory.selected:
                paint(top - 1, top + slot + 1, x0 - 1, x0 + slot + 1, hud["selected_color"])
            paint(top, top + slot, x0, x0 + slot, hud["slot_color"])
            item = inventory.slots[i]
            if item is not None:
                inset = max(1, slot // 4)
                color = self._item_color(item[0])
                paint(top + inset, top + slot - inset, x0 + inset, x0 + slot - inset, color)
        health_h = max(1, slot // 3)
        h_top = top - 2 - health_h
        paint(h_top, h_top + health_h, left, left + bar_w, hud["health_empty_color"])
        filled = int(round(bar_w * max(avatar.player.hp, 0) / avatar.hp_max))
        if filled:
            paint(h_top, h_top + health_h, left, left + filled, hud["health_color"])

    def _item_color(self, item: str) -> np.ndarray:
        if item in self.materials:
            return self.materials.colors[self.materials.id(item)]
        material = item.rsplit("_", 1)[-1]
        return self._tool_colors.get(material, self._hud["item_color"])

    # ---- facts ------------------------------------------------------------------------------

    def info(self, sim: CraftSim) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "tools_return": self.tools_return,
            "hunt_return": self.hunt_return,
            "time_of_day": self.time_of_day(sim),
            "achievements": dict(self.achievements),
        }

    def success(self, sim: CraftSim) -> bool:
        return self.stage >= len(self.stages)

    def metrics(self, sim: CraftSim) -> dict[str, float]:
        return {
            **super().metrics(sim),
            "trunks_dug": float(self.dug["wood"]),
            "kills": float(self.kills),
            "stage": float(self.stage),
        }

    def final_info(self, sim: CraftSim, episode_return: float) -> dict[str, Any]:
        return {**super().final_info(sim, episode_return), "achievements": dict(self.achievements)}


def _node(v: float) -> int:
    """The node index holding coordinate ``v`` (Luanti's rounding)."""
    return int(math.floor(v + 0.5))


def _painter(frame: np.ndarray):
    """``paint(y0, y1, x0, x1, rgb)`` filling a rectangle of ``frame``, grey frames taking
    Craftium's ``R//3 + G//3 + B//3``."""
    grey = frame.ndim == 2 or frame.shape[-1] == 1

    def paint(y0: int, y1: int, x0: int, x1: int, rgb: np.ndarray) -> None:
        if grey:
            frame[y0:y1, x0:x1] = int(rgb[0]) // 3 + int(rgb[1]) // 3 + int(rgb[2]) // 3
        else:
            frame[y0:y1, x0:x1] = rgb

    return paint
