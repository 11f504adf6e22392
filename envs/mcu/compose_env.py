"""``MCU/Compose-v0``: several MCU tasks joined by ``and``, ``or`` and ``then``, played as one.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) composes atomic tasks into harder ones. The
composition (tree, instruction, merged scene) is :mod:`omnigym.envs.mcu.compose`; this module
plays it and scores it:

- each part latches its milestones and its success once reached (an achieved part stays
  achieved), and its progress is its milestone weight (1 on success);
- ``and``: success when every part has succeeded, progress the mean of the parts';
- ``or``: success when one part has, progress the maximum;
- ``then``: stages in order; only the current stage's parts advance, and they read the event
  counters since the stage began (so a kill before the stage does not count for it); progress
  is (completed stages + the current stage's progress) / stages.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import numpy as np

from omnigym.envs.mcu.compose import leaves, merge, parse
from omnigym.envs.mcu.env import AtomicEnv
from omnigym.envs.mcu.evaluation import task_completion_efficiency
from omnigym.envs.mcu.tasks import Task, load_task
from omnigym.envs.mcu.world import MCUWorld


class _Since:
    """A view of the world whose event counters start at ``start`` (a stage's beginning)."""

    def __init__(self, world: MCUWorld, start: Counter):
        self._world = world
        self.events = world.events - start

    def __getattr__(self, name: str) -> Any:
        return getattr(self._world, name)


class ComposeEnv(AtomicEnv):
    """A composite MCU task: :class:`~omnigym.envs.mcu.env.AtomicEnv`'s spaces, commands and
    episode ends, with the merged scene of the parts and the composition's success and progress
    (the module docstring). ``info["composition"]`` holds the parsed tree (``{"op": ...,
    "parts": [...]}`` nodes over ``{"task": name}`` leaves). The parts' placements move by an
    offset drawn from ``np_random`` at each reset. The final step's Task Progress is the
    composition's progress; Task Completion Efficiency is NaN (no oracle count for the whole).

    ## Arguments
    ``tasks``: verified task names (or loaded tasks), at least one, distinct; ``ops``: one
    fewer entries, each ``and``, ``or`` or ``then``; ``difficulty``: ``simple``, ``medium`` or
    ``hard``, applied to the merged scene. Parts whose ``requires`` disagree (one at night,
    another by day) raise ``ValueError`` naming both.
    """

    def __init__(
        self,
        tasks: list[str | Task] = ("sleep_in_bed", "combat_zombies"),
        ops: list[str] = ("and",),
        difficulty: str = "simple",
        pixels: bool = False,
    ):
        self._compose(tasks, ops)
        super().__init__(self._merged(np.random.default_rng(0)), difficulty, pixels)

    def _compose(self, tasks: list[str | Task], ops: list[str]) -> None:
        """Set the parts, the operators, the tree and its stages."""
        self.parts = [t if isinstance(t, Task) else load_task(t) for t in tasks]
        self.ops = list(ops)
        self.tree = parse([part.name for part in self.parts], self.ops)
        by_name = {part.name: part for part in self.parts}
        self.stages = self.tree["parts"] if self.tree.get("op") == "then" else [self.tree]
        self._parts_of = [[by_name[name] for name in leaves(stage)] for stage in self.stages]

    def _merged(self, rng: np.random.Generator) -> Task:
        return merge(self.parts, self.tree, self.ops, rng)

    def _next_task(self) -> None:
        self._use_task(self._merged(self.np_random))
        self._stage = 0
        self._stage_start: Counter = Counter()
        self._done = {part.name: False for part in self.parts}
        self._marks = {part.name: [False] * len(part.milestones) for part in self.parts}

    def _part_progress(self, name: str) -> float:
        if self._done[name]:
            return 1.0
        part = next(p for p in self.parts if p.name == name)
        hit = self._marks[name]
        return min(1.0, sum(m.weight for m, h in zip(part.milestones, hit, strict=True) if h))

    def _value(self, node: dict[str, Any]) -> tuple[bool, float]:
        if "task" in node:
            return self._done[node["task"]], self._part_progress(node["task"])
        values = [self._value(part) for part in node["parts"]]
        if node["op"] == "or":
            return any(v[0] for v in values), max(v[1] for v in values)
        return all(v[0] for v in values), sum(v[1] for v in values) / len(values)

    def _update_progress(self) -> bool:
        current = 0.0
        while self._stage < len(self.stages):
            view = _Since(self.world, self._stage_start)
            for part in self._parts_of[self._stage]:
                marks = self._marks[part.name]
                for i, milestone in enumerate(part.milestones):
                    marks[i] = marks[i] or milestone.when(view)
                self._done[part.name] = self._done[part.name] or part.success(view)
            done, current = self._value(self.stages[self._stage])
            if not done:
                break
            self._stage += 1
            self._stage_start = Counter(self.world.events)
            current = 0.0
        self._reached = [hit for part in self.parts for hit in self._marks[part.name]]
        success = self._stage == len(self.stages)
        progress = 1.0 if success else (self._stage + current) / len(self.stages)
        self._progress = max(self._progress, progress)
        return success

    def _scores(self) -> dict[str, float | None]:
        scores = super()._scores()
        success = self._stage == len(self.stages)
        scores["task_progress"] = 10.0 if success else round(10.0 * self._progress, 1)
        scores["task_completion_efficiency"] = task_completion_efficiency(
            scores["task_progress"], self._steps, None
        )
        return scores

    def _info(self, reason: str | None, success: bool) -> dict[str, Any]:
        return {**super()._info(reason, success), "composition": copy.deepcopy(self.tree)}
