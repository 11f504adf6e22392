"""DiplomacyEnv (docs/diplomacy.md): construction, spaces, observations, infos, invalid
orders, endings and scores, saved games, determinism and PettingZoo conformance."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test

import omnigym
from omnigym.envs.diplomacy.board import sum_of_squares
from omnigym.envs.diplomacy.orders import action_to_orders, orders_to_action

POWERS = ["AUSTRIA", "ENGLAND", "FRANCE", "GERMANY", "ITALY", "RUSSIA", "TURKEY"]
IDS = ["Diplomacy/Standard-v0", "Diplomacy/Pure-v0"]


def make(**kwargs):
    return omnigym.make("Diplomacy/Standard-v0", **kwargs)


def holds(env):
    """Every power submits nothing (all units hold)."""
    if env.action_format == "orders":
        return {agent: [] for agent in env.agents}
    return {agent: np.zeros(env.max_units, dtype=np.int64) for agent in env.agents}


def random_actions(env, observations, rng):
    """A uniform legal value per row of each power's mask."""
    actions = {}
    for agent in env.agents:
        counts = observations[agent]["action_mask"].sum(axis=1)
        actions[agent] = (rng.random(len(counts)) * counts).astype(np.int64)
    return actions


def position(phase, units, centers):
    """A saved game (the engine's export format) of one position on the standard map."""
    from diplomacy import Game
    from diplomacy.utils.export import to_saved_game_format

    game = Game(game_id="test-position")
    game.clear_units()
    game.clear_centers()
    game.set_current_phase(phase)
    for power, power_units in units.items():
        game.set_units(power, power_units)
    for power, power_centers in centers.items():
        game.set_centers(power, power_centers)
    return to_saved_game_format(game)


# ---- registration and construction ---------------------------------------------------------


def test_both_ids_are_registered_as_multi_agent_dict_envs_of_the_diplomacy_family():
    infos = {info.id: info for info in omnigym.list_envs(family="Diplomacy")}
    assert sorted(infos) == sorted(IDS)
    for info in infos.values():
        assert (info.kind, info.obs_kind) == ("multi", "dict")
        assert "DipLLM" in info.paper
    assert infos["Diplomacy/Pure-v0"].kwargs == {"map_name": "pure"}


def test_import_omnigym_does_not_import_the_engine():
    code = "import sys, omnigym; print('diplomacy' in sys.modules, 'pettingzoo' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["False", "False"], result.stderr


@pytest.mark.parametrize("env_id", IDS)
def test_missing_extra_raises_the_import_error_naming_the_id(monkeypatch, env_id):
    monkeypatch.setitem(sys.modules, "diplomacy", None)
    with pytest.raises(ImportError) as error:
        omnigym.make(env_id)
    assert str(error.value) == (
        f"{env_id} needs the optional extra: pip install 'omnigym[diplomacy]' (AGPL-3.0)"
    )


