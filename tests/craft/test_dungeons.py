"""Procedural dungeons: ASCII maps, RandomMapGen and the 25-task sequence."""

import inspect
from collections import Counter

import numpy as np
import pytest
from scipy import ndimage

from omnigym.envs.craft.dungeons import (
    RandomMapGen,
    join_sequence,
    parse_ascii_map,
    sequence0_25,
    split_sequence,
)

SMALL_MAP = "\n".join(
    [
        "#####",
        "#####",
        "#####",
        "-",
        "#####",
        "#@ a#",
        "# bO#",
        "-",
        "%%%%%",
        "%   %",
        "%%%%%",
    ]
)


@pytest.fixture(scope="module")
def sequence():
    return sequence0_25()


def test_parser_maps_columns_to_x_rows_to_z_and_layers_to_y():
    dungeon = parse_ascii_map(SMALL_MAP)
    assert dungeon.shape == (5, 3, 3)
    assert dungeon.player == (1, 1, 1)
    assert dungeon.objectives == ((3, 1, 2),)
    assert dungeon.monsters == (("a", (3, 1, 1)), ("b", (2, 1, 2)))
    assert dungeon.walls[:, 0, :].all()
    assert dungeon.walls[0, 1, 1] and not dungeon.walls[1, 1, 1]
    assert dungeon.glass[:, 2, 0].all() and not dungeon.glass[2, 2, 1]
    assert not (dungeon.walls & dungeon.glass).any()


def test_parser_ignores_blank_lines_around_the_map_and_carriage_returns():
    padded = "\n" + SMALL_MAP.replace("\n", "\r\n") + "\n\n"
    dungeon = parse_ascii_map(padded)
    assert dungeon.player == (1, 1, 1)
    assert dungeon.shape == (5, 3, 3)


@pytest.mark.parametrize(
    "text, message",
    [
        (SMALL_MAP.replace("#@ a#", "#@ x#"), r"line 6, column 4: unknown character 'x'"),
        (SMALL_MAP.replace("# bO#", "#@bO#"), r"line 7, column 2: second '@'.*line 6, column 2"),
        (SMALL_MAP.replace("@", " "), r"no '@' \(player\)"),
        (SMALL_MAP.replace("O", " "), r"no 'O' \(objective\)"),
        (SMALL_MAP.replace("# bO#", "# bO"), r"line 7, column 5: row is 4 characters wide"),
        (SMALL_MAP.replace("%   %\n", ""), r"line 9, column 1: layer 3 has 2 rows, layer 1 has 3"),
        (SMALL_MAP.replace("-\n", "-\n-\n", 1), r"line 5, column 1: .*empty layer"),
        ("\n\n", r"no rows"),
    ],
)
def test_parser_errors_name_the_line_and_column(text, message):
    with pytest.raises(ValueError, match=message):
        parse_ascii_map(text)


def test_same_seed_gives_the_same_map():
    assert RandomMapGen(seed=7).rasterize() == RandomMapGen(seed=7).rasterize()
    from_generators = [
        RandomMapGen(n_rooms=5, seed=np.random.default_rng(3)).rasterize() for _ in range(2)
    ]
    assert from_generators[0] == from_generators[1]
    assert RandomMapGen(seed=7).rasterize() != RandomMapGen(seed=8).rasterize()


def test_generator_seed_is_used_as_is_and_advances():
    rng = np.random.default_rng(0)
    first, second = RandomMapGen(seed=rng), RandomMapGen(seed=rng)
    assert first.rasterize() != second.rasterize()


