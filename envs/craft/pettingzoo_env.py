"""Craftium's ``craftium.pettingzoo_env`` module: multi-agent Craft envs made by name.

Follows Craftium (Malagón, Ceberio, Lozano, ICML 2025), whose
``pettingzoo_env.env(env_name, render_mode=None, **kwargs)`` returns a PettingZoo ``AECEnv`` for
``"Craftium/MultiAgentCombat-v0"``. Code written against it runs after changing the import.

- ``env(env_name, render_mode=None, **kwargs)``: the AEC form, PettingZoo's ``parallel_to_aec``
  of ``multi.CraftParallelEnv`` (what ``omnigym.make_aec`` returns).
- ``parallel_env(env_name, render_mode=None, **kwargs)``: the ``CraftParallelEnv`` itself.

``env_name`` is Craftium's id (``"Craftium/MultiAgentCombat-v0"``), the omnigym id
(``"Craft/MultiAgentCombat-v0"``) or the bare task name (``"MultiAgentCombat"``); ``kwargs`` are
``CraftParallelEnv``'s (Craftium's defaults for this env, two 64×64 RGB players and 1000 steps,
are the task's defaults here).

Departure from Craftium: its AEC env steps the players one after the other through separate engine
clients; here the AEC form only collects the players' actions in turn and then steps them together,
so that neither player moves first.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.conversions import parallel_to_aec

from omnigym.envs.craft.multi import CraftParallelEnv

AVAIL_ENVS = {
    "Craftium/MultiAgentCombat-v0": "MultiAgentCombat",
    "Craft/MultiAgentCombat-v0": "MultiAgentCombat",
    "MultiAgentCombat": "MultiAgentCombat",
}
"""Accepted env names → the multi-agent task they make."""


def parallel_env(env_name: str, render_mode: str | None = None, **kwargs: Any) -> CraftParallelEnv:
    """The multi-agent env ``env_name`` as a PettingZoo ``ParallelEnv``."""
    if env_name not in AVAIL_ENVS:
        raise ValueError(f"env_name must be one of {sorted(AVAIL_ENVS)}, got {env_name!r}")
    return CraftParallelEnv(task=AVAIL_ENVS[env_name], render_mode=render_mode, **kwargs)


def env(env_name: str, render_mode: str | None = None, **kwargs: Any) -> AECEnv:
    """The multi-agent env ``env_name`` as a PettingZoo ``AECEnv`` (Craftium's entry point)."""
    return parallel_to_aec(parallel_env(env_name, render_mode=render_mode, **kwargs))
