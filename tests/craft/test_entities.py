"""Entities of the Craft engine: kinds, mob behaviour, punching, items, pointing, observation."""

import math

import numpy as np
import pytest

from omnigym.envs.craft.engine import Player, World
from omnigym.envs.craft.entities import (
    Entities,
    EntityContext,
    ItemEntity,
    KindTable,
    Mob,
    PlayerHurt,
    Spider,
)

FLOOR_TOP = 4.5  # feet height of a body standing on the floor layer y = 4


def flat_world(materials, half=20):
    world = World(materials, (2 * half, 16, 2 * half), origin=(-half, 0, -half))
    world.fill((-half, 0, -half), (half, 4, half), "default:stone")
    return world


def context(world, config, players, seed=0, alive=None):
    alive = [True] * len(players) if alive is None else alive
    return EntityContext(world, config, np.random.default_rng(seed), players, alive)


def run(entities, ctx, frames):
    for _ in range(frames):
        entities.update(ctx)


def horizontal_distance(a, b):
    return math.hypot(a[0] - b[0], a[2] - b[2])


def test_kind_table_has_the_published_ids_and_stats():
    kinds = KindTable.load()
    ids = {kind.name: kind.id for kind in kinds}
    assert ids == {
        "player": 1,
        "item": 2,
        "spider": 3,
        "monster_a": 4,
        "monster_b": 5,
        "monster_c": 6,
        "monster_d": 7,
        "chicken": 8,
        "sheep": 9,
        "pig": 10,
        "cow": 11,
        "villager": 12,
    }
    spider = kinds["spider"]
    assert (spider.hp, spider.damage, spider.reach, spider.view_range) == (25, 3, 2.0, 20.0)
    assert spider.behaviour == "hostile" and spider.leap is not None
    tiers = [kinds[f"monster_{t}"] for t in "abcd"]
    assert [k.hp for k in tiers] == [10, 16, 24, 30]
    assert [k.damage for k in tiers] == [1, 2, 3, 4]
    assert [k.speed for k in tiers] == [1.5, 2.0, 2.0, 2.5]
    assert {(k.reach, k.view_range) for k in tiers} == {(2.0, 16.0)}
    assert {kinds[a].behaviour for a in ("chicken", "sheep", "pig", "cow")} == {"passive"}
    assert kinds["villager"].behaviour == "villager"
    assert kinds.by_id(7).name == "monster_d"


def test_kind_table_replace_changes_one_kind_only():
    kinds = KindTable.load().replace("monster_b", hp=40, damage=5)
    assert (kinds["monster_b"].hp, kinds["monster_b"].damage) == (40, 5)
    assert kinds["monster_a"].hp == 10
    with pytest.raises(TypeError, match="armour"):
        kinds.replace("monster_a", armour=3)


def test_spawn_builds_the_class_of_each_behaviour():
    entities = Entities()
    assert type(entities.spawn("spider", (0, 5, 0))) is Spider
    assert type(entities.spawn("cow", (0, 5, 0))) is Mob
    item = entities.spawn("item", (0, 5, 0), item="default:diamond", count=3, scale=2.0)
    assert isinstance(item, ItemEntity) and (item.item, item.count) == ("default:diamond", 3)
    lo, hi = item.box()
    np.testing.assert_allclose(hi - lo, [0.6, 0.6, 0.6])
    with pytest.raises(TypeError, match="item"):
        entities.spawn("item", (0, 5, 0))
    with pytest.raises(KeyError, match="dragon"):
        entities.spawn("dragon", (0, 5, 0))
    assert len(entities) == 3 and entities.count("spider") == 1


def test_hostile_mob_walks_to_a_player_in_view_and_attacks_at_its_interval(materials, config):
    player = Player(position=(0, FLOOR_TOP, 4))
    ctx = context(flat_world(materials), config, [player])
    entities = Entities()
    mob = entities.spawn("monster_d", (0, FLOOR_TOP, -8))
    frames = 0
    while not ctx.events:
        entities.update(ctx)
        frames += 1
        assert frames < 2000
    # 10 nodes to cover at 2.5 nodes/s take 800 frames of 5 ms, plus the acceleration.
    assert 800 <= frames <= 820
    assert ctx.events == [PlayerHurt(player=0, damage=4, kind="monster_d")]
    assert mob.state == "attack"
    assert horizontal_distance(mob.position, player.position) <= 2.0
    ctx.events.clear()
    run(entities, ctx, 1000)  # 5 s at one attack per second
    assert ctx.events == [PlayerHurt(0, 4, "monster_d")] * 5


