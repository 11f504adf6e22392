"""Run a scenario end to end: train what needs training, evaluate, write the scorecard.

The output folder holds ``episodes.jsonl`` (appended per episode, the resume log),
``scenario.yaml`` (the scenario as run), ``scorecard.json``, ``scorecard.md`` and
``report.html`` (written atomically at the end). Re-running the same scenario into the same
folder plays only the episodes that are missing.

An agent that records its training (a ``learning_curve`` attribute: a list of
``(timesteps, episode return)`` pairs, as :class:`omnigym.agents.sb3.SB3Agent` keeps) has the
curve of each training seed appended to ``learning_curves.jsonl`` as soon as training ends; the
report plots it. A curve trained again for the same (env, agent, seed) replaces the earlier one.
With ``options: {claims: "package.module:function"}`` the function is called as
``function(scorecard, records)`` after the scorecard is written and its claims go to
``claims.json`` and ``claims.md`` (:mod:`omnigym.evaluators.claims`).

An agent with ``save(path)`` and ``load(path)`` is saved after training under
``checkpoints/<env>/<agent>/seed<k>``; a resumed run loads it instead of training again.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from omnigym.agent import make_agent
from omnigym.io import atomic_write_text
from omnigym.registry import load_entry_point, make
from omnigym.scenario import AgentEntry, EnvEntry, Scenario

from .claims import write_claims
from .report import write_report
from .rollout import Record, WorkerPool, evaluate
from .scorecard import build_scorecard, format_table, write_scorecard
from .store import EpisodeStore, read_records

LEARNING_CURVES_FILE = "learning_curves.jsonl"
CHECKPOINTS_DIR = "checkpoints"


@dataclass(frozen=True)
class RunOutput:
    """Where a finished run's files are, and its scorecard."""

    folder: Path
    scorecard: dict[str, Any]
    scorecard_json: Path
    scorecard_md: Path
    report_html: Path
    summary: str | None = None  # Markdown printed after the run (default: the scorecard table)


def total_episodes(scenario: Scenario) -> int:
    """How many episodes the scenario plays in all."""
    pairs = sum(agent.runs_on(env) for env in scenario.envs for agent in scenario.agents)
    return pairs * len(scenario.seeds) * scenario.episodes


def scenario_runner(scenario: Scenario) -> Any:
    """The module that runs ``scenario``: its ``runner:`` or this one."""
    if scenario.runner is None:
        return sys.modules[__name__]
    return importlib.import_module(scenario.runner)


