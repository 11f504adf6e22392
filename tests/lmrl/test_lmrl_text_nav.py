"""Text-Nav: the house, the grammar, reward rules, oracle, dataset."""

from itertools import product

import numpy as np
import pytest

import omnigym
from omnigym.agents.lmrl.text_nav import TextNavOracle
from omnigym.envs.lmrl.datasets import generate
from omnigym.envs.lmrl.normalization import normalize
from omnigym.envs.lmrl.text_nav import (
    CARRIED,
    FLOOR,
    INADMISSIBLE,
    State,
    TextNavBehaviour,
    TextNavEnv,
    load_house,
    task_state,
    walkthrough,
)

from .episodes import play

HOUSE = load_house()
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
WALKTHROUGH = [
    "take stale food from coffee table",
    "go east",
    "open fridge",
    "put stale food in fridge",
    "close fridge",
]
SHORTEST = {
    "living room": 5,
    "office": 6,
    "kitchen": 6,
    "bedroom": 7,
    "dining room": 7,
    "backyard": 7,
    "bathroom": 8,
    "garden": 8,
}


# -- the house --------------------------------------------------------------------------------


def test_house_has_the_eight_rooms_joined_by_two_way_cardinal_exits():
    assert set(HOUSE.rooms) == {
        "bedroom",
        "office",
        "bathroom",
        "living room",
        "kitchen",
        "dining room",
        "garden",
        "backyard",
    }
    for room, exits in HOUSE.exits.items():
        for way, there in exits.items():
            assert HOUSE.exits[there][OPPOSITE[way]] == room
    assert len(HOUSE.distances("kitchen")) == 8


def test_stale_food_starts_on_the_living_room_table_and_the_fridge_is_a_closed_kitchen_box():
    start = HOUSE.start_state("garden")
    table = start.places[HOUSE.objects.index("stale food")]
    assert (table, HOUSE.container_room[table]) == ("coffee table", "living room")
    assert HOUSE.container_room["fridge"] == "kitchen"
    assert set(HOUSE.boxes) == {"fridge", "chest"}
    assert start.opened == (False, False)
    assert set(HOUSE.objects) == {
        "stale food",
        "fresh food",
        "bowl",
        "coffee cup",
        "plate",
        "utensils",
        "fruit",
    }


def test_room_descriptions_are_unique_and_never_name_a_room():
    descriptions = list(HOUSE.descriptions.values())
    for description in descriptions:
        assert sum(description in other for other in descriptions) == 1
        assert not any(room in description.lower() for room in HOUSE.rooms)


# -- observations -----------------------------------------------------------------------------


def test_fo_view_names_the_room_and_the_inventory():
    env = TextNavEnv(observability="full")
    observation, _ = env.reset(options={"start": "living room"})
    assert observation == (
        "Your task: put the stale food in the fridge, then close the fridge. You are in the "
        "living room. A sofa faces a television on the far wall. On the coffee table: stale "
        "food, coffee cup. Exits: north, east. You carry: nothing. Admissible commands: go "
        "north, go east, take stale food from coffee table, take coffee cup from coffee table."
    )
    _, _, _, _, info = env.step("take stale food from coffee table")
    assert "You carry: stale food." in info["last_message"]


def test_po_view_is_the_fo_view_without_room_name_and_inventory():
    def message(observability):
        env = TextNavEnv(observability=observability)
        env.reset(options={"start": "kitchen"})
        env.step("open fridge")
        return env.step("take fresh food from fridge")[4]["last_message"]

    fo, po = message("full"), message("partial")
    assert "You are in the kitchen." in fo and "You carry: fresh food." in fo
    assert "You are in" not in po and "You carry" not in po
    assert po == fo.replace(" You are in the kitchen.", "").replace(" You carry: fresh food.", "")
    assert "The fridge is open; in it: nothing." in po


