"""``CraftEnv``: the Gymnasium environment of the Craft family, Craftium's constructor and all.

Follows Craftium's ``CraftiumEnv`` (Malagón, Ceberio, Lozano, ICML 2025): the same keyword arguments
with the same defaults, the raw 22-key ``Dict`` action space, the same ``info`` keys, so code
written for Craftium runs after changing the import and the id.

Spaces:

- action: ``actions.raw_action_space()`` (21 ``Discrete(2)`` keys and a ``mouse`` ``Box``);
  registered ids wrap it in ``DiscreteActionWrapper`` with the task's actions.
- observation, ``obs_mode="rgb"`` (default): ``Box(0, 255, (H, W, 3), uint8)``; with
  ``rgb_observations=False`` grey ``(H, W)`` (``(H, W, 1)`` with ``gray_scale_keepdim``).
  ``obs_mode="voxels"``: ``Dict(voxels uint16 (2rz+1, 2ry+1, 2rx+1), entities float32 (32, 6),
  player float32 (9,))``; ``obs_mode="both"``: that dict plus ``rgb``.

Rewards, terminations and episode lengths are the task's (``tasks/``, ``data/tasks.yaml``).
``info`` on reset and every step: ``voxel_obs``, ``player_pos``, ``player_vel``, ``player_pitch``,
``player_yaw``, ``mt_dtime`` (Craftium's), ``task`` (counters), and on the final step
``success``, ``normalized_score``, ``metrics``.

Seeding: the ``seed`` kwarg selects the map (None: the task's canonical world);
``reset(seed=...)`` seeds ``np_random``, which drives everything random in the episode.
``reset(options={"world_seed": k})`` switches to world ``k`` (``"per_episode"``: drawn from
``np_random``); ``options={"minetest_conf": {...}}`` overrides task parameters for the episode.

Departures from Craftium (the table of ``docs/craft.md`` gives the reasons): frame time fixed at
``1 / fps_max`` with no throughput cap; every reset is a grid copy; declared shape ``(H, W, C)``;
engine-process kwargs are accepted and ignored (listed in ``IGNORED_KWARGS``).
``backend="luanti"`` (alias ``"minetest"``) runs the task in the real engine instead
(``luanti/env.py``).
"""

from __future__ import annotations

import collections
import math
import numbers
import warnings
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from omnigym.envs.craft.actions import (
    CheckedAction,
    DiscreteActionWrapper,
    check_raw_action,
    raw_action_space,
)
from omnigym.envs.craft.core import CraftSim
from omnigym.envs.craft.engine import World
from omnigym.envs.craft.physics import PhysicsConfig
from omnigym.envs.craft.render import RenderOptions
from omnigym.envs.craft.tasks import task_class
from omnigym.envs.craft.tasks.base import Task

IGNORED_KWARGS = (
    "env_dir",
    "run_dir",
    "run_dir_prefix",
    "game_id",
    "world_name",
    "minetest_dir",
    "pipe_proc",
    "mt_listen_timeout",
    "mt_port",
    "sync_mode",
    "offscreen_sdl",
    "gpu_id",
    "init_frames",
)
"""Craftium kwargs that configure its engine process; accepted and ignored here."""

ENGINE_CONF = ("fov", "mouse_sensitivity", "fast_move", "enable_damage", "give_initial_stuff")
"""``minetest_conf`` keys with a meaning here besides the task's own parameters."""

OBS_MODES = ("rgb", "voxels", "both")
BACKENDS = ("embedded", "luanti", "minetest")
"""The engines a Craft env runs in: omnigym's own, or Luanti (``"minetest"`` is an alias)."""
ENTITY_ROWS = 32
WORLD_CACHE_SIZE = 4
_WARNED: set[str] = set()


class _WorldCache:
    """Pristine worlds by (task class, world key), least recently used dropped beyond ``size``.

    Shared by every env of the process: pristine worlds are never written, so vector envs and
    repeated ``gym.make`` calls build each world once.
    """

    def __init__(self, size: int):
        self.size = size
        self._worlds: collections.OrderedDict[Any, World] = collections.OrderedDict()

    def get(self, task: Task, map_seed: int | None) -> World:
        key = (type(task), task.world_key(map_seed))
        world = self._worlds.get(key)
        if world is None:
            world = task.build_world(map_seed)
            world.content.flags.writeable = False
            self._worlds[key] = world
            while len(self._worlds) > self.size:
                self._worlds.popitem(last=False)
        else:
            self._worlds.move_to_end(key)
        return world


