"""The MCU task generator: templates × registries → task files, kept only if the oracle solves
them.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) has an LLM write task configs and refines them by
running them in the game. Here templates (one function each below, their parameter lists in
``data/task_templates.yaml``) expand over the block, item, recipe and mob registries; every
candidate is played by its scripted oracle on each verification seed, simple and hard
(:mod:`omnigym.envs.mcu.difficulty`), and only the tasks solved everywhere are written to
``data/tasks/`` with an ``index.yaml``. Run::

    python -m omnigym.envs.mcu.generate --seed 0 [--seeds 0,1,2]

The output is a function of the data files and the seed.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import yaml

from omnigym.envs.mcu import templates_care, templates_stations, templates_world
from omnigym.envs.mcu.planner import needs_table, plan
from omnigym.envs.mcu.registries import TIER_LEVELS, Registry, registry
from omnigym.envs.mcu.tasks import TASK_DIR, parse_task
from omnigym.envs.mcu.template_kit import (
    article,
    at,
    away,
    half_final,
    milestones,
    one_item_task,
    task,
    words,
)
from omnigym.envs.mcu.verify import verify_task
from omnigym.envs.mcu.world import GROUND_BLOCKS

TEMPLATES_FILE = Path(__file__).parent / "data" / "task_templates.yaml"
DIGGING_TIERS = ("wooden", "stone", "iron", "diamond")
VERIFIED_LEVELS = ("simple", "hard")
"""A task is kept only if its oracle solves both its simple and its hard variant."""


def mine_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for block, subcategory in params["blocks"].items():
        info = reg.blocks[block]
        tools = ["hand"] if info.tier == "none" else []
        if info.tool != "none":
            need = max(1, TIER_LEVELS[info.tier])
            lowest = next(t for t in DIGGING_TIERS if TIER_LEVELS[t] >= need)
            tools += [f"{t}_{info.tool}" for t in dict.fromkeys((lowest, "diamond"))]
        for i, (count, tool) in enumerate((c, t) for c in params["counts"] for t in tools):
            name = f"mine_{block}"
            if i:
                name += (f"_x{count}" if count > 1 else "") + f"_with_{tool}"
            init = [] if tool == "hand" else [f"replaceitem entity @s weapon.mainhand {tool}"]
            init += [f"setblock {at(spot)} {block}" for spot in params["spots"][:count]]
            marks = [f"mined({block}) >= {k}" for k in range(1, count + 1)]
            # near the arena's ground holds from the start: no milestone for it
            near = [] if block in GROUND_BLOCKS else [f"near({block}, 3)"]
            yield task(
                name,
                params,
                subcategory,
                f"Mine {'the ' + words(block) if count == 1 else f'{count} {words(block)}'}.",
                init,
                f"mined({block}) >= {count}",
                milestones(near + marks, 0.2 if near else None),
                {"blocks": [block], "items": [] if tool == "hand" else [tool]},
                {"solver": "mine", "block": block, "count": count},
            )


def collect_wood_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    top = params["height"] - 1
    for i, (log, count) in enumerate((log, c) for log in params["logs"] for c in params["counts"]):
        name = "collect_wood" if i == 0 else f"collect_wood_{log}_x{count}"
        init = [f"fill ~{x} ~0 ~{z} ~{x} ~{top} ~{z} {log}" for x, _, z in params["trees"]]
        marks = [f"inventory_has({log}, {k})" for k in sorted({1, (count + 1) // 2, count})]
        yield task(
            name,
            params,
            params["subcategory"],
            "Collect wood." if i == 0 else f"Collect {count} {words(log)}{'s' * (count > 1)}.",
            init,
            f"inventory_has({log}, {count})",
            milestones(marks),
            {"blocks": [log], "items": [log]},
            {"solver": "collect", "block": log, "item": log, "count": count},
        )


def craft_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for item in reg.recipes:
        crafts, missing = plan(reg, item, 1)
        table = needs_table(reg, crafts)
        variants = [("", False)] + ([("_no_table", True)] if table else [])
        for suffix, own_table in variants:
            give = Counter(missing)
            steps = [name for name, _ in crafts]
            init = []
            if own_table:
                table_crafts, table_missing = plan(reg, "crafting_table", 1)
                give += table_missing
                steps = [name for name, _ in table_crafts] + steps
            elif table:
                init.append(f"setblock {at(params['table_spot'])} crafting_table")
            init = [f"give @s {name} {n}" for name, n in sorted(give.items())] + init
            intermediate = [s for s in dict.fromkeys(steps) if s != item]
            marks = [f"crafted({s}) >= 1" for s in intermediate] + [f"crafted({item}) >= 1"]
            text = f"Craft {article(item)}."
            if own_table:
                text += " Make a crafting table first."
            yield task(
                f"craft_to_{item}{suffix}",
                params,
                params["subcategory"],
                text,
                init,
                f"crafted({item}) >= 1",
                milestones(marks) if len(marks) == 1 else half_final(marks),
                {"items": sorted(set(give) | {item})},
                {"solver": "craft", "item": item, "count": 1},
            )


def smelt_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for source, output in reg.smelting.items():
        variants = [(c, f) for c in params["counts"] for f in params["fuels"]]
        for i, (count, fuel) in enumerate(variants):
            name = f"smelt_{source}"
            if i:
                name += (f"_x{count}" if count > 1 else "") + f"_with_{fuel}"
            fuel_count = math.ceil(count / reg.fuels[fuel])
            init = [
                f"give @s {source} {count}",
                f"give @s {fuel} {fuel_count}",
                f"setblock {at(params['furnace_spot'])} furnace",
            ]
            yield task(
                name,
                params,
                params["subcategory"],
                f"Smelt {count} {words(source)} into {words(output)}.",
                init,
                f"smelted({output}) >= {count}",
                milestones([f"smelted({output}) >= {count}"]),
                {"items": [source, fuel, output], "blocks": ["furnace"]},
                {"solver": "smelt", "input": source, "count": count},
            )


def fight_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    hunting = params["subcategory"] == "Hunt Animals"
    for mob, base in params["mobs"].items():
        variants = [(c, w) for c in params["counts"] for w in params["weapons"]]
        for i, (count, weapon) in enumerate(variants):
            name = base
            if i:
                name += (f"_x{count}" if count > 1 else "") + f"_with_{weapon}"
            init = [f"replaceitem entity @s weapon.mainhand {weapon}", "give @s cooked_beef 4"]
            init += [f"summon {mob} {at(spot)}" for spot in params["spots"][:count]]
            many = "sheep" if mob == "sheep" else f"{mob}s"
            verb = "Hunt" if hunting else "Kill"
            text = f"{verb} {'the ' + mob if count == 1 else f'{count} {many}'}."
            marks = [f"damaged({mob}) >= 1"]
            marks += [f"killed({mob}) >= {k}" for k in range(1, count + 1)]
            yield task(
                name,
                params,
                params["subcategory"],
                text,
                init,
                f"killed({mob}) >= {count}",
                milestones(marks, 0.3),
                {"items": [weapon], "mobs": [mob]},
                {"solver": "combat", "mob": mob, "count": count},
            )


def sleep_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    suffixes = ("", "_far", "_farther")
    variants = [
        (b, s, w)
        for w in params["weathers"]
        for b in params["beds"]
        for s in range(len(params["spots"]))
    ]
    for i, (bed, spot, weather) in enumerate(variants):
        name = "sleep_in_bed" if i == 0 else f"sleep_in_{bed}{suffixes[spot]}"
        if weather != "night":
            name += f"_in_{weather}"
        setup = "time set night" if weather == "night" else f"weather {weather}"
        init = [setup, f"setblock {at(params['spots'][spot])} {bed}"]
        yield task(
            name,
            params,
            params["subcategory"],
            f"Sleep in the {words(bed)}.",
            init,
            "slept_in(#bed) >= 1",
            milestones([f"near({bed}, 2)", "slept_in(#bed) >= 1"], 0.4),
            {"blocks": [bed]},
            {"solver": "sleep"},
            requires={"time": "night"} if weather == "night" else {"weather": weather},
        )


def pillar_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    variants = [(b, h) for b in params["blocks"] for h in params["heights"]]
    for i, (block, height) in enumerate(variants):
        name = "build_pillar" if i == 0 else f"build_pillar_{block}_h{height}"
        marks = [
            f"placed({block}) >= 1",
            f"structure(pillar, {(height + 1) // 2})",
            f"structure(pillar, {height})",
        ]
        yield task(
            name,
            params,
            params["subcategory"],
            f"Build a pillar of {words(block)}, {height} blocks high.",
            [f"give @s {block} {height}"],
            f"structure(pillar, {height})",
            milestones(marks, 0.2),
            {"items": [block], "blocks": [block]},
            {"solver": "pillar", "block": block, "height": height},
        )


def find_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for block, (stem, subcategory) in params["blocks"].items():
        yield from _find_variants(
            block, stem, subcategory, f"Find {article(stem)}", "setblock", "blocks", 2, params, rng
        )


def _find_variants(
    target: str,
    stem: str,
    subcategory: str,
    text: str,
    verb: str,
    kind: str,
    radius: int,
    params: dict,
    rng,
) -> Iterator[dict]:
    """Find ``target`` (a block placed with ``setblock`` or a mob summoned) at each of the
    template's distances: reach it within ``radius``."""
    for i, distance in enumerate(params["distances"]):
        spot = away(distance, rng)
        name = f"find_{stem}" if i == 0 else f"find_{stem}_at_{distance}"
        marks = [f"near({target}, {distance // 2})", f"near({target}, {radius})"]
        yield task(
            name,
            params,
            subcategory,
            f"{text} and go next to it.",
            [
                f"{verb} {at(spot)} {target}"
                if verb == "setblock"
                else f"{verb} {target} {at(spot)}"
            ],
            f"near({target}, {radius})",
            milestones(marks, 0.4),
            {kind: [target]},
            {"solver": "find", kind[:-1]: target, "radius": radius},
        )


