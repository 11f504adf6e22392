"""Seeded procedural terrain of the Craft engine: the ChopTree forest and the OpenWorld map.

Follows the worlds of Craftium (Malagón, Ceberio, Lozano, ICML 2025), which plays on maps made by
Luanti's map generators: a height map of layered noise, biomes chosen Luanti's way (the nearest
heat/humidity point among the biomes whose y range holds the surface), a surface node and a
subsurface layer per biome over stone, trees of minetest_game's five kinds (apple, jungle, pine,
acacia, aspen), ore veins in depth layers (coal, then iron, then diamond deepest and rarest) and
caves carved by random worms. Every parameter lives in ``data/terrain.yaml``; everything random
comes from ``np.random.default_rng(seed)``, so a seed gives the same grid byte for byte.

Departures from Luanti, for speed and simplicity:

- Noise is this module's own seeded 2D value noise (smoothstep-interpolated random lattices,
  summed over octaves) instead of Luanti's Perlin noise; there is no 3D noise.
- Trees are a straight trunk under a crown of leaf discs (radii listed per kind) instead of
  minetest_game's schematics and L-systems.
- Caves keep a roof of solid ground under the surface (they have no entrances), so the height
  map stays the top of the terrain and no tree stands over a hole.
- Liquids are still: water fills the air at and below sea level and never flows.
- The world origin is ``(0, 0, 0)``: heights, ore layers and sea level are grid y indices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml
from numba import njit

from omnigym.envs.craft.engine import AIR, DATA_DIR, MaterialTable, World

CHUNK = 16
"""Edge of the cube (and square) that ore and cave frequencies are given per, in nodes."""


@dataclass(frozen=True)
class NoiseLayer:
    """One sum of noise octaves scaled to ``amplitude`` (see ``value_noise_2d``)."""

    scale: float
    octaves: int = 1
    persistence: float = 0.5
    amplitude: float = 1.0

    def sample(self, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
        return self.amplitude * value_noise_2d(
            shape, rng, self.scale, self.octaves, self.persistence
        )


@dataclass(frozen=True)
class TreeShape:
    """One tree kind: a trunk column and a crown of leaf discs (radii from the top disc down)."""

    trunk: str
    leaves: str
    height: tuple[int, int]
    crown: tuple[int, ...]
    crown_top: int = 1
    corner_drop: float = 0.0


@dataclass(frozen=True)
class Biome:
    """Surface layers and trees of one biome, and where it may occur."""

    name: str
    surface: str
    subsurface: str
    subsurface_depth: int
    stone: str
    trees: dict[str, float]
    tree_density: float = 0.0
    heat: float = 50.0
    humidity: float = 50.0
    y_min: int = -(2**31)
    y_max: int = 2**31 - 1


@dataclass(frozen=True)
class Ore:
    """Veins of ``node`` replacing ``wherein`` in the layer ``y_min``..``y_max``."""

    node: str
    wherein: str
    y_min: int
    y_max: int
    vein_size: int
    veins_per_chunk: float


@dataclass(frozen=True)
class CaveWorms:
    """Parameters of the cave-carving worms (see ``data/terrain.yaml``)."""

    worms_per_chunk: float
    length: tuple[int, int]
    radius: tuple[float, float]
    y_min: int
    y_max: int
    turn: float
    pitch_step: float
    max_pitch: float
    roof: int
    floor: int


@dataclass(frozen=True)
class ForestParams:
    """The ChopTree world (see ``data/terrain.yaml``)."""

    base_height: int
    height_noise: tuple[NoiseLayer, ...]
    headroom: int
    biome: Biome
    tree_spacing: int
    clearing_radius: float
    edge_margin: int


@dataclass(frozen=True)
class OpenWorldParams:
    """The OpenWorld map (see ``data/terrain.yaml``)."""

    base_height: int
    sea_level: int
    height_noise: tuple[NoiseLayer, ...]
    min_height: int
    headroom: int
    heat_noise: NoiseLayer
    humidity_noise: NoiseLayer
    tree_spacing: int
    biomes: tuple[Biome, ...]
    ores: tuple[Ore, ...]
    caves: CaveWorms


@dataclass(frozen=True)
class TerrainConfig:
    """Everything in ``terrain.yaml``: tree kinds, the forest and the open world."""

    trees: dict[str, TreeShape]
    forest: ForestParams
    open_world: OpenWorldParams

    @classmethod
    def load(cls, path: str | Path | None = None) -> TerrainConfig:
        """Reads a terrain file (default: the packaged ``data/terrain.yaml``, read once)."""
        return _load_config(str(Path(path) if path is not None else DATA_DIR / "terrain.yaml"))


@lru_cache(maxsize=4)
def _load_config(path: str) -> TerrainConfig:
    data = yaml.safe_load(Path(path).read_text())
    trees = {
        kind: TreeShape(**dict(spec, height=tuple(spec["height"]), crown=tuple(spec["crown"])))
        for kind, spec in data["trees"].items()
    }
    forest = dict(data["forest"])
    forest["height_noise"] = tuple(NoiseLayer(**layer) for layer in forest["height_noise"])
    forest["biome"] = _biome(forest["biome"])
    world = dict(data["open_world"])
    world["height_noise"] = tuple(NoiseLayer(**layer) for layer in world["height_noise"])
    world["heat_noise"] = NoiseLayer(**world["heat_noise"])
    world["humidity_noise"] = NoiseLayer(**world["humidity_noise"])
    world["biomes"] = tuple(_biome(spec) for spec in world["biomes"])
    world["ores"] = tuple(Ore(**spec) for spec in world["ores"])
    caves = dict(world["caves"])
    caves["length"] = tuple(caves["length"])
    caves["radius"] = tuple(caves["radius"])
    world["caves"] = CaveWorms(**caves)
    config = TerrainConfig(trees, ForestParams(**forest), OpenWorldParams(**world))
    for biome in (config.forest.biome, *config.open_world.biomes):
        unknown = set(biome.trees) - set(trees)
        if unknown:
            raise ValueError(f"{path}: biome {biome.name} has unknown tree kinds {unknown}")
    return config


def _biome(spec: dict) -> Biome:
    return Biome(**dict(spec, trees=dict(spec.get("trees", {}))))


@dataclass
class TerrainResult:
    """A generated world and what the tasks need to know about it.

    Attributes:
        world: the world, light computed (``World.compute_light``, full sunlight).
        heightmap: ``int64 [sx, sz]``, node y of the top terrain node of each column (trees and
            water excluded).
        biomes: ``int64 [sx, sz]``, index into ``biome_names`` of each column.
        biome_names: names of the biomes, from ``terrain.yaml``.
        trunks: trunk nodes placed.
        spawn: a standing position (feet) on the surface near the centre, with air at the feet
            and head nodes: ``(x, surface + 0.5, z)``.
    """

    world: World
    heightmap: np.ndarray
    biomes: np.ndarray
    biome_names: list[str]
    trunks: int
    spawn: tuple[float, float, float]


def value_noise_2d(
    shape: tuple[int, int],
    seed_or_rng: int | np.random.Generator,
    scale: float,
    octaves: int = 1,
    persistence: float = 0.5,
    lacunarity: float = 2.0,
) -> np.ndarray:
    """Seeded fractal value noise on a ``shape`` grid, ``float64`` in ``[-1, 1]``.

    Octave ``o`` draws uniform values in ``[-1, 1]`` on a lattice of cell size
    ``scale / lacunarity**o`` (shifted by a random fraction of a cell) and interpolates them with
    smoothstep weights; octaves are summed with amplitude ``persistence**o`` and the sum is
    divided by the total amplitude.
    """
    if scale <= 0 or octaves < 1:
        raise ValueError(f"noise needs scale > 0 and octaves >= 1, got {scale}, {octaves}")
    rng = np.random.default_rng(seed_or_rng)
    total = np.zeros(shape, dtype=np.float64)
    amplitude, norm = 1.0, 0.0
    for octave in range(octaves):
        cell = max(scale / lacunarity**octave, 1.0)
        weights, lows = [], []
        for n in shape:
            u = (np.arange(n) + rng.random()) / cell
            low = np.floor(u).astype(np.int64)
            f = u - low
            weights.append(f * f * (3.0 - 2.0 * f))
            lows.append(low)
        lattice = rng.uniform(-1.0, 1.0, (lows[0][-1] + 2, lows[1][-1] + 2))
        (wx, wz), (ix, iz) = weights, lows
        wx, ix = wx[:, None], ix[:, None]
        top = lattice[ix, iz] * (1 - wz) + lattice[ix, iz + 1] * wz
        bottom = lattice[ix + 1, iz] * (1 - wz) + lattice[ix + 1, iz + 1] * wz
        total += amplitude * (top * (1 - wx) + bottom * wx)
        norm += amplitude
        amplitude *= persistence
    return total / norm


def place_tree(
    world: World,
    x: int,
    y: int,
    z: int,
    kind: str,
    rng: np.random.Generator,
    config: TerrainConfig | None = None,
) -> int:
    """Plants one tree of ``kind`` whose lowest trunk node is node ``(x, y, z)``.

    The trunk height is drawn from the kind's range with ``rng``. The trunk replaces air and
    leaves; leaves only grow into air. Nodes outside the grid are skipped. Returns the number of
    trunk nodes placed. ``config`` defaults to the packaged ``terrain.yaml``.
    """
    config = config or TerrainConfig.load()
    try:
        shape = config.trees[kind]
    except KeyError:
        raise KeyError(f"no tree kind {kind!r}; kinds are {sorted(config.trees)}") from None
    materials = world.materials
    height = int(rng.integers(shape.height[0], shape.height[1] + 1))
    radii = np.array(shape.crown, dtype=np.int64)[::-1]  # bottom disc first
    r = int(radii.max())
    offsets = np.arange(-r, r + 1)
    d2 = offsets[:, None] ** 2 + offsets[None, :] ** 2
    crown = d2[None] <= (radii * radii + radii)[:, None, None]
    corners = (
        (np.abs(offsets)[:, None] == np.abs(offsets)[None, :])[None]
        & (np.abs(offsets)[None, :, None] == radii[:, None, None])
        & (radii > 0)[:, None, None]
    )
    crown &= ~(corners & (rng.random(crown.shape) < shape.corner_drop))
    crown = crown.transpose(1, 0, 2)  # [x, y, z]

    content = world.content
    top = y + height - 1
    crown_low = top + shape.crown_top - len(radii) + 1
    trunk_id, leaves_id = materials.id(shape.trunk), materials.id(shape.leaves)
    leaves = materials.ids_with_group("leaves")

    box, sub = _clip(world, (x - r, crown_low, z - r), crown.shape)
    if box is not None:
        region = content[box]
        grow = crown[sub] & (region == AIR)
        region[grow] = leaves_id
        world.param2[box][grow] = 0

    box, _ = _clip(world, (x, y, z), (1, height, 1))
    if box is None:
        return 0
    column = content[box]
    free = (column == AIR) | np.isin(column, leaves)
    column[free] = trunk_id
    world.param2[box][free] = 0
    return int(free.sum())


def _clip(world: World, low: tuple[int, int, int], size: tuple[int, int, int]):
    """Grid slices of the box of ``size`` nodes from node ``low``, and the matching box slices."""
    grid, local = [], []
    for lo, n, origin, extent in zip(low, size, world.origin, world.shape, strict=True):
        start = int(lo - origin)
        a, b = max(start, 0), min(start + n, extent)
        if a >= b:
            return None, None
        grid.append(slice(a, b))
        local.append(slice(a - start, b - start))
    return tuple(grid), tuple(local)


def generate_forest(
    materials: MaterialTable,
    seed: int | np.random.Generator,
    size: tuple[int, int, int] = (48, 32, 48),
    tree_density: float | None = None,
    config: TerrainConfig | None = None,
) -> TerrainResult:
    """The ChopTree world: rolling grass hills under a dense forest of all five tree kinds.

    ``tree_density`` (chance per column that a tree is tried) defaults to the forest biome's.
    ``seed`` is an int or a ``np.random.Generator``. No trunk stands within ``clearing_radius``
    of the grid centre, where the spawn is. Kinds are drawn with the biome's weights after one
    tree of each kind, so a forest of at least five trees has all five.
    """
    config = config or TerrainConfig.load()
    params = config.forest
    biome = params.biome
    density = biome.tree_density if tree_density is None else tree_density
    rng = np.random.default_rng(seed)
    sx, sy, sz = size
    heights = _heights(
        (sx, sz), rng, params.base_height, params.height_noise, 1, sy - params.headroom
    )
    world = World(materials, size)
    biomes = np.zeros((sx, sz), dtype=np.int64)
    _fill_columns(world, heights, biomes, [biome], None)

    xs, zs = np.meshgrid(np.arange(sx), np.arange(sz), indexing="ij")
    far = np.hypot(xs - sx // 2, zs - sz // 2) >= params.clearing_radius
    margin = params.edge_margin
    inside = np.zeros((sx, sz), dtype=bool)
    inside[margin : sx - margin, margin : sz - margin] = True
    sites = _tree_sites(rng, rng.random((sx, sz)) < density, far & inside, params.tree_spacing)
    kinds, weights = _tree_kinds(biome)
    # One tree of each kind first, so a forest of at least that many trees has every kind.
    each = np.arange(len(kinds))[: len(sites)]
    rest = rng.choice(len(kinds), size=len(sites) - len(each), p=weights)
    chosen = rng.permutation(np.concatenate([each, rest]))
    trunks = 0
    for (tx, tz), k in zip(sites, chosen, strict=True):
        trunks += place_tree(world, tx, heights[tx, tz] + 1, tz, kinds[k], rng, config)
    world.compute_light()
    return TerrainResult(world, heights, biomes, [biome.name], trunks, _spawn(world, heights, None))


def generate_open_world(
    materials: MaterialTable,
    seed: int | np.random.Generator,
    size: tuple[int, int, int] = (256, 80, 256),
    config: TerrainConfig | None = None,
) -> TerrainResult:
    """The OpenWorld map: biomes on a noise height map, trees, ore veins, caves and still water.

    ``seed`` is an int or a ``np.random.Generator``. Layers are built in this order: columns
    (surface, subsurface, stone, water up to sea level), ores, caves, trees, light. Trees grow
    only on a biome's surface node above sea level.
    """
    config = config or TerrainConfig.load()
    params = config.open_world
    rng = np.random.default_rng(seed)
    sx, sy, sz = size
    heights = _heights(
        (sx, sz),
        rng,
        params.base_height,
        params.height_noise,
        params.min_height,
        sy - params.headroom,
    )
    heat = 50.0 + params.heat_noise.sample((sx, sz), rng)
    humidity = 50.0 + params.humidity_noise.sample((sx, sz), rng)
    biomes = _choose_biomes(params.biomes, heights, heat, humidity)
    world = World(materials, size)
    _fill_columns(world, heights, biomes, params.biomes, params.sea_level)
    for ore in params.ores:
        _place_ore(world, ore, rng)
    _carve_caves(world, heights, params.caves, rng)

    trunks = 0
    for index, biome in enumerate(params.biomes):
        if not biome.trees or biome.tree_density <= 0:
            continue
        tries = (rng.random((sx, sz)) < biome.tree_density) & (biomes == index)
        dry = heights > params.sea_level
        sites = _tree_sites(rng, tries, dry, params.tree_spacing)
        kinds, weights = _tree_kinds(biome)
        chosen = rng.choice(len(kinds), size=len(sites), p=weights)
        for (tx, tz), k in zip(sites, chosen, strict=True):
            trunks += place_tree(world, tx, heights[tx, tz] + 1, tz, kinds[k], rng, config)
    world.compute_light()
    names = [biome.name for biome in params.biomes]
    spawn = _spawn(world, heights, params.sea_level)
    return TerrainResult(world, heights, biomes, names, trunks, spawn)


def _heights(shape, rng, base, layers, low, high) -> np.ndarray:
    if high < low:
        raise ValueError(
            f"the world is too low for its terrain: heights must fit in [{low}, {high}]"
        )
    total = np.full(shape, float(base))
    for layer in layers:
        total += layer.sample(shape, rng)
    return np.clip(np.rint(total), low, high).astype(np.int64)


def _choose_biomes(biomes, heights, heat, humidity) -> np.ndarray:
    """Luanti's rule: the nearest (heat, humidity) point among biomes whose y range fits."""
    distance = np.empty((len(biomes), *heights.shape))
    for i, biome in enumerate(biomes):
        d = (heat - biome.heat) ** 2 + (humidity - biome.humidity) ** 2
        fits = (heights >= biome.y_min) & (heights <= biome.y_max)
        distance[i] = np.where(fits, d, np.inf)
    if np.isinf(distance.min(axis=0)).any():
        raise ValueError("some surface height lies in no biome's y range")
    return distance.argmin(axis=0)


