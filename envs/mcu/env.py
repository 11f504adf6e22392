"""``MCU/Atomic-v0``: one MCU atomic task, played with text commands.

Follows MCU (Zheng et al., "MCU: An Evaluation Framework for Open-Ended Game Agents", ICML 2025,
arXiv 2310.08367; ``docs/mcu.md``): an atomic task is an instruction, init commands that set up
the scene, and a 600-step episode. Departures: the game is the symbolic one of
:mod:`omnigym.envs.mcu.world` on the Craft engine instead of Minecraft; success and progress come
from the task file's predicates and milestones instead of a vision-language judge; actions are
text commands instead of mouse and keyboard.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from omnigym.envs.mcu import difficulty as levels
from omnigym.envs.mcu import observe
from omnigym.envs.mcu.commands import InvalidCommand, execute
from omnigym.envs.mcu.episode_log import StepRecord
from omnigym.envs.mcu.evaluation import evaluate
from omnigym.envs.mcu.pixels import FRAME_SIZE, Camera
from omnigym.envs.mcu.registries import registry
from omnigym.envs.mcu.tasks import Task, load_task
from omnigym.envs.mcu.world import MCUWorld
from omnigym.spaces import require_text_action, text_space

ACTION_MAX_LENGTH = 256


class AtomicEnv(gym.Env):
    """One MCU atomic task on the symbolic Minecraft-like game.

    ## Description
    The task's init commands build a scene in a 41 × 24 × 41 arena (flat grass over stone); the
    agent reads a text report of what it sees and has, and sends one text command per step.
    Success and progress are the task file's predicates over the world and the event log.

    ## Action Space
    ``Text(max_length=256)``, printable: one command of :mod:`omnigym.envs.mcu.commands`
    (``move forward 3``, ``mine``, ``craft stone_pickaxe``, ...). A command that does not parse
    or cannot be done is a legal move: it takes one tick, changes nothing, gives reward 0 and
    sets ``info["invalid_action"] = True`` with ``info["invalid_reason"]`` (MCU has no penalty).
    A non-``str`` action raises ``ValueError`` naming the space.

    ## Observation Space
    ``Dict``: ``text`` (the report, ``Text(4096)``), ``voxels`` (``Box(-1, 32767, (9, 5, 9),
    int16)``, block ids ``[right, up, forward]`` around the feet, −1 beyond the visibility
    radius), ``inventory`` (``Box(0, 2304, (n_items,), int32)`` counts in registry order),
    ``stats`` (``Box(-inf, inf, (12,), float32)``: health, hunger, x, y, z, facing, pitch, time,
    weather, visibility radius, armour, effect bits), ``task`` (the instruction) and, with
    ``pixels=True``, ``rgb`` (``Box(0, 255, (128, 128, 3), uint8)``, the first-person frame of
    :mod:`omnigym.envs.mcu.pixels`).

    ## Rewards
    The increase in milestone progress (weights sum to 1; success counts as all of it), so an
    episode's return lies in [0, 1].

    ## Starting State
    The spawn node ``(0, 5, 0)`` facing north, by day (time 1000), full health and hunger, then
    the task's init commands. Mobs move with ``np_random``.

    ## Episode End
    Terminated on success or death; truncated after ``max_steps`` commands (600 by default).
    The final step's info holds ``success``, ``normalized_score`` (10 × Task Progress, 0–100)
    and ``metrics``: MCU's six dimensions on its 0–10 scale
    (:mod:`omnigym.envs.mcu.evaluation`, NaN where a dimension is undefined), ``steps``,
    ``ticks``, ``oracle_steps`` and ``invalid_commands``. ``env.records`` holds the episode's
    :class:`~omnigym.envs.mcu.episode_log.StepRecord` list.

    ## Arguments
    ``task``: a verified task name (``omnigym.envs.mcu.list_tasks()``) or a loaded
    :class:`~omnigym.envs.mcu.tasks.Task` (the generator checks candidates so); ``difficulty``:
    ``"simple"`` (the task file as written), ``"medium"`` or ``"hard"`` (seeded perturbations of
    the scene at each reset, :mod:`omnigym.envs.mcu.difficulty`, listed in
    ``info["perturbations"]``); ``pixels``: add the ``rgb`` frame (off by default: a frame
    costs far more than a text step).
    """

    metadata = {"render_modes": []}

    def __init__(
        self, task: str | Task = "collect_wood", difficulty: str = "simple", pixels: bool = False
    ):
        levels.check(difficulty)
        self.difficulty = difficulty
        self.camera = Camera() if pixels else None
        self.registry = registry()
        self._use_task(task if isinstance(task, Task) else load_task(task))
        n_items = len(self.registry.item_names)
        self.action_space = text_space(ACTION_MAX_LENGTH)
        self.observation_space = spaces.Dict(
            {
                "text": text_space(observe.TEXT_LIMIT),
                "voxels": spaces.Box(-1, 32767, (9, 5, 9), np.int16),
                "inventory": spaces.Box(0, 2304, (n_items,), np.int32),
                "stats": spaces.Box(-np.inf, np.inf, (observe.N_STATS,), np.float32),
                "task": text_space(ACTION_MAX_LENGTH * 4),
            }
        )
        if pixels:
            frame = (FRAME_SIZE, FRAME_SIZE, 3)
            self.observation_space["rgb"] = spaces.Box(0, 255, frame, np.uint8)
        self.world: MCUWorld | None = None

    def _use_task(self, task: Task) -> None:
        self.task = task
        self._relevant = (
            frozenset(name for names in task.relevant.values() for name in names)
            | task.success.names()
        )

    def _next_task(self) -> None:
        """Called at each reset once ``np_random`` is seeded: the task of the next episode."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._next_task()
        world = MCUWorld(self.registry, self.np_random)
        self.perturbations = levels.build(world, self.task, self.difficulty, self.np_random)
        world.start_y = world.max_y = world.position[1]
        world.log = []
        self.world = world
        self._reached = [False] * len(self.task.milestones)
        self._progress = 0.0
        self._steps = 0
        self._invalid = 0
        self.records: list[StepRecord] = []
        self._update_progress()
        return self._observation(), self._info(None, False)

    def step(self, action: Any):
        require_text_action(action, self.action_space)
        if self.world is None:
            raise RuntimeError("call reset() before step()")
        world = self.world
        world.log = []
        world.acts = []
        state = self._player_state()
        reason = None
        try:
            execute(world, action)
        except InvalidCommand as error:
            reason = str(error)
            self._invalid += 1
            world.tick()
        self._steps += 1
        before = self._progress
        success = self._update_progress()
        effect = reason is None and (bool(world.acts) or self._player_state() != state)
        self.records.append(
            StepRecord(
                action, reason is not None, effect, tuple(world.acts), tuple(self._reached), success
            )
        )
        terminated = success or world.dead
        truncated = not terminated and self._steps >= self.task.max_steps
        info = self._info(reason, success)
        if terminated or truncated:
            scores = self._scores()
            info["normalized_score"] = 10.0 * scores["task_progress"]
            info["metrics"] = {
                **{name: math.nan if v is None else v for name, v in scores.items()},
                "steps": float(self._steps),
                "ticks": float(world.ticks),
                "oracle_steps": math.nan
                if self.task.oracle_steps is None
                else float(self.task.oracle_steps),
                "invalid_commands": float(self._invalid),
            }
        return self._observation(), self._progress - before, terminated, truncated, info

    def _scores(self) -> dict[str, float | None]:
        """The episode's six dimensions (:func:`~omnigym.envs.mcu.evaluation.evaluate`)."""
        return evaluate(self.records, self.task, self.task.oracle_steps)

    def _player_state(self) -> tuple:
        """What a command may change for the player: place, look, inventory, armour, hunger and
        the event counters (sleeping moves only the clock and the counters)."""
        world = self.world
        inventory = world.player.inventory
        return (
            world.position,
            world.facing,
            world.pitch,
            tuple(inventory.slots),
            inventory.selected,
            tuple(world.armor.values()),
            world.hunger,
            world.events.total(),
        )

    def _update_progress(self) -> bool:
        """Latches reached milestones; returns whether the task's success holds now."""
        world = self.world
        for i, milestone in enumerate(self.task.milestones):
            self._reached[i] = self._reached[i] or milestone.when(world)
        success = self.task.success(world)
        reached = sum(
            m.weight for m, hit in zip(self.task.milestones, self._reached, strict=True) if hit
        )
        self._progress = 1.0 if success else max(self._progress, min(reached, 1.0))
        return success

    def _observation(self) -> dict[str, Any]:
        world = self.world
        return {
            "text": observe.text(world, self._relevant),
            "voxels": observe.voxels(world),
            "inventory": observe.inventory(world),
            "stats": observe.stats(world),
            "task": self.task.text,
        } | ({"rgb": self.camera.frame(world)} if self.camera else {})

    def _info(self, reason: str | None, success: bool) -> dict[str, Any]:
        return {
            "invalid_action": reason is not None,
            "invalid_reason": reason or "",
            "success": success,
            "progress": self._progress,
            "task": self.task.name,
            "category": self.task.category,
            "subcategory": self.task.subcategory,
            "difficulty": self.difficulty,
            "perturbations": list(self.perturbations),
            "ticks": self.world.ticks,
        }
