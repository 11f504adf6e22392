"""PPO on an MCU task through the Stable-Baselines3 bridge, acting with the macro actions.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) reports VPT-RL, a policy fine-tuned with RL.
Here the RL agent is :class:`omnigym.agents.sb3.SB3Agent` (PPO, an MLP policy) on
:class:`~omnigym.envs.mcu.macro.MacroActionWrapper` with its vector observation: the wrapper
turns the text environment into ``Discrete`` actions and a ``Box`` observation, and the reward
is the environment's (the increase in milestone progress). :class:`MCUPPOAgent` trains on
wrapped copies of the environment and plays the unwrapped text environment it is built with,
turning each chosen macro into its text command, so the evaluator scores it like every other
MCU agent.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from stable_baselines3.common.monitor import Monitor

from omnigym.agents.sb3 import SB3Agent
from omnigym.envs.mcu.macro import MacroActionWrapper, command, features
from omnigym.registry import make

DEFAULTS = {
    "n_steps": 256,
    "batch_size": 64,
    "n_epochs": 4,
    "learning_rate": 1e-3,
    "ent_coef": 0.01,
    "gamma": 0.99,
}
"""PPO's settings unless given: short rollouts, since episodes end at the first success."""


class MCUPPOAgent(SB3Agent):
    """PPO with an MLP policy over :class:`~omnigym.envs.mcu.macro.MacroActionWrapper`'s macros.

    Args:
        env: the MCU environment the agent plays (text actions); its task fixes the macros.
        **kwargs: :class:`~omnigym.agents.sb3.SB3Agent`'s (``checkpoint``, ``torch_threads``,
            PPO hyperparameters over :data:`DEFAULTS`).
    """

    def __init__(self, env: Any, **kwargs: Any):
        if env is None:
            raise ValueError("MCUPPOAgent needs env= to build its macro actions")
        self.text_env = env
        self.macro = MacroActionWrapper(env, "vector")
        settings = {"policy": "MlpPolicy", "torch_threads": 1, **DEFAULTS, **kwargs}
        super().__init__(self.macro, **settings)
        self._invalid = False

    def _env_factory(self, env: Any):
        def build() -> gym.Env:
            if isinstance(env, str):
                base = make(env, **self.env_kwargs)
            else:
                base = gym.make(env.spec, **self.env_kwargs)
            return Monitor(MacroActionWrapper(base, "vector"))

        return build

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._invalid = False

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The text command of the macro the policy picks for the world as it is now."""
        world = self.text_env.unwrapped.world
        invalid = bool(info.get("invalid_action", False))
        index = super().act(features(world, self.macro.macros, invalid), info)
        return command(world, self.macro.macros[index])
