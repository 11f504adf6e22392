"""Tests of the seeded terrain generator: ChopTree's forest and OpenWorld's world."""

import numpy as np
import pytest

from omnigym.envs.craft.engine import AIR, LIGHT_SUN, World
from omnigym.envs.craft.terrain import (
    TerrainConfig,
    generate_forest,
    generate_open_world,
    place_tree,
    value_noise_2d,
)

OPEN_SIZE = (64, 80, 64)
TRUNKS = (
    "default:tree",
    "default:jungletree",
    "default:pine_tree",
    "default:acacia_tree",
    "default:aspen_tree",
)


@pytest.fixture(scope="module")
def config():
    return TerrainConfig.load()


@pytest.fixture(scope="module")
def forest(materials):
    return generate_forest(materials, seed=3)


@pytest.fixture(scope="module")
def open_world(materials):
    return generate_open_world(materials, seed=5, size=OPEN_SIZE)


def tree_ids(materials):
    return np.concatenate([materials.ids_with_group("tree"), materials.ids_with_group("leaves")])


def test_value_noise_is_seeded_bounded_and_smooth():
    a = value_noise_2d((40, 30), 7, scale=8, octaves=3, persistence=0.5)
    b = value_noise_2d((40, 30), np.random.default_rng(7), scale=8, octaves=3, persistence=0.5)
    c = value_noise_2d((40, 30), 8, scale=8, octaves=3, persistence=0.5)
    assert a.shape == (40, 30) and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.min() >= -1.0 and a.max() <= 1.0
    assert a.std() > 0.05
    # Neighbours differ far less than the field varies: interpolated, not white noise.
    assert np.abs(np.diff(a, axis=0)).mean() < 0.5 * a.std()


def test_value_noise_rejects_bad_scale():
    with pytest.raises(ValueError, match="scale"):
        value_noise_2d((4, 4), 0, scale=0)


def test_same_seed_gives_identical_bytes(materials):
    one = generate_open_world(materials, seed=11, size=(48, 80, 48))
    two = generate_open_world(materials, seed=11, size=(48, 80, 48))
    assert one.world.content.tobytes() == two.world.content.tobytes()
    assert one.world.light.tobytes() == two.world.light.tobytes()
    assert one.spawn == two.spawn and one.trunks == two.trunks
    f1, f2 = generate_forest(materials, seed=4), generate_forest(materials, seed=4)
    assert f1.world.content.tobytes() == f2.world.content.tobytes()


def test_other_seed_gives_other_grid(materials, forest):
    assert not np.array_equal(
        generate_forest(materials, seed=4).world.content, forest.world.content
    )
    one = generate_open_world(materials, seed=11, size=(48, 80, 48))
    two = generate_open_world(materials, seed=12, size=(48, 80, 48))
    assert not np.array_equal(one.world.content, two.world.content)


def test_forest_has_every_trunk_kind_and_many_trunks(materials, forest):
    content = forest.world.content
    for name in TRUNKS:
        assert (content == materials.id(name)).sum() >= 4, name
    trunk_nodes = np.isin(content, materials.ids_with_group("tree")).sum()
    assert forest.trunks == trunk_nodes
    assert forest.trunks >= 300
    assert forest.world.shape == (48, 32, 48)
    assert forest.biome_names == ["mixed_forest"] and not forest.biomes.any()


def test_forest_spawn_is_a_clearing_with_trees_in_sight(materials, forest):
    world = forest.world
    x, y, z = forest.spawn
    feet = (int(x), int(y + 0.5), int(z))
    assert y == forest.heightmap[int(x), int(z)] + 0.5
    assert (int(x), int(z)) == (24, 24)
    assert world.get(*feet) == AIR
    assert world.get(feet[0], feet[1] + 1, feet[2]) == AIR
    assert materials.walkable[world.get(feet[0], feet[1] - 1, feet[2])]
    columns = np.argwhere(np.isin(world.content, materials.ids_with_group("tree")).any(axis=1))
    distance = np.hypot(columns[:, 0] - x, columns[:, 1] - z)
    assert distance.min() >= 3.5
    assert (distance < 8).sum() >= 3


