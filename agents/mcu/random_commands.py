"""A random MCU player that at least speaks the grammar: uniform among the plain commands.

The registry's ``random`` agent samples random text from the ``Text`` action space, which never
parses, so it scores 0 on every MCU dimension. This baseline draws each step uniformly among
:data:`~omnigym.envs.mcu.macro.PRIMITIVES` (move, turn, look, jump, attack, mine, use, sleep,
wait, noop), so it walks, digs and hits at random: the floor a learned agent must clear.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from omnigym.envs.mcu.macro import PRIMITIVES


class RandomCommandAgent:
    """Uniform among the plain commands, seeded by ``reset(seed)``."""

    def __init__(self, seed: int = 0):
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        return PRIMITIVES[int(self._rng.integers(len(PRIMITIVES)))]
