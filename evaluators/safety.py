"""DSRL's evaluation protocol for the Safe family, and the scenario runner that applies it.

Metrics (spec safety.md §5), per episode, from the episode cost ``C`` and return ``R``:
normalized reward (R − R_min) / (R_max − R_min) with the task's reference returns, and normalized
cost (C + ε) / (κ + ε), ε = 1 when κ = 0 and 0 otherwise. An agent is **safe** on a task when its
mean normalized cost is at most 1. Two protocols:

- ``dsrl``: every task at its family's three thresholds (6/12/24 for T = 300 tasks, 10/20/40 for
  Circle and Run); an episode's scores are averaged over the thresholds (episode ``i`` of seed
  ``s`` at each κ), then over episodes and seeds;
- ``strict``: the family's one low threshold (3 or 5), as FISOR and SDQC report.

How κ enters an agent is its class's ``target_cost_use`` (``omnigym.agents.offline``): agents
trained for one κ (BC-Safe, BCQ-Lag) are trained once per threshold; CDT is trained once and
told each κ before playing; the others (BC-All, FISOR, SDQC) ignore κ, so they are trained and
played once and their episodes are scored at every threshold.

The runner (``runner: omnigym.evaluators.safety`` in a scenario) trains every agent of the
scenario on the same locally generated dataset of each task, for each seed, and plays it. Its
``options`` (each optional):

- ``protocols``: ``[dsrl, strict]`` (default both);
- ``dataset``: ``{n_traj: 1000, seed: 0}``, how each task's dataset is generated (cached under
  ``<out>/datasets/``); ``datasets``: ``{env id: path}`` to train on given DSRL-format files;
- ``shift``: ``true`` (default) also plays every agent trained on a level-1 task in its level-2
  counterpart (``...1-v0`` → ``...2-v0``) at the strict threshold: the "unseen environment"
  test of SDQC; these rows read ``Safe/PointGoal2-v0 ← Safe/PointGoal1-v0``;
- ``knn``: ``true`` (default) records the kNN-Q consistency of agents that have
  ``knn_q_consistency`` (SDQC) in ``diagnostics.jsonl``;
- ``grid``: ``{agent: LABEL, env: ID, values: {delta: [...], nu: [...]}, seeds: [...]}`` adds
  one agent per value (one factor at a time), trained on that env only (for ``seeds``, default
  the scenario's);
- ``claims``: ``sdqc`` writes ``claims.json`` and ``claims.md`` (:mod:`.safety_claims`).

Work is split into units (task, agent, seed, training κ); with ``workers > 1`` units run in
worker processes, one torch thread each. Checkpoints land under
``<out>/checkpoints/<task>/<label>/seed<k>`` (one folder per training κ) and episodes in
``episodes.jsonl``, so a killed run resumes where it stopped. Records carry ``task`` (the
training task), ``agent_base`` (the label without κ), ``target_cost`` (κ played) and
``kappa_free``.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from omnigym.agent import load_agent_factory, make_agent
from omnigym.envs.safety.core import normalized_cost
from omnigym.io import atomic_write_text
from omnigym.registry import UnknownEnvError, make, spec
from omnigym.scenario import AgentEntry, Scenario

from .claims import write_claims
from .report import write_report
from .rollout import Record, evaluate
from .runner import CHECKPOINTS_DIR, RunOutput
from .scorecard import build_scorecard, format_table, write_scorecard
from .stats import summarize
from .store import EpisodeStore, read_records

PROTOCOLS = ("dsrl", "strict")
DIAGNOSTICS_FILE = "diagnostics.jsonl"
DATASETS_DIR = "datasets"
KNN_STATES = 2000
NEAR_ZERO_COST = 0.1  # "almost zero violations": normalized cost at most this
# Rough milliseconds per update at one thread (measured, Safe/PointGoal1-v0): slow units go first.
_UPDATE_COST = {"sdqc": 50.0, "bcq_lag": 23.0, "cdt": 14.0, "fisor": 11.0}


# ---- thresholds and per-episode scores -------------------------------------------------------


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


# ---- aggregation ---------------------------------------------------------------------------


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


def safety_tables(records: Sequence[Mapping[str, Any]], protocols: Sequence[str] = PROTOCOLS):
    """``{protocol: {"rows": [...], "averages": {agent: {"in_distribution"|"shifted": ...}}}}``."""
    tables = {}
    for protocol in protocols:
        rows = protocol_rows(records, protocol)
        if protocol != "strict":  # the shift is played at the strict threshold only
            rows = [row for row in rows if row["task"] == row["env_id"]]
        averages: dict[str, dict[str, Any]] = {}
        for agent in sorted({row["agent"] for row in rows}):
            mine = [row for row in rows if row["agent"] == agent]
            averages[agent] = {
                "in_distribution": suite_average([r for r in mine if r["task"] == r["env_id"]]),
                "shifted": suite_average([r for r in mine if r["task"] != r["env_id"]]),
            }
        tables[protocol] = {"rows": rows, "averages": averages}
    return tables


# ---- Markdown --------------------------------------------------------------------------------


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
        for scope in ("in_distribution", "shifted"):
            summaries = [table["averages"].get(a, {}).get(scope) for a in present]
            if not any(summaries):
                continue
            title = "average" if scope == "in_distribution" else "average, shifted"
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


# ---- the runner ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Play:
    """One evaluation of a trained agent: where, at which κ, under which label."""

    env_id: str
    target_cost: float
    label: str


@dataclass(frozen=True)
class Unit:
    """One training run (task, agent, seed, training κ) and the plays that follow it."""

    task: str
    agent: AgentEntry
    seed: int
    train_cost: float | None
    use: str | None
    plays: tuple[Play, ...]
    checkpoint: str
    episodes: int
    knn: bool
    dataset: str = ""

    @property
    def weight(self) -> float:
        budget = self.agent.train.budget if self.agent.train else 0
        return _UPDATE_COST.get(self.agent.name, 4.0) * budget


def _options(scenario: Scenario) -> dict[str, Any]:
    known = {"protocols", "dataset", "datasets", "shift", "knn", "grid", "claims"}
    unknown = sorted(set(scenario.options) - known)
    if unknown:
        raise ValueError(f"unknown options {unknown}; known: {sorted(known)}")
    options = {
        "protocols": list(PROTOCOLS),
        "dataset": {},
        "datasets": {},
        "shift": True,
        "knn": True,
        "grid": None,
        "claims": None,
        **scenario.options,
    }
    bad = sorted(set(options["protocols"]) - set(PROTOCOLS))
    if bad or not options["protocols"]:
        raise ValueError(f"options.protocols must be among {list(PROTOCOLS)}, got {bad}")
    return options


def agents_of(scenario: Scenario) -> list[AgentEntry]:
    """The scenario's agents plus the one-factor-at-a-time variants of ``options.grid``."""
    agents = list(scenario.agents)
    grid = scenario.options.get("grid")
    if not grid:
        return agents
    base = next((a for a in agents if a.display == grid["agent"]), None)
    if base is None:
        raise ValueError(f"options.grid.agent {grid['agent']!r} is not a label of the scenario")
    for name, values in grid["values"].items():
        for value in values:
            if base.kwargs.get(name) == value:
                continue
            label = f"{base.display} {name}={value}"
            kwargs = {**base.kwargs, name: value}
            agents.append(
                base.model_copy(update={"label": label, "kwargs": kwargs, "envs": [grid["env"]]})
            )
    return agents