def test_forest_tree_density_argument_thins_the_forest(materials, forest):
    sparse = generate_forest(materials, seed=3, tree_density=0.02)
    assert 0 < sparse.trunks < forest.trunks / 2


def test_forest_terrain_is_grass_over_dirt_over_stone(materials, forest):
    content, heights = forest.world.content, forest.heightmap
    xs, zs = np.meshgrid(np.arange(48), np.arange(48), indexing="ij")
    assert (content[xs, heights, zs] == materials.id("default:dirt_with_grass")).all()
    assert (content[xs, heights - 1, zs] == materials.id("default:dirt")).all()
    assert (content[:, 0, :] == materials.id("default:stone")).all()
    assert heights.max() - heights.min() >= 3  # rolling, not flat


@pytest.mark.parametrize("result", ["forest", "open_world"])
def test_heightmap_is_the_top_of_the_terrain(materials, result, request):
    result = request.getfixturevalue(result)
    content, heights = result.world.content, result.heightmap
    sx, _, sz = content.shape
    xs, zs = np.meshgrid(np.arange(sx), np.arange(sz), indexing="ij")
    assert materials.walkable[content[xs, heights, zs]].all()
    above = content[xs, heights + 1, zs]
    solid_above = materials.walkable[above]
    assert np.isin(above[solid_above], tree_ids(materials)).all()
    # Nothing but trees, water and air over the surface.
    y = np.arange(content.shape[1])[None, :, None]
    over = content[y > heights[:, None, :]]
    allowed = np.concatenate([tree_ids(materials), [AIR, materials.id("default:water_source")]])
    assert np.isin(over, allowed).all()


def test_open_world_biome_surfaces_match_the_table(materials, config, open_world):
    content, heights, biomes = open_world.world.content, open_world.heightmap, open_world.biomes
    table = config.open_world.biomes
    assert open_world.biome_names == [b.name for b in table]
    xs, zs = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    surface = content[xs, heights, zs]
    for index, biome in enumerate(table):
        mask = biomes == index
        assert (surface[mask] == materials.id(biome.surface)).all(), biome.name
        assert (heights[mask] >= biome.y_min).all() and (heights[mask] <= biome.y_max).all()
    assert len(np.unique(biomes)) >= 2


def test_open_world_has_water_up_to_sea_level_only(materials, config, open_world):
    water = np.argwhere(open_world.world.content == materials.id("default:water_source"))
    assert len(water) > 0
    assert water[:, 1].max() == config.open_world.sea_level


def test_open_world_ores_lie_in_their_layers_only(materials, config, open_world):
    content = open_world.world.content
    for ore in config.open_world.ores:
        ys = np.argwhere(content == materials.id(ore.node))[:, 1]
        assert len(ys) > 0, ore.node
        assert ys.min() >= ore.y_min and ys.max() <= ore.y_max, ore.node
    coal, iron, diamond = (
        (content == materials.id(f"default:stone_with_{n}")).sum()
        for n in ("coal", "iron", "diamond")
    )
    assert coal > iron > diamond


def test_open_world_has_caves_under_a_roof(materials, config, open_world):
    content, heights = open_world.world.content, open_world.heightmap
    y = np.arange(content.shape[1])[None, :, None]
    underground_air = (content == AIR) & (y < heights[:, None, :])
    assert underground_air.sum() >= 200
    assert not (
        (content == AIR)
        & (y > (heights - config.open_world.caves.roof)[:, None, :])
        & (y <= heights[:, None, :])
    ).any()
    assert not (content[:, : config.open_world.caves.floor, :] == AIR).any()


def test_light_is_full_sun_above_ground_and_dark_in_caves(materials, open_world):
    world, heights = open_world.world, open_world.heightmap
    xs, zs = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    above = world.content[xs, heights + 1, zs]
    open_sky = (above == AIR) & (world.content[xs, -1, zs] == AIR)
    lit = world.light[xs, heights + 1, zs][open_sky]
    # Columns without leaves overhead get sunlight straight down.
    clear = ~np.isin(world.content, tree_ids(materials)).any(axis=1) & open_sky
    assert (world.light[xs, heights + 1, zs][clear] == LIGHT_SUN).all()
    assert lit.max() == LIGHT_SUN
    y = np.arange(world.shape[1])[None, :, None]
    cave = (world.content == AIR) & (y < heights[:, None, :])
    assert world.light[cave].max() < LIGHT_SUN
    assert (world.light[cave] == 0).any()


