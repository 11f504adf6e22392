"""1-vs-N matches with seat rotation (docs/diplomacy.md): records, seeding, worker pools, and the
summary's numbers; the greedy bot against six random ones."""

import json
from collections import Counter

import pytest

pytest.importorskip("diplomacy")

import omnigym  # noqa: E402
import omnigym.envs.diplomacy  # noqa: E402, F401  (registers Diplomacy/*)
from omnigym.agents.diplomacy.bots import GreedySCBot, RandomBot  # noqa: E402
from omnigym.evaluators.matches import (  # noqa: E402
    game_seeds,
    one_vs_rest,
    play_match,
    summarize_matches,
)
from omnigym.evaluators.rollout import MEASURED_KEYS  # noqa: E402
from omnigym.pool import WorkerPool  # noqa: E402

PURE = "Diplomacy/Pure-v0"
SEATS = ["AUSTRIA", "ENGLAND", "FRANCE", "GERMANY", "ITALY", "RUSSIA", "TURKEY"]
RECORD_KEYS = {
    "env_id", "agent", "opponent", "seat", "seed", "game", "n_seats", "sos", "won", "drawn",
    "survived", "eliminated", "centers", "invalid_orders", "phases", "wall_time", "cpu_seconds",
    "peak_rss_mb",
}  # fmt: skip


def without_time(records):
    return [
        {key: value for key, value in record.items() if key not in MEASURED_KEYS}
        for record in records
    ]


@pytest.fixture(scope="module")
def pure_records():
    return one_vs_rest(
        PURE,
        "diplomacy_greedy",
        "diplomacy_random",
        games_per_seat=2,
        env_kwargs={"max_year": 1903},
    )


def test_every_seat_is_played_equally_in_rotation(pure_records):
    assert len(pure_records) == 2 * 7
    assert Counter(record["seat"] for record in pure_records) == dict.fromkeys(SEATS, 2)
    assert [record["game"] for record in pure_records] == list(range(14))
    assert all(record["seat"] == SEATS[record["game"] % 7] for record in pure_records)


def test_records_are_json_with_the_evaluated_seats_outcome(pure_records):
    for record in pure_records:
        assert set(record) == RECORD_KEYS
        assert record["agent"] == "diplomacy_greedy"
        assert record["opponent"] == "diplomacy_random"
        assert record["n_seats"] == 7
        assert 0.0 <= record["sos"] <= 1.0
        assert record["won"] + record["survived"] + record["eliminated"] == 1
        assert record["invalid_orders"] == 0
        assert record["phases"] > 0
    assert json.loads(json.dumps(pure_records)) == pure_records


def test_same_seeds_replay_the_same_games(pure_records):
    again = one_vs_rest(
        PURE,
        "diplomacy_greedy",
        "diplomacy_random",
        games_per_seat=2,
        env_kwargs={"max_year": 1903},
    )
    assert without_time(again) == without_time(pure_records)


def test_run_seeds_give_their_own_games_in_order():
    records = one_vs_rest(
        PURE, "diplomacy_random", "diplomacy_random", 1, seeds=[3, 4], env_kwargs={"max_year": 1902}
    )
    assert [(record["seed"], record["game"]) for record in records] == [
        (seed, game) for seed in (3, 4) for game in range(7)
    ]
    assert game_seeds(3, 0, 7) != game_seeds(4, 0, 7)
    assert len(set(game_seeds(3, 0, 7)[1])) == 7


def test_workers_play_the_same_games_as_one_process():
    kwargs = {"games_per_seat": 1, "seeds": [0], "env_kwargs": {"max_year": 1903}}
    serial = one_vs_rest(PURE, "diplomacy_random", "diplomacy_greedy", **kwargs)
    parallel = one_vs_rest(PURE, "diplomacy_random", "diplomacy_greedy", workers=2, **kwargs)
    assert without_time(parallel) == without_time(serial)


def test_a_given_pool_serves_several_matches_with_the_same_games():
    kwargs = {"games_per_seat": 1, "seeds": [0], "env_kwargs": {"max_year": 1902}}
    serial = [
        one_vs_rest(PURE, "diplomacy_random", "diplomacy_greedy", **kwargs),
        one_vs_rest(PURE, "diplomacy_greedy", "diplomacy_random", **kwargs),
    ]
    with WorkerPool(2) as pool:
        shared = [
            one_vs_rest(PURE, "diplomacy_random", "diplomacy_greedy", pool=pool, **kwargs),
            one_vs_rest(PURE, "diplomacy_greedy", "diplomacy_random", pool=pool, **kwargs),
        ]
    assert [without_time(records) for records in shared] == [
        without_time(records) for records in serial
    ]


def test_factories_are_labelled_by_name_and_built_fresh_per_seat():
    records = one_vs_rest(PURE, GreedySCBot, RandomBot, 1, env_kwargs={"max_year": 1902})
    assert {(record["agent"], record["opponent"]) for record in records} == {
        ("GreedySCBot", "RandomBot")
    }
    labelled = one_vs_rest(
        PURE, GreedySCBot, RandomBot, 1, env_kwargs={"max_year": 1902}, labels=("g", "r")
    )
    assert labelled[0]["agent"] == "g" and labelled[0]["opponent"] == "r"


