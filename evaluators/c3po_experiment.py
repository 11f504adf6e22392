"""The C-3PO experiment: teacher paths, fine-tuning, RL, then evaluation with every retriever
and reader, through the experiment kit (Chen et al., "C-3PO: Compact Plug-and-Play Proxy
Optimization to Achieve Human-like Retrieval-Augmented Generation", ICML 2025;
``docs/c3po.md``).

``experiment: omnigym.evaluators.c3po_experiment:C3POExperiment`` in a scenario
(``scenarios/claims/c3po.yaml``) whose envs are ``Methods/ProxyRAG-v0`` entries, one per
retriever, reader or wording, each with a label. The proxies are trained once per run seed on
the training questions of one of them (``options.train_env``, default the first) and played
on all of them without retraining: that is the plug-and-play test. Stages, each resuming from
what the run folder holds:

1. ``teacher``: the shortest successful path of each of the first ``sft_questions`` training
   questions (:func:`omnigym.agents.methods.c3po.training.teacher_decisions`), in chunks in the
   pool, under ``teacher/``; the same for every seed;
2. ``sft``: per seed, the proxy fine-tuned on those paths (checkpoint label ``sft``);
3. ``rl``: per seed and proxy agent that has a rollout (``c3po``: tree, ``c3po-outcome-rl``:
   single trajectories), RL from that seed's fine-tuned proxy for the agent's ``train.budget``
   environment calls. Agents that differ only by a forced ``strategy`` share one training;
4. ``play``: every agent on every env it runs on, ``episodes`` per seed (or
   ``options.episodes[label]``: the SmolLM2 reader runs on a fixed subset, the first episodes
   of each seed, the same questions as the other envs' first episodes).

Proxy agents (``c3po``, ``c3po-sft-only``, ``c3po-outcome-rl``) must share their fine-tuning
settings, so that SFT-only, tree RL and outcome RL start from the same network. Options:
``train_env`` (an env label), ``episodes`` (``{env label: episodes per seed}``) and
``sft_questions`` (teacher questions for every proxy, replacing the agents' setting). Diagnostics:
one line per teacher chunk, fine-tuning, RL run (its reward curve) and evaluation (``play``),
with wall and CPU seconds. Scorecard block ``c3po``: accuracy per env and agent overall, on
one-hop, two-hop and known questions, and the routing shares (:func:`accuracy_table`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from omnigym.agent import load_agent_factory
from omnigym.agents.methods.c3po.agents import C3POAgent
from omnigym.agents.methods.c3po.search import Decision
from omnigym.agents.methods.c3po.training import C3POConfig, sft, teacher_decisions
from omnigym.registry import make
from omnigym.scenario import AgentEntry

from .experiment import Experiment, Run, RunFolder, timed
from .rollout import Record
from .stats import summarize

ENV_ID = "Methods/ProxyRAG-v0"
TEACHER_DIR = "teacher"
CHUNK = 100
SFT_LABEL = "sft"
SFT_FIELDS = ("width", "layers", "heads", "sft_questions", "sft_epochs", "sft_batch", "sft_lr")
STRATEGY_NAMES = ("no retrieval", "retrieval", "planning")


def proxy_rollout(agent: AgentEntry) -> str | None | bool:
    """The rollout kind of a proxy agent (``"tree"``, ``"outcome"`` or None for SFT only);
    False for an agent that is not a proxy."""
    factory = load_agent_factory(agent.name, ENV_ID)
    return (
        factory.rollout if isinstance(factory, type) and issubclass(factory, C3POAgent) else False
    )


def settings_of(agent: AgentEntry) -> dict[str, Any]:
    """A proxy agent's :class:`C3POConfig` settings (its kwargs without ``strategy``)."""
    return {key: value for key, value in agent.kwargs.items() if key != "strategy"}


# ---- pool jobs ---------------------------------------------------------------------------------


