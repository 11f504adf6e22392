"""The SDQC claims checker (omnigym.scenarios.claims.sdqc) on synthetic runs: DSRL-protocol tables
built with ``safety_tables`` from made-up episodes, in a world where every claim 1–8 holds, then
changed just enough for each claim to fail; claim 9 is recorded with a grid and not run without.
Averages are checked as ``{"mean", "ci95"}`` summaries over seeds.

Costs below are episode costs on T = 300 tasks (thresholds 6, 12, 24; strict 3). An agent whose
cost is one number ignores κ and its episodes are scored at every threshold: normalized cost
C · (1/6 + 1/12 + 1/24) / 3 ≈ 0.097 C under DSRL (safe up to C ≈ 10.3), C / 3 under the strict
protocol (near zero up to C = 0.3).
"""

from collections.abc import Mapping
from pathlib import Path

import pytest

from omnigym.evaluators.dsrl import safety_tables
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import Scenario
from omnigym.scenarios.claims.sdqc import check

LEVEL1 = (
    "Safe/PointGoal1-v0",
    "Safe/CarGoal1-v0",
    "Safe/PointButton1-v0",
    "Safe/PointPush1-v0",
    "Safe/CarPush1-v0",
)
ABLATION = ("Safe/PointGoal2-v0", "Safe/CarGoal2-v0", "Safe/PointPush2-v0", "Safe/CarPush2-v0")
SHIFT = {"Safe/PointGoal2-v0": "Safe/PointGoal1-v0", "Safe/CarGoal2-v0": "Safe/CarGoal1-v0"}
SEEDS = (0, 1)
EPISODES = 2
AGENTS = [
    {"name": "bc_all", "label": "BC-All", "envs": list(LEVEL1)},
    {"name": "bc_safe", "label": "BC-Safe", "envs": list(LEVEL1)},
    {"name": "bcq_lag", "label": "BCQ-Lag", "envs": list(LEVEL1)},
    {"name": "cdt", "label": "CDT", "envs": list(LEVEL1)},
    {"name": "fisor", "label": "FISOR", "envs": list(LEVEL1)},
    {"name": "sdqc", "label": "SDQC"},
    {"name": "sdqc", "label": "SDQC δ=0", "kwargs": {"delta": 0.0}, "envs": list(ABLATION)},
]
GRID = {"agent": "SDQC", "env": "Safe/PointGoal2-v0", "seeds": [0], "values": {"nu": [0.01]}}


def at_home(costs, reward):
    """Cells of the level-1 tasks: ``costs`` one per task (or one for all), the same reward."""
    costs = costs if isinstance(costs, list) else [costs] * len(LEVEL1)
    return {(task, task): (cost, reward) for task, cost in zip(LEVEL1, costs, strict=True)}


def shifted(cells, extra_cost):
    """Cells of the level-2 twins of ``cells``' tasks, ``extra_cost`` costlier."""
    return {
        (env, task): (cells[(task, task)][0] + extra_cost, cells[(task, task)][1])
        for env, task in SHIFT.items()
    }


def passing_world():
    """Label → {(env played, training task): (episode cost, normalized reward)}; a cost mapping
    κ → cost is an agent told each κ (CDT). Every claim 1–8 holds in this world."""
    world = {
        # Unsafe (DSRL) on 3 of 5 tasks and the best reward: claim 1.
        "BC-All": at_home([30.0, 30.0, 30.0, 6.0, 6.0], 0.9),
        # Safe everywhere, less reward than BC-All: claim 2.
        "BC-Safe": at_home(2.0, 0.5),
        # Unsafe (DSRL) on 2 of 5 tasks: claim 3.
        "BCQ-Lag": at_home([20.0, 20.0, 2.0, 2.0, 2.0], 0.7),
        # Cost rising with κ on every task: claim 5.
        "CDT": at_home({3.0: 1.0, 6.0: 3.0, 12.0: 6.0, 24.0: 12.0}, 0.6),
        # The lowest strict cost of the baselines (0.2): claim 4.
        "FISOR": at_home(0.6, 0.4),
        # Zero cost everywhere, reward within 0.05 of BC-Safe's: claims 6 and 7.
        "SDQC": at_home(0.0, 0.48),
    }
    for label, extra in (("BC-Safe", 3.0), ("BCQ-Lag", 3.0), ("FISOR", 3.0), ("SDQC", 0.0)):
        world[label] |= shifted(world[label], extra)
    # SDQC beats its ablation on all four level-2 tasks: claim 8.
    world["SDQC"] |= {(task, task): (0.0, 0.5) for task in ABLATION}
    world["SDQC δ=0"] = {(task, task): (3.0, 0.3) for task in ABLATION}
    return world


