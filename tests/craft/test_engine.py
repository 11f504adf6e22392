"""World, materials, inventory, voxel crops, and digging and placing."""

import numpy as np
import pytest
import yaml

from omnigym.envs.craft.digging import dig_frame, place, pointed_node
from omnigym.envs.craft.engine import (
    AIR,
    DATA_DIR,
    IGNORE,
    UNKNOWN,
    Inventory,
    MaterialTable,
    Player,
    World,
    crop_voxels,
    node_at,
)

FLOOR_TOP = 4.5


def flat_world(materials):
    world = World(materials, (16, 12, 16), origin=(-8, 0, -8))
    world.fill((-8, 0, -8), (7, 4, 7), "default:stone")
    return world


def facing_block(materials, node_name, wielded=None):
    """A player on the floor looking straight at ``node_name`` one node ahead at eye level."""
    world = flat_world(materials)
    world.set(0, 6, 2, node_name)
    player = Player(position=[0.0, FLOOR_TOP, 0.0])
    if wielded:
        player.inventory.add(wielded, stack_max=1)
    return world, player


# --- materials ---


def test_reserved_content_ids_are_luantis(materials):
    assert (materials.id("unknown"), materials.id("air"), materials.id("ignore")) == (125, 126, 127)
    assert (UNKNOWN, AIR, IGNORE) == (125, 126, 127)


def test_published_ids_are_the_yaml_ids_below_the_reserved_range(materials):
    data = yaml.safe_load((DATA_DIR / "materials.yaml").read_text())
    for entry in data["nodes"]:
        assert materials.id(entry["name"]) == entry["id"] < UNKNOWN
    assert materials.id("default:tree") == 20


def test_property_arrays_follow_the_materials_file(materials):
    tree, torch, water = (
        materials.id(n) for n in ("default:tree", "default:torch", "default:water_source")
    )
    assert materials.colors[tree].tolist() == [100, 75, 45]
    assert materials.walkable[tree] and materials.pointable[tree] and materials.visible[tree]
    assert not materials.walkable[AIR] and not materials.visible[AIR]
    assert materials.walkable[IGNORE] and not materials.visible[IGNORE]
    assert not materials.walkable[torch] and materials.light_source[torch] == 12
    assert not materials.pointable[water] and materials.buildable_to[water]
    assert materials.light_passes[water] and not materials.sunlight_propagates[water]
    assert materials.light_passes[AIR] and not materials.light_passes[tree]


def test_unlisted_content_id_reads_as_unknown(materials):
    assert materials[100].name == "unknown"
    assert materials.walkable[100]


def test_group_lookup_finds_every_trunk(materials):
    names = {materials.name(i) for i in materials.ids_with_group("tree")}
    assert names == {
        "default:tree",
        "default:jungletree",
        "default:pine_tree",
        "default:acacia_tree",
        "default:aspen_tree",
    }


def _write_materials(tmp_path, nodes):
    data = yaml.safe_load((DATA_DIR / "materials.yaml").read_text())
    data["nodes"] = nodes
    path = tmp_path / "materials.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_duplicate_content_id_is_rejected(tmp_path):
    nodes = [
        {"name": "default:stone", "id": 1, "color": [1, 1, 1]},
        {"name": "default:dirt", "id": 1, "color": [2, 2, 2]},
    ]
    with pytest.raises(ValueError, match="content id 1"):
        MaterialTable.load(_write_materials(tmp_path, nodes))


def test_drop_of_an_unknown_item_is_rejected(tmp_path):
    nodes = [{"name": "default:stone", "id": 1, "color": [1, 1, 1], "drops": [{"item": "x:y"}]}]
    with pytest.raises(ValueError, match="x:y"):
        MaterialTable.load(_write_materials(tmp_path, nodes))


def test_unknown_material_property_is_rejected_naming_the_file(tmp_path):
    nodes = [{"name": "default:stone", "id": 1, "color": [1, 1, 1], "bouncy": True}]
    with pytest.raises(ValueError, match="materials.yaml.*bouncy"):
        MaterialTable.load(_write_materials(tmp_path, nodes))


def test_leaves_drop_a_sapling_one_time_in_twenty(materials):
    leaves = materials["default:leaves"]
    rng = np.random.default_rng(0)
    drops = [leaves.drop(rng)[0] for _ in range(4000)]
    saplings = drops.count("default:sapling")
    assert 140 < saplings < 260  # 200 expected
    assert set(drops) == {"default:sapling", "default:leaves"}
    rng_again = np.random.default_rng(0)
    assert [leaves.drop(rng_again)[0] for _ in range(4000)] == drops