def teacher_chunk(job: tuple[dict, list[int], str]) -> dict[str, Any]:
    """Teacher decisions of some training questions, written to ``path`` (gzipped JSON)."""
    env_kwargs, questions, path = job
    env = make(ENV_ID, **env_kwargs)
    with timed() as timing:
        decisions = teacher_decisions(env.unwrapped, questions)
    env.close()
    RunFolder.save(lambda folder: _write_decisions(folder, decisions), Path(path))
    return {"questions": len(questions), "decisions": len(decisions), **timing}


def _write_decisions(folder: Path, decisions: Sequence[Decision]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "decisions.json.gz", "wt", encoding="utf-8") as file:
        json.dump([asdict(d) for d in decisions], file)


def _read_decisions(folders: Sequence[Any]) -> list[Decision]:
    decisions = []
    for folder in folders:
        with gzip.open(folder / "decisions.json.gz", "rt", encoding="utf-8") as file:
            decisions += [Decision(**item) for item in json.load(file)]
    return decisions


def sft_job(job: tuple[dict, list[str], int, str]) -> dict[str, Any]:
    """Fine-tune a proxy for one seed on the teacher chunks; save it at ``checkpoint``."""
    settings, chunks, seed, checkpoint = job
    torch.manual_seed(seed)
    agent = C3POAgent(**settings)
    decisions = _read_decisions([Path(c) for c in chunks])
    with timed() as timing:
        agent.record["sft_decisions"] = len(decisions)
        agent.record["sft_loss"] = sft(agent.network, decisions, agent.config, seed)
    RunFolder.save(agent.save, Path(checkpoint))
    return {"seed": seed, "decisions": len(decisions), "loss": agent.record["sft_loss"], **timing}


def rl_job(job: tuple[str, dict, dict, str, int, int, str, str]) -> dict[str, Any]:
    """RL from a fine-tuned proxy (``start``) with the agent's ``settings`` and ``rollout`` for
    ``budget`` environment calls; save it at ``checkpoint``."""
    label, settings, env_kwargs, rollout, budget, seed, start, checkpoint = job
    agent = C3POAgent(checkpoint=start)
    agent.config = C3POConfig.from_settings({**agent.config.as_dict(), **settings})
    agent.rollout, agent.seed = rollout, seed
    env = make(ENV_ID, **env_kwargs)
    with timed() as timing:
        agent.reinforce(env, budget)
    env.close()
    RunFolder.save(agent.save, Path(checkpoint))
    return {"agent": label, "seed": seed, **agent.record["rl"], **timing}


# ---- the experiment --------------------------------------------------------------------------


