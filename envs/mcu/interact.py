"""Using items on mobs and blocks, riding, drinking and trading on MCU's world.

Follows Minecraft 1.16 as MCU's Tool-use, Animal care and Trade tasks use it (Zheng et al., ICML
2025; ``docs/mcu.md``), with the rules as data (``mobs.yaml``'s ``care``, ``items.yaml``'s
``seeds``, ``trades.yaml``):

- ``use <item>`` facing a mob (the swing's reach): feed it a food it takes, tame it (a wolf with
  bones, a cat with cod, a parrot with seeds: a drawn chance per try; a taming food also counts
  as fed), tie it with a lead (it then
  follows), trap it in a boat (it stays put), shear a sheep, milk a cow with a bucket.
- ``use <item>`` on a block: a hoe tills grass or dirt into farmland, a seed plants on farmland,
  a bucket or glass bottle fills from the water looked at; ``use`` alone sleeps in the bed,
  flips the lever, or ties the leashed mobs within 5 nodes to the fence looked at (they then
  stay there). A potion is drunk, a food eaten.
- ``ride`` a horse: it tames with a drawn chance per ride, else bucks the player off.
- ``drink <potion>``: its effect (instant health heals 4 hp), and the bottle comes back.
- ``trade <item> [n]`` with a villager within 3 nodes that buys or sells ``item``, n times.

A mob is trapped in a boat, or by fences: when it can walk to at most 6 nodes (fences stand
1.5 nodes tall, so mobs do not climb them).

Departures: feeding does not breed; a mob tied to a fence stays on its node; a trapped mob stays
trapped; villagers' offers never run out or change price.
"""

from __future__ import annotations

import math

from omnigym.envs.mcu.episode_log import Act
from omnigym.envs.mcu.world import MCUWorld, MobState

TRADE_RANGE = 3
TIE_RANGE = 5
RIDE_TICKS, DRINK_TICKS = 10, 6
HEAL = 4


def _done(world: MCUWorld, kind: str, name: str, log: str, consumed=()) -> None:
    world.acts.append(Act(kind, name, consumed=tuple(consumed)))
    world.log.append(log)
    world.tick()


def use_on_mob(world: MCUWorld, item: str, mob: MobState) -> bool:
    """Uses ``item`` on ``mob``; False when it does nothing to that mob."""
    name = mob.kind.name
    care = world.registry.care.get(name)
    if care is None:
        return False
    if item == care.tame_with and not mob.tamed:
        world.take(item, 1)
        mob.tamed = bool(world.rng.random() < care.tame_chance)
        world.events["tamed", name] += mob.tamed
        world.events["fed", name] += item in care.food
        outcome = "tamed" if mob.tamed else "tried to tame"
        _done(world, "tame", name, f"{outcome} the {name}", ((item, 1),))
    elif item in care.food:
        world.take(item, 1)
        world.events["fed", name] += 1
        _done(world, "feed", name, f"fed the {name} {item}", ((item, 1),))
    elif item == "lead" and care.leash and not mob.leashed:
        world.take(item, 1)
        mob.leashed = True
        world.events["leashed", name] += 1
        _done(world, "leash", name, f"leashed the {name}", ((item, 1),))
    elif item == "oak_boat" and care.boat and not mob.trapped:
        world.take(item, 1)
        mob.trapped = True
        world.events["trapped", name] += 1
        _done(world, "trap", name, f"trapped the {name} in a boat", ((item, 1),))
    elif item == "shears" and care.shear and not mob.sheared:
        mob.sheared = True
        world.give(care.shear, 2)
        world.events["used", item] += 1
        _done(world, "use", name, f"sheared the {name}")
    elif item == "bucket" and name == "cow":
        world.take(item, 1)
        world.give("milk_bucket", 1)
        world.events["used", item] += 1
        _done(world, "use", name, "milked the cow", ((item, 1),))
    else:
        return False
    return True


