"""The claims of SDQC and its baselines, checked on a run of ``sdqc.yaml``.

SDQC (Yang et al., ICML 2025) and FISOR (Zheng et al., ICLR 2024) report that feasibility-guided
agents are the safe ones with competitive reward; DSRL (Liu et al., DMLR 2024) that BC-All is
high-reward and unsafe, BC-Safe and CDT reliable, Lagrangian Q-learners often unsafe. Claims 1–5
are about the baselines, 6–8 about SDQC, 9 is recorded (``docs/safety.md``).

Agents are found by their registry name (``bc_all``, ``bc_safe``, ``bcq_lag``, ``cdt``,
``fisor``, ``sdqc``); the ablation is the ``sdqc`` entry with ``delta: 0``. Claims compare the
in-distribution rows of the tasks every compared agent ran on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.dsrl import NEAR_ZERO_COST
from omnigym.evaluators.dsrl_experiment import agents_of
from omnigym.evaluators.experiment import Run
from omnigym.scenario import AgentEntry

BASELINES = ("bc_all", "bc_safe", "bcq_lag", "cdt", "fisor")

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
    tables = run.scorecard["safety"]["protocols"]
    diagnostics = run.scorecard["safety"]["diagnostics"]
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
        _claim_8(tables, diagnostics, role),
        _claim_9(tables, diagnostics, grid),
    ]


def _rows(tables: Mapping[str, Any], protocol: str, shifted: bool = False) -> list[dict]:
    rows = tables.get(protocol, {}).get("rows", [])
    return [r for r in rows if (r["task"] != r["env_id"]) == shifted]


def _by_task(rows: list[dict], labels: Sequence[str]) -> dict[str, dict[str, dict]]:
    """task → label → row, only tasks where every label has a row."""
    table: dict[str, dict[str, dict]] = {}
    for row in rows:
        table.setdefault(row["env_id"], {})[row["agent"]] = row
    return {task: cells for task, cells in table.items() if all(lab in cells for lab in labels)}


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan


def _averages(table: dict[str, dict[str, dict]], label: str) -> dict[str, float]:
    rows = [cells[label] for cells in table.values()]
    return {
        "normalized_reward": _mean([r["normalized_reward"]["mean"] for r in rows]),
        "normalized_cost": _mean([r["normalized_cost"]["mean"] for r in rows]),
        "safe_tasks": sum(r["safe"] for r in rows),
        "near_zero_tasks": sum(r["normalized_cost"]["mean"] <= NEAR_ZERO_COST for r in rows),
        "tasks": len(rows),
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
    best = max(rewards, key=rewards.get)
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
    safe = _averages(table, role["bc_safe"])["safe_tasks"] / len(table)
    reward_safe = _averages(table, role["bc_safe"])["normalized_reward"]
    reward_all = _averages(table, role["bc_all"])["normalized_reward"]
    measured = {"safe_share": safe, "reward_bc_safe": reward_safe, "reward_bc_all": reward_all}
    return claim(2, text, verdict(safe >= 0.8 and reward_safe < reward_all), measured, paper)


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
    paper = {"FISOR reward / cost": FISOR_TABLE_1["SafetyGym"]["FISOR"], "source": "FISOR T1"}
    present = [role[n] for n in BASELINES if n in role]
    if (missing := _need(role, ["fisor"])) or not (
        table := _by_task(_rows(tables, "strict"), present)
    ):
        return _not_run(4, text, missing or "strict rows", paper)
    costs = {label: _averages(table, label)["normalized_cost"] for label in present}
    holds = costs[role["fisor"]] <= min(costs.values())
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
        f"cost <= {NEAR_ZERO_COST:g}, against FISOR-lite, BC-Safe and BCQ-Lag"
    )
    paper = {
        "SDQC cost SafetyGym": 0.17,
        "SDQC reward SafetyGym": 0.26,
        "near-zero tasks": "more than half (FISOR about a quarter)",
    }
    names = ["sdqc", "fisor", "bc_safe", "bcq_lag"]
    if missing := _need(role, names):
        return _not_run(6, text, missing, paper)
    table = _by_task(_rows(tables, "strict"), [role[n] for n in names])
    if not table:
        return _not_run(6, text, "strict rows", paper)
    averages = {role[n]: _averages(table, role[n]) for n in names}
    mine = averages[role["sdqc"]]
    holds = mine["normalized_cost"] <= min(a["normalized_cost"] for a in averages.values()) and (
        mine["near_zero_tasks"] >= max(a["near_zero_tasks"] for a in averages.values())
    )
    return claim(6, text, verdict(holds), {"averages": averages}, paper)


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
    increase = {
        label: _mean(
            [
                away[t][label]["normalized_cost"]["mean"]
                - home[t][label]["normalized_cost"]["mean"]
                for t in tasks
            ]
        )
        for label in labels
    }
    holds = increase[role["sdqc"]] <= min(increase.values())
    return claim(7, text, verdict(holds), {"tasks": tasks, "cost_increase": increase}, paper)


def _knn(diagnostics, label: str, tasks: Sequence[str]) -> float:
    return _mean(
        [
            d["knn_q_consistency"]
            for d in diagnostics
            if d["agent"] == label and d["task"] in tasks and "knn_q_consistency" in d
        ]
    )


def _claim_8(tables, diagnostics, role):
    text = (
        "Without the contrastive term (delta = 0) SDQC's cost is higher and reward lower on at "
        "least 3 of 4 level-2 tasks, and its kNN-Q consistency is worse"
    )
    paper = "SDQC's ablation: the contrastive term lowers cost and improves kNN-Q consistency"
    if missing := _need(role, ["sdqc", "ablation"]):
        return _not_run(8, text, missing, paper)
    table = _by_task(_rows(tables, "strict"), [role["sdqc"], role["ablation"]])
    if not table:
        return _not_run(8, text, "strict rows of the ablation tasks", paper)
    tasks = sorted(table)
    worse = []
    for task in tasks:
        full, ablated = table[task][role["sdqc"]], table[task][role["ablation"]]
        if (
            ablated["normalized_cost"]["mean"] > full["normalized_cost"]["mean"]
            and ablated["normalized_reward"]["mean"] < full["normalized_reward"]["mean"]
        ):
            worse.append(task)
    knn = {label: _knn(diagnostics, label, tasks) for label in (role["sdqc"], role["ablation"])}
    enough = len(worse) >= math.ceil(0.75 * len(tasks))
    knn_worse = knn[role["ablation"]] > knn[role["sdqc"]]
    measured = {
        "tasks": tasks,
        "worse_without": worse,
        "knn_q_consistency": knn,
        "rows": {
            t: {
                lab: [
                    cells[lab]["normalized_reward"]["mean"],
                    cells[lab]["normalized_cost"]["mean"],
                ]
                for lab in (role["sdqc"], role["ablation"])
            }
            for t, cells in table.items()
        },
    }
    return claim(8, text, verdict(enough and knn_worse), measured, paper)


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
