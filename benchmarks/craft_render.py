"""Speed of the Craft ray-caster on one 64×64 RGB frame; prints one JSON object.

    .venv/bin/python benchmarks/craft_render.py [--frames 400] [--repeats 5] [--no-entities]
        [--no-light] [--no-heights] [--walk] [--against OLD_RENDER_PY]

The world is 64×32×64 nodes of sine hills (stone under a dirt top), 40 trees (4-node trunks under
a 3×3×2 leaf crown), random node light 8–15 and 4 entity boxes, drawn with the ``top_row`` and
``heights`` hints as the environments draw them (``--no-heights`` leaves out the second). The eye
stands 1.6 nodes above the middle of the map and looks in random directions (yaw anywhere, pitch
within ±30°); with ``--walk`` it also steps 0.02 nodes along x between frames, so that the
renderer rebuilds what it keeps per eye position every frame. ``--no-entities`` and
``--no-light`` leave out the boxes or the light. Each repeat renders the same ``frames`` views;
the figure is the best of ``repeats``. ``sha256`` digests every frame rendered, so two builds of
the renderer can be checked for identical output.

``--against`` loads another copy of ``render.py`` (say, the last commit's) and times both in
alternating blocks of 50 frames, each block's figure the best of ``repeats``, so that load on a
shared machine falls on both alike; it adds that copy's figures, the speed-up and the number of
pixels whose colour differs. A plain script: nothing here is a test.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

from omnigym.envs.craft import render as render_module
from omnigym.envs.craft.render import AIR_ID, Renderer, RenderOptions

STONE, DIRT, WOOD, LEAVES = 1, 2, 3, 4


def world(seed: int = 0):
    """Grid, light, entity boxes, colour and visibility tables of the benchmark world."""
    rng = np.random.default_rng(seed)
    grid = np.full((64, 32, 64), AIR_ID, dtype=np.uint16)
    xs, zs = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    height = (10 + 3 * np.sin(xs / 6.0) + 3 * np.cos(zs / 7.0)).astype(int)
    for x in range(64):
        for z in range(64):
            grid[x, : height[x, z], z] = STONE
            grid[x, height[x, z], z] = DIRT
    for x, z in rng.integers(2, 62, (40, 2)):
        top = height[x, z] + 1
        grid[x - 1 : x + 2, top + 3 : top + 5, z - 1 : z + 2] = LEAVES
        grid[x, top : top + 4, z] = WOOD
    light = rng.integers(8, 16, grid.shape).astype(np.uint8)
    entities = np.array(
        [
            [30.0, 16.0, 36.0, 0.3, 0.9, 0.3, 250, 10, 10],
            [36.0, 16.0, 30.0, 0.5, 0.5, 0.8, 0, 0, 90],
            [26.0, 17.0, 28.0, 0.4, 0.4, 0.4, 200, 200, 0],
            [40.0, 18.0, 40.0, 0.3, 0.9, 0.3, 90, 60, 30],
        ]
    )
    colors = np.zeros((256, 3), dtype=np.uint8)
    colors[[STONE, DIRT, WOOD, LEAVES]] = [
        (120, 120, 120),
        (110, 80, 40),
        (90, 60, 30),
        (40, 140, 40),
    ]
    visible = np.zeros(256, dtype=bool)
    visible[[STONE, DIRT, WOOD, LEAVES]] = True
    eye = np.array([32.0, height[32, 32] + 1.6, 32.0])
    return grid, light, entities, colors, visible, eye


def scene(renderer, grid, light, entities, heights):
    """Keyword arguments of ``renderer.render``: boxes, light and the grid's hints (``heights``
    only when asked for and known to ``renderer``). ``light`` and ``entities`` may be None."""
    hints = {"entities": entities, "light": light, "top_row": renderer.top_row(grid)}
    if heights and hasattr(renderer, "column_heights"):
        hints["heights"] = renderer.column_heights(grid)
    return hints


def measure(renderer, grid, hints, eyes, views, repeats):
    """Best seconds per frame over ``repeats`` passes, first-call seconds and the frames' digest.

    ``eyes`` holds the eye of each view.
    """
    start = time.perf_counter()
    renderer.render(grid, eyes[0], 0.0, 0.0, **hints)
    first_call_s = time.perf_counter() - start
    digest = hashlib.sha256()
    for eye, (yaw, pitch) in zip(eyes, views, strict=True):
        digest.update(renderer.render(grid, eye, yaw, pitch, **hints))
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for eye, (yaw, pitch) in zip(eyes, views, strict=True):
            renderer.render(grid, eye, yaw, pitch, **hints)
        best = min(best, (time.perf_counter() - start) / len(views))
    return best, first_call_s, digest.hexdigest()


def load_renderer_module(path: str):
    """The module in the file ``path`` (a copy of ``render.py``), imported under its own name."""
    if Path(path).resolve() == Path(render_module.__file__).resolve():
        # Numba's on-disk cache of that file would then name the wrong module.
        raise SystemExit("--against needs a copy of render.py, not the file itself")
    name = "craft_render_against"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def compare(renderers, grid, scenes, eyes, views, repeats):
    """Per renderer (drawing its scene), seconds per frame summed over blocks of 50 views, each
    block timed ``repeats`` times alternating between the renderers (best of each kept); and
    the number of pixels where the renderers' frames differ."""
    pairs = list(zip(renderers, scenes, strict=True))
    differ = 0
    for eye, (yaw, pitch) in zip(eyes, views, strict=True):
        frames = [renderer.render(grid, eye, yaw, pitch, **hints) for renderer, hints in pairs]
        differ += int((frames[0] != frames[1]).any(axis=-1).sum())
    starts = range(0, len(views), 50)
    best = np.full((len(renderers), len(starts)), np.inf)
    for _ in range(repeats):
        for b, first in enumerate(starts):
            block = list(zip(eyes[first : first + 50], views[first : first + 50], strict=True))
            for j, (renderer, hints) in enumerate(pairs):
                start = time.perf_counter()
                for eye, (yaw, pitch) in block:
                    renderer.render(grid, eye, yaw, pitch, **hints)
                best[j, b] = min(best[j, b], time.perf_counter() - start)
    return best.sum(axis=1) / len(views), differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-entities", action="store_true", help="draw no entity boxes")
    parser.add_argument("--no-light", action="store_true", help="full light everywhere")
    parser.add_argument("--no-heights", action="store_true", help="draw without column heights")
    parser.add_argument("--walk", action="store_true", help="move the eye between frames")
    parser.add_argument("--against", help="another render.py to time in alternation with this one")
    args = parser.parse_args()
    grid, light, entities, colors, visible, eye = world()
    entities = None if args.no_entities else entities
    light = None if args.no_light else light
    rng = np.random.default_rng(1)
    views = np.column_stack(
        [rng.uniform(0.0, 360.0, args.frames), rng.uniform(-30.0, 30.0, args.frames)]
    )
    steps = np.arange(args.frames) * (0.02 if args.walk else 0.0)
    eyes = eye + np.outer(steps, [1.0, 0.0, 0.0])
    renderer = Renderer(colors, visible, RenderOptions(width=64, height=64))
    hints = scene(renderer, grid, light, entities, not args.no_heights)
    best, first_call_s, digest = measure(renderer, grid, hints, eyes, views, args.repeats)
    result = {
        "name": "craft_render_64x64_rgb",
        "frames": args.frames,
        "repeats": args.repeats,
        "entities": 0 if entities is None else len(entities),
        "light": light is not None,
        "heights": "heights" in hints,
        "walk": args.walk,
        "ms_per_frame": round(best * 1e3, 4),
        "frames_per_s": round(1.0 / best, 1),
        "first_call_s": round(first_call_s, 3),
        "sha256": digest,
    }
    if args.against:
        module = load_renderer_module(args.against)
        other = module.Renderer(colors, visible, module.RenderOptions(width=64, height=64))
        other_hints = scene(other, grid, light, entities, not args.no_heights)
        measure(other, grid, other_hints, eyes[:1], views[:1], 1)
        (this_s, other_s), differ = compare(
            [renderer, other], grid, [hints, other_hints], eyes, views, args.repeats
        )
        result.update(
            paired_ms_per_frame=round(this_s * 1e3, 4),
            against=args.against,
            against_ms_per_frame=round(other_s * 1e3, 4),
            speedup=round(other_s / this_s, 3),
            pixels_differing=differ,
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
