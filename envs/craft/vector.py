"""``CraftVectorEnv``: N worlds of one Craft task stepped by one batched call.

Follows Craftium (Malagón, Ceberio, Lozano, ICML 2025) for everything a world does, and
Gymnasium 1.x's ``VectorEnv`` contract for the batch: ``single_action_space`` is the task's
``Discrete(n)`` (the registered ``DiscreteActionWrapper``'s), ``action_space`` its
batch ``MultiDiscrete([n] * num_envs)``; observations are the single env's, stacked on a first
axis of length ``num_envs``; infos are Gymnasium's vector infos (a dict of arrays, each key ``k``
beside a boolean mask ``_k`` saying which worlds have it); ``metadata["autoreset_mode"]`` is
``NEXT_STEP`` (default) or ``SAME_STEP``, with ``gymnasium.vector.SyncVectorEnv``'s semantics.

Each world is a ``CraftEnv`` (so every kwarg is validated, and every reset is made, exactly as
for a single env; pristine worlds come from ``env.WORLDS``, built once per process). ``reset``
seeds world i with ``seed + i``: world i then reproduces, step for step, a single
``DiscreteActionWrapper(CraftEnv(task, **kwargs), actions, mouse_mov)`` reset with ``seed + i``
and reset without a seed whenever its episode ends (what ``SyncVectorEnv`` does).

Stepping bypasses the single env's per-step checks, once the batch of indices has been checked
in one NumPy comparison: index k maps to a complete raw action dict built once (by the
``DiscreteActionWrapper`` itself, completed as a read-only ``CheckedAction``), fed straight to each
world's ``core.CraftSim``, and observations are written into one batch array per step.

With ``backend="luanti"`` (or ``"minetest"``) the class makes a ``gymnasium.vector.SyncVectorEnv``
of single Luanti envs instead, each with its own server (``luanti.env.luanti_vector_env``).

Departures, for speed: v0 steps the worlds in a tight Python loop over their ``CraftSim``s, not
in one kernel call for all worlds (physics, digging and rules are per-world
Python around small Numba kernels; a batched kernel would duplicate them); ``workers=k`` runs
``k`` such loops in as many processes (``vector_workers``). ``info`` carries
``player_pos``, ``player_vel``, ``player_pitch``, ``player_yaw`` and ``mt_dtime`` on every step
(and OpenWorld's ``achievements``), ``voxel_obs`` only with ``enable_voxel_obs=True`` (the single
env's all-zero placeholder would cost 423 kB per world per step here), and not the per-step
``task`` counters; the final step's ``success``, ``normalized_score`` and ``metrics`` are the
single env's (with ``SAME_STEP``, ``final_info`` is the single env's whole final info, less the
placeholder). Frames are drawn by ``batch.FrameBatch``: compiled code that does not hold the
GIL, on ``render_threads`` threads, worker threads drawing the worlds already stepped while the
calling thread steps the next. Each frame is computed exactly as with one thread (worlds share
nothing), so results are bit-identical.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from omnigym.envs.craft.actions import CheckedAction, DiscreteActionWrapper
from omnigym.envs.craft.batch import FrameBatch
from omnigym.envs.craft.env import BACKENDS, CraftEnv, as_rgb

AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
STEP_INFO_KEYS = ("player_pos", "player_vel", "player_pitch", "player_yaw", "mt_dtime")
"""Info keys every world has on every step (``voxel_obs`` too, when enabled)."""


def check_vector_args(num_envs: Any, autoreset_mode: Any, copy: Any, render_mode: Any):
    """Checks the batch's own arguments; returns the ``AutoresetMode`` (``None``: NEXT_STEP)."""
    if not isinstance(num_envs, numbers.Integral) or isinstance(num_envs, bool) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    try:
        mode = AutoresetMode(AutoresetMode.NEXT_STEP if autoreset_mode is None else autoreset_mode)
    except ValueError:
        mode = None
    if mode not in AUTORESET_MODES:
        raise ValueError(
            f"autoreset_mode must be one of {[m.value for m in AUTORESET_MODES]}, "
            f"got {autoreset_mode!r}"
        )
    if not isinstance(copy, bool):
        raise ValueError(f"copy must be a bool, got {copy!r}")
    if render_mode not in (None, "rgb_array"):
        raise ValueError(f"render_mode must be None or one of ['rgb_array'], got {render_mode!r}")
    return mode


