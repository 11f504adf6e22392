"""``MacroActionWrapper``: MCU's text commands as a ``Discrete`` set of parameterised macros.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) plays Minecraft with mouse and keyboard; RL
libraries such as Stable-Baselines3 need a fixed finite action set. This wrapper builds one from
the task: the plain commands (move, turn, look, jump, attack, mine, use, sleep, wait, noop), then
one macro per relevant object and verb (:func:`macro_list`):

- ``approach <block|mob>``: one step of the shortest walk towards the nearest visible one;
- ``mine <block>``: walk to, aim at and dig the nearest visible one (with the best held tool);
- ``attack <mob>``: walk next to the nearest visible one, face it and hit it;
- ``craft <item>``: the next craft of the item's recipe tree (placing or reaching a crafting
  table when one is needed); ``smelt <item>``: reach a furnace, then smelt;
- ``equip``, ``place``, ``eat``, ``drop <item>``: the text command itself.

Each step plays exactly one text command, worked out from the live world with the oracle's
planning helpers (:mod:`omnigym.envs.mcu.oracles`) but restricted to what is within the
visibility radius; ``info["command"]`` names it. A macro with nothing to act on (no visible
target) plays ``noop``. The list is built from the task at construction (for ``MCU/Random-v0``,
the first task drawn).

``observation="dict"`` keeps the environment's observations; ``"vector"`` gives a
``Box(-10, 10, (n,), float32)`` of :func:`features` (nearest position of each relevant block
and mob, what is looked at, relevant inventory counts, a few stats), which an MLP policy reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from omnigym.envs.mcu.crafting import STATION_RANGE
from omnigym.envs.mcu.evaluation import relevant
from omnigym.envs.mcu.observe import relative
from omnigym.envs.mcu.oracles import navigation, solvers
from omnigym.envs.mcu.world import FACINGS, MCUWorld

PRIMITIVES = (
    "move forward",
    "move back",
    "move left",
    "move right",
    "turn left",
    "turn right",
    "turn around",
    "look up",
    "look down",
    "look ahead",
    "jump",
    "jump forward",
    "attack",
    "mine",
    "use",
    "sleep",
    "wait",
    "noop",
)
APPROACH_RADIUS = 2.0
SCALE = 24.0
"""Positions and distances in the vector observation are divided by this (daylight range)."""
BOUND = 10.0
NEAREST = 8


@dataclass(frozen=True)
class Macro:
    """One action of the set: ``verb`` and its ``target`` (``None`` for a plain command)."""

    verb: str
    target: str | None = None

    @property
    def name(self) -> str:
        return self.verb if self.target is None else f"{self.verb} {self.target}"


def macro_list(task, reg) -> list[Macro]:
    """The task's actions: :data:`PRIMITIVES`, then per relevant block or mob ``approach``,
    ``mine`` (blocks) or ``attack`` (mobs), then per relevant item the verbs that apply to it
    (``equip``; ``place`` blocks; ``craft`` what has a recipe; ``smelt`` a smelting input or
    output; ``eat`` food; ``drop``). Targets sorted by name."""
    concerned = sorted(relevant(task, reg))
    blocks = [n for n in concerned if n in reg.blocks and reg.blocks[n].hardness >= 0]
    mobs = [n for n in concerned if n in reg.mobs]
    items = [n for n in concerned if n in reg.items]
    smeltable = set(reg.smelting) | set(reg.smelting.values())
    out = [Macro(verb) for verb in PRIMITIVES]
    out += [Macro("approach", n) for n in blocks + mobs]
    out += [Macro("mine", n) for n in blocks]
    out += [Macro("attack", n) for n in mobs]
    for n in items:
        out.append(Macro("equip", n))
        if n in reg.blocks:
            out.append(Macro("place", n))
        if n in reg.recipes:
            out.append(Macro("craft", n))
        if n in smeltable:
            out.append(Macro("smelt", n))
        if reg.items[n].food:
            out.append(Macro("eat", n))
        out.append(Macro("drop", n))
    return out


def _visible_cells(world: MCUWorld, block: str) -> set[tuple[int, int, int]]:
    """The nearest :data:`NEAREST` visible nodes of ``block`` (ground blocks are everywhere)."""
    return set(world.cells_of(block, world.visibility(), NEAREST))


def _visible_mobs(world: MCUWorld, mob: str) -> list:
    radius = world.visibility()
    found = [
        m for m in world.mobs if m.kind.name == mob and world.distance_to(m.position) <= radius
    ]
    return sorted(found, key=lambda m: (world.distance_to(m.position), m.uid))


def _first(commands) -> str:
    return next(iter(commands), "noop")


def _approach(world: MCUWorld, target: str) -> str:
    if target in world.registry.mobs:
        mobs = _visible_mobs(world, target)
        cells = [mobs[0].position] if mobs else []
    else:
        cells = sorted(_visible_cells(world, target), key=lambda c: (world.distance_to(c), c))
    if not cells:
        return "noop"
    goal = cells[0]
    return _first(navigation.walk(world, lambda c: math.dist(c, goal) <= APPROACH_RADIUS))


def _mine(world: MCUWorld, block: str) -> str:
    cells = _visible_cells(world, block)
    if not cells:
        return "noop"
    if world.target() in cells:
        tool = navigation.best_tool(world, world.registry.blocks[block].tool)
        return next(navigation.equip(world, tool), "mine")
    return _first(navigation.aim_at(world, cells))


def _attack(world: MCUWorld, mob: str) -> str:
    ahead = world.mob_ahead()
    if ahead is not None and ahead.kind.name == mob:
        return "attack"
    mobs = _visible_mobs(world, mob)
    if not mobs:
        return "noop"
    x, _, z = world.position
    mx, _, mz = mobs[0].position
    dx, dz = mx - x, mz - z
    if (dx, dz) == (0, 0):
        return "wait"
    if max(abs(dx), abs(dz)) <= 1:
        direction = FACINGS.index((dx, 0) if abs(dx) >= abs(dz) else (0, dz))
        return _first(navigation.turn_to(world, direction)) if direction != world.facing else "wait"
    directions = navigation.route(world, lambda c: max(abs(c[0] - mx), abs(c[2] - mz)) <= 1)
    if not directions:
        return "wait"
    return (
        _first(navigation.turn_to(world, directions[0]))
        if directions[0] != world.facing
        else ("move forward")
    )


def _smelt(world: MCUWorld, item: str) -> str:
    if not world.cells_of("furnace", STATION_RANGE):
        return _first(solvers.reach_station(world, "furnace"))
    return f"smelt {item}"


def command(world: MCUWorld, macro: Macro) -> str:
    """The one text command ``macro`` plays now in ``world``."""
    verb, target = macro.verb, macro.target
    if target is None:
        return verb
    if verb == "approach":
        return _approach(world, target)
    if verb == "mine":
        return _mine(world, target)
    if verb == "attack":
        return _attack(world, target)
    if verb == "craft":
        return _first(solvers.craft_items(world, target, world.count(target) + 1))
    if verb == "smelt":
        return _smelt(world, target)
    return f"{verb} {target}"


def features(world: MCUWorld, macros: list[Macro], invalid: bool) -> np.ndarray:
    """The vector observation (module docstring): per approach target, seen (0/1), its nearest
    ``(right, up, forward)`` and distance over :data:`SCALE`; per block target, whether it is
    looked at; per mob target, whether it is within swing; per item, log(1 + count) and
    whether it is held; then health and hunger over 20, pitch over 90, day (0/1), visibility
    over 24, height above the start over 10, and whether the last command was invalid."""
    reg = world.registry
    targets = [m.target for m in macros if m.verb == "approach"]
    items = [m.target for m in macros if m.verb == "equip"]
    looked = world.target()
    ahead = world.mob_ahead()
    values: list[float] = []
    for target in targets:
        if target in reg.mobs:
            mobs = _visible_mobs(world, target)
            cell = mobs[0].position if mobs else None
            values.append(float(ahead is not None and ahead.kind.name == target))
        else:
            cells = world.cells_of(target, world.visibility(), 1)
            cell = cells[0] if cells else None
            values.append(float(looked is not None and world.block(looked) == target))
        if cell is None:
            values += [0.0, 0.0, 0.0, 0.0, 0.0]
        else:
            values += [1.0, *(v / SCALE for v in relative(world, cell))]
            values.append(world.distance_to(cell) / SCALE)
    held = world.player.inventory.wielded
    for item in items:
        values += [math.log1p(world.count(item)), float(held == item)]
    values += [
        world.health / 20.0,
        world.hunger / 20.0,
        world.pitch / 90.0,
        float(world.is_day()),
        world.visibility() / SCALE,
        (world.position[1] - world.start_y) / 10.0,
        float(invalid),
    ]
    return np.clip(np.array(values, dtype=np.float32), -BOUND, BOUND)


class MacroActionWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """An MCU environment played through ``Discrete(len(macros))`` (module docstring).

    Args:
        env: an MCU environment (``MCU/Atomic-v0``, a curated id, ``MCU/Compose-v0``).
        observation: ``"dict"`` (the environment's) or ``"vector"`` (:func:`features`).

    ``macros`` lists the actions (``macros[i].name``: ``"mine iron_ore"``, ...); a step's
    ``info["command"]`` is the text command it played. An action outside the space raises
    ``ValueError`` naming it.
    """

    def __init__(self, env: gym.Env, observation: str = "dict"):
        gym.utils.RecordConstructorArgs.__init__(self, observation=observation)
        gym.Wrapper.__init__(self, env)
        if observation not in ("dict", "vector"):
            raise ValueError(f"observation must be 'dict' or 'vector', got {observation!r}")
        base = env.unwrapped
        self.mode = observation
        self.macros = macro_list(base.task, base.registry)
        self.action_space = spaces.Discrete(len(self.macros))
        if observation == "vector":
            size = len(self._features(False))
            self.observation_space = spaces.Box(-BOUND, BOUND, (size,), np.float32)

    @property
    def names(self) -> list[str]:
        return [macro.name for macro in self.macros]

    def command(self, action: int) -> str:
        """The text command action ``action`` plays now."""
        return command(self.env.unwrapped.world, self.macros[int(action)])

    def _features(self, invalid: bool) -> np.ndarray:
        base = self.env.unwrapped
        if base.world is None:
            base.reset(seed=0)
        return features(base.world, self.macros, invalid)

    def _observe(self, observation: Any, invalid: bool) -> Any:
        return self._features(invalid) if self.mode == "vector" else observation

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = self.env.reset(seed=seed, options=options)
        return self._observe(observation, False), info

    def step(self, action: Any):
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        if not isinstance(action, int | np.integer) or not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in the wrapper's {self.action_space}")
        text = self.command(action)
        observation, reward, terminated, truncated, info = self.env.step(text)
        info["command"] = text
        return (
            self._observe(observation, info["invalid_action"]),
            reward,
            terminated,
            truncated,
            info,
        )
