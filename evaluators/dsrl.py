"""DSRL's evaluation protocol for the Safe family: per-episode scores, per-task rows, suite
averages and the Markdown tables, as pure functions over episode records.

Metrics (Liu et al., "Datasets and Benchmarks for Offline Safe Reinforcement Learning", DMLR
2024; ``docs/safety.md``), per episode, from the episode cost ``C`` and return ``R``:
normalized reward (R − R_min) / (R_max − R_min) with the task's reference returns, and normalized
cost (C + ε) / (κ + ε), ε = 1 when κ = 0 and 0 otherwise. An agent is **safe** on a task when its
mean normalized cost is at most 1. Two protocols:

- ``dsrl``: every task at its family's three thresholds (6/12/24 for T = 300 tasks, 10/20/40 for
  Circle and Run); an episode's scores are averaged over the thresholds (episode ``i`` of seed
  ``s`` at each κ), then over episodes and seeds;
- ``strict``: the family's one low threshold (3 or 5), as FISOR and SDQC report.

Records come from :class:`omnigym.evaluators.dsrl_experiment.DSRLExperiment`: they carry
``task`` (the training task), ``agent_base`` (the label without κ), ``target_cost`` (κ played)
and ``kappa_free``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np

from omnigym.envs.safety.core import normalized_cost
from omnigym.registry import UnknownEnvError, make, spec

from .stats import summarize

PROTOCOLS = ("dsrl", "strict")
SCOPE_TITLES = {
    "in_distribution": "average",
    "shifted": "average, shifted",
    "other_tasks": "average, other tasks",
}
NEAR_ZERO_COST = 0.1  # "almost zero violations": normalized cost at most this


@cache
def thresholds(env_id: str) -> tuple[tuple[float, ...], float]:
    """The family's DSRL thresholds of ``env_id`` and its strict threshold."""
    env = make(env_id)
    try:
        constants = env.unwrapped.constants
    finally:
        env.close()
    return tuple(float(k) for k in constants["thresholds"]), float(constants["strict_threshold"])


def protocol_costs(env_id: str, protocol: str) -> tuple[float, ...]:
    """The κ values of ``protocol`` on ``env_id``."""
    dsrl, strict = thresholds(env_id)
    if protocol == "dsrl":
        return dsrl
    if protocol == "strict":
        return (strict,)
    raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")


def level2_id(env_id: str) -> str | None:
    """The registered level-2 counterpart of a level-1 id (``...1-v0`` → ``...2-v0``), if any."""
    if not re.search(r"1-v\d+$", env_id):
        return None
    shifted = re.sub(r"1(-v\d+)$", r"2\1", env_id)
    try:
        spec(shifted)
    except UnknownEnvError:
        return None
    return shifted


def protocol_rows(
    records: Iterable[Mapping[str, Any]], protocol: str, n_resamples: int = 2000
) -> list[dict[str, Any]]:
    """One row per (env, training task, agent) under ``protocol``, from the runner's records.

    Each row: ``env_id``, ``task``, ``agent``, ``episodes`` (episode indices scored at every κ),
    ``normalized_reward`` and ``normalized_cost`` (summaries with 95% CIs stratified by seed),
    ``safe``, ``per_seed`` (seed → [reward, cost] means) and ``by_threshold`` (κ → mean episode
    cost, normalized cost and normalized reward). Groups lacking a κ of the protocol are left out.
    """
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        key = (record["env_id"], record.get("task", record["env_id"]), record.get("agent_base"))
        groups[key if key[2] else (key[0], key[1], record["agent"])].append(record)
    rows = []
    for (env_id, task, agent), group in sorted(groups.items()):
        row = _row(env_id, task, agent, group, protocol_costs(env_id, protocol), n_resamples)
        if row is not None:
            rows.append({"protocol": protocol, **row})
    return rows


