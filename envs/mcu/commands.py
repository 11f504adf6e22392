"""The text commands an agent plays MCU with, and what each one does to the world.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) drives Minecraft with mouse and keyboard at 20
frames per second; here one text command is one step, taking one or more ticks. Grammar (case
and surrounding whitespace ignored; item names may use spaces for underscores)::

    move forward|back|left|right [n<=8]    turn left|right|around    look up|down|ahead
    jump    jump forward    attack    mine    place <item>    use [<item>]    equip <item>
    drop <item> [n]    craft <item> [n]    smelt <item> [n]    eat <food>    sleep
    brew <potion> [n<=3]    enchant <item> with <enchantment>    drink <potion>
    repair <item>    rename <item> to <name>    combine <item> and <item>
    trade <item> [n]    ride    dismount    wait [n<=20]    noop

A command that does not parse, or cannot be done (unknown item, missing ingredients, no station
in range, nothing to mine), raises :class:`InvalidCommand` with the reason; the environment then
spends one tick and flags the step.
"""

from __future__ import annotations

from omnigym.envs.mcu import crafting, interact, stations
from omnigym.envs.mcu.episode_log import Act
from omnigym.envs.mcu.world import FACINGS, MCUWorld

MAX_MOVE, MAX_WAIT = 8, 20
DIRECTIONS = {"forward": 0, "left": 1, "back": 2, "right": 3}
"""Quarter turns to the left from the facing direction."""
TURNS = {"left": 1, "right": 3, "around": 2}
LOOKS = {"up": -45, "down": 45}
SLEEP_RANGE, MONSTER_RANGE = 2, 8


class InvalidCommand(Exception):
    """A command that did not parse or cannot be done; the message says why."""


def _split_count(words: list[str], limit: int | None = None) -> tuple[str, int]:
    count = 1
    if len(words) > 1 and words[-1].isdigit():
        count = int(words[-1])
        words = words[:-1]
    if count < 1 or (limit is not None and count > limit):
        raise InvalidCommand(f"count must be in [1, {limit}]" if limit else "count must be >= 1")
    return "_".join(words), count


def _item(world: MCUWorld, name: str, *, owned: bool = True) -> str:
    if not name:
        raise InvalidCommand("which item?")
    if name not in world.registry.items:
        raise InvalidCommand(f"unknown item {name!r}")
    if owned and world.count(name) == 0:
        raise InvalidCommand(f"no {name} in the inventory")
    return name


def execute(world: MCUWorld, text: str) -> None:
    """Runs one command on ``world``; raises :class:`InvalidCommand` when it cannot."""
    words = text.strip().lower().split()
    if not words:
        raise InvalidCommand("empty command")
    verb, rest = words[0], words[1:]
    handler = _HANDLERS.get(verb)
    if handler is None:
        raise InvalidCommand(f"unknown command {verb!r}")
    handler(world, rest)


def _move(world: MCUWorld, rest: list[str]) -> None:
    if not rest or rest[0] not in DIRECTIONS or len(rest) > 2:
        raise InvalidCommand("move forward|back|left|right [n]")
    steps = int(rest[1]) if len(rest) == 2 and rest[1].isdigit() else 1
    if len(rest) == 2 and not (rest[1].isdigit() and 1 <= steps <= MAX_MOVE):
        raise InvalidCommand(f"move takes 1 to {MAX_MOVE} nodes")
    dx, dz = FACINGS[(world.facing + DIRECTIONS[rest[0]]) % 4]
    for moved in range(steps):
        if not world.step(dx, dz):
            if moved == 0:
                raise InvalidCommand("blocked")
            break
        world.tick()
        if world.dead:
            return


def _turn(world: MCUWorld, rest: list[str]) -> None:
    if rest not in ([name] for name in TURNS):
        raise InvalidCommand("turn left|right|around")
    world.turn(TURNS[rest[0]])
    world.tick()


def _look(world: MCUWorld, rest: list[str]) -> None:
    if rest == ["ahead"]:
        world.look(0)
    elif rest in (["up"], ["down"]):
        world.look(world.pitch + LOOKS[rest[0]])
    else:
        raise InvalidCommand("look up|down|ahead")
    world.tick()


