"""The claims of SDQC and its baselines, checked on a run of ``sdqc.yaml``.

SDQC (Yang et al., ICML 2025) and FISOR (Zheng et al., ICLR 2024) report that feasibility-guided
agents are the safe ones with competitive reward; DSRL (Liu et al., DMLR 2024) that BC-All is
high-reward and unsafe, BC-Safe and CDT reliable, Lagrangian Q-learners often unsafe. Claims 1–5
are about the baselines, 6–8 about SDQC, 9 is recorded (``docs/safety.md``). Averages carry 95%
bootstrap CIs over seeds (``{"mean", "ci95"}``, stratified by task) beside the papers' ordering.

Agents are found by their registry name (``bc_all``, ``bc_safe``, ``bcq_lag``, ``cdt``,
``fisor``, ``sdqc``); the ablation is the ``sdqc`` entry with ``delta: 0``. Claims 1–7 compare
the in-distribution rows of the main table (the run's ``main_tasks``, every task when it has
none) on the tasks every compared agent ran; claim 8 the tasks SDQC and its ablation share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.dsrl import NEAR_ZERO_COST, suite_average
from omnigym.evaluators.dsrl_experiment import agents_of
from omnigym.evaluators.experiment import Run
from omnigym.evaluators.stats import summarize
from omnigym.scenario import AgentEntry

BASELINES = ("bc_all", "bc_safe", "bcq_lag", "cdt", "fisor")

REWARD_MARGIN = 0.05
"""SDQC's average reward may fall this far below BC-Safe's (claim 6)."""

FISOR_TABLE_1 = {
    "SafetyGym": {"BC": [0.35, 6.05], "CDT": [0.50, 4.31], "BCQ-Lag": [0.38, 11.38],
                  "FISOR": [0.30, 0.35]},
    "BulletGym": {"BC": [0.72, 10.58], "CDT": [0.63, 2.09], "BCQ-Lag": [0.71, 10.63],
                  "FISOR": [0.39, 0.10]},
}  # fmt: skip
"""FISOR's Table 1 suite averages, [normalized reward, normalized cost] (safe when cost ≤ 1)."""