def _fill_columns(world, heights, biomes, table, sea_level) -> None:
    """Surface node at the height, subsurface below it, stone under that, water up to sea."""
    materials = world.materials

    def per_column(attribute):
        ids = np.array([materials.id(getattr(b, attribute)) for b in table], dtype=np.uint16)
        return ids[biomes][:, None, :]

    depth = np.array([b.subsurface_depth for b in table], dtype=np.int64)[biomes][:, None, :]
    y = np.arange(world.shape[1])[None, :, None]
    h = heights[:, None, :]
    content = np.where(y < h - depth, per_column("stone"), per_column("subsurface"))
    content = np.where(y == h, per_column("surface"), content)
    above = AIR
    if sea_level is not None:
        above = np.where(y <= sea_level, materials.id("default:water_source"), AIR)
    world.content[:] = np.where(y > h, above, content)


def _place_ore(world: World, ore: Ore, rng: np.random.Generator) -> None:
    """Random-walk veins from uniform centres in the ore's layer, replacing ``wherein`` only."""
    sx, sy, sz = world.shape
    y_min, y_max = max(ore.y_min, 0), min(ore.y_max, sy - 1)
    if y_max < y_min:
        return
    volume = sx * sz * (y_max - y_min + 1)
    count = rng.poisson(ore.veins_per_chunk * volume / CHUNK**3)
    high = np.array([sx, y_max + 1, sz])
    centres = rng.integers([0, y_min, 0], high, size=(count, 3))
    axis = rng.integers(0, 3, size=(count, ore.vein_size - 1))
    sign = rng.choice(np.array([-1, 1]), size=axis.shape)
    moves = np.zeros((count, ore.vein_size, 3), dtype=np.int64)
    np.put_along_axis(moves[:, 1:], axis[..., None], sign[..., None], axis=2)
    nodes = (centres[:, None, :] + np.cumsum(moves, axis=1)).reshape(-1, 3)
    keep = (
        (nodes[:, 1] >= y_min)
        & (nodes[:, 1] <= y_max)
        & np.all(nodes >= 0, axis=1)
        & np.all(nodes < np.array(world.shape), axis=1)
    )
    x, y, z = nodes[keep].T
    content = world.content
    replace = content[x, y, z] == world.materials.id(ore.wherein)
    content[x[replace], y[replace], z[replace]] = world.materials.id(ore.node)


