"""MCU task templates for terrain, water and building: ``find_<biome>``, ``dive``,
``build_wall``, ``build_fence``, ``build_hut``, ``build_house``, ``build_redstone_lamp``
(parameters in ``data/task_templates.yaml``; see :mod:`omnigym.envs.mcu.generate`)."""

from __future__ import annotations

from collections.abc import Iterator

from omnigym.envs.mcu.registries import Registry
from omnigym.envs.mcu.template_kit import away, milestones, task, words


def biome_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Walk into a patch of each biome but plains, the arena's own, at each distance: the patch
    is marked with ``fillbiome``, its ground laid and its features set at its corners."""
    half = params["patch"]
    corners = ((-half, -half), (half, half), (-half, half), (half, -half))
    for biome in sorted(set(reg.biomes) - {"plains"}):
        info = reg.biomes[biome]
        landmark = info.features[0]
        for i, distance in enumerate(params["distances"]):
            x, _, z = away(distance, rng)
            init = [
                f"fillbiome ~{x - half} ~-1 ~{z - half} ~{x + half} ~0 ~{z + half} {biome}",
                f"fill ~{x - half} ~-1 ~{z - half} ~{x + half} ~-1 ~{z + half} {info.surface}",
            ]
            for k, (dx, dz) in enumerate(corners):
                init.append(
                    f"setblock ~{x + dx} ~0 ~{z + dz} {info.features[k % len(info.features)]}"
                )
            name = f"find_{biome}" + (f"_at_{distance}" if i else "")
            yield task(
                name,
                params,
                params["subcategory"],
                f"Find a {words(biome)} biome and walk into it.",
                init,
                f"in_biome({biome})",
                milestones([f"near({landmark}, {distance // 2})", f"in_biome({biome})"], 0.4),
                {"blocks": sorted({info.surface, *info.features})},
                {"solver": "find", "biome": biome},
            )


def dive_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Walk into a 3 × 3 pool ``depth`` deep and stay under water for ``ticks`` ticks."""
    variants = [
        (d, t, s) for s in params["spots"] for d in params["depths"] for t in params["ticks"]
    ]
    for i, (depth, ticks, spot) in enumerate(variants):
        name = (
            "dive"
            if i == 0
            else f"dive_d{depth}_for_{ticks}" + ("_far" if spot != params["spots"][0] else "")
        )
        seconds = ticks / 4
        yield task(
            name,
            params,
            params["subcategory"],
            f"Dive into the {depth} blocks deep pool and stay under for {seconds:g} seconds.",
            [f"fill ~-1 ~-{depth} ~{spot} ~1 ~-1 ~{spot + 2} water"],
            f"underwater_ticks >= {ticks}",
            milestones(["underwater_ticks >= 1", f"underwater_ticks >= {ticks}"], 0.3),
            {"blocks": ["water"]},
            {"solver": "dive", "ticks": ticks},
        )


def wall_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """A wall two blocks high of each block and length; a fence row of each length."""
    variants = [(b, n, 2) for b in params["blocks"] for n in params["lengths"]]
    variants += [("oak_fence", n, 1) for n in params["fence_lengths"]]
    for i, (block, length, height) in enumerate(variants):
        fence = block == "oak_fence"
        if fence:
            name = f"build_fence_l{length}"
        else:
            name = "build_wall" if i == 0 else f"build_wall_{block}_l{length}"
        shape = "row" if fence else "wall"
        marks = [f"structure({shape}, {k})" for k in sorted({(length + 1) // 2, length})]
        what = (
            f"a row of {length} oak fences"
            if fence
            else f"a wall of {words(block)}, {length} blocks long and 2 high"
        )
        yield task(
            name,
            params,
            params["subcategory"],
            f"Build {what}.",
            [f"give @s {block} {length * height}"],
            f"structure({shape}, {length})",
            milestones([f"placed({block}) >= 1", *marks], 0.2),
            {"items": [block], "blocks": [block]},
            {"solver": "wall", "block": block, "length": length, "height": height},
        )


def hut_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """A 3 × 3 hut (eight columns round one free node) of each block and height; a house is the
    same with an oak door at the foot of one column."""
    variants = [
        (b, h, d) for d in (False, True) for b in params["blocks"] for h in params["heights"]
    ]
    for block, height, door in variants:
        kind = "house" if door else "hut"
        bare = block == params["blocks"][0] and height == params["heights"][0]
        name = f"build_{kind}" + ("" if bare else f"_{block}_h{height}")
        need = 8 * height - door
        init = [f"give @s {block} {need}"] + (["give @s oak_door 1"] if door else [])
        text = f"Build a {kind} of {words(block)}: eight columns {height} high round one free block"
        text += ", with an oak door." if door else "."
        yield task(
            name,
            params,
            params["subcategory"],
            text,
            init,
            f"structure({kind}, {height})",
            milestones(
                [f"placed({block}) >= 1", "structure(row, 3)", f"structure({kind}, {height})"], 0.2
            ),
            {"items": [block] + (["oak_door"] if door else []), "blocks": [block]},
            {"solver": "hut", "block": block, "height": height, "door": door},
        )


def lamp_tasks(reg: Registry, params: dict, rng) -> Iterator[dict]:
    """Redstone lamps with a lever each, switched on; given, or (``_crafted``) made first."""
    for crafted in (False, True):
        for count in params["counts"]:
            name = "build_redstone_lamp" + (f"_x{count}" if count > 1 else "")
            name += "_crafted" if crafted else ""
            if crafted:
                init = [
                    f"give @s redstone {4 * count}",
                    f"give @s glowstone {count}",
                    f"give @s stick {count}",
                    f"give @s cobblestone {count}",
                ]
            else:
                init = [f"give @s redstone_lamp {count}", f"give @s lever {count}"]
            marks = ["placed(redstone_lamp) >= 1", "placed(lever) >= 1"]
            marks += [f"structure(lamp, {k})" for k in range(1, count + 1)]
            lamps = f"{count} redstone lamp{'s' * (count > 1)}"
            text = f"Build {lamps}, each with a lever, and switch them on."
            if crafted:
                text += " Craft the lamps and levers first."
            yield task(
                name,
                params,
                params["subcategory"],
                text,
                init,
                f"structure(lamp, {count})",
                milestones(marks),
                {"items": ["redstone_lamp", "lever"], "blocks": ["redstone_lamp", "lever"]},
                {"solver": "lamp", "count": count},
            )


TEMPLATES = {
    "biome": biome_tasks,
    "dive": dive_tasks,
    "wall": wall_tasks,
    "hut": hut_tasks,
    "lamp": lamp_tasks,
}