def test_open_world_spawn_is_dry_standing_room_near_the_centre(materials, config, open_world):
    world = open_world.world
    x, y, z = open_world.spawn
    feet = (int(x), int(y + 0.5), int(z))
    assert world.get(*feet) == AIR and world.get(feet[0], feet[1] + 1, feet[2]) == AIR
    assert materials.walkable[world.get(feet[0], feet[1] - 1, feet[2])]
    assert y - 0.5 >= config.open_world.sea_level
    assert abs(x - 32) <= 16 and abs(z - 32) <= 16


def test_open_world_trees_grow_on_their_biomes_surface(materials, config, open_world):
    content, heights, biomes = open_world.world.content, open_world.heightmap, open_world.biomes
    table = config.open_world.biomes
    trunk_ids = materials.ids_with_group("tree")
    columns = np.argwhere(np.isin(content, trunk_ids).any(axis=1))
    assert open_world.trunks == np.isin(content, trunk_ids).sum() > 0
    for x, z in columns:
        biome = table[biomes[x, z]]
        kinds = {config.trees[k].trunk for k in biome.trees}
        base = content[x, heights[x, z] + 1, z]
        assert materials.name(int(base)) in kinds, (biome.name, materials.name(int(base)))


def test_place_tree_builds_trunk_and_crown(materials, config):
    world = World(materials, (9, 16, 9))
    placed = place_tree(world, 4, 2, 4, "pine", np.random.default_rng(0))
    pine = config.trees["pine"]
    trunk = np.argwhere(world.content == materials.id("default:pine_tree"))
    assert placed == len(trunk)
    assert pine.height[0] <= placed <= pine.height[1]
    assert (trunk[:, [0, 2]] == 4).all() and trunk[:, 1].min() == 2
    needles = np.argwhere(world.content == materials.id("default:pine_needles"))
    assert needles[:, 1].max() == 2 + placed  # the tip sits on the top trunk node
    assert len(needles) > 20


def test_place_tree_clips_at_the_grid_edge(materials):
    world = World(materials, (6, 6, 6))
    placed = place_tree(world, 0, 3, 5, "jungle", np.random.default_rng(1))
    assert placed == 3  # y = 3, 4, 5 fit; the rest of the trunk is above the grid
    assert (world.content[0, 3:, 5] == materials.id("default:jungletree")).all()
    assert place_tree(world, -5, 0, 0, "apple", np.random.default_rng(1)) == 0


def test_place_tree_keeps_terrain_and_names_unknown_kinds(materials):
    world = World(materials, (7, 12, 7), fill="default:stone")
    world.fill((0, 6, 0), (6, 11, 6), "air")
    before = world.content[:, :6, :].copy()
    assert place_tree(world, 3, 3, 3, "apple", np.random.default_rng(2)) > 0
    np.testing.assert_array_equal(world.content[:, :3, :], before[:, :3, :])
    assert world.content[3, 3, 3] == materials.id("default:stone")
    with pytest.raises(KeyError, match="oak"):
        place_tree(world, 3, 6, 3, "oak", np.random.default_rng(2))


@pytest.mark.parametrize("kind", ["apple", "jungle", "pine", "acacia", "aspen"])
def test_every_crown_leaves_walking_room_under_it(materials, config, kind):
    for seed in range(4):
        world = World(materials, (9, 20, 9))
        place_tree(world, 4, 1, 4, kind, np.random.default_rng(seed))
        leaves = np.isin(world.content, materials.ids_with_group("leaves"))
        assert leaves.any()
        assert not leaves[:, 1:3, :].any()  # feet and head room beside the trunk
        assert world.content[4, 1, 4] == materials.id(config.trees[kind].trunk)
