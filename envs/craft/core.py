"""The Craft simulation: one world, its players and entities, stepped frame by frame.

Follows the frame loop of Craftium (Malagón, Ceberio, Lozano, ICML 2025), which drives the Luanti
engine. ``CraftSim`` owns the world grid, the players (one for the single-agent env, several for
``MultiAgentCombat``), the entities and the task, and runs one agent step as ``frameskip`` frames of
``dt = 1 / fps_max``. Per frame, in this order:

1. look: the mouse delta turns the camera (Craftium's formula, ``physics.camera_turn``);
2–4. walk, jump, gravity and the collision sweep (``physics.step_player``); fall damage;
5. dig or punch whatever is pointed (the nearer of a node and a body), place, drop, hotbar;
6. entities update (mob AI), the damage they deal is applied, the task scores the frame.

``forward``, ``backward``, ``left``, ``right`` and ``dig`` are held on every frame of a step, the
mouse delta is applied on every frame, every other key fires on the first frame only (Craftium's
frameskip semantics). Event rewards are summed over the frames; per-step rewards are the task's,
once per step.

The gymnasium and PettingZoo classes (``env.py``, ``multi.py``, ``vector.py``) are thin fronts over
this class; it knows nothing of spaces or wrappers. Departures from Craftium (all listed in
``docs/craft.md``): fixed frame time, soft reset by grid copy, no GUI for ``inventory``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from omnigym.envs.craft.actions import CheckedAction
from omnigym.envs.craft.digging import DugNode, ToolTable, dig_frame, place, pointed_node
from omnigym.envs.craft.engine import AIR, MaterialTable, Player, World, node_at
from omnigym.envs.craft.entities import (
    Entities,
    EntityContext,
    PlayerHurt,
    PunchResult,
    ray_box,
)
from omnigym.envs.craft.physics import Controls, PhysicsConfig, camera_turn, step_player
from omnigym.envs.craft.render import Renderer, RenderOptions

if TYPE_CHECKING:
    from omnigym.envs.craft.tasks.base import Task

HELD_KEYS = ("forward", "backward", "left", "right", "dig")
"""Keys held on every frame of a step, as in Craftium; every other key fires on the first frame
only."""
SLOT_KEYS = tuple(f"slot_{slot + 1}" for slot in range(9))
"""The hotbar keys of a raw action, slot 0 first."""
PLAYER_KIND_ID = 1
"""Kind id of a player body in entity observations (``data/mobs.yaml``)."""
PLAYER_COLOR = (60, 90, 200)
MAX_ENTITY_ROWS = 32
MAX_PLANS = 64
"""Read-only actions whose plan (``CraftSim._plan``) a sim keeps: a wrapper's few are reused
every step; more than this many are forgotten at once, so that actions made anew every step
cannot grow the cache."""
_NO_CONTROLS = Controls()


@dataclass(slots=True)
class FrameEvents:
    """What happened to one player during one frame; tasks score frames from these."""

    dug: list[DugNode] = field(default_factory=list)
    punches: list[PunchResult] = field(default_factory=list)
    player_hits: list[int] = field(default_factory=list)
    """Indices of other players this player landed a punch on."""
    placed: list[tuple[int, int, int]] = field(default_factory=list)
    damage_taken: int = 0


class _Plan(NamedTuple):
    """One player's raw action as the frames of a step read it."""

    turn: tuple[float, float]
    """Camera turn per frame (``camera_turn`` of the mouse move)."""
    first_controls: Controls
    """Movement keys on the step's first frame."""
    held_controls: Controls
    """Movement keys held on its later frames (``HELD_KEYS``)."""
    dig: bool
    place: bool
    drop: bool
    slots: tuple[int, ...]
    """Hotbar slots pressed, in order (the last one is selected)."""


