"""What every agent that plays one Diplomacy power shares: seeding, and its orders written as the
env's action (``docs/diplomacy.md``).

A :class:`PowerAgent` chooses order strings for the power whose ``info`` it is given
(:meth:`PowerAgent.orders`); :meth:`PowerAgent.act` turns them into the action format the env
asks for (:func:`omnigym.envs.diplomacy.orders.as_action`), and :meth:`PowerAgent.reset`
reseeds the generator of its random choices. The reference bots (:mod:`.bots`) and the DipLLM
agents (:mod:`omnigym.llm_agents.dipllm`) are power agents.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np

from omnigym.envs.diplomacy.orders import as_action


class PowerAgent(ABC):
    """An agent that plays one power: :meth:`act` writes the orders of :meth:`orders` as the
    env's action (no orders when the power has no orderable location), and :meth:`reset`
    reseeds the generator of its random choices (``_rng``) with ``seed``, or with the agent's
    own ``seed`` when None: same seed, same board, same orders."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(self.seed if seed is None else seed)

    def act(self, observation: Any, info: Mapping[str, Any]) -> Any:
        return as_action(
            self.orders(info) if info["orderable_locations"] else [], observation, info
        )

    @abstractmethod
    def orders(self, info: Mapping[str, Any]) -> list[str]:
        """This phase's orders for the power of ``info``, each one of
        ``info["possible_orders"]``."""
