"""MCU's data registries: blocks, items, recipes (crafting, smelting, brewing), enchantments,
anvil rules, mobs with their care rules, villager trades and biomes.

Follows the game content that MCU (Zheng et al., "MCU: An Evaluation Framework for Open-Ended
Game Agents", ICML 2025; ``docs/mcu.md``) draws its tasks from, Minecraft 1.16 as MineStudio runs
it, reduced to a subset that grows with the task pool. Everything here is read from
``data/*.yaml``: adding a block, item, recipe or mob is editing data.

Block ids: MCU keeps its own block registry (``data/blocks.yaml``) instead of the Craft family's
Luanti-named materials, because tasks speak Minecraft (``oak_log``, ``diamond_ore``). The Craft
engine's ``MaterialTable`` takes any table of up to 125 materials plus its three reserved ids, so
MCU builds one from its blocks and the world grid holds MCU's content ids directly; ``air`` (126)
and ``ignore`` (127, outside the world) keep the engine's reserved ids. The ``voxels``
observation shows those ids unchanged, so no per-step translation is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

from omnigym.envs.craft.engine import AIR, IGNORE, UNKNOWN, Material, MaterialTable

DATA = Path(__file__).parent / "data"
TIER_LEVELS = {"none": 0, "wooden": 1, "golden": 1, "stone": 2, "iron": 3, "diamond": 4}
"""Digging strength of each tool tier (a block's ``tier`` is the lowest that makes it drop)."""
ARMOR_PIECES = ("helmet", "chestplate", "leggings", "boots")


@dataclass(frozen=True)
class Block:
    """One block kind of ``blocks.yaml``."""

    name: str
    id: int
    color: tuple[int, int, int]
    hardness: float
    tool: str
    tier: str
    drops: tuple[tuple[str, int], ...]
    solid: bool = True
    light: int = 0
    tags: frozenset[str] = frozenset()
    pointable: bool = True


@dataclass(frozen=True)
class Item:
    """One item: a block item, a tool, an armour piece or a plain item."""

    name: str
    stack: int = 64
    food: int = 0
    fuel: float = 0.0
    tool: str | None = None
    tier: str | None = None
    damage: int = 1
    speed: float = 1.0
    durability: int = 0
    armor: int = 0
    slot: str | None = None


@dataclass(frozen=True)
class Recipe:
    """A crafting recipe: ``n`` of ``output`` from ``inputs`` (item or ``#tag`` -> count)."""

    output: str
    inputs: tuple[tuple[str, int], ...]
    n: int = 1
    hand: bool = False


@dataclass(frozen=True)
class Mob:
    """One mob kind of ``mobs.yaml``."""

    name: str
    health: int
    behaviour: str
    damage: int = 0
    reach: int = 1
    cooldown: int = 4
    step_every: int = 2
    view: int = 16
    drops: tuple[tuple[str, int], ...] = ()
    tags: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Potion:
    """A potion: the effect drinking it gives (``None`` for base potions) and how it is brewed
    (``base`` + ``ingredient`` at a brewing stand; ``None`` for the water bottle)."""

    name: str
    effect: str | None = None
    seconds: int = 0
    base: str | None = None
    ingredient: str | None = None


@dataclass(frozen=True)
class Enchantment:
    """An enchantment: the tool kinds or armour pieces it fits and its lapis and level cost."""

    name: str
    fits: tuple[str, ...]
    lapis: int
    levels: int


@dataclass(frozen=True)
class Care:
    """How a mob is cared for: foods it takes, what tames it (an item, or ``ride``) and the
    chance per try, whether a lead ties it and a boat traps it, what shearing gives."""

    food: tuple[str, ...] = ()
    tame_with: str | None = None
    tame_chance: float = 0.0
    leash: bool = False
    boat: bool = False
    shear: str | None = None


@dataclass(frozen=True)
class Trades:
    """A villager's trade table: ``buys`` item -> count per emerald; ``sells`` item ->
    (emeralds, count)."""

    buys: dict[str, int]
    sells: dict[str, tuple[int, int]]


@dataclass(frozen=True)
class Biome:
    """A biome: its ground block and the blocks that stand on it."""

    name: str
    surface: str
    features: tuple[str, ...]


@dataclass
class Registry:
    """Every block, item, recipe and mob, with the engine's material table."""

    blocks: dict[str, Block]
    items: dict[str, Item]
    recipes: dict[str, Recipe]
    smelting: dict[str, str]
    fuels: dict[str, float]
    mobs: dict[str, Mob]
    tags: dict[str, tuple[str, ...]] = field(default_factory=dict)
    potions: dict[str, Potion] = field(default_factory=dict)
    enchantments: dict[str, Enchantment] = field(default_factory=dict)
    stations: dict = field(default_factory=dict)
    care: dict[str, Care] = field(default_factory=dict)
    trades: dict[str, Trades] = field(default_factory=dict)
    biomes: dict[str, Biome] = field(default_factory=dict)
    seeds: dict[str, str] = field(default_factory=dict)
    tillable: tuple[str, ...] = ()

    def __post_init__(self):
        self.item_names = tuple(self.items)
        self.item_index = {name: i for i, name in enumerate(self.item_names)}
        self.by_id = {block.id: block for block in self.blocks.values()}
        self.materials = MaterialTable(
            [
                Material(
                    block.name,
                    block.id,
                    block.color,
                    walkable=block.solid,
                    visible=block.solid,
                    pointable=block.pointable,
                    buildable_to=not block.pointable,
                    light_source=block.light,
                )
                for block in self.blocks.values()
            ]
            + [
                Material("unknown", UNKNOWN, (255, 0, 255)),
                Material(
                    "air",
                    AIR,
                    (0, 0, 0),
                    visible=False,
                    walkable=False,
                    pointable=False,
                    buildable_to=True,
                ),
                Material("ignore", IGNORE, (0, 0, 0), visible=False, pointable=False),
            ],
            items=self.item_names,
        )

    def members(self, ingredient: str) -> tuple[str, ...]:
        """The items an ingredient stands for: itself, or every member of a ``#tag``."""
        if ingredient.startswith("#"):
            return self.tags[ingredient[1:]]
        return (ingredient,)

    def can_harvest(self, block: Block, tool: str | None) -> bool:
        """Whether digging ``block`` with ``tool`` (``None``: the hand) gives its drops."""
        if block.tier == "none":
            return True
        item = self.items.get(tool) if tool else None
        if item is None or item.tool != block.tool:
            return False
        return TIER_LEVELS[item.tier] >= TIER_LEVELS[block.tier]

    def dig_ticks(self, block: Block, tool: str | None) -> int:
        """Ticks (0.25 s) to dig ``block`` with ``tool``, Minecraft's formula: hardness × 1.5 s
        (× 5 s when it cannot drop) divided by the tool's speed when the tool kind fits."""
        item = self.items.get(tool) if tool else None
        speed = item.speed if item is not None and item.tool == block.tool else 1.0
        seconds = block.hardness * (1.5 if self.can_harvest(block, tool) else 5.0) / speed
        return max(1, math.ceil(seconds / 0.25 - 1e-9))


def _load(name: str) -> dict:
    return yaml.safe_load((DATA / name).read_text(encoding="utf-8"))


@cache
def registry() -> Registry:
    """The packaged registry (read once per process)."""
    blocks = _blocks(_load("blocks.yaml")["blocks"])
    item_data = _load("items.yaml")
    items = _items(item_data, blocks)
    tags: dict[str, list[str]] = {}
    for block in blocks.values():
        for tag in sorted(block.tags):
            tags.setdefault(tag, []).append(block.name)
    recipe_data = _load("recipes.yaml")
    fuels = {name: item.fuel for name, item in items.items() if item.fuel}
    for ingredient, value in recipe_data["fuel_blocks"].items():
        members = tags[ingredient[1:]] if ingredient.startswith("#") else [ingredient]
        fuels.update(dict.fromkeys(members, value))
    mob_data = _load("mobs.yaml")
    mobs = {
        name: Mob(
            name,
            **{
                **fields,
                "drops": tuple(fields.get("drops", {}).items()),
                "tags": frozenset(fields.get("tags", ())),
            },
        )
        for name, fields in mob_data["mobs"].items()
    }
    stations = _load("stations.yaml")
    potions = {
        name: Potion(
            name,
            fields.get("effect"),
            fields.get("seconds", 0),
            fields.get("brew", {}).get("base"),
            fields.get("brew", {}).get("ingredient"),
        )
        for name, fields in stations["potions"].items()
    }
    items.update({name: Item(name, stack=1) for name in potions})
    registry = Registry(
        blocks=blocks,
        items=items,
        recipes=_recipes(recipe_data, items),
        smelting=dict(recipe_data["smelting"]),
        fuels=fuels,
        mobs=mobs,
        tags={tag: tuple(names) for tag, names in tags.items()},
        potions=potions,
        enchantments={
            name: Enchantment(name, tuple(f["fits"]), f["lapis"], f["levels"])
            for name, f in stations["enchantments"].items()
        },
        stations=stations,
        care={name: _care(fields) for name, fields in mob_data["care"].items()},
        trades={
            name: Trades(dict(f.get("buys", {})), {k: tuple(v) for k, v in f["sells"].items()})
            for name, f in _load("trades.yaml").items()
        },
        biomes={
            name: Biome(name, f["surface"], tuple(f["features"]))
            for name, f in _load("biomes.yaml").items()
        },
        seeds=dict(item_data["seeds"]),
        tillable=tuple(item_data["tillable"]),
    )
    _check(registry)
    return registry


def _care(fields: dict) -> Care:
    tame = fields.get("tame", {})
    return Care(
        food=tuple(fields.get("food", ())),
        tame_with=tame.get("with"),
        tame_chance=float(tame.get("chance", 0.0)),
        leash=bool(fields.get("leash", False)),
        boat=bool(fields.get("boat", False)),
        shear=fields.get("shear"),
    )


def _blocks(entries: list[dict]) -> dict[str, Block]:
    blocks = {}
    for entry in entries:
        drops = entry.get("drops")
        blocks[entry["name"]] = Block(
            name=entry["name"],
            id=entry["id"],
            color=tuple(entry["color"]),
            hardness=float(entry["hardness"]),
            tool=entry["tool"],
            tier=entry["tier"],
            drops=(
                ((entry["name"], 1),)
                if drops is None
                else tuple((d["item"], d.get("count", 1)) for d in drops)
            ),
            solid=entry.get("solid", True),
            light=entry.get("light", 0),
            tags=frozenset(entry.get("tags", ())),
            pointable=entry.get("pointable", True),
        )
    return blocks


def _items(data: dict, blocks: dict[str, Block]) -> dict[str, Item]:
    """Block items (every block that can be dug, except planted crops, which come from seeds),
    then tools, armour and plain items."""
    items = {
        name: Item(name)
        for name, block in blocks.items()
        if block.hardness >= 0 and "crop_plant" not in block.tags
    }
    for kind, damages in data["tools"].items():
        for (tier, tier_data), damage in zip(data["tiers"].items(), damages, strict=True):
            name = f"{tier}_{kind}"
            items[name] = Item(
                name,
                stack=1,
                tool=kind,
                tier=tier,
                damage=damage,
                speed=tier_data["speed"],
                durability=tier_data["durability"],
            )
    for material, armor in data["armor"].items():
        for piece, points in armor["points"].items():
            name = f"{material}_{piece}"
            items[name] = Item(
                name, stack=1, armor=points, slot=piece, durability=armor["durability"]
            )
    for name, fields in data["items"].items():
        items[name] = Item(name, **fields)
    return items


def _recipes(data: dict, items: dict[str, Item]) -> dict[str, Recipe]:
    """The listed crafting recipes, then the tool and armour recipes built from their shapes."""
    recipes = {
        output: Recipe(
            output, tuple(fields["in"].items()), fields.get("n", 1), fields.get("hand", False)
        )
        for output, fields in data["crafting"].items()
    }
    shapes = data["tool_recipes"]
    for material, ingredient in shapes["materials"].items():
        for kind, parts in {**shapes["tools"], **shapes["armor"]}.items():
            name = f"{material}_{kind}"
            if name in items:
                inputs = tuple(
                    (ingredient if part == "material" else part, count)
                    for part, count in parts.items()
                )
                recipes[name] = Recipe(name, inputs)
    return recipes


def _check(registry: Registry) -> None:
    """Every name a recipe, drop or smelt refers to exists (errors name the data file)."""
    known = set(registry.items)
    for recipe in registry.recipes.values():
        for ingredient, _ in recipe.inputs:
            if not all(member in known for member in registry.members(ingredient)):
                raise ValueError(f"recipes.yaml: {recipe.output} needs unknown {ingredient}")
    for source, output in registry.smelting.items():
        if source not in known or output not in known:
            raise ValueError(f"recipes.yaml: smelting {source} -> {output} names an unknown item")
    for block in registry.blocks.values():
        for item, _ in block.drops:
            if item not in known:
                raise ValueError(f"blocks.yaml: {block.name} drops unknown item {item}")
    for mob in registry.mobs.values():
        for item, _ in mob.drops:
            if item not in known:
                raise ValueError(f"mobs.yaml: {mob.name} drops unknown item {item}")
    for mob, care in registry.care.items():
        items = [*care.food, *(i for i in (care.tame_with, care.shear) if i not in (None, "ride"))]
        for item in items if mob in registry.mobs else [mob]:
            if item not in known:
                raise ValueError(f"mobs.yaml: care of {mob} names unknown {item}")
    for potion in registry.potions.values():
        for item in (potion.base, potion.ingredient):
            if item is not None and item not in known:
                raise ValueError(f"stations.yaml: {potion.name} needs unknown {item}")
    for name, trades in registry.trades.items():
        for item in (*trades.buys, *trades.sells):
            if "villager" not in registry.mobs[name].tags or item not in known:
                raise ValueError(f"trades.yaml: {name} trades unknown {item}")
    for biome in registry.biomes.values():
        if not all(b in registry.blocks for b in (biome.surface, *biome.features)):
            raise ValueError(f"biomes.yaml: {biome.name} names an unknown block")