def test_rasterized_map_has_floor_walls_and_glass_ceiling():
    gen = RandomMapGen(seed=1)
    dungeon = parse_ascii_map(gen.rasterize(wall_height=3, ceiling=True))
    floor = gen.footprint().T  # (x, z) like the parsed grids
    assert dungeon.shape == (gen.width, 5, gen.depth)
    np.testing.assert_array_equal(dungeon.walls[:, 0, :], floor)
    np.testing.assert_array_equal(dungeon.glass[:, 4, :], floor)
    for y in (1, 2, 3):
        walls = dungeon.walls[:, y, :]
        assert not (walls & ~floor).any()
        assert walls[0, :].sum() == floor[0, :].sum()  # map edge cells are walls
    assert dungeon.player == (gen.player_pos[0], 1, gen.player_pos[1])
    assert dungeon.objectives == ((gen.objective_pos[0], 1, gen.objective_pos[1]),)
    assert Counter(t for t, _ in dungeon.monsters) == Counter(t for t, _ in gen.monster_locs)


def test_map_without_ceiling_has_floor_and_wall_layers_only():
    dungeon = parse_ascii_map(RandomMapGen(seed=1).rasterize(wall_height=2, ceiling=False))
    assert dungeon.shape[1] == 3
    assert not dungeon.glass.any()


@pytest.mark.parametrize("seed", range(6))
def test_rooms_are_disjoint_and_sized_within_bounds(seed):
    gen = RandomMapGen(n_rooms=6, room_min_size=5, room_max_size=9, seed=seed)
    sides = gen.rooms[:, 2:] - gen.rooms[:, :2]
    assert ((sides >= 5) & (sides <= 9)).all()
    for i, (x0, z0, x1, z1) in enumerate(gen.rooms):
        for a0, b0, a1, b1 in np.delete(gen.rooms, i, axis=0):
            assert x1 < a0 or a1 < x0 or z1 < b0 or b1 < z0  # at least one empty cell between
    assert gen.rooms[:, :2].min() == 0
    assert (gen.width, gen.depth) == (gen.rooms[:, 2].max(), gen.rooms[:, 3].max())


@pytest.mark.parametrize("seed", range(6))
def test_every_room_is_reachable_from_the_player(seed):
    gen = RandomMapGen(n_rooms=6, seed=seed)
    labels, _ = ndimage.label(gen.footprint())
    player_region = labels[gen.player_pos[1], gen.player_pos[0]]
    assert all(labels[z, x] == player_region for x, z in gen.centers)


def test_corridors_are_five_cells_wide():
    gen = RandomMapGen(n_rooms=5, seed=2)
    floor = gen.footprint()
    for a, b in gen.corridors:
        (x0, z0), (x1, z1) = gen.centers[a], gen.centers[b]
        for t in np.linspace(0.0, 1.0, 50):
            x, z = int(round(x0 + t * (x1 - x0))), int(round(z0 + t * (z1 - z0)))
            assert floor[z - 1 : z + 2, x].all() and floor[z, x - 1 : x + 2].all()
    assert not floor.all()


def test_player_and_objective_stand_at_room_centres_farthest_apart():
    gen = RandomMapGen(n_rooms=5, seed=4)
    centers = [tuple(c) for c in gen.centers.tolist()]
    assert gen.player_pos == centers[gen.player_room]
    assert any(gen.player_room in pair for pair in gen.corridors)
    distances = [np.hypot(x - gen.player_pos[0], z - gen.player_pos[1]) for x, z in centers]
    assert gen.objective_pos == centers[int(np.argmax(distances))]


@pytest.mark.parametrize("seed", range(4))
def test_monsters_stand_inside_rooms_away_from_player_room_walls(seed):
    gen = RandomMapGen(n_rooms=5, min_monsters_per_room=1, max_monsters_per_room=4, seed=seed)
    assert gen.monster_locs
    per_room = Counter()
    tiers_per_room: dict[int, set] = {}
    for tier, (x, z) in gen.monster_locs:
        (room,) = [
            k
            for k, (x0, z0, x1, z1) in enumerate(gen.rooms)
            if x0 + 2 <= x < x1 - 2 and z0 + 2 <= z < z1 - 2
        ]
        assert room != gen.player_room
        assert (x, z) not in (gen.player_pos, gen.objective_pos)
        per_room[room] += 1
        tiers_per_room.setdefault(room, set()).add(tier)
    assert max(per_room.values()) <= 3
    assert all(len(tiers) == 1 for tiers in tiers_per_room.values())
    assert len({loc for _, loc in gen.monster_locs}) == len(gen.monster_locs)