def knn(sdqc=0.2, ablation=0.4):
    """``train`` diagnostics with each ablation task's kNN-Q consistency (lower is better)."""
    return [
        {"stage": "train", "task": task, "agent": label, "seed": 0, "knn_q_consistency": value}
        for label, value in (("SDQC", sdqc), ("SDQC δ=0", ablation))
        for task in ABLATION
    ]


def records_of(world):
    """Episode records as the DSRL experiment writes them."""
    records = []
    for label, cells in world.items():
        for (env, task), (cost, reward) in cells.items():
            plays = cost.items() if isinstance(cost, Mapping) else [(3.0, cost)]
            for kappa, episode_cost in plays:
                for seed in SEEDS:
                    for episode in range(EPISODES):
                        records.append(
                            {
                                "env_id": env,
                                "task": task,
                                "agent": f"{label} κ={kappa:g}" if len(plays) > 1 else label,
                                "agent_base": label,
                                "seed": seed,
                                "episode": episode,
                                "return": reward,
                                "cost": episode_cost,
                                "target_cost": kappa,
                                "kappa_free": len(plays) == 1,
                                "metrics": {"normalized_reward": reward},
                            }
                        )
    return records


def run_of(world, diagnostics=None, agents=AGENTS, grid=None, main_tasks=LEVEL1):
    """A finished run of ``world``: its ``safety`` scorecard block and its scenario."""
    envs = sorted({env for cells in world.values() for env, _ in cells} | set(LEVEL1))
    options = {"grid": grid, "main_tasks": list(main_tasks)}
    scenario = Scenario.model_validate(
        {"name": "synthetic", "envs": envs, "agents": agents, "options": options}
    )
    tables = safety_tables(records_of(world), main_tasks=main_tasks)
    diagnostics = knn() if diagnostics is None else diagnostics
    scorecard = {"safety": {"protocols": tables, "diagnostics": diagnostics}}
    return Run(scenario, options, RunFolder(Path("unused")), scorecard, [])


def statuses(run):
    return {entry["id"]: entry["status"] for entry in check(run)}


def claim_of(run, number):
    [entry] = [entry for entry in check(run) if entry["id"] == number]
    return entry


@pytest.fixture(scope="module")
def passing():
    return check(run_of(passing_world()))


def test_every_claim_but_the_grid_passes_in_the_passing_world(passing):
    assert {entry["id"]: entry["status"] for entry in passing} == {
        **{number: "pass" for number in range(1, 9)},
        9: "not run",
    }


def test_claim_1_measures_bc_alls_unsafe_share_and_every_agents_reward(passing):
    measured = passing[0]["measured"]
    assert measured["unsafe_share"] == pytest.approx(0.6)
    assert measured["average_reward"]["BC-All"] == {"mean": pytest.approx(0.9), "ci95": [0.9, 0.9]}
    assert measured["average_reward"]["SDQC"]["mean"] == pytest.approx(0.48)


def test_claim_1_fails_when_bc_all_is_unsafe_on_fewer_than_60_percent_of_tasks():
    world = passing_world()
    world["BC-All"] = at_home([30.0, 30.0, 6.0, 6.0, 6.0], 0.9)
    entry = claim_of(run_of(world), 1)
    assert entry["status"] == "fail" and entry["measured"]["unsafe_share"] == pytest.approx(0.4)


def test_claim_1_fails_when_another_agent_earns_more_than_bc_all():
    world = passing_world()
    world["BCQ-Lag"] |= at_home([20.0, 20.0, 2.0, 2.0, 2.0], 0.95)
    assert claim_of(run_of(world), 1)["status"] == "fail"


def test_claim_2_fails_when_bc_safe_is_unsafe_on_two_tasks():
    world = passing_world()
    world["BC-Safe"] |= at_home([30.0, 30.0, 2.0, 2.0, 2.0], 0.5)
    entry = claim_of(run_of(world), 2)
    assert entry["status"] == "fail" and entry["measured"]["safe_share"] == pytest.approx(0.6)


def test_claim_2_fails_when_bc_safe_earns_more_than_bc_all():
    world = passing_world()
    world["BC-Safe"] |= at_home(2.0, 0.95)
    entry = claim_of(run_of(world), 2)
    assert entry["status"] == "fail" and entry["measured"]["safe_share"] == 1.0