@dataclass
class Avatar:
    """One player's body, inventory and per-episode counters."""

    player: Player
    alive: bool = True
    last_punch: float = -math.inf
    damage_taken: int = 0
    distance: float = 0.0
    min_y: float = math.inf
    hazard_time: float = 0.0
    hp_max: int = 20

    def box(self, config: PhysicsConfig) -> tuple[np.ndarray, np.ndarray]:
        hx, h, hz = config.box
        p = self.player.position
        return (
            np.array([p[0] - hx / 2, p[1], p[2] - hz / 2]),
            np.array([p[0] + hx / 2, p[1] + h, p[2] + hz / 2]),
        )


class CraftSim:
    """A world stepped frame by frame for ``n_players`` players.

    Args:
        task: the task object (rules, world builder, spawn).
        n_players: bodies in the world.
        config: physics constants (``PhysicsConfig.load(pmul, fps_max)``).
        render: frame options, or ``None`` when no frame is ever drawn.
        kernel: "numba", or "numpy" to run the physics and digging kernels' source uncompiled
            (their reference; frames are always drawn by the compiled renderer).
        enable_damage: falls, lava and mobs hurt players.
    """

    def __init__(
        self,
        task: Task,
        n_players: int,
        config: PhysicsConfig,
        render: RenderOptions | None,
        kernel: str = "numba",
        enable_damage: bool = True,
    ):
        self.task = task
        self.config = config
        self.kernel = kernel
        self.enable_damage = enable_damage
        self.materials: MaterialTable = task.materials
        self.tools: ToolTable = task.tools
        self.n_players = n_players
        self.render_options = render
        self.renderer = (
            Renderer(self.materials.colors, self.materials.visible, render) if render else None
        )
        self.world: World | None = None
        self._pristine: World | None = None
        self._top_row = -1
        self.avatars: list[Avatar] = []
        self.entities = Entities()
        self.rng = np.random.default_rng()
        self.time = 0.0
        self.frames = 0
        self._damage_per_second = np.array(
            [self.materials[i].damage_per_second for i in range(len(self.materials.colors))],
            dtype=np.int64,
        )
        self._hazards = False
        self._pristine_top = -1
        self._pristine_heights: np.ndarray | None = None
        self._heights: np.ndarray | None = None
        self._draw_heights = False
        self._turns: dict[tuple[float, float], tuple[float, float]] = {}
        self._controls: dict[tuple, tuple[Controls, Controls]] = {}
        self._plans: dict[int, tuple[CheckedAction, _Plan]] = {}

    # ---- episodes ---------------------------------------------------------------------------

    def load_world(self, pristine: World) -> None:
        """Makes ``pristine`` (kept unchanged) the world that resets restore."""
        if pristine is self._pristine:
            return
        self._pristine = pristine
        self._hazards = bool(self._damage_per_second[pristine.content].any())
        if self.renderer is not None:
            self._pristine_top = self.renderer.top_row(pristine.content)
            self._pristine_heights = self.renderer.column_heights(pristine.content)
            # The heights hint (a horizon that stops rising rays, empty space skipped above the
            # columns) pays for itself only where rays can run far over open ground: in a grid
            # wider than twice the view distance. In a smaller one it costs more than it saves
            # (ChopTree's 48 × 48 forest: 20 µs a step to rebuild the horizon, for no gain in
            # the frame). Frames are the same either way.
            reach = 2.0 * self.render_options.view_distance
            self._draw_heights = max(pristine.shape[0], pristine.shape[2]) > reach
        if (
            self.world is None
            or self.world.shape != pristine.shape
            or not np.array_equal(self.world.origin, pristine.origin)
        ):
            self.world = pristine.copy()

    @property
    def pristine(self) -> World | None:
        """The world resets restore (never written)."""
        return self._pristine

    def reset(self, rng: np.random.Generator) -> None:
        """Restores the pristine world, clears bodies and counters; the task then spawns.

        Tasks that write nodes in ``reset`` above the pristine world's highest visible row call
        ``world_changed(node)`` for them.
        """
        assert self._pristine is not None, "load_world first"
        self.world.restore(self._pristine)
        self._top_row = self._pristine_top
        if self.renderer is not None:
            self._heights = self._pristine_heights.copy()
        self.rng = rng
        self.time = 0.0
        self.frames = 0
        self.entities.clear()
        self.avatars = [
            Avatar(Player(hp=self.config.hp_max), hp_max=self.config.hp_max)
            for _ in range(self.n_players)
        ]
        self.task.reset(self)
        for avatar in self.avatars:
            avatar.min_y = float(avatar.player.position[1])

    def world_changed(self, node: tuple[int, int, int] | None = None) -> None:
        """Keeps the renderer's highest visible row up to date after the grid was written.

        ``node``: the one node that became visible (placed); None rescans the whole grid. A dug
        node needs no call: a top row or column height above the true one draws the same frame.
        """
        if self.renderer is None:
            return
        if node is None:
            self._top_row = self.renderer.top_row(self.world.content)
            self._heights = self.renderer.column_heights(self.world.content)
            return
        x, y, z = (int(c) for c in np.asarray(node) - self.world.origin)
        self._top_row = max(self._top_row, y)
        self._heights[x, z] = max(int(self._heights[x, z]), y)

    # ---- stepping ---------------------------------------------------------------------------

    def step(self, actions: list[dict[str, Any]], frameskip: int) -> list[list[FrameEvents]]:
        """Runs one agent step: ``frameskip`` frames with each player's complete raw action.

        Returns, per frame, the ``FrameEvents`` of each player. Stops early once every player
        is dead or the task says the episode is over.
        """
        plans = [self._plan(action) for action in actions]
        config = self.config
        history = []
        for frame in range(frameskip):
            events = [FrameEvents() for _ in self.avatars]
            for i, avatar in enumerate(self.avatars):
                if avatar.alive:
                    self._player_frame(i, avatar, plans[i], frame == 0, events)
            self._entities_frame(events)
            self.time += config.dt
            self.frames += 1
            history.append(events)
            if self.task.frame(self, events) or not any(a.alive for a in self.avatars):
                break
        return history

    def _plan(self, action: dict[str, Any]) -> _Plan:
        """What a frame reads of a complete raw action, read once per step; kept for a
        ``CheckedAction`` (read-only), which a wrapper hands over again on later steps."""
        checked = type(action) is CheckedAction
        if checked:
            kept = self._plans.get(id(action))
            # The cache holds the action itself, so no other object can have its id meanwhile.
            if kept is not None and kept[0] is action:
                return kept[1]
        mouse = action["mouse"]
        keys = (
            action["forward"],
            action["backward"],
            action["left"],
            action["right"],
            action["jump"],
            action["sneak"],
            action["aux1"],
        )
        controls = self._controls.get(keys)
        if controls is None:
            controls = self._controls[keys] = (
                Controls(*map(bool, keys)),
                Controls(*map(bool, keys[:4])),
            )
        plan = _Plan(
            self.camera_turn(float(mouse[0]), float(mouse[1])),
            controls[0],
            controls[1],
            bool(action["dig"]),
            bool(action["place"]),
            bool(action["drop"]),
            tuple(slot for slot, key in enumerate(SLOT_KEYS) if action[key]),
        )
        if checked:
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            self._plans[id(action)] = (action, plan)
        return plan

    def camera_turn(self, mouse_x: float, mouse_y: float) -> tuple[float, float]:
        """Camera turn per frame for a mouse move (cached: agents repeat a few moves)."""
        turn = self._turns.get((mouse_x, mouse_y))
        if turn is None:
            config = self.config
            width = self.render_options.width if self.render_options else 64
            height = self.render_options.height if self.render_options else 64
            turn = self._turns[(mouse_x, mouse_y)] = camera_turn(
                mouse_x,
                mouse_y,
                width,
                height,
                config.fov,
                config.mouse_sensitivity,
                config.fov_scale,
            )
        return turn

    def _player_frame(self, i, avatar, plan, first, events) -> None:
        config = self.config
        player = avatar.player
        turn = plan.turn
        controls = plan.first_controls if first else plan.held_controls
        if turn[0] or turn[1]:
            player.look(turn[0], turn[1], config.pitch_limit)
        x0, z0 = player.position[0], player.position[2]
        result = step_player(self.world, player, controls, config, self.kernel)
        avatar.distance += math.hypot(player.position[0] - x0, player.position[2] - z0)
        if player.position[1] < avatar.min_y:
            avatar.min_y = float(player.position[1])
        if result.fall_damage:
            self.hurt(i, result.fall_damage, events)
        if self._hazards:
            self._hazard(i, avatar, events)
        if plan.dig:
            self._dig_or_punch(i, avatar, events[i])
        else:
            player.dig_target, player.dig_elapsed = None, 0.0
        if not first:
            return
        for slot in plan.slots:
            player.inventory.select(slot)
        if plan.place:
            bodies = [a.box(config) for j, a in enumerate(self.avatars) if j != i and a.alive]
            bodies += [e.box() for e in self.entities]
            where = place(self.world, player, config, bodies, self.kernel)
            if where is not None:
                events[i].placed.append(where)
                self.world_changed(where)
        if plan.drop:
            self._drop(player)

    def _hazard(self, i, avatar, events) -> None:
        """Damage of nodes like lava: their ``damage_per_second`` after each full second inside."""
        node = node_at(avatar.player.position)
        dps = int(self._damage_per_second[self.world.get(*node)])
        if dps <= 0:
            avatar.hazard_time = 0.0
            return
        avatar.hazard_time += self.config.dt
        if avatar.hazard_time >= 1.0 - 1e-9:
            avatar.hazard_time -= 1.0
            self.hurt(i, dps, events)

    def _dig_or_punch(self, i, avatar, ev: FrameEvents) -> None:
        config = self.config
        player = avatar.player
        eye = player.eye(config.eye_height)
        direction = player.look_direction()
        node_hit = pointed_node(self.world, player, config, self.kernel)
        node_dist = node_hit.distance if node_hit is not None else math.inf
        limit = min(node_dist, config.interaction_range)
        body = self._pointed_body(i, eye, direction, limit)
        if body is None:
            dug = dig_frame(self.world, player, self.tools, config, True, self.rng, self.kernel)
            if dug is not None:
                ev.dug.append(dug)
            return
        player.dig_target, player.dig_elapsed = None, 0.0
        tool = self.tools.wielded_tool(player.inventory.wielded)
        if self.time - avatar.last_punch + 1e-9 < tool.full_punch_interval:
            return
        avatar.last_punch = self.time
        target, _ = body
        if isinstance(target, int):
            ev.player_hits.append(target)
            self.task.player_punched(self, i, target, tool)
            return
        result = self.entities.punch(target, tool, player.position)
        if result.picked_up is not None:
            player.inventory.add(*result.picked_up)
        ev.punches.append(result)

    def _pointed_body(self, i, eye, direction, limit):
        """The nearest entity or other player along the view within ``limit``, if any."""
        best = self.entities.pointed(eye, direction, limit)
        for j, other in enumerate(self.avatars):
            if j == i or not other.alive:
                continue
            lo, hi = other.box(self.config)
            dist = ray_box(*eye, *direction, *lo, *hi)
            if dist is not None and dist <= limit and (best is None or dist < best[1]):
                best = (j, dist)
        return best

    def _drop(self, player: Player) -> None:
        item = player.inventory.wielded
        if item is None or not player.inventory.take_wielded(1):
            return
        ahead = player.position + player.look_direction() * np.array([1.0, 0.0, 1.0])
        self.entities.spawn("item", ahead + np.array([0.0, 0.5, 0.0]), item=item, count=1)

    def _entities_frame(self, events: list[FrameEvents]) -> None:
        if not len(self.entities):
            return
        ctx = EntityContext(
            world=self.world,
            config=self.config,
            rng=self.rng,
            players=[a.player for a in self.avatars],
            player_alive=[a.alive for a in self.avatars],
            time=self.time,
            events=[],
        )
        self.entities.update(ctx)
        for event in ctx.events:
            if isinstance(event, PlayerHurt):
                self.hurt(event.player, event.damage, events)

    def hurt(self, i: int, damage: int, events: list[FrameEvents] | None = None) -> None:
        """Takes ``damage`` hp from player ``i`` when damage is enabled; hp 0 kills."""
        avatar = self.avatars[i]
        if not self.enable_damage or damage <= 0 or not avatar.alive:
            return
        avatar.player.hp = max(avatar.player.hp - int(damage), 0)
        avatar.damage_taken += int(damage)
        if events is not None:
            events[i].damage_taken += int(damage)
        if avatar.player.hp <= 0:
            avatar.alive = False

    # ---- observations -----------------------------------------------------------------------

    def entity_boxes(self, viewer: int) -> np.ndarray | None:
        """Boxes of every entity and of the other players, for the renderer."""
        boxes = self.entities.boxes() if len(self.entities) else None
        others = [a for j, a in enumerate(self.avatars) if j != viewer and a.alive]
        if not others:
            return boxes
        hx, h, hz = self.config.box
        rows = np.array(
            [
                [*(a.player.position + (0.0, h / 2, 0.0)), hx / 2, h / 2, hz / 2, *PLAYER_COLOR]
                for a in others
            ],
            dtype=np.float64,
        )
        return rows if boxes is None else np.concatenate([boxes, rows])

    def frame(self, viewer: int = 0) -> np.ndarray:
        """The first-person frame of player ``viewer``."""
        frame = self.renderer.render(*self.view(viewer))
        self.task.decorate_frame(self, frame, viewer)
        return frame

    def finish_frame(self, frame: np.ndarray, viewer: int = 0) -> np.ndarray:
        """``frame`` for player ``viewer`` of a frame drawn from ``view(viewer)`` by other means
        (``batch.FrameBatch``): grey when the options say so, decorated by the task."""
        frame = self.renderer.finish(frame)
        self.task.decorate_frame(self, frame, viewer)
        return frame

    def view(self, viewer: int = 0) -> tuple:
        """``Renderer.render``'s arguments for player ``viewer``'s frame (grid, eye, yaw, pitch,
        entity boxes, light, origin, top row, heights)."""
        player = self.avatars[viewer].player
        return (
            self.world.content,
            player.eye(self.config.eye_height),
            player.yaw,
            player.pitch,
            self.entity_boxes(viewer),
            self.task.frame_light(self),
            self.world.origin,
            self._top_row,
            self._heights if self._draw_heights else None,
        )

    def voxels(
        self, viewer: int, radii: tuple[int, int, int], out: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """The ``obs_mode="voxels"`` observation dict (content ids, entity rows, player state) of
        player ``viewer``; the content ids written into ``out`` when given (a vector env's batch
        row: the crop is then the only copy of them)."""
        avatar = self.avatars[viewer]
        player = avatar.player
        center = node_at(player.position)
        state = np.array(
            [
                *player.velocity,
                player.yaw,
                player.pitch,
                player.hp,
                player.inventory.selected,
                float(player.on_ground),
                self.task.time_of_day(self),
            ],
            dtype=np.float32,
        )
        return {
            "voxels": self.world.voxels_around(center, radii, out),
            "entities": self.entities.observation(player.position, MAX_ENTITY_ROWS),
            "player": state,
        }

    def voxel_info(self, viewer: int, radii: tuple[int, int, int]) -> np.ndarray:
        """Craftium's ``info["voxel_obs"]`` (id, light, param2) around player ``viewer``."""
        return self.world.voxel_info(node_at(self.avatars[viewer].player.position), radii)

    def count_nodes(self, cid: int) -> int:
        return int(np.count_nonzero(self.world.content == cid))


__all__ = ["AIR", "Avatar", "CraftSim", "FrameEvents"]