def test_mob_ignores_players_out_of_view_range_or_dead(materials, config):
    far = Player(position=(0, FLOOR_TOP, 20))  # view range 16; 3 s of wandering cover 3
    dead = Player(position=(3, FLOOR_TOP, 0))
    ctx = context(flat_world(materials), config, [far, dead], alive=[True, False])
    entities = Entities()
    mob = entities.spawn("monster_a", (0, FLOOR_TOP, 0))
    for _ in range(600):
        entities.update(ctx)
        assert mob.state in ("idle", "wander")
    assert ctx.events == []


def test_mob_does_not_walk_through_a_wall(materials, config):
    world = flat_world(materials)
    world.fill((-5, 5, 2), (5, 7, 2), "default:stone")  # faces z = 1.5, three nodes high
    player = Player(position=(0, FLOOR_TOP, 6))
    ctx = context(world, config, [player])
    entities = Entities()
    mob = entities.spawn("monster_d", (0, FLOOR_TOP, -2))
    for _ in range(800):
        entities.update(ctx)
        assert mob.position[2] + 0.4 <= 1.5 + 1e-9
    assert mob.state == "chase"
    assert mob.position[2] == pytest.approx(1.1)
    assert ctx.events == []


def test_mob_jumps_onto_a_one_node_step(materials, config):
    world = flat_world(materials)
    world.fill((-5, 5, 2), (5, 5, 10), "default:stone")  # a terrace one node up
    player = Player(position=(0, FLOOR_TOP + 1, 8))
    ctx = context(world, config, [player])
    entities = Entities()
    mob = entities.spawn("monster_d", (0, FLOOR_TOP, -2))
    run(entities, ctx, 800)
    assert mob.position[1] == pytest.approx(FLOOR_TOP + 1)
    assert mob.position[2] > 2.0


def test_gravity_puts_a_mob_dropped_in_the_air_on_the_floor(materials, config):
    ctx = context(flat_world(materials), config, [])
    entities = Entities()
    cow = entities.spawn("cow", (0, 10.0, 0))
    run(entities, ctx, 20)
    assert cow.position[1] < 10.0 and not cow.on_ground
    run(entities, ctx, 300)
    assert cow.position[1] == pytest.approx(FLOOR_TOP)
    assert cow.on_ground


def test_punched_animal_flees_from_the_attacker(materials, config, tools):
    ctx = context(flat_world(materials), config, [])
    entities = Entities()
    pig = entities.spawn("pig", (0, FLOOR_TOP, 0))
    run(entities, ctx, 5)
    attacker = np.array([0.0, FLOOR_TOP, -1.5])
    result = entities.punch(pig, tools.hand, attacker)
    assert (result.kind, result.damage, result.killed, result.picked_up) == ("pig", 1, False, None)
    assert pig.hp == 9 and pig.state == "flee"
    start = horizontal_distance(pig.position, attacker)
    run(entities, ctx, 400)  # 2 s of a 3 s flight at 3 nodes/s
    assert horizontal_distance(pig.position, attacker) > start + 5.0
    assert pig.state == "flee"
    run(entities, ctx, 250)
    assert pig.state in ("idle", "wander")


def test_spider_dies_on_the_fifth_sword_punch_and_is_removed_after_update(materials, config, tools):
    ctx = context(flat_world(materials), config, [])
    entities = Entities()
    spider = entities.spawn("spider", (0, FLOOR_TOP, 2))
    sword = tools["default:sword_steel"]
    attacker = (0.0, FLOOR_TOP, 0.0)
    results = [entities.punch(spider, sword, attacker) for _ in range(5)]
    assert [r.damage for r in results] == [6] * 5
    assert [r.killed for r in results] == [False] * 4 + [True]
    assert spider.hp == -5 and spider.removed
    assert entities.count("spider") == 0 and len(entities) == 1
    entities.update(ctx)
    assert len(entities) == 0
    with pytest.raises(ValueError, match="removed"):
        entities.punch(spider, sword, attacker)


def test_punching_a_player_avatar_only_reports_the_damage(tools):
    entities = Entities()
    avatar = entities.spawn("player", (0, FLOOR_TOP, 0))
    result = entities.punch(avatar, tools.hand, (0.0, FLOOR_TOP, -1.0))
    assert (result.kind, result.damage, result.killed) == ("player", 1, False)
    assert avatar.hp == 20 and not avatar.removed and not avatar.velocity.any()


def test_punch_knocks_a_mob_back_away_from_the_attacker(materials, config, tools):
    ctx = context(flat_world(materials), config, [])
    entities = Entities()
    villager = entities.spawn("villager", (0, FLOOR_TOP, 0), hp=50)
    run(entities, ctx, 5)
    entities.punch(villager, tools.hand, (-1.0, FLOOR_TOP, 0.0))
    assert villager.velocity[0] > 0 and villager.velocity[1] > 0
    assert villager.hp == 49


