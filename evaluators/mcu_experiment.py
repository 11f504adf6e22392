"""The MCU claims experiment: the curated suite, every agent, the six dimensions.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) evaluates agents on its curated MCU-turbo tasks
at two difficulty levels, two episodes per task, and reports each dimension's mean × 10 by
agent, difficulty and task kind. :class:`MCUExperiment` does the same on omnigym's curated suite,
read from the registry when the run starts (:func:`omnigym.envs.mcu.suite.curated`: every
``MCU/<task>-simple-v0``, ``MCU/<task>-hard-v0`` and curated composition, so ids added later are
played without editing the scenario), and adds what the composition claim needs:

- each part of a curated composition that is not itself a curated simple id, as
  ``MCU/Atomic-v0`` with ``task=<part>`` (label ``MCU/<part>-simple (part)``);
- for each ``then`` composition, the same tasks joined by ``and`` (``MCU/Compose-v0``, label
  ``MCU/<a>_and_<b> (and of then)``).

Stages: ``train`` (in the pool, one job per trained agent and seed, or per agent, seed and
training task), then ``play`` (every agent on every env, ``seeds`` × ``episodes``). An agent
class with ``multitask = True`` (the BC agent) trains once per seed on the whole suite (its
``envs`` kwarg set to every simple-level env played: atomic tasks, compositions, parts and
``and`` twins); any other trained agent (PPO) trains per task on
the simple level (an atomic task on ``MCU/Atomic-v0``, a composition on itself) and plays the
hard level with the simple level's checkpoint. ``options.train_budgets`` overrides agents'
budgets by label; ``options.only`` restricts the suite to the listed ids (the quick profile).
The scorecard gets an ``mcu`` block: each env's labels and role, and the tables of
:mod:`omnigym.evaluators.mcu_tables` over the curated ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnigym.agent import load_agent_factory, make_agent
from omnigym.envs.mcu.suite import curated, labels
from omnigym.registry import make
from omnigym.scenario import AgentEntry, EnvEntry

from .experiment import Experiment, Run, RunFolder, timed
from .mcu_tables import REPORTED, format_tables, tables

SUITE, PART, TWIN = "suite", "part", "twin"
FAMILY_ID = "MCU/Atomic-v0"
ALL_TASKS = "suite"
"""The training key of a multitask agent."""


@dataclass(frozen=True)
class TrainJob:
    """One training: ``agent`` on ``env`` (with ``kwargs`` added) for ``seed``, saved to
    ``checkpoint``."""

    env: EnvEntry
    agent: AgentEntry
    kwargs: dict
    budget: int
    seed: int
    checkpoint: str


def train_job(job: TrainJob) -> tuple[TrainJob, dict[str, float], list | None]:
    """A pool job: build, ``reset(seed)``, ``learn(env, budget)``, save."""
    env = make(job.env.id, **job.env.kwargs)
    try:
        kwargs = {**job.agent.kwargs, **job.kwargs}
        agent = make_agent(job.agent.name, env=env, env_id=job.env.id, **kwargs)
        agent.reset(job.seed)
        with timed() as timing:
            agent.learn(env, job.budget)
        RunFolder.save(agent.save, Path(job.checkpoint))
    finally:
        env.close()
    curve = getattr(agent, "learning_curve", None)
    return job, timing, list(curve) if curve else None


def _atomic(task: str) -> EnvEntry:
    return EnvEntry(id=FAMILY_ID, kwargs={"task": task}, label=f"MCU/{task}-simple (part)")


class MCUExperiment(Experiment):
    """The curated suite played by every agent of the scenario (module docstring)."""

    defaults = {"only": None, "train_budgets": {}}
    stages = ("train", "play")

    def check(self) -> None:
        known = {entry.env_id for entry in curated()}
        unknown = sorted(set(self.options["only"] or ()) - known)
        if unknown:
            raise ValueError(f"options.only names ids that are not curated MCU ids: {unknown}")

    # ---- the envs -----------------------------------------------------------------------------

    def suite(self) -> list[tuple[EnvEntry, dict[str, Any]]]:
        """``(env entry, meta)`` of every env played: the curated ids, then the parts and
        ``and`` twins the composition claim needs. ``meta``: labels, ``tasks``, ``ops``,
        ``role`` and ``train`` (the training key of a per-task agent)."""
        only = self.options["only"]
        entries = [e for e in curated() if only is None or e.env_id in only]
        simple = {e.tasks[0] for e in entries if not e.composite and e.difficulty == "simple"}
        out: list[tuple[EnvEntry, dict[str, Any]]] = []
        extra: dict[str, tuple[EnvEntry, dict[str, Any]]] = {}
        for entry in entries:
            meta = {
                **labels(entry.tasks, entry.difficulty),
                "tasks": list(entry.tasks),
                "ops": list(entry.ops),
                "role": SUITE,
                "train": entry.env_id if entry.composite else entry.tasks[0],
            }
            out.append((EnvEntry(id=entry.env_id), meta))
            if not entry.composite:
                continue
            for part in entry.tasks:
                if part not in simple:
                    meta = {**labels([part], "simple"), "tasks": [part], "ops": []}
                    extra[part] = (_atomic(part), meta | {"role": PART, "train": part})
            if "then" in entry.ops:
                ops = ["and"] * len(entry.ops)
                name = "_and_".join(entry.tasks)
                env = EnvEntry(
                    id="MCU/Compose-v0",
                    kwargs={"tasks": list(entry.tasks), "ops": ops},
                    label=f"MCU/{name} (and of then)",
                )
                meta = {**labels(entry.tasks, "simple"), "tasks": list(entry.tasks), "ops": ops}
                extra[env.display] = (env, meta | {"role": TWIN, "train": env.display})
        return out + list(extra.values())

    def episode_keys(self) -> list[tuple[str, str, int, int]]:
        return [
            (env.display, agent.display, seed, episode)
            for env, _ in self.suite()
            for agent in self.scenario.agents
            for seed in self.scenario.seeds
            for episode in range(self.scenario.episodes)
        ]

    # ---- training -----------------------------------------------------------------------------

    def _multitask(self, agent: AgentEntry) -> bool:
        return bool(getattr(load_agent_factory(agent.name, FAMILY_ID), "multitask", False))

    def _budget(self, agent: AgentEntry) -> int:
        return int(self.options["train_budgets"].get(agent.display, agent.train.budget))

    def _checkpoint(self, agent: AgentEntry, key: str, seed: int) -> Path:
        return self.run.checkpoint(
            ALL_TASKS if self._multitask(agent) else key, agent.display, seed
        )

    def train(self) -> None:
        """Every missing checkpoint, in the pool."""
        suite = self.suite()
        demos = [[env.id, env.kwargs] for env, meta in suite if meta["difficulty"] == "simple"]
        jobs = []
        for agent in self.scenario.agents:
            if agent.train is None:
                continue
            if self._multitask(agent):
                targets = {ALL_TASKS: (suite[0][0], {"envs": demos})}
            else:
                targets = {}
                for env, meta in suite:
                    composite = len(meta["tasks"]) > 1
                    train_env = env if composite else _atomic(meta["tasks"][0])
                    targets.setdefault(meta["train"], (train_env, {}))
            for key, (env, kwargs) in targets.items():
                for seed in self.scenario.seeds:
                    path = self._checkpoint(agent, key, seed)
                    if not path.exists():
                        budget = self._budget(agent)
                        jobs.append(TrainJob(env, agent, kwargs, budget, seed, str(path)))
        for job, timing, curve in self.pool.map(train_job, jobs, ordered=False):
            key = Path(job.checkpoint).parent.parent.name
            self.run.diagnose("train", env_id=key, agent=job.agent.display, seed=job.seed, **timing)
            if curve:
                self.run.append_learning_curve(key, job.agent.display, job.seed, curve)

    # ---- playing ------------------------------------------------------------------------------

    def play(self) -> None:
        seeds, episodes = self.scenario.seeds, self.scenario.episodes
        for env, meta in self.suite():
            for agent in self.scenario.agents:
                if agent.train is None:
                    self.evaluate(env, agent.name, agent.display, seeds, agent_kwargs=agent.kwargs)
                    continue
                for seed in seeds:
                    if self.done(env.display, agent.display, [seed], episodes):
                        continue
                    path = self._checkpoint(agent, meta["train"], seed)
                    kwargs = {**agent.kwargs, "checkpoint": str(path)}
                    self.evaluate(env, agent.name, agent.display, [seed], agent_kwargs=kwargs)

    # ---- outputs ------------------------------------------------------------------------------

    def blocks(self, run: Run) -> dict[str, Any]:
        envs = {env.display: meta for env, meta in self.suite()}
        known = {label: meta for label, meta in envs.items() if meta["role"] == SUITE}
        return {"mcu": {"envs": envs, "tables": tables(run.records, known), "reported": REPORTED}}

    def summary(self, run: Run) -> str:
        built = run.scorecard["mcu"]["tables"]
        reference = ["| agent (MCU, reported) | " + " | ".join(REPORTED["columns"]) + " |"]
        reference.append("|---" * (1 + len(REPORTED["columns"])) + "|")
        for agent, row in REPORTED["simple / hard"].items():
            reference.append(f"| {agent} | " + " | ".join(f"{s} / {h}" for s, h in row) + " |")
        return (
            "## MCU: six dimensions (mean × 10) on the curated suite\n\n"
            + format_tables(built)
            + "\n### MCU's reported table (MCU-turbo, AutoEval, simple / hard)\n\n"
            + "\n".join(reference)
            + "\n"
        )