def _jump(world: MCUWorld, rest: list[str]) -> None:
    if rest not in ([], ["forward"]):
        raise InvalidCommand("jump [forward]")
    if rest:
        x, y, z = world.position
        dx, dz = FACINGS[world.facing]
        gap = not world.solid(x + dx, y - 1, z + dz) and world.standable(x + 2 * dx, y, z + 2 * dz)
        clear = all(not world.solid(x + dx, y + h, z + dz) for h in (0, 1))
        if gap and clear:
            world.teleport((x + 2 * dx, y, z + 2 * dz))
        elif not world.step(dx, dz):
            raise InvalidCommand("blocked")
    world.tick()


def _attack(world: MCUWorld, rest: list[str]) -> None:
    mob = world.mob_ahead()
    if rest or mob is None:
        raise InvalidCommand("nothing to attack" if not rest else "attack takes no argument")
    world.attack(mob)


def _mine(world: MCUWorld, rest: list[str]) -> None:
    if rest:
        raise InvalidCommand("mine takes no argument: it digs the block you look at")
    cell = world.target()
    if cell is None:
        raise InvalidCommand("nothing to mine within reach")
    if world.registry.by_id[world.grid.get(*cell)].hardness < 0:
        raise InvalidCommand(f"{world.block(cell)} cannot be mined")
    world.dig(cell)


def _place(world: MCUWorld, rest: list[str]) -> None:
    item = _item(world, "_".join(rest))
    if item not in world.registry.blocks:
        raise InvalidCommand(f"{item} is not a block")
    cell = world.placement()
    x, y, z = world.position
    if cell is None:
        raise InvalidCommand("no surface to place against within reach")
    if cell == (x, y + 1, z) or (cell == (x, y, z) and world.solid(x, y + 2, z)):
        raise InvalidCommand("no room to place there")
    if any(mob.position == cell for mob in world.mobs):
        raise InvalidCommand("a mob is in the way")
    world.place(item, cell)


def _use(world: MCUWorld, rest: list[str]) -> None:
    if rest:
        item = _item(world, "_".join(rest))
        mob = world.mob_ahead()
        if mob is not None and interact.use_on_mob(world, item, mob):
            return
        if interact.use_on_block(world, item):
            return
        if item in world.registry.potions:
            interact.drink(world, item)
            return
        if world.registry.items[item].food:
            world.eat(item)
            return
        raise InvalidCommand(f"{item} cannot be used here")
    cell = world.target()
    if cell is not None and "bed" in world.registry.blocks[world.block(cell)].tags:
        _sleep(world, [])
        return
    if interact.use_block(world):
        return
    raise InvalidCommand("nothing to use")


def _drink(world: MCUWorld, rest: list[str]) -> None:
    item = _item(world, "_".join(rest))
    if item not in world.registry.potions:
        raise InvalidCommand(f"{item} is not a potion")
    interact.drink(world, item)


def _ride(world: MCUWorld, rest: list[str]) -> None:
    mob = world.mob_ahead()
    if rest or mob is None:
        raise InvalidCommand("nothing to ride" if not rest else "ride takes no argument")
    _check(interact.ride(world, mob))


def _dismount(world: MCUWorld, rest: list[str]) -> None:
    if rest:
        raise InvalidCommand("dismount takes no argument")
    raise InvalidCommand("you are not riding anything")


def _check(reason: str | None) -> None:
    if reason:
        raise InvalidCommand(reason)


def _split_on(rest: list[str], word: str, usage: str) -> tuple[str, str]:
    if word not in rest:
        raise InvalidCommand(usage)
    i = rest.index(word)
    return "_".join(rest[:i]), "_".join(rest[i + 1 :])


def _brew(world: MCUWorld, rest: list[str]) -> None:
    name, count = _split_count(rest, stations.MAX_BREW)
    _check(stations.brew(world, _item(world, name, owned=False), count))


def _enchant(world: MCUWorld, rest: list[str]) -> None:
    item, enchantment = _split_on(rest, "with", "enchant <item> with <enchantment>")
    _check(stations.enchant(world, _item(world, item), enchantment))