def test_item_falls_to_the_floor_and_is_picked_up_when_punched(materials, config, tools):
    ctx = context(flat_world(materials), config, [])
    entities = Entities()
    item = entities.spawn("item", (0.2, 8.0, 0.3), item="default:diamond", count=2)
    run(entities, ctx, 200)
    np.testing.assert_allclose(item.position, [0.2, FLOOR_TOP, 0.3])
    result = entities.punch(item, tools.hand, (0.0, FLOOR_TOP, -2.0))
    assert result.picked_up == ("default:diamond", 2) and result.damage == 0
    entities.update(ctx)
    assert len(entities) == 0


def test_pointed_picks_the_nearest_entity_along_the_ray_and_not_behind():
    entities = Entities()
    far = entities.spawn("monster_a", (0, 0, 6))
    near = entities.spawn("monster_a", (0, 0, 3))
    behind = entities.spawn("monster_a", (0, 0, -3))
    eye = np.array([0.0, 1.5, 0.0])
    entity, distance = entities.pointed(eye, (0, 0, 1), 4.0)
    assert entity is near and distance == pytest.approx(2.7)
    assert entities.pointed(eye, (0, 0, 1), 2.5) is None
    near.removed = True
    assert entities.pointed(eye, (0, 0, 1), 4.0) is None
    assert entities.pointed(eye, (0, 0, 1), 10.0)[0] is far
    far.removed = True
    assert entities.pointed(eye, (0, 0, 1), 10.0) is None
    entity, distance = entities.pointed(eye, (0, 0, -1), 4.0)
    assert entity is behind and distance == pytest.approx(2.7)
    assert entities.pointed(eye, (1, 0, 0), 10.0) is None


def test_observation_rows_are_nearest_first_with_deltas_and_zero_padding():
    entities = Entities()
    entities.spawn("cow", (5, 4.5, 0), hp=7)
    entities.spawn("spider", (0, 4.5, -2))
    entities.spawn("item", (1, 5.5, 1), item="default:diamond")
    rows = entities.observation((0.0, 4.5, 0.0))
    assert rows.shape == (32, 6) and rows.dtype == np.float32
    np.testing.assert_allclose(
        rows[:3],
        [
            [2, 1, 1, 1, 1, 1],
            [3, 0, 0, -2, 25, 1],
            [11, 5, 0, 0, 7, 1],
        ],
    )
    assert not rows[3:].any()
    np.testing.assert_allclose(entities.observation((0.0, 4.5, 0.0), max_rows=2), rows[:2])


def test_boxes_give_centre_half_size_and_colour():
    entities = Entities()
    entities.spawn("monster_a", (1, 4.5, 2))
    objective = entities.spawn("item", (0, 5, 0), item="default:diamond", scale=2.0)
    boxes = entities.boxes()
    assert boxes.shape == (2, 9) and boxes.dtype == np.float64
    np.testing.assert_allclose(boxes[0], [1, 5.4, 2, 0.3, 0.9, 0.3, 80, 160, 70])
    np.testing.assert_allclose(boxes[1, :6], [0, 5.3, 0, 0.3, 0.3, 0.3])
    assert entities.boxes(exclude=objective).shape == (1, 9)


def test_spider_leaps_at_a_player_within_leap_range(materials, config):
    player = Player(position=(0, FLOOR_TOP, 4.5))
    ctx = context(flat_world(materials), config, [player])
    entities = Entities()
    spider = entities.spawn("spider", (0, FLOOR_TOP, 0))
    run(entities, ctx, 2)
    assert spider.leaping and not spider.on_ground
    assert spider.velocity[2] == pytest.approx(6.0, abs=0.5)
    run(entities, ctx, 30)
    assert spider.position[1] > FLOOR_TOP + 0.5


def test_same_seed_gives_identical_positions(materials, config):
    def positions(seed):
        player = Player(position=(0, FLOOR_TOP, 0))
        ctx = context(flat_world(materials), config, [player], seed=seed)
        entities = Entities()
        for i, kind in enumerate(("chicken", "sheep", "villager", "spider", "monster_b")):
            entities.spawn(kind, (-15 + 7 * i, FLOOR_TOP, -15))
        run(entities, ctx, 600)
        return np.array([e.position for e in entities])

    first = positions(3)
    np.testing.assert_array_equal(first, positions(3))
    assert not np.array_equal(first, positions(4))