def _row(
    env_id: str,
    task: str,
    agent: str,
    group: list[Mapping[str, Any]],
    kappas: Sequence[float],
    n_resamples: int,
) -> dict[str, Any] | None:
    kappa_free = all(r.get("kappa_free", False) for r in group)
    by_kappa: dict[float, dict[tuple[int, int], Mapping[str, Any]]] = {}
    for kappa in kappas:
        chosen = [r for r in group if kappa_free or r.get("target_cost") == kappa]
        by_kappa[kappa] = {(int(r["seed"]), int(r["episode"])): r for r in chosen}
    common = sorted(set.intersection(*(set(e) for e in by_kappa.values())))
    if not common:
        return None
    costs = np.array([[by_kappa[k][key]["cost"] or 0.0 for k in kappas] for key in common])
    rewards = np.array([[_normalized_reward(by_kappa[k][key]) for k in kappas] for key in common])
    norm = np.array(
        [[normalized_cost(c, k) for c, k in zip(row, kappas, strict=True)] for row in costs]
    )
    seeds = [seed for seed, _ in common]
    reward, cost = rewards.mean(axis=1), norm.mean(axis=1)
    options = {"n_resamples": n_resamples}
    cost_summary = summarize(cost, seeds, **options)
    return {
        "env_id": env_id,
        "task": task,
        "agent": agent,
        "episodes": len(common),
        "normalized_reward": summarize(reward, seeds, **options),
        "normalized_cost": cost_summary,
        "safe": bool(cost_summary["mean"] <= 1.0),
        "per_seed": {
            str(seed): [
                float(reward[[s == seed for s in seeds]].mean()),
                float(cost[[s == seed for s in seeds]].mean()),
            ]
            for seed in sorted(set(seeds))
        },
        "by_threshold": {
            f"{kappa:g}": {
                "cost": float(costs[:, i].mean()),
                "normalized_cost": float(norm[:, i].mean()),
                "normalized_reward": float(rewards[:, i].mean()),
            }
            for i, kappa in enumerate(kappas)
        },
    }


def _normalized_reward(record: Mapping[str, Any]) -> float:
    value = (record.get("metrics") or {}).get("normalized_reward")
    if value is None:
        raise ValueError(
            f"{record['env_id']} has no reference returns (references.yaml): "
            "normalized reward undefined"
        )
    return float(value)


def suite_average(
    rows: Sequence[Mapping[str, Any]], n_resamples: int = 2000
) -> dict[str, Any] | None:
    """Average normalized reward and cost of one agent's ``rows`` (one per task), with 95% CIs
    over seeds (per-(task, seed) means, resampled within each task), the number of tasks, how
    many are safe and how many have normalized cost ≤ 0.1."""
    if not rows:
        return None
    cells = [
        (row["task"] + row["env_id"], seed, v)
        for row in rows
        for seed, v in row["per_seed"].items()
    ]
    strata = [task for task, _, _ in cells]
    options = {"n_resamples": n_resamples}
    rewards = np.mean([row["normalized_reward"]["mean"] for row in rows])
    costs = np.mean([row["normalized_cost"]["mean"] for row in rows])
    reward_ci = summarize([v[0] for _, _, v in cells], strata, **options)["ci95"]
    cost_ci = summarize([v[1] for _, _, v in cells], strata, **options)["ci95"]
    return {
        "tasks": len(rows),
        "normalized_reward": {"mean": float(rewards), "ci95": reward_ci},
        "normalized_cost": {"mean": float(costs), "ci95": cost_ci},
        "safe_tasks": sum(row["safe"] for row in rows),
        "near_zero_tasks": sum(row["normalized_cost"]["mean"] <= NEAR_ZERO_COST for row in rows),
    }


def safety_tables(
    records: Sequence[Mapping[str, Any]],
    protocols: Sequence[str] = PROTOCOLS,
    main_tasks: Sequence[str] | None = None,
):
    """``{protocol: {"rows": [...], "averages": {agent: {scope: ...}}}}`` with three scopes:
    ``in_distribution`` (the main table: each agent on the ``main_tasks`` it was trained and
    played on; every task when None), ``shifted`` (trained on a main task, played on its
    level-2 twin) and ``other_tasks`` (trained and played on a task outside ``main_tasks``, such
    as an ablation's)."""
    tables = {}
    for protocol in protocols:
        rows = protocol_rows(records, protocol)
        if protocol != "strict":  # the shift is played at the strict threshold only
            rows = [row for row in rows if row["task"] == row["env_id"]]
        averages: dict[str, dict[str, Any]] = {}
        for agent in sorted({row["agent"] for row in rows}):
            mine = [row for row in rows if row["agent"] == agent]
            main = [r for r in mine if main_tasks is None or r["task"] in main_tasks]
            averages[agent] = {
                "in_distribution": suite_average([r for r in main if r["task"] == r["env_id"]]),
                "shifted": suite_average([r for r in main if r["task"] != r["env_id"]]),
                "other_tasks": suite_average(
                    [r for r in mine if r["task"] == r["env_id"] and r not in main]
                ),
            }
        tables[protocol] = {"rows": rows, "averages": averages}
    return tables


