"""The DipLLM claims experiment (spec diplomacy.md §7): a scenario runner
(``runner: omnigym.llm_agents.dipllm_claims``, as in ``scenarios/claims/dipllm.yaml``).

It reproduces the ablation of DipLLM (Xu et al., ICML 2025) at small scale with
:mod:`omnigym.llm_agents.dipllm`:

1. **data**: ``options.data.games`` seeded games of the reference bots, capped at the env's
   ``max_year`` (``<out>/data/games.jsonl.gz``);
2. **policy**: the agent labelled ``options.q.policy`` (default ``AF+BC``) is trained first, on
   the first run seed; its top-k orders are the Q candidates;
3. **Q**: unit-level Q by rollouts for ``options.q.groups`` groups (``<out>/data/q.jsonl``,
   appended as it goes, so a killed estimation resumes);
4. **training**: every DipLLM agent of the scenario (kwargs such as ``head``, ``lam``,
   ``finetune``; ``train.budget`` behaviour-cloning updates), on each run seed, on all the games
   or on ``options.games[label]`` of them. Agents with ``finetune > 0`` (the EW variants) are
   fine-tuned with the Q file, starting from the checkpoint of their behaviour-cloning
   counterpart (same head, data and settings) where the scenario has one, else after their own
   behaviour-cloning stage. Checkpoints go to ``<out>/checkpoints/<label>/seed<k>`` (written
   whole, then renamed) and are loaded on a re-run;
5. **evaluation**: each agent (trained, or a reference such as ``diplomacy_random``) plays 1v6
   against ``options.opponent`` with seat rotation,
   :func:`omnigym.evaluators.matches.one_vs_rest`, ``episodes`` games per seat and seed; the
   agent named in ``options.extra_agent`` also plays ``options.extra_opponents``. Games go to
   ``episodes.jsonl`` per (agent, opponent, seed) as each evaluation ends; a re-run plays only
   the missing evaluations.

Outputs: ``scorecard.json`` (the generic per-run scorecard plus a ``dipllm`` block: SoS, win,
draw, survival and defeat rates with seat-stratified bootstrap CIs from
:func:`omnigym.evaluators.matches.summarize_matches`, training and Q diagnostics),
``scorecard.md``, ``report.html``, ``diagnostics.jsonl`` and ``claims.json`` / ``claims.md``
with claims 1–3 of spec §7, each pass or fail (``not run`` when an agent is missing), and the
recorded rates. The claims read the agents by label: ``AF+EW``, ``AF+BC``, ``joint+EW``,
``joint+BC``, ``AF+EW small`` (the full profile trains it on 100 games) and ``AF+BC large``
(400 games).

Options (each optional): ``data: {games, seed, mix: {bot: weight}}``, ``games: {label: n}``,
``q: {rollouts, top_k, horizon_years, groups, seed, policy}``, ``model: {ModelConfig fields}``
and ``train: {batch_size, lr, joint_candidates, finetune_lr}`` (defaults for every DipLLM
agent, which its kwargs override), ``opponent``, ``extra_agent``, ``extra_opponents``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from omnigym.agent import load_agent_factory
from omnigym.evaluators.claims import claim, write_claims
from omnigym.evaluators.matches import one_vs_rest, summarize_matches
from omnigym.evaluators.report import write_report
from omnigym.evaluators.runner import CHECKPOINTS_DIR, RunOutput
from omnigym.evaluators.scorecard import build_scorecard, format_table, write_scorecard
from omnigym.evaluators.store import EpisodeStore, read_records
from omnigym.io import atomic_write_text
from omnigym.registry import make, spec
from omnigym.scenario import AgentEntry, Scenario
from omnigym.threads import map_in_workers, one_torch_thread

from .dipllm import (
    DataSpec,
    DipLLMAgent,
    QConfig,
    estimate_q,
    generate_data,
    read_phases,
    rollout_tasks,
)

DATA_DIR = "data"
DATA_FILE = "games.jsonl.gz"
Q_FILE = "q.jsonl"
DIAGNOSTICS_FILE = "diagnostics.jsonl"
AF_EW, AF_BC, JOINT_EW, JOINT_BC = "AF+EW", "AF+BC", "joint+EW", "joint+BC"
AF_EW_SMALL, AF_BC_LARGE = "AF+EW small", "AF+BC large"
SOURCE = "DipLLM (Xu et al., ICML 2025), spec diplomacy.md §7"

DEFAULTS: dict[str, Any] = {
    "data": {"games": 500, "seed": 0, "mix": {"greedy": 1.0, "defensive": 1.0, "random": 1.0}},
    "games": {},
    "q": {
        "rollouts": 4,
        "top_k": 4,
        "horizon_years": 2,
        "groups": None,
        "seed": 0,
        "policy": AF_BC,
    },
    "model": {},
    "train": {},
    "opponent": "diplomacy_greedy",
    "extra_agent": AF_EW,
    "extra_opponents": [],
}


# ---- settings ----------------------------------------------------------------------------------


def options_of(scenario: Scenario) -> dict[str, Any]:
    """The runner's options: the defaults, updated key by key (one level deep) by
    ``scenario.options``; unknown keys raise ``ValueError``."""
    unknown = sorted(set(scenario.options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown options {unknown}; known: {sorted(DEFAULTS)}")
    options = {}
    for key, default in DEFAULTS.items():
        given = scenario.options.get(key)
        if isinstance(default, dict):
            options[key] = {**default, **(given or {})}
        else:
            options[key] = default if given is None else given
    if len(scenario.envs) != 1:
        raise ValueError("the DipLLM runner plays one env (Diplomacy/Standard-v0 or Pure-v0)")
    return options


def is_dipllm(agent: AgentEntry) -> bool:
    """Whether ``agent`` is a DipLLM-lite model (trained here) rather than a reference."""
    return load_agent_factory(agent.name) is DipLLMAgent


def _agent_kwargs(agent: AgentEntry, options: Mapping[str, Any]) -> dict[str, Any]:
    kwargs = {**options["train"], **agent.kwargs}
    kwargs["model"] = {**options["model"], **agent.kwargs.get("model", {})}
    if agent.display in options["games"]:
        kwargs["games"] = int(options["games"][agent.display])
    return kwargs


def _finetunes(agent: AgentEntry) -> bool:
    """Whether ``agent`` has an equilibrium fine-tuning stage (and so needs the Q file)."""
    return int(agent.kwargs.get("finetune", 0)) > 0


def _short(opponent: str) -> str:
    return opponent.removeprefix("diplomacy_").rsplit(":", 1)[-1]


def _plays(scenario: Scenario, options: Mapping[str, Any]) -> list[tuple[AgentEntry, str]]:
    """(agent, opponent) pairs to evaluate."""
    plays = [(agent, options["opponent"]) for agent in scenario.agents]
    for agent in scenario.agents:
        if agent.display == options["extra_agent"]:
            plays += [(agent, opponent) for opponent in options["extra_opponents"]]
    return plays


def _seats(env_id: str, env_kwargs: Mapping[str, Any]) -> int:
    env = make(env_id, **env_kwargs)
    try:
        return len(env.possible_agents)
    finally:
        env.close()


def total_episodes(scenario: Scenario) -> int:
    """Games the scenario plays in all (for progress bars)."""
    options = options_of(scenario)
    env = scenario.envs[0]
    games = scenario.episodes * _seats(env.id, env.kwargs) * len(scenario.seeds)
    return games * len(_plays(scenario, options))


# ---- the run -----------------------------------------------------------------------------------


def run_scenario(
    scenario: Scenario,
    folder: str | os.PathLike,
    on_episode: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutput:
    """Generate the data, estimate Q, train every variant, evaluate, write scorecard and claims
    into ``folder`` (resuming whatever an earlier run left there)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    options = options_of(scenario)
    atomic_write_text(out / "scenario.yaml", yaml.safe_dump(scenario.model_dump(), sort_keys=False))
    env = scenario.envs[0]
    max_year = int(env.kwargs.get("max_year", 1910))
    env_kwargs = {**env.kwargs, "max_year": max_year}
    data = _data(out, options, env.id, max_year, scenario.workers)
    learners = [agent for agent in scenario.agents if is_dipllm(agent)]
    by_label = {agent.display: agent for agent in learners}
    q_file = None
    if any(_finetunes(agent) for agent in learners):
        policy = by_label.get(options["q"]["policy"])
        if policy is None or _finetunes(policy) or policy.kwargs.get("head") == "joint":
            raise ValueError(
                "options.q.policy must name a factorised DipLLM agent without fine-tuning; "
                f"got {options['q']['policy']!r}"
            )
        _train_all(out, [(policy, scenario.seeds[0])], options, data, None, 1)
        policy_checkpoint = _checkpoint(out, policy.display, scenario.seeds[0])
        q_file = _q(out, options, data, policy_checkpoint, scenario.workers)
    units = [(agent, seed) for seed in scenario.seeds for agent in learners]
    _train_all(out, units, options, data, q_file, scenario.workers, learners)
    seats = _seats(env.id, env.kwargs)
    with EpisodeStore(out) as store:
        for seed in scenario.seeds:
            for agent, opponent in _plays(scenario, options):
                _evaluate(out, store, scenario, env_kwargs, agent, opponent, seed, on_episode)
        keys = [
            (_env_label(env.id, opponent), agent.display, seed, game)
            for seed in scenario.seeds
            for agent, opponent in _plays(scenario, options)
            for game in range(scenario.episodes * seats)
        ]
        records = store.select(keys)
    return write_outputs(records, out, scenario, options, max_year)


