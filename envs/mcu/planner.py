"""The recipe planner: which crafts turn an inventory into a wanted item, and what is missing.

Used by the crafting oracle (to play a task) and by the task generator (to give a task exactly
the raw materials its recipe tree needs). Intermediate items are crafted as needed; an item with
no crafting recipe is a raw material. A ``#tag`` ingredient takes the member the inventory holds
most of (the first member of the tag on a tie), as the ``craft`` command does.
"""

from __future__ import annotations

import math
from collections import Counter

from omnigym.envs.mcu.registries import Registry


def pick_member(registry: Registry, ingredient: str, have: Counter) -> str:
    members = registry.members(ingredient)
    return max(members, key=lambda m: (have[m], -members.index(m)))


def plan(
    registry: Registry, item: str, count: int, have: Counter | None = None
) -> tuple[list[tuple[str, int]], Counter]:
    """``(crafts, missing)``: the ``(item, count)`` crafts, in order, that make ``count`` of
    ``item`` from ``have``, and the raw materials that ``have`` lacks for them."""
    have = Counter(have or {})
    crafts: list[tuple[str, int]] = []
    missing: Counter = Counter()

    def need(name: str, n: int) -> None:
        short = n - have[name]
        if short <= 0:
            return
        recipe = registry.recipes.get(name)
        if recipe is None:
            missing[name] += short
            have[name] += short
            return
        times = math.ceil(short / recipe.n)
        for ingredient, k in recipe.inputs:
            member = pick_member(registry, ingredient, have)
            need(member, k * times)
            have[member] -= k * times
        have[name] += times * recipe.n
        crafts.append((name, times * recipe.n))

    need(item, count)
    return crafts, missing


def needs_table(registry: Registry, crafts: list[tuple[str, int]]) -> bool:
    return any(not registry.recipes[name].hand for name, _ in crafts)
