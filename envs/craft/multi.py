"""The multi-agent Craft environments: a PettingZoo ``ParallelEnv`` and Craftium's own class.

Follows Craftium's multi-agent front end (Malagón, Ceberio, Lozano, ICML 2025): ``MarlCraftiumEnv``
and its PettingZoo wrapper, over the same embedded engine as ``env.CraftEnv``. Both classes here
step one ``core.CraftSim`` holding every player.

=================== ======================================================================
agents              ``player_0`` … ``player_{n-1}`` (``n_players``, 2 for MultiAgentCombat)
action (per agent)  raw ``Dict`` of 21 ``Discrete(2)`` keys and a ``mouse`` ``Box`` (default);
                    ``discrete=True``: ``Discrete(len(actions) + 1)`` (``Discrete(8)``)
observation         ``Box(0, 255, (H, W, 3), uint8)`` first-person frame of that player
                    (grey ``(H, W)`` / ``(H, W, 1)`` with ``rgb_observations=False``)
=================== ======================================================================

- ``CraftParallelEnv(task="MultiAgentCombat", n_players=2, discrete=False, **kwargs)``: every
  agent acts every step, and all actions are applied in the same frames. ``kwargs`` are
  ``CraftEnv``'s (``obs_width``, ``obs_height``, ``frameskip``, ``rgb_observations``,
  ``gray_scale_keepdim``, ``max_timesteps``, ``seed`` (map seed), ``pmul``, ``fps_max``,
  ``minetest_conf``, the voxel-info kwargs and Craftium's ignored engine kwargs), validated
  with the same messages; ``render_mode`` is None or "rgb_array" (both players' frames side by
  side). ``discrete=True`` maps an index with the task's
  ``DiscreteActionWrapper`` (index 0 the no-op, index i ``actions[i - 1]``).
- ``MarlCraftiumEnv(num_agents, ...)``: Craftium's gymnasium-like class: ``observation_space``
  ``Box(0, 255, (N, H, W, C), uint8)``, ``action_space`` one agent's raw ``Dict``; ``reset``
  returns stacked observations and ``step`` takes a list of N raw actions and returns stacked
  observations, arrays of rewards, terminations and truncations, and the per-agent infos.

Rewards, terminations and episode lengths are the task's (``tasks/combat.py``). ``infos[agent]``
on reset and every step: Craftium's ``voxel_obs``, ``player_pos``, ``player_vel``,
``player_pitch``, ``player_yaw``, ``mt_dtime`` for that agent's player, the task's counters
``task``, and on the final step ``success``, ``normalized_score`` and ``metrics`` of that agent.

Seeding: ``reset(seed=...)`` seeds the episode's generator (as ``CraftEnv``); ``options`` keys
``world_seed`` and ``minetest_conf`` work as in ``CraftEnv.reset``, other keys are ignored
(PettingZoo's API test passes one).

Departures from Craftium: agents are stepped simultaneously rather than one after the other
(Craftium's PettingZoo form is AEC only; the AEC form here is PettingZoo's ``parallel_to_aec`` of
this class), observations are declared ``(H, W, C)``, and ``MarlCraftiumEnv`` defaults to the task's
64×64 frames instead of Craftium's 640×360 and has no ``step_agent`` (one agent stepping alone has
no meaning when players move together).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from omnigym.envs.craft.actions import (
    DiscreteActionWrapper,
    check_raw_action,
    describe,
    raw_action_space,
)
from omnigym.envs.craft.env import IGNORED_KWARGS, CraftEnv, as_rgb, check_bool

MULTI_TASKS = ("MultiAgentCombat",)
"""Tasks whose rules place and score several players."""
RESET_OPTIONS = ("world_seed", "minetest_conf")
"""``reset`` options passed on to the engine (``CraftEnv.reset``'s)."""

ENGINE_KWARGS = (
    "obs_width",
    "obs_height",
    "frameskip",
    "rgb_observations",
    "gray_scale_keepdim",
    "max_timesteps",
    "seed",
    "enable_voxel_obs",
    "voxel_obs_rx",
    "voxel_obs_ry",
    "voxel_obs_rz",
    "soft_reset",
    "pmul",
    "fps_max",
    "minetest_conf",
    "backend",
)
"""``CraftEnv`` keyword arguments that ``CraftParallelEnv`` passes on."""


class CraftParallelEnv(ParallelEnv):
    """A multi-player Craft task as a PettingZoo ``ParallelEnv`` (module docstring: spaces).

    Args:
        task: a multi-player task name (``MULTI_TASKS``: "MultiAgentCombat").
        n_players: players (agents ``player_0`` …), at least 2.
        discrete: per-agent ``Discrete(len(actions) + 1)`` action instead of the raw ``Dict``.
        render_mode: None or "rgb_array".
        **kwargs: ``CraftEnv``'s keyword arguments except ``obs_mode``
            (frames only) and ``render_mode``.
    """

    metadata = {
        "name": "craft_multi_agent_combat_v0",
        "render_modes": ["rgb_array"],
        "render_fps": 20,
        "is_parallelizable": True,
    }

    def __init__(
        self,
        task: str = "MultiAgentCombat",
        n_players: int = 2,
        discrete: bool = False,
        render_mode: str | None = None,
        **kwargs: Any,
    ):
        unknown = sorted(
            key for key in kwargs if key not in IGNORED_KWARGS and key not in ENGINE_KWARGS
        )
        if unknown:
            raise TypeError(f"CraftParallelEnv got unexpected keyword arguments {unknown}")
        if task not in MULTI_TASKS:
            raise ValueError(f"task must be one of {list(MULTI_TASKS)}, got {task!r}")
        if (
            not isinstance(n_players, numbers.Integral)
            or isinstance(n_players, bool)
            or (n_players < 2)
        ):
            raise ValueError(f"n_players must be an int >= 2, got {n_players!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        self.discrete = check_bool("discrete", discrete)
        self.render_mode = render_mode
        # The single-agent env validates every Craftium kwarg and owns the simulation, its
        # world cache and the episode's generator; this class only steps all players at once.
        self._engine = CraftEnv(task=task, n_players=int(n_players), obs_mode="rgb", **kwargs)
        self.sim = self._engine.sim
        self.task = self._engine.task
        self._name = self.task.id
        self.possible_agents = [f"player_{i}" for i in range(int(n_players))]
        self.agents: list[str] = []
        self._index = {agent: i for i, agent in enumerate(self.possible_agents)}
        self._mapping = (
            DiscreteActionWrapper(self._engine, self.task.actions, self.task.mouse_mov)
            if self.discrete
            else None
        )
        self._action_spaces = {
            agent: spaces.Discrete(len(self.task.actions) + 1)
            if self.discrete
            else raw_action_space()
            for agent in self.possible_agents
        }
        self._observation_spaces = {
            agent: spaces.Box(0, 255, self._engine.render_options.shape, np.uint8)
            for agent in self.possible_agents
        }
        self._steps = 0
        self._returns = np.zeros(len(self.possible_agents))
        self._frames: list[np.ndarray] = []

    # ---- spaces -----------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[self._agent(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[self._agent(agent)]

    def _agent(self, agent: Any) -> str:
        if agent not in self._index:
            raise ValueError(f"unknown agent {agent!r}; agents are {self.possible_agents}")
        return agent

    # ---- PettingZoo API ---------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None):
        options = dict(options or {})
        self._engine.reset(
            seed=seed, options={k: options[k] for k in RESET_OPTIONS if k in options}
        )
        self.agents = list(self.possible_agents)
        self._steps = 0
        self._returns = np.zeros(len(self.possible_agents))
        return self._observe(), {agent: self._info(agent) for agent in self.agents}

    def step(self, actions: Mapping[str, Any]):
        if not self.agents:
            raise RuntimeError(
                f"{self._name}: call reset() before step() (the episode is over or not started)"
            )
        if not isinstance(actions, Mapping):
            raise ValueError(
                f"actions must be a dict of agent name to action, got {describe(actions)}"
            )
        for agent in actions:
            if agent not in self.agents:
                raise ValueError(
                    f"got an action for agent {agent!r}, which is not in the episode; "
                    f"agents: {self.agents}"
                )
        missing = [agent for agent in self.agents if agent not in actions]
        if missing:
            raise ValueError(f"actions are missing for agents {missing}")
        raw = [
            self._raw_action(agent, actions[agent]) if agent in actions else check_raw_action({})
            for agent in self.possible_agents
        ]
        self.sim.step(raw, self._engine.frameskip)
        rewards, terminated = self.task.end_step(self.sim)
        self._steps += 1
        self._returns += rewards
        truncated = not terminated and self._steps >= self._engine.max_timesteps
        agents = self.agents
        observations = self._observe()
        infos = {agent: self._info(agent) for agent in agents}
        if terminated or truncated:
            for agent in agents:
                i = self._index[agent]
                infos[agent].update(self.task.final_info(self.sim, float(self._returns[i]), i))
            self.agents = []
        return (
            observations,
            {agent: float(rewards[self._index[agent]]) for agent in agents},
            dict.fromkeys(agents, bool(terminated)),
            dict.fromkeys(agents, bool(truncated)),
            infos,
        )

    def _raw_action(self, agent: str, action: Any) -> dict[str, Any]:
        """The complete raw dict of ``agent``'s action; ``ValueError`` naming the space, the
        value and the agent when it lies outside the agent's space."""
        if self._mapping is None:
            return check_raw_action(action, f"{self._name} ({agent})")
        space = self._action_spaces[agent]
        if isinstance(action, bool | np.bool_) or not space.contains(action):
            raise ValueError(
                f"action {describe(action)} of {agent} is outside {space} of {self._name}"
            )
        return check_raw_action(self._mapping.action(action))

    def _observe(self) -> dict[str, np.ndarray]:
        self._frames = [self.sim.frame(i) for i in range(len(self.possible_agents))]
        return {agent: self._frames[self._index[agent]] for agent in self.agents}

    def _info(self, agent: str) -> dict[str, Any]:
        return self._engine.player_info(self._index[agent])

    def render(self) -> np.ndarray | None:
        """Every player's last frame side by side (player 0 leftmost), as ``(H, n·W, 3)``."""
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None; pass render_mode='rgb_array'")
            return None
        if not self._frames:
            return None
        return as_rgb(np.concatenate(self._frames, axis=1))

    def close(self) -> None:
        self._engine.close()


class MarlCraftiumEnv:
    """Craftium's multi-agent class: N players, stacked observations, arrays of rewards.

    Args:
        num_agents: players, at least 2.
        env_dir: Craftium's environment folder; accepted and ignored (the task is ``task``).
        task: task name (default "MultiAgentCombat").
        mt_server_conf, mt_clients_conf, mt_server_port: Craftium's engine-process settings;
            accepted and ignored.
        **kwargs: ``CraftParallelEnv``'s keyword arguments (raw actions only).

    ``observation_space``: ``Box(0, 255, (N, H, W, C), uint8)`` (``(N, H, W)`` for grey
    frames without ``gray_scale_keepdim``); ``action_space``: one agent's raw ``Dict``.
    ``reset(seed=None, options=None)`` returns ``(observations, infos)``; ``step(actions)``
    takes N raw action dicts (agent i's at index i) and returns ``(observations, rewards,
    terminations, truncations, infos)`` with ``rewards`` a float array of N and the flags bool
    arrays of N; ``infos`` maps agent names to their infos.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(
        self,
        num_agents: int,
        env_dir: str | None = None,
        task: str = "MultiAgentCombat",
        mt_server_conf: Mapping[str, Any] | None = None,
        mt_clients_conf: Mapping[str, Any] | None = None,
        mt_server_port: int | None = None,
        **kwargs: Any,
    ):
        if (
            not isinstance(num_agents, numbers.Integral)
            or isinstance(num_agents, bool)
            or (num_agents < 2)
        ):
            raise ValueError(
                f"num_agents must be an int >= 2 (use CraftEnv for one agent), got {num_agents!r}"
            )
        self.env = CraftParallelEnv(task=task, n_players=int(num_agents), **kwargs)
        self.num_agents = int(num_agents)
        self.render_mode = self.env.render_mode
        agent = self.env.possible_agents[0]
        self.action_space = self.env.action_space(agent)
        single = self.env.observation_space(agent)
        self.observation_space = spaces.Box(0, 255, (self.num_agents, *single.shape), np.uint8)

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None):
        observations, infos = self.env.reset(seed=seed, options=options)
        return self._stack(observations), infos

    def step(self, actions: Sequence[Mapping[str, Any]]):
        if isinstance(actions, Mapping) or not isinstance(actions, Sequence):
            raise ValueError(f"actions must be a list of {self.num_agents} raw action dicts")
        if len(actions) != self.num_agents:
            raise ValueError(
                f"got {len(actions)} actions for {self.num_agents} agents (num_agents)"
            )
        observations, rewards, terminations, truncations, infos = self.env.step(
            dict(zip(self.env.possible_agents, actions, strict=True))
        )
        agents = self.env.possible_agents
        return (
            self._stack(observations),
            np.array([rewards[agent] for agent in agents], dtype=np.float64),
            np.array([terminations[agent] for agent in agents], dtype=bool),
            np.array([truncations[agent] for agent in agents], dtype=bool),
            infos,
        )

    def _stack(self, observations: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.stack([observations[agent] for agent in self.env.possible_agents])

    def render(self) -> list[np.ndarray] | None:
        """Each agent's last frame (Craftium returns the list of last observations)."""
        if self.render_mode is None:
            return None
        return list(self.env._frames)

    def close(self) -> None:
        self.env.close()