class C3POExperiment(Experiment):
    """C-3PO's training and plug-and-play evaluation (module docstring)."""

    defaults: ClassVar[Mapping[str, Any]] = {
        "train_env": None,
        "episodes": {},
        "sft_questions": None,
    }
    stages = ("teacher", "sft", "rl", "play")

    def check(self) -> None:
        scenario = self.scenario
        labels = [env.display for env in scenario.envs]
        if any(env.id != ENV_ID for env in scenario.envs):
            raise ValueError(f"the C-3PO experiment plays {ENV_ID} entries only")
        wanted = self.options["train_env"] or labels[0]
        if wanted not in labels:
            raise ValueError(f"options.train_env {wanted!r} is not an env label of the scenario")
        self.train_env = scenario.envs[labels.index(wanted)]
        unknown = sorted(set(self.options["episodes"]) - set(labels))
        if unknown:
            raise ValueError(f"options.episodes names unknown env labels {unknown}")
        self.proxies = [a for a in scenario.agents if proxy_rollout(a) is not False]
        recipes = {
            json.dumps({k: v for k, v in C3POConfig.from_settings(settings_of(a)).as_dict().items()
                        if k in SFT_FIELDS}, sort_keys=True)
            for a in self.proxies
        }  # fmt: skip
        if len(recipes) > 1:
            raise ValueError("the proxy agents must share their fine-tuning settings")
        self.sft_settings = json.loads(recipes.pop()) if recipes else {}
        if self.options["sft_questions"] is not None:
            self.sft_settings["sft_questions"] = int(self.options["sft_questions"])
        for agent in self.proxies:
            if proxy_rollout(agent) and agent.train is None:
                raise ValueError(f"proxy {agent.display!r} needs train: {{budget: N}} (RL calls)")

    def trained_label(self, agent: AgentEntry) -> str:
        """The label whose checkpoint ``agent`` plays: ``sft`` for SFT-only proxies, else the
        first proxy with the same name, settings and budget (forced strategies share it)."""
        if proxy_rollout(agent) is None:
            return SFT_LABEL
        for other in self.proxies:
            same = (other.name, settings_of(other), other.train) == (
                agent.name, settings_of(agent), agent.train
            )  # fmt: skip
            if same:
                return other.display
        raise AssertionError(agent.display)

    def checkpoint(self, label: str, seed: int) -> Any:
        return self.run.checkpoint(self.train_env.display, label, seed)

    def episodes(self, env_label: str) -> int:
        return int(self.options["episodes"].get(env_label, self.scenario.episodes))

    def episode_keys(self) -> list[tuple[str, str, int, int]]:
        return [
            (env.display, agent.display, seed, episode)
            for env in self.scenario.envs
            for agent in self.scenario.agents
            if agent.runs_on(env)
            for seed in self.scenario.seeds
            for episode in range(self.episodes(env.display))
        ]

    # ---- stages ----------------------------------------------------------------------------

    def _chunks(self) -> list[Any]:
        count = int(self.sft_settings.get("sft_questions", 0))
        return [
            (
                list(range(start, min(start + CHUNK, count))),
                self.run.path(TEACHER_DIR, f"{start:05d}"),
            )
            for start in range(0, count, CHUNK)
        ]

    def teacher(self) -> None:
        """Teacher paths of the fine-tuning questions, chunk by chunk."""
        if not self.proxies:
            return
        kwargs = dict(self.train_env.kwargs)
        jobs = [(kwargs, qs, str(path)) for qs, path in self._chunks() if not path.exists()]
        for result in self.pool.map(teacher_chunk, jobs, ordered=False):
            self.run.diagnose("teacher", **result)

    def sft(self) -> None:
        """One fine-tuned proxy per seed."""
        if not self.proxies:
            return
        chunks = [str(path) for _, path in self._chunks()]
        jobs = [
            (self.sft_settings, chunks, seed, str(self.checkpoint(SFT_LABEL, seed)))
            for seed in self.scenario.seeds
            if not self.checkpoint(SFT_LABEL, seed).exists()
        ]
        for result in self.pool.map(sft_job, jobs, ordered=False):
            self.run.diagnose("sft", **result)

    def rl(self) -> None:
        """RL for every proxy with a rollout, per seed, from that seed's fine-tuned proxy."""
        jobs = []
        for agent in self.proxies:
            rollout = proxy_rollout(agent)
            if not rollout or self.trained_label(agent) != agent.display:
                continue
            for seed in self.scenario.seeds:
                target = self.checkpoint(agent.display, seed)
                if not target.exists():
                    start = str(self.checkpoint(SFT_LABEL, seed))
                    jobs.append(
                        (agent.display, settings_of(agent), dict(self.train_env.kwargs), rollout,
                         agent.train.budget, seed, start, str(target))
                    )  # fmt: skip
        for result in self.pool.map(rl_job, jobs, ordered=False):
            self.run.diagnose("rl", **result)
            self.run.append_learning_curve(
                self.train_env.display, result["agent"], result["seed"], result["curve"]
            )

    def play(self) -> None:
        """Every agent on every env it runs on (module docstring, stage 4)."""
        for env in self.scenario.envs:
            episodes = self.episodes(env.display)
            for agent in self.scenario.agents:
                if not agent.runs_on(env):
                    continue
                if proxy_rollout(agent) is False:
                    self._play(env, agent, agent.kwargs, self.scenario.seeds, episodes)
                    continue
                label = self.trained_label(agent)
                strategy = (
                    {"strategy": agent.kwargs["strategy"]} if "strategy" in agent.kwargs else {}
                )
                for seed in self.scenario.seeds:
                    kwargs = {"checkpoint": str(self.checkpoint(label, seed)), **strategy}
                    self._play(env, agent, kwargs, [seed], episodes)

    def _play(self, env, agent, kwargs, seeds, episodes) -> None:
        if self.done(env.display, agent.display, seeds, episodes):
            return
        with timed() as timing:
            self.evaluate(
                env, agent.name, agent.display, seeds, agent_kwargs=kwargs, episodes=episodes
            )
        self.run.diagnose(
            "play", env_id=env.display, agent=agent.display, seeds=list(seeds),
            episodes=episodes, **timing,
        )  # fmt: skip

    # ---- outputs -----------------------------------------------------------------------------

    def blocks(self, run: Run) -> dict[str, Any]:
        return {"c3po": accuracy_table(run.records)}

    def summary(self, run: Run) -> str:
        return format_tables(accuracy_table(run.records), run.diagnostics)


