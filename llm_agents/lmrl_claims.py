"""The LMRL agents claims experiment (spec ``lmrl.md`` §9, issue 8): a scenario runner
(``runner: omnigym.llm_agents.lmrl_claims``, as in ``scenarios/claims/lmrl_agents.yaml``).

It compares the language-model agents of :mod:`omnigym.llm_agents` on the LMRL text tasks as
LMRL-Gym's Table 2 does (Abdulhai et al., "LMRL-Gym: Benchmarks for Multi-Turn Reinforcement
Learning with Language Models", ICML 2025). The default runner would train every agent from
scratch; MC returns, ILQL-lite and PPO all start from a BC policy, so this runner trains BC
once per task and run seed and hands its checkpoint on (``options.start_from``). One job per
(env, run seed), jobs in ``workers`` processes with one torch thread each:

1. **train** every agent with ``train:`` (``learn(env, budget)``: BC and %BC updates on the
   task's dataset, the critic updates of MC and ILQL-lite, PPO's environment turns), an agent
   named in ``start_from`` after the agent it starts from, with that agent's checkpoint as its
   ``policy``; checkpoints go to ``<out>/checkpoints/<env>/<agent>/seed<k>`` (written whole,
   then renamed) and are loaded on a re-run;
2. **evaluate** every agent, trained or not (``random``, ``oracle``), for ``episodes``
   episodes of the run seed (:func:`omnigym.evaluators.rollout.evaluate`).

A job's episodes reach ``episodes.jsonl`` when the job ends, its training curves (PPO's)
``learning_curves.jsonl``, its timings (wall and CPU seconds of every training and evaluation)
``diagnostics.jsonl``; a re-run plays only the (env, agent, seed) evaluations that are missing.
Then: ``scorecard.json`` / ``.md`` and ``report.html`` (the default runner's), and
``claims.json`` / ``claims.md`` (:func:`claims`) with a comparison against the paper's Table 2
and the timings.

Options: ``start_from`` (``{label: label}``), ``agent_kwargs`` (``{label: {kwarg: value}}``,
laid over the agents' own kwargs: the quick profile shrinks the datasets this way),
``subfolder`` (write under ``<out>/<subfolder>``: the quick profile uses it so that its smaller
runs never mix with the full run's). The claims
read agents by label — ``BC``, ``%BC``, ``MC``, ``ILQL-lite``, ``PPO``, ``random``, ``oracle``
— and envs by id: keep both when editing the scenario.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from omnigym.agent import make_agent
from omnigym.evaluators.claims import claim, write_claims
from omnigym.evaluators.rollout import evaluate
from omnigym.evaluators.runner import (
    RunOutput,
    append_learning_curve,
    checkpoint_path,
    write_outputs,
)
from omnigym.evaluators.scorecard import format_table
from omnigym.evaluators.store import EpisodeStore, read_records
from omnigym.io import atomic_write_text
from omnigym.registry import make
from omnigym.scenario import AgentEntry, EnvEntry, Scenario
from omnigym.threads import map_in_workers

SOURCE = "LMRL-Gym (Abdulhai et al., ICML 2025), spec lmrl.md §9"
DIAGNOSTICS_FILE = "diagnostics.jsonl"
BC, FILTERED_BC, MC, ILQL, PPO, ORACLE, RANDOM = (
    "BC",
    "%BC",
    "MC",
    "ILQL-lite",
    "PPO",
    "oracle",
    "random",
)
MAZE_FO, MAZE_PO = "LMRL/MazeFO-v0", "LMRL/MazePO-v0"
NAV_FO, NAV_PO = "LMRL/TextNavFO-v0", "LMRL/TextNavPO-v0"
WORDLE = "LMRL/Wordle-v0"
TWENTY_Q = "LMRL/TwentyQuestions-v0"
LEARNED = (BC, FILTERED_BC, MC, ILQL)
"""The methods claims 1-4 are about (PPO is recorded, spec §9)."""
BC_BAND = (35.0, 65.0)
ORACLE_FLOOR = 95.0

PAPER_TABLE_2: dict[str, dict[str, float]] = {
    MAZE_FO: {BC: 58.2, FILTERED_BC: 68.9, MC: 75.0, ILQL: 99.9, PPO: 79.7},
    MAZE_PO: {BC: 53.1, FILTERED_BC: 50.1, MC: 52.4, ILQL: 76.3, PPO: 42.4},
    NAV_FO: {BC: 53.7, FILTERED_BC: 65.1, MC: 71.9, ILQL: 91.8, PPO: 87.1},
    NAV_PO: {BC: 49.7, FILTERED_BC: 60.5, MC: 71.6, ILQL: 83.7, PPO: 85.5},
    WORDLE: {BC: 79.9, FILTERED_BC: 79.1, MC: 94.9, ILQL: 97.7, PPO: 84.2},
    "LMRL/Chess-v0": {BC: 47.2, FILTERED_BC: 42.9, MC: 46.5, ILQL: 47.3, PPO: 48.0},
    "LMRL/Endgames-v0": {BC: 35.1, FILTERED_BC: 17.7, MC: 50.2, ILQL: 45.8, PPO: 77.5},
    "LMRL/TwentyQuestions-v0": {BC: 57.1, FILTERED_BC: 77.1, MC: 87.1, ILQL: 82.9, PPO: 72.9},
    "LMRL/GuessMyCity-v0": {BC: 30.0, FILTERED_BC: 48.0, MC: 88.0, ILQL: 75.0, PPO: 49.9},
    "LMRL/CarDealer-v0": {BC: 44.5, FILTERED_BC: 54.8, MC: 57.2, ILQL: 46.3, PPO: 50.5},
}
"""LMRL-Gym's Table 2 (normalized scores; spec §8), the online %BC and GPT-4 columns left out."""

