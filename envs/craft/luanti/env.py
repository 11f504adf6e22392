"""``LuantiCraftEnv``: a Craft task played in the real Luanti engine (``backend="luanti"``).

The same constructor, spaces, ``info`` keys and task metadata as ``CraftEnv`` (``env.py``), but
the world, the task's rules and the agent's body live in a headless Luanti 5.6 server
(``server.LuantiServer``) running the task as a Lua mod, as Craftium does (Malagón, Ceberio,
Lozano, ICML 2025). ``CraftEnv(task, backend="luanti")`` (or ``"minetest"``) makes one, and so
does ``omnigym.make("Craft/Room-v0", backend="luanti")``.

Per step the raw action becomes the keys of the step's first and later frames and the camera
turn per frame (Craftium's mouse formula, as in the embedded engine); the bridge runs the frames
with the fixed frame time ``1 / fps_max`` and the task's Lua callbacks after each, and answers
with the body's state, the task's reward and termination, the entities near the body and, when
it changed, the voxel region around it. Frames are drawn by omnigym's ray-caster from that
region and those entities, so both backends share their observation spaces; ``voxels`` and
``info["voxel_obs"]`` hold omnigym's published content ids (``data/materials.yaml``), mapped
from the server's by node name (``unknown``, 125, for nodes omnigym's table lacks), so the same
world gives the same voxels on both backends.

The server starts on the first ``reset`` and is reused by later resets (a soft reset: the task
mod's reset code runs; Craftium's ``get_soft_reset``); a server that died is replaced by the
next ``reset``, after its ``step`` raised ``LuantiError`` with the log. ``options={
"minetest_conf": {...}}`` that changes the configuration restarts the server.
"""

from __future__ import annotations

import functools
import hashlib
import math
import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from omnigym.envs.craft.actions import KEY_ACTIONS
from omnigym.envs.craft.engine import AIR, IGNORE, UNKNOWN, crop_voxels, node_at
from omnigym.envs.craft.entities import KindTable
from omnigym.envs.craft.env import (
    ENGINE_CONF,
    ENTITY_ROWS,
    WORLDS,
    CraftEnv,
    zeros_view,
)
from omnigym.envs.craft.luanti.server import (
    TASK_MODS,
    LuantiError,
    LuantiServer,
    decode_region,
    encode_world,
)
from omnigym.envs.craft.render import Renderer
from omnigym.envs.craft.tasks.base import shared_materials, task_table

LUANTI_BACKENDS = ("luanti", "minetest")
HELD = frozenset(("forward", "backward", "left", "right", "dig"))
"""Keys held on every frame of a step (Craftium's frameskip semantics); others fire once."""
DEFAULT_AREA = (-48, -16, -48, 47, 47, 47)
WORLD_FILE = "omnigym_world.bin"
WORLD_MARGIN = 8
"""Nodes of generated (empty) map kept loaded around an exported world."""
RECENTER = 8
REFRESH_STEPS = 100
INVISIBLE_DRAWTYPES = frozenset(("airlike",))
UNKNOWN_KIND = -1
"""Kind id in entity rows of an engine entity that names no kind of ``data/mobs.yaml``."""


@functools.cache
def _kind_table() -> KindTable:
    return KindTable.load()


def _name_color(name: str) -> tuple[int, int, int]:
    """A fixed colour for a node or entity with none in omnigym's tables (from its name)."""
    digest = hashlib.sha256(name.encode()).digest()
    return tuple(64 + b % 160 for b in digest[:3])