def check_actions(actions: Any, num_envs: int, space: spaces.Space, task_id: str) -> np.ndarray:
    """``actions`` as an array of ``num_envs`` indices of ``space`` (``MultiDiscrete``), or a
    ``ValueError`` naming the space and the value."""
    indices = np.asarray(actions)
    n = int(space.nvec[0])
    if (
        indices.shape != (num_envs,)
        or indices.dtype.kind not in "iu"
        or not bool(np.all((indices >= 0) & (indices < n)))
    ):
        value = indices.tolist() if indices.dtype != object else actions
        raise ValueError(
            f"actions {value!r} are outside {space} of {task_id}: "
            f"expected {num_envs} integer indices in [0, {n})"
        )
    return indices


class CraftVectorEnv(VectorEnv):
    """``num_envs`` worlds of one Craft task, stepped together.

    ## Description

    Every world runs the task of ``CraftEnv(task, **env_kwargs)`` with its own generator; world
    i, after ``reset(seed=s)``, equals a single env reset with ``s + i``.

    ## Action Space

    ``MultiDiscrete([n] * num_envs)`` with ``n = len(actions) + 1``; ``single_action_space`` is
    ``Discrete(n)``: index 0 is the no-op, index k presses ``actions[k - 1]`` (Craftium's
    ``DiscreteActionWrapper`` mapping). An array of another shape, a non-integer dtype or an
    index outside ``[0, n)`` raises ``ValueError`` naming the space and the value.

    ## Observation Space

    The single env's space batched: ``Box(0, 255, (num_envs, H, W, 3), uint8)`` for RGB, a
    ``Dict`` of batched ``voxels``/``entities``/``player`` (and ``rgb``) arrays otherwise.

    ## Rewards and Episode End

    The task's, per world: ``rewards`` float64, ``terminations`` and ``truncations`` bool
    arrays of length ``num_envs``. With ``NEXT_STEP`` autoreset a finished world is reset by the
    following ``step`` (its action ignored, reward 0, both flags False); with ``SAME_STEP`` it is
    reset at once and ``info["final_obs"]``, ``info["final_info"]`` hold its last observation
    and info.

    ## Arguments

    - ``task``: task name (``"ChopTree"``, ``"Room"``, ...), as for ``CraftEnv``.
    - ``num_envs``: number of worlds.
    - ``actions``, ``mouse_mov``: the ``DiscreteActionWrapper`` list and mouse move; default
      the task's (its registered id's).
    - ``autoreset_mode``: ``AutoresetMode.NEXT_STEP`` (default) or ``SAME_STEP`` (or their
      string values).
    - ``copy``: True (default) gives each step its own observation arrays; False writes every
      step into the same arrays (faster; the previous batch is overwritten).
    - ``render_threads``: threads drawing the frames of one step, the caller's included
      (default 1).
    - ``workers``: processes stepping the worlds, this one included (default 1). With ``k > 1``
      the worlds are cut into ``k`` shares stepped at the same time, on ``k`` cores, and the
      result is a ``vector_workers.CraftWorkerVectorEnv`` with the same spaces, batches and
      arguments; ``1 < k <= num_envs``. Each extra process is a fresh interpreter (a second
      or two to start) that ends with this one.
    - ``render_mode``: None or ``"rgb_array"``: ``render()`` returns one frame per world.
    - ``max_episode_steps``: Gymnasium's name for ``max_timesteps`` (``make_vec`` passes it
      when the id's ``EnvSpec`` sets one).
    - ``**env_kwargs``: every other ``CraftEnv`` kwarg (``obs_mode``, ``obs_width``,
      ``frameskip``, ``seed``, ``minetest_conf``, ...), validated by ``CraftEnv``.
    """

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __new__(cls, task: str = "ChopTree", num_envs: int = 1, **kwargs: Any):
        workers = kwargs.get("workers", 1)
        if kwargs.get("backend") in BACKENDS[1:]:
            if workers != 1:
                raise ValueError(
                    f"workers={workers!r} is for the embedded engine; Luanti's worlds each "
                    "have a server process of their own"
                )
            from omnigym.envs.craft.luanti.env import luanti_vector_env

            return luanti_vector_env(task, num_envs, **kwargs)
        if workers != 1:
            from omnigym.envs.craft.vector_workers import CraftWorkerVectorEnv

            return CraftWorkerVectorEnv(task, num_envs, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        task: str = "ChopTree",
        num_envs: int = 1,
        *,
        actions: Sequence[str] | None = None,
        mouse_mov: float | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        render_threads: int = 1,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        workers: int = 1,
        **env_kwargs: Any,
    ):
        mode = check_vector_args(num_envs, autoreset_mode, copy, render_mode)
        if isinstance(workers, bool) or workers != 1:  # other values go to vector_workers
            raise ValueError(f"workers must be a positive int, got {workers!r}")
        if (
            not isinstance(render_threads, numbers.Integral)
            or isinstance(render_threads, bool)
            or render_threads < 1
        ):
            raise ValueError(f"render_threads must be a positive int, got {render_threads!r}")
        if max_episode_steps is not None:
            if env_kwargs.get("max_timesteps", max_episode_steps) != max_episode_steps:
                raise ValueError(
                    f"max_episode_steps={max_episode_steps!r} contradicts "
                    f"max_timesteps={env_kwargs['max_timesteps']!r}"
                )
            env_kwargs["max_timesteps"] = max_episode_steps
        self.num_envs = int(num_envs)
        self.autoreset_mode = mode
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.copy = copy
        self.render_mode = render_mode
        self.envs = [CraftEnv(task, **env_kwargs) for _ in range(self.num_envs)]
        first = self.envs[0]
        self.task_id: str = first.task.id
        self.obs_mode: str = first.obs_mode
        self.frameskip: int = first.frameskip
        self.max_timesteps: int = first.max_timesteps
        self.radii = first.radii
        self.enable_voxel_obs: bool = first.enable_voxel_obs

        wrapper = DiscreteActionWrapper(
            first,
            first.task.actions if actions is None else actions,
            first.task.mouse_mov if mouse_mov is None else mouse_mov,
        )
        self.actions: list[str] = wrapper.actions
        self.mouse_mov: float = wrapper.mouse_mov
        n = wrapper.action_space.n
        self._raw_actions = [CheckedAction(wrapper.action(k), self.task_id) for k in range(n)]
        self.single_action_space = spaces.Discrete(n)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.single_observation_space = first.observation_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

        self._buffer = self._new_observation() if not copy else None
        self._steps = np.zeros(self.num_envs, dtype=np.int64)
        self._returns = np.zeros(self.num_envs)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._started = False
        self._achievements = False
        self._batch = (
            FrameBatch(self.num_envs, first.sim.renderer, render_threads)
            if self.obs_mode != "voxels"
            else None
        )

    # ---- gymnasium API ----------------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: Mapping[str, Any] | None = None,
    ):
        """Resets every world: world i with ``seed + i`` (or ``seed[i]``, or unseeded)."""
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            super().reset(seed=int(seed))
            seeds = [int(seed) + i for i in range(self.num_envs)]
        elif isinstance(seed, Sequence) and len(seed) == self.num_envs:
            seeds = list(seed)
        else:
            raise ValueError(
                f"seed must be None, an int or a list of {self.num_envs} seeds, got {seed!r}"
            )
        obs = self._new_observation() if self.copy else self._buffer
        infos = self._step_infos()
        for i, env in enumerate(self.envs):
            world_obs, world_info = env.reset(seed=seeds[i], options=options)
            self._achievements = "achievements" in world_info
            self._write(obs, i, world_obs)
            self._begin(i, infos, world_info)
        self._autoreset[:] = False
        self._started = True
        return obs, infos

    def step(self, actions: Any):
        """Steps every world with its index of ``actions`` (shape ``(num_envs,)``)."""
        if not self._started:
            raise RuntimeError(f"{self.task_id}: call reset() before step()")
        indices = check_actions(actions, self.num_envs, self.action_space, self.task_id)
        n = self.num_envs
        obs = self._new_observation() if self.copy else self._buffer
        rewards = np.zeros(n)
        terminations = np.zeros(n, dtype=bool)
        truncations = np.zeros(n, dtype=bool)
        infos = self._step_infos()
        to_draw: list[int] = []
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        if self._batch is not None:
            self._batch.begin()
        try:
            self._step_worlds(indices, obs, rewards, terminations, truncations, infos, to_draw)
        finally:
            if self._batch is not None:
                self._batch.finish()
        self._draw(obs, to_draw)
        if not same_step:
            self._autoreset = terminations | truncations
        return obs, rewards, terminations, truncations, infos

    def _step_worlds(self, indices, obs, rewards, terminations, truncations, infos, to_draw):
        """Steps every world, filling the step's arrays; queues the frames to draw."""
        raw_actions = self._raw_actions
        frameskip = self.frameskip
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        for i, env in enumerate(self.envs):
            if self._autoreset[i]:
                world_obs, world_info = env.reset()
                self._write(obs, i, world_obs)
                self._begin(i, infos, world_info)
                continue
            sim = env.sim
            sim.step([raw_actions[indices[i]]], frameskip)
            world_rewards, terminated = env.task.end_step(sim)
            reward = float(world_rewards[0])
            self._steps[i] += 1
            self._returns[i] += reward
            truncated = not terminated and self._steps[i] >= self.max_timesteps
            rewards[i] = reward
            terminations[i] = terminated
            truncations[i] = truncated
            if not (terminated or truncated):
                self._fill_info(i, infos)
                self._queue_draw(i, to_draw)
                continue
            final = env.task.final_info(sim, float(self._returns[i]))
            if same_step:
                world_info = env.player_info(0)
                if not self.enable_voxel_obs:
                    del world_info["voxel_obs"]
                world_info.update(final)
                self._add_info(infos, {"final_obs": self._observe(i), "final_info": world_info}, i)
                world_obs, world_info = env.reset()
                self._write(obs, i, world_obs)
                self._begin(i, infos, world_info)
            else:
                self._fill_info(i, infos)
                self._add_info(infos, final, i)
                self._queue_draw(i, to_draw)

    def render(self) -> tuple[np.ndarray, ...] | None:
        """With ``render_mode="rgb_array"``, each world's current frame, ``uint8 (H, W, 3)``."""
        if self.render_mode is None:
            return None
        return tuple(as_rgb(env.sim.frame(0)) for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        if self._batch is not None:
            self._batch.close()
        for env in self.envs:
            env.close()

    # ---- batch helpers ----------------------------------------------------------------------

    def write_into(self, obs) -> None:
        """Makes ``obs`` (arrays of the batch observation's shapes) the arrays that the next
        ``reset`` and ``step`` write into, for an env made with ``copy=False`` (a worker of
        ``vector_workers.CraftWorkerVectorEnv`` writing into shared memory)."""
        if self.copy:
            raise ValueError("write_into is for envs made with copy=False")
        self._buffer = obs

    def _new_observation(self):
        space = self.observation_space
        if isinstance(space, spaces.Dict):
            return {key: np.empty(sub.shape, sub.dtype) for key, sub in space.spaces.items()}
        return np.empty(space.shape, space.dtype)

    def _write(self, obs, i: int, world_obs) -> None:
        if isinstance(obs, dict):
            for key, value in world_obs.items():
                obs[key][i] = value
        else:
            obs[i] = world_obs

    def _observe(self, i: int):
        """World i's single observation now (what ``CraftEnv.step`` would return)."""
        sim = self.envs[i].sim
        if self.obs_mode == "rgb":
            return sim.frame(0)
        obs = sim.voxels(0, self.radii)
        if self.obs_mode == "both":
            obs["rgb"] = sim.frame(0)
        return obs

    def _queue_draw(self, i: int, to_draw: list[int]) -> None:
        """World i's observation is written after the step; its frame is drawn as soon as
        ``FrameBatch`` gets to it."""
        to_draw.append(i)
        if self._batch is not None:
            self._batch.add(i, self.envs[i].sim.view(0))

    def _draw(self, obs, worlds: list[int]) -> None:
        """Writes the observation of each world in ``worlds`` into ``obs`` (their frames drawn
        by ``FrameBatch``)."""
        for i in worlds:
            if self._batch is None:
                self._write_voxels(obs, i)
                continue
            frame = self.envs[i].sim.finish_frame(self._batch.frames[i], 0)
            if self.obs_mode == "rgb":
                obs[i] = frame
            else:
                self._write_voxels(obs, i)
                obs["rgb"][i] = frame

    def _write_voxels(self, obs, i: int) -> None:
        """World i's voxel observation written into ``obs``, its content ids cropped straight
        into their row of the batch (a copy of 70 kB less per world than ``_write``)."""
        world_obs = self.envs[i].sim.voxels(0, self.radii, obs["voxels"][i])
        obs["entities"][i] = world_obs["entities"]
        obs["player"][i] = world_obs["player"]

    def _step_infos(self) -> dict[str, Any]:
        n = self.num_envs
        infos: dict[str, Any] = {
            "player_pos": np.zeros((n, 3), dtype=np.float32),
            "player_vel": np.zeros((n, 3), dtype=np.float32),
            "player_pitch": np.zeros(n),
            "player_yaw": np.zeros(n),
            "mt_dtime": np.full(n, self.envs[0].mt_dtime),
        }
        if self.enable_voxel_obs:
            rx, ry, rz = self.radii
            infos["voxel_obs"] = np.zeros(
                (n, 2 * rz + 1, 2 * ry + 1, 2 * rx + 1, 3), dtype=np.uint32
            )
        for key in list(infos):
            infos[f"_{key}"] = np.ones(n, dtype=bool)
        return infos

    def _fill_info(self, i: int, infos: dict[str, Any]) -> None:
        """World i's per-step info entries, the values ``CraftEnv.player_info`` gives."""
        env = self.envs[i]
        player = env.sim.avatars[0].player
        infos["player_pos"][i] = player.position
        infos["player_vel"][i] = player.velocity
        infos["player_pitch"][i] = player.pitch
        infos["player_yaw"][i] = player.yaw
        if self.enable_voxel_obs:
            infos["voxel_obs"][i] = env.sim.voxel_info(0, self.radii)
        if self._achievements:
            self._add_info(infos, {"achievements": env.task.info(env.sim)["achievements"]}, i)

    def _begin(self, i: int, infos: dict[str, Any], world_info: dict[str, Any]) -> None:
        """Bookkeeping of a world that ``CraftEnv.reset`` has just reset (``world_info`` is the
        info it returned)."""
        self._steps[i] = 0
        self._returns[i] = 0.0
        for key in STEP_INFO_KEYS:
            infos[key][i] = world_info[key]
        if self.enable_voxel_obs:
            infos["voxel_obs"][i] = world_info["voxel_obs"]
        if self._achievements:
            self._add_info(infos, {"achievements": world_info["achievements"]}, i)


__all__ = ["CraftVectorEnv"]
