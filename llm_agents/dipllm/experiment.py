"""The DipLLM experiment: the ablation of DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for
Strategic Decision-making in Diplomacy", ICML 2025) at small scale, through the experiment kit
(:mod:`omnigym.evaluators.experiment`; ``docs/diplomacy.md``).

``experiment: omnigym.llm_agents.dipllm.experiment:DipLLMExperiment`` in a scenario
(``scenarios/claims/dipllm.yaml``), on one Diplomacy env. Stages, each resuming from what the
run folder already holds:

1. ``data``: ``options.data.games`` seeded games of the reference bots, capped at the env's
   ``max_year`` (default 1910), in ``<out>/data/games.jsonl.gz``;
2. ``q`` (only when an agent fine-tunes): the agent labelled ``options.q.policy`` (default
   ``AF+BC``) is trained on the first run seed, beside every other behaviour-cloning unit (the
   checkpoints the ``train`` stage would write, so none is trained twice); its top-k orders
   and ``sampled`` draws from it are the Q candidates; unit-level Q by rollouts (continued by
   ``options.q.continuation``: the data game's bots or one bot for every power) for
   ``options.q.groups`` groups in ``<out>/data/q.jsonl``, appended as it goes, so a killed
   estimation resumes; the ``q`` diagnostics line also has the Q's noise
   (:func:`omnigym.llm_agents.dipllm.noise.q_noise`, at the λ of the first fine-tuned agent);
3. ``train``: every DipLLM agent of the scenario (kwargs such as ``head``, ``lam``,
   ``finetune``; ``train.budget`` behaviour-cloning updates), on each run seed, on all the
   games or on ``options.games[label]`` of them. Agents with ``finetune > 0`` (the EW variants)
   are fine-tuned with the Q file, starting from the checkpoint of their behaviour-cloning
   counterpart (same head, data and settings) where the scenario has one, else after their own
   behaviour-cloning stage. Checkpoints go to ``checkpoints/<env>/<label>/seed<k>``
   (:meth:`~omnigym.evaluators.experiment.RunFolder.checkpoint`) and are loaded on a re-run;
4. ``matches``: each agent (trained, or a reference such as ``diplomacy_random``) plays 1v6
   against ``options.opponent`` with seat rotation
   (:func:`omnigym.evaluators.matches.one_vs_rest`), ``episodes`` games per seat and seed; the
   agent labelled ``options.extra_agent`` also plays ``options.extra_opponents``. Games are
   stored per (agent, opponent, seed) as each evaluation ends, under the env label
   ``<env id> vs <opponent>``; a re-run plays only the missing evaluations.

Data games, Q rollouts, training units and match games all run in the experiment's worker pool
(one torch thread per worker). Diagnostics: one ``data``, ``q``, ``train`` (per agent and seed:
what it trained on, losses, seconds) and ``matches`` (per evaluation) line each. Outputs: the
``dipllm`` scorecard block (SoS, win, draw, survival and defeat rates with seat-stratified
bootstrap CIs from :func:`omnigym.evaluators.matches.summarize_matches`, and the diagnostics),
the match and work tables in ``scorecard.md``; the claims are checked by
``omnigym.scenarios.claims.dipllm:check``.

Options (each optional): ``data: {games, seed, mix: {bot: weight}}``, ``games: {label: n}``,
``q: {rollouts, top_k, sampled, horizon_years, groups, seed, continuation, policy}``,
``model: {ModelConfig fields}`` and ``train: {batch_size, lr, joint_candidates, finetune_lr}``
(defaults for every DipLLM agent, which its kwargs override), ``opponent``, ``extra_agent``,
``extra_opponents``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from omnigym.agent import load_agent_factory
from omnigym.evaluators.experiment import Experiment, Run, RunFolder, timed
from omnigym.evaluators.matches import one_vs_rest, summarize_matches
from omnigym.registry import make, spec
from omnigym.scenario import AgentEntry

from .agent import DipLLMAgent
from .config import QConfig
from .data import DataSpec, generate_data, read_phases
from .noise import q_noise
from .q import estimate_q, read_q, rollout_tasks

DATA_DIR = "data"
DATA_FILE = "games.jsonl.gz"
Q_FILE = "q.jsonl"
MAX_YEAR = 1910
RATES = ("win_rate", "draw_rate", "survival_rate", "defeat_rate")


def short_name(opponent: str) -> str:
    """An opponent's name in tables and env labels: ``diplomacy_greedy`` -> ``greedy``."""
    return opponent.removeprefix("diplomacy_").rsplit(":", 1)[-1]


