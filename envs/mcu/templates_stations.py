"""MCU task templates for the stations and the anvil: ``brew_<potion>``, ``enchant_<item>_with_
<enchantment>``, ``repair_<item>``, ``rename_<item>``, ``combine_<item>`` (parameters in
``data/task_templates.yaml``; see :mod:`omnigym.envs.mcu.generate`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator

from omnigym.envs.mcu.planner import plan
from omnigym.envs.mcu.registries import ARMOR_PIECES, Registry
from omnigym.envs.mcu.template_kit import article, at, milestones, task, words


def _gives(items: Counter) -> list[str]:
    return [f"give @s {name} {n}" for name, n in sorted(items.items())]


def brew_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Brew ``count`` of each brewable potion from water bottles, the ingredients of its chain
    and blaze powder, at a stand nearby or (``_no_stand``) one crafted at a nearby table."""
    fuel = reg.stations["brew_fuel"]["item"]
    for potion, info in reg.potions.items():
        if info.base is None:
            continue
        chain = [potion]
        while reg.potions[chain[-1]].base is not None:
            chain.append(reg.potions[chain[-1]].base)
        variants = [(c, True) for c in params["counts"]] + [(1, False)]
        for i, (count, stand) in enumerate(variants):
            name = f"brew_{potion}"
            if i:
                name += f"_x{count}" if stand else "_no_stand"
            give = Counter({chain[-1]: count, fuel: 1})
            for step in chain[:-1]:
                give[reg.potions[step].ingredient] += 1
            if stand:
                scene = [f"setblock {at(params['stand_spot'])} brewing_stand"]
            else:
                give += plan(reg, "brewing_stand", 1)[1]
                scene = [f"setblock {at(params['table_spot'])} crafting_table"]
            marks = [f"brewed({step}) >= {count}" for step in reversed(chain[:-1])]
            text = f"Brew {article(potion) if count == 1 else f'{count} {words(potion)}s'}."
            if not stand:
                text += " Make a brewing stand first."
            yield task(
                name,
                params,
                params["subcategory"],
                text,
                _gives(give) + scene,
                f"brewed({potion}) >= {count}",
                milestones(marks, 0.5 if len(marks) > 1 else None),
                {"items": sorted(set(give) | {potion}), "blocks": ["brewing_stand"]},
                {"solver": "brew", "potion": potion, "count": count},
            )


def enchant_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for enchantment, items in params["targets"].items():
        info = reg.enchantments[enchantment]
        for item in items:
            init = [
                f"give @s {item} 1",
                f"give @s lapis_lazuli {info.lapis}",
                f"experience add @s {info.levels} levels",
                f"setblock {at(params['table_spot'])} enchanting_table",
            ]
            yield task(
                f"enchant_{item}_with_{enchantment}",
                params,
                params["subcategory"],
                f"Enchant {article(item)} with {words(enchantment)}.",
                init,
                f"enchanted({item}, {enchantment}) >= 1",
                milestones(["near(enchanting_table, 2)", f"enchanted({item}, {enchantment})"]),
                {"items": [item, "lapis_lazuli"], "blocks": ["enchanting_table"]},
                {"solver": "enchant", "item": item, "enchantment": enchantment},
            )


def anvil_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Repair, rename and combine at an anvil nearby, with just the levels each costs."""
    levels = reg.stations["anvil"]["levels"]
    share = reg.stations["anvil"]["repair_share"]
    materials = reg.stations["anvil"]["materials"]
    spot = f"setblock {at(params['anvil_spot'])} anvil"
    repair = params["repair"]
    worn = [f"{t}_{k}" for t in repair["tiers"] for k in repair["tools"]]
    worn += [f"{m}_{p}" for m in repair["armor"] for p in ARMOR_PIECES]
    for item in worn:
        durability = reg.items[item].durability
        damage = math.floor(params["wear"] * durability)
        units = math.ceil(damage / (share * durability) - 1e-9)
        material = materials[item.split("_")[0]]
        yield _anvil_task(
            f"repair_{item}",
            params,
            "Repair Tools",
            f"Repair the worn {words(item)} at the anvil.",
            [f"give @s {item}{{Damage:{damage}}} 1", f"give @s {material} {units}"],
            levels["repair"],
            spot,
            f"repaired({item}) >= 1",
            {"solver": "anvil", "operation": "repair", "item": item},
            [item, material],
        )
    for item, new_name in params["rename"].items():
        yield _anvil_task(
            f"rename_{item}",
            params,
            "Rename Items",
            f"Rename the {words(item)} to {new_name} at the anvil.",
            [f"give @s {item} 1"],
            levels["rename"],
            spot,
            f"renamed({item}) >= 1",
            {"solver": "anvil", "operation": "rename", "item": item, "name": new_name},
            [item],
        )
    combine = params["combine"]
    for item in (f"{t}_{k}" for t in combine["tiers"] for k in combine["tools"]):
        damage = math.floor(params["wear"] * reg.items[item].durability)
        yield _anvil_task(
            f"combine_{item}",
            params,
            "Combine Tools",
            f"Combine the two worn {words(item)}s into one at the anvil.",
            [f"give @s {item}{{Damage:{damage}}} 1"] * 2,
            levels["combine"],
            spot,
            f"combined({item}) >= 1",
            {"solver": "anvil", "operation": "combine", "item": item},
            [item],
        )


def _anvil_task(name, params, subcategory, text, gives, levels, spot, success, oracle, items):
    init = [*gives, f"experience add @s {levels} levels", spot]
    return task(
        name,
        params,
        subcategory,
        text,
        init,
        success,
        milestones(["near(anvil, 3)", success]),
        {"items": items, "blocks": ["anvil"]},
        oracle,
    )


TEMPLATES = {"brew": brew_tasks, "enchant": enchant_tasks, "anvil": anvil_tasks}