def _carve_caves(world: World, heights, caves: CaveWorms, rng: np.random.Generator) -> None:
    """Random worms carving balls of air, never above ``roof`` nodes under the surface."""
    sx, sy, sz = world.shape
    count = rng.poisson(caves.worms_per_chunk * sx * sz / CHUNK**2)
    points = []
    for _ in range(count):
        length = int(rng.integers(caves.length[0], caves.length[1] + 1))
        start = rng.uniform([0, caves.y_min, 0], [sx, caves.y_max + 1, sz])
        yaw = rng.uniform(0, 2 * np.pi) + np.cumsum(rng.normal(0, caves.turn, length))
        pitch = np.clip(
            np.cumsum(rng.normal(0, caves.pitch_step, length)), -caves.max_pitch, caves.max_pitch
        )
        step = np.stack(
            [np.cos(yaw) * np.cos(pitch), np.sin(pitch), np.sin(yaw) * np.cos(pitch)], axis=1
        )
        path = start + np.cumsum(step, axis=0)
        radius = np.full((length, 1), rng.uniform(*caves.radius))
        points.append(np.hstack([path, radius]))
    if not points:
        return
    ceiling = (heights - caves.roof).astype(np.int64)
    _carve_balls(world.content, np.vstack(points), ceiling, caves.floor, AIR)