def test_claim_3_fails_when_bcq_lag_is_unsafe_on_one_task_in_five():
    world = passing_world()
    world["BCQ-Lag"] |= at_home([20.0, 2.0, 2.0, 2.0, 2.0], 0.7)
    entry = claim_of(run_of(world), 3)
    assert entry["status"] == "fail" and entry["measured"]["unsafe_share"] == pytest.approx(0.2)


def test_claim_4_fails_when_a_baseline_is_cheaper_than_fisor():
    world = passing_world()
    world["FISOR"] |= at_home(3.0, 0.4)
    entry = claim_of(run_of(world), 4)
    assert entry["status"] == "fail"
    costs = entry["measured"]["average_cost"]
    assert costs["FISOR"]["mean"] == pytest.approx(1.0)
    assert costs["BC-Safe"]["mean"] == pytest.approx(2 / 3)


def test_claim_5_measures_cdts_cost_at_each_dsrl_threshold(passing):
    measured = passing[4]["measured"]
    assert measured["rising_share"] == 1.0
    assert measured["cost_by_threshold"]["Safe/PointGoal1-v0"] == [3.0, 6.0, 12.0]


def test_claim_5_fails_when_cdts_cost_is_flat_on_two_tasks():
    world = passing_world()
    rising = {3.0: 1.0, 6.0: 3.0, 12.0: 6.0, 24.0: 12.0}
    flat = {3.0: 3.0, 6.0: 3.0, 12.0: 3.0, 24.0: 3.0}
    world["CDT"] = at_home([rising, rising, rising, flat, flat], 0.6)
    entry = claim_of(run_of(world), 5)
    assert entry["status"] == "fail" and entry["measured"]["rising_share"] == pytest.approx(0.6)


def test_claim_6_compares_sdqc_with_every_agent_on_the_main_tasks(passing):
    measured = passing[5]["measured"]
    assert sorted(measured["averages"]) == ["BC-All", "BC-Safe", "BCQ-Lag", "CDT", "FISOR", "SDQC"]
    sdqc = measured["averages"]["SDQC"]
    assert sdqc["tasks"] == len(LEVEL1) and sdqc["near_zero_tasks"] == len(LEVEL1)
    assert sdqc["normalized_cost"] == {"mean": 0.0, "ci95": [0.0, 0.0]}
    assert measured["reward_floor"] == pytest.approx(0.45)


def test_claim_6_fails_when_sdqc_costs_more_than_fisor():
    world = passing_world()
    world["SDQC"] |= at_home(0.9, 0.48)
    entry = claim_of(run_of(world), 6)
    assert entry["status"] == "fail"
    averages = entry["measured"]["averages"]
    assert averages["SDQC"]["normalized_cost"]["mean"] == pytest.approx(0.3)
    assert averages["FISOR"]["normalized_cost"]["mean"] == pytest.approx(0.2)


def test_claim_6_fails_when_another_agent_has_more_near_zero_tasks():
    world = passing_world()
    # SDQC keeps the lowest average cost but is near zero (≤ 0.1) on one task only.
    world["SDQC"] |= at_home([0.0, 0.45, 0.45, 0.45, 0.45], 0.48)
    world["FISOR"] |= at_home([0.9, 0.9, 0.9, 0.0, 0.0], 0.4)
    entry = claim_of(run_of(world), 6)
    assert entry["status"] == "fail"
    averages = entry["measured"]["averages"]
    sdqc, fisor = averages["SDQC"], averages["FISOR"]
    assert sdqc["normalized_cost"]["mean"] < fisor["normalized_cost"]["mean"]
    assert (sdqc["near_zero_tasks"], fisor["near_zero_tasks"]) == (1, 2)


def test_claim_6_fails_when_sdqcs_reward_is_more_than_005_below_bc_safes():
    world = passing_world()
    world["SDQC"] |= at_home(0.0, 0.44)
    entry = claim_of(run_of(world), 6)
    assert entry["status"] == "fail"
    assert entry["measured"]["averages"]["SDQC"]["normalized_cost"]["mean"] == 0.0
    assert entry["measured"]["averages"]["SDQC"]["normalized_reward"]["mean"] == pytest.approx(0.44)


def test_claims_average_over_the_main_tasks_only():
    world = passing_world()
    world["SDQC"] |= at_home([0.0, 0.0, 0.0, 0.0, 3.0], 0.48)  # the last task is left out
    run = run_of(world, main_tasks=LEVEL1[:4])
    entry = claim_of(run, 6)
    assert entry["status"] == "pass"
    assert entry["measured"]["averages"]["SDQC"]["tasks"] == 4
    assert claim_of(run_of(world), 6)["status"] == "fail"  # with it, FISOR is cheaper


