"""``SB3Agent``: a Stable-Baselines3 algorithm behind omnigym's agent protocol
(``docs/architecture.md``).

Wraps any algorithm of Stable-Baselines3 (Raffin et al., JMLR 2021), PPO by default (Schulman et
al., 2017), so that a scenario can train it (``learn(env, budget)``) and the evaluator can play
it (``reset(seed)``, ``act(observation, info)``) like any other agent.

Observations. Image frames are turned channels-first (grey ``(H, W)`` becomes ``(1, H, W)``, RGB
``(H, W, C)`` becomes ``(C, H, W)``) and the last ``frame_stack`` frames are concatenated along
the channel axis, which is the layout SB3's ``CnnPolicy`` takes without transposing. Training
builds this with Gymnasium's wrappers (``TransformObservation``, ``FrameStackObservation``,
``ReshapeObservation``; the stack starts filled with the reset frame); ``act`` keeps the same
stack itself, cleared by ``reset``. Vector observations are concatenated the same way.

Training runs ``n_envs`` copies of the environment in a ``DummyVecEnv`` (one process: on a
two-core machine the network, not the environment, is the bottleneck), each wrapped in SB3's
``Monitor``; a callback records every finished training episode as ``(timesteps, return)`` in
:attr:`SB3Agent.learning_curve`, which the experiment kit stores and the report plots.

Checkpoints follow omnigym's rule (state dicts and JSON, never pickles) rather than SB3's own
``.zip``: ``save(folder)`` writes the policy's ``state_dict`` with ``torch.save`` and a JSON
config, and ``load(folder)`` rebuilds the policy
from the config and reads the weights with ``weights_only=True``. Only the policy is kept, not the
optimiser: a loaded agent plays, and a further ``learn`` starts a fresh optimiser from the loaded
weights.

:class:`SmallCNN` is a two-layer convolutional encoder for small frames: at 64×64 it costs about a
third of SB3's NatureCNN per training sample on one CPU core, which is what lets
``scenarios/craft_ppo.yaml`` train within minutes.
"""

from __future__ import annotations

import json
import os
from collections import deque
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch
from gymnasium import spaces
from gymnasium.wrappers import FrameStackObservation, ReshapeObservation, TransformObservation
from stable_baselines3.common import torch_layers
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import DummyVecEnv
from torch import nn

from omnigym.registry import load_entry_point, make

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "policy.pt"
_CLASS_KEYS = ("features_extractor_class", "activation_fn", "optimizer_class")


