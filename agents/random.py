"""The uniformly random agent, for any action space.

Where the environment lists its legal moves (``info["legal_actions"]``, as text tasks with a
small move set do) it picks one of them uniformly; otherwise it samples the action space, which
for a ``Text`` space is random text.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class RandomAgent:
    """Uniform over ``info["legal_actions"]`` when present, else ``action_space.sample()``."""

    def __init__(self, env: Any) -> None:
        self.action_space = env.action_space
        self._rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self.action_space.seed(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        legal = info.get("legal_actions")
        if legal:
            return legal[int(self._rng.integers(len(legal)))]
        return self.action_space.sample()
