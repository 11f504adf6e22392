"""Scripted oracles for MCU tasks: solvers that read the true world state and play commands.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) refines its LLM-written task configs by running
them in the game; here every generated task names a solver (``oracle.solver`` in its file) and
is kept only if the solver succeeds (:mod:`omnigym.envs.mcu.verify`). A solver is a generator
over the live :class:`~omnigym.envs.mcu.world.MCUWorld`: it yields one text command at a time
and looks at the world again before the next, so it copes with mobs that move.

The solvers live by family: :mod:`.navigation` (walking and aiming, shared), :mod:`.solvers`
(gathering, crafting, fighting, moving), :mod:`.stations` (brewing, enchanting, the anvil),
:mod:`.care` (animals, villagers, using tools) and :mod:`.building` (walls, huts, lamps, diving,
biomes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omnigym.envs.mcu.oracles import building, care, solvers, stations
from omnigym.envs.mcu.oracles.navigation import Commands
from omnigym.envs.mcu.world import MCUWorld


def sequence(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """A composite task: each part's solver in turn, twice over (a part that could not finish
    first, such as sleeping while a monster is near, gets a second go after the others)."""
    for _ in range(2):
        for part in params["parts"]:
            yield from solve(world, part)


SOLVERS: dict[str, Callable[[MCUWorld, dict[str, Any]], Commands]] = {
    "mine": solvers.mine,
    "collect": solvers.collect,
    "craft": solvers.craft,
    "smelt": solvers.smelt,
    "combat": solvers.combat,
    "sleep": solvers.sleep,
    "pillar": solvers.pillar,
    "find": solvers.find,
    "place": solvers.place,
    "drop": solvers.drop,
    "eat": solvers.eat,
    **stations.SOLVERS,
    **care.SOLVERS,
    **building.SOLVERS,
    "sequence": sequence,
}


def solve(world: MCUWorld, oracle: dict[str, Any]) -> Commands:
    """The command stream of the task's solver (``oracle = {solver: name, **params}``)."""
    params = {k: v for k, v in oracle.items() if k != "solver"}
    return SOLVERS[oracle["solver"]](world, params)


def run(env: Any, seed: int) -> dict[str, Any]:
    """Plays the task of an ``AtomicEnv`` with its oracle: success, steps, ticks and, on
    failure, why (the last invalid command's reason, or the solver giving up). A task where a
    milestone already holds at reset fails: its return could not reach 1."""
    _, info = env.reset(seed=seed)
    world = env.world
    if info["progress"] > 0:
        return {"success": False, "steps": 0, "ticks": 0, "reason": "a milestone holds at reset"}
    task = env.task
    steps, reason = 0, "solver gave up"
    for command in solve(world, task.oracle):
        _, _, terminated, truncated, info = env.step(command)
        steps += 1
        if info["invalid_action"]:
            reason = f"{command!r}: {info['invalid_reason']}"
        if terminated or truncated:
            success = bool(info["success"])
            return {
                "success": success,
                "steps": steps,
                "ticks": world.ticks,
                "reason": "" if success else ("died" if world.dead else reason),
            }
    return {"success": False, "steps": steps, "ticks": world.ticks, "reason": reason}