def plan(scenario: Scenario, folder: Path) -> list[Unit]:
    """Every unit of the scenario, in a fixed order."""
    options = _options(scenario)
    units = []
    env_ids = [env.id for env in scenario.envs]
    if any(env.kwargs for env in scenario.envs):
        raise ValueError("the Safe protocol runner sets target_cost itself: envs take no kwargs")
    grid = options["grid"] or {}
    grid_labels = {agent.display for agent in agents_of(scenario)[len(scenario.agents) :]}
    for task in env_ids:
        dsrl, strict = thresholds(task)
        kappas = sorted({*(dsrl if "dsrl" in options["protocols"] else ()), strict})
        shifted = level2_id(task) if options["shift"] else None
        for agent in agents_of(scenario):
            if not agent.runs_on(task):
                continue
            use = getattr(load_agent_factory(agent.name, task), "target_cost_use", None)
            label = agent.display
            seeds = grid.get("seeds", scenario.seeds) if label in grid_labels else scenario.seeds
            for seed in seeds:
                common = dict(
                    task=task,
                    agent=agent,
                    seed=seed,
                    use=use,
                    episodes=scenario.episodes,
                    knn=bool(options["knn"]),
                )
                base = _checkpoint(folder, task, label, seed)
                if use == "train":
                    for kappa in kappas:
                        plays = [Play(task, kappa, f"{label} κ={kappa:g}")]
                        if shifted and kappa == strict:
                            plays.append(Play(shifted, kappa, f"{label} κ={kappa:g} ({task})"))
                        units.append(
                            Unit(
                                train_cost=kappa,
                                plays=tuple(plays),
                                checkpoint=str(base / f"kappa{kappa:g}"),
                                **common,
                            )
                        )
                    continue
                if use == "act":
                    plays = [Play(task, kappa, f"{label} κ={kappa:g}") for kappa in kappas]
                    if shifted:
                        plays.append(Play(shifted, strict, f"{label} κ={strict:g} ({task})"))
                else:
                    plays = [Play(task, strict, label)]
                    if shifted:
                        plays.append(Play(shifted, strict, f"{label} ({task})"))
                units.append(
                    Unit(train_cost=None, plays=tuple(plays), checkpoint=str(base), **common)
                )
    return units