def test_node_without_drop_list_drops_itself(materials):
    assert materials["default:dirt"].drop(np.random.default_rng(0)) == ("default:dirt", 1)
    assert materials["default:stone"].drop(np.random.default_rng(0)) == ("default:cobble", 1)


# --- world ---


def test_node_coordinates_map_through_the_origin(materials):
    world = World(materials, (4, 5, 6), origin=(-2, 1, -3))
    world.set(-2, 1, -3, "default:dirt", param2=3)
    assert world.content[0, 0, 0] == materials.id("default:dirt")
    assert world.get_name(-2, 1, -3) == "default:dirt"
    assert world.get_param2(-2, 1, -3) == 3
    assert world.get(1, 5, 2) == AIR
    lo, hi = world.bounds
    assert lo.tolist() == [-2, 1, -3] and hi.tolist() == [1, 5, 2]


def test_grids_have_the_published_dtypes(materials):
    world = World(materials, (3, 4, 5))
    assert world.content.dtype == np.uint16 and world.content.shape == (3, 4, 5)
    assert world.light.dtype == np.uint8 and world.param2.dtype == np.uint8


def test_outside_the_grid_reads_ignore_and_cannot_be_set(materials):
    world = World(materials, (4, 4, 4))
    assert world.get(-1, 0, 0) == IGNORE
    assert world.get(0, 4, 0) == IGNORE
    assert world.get_light(9, 9, 9) == 0
    with pytest.raises(IndexError, match="outside"):
        world.set(4, 0, 0, "default:dirt")


def test_fill_is_inclusive_and_clipped_to_the_grid(materials):
    world = World(materials, (4, 4, 4))
    world.fill((-5, 0, 2), (10, 1, 2), "default:sand")
    sand = materials.id("default:sand")
    assert (world.content[:, 0:2, 2] == sand).all()
    assert (world.content == sand).sum() == 8


def test_restore_brings_back_the_pristine_grid_in_place(materials):
    world = flat_world(materials)
    pristine = world.copy()
    content = world.content
    world.set(0, 4, 0, "air")
    world.restore(pristine)
    assert world.content is content
    assert world.get_name(0, 4, 0) == "default:stone"
    with pytest.raises(ValueError, match="same shape"):
        world.restore(World(materials, (2, 2, 2)))


def test_node_at_rounds_half_up_like_luanti():
    assert node_at((0.5, -0.5, 0.49)) == (1, 0, 0)
    assert node_at((-0.51, 4.5, 7.0)) == (-1, 5, 7)


def test_open_sky_lights_the_air_fully_and_leaves_stone_dark(materials):
    world = flat_world(materials)
    world.fill((-8, 8, -8), (0, 8, 7), "default:stone")  # a roof over half the field
    world.compute_light()
    assert world.get_light(5, 6, 0) == 15
    assert world.get_light(0, 3, 0) == 0
    assert world.get_light(0, 6, 0) == 14  # under the roof, next to the sunlit column x = 1
    assert world.get_light(-4, 6, 0) == 10


def test_a_torch_lights_a_closed_cave_one_level_less_per_node(materials):
    world = World(materials, (11, 5, 11), origin=(-5, 0, -5), fill="default:stone")
    world.fill((-4, 1, -4), (4, 3, 4), "air")
    world.set(0, 1, 0, "default:torch")
    world.compute_light()
    assert world.get_light(0, 1, 0) == 12
    assert world.get_light(1, 1, 0) == 11
    assert world.get_light(3, 2, 1) == 7
    assert world.get_light(0, 0, 0) == 0
    world.compute_light(sunlight=0)
    assert world.get_light(4, 3, 4) == 12 - 10


def test_glass_lets_sunlight_through_but_leaves_dim_it(materials):
    # Leaves take 14 from the sky and pass one level less per node: 10 four nodes below.
    for roof, expected in (("default:glass", 15), ("default:leaves", 10)):
        world = World(materials, (9, 6, 9), origin=(-4, 0, -4), fill="default:stone")
        world.fill((-3, 1, -3), (3, 4, 3), "air")
        world.fill((-3, 5, -3), (3, 5, 3), roof)
        world.compute_light()
        assert world.get_light(0, 1, 0) == expected


# --- inventory and player ---