def test_play_match_scores_every_seat_and_the_scores_sum_to_one():
    agents = {seat: RandomBot(seed=i) for i, seat in enumerate(SEATS)}
    record = play_match(PURE, agents, seed=5, env_kwargs={"max_year": 1906})
    assert set(record["results"]) == set(SEATS)
    assert sum(result["sos"] for result in record["results"].values()) == pytest.approx(1.0)
    assert record["phases"] > 0 and record["env_id"] == PURE and record["seed"] == 5
    again = play_match(PURE, agents, seed=5, env_kwargs={"max_year": 1906})
    assert again["results"] == record["results"]


def test_play_match_needs_an_agent_on_every_seat():
    with pytest.raises(ValueError, match="TURKEY"):
        play_match(PURE, {seat: RandomBot() for seat in SEATS[:-1]}, seed=0)


def test_one_vs_rest_rejects_bad_arguments():
    with pytest.raises(ValueError, match="multi-agent"):
        one_vs_rest("LMRL/Wordle-v0", "random", "random")
    with pytest.raises(ValueError, match="games_per_seat"):
        one_vs_rest(PURE, "diplomacy_random", "diplomacy_random", games_per_seat=0)
    with pytest.raises(omnigym.UnknownEnvError):
        one_vs_rest("Diplomacy/Nowhere-v0", "diplomacy_random", "diplomacy_random")


def synthetic(opponent="diplomacy_random"):
    """14 games (two per seat): games 0-1 solo wins, 2-7 draws at SoS 0.25, 8-13 defeats."""
    records = []
    for game in range(14):
        won, drawn = game < 2, 2 <= game < 8
        records.append({
            "env_id": "Diplomacy/Standard-v0",
            "agent": "hero",
            "opponent": opponent,
            "seat": SEATS[game % 7],
            "seed": 0,
            "game": game,
            "n_seats": 7,
            "sos": 1.0 if won else 0.25 if drawn else 0.0,
            "won": won,
            "drawn": drawn,
            "survived": drawn,
            "eliminated": not (won or drawn),
            "centers": 18 if won else 6 if drawn else 0,
            "invalid_orders": 0,
            "phases": 40,
            "wall_time": 0.1,
        })  # fmt: skip
    return records


def test_summary_gives_the_exact_rates_and_the_equal_strength_reference():
    summary = summarize_matches(synthetic(), n_resamples=999)
    hero = summary["Diplomacy/Standard-v0"]["hero"]["diplomacy_random"]
    assert hero["games"] == 14
    assert hero["games_per_seat"] == dict.fromkeys(SEATS, 2)
    assert hero["sos"]["mean"] == pytest.approx(3.5 / 14)
    assert hero["win_rate"]["mean"] == pytest.approx(2 / 14)
    assert hero["draw_rate"]["mean"] == pytest.approx(6 / 14)
    assert hero["survival_rate"]["mean"] == pytest.approx(6 / 14)
    assert hero["defeat_rate"]["mean"] == pytest.approx(6 / 14)
    assert hero["centers"]["mean"] == pytest.approx((2 * 18 + 6 * 6) / 14)
    assert hero["equal_strength_sos"] == pytest.approx(1 / 7)
    # Seat means: AUSTRIA played games 0 (win) and 7 (draw), ENGLAND 1 (win) and 8 (defeat).
    assert hero["sos_by_seat"] == {
        "AUSTRIA": 0.625, "ENGLAND": 0.5, "FRANCE": 0.125, "GERMANY": 0.125, "ITALY": 0.125,
        "RUSSIA": 0.125, "TURKEY": 0.125,
    }  # fmt: skip
    for name in ("sos", "win_rate", "draw_rate", "survival_rate", "defeat_rate"):
        low, high = hero[name]["ci95"]
        assert 0.0 <= low <= hero[name]["mean"] <= high <= 1.0
        assert low < high


def test_summary_keeps_opponents_apart_and_constant_scores_have_no_spread():
    records = synthetic() + [dict(r, sos=0.5, opponent="diplomacy_greedy") for r in synthetic()]
    summary = summarize_matches(records, n_resamples=999)["Diplomacy/Standard-v0"]["hero"]
    assert set(summary) == {"diplomacy_random", "diplomacy_greedy"}
    assert summary["diplomacy_greedy"]["sos"]["ci95"] == [0.5, 0.5]
    assert summary["diplomacy_random"]["sos"]["mean"] == pytest.approx(0.25)


@pytest.mark.slow
def test_greedy_beats_six_random_bots():
    """Acceptance: GreedySCBot beats RandomBot in 1v6 (SoS > 1/7, 70 games, to 1910)."""
    records = one_vs_rest(
        "Diplomacy/Standard-v0",
        "diplomacy_greedy",
        "diplomacy_random",
        games_per_seat=10,
        env_kwargs={"max_year": 1910},
    )
    summary = summarize_matches(records)["Diplomacy/Standard-v0"]["diplomacy_greedy"]
    greedy = summary["diplomacy_random"]
    assert greedy["games"] == 70
    assert greedy["sos"]["ci95"][0] > greedy["equal_strength_sos"]
    assert greedy["defeat_rate"]["mean"] < 0.1