def test_legal_actions_are_the_admissible_commands_of_the_view():
    env = omnigym.make("LMRL/TextNavPO-v0")
    _, info = env.reset(options={"start": "kitchen"})
    assert info["legal_actions"] == [
        "go east",
        "go south",
        "go west",
        "take plate from counter",
        "take utensils from counter",
        "open fridge",
    ]
    assert info["last_message"].endswith(
        "Admissible commands: " + ", ".join(info["legal_actions"]) + "."
    )


def test_reset_spawns_in_each_of_the_eight_rooms_about_equally():
    env = TextNavEnv()
    starts = [(env.reset(seed=seed), env.house_state.room)[1] for seed in range(1600)]
    counts = np.array([starts.count(room) for room in HOUSE.rooms])
    assert counts.min() > 150 and counts.max() < 250


def test_start_option_must_name_a_room():
    with pytest.raises(ValueError, match="start"):
        TextNavEnv().reset(options={"start": "attic"})


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"observability": "some"}, "observability"),
        ({"obs_mode": "tail"}, "obs_mode"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_env_kwargs_raise_value_error_naming_the_kwarg(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TextNavEnv(**kwargs)


# -- the grammar ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "go south",  # no exit that way
        "take plate from counter",  # not in this room
        "put stale food on coffee table",  # not carried
        "open fridge",  # not in this room
        "eat stale food",  # not carried
        "take the stale food",  # not the grammar
        "fly to the moon",
    ],
)
def test_inadmissible_command_changes_nothing_rewards_zero_and_is_flagged(command):
    env = omnigym.make("LMRL/TextNavFO-v0")
    env.reset(options={"start": "living room"})
    before = env.unwrapped.house_state
    observation, reward, terminated, truncated, info = env.step(command)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["invalid_action"] is True
    assert info["last_message"] == INADMISSIBLE
    assert observation.split("\n")[1:] == [command, INADMISSIBLE]
    assert env.unwrapped.house_state == before


def test_put_into_a_closed_fridge_is_inadmissible_until_it_is_opened():
    env = TextNavEnv()
    env.reset(options={"start": "living room"})
    env.step("take stale food from coffee table")
    env.step("go east")
    assert env.step("put stale food in fridge")[4]["invalid_action"] is True
    env.step("open fridge")
    assert env.step("put stale food in fridge")[4]["invalid_action"] is False


def test_commands_match_case_and_spacing_and_are_recorded_as_matched():
    env = TextNavEnv()
    env.reset(options={"start": "living room"})
    observation, _, _, _, info = env.step("  Take STALE   food from Coffee Table ")
    assert info["invalid_action"] is False
    assert observation.split("\n")[1] == "take stale food from coffee table"
    assert env.house_state.places[HOUSE.objects.index("stale food")] == CARRIED


def test_take_without_its_container_and_insert_into_are_accepted_variants():
    env = TextNavEnv()
    _, info = env.reset(options={"start": "living room"})
    assert "take stale food" not in info["legal_actions"]
    for command in ("take stale food", "go east", "open fridge", "insert stale food into fridge"):
        assert env.step(command)[4]["invalid_action"] is False
    assert env.house_state.places[HOUSE.objects.index("stale food")] == "fridge"


def test_drop_leaves_an_object_on_the_floor_to_take_again():
    env = TextNavEnv(observability="partial")
    env.reset(options={"start": "living room"})
    env.step("take coffee cup from coffee table")
    env.step("go north")
    _, _, _, _, info = env.step("drop coffee cup")
    assert "On the floor: coffee cup." in info["last_message"]
    assert "take coffee cup" in info["legal_actions"]
    assert env.house_state.places[HOUSE.objects.index("coffee cup")] == FLOOR + "office"


# -- rewards and episode end ------------------------------------------------------------------