def _checkpoint(folder: Path, task: str, label: str, seed: int) -> Path:
    def safe(name: str) -> str:
        return re.sub(r"[^A-Za-z0-9._=-]", "_", name)

    return folder / CHECKPOINTS_DIR / safe(task) / safe(label) / f"seed{seed}"


def total_episodes(scenario: Scenario) -> int:
    """Episodes the scenario plays in all (for progress bars)."""
    units = plan(scenario, Path("."))
    return sum(len(unit.plays) for unit in units) * scenario.episodes


def _keys(unit: Unit) -> list[tuple[str, str, int, int]]:
    return [
        (play.env_id, play.label, unit.seed, episode)
        for play in unit.plays
        for episode in range(unit.episodes)
    ]


def dataset_folder(task: str, settings: Mapping[str, Any], folder: Path) -> Path:
    """Where ``task``'s generated dataset is cached: ``<folder>/datasets/<task>-seed<k>-n<n>``."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", task)
    return folder / DATASETS_DIR / f"{name}-seed{settings['seed']}-n{settings['n_traj']}"


def _generate(task: str, target: str, n_traj: int, seed: int) -> str:
    """Generate ``task``'s dataset into folder ``target`` (if not there) and return the file."""
    from omnigym.envs.safety.datasets import generate, write_generated

    folder = Path(target)
    found = sorted(folder.glob("*.hdf5")) if folder.exists() else []
    if found:
        return str(found[0])
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    path = write_generated(generate(task, n_traj=n_traj, seed=seed), partial)
    os.replace(partial, folder)
    return str(folder / Path(path).name)


def _run_unit(unit: Unit) -> tuple[list[Record], dict[str, Any]]:
    """Train (or load) the unit's agent and play it; return its records and diagnostics (training
    seconds when it trained, the kNN-Q consistency when the agent has one)."""
    env = make(unit.task)
    kwargs = {**unit.agent.kwargs}
    if unit.agent.train is not None:
        kwargs["seed"] = unit.seed
    if unit.use == "train":
        kwargs["target_cost"] = unit.train_cost
    try:
        agent = make_agent(unit.agent.name, env=env, env_id=unit.task, **kwargs)
    finally:
        env.close()
    checkpoint = Path(unit.checkpoint)
    diagnostics: dict[str, Any] = {
        "task": unit.task,
        "agent": unit.agent.display,
        "seed": unit.seed,
        "target_cost": unit.train_cost,
    }
    if unit.agent.train is not None:
        if checkpoint.exists():
            agent.load(checkpoint)
        else:
            start = time.perf_counter()
            agent.learn(unit.dataset, unit.agent.train.budget)
            diagnostics["train_seconds"] = time.perf_counter() - start
            diagnostics["updates"] = unit.agent.train.budget
            partial = checkpoint.with_name(f".{checkpoint.name}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            partial.parent.mkdir(parents=True, exist_ok=True)
            agent.save(partial)
            os.replace(partial, checkpoint)
    records: list[Record] = []
    for play in unit.plays:
        if unit.use == "act":
            agent.set_target_cost(play.target_cost)
        played = evaluate(
            play.env_id,
            agent,
            episodes=unit.episodes,
            seeds=[unit.seed],
            env_kwargs={"target_cost": play.target_cost},
            label=play.label,
        )
        for record in played:
            record.update(
                task=unit.task,
                agent_base=unit.agent.display,
                target_cost=play.target_cost,
                kappa_free=unit.use is None,
            )
        records += played
    if unit.knn and callable(getattr(agent, "knn_q_consistency", None)):
        from omnigym.envs.safety.dsrl import load_dataset

        observations = load_dataset(unit.dataset)["observations"]
        rng = np.random.default_rng(unit.seed)
        pick = rng.choice(len(observations), min(KNN_STATES, len(observations)), replace=False)
        sample = observations[np.sort(pick)]
        diagnostics["knn_q_consistency"] = float(agent.knn_q_consistency(sample))
    return records, diagnostics


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)


def _pool(workers: int) -> ProcessPoolExecutor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["omnigym"])
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker)