def test_inventory_fills_stacks_then_empty_slots():
    inventory = Inventory()
    assert inventory.add("default:dirt", 150) == 0
    assert inventory.slots[:3] == [("default:dirt", 99), ("default:dirt", 51), None]
    assert inventory.add("default:axe_steel", 2, stack_max=1) == 0
    assert inventory.slots[2:4] == [("default:axe_steel", 1)] * 2
    assert inventory.count("default:dirt") == 150


def test_full_inventory_returns_the_leftover():
    inventory = Inventory(size=2)
    assert inventory.add("default:dirt", 250) == 52


def test_taking_the_last_wielded_item_empties_the_slot():
    inventory = Inventory()
    inventory.add("default:dirt", 2)
    assert inventory.take_wielded(5) == 2
    assert inventory.wielded is None


def test_hotbar_selection_is_limited_to_nine_slots():
    inventory = Inventory()
    inventory.select(8)
    assert inventory.selected == 8
    with pytest.raises(ValueError, match="hotbar slot"):
        inventory.select(9)


def test_look_wraps_yaw_and_clamps_pitch():
    player = Player(yaw=350.0)
    player.look(20.0, 120.0)
    assert player.yaw == pytest.approx(10.0)
    assert player.pitch == 90.0


def test_look_direction_follows_luanti_conventions():
    np.testing.assert_allclose(Player(yaw=0).look_direction(), [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(Player(yaw=90).look_direction(), [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(Player(pitch=90).look_direction(), [0, -1, 0], atol=1e-12)


# --- digging ---


@pytest.mark.parametrize(
    ("node", "tool", "seconds"),
    [
        ("default:tree", None, 3.5),
        ("default:tree", "default:axe_wood", 3.0),
        ("default:tree", "default:axe_stone", 2.0),
        ("default:tree", "default:axe_steel", 1.4),
        ("default:leaves", None, 0.4),
        ("default:leaves", "default:pick_diamond", 0.4),
        ("default:dirt", "default:axe_steel", 0.7),
        ("default:stone", None, None),
        ("default:stone", "default:pick_wood", 1.6),
        ("default:stone", "default:pick_stone", 1.0),
        ("default:stone", "default:pick_steel", 0.8),
        ("default:stone", "default:pick_diamond", 0.5),
        ("default:stone_with_iron", "default:pick_wood", None),
        ("default:stone_with_iron", "default:pick_stone", 2.0),
        ("default:stone_with_iron", "default:pick_steel", 1.6),
        ("default:stone_with_iron", "default:pick_diamond", 1.0),
        ("default:stone_with_diamond", "default:pick_stone", None),
        ("default:stone_with_diamond", "default:pick_steel", 4.0),
        ("default:stone_with_diamond", "default:pick_diamond", 2.0),
        ("default:steelblock", None, None),
        ("default:steelblock", "default:sword_steel", None),
        ("default:torch", None, 0.0),
    ],
)
def test_dig_times_follow_minetest_games_table(materials, tools, node, tool, seconds):
    assert tools.dig_time(materials[node], tool) == seconds


def test_punch_interval_and_damage_of_hand_axe_and_sword(tools):
    assert (tools.hand.damage, tools.hand.full_punch_interval) == (1, 0.9)
    assert (tools["default:axe_steel"].damage, tools["default:axe_steel"].full_punch_interval) == (
        4,
        1.0,
    )
    steel_sword = tools["default:sword_steel"]
    assert (steel_sword.damage, steel_sword.full_punch_interval) == (6, 0.8)
    assert tools.wielded_tool("default:dirt") is tools.hand


def test_pointed_node_is_the_block_in_view(materials, config):
    world, player = facing_block(materials, "default:tree")
    pointed = pointed_node(world, player, config)
    assert pointed.node == (0, 6, 2)
    assert pointed.above == (0, 6, 1)
    assert pointed.distance == pytest.approx(1.5)


def test_nothing_is_pointed_beyond_the_interaction_range(materials, config):
    world = flat_world(materials)
    world.set(0, 6, 5, "default:tree")  # 4.5 nodes ahead of the eye
    assert pointed_node(world, Player(position=[0.0, FLOOR_TOP, 0.0]), config) is None


def test_water_is_not_pointed(materials, config):
    world, player = facing_block(materials, "default:tree")
    world.set(0, 6, 1, "default:water_source")
    assert pointed_node(world, player, config).node == (0, 6, 2)


def test_numba_and_numpy_rays_agree(materials, config):
    world = flat_world(materials)
    world.fill((-3, 5, -3), (3, 7, 3), "default:dirt")
    world.fill((-1, 5, -1), (1, 7, 1), "air")
    rng = np.random.default_rng(3)
    for _ in range(200):
        player = Player(
            position=[rng.uniform(-0.7, 0.7), FLOOR_TOP, rng.uniform(-0.7, 0.7)],
            yaw=rng.uniform(0, 360),
            pitch=rng.uniform(-90, 90),
        )
        assert pointed_node(world, player, config, "numba") == pointed_node(
            world, player, config, "numpy"
        )


def test_steel_axe_digs_a_trunk_node_in_exactly_280_frames(materials, tools, config):
    world, player = facing_block(materials, "default:tree", wielded="default:axe_steel")
    rng = np.random.default_rng(0)
    events = [dig_frame(world, player, tools, config, True, rng) for _ in range(280)]
    assert events[:279] == [None] * 279
    assert events[279].name == "default:tree"
    assert events[279].node == (0, 6, 2)
    assert world.get(0, 6, 2) == AIR
    assert player.inventory.count("default:tree") == 1


def test_releasing_dig_resets_the_progress(materials, tools, config):
    world, player = facing_block(materials, "default:tree", wielded="default:axe_steel")
    rng = np.random.default_rng(0)
    for _ in range(279):
        dig_frame(world, player, tools, config, True, rng)
    dig_frame(world, player, tools, config, False, rng)
    events = [dig_frame(world, player, tools, config, True, rng) for _ in range(279)]
    assert events == [None] * 279
    assert world.get_name(0, 6, 2) == "default:tree"


def test_pointing_elsewhere_resets_the_progress(materials, tools, config):
    world, player = facing_block(materials, "default:tree", wielded="default:axe_steel")
    world.set(1, 6, 2, "default:tree")
    rng = np.random.default_rng(0)
    for _ in range(200):
        dig_frame(world, player, tools, config, True, rng)
    player.position[0] = 1.0
    for _ in range(200):
        assert dig_frame(world, player, tools, config, True, rng) is None


def test_stone_cannot_be_dug_by_hand(materials, tools, config):
    world, player = facing_block(materials, "default:stone")
    rng = np.random.default_rng(0)
    for _ in range(2000):
        assert dig_frame(world, player, tools, config, True, rng) is None
    assert world.get_name(0, 6, 2) == "default:stone"


def test_dug_stone_gives_cobble(materials, tools, config):
    world, player = facing_block(materials, "default:stone", wielded="default:pick_diamond")
    rng = np.random.default_rng(0)
    events = [dig_frame(world, player, tools, config, True, rng) for _ in range(100)]
    dug = [e for e in events if e is not None]
    assert [(e.item, e.count, e.leftover) for e in dug] == [("default:cobble", 1, 0)]
    assert player.inventory.count("default:cobble") == 1


def test_place_puts_the_wielded_node_against_the_pointed_face(materials, config):
    world, player = facing_block(materials, "default:tree")
    player.inventory.add("default:dirt", 3)
    assert place(world, player, config) == (0, 6, 1)
    assert world.get_name(0, 6, 1) == "default:dirt"
    assert player.inventory.count("default:dirt") == 2


def test_place_refuses_a_cell_inside_a_body(materials, config):
    world = flat_world(materials)
    player = Player(position=[0.0, FLOOR_TOP, 0.0], pitch=90.0)
    player.inventory.add("default:dirt")
    assert place(world, player, config) is None  # the cell above the floor holds the player
    world2, other = facing_block(materials, "default:tree")
    other.inventory.add("default:dirt")
    body = (np.array([-0.3, 5.5, 0.7]), np.array([0.3, 7.0, 1.3]))
    assert place(world2, other, config, bodies=[body]) is None
    assert world2.get(0, 6, 1) == AIR


def test_place_with_an_item_that_is_not_a_node_does_nothing(materials, config):
    world, player = facing_block(materials, "default:tree", wielded="default:axe_steel")
    assert place(world, player, config) is None


def nodes_around(world, center, radii):
    """The ``voxels_around`` box read node by node through ``World.get``."""
    (cx, cy, cz), (rx, ry, rz) = center, radii
    return np.array(
        [
            [
                [world.get(x, y, z) for x in range(cx - rx, cx + rx + 1)]
                for y in range(cy - ry, cy + ry + 1)
            ]
            for z in range(cz - rz, cz + rz + 1)
        ],
        dtype=np.uint16,
    )


def test_voxels_around_reads_the_nodes_around_the_centre_and_follows_edits():
    table = MaterialTable.load()
    world = World(table, (9, 6, 7), origin=(-3, 2, 5))
    rng = np.random.default_rng(0)
    world.content[:] = rng.choice([table.id("air"), table.id("default:stone")], world.shape)
    pristine = world.copy()
    centers = [(0, 4, 8), (-3, 2, 5), (5, 7, 11), (-10, 0, 0)]
    for center in centers:
        expected = nodes_around(world, center, (2, 1, 3))
        assert np.array_equal(world.voxels_around(center, (2, 1, 3)), expected)
    world.set(1, 5, 8, "default:tree")
    world.fill((-3, 2, 5), (-2, 3, 6), "default:dirt")
    for center in centers:
        expected = nodes_around(world, center, (2, 1, 3))
        assert np.array_equal(world.voxels_around(center, (2, 1, 3)), expected)
    clone = world.copy()
    world.restore(pristine)
    assert np.array_equal(world.content_zyx(), pristine.content.transpose(2, 1, 0))
    assert np.array_equal(clone.content_zyx(), clone.content.transpose(2, 1, 0))


def test_voxel_crop_is_laid_out_z_y_x_around_the_centre_node():
    grid = np.arange(10 * 11 * 12, dtype=np.uint16).reshape(10, 11, 12)
    crop = crop_voxels(grid.transpose(2, 1, 0), center=(5, 5, 5), radii=(2, 1, 3))
    assert crop.shape == (7, 3, 5) and crop.dtype == np.uint16
    assert crop[3, 1, 2] == grid[5, 5, 5]
    assert crop[3 + 3, 1 + 1, 2 + 1] == grid[6, 6, 8]
    assert crop[0, 0, 0] == grid[3, 4, 2]


def test_voxel_crop_fills_outside_the_grid_with_ignore():
    grid = np.full((4, 4, 4), 1, dtype=np.uint16)
    crop = crop_voxels(grid, center=(0, 0, 0), radii=(1, 1, 1))
    assert crop[1, 1, 1] == 1 and crop[2, 2, 2] == 1
    assert crop[0, 1, 1] == IGNORE and crop[1, 0, 1] == IGNORE and crop[1, 1, 0] == IGNORE
    assert (crop_voxels(grid, center=(50, 0, 0), radii=(1, 1, 1)) == IGNORE).all()


def test_voxel_crop_honours_the_grid_origin():
    grid = np.zeros((5, 5, 5), dtype=np.uint8)
    grid[4, 3, 2] = 9
    crop = crop_voxels(grid, center=(-8, -7, -6), radii=(0, 0, 0), origin=(-10, -10, -10), fill=0)
    np.testing.assert_array_equal(crop, [[[9]]])


def test_voxel_info_stacks_ids_light_and_param2_as_uint32():
    table = MaterialTable.load()
    stone = table.id("default:stone")
    world = World(table, (3, 3, 3), fill="default:stone")
    world.light[:] = np.arange(27, dtype=np.uint8).reshape(3, 3, 3)
    world.param2[:] = 5
    info = world.voxel_info(center=(2, 1, 1), radii=(1, 0, 0))
    assert info.shape == (1, 1, 3, 3) and info.dtype == np.uint32
    np.testing.assert_array_equal(info[0, 0, 0], [stone, world.light[1, 1, 1], 5])
    np.testing.assert_array_equal(info[0, 0, 2], [IGNORE, 0, 0])


def test_voxel_crop_into_a_given_array_writes_the_same_box_there():
    grid = np.arange(6 * 5 * 4, dtype=np.uint16).reshape(4, 5, 6)
    batch = np.zeros((2, 3, 3, 5), dtype=np.uint16)
    crop = crop_voxels(grid, center=(1, 2, 3), radii=(2, 1, 1), out=batch[1])
    assert crop is batch[1] or np.shares_memory(crop, batch)
    assert np.array_equal(batch[1], crop_voxels(grid, center=(1, 2, 3), radii=(2, 1, 1)))
    assert not batch[0].any()
    with pytest.raises(ValueError, match="C-contiguous uint16 array of shape"):
        crop_voxels(grid, center=(1, 2, 3), radii=(2, 1, 1), out=np.zeros((3, 3, 4), np.uint16))