def test_world_map_is_rejected_before_any_convoy_table_is_built(monkeypatch):
    import diplomacy.engine.map as engine_map

    def no_build(*args, **kwargs):
        raise AssertionError("a convoy table was being built")

    monkeypatch.setattr(engine_map, "add_to_cache", no_build)
    monkeypatch.setattr(engine_map, "Map", no_build)
    with pytest.raises(ValueError) as error:
        make(map_name="world")
    assert str(error.value) == (
        "map 'world' has no cached convoy table in the diplomacy package; its first load can "
        "take minutes (about 7.5 for 'world'); pass allow_uncached_map=True to accept that"
    )
    assert "world" not in engine_map.MAP_CACHE


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"max_year": 1900}, "max_year"),
        ({"max_year": "1905"}, "max_year"),
        ({"max_year": True}, "max_year"),
        ({"action_format": "text"}, "action_format"),
        ({"max_orders_per_location": 0}, "max_orders_per_location"),
        ({"max_units": 0}, "max_units"),
        ({"max_units": 2.5}, "max_units"),
        ({"reward_shaping": "dense"}, "reward_shaping"),
        ({"text_observation": 1}, "text_observation"),
        ({"strict": "yes"}, "strict"),
        ({"allow_uncached_map": None}, "allow_uncached_map"),
        ({"map_name": ""}, "map_name"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_kwargs_raise_value_errors_naming_the_kwarg(kwargs, named):
    with pytest.raises(ValueError, match=named):
        make(**kwargs)


def test_unknown_kwarg_raises_type_error():
    with pytest.raises(TypeError, match="max_turns"):
        make(max_turns=3)


def test_uncached_map_that_does_not_exist_is_a_value_error():
    with pytest.raises(ValueError, match="no_such_map"):
        make(map_name="no_such_map", allow_uncached_map=True)


# ---- spaces and observations ---------------------------------------------------------------


def test_agents_are_the_seven_powers_and_spaces_follow_the_kwargs():
    env = make(max_orders_per_location=40, max_units=9, text_observation=True)
    assert env.possible_agents == POWERS
    space = env.action_space("FRANCE")
    assert list(space.nvec) == [41] * 9
    observation_space = env.observation_space("FRANCE")
    assert set(observation_space) == {"board", "phase", "year", "own", "action_mask", "text"}
    assert observation_space["board"].shape == (82, 38)
    assert observation_space["action_mask"].shape == (9, 41)
    assert observation_space["action_mask"].dtype == np.int8
    assert env.action_space("FRANCE") is space
    with pytest.raises(ValueError, match="PRUSSIA"):
        env.action_space("PRUSSIA")


def test_orders_format_takes_sequences_of_printable_strings():
    env = make(action_format="orders")
    space = env.action_space("FRANCE")
    assert space.contains(("A PAR - BUR", "F STP/SC - BOT"))
    assert "text" not in env.observation_space("FRANCE")


def test_initial_observation_encodes_the_1901_board():
    env = make()
    observations, _ = env.reset(seed=0)
    france = observations["FRANCE"]
    assert env.observation_space("FRANCE").contains(france)
    rows = {location: i for i, location in enumerate(env.unwrapped.board.locations)}
    board = france["board"]
    par, stp, stp_sc, nth = (
        board[rows["PAR"]],
        board[rows["STP"]],
        board[rows["STP/SC"]],
        board[rows["NTH"]],
    )
    france_index, russia_index = POWERS.index("FRANCE"), POWERS.index("RUSSIA")
    assert np.flatnonzero(par[0:3]).tolist() == [0]  # army
    assert np.flatnonzero(par[3:11]).tolist() == [france_index]
    assert par[20] == 1 and np.flatnonzero(par[21:29]).tolist() == [france_index]
    assert np.flatnonzero(par[29:37]).tolist() == [france_index]
    for row in (stp, stp_sc):  # a fleet on a coast marks the coast and the province
        assert np.flatnonzero(row[0:3]).tolist() == [1]
        assert np.flatnonzero(row[3:11]).tolist() == [russia_index]
    assert np.flatnonzero(nth[0:3]).tolist() == [2] and nth[10] == 1 and nth[20] == 0
    assert nth[28] == 1 and nth[36] == 1  # no centre owner, nobody's home
    for group in ((0, 3), (3, 11), (12, 20), (21, 29), (29, 37)):
        assert np.all(board[:, slice(*group)].sum(axis=1) == 1)
    assert board[:, 11].sum() == 0 and board[:, 37].sum() == 0
    assert france["phase"].tolist() == [1, 0, 0, 0, 0]
    assert france["year"].tolist() == [0.0]
    assert france["own"] == pytest.approx(np.array([3, 3, 0]) / 34)
    assert observations["RUSSIA"]["own"] == pytest.approx(np.array([4, 4, 0]) / 34)


def test_action_mask_rows_cover_each_locations_legal_orders():
    env = make()
    observations, infos = env.reset(seed=0)
    for power in POWERS:
        mask, info = observations[power]["action_mask"], infos[power]
        locations = info["orderable_locations"]
        sizes = [len(info["possible_orders"][location]) for location in locations]
        assert mask.sum(axis=1).tolist() == [size + 1 for size in sizes] + [1] * (17 - len(sizes))
        assert np.all(mask[:, 0] == 1)


def test_infos_carry_the_shared_interface():
    env = make()
    _, infos = env.reset(seed=0)
    info = infos["FRANCE"]
    assert info["phase"] == "S1901M" and info["map_name"] == "standard"
    assert info["action_format"] == "index" and info["power"] == "FRANCE"
    assert info["orderable_locations"] == ["BRE", "MAR", "PAR"]
    assert info["possible_orders"]["PAR"] == sorted(info["possible_orders"]["PAR"])
    assert "A PAR - BUR" in info["possible_orders"]["PAR"]
    assert info["invalid_orders"] == [] and info["invalid_action"] is False
    engine_state = env.unwrapped.game.get_state()
    assert set(info["state"]) == {"name", "units", "centers", "homes", "retreats", "builds"}
    for key in ("units", "centers", "homes", "retreats", "builds"):
        assert info["state"][key] == engine_state[key]
    assert infos["RUSSIA"]["orderable_locations"] == ["MOS", "SEV", "STP", "WAR"]


def test_infos_are_copies_that_cannot_corrupt_the_game():
    env = make()
    _, infos = env.reset(seed=0)
    infos["FRANCE"]["state"]["units"]["FRANCE"].clear()
    infos["FRANCE"]["possible_orders"]["PAR"].reverse()
    action = orders_to_action(["A PAR - BUR"], env.reset(seed=0)[1]["FRANCE"], 17)
    env.step({**holds(env), "FRANCE": action})
    assert "A BUR" in env.unwrapped.game.get_units("FRANCE")


def test_text_observation_lists_every_power_and_the_agents_orderable_locations():
    env = make(text_observation=True)
    observations, _ = env.reset(seed=0)
    text = observations["FRANCE"]["text"]
    assert text.startswith("phase S1901M")
    assert "FRANCE: units F BRE, A MAR, A PAR; centres BRE, MAR, PAR" in text
    assert text.endswith("you are FRANCE; orderable: BRE, MAR, PAR")
    assert env.observation_space("FRANCE")["text"].contains(text)


def test_state_is_the_global_board():
    env = make()
    observations, _ = env.reset(seed=0)
    assert env.state().shape == env.state_space.shape
    assert np.array_equal(env.state(), observations["FRANCE"]["board"])


# ---- orders and invalid orders ------------------------------------------------------------


def test_index_action_moves_a_unit_and_counts_no_invalid_order():
    env = make()
    _, infos = env.reset(seed=0)
    action = orders_to_action(["A PAR - BUR", "F BRE - MAO"], infos["FRANCE"], 17)
    _, _, _, _, infos = env.step({**holds(env), "FRANCE": action})
    assert sorted(env.unwrapped.game.get_units("FRANCE")) == ["A BUR", "A MAR", "F MAO"]
    assert infos["FRANCE"]["invalid_orders"] == [] and infos["FRANCE"]["phase"] == "F1901M"


def test_illegal_order_string_is_reported_and_the_unit_holds():
    env = make(action_format="orders")
    env.reset(seed=0)
    _, _, _, _, infos = env.step({**holds(env), "FRANCE": ["A PAR - MOS"]})
    [entry] = infos["FRANCE"]["invalid_orders"]
    assert entry["order"] == "A PAR - MOS"
    assert "not in the 11 legal orders of PAR" in entry["reason"]
    assert infos["FRANCE"]["invalid_action"] is True
    assert infos["ENGLAND"]["invalid_action"] is False
    assert "A PAR" in env.unwrapped.game.get_units("FRANCE")


def test_strict_mode_raises_naming_power_order_and_reason_and_leaves_the_game_unchanged():
    env = make(action_format="orders", strict=True)
    env.reset(seed=0)
    with pytest.raises(ValueError) as error:
        env.step({**holds(env), "FRANCE": ["A PAR - MOS"]})
    message = str(error.value)
    assert "FRANCE" in message and "'A PAR - MOS'" in message and "legal orders of PAR" in message
    assert env.unwrapped.game.get_current_phase() == "S1901M"
    assert env.unwrapped.game.get_orders("FRANCE") == []


def test_masked_out_index_is_reported_and_the_unit_holds():
    env = make()
    _, infos = env.reset(seed=0)
    action = np.zeros(17, dtype=np.int64)
    row = infos["FRANCE"]["orderable_locations"].index("PAR")
    action[row] = len(infos["FRANCE"]["possible_orders"]["PAR"]) + 1
    _, _, _, _, infos = env.step({**holds(env), "FRANCE": action})
    [entry] = infos["FRANCE"]["invalid_orders"]
    assert entry["order"] == f"row {row} = 12" and "masked out" in entry["reason"]
    assert infos["FRANCE"]["invalid_action"] is True
    assert "A PAR" in env.unwrapped.game.get_units("FRANCE")


def test_strict_mode_raises_for_a_masked_out_index():
    env = make(strict=True)
    env.reset(seed=0)
    action = np.zeros(17, dtype=np.int64)
    action[5] = 1
    with pytest.raises(ValueError, match="FRANCE: order 'row 5 = 1' is invalid"):
        env.step({**holds(env), "FRANCE": action})


def test_non_zero_row_past_the_orderable_locations_is_reported():
    env = make()
    env.reset(seed=0)
    action = np.zeros(17, dtype=np.int64)
    action[16] = 3
    _, _, _, _, infos = env.step({**holds(env), "FRANCE": action})
    [entry] = infos["FRANCE"]["invalid_orders"]
    assert "FRANCE has 3 orderable locations" in entry["reason"]


def test_index_k_plus_one_raises_naming_the_space():
    env = make()
    env.reset(seed=0)
    action = np.zeros(17, dtype=np.int64)
    action[0] = 129
    with pytest.raises(ValueError, match=r"MultiDiscrete.*129"):
        env.step({**holds(env), "FRANCE": action})


@pytest.mark.parametrize(
    "action",
    [np.zeros(16, dtype=np.int64), np.zeros(17), np.full(17, -1), "A PAR H", None],
    ids=["short", "float", "negative", "string", "none"],
)
def test_out_of_space_index_actions_raise_value_error(action):
    env = make()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not in the action space MultiDiscrete"):
        env.step({**holds(env), "FRANCE": action})


@pytest.mark.parametrize("action", ["A PAR H", [1, 2], None], ids=["bare-string", "ints", "none"])
def test_out_of_space_order_actions_raise_value_error(action):
    env = make(action_format="orders")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not in the action space Sequence"):
        env.step({**holds(env), "FRANCE": action})


@pytest.mark.parametrize(
    ("orders", "reason"),
    [
        (["A MUN - RUH"], "MUN is not a location FRANCE can order in S1901M"),
        (["A PAR H", "A PAR - BUR"], "a second order for PAR"),
        (["march on"], "unparseable"),
        (["WAIVE"], "FRANCE has no build to waive"),
        (["A PAR - BUR VIA"], "legal orders of PAR"),
    ],
)
def test_each_kind_of_invalid_order_string_is_reported(orders, reason):
    env = make(action_format="orders")
    env.reset(seed=0)
    _, _, _, _, infos = env.step({**holds(env), "FRANCE": orders})
    [entry] = infos["FRANCE"]["invalid_orders"]
    assert entry["order"] == orders[-1] and reason in entry["reason"]


def test_order_strings_are_read_case_and_space_insensitively():
    env = make(action_format="orders")
    env.reset(seed=0)
    _, _, _, _, infos = env.step({**holds(env), "FRANCE": ["  a par -   bur "]})
    assert infos["FRANCE"]["invalid_orders"] == []
    assert "A BUR" in env.unwrapped.game.get_units("FRANCE")


def test_orders_the_engine_drops_after_set_orders_are_reported(monkeypatch):
    env = make(action_format="orders")
    env.reset(seed=0)
    game = env.unwrapped.game
    set_orders = type(game).set_orders

    def drop_the_last(self, power_name, orders, **kwargs):
        if power_name == "FRANCE":
            self.error.append("SIMULATED DROP")
            orders = orders[:-1]
        return set_orders(self, power_name, orders, **kwargs)

    monkeypatch.setattr(type(game), "set_orders", drop_the_last)
    _, _, _, _, infos = env.step({**holds(env), "FRANCE": ["A PAR - BUR", "A MAR - SPA"]})
    assert infos["FRANCE"]["invalid_orders"] == [
        {"order": "A MAR - SPA", "reason": "dropped by the engine (SIMULATED DROP)"}
    ]


def test_builds_past_the_allowed_count_are_reported():
    saved = position(
        "W1901A",
        {"FRANCE": ["A BEL", "A BUR"], "GERMANY": ["A KIE", "A MUN", "A BER"]},
        {"FRANCE": ["BRE", "MAR", "PAR", "BEL"], "GERMANY": ["KIE"]},
    )
    env = make(action_format="orders")
    _, infos = env.reset(options={"saved_game": saved})
    assert infos["FRANCE"]["state"]["builds"]["FRANCE"]["count"] == 2
    assert infos["GERMANY"]["orderable_locations"] == ["BER", "KIE", "MUN"]
    actions = {
        "FRANCE": ["A BRE B", "A MAR B", "A PAR B"],
        "GERMANY": ["A BER D", "A KIE D", "A MUN D"],
    }
    _, _, _, _, infos = env.step(actions)
    assert infos["FRANCE"]["invalid_orders"] == [
        {"order": "A PAR B", "reason": "FRANCE may make 2 builds in W1901A"}
    ]
    assert infos["GERMANY"]["invalid_orders"] == [
        {"order": "A MUN D", "reason": "GERMANY may make 2 disbands in W1901A"}
    ]
    game = env.unwrapped.game
    assert sorted(game.get_units("FRANCE")) == ["A BEL", "A BRE", "A BUR", "A MAR"]
    assert game.get_units("GERMANY") == ["A MUN"]


def test_missing_actions_and_unknown_agents_raise():
    env = make()
    env.reset(seed=0)
    actions = holds(env)
    del actions["ITALY"]
    with pytest.raises(ValueError, match=r"missing for \['ITALY'\]"):
        env.step(actions)
    with pytest.raises(ValueError, match="PRUSSIA"):
        env.step({**holds(env), "PRUSSIA": []})
    with pytest.raises(ValueError, match="dict"):
        env.step([0] * 7)


# ---- elimination, solo, truncation, rewards -----------------------------------------------


def test_sum_of_squares_gives_the_solo_winner_everything():
    assert sum_of_squares([18, 16, 0, 0, 0, 0, 0], 18).tolist() == [1, 0, 0, 0, 0, 0, 0]


def test_sum_of_squares_without_a_solo_shares_by_squared_centres():
    scores = sum_of_squares([10, 10, 8, 6, 0, 0, 0], 18)
    assert scores == pytest.approx([100 / 300, 100 / 300, 64 / 300, 36 / 300, 0, 0, 0])
    assert sum_of_squares([18, 16, 0], None) == pytest.approx([324 / 580, 256 / 580, 0])
    assert sum_of_squares([0, 0], 18).tolist() == [0, 0]


def test_a_power_losing_everything_is_terminated_and_its_later_actions_ignored():
    saved = position(
        "F1901M",
        {"ITALY": ["A VEN"], "FRANCE": ["A PAR"]},
        {"AUSTRIA": ["TRI"], "ITALY": ["VEN"], "FRANCE": ["PAR"]},
    )
    env = make(action_format="orders")
    env.reset(options={"saved_game": saved})
    assert env.agents == ["AUSTRIA", "FRANCE", "ITALY"]
    _, rewards, terminations, truncations, infos = env.step(
        {"AUSTRIA": [], "FRANCE": [], "ITALY": ["A VEN - TRI"]}
    )
    assert terminations == {"AUSTRIA": True, "FRANCE": False, "ITALY": False}
    assert not any(truncations.values()) and rewards["AUSTRIA"] == 0.0
    assert infos["AUSTRIA"]["metrics"]["eliminated"] == 1.0
    assert infos["AUSTRIA"]["success"] is False and infos["AUSTRIA"]["normalized_score"] == 0.0
    assert env.agents == ["FRANCE", "ITALY"]
    assert infos["ITALY"]["phase"] == "W1901A"
    env.step({"AUSTRIA": ["A VIE B"], "FRANCE": [], "ITALY": []})
    env.unwrapped.max_year = 1902
    while env.agents:
        _, _, _, _, infos = env.step(holds(env))
    assert infos["ITALY"]["metrics"]["ignored_actions"] == 1.0


def test_a_solo_win_terminates_every_power_with_sum_of_squares_rewards():
    centres = ["BRE", "MAR", "PAR", "SPA", "POR", "BEL", "HOL", "MUN", "KIE", "BER", "DEN"]
    centres += ["SWE", "NWY", "EDI", "LON", "LVP", "TUN"]
    saved = position(
        "F1901M",
        {"FRANCE": ["A BUR"], "ITALY": ["A ROM"]},
        {"FRANCE": centres, "ITALY": ["ROM", "NAP"]},
    )
    env = make(action_format="orders")
    env.reset(options={"saved_game": saved})
    _, rewards, terminations, truncations, infos = env.step(
        {"FRANCE": [], "ITALY": ["A ROM - VEN"]}
    )
    assert rewards == {"FRANCE": 0.0, "ITALY": 0.0}  # 17 centres: no solo yet
    assert not any(terminations.values())
    saved = position(
        "F1901M", {"FRANCE": ["A TYR"], "ITALY": ["A ROM"]}, {"FRANCE": centres, "ITALY": ["ROM"]}
    )
    env.reset(options={"saved_game": saved})
    _, rewards, terminations, truncations, infos = env.step(
        {"FRANCE": ["A TYR - VEN"], "ITALY": []}
    )
    assert rewards == {"FRANCE": 1.0, "ITALY": 0.0}
    assert all(terminations.values()) and not any(truncations.values())
    assert infos["FRANCE"]["success"] is True and infos["FRANCE"]["normalized_score"] == 100.0
    assert infos["FRANCE"]["metrics"]["won"] == 1.0 and infos["ITALY"]["metrics"]["won"] == 0.0
    assert infos["ITALY"]["metrics"]["survived"] == 1.0 and infos["ITALY"]["metrics"]["drawn"] == 0
    assert env.agents == []


def _play_to_the_end(env, seed):
    rng = np.random.default_rng(seed)
    observations, _ = env.reset(seed=seed)
    steps = 0
    while env.agents:
        observations, rewards, terminations, truncations, infos = env.step(
            random_actions(env, observations, rng)
        )
        steps += 1
    return rewards, terminations, truncations, infos, steps


def test_max_year_1902_ends_after_the_last_phase_of_1902_with_a_truncated_draw():
    env = make(max_year=1902)
    rewards, terminations, truncations, infos, steps = _play_to_the_end(env, seed=0)
    phases = [phase["name"] for phase in env.unwrapped.to_saved_game()["phases"]]
    assert "W1902A" in phases
    assert phases[-2:] == ["S1903M", "COMPLETED"]  # the draw records the phase it ended
    assert all(name == "S1903M" or int(name[1:5]) <= 1902 for name in phases[:-1])
    assert all(truncations.values()) and not any(terminations.values())
    centres = [len(env.unwrapped.game.get_centers(power)) for power in POWERS]
    expected = sum_of_squares(centres, None)
    assert [rewards[power] for power in POWERS] == pytest.approx(expected)
    assert [infos[power]["metrics"]["sos"] for power in POWERS] == pytest.approx(expected)
    assert all(infos[power]["metrics"]["drawn"] == 1.0 for power in POWERS)
    assert infos["FRANCE"]["metrics"]["phases"] == steps
    assert infos["FRANCE"]["phase"] == "COMPLETED"
    assert infos["FRANCE"]["normalized_score"] == pytest.approx(100 * rewards["FRANCE"])


def test_sc_delta_shaping_rewards_centre_changes():
    saved = position(
        "F1901M",
        {"FRANCE": ["A PAR", "A GAS"], "ITALY": ["A ROM"]},
        {"FRANCE": ["PAR", "MAR", "BRE"], "ITALY": ["ROM", "NAP"]},
    )
    env = make(action_format="orders", reward_shaping="sc_delta")
    env.reset(options={"saved_game": saved})
    _, rewards, _, _, _ = env.step({"FRANCE": ["A GAS - SPA"], "ITALY": []})
    assert rewards == {"FRANCE": pytest.approx(1 / 34), "ITALY": 0.0}


def test_small_k_truncates_long_legal_lists_and_counts_them():
    env = make(max_orders_per_location=4, max_year=1901)
    observations, infos = env.reset(seed=0)
    assert observations["FRANCE"]["action_mask"].sum(axis=1)[:3].tolist() == [5, 5, 5]
    while env.agents:
        _, _, _, _, infos = env.step(holds(env))
    assert infos["FRANCE"]["metrics"]["orders_truncated"] >= 3


def test_twenty_random_games_at_k_128_truncate_no_order_list():
    env = make(max_year=1910)
    for seed in range(20):
        *_, infos, _ = _play_to_the_end(env, seed)
        assert all(info["metrics"]["orders_truncated"] == 0 for info in infos.values())


# ---- saved games, determinism, copies, rendering -------------------------------------------


def _saved_game_json(seed):
    env = make(max_year=1903)
    _play_to_the_end(env, seed)
    return json.dumps(env.unwrapped.to_saved_game(), sort_keys=True)


def test_same_seed_and_actions_give_identical_saved_game_json():
    first = _saved_game_json(seed=5)
    assert first == _saved_game_json(seed=5)
    assert first != _saved_game_json(seed=6)


def test_saved_game_is_the_engines_format_and_resumes_where_it_stopped():
    from diplomacy.utils.export import from_saved_game_format, is_valid_saved_game

    env = make()
    rng = np.random.default_rng(1)
    observations, _ = env.reset(seed=1)
    for _ in range(4):
        observations = env.step(random_actions(env, observations, rng))[0]
    saved = env.unwrapped.to_saved_game()
    assert set(saved) == {"id", "map", "rules", "phases"}
    assert is_valid_saved_game(json.loads(json.dumps(saved)))
    game = env.unwrapped.game
    assert from_saved_game_format(saved).get_state()["units"] == game.get_state()["units"]
    resumed = make()
    _, infos = resumed.reset(options={"saved_game": saved})
    assert infos["FRANCE"]["phase"] == game.get_current_phase()
    assert infos["FRANCE"]["state"]["units"] == game.get_state()["units"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"phases": []}, "no phases"),
        ({"phases": [{"name": "S1901M"}]}, "could not be loaded"),
        ({"map": "pure"}, "on map 'pure'"),
        ("bad-phase", "phase 0 has a bad name 'S1901X'"),
        ("late-phase", "past max_year 1935"),
    ],
)
def test_bad_saved_games_are_rejected_naming_the_problem(change, message):
    saved = position("S1901M", {"FRANCE": ["A PAR"]}, {"FRANCE": ["PAR"]})
    if change == "bad-phase":
        saved["phases"][0]["name"] = "S1901X"
    elif change == "late-phase":
        saved["phases"][0]["name"] = "S1936M"
    else:
        saved.update(change)
    with pytest.raises(ValueError, match=message):
        make().reset(options={"saved_game": saved})