def run_scenario(
    scenario: Scenario,
    folder: str | os.PathLike,
    on_episode: Callable[[Record], None] | None = None,
) -> RunOutput:
    """Run ``scenario`` into ``folder`` (resuming what is there) and write its scorecard."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "scenario.yaml", yaml.safe_dump(scenario.model_dump(), sort_keys=False))
    records: list[Record] = []
    # One pool for the whole run: workers start (and import their libraries) once, not once
    # per (environment, agent) pair.
    with EpisodeStore(out) as store, WorkerPool(scenario.workers) as pool:
        for env in scenario.envs:
            for agent in scenario.agents:
                if not agent.runs_on(env):
                    continue
                records += _evaluate_agent(scenario, env, agent, store, on_episode, out, pool)
    output = write_outputs(records, out, title=scenario.name)
    checker = scenario.options.get("claims")
    if checker is None:
        return output
    claims = load_entry_point(checker)(output.scorecard, records)
    markdown = write_claims(claims, out)
    return replace(output, summary=format_table(output.scorecard) + "\n" + markdown)


def _evaluate_agent(
    scenario: Scenario,
    env: EnvEntry,
    agent: AgentEntry,
    store: EpisodeStore,
    on_episode: Callable[[Record], None] | None,
    folder: Path,
    pool: WorkerPool,
) -> list[Record]:
    common = dict(
        episodes=scenario.episodes,
        env_kwargs=env.kwargs,
        workers=scenario.workers,
        pool=pool if scenario.workers > 1 else None,
        label=agent.display,
        env_label=env.display,
        store=store,
        on_episode=on_episode,
    )
    if agent.train is None:
        return evaluate(
            env.id, agent.name, seeds=scenario.seeds, agent_kwargs=agent.kwargs, **common
        )
    records: list[Record] = []
    for seed in scenario.seeds:
        done = all(
            (env.display, agent.display, seed, episode) in store
            for episode in range(scenario.episodes)
        )
        trained: Any = agent.name
        if not done:
            trained = _trained_agent(env, agent, seed, folder)
        records += evaluate(env.id, trained, seeds=[seed], agent_kwargs=agent.kwargs, **common)
    return records


def checkpoint_path(folder: str | os.PathLike, env_id: str, agent: str, seed: int) -> Path:
    """Where the agent trained on ``env_id`` with run seed ``seed`` is saved."""

    def safe(name: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]", "_", name)

    return Path(folder) / CHECKPOINTS_DIR / safe(env_id) / safe(agent) / f"seed{seed}"


def _trained_agent(env: EnvEntry, agent: AgentEntry, seed: int, folder: Path) -> Any:
    """The agent trained for ``seed``: loaded from its checkpoint if one was saved, else
    trained now (its curve and checkpoint written as soon as training ends)."""
    checkpoint = checkpoint_path(folder, env.display, agent.display, seed)
    if checkpoint.exists():
        play_env = make(env.id, **env.kwargs)
        try:
            built = make_agent(agent.name, env=play_env, env_id=env.id, **agent.kwargs)
        finally:
            play_env.close()
        built.load(checkpoint)
        return built
    trained = _train(env, agent, seed)
    curve = getattr(trained, "learning_curve", None)
    if curve:
        append_learning_curve(folder, env.display, agent.display, seed, curve)
    if callable(getattr(trained, "save", None)) and callable(getattr(trained, "load", None)):
        # Saved under a temporary name, then renamed: a checkpoint is whole or absent.
        partial = checkpoint.with_name(f".{checkpoint.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        trained.save(partial)
        os.replace(partial, checkpoint)
    return trained


def _train(env: EnvEntry, agent: AgentEntry, seed: int) -> Any:
    train_env = make(env.id, **env.kwargs)
    try:
        built = make_agent(agent.name, env=train_env, env_id=env.id, **agent.kwargs)
        learn = getattr(built, "learn", None)
        if learn is None:
            raise ValueError(f"agent {agent.display!r} has a train budget but no learn() method")
        if hasattr(built, "reset"):
            built.reset(seed)
        learn(train_env, agent.train.budget)
    finally:
        train_env.close()
    return built


def append_learning_curve(
    folder: str | os.PathLike,
    env_id: str,
    agent: str,
    seed: int,
    curve: list[tuple[int, float]],
) -> None:
    """Append one training run's curve to ``<folder>/learning_curves.jsonl`` (flushed)."""
    record = {
        "env_id": env_id,
        "agent": agent,
        "seed": int(seed),
        "timesteps": [int(t) for t, _ in curve],
        "returns": [float(r) for _, r in curve],
    }
    path = Path(folder) / LEARNING_CURVES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():  # a run killed mid-write left a partial line: cut it off first
        data = path.read_bytes()
        with path.open("r+b") as file:
            file.truncate(data.rfind(b"\n") + 1)
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(record, separators=(",", ":")) + "\n")


def read_learning_curves(folder: str | os.PathLike) -> list[dict[str, Any]]:
    """The curves of ``<folder>/learning_curves.jsonl``, the latest per (env, agent, seed)."""
    latest = {
        (r["env_id"], r["agent"], int(r["seed"])): r
        for r in read_records(Path(folder) / LEARNING_CURVES_FILE)
    }
    return [latest[key] for key in sorted(latest)]


def write_outputs(records: list[Record], folder: Path, title: str) -> RunOutput:
    """Build and write ``scorecard.json``, ``scorecard.md`` and ``report.html`` for ``records``
    (the report includes the learning curves stored in ``folder``, if any)."""
    scorecard = build_scorecard(records)
    json_path, md_path = write_scorecard(scorecard, folder)
    html_path = write_report(
        scorecard, folder, title=title, learning_curves=read_learning_curves(folder)
    )
    return RunOutput(folder, scorecard, json_path, md_path, html_path)
