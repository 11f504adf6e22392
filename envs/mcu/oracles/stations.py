"""The MCU oracles for brewing, enchanting and the anvil: reach (or place) the station, then
brew each potion of the chain from the lowest missing base, enchant, repair, rename, combine."""

from __future__ import annotations

from typing import Any

from omnigym.envs.mcu.crafting import STATION_RANGE
from omnigym.envs.mcu.oracles.navigation import Commands
from omnigym.envs.mcu.oracles.solvers import reach_station
from omnigym.envs.mcu.world import MCUWorld


def at_station(world: MCUWorld, station: str) -> Commands:
    if not world.cells_of(station, STATION_RANGE):
        yield from reach_station(world, station)


def brew(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Brews ``count`` of ``potion``, brewing its missing bases first."""
    potions = world.registry.potions
    count = params.get("count", 1)
    chain = [params["potion"]]
    while potions[chain[-1]].base is not None and world.count(chain[-1]) < count:
        chain.append(potions[chain[-1]].base)
    yield from at_station(world, "brewing_stand")
    for potion in reversed(chain[:-1]):
        yield f"brew {potion} {count}"


def enchant(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield from at_station(world, "enchanting_table")
    yield f"enchant {params['item']} with {params['enchantment']}"


def anvil(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """One anvil operation: ``repair``, ``rename`` (to ``name``) or ``combine``."""
    yield from at_station(world, "anvil")
    item = params["item"]
    yield {
        "repair": f"repair {item}",
        "rename": f"rename {item} to {params.get('name', '')}",
        "combine": f"combine {item} and {item}",
    }[params["operation"]]


SOLVERS = {"brew": brew, "enchant": enchant, "anvil": anvil}