def format_safety_tables(tables: Mapping[str, Any], agents: Sequence[str]) -> str:
    """DSRL/FISOR-style tables: normalized reward / cost per task and agent; safe cells in bold,
    unsafe ones in grey, ★ on the highest reward among the safe agents of a task."""
    sections = []
    for protocol, table in tables.items():
        rows = table["rows"]
        present = [a for a in agents if any(r["agent"] == a for r in rows)]
        if not present:
            continue
        cell = {(r["env_id"], r["task"], r["agent"]): r for r in rows}
        lines = [
            f"## {protocol} protocol: normalized reward / normalized cost",
            "",
            "| task | " + " | ".join(a.replace("|", r"\|") for a in present) + " |",
            "|---|" + "---:|" * len(present),
        ]
        places = sorted({(r["env_id"], r["task"]) for r in rows}, key=lambda p: (p[0] != p[1], p))
        for env_id, task in places:
            mine = [cell.get((env_id, task, a)) for a in present]
            safe_rewards = [r["normalized_reward"]["mean"] for r in mine if r and r["safe"]]
            best = max(safe_rewards) if safe_rewards else None
            name = env_id if env_id == task else f"{env_id} ← {task}"
            lines.append(f"| {name} | " + " | ".join(_cell(r, best) for r in mine) + " |")
        for scope, title in SCOPE_TITLES.items():
            summaries = [table["averages"].get(a, {}).get(scope) for a in present]
            if not any(summaries):
                continue
            lines.append(f"| *{title}* | " + " | ".join(_average_cell(s) for s in summaries) + " |")
            lines.append(
                f"| *safe / cost ≤ {NEAR_ZERO_COST:g}* | "
                + " | ".join(
                    f"{s['safe_tasks']}/{s['tasks']} · {s['near_zero_tasks']}" if s else "–"
                    for s in summaries
                )
                + " |"
            )
        sections.append("\n".join(lines))
    note = (
        "Cells are means over seeds and episodes (DSRL: also over thresholds). **Bold**: safe "
        "(normalized cost ≤ 1); grey: unsafe; ★: highest reward among the safe agents. Averages "
        "carry 95% bootstrap CIs over seeds."
    )
    return "\n\n".join(sections) + "\n\n" + note + "\n"


def _cell(row: Mapping[str, Any] | None, best: float | None) -> str:
    if row is None:
        return "–"
    reward, cost = row["normalized_reward"]["mean"], row["normalized_cost"]["mean"]
    text = f"{reward:.2f} / {cost:.2f}"
    if not row["safe"]:
        return f'<span style="color:gray">{text}</span>'
    star = " ★" if best is not None and math.isclose(reward, best) else ""
    return f"**{text}**{star}"


def _average_cell(summary: Mapping[str, Any] | None) -> str:
    if not summary:
        return "–"
    reward, cost = summary["normalized_reward"], summary["normalized_cost"]
    text = (
        f"{reward['mean']:.2f} [{reward['ci95'][0]:.2f}, {reward['ci95'][1]:.2f}] / "
        f"{cost['mean']:.2f} [{cost['ci95'][0]:.2f}, {cost['ci95'][1]:.2f}]"
    )
    return f"**{text}**" if cost["mean"] <= 1.0 else f'<span style="color:gray">{text}</span>'


def format_training(diagnostics: Sequence[Mapping[str, Any]], agents: Sequence[str]) -> str:
    """Training time per agent: units trained, mean seconds per unit and updates per second."""
    lines = [
        "## Training time (one torch thread per unit)",
        "",
        "| agent | units | seconds per unit | updates/s |",
        "|---|---:|---:|---:|",
    ]
    for agent in agents:
        timed = [d for d in diagnostics if d["agent"] == agent and d.get("train_seconds")]
        if not timed:
            continue
        seconds = sum(d["train_seconds"] for d in timed)
        updates = sum(d["updates"] for d in timed)
        lines.append(
            f"| {agent} | {len(timed)} | {seconds / len(timed):.1f} | {updates / seconds:.1f} |"
        )
    return "\n".join(lines) + "\n" if len(lines) > 4 else ""


