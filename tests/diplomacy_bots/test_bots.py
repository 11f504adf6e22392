"""The Diplomacy reference bots (docs/diplomacy.md): the map graph, each bot's rules on
positions set up in the engine, and whole games through the environment (legal orders only,
determinism per seed)."""

import json

import pytest

diplomacy = pytest.importorskip("diplomacy")

import omnigym  # noqa: E402
import omnigym.envs.diplomacy  # noqa: E402, F401  (registers Diplomacy/*)
from omnigym.agents.diplomacy.bots import (  # noqa: E402
    DefensiveBot,
    GreedySCBot,
    RandomBot,
    map_graph,
    own_power,
)

STATE_KEYS = ("name", "units", "centers", "homes", "retreats", "builds")
BOTS = {"random": RandomBot, "greedy": GreedySCBot, "defensive": DefensiveBot}


def engine_info(game, power, with_power=True):
    """``infos[power]`` as the environment builds it (shared interface), from a raw engine game
    whose position a test set up by hand."""
    state = game.get_state()
    possible = game.get_all_possible_orders()
    locations = sorted(game.get_orderable_locations(power))
    info = {
        "phase": game.get_current_phase(),
        "orderable_locations": locations,
        "possible_orders": {loc: sorted(possible[loc]) for loc in locations},
        "action_format": "orders",
        "state": {key: state[key] for key in STATE_KEYS},
        "map_name": game.map_name,
    }
    if with_power:
        info["power"] = power
    return info


def position(units, centers=None, phase=None, map_name="standard"):
    """An engine game with only ``units`` on the board (centres as in 1901 unless given)."""
    game = diplomacy.Game(map_name=map_name)
    game.clear_units()
    if centers is not None:
        game.clear_centers()
        for power, owned in centers.items():
            game.set_centers(power, owned)
    for power, placed in units.items():
        game.set_units(power, placed)
    if phase is not None:
        game.set_current_phase(phase)
    return game


def orders(bot_class, game, power, seeds=range(5)):
    return [bot_class(seed=seed).act(None, engine_info(game, power)) for seed in seeds]


# -- the map graph --------------------------------------------------------------------------


def test_map_graph_counts_moves_by_unit_type():
    graph = map_graph("standard")
    assert graph.steps(("A", "PAR"), "BEL") == 2
    assert graph.steps(("A", "MAR"), "SPA") == 1
    assert graph.steps(("F", "BRE"), "POR") == 2
    assert graph.steps(("F", "STP/SC"), "SWE") == 2  # via the Gulf of Bothnia
    assert graph.steps(("F", "STP/SC"), "FIN") == 1
    assert graph.steps(("F", "STP/NC"), "FIN") == 3  # round the North Cape: NWY, SWE, FIN
    assert graph.steps(("F", "BRE"), "MUN") > 100  # fleets never enter inland provinces
    assert graph.steps(("A", "LVP"), "BEL") > 100  # armies do not swim
    assert "SPA/NC" in graph.moves[("F", "MAO")] and "SPA/SC" in graph.moves[("F", "MAO")]
    assert "SPA" in graph.reach[("F", "MAO")]
    assert len(graph.supply_centres) == 34


def test_map_graph_is_built_once_per_map():
    assert map_graph("standard") is map_graph("standard")
    assert map_graph("pure").supply_centres == ("BER", "CON", "LON", "MOS", "PAR", "ROM", "VIE")


def test_own_power_is_read_from_the_board_when_info_does_not_name_it():
    game = diplomacy.Game()
    bots = {power: GreedySCBot(seed=1) for power in game.powers}
    kinds = set()
    for _ in range(10):  # the phases of 1901-1904
        for power, bot in bots.items():
            info = engine_info(game, power, with_power=False)
            if info["orderable_locations"]:
                kinds.add(info["phase"][-1])
                assert own_power(info) == power
            game.set_orders(power, bot.act(None, engine_info(game, power)))
        game.process()
    assert kinds == {"M", "R", "A"}
    game = position({"FRANCE": ["A BUR"], "GERMANY": ["A MUN", "A RUH"]})
    game.set_orders("GERMANY", ["A MUN - BUR", "A RUH S A MUN - BUR"])
    game.process()
    assert own_power(engine_info(game, "FRANCE", with_power=False)) == "FRANCE"  # retreating
    assert own_power(engine_info(game, "GERMANY", with_power=False)) is None  # nothing to do


# -- GreedySCBot ----------------------------------------------------------------------------


def test_greedy_opening_moves_every_free_unit_toward_an_unowned_centre():
    game = diplomacy.Game()
    graph = map_graph("standard")
    for seed in range(5):
        france = GreedySCBot(seed=seed).act(None, engine_info(game, "FRANCE"))
        assert "A MAR - SPA" in france  # Spain is next door
        assert {"A PAR - BUR", "A PAR - PIC"} & set(france)  # toward Belgium or Munich
        assert {"F BRE - MAO", "F BRE - ENG"} & set(france)  # toward Portugal, Spain or London
        assert "A CON - BUL" in GreedySCBot(seed=seed).act(None, engine_info(game, "TURKEY"))
        germany = GreedySCBot(seed=seed).act(None, engine_info(game, "GERMANY"))
        assert {"F KIE - DEN", "F KIE - HOL"} & set(germany)
    unowned = [centre for centre in graph.supply_centres if centre not in ("BRE", "MAR", "PAR")]
    for order in GreedySCBot(seed=0).act(None, engine_info(game, "FRANCE")):
        unit_type, here, _, there = order.split()
        assert graph.nearest((unit_type, there), unowned) < graph.nearest(
            (unit_type, here), unowned
        )


