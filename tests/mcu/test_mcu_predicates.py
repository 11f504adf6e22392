"""The predicate grammar: parse errors name file and position; logic and counters evaluate."""

import pytest

from omnigym.envs.mcu.predicates import compile_predicate
from omnigym.envs.mcu.registries import registry

from .helpers import bare_world, make_task


def check(text, world):
    return compile_predicate(text, "t.yaml: success", registry())(world)


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("killed(spidr) >= 1", 7, "unknown mob 'spidr'"),
        ("killed(spider) >=", 17, "expected a number"),
        ("kill(spider)", 0, "unknown function 'kill'"),
        ("near(spider 3)", 12, "expected ')'"),
        ("mined(stone) >= 1 and", 21, "expected a name"),
        ("mined(stone) > 1", 13, "unexpected character '>'"),
        ("inventory_has(oak_log, 1, 2)", 26, "at most 2 arguments"),
        ("near(spider)", 0, "at least 2 arguments"),
        ("mined(#woods)", 6, "unknown tag '#woods'"),
        ("(mined(stone)", 13, "expected ')'"),
    ],
)
def test_malformed_predicate_raises_naming_file_and_position(text, position, message):
    with pytest.raises(ValueError, match=r"t\.yaml: success: position") as error:
        compile_predicate(text, "t.yaml: success", registry())
    assert f"position {position}:" in str(error.value)
    assert message in str(error.value)


def test_a_task_file_with_a_bad_milestone_names_the_file_and_the_field():
    with pytest.raises(ValueError, match=r"test_task\.yaml: milestones\[0\]\.when: position 0"):
        make_task(success="mined(stone) >= 1", milestones=[{"when": "oops(1)", "weight": 1}])


def test_counters_compare_with_each_operator():
    world = bare_world()
    world.events["mined", "stone"] = 2
    assert check("mined(stone) >= 2", world)
    assert not check("mined(stone) >= 3", world)
    assert check("mined(stone) <= 2", world) and not check("mined(stone) <= 1", world)
    assert check("mined(stone) == 2", world) and not check("mined(stone) == 1", world)
    assert check("mined(stone)", world) and not check("mined(dirt)", world)


def test_and_binds_tighter_than_or_and_not_negates():
    world = bare_world()
    world.events["killed", "zombie"] = 1
    assert check("killed(zombie) or killed(spider) and killed(cow)", world)
    assert not check("(killed(zombie) or killed(spider)) and killed(cow)", world)
    assert check("not killed(spider) and not not killed(zombie)", world)


def test_tags_count_every_member_and_inventory_has_counts_items():
    world = bare_world()
    world.give("oak_log", 2)
    world.give("birch_log", 1)
    assert check("inventory_has(#logs, 3)", world)
    assert not check("inventory_has(oak_log, 3)", world)
    assert check("inventory_has(oak_log)", world)


def test_near_sees_blocks_and_mobs_within_the_radius():
    world = bare_world()
    world.grid.set(3, 5, 0, "diamond_ore")
    world.summon("cow", (0, 5, 5))
    assert check("near(diamond_ore, 3)", world) and not check("near(diamond_ore, 2)", world)
    assert check("near(cow, 5)", world) and not check("near(cow, 4)", world)


def test_structure_pillar_and_height_predicates_read_the_world():
    world = bare_world()
    world.give("dirt", 3)
    world.look(90)
    for _ in range(3):
        world.place("dirt", world.placement())
    assert world.position == (0, 8, 0)
    assert check("structure(pillar, 3) and climbed(3) and not y_below(8)", world)
    assert not check("structure(pillar, 4)", world)


def test_a_task_file_names_the_line_of_a_bad_predicate(tmp_path):
    from omnigym.envs.mcu.tasks import load_task_file

    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\ncategory: Combat\nsubcategory: Fight Mobs\ntext: Kill.\n"
        "success: killed(spider) >= 1\nmilestones:\n"
        "- {when: 'killed(spidr) >= 1', weight: 1.0}\noracle: {solver: combat}\n"
    )
    with pytest.raises(ValueError, match=r"bad\.yaml: line 7: milestones\[0\]\.when: position 7"):
        load_task_file(path)
