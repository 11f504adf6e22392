"""MCU task templates for animals, villagers, farming and tools: ``feed_<animal>``,
``tame_<mob>``, ``lead_<animal>``, ``trap_<animal>_with_boat``, ``sell_<item>``,
``buy_<item>``, ``plant_<seed>``, ``drink_<potion>``, ``use_<tool>_on_<target>`` (parameters in
``data/task_templates.yaml``; see :mod:`omnigym.envs.mcu.generate`)."""

from __future__ import annotations

from collections.abc import Iterator

from omnigym.envs.mcu.registries import Registry
from omnigym.envs.mcu.template_kit import article, at, milestones, one_item_task, task, words

SUFFIXES = ("", "_far", "_farther")


def _at_mob(params, name, subcategory, text, mob, gives, success, oracle, items, **extra):
    """One variant per spot of a task done facing ``mob`` (summoned at the spot)."""
    for i, spot in enumerate(params["spots"]):
        yield task(
            name + SUFFIXES[i],
            params,
            subcategory,
            text,
            [*gives, f"summon {mob} {at(spot)}"],
            success,
            milestones([f"near({mob}, 2)", success], 0.3),
            {"items": items, "mobs": [mob]},
            oracle,
            **extra,
        )


def feed_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for mob, care in reg.care.items():
        for i, food in enumerate(care.food):
            yield from _at_mob(
                params,
                f"feed_{mob}" + (f"_with_{food}" if i else ""),
                params["subcategory"],
                f"Feed the {mob} {article(food)}.",
                mob,
                [f"give @s {food} 2"],
                f"fed({mob}) >= 1",
                {"solver": "feed", "mob": mob, "item": food},
                [food],
            )


def tame_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for mob, care in reg.care.items():
        if care.tame_with is None:
            continue
        riding = care.tame_with == "ride"
        how = "by riding it" if riding else f"with {words(care.tame_with)}"
        gives = [] if riding else [f"give @s {care.tame_with} {params['tries']}"]
        yield from _at_mob(
            params,
            f"tame_{mob}",
            params["subcategory"],
            f"Tame the {mob} {how}.",
            mob,
            gives,
            f"tamed({mob}) >= 1",
            {"solver": "tame", "mob": mob, "item": care.tame_with},
            [] if riding else [care.tame_with],
        )


def lead_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    yield from _hold_tasks(reg, params, "leash", "lead", "lead_{}", "Put a lead on the {}.")


def trap_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    yield from _hold_tasks(
        reg, params, "boat", "oak_boat", "trap_{}_with_boat", "Trap the {} in a boat."
    )


def _hold_tasks(reg, params, rule: str, item: str, name: str, text: str) -> Iterator[dict]:
    """Use ``item`` once on each mob whose care ``rule`` (``leash``, ``boat``) allows it."""
    counter = {"leash": "leashed", "boat": "trapped"}[rule]
    for mob, care in reg.care.items():
        if getattr(care, rule):
            yield from _at_mob(
                params,
                name.format(mob),
                params["subcategory"],
                text.format(mob),
                mob,
                [f"give @s {item} 1"],
                f"{counter}({mob}) >= 1",
                {"solver": "use_on_mob", "mob": mob, "item": item},
                [item],
            )


def fence_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Pen a mob in with a fence (``trap_<mob>_with_fence``: it stands in a fenced pen whose
    mouth is open) and lead a mob to a fence post and tie it there (``lead_<mob>_to_fence``)."""
    for mob, care in reg.care.items():
        if not care.leash:
            continue
        for i, depth in enumerate(params["pen_depths"]):
            pen = [f"summon {mob} ~0 ~0 ~{depth + 1}"]
            pen += [f"setblock ~{x} ~0 ~{z + depth} oak_fence" for x, z in params["pen"]]
            success = f"trapped({mob}) >= 1"
            yield task(
                f"trap_{mob}_with_fence" + SUFFIXES[i],
                params,
                "Trap Animals",
                f"Pen the {mob} in: close the open side of its fence pen with a fence.",
                ["give @s oak_fence 2", *pen],
                success,
                milestones([f"near({mob}, 4)", success], 0.3),
                {"items": ["oak_fence"], "blocks": ["oak_fence"], "mobs": [mob]},
                {"solver": "fence_in", "mob": mob},
            )
        for i, (spot, post) in enumerate(params["leads"]):
            success = f"tied({mob}) >= 1"
            yield task(
                f"lead_{mob}_to_fence" + SUFFIXES[i],
                params,
                "Guide Animals",
                f"Lead the {mob} to the fence post and tie it there.",
                ["give @s lead 1", f"summon {mob} {at(spot)}", f"setblock {at(post)} oak_fence"],
                success,
                milestones([f"leashed({mob}) >= 1", success], 0.4),
                {"items": ["lead"], "blocks": ["oak_fence"], "mobs": [mob]},
                {"solver": "tie", "mob": mob},
            )


def trade_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Sell each item a villager buys (``sell_<item>``) and buy each item one sells
    (``buy_<item>``), once and twice, from a villager summoned nearby."""
    for villager, table in reg.trades.items():
        deals = [("sell", item, count) for item, count in table.buys.items()]
        deals += [("buy", item, price) for item, (price, _) in table.sells.items()]
        for verb, item, amount in deals:
            for times in params["times"]:
                pay = "emerald" if verb == "buy" else item
                suffix = f"_x{times}" if times > 1 else ""
                spot = params["spots"][times > 1]
                what = article(item) if verb == "buy" and times == 1 else words(item)
                text = (
                    f"Sell {words(item)} to the {villager} for an emerald"
                    if verb == "sell"
                    else f"Buy {what} from the {villager}"
                ) + (f", {times} times." if times > 1 else ".")
                success = f"traded({item}) >= {times}"
                yield task(
                    f"{verb}_{item}{suffix}",
                    params,
                    "Sell Goods" if verb == "sell" else "Buy Items",
                    text,
                    [f"give @s {pay} {amount * times}", f"summon {villager} {at(spot)}"],
                    success,
                    milestones([f"near({villager}, 3)", success], 0.3),
                    {"items": sorted({item, "emerald"}), "mobs": [villager]},
                    {"solver": "trade", "item": item, "times": times},
                )