class LuantiCraftEnv(CraftEnv):
    """A Craft task in a Luanti server (``docs/craft.md``, "Backends").

    Takes ``CraftEnv``'s arguments, and:

    Args:
        task_mod: a task mod folder to run instead of the task's own (``Craft/LuaTask-v0``
            needs one): a Craftium-style ``init.lua`` with its ``mod.conf``.
        area: node box ``(x1, y1, z1, x2, y2, z2)`` the server generates and keeps loaded
            (default: the task's, else ``DEFAULT_AREA``).
        spawn: where a new body appears before the task places it (default: the task's, else
            the origin).
        engine_step: seconds of frames served between two of the engine's own steps
            (its timers run then; entities step with the frames); 0.05 is ten frames at
            ``fps_max=200``.
        timeout: seconds to wait for the server to start and for each reply.
        minetest_conf: the task's parameters and ``ENGINE_CONF`` keys as for ``CraftEnv``; every
            key but the task's parameters is also written into the server's ``minetest.conf``.
    """

    def __init__(
        self,
        task: str = "ChopTree",
        *args: Any,
        task_mod: str | Path | None = None,
        area: tuple[int, ...] | None = None,
        spawn: tuple[float, float, float] | None = None,
        engine_step: float = 0.05,
        timeout: float = 60.0,
        minetest_conf: Mapping[str, Any] | None = None,
        backend: str = "luanti",
        **kwargs: Any,
    ):
        if backend not in LUANTI_BACKENDS:
            raise ValueError(f"LuantiCraftEnv's backend must be one of {LUANTI_BACKENDS}")
        if minetest_conf is not None and not isinstance(minetest_conf, Mapping):
            raise ValueError(f"minetest_conf must be a dict, got {minetest_conf!r}")
        self._server_conf = {str(k): v for k, v in (minetest_conf or {}).items()}
        params = set((task_table().get(task, {}) or {}).get("params") or {})
        kept = {k: v for k, v in self._server_conf.items() if k in ENGINE_CONF or k in params}
        super().__init__(task, *args, minetest_conf=kept, backend=backend, **kwargs)
        spec = dict(self.task.table.get("luanti") or {})
        if task_mod is None and "mod" not in spec:
            raise ValueError(
                f"task {task!r} has no Lua mod for the Luanti backend yet; "
                "pass task_mod=<folder of a Lua task mod>"
            )
        self.task_mod = Path(task_mod) if task_mod is not None else TASK_MODS / spec["mod"]
        if not (self.task_mod / "init.lua").is_file():
            raise ValueError(f"task_mod {self.task_mod} has no init.lua")
        self.area = tuple(
            int(v) for v in (area if area is not None else spec.get("area", DEFAULT_AREA))
        )
        if len(self.area) != 6 or any(
            a > b for a, b in zip(self.area[:3], self.area[3:], strict=True)
        ):
            raise ValueError(
                f"area must be (x1, y1, z1, x2, y2, z2) with x1 <= x2 ..., got {area!r}"
            )
        self.spawn = tuple(
            float(v) for v in (spawn if spawn is not None else spec.get("spawn", (0, 0, 0)))
        )
        if not isinstance(engine_step, numbers.Real) or not engine_step >= 0:
            raise ValueError(f"engine_step must be a non-negative number, got {engine_step!r}")
        if not isinstance(timeout, numbers.Real) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number, got {timeout!r}")
        self.engine_step = float(engine_step)
        self.timeout = float(timeout)
        self._task_settings = dict(spec.get("settings") or {})
        self._exports_world = spec.get("world") == "embedded"
        self._server: LuantiServer | None = None
        self._server_key: Any = None
        self._renderer: Renderer | None = None
        self._ids: np.ndarray | None = None
        self._state: dict[str, Any] = {}
        self._region: dict[str, np.ndarray] | None = None
        self._turns: dict[tuple[float, float], tuple[float, float]] = {}
        self.backend = "luanti"

    # ---- server -----------------------------------------------------------------------------

    def _bridge_settings(self) -> dict[str, Any]:
        config = self.config
        hx, h, hz = config.box
        view = int(math.ceil(self.render_options.view_distance))
        rx, ry, rz = self.radii
        return {
            "connect_timeout": self.timeout,
            "area": list(self.area),
            "spawn": list(self.spawn),
            "region": [max(view, rx), max(view // 2, ry), max(view, rz)],
            "recenter": RECENTER,
            "refresh": REFRESH_STEPS,
            "entity_radius": float(view),
            "engine_step": self.engine_step,
            "dt": config.dt,
            "walk": config.walk_speed,
            "crouch": config.crouch_speed,
            "fast": config.fast_speed,
            "fast_move": config.fast_move,
            "accel_ground": config.accel_ground,
            "accel_air": config.accel_air,
            "gravity": config.gravity,
            "jump": config.jump_speed,
            "hx": hx / 2,
            "h": h,
            "hz": hz / 2,
            "step": config.step_height,
            "air_step": config.air_step_height,
            "eye": config.eye_height,
            "range": config.interaction_range,
            "hp_max": config.hp_max,
            "fall_tolerance": config.fall_tolerance,
            "fall_per_speed": config.fall_damage_per_speed,
            "pitch_limit": config.pitch_limit,
            "enable_damage": self.sim.enable_damage,
            "time_of_day": self.task.time_of_day(self.sim),
        }

    def _ensure_server(self, conf: dict[str, Any]) -> LuantiServer:
        key = (repr(sorted(self.task.conf.items())), *sorted((k, repr(v)) for k, v in conf.items()))
        if self._server is not None and (not self._server.alive or key != self._server_key):
            self._server.close()
            self._server = None
        if self._server is None:
            settings, files = self._bridge_settings(), {}
            if self._exports_world:
                world = WORLDS.get(self.task, self.map_seed)
                header, files[WORLD_FILE] = encode_world(world)
                settings["world"] = {**header, "file": WORLD_FILE}
                settings["task"] = self.task.luanti_data(world)
                lo, hi = world.bounds
                settings["area"] = [*(lo - WORLD_MARGIN).tolist(), *(hi + WORLD_MARGIN).tolist()]
                settings["spawn"] = settings["task"].get("spawn", settings["spawn"])
            self._server = LuantiServer(
                self.task_mod,
                settings,
                {**self._task_settings, **conf},
                timeout=self.timeout,
                files=files,
            )
            self._server_key = key
            self._renderer = self._make_renderer(self._server.hello["nodes"])
            self._ids = self._id_table(self._server.hello["nodes"])
        return self._server

    def _make_renderer(self, nodes: Mapping[str, Any]) -> Renderer:
        """A renderer whose colour table is indexed by this server's content ids: omnigym's
        colour where the node has one, a colour from its name otherwise."""
        materials = shared_materials()
        size = max(int(entry[0]) for entry in nodes.values()) + 1
        size = max(size, IGNORE + 1)
        colors = np.zeros((size, 3), dtype=np.uint8)
        visible = np.zeros(size, dtype=bool)
        for name, (cid, drawtype, _walkable) in nodes.items():
            cid = int(cid)
            colors[cid] = materials[name].color if name in materials else _name_color(name)
            visible[cid] = drawtype not in INVISIBLE_DRAWTYPES and name not in ("air", "ignore")
        return Renderer(colors, visible, self.render_options)

    @staticmethod
    def _id_table(nodes: Mapping[str, Any]) -> np.ndarray:
        """This server's content id → omnigym's published id of the same node name (``unknown``
        for a node omnigym's table lacks), so voxel observations mean the same on both
        backends."""
        materials = shared_materials()
        size = max(max(int(entry[0]) for entry in nodes.values()) + 1, IGNORE + 1)
        table = np.full(size, UNKNOWN, dtype=np.uint16)
        for name, entry in nodes.items():
            if name in materials:
                table[int(entry[0])] = materials.id(name)
        table[[AIR, IGNORE]] = (AIR, IGNORE)
        return table

    @property
    def server(self) -> LuantiServer | None:
        """The running server (None before the first reset and after ``close``)."""
        return self._server

    # ---- gymnasium API ----------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        gym.Env.reset(self, seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - {"minetest_conf"})
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; valid: minetest_conf")
        conf = dict(self._server_conf)
        episode_conf = options.get("minetest_conf")
        if episode_conf is not None:
            if not isinstance(episode_conf, Mapping):
                raise ValueError(f"options['minetest_conf'] must be a dict, got {episode_conf!r}")
            conf.update({str(k): v for k, v in episode_conf.items()})
        # The task's own parameters reach its mod through the exported world and luanti_data;
        # every other key is a minetest.conf setting.
        params = {**self.task.params, **{k: v for k, v in conf.items() if k in self.task.params}}
        if params != self.task.conf:
            self.task.conf = params
            self.task.check_conf()
        settings = {k: v for k, v in conf.items() if k not in self.task.params}
        server = self._ensure_server(settings)
        lua_seed = int(self.np_random.integers(2**31 - 1))
        self._region = None
        self._receive(*server.request(f"reset {lua_seed}"))
        return self._begin_episode()

    def step(self, action: Any):
        raw = self._check_action(action)
        server = self._server
        if server is None or not server.alive:
            self._done = True
            if server is None:
                raise LuantiError(f"{self._name}: no Luanti server (reset first)")
            raise server.failure("the server is not running")
        dyaw, dpitch = self._camera(raw["mouse"])
        first = "".join("1" if raw[key] else "0" for key in KEY_ACTIONS)
        held = "".join("1" if raw[key] and key in HELD else "0" for key in KEY_ACTIONS)
        try:
            reply = server.request(f"step {self.frameskip} {dyaw!r} {dpitch!r} {first} {held}")
        except LuantiError:
            self._done = True
            raise
        self._receive(*reply)
        return self._end_step(float(self._state["reward"]), bool(self._state["terminated"]))

    def _camera(self, mouse: np.ndarray) -> tuple[float, float]:
        key = (float(mouse[0]), float(mouse[1]))
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = self.sim.camera_turn(*key)
        return turn

    def _receive(self, header: dict[str, Any], blob: bytes) -> None:
        self._state = header
        if header.get("region") is not None:
            region = decode_region(header["region"], blob)
            region["top_row"] = self._renderer.top_row(region["content"])
            region["heights"] = self._renderer.column_heights(region["content"])
            region["zyx"] = {
                key: np.ascontiguousarray(region[key].transpose(2, 1, 0))
                for key in ("content", "light", "param2")
            }
            region["zyx"]["ids"] = self._ids[region["zyx"]["content"]]
            self._region = region

    def _final_info(self, terminated: bool) -> dict[str, Any]:
        state = self._state
        success = state.get("success")
        if success is None:
            success = terminated and bool(state["alive"])
        return {
            "success": bool(success),
            "normalized_score": self.task.normalized_score(self._return),
            "metrics": {
                "damage_taken": float(state["damage_taken"]),
                "distance": float(state["distance"]),
                "min_y": float(state["min_y"]),
            },
        }

    # ---- observations -----------------------------------------------------------------------

    @property
    def position(self) -> np.ndarray:
        return np.array(self._state["pos"], dtype=np.float64)

    def _frame(self) -> np.ndarray:
        state, region = self._state, self._region
        eye = self.position + np.array([0.0, self.config.eye_height, 0.0])
        return self._renderer.render(
            region["content"],
            eye,
            float(state["yaw"]),
            float(state["pitch"]),
            entities=self._entity_boxes(),
            light=region["light"],
            origin=tuple(region["origin"]),
            top_row=region["top_row"],
            heights=region["heights"],
        )

    def _entity_boxes(self) -> np.ndarray | None:
        rows = self._state.get("entities") or []
        if not rows:
            return None
        boxes = np.empty((len(rows), 9))
        for out, (x, y, z, hx, hy, hz, name, color, *_) in zip(boxes, rows, strict=True):
            out[:] = (x, y, z, hx, hy, hz, *(color or _name_color(str(name))))
        return boxes

    def _entity_rows(self) -> np.ndarray:
        out = np.zeros((ENTITY_ROWS, 6), dtype=np.float32)
        rows = self._state.get("entities") or []
        if not rows:
            return out
        # as the embedded engine's rows: from the player's feet to the entity's (its box bottom)
        feet = np.array([(x, y - hy, z) for x, y, z, _, hy, *_ in rows], dtype=np.float64)
        deltas = feet - self.position
        order = np.argsort(np.einsum("ij,ij->i", deltas, deltas), kind="stable")[:ENTITY_ROWS]
        kinds = _kind_table()
        for row, i in zip(out, order, strict=False):
            kind, hp = rows[i][8], rows[i][9]
            row[0] = kinds[kind].id if kind in kinds else UNKNOWN_KIND
            row[1:4] = deltas[i]
            row[4] = hp
            row[5] = 1.0
        return out

    def _crop(self, key: str, fill: int) -> np.ndarray:
        region = self._region
        return crop_voxels(
            region["zyx"][key], node_at(self.position), self.radii, region["origin"], fill
        )

    def _observe(self):
        frame = None
        if self.obs_mode != "voxels" or self.render_mode is not None:
            frame = self._frame()
            self._last_frame = frame
        if self.obs_mode == "rgb":
            return frame
        state = self._state
        player = np.array(
            [
                *state["vel"],
                state["yaw"],
                state["pitch"],
                state["hp"],
                state["slot"],
                float(state["on_ground"]),
                state["time_of_day"],
            ],
            dtype=np.float32,
        )
        obs = {
            "voxels": self._crop("ids", IGNORE),
            "entities": self._entity_rows(),
            "player": player,
        }
        if self.obs_mode == "both":
            obs["rgb"] = frame
        return obs

    def player_info(self, viewer: int) -> dict[str, Any]:
        state = self._state
        if self.enable_voxel_obs:
            voxel_obs = np.empty(self.voxel_info_shape, dtype=np.uint32)
            voxel_obs[..., 0] = self._crop("ids", IGNORE)
            voxel_obs[..., 1] = self._crop("light", 0)
            voxel_obs[..., 2] = self._crop("param2", 0)
        else:
            voxel_obs = zeros_view(self.voxel_info_shape)
        return {
            "voxel_obs": voxel_obs,
            "player_pos": np.array(state["pos"], dtype=np.float32),
            "player_vel": np.array(state["vel"], dtype=np.float32),
            "player_pitch": float(state["pitch"]),
            "player_yaw": float(state["yaw"]),
            "mt_dtime": self.mt_dtime,
            "task": dict(state.get("info") or {}),
        }

    def close(self):
        server, self._server = self._server, None
        if server is not None:
            server.close()
        super().close()


def luanti_vector_env(
    task: str,
    num_envs: int = 1,
    *,
    actions: list[str] | None = None,
    mouse_mov: float | None = None,
    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    copy: bool = True,
    render_threads: int = 1,
    max_episode_steps: int | None = None,
    **env_kwargs: Any,
) -> SyncVectorEnv:
    """``num_envs`` Luanti envs of ``task`` in a ``SyncVectorEnv`` (what ``CraftVectorEnv``
    makes for ``backend="luanti"``); each env starts its own server on its first reset.
    ``render_threads`` is accepted for ``CraftVectorEnv``'s signature and unused."""
    from omnigym.envs.craft.env import make_task_env

    if max_episode_steps is not None:
        env_kwargs.setdefault("max_timesteps", max_episode_steps)

    def make() -> gym.Env:
        return make_task_env(task, actions, mouse_mov, **env_kwargs)

    return SyncVectorEnv([make] * num_envs, copy=copy, autoreset_mode=AutoresetMode(autoreset_mode))
