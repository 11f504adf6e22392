"""LMRL-Gym's Table 2 with tiny language models: the language-model agents' experiment.

``experiment: omnigym.llm_agents.lmrl_experiment:LMRLAgentsExperiment`` in a scenario (as in
``scenarios/claims/lmrl_agents.yaml``). It compares the language-model agents of
:mod:`omnigym.llm_agents` on the LMRL text tasks as LMRL-Gym's Table 2 does (Abdulhai et al.,
"LMRL-Gym: Benchmarks for Multi-Turn Reinforcement Learning with Language Models", ICML 2025;
``docs/lmrl.md``). The kit's default experiment would train every agent from scratch; MC
returns, ILQL-lite and PPO all start from a BC policy, so here BC is trained once per task and
run seed and its checkpoint handed on (``options.start_from``).

One stage, ``train_and_play``: one job per (env, run seed) that still has episodes to play, in
the experiment's worker pool (one torch thread each), results taken as each job ends. A job

1. trains what it needs: every agent with ``train:`` that it plays (``learn(env, budget)``: BC
   and %BC updates on the task's dataset, the critic updates of MC and ILQL-lite, PPO's
   environment turns), an agent named in ``start_from`` after the agent it starts from, with
   that agent's checkpoint as its ``policy``. Checkpoints go to
   :meth:`~omnigym.evaluators.experiment.RunFolder.checkpoint` (written whole, then renamed) and
   are loaded on a re-run instead of training again;
2. plays every agent of the job, trained or not (``random``, ``oracle``), for ``episodes``
   episodes of the run seed (:func:`omnigym.evaluators.rollout.evaluate`).

A job's episodes are stored when it ends; a re-run plays only the (env, agent, seed)
evaluations that are missing. Diagnostics: a ``train`` line per training (budget, wall and CPU
seconds, first and last loss, episodes trained), an ``imitation`` line per trained BC or %BC
(:func:`omnigym.llm_agents.imitation.imitation_report` on ``imitation_turns`` turns of
``HELD_OUT_EPISODES`` fresh dataset episodes, seed ``HELD_OUT_SEED``: held-out loss, token and
action accuracy beside the majority-class rates) and an ``evaluate`` line per evaluation (wall
and CPU seconds); PPO's training curves go to ``learning_curves.jsonl``. The summary
(``scorecard.md``): each task's normalized score per trained agent, ours beside the paper's,
then the agents without training (random play, the oracle), BC's imitation, then the timings
per agent.

Options:

- ``start_from``: ``{label: label}``, each a trained agent of the scenario;
- ``agent_kwargs``: ``{label: {kwarg: value}}``, laid over the agents' own kwargs (the quick
  profile shrinks the datasets this way);
- ``task_agent_kwargs``: ``{env label: {agent label: {kwarg: value}}}``, laid over those on
  that task only (a prompt as long as the task's state needs);
- ``imitation_turns``: held-out dataset turns BC's imitation is measured on (0: not measured);
- ``paper_scores``: ``"module:NAME"`` of the paper's normalized scores, ``{env id: {agent
  label: score}}``, shown beside ours. The paper's numbers live with its claims checker
  (``omnigym.scenarios.claims.lmrl_agents:PAPER_TABLE_2``, LMRL-Gym's Table 2), a layer above
  this one, so the scenario names them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from omnigym.agent import make_agent
from omnigym.evaluators.experiment import Experiment, Run, RunFolder, timed
from omnigym.evaluators.rollout import Record, evaluate
from omnigym.llm_agents.bc import BCAgent
from omnigym.llm_agents.data import dataset_examples, load_records
from omnigym.llm_agents.imitation import imitation_report
from omnigym.registry import load_entry_point, make
from omnigym.scenario import AgentEntry, EnvEntry

HELD_OUT_EPISODES = 100
HELD_OUT_SEED = 1
"""Dataset seed of the held-out episodes (the agents train on seed 0's)."""
IMITATION_KEYS = (
    "held_out_loss",
    "token_accuracy",
    "majority_token_rate",
    "action_accuracy",
    "majority_action_rate",
)


@dataclass(frozen=True)
class Job:
    """One env and run seed: the agents to play, every agent of the scenario (to train the ones
    they start from), who starts from whom, the episode count and the run folder."""

    env: EnvEntry
    seed: int
    play: tuple[AgentEntry, ...]
    agents: tuple[AgentEntry, ...]
    start_from: tuple[tuple[str, str], ...]
    episodes: int
    imitation_turns: int
    run: RunFolder


@dataclass
class JobResult:
    """What a job hands back: its episode records, training curves and diagnostics lines."""

    records: list[Record]
    curves: list[tuple[str, str, int, list[tuple[float, float]]]]
    diagnostics: list[tuple[str, dict[str, Any]]]


class LMRLAgentsExperiment(Experiment):
    """BC once per task and seed, handed on to the agents that start from it (module
    docstring)."""

    defaults: ClassVar[Mapping[str, Any]] = {
        "start_from": {},
        "agent_kwargs": {},
        "task_agent_kwargs": {},
        "imitation_turns": 200,
        "paper_scores": None,
    }
    stages = ("train_and_play",)

    def check(self) -> None:
        labels = {agent.display for agent in self.scenario.agents}
        unknown = sorted(set(self.options["agent_kwargs"]) - labels)
        if unknown:
            raise ValueError(f"options.agent_kwargs names {unknown}, not agents of the scenario")
        envs = {env.display for env in self.scenario.envs}
        for env, by_agent in self.options["task_agent_kwargs"].items():
            if env not in envs:
                raise ValueError(f"options.task_agent_kwargs names {env!r}, not a scenario env")
            unknown = sorted(set(by_agent) - labels)
            if unknown:
                raise ValueError(
                    f"options.task_agent_kwargs[{env!r}] names {unknown}, not agents of the "
                    "scenario"
                )
        trained = {agent.display for agent in self.scenario.agents if agent.train is not None}
        start_from = self.options["start_from"]
        for child, parent in start_from.items():
            for label in (child, parent):
                if label not in trained:
                    raise ValueError(
                        f"options.start_from names {label!r}, which is not a trained agent of "
                        f"the scenario (trained: {sorted(trained)})"
                    )
        for child in start_from:
            seen = [child]
            while seen[-1] in start_from:
                seen.append(start_from[seen[-1]])
                if seen[-1] in seen[:-1]:
                    raise ValueError(f"options.start_from goes round in a circle: {seen}")
        self.paper: Mapping[str, Mapping[str, float]] = {}
        if self.options["paper_scores"]:
            try:
                self.paper = load_entry_point(self.options["paper_scores"])
            except ImportError as error:
                raise ValueError(f"options.paper_scores: {error}") from None
        turns = self.options["imitation_turns"]
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
            raise ValueError(f"options.imitation_turns must be an int >= 0, got {turns!r}")
        self.agents = self.agents_on(None)

    def agents_on(self, env: str | None) -> tuple[AgentEntry, ...]:
        """The scenario's agents with ``agent_kwargs`` and, on ``env``, ``task_agent_kwargs``
        laid over their kwargs."""
        overrides = self.options["agent_kwargs"]
        on_task = self.options["task_agent_kwargs"].get(env, {})
        return tuple(
            agent.model_copy(
                update={
                    "kwargs": {
                        **agent.kwargs,
                        **overrides.get(agent.display, {}),
                        **on_task.get(agent.display, {}),
                    }
                }
            )
            for agent in self.scenario.agents
        )

    def _jobs(self) -> list[Job]:
        """One job per (env, seed) with an agent whose episodes are not all stored."""
        scenario = self.scenario
        start_from = tuple(sorted(self.options["start_from"].items()))
        jobs = []
        for env in scenario.envs:
            agents = self.agents_on(env.display)
            playing = [agent for agent in agents if agent.runs_on(env)]
            for seed in scenario.seeds:
                todo = tuple(
                    agent
                    for agent in playing
                    if not self.done(env.display, agent.display, [seed], scenario.episodes)
                )
                if todo:
                    turns = self.options["imitation_turns"]
                    jobs.append(
                        Job(
                            env,
                            seed,
                            todo,
                            agents,
                            start_from,
                            scenario.episodes,
                            turns,
                            self.run,
                        )
                    )
        return jobs

    def train_and_play(self) -> None:
        """Run the jobs still to do in the pool; store what each hands back as it ends."""
        for result in self.pool.map(run_job, self._jobs(), ordered=False):
            for record in result.records:
                self.record(record)
            for env_id, agent, seed, curve in result.curves:
                self.run.append_learning_curve(env_id, agent, seed, curve)
            for stage, fields in result.diagnostics:
                self.run.diagnose(stage, **fields)

    # ---- outputs ------------------------------------------------------------------------------

    def summary(self, run: Run) -> str:
        trained = [agent.display for agent in self.agents if agent.train is not None]
        untrained = [agent.display for agent in self.agents if agent.train is None]
        comparison = format_comparison(run.scorecard, trained, untrained, self.paper)
        imitation = format_imitation(run.diagnostics)
        return comparison + "\n" + imitation + format_timings(run.diagnostics)


def run_job(job: Job) -> JobResult:
    """Train what ``job`` needs (or load it) and play its agents."""
    result = JobResult(records=[], curves=[], diagnostics=[])
    trained: dict[str, Any] = {}
    by_label = {agent.display: agent for agent in job.agents}
    parents = dict(job.start_from)

    def obtain(agent: AgentEntry) -> Any:
        label = agent.display
        if label in trained:
            return trained[label]
        checkpoint = job.run.checkpoint(job.env.display, label, job.seed)
        kwargs = dict(agent.kwargs)
        if label in parents and not checkpoint.exists():
            obtain(by_label[parents[label]])
            kwargs["policy"] = str(job.run.checkpoint(job.env.display, parents[label], job.seed))
        env = make(job.env.id, **job.env.kwargs)
        try:
            built = make_agent(agent.name, env=env, env_id=job.env.id, **kwargs)
            if checkpoint.exists():
                built.load(checkpoint)
                trained[label] = built
                return built
            built.reset(job.seed)
            with timed() as timing:
                built.learn(env, agent.train.budget)
        finally:
            env.close()
        where = _where(job, label)
        summary = _training_summary(built)
        result.diagnostics.append(
            ("train", {**where, "budget": agent.train.budget, **timing, **summary})
        )
        if isinstance(built, BCAgent) and job.imitation_turns:
            result.diagnostics.append(("imitation", {**where, **held_out_imitation(job, built)}))
        curve = getattr(built, "learning_curve", None)
        if curve:
            result.curves.append((job.env.display, label, job.seed, list(curve)))
        RunFolder.save(built.save, checkpoint)
        trained[label] = built
        return built

    for agent in job.play:
        player = obtain(agent) if agent.train is not None else agent.name
        with timed() as timing:
            result.records += evaluate(
                job.env.id,
                player,
                episodes=job.episodes,
                seeds=[job.seed],
                env_kwargs=job.env.kwargs,
                agent_kwargs=agent.kwargs if isinstance(player, str) else None,
                label=agent.display,
                env_label=job.env.display,
            )
        where = _where(job, agent.display)
        result.diagnostics.append(("evaluate", {**where, "episodes": job.episodes, **timing}))
    return result


def held_out_imitation(job: Job, agent: BCAgent) -> dict[str, Any]:
    """:func:`~omnigym.llm_agents.imitation.imitation_report` of a trained BC on
    ``job.imitation_turns`` turns (drawn with the job's seed) of ``HELD_OUT_EPISODES`` episodes
    of the task's dataset made with seed ``HELD_OUT_SEED``, replayed through the job's env
    kwargs (so Wordle's turns list its guesses as in play)."""
    _, records = load_records(job.env.id, HELD_OUT_EPISODES, HELD_OUT_SEED)
    examples = dataset_examples(records, job.env.id, env_kwargs=job.env.kwargs)
    count = min(job.imitation_turns, len(examples))
    picked = np.random.default_rng(job.seed).choice(len(examples), size=count, replace=False)
    return imitation_report(agent.policy, [examples[i] for i in sorted(picked)])


def _where(job: Job, label: str) -> dict[str, Any]:
    return {"env_id": job.env.display, "agent": label, "seed": job.seed}


def _training_summary(agent: Any) -> dict[str, Any]:
    """What an agent reports of its training: first and last losses, samples, episodes."""
    summary: dict[str, Any] = {}
    losses = getattr(agent, "losses", None)
    if losses:
        summary["loss_first"], summary["loss_last"] = float(losses[0]), float(losses[-1])
    for name in ("samples", "episodes_trained"):
        if getattr(agent, name, None) is not None:
            summary[name] = int(getattr(agent, name))
    return summary


def normalized_scores(scorecard: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(env, agent) -> normalized ``{"mean", "ci95"}`` of every result that has one."""
    return {
        (r["env_id"], r["agent"]): {
            "mean": float(r["normalized_score"]["mean"]),
            "ci95": [float(v) for v in r["normalized_score"]["ci95"]],
        }
        for r in scorecard["results"]
        if "normalized_score" in r
    }


def format_comparison(
    scorecard: Mapping[str, Any],
    trained: Sequence[str],
    untrained: Sequence[str],
    paper: Mapping[str, Mapping[str, float]],
) -> str:
    """Markdown: each task's normalized score per trained agent, ours (mean [95% CI]) beside
    ``paper``'s, then the ``untrained`` agents (random play, the oracle)."""
    scores = normalized_scores(scorecard)

    def ours(env: str, agent: str) -> str:
        return "—" if (env, agent) not in scores else _interval(scores[env, agent])

    def reported(env: str, agent: str) -> list[str]:
        if not paper:
            return []
        score = paper.get(env, {}).get(agent)
        return ["—" if score is None else f"{score:.1f}"]

    sides = ("ours", "paper") if paper else ("ours",)
    headers = [f"{agent} ({side})" for agent in trained for side in sides]
    lines = [
        "## Normalized scores" + (" beside the paper's" if paper else ""),
        "",
        "Ours: mean [95% CI] over every episode of every seed"
        + ("; paper: its reported score." if paper else "."),
        "",
        "| task | " + " | ".join(headers) + " |",
        "|---|" + "---:|" * len(headers),
    ]
    for env in scorecard["envs"]:
        cells = [cell for agent in trained for cell in [ours(env, agent), *reported(env, agent)]]
        lines.append(f"| {env} | " + " | ".join(cells) + " |")
    if untrained:
        lines += [
            "",
            "| task | " + " | ".join(untrained) + " |",
            "|---|" + "---:|" * len(untrained),
        ]
        for env in scorecard["envs"]:
            cells = [ours(env, agent) for agent in untrained]
            lines.append(f"| {env} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _interval(summary: Mapping[str, Any]) -> str:
    low, high = summary["ci95"]
    return f"{summary['mean']:.1f} [{low:.1f}, {high:.1f}]"


def format_imitation(diagnostics: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: per task and BC agent, the held-out imitation measures (means over seeds, the
    latest line of each); empty when none was measured."""
    latest = {
        (d["env_id"], d["agent"], d["seed"]): d
        for d in diagnostics
        if d.get("stage") == "imitation"
    }
    if not latest:
        return ""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for (env, agent, _), entry in latest.items():
        groups.setdefault((env, agent), []).append(entry)
    lines = [
        "## Imitation of held-out dataset turns",
        "",
        "Means over seeds; majority: the best constant prediction of the same turns.",
        "",
        "| task | agent | held-out loss | token accuracy (majority) "
        "| action accuracy (majority) | turns |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (env, agent), entries in sorted(groups.items()):
        mean = {key: float(np.mean([e[key] for e in entries])) for key in IMITATION_KEYS}
        lines.append(
            f"| {env} | {agent} | {mean['held_out_loss']:.3f} | "
            f"{mean['token_accuracy']:.3f} ({mean['majority_token_rate']:.3f}) | "
            f"{mean['action_accuracy']:.3f} ({mean['majority_action_rate']:.3f}) | "
            f"{sum(e['turns'] for e in entries)} |"
        )
    return "\n".join(lines) + "\n\n"


def format_timings(diagnostics: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: wall and CPU seconds of training and evaluation per agent, summed over envs
    and seeds (the latest line of each stage, env, agent and seed)."""
    latest = {
        (d["stage"], d["env_id"], d["agent"], d["seed"]): d
        for d in diagnostics
        if d.get("stage") in ("train", "evaluate")
    }
    totals: dict[tuple[str, str], np.ndarray] = {}
    for (stage, _, agent, _), entry in latest.items():
        totals.setdefault((agent, stage), np.zeros(2))
        totals[agent, stage] += [entry["seconds"], entry["cpu_seconds"]]
    lines = [
        "## Timings",
        "",
        "Seconds summed over envs and seeds (one torch thread per job).",
        "",
        "| agent | train wall | train CPU | evaluate wall | evaluate CPU |",
        "|---|---:|---:|---:|---:|",
    ]
    for agent in sorted({agent for agent, _ in totals}):
        train = totals.get((agent, "train"), np.zeros(2))
        play = totals.get((agent, "evaluate"), np.zeros(2))
        lines.append(
            f"| {agent} | {train[0]:.0f} | {train[1]:.0f} | {play[0]:.0f} | {play[1]:.0f} |"
        )
    wall = sum(v[0] for v in totals.values())
    cpu = sum(v[1] for v in totals.values())
    lines += ["", f"All jobs: {wall:.0f} s wall in the workers, {cpu:.0f} s CPU."]
    return "\n".join(lines) + "\n"