def test_walkthrough_puts_the_stale_food_in_the_closed_fridge_for_plus_one():
    env = omnigym.make("LMRL/TextNavFO-v0")
    env.reset(options={"start": "living room"})
    steps = [env.step(command) for command in WALKTHROUGH]
    assert [step[1] for step in steps] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert [step[2] for step in steps] == [False, False, False, False, True]
    info = steps[-1][4]
    assert info["success"] is True and info["episode_return"] == 1.0
    assert info["normalized_score"] == pytest.approx(100.0)
    assert info["last_message"] == (
        "You close the fridge. The stale food is in the closed fridge: task complete."
    )
    assert info["metrics"] == {
        "turns": 5.0,
        "invalid_actions": 0.0,
        "rooms_visited": 2.0,
        "ate_stale_food": 0.0,
    }


def test_stale_food_in_the_open_fridge_earns_nothing_until_it_is_closed():
    env = TextNavEnv()
    env.reset(options={"start": "living room"})
    rewards = [env.step(command)[1] for command in WALKTHROUGH[:4]]
    assert rewards == [0.0] * 4
    assert env.step("close fridge")[1] == 1.0


def test_eating_the_stale_food_terminates_with_return_zero():
    env = omnigym.make("LMRL/TextNavPO-v0")
    env.reset(options={"start": "living room"})
    env.step("take stale food from coffee table")
    _, reward, terminated, truncated, info = env.step("eat stale food")
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["success"] is False and info["episode_return"] == 0.0
    assert info["normalized_score"] == 0.0
    assert info["metrics"]["ate_stale_food"] == 1.0
    assert info["last_message"].startswith("You eat the stale food.")


def test_eating_other_food_removes_it_and_goes_on():
    env = TextNavEnv()
    env.reset(options={"start": "dining room"})
    env.step("take fruit from dining table")
    _, reward, terminated, _, info = env.step("eat fruit")
    assert (reward, terminated) == (0.0, False)
    assert "On the dining table: bowl." in info["last_message"]
    assert not any("fruit" in command for command in info["legal_actions"])
    assert env.house_state.places[HOUSE.objects.index("fruit")] is None


def test_fifteen_commands_without_success_truncate_at_return_zero():
    env = omnigym.make("LMRL/TextNavFO-v0")
    env.reset(options={"start": "bedroom"})
    for turn in range(15):
        _, reward, terminated, truncated, info = env.step(("go east", "go west")[turn % 2])
        assert reward == 0.0 and not terminated
        assert truncated == (turn == 14)
    assert info["success"] is False and info["episode_return"] == 0.0
    assert info["metrics"]["rooms_visited"] == 2.0


def test_longest_episode_transcript_fits_the_observation_space():
    env = TextNavEnv(observability="full")
    env.reset(options={"start": "living room"})
    gather = [
        "take stale food from coffee table",
        "take coffee cup from coffee table",
        "go east",
        "take plate from counter",
        "take utensils from counter",
        "open fridge",
        "take fresh food from fridge",
    ]
    for command in gather:
        env.step(command)
    for _ in range(7):
        env.step("~" * 300)
    observation, *_ = env.step("go east")
    assert len(observation) > 6000
    assert env.observation_space.contains(observation)


@pytest.mark.slow
def test_no_episode_can_outgrow_the_observation_space():
    """A bound over every state: the longest view (FO, which holds the PO view; each object
    anywhere in or out of the room, or carried, with the room's boxes open or not) after the
    longest command and its report (the two final replies are shorter), or the inadmissible
    reply under the longest recorded action, for 15 turns."""
    longest_view = longest_step = 0
    for room in HOUSE.rooms:
        here = [name for name, at in HOUSE.container_room.items() if at == room]
        places = [None, CARRIED, FLOOR + room, *here]
        boxes_here = [box for box in HOUSE.boxes if box in here]
        for flags in product((False, True), repeat=len(boxes_here)):
            open_here = dict(zip(boxes_here, flags, strict=True))
            opened = tuple(open_here.get(box, False) for box in HOUSE.boxes)
            for assignment in product(places, repeat=len(HOUSE.objects)):
                state = State(room, assignment, opened)
                longest_view = max(longest_view, len(HOUSE.view(state, full=True)))
            for place in places[1:]:
                state = State(room, (place,) * len(HOUSE.objects), opened)
                for text, command in HOUSE.accepted(state).items():
                    longest_step = max(longest_step, len(text) + 1 + len(HOUSE.report(command)))
    valid_turn = longest_step + 1 + longest_view
    invalid_turn = 256 + len(INADMISSIBLE)
    bound = len(HOUSE.objective) + 1 + longest_view + 15 * (2 + max(valid_turn, invalid_turn))
    assert bound <= TextNavEnv.observation_max_length