def _data(out: Path, options: Mapping[str, Any], env_id: str, max_year: int, workers: int) -> Path:
    path = out / DATA_DIR / DATA_FILE
    if path.exists():
        return path
    settings = options["data"]
    data_spec = DataSpec(
        games=int(settings["games"]),
        seed=int(settings["seed"]),
        max_year=max_year,
        map_name=spec(env_id).kwargs["map_name"],
        mix=tuple((str(name), float(weight)) for name, weight in settings["mix"].items()),
    )
    stats = generate_data(data_spec, path, workers)
    _diagnose(out, {"step": "data", **stats})
    return path


def _q(
    out: Path, options: Mapping[str, Any], data: Path, policy_checkpoint: Path, workers: int
) -> Path:
    path = out / DATA_DIR / Q_FILE
    settings = {k: v for k, v in options["q"].items() if k != "policy"}
    config = QConfig(**settings)
    policy = DipLLMAgent(checkpoint=policy_checkpoint)
    start = time.perf_counter()
    tasks = rollout_tasks(data, config, policy.model, policy.tokenizer)
    done_before = len(_read_lines(path))
    groups = estimate_q(tasks, path, workers)
    if len(groups) > done_before:
        _diagnose(
            out,
            {
                "step": "q",
                "groups": len(groups),
                "estimated_now": len(groups) - done_before,
                "seconds": time.perf_counter() - start,
                **settings,
            },
        )
    return path


