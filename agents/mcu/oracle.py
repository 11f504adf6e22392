"""The MCU oracle as an agent: each task's scripted solver, one command per step.

The solvers (:mod:`omnigym.envs.mcu.oracles`, the ones that verify every task) read the true
world state from ``env.unwrapped.world``, as scripted controllers may; this class only keeps one
solver's command stream per episode and answers ``noop`` once it has nothing more to do.
"""

from __future__ import annotations

from typing import Any

from omnigym.envs.mcu.oracles import solve


class MCUOracle:
    """Plays the task's scripted solver (``oracle.solver`` of its task file).

    Args:
        env: an MCU environment (a registered ``MCU/`` id, wrapped or not).
    """

    def __init__(self, env: Any) -> None:
        self.env = env.unwrapped
        self._world = None
        self._commands = iter(())

    def reset(self, seed: int | None = None) -> None:
        self._world = None

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        world = self.env.world
        if world is not self._world:
            self._world = world
            self._commands = solve(world, self.env.task.oracle)
        return next(self._commands, "noop")
