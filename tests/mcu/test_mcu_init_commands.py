"""Init commands: Minecraft syntax parsed once, applied relative to the player at reset."""

import pytest

from omnigym.envs.mcu import init_commands
from omnigym.envs.mcu.registries import registry

from .helpers import bare_world


def run(world, *commands):
    for i, text in enumerate(commands):
        command = init_commands.parse(text, f"t.yaml: init_commands[{i}]", registry())
        if command is not None:
            init_commands.apply(world, command)


def test_give_and_replaceitem_fill_hand_armour_and_inventory():
    world = bare_world()
    run(
        world,
        "replaceitem entity @s weapon.mainhand diamond_sword",
        "give @s minecraft:oak_log 70",
        "replaceitem entity @s armor.chest iron_chestplate",
    )
    assert world.count("oak_log") == 70
    assert world.player.inventory.wielded == "diamond_sword"
    assert world.armor["chestplate"] == ("iron_chestplate", 165)
    assert world.armor_points() == 6


def test_replaceitem_overwrites_the_slot_as_in_minecraft():
    world = bare_world()
    run(world, "give @s oak_log 3", "replaceitem entity @s weapon.mainhand stone_sword")
    assert world.count("oak_log") == 0 and world.count("stone_sword") == 1


def test_summon_setblock_fill_and_tp_use_relative_coordinates():
    world = bare_world()
    run(world, "tp @s ~2 ~0 ~1", "summon zombie ~3 ~0 ~0", "setblock ~0 ~0 ~2 furnace")
    assert world.position == (2, 5, 1)
    assert world.mobs[0].position == (5, 5, 1)
    assert world.block((2, 5, 3)) == "furnace"
    run(world, "execute as @a at @s run fill ~1 ~0 ~1 ~3 ~2 ~3 stone hollow")
    assert world.block((3, 5, 2)) == "stone"
    assert world.block((4, 6, 3)) == "air"


def test_time_weather_effects_and_clear_change_the_state():
    world = bare_world()
    run(world, "give @s dirt 3", "time set night", "weather thunder", "effect give @s blindness 5")
    assert not world.is_day() and world.weather == "thunder"
    assert world.effects == {"blindness": 20} and world.visibility() == 2
    run(world, "clear @s")
    assert world.count("dirt") == 0


def test_unknown_item_is_skipped_with_a_warning_naming_file_and_item():
    with pytest.warns(UserWarning, match=r"t\.yaml: init_commands\[0\]: unknown item 'golden_rod'"):
        assert (
            init_commands.parse("give @s golden_rod 1", "t.yaml: init_commands[0]", registry())
            is None
        )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gamerule doDaylightCycle false", "unknown command 'gamerule'"),
        ("setblock ~1 ~0 stone", "cannot parse"),
        ("time set dusk", "cannot parse"),
        ("summon cow ^1 ^0 ^0", "local coordinates"),
        ("execute as @a", "without 'run'"),
    ],
)
def test_malformed_command_raises_naming_where(text, message):
    with pytest.raises(ValueError, match=r"t\.yaml: init_commands\[2\]") as error:
        init_commands.parse(text, "t.yaml: init_commands[2]", registry())
    assert message in str(error.value)


def test_a_placement_outside_the_arena_is_skipped_with_a_warning_naming_the_command():
    world = bare_world()
    with pytest.warns(UserWarning, match=r"t\.yaml: init_commands\[0\]: \(30, 5, 0\) is outside"):
        run(world, "setblock ~30 ~0 ~0 stone")
    with pytest.warns(UserWarning, match="outside the arena"):
        run(world, "tp @s 0 100 0")
    assert world.position == (0, 5, 0)


def test_a_task_file_names_the_line_of_an_unknown_item(tmp_path):
    from omnigym.envs.mcu.tasks import load_task_file

    path = tmp_path / "mcu_style.yaml"
    path.write_text(
        "name: t\ncategory: Combat\nsubcategory: Fight Mobs\ntext: Kill.\ninit_commands:\n"
        "- /give @s minecraft:diamond_sword\n- /give @s minecraft:netherite_sword\n"
        "success: killed(spider) >= 1\nmilestones: [{when: killed(spider), weight: 1}]\n"
        "oracle: {solver: combat}\n"
    )
    message = r"mcu_style\.yaml: line 7: init_commands\[1\]: unknown item 'netherite_sword'"
    with pytest.warns(UserWarning, match=message):
        task = load_task_file(path)
    assert [command.args[0] for command in task.init] == ["diamond_sword"]


def test_minecraft_style_commands_with_nested_nbt_parse():
    world = bare_world()
    with pytest.warns(UserWarning, match="unknown item 'shovel'"):
        run(
            world,
            '/give @s minecraft:shovel{Enchantments:[{id:"minecraft:efficiency",lvl:1}]} 1',
            "/summon minecraft:sheep ~2 ~ ~",
            "/give @s minecraft:cooked_beef 16",
        )
    assert world.mobs[0].position == (2, 5, 0) and world.count("cooked_beef") == 16