@njit(cache=True)
def _carve_balls(content, balls, ceiling, floor, air):
    sx, sy, sz = content.shape
    for i in range(balls.shape[0]):
        cx, cy, cz, r = balls[i, 0], balls[i, 1], balls[i, 2], balls[i, 3]
        r2 = r * r
        for x in range(max(int(np.floor(cx - r)), 0), min(int(np.ceil(cx + r)) + 1, sx)):
            for z in range(max(int(np.floor(cz - r)), 0), min(int(np.ceil(cz + r)) + 1, sz)):
                top = min(int(np.ceil(cy + r)), ceiling[x, z], sy - 1)
                for y in range(max(int(np.floor(cy - r)), floor), top + 1):
                    if (x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2 <= r2:
                        content[x, y, z] = air


def _tree_kinds(biome: Biome) -> tuple[list[str], np.ndarray]:
    """The biome's tree kinds (sorted) and their chances."""
    kinds = sorted(biome.trees)
    weights = np.array([biome.trees[k] for k in kinds], dtype=np.float64)
    return kinds, weights / weights.sum()


def _tree_sites(rng, tries, allowed, spacing) -> list[tuple[int, int]]:
    """Columns where ``tries`` and ``allowed`` hold, visited in random order, keeping those no
    closer than ``spacing`` (Chebyshev) to a site already kept."""
    candidates = np.argwhere(tries & allowed)
    taken = np.zeros(tries.shape, dtype=bool)
    sites = []
    for x, z in candidates[rng.permutation(len(candidates))]:
        near = taken[max(x - spacing + 1, 0) : x + spacing, max(z - spacing + 1, 0) : z + spacing]
        if not near.any():
            taken[x, z] = True
            sites.append((int(x), int(z)))
    return sites


def _spawn(world: World, heights, sea_level) -> tuple[float, float, float]:
    """Feet position on the walkable dry column nearest the centre with air at feet and head."""
    sx, sy, sz = world.shape
    xs, zs = np.meshgrid(np.arange(sx), np.arange(sz), indexing="ij")
    feet = np.minimum(heights + 1, sy - 1)
    head = np.minimum(heights + 2, sy - 1)
    content = world.content
    ok = (
        world.materials.walkable[content[xs, heights, zs]]
        & (content[xs, feet, zs] == AIR)
        & (content[xs, head, zs] == AIR)
        & (heights + 2 < sy)
    )
    if sea_level is not None:
        ok &= heights >= sea_level
    if not ok.any():
        raise ValueError("no column of this world has room to stand")
    distance = np.where(ok, (xs - sx // 2) ** 2 + (zs - sz // 2) ** 2, np.iinfo(np.int64).max)
    x, z = np.unravel_index(int(distance.argmin()), distance.shape)
    origin = world.origin
    return (float(x + origin[0]), float(heights[x, z] + origin[1]) + 0.5, float(z + origin[2]))
