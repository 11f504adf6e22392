"""The init commands of an MCU task file: Minecraft chat commands that build the task's scene.

Follows the ``custom_init_commands`` of MCU's task configs (Zheng et al., ICML 2025;
``docs/mcu.md``), which MineStudio runs in the real game at reset. The verbs kept are the ones
MCU's configs use: ``give``, ``replaceitem entity @s <slot> <item>``, ``summon``, ``setblock``,
``fill`` (also wrapped in ``execute ... run``), ``time set``, ``weather``, ``effect give``,
``tp``/``teleport`` and ``clear``, with Minecraft's ``~`` coordinates relative to the player,
plus ``experience``/``xp add <target> <n> levels`` and ``fillbiome`` (Minecraft 1.19.4's, to
mark a patch of the arena as a biome).

Departures: selectors are ignored (every command acts on the one player or the world); NBT tags
(``{...}``) are dropped, except a given tool's ``Damage`` (its wear); experience points are
converted to whole levels (7 points a level); an item or mob the registry does not know is
skipped with a warning that
names the task file, the line, the command and the name, so configs written for the real game
import.
Commands are parsed once when the task loads (:func:`parse`) and applied at every reset
(:func:`apply`).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, replace

from omnigym.envs.mcu.registries import ARMOR_PIECES, Registry
from omnigym.envs.mcu.world import DAY, EFFECTS, MIDNIGHT, NIGHT, NOON, WEATHERS, MCUWorld

TIMES = {"day": DAY, "night": NIGHT, "noon": NOON, "midnight": MIDNIGHT}
ARMOR_SLOTS = dict(
    zip(("armor.head", "armor.chest", "armor.legs", "armor.feet"), ARMOR_PIECES, strict=True)
)
FILL_MODES = ("replace", "destroy", "keep", "hollow", "outline")
POINTS_PER_LEVEL = 7


@dataclass(frozen=True)
class Coordinate:
    """One axis of a position: ``value`` nodes, relative to the player when ``relative``."""

    value: int
    relative: bool

    def resolve(self, base: int) -> int:
        return base + self.value if self.relative else self.value


@dataclass(frozen=True)
class Command:
    """A parsed init command: its verb and arguments, and where it was written."""

    verb: str
    args: tuple
    where: str = ""


def parse(text: str, where: str, registry: Registry) -> Command | None:
    """Parses one command; ``None`` (with a warning) when it names something unknown.

    ``where`` names the file and the command for messages; a malformed command raises
    ``ValueError`` naming it.
    """
    stripped = text.strip().lstrip("/")
    damage = re.search(r"\bDamage:(\d+)", stripped)
    while "{" in stripped:  # drop NBT tags, innermost first
        shorter = re.sub(r"\{[^{}]*\}", " ", stripped)
        if shorter == stripped:
            raise ValueError(f"{where}: unbalanced braces in {text!r}")
        stripped = shorter
    tokens = stripped.split()
    tokens = [token.removeprefix("minecraft:") for token in tokens]
    if tokens and tokens[0] == "execute":
        if "run" not in tokens:
            raise ValueError(f"{where}: 'execute' without 'run' in {text!r}")
        tokens = tokens[tokens.index("run") + 1 :]
    if not tokens:
        raise ValueError(f"{where}: empty command")
    verb, rest = tokens[0], tokens[1:]
    if verb not in _PARSERS:
        raise ValueError(
            f"{where}: unknown command {verb!r} in {text!r} (known: {', '.join(_PARSERS)})"
        )
    try:
        command = _PARSERS[verb](rest, where, registry)
    except (IndexError, ValueError) as error:
        if str(error).startswith(where):
            raise
        raise ValueError(f"{where}: cannot parse {text!r}: {error}") from None
    if command is not None and command.verb == "give" and damage:
        command = replace(command, args=(*command.args, int(damage.group(1))))
    return None if command is None else replace(command, where=where)


def _known(name: str, kind: str, names, where: str) -> bool:
    if name in names:
        return True
    warnings.warn(f"{where}: unknown {kind} {name!r}; command skipped", stacklevel=4)
    return False


def _coordinates(tokens: list[str]) -> tuple[Coordinate, ...]:
    if len(tokens) != 3:
        raise ValueError("expected three coordinates")
    out = []
    for token in tokens:
        if token.startswith("^"):
            raise ValueError("local coordinates (^) are not supported")
        relative = token.startswith("~")
        number = token[1:] if relative else token
        out.append(Coordinate(int(float(number)) if number else 0, relative))
    return tuple(out)


def _count(tokens: list[str], index: int) -> int:
    count = int(tokens[index]) if len(tokens) > index else 1
    if count < 1:
        raise ValueError(f"count must be positive, got {count}")
    return count


def _give(rest, where, registry):
    item = rest[1]
    return (
        Command("give", (item, _count(rest, 2)))
        if _known(item, "item", registry.items, where)
        else None
    )


def _replaceitem(rest, where, registry):
    if rest[0] != "entity":
        raise ValueError("only 'replaceitem entity' is supported")
    slot, item = rest[2], rest[3]
    if not (
        slot in ARMOR_SLOTS
        or re.fullmatch(
            r"(weapon\.(main|off)hand|hotbar\.[0-8]"
            r"|inventory\.([0-9]|1[0-9]|2[0-6]))",
            slot,
        )
    ):
        raise ValueError(f"unknown slot {slot!r}")
    if not _known(item, "item", registry.items, where):
        return None
    return Command("replaceitem", (slot, item, _count(rest, 4)))


def _summon(rest, where, registry):
    mob = rest[0]
    where_at = _coordinates(rest[1:4]) if len(rest) >= 4 else _coordinates(["~", "~", "~"])
    return Command("summon", (mob, where_at)) if _known(mob, "mob", registry.mobs, where) else None


def _setblock(rest, where, registry):
    block = rest[3]
    if not _known(block, "block", registry.blocks, where):
        return None
    return Command("setblock", (_coordinates(rest[:3]), block))


def _fill(rest, where, registry):
    block = rest[6]
    mode = rest[7] if len(rest) > 7 else "replace"
    if mode not in FILL_MODES:
        raise ValueError(f"unknown fill mode {mode!r}")
    if not _known(block, "block", registry.blocks, where):
        return None
    return Command("fill", (_coordinates(rest[:3]), _coordinates(rest[3:6]), block, mode))


def _time(rest, where, registry):
    if rest[0] == "set":
        value = TIMES.get(rest[1])
        return Command("time", (int(rest[1]) if value is None else value,))
    if rest[0] == "add":
        return Command("time_add", (int(rest[1]),))
    raise ValueError("expected 'time set' or 'time add'")


def _weather(rest, where, registry):
    if rest[0] not in WEATHERS:
        raise ValueError(f"weather must be one of {WEATHERS}")
    return Command("weather", (rest[0],))


def _effect(rest, where, registry):
    if rest[0] == "clear":
        return Command("effect_clear", ())
    if rest[0] != "give":
        raise ValueError("expected 'effect give' or 'effect clear'")
    effect = rest[2]
    seconds = int(rest[3]) if len(rest) > 3 else 30
    if not _known(effect, "effect", EFFECTS, where):
        return None
    return Command("effect", (effect, seconds))


def _tp(rest, where, registry):
    coordinates = rest[1:4] if rest and rest[0].startswith("@") else rest[:3]
    return Command("tp", (_coordinates(coordinates),))


def _clear(rest, where, registry):
    if len(rest) > 1:
        item = rest[1]
        return Command("clear", (item,)) if _known(item, "item", registry.items, where) else None
    return Command("clear", (None,))


def _experience(rest, where, registry):
    if rest[0] != "add":
        raise ValueError("expected 'experience add <target> <n> [levels|points]'")
    amount, unit = int(rest[2]), rest[3] if len(rest) > 3 else "points"
    if unit not in ("levels", "points"):
        raise ValueError(f"unit must be levels or points, got {unit!r}")
    return Command("experience", (amount if unit == "levels" else amount // POINTS_PER_LEVEL,))


def _fillbiome(rest, where, registry):
    biome = rest[6]
    if not _known(biome, "biome", registry.biomes, where):
        return None
    return Command("fillbiome", (_coordinates(rest[:3]), _coordinates(rest[3:6]), biome))


_PARSERS = {
    "give": _give,
    "replaceitem": _replaceitem,
    "summon": _summon,
    "setblock": _setblock,
    "fill": _fill,
    "time": _time,
    "weather": _weather,
    "effect": _effect,
    "tp": _tp,
    "teleport": _tp,
    "clear": _clear,
    "experience": _experience,
    "xp": _experience,
    "fillbiome": _fillbiome,
}


def apply(world: MCUWorld, command: Command) -> None:
    """Runs a parsed command on ``world`` (coordinates relative to the player's node). A
    summon, setblock or tp outside the arena is skipped with a warning naming the command."""
    verb, args = command.verb, command.args
    base = world.position
    if verb in ("summon", "setblock", "tp"):
        cell = _cell(args[0] if verb != "summon" else args[1], base)
        if not world.grid.contains(*cell):
            warnings.warn(f"{command.where}: {cell} is outside the arena; skipped", stacklevel=2)
            return
    if verb == "give":
        _give_worn(world, *args)
    elif verb == "replaceitem":
        _replace_slot(world, *args)
    elif verb == "summon":
        world.summon(args[0], cell)
    elif verb == "setblock":
        world.grid.set(*cell, args[1])
    elif verb == "fill":
        _fill_box(world, _cell(args[0], base), _cell(args[1], base), args[2], args[3])
    elif verb == "time":
        world.time = args[0] % 24000
    elif verb == "time_add":
        world.time = (world.time + args[0]) % 24000
    elif verb == "weather":
        world.weather = args[0]
    elif verb == "effect":
        world.effects[args[0]] = args[1] * 4
    elif verb == "effect_clear":
        world.effects.clear()
    elif verb == "tp":
        world.teleport(cell)
    elif verb == "experience":
        world.levels = max(0, world.levels + args[0])
    elif verb == "fillbiome":
        lo, hi = _cell(args[0], base), _cell(args[1], base)
        world.set_biome((lo[0], lo[2]), (hi[0], hi[2]), args[2])
    elif verb == "clear":
        inventory = world.player.inventory
        for slot, content in enumerate(inventory.slots):
            if content is not None and args[0] in (None, content[0]):
                inventory.slots[slot] = None
                world.wear[slot] = 0


def _give_worn(world: MCUWorld, item: str, count: int, damage: int = 0) -> None:
    """Gives ``count`` of ``item``; ``damage`` wears each new tool by that many uses."""
    before = {i for i, c in enumerate(world.player.inventory.slots) if c and c[0] == item}
    world.give(item, count)
    if damage:
        for slot, content in enumerate(world.player.inventory.slots):
            if content is not None and content[0] == item and slot not in before:
                world.wear[slot] = max(1, world.wear[slot] - damage)


def _cell(coordinates: tuple[Coordinate, ...], base: tuple[int, int, int]) -> tuple[int, ...]:
    return tuple(c.resolve(b) for c, b in zip(coordinates, base, strict=True))


def _replace_slot(world: MCUWorld, slot: str, item: str, count: int) -> None:
    if slot in ARMOR_SLOTS:
        world.armor[ARMOR_SLOTS[slot]] = (item, world.registry.items[item].durability)
        return
    index = {"weapon.mainhand": world.player.inventory.selected, "weapon.offhand": 8}.get(slot)
    if index is None:
        kind, number = slot.split(".")
        index = int(number) + (9 if kind == "inventory" else 0)
    info = world.registry.items[item]
    world.player.inventory.slots[index] = (item, min(count, info.stack))
    world.wear[index] = info.durability


def _fill_box(world: MCUWorld, lo, hi, block: str, mode: str) -> None:
    lo, hi = tuple(map(min, lo, hi)), tuple(map(max, lo, hi))
    for x in range(lo[0], hi[0] + 1):
        for y in range(lo[1], hi[1] + 1):
            for z in range(lo[2], hi[2] + 1):
                if not world.grid.contains(x, y, z):
                    continue
                edge = x in (lo[0], hi[0]) or y in (lo[1], hi[1]) or z in (lo[2], hi[2])
                if mode == "keep" and world.block((x, y, z)) != "air":
                    continue
                if mode in ("hollow", "outline") and not edge:
                    if mode == "hollow":
                        world.grid.set(x, y, z, "air")
                    continue
                world.grid.set(x, y, z, block)