# ---- tables --------------------------------------------------------------------------------


def _by(records: Sequence[Record]) -> dict[tuple[str, str], list[Record]]:
    table: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        table.setdefault((record["env_id"], record["agent"]), []).append(record)
    return table


def accuracy_table(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per (env, agent): episodes, accuracy (mean and 95 % CI, seeds as strata) overall, on
    one-hop, two-hop and known questions, the share routed to each strategy, and the mean
    passages handed to the reader."""
    rows = []
    for (env, agent), group in _by(records).items():
        metric = {k: np.array([r["metrics"][k] for r in group]) for k in group[0]["metrics"]}
        seeds = np.array([r["seed"] for r in group])
        row: dict[str, Any] = {"env": env, "agent": agent, "episodes": len(group)}
        subsets = {
            "all": np.ones(len(group), dtype=bool),
            "one_hop": metric["hops"] == 1,
            "two_hop": metric["hops"] == 2,
            "known": metric["known"] == 1,
        }
        for name, rows_in in subsets.items():
            row[name] = (
                summarize(metric["accuracy"][rows_in], seeds[rows_in], n_resamples=500)
                if rows_in.any() else None
            )  # fmt: skip
        for index, strategy in enumerate(STRATEGY_NAMES):
            row[strategy] = float(np.mean(metric["strategy"] == index))
        row["docs_to_reader"] = float(metric["docs_to_reader"].mean())
        rows.append(row)
    return rows


def _cell(summary: Mapping[str, Any] | None) -> str:
    if summary is None:
        return "–"
    low, high = summary["ci95"]
    return f"{100 * summary['mean']:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def format_tables(rows: Sequence[Mapping[str, Any]], diagnostics: Sequence[Mapping]) -> str:
    """Markdown: accuracy (%) per env and agent, routing shares, time per stage."""
    lines = [
        "## Accuracy (%, 95% CI) and routing",
        "",
        "| env | agent | n | all | 1-hop | 2-hop | known | no retr. | retr. | plan | docs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        shares = " | ".join(f"{100 * row[s]:.0f}%" for s in STRATEGY_NAMES)
        lines.append(
            f"| {row['env']} | {row['agent']} | {row['episodes']} | {_cell(row['all'])} | "
            f"{_cell(row['one_hop'])} | {_cell(row['two_hop'])} | {_cell(row['known'])} | "
            f"{shares} | {row['docs_to_reader']:.1f} |"
        )
    seconds: dict[str, float] = {}
    for line in diagnostics:
        seconds[line["stage"]] = seconds.get(line["stage"], 0.0) + float(line.get("seconds", 0))
    lines += ["", "Work time per stage (summed over jobs): "]
    lines[-1] += ", ".join(f"{stage} {value / 60:.1f} min" for stage, value in seconds.items())
    return "\n".join(lines) + "\n"
