"""The Safe family's experiment: every agent trained on the same offline dataset of each task and
scored under DSRL's protocol (:mod:`omnigym.evaluators.dsrl`), through the experiment kit.

``experiment: omnigym.evaluators.dsrl_experiment:DSRLExperiment`` in a scenario. Stages:

1. ``datasets``: each task's DSRL-format dataset, generated locally (scripted behaviour policies
   over a risk/noise grid, cached under ``<out>/datasets/``), unless ``options.datasets`` gives
   a file;
2. ``train_and_play``: work is split into units (task, agent, seed, training κ), run in the
   experiment's worker pool (one torch thread each), heaviest first. A unit trains its agent
   (or loads its checkpoint, :meth:`~omnigym.evaluators.experiment.RunFolder.checkpoint` with
   one folder per training κ), then plays it.

How κ enters an agent is its class's ``target_cost_use`` (the Safe agents' base,
:class:`omnigym.agents.safety.offline.OfflineAgent`): agents trained for one κ (BC-Safe, BCQ-Lag)
are trained once per threshold; CDT is trained once and told each κ before playing; the others
(BC-All, FISOR, SDQC) ignore κ, so they are trained and played once and their episodes are scored at
every threshold. Records carry ``task`` (the training task), ``agent_base`` (the label without κ),
``target_cost`` (κ played) and ``kappa_free``.

Options (each optional):

- ``protocols``: ``[dsrl, strict]`` (default both);
- ``dataset``: ``{n_traj: 1000, seed: 0}``, how each task's dataset is generated;
  ``datasets``: ``{env id: path}`` to train on given DSRL-format files;
- ``shift``: ``true`` (default) also plays every agent trained on a level-1 task in its level-2
  counterpart (``...1-v0`` → ``...2-v0``) at the strict threshold: the "unseen environment"
  test of SDQC; these rows read ``Safe/PointGoal2-v0 ← Safe/PointGoal1-v0``;
- ``main_tasks``: the tasks averaged in the main table (default: every task); agents trained on
  other tasks (an ablation's) are averaged apart, as ``other_tasks``;
- ``knn``: ``true`` (default) records the kNN-Q consistency of agents that have
  ``knn_q_consistency`` (SDQC) in the diagnostics;
- ``grid``: ``{agent: LABEL, env: ID, values: {delta: [...], nu: [...]}, seeds: [...]}`` adds
  one agent per value (one factor at a time), trained on that env only (for ``seeds``, default
  the scenario's).

Diagnostics: one ``train`` line per unit that trained (seconds, updates, ``losses``: every loss
of the agent's ``loss_curves()`` in ten windows), that played an agent with feasibility values
(``plays``: per play, the share of steps each of its policies handled and the calibration of
V_h at the episodes' first states against their costs) or that measured the kNN-Q consistency.
Scorecard block ``safety``: the protocol tables and the diagnostics; the summary adds the
training times, the feasibility table and the losses.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from omnigym.agent import load_agent_factory, make_agent
from omnigym.registry import make
from omnigym.scenario import AgentEntry, Scenario

from .dsrl import (
    PROTOCOLS,
    calibration,
    format_diagnostics,
    format_safety_tables,
    format_training,
    level2_id,
    loss_summary,
    safety_tables,
    thresholds,
)
from .experiment import Experiment, Run, RunFolder, safe_name, timed
from .rollout import Record, evaluate

DATASETS_DIR = "datasets"
KNN_STATES = 2000
# Rough milliseconds per update at one thread (measured, Safe/PointGoal1-v0): slow units go first.
_UPDATE_COST = {"sdqc": 50.0, "bcq_lag": 23.0, "cdt": 14.0, "fisor": 11.0}


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

    def episode_keys(self) -> list[tuple[str, str, int, int]]:
        return [
            (play.env_id, play.label, self.seed, episode)
            for play in self.plays
            for episode in range(self.episodes)
        ]


def agents_of(scenario: Scenario, grid: Mapping[str, Any] | None) -> list[AgentEntry]:
    """The scenario's agents plus the one-factor-at-a-time variants of ``grid``."""
    agents = list(scenario.agents)
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