def test_monster_tier_probabilities_select_the_tiers():
    gen = RandomMapGen(
        min_monsters_per_room=2, max_monsters_per_room=4, monsters={"c": 1.0}, seed=0
    )
    assert {tier for tier, _ in gen.monster_locs} == {"c"}
    empty = RandomMapGen(min_monsters_per_room=0, max_monsters_per_room=1, seed=0)
    assert empty.monster_locs == []


def test_monsters_may_share_the_player_room_when_allowed():
    gen = RandomMapGen(
        n_rooms=2,
        room_min_size=12,
        room_max_size=12,
        min_monsters_per_room=3,
        max_monsters_per_room=4,
        monsters_in_player_spawn=True,
        seed=0,
    )
    assert len(gen.monster_locs) == 6


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_rooms": 1}, "n_rooms"),
        ({"room_min_size": 4}, "room_min_size"),
        ({"room_min_size": 9, "room_max_size": 8}, "room_max_size"),
        ({"dispersion": 0.0}, "dispersion"),
        ({"min_monsters_per_room": 2, "max_monsters_per_room": 2}, "max_monsters_per_room"),
        ({"monsters": {"e": 1.0}}, "monsters"),
        ({"monsters": {"a": 0.5, "b": 0.2}}, "monsters"),
        ({"seed": "zero"}, "seed"),
    ],
)
def test_bad_generator_arguments_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} "):
        RandomMapGen(**kwargs)


def test_rasterize_rejects_zero_wall_height():
    with pytest.raises(ValueError, match="wall_height must be an int >= 1"):
        RandomMapGen(seed=0).rasterize(wall_height=0)


def test_sequence_has_25_parseable_maps_and_is_deterministic(sequence):
    assert [task.task_id for task in sequence] == list(range(25))
    again = sequence0_25()
    assert [t.ascii_map for t in again] == [t.ascii_map for t in sequence]
    assert sequence0_25(seed=1)[5].ascii_map != sequence[5].ascii_map
    for task in sequence:
        dungeon = parse_ascii_map(task.ascii_map)
        assert dungeon.shape[1] == 6  # floor and five wall layers, no ceiling
        assert not dungeon.glass.any()
        assert set(task.mapgen_kwargs) <= set(inspect.signature(RandomMapGen).parameters)


def test_sequence_follows_craftiums_difficulty_ramp(sequence):
    dungeons = [parse_ascii_map(task.ascii_map) for task in sequence]
    tiers = [Counter(tier for tier, _ in d.monsters) for d in dungeons]
    sides = [(d.shape[0], d.shape[2]) for d in dungeons]
    assert sides[0] == sides[1] == (12, 12)
    assert tiers[0] == tiers[1] == Counter()
    first_b = next(i for i, t in enumerate(tiers) if t["b"])
    first_c = next(i for i, t in enumerate(tiers) if t["c"])
    assert 2 < first_b < first_c < 24
    assert all(set(t) == {"a"} for t in tiers[2:first_b])
    assert all(sum(t.values()) <= 15 for t in tiers[first_b:first_c])
    assert all(sum(t.values()) <= 44 for t in tiers[first_c:])
    assert [i for i, t in enumerate(tiers) if t["d"]] == [24]
    assert tiers[24]["d"] == 5
    largest = max(range(25), key=lambda i: sides[i][0] * sides[i][1])
    assert largest == 24
    assert all(80 <= side <= 100 for side in sides[24])


def test_sequence_text_splits_back_into_its_maps(sequence):
    maps = [task.ascii_map for task in sequence]
    text = join_sequence(maps)
    assert text.count("\n=\n") == 24
    assert split_sequence(text) == maps
    # Craftium's loader splits on "=" alone; every piece still parses
    assert parse_ascii_map(text.split("=")[3]).shape == parse_ascii_map(maps[3]).shape