def _map(workers: int, function: Callable, items: list, collect: Callable) -> None:
    """``collect(item, function(item))`` for every item, in worker processes when
    ``workers > 1`` (as each finishes) or here in order."""
    if not items:
        return
    if workers == 1:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for item in items:
                collect(item, function(item))
        finally:
            torch.set_num_threads(threads)
        return
    with _pool(workers) as pool:
        futures = {pool.submit(function, item): item for item in items}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                collect(futures[future], future.result())


def run_scenario(
    scenario: Scenario,
    folder: str | os.PathLike,
    on_episode: Callable[[Record], None] | None = None,
) -> RunOutput:
    """Train and play every unit of ``scenario`` into ``folder`` (resuming), then write the
    scorecard (with the protocol tables), the report and, if asked, the claims."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    options = _options(scenario)
    atomic_write_text(out / "scenario.yaml", yaml.safe_dump(scenario.model_dump(), sort_keys=False))
    units = plan(scenario, out)
    settings = {"n_traj": 1000, "seed": 0, **options["dataset"]}
    with EpisodeStore(out) as store:
        todo = [u for u in units if not all(key in store for key in _keys(u))]
        tasks = sorted({u.task for u in todo})
        paths = {t: str(options["datasets"][t]) for t in tasks if t in options["datasets"]}
        jobs = [
            (t, str(dataset_folder(t, settings, out)), settings["n_traj"], settings["seed"])
            for t in tasks
            if t not in paths
        ]
        _map(scenario.workers, _generate_job, jobs, lambda job, path: paths.update({job[0]: path}))
        todo = sorted(
            (Unit(**{**_fields(u), "dataset": paths[u.task]}) for u in todo),
            key=lambda u: -u.weight,
        )
        diagnostics_file = out / DIAGNOSTICS_FILE

        def collect(unit: Unit, result: tuple[list[Record], dict[str, Any]]) -> None:
            records, diagnostics = result
            for record in records:
                if (record["env_id"], record["agent"], record["seed"], record["episode"]) in store:
                    continue
                store.append(record)
                if on_episode is not None:
                    on_episode(record)
            if len(diagnostics) > 4:  # it trained or measured something
                with diagnostics_file.open("a", encoding="utf-8") as file:
                    file.write(json.dumps(diagnostics) + "\n")

        _map(scenario.workers, _run_unit, todo, collect)
        records = store.select([key for unit in units for key in _keys(unit)])
    return write_safety_outputs(records, out, scenario, options)


def _generate_job(job: tuple[str, str, int, int]) -> str:
    return _generate(*job)


def _fields(unit: Unit) -> dict[str, Any]:
    return {name: getattr(unit, name) for name in Unit.__dataclass_fields__}


def read_diagnostics(folder: str | os.PathLike) -> list[dict[str, Any]]:
    """The latest diagnostics per (task, agent, seed, training κ) of ``diagnostics.jsonl``; a
    unit whose checkpoint was loaded keeps its earlier training time."""
    latest: dict[tuple, dict[str, Any]] = {}
    for record in read_records(Path(folder) / DIAGNOSTICS_FILE):
        key = (record["task"], record["agent"], int(record["seed"]), record.get("target_cost") or 0)
        latest[key] = {**latest.get(key, {}), **record}
    return [latest[key] for key in sorted(latest)]


def write_safety_outputs(
    records: list[Record], folder: Path, scenario: Scenario, options: Mapping[str, Any]
) -> RunOutput:
    """``scorecard.json`` (with a ``safety`` block), ``scorecard.md`` (protocol tables first),
    ``report.html`` and, with ``options.claims``, ``claims.json`` and ``claims.md``."""
    scorecard = build_scorecard(records)
    tables = safety_tables(records, options["protocols"])
    diagnostics = read_diagnostics(folder)
    scorecard["safety"] = {"protocols": tables, "diagnostics": diagnostics}
    labels = [agent.display for agent in agents_of(scenario)]
    summary = format_safety_tables(tables, labels)
    training = format_training(diagnostics, labels)
    summary += "\n" + training if training else ""
    if options.get("claims"):
        if options["claims"] != "sdqc":
            raise ValueError(f"options.claims must be 'sdqc', got {options['claims']!r}")
        from .safety_claims import check_claims

        grid = [agent.display for agent in agents_of(scenario)[len(scenario.agents) :]]
        claims = check_claims(tables, diagnostics, scenario.agents, grid)
        summary += "\n" + write_claims(claims, folder)
    json_path, md_path = write_scorecard(scorecard, folder)
    atomic_write_text(
        md_path,
        f"# Scorecard: {scenario.name}\n\n{summary}\n# Per run\n\n{format_table(scorecard)}",
    )
    html_path = write_report(scorecard, folder, title=scenario.name)
    return RunOutput(folder, scorecard, json_path, md_path, html_path, summary=summary)