def plant_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Plant seeds on farmland in front, or (``_with_<hoe>``) on grass tilled first."""
    for seed in reg.seeds:
        for count in params["counts"]:
            for hoe in [None, *params["hoes"]]:
                if hoe is None and count > 1:
                    continue
                name = f"plant_{seed}" + (f"_x{count}" if count > 1 else "")
                name += f"_with_{hoe}" if hoe else ""
                init = [f"give @s {seed} {count}"]
                if hoe:
                    init.append(f"give @s {hoe} 1")
                else:
                    init.append(f"setblock {at(params['farmland_spot'])} farmland")
                marks = [f"planted({seed}) >= {k}" for k in range(1, count + 1)]
                how = f", tilling the grass with {article(hoe)} first" if hoe else ""
                yield task(
                    name,
                    params,
                    params["subcategory"],
                    f"Plant {count} {words(seed)} on farmland{how}.",
                    init,
                    f"planted({seed}) >= {count}",
                    milestones(marks),
                    {"items": [seed] + ([hoe] if hoe else []), "blocks": ["farmland"]},
                    {"solver": "plant", "seed": seed, "count": count, "hoe": hoe},
                )


def drink_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for potion in reg.potions:
        oracle = {"solver": "drink", "potion": potion}
        text = f"Drink {article(potion)}."
        yield one_item_task(params, f"drink_{potion}", text, potion, "drank", oracle)


def use_tool_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Shears on a sheep, a bucket on a cow; a bucket or a bottle on a pond; a hoe on grass."""
    for tool, mob in params["on_mobs"].items():
        yield from _at_mob(
            params,
            f"use_{tool}_on_{mob}",
            params["subcategory"],
            f"Use the {words(tool)} on the {mob}.",
            mob,
            [f"give @s {tool} 1"],
            f"used({tool}) >= 1",
            {"solver": "use_on_mob", "mob": mob, "item": tool},
            [tool],
        )
    lo, hi = params["pond"]
    for tool in params["on_water"]:
        yield task(
            f"use_{tool}_on_water",
            params,
            params["subcategory"],
            f"Fill the {words(tool)} with water from the pond.",
            [f"give @s {tool} 1", f"fill {at(lo)} {at(hi)} water"],
            f"used({tool}) >= 1",
            milestones(["near(water, 2)", f"used({tool}) >= 1"], 0.3),
            {"items": [tool], "blocks": ["water"]},
            {"solver": "use_on_water", "item": tool},
        )
    for hoe in params["hoes"]:
        yield task(
            f"use_{hoe}_on_grass",
            params,
            params["subcategory"],
            f"Till the grass into farmland with {article(hoe)}.",
            [f"give @s {hoe} 1"],
            f"used({hoe}) >= 1",
            milestones([f"used({hoe}) >= 1"]),
            {"items": [hoe], "blocks": ["grass_block", "farmland"]},
            {"solver": "till", "hoe": hoe},
        )


TEMPLATES = {
    "feed": feed_tasks,
    "drink": drink_tasks,
    "plant": plant_tasks,
    "use_tool": use_tool_tasks,
    "trade": trade_tasks,
    "tame": tame_tasks,
    "lead": lead_tasks,
    "trap": trap_tasks,
    "fence": fence_tasks,
}