def drop_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for item in params["items"]:
        counts = [c for c in params["counts"] if c <= reg.items[item].stack]
        for count in counts:
            name = f"drop_{item}" + (f"_x{count}" if count > 1 else "")
            text = f"Drop {article(item) if count == 1 else f'{count} {words(item)}'}."
            yield task(
                name,
                params,
                params["subcategory"],
                text,
                [f"give @s {item} {count}"],
                f"dropped({item}) >= {count}",
                milestones([f"dropped({item}) >= {count}"]),
                {"items": [item]},
                {"solver": "drop", "item": item, "count": count},
            )


def eat_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for item, info in reg.items.items():
        if info.food:
            oracle = {"solver": "eat", "item": item}
            yield one_item_task(params, f"eat_{item}", f"Eat {article(item)}.", item, "ate", oracle)


def spot_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    for mob in params["mobs"]:
        yield from _find_variants(
            mob, mob, params["subcategory"], f"Find the {mob}", "summon", "mobs", 3, params, rng
        )


def climb_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    variants = [(b, h) for b in params["blocks"] for h in params["heights"]]
    for i, (block, height) in enumerate(variants):
        name = "climb_pillar" if i == 0 else f"climb_pillar_{block}_h{height}"
        marks = [f"climbed({(height + 1) // 2})", f"climbed({height})"]
        yield task(
            name,
            params,
            params["subcategory"],
            f"Climb {height} blocks up, building a pillar of {words(block)} under you.",
            [f"give @s {block} {height}"],
            f"climbed({height})",
            milestones(marks, 0.4),
            {"items": [block]},
            {"solver": "pillar", "block": block, "height": height},
        )


