"""Crafting and smelting on MCU's world: stations in range, ingredients with tags, fuel.

Follows Minecraft 1.16 as MCU plays it (Zheng et al., ICML 2025; ``docs/mcu.md``): a 2×2 recipe
crafts from the inventory, a 3×3 one needs a crafting table within 4 nodes, smelting needs a
furnace within 4 nodes and fuel. Departures: a command crafts or smelts whole batches at once
(no grid to fill), smelting takes 40 ticks (10 s) per item while mobs act, and fuel is burnt in
whole items, best first (a part-used coal is not kept for later).
"""

from __future__ import annotations

import math

from omnigym.envs.mcu.episode_log import Act
from omnigym.envs.mcu.world import MCUWorld

STATION_RANGE = 4
SMELT_TICKS = 40


def station_near(world: MCUWorld, station: str) -> bool:
    return bool(world.cells_of(station, STATION_RANGE))


def choose_ingredients(world: MCUWorld, inputs, times: int) -> dict[str, int] | None:
    """Items to consume for ``times`` batches of ``inputs``, a ``#tag`` taking its most
    plentiful members first; ``None`` when the inventory is short."""
    chosen: dict[str, int] = {}
    for ingredient, count in inputs:
        need = count * times
        members = sorted(
            world.registry.members(ingredient),
            key=lambda m: (-(world.count(m) - chosen.get(m, 0)), m),
        )
        for member in members:
            take = min(need, world.count(member) - chosen.get(member, 0))
            if take > 0:
                chosen[member] = chosen.get(member, 0) + take
                need -= take
        if need:
            return None
    return chosen


def craft(world: MCUWorld, item: str, count: int) -> str | None:
    """Crafts at least ``count`` of ``item``; returns why not, or ``None`` on success."""
    recipe = world.registry.recipes.get(item)
    if recipe is None:
        return f"{item} has no crafting recipe"
    if not recipe.hand and not station_near(world, "crafting_table"):
        return f"{item} needs a crafting table within {STATION_RANGE} nodes"
    times = math.ceil(count / recipe.n)
    chosen = choose_ingredients(world, recipe.inputs, times)
    if chosen is None:
        need = ", ".join(f"{n * times} {name}" for name, n in recipe.inputs)
        return f"not enough ingredients for {item} (needs {need})"
    for name, n in chosen.items():
        world.take(name, n)
    made = times * recipe.n
    left = world.give(item, made)
    world.events["crafted", item] += made - left
    world.acts.append(Act("craft", item, consumed=tuple(sorted(chosen.items()))))
    world.log.append(f"crafted {made} {item}")
    world.tick()
    return None


def smelt(world: MCUWorld, name: str, count: int) -> str | None:
    """Smelts ``count`` items; ``name`` is the input or the output. Returns why not, or None."""
    smelting = world.registry.smelting
    sources = [name] if name in smelting else sorted(s for s, o in smelting.items() if o == name)
    sources = [s for s in sources if world.count(s) >= count] or sources
    if not sources:
        return f"{name} cannot be smelted"
    source = sources[0]
    if world.count(source) < count:
        return f"not enough {source} to smelt {count}"
    if not station_near(world, "furnace"):
        return f"smelting needs a furnace within {STATION_RANGE} nodes"
    fuel = choose_fuel(world, count, reserved={source: count})
    if fuel is None:
        return "not enough fuel"
    world.take(source, count)
    for item, n in fuel.items():
        world.take(item, n)
    used = sorted({**fuel, source: count + fuel.get(source, 0)}.items())
    world.acts.append(Act("smelt", source, consumed=tuple(used)))
    output = smelting[source]
    if not world.pass_ticks(count * SMELT_TICKS):
        return None
    world.give(output, count)
    world.events["smelted", output] += count
    world.log.append(f"smelted {count} {source} into {output}")
    return None


def choose_fuel(world: MCUWorld, count: int, reserved: dict[str, int]) -> dict[str, int] | None:
    """Whole fuel items that smelt ``count`` items, best fuel first; ``None`` if short."""
    fuels = sorted(world.registry.fuels.items(), key=lambda kv: (-kv[1], kv[0]))
    chosen: dict[str, int] = {}
    left = float(count)
    for item, value in fuels:
        have = world.count(item) - reserved.get(item, 0)
        if have <= 0 or left <= 0:
            continue
        n = min(have, math.ceil(left / value))
        chosen[item] = n
        left -= n * value
    return chosen if left <= 0 else None