class SmallCNN(BaseFeaturesExtractor):
    """Conv(16, 8×8, stride 4) → Conv(32, 4×4, stride 2) → Linear(``features_dim``), all ReLU.

    Takes channels-first ``uint8`` frames; SB3's policy scales them to [0, 1] before this runs.
    """

    def __init__(self, observation_space: spaces.Box, features_dim: int = 128) -> None:
        super().__init__(observation_space, features_dim)
        channels = observation_space.shape[0]
        self.cnn = nn.Sequential(
            nn.Conv2d(channels, 16, kernel_size=8, stride=4),
            nn.ReLU(),
            nn.Conv2d(16, 32, kernel_size=4, stride=2),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            flat = self.cnn(torch.zeros(1, *observation_space.shape)).shape[1]
        self.linear = nn.Sequential(nn.Linear(flat, features_dim), nn.ReLU())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.linear(self.cnn(observations))


class LearningCurveCallback(BaseCallback):
    """Appends ``(timesteps, episode return)`` for every training episode that ends."""

    def __init__(self, curve: list[tuple[int, float]], offset: int = 0) -> None:
        super().__init__()
        self.curve = curve
        self.offset = offset

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            episode = info.get("episode")
            if episode is not None:
                self.curve.append((self.offset + int(self.num_timesteps), float(episode["r"])))
        return True


def channels_first(observation: np.ndarray) -> np.ndarray:
    """A frame as channels-first: ``(H, W)`` → ``(1, H, W)``, ``(H, W, C)`` → ``(C, H, W)``;
    a vector is returned as it is."""
    if observation.ndim == 2:
        return observation[None]
    if observation.ndim == 3:
        return observation.transpose(2, 0, 1)
    return observation


def stacked_space(space: spaces.Space, frame_stack: int) -> spaces.Space:
    """The observation space the policy sees: ``space``'s frames channels-first and stacked."""
    if not isinstance(space, spaces.Box):
        if frame_stack != 1:
            raise ValueError(
                f"frame_stack={frame_stack} needs a Box observation space, got {space}"
            )
        return space
    low, high = channels_first(space.low), channels_first(space.high)
    return spaces.Box(
        np.concatenate([low] * frame_stack, axis=0),
        np.concatenate([high] * frame_stack, axis=0),
        dtype=space.dtype,
    )


def _resolve_class(name: str) -> Any:
    """``"module:Class"``, or a bare name from this module, SB3's layers, ``torch.nn``/``optim``."""
    if ":" in name:
        return load_entry_point(name)
    for namespace in (globals(), vars(torch_layers), vars(nn), vars(torch.optim)):
        if name in namespace:
            return namespace[name]
    raise ValueError(f"policy_kwargs: unknown class {name!r} (give it as 'module:Class')")


def _describe_class(value: Any) -> Any:
    return f"{value.__module__}:{value.__qualname__}" if isinstance(value, type) else value


class SB3Agent:
    """A Stable-Baselines3 algorithm as an omnigym agent.

    Args:
        env: the environment the agent will play; its spaces size the policy.
        algo: the name of a Stable-Baselines3 algorithm class (``"PPO"``, ``"A2C"``, ``"DQN"``).
        policy: a policy alias of that algorithm (``"CnnPolicy"``, ``"MlpPolicy"``) or
            ``"module:Class"``.
        policy_kwargs: SB3's ``policy_kwargs``; ``features_extractor_class``, ``activation_fn``
            and ``optimizer_class`` may be given by name (``"SmallCNN"``, ``"NatureCNN"``,
            ``"ReLU"``, ``"module:Class"``), so that scenario files can set them.
        n_envs: environment copies stepped together during training.
        frame_stack: how many consecutive frames the policy sees.
        env_kwargs: keyword arguments that override the training environments' only (for
            instance a shorter ``max_timesteps``); observations must keep their shape.
        deterministic: ``act`` returns the policy's most likely action (else it samples).
        torch_threads: ``torch.set_num_threads`` before training, loading and each episode
            (None leaves torch's setting; on a busy machine one thread is often the fastest).
        seed: training seed when ``reset(seed)`` is not called before ``learn``.
        checkpoint: a folder written by :meth:`save` to load at once (so that a scenario can
            evaluate a trained agent without training it again).
        **hyperparameters: passed to the algorithm (``n_steps``, ``batch_size``,
            ``learning_rate``, ``ent_coef``, ...).
    """

    def __init__(
        self,
        env: Any,
        algo: str = "PPO",
        policy: str = "CnnPolicy",
        policy_kwargs: dict[str, Any] | None = None,
        n_envs: int = 1,
        frame_stack: int = 1,
        env_kwargs: dict[str, Any] | None = None,
        deterministic: bool = True,
        torch_threads: int | None = None,
        seed: int = 0,
        checkpoint: str | os.PathLike | None = None,
        **hyperparameters: Any,
    ) -> None:
        if env is None:
            raise ValueError("SB3Agent needs env= to size its policy")
        if n_envs < 1:
            raise ValueError(f"n_envs must be >= 1, got {n_envs}")
        if frame_stack < 1:
            raise ValueError(f"frame_stack must be >= 1, got {frame_stack}")
        self.algo = algo
        self.policy_name = policy
        self.policy_kwargs = {k: _describe_class(v) for k, v in (policy_kwargs or {}).items()}
        self.n_envs = n_envs
        self.frame_stack = frame_stack
        self.env_kwargs = dict(env_kwargs or {})
        self.deterministic = deterministic
        self.torch_threads = torch_threads
        self.hyperparameters = hyperparameters
        self.action_space = env.action_space
        self._frame_space = env.observation_space
        self.observation_space = stacked_space(env.observation_space, frame_stack)
        self.policy: Any = None
        self.learning_curve: list[tuple[int, float]] = []
        self.trained_timesteps = 0
        self._seed = seed
        self._frames: deque[np.ndarray] = deque(maxlen=frame_stack)
        _algorithm(algo)  # unknown names fail at construction
        if checkpoint is not None:
            self.load(checkpoint)

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode: clear the frame stack; ``seed`` also seeds a later ``learn``."""
        self._frames.clear()
        self._apply_threads()
        if seed is not None:
            self._seed = int(seed)

    def learn(self, env: Any, budget: int) -> SB3Agent:
        """Train for ``budget`` environment steps on copies of ``env`` (an env or an id)."""
        self._apply_threads()
        venv = DummyVecEnv([self._env_factory(env) for _ in range(self.n_envs)])
        try:
            model = _algorithm(self.algo)(
                self._policy_class(),
                venv,
                policy_kwargs=self._resolved_policy_kwargs(),
                seed=self._seed,
                verbose=0,
                **self.hyperparameters,
            )
            if self.policy is not None:
                model.policy.load_state_dict(self.policy.state_dict())
            callback = LearningCurveCallback(self.learning_curve, offset=self.trained_timesteps)
            model.learn(total_timesteps=int(budget), callback=callback)
        finally:
            venv.close()
        self.trained_timesteps += int(model.num_timesteps)
        self.policy = model.policy
        self.policy.set_training_mode(False)
        return self

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """The policy's action for ``observation`` (stacked with the frames before it)."""
        if self.policy is None:
            raise RuntimeError("SB3Agent.act() before learn() or load()")
        action, _ = self.policy.predict(self._stack(observation), deterministic=self.deterministic)
        if isinstance(self.action_space, spaces.Discrete):
            return int(action)
        return action

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``config.json`` and ``policy.pt`` (the policy's state dict) into ``path``."""
        if self.policy is None:
            raise RuntimeError("SB3Agent.save() before learn() or load()")
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.policy.state_dict(), folder / WEIGHTS_FILE)
        config = {
            "algo": self.algo,
            "policy": self.policy_name,
            "policy_kwargs": self.policy_kwargs,
            "frame_stack": self.frame_stack,
            "observation_shape": list(self.observation_space.shape or ()),
            "action_space": repr(self.action_space),
            "hyperparameters": self.hyperparameters,
            "trained_timesteps": self.trained_timesteps,
            "learning_curve": [list(point) for point in self.learning_curve],
        }
        # A hyperparameter JSON cannot hold (a schedule function) is recorded by its repr.
        text = json.dumps(config, indent=2, default=repr)
        (folder / CONFIG_FILE).write_text(text, encoding="utf-8")
        return folder

    def load(self, path: str | os.PathLike) -> SB3Agent:
        """Rebuild the policy of a ``save``d folder and read its weights (``weights_only``)."""
        folder = Path(path)
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
        if config["action_space"] != repr(self.action_space):
            raise ValueError(
                f"{folder}: checkpoint acts in {config['action_space']}, "
                f"this environment in {self.action_space!r}"
            )
        self.algo, self.policy_name = config["algo"], config["policy"]
        self.policy_kwargs = config["policy_kwargs"]
        self.frame_stack = int(config["frame_stack"])
        self.observation_space = stacked_space(self._frame_space, self.frame_stack)
        if list(self.observation_space.shape or ()) != config["observation_shape"]:
            raise ValueError(
                f"{folder}: checkpoint sees observations of shape {config['observation_shape']}, "
                f"this environment gives {list(self.observation_space.shape or ())}"
            )
        self._apply_threads()
        policy = self._policy_class()(
            self.observation_space,
            self.action_space,
            lambda _progress: 0.0,
            **self._resolved_policy_kwargs(),
        )
        weights = torch.load(folder / WEIGHTS_FILE, map_location=policy.device, weights_only=True)
        policy.load_state_dict(weights)
        policy.set_training_mode(False)
        self.policy = policy
        self.trained_timesteps = int(config["trained_timesteps"])
        self.learning_curve = [(int(t), float(r)) for t, r in config["learning_curve"]]
        self._frames = deque(maxlen=self.frame_stack)
        return self

    def _stack(self, observation: Any) -> Any:
        if not isinstance(self.observation_space, spaces.Box):
            return observation
        frame = channels_first(np.asarray(observation))
        if not self._frames:
            self._frames.extend([frame] * self.frame_stack)  # as FrameStackObservation's reset
        else:
            self._frames.append(frame)
        return np.concatenate(self._frames, axis=0)

    def _env_factory(self, env: Any) -> Any:
        def build() -> gym.Env:
            if isinstance(env, str):
                base = make(env, **self.env_kwargs)
            else:
                if env.spec is None:
                    raise ValueError("SB3Agent.learn needs an env made by gymnasium.make, or an id")
                base = gym.make(env.spec, **self.env_kwargs)
            return self._observation_wrappers(Monitor(base))

        return build

    def _observation_wrappers(self, env: gym.Env) -> gym.Env:
        space = env.observation_space
        if not isinstance(space, spaces.Box):
            return env
        frame = stacked_space(space, 1)
        env = TransformObservation(env, channels_first, frame)
        if self.frame_stack > 1:
            env = FrameStackObservation(env, self.frame_stack)
            env = ReshapeObservation(env, self.observation_space.shape)
        return env

    def _policy_class(self) -> Any:
        if ":" in self.policy_name:
            return load_entry_point(self.policy_name)
        aliases = _algorithm(self.algo).policy_aliases
        if self.policy_name not in aliases:
            raise ValueError(
                f"policy {self.policy_name!r} is not one of {self.algo}'s {sorted(aliases)}"
            )
        return aliases[self.policy_name]

    def _resolved_policy_kwargs(self) -> dict[str, Any]:
        return {
            key: _resolve_class(value) if key in _CLASS_KEYS and isinstance(value, str) else value
            for key, value in self.policy_kwargs.items()
        }

    def _apply_threads(self) -> None:
        if self.torch_threads is not None and torch.get_num_threads() != self.torch_threads:
            torch.set_num_threads(self.torch_threads)


def _algorithm(name: str) -> Any:
    algorithm = getattr(stable_baselines3, name, None)
    if not isinstance(algorithm, type):
        raise ValueError(
            f"algo {name!r} is not a Stable-Baselines3 algorithm "
            f"(e.g. {', '.join(stable_baselines3.__all__[:6])})"
        )
    return algorithm