def test_greedy_holds_on_an_own_home_centre_an_enemy_can_enter():
    game = diplomacy.Game()
    for austria in orders(GreedySCBot, game, "AUSTRIA"):
        assert "F TRI H" in austria  # Italy's army in Venice borders Trieste
    for italy in orders(GreedySCBot, game, "ITALY"):
        assert "A VEN H" in italy  # and Austria's fleet in Trieste borders Venice


def test_greedy_supports_an_own_attack_on_the_same_target():
    # Pure map: every province borders every other; France holds six centres and every French
    # unit's only target is Germany's Berlin.
    game = position(
        {"FRANCE": ["A PAR", "A LON", "A ROM", "A VIE", "A MOS", "A CON"], "GERMANY": ["A BER"]},
        {"FRANCE": ["PAR", "LON", "ROM", "VIE", "MOS", "CON"], "GERMANY": ["BER"]},
        map_name="pure",
    )
    for france in orders(GreedySCBot, game, "FRANCE"):
        moves = [order for order in france if order.endswith(" - BER") and " S " not in order]
        assert len(moves) == 1
        attacker = moves[0].split(" - ")[0]
        supports = [order for order in france if order.endswith(f" S {attacker} - BER")]
        assert "A PAR H" in france  # Paris is a home centre Berlin's army can enter
        assert len(supports) == 4  # everyone else backs the single attack
    game.set_orders("FRANCE", orders(GreedySCBot, game, "FRANCE", seeds=[0])[0])
    game.process()
    # Dislodged with nowhere to retreat (every other province is French or the attacker's
    # origin), the German army is destroyed.
    assert game.get_state()["units"]["GERMANY"] == []


def test_greedy_convoys_an_army_that_no_land_path_leads_to_a_target():
    game = position({"ENGLAND": ["A YOR", "F NTH"]})
    for england in orders(GreedySCBot, game, "ENGLAND"):
        army = next(order for order in england if order.startswith("A YOR"))
        assert army.endswith(" VIA")
        landing = army.split()[3]
        assert landing in {"BEL", "DEN", "HOL", "NWY"}
        assert f"F NTH C A YOR - {landing}" in england


def test_greedy_retreats_where_fewest_enemies_follow_and_nearest_an_unowned_centre():
    game = position({"FRANCE": ["A BUR"], "GERMANY": ["A MUN", "A RUH", "A BEL"]})
    game.set_orders("GERMANY", ["A MUN - BUR", "A RUH S A MUN - BUR"])
    game.process()
    assert game.get_current_phase() == "S1901R"
    # Picardy borders two German armies, Paris, Gascony and Marseilles one each; Gascony and
    # Marseilles border unowned Spain.
    chosen = {order for retreats in orders(GreedySCBot, game, "FRANCE") for order in retreats}
    assert chosen <= {"A BUR R GAS", "A BUR R MAR"}


def test_greedy_builds_the_due_number_with_a_fleet_where_the_sea_is_closer():
    game = position(
        {"FRANCE": ["A BEL", "A SPA", "F POR"]},
        {"FRANCE": ["BRE", "MAR", "PAR", "SPA", "POR", "BEL"]},
        phase="W1901A",
    )
    assert game.get_state()["builds"]["FRANCE"]["count"] == 3
    for builds in orders(GreedySCBot, game, "FRANCE"):
        assert sorted(builds) == ["A MAR B", "A PAR B", "F BRE B"]


def test_greedy_removes_a_unit_farthest_from_unowned_centres():
    game = position({"FRANCE": ["A PAR", "A MAR", "F BRE", "A MUN"]}, phase="W1901A")
    assert game.get_state()["builds"]["FRANCE"]["count"] == -1
    removals = orders(GreedySCBot, game, "FRANCE", seeds=range(8))
    # Munich is a target itself, Marseilles borders Spain; Paris and Brest are two moves away.
    assert {order for removal in removals for order in removal} == {"A PAR D", "F BRE D"}
    assert all(len(removal) == 1 for removal in removals)


# -- DefensiveBot ---------------------------------------------------------------------------


def test_defensive_supports_a_threatened_garrison_once_per_attacker():
    game = diplomacy.Game()
    for austria in orders(DefensiveBot, game, "AUSTRIA"):
        assert "F TRI H" in austria
        assert sum(order.endswith(" S F TRI") for order in austria) == 1  # only Venice attacks