class DSRLExperiment(Experiment):
    """DSRL's protocol over the scenario's Safe tasks and offline agents (module docstring)."""

    defaults: ClassVar[Mapping[str, Any]] = {
        "protocols": list(PROTOCOLS),
        "dataset": {"n_traj": 1000, "seed": 0},
        "datasets": {},
        "shift": True,
        "knn": True,
        "grid": None,
        "main_tasks": None,
    }
    stages = ("datasets", "train_and_play")

    def check(self) -> None:
        bad = sorted(set(self.options["protocols"]) - set(PROTOCOLS))
        if bad or not self.options["protocols"]:
            raise ValueError(f"options.protocols must be among {list(PROTOCOLS)}, got {bad}")
        if any(env.kwargs for env in self.scenario.envs):
            raise ValueError("the DSRL experiment sets target_cost itself: envs take no kwargs")
        unknown = sorted(set(self.options["main_tasks"] or ()) - {e.id for e in self.scenario.envs})
        if unknown:
            raise ValueError(f"options.main_tasks names tasks the scenario lacks: {unknown}")
        self.agents = agents_of(self.scenario, self.options["grid"])
        self.units = self._plan()
        self.paths: dict[str, str] = {}

    def _plan(self) -> list[Unit]:
        """Every unit of the scenario, in a fixed order."""
        scenario, options = self.scenario, self.options
        grid = options["grid"] or {}
        grid_labels = {agent.display for agent in self.agents[len(scenario.agents) :]}
        units = []
        for env in scenario.envs:
            task = env.id
            dsrl, strict = thresholds(task)
            kappas = sorted({*(dsrl if "dsrl" in options["protocols"] else ()), strict})
            shifted = level2_id(task) if options["shift"] else None
            for agent in self.agents:
                if not agent.runs_on(task):
                    continue
                use = getattr(load_agent_factory(agent.name, task), "target_cost_use", None)
                label = agent.display
                seeds = (
                    grid.get("seeds", scenario.seeds) if label in grid_labels else scenario.seeds
                )
                for seed in seeds:
                    units += self._units_of(task, agent, seed, use, kappas, strict, shifted)
        return units

    def _units_of(self, task, agent, seed, use, kappas, strict, shifted) -> list[Unit]:
        label = agent.display
        common = dict(
            task=task,
            agent=agent,
            seed=seed,
            use=use,
            episodes=self.scenario.episodes,
            knn=bool(self.options["knn"]),
        )
        base = self.run.checkpoint(task, label, seed)
        if use == "train":
            units = []
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
            return units
        if use == "act":
            plays = [Play(task, kappa, f"{label} κ={kappa:g}") for kappa in kappas]
            if shifted:
                plays.append(Play(shifted, strict, f"{label} κ={strict:g} ({task})"))
        else:
            plays = [Play(task, strict, label)]
            if shifted:
                plays.append(Play(shifted, strict, f"{label} ({task})"))
        return [Unit(train_cost=None, plays=tuple(plays), checkpoint=str(base), **common)]

    def episode_keys(self) -> list[tuple[str, str, int, int]]:
        return [key for unit in self.units for key in unit.episode_keys()]

    def _todo(self) -> list[Unit]:
        return [u for u in self.units if not all(key in self.store for key in u.episode_keys())]

    def datasets(self) -> None:
        """Generate (or find) the dataset of every task that still has units to run."""
        settings = self.options["dataset"]
        given = self.options["datasets"]
        tasks = sorted({u.task for u in self._todo()})
        self.paths = {t: str(given[t]) for t in tasks if t in given}
        jobs = [
            (t, str(dataset_folder(self.run, t, settings)), settings["n_traj"], settings["seed"])
            for t in tasks
            if t not in given
        ]
        for (task, *_), path in zip(jobs, self.pool.map(_generate_job, jobs), strict=True):
            self.paths[task] = path

    def train_and_play(self) -> None:
        todo = sorted(
            (replace(u, dataset=self.paths[u.task]) for u in self._todo()),
            key=lambda u: -u.weight,
        )
        for records, diagnostics in self.pool.map(_run_unit, todo, ordered=False):
            for record in records:
                self.record(record)
            if diagnostics:
                self.run.diagnose("train", **diagnostics)

    # ---- outputs ------------------------------------------------------------------------------

    def blocks(self, run: Run) -> dict[str, Any]:
        tables = safety_tables(run.records, self.options["protocols"], self.options["main_tasks"])
        return {"safety": {"protocols": tables, "diagnostics": latest_diagnostics(run)}}

    def summary(self, run: Run) -> str:
        labels = [agent.display for agent in self.agents]
        tables = run.scorecard["safety"]["protocols"]
        diagnostics = run.scorecard["safety"]["diagnostics"]
        training = format_training(diagnostics, labels)
        acting = format_diagnostics(diagnostics, labels)
        return "\n".join(
            part for part in (format_safety_tables(tables, labels), training, acting) if part
        )