def use_on_block(world: MCUWorld, item: str) -> bool:
    """Uses ``item`` on the water or block looked at; False when nothing happens."""
    reg = world.registry
    water = world.ray_water()
    if water is not None and item in ("bucket", "glass_bottle"):
        filled = {"bucket": "water_bucket", "glass_bottle": "water_bottle"}[item]
        world.take(item, 1)
        world.give(filled, 1)
        world.events["used", item] += 1
        _done(world, "use", "water", f"filled a {filled}", ((item, 1),))
        return True
    cell = world.target()
    if cell is None:
        return False
    above = (cell[0], cell[1] + 1, cell[2])
    block = world.block(cell)
    if reg.items[item].tool == "hoe" and block in reg.tillable and world.block(above) == "air":
        world.grid.set(*cell, "farmland")
        world.events["used", item] += 1
        world.events["placed", "farmland"] += 1
        world.use_tool(1)
        _done(world, "use", block, f"tilled the {block}")
        return True
    if item in reg.seeds and block == "farmland" and world.block(above) == "air":
        world.take(item, 1)
        world.grid.set(*above, reg.seeds[item])
        world.events["planted", item] += 1
        world.events["placed", reg.seeds[item]] += 1
        _done(world, "plant", item, f"planted {item}", ((item, 1),))
        return True
    return False


def use_block(world: MCUWorld) -> bool:
    """``use`` with an empty hand: flips the lever looked at, or ties the leashed mobs within
    :data:`TIE_RANGE` to the fence looked at."""
    cell = world.target()
    if cell is not None and world.fence(*cell):
        near = [m for m in world.mobs if m.leashed and math.dist(m.position, cell) <= TIE_RANGE]
        for mob in near:
            mob.leashed, mob.tied = False, True
            world.events["tied", mob.kind.name] += 1
            _done(world, "tie", mob.kind.name, f"tied the {mob.kind.name} to the fence")
        return bool(near)
    if cell is None or world.block(cell) != "lever":
        return False
    world.powered ^= {cell}
    state = "on" if cell in world.powered else "off"
    world.events["used", "lever"] += 1
    _done(world, "use", "lever", f"switched the lever {state}")
    return True


def ride(world: MCUWorld, mob: MobState) -> str | None:
    care = world.registry.care.get(mob.kind.name)
    if care is None or care.tame_with != "ride":
        return f"the {mob.kind.name} cannot be ridden"
    world.pass_ticks(RIDE_TICKS)
    if not mob.tamed:
        mob.tamed = bool(world.rng.random() < care.tame_chance)
        world.events["tamed", mob.kind.name] += mob.tamed
    outcome = "tamed" if mob.tamed else "was bucked off"
    world.acts.append(Act("ride", mob.kind.name))
    world.log.append(f"rode the {mob.kind.name}: {outcome}")
    return None


def drink(world: MCUWorld, potion: str) -> None:
    info = world.registry.potions[potion]
    world.take(potion, 1)
    world.give("glass_bottle", 1)
    if info.effect == "instant_health":
        world.health = min(20.0, world.health + HEAL)
    elif info.effect:
        world.effects[info.effect] = info.seconds * 4
    world.events["drank", potion] += 1
    world.acts.append(Act("drink", potion, consumed=((potion, 1),)))
    world.log.append(f"drank {potion}")
    world.pass_ticks(DRINK_TICKS)


def traders(world: MCUWorld, item: str) -> list[MobState]:
    """Villagers within trade range that buy or sell ``item``, nearest first."""
    trades = world.registry.trades
    return sorted(
        (
            m
            for m in world.mobs
            if m.kind.name in trades
            and (item in trades[m.kind.name].buys or item in trades[m.kind.name].sells)
            and world.distance_to(m.position) <= TRADE_RANGE
        ),
        key=lambda m: (world.distance_to(m.position), m.uid),
    )


def trade(world: MCUWorld, item: str, times: int) -> str | None:
    """Trades ``item`` ``times`` times with the nearest villager that deals in it."""
    near = traders(world, item)
    if not near:
        return f"no villager within {TRADE_RANGE} nodes trades {item}"
    table = world.registry.trades[near[0].kind.name]
    if item in table.buys:
        pay, payment, get, gain = item, table.buys[item] * times, "emerald", times
    else:
        emeralds, count = table.sells[item]
        pay, payment, get, gain = "emerald", emeralds * times, item, count * times
    if world.count(pay) < payment:
        return f"the trade needs {payment} {pay}, you have {world.count(pay)}"
    world.take(pay, payment)
    world.give(get, gain)
    world.events["traded", item] += times
    world.acts.append(Act("trade", item, consumed=((pay, payment),)))
    world.log.append(f"traded {payment} {pay} for {gain} {get}")
    world.tick()
    return None
