"""The experiment kit: one way to write a paper's experiment (``docs/experiments.md``).

An experiment is a scenario (:mod:`omnigym.scenario`) run by an :class:`Experiment`: named
stages, each resumable from what the run folder already holds, then one set of outputs. The kit
owns the plumbing every paper needs, once:

- the **run folder** (:class:`RunFolder`): ``scenario.yaml`` (the scenario as run, with its
  profile), ``episodes.jsonl`` (the resume log, :class:`~omnigym.evaluators.store.EpisodeStore`),
  ``diagnostics.jsonl`` (one JSON line per piece of work: ``{"stage": ..., ...}``, with wall and
  CPU seconds and peak memory from :func:`timed`), ``learning_curves.jsonl``, checkpoints under
  ``checkpoints/<env>/<agent>/seed<k>`` (one naming rule, written whole or not at all), and a
  stage's own artefacts under ``<stage>/``;
- **one worker pool** (``self.pool``, :func:`omnigym.pool.make_pool`: local processes or Ray
  tasks, as the scenario's ``backend``, ``address`` and ``resources`` say) for episodes and jobs;
- **options** checked against the class's ``defaults`` (unknown keys are errors; mappings are
  merged one level deep), before anything is written;
- **outputs**: ``scorecard.json`` (the generic scorecard plus the experiment's blocks),
  ``scorecard.md`` (the experiment's summary, then the per-run table), ``report.html``, and, with
  ``claims:`` in the scenario, ``claims.json`` / ``claims.md`` from the paper's checker
  (:mod:`omnigym.evaluators.claims`), called as ``check(run)`` with the finished :class:`Run`;
  the scorecard's ``timing`` block (:mod:`omnigym.evaluators.timing`) adds up what the episodes
  and jobs cost in the processes that ran them.

:class:`TrainThenEvaluate` is the default experiment: each agent with a ``train:`` budget is
trained per (env, seed) (``learn(env, budget)``; saved if it can be, and loaded on a re-run),
then every agent plays ``episodes`` per seed. A paper whose experiment is more (datasets,
Q-estimation, matches, thresholds) subclasses :class:`Experiment` and lists its ``stages``.

Where a run goes: ``--out`` when given, else the scenario's ``out:``; under ``--quick`` without
``--out``, the ``quick/`` folder inside it (:func:`run_folder`). A folder never mixes profiles.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from omnigym.agent import load_agent_factory, make_agent
from omnigym.io import atomic_write_text
from omnigym.pool import Pool, make_pool
from omnigym.processes import measured
from omnigym.registry import load_entry_point, make
from omnigym.scenario import DEFAULT_EXPERIMENT, AgentEntry, EnvEntry, Scenario

from .claims import write_claims
from .report import write_report
from .rollout import Record, evaluate
from .scorecard import build_scorecard, format_table, overview, write_scorecard
from .store import EpisodeStore, read_records
from .timing import format_timing, timing_block

SCENARIO_FILE = "scenario.yaml"
DIAGNOSTICS_FILE = "diagnostics.jsonl"
LEARNING_CURVES_FILE = "learning_curves.jsonl"
CHECKPOINTS_DIR = "checkpoints"
QUICK_DIR = "quick"


def run_folder(scenario: Scenario, out: str | os.PathLike | None = None) -> Path:
    """Where ``scenario`` runs: ``out`` when given, else its ``out:`` (``quick/`` inside it for
    the quick profile). Raises ``ValueError`` when neither names a folder."""
    if out is not None:
        return Path(out)
    if scenario.out is None:
        raise ValueError(f"scenario {scenario.name!r} has no out: folder; give one")
    folder = Path(scenario.out)
    return folder / QUICK_DIR if scenario.profile == "quick" else folder


def safe_name(name: str) -> str:
    """``name`` as one folder name: characters other than letters, digits and ``._=+-``
    become ``_``."""
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", name)


@contextmanager
def timed() -> Iterator[dict[str, float]]:
    """``with timed() as timing:`` fills ``timing`` with the block's wall ``seconds``, the
    ``cpu_seconds`` of this process and its child programs, and its ``peak_rss_mb`` (what a
    worker's job spends, measured in the worker: :func:`omnigym.processes.measured`)."""
    timing: dict[str, float] = {}
    wall = time.perf_counter()
    try:
        with measured() as usage:
            yield timing
    finally:
        timing["seconds"] = time.perf_counter() - wall
        timing.update(usage)


class RunFolder:
    """The files of one run (see the module docstring for the layout)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def check_profile(self, scenario: Scenario) -> None:
        """Refuse a folder that holds the other profile's run (its episodes would mix with
        these)."""
        path = self.root / SCENARIO_FILE
        if path.exists():
            before = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            if before.get("profile", "full") != scenario.profile:
                raise ValueError(
                    f"{self.root} holds a {before.get('profile', 'full')} run of "
                    f"{before.get('name')!r}; run the {scenario.profile} profile into another "
                    "folder"
                )

    def write_scenario(self, scenario: Scenario) -> None:
        """Record the scenario as run (after :meth:`check_profile`)."""
        self.check_profile(scenario)
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_text(
            self.root / SCENARIO_FILE, yaml.safe_dump(scenario.model_dump(), sort_keys=False)
        )

    def path(self, *parts: str) -> Path:
        """A path inside the run folder (a stage's artefacts: ``path("data", "games.jsonl")``)."""
        return self.root.joinpath(*parts)

    def checkpoint(self, env: str, agent: str, seed: int) -> Path:
        """Where the agent labelled ``agent``, trained on ``env`` with run seed ``seed``, is
        saved."""
        return self.root / CHECKPOINTS_DIR / safe_name(env) / safe_name(agent) / f"seed{seed}"

    @staticmethod
    def save(save: Callable[[Path], Any], target: Path) -> None:
        """``save(folder)`` into a temporary folder beside ``target``, then rename it: a
        checkpoint is whole or absent."""
        partial = target.with_name(f".{target.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        save(partial)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)

    def diagnose(self, stage: str, **fields: Any) -> None:
        """Append one diagnostics line (flushed at once)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / DIAGNOSTICS_FILE).open("a", encoding="utf-8") as file:
            file.write(json.dumps({"stage": stage, **fields}, separators=(",", ":")) + "\n")

    def diagnostics(self, stage: str | None = None) -> list[dict[str, Any]]:
        """The diagnostics lines, those of ``stage`` only when given."""
        lines = read_records(self.root / DIAGNOSTICS_FILE)
        return [line for line in lines if stage is None or line.get("stage") == stage]

    def append_learning_curve(
        self, env: str, agent: str, seed: int, curve: Sequence[Sequence[float]]
    ) -> None:
        """Append one training run's ``(timesteps, return)`` curve (flushed)."""
        record = {
            "env_id": env,
            "agent": agent,
            "seed": int(seed),
            "timesteps": [int(t) for t, _ in curve],
            "returns": [float(r) for _, r in curve],
        }
        path = self.root / LEARNING_CURVES_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():  # a run killed mid-write left a partial line: cut it off first
            data = path.read_bytes()
            with path.open("r+b") as file:
                file.truncate(data.rfind(b"\n") + 1)
        with path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def learning_curves(self) -> list[dict[str, Any]]:
        """The stored curves, the latest per (env, agent, seed)."""
        latest = {
            (r["env_id"], r["agent"], int(r["seed"])): r
            for r in read_records(self.root / LEARNING_CURVES_FILE)
        }
        return [latest[key] for key in sorted(latest)]


@dataclass(frozen=True)
class Run:
    """A finished run, as a claims checker and an experiment's summary read it."""

    scenario: Scenario
    options: Mapping[str, Any]
    folder: RunFolder
    scorecard: dict[str, Any]
    records: list[Record]
    diagnostics: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RunOutput:
    """Where a finished run's files are, its scorecard and the Markdown printed after it."""

    folder: Path
    scorecard: dict[str, Any]
    scorecard_json: Path
    scorecard_md: Path
    report_html: Path
    summary: str
    claims: dict[str, Any] | None = None


class Experiment:
    """Base class of a paper's experiment (see the module docstring).

    A subclass sets ``defaults`` (its options and their defaults) and ``stages`` (names of its
    methods, run in order; each skips the work the run folder already holds), and may override
    :meth:`check`, :meth:`total_episodes`, :meth:`episode_keys`, :meth:`blocks` (extra
    scorecard blocks) and :meth:`summary` (Markdown shown before the per-run table).
    """

    defaults: ClassVar[Mapping[str, Any]] = {}
    stages: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        scenario: Scenario,
        folder: str | os.PathLike,
        on_episode: Callable[[Record], None] | None = None,
    ):
        self.scenario = scenario
        self.options = self.check_options(scenario.options)
        self.run = RunFolder(folder)
        self.run.check_profile(scenario)
        self.on_episode = on_episode
        self.check()
        self.pool: Pool | None = None
        self.store: EpisodeStore | None = None

    @classmethod
    def check_options(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """``defaults`` updated by ``given`` (mappings one level deep); unknown keys raise."""
        unknown = sorted(set(given) - set(cls.defaults))
        if unknown:
            known = ", ".join(sorted(cls.defaults)) or "none"
            raise ValueError(f"unknown options {unknown} for {cls.__name__} (known: {known})")
        options = {}
        for key, default in cls.defaults.items():
            value = given.get(key)
            if isinstance(default, Mapping) and isinstance(value, Mapping):
                options[key] = {**default, **value}
            else:
                options[key] = default if key not in given else value
        return options

    def check(self) -> None:
        """Validate the scenario for this experiment; raise ``ValueError`` naming what is
        wrong (called before anything is written)."""

    def total_episodes(self) -> int:
        """Episodes the run plays in all (for progress bars)."""
        return len(self.episode_keys())

    def episode_keys(self) -> list[tuple[str, str, int, int]]:
        """Every ``(env, agent, seed, episode)`` the run's scorecard is built from."""
        scenario = self.scenario
        return [
            (env.display, agent.display, seed, episode)
            for env in scenario.envs
            for agent in scenario.agents
            if agent.runs_on(env)
            for seed in scenario.seeds
            for episode in range(scenario.episodes)
        ]

    # ---- running ------------------------------------------------------------------------------

    def make_pool(self) -> Pool:
        """The pool the scenario asks for (:func:`omnigym.pool.make_pool`); raises
        :class:`~omnigym.pool.BackendError` when its backend cannot serve it."""
        scenario = self.scenario
        return make_pool(
            scenario.workers,
            backend=scenario.backend,
            address=scenario.address,
            cpus_per_job=scenario.resources.cpus_per_job,
            memory_per_job=scenario.resources.memory_per_job,
            job=f"each job of {scenario.name!r}",
        )

    def execute(self) -> RunOutput:
        """Run every stage into the run folder (resuming) in the pool of :meth:`make_pool`
        (made first: a backend that cannot serve fails before anything is written), then write
        the outputs."""
        with self.make_pool() as pool, EpisodeStore(self.run.root) as store:
            self.run.write_scenario(self.scenario)
            self.store, self.pool = store, pool
            try:
                for stage in self.stages:
                    getattr(self, stage)()
                records = store.select(self.episode_keys())
            finally:
                self.store, self.pool = None, None
        return self.write_outputs(records)

    def record(self, record: Record) -> None:
        """Store one finished episode (at most once) and report it to the progress bar."""
        if self.store is None:
            raise RuntimeError("record() is for an experiment's stages, while it executes")
        key = (record["env_id"], record["agent"], int(record["seed"]), int(record["episode"]))
        if key in self.store:
            return
        self.store.append(record)
        if self.on_episode is not None:
            self.on_episode(record)

    def done(self, env: str, agent: str, seeds: Sequence[int], episodes: int) -> bool:
        """Whether every episode of ``agent`` on ``env`` for ``seeds`` is stored."""
        return all(
            (env, agent, seed, episode) in self.store
            for seed in seeds
            for episode in range(episodes)
        )

    def evaluate(
        self, env: EnvEntry, agent: Any, label: str, seeds: Sequence[int], **kwargs: Any
    ) -> list[Record]:
        """:func:`~omnigym.evaluators.rollout.evaluate` in the run's pool and episode store."""
        return evaluate(
            env.id,
            agent,
            episodes=kwargs.pop("episodes", self.scenario.episodes),
            seeds=seeds,
            env_kwargs=env.kwargs,
            label=label,
            env_label=env.display,
            store=self.store,
            on_episode=self.on_episode,
            pool=self.pool,
            **kwargs,
        )

    # ---- outputs ------------------------------------------------------------------------------

    def blocks(self, run: Run) -> dict[str, Any]:
        """Extra top-level blocks of ``scorecard.json`` (e.g. a protocol's tables)."""
        return {}

    def summary(self, run: Run) -> str:
        """Markdown shown before the per-run table in ``scorecard.md`` and after a run."""
        return ""

    def write_outputs(self, records: list[Record]) -> RunOutput:
        """Scorecard, summary, report and claims of ``records``."""
        scorecard = build_scorecard(records)
        run = Run(self.scenario, self.options, self.run, scorecard, records, self.run.diagnostics())
        scorecard.update(self.blocks(run))
        claims = None
        parts = [self.summary(run)]
        if self.scenario.claims is not None:
            claims = {
                "experiment": self.scenario.name,
                "paper": self.scenario.paper,
                "profile": self.scenario.profile,
                "claims": load_entry_point(self.scenario.claims)(run),
            }
            parts.append(write_claims(claims, self.run.root))
        summary = "\n".join(part for part in parts if part)
        return write_outputs(
            records,
            self.run.root,
            title=self.scenario.name,
            scorecard=scorecard,
            summary=summary,
            claims=claims,
        )


def write_outputs(
    records: list[Record],
    folder: str | os.PathLike,
    title: str,
    scorecard: dict[str, Any] | None = None,
    summary: str = "",
    claims: dict[str, Any] | None = None,
) -> RunOutput:
    """Write ``scorecard.json``, ``scorecard.md`` (``summary`` first, the timing table last)
    and ``report.html`` (with the claims and the folder's learning curves) for ``records``."""
    out = Path(folder)
    scorecard = build_scorecard(records) if scorecard is None else scorecard
    scorecard["timing"] = timing_block(records, RunFolder(out).diagnostics())
    json_path, md_path = write_scorecard(scorecard, out)
    table = format_table(scorecard)
    markdown = md_path.read_text(encoding="utf-8")
    if summary:
        markdown = (
            f"# Scorecard: {title}\n\n{overview(scorecard)}.\n\n{summary}\n# Per run\n\n{table}"
        )
    timing = format_timing(scorecard["timing"])
    atomic_write_text(md_path, f"{markdown}\n{timing}" if timing else markdown)
    html_path = write_report(
        scorecard,
        out,
        title=title,
        learning_curves=RunFolder(out).learning_curves(),
        claims=claims,
    )
    shown = "\n".join(part for part in (table, summary, timing) if part)
    return RunOutput(out, scorecard, json_path, md_path, html_path, shown, claims)


def experiment_class(scenario: Scenario) -> type[Experiment]:
    """The :class:`Experiment` subclass that runs ``scenario``."""
    return load_entry_point(scenario.experiment or DEFAULT_EXPERIMENT)


def run_scenario(
    scenario: Scenario,
    folder: str | os.PathLike | None = None,
    on_episode: Callable[[Record], None] | None = None,
) -> RunOutput:
    """Run ``scenario`` into ``folder`` (default :func:`run_folder`), resuming what is there."""
    experiment = experiment_class(scenario)(scenario, run_folder(scenario, folder), on_episode)
    return experiment.execute()


# ---- the default experiment -------------------------------------------------------------------


class TrainThenEvaluate(Experiment):
    """Train each agent that has a ``train:`` budget, per (env, seed), then evaluate every
    agent: the experiment of any scenario that names none.

    Agents with ``save`` and ``load`` train in the run's pool, one job per (env, agent, seed),
    each job writing its checkpoint (:meth:`RunFolder.checkpoint`); the evaluation loads them,
    and so does a re-run. Other trained agents train here, one at a time, before they play. An
    agent that records its training (a ``learning_curve`` attribute of ``(timesteps, return)``
    pairs, as :class:`omnigym.agents.sb3.SB3Agent` keeps) has each curve appended to
    ``learning_curves.jsonl`` when training ends; the report plots it.
    """

    stages = ("train_and_evaluate",)

    def train_and_evaluate(self) -> None:
        self._train_in_pool()
        for env in self.scenario.envs:
            for agent in self.scenario.agents:
                if agent.runs_on(env):
                    self._play(env, agent)

    def _train_in_pool(self) -> None:
        """Train, in the pool, every saveable agent whose checkpoint and episodes are missing."""
        jobs = [
            TrainJob(env, agent, seed, str(self.run.checkpoint(env.display, agent.display, seed)))
            for env in self.scenario.envs
            for agent in self.scenario.agents
            if agent.train is not None and agent.runs_on(env) and _saves(agent, env)
            for seed in self.scenario.seeds
            if not self.done(env.display, agent.display, [seed], self.scenario.episodes)
            and not self.run.checkpoint(env.display, agent.display, seed).exists()
        ]
        for job, timing, curve in self.pool.map(train_job, jobs, ordered=False):
            self._trained_as(job.env, job.agent, job.seed, timing, curve)

    def _play(self, env: EnvEntry, agent: AgentEntry) -> None:
        seeds, episodes = self.scenario.seeds, self.scenario.episodes
        if agent.train is None:
            self.evaluate(env, agent.name, agent.display, seeds, agent_kwargs=agent.kwargs)
            return
        for seed in seeds:
            if self.done(env.display, agent.display, [seed], episodes):
                continue
            self.evaluate(env, self._trained(env, agent, seed), agent.display, [seed])

    def _trained(self, env: EnvEntry, agent: AgentEntry, seed: int) -> Any:
        """The agent trained for ``seed``: loaded from its checkpoint if one was saved, else
        trained now (its curve and checkpoint written as soon as training ends)."""
        checkpoint = self.run.checkpoint(env.display, agent.display, seed)
        if checkpoint.exists():
            play_env = make(env.id, **env.kwargs)
            try:
                built = make_agent(agent.name, env=play_env, env_id=env.id, **agent.kwargs)
                built.load(checkpoint)
            finally:
                play_env.close()
            return built
        built, timing = train(env, agent, seed)
        if _can_save(built):
            self.run.save(built.save, checkpoint)
        self._trained_as(env, agent, seed, timing, getattr(built, "learning_curve", None))
        return built

    def _trained_as(
        self, env: EnvEntry, agent: AgentEntry, seed: int, timing: dict, curve: Any
    ) -> None:
        """Record one finished training: its diagnostics line and learning curve."""
        self.run.diagnose("train", env_id=env.display, agent=agent.display, seed=seed, **timing)
        if curve:
            self.run.append_learning_curve(env.display, agent.display, seed, curve)


@dataclass(frozen=True)
class TrainJob:
    """One training of :class:`TrainThenEvaluate`'s pool: ``agent`` on ``env`` for ``seed``,
    saved to ``checkpoint``."""

    env: EnvEntry
    agent: AgentEntry
    seed: int
    checkpoint: str


def train(env: EnvEntry, agent: AgentEntry, seed: int) -> tuple[Any, dict[str, float]]:
    """Build ``agent`` for ``env``, seed it and run ``learn(env, budget)``; returns the agent
    and the training's :func:`timed` figures, measured where it ran, with that process's
    ``pid``."""
    play_env = make(env.id, **env.kwargs)
    try:
        built = make_agent(agent.name, env=play_env, env_id=env.id, **agent.kwargs)
        learn = getattr(built, "learn", None)
        if learn is None:
            raise ValueError(f"agent {agent.display!r} has a train budget but no learn()")
        if hasattr(built, "reset"):
            built.reset(seed)
        with timed() as timing:
            learn(play_env, agent.train.budget)
    finally:
        play_env.close()
    return built, {**timing, "pid": os.getpid()}


def train_job(job: TrainJob) -> tuple[TrainJob, dict[str, float], Any]:
    """A pool job: :func:`train`, then save the checkpoint (whole or absent)."""
    built, timing = train(job.env, job.agent, job.seed)
    RunFolder.save(built.save, Path(job.checkpoint))
    curve = getattr(built, "learning_curve", None)
    return job, timing, list(curve) if curve else None


def _can_save(agent: Any) -> bool:
    return callable(getattr(agent, "save", None)) and callable(getattr(agent, "load", None))


def _saves(agent: AgentEntry, env: EnvEntry) -> bool:
    """Whether ``agent``'s class (read without building it) saves and loads checkpoints."""
    return _can_save(load_agent_factory(agent.name, env.id))