def _read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _checkpoint(out: Path, label: str, seed: int) -> Path:
    safe = "".join(c if c.isalnum() or c in "._-+=" else "_" for c in label)
    return out / CHECKPOINTS_DIR / safe / f"seed{seed}"


def _base_of(
    agent: AgentEntry, learners: Sequence[AgentEntry], options: Mapping[str, Any]
) -> AgentEntry | None:
    """The behaviour-cloning agent whose checkpoint a fine-tuned ``agent`` starts from: same
    head, model, training settings, budget and games, and no fine-tuning; None when there is
    none (the agent then runs its own behaviour-cloning stage)."""

    def stage_one(entry: AgentEntry) -> tuple:
        kwargs = _agent_kwargs(entry, options)
        kwargs = {k: v for k, v in kwargs.items() if k not in ("lam", "finetune", "finetune_lr")}
        return (json.dumps(kwargs, sort_keys=True), entry.train.budget if entry.train else None)

    for other in learners:
        if not _finetunes(other) and stage_one(other) == stage_one(agent):
            return other
    return None


def _train_all(
    out: Path,
    units: Sequence[tuple[AgentEntry, int]],
    options: Mapping[str, Any],
    data: Path,
    q_file: Path | None,
    workers: int,
    learners: Sequence[AgentEntry] = (),
) -> None:
    """Train the (agent, seed) units that have no checkpoint yet, in ``workers`` processes:
    first those without fine-tuning, then the fine-tuned ones, each from its behaviour-cloning
    counterpart's checkpoint where the scenario has one (:func:`_base_of`)."""
    for finetuned in (False, True):
        jobs = []
        for agent, seed in units:
            checkpoint = _checkpoint(out, agent.display, seed)
            if _finetunes(agent) != finetuned or checkpoint.exists():
                continue
            if agent.train is None:
                raise ValueError(f"DipLLM agent {agent.display!r} needs train: {{budget: N}}")
            base = _base_of(agent, learners, options) if finetuned else None
            jobs.append(
                {
                    "label": agent.display,
                    "kwargs": _agent_kwargs(agent, options),
                    "seed": seed,
                    "data": str(data),
                    "q": str(q_file) if finetuned else None,
                    "budget": 0 if base else agent.train.budget,
                    "base": base.display if base else None,
                    "base_checkpoint": str(_checkpoint(out, base.display, seed)) if base else None,
                    "checkpoint": str(checkpoint),
                }
            )
        for diagnostics in map_in_workers(workers, _train_unit, jobs):
            _diagnose(out, diagnostics)