def latest_diagnostics(run: Run) -> list[dict[str, Any]]:
    """The latest ``train`` diagnostics per (task, agent, seed, training κ); a unit whose
    checkpoint was loaded keeps its earlier training time."""
    latest: dict[tuple, dict[str, Any]] = {}
    for entry in run.diagnostics:
        if entry.get("stage") != "train" or "task" not in entry:
            continue
        key = (entry["task"], entry["agent"], int(entry["seed"]), entry.get("target_cost") or 0)
        latest[key] = {**latest.get(key, {}), **entry}
    return [latest[key] for key in sorted(latest)]


def dataset_folder(run: RunFolder, task: str, settings: Mapping[str, Any]) -> Path:
    """Where ``task``'s generated dataset is cached: ``<out>/datasets/<task>-seed<k>-n<n>``."""
    name = f"{safe_name(task)}-seed{settings['seed']}-n{settings['n_traj']}"
    return run.path(DATASETS_DIR, name)


def _generate_job(job: tuple[str, str, int, int]) -> str:
    """Generate ``task``'s dataset into folder ``target`` (if not there) and return the file."""
    from omnigym.envs.safety.datasets import generate, write_generated

    task, target, n_traj, seed = job
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
    """Train (or load) the unit's agent and play it; return its records and diagnostics
    (:func:`_measure`; empty when there is nothing to report)."""
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
    measured: dict[str, Any] = {}
    if unit.agent.train is not None:
        if checkpoint.exists():
            # the scenario's acting settings (e.g. FISOR's candidates) over the saved ones
            acting = getattr(agent, "acting_keys", ())
            agent.load(checkpoint, **{k: v for k, v in kwargs.items() if k in acting})
        else:
            with timed() as timing:
                agent.learn(unit.dataset, unit.agent.train.budget)
            measured.update(train_seconds=timing["seconds"], updates=unit.agent.train.budget)
            curves = getattr(agent, "loss_curves", None)
            if callable(curves) and (losses := loss_summary(curves())):
                measured["losses"] = losses
            RunFolder.save(agent.save, checkpoint)
    records: list[Record] = []
    plays = []
    regions = getattr(agent, "regions", None)
    for play in unit.plays:
        if unit.use == "act":
            agent.set_target_cost(play.target_cost)
        if regions is not None:
            regions.clear()
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
        if regions is not None or callable(getattr(agent, "feasibility", None)):
            plays.append(_acting(agent, play, played))
    if plays:
        measured["plays"] = plays
    if unit.knn and callable(getattr(agent, "knn_q_consistency", None)):
        from omnigym.envs.safety.dsrl import load_dataset

        observations = load_dataset(unit.dataset)["observations"]
        rng = np.random.default_rng(unit.seed)
        pick = rng.choice(len(observations), min(KNN_STATES, len(observations)), replace=False)
        sample = observations[np.sort(pick)]
        measured["knn_q_consistency"] = float(agent.knn_q_consistency(sample))
    if not measured:
        return records, {}
    where = {
        "task": unit.task,
        "agent": unit.agent.display,
        "seed": unit.seed,
        "target_cost": unit.train_cost,
    }
    return records, {**where, **measured}


def _acting(agent: Any, play: Play, played: list[Record]) -> dict[str, Any]:
    """What a feasibility-guided agent did in one play: the share of steps each of its
    policies (or regions) handled (``agent.regions``, a Counter it fills while acting) and the
    calibration of its feasibility values at the episodes' first states (``agent.feasibility``)
    against the episodes' costs."""
    measured: dict[str, Any] = {"env_id": play.env_id, "label": play.label}
    regions = getattr(agent, "regions", None)
    if regions:
        total = sum(regions.values())
        measured["regions"] = {name: count / total for name, count in sorted(regions.items())}
    if callable(getattr(agent, "feasibility", None)):
        env = make(play.env_id, target_cost=play.target_cost)
        try:
            starts = np.stack([env.reset(seed=r["episode_seed"])[0] for r in played])
        finally:
            env.close()
        values = agent.feasibility(starts)
        measured["calibration"] = calibration(values, [r["cost"] or 0.0 for r in played])
    return measured