def _repair(world: MCUWorld, rest: list[str]) -> None:
    _check(stations.repair(world, _item(world, "_".join(rest))))


def _rename(world: MCUWorld, rest: list[str]) -> None:
    item, name = _split_on(rest, "to", "rename <item> to <name>")
    _check(stations.rename(world, _item(world, item), name.replace("_", " ")))


def _combine(world: MCUWorld, rest: list[str]) -> None:
    item, other = _split_on(rest, "and", "combine <item> and <item>")
    _check(stations.combine(world, _item(world, item), _item(world, other)))


def _trade(world: MCUWorld, rest: list[str]) -> None:
    name, times = _split_count(rest, 64)
    _check(interact.trade(world, _item(world, name, owned=False), times))


def _equip(world: MCUWorld, rest: list[str]) -> None:
    item = _item(world, "_".join(rest))
    if world.registry.items[item].slot is not None:
        world.wear_armor(item)
    else:
        world.wield(item)
    world.log.append(f"equipped {item}")
    world.tick()


def _drop(world: MCUWorld, rest: list[str]) -> None:
    name, count = _split_count(rest)
    item = _item(world, name)
    if world.count(item) < count:
        raise InvalidCommand(f"only {world.count(item)} {item} in the inventory")
    world.take(item, count)
    world.events["dropped", item] += count
    world.acts.append(Act("drop", item, consumed=((item, count),)))
    world.log.append(f"dropped {count} {item}")
    world.tick()


def _craft(world: MCUWorld, rest: list[str]) -> None:
    name, count = _split_count(rest, 64)
    reason = crafting.craft(world, _item(world, name, owned=False), count)
    if reason:
        raise InvalidCommand(reason)


def _smelt(world: MCUWorld, rest: list[str]) -> None:
    name, count = _split_count(rest, 64)
    reason = crafting.smelt(world, _item(world, name, owned=False), count)
    if reason:
        raise InvalidCommand(reason)


def _eat(world: MCUWorld, rest: list[str]) -> None:
    item = _item(world, "_".join(rest))
    if not world.registry.items[item].food:
        raise InvalidCommand(f"{item} is not food")
    world.eat(item)


def _sleep(world: MCUWorld, rest: list[str]) -> None:
    if rest:
        raise InvalidCommand("sleep takes no argument")
    beds = [
        cell
        for tag_member in world.registry.tags["bed"]
        for cell in world.cells_of(tag_member, SLEEP_RANGE + 1)
        if max(abs(a - b) for a, b in zip(cell, world.position, strict=True)) <= SLEEP_RANGE
    ]
    if not beds:
        raise InvalidCommand(f"no bed within {SLEEP_RANGE} nodes")
    if world.is_day() and world.weather != "thunder":
        raise InvalidCommand("you can only sleep at night or during thunderstorms")
    if any(m.hostile and world.distance_to(m.position) <= MONSTER_RANGE for m in world.mobs):
        raise InvalidCommand("you may not rest now; there are monsters nearby")
    world.sleep(world.block(beds[0]))


def _wait(world: MCUWorld, rest: list[str]) -> None:
    if len(rest) > 1 or (rest and not (rest[0].isdigit() and 1 <= int(rest[0]) <= MAX_WAIT)):
        raise InvalidCommand(f"wait [1..{MAX_WAIT}]")
    for _ in range(int(rest[0]) if rest else 1):
        world.tick()
        if world.dead:
            return


def _noop(world: MCUWorld, rest: list[str]) -> None:
    if rest:
        raise InvalidCommand("noop takes no argument")
    world.tick()


_HANDLERS = {
    "move": _move,
    "turn": _turn,
    "look": _look,
    "jump": _jump,
    "attack": _attack,
    "mine": _mine,
    "place": _place,
    "use": _use,
    "equip": _equip,
    "drop": _drop,
    "craft": _craft,
    "smelt": _smelt,
    "eat": _eat,
    "sleep": _sleep,
    "drink": _drink,
    "ride": _ride,
    "dismount": _dismount,
    "brew": _brew,
    "enchant": _enchant,
    "repair": _repair,
    "rename": _rename,
    "combine": _combine,
    "trade": _trade,
    "wait": _wait,
    "noop": _noop,
}