def _train_unit(job: Mapping[str, Any]) -> dict[str, Any]:
    """Train one (agent, seed) unit and save its checkpoint under a temporary name first."""
    map_name = next(read_phases(job["data"]))["map_name"]
    agent = DipLLMAgent(seed=job["seed"], map_name=map_name, **job["kwargs"])
    if job["base_checkpoint"] is not None:
        agent.init_from(job["base_checkpoint"])
    stats = agent.learn(job["data"], job["budget"], q=job["q"])
    target = Path(job["checkpoint"])
    partial_folder = target.with_name(f".{target.name}.partial")
    shutil.rmtree(partial_folder, ignore_errors=True)
    agent.save(partial_folder)
    os.replace(partial_folder, target)
    losses = agent.finetune_losses or agent.losses
    tail = losses[-max(1, len(losses) // 10) :]
    return {
        "step": "train",
        "agent": job["label"],
        "seed": job["seed"],
        "head": agent.head,
        "lam": None if math.isinf(agent.lam) else agent.lam,
        "base": job["base"],
        "first_loss": losses[0],
        "final_loss": sum(tail) / len(tail),
        **stats,
    }


def _diagnose(out: Path, entry: Mapping[str, Any]) -> None:
    with (out / DIAGNOSTICS_FILE).open("a", encoding="utf-8") as file:
        file.write(json.dumps(dict(entry)) + "\n")


def _env_label(env_id: str, opponent: str) -> str:
    return f"{env_id} vs {_short(opponent)}"


def _evaluate(
    out: Path,
    store: EpisodeStore,
    scenario: Scenario,
    env_kwargs: Mapping[str, Any],
    agent: AgentEntry,
    opponent: str,
    seed: int,
    on_episode: Callable[[dict[str, Any]], None] | None,
) -> None:
    """1v(N−1) games of ``agent`` against ``opponent`` for one run seed, unless all stored."""
    env_id = scenario.envs[0].id
    env_label = _env_label(env_id, opponent)
    games = range(scenario.episodes * _seats(env_id, env_kwargs))
    if all((env_label, agent.display, seed, game) in store for game in games):
        return
    player: Any = agent.name
    if is_dipllm(agent):
        checkpoint = str(_checkpoint(out, agent.display, seed))
        # Worker processes of the matches run the model on one thread; here, the block does.
        threads = 1 if scenario.workers > 1 else None
        player = partial(DipLLMAgent, checkpoint=checkpoint, threads=threads)
    start = time.perf_counter()
    with one_torch_thread():
        records = one_vs_rest(
            env_id,
            player,
            opponent,
            games_per_seat=scenario.episodes,
            seeds=[seed],
            env_kwargs=dict(env_kwargs),
            workers=scenario.workers,
            labels=(agent.display, opponent),
        )
    for record in records:
        record.update(
            env_id=env_label,
            env_base=env_id,
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
        store.append(record)
        if on_episode is not None:
            on_episode(record)
    _diagnose(
        out,
        {
            "step": "evaluate",
            "agent": agent.display,
            "opponent": opponent,
            "seed": seed,
            "games": len(records),
            "seconds": time.perf_counter() - start,
        },
    )


# ---- claims ------------------------------------------------------------------------------------


def _sos(table: Mapping[str, Any], label: str) -> dict[str, Any] | None:
    row = table.get(label)
    if row is None:
        return None
    return {"mean": row["sos"]["mean"], "ci95": row["sos"]["ci95"], "games": row["games"]}


def check_claims(
    matches: Mapping[str, Any], env_label: str, opponent: str, trained: Mapping[str, Any]
) -> dict[str, Any]:
    """Claims 1–3 of spec §7 from ``summarize_matches`` output, and the recorded rates.

    ``trained`` maps agent labels to their training diagnostics (for the game counts)."""
    table = {
        agent: by_opponent[opponent]
        for agent, by_opponent in matches.get(env_label, {}).items()
        if opponent in by_opponent
    }
    sos = {label: _sos(table, label) for label in table}

    def mean(label: str) -> float:
        return sos[label]["mean"]

    def numbers(*labels: str) -> dict[str, Any]:
        shown = {label: sos.get(label) for label in labels}
        games = {label: trained[label]["games"] for label in labels if label in trained}
        return {"sos": shown, "games_trained_on": games} if games else {"sos": shown}

    claims = []
    labels_1 = (AF_EW, AF_BC, JOINT_EW, JOINT_BC)
    text_1 = (
        "ablation ordering: AF+EW > AF+BC, AF+EW > joint+EW, and both AF variants above both "
        "joint variants (mean SoS)"
    )
    if all(label in sos for label in labels_1):
        holds = (
            mean(AF_EW) > mean(AF_BC)
            and mean(AF_EW) > mean(JOINT_EW)
            and min(mean(AF_EW), mean(AF_BC)) > max(mean(JOINT_EW), mean(JOINT_BC))
        )
        claims.append(claim(1, text_1, "pass" if holds else "fail", **numbers(*labels_1)))
    else:
        claims.append(claim(1, text_1, "not run", **numbers(*labels_1)))
    text_2 = (
        f"AF+EW has SoS above 1/7 against {_short(opponent)}, and its SoS with the full data "
        "(500 games in the full profile) exceeds that with the small data (100 games)"
    )
    if AF_EW in sos and AF_EW_SMALL in sos:
        holds = mean(AF_EW) > 1 / 7 and mean(AF_EW) > mean(AF_EW_SMALL)
        status = "pass" if holds else "fail"
        claims.append(claim(2, text_2, status, equal_share=1 / 7, **numbers(AF_EW, AF_EW_SMALL)))
    else:
        claims.append(claim(2, text_2, "not run", **numbers(AF_EW, AF_EW_SMALL)))
    text_3 = (
        "data efficiency: AF+EW on the small data (100 games in the full profile) matches or "
        "beats AF+BC on the large data (400 games)"
    )
    if AF_EW_SMALL in sos and AF_BC_LARGE in sos:
        status = "pass" if mean(AF_EW_SMALL) >= mean(AF_BC_LARGE) else "fail"
        claims.append(claim(3, text_3, status, **numbers(AF_EW_SMALL, AF_BC_LARGE)))
    else:
        claims.append(claim(3, text_3, "not run", **numbers(AF_EW_SMALL, AF_BC_LARGE)))
    recorded = {
        env: {
            agent: {
                against: {
                    rate: row[rate]
                    for rate in ("sos", "win_rate", "draw_rate", "survival_rate", "defeat_rate")
                }
                | {"games": row["games"]}
                for against, row in by_opponent.items()
            }
            for agent, by_opponent in agents.items()
        }
        for env, agents in matches.items()
    }
    return {"source": SOURCE, "claims": claims, "recorded": recorded}


# ---- outputs -----------------------------------------------------------------------------------


def read_diagnostics(folder: str | os.PathLike) -> list[dict[str, Any]]:
    return read_records(Path(folder) / DIAGNOSTICS_FILE)


def _latest_training(diagnostics: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Agent label -> its latest training entry (for the game counts and losses)."""
    return {d["agent"]: dict(d) for d in diagnostics if d["step"] == "train"}


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
                cells += [
                    _interval(row[rate], percent=True)
                    for rate in ("win_rate", "draw_rate", "survival_rate", "defeat_rate")
                ]
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


def format_diagnostics(diagnostics: Sequence[Mapping[str, Any]]) -> str:
    """Data, Q, training and evaluation times as Markdown."""
    lines = ["## Work", ""]
    for entry in diagnostics:
        if entry["step"] == "data":
            lines.append(
                f"- data: {entry['games']} games, {entry['phases']} phases, {entry['turns']} "
                f"turns in {entry['seconds']:.0f} s"
            )
        elif entry["step"] == "q":
            lines.append(
                f"- Q: {entry['groups']} groups (rollouts M = {entry['rollouts']}, top k = "
                f"{entry['top_k']}, horizon {entry['horizon_years']} y), {entry['estimated_now']} "
                f"estimated in {entry['seconds']:.0f} s"
            )
    training = [d for d in diagnostics if d["step"] == "train"]
    if training:
        lines += [
            "",
            "| agent | seed | head | λ | games | turns | BC updates | fine-tuned from | "
            "fine-tuning: Q-weighted decisions, turns, updates | loss first → last | seconds |",
            "|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|",
        ]
        for d in training:
            lam = "∞" if d["lam"] is None else f"{d['lam']:g}"
            finetuning = "–"
            if d["finetune_updates"]:
                finetuning = f"{d['q_weighted']}, {d['finetune_turns']}, {d['finetune_updates']}"
            lines.append(
                f"| {d['agent']} | {d['seed']} | {d['head']} | {lam} | {d['games']} | "
                f"{d['turns']} | {d['updates']} | {d['base'] or '–'} | {finetuning} | "
                f"{d['first_loss']:.2f} → {d['final_loss']:.2f} | {d['seconds']:.0f} |"
            )
    evaluations = [d for d in diagnostics if d["step"] == "evaluate"]
    if evaluations:
        seconds = sum(d["seconds"] for d in evaluations)
        games = sum(d["games"] for d in evaluations)
        lines += ["", f"- evaluation: {games} games in {seconds:.0f} s"]
    return "\n".join(lines) + "\n"


def write_outputs(
    records: list[dict[str, Any]],
    folder: Path,
    scenario: Scenario,
    options: Mapping[str, Any],
    max_year: int,
) -> RunOutput:
    """``scorecard.json`` (with a ``dipllm`` block), ``scorecard.md``, ``report.html``,
    ``claims.json`` and ``claims.md``."""
    env_id = scenario.envs[0].id
    matches = summarize_matches(records)
    diagnostics = read_diagnostics(folder)
    trained = _latest_training(diagnostics)
    claims = check_claims(
        matches, _env_label(env_id, options["opponent"]), options["opponent"], trained
    )
    scorecard = build_scorecard(records)
    scorecard["dipllm"] = {"matches": matches, "diagnostics": diagnostics, "max_year": max_year}
    labels = [agent.display for agent in scenario.agents]
    summary = (
        f"# Scorecard: {scenario.name}\n\n1v{_seats(env_id, scenario.envs[0].kwargs) - 1} "
        f"with seat rotation, capped at {max_year}.\n\n"
        + format_matches(matches, labels)
        + "\n"
        + write_claims(claims, folder)
        + "\n"
        + format_diagnostics(diagnostics)
    )
    json_path, md_path = write_scorecard(scorecard, folder)
    atomic_write_text(md_path, f"{summary}\n# Per run\n\n{format_table(scorecard)}")
    html_path = write_report(scorecard, folder, title=scenario.name)
    return RunOutput(folder, scorecard, json_path, md_path, html_path, summary=summary)