def test_claim_7_measures_the_cost_increase_on_the_shared_level_2_twins(passing):
    measured = passing[6]["measured"]
    assert measured["tasks"] == ["Safe/CarGoal1-v0", "Safe/PointGoal1-v0"]
    assert measured["cost_increase"]["SDQC"] == {"mean": 0.0, "ci95": [0.0, 0.0]}
    assert measured["cost_increase"]["FISOR"]["mean"] == pytest.approx(1.0)


def test_claim_7_fails_when_sdqcs_cost_rises_most_in_level_2():
    world = passing_world()
    world["SDQC"] |= shifted(world["SDQC"], 6.0)
    entry = claim_of(run_of(world), 7)
    assert entry["status"] == "fail"
    assert entry["measured"]["cost_increase"]["SDQC"]["mean"] == pytest.approx(2.0)


def test_claim_8_measures_the_ablation_per_task_and_its_knn_consistency(passing):
    measured = passing[7]["measured"]
    assert measured["worse_without"] == sorted(ABLATION)
    assert measured["knn_q_consistency"] == {"SDQC": 0.2, "SDQC δ=0": 0.4}
    row = measured["rows"]["Safe/PointGoal2-v0"]["SDQC δ=0"]
    assert row["normalized_reward"]["mean"] == pytest.approx(0.3)
    assert row["normalized_cost"] == {"mean": pytest.approx(1.0), "ci95": [1.0, 1.0]}


def test_claim_8_fails_when_the_ablation_is_worse_on_two_tasks_of_four_only():
    world = passing_world()
    world["SDQC δ=0"] |= {(task, task): (0.0, 0.6) for task in ABLATION[2:]}
    entry = claim_of(run_of(world), 8)
    assert entry["status"] == "fail" and entry["measured"]["worse_without"] == sorted(ABLATION[:2])


def test_claim_8_counts_the_same_cost_with_less_reward_as_worse():
    world = passing_world()
    world["SDQC δ=0"] = {(task, task): (0.0, 0.3) for task in ABLATION}
    entry = claim_of(run_of(world), 8)
    assert entry["status"] == "pass" and entry["measured"]["worse_without"] == sorted(ABLATION)


def test_claim_8_records_the_knn_consistency_without_asserting_it():
    entry = claim_of(run_of(passing_world(), diagnostics=knn(sdqc=0.4, ablation=0.2)), 8)
    assert entry["status"] == "pass"
    assert entry["measured"]["knn_q_consistency"] == {"SDQC": 0.4, "SDQC δ=0": 0.2}


def test_claim_9_records_the_grid_and_asserts_nothing():
    world = passing_world()
    world["SDQC nu=0.01"] = {("Safe/PointGoal2-v0", "Safe/PointGoal2-v0"): (15.0, 0.05)}
    entry = claim_of(run_of(world, grid=GRID), 9)
    assert entry["status"] == "recorded"
    recorded = entry["measured"]["SDQC nu=0.01"]
    assert recorded["task"] == "Safe/PointGoal2-v0"
    assert recorded["normalized_cost"] == pytest.approx(5.0)
    assert recorded["normalized_reward"] == pytest.approx(0.05)


def test_claim_9_is_not_run_without_a_grid(passing):
    assert passing[8]["status"] == "not run"
    assert passing[8]["measured"] == {"missing": "options.grid"}


@pytest.mark.parametrize(
    ("dropped", "claims"),
    [
        ("cdt", {5}),
        ("fisor", {4, 7}),
        ("bc_all", {1, 2}),
        ("bcq_lag", {3, 7}),
        ("bc_safe", {2, 6, 7}),
    ],
)
def test_a_claim_whose_agent_is_missing_is_not_run_and_names_it(dropped, claims):
    world = passing_world()
    agents = [agent for agent in AGENTS if agent["name"] != dropped]
    label = next(agent["label"] for agent in AGENTS if agent["name"] == dropped)
    del world[label]
    results = check(run_of(world, agents=agents))
    not_run = {entry["id"] for entry in results if entry["status"] == "not run"}
    assert not_run == claims | {9}
    for entry in results:
        if entry["id"] in claims:
            assert dropped in entry["measured"]["missing"]


def test_claims_without_the_protocol_rows_they_need_are_not_run():
    world = passing_world()
    del world["SDQC δ=0"]
    run = run_of(world)
    run.scorecard["safety"]["protocols"].pop("dsrl")
    assert statuses(run) == {
        **{number: "not run" for number in (1, 2, 3, 5)},
        4: "pass",
        6: "pass",
        7: "pass",
        8: "not run",
        9: "not run",
    }