def matches_label(env_id: str, opponent: str) -> str:
    """The env label of the games against ``opponent``: ``Diplomacy/Standard-v0 vs greedy``."""
    return f"{env_id} vs {short_name(opponent)}"


def finetunes(agent: AgentEntry) -> bool:
    """Whether ``agent`` has an equilibrium fine-tuning stage (and so needs the Q file)."""
    return int(agent.kwargs.get("finetune", 0)) > 0


@dataclass(frozen=True)
class TrainUnit:
    """One (agent, seed) training run: the agent's kwargs, its data and Q files, and the
    behaviour-cloning checkpoint it starts from (fine-tuned agents with a counterpart)."""

    label: str
    kwargs: dict[str, Any]
    seed: int
    data: str
    q: str | None
    budget: int
    checkpoint: str
    base: str | None = None
    base_checkpoint: str | None = None


class DipLLMExperiment(Experiment):
    """DipLLM's ablation in 1v6 matches (module docstring)."""

    defaults: ClassVar[Mapping[str, Any]] = {
        "data": {"games": 500, "seed": 0, "mix": {"greedy": 1.0, "defensive": 1.0, "random": 1.0}},
        "games": {},
        "q": {
            "rollouts": 4,
            "top_k": 4,
            "sampled": 0,
            "horizon_years": 2,
            "groups": None,
            "seed": 0,
            "continuation": "data",
            "policy": "AF+BC",
        },
        "model": {},
        "train": {},
        "opponent": "diplomacy_greedy",
        "extra_agent": "AF+EW",
        "extra_opponents": [],
    }
    stages = ("data", "q", "train", "matches")

    def check(self) -> None:
        if len(self.scenario.envs) != 1:
            raise ValueError(
                "the DipLLM experiment plays one env (Diplomacy/Standard-v0 or Pure-v0)"
            )
        self.env = self.scenario.envs[0]
        self.max_year = int(self.env.kwargs.get("max_year", MAX_YEAR))
        self.env_kwargs = {**self.env.kwargs, "max_year": self.max_year}
        play_env = make(self.env.id, **self.env.kwargs)
        try:
            self.seats = len(play_env.possible_agents)
        finally:
            play_env.close()
        self.learners = []
        for agent in self.scenario.agents:
            if load_agent_factory(agent.name, self.env.id) is not DipLLMAgent:
                if agent.kwargs or agent.train:
                    raise ValueError(f"reference agent {agent.display!r} takes no kwargs or train")
                continue
            if agent.train is None:
                raise ValueError(f"DipLLM agent {agent.display!r} needs train: {{budget: N}}")
            self.learners.append(agent)
        if any(finetunes(agent) for agent in self.learners):
            policy = self.q_policy()
            if policy is None or finetunes(policy) or policy.kwargs.get("head") == "joint":
                raise ValueError(
                    "options.q.policy must name a factorised DipLLM agent without fine-tuning; "
                    f"got {self.options['q']['policy']!r}"
                )

    def q_policy(self) -> AgentEntry | None:
        """The agent whose top-k orders are the Q candidates."""
        wanted = self.options["q"]["policy"]
        return next((agent for agent in self.learners if agent.display == wanted), None)

    def plays(self) -> list[tuple[AgentEntry, str]]:
        """The (agent, opponent) evaluations."""
        options = self.options
        plays = [(agent, options["opponent"]) for agent in self.scenario.agents]
        for agent in self.scenario.agents:
            if agent.display == options["extra_agent"]:
                plays += [(agent, opponent) for opponent in options["extra_opponents"]]
        return plays

    def episode_keys(self) -> list[tuple[str, str, int, int]]:
        return [
            (matches_label(self.env.id, opponent), agent.display, seed, game)
            for seed in self.scenario.seeds
            for agent, opponent in self.plays()
            for game in range(self.scenario.episodes * self.seats)
        ]

    def checkpoint(self, label: str, seed: int) -> Path:
        return self.run.checkpoint(self.env.display, label, seed)

    @property
    def data_file(self) -> Path:
        return self.run.path(DATA_DIR, DATA_FILE)

    @property
    def q_file(self) -> Path:
        return self.run.path(DATA_DIR, Q_FILE)

    def data(self) -> None:
        """The bots' games, unless the run folder has them."""
        if self.data_file.exists():
            return
        settings = self.options["data"]
        data_spec = DataSpec(
            games=int(settings["games"]),
            seed=int(settings["seed"]),
            max_year=self.max_year,
            map_name=spec(self.env.id).kwargs["map_name"],
            mix=tuple((str(name), float(weight)) for name, weight in settings["mix"].items()),
        )
        self.run.diagnose("data", **generate_data(data_spec, self.data_file, pool=self.pool))

    def q(self) -> None:
        """Train the Q policy (first seed), then estimate the missing Q groups. The other
        behaviour-cloning units train beside the policy (the pool's workers would otherwise
        wait for it), so the ``train`` stage is left with the fine-tuned ones."""
        if not any(finetunes(agent) for agent in self.learners):
            return
        policy, seed = self.q_policy(), self.scenario.seeds[0]
        cloned = [(a, s) for s in self.scenario.seeds for a in self.learners if not finetunes(a)]
        self._train([(policy, seed), *[unit for unit in cloned if unit != (policy, seed)]])
        settings = {k: v for k, v in self.options["q"].items() if k != "policy"}
        ranker = DipLLMAgent(checkpoint=self.checkpoint(policy.display, seed))
        with timed() as timing:
            tasks = rollout_tasks(
                self.data_file, QConfig(**settings), ranker.model, ranker.tokenizer
            )
            done_before = len(read_q(self.q_file))
            usage: dict[str, float] = {}
            groups = estimate_q(tasks, self.q_file, pool=self.pool, usage=usage)
        if len(groups) > done_before:
            # The groups estimated in all (at most the ``groups`` option), beside the settings;
            # CPU and memory are the workers' (the ranker's CPU here is not counted).
            counts = {"groups": len(groups), "estimated_now": len(groups) - done_before}
            lam = next(float(a.kwargs.get("lam", math.inf)) for a in self.learners if finetunes(a))
            noise = {"lam": lam, **q_noise(groups, lam)}
            self.run.diagnose(
                "q", **{**settings, **counts, "seconds": timing["seconds"], "noise": noise, **usage}
            )

    def train(self) -> None:
        """Every DipLLM agent on every run seed."""
        self._train([(agent, seed) for seed in self.scenario.seeds for agent in self.learners])

    def _train(self, units: Sequence[tuple[AgentEntry, int]]) -> None:
        """Train the (agent, seed) units that have no checkpoint yet, in the pool: first those
        without fine-tuning, then the fine-tuned ones, each from its behaviour-cloning
        counterpart's checkpoint where the scenario has one (:meth:`_base_of`); units with a
        behaviour-cloning stage of their own go first, so the short ones fill in after them."""
        for finetuned in (False, True):
            jobs = []
            for agent, seed in units:
                checkpoint = self.checkpoint(agent.display, seed)
                if finetunes(agent) != finetuned or checkpoint.exists():
                    continue
                base = self._base_of(agent) if finetuned else None
                jobs.append(
                    TrainUnit(
                        label=agent.display,
                        kwargs=self._kwargs(agent),
                        seed=seed,
                        data=str(self.data_file),
                        q=str(self.q_file) if finetuned else None,
                        budget=0 if base else agent.train.budget,
                        checkpoint=str(checkpoint),
                        base=base.display if base else None,
                        base_checkpoint=str(self.checkpoint(base.display, seed)) if base else None,
                    )
                )
            jobs.sort(key=lambda unit: unit.budget, reverse=True)
            for diagnostics in self.pool.map(train_unit, jobs):
                self.run.diagnose("train", **diagnostics)

    def _kwargs(self, agent: AgentEntry) -> dict[str, Any]:
        """``agent``'s DipLLMAgent kwargs: ``options.train`` under its own, ``options.model``
        under its ``model``, and its ``options.games`` entry."""
        options = self.options
        kwargs = {**options["train"], **agent.kwargs}
        kwargs["model"] = {**options["model"], **agent.kwargs.get("model", {})}
        if agent.display in options["games"]:
            kwargs["games"] = int(options["games"][agent.display])
        return kwargs

    def _base_of(self, agent: AgentEntry) -> AgentEntry | None:
        """The behaviour-cloning agent whose checkpoint a fine-tuned ``agent`` starts from: same
        head, model, training settings, budget and games, and no fine-tuning; None when there is
        none (the agent then runs its own behaviour-cloning stage)."""

        def stage_one(entry: AgentEntry) -> tuple:
            kwargs = self._kwargs(entry)
            stage_two = ("lam", "finetune", "finetune_lr", "finetune_target")
            kwargs = {k: v for k, v in kwargs.items() if k not in stage_two}
            return (json.dumps(kwargs, sort_keys=True), entry.train.budget)

        for other in self.learners:
            if not finetunes(other) and stage_one(other) == stage_one(agent):
                return other
        return None

    def matches(self) -> None:
        """1v(N−1) games of every (agent, opponent) per run seed, unless all stored."""
        games = self.scenario.episodes * self.seats
        for seed in self.scenario.seeds:
            for agent, opponent in self.plays():
                label = matches_label(self.env.id, opponent)
                if not self.done(label, agent.display, [seed], games):
                    self._match(agent, opponent, seed, label)

    def _match(self, agent: AgentEntry, opponent: str, seed: int, label: str) -> None:
        player: Any = agent.name
        if any(agent.display == learner.display for learner in self.learners):
            player = partial(DipLLMAgent, checkpoint=str(self.checkpoint(agent.display, seed)))
        with timed() as timing:
            records = one_vs_rest(
                self.env.id,
                player,
                opponent,
                games_per_seat=self.scenario.episodes,
                seeds=[seed],
                env_kwargs=dict(self.env_kwargs),
                labels=(agent.display, opponent),
                pool=self.pool,
            )
        for record in records:
            record.update(
                env_id=label,
                env_base=self.env.id,
                episode=record["game"],
                **{"return": record["sos"]},
                success=record["won"],
                normalized_score=100.0 * record["sos"],
                metrics={
                    name: float(record[name])
                    for name in ("sos", "won", "drawn", "survived", "eliminated", "centers")
                }
                | {
                    "invalid_orders": float(record["invalid_orders"]),
                    "phases": float(record["phases"]),
                },
            )
            self.record(record)
        self.run.diagnose(
            "matches",
            agent=agent.display,
            opponent=opponent,
            seed=seed,
            games=len(records),
            seconds=timing["seconds"],
        )

    def blocks(self, run: Run) -> dict[str, Any]:
        return {
            "dipllm": {
                "env_label": matches_label(self.env.id, self.options["opponent"]),
                "opponent": self.options["opponent"],
                "max_year": self.max_year,
                "matches": summarize_matches(run.records),
                "diagnostics": run.diagnostics,
            }
        }

    def summary(self, run: Run) -> str:
        block = run.scorecard["dipllm"]
        labels = [agent.display for agent in self.scenario.agents]
        head = f"1v{self.seats - 1} with seat rotation, capped at {self.max_year}.\n\n"
        return head + format_matches(block["matches"], labels) + "\n" + format_work(run.diagnostics)


