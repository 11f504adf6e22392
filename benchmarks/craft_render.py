"""Speed of the Craft ray-caster on one 64×64 RGB frame; prints one JSON object.

    .venv/bin/python benchmarks/craft_render.py [--frames 400] [--repeats 5] [--no-entities]
        [--no-light]

The world is 64×32×64 nodes of sine hills (stone under a dirt top), 40 trees (4-node trunks under
a 3×3×2 leaf crown), random node light 8–15 and 4 entity boxes, drawn with the ``top_row``
hint; the eye stands 1.6 nodes above the middle of the map and looks in random directions (yaw
anywhere, pitch within ±30°); ``--no-entities`` and ``--no-light`` leave out the boxes or the
light. Each repeat renders the same ``frames`` views; the figure is the best of ``repeats``.
``sha256`` digests every frame rendered, so two builds of the renderer can be checked for
identical output. A plain script: nothing here is a test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import numpy as np

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


def measure(renderer, grid, light, entities, eye, views, repeats):
    """Best seconds per frame over ``repeats`` passes, first-call seconds and the frames' digest.

    ``light`` and ``entities`` may be None.
    """
    top_row = renderer.top_row(grid)
    scene = {"entities": entities, "light": light, "top_row": top_row}
    start = time.perf_counter()
    renderer.render(grid, eye, 0.0, 0.0, **scene)
    first_call_s = time.perf_counter() - start
    digest = hashlib.sha256()
    for yaw, pitch in views:
        digest.update(renderer.render(grid, eye, yaw, pitch, **scene))
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for yaw, pitch in views:
            renderer.render(grid, eye, yaw, pitch, **scene)
        best = min(best, (time.perf_counter() - start) / len(views))
    return best, first_call_s, digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-entities", action="store_true", help="draw no entity boxes")
    parser.add_argument("--no-light", action="store_true", help="full light everywhere")
    args = parser.parse_args()
    grid, light, entities, colors, visible, eye = world()
    entities = None if args.no_entities else entities
    light = None if args.no_light else light
    rng = np.random.default_rng(1)
    views = np.column_stack(
        [rng.uniform(0.0, 360.0, args.frames), rng.uniform(-30.0, 30.0, args.frames)]
    )
    renderer = Renderer(colors, visible, RenderOptions(width=64, height=64))
    best, first_call_s, digest = measure(renderer, grid, light, entities, eye, views, args.repeats)
    result = {
        "name": "craft_render_64x64_rgb",
        "kernel": renderer.kernel,
        "frames": args.frames,
        "repeats": args.repeats,
        "entities": 0 if entities is None else len(entities),
        "light": light is not None,
        "ms_per_frame": round(best * 1e3, 4),
        "frames_per_s": round(1.0 / best, 1),
        "first_call_s": round(first_call_s, 3),
        "sha256": digest,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
