"""Brewing, enchanting and the anvil on MCU's world: stations in range, costs, outcomes.

Follows Minecraft 1.16 as MCU's Craft Tools and Others tasks use it (Zheng et al., ICML 2025;
``docs/mcu.md``), with the rules as data in ``data/stations.yaml``:

- ``brew <potion> [n<=3]`` at a brewing stand within 4 nodes turns n base potions and one
  ingredient into n potions in 80 ticks; blaze powder is the fuel (one powder, 20 brews).
- ``enchant <item> with <enchantment>`` at an enchanting table within 4 nodes spends the
  enchantment's lapis and experience levels; an item takes each enchantment once.
- ``repair <item>``, ``rename <item> to <name>``, ``combine <item> and <item>`` at an anvil
  within 4 nodes spend experience levels; repair also one unit of the item's material per
  quarter of its durability restored (as many as needed, up to full).

Departures: no enchanting-table offers drawn at random (the player names the enchantment) and no
growing anvil costs; enchantments and names are kept per inventory slot (they move with the
stack when it is wielded) and shown in the report.
"""

from __future__ import annotations

import math

from omnigym.envs.mcu.crafting import STATION_RANGE, choose_ingredients, station_near
from omnigym.envs.mcu.episode_log import Act
from omnigym.envs.mcu.world import MCUWorld

MAX_BREW = 3


def _need_station(world: MCUWorld, station: str) -> str | None:
    if not station_near(world, station):
        return f"needs a {station.replace('_', ' ')} within {STATION_RANGE} nodes"
    return None


def brew(world: MCUWorld, potion: str, count: int) -> str | None:
    """Brews ``count`` of ``potion``; returns why not, or ``None`` on success."""
    recipe = world.registry.potions.get(potion)
    if recipe is None or recipe.base is None:
        return f"{potion} cannot be brewed"
    if not 1 <= count <= MAX_BREW:
        return f"a brewing stand brews 1 to {MAX_BREW} potions at once"
    fuel = world.registry.stations["brew_fuel"]
    short = [
        f"{n} {item}"
        for item, n in ((recipe.base, count), (recipe.ingredient, 1))
        if world.count(item) < n
    ]
    if world.brew_fuel == 0 and not world.count(fuel["item"]):
        short.append(f"1 {fuel['item']} (fuel)")
    if short:
        return f"brewing {potion} needs {', '.join(short)}"
    if reason := _need_station(world, "brewing_stand"):
        return reason
    consumed = [(recipe.base, count), (recipe.ingredient, 1)]
    if world.brew_fuel == 0:
        world.take(fuel["item"], 1)
        world.brew_fuel = fuel["brews"]
        consumed.append((fuel["item"], 1))
    world.brew_fuel -= 1
    world.take(recipe.base, count)
    world.take(recipe.ingredient, 1)
    world.acts.append(Act("brew", potion, consumed=tuple(sorted(consumed))))
    if not world.pass_ticks(world.registry.stations["brew_ticks"]):
        return None
    world.give(potion, count)
    world.events["brewed", potion] += count
    world.log.append(f"brewed {count} {potion}")
    return None


def fits(world: MCUWorld, item: str, enchantment: str) -> bool:
    info = world.registry.items[item]
    return (info.tool or info.slot or item) in world.registry.enchantments[enchantment].fits


def enchant(world: MCUWorld, item: str, enchantment: str) -> str | None:
    """Enchants one ``item`` in the inventory; returns why not, or ``None`` on success."""
    info = world.registry.enchantments.get(enchantment)
    if info is None:
        return f"unknown enchantment {enchantment!r}"
    if not fits(world, item, enchantment):
        return f"{enchantment} does not fit {item}"
    slot = _slot(world, item, lambda s: enchantment not in world.enchantments.get(s, ()))
    if slot is None:
        return f"no {item} without {enchantment} in the inventory"
    if world.count("lapis_lazuli") < info.lapis or world.levels < info.levels:
        return f"{enchantment} costs {info.lapis} lapis lazuli and {info.levels} levels"
    if reason := _need_station(world, "enchanting_table"):
        return reason
    world.take("lapis_lazuli", info.lapis)
    world.levels -= info.levels
    world.enchantments[slot] = (*world.enchantments.get(slot, ()), enchantment)
    world.events["enchanted", item, enchantment] += 1
    world.events["enchanted", item] += 1
    world.acts.append(Act("enchant", item, consumed=(("lapis_lazuli", info.lapis),)))
    world.log.append(f"enchanted {item} with {enchantment}")
    world.tick()
    return None