def test_a_deep_copy_plays_on_independently():
    env = make(action_format="orders")
    env.reset(seed=0)
    clone = copy.deepcopy(env)
    _, _, _, _, infos = clone.step({**holds(clone), "FRANCE": ["A PAR - BUR"]})
    assert infos["FRANCE"]["invalid_orders"] == []
    assert "A BUR" in clone.unwrapped.game.get_units("FRANCE")
    assert "A PAR" in env.unwrapped.game.get_units("FRANCE")
    assert env.unwrapped.game.get_current_phase() == "S1901M"


def test_render_ansi_shows_phase_units_and_centre_counts():
    env = make(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert text.startswith("phase S1901M")
    assert "RUSSIA: units A WAR, A MOS, F SEV, F STP/SC; centres MOS, SEV, STP, WAR" in text
    assert text.endswith("TURKEY 3")
    assert make().render() is None


def test_adjudication_matches_the_engines_default_order_path_in_random_play():
    from diplomacy import Game

    env = make(max_year=1905)
    _play_to_the_end(env, seed=2)
    game = Game()
    for phase, orders in env.unwrapped.game.order_history.items():
        if str(phase)[1:5] > "1905":
            break
        for power, power_orders in orders.items():
            game.set_orders(power, power_orders)
        game.process()
    assert game.get_state()["units"] == env.unwrapped.game.get_state()["units"]
    assert game.get_state()["centers"] == env.unwrapped.game.get_state()["centers"]


# ---- conversions and conformance -----------------------------------------------------------


def test_orders_to_action_and_back_round_trip_in_every_phase_type():
    env = make(max_year=1903)
    rng = np.random.default_rng(8)  # this game has a retreat phase
    observations, infos = env.reset(seed=8)
    seen = set()
    while env.agents:
        for power in env.agents:
            info = infos[power]
            orders = [
                info["possible_orders"][location][
                    rng.integers(len(info["possible_orders"][location]))
                ]
                for location in info["orderable_locations"]
            ]
            action = orders_to_action(orders, info, env.max_units)
            assert action_to_orders(action, info) == orders
            seen.add(info["phase"][-1])
        observations, _, _, _, infos = env.step(random_actions(env, observations, rng))
    assert seen == {"M", "R", "A"}


def test_orders_to_action_rejects_orders_that_are_not_legal():
    env = make()
    _, infos = env.reset(seed=0)
    with pytest.raises(ValueError, match="A PAR - MOS"):
        orders_to_action(["A PAR - MOS"], infos["FRANCE"], 17)
    with pytest.raises(ValueError, match="second order"):
        orders_to_action(["A PAR H", "A PAR - BUR"], infos["FRANCE"], 17)
    with pytest.raises(ValueError, match="picks no legal order"):
        action_to_orders(np.array([0, 0, 99] + [0] * 14), infos["FRANCE"])


@pytest.mark.parametrize("env_id", IDS)
def test_parallel_api_test_passes_to_1903(env_id):
    parallel_api_test(omnigym.make(env_id, max_year=1903), num_cycles=100)


def test_parallel_api_test_passes_with_orders_and_text():
    env = omnigym.make(
        "Diplomacy/Pure-v0", max_year=1903, action_format="orders", text_observation=True
    )
    parallel_api_test(env, num_cycles=100)


@pytest.mark.parametrize("env_id", IDS)
def test_aec_form_passes_api_test(env_id):
    api_test(omnigym.make_aec(env_id, max_year=1903), num_cycles=30)