# -- oracle, planner and behaviour ------------------------------------------------------------


@pytest.mark.parametrize("observability", ["full", "partial"])
@pytest.mark.parametrize("room", sorted(SHORTEST))
def test_oracle_solves_from_every_room_in_the_fewest_commands(observability, room):
    env = TextNavEnv(observability=observability, obs_mode="last")
    # No env: the oracle reads only the messages and the public house data.
    _, info = play(env, TextNavOracle(), 0, {"start": room}, agent_seed=10_000)
    assert info["success"] is True and info["episode_return"] == 1.0
    assert info["turn"] == SHORTEST[room] <= HOUSE.max_steps


def test_planner_recovers_the_stale_food_from_wherever_it_was_left():
    env = TextNavEnv()
    env.reset(options={"start": "living room"})
    for command in ("take stale food from coffee table", "go north", "drop stale food", "go west"):
        env.step(command)
    plan = walkthrough()
    done = False
    while not done:
        command, _ = plan[task_state(HOUSE, env.house_state)]
        _, reward, terminated, truncated, info = env.step(command)
        assert info["invalid_action"] is False
        done = terminated or truncated
    assert reward == 1.0 and info["turn"] == 4 + 7  # back east, take, south, east, 3 at the fridge


def test_mean_returns_score_oracle_100_behaviour_about_50_random_near_0():
    env = omnigym.make("LMRL/TextNavPO-v0")
    scores = {}
    for name in ("oracle", "behavior", "random"):
        agent = omnigym.make_agent(name, env=env, env_id="LMRL/TextNavPO-v0")
        returns = [
            play(env, agent, seed, agent_seed=seed + 10_000)[1]["episode_return"]
            for seed in range(400)
        ]
        scores[name] = normalize("LMRL/TextNavPO-v0", float(np.mean(returns)))
    assert scores["oracle"] == pytest.approx(100.0)
    assert 35.0 < scores["behavior"] < 65.0
    assert scores["random"] < 5.0


@pytest.mark.parametrize("env_id", ["LMRL/TextNavFO-v0", "LMRL/TextNavPO-v0"])
def test_behaviour_dataset_success_rate_is_within_five_points_of_lmrl(env_id):
    records = list(generate(env_id, TextNavBehaviour.default_episodes, seed=1))
    success = np.mean([record["success"] for record in records])
    assert abs(success - TextNavBehaviour.lmrl_success) <= 0.05
    assert np.mean([record["return"] for record in records]) == success
    halves = {record["behaviour"]["half"] for record in records}
    assert halves == {"near", "far"}


def test_behaviour_halves_split_the_house_by_distance_to_the_kitchen():
    behaviour = TextNavBehaviour(TextNavEnv())
    near = {room for room, half in behaviour.half_of.items() if half == "near"}
    assert near == {"kitchen", "living room", "dining room", "backyard"}


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"near_probability": 1.5}, "near_probability"),
        ({"expert_noise": "x"}, "expert_noise"),
        ({"walkthrough_probability": -0.1}, "walkthrough_probability"),
    ],
)
def test_bad_behaviour_kwargs_raise_value_error_naming_the_kwarg(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TextNavBehaviour(TextNavEnv(), **kwargs)