def place_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Lighting and decoration: place ``count`` blocks of a kind (torches at night)."""
    lighting = params["subcategory"] == "Lighting"
    base = "light_up_area" if lighting else "decorate_ground"
    variants = [(b, c) for b in params["blocks"] for c in params["counts"]]
    for i, (block, count) in enumerate(variants):
        name = base if i == 0 else f"{base}_with_{block}_x{count}"
        verb = "Light up the area at night by placing" if lighting else "Decorate the ground with"
        init = (["time set night"] if lighting else []) + [f"give @s {block} {count}"]
        marks = [f"placed({block}) >= {k}" for k in range(1, count + 1)]
        yield task(
            name,
            params,
            params["subcategory"],
            f"{verb} {count} {words(block)}.",
            init,
            f"placed({block}) >= {count}",
            milestones(marks),
            {"items": [block]},
            {"solver": "place", "block": block, "count": count},
            **({"requires": {"time": "night"}} if lighting else {}),
        )


TEMPLATES = {
    "mine": mine_tasks,
    "collect_wood": collect_wood_tasks,
    "craft": craft_tasks,
    "smelt": smelt_tasks,
    "combat": fight_tasks,
    "hunt": fight_tasks,
    "sleep": sleep_tasks,
    "pillar": pillar_tasks,
    "find": find_tasks,
    "drop": drop_tasks,
    "eat": eat_tasks,
    "spot": spot_tasks,
    "climb": climb_tasks,
    "light": place_tasks,
    "decorate": place_tasks,
    **templates_stations.TEMPLATES,
    **templates_care.TEMPLATES,
    **templates_world.TEMPLATES,
}


def candidates(seed: int) -> list[dict]:
    """Every task the templates make for ``seed``, in template order."""
    reg = registry()
    rng = np.random.default_rng(seed)
    params = yaml.safe_load(TEMPLATES_FILE.read_text(encoding="utf-8"))
    out = [t for name, make in TEMPLATES.items() for t in make(reg, params[name], rng)]
    names = Counter(t["name"] for t in out)
    duplicated = sorted(n for n, k in names.items() if k > 1)
    if duplicated:
        raise ValueError(f"task_templates.yaml makes duplicate task names: {duplicated}")
    return out


def generate(seed: int, seeds: list[int], out: Path = TASK_DIR) -> dict[str, int]:
    """Writes the verified tasks and their index to ``out``; returns tasks kept per category."""
    out.mkdir(parents=True, exist_ok=True)
    kept, dropped = [], []
    for data in candidates(seed):
        result = verify_task(parse_task(data, f"{data['name']}.yaml"), seeds, VERIFIED_LEVELS)
        if result["success"]:
            kept.append((data, result))
        else:
            dropped.append((data["name"], result["reason"]))
    old_index = out / "index.yaml"
    if old_index.exists():  # remove the previous run's tasks, and only those
        for entry in yaml.safe_load(old_index.read_text(encoding="utf-8"))["tasks"]:
            (out / f"{entry['name']}.yaml").unlink(missing_ok=True)
    for data, _ in kept:
        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
        (out / f"{data['name']}.yaml").write_text(text, encoding="utf-8")
    index = [
        {
            "name": data["name"],
            "category": data["category"],
            "subcategory": data["subcategory"],
            "oracle_steps": result["steps"],
        }
        for data, result in kept
    ]
    header = f"# Verified MCU tasks: `python -m omnigym.envs.mcu.generate --seed {seed}`.\n"
    body = yaml.safe_dump({"seed": seed, "tasks": index}, sort_keys=False, width=100)
    (out / "index.yaml").write_text(header + body, encoding="utf-8")
    for name, reason in dropped:
        print(f"dropped {name}: {reason}")
    return dict(Counter(data["category"] for data, _ in kept))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="generation seed")
    parser.add_argument("--seeds", default="0,1,2", help="verification seeds, comma-separated")
    parser.add_argument("--out", type=Path, default=TASK_DIR, help="task folder")
    args = parser.parse_args(argv)
    counts = generate(args.seed, [int(s) for s in args.seeds.split(",")], args.out)
    for category, n in sorted(counts.items()):
        print(f"{category}: {n}")
    print(f"total: {sum(counts.values())}")


if __name__ == "__main__":
    main()