DEFAULTS: dict[str, Any] = {"start_from": {}, "agent_kwargs": {}, "subfolder": None}


# ---- settings ----------------------------------------------------------------------------------


def options_of(scenario: Scenario) -> dict[str, Any]:
    """The runner's options (:data:`DEFAULTS` updated by ``scenario.options``), checked: every
    ``start_from`` label is a trained agent of the scenario."""
    unknown = sorted(set(scenario.options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown options {unknown}; known: {sorted(DEFAULTS)}")
    options = {**DEFAULTS, **scenario.options}
    labels = {agent.display for agent in scenario.agents}
    unknown = sorted(set(options["agent_kwargs"]) - labels)
    if unknown:
        raise ValueError(f"options.agent_kwargs names {unknown}, not agents of the scenario")
    trained = {agent.display for agent in scenario.agents if agent.train is not None}
    for child, parent in options["start_from"].items():
        for label in (child, parent):
            if label not in trained:
                raise ValueError(
                    f"options.start_from names {label!r}, which is not a trained agent of the "
                    f"scenario (trained: {sorted(trained)})"
                )
    return options


def total_episodes(scenario: Scenario) -> int:
    """How many episodes the scenario plays in all (for progress bars)."""
    pairs = sum(agent.runs_on(env) for env in scenario.envs for agent in scenario.agents)
    return pairs * len(scenario.seeds) * scenario.episodes


# ---- the scenario's BC agents ---------------------------------------------------------------


def bc_agent(env: Any = None, seed: int = 0, filtered: bool = False, **hyperparameters: Any) -> Any:
    """:class:`~omnigym.llm_agents.bc.BCAgent` (with ``filtered``,
    :class:`~omnigym.llm_agents.bc.FilteredBCAgent`) from a scenario file's kwargs: the nested
    ``tiny`` and ``lora`` mappings of YAML become their dataclasses
    (:meth:`~omnigym.llm_agents.bc.BCConfig.from_dict`), which the agents' constructor needs.
    ``env`` is accepted for the agent protocol; the agent reads its task from its dataset."""
    from omnigym.llm_agents.bc import BCAgent, BCConfig, FilteredBCAgent
    from omnigym.llm_agents.mc_returns import initial_bc

    agent_class = FilteredBCAgent if filtered else BCAgent
    return initial_bc(None, BCConfig.from_dict(hyperparameters), seed, agent_class)


# ---- one (env, seed) job --------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """Everything a worker needs for one env and run seed: the agents to evaluate, the whole
    scenario's agents (to train the ones they start from), the episode count and the folder."""

    env: EnvEntry
    seed: int
    play: tuple[AgentEntry, ...]
    agents: tuple[AgentEntry, ...]
    start_from: tuple[tuple[str, str], ...]
    episodes: int
    folder: str


def run_job(job: Job) -> dict[str, list[dict[str, Any]]]:
    """Train what ``job`` needs (or load it), evaluate its agents; return their episode
    records, learning curves and timings."""
    result: dict[str, list[dict[str, Any]]] = {"records": [], "curves": [], "diagnostics": []}
    trained: dict[str, Any] = {}
    by_label = {agent.display: agent for agent in job.agents}
    parents = dict(job.start_from)

    def obtain(agent: AgentEntry) -> Any:
        label = agent.display
        if label in trained:
            return trained[label]
        checkpoint = checkpoint_path(job.folder, job.env.display, label, job.seed)
        kwargs = dict(agent.kwargs)
        if label in parents and not checkpoint.exists():
            obtain(by_label[parents[label]])
            parent = checkpoint_path(job.folder, job.env.display, parents[label], job.seed)
            kwargs["policy"] = str(parent)
        env = make(job.env.id, **job.env.kwargs)
        try:
            built = make_agent(agent.name, env=env, env_id=job.env.id, **kwargs)
            if checkpoint.exists():
                built.load(checkpoint)
                trained[label] = built
                return built
            built.reset(job.seed)
            with _timer() as timing:
                built.learn(env, agent.train.budget)
        finally:
            env.close()
        result["diagnostics"].append(
            {
                "step": "train",
                **_where(job, label),
                "budget": agent.train.budget,
                **timing,
                **_training_summary(built),
            }
        )
        curve = getattr(built, "learning_curve", None)
        if curve:
            result["curves"].append({**_where(job, label), "curve": [list(p) for p in curve]})
        partial = checkpoint.with_name(f".{checkpoint.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        built.save(partial)
        os.replace(partial, checkpoint)
        trained[label] = built
        return built

    for agent in job.play:
        player = obtain(agent) if agent.train is not None else agent.name
        with _timer() as timing:
            records = evaluate(
                job.env.id,
                player,
                episodes=job.episodes,
                seeds=[job.seed],
                env_kwargs=job.env.kwargs,
                agent_kwargs=agent.kwargs if isinstance(player, str) else None,
                label=agent.display,
                env_label=job.env.display,
            )
        result["records"] += records
        result["diagnostics"].append(
            {"step": "evaluate", **_where(job, agent.display), "episodes": job.episodes, **timing}
        )
    return result


def _where(job: Job, label: str) -> dict[str, Any]:
    return {"env_id": job.env.display, "agent": label, "seed": job.seed}


class _timer:
    """``with _timer() as timing:`` fills ``timing`` with the block's wall and CPU seconds (the
    CPU time of this process, which is what a job's torch thread spends)."""

    def __enter__(self) -> dict[str, float]:
        self.timing: dict[str, float] = {}
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self.timing

    def __exit__(self, *exc: object) -> None:
        self.timing["seconds"] = time.perf_counter() - self._wall
        self.timing["cpu_seconds"] = time.process_time() - self._cpu


def _training_summary(agent: Any) -> dict[str, Any]:
    """What an agent reports of its training: first and last losses, samples."""
    summary: dict[str, Any] = {}
    losses = getattr(agent, "losses", None)
    if losses:
        summary["loss_first"], summary["loss_last"] = float(losses[0]), float(losses[-1])
    for name in ("samples", "episodes_trained"):
        if getattr(agent, name, None) is not None:
            summary[name] = int(getattr(agent, name))
    return summary


def run_jobs(workers: int, jobs: Sequence[Job]) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """:func:`run_job` over ``jobs``, results as each job ends (in ``workers`` processes with one
    torch thread each, or here when ``workers == 1``)."""
    return map_in_workers(workers, run_job, jobs, ordered=False)


# ---- the run -----------------------------------------------------------------------------------


def run_scenario(
    scenario: Scenario,
    folder: str | os.PathLike,
    on_episode: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutput:
    """Train, evaluate, write the scorecard and the claims into ``folder`` (or its
    ``subfolder``), resuming whatever an earlier run left there."""
    options = options_of(scenario)
    out = Path(folder) / (options["subfolder"] or "")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "scenario.yaml", yaml.safe_dump(scenario.model_dump(), sort_keys=False))
    start_from = tuple(sorted(options["start_from"].items()))
    agents = [
        agent.model_copy(
            update={"kwargs": {**agent.kwargs, **options["agent_kwargs"].get(agent.display, {})}}
        )
        for agent in scenario.agents
    ]
    keys = []
    with EpisodeStore(out) as store:
        jobs = []
        for env in scenario.envs:
            playing = [agent for agent in agents if agent.runs_on(env)]
            for seed in scenario.seeds:
                wanted = {
                    agent.display: [
                        (env.display, agent.display, seed, episode)
                        for episode in range(scenario.episodes)
                    ]
                    for agent in playing
                }
                keys += [key for agent_keys in wanted.values() for key in agent_keys]
                todo = tuple(
                    agent
                    for agent in playing
                    if any(key not in store for key in wanted[agent.display])
                )
                if todo:
                    jobs.append(
                        Job(
                            env=env,
                            seed=seed,
                            play=todo,
                            agents=tuple(agents),
                            start_from=start_from,
                            episodes=scenario.episodes,
                            folder=str(out),
                        )
                    )
        for result in run_jobs(scenario.workers, jobs):
            for record in result["records"]:
                store.append(record)
                if on_episode is not None:
                    on_episode(record)
            for entry in result["curves"]:
                append_learning_curve(
                    out, entry["env_id"], entry["agent"], entry["seed"], entry["curve"]
                )
            _append_diagnostics(out, result["diagnostics"])
        records = store.select(keys)
    output = write_outputs(records, out, title=scenario.name)
    checked = claims(output.scorecard)
    diagnostics = read_records(out / DIAGNOSTICS_FILE)
    markdown = write_claims(checked, out)
    markdown += "\n" + format_comparison(output.scorecard) + "\n" + format_timings(diagnostics)
    atomic_write_text(out / "claims.md", markdown)
    return replace(output, summary=format_table(output.scorecard) + "\n" + markdown)


def _append_diagnostics(folder: Path, entries: Sequence[Mapping[str, Any]]) -> None:
    with (folder / DIAGNOSTICS_FILE).open("a", encoding="utf-8") as file:
        for entry in entries:
            file.write(json.dumps(dict(entry), separators=(",", ":")) + "\n")


# ---- claims ------------------------------------------------------------------------------------


def _scores(scorecard: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(env, agent) -> normalized ``{"mean", "ci95"}`` of every result that has one."""
    return {
        (r["env_id"], r["agent"]): {
            "mean": float(r["normalized_score"]["mean"]),
            "ci95": [float(v) for v in r["normalized_score"]["ci95"]],
        }
        for r in scorecard["results"]
        if "normalized_score" in r
    }


def claims(scorecard: Mapping[str, Any]) -> dict[str, Any]:
    """Spec §9's claims 1-5 and issue 8's pattern (6: filtered BC ≥ BC on every task run; 7:
    value-based or online RL best on the partially observed tasks), each ``pass`` or ``fail``
    with the normalized scores (mean and 95% bootstrap CI over episodes, stratified by seed)
    behind it, or ``not run`` when the run lacks an agent or task; 8 records PPO and every
    task the claims do not cover."""
    scores = _scores(scorecard)

    def got(env: str, agent: str) -> dict[str, Any] | None:
        return scores.get((env, agent))

    def table(envs: Sequence[str], agents: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {
            env: {agent: got(env, agent) for agent in agents if got(env, agent)} for env in envs
        }

    entries = [
        _above_bc(got, table),
        _filtered_claim(
            2,
            "filtered BC scores at least BC on Maze FO and Text-Nav FO",
            (MAZE_FO, NAV_FO),
            got,
            table,
        ),
        _observability_claim(got, table),
        _bc_band_claim(got, table),
        _oracle_claim(scorecard, got, table),
        _filtered_claim(
            6,
            "filtered BC scores at least BC on every task run (issue 8)",
            [env for env in scorecard["envs"] if got(env, BC)],
            got,
            table,
        ),
        _partial_observability_claim(got, table),
        claim(
            8,
            "PPO on every task, and every agent on the tasks the claims do not cover",
            "recorded",
            **table(scorecard["envs"], [*LEARNED, PPO, RANDOM, ORACLE]),
        ),
    ]
    return {"source": SOURCE, "claims": entries}


def _above_bc(got: Callable, table: Callable) -> dict[str, Any]:
    text = "MC and ILQL-lite score above BC on Maze FO, Text-Nav FO and Wordle (mean over seeds)"
    envs = (MAZE_FO, NAV_FO, WORDLE)
    numbers = table(envs, (BC, MC, ILQL))
    if any(got(env, agent) is None for env in envs for agent in (BC, MC, ILQL)):
        return claim(1, text, "not run", **numbers)
    holds = all(
        got(env, agent)["mean"] > got(env, BC)["mean"] for env in envs for agent in (MC, ILQL)
    )
    return claim(1, text, "pass" if holds else "fail", **numbers)


def _filtered_claim(
    number: int, text: str, envs: Sequence[str], got: Callable, table: Callable
) -> dict[str, Any]:
    numbers = table(envs, (BC, FILTERED_BC))
    if not envs or any(got(env, a) is None for env in envs for a in (BC, FILTERED_BC)):
        return claim(number, text, "not run", **numbers)
    holds = all(got(env, FILTERED_BC)["mean"] >= got(env, BC)["mean"] for env in envs)
    return claim(number, text, "pass" if holds else "fail", **numbers)


def _observability_claim(got: Callable, table: Callable) -> dict[str, Any]:
    text = "for every method (BC, %BC, MC, ILQL-lite), PO scores below FO on Maze and Text-Nav"
    pairs = ((MAZE_FO, MAZE_PO), (NAV_FO, NAV_PO))
    numbers = table([env for pair in pairs for env in pair], LEARNED)
    checked = [
        (fo, po, agent)
        for fo, po in pairs
        for agent in LEARNED
        if got(fo, agent) is not None and got(po, agent) is not None
    ]
    if len(checked) < len(pairs) * len(LEARNED):
        return claim(3, text, "not run", **numbers)
    holds = all(got(po, agent)["mean"] < got(fo, agent)["mean"] for fo, po, agent in checked)
    return claim(3, text, "pass" if holds else "fail", **numbers)


def _bc_band_claim(got: Callable, table: Callable) -> dict[str, Any]:
    low, high = BC_BAND
    text = f"BC lands within 50 ± {(high - low) / 2:g} on Maze and Text-Nav (FO and PO)"
    envs = (MAZE_FO, MAZE_PO, NAV_FO, NAV_PO)
    numbers = table(envs, (BC,))
    if any(got(env, BC) is None for env in envs):
        return claim(4, text, "not run", **numbers)
    holds = all(low <= got(env, BC)["mean"] <= high for env in envs)
    return claim(4, text, "pass" if holds else "fail", **numbers)


def _oracle_claim(scorecard: Mapping[str, Any], got: Callable, table: Callable) -> dict[str, Any]:
    text = f"the oracle scores ≥ {ORACLE_FLOOR:g} on every task"
    envs = [env for env in scorecard["envs"] if got(env, ORACLE)]
    numbers = table(envs, (ORACLE,))
    if not envs:
        return claim(5, text, "not run", **numbers)
    holds = all(got(env, ORACLE)["mean"] >= ORACLE_FLOOR for env in envs)
    return claim(5, text, "pass" if holds else "fail", **numbers)


def _partial_observability_claim(got: Callable, table: Callable) -> dict[str, Any]:
    text = (
        "value-based or online RL (MC, ILQL-lite or PPO) scores best among the learned agents "
        "on the partially observed tasks: Maze PO, Text-Nav PO and Twenty Questions (issue 8)"
    )
    envs = (MAZE_PO, NAV_PO, TWENTY_Q)
    agents = (BC, FILTERED_BC, MC, ILQL, PPO)
    numbers = table(envs, agents)
    if any(got(env, agent) is None for env in envs for agent in agents):
        return claim(7, text, "not run", **numbers)
    holds = all(
        max(got(env, a)["mean"] for a in (MC, ILQL, PPO))
        > max(got(env, a)["mean"] for a in (BC, FILTERED_BC))
        for env in envs
    )
    return claim(7, text, "pass" if holds else "fail", **numbers)


# ---- tables ------------------------------------------------------------------------------------


def format_comparison(scorecard: Mapping[str, Any]) -> str:
    """Markdown: each task's normalized score per method, ours (mean [95% CI]) beside LMRL-Gym's
    Table 2."""
    scores = _scores(scorecard)
    methods = (BC, FILTERED_BC, MC, ILQL, PPO)
    lines = [
        "## Normalized scores beside LMRL-Gym's Table 2",
        "",
        "Ours: mean [95% CI] over every episode of every seed; paper: Table 2.",
        "",
        "| task | " + " | ".join(f"{m} (ours) | {m} (paper)" for m in methods) + " |",
        "|---|" + "---:|" * (2 * len(methods)),
    ]
    for env in scorecard["envs"]:
        cells = []
        for method in methods:
            ours = scores.get((env, method))
            paper = PAPER_TABLE_2.get(env, {}).get(method)
            cells.append("—" if ours is None else _interval(ours))
            cells.append("—" if paper is None else f"{paper:.1f}")
        lines.append(f"| {env} | " + " | ".join(cells) + " |")
    references = [
        f"| {env} | "
        + " | ".join(
            "—" if scores.get((env, agent)) is None else _interval(scores[(env, agent)])
            for agent in (RANDOM, ORACLE)
        )
        + " |"
        for env in scorecard["envs"]
    ]
    lines += ["", "| task | random | oracle |", "|---|---:|---:|", *references]
    return "\n".join(lines) + "\n"


def _interval(summary: Mapping[str, Any]) -> str:
    low, high = summary["ci95"]
    return f"{summary['mean']:.1f} [{low:.1f}, {high:.1f}]"


def format_timings(diagnostics: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: wall and CPU seconds of training and evaluation per agent, summed over envs
    and seeds (the latest entry of each step, env, agent and seed)."""
    latest = {(d["step"], d["env_id"], d["agent"], d["seed"]): d for d in diagnostics}
    totals: dict[tuple[str, str], np.ndarray] = {}
    for (step, _, agent, _), entry in latest.items():
        totals.setdefault((agent, step), np.zeros(2))
        totals[agent, step] += [entry["seconds"], entry["cpu_seconds"]]
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