def train_unit(unit: TrainUnit) -> dict[str, Any]:
    """Train one (agent, seed) unit, save its checkpoint (whole or not at all) and return its
    ``train`` diagnostics: what it trained on, first and final loss, seconds."""
    map_name = next(read_phases(unit.data))["map_name"]
    agent = DipLLMAgent(seed=unit.seed, map_name=map_name, **unit.kwargs)
    if unit.base_checkpoint is not None:
        agent.init_from(unit.base_checkpoint)
    with timed() as timing:
        stats = agent.learn(unit.data, unit.budget, q=unit.q)
    RunFolder.save(agent.save, Path(unit.checkpoint))
    losses = agent.finetune_losses or agent.losses
    tail = losses[-max(1, len(losses) // 10) :]
    return {
        "agent": unit.label,
        "seed": unit.seed,
        "head": agent.head,
        "lam": None if math.isinf(agent.lam) else agent.lam,
        "base": unit.base,
        "first_loss": losses[0],
        "final_loss": sum(tail) / len(tail),
        **stats,
        **timing,
    }


def format_matches(matches: Mapping[str, Any], agents: Sequence[str]) -> str:
    """One Markdown table per opponent: SoS, win, draw, survival, defeat (95% CIs)."""
    sections = []
    for env_label, by_agent in matches.items():
        lines = [
            f"## {env_label}",
            "",
            "| agent | games | SoS [95% CI] | win | draw | survival | defeat | centres |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for agent in [a for a in agents if a in by_agent]:
            for row in by_agent[agent].values():
                cells = [agent, str(row["games"]), _interval(row["sos"], percent=True)]
                cells += [_interval(row[rate], percent=True) for rate in RATES]
                cells.append(_interval(row["centers"]))
                lines.append("| " + " | ".join(cells) + " |")
        share = next(iter(next(iter(by_agent.values())).values()))["equal_strength_sos"]
        lines += ["", f"Equal strength: SoS {100 * share:.1f}%. CIs stratified by seat."]
        sections.append("\n".join(lines))
    return "\n\n".join(sections) + "\n"


def _interval(summary: Mapping[str, Any], percent: bool = False) -> str:
    scale, unit = (100.0, "%") if percent else (1.0, "")
    low, high = summary["ci95"]
    mean = summary["mean"]
    return f"{scale * mean:.1f}{unit} [{scale * low:.1f}, {scale * high:.1f}]"


def format_work(diagnostics: Sequence[Mapping[str, Any]]) -> str:
    """Data, Q, training and match times as Markdown."""
    lines = ["## Work", ""]
    for entry in diagnostics:
        if entry["stage"] == "data":
            lines.append(
                f"- data: {entry['games']} games, {entry['phases']} phases, {entry['turns']} "
                f"turns in {entry['seconds']:.0f} s"
            )
        elif entry["stage"] == "q":
            lines.append(
                f"- Q: {entry['groups']} groups (rollouts M = {entry['rollouts']}, top k = "
                f"{entry['top_k']}, sampled {entry.get('sampled', 0)}, horizon "
                f"{entry['horizon_years']} y, continued by "
                f"{entry.get('continuation', 'data')}), {entry['estimated_now']} "
                f"estimated in {entry['seconds']:.0f} s"
            )
            noise = entry.get("noise", {})
            if noise.get("groups"):
                lines.append(
                    f"- Q noise (λ = {noise['lam']:g}): SE of Q {noise['se']:.2f}, of a "
                    f"difference from the data's order {noise['se_difference']:.2f}, spread "
                    f"between candidates {noise['spread']:.2f}; all candidates tied in "
                    f"{noise['flat']:.0%} of groups; two halves of the rollouts disagree on "
                    f"the best candidate in {noise['top_change']:.0%}; their targets differ by TV "
                    f"{noise['target_tv']:.2f}; the target moves π_base by TV "
                    f"{noise['target_shift']:.2f}"
                )
    training = [d for d in diagnostics if d["stage"] == "train"]
    if training:
        lines += [
            "",
            "| agent | seed | head | λ | games | turns | BC updates | fine-tuned from | "
            "fine-tuning: target, Q decisions, turns, updates | loss first → last | seconds |",
            "|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|",
        ]
        for d in training:
            lam = "∞" if d["lam"] is None else f"{d['lam']:g}"
            finetuning = "–"
            if d["finetune_updates"]:
                finetuning = (
                    f"{d.get('finetune_target')}, {d['q_weighted']}, {d['finetune_turns']}, "
                    f"{d['finetune_updates']}"
                )
            lines.append(
                f"| {d['agent']} | {d['seed']} | {d['head']} | {lam} | {d['games']} | "
                f"{d['turns']} | {d['updates']} | {d['base'] or '–'} | {finetuning} | "
                f"{d['first_loss']:.2f} → {d['final_loss']:.2f} | {d['seconds']:.0f} |"
            )
    evaluations = [d for d in diagnostics if d["stage"] == "matches"]
    if evaluations:
        seconds = sum(d["seconds"] for d in evaluations)
        games = sum(d["games"] for d in evaluations)
        lines += ["", f"- matches: {games} games in {seconds:.0f} s"]
    return "\n".join(lines) + "\n"