def _slot(world: MCUWorld, item: str, ok=lambda slot: True) -> int | None:
    for slot, content in enumerate(world.player.inventory.slots):
        if content is not None and content[0] == item and ok(slot):
            return slot
    return None


def _anvil(world: MCUWorld, operation: str) -> str | None:
    cost = world.registry.stations["anvil"]["levels"][operation]
    if world.levels < cost:
        return f"{operation} costs {cost} experience levels, you have {world.levels}"
    return _need_station(world, "anvil")


def repair_material(world: MCUWorld, item: str) -> str | None:
    info = world.registry.items[item]
    material = item.split("_")[0] if info.slot else info.tier
    return world.registry.stations["anvil"]["materials"].get(material)


def repair(world: MCUWorld, item: str) -> str | None:
    """Repairs the most worn ``item`` with its material; returns why not, or ``None``."""
    durability = world.registry.items[item].durability
    material = repair_material(world, item)
    if not durability or material is None:
        return f"{item} cannot be repaired"
    slots = [s for s, c in enumerate(world.player.inventory.slots) if c and c[0] == item]
    slot = min(slots, key=lambda s: (world.wear[s], s), default=None)
    if slot is None or world.wear[slot] >= durability:
        return f"no worn {item} in the inventory"
    share = world.registry.stations["anvil"]["repair_share"]
    units = math.ceil((durability - world.wear[slot]) / (share * durability) - 1e-9)
    chosen = None
    for n in range(units, 0, -1):
        chosen = choose_ingredients(world, ((material, 1),), n)
        if chosen is not None:
            break
    if chosen is None:
        return f"repairing {item} needs {material.lstrip('#')}"
    if reason := _anvil(world, "repair"):
        return reason
    world.levels -= world.registry.stations["anvil"]["levels"]["repair"]
    for name, n in chosen.items():
        world.take(name, n)
    restored = round(share * durability * sum(chosen.values()))
    world.wear[slot] = min(durability, world.wear[slot] + restored)
    world.events["repaired", item] += 1
    world.acts.append(Act("repair", item, consumed=tuple(sorted(chosen.items()))))
    world.log.append(f"repaired {item}")
    world.tick()
    return None


def rename(world: MCUWorld, item: str, name: str) -> str | None:
    slot = _slot(world, item)
    if slot is None:
        return f"no {item} in the inventory"
    if not name:
        return "rename <item> to <name>"
    if reason := _anvil(world, "rename"):
        return reason
    world.levels -= world.registry.stations["anvil"]["levels"]["rename"]
    world.names[slot] = name
    world.events["renamed", item] += 1
    world.acts.append(Act("rename", item))
    world.log.append(f"renamed {item} to {name!r}")
    world.tick()
    return None


def combine(world: MCUWorld, item: str, other: str) -> str | None:
    """Combines two of the same worn tool into one; returns why not, or ``None``."""
    durability = world.registry.items[item].durability
    if item != other or not durability:
        return "combine needs two of the same tool or armour piece"
    slots = [s for s, c in enumerate(world.player.inventory.slots) if c and c[0] == item]
    if len(slots) < 2:
        return f"combine needs two {item}"
    if reason := _anvil(world, "combine"):
        return reason
    world.levels -= world.registry.stations["anvil"]["levels"]["combine"]
    keep, spent = slots[0], slots[1]
    bonus = world.registry.stations["anvil"]["combine_bonus"] * durability
    total = world.wear[keep] + world.wear[spent] + round(bonus)
    world.player.inventory.slots[spent] = None
    world.wear[spent] = 0
    world.wear[keep] = min(durability, total)
    world.enchantments[keep] = tuple(
        dict.fromkeys(world.enchantments.pop(keep, ()) + world.enchantments.pop(spent, ()))
    )
    world.events["combined", item] += 1
    world.acts.append(Act("combine", item, consumed=((item, 1),)))
    world.log.append(f"combined two {item}")
    world.tick()
    return None