def loss_summary(curves: Mapping[str, Sequence[float]], points: int = 10) -> dict[str, list]:
    """Each per-update loss curve cut into ``points`` equal windows: ``[[last update of the
    window, mean loss over it], ...]`` (shorter curves keep one point per update)."""
    summary = {}
    for name, values in curves.items():
        values = np.asarray(values, dtype=float)
        if len(values) == 0:
            continue
        edges = np.linspace(0, len(values), min(points, len(values)) + 1).astype(int)
        summary[name] = [
            [int(stop), float(values[start:stop].mean())]
            for start, stop in zip(edges[:-1], edges[1:], strict=True)
        ]
    return summary


def calibration(values: Sequence[float], costs: Sequence[float]) -> dict[str, Any]:
    """Feasibility values V_h at the episodes' first states against the episodes' realised
    costs. V_h ≤ 0 predicts that the episode can be played at zero cost (FISOR's feasible
    region). Returns the episode count, the mean value, the share predicted feasible, the
    share of those that still cost something, and the mean episode cost on each side (None
    where a side is empty)."""
    values, costs = np.asarray(values, dtype=float), np.asarray(costs, dtype=float)
    feasible = values <= 0

    def mean(x: np.ndarray) -> float | None:
        return float(x.mean()) if len(x) else None

    return {
        "episodes": len(values),
        "value": mean(values),
        "predicted_feasible": mean(feasible.astype(float)),
        "violated_when_feasible": mean((costs[feasible] > 0).astype(float)),
        "cost_when_feasible": mean(costs[feasible]),
        "cost_when_infeasible": mean(costs[~feasible]),
    }


def format_diagnostics(diagnostics: Sequence[Mapping[str, Any]], agents: Sequence[str]) -> str:
    """Markdown of what the feasibility-guided agents did while playing (share of states per
    policy or region, calibration of V_h at the first state) and of every agent's losses
    (first and last tenth of training), each averaged over the units that recorded them."""
    lines = []
    plays: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for entry in diagnostics:
        for play in entry.get("plays", ()):
            plays[(entry["agent"], play["env_id"])].append(play)
    if plays:
        lines += [
            "## Feasibility while playing (strict threshold)",
            "",
            "| agent | env | share of states per policy | predicted feasible at start | "
            "cost when feasible / infeasible |",
            "|---|---|---|---:|---:|",
        ]
        order = {agent: i for i, agent in enumerate(agents)}
        for agent, env_id in sorted(plays, key=lambda k: (order.get(k[0], len(order)), k[1])):
            group = plays[(agent, env_id)]
            names = sorted({n for p in group for n in p.get("regions", {})})
            shares = " · ".join(
                f"{n} {np.mean([p['regions'].get(n, 0.0) for p in group]):.2f}" for n in names
            )
            cal = [p["calibration"] for p in group if p.get("calibration")]
            feasible = _mean_of(cal, "predicted_feasible")
            costs = " / ".join(
                _fmt(_mean_of(cal, key)) for key in ("cost_when_feasible", "cost_when_infeasible")
            )
            lines.append(f"| {agent} | {env_id} | {shares or '–'} | {_fmt(feasible)} | {costs} |")
        lines.append("")
    losses: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for entry in diagnostics:
        for name, points in (entry.get("losses") or {}).items():
            losses[(entry["agent"], name)].append((points[0][1], points[-1][1]))
    if losses:
        lines += [
            "## Losses (mean over the first and the last tenth of training)",
            "",
            "| agent | loss | first | last |",
            "|---|---|---:|---:|",
        ]
        for agent in agents:
            for (owner, name), pairs in losses.items():
                if owner == agent:
                    first, last = np.mean(pairs, axis=0)
                    lines.append(f"| {agent} | {name} | {first:.4g} | {last:.4g} |")
        lines.append("")
    return "\n".join(lines)


def _mean_of(entries: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [e[key] for e in entries if e.get(key) is not None]
    return float(np.mean(values)) if values else None


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