def test_defensive_fills_an_empty_own_centre_an_enemy_can_enter():
    game = position({"FRANCE": ["A PIC", "F BRE"], "GERMANY": ["A BUR"]})
    for france in orders(DefensiveBot, game, "FRANCE"):
        assert sorted(france) == ["A PIC - PAR", "F BRE H"]


def test_defensive_takes_only_uncontested_neighbouring_centres():
    game = diplomacy.Game()
    for france in orders(DefensiveBot, game, "FRANCE"):
        assert sorted(france) == ["A MAR - SPA", "A PAR H", "F BRE H"]


def test_defensive_builds_where_its_centres_are_threatened():
    game = position({"FRANCE": ["A SPA", "A PIC"], "GERMANY": ["A BUR"]}, phase="W1901A")
    builds = {order for build in orders(DefensiveBot, game, "FRANCE", range(8)) for order in build}
    assert builds == {"A PAR B", "A MAR B"}  # Burgundy borders both; Brest is safe


def test_defensive_removes_the_unit_farthest_from_its_centres():
    game = position({"FRANCE": ["A PAR", "A MAR", "F BRE", "A MUN"]}, phase="W1901A")
    assert orders(DefensiveBot, game, "FRANCE") == [["A MUN D"]] * 5


# -- RandomBot ------------------------------------------------------------------------------


def test_random_bot_makes_exactly_the_due_number_of_adjustments():
    game = position({"FRANCE": ["A SPA", "A PIC"]}, phase="W1901A")
    builds = orders(RandomBot, game, "FRANCE", range(30))
    assert all(len(build) == 1 for build in builds)
    assert len({order for build in builds for order in build}) > 3
    game = position({"FRANCE": ["A PAR", "A MAR", "F BRE", "A MUN"]}, phase="W1901A")
    removals = orders(RandomBot, game, "FRANCE", range(30))
    assert all(len(removal) == 1 and removal[0].endswith(" D") for removal in removals)


def test_random_bot_picks_each_legal_order_of_a_location():
    info = engine_info(diplomacy.Game(), "FRANCE")
    bot = RandomBot(seed=0)
    chosen = {order for _ in range(400) for order in bot.act(None, info)}
    assert chosen == {order for legal in info["possible_orders"].values() for order in legal}


# -- whole games through the environment ----------------------------------------------------


def play(env_id, seat_bots, seed=0, **kwargs):
    """One game: returns the env and every power's invalid orders over the game."""
    env = omnigym.make(env_id, **kwargs)
    agents = {
        power: seat_bots[i % len(seat_bots)](seed=seed + i)
        for i, power in enumerate(env.possible_agents)
    }
    observations, infos = env.reset(seed=seed)
    invalid = []
    while env.agents:
        actions = {
            power: agents[power].act(observations[power], infos[power]) for power in env.agents
        }
        observations, _, _, _, infos = env.step(actions)
        invalid += [
            (power, info["invalid_orders"])
            for power, info in infos.items()
            if info["invalid_orders"]
        ]
    return env, invalid


@pytest.mark.parametrize("action_format", ["orders", "index"])
@pytest.mark.parametrize("seats", ["random", "greedy", "defensive", "mixed"])
def test_bots_play_a_whole_game_without_one_invalid_order(seats, action_format):
    seat_bots = list(BOTS.values()) if seats == "mixed" else [BOTS[seats]]
    env, invalid = play(
        "Diplomacy/Standard-v0", seat_bots, seed=3, max_year=1906, action_format=action_format
    )
    assert invalid == []
    assert env.unwrapped.game.get_current_phase() in ("S1907M", "COMPLETED")


def test_bots_play_the_pure_map_legally():
    _, invalid = play("Diplomacy/Pure-v0", list(BOTS.values()), max_year=1910)
    assert invalid == []


@pytest.mark.parametrize("bot", ["random", "greedy"])
def test_same_seed_same_game_and_another_seed_another(bot):
    def saved_game(seed):
        env, _ = play("Diplomacy/Standard-v0", [BOTS[bot]], seed=seed, max_year=1903)
        return json.dumps(env.unwrapped.to_saved_game(), sort_keys=True)

    assert saved_game(0) == saved_game(0)
    assert saved_game(0) != saved_game(1)


def test_reset_restores_a_bot_to_its_seed():
    info = engine_info(diplomacy.Game(), "RUSSIA")
    bot = GreedySCBot(seed=0)
    bot.reset(7)
    first = [bot.act(None, info) for _ in range(5)]
    bot.reset(7)
    assert [bot.act(None, info) for _ in range(5)] == first


@pytest.mark.parametrize("env_id", ["Diplomacy/Standard-v0", "Diplomacy/Pure-v0"])
def test_bots_are_registered_for_every_environment_of_the_family(env_id):
    env = omnigym.make(env_id)
    names = {"diplomacy_random": RandomBot, "diplomacy_greedy": GreedySCBot}
    names["diplomacy_defensive"] = DefensiveBot
    for name, bot_class in names.items():
        assert name in omnigym.list_agents(env_id)
        assert name not in omnigym.list_agents()  # family agents, not general ones
        assert type(omnigym.make_agent(name, env=env, env_id=env_id)) is bot_class