def roles(agents: Sequence[AgentEntry]) -> dict[str, str]:
    """Registry role → label: the first entry of each baseline, SDQC (δ ≠ 0) and the ablation."""
    found: dict[str, str] = {}
    for agent in agents:
        if agent.name == "sdqc":
            role = "ablation" if agent.kwargs.get("delta", 1.0) == 0 else "sdqc"
        else:
            role = agent.name
        found.setdefault(role, agent.display)
    return found


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–9 on this run (see the module docstring)."""
    protocols = run.scorecard["safety"]["protocols"]
    diagnostics = run.scorecard["safety"]["diagnostics"]
    main = run.options.get("main_tasks")
    tables = {
        protocol: [r for r in table["rows"] if main is None or r["task"] in main]
        for protocol, table in protocols.items()
    }
    ablation = {protocol: table["rows"] for protocol, table in protocols.items()}
    role = roles(run.scenario.agents)
    grid = [a.display for a in agents_of(run.scenario, run.options.get("grid"))]
    grid = grid[len(run.scenario.agents) :]
    return [
        _claim_1(tables, role),
        _claim_2(tables, role),
        _claim_3(tables, role),
        _claim_4(tables, role),
        _claim_5(tables, role),
        _claim_6(tables, role),
        _claim_7(tables, role),
        _claim_8(ablation, diagnostics, role),
        _claim_9(ablation, diagnostics, grid),
    ]


def _rows(tables: Mapping[str, list], protocol: str, shifted: bool = False) -> list[dict]:
    return [r for r in tables.get(protocol, []) if (r["task"] != r["env_id"]) == shifted]


def _by_task(rows: list[dict], labels: Sequence[str]) -> dict[str, dict[str, dict]]:
    """task → label → row, only tasks where every label has a row."""
    table: dict[str, dict[str, dict]] = {}
    for row in rows:
        table.setdefault(row["env_id"], {})[row["agent"]] = row
    return {task: cells for task, cells in table.items() if all(lab in cells for lab in labels)}


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan


def _averages(table: dict[str, dict[str, dict]], label: str) -> dict[str, Any]:
    """``label``'s suite average over the tasks of ``table``: reward and cost with 95% CIs over
    seeds, safe and near-zero task counts."""
    summary = suite_average([cells[label] for cells in table.values()])
    return {key: summary[key] for key in ("normalized_reward", "normalized_cost")} | {
        key: summary[key] for key in ("safe_tasks", "near_zero_tasks", "tasks")
    }


def _need(role: Mapping[str, str], names: Sequence[str]) -> str | None:
    missing = [n for n in names if n not in role]
    return f"agents {missing}" if missing else None


def _not_run(number: int, text: str, missing: str, paper: Any) -> dict[str, Any]:
    return claim(number, text, "not run", {"missing": missing}, paper)


def _claim_1(tables, role):
    text = "BC-All is unsafe (DSRL) on at least 60% of tasks and has the highest average reward"
    paper = {"BC (all data) reward / cost": FISOR_TABLE_1["SafetyGym"]["BC"], "source": "FISOR T1"}
    present = [role[n] for n in (*BASELINES, "sdqc") if n in role]
    if (missing := _need(role, ["bc_all"])) or not (
        table := _by_task(_rows(tables, "dsrl"), present)
    ):
        return _not_run(1, text, missing or "dsrl rows", paper)
    unsafe = sum(not cells[role["bc_all"]]["safe"] for cells in table.values()) / len(table)
    rewards = {label: _averages(table, label)["normalized_reward"] for label in present}
    best = max(rewards, key=lambda label: rewards[label]["mean"])
    measured = {"unsafe_share": unsafe, "average_reward": rewards}
    return claim(1, text, verdict(unsafe >= 0.6 and best == role["bc_all"]), measured, paper)


def _claim_2(tables, role):
    text = "BC-Safe is safe (DSRL) on at least 80% of tasks, with lower average reward than BC-All"
    paper = "DSRL: BC-Safe is among the most reliable (safe) baselines, below BC-All in reward"
    if missing := _need(role, ["bc_safe", "bc_all"]):
        return _not_run(2, text, missing, paper)
    table = _by_task(_rows(tables, "dsrl"), [role["bc_safe"], role["bc_all"]])
    if not table:
        return _not_run(2, text, "dsrl rows", paper)
    mine, theirs = _averages(table, role["bc_safe"]), _averages(table, role["bc_all"])
    safe = mine["safe_tasks"] / len(table)
    reward_safe, reward_all = mine["normalized_reward"], theirs["normalized_reward"]
    measured = {"safe_share": safe, "reward_bc_safe": reward_safe, "reward_bc_all": reward_all}
    holds = safe >= 0.8 and reward_safe["mean"] < reward_all["mean"]
    return claim(2, text, verdict(holds), measured, paper)


def _claim_3(tables, role):
    text = "BCQ-Lag is unsafe (DSRL) on at least a third of the tasks"
    paper = {"BCQ-Lag reward / cost": FISOR_TABLE_1["SafetyGym"]["BCQ-Lag"], "source": "FISOR T1"}
    if missing := _need(role, ["bcq_lag"]):
        return _not_run(3, text, missing, paper)
    table = _by_task(_rows(tables, "dsrl"), [role["bcq_lag"]])
    if not table:
        return _not_run(3, text, "dsrl rows", paper)
    unsafe = sum(not cells[role["bcq_lag"]]["safe"] for cells in table.values()) / len(table)
    return claim(3, text, verdict(unsafe >= 1 / 3), {"unsafe_share": unsafe}, paper)


def _claim_4(tables, role):
    text = "FISOR-lite has the lowest average normalized cost of the baselines (strict)"
    paper = {
        "ordering": "FISOR the lowest average cost of all baselines on every suite",
        "reward / cost": {suite: row["FISOR"] for suite, row in FISOR_TABLE_1.items()},
        "source": "FISOR T1",
    }
    present = [role[n] for n in BASELINES if n in role]
    if (missing := _need(role, ["fisor"])) or not (
        table := _by_task(_rows(tables, "strict"), present)
    ):
        return _not_run(4, text, missing or "strict rows", paper)
    costs = {label: _averages(table, label)["normalized_cost"] for label in present}
    holds = costs[role["fisor"]]["mean"] <= min(c["mean"] for c in costs.values())
    return claim(4, text, verdict(holds), {"average_cost": costs}, paper)


def _claim_5(tables, role):
    text = "CDT-lite's cost rises with the threshold on at least 80% of tasks (DSRL)"
    paper = "DSRL: CDT adapts its cost to the target threshold"
    if missing := _need(role, ["cdt"]):
        return _not_run(5, text, missing, paper)
    table = _by_task(_rows(tables, "dsrl"), [role["cdt"]])
    if not table:
        return _not_run(5, text, "dsrl rows", paper)
    costs = {}
    for task, cells in table.items():
        by_kappa = cells[role["cdt"]]["by_threshold"]
        costs[task] = [by_kappa[k]["cost"] for k in sorted(by_kappa, key=float)]
    rising = sum(values[-1] > values[0] for values in costs.values()) / len(costs)
    measured = {"rising_share": rising, "cost_by_threshold": costs}
    return claim(5, text, verdict(rising >= 0.8), measured, paper)


def _claim_6(tables, role):
    text = (
        "SDQC (strict) has the lowest average normalized cost and the most tasks with normalized "
        f"cost <= {NEAR_ZERO_COST:g} of all agents, with average reward at least BC-Safe's - "
        f"{REWARD_MARGIN:g}"
    )
    paper = {
        "ordering": "SDQC the lowest average cost of all methods, FISOR next",
        "SDQC cost": {"SafetyGym": 0.17, "BulletGym": 0.08},
        "SDQC reward SafetyGym": 0.26,
        "near-zero tasks": "more than half (FISOR about a quarter)",
    }
    names = ["sdqc", *BASELINES]
    if missing := _need(role, ["sdqc", "bc_safe"]):
        return _not_run(6, text, missing, paper)
    labels = [role[n] for n in names if n in role]
    table = _by_task(_rows(tables, "strict"), labels)
    if not table:
        return _not_run(6, text, "strict rows", paper)
    averages = {label: _averages(table, label) for label in labels}
    mine = averages[role["sdqc"]]
    cheapest = mine["normalized_cost"]["mean"] <= min(
        a["normalized_cost"]["mean"] for a in averages.values()
    )
    most = mine["near_zero_tasks"] >= max(a["near_zero_tasks"] for a in averages.values())
    floor = averages[role["bc_safe"]]["normalized_reward"]["mean"] - REWARD_MARGIN
    rewarded = mine["normalized_reward"]["mean"] >= floor
    measured = {"averages": averages, "reward_floor": floor}
    return claim(6, text, verdict(cheapest and most and rewarded), measured, paper)


def _claim_7(tables, role):
    text = (
        "Trained on level 1 and run in level 2, SDQC's increase in normalized cost (strict) is the "
        "smallest of SDQC, FISOR-lite, BC-Safe and BCQ-Lag"
    )
    paper = "SDQC is the only method whose cost does not rise on the other level"
    names = ["sdqc", "fisor", "bc_safe", "bcq_lag"]
    if missing := _need(role, names):
        return _not_run(7, text, missing, paper)
    labels = [role[n] for n in names]
    home = _by_task(_rows(tables, "strict"), labels)
    away = _by_task(
        [{**r, "env_id": r["task"]} for r in _rows(tables, "strict", shifted=True)], labels
    )
    tasks = sorted(set(home) & set(away))
    if not tasks:
        return _not_run(7, text, "level-2 (shifted) rows", paper)
    increase = {label: _increase(home, away, tasks, label) for label in labels}
    holds = increase[role["sdqc"]]["mean"] <= min(v["mean"] for v in increase.values())
    return claim(7, text, verdict(holds), {"tasks": tasks, "cost_increase": increase}, paper)


def _increase(home, away, tasks: Sequence[str], label: str) -> dict[str, Any]:
    """Mean over tasks of (level-2 − level-1 normalized cost), with a 95% CI over the seeds
    (each seed's increase per task, resampled within tasks)."""
    values, strata = [], []
    for task in tasks:
        there, here = away[task][label]["per_seed"], home[task][label]["per_seed"]
        for seed in sorted(set(there) & set(here)):
            values.append(there[seed][1] - here[seed][1])
            strata.append(task)
    mean = _mean(
        [
            away[t][label]["normalized_cost"]["mean"] - home[t][label]["normalized_cost"]["mean"]
            for t in tasks
        ]
    )
    return {"mean": mean, "ci95": summarize(values, strata)["ci95"]}


def _knn(diagnostics, label: str, tasks: Sequence[str]) -> float:
    return _mean(
        [
            d["knn_q_consistency"]
            for d in diagnostics
            if d["agent"] == label and d["task"] in tasks and "knn_q_consistency" in d
        ]
    )


def _worse(ablated: Mapping[str, Any], full: Mapping[str, Any]) -> bool:
    """The ablation does worse: higher normalized cost, or the same cost and less reward."""
    cost = ablated["normalized_cost"]["mean"], full["normalized_cost"]["mean"]
    reward = ablated["normalized_reward"]["mean"], full["normalized_reward"]["mean"]
    return cost[0] > cost[1] or (math.isclose(*cost) and reward[0] < reward[1])


def _claim_8(tables, diagnostics, role):
    text = (
        "Without the contrastive term (delta = 0) SDQC does worse (higher cost, or the same cost "
        "and less reward; strict) on at least 3 of its 4 ablation tasks; the kNN-Q consistency of "
        "both is recorded"
    )
    paper = "SDQC's ablation: the contrastive term lowers cost and improves kNN-Q consistency"
    if missing := _need(role, ["sdqc", "ablation"]):
        return _not_run(8, text, missing, paper)
    table = _by_task(_rows(tables, "strict"), [role["sdqc"], role["ablation"]])
    if not table:
        return _not_run(8, text, "strict rows of the ablation tasks", paper)
    tasks = sorted(table)
    worse = [t for t in tasks if _worse(table[t][role["ablation"]], table[t][role["sdqc"]])]
    labels = (role["sdqc"], role["ablation"])
    measured = {
        "tasks": tasks,
        "worse_without": worse,
        "knn_q_consistency": {label: _knn(diagnostics, label, tasks) for label in labels},
        "rows": {
            t: {
                label: {
                    key: {"mean": cells[label][key]["mean"], "ci95": cells[label][key]["ci95"]}
                    for key in ("normalized_reward", "normalized_cost")
                }
                for label in labels
            }
            for t, cells in table.items()
        },
    }
    enough = len(worse) >= math.ceil(0.75 * len(tasks))
    return claim(8, text, verdict(enough), measured, paper)


def _claim_9(tables, diagnostics, grid):
    text = "Recorded: the delta / nu / I grid of SDQC"
    paper = "nu = 0.01 collapses training"
    rows = [r for r in _rows(tables, "strict") if r["agent"] in grid]
    if not rows:
        return _not_run(9, text, "options.grid", paper)
    recorded = {
        r["agent"]: {
            "task": r["env_id"],
            "normalized_reward": r["normalized_reward"]["mean"],
            "normalized_cost": r["normalized_cost"]["mean"],
            "knn_q_consistency": _knn(diagnostics, r["agent"], [r["env_id"]]),
        }
        for r in rows
    }
    return claim(9, text, "recorded", recorded, paper)