WORLDS = _WorldCache(WORLD_CACHE_SIZE)


def _check_positive_int(name: str, value: Any) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _check_nonnegative_int(name: str, value: Any) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def _check_map_seed(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be None or a non-negative int, got {value!r}")
    return int(value)


class CraftEnv(gym.Env):
    """One Craftium task in the embedded engine (``docs/craft.md`` describes every kwarg).

    Args:
        task: task name (``"ChopTree"``, ``"Room"``, ...).
        obs_width, obs_height: observation size (default: the task's, 64×64 for most).
        frameskip: frames per step (held keys and the mouse act on every frame of it, other
            keys on the first).
        rgb_observations, gray_scale_keepdim: colour or Craftium's grey frames.
        max_timesteps: truncation after this many steps (default: the task's).
        seed: map seed; None is the task's canonical world.
        render_mode: None, "rgb_array" or "human" (needs pygame).
        enable_voxel_obs, voxel_obs_rx, voxel_obs_ry, voxel_obs_rz: ``info["voxel_obs"]`` and
            the radii of the voxel observation.
        soft_reset: accepted; every reset is soft (a grid copy).
        pmul, fps_max: physics multiplier and frame rate (``dt = 1 / fps_max``).
        minetest_conf: task parameters plus ``fov``, ``mouse_sensitivity``, ``fast_move``,
            ``enable_damage``, ``give_initial_stuff``; other keys warn once and are ignored.
        obs_mode: "rgb", "voxels" or "both".
        backend: "embedded" (default), or "luanti" / "minetest": the task in a Luanti server
            (``CraftEnv(...)`` then makes a ``luanti.env.LuantiCraftEnv``).
        n_players: bodies in the world.
        render_threads: threads drawing each frame, the caller's included (1); frames are
            the same for any number.
        **engine_kwargs: Craftium's engine-process kwargs (``IGNORED_KWARGS``), ignored.
    """

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 20}

    def __new__(cls, *args: Any, backend: str = "embedded", **kwargs: Any):
        if cls is CraftEnv and backend in BACKENDS[1:]:
            from omnigym.envs.craft.luanti.env import LuantiCraftEnv

            return super().__new__(LuantiCraftEnv)
        return super().__new__(cls)

    def __init__(
        self,
        task: str = "ChopTree",
        obs_width: int | None = None,
        obs_height: int | None = None,
        frameskip: int = 1,
        rgb_observations: bool = True,
        gray_scale_keepdim: bool = False,
        max_timesteps: int | None = None,
        seed: int | None = None,
        render_mode: str | None = None,
        enable_voxel_obs: bool = False,
        voxel_obs_rx: int = 20,
        voxel_obs_ry: int = 10,
        voxel_obs_rz: int = 20,
        soft_reset: bool = True,
        pmul: float = 20,
        fps_max: float = 200,
        minetest_conf: Mapping[str, Any] | None = None,
        obs_mode: str = "rgb",
        backend: str = "embedded",
        n_players: int = 1,
        render_threads: int = 1,
        **engine_kwargs: Any,
    ):
        unknown = sorted(set(engine_kwargs) - set(IGNORED_KWARGS))
        if unknown:
            raise TypeError(f"CraftEnv got unexpected keyword arguments {unknown}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        task_type = task_class(task)
        if backend not in task_type.backends:
            raise ValueError(
                f"task {task} runs only with backend in {task_type.backends}, got {backend!r}"
            )
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        if render_mode == "human":
            try:
                import pygame  # noqa: F401
            except ImportError:
                raise ValueError(
                    "render_mode='human' needs pygame (pip install pygame); "
                    "use render_mode='rgb_array' without it"
                ) from None
        if minetest_conf is not None and not isinstance(minetest_conf, Mapping):
            raise ValueError(f"minetest_conf must be a dict, got {minetest_conf!r}")
        self.frameskip = _check_positive_int("frameskip", frameskip)
        self.rgb_observations = check_bool("rgb_observations", rgb_observations)
        self.gray_scale_keepdim = check_bool("gray_scale_keepdim", gray_scale_keepdim)
        self.enable_voxel_obs = check_bool("enable_voxel_obs", enable_voxel_obs)
        self.soft_reset = check_bool("soft_reset", soft_reset)
        self.radii = (
            _check_nonnegative_int("voxel_obs_rx", voxel_obs_rx),
            _check_nonnegative_int("voxel_obs_ry", voxel_obs_ry),
            _check_nonnegative_int("voxel_obs_rz", voxel_obs_rz),
        )
        self.map_seed = _check_map_seed("seed", seed)
        self.obs_mode = obs_mode
        self.render_mode = render_mode
        conf = dict(minetest_conf or {})
        engine_conf = {key: conf.pop(key) for key in ENGINE_CONF if key in conf}
        self._user_conf = self._task_conf(task_type, conf)
        self.task: Task = task_type(self._user_conf, n_players=n_players)
        width, height = self.task.width, self.task.height
        if obs_width is not None:
            width = _check_positive_int("obs_width", obs_width)
        if obs_height is not None:
            height = _check_positive_int("obs_height", obs_height)
        self.max_timesteps = (
            self.task.max_timesteps
            if max_timesteps is None
            else _check_positive_int("max_timesteps", max_timesteps)
        )
        fov = engine_conf.get("fov", self.task.fov)
        if not isinstance(fov, numbers.Real) or not 0 < fov < 180:
            raise ValueError(f"minetest_conf['fov'] must be in (0, 180) degrees, got {fov!r}")
        sensitivity = engine_conf.get("mouse_sensitivity", 0.2)
        if not isinstance(sensitivity, numbers.Real) or sensitivity <= 0:
            raise ValueError(
                f"minetest_conf['mouse_sensitivity'] must be positive, got {sensitivity!r}"
            )
        if not isinstance(pmul, numbers.Real) or isinstance(pmul, bool) or not pmul > 0:
            raise ValueError(f"pmul must be a positive number, got {pmul!r}")
        if not isinstance(fps_max, numbers.Real) or isinstance(fps_max, bool) or not fps_max > 0:
            raise ValueError(f"fps_max must be a positive number, got {fps_max!r}")
        self.config = PhysicsConfig.load(
            pmul=float(pmul),
            fps_max=float(fps_max),
            fov=float(fov),
            mouse_sensitivity=float(sensitivity),
            fast_move=bool(engine_conf.get("fast_move", False)),
        )
        enable_damage = engine_conf.get("enable_damage", self.task.enable_damage)
        self.give_initial_stuff = bool(engine_conf.get("give_initial_stuff", False))
        self.render_options = RenderOptions(
            width=width,
            height=height,
            fov=float(fov),
            rgb=self.rgb_observations,
            gray_scale_keepdim=self.gray_scale_keepdim,
            threads=_check_positive_int("render_threads", render_threads),
        )
        self.sim = CraftSim(
            self.task,
            n_players=n_players,
            config=self.config,
            render=self.render_options,
            enable_damage=bool(enable_damage),
        )
        self.action_space = raw_action_space()
        self.observation_space = self._observation_space()
        self.mt_dtime = self.frameskip * self.config.dt
        self.voxel_info_shape = (
            2 * self.radii[2] + 1,
            2 * self.radii[1] + 1,
            2 * self.radii[0] + 1,
            3,
        )
        self._steps = 0
        self._return = 0.0
        self._done = True
        self._last_frame: np.ndarray | None = None
        self._window = None
        self._name = self.task.id

    def camera_step(self) -> tuple[float, float]:
        """Degrees the camera turns in one step (every frame of it) for one of the task's mouse
        pseudo-actions: ``(yaw, pitch)``, both positive. Scripted agents steer with it."""
        mouse = self.task.mouse_mov
        yaw, pitch = self.sim.camera_turn(mouse, mouse)
        return abs(yaw) * self.frameskip, abs(pitch) * self.frameskip

    # ---- construction helpers ---------------------------------------------------------------

    @staticmethod
    def _task_conf(task_type: type[Task], conf: dict[str, Any]) -> dict[str, Any]:
        """Splits ``minetest_conf`` into this task's parameters; a parameter of another task is
        a ``ValueError`` naming it, any other key a one-time warning."""
        from omnigym.envs.craft.tasks import TASKS
        from omnigym.envs.craft.tasks.base import task_table

        table = task_table()
        own = set(table[task_type.name].get("params") or {})
        others = {
            key: name
            for name in TASKS
            if name in table
            for key in (table[name].get("params") or {})
        }
        task_conf = {}
        for key, value in conf.items():
            if key in own:
                task_conf[key] = value
            elif key in others:
                raise ValueError(
                    f"minetest_conf[{key!r}] is a parameter of the {others[key]} task, "
                    f"not of {task_type.name}; its parameters are {sorted(own)}"
                )
            elif key not in _WARNED:
                _WARNED.add(key)
                warnings.warn(
                    f"minetest_conf[{key!r}] has no meaning in the embedded engine; ignored",
                    stacklevel=4,
                )
        return task_conf

    def _observation_space(self) -> spaces.Space:
        rx, ry, rz = self.radii
        rgb = spaces.Box(0, 255, self.render_options.shape, np.uint8)
        if self.obs_mode == "rgb":
            return rgb
        entries = [
            ("voxels", spaces.Box(0, 65535, (2 * rz + 1, 2 * ry + 1, 2 * rx + 1), np.uint16)),
            ("entities", spaces.Box(-np.inf, np.inf, (ENTITY_ROWS, 6), np.float32)),
            ("player", spaces.Box(-np.inf, np.inf, (9,), np.float32)),
        ]
        if self.obs_mode == "both":
            entries.append(("rgb", rgb))
        return spaces.Dict(entries)

    # ---- gymnasium API ----------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - {"world_seed", "minetest_conf"})
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; valid: world_seed, minetest_conf")
        map_seed = self.map_seed
        if "world_seed" in options:
            world_seed = options["world_seed"]
            if world_seed == "per_episode":
                map_seed = int(self.np_random.integers(2**31 - 1))
            else:
                map_seed = _check_map_seed("options['world_seed']", world_seed)
        conf = dict(self._user_conf)
        episode_conf = options.get("minetest_conf")
        if episode_conf is not None:
            if not isinstance(episode_conf, Mapping):
                raise ValueError(f"options['minetest_conf'] must be a dict, got {episode_conf!r}")
            conf.update(self._task_conf(type(self.task), dict(episode_conf)))
        conf = {**self.task.params, **conf}
        if conf != self.task.conf:
            self.task.conf = conf
            self.task.check_conf()
        self.sim.load_world(WORLDS.get(self.task, map_seed))
        self.task.begin_episode()
        self.sim.reset(self.np_random)
        return self._begin_episode()

    def step(self, action: Any):
        raw = self._check_action(action)
        self.sim.step([raw], self.frameskip)
        rewards, terminated = self.task.end_step(self.sim)
        return self._end_step(float(rewards[0]), bool(terminated))

    # ---- what every backend's reset and step share ------------------------------------------

    def _begin_episode(self):
        """Clears the episode's counters; the reset's observation and info."""
        self._steps = 0
        self._return = 0.0
        self._done = False
        obs = self._observe()
        info = self._info()
        if self.render_mode == "human":
            self.render()
        return obs, info

    def _check_action(self, action: Any) -> dict[str, Any]:
        """The complete raw action; ``RuntimeError`` when no episode is under way."""
        if self._done:
            raise RuntimeError(
                f"{self._name}: call reset() before step() (the episode is over or not started)"
            )
        if type(action) is CheckedAction:
            return action
        return check_raw_action(action, self._name)

    def _end_step(self, reward: float, terminated: bool):
        """Counts the step, truncates at ``max_timesteps``; the step's five-tuple."""
        self._steps += 1
        self._return += reward
        truncated = not terminated and self._steps >= self.max_timesteps
        self._done = terminated or truncated
        obs = self._observe()
        info = self._info()
        if self._done:
            info.update(self._final_info(terminated))
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, bool(truncated), info

    def _final_info(self, terminated: bool) -> dict[str, Any]:
        return self.task.final_info(self.sim, self._return)

    def _observe(self):
        frame = None
        if self.obs_mode != "voxels" or self.render_mode is not None:
            frame = self.sim.frame(0)
            self._last_frame = frame
        if self.obs_mode == "rgb":
            return frame
        obs = self.sim.voxels(0, self.radii)
        if self.obs_mode == "both":
            obs["rgb"] = frame
        return obs

    def _info(self) -> dict[str, Any]:
        return self.player_info(0)

    def player_info(self, viewer: int) -> dict[str, Any]:
        """Craftium's info keys for player ``viewer``, plus ``task`` (the task's counters)."""
        player = self.sim.avatars[viewer].player
        task_info = self.task.info(self.sim)
        info = {
            "voxel_obs": self.sim.voxel_info(viewer, self.radii)
            if self.enable_voxel_obs
            else zeros_view(self.voxel_info_shape),
            "player_pos": player.position.astype(np.float32),
            "player_vel": player.velocity.astype(np.float32),
            "player_pitch": float(player.pitch),
            "player_yaw": float(player.yaw),
            "mt_dtime": self.mt_dtime,
            "task": task_info,
        }
        if "achievements" in task_info:  # OpenWorld: on every step, as Crafter
            info["achievements"] = task_info["achievements"]
        return info

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None; pass render_mode='rgb_array'")
            return None
        if self._last_frame is None:
            return None
        frame = as_rgb(self._last_frame)
        if self.render_mode == "rgb_array":
            return frame
        self._show(frame)
        return None

    def _show(self, frame: np.ndarray) -> None:
        import pygame

        scale = max(1, math.ceil(384 / frame.shape[0]))
        size = (frame.shape[1] * scale, frame.shape[0] * scale)
        if self._window is None:
            pygame.init()
            self._window = pygame.display.set_mode(size)
            pygame.display.set_caption(self._name)
        surface = pygame.surfarray.make_surface(frame.swapaxes(0, 1))
        self._window.blit(pygame.transform.scale(surface, size), (0, 0))
        pygame.event.pump()
        pygame.display.flip()

    def close(self):
        if self.sim.renderer is not None:
            self.sim.renderer.close()
        if self._window is not None:
            import pygame

            pygame.display.quit()
            pygame.quit()
            self._window = None


def as_rgb(frame: np.ndarray) -> np.ndarray:
    """A new ``(H, W, 3)`` copy of a colour or grey (``(H, W)`` or ``(H, W, 1)``) frame."""
    if frame.ndim == 2 or frame.shape[-1] == 1:
        return np.repeat(frame.reshape(frame.shape[0], frame.shape[1], 1), 3, axis=2)
    return frame.copy()


def zeros_view(shape: tuple[int, ...]) -> np.ndarray:
    """A read-only all-zero ``uint32`` array of ``shape`` that costs one scalar (zero strides
    over a fresh one-element buffer), so no two infos share memory (``check_env`` checks that)."""
    zeros = np.ndarray(shape, np.uint32, buffer=np.zeros(1, np.uint32), strides=(0,) * len(shape))
    zeros.flags.writeable = False
    return zeros


def make_task_env(
    task: str, actions: list[str] | None = None, mouse_mov: float | None = None, **kwargs: Any
) -> gym.Env:
    """What the registered single-agent ids make: ``CraftEnv(task, **kwargs)`` in Craftium's
    ``DiscreteActionWrapper`` with the task's actions and ``mouse_mov`` (or the ones given).

    The wrapper is applied here rather than as Gymnasium ``additional_wrappers`` because
    ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`` refuses specs that
    have those; ``CraftVectorEnv`` is each id's vector entry point.
    """
    env = CraftEnv(task, **kwargs)
    return DiscreteActionWrapper(
        env,
        env.task.actions if actions is None else actions,
        env.task.mouse_mov if mouse_mov is None else mouse_mov,
    )


CraftiumEnv = CraftEnv
"""Craftium's class name, so ``from craftium import CraftiumEnv`` ports by import alone."""
