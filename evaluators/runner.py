"""Run a scenario end to end: train what needs training, evaluate, write the scorecard.

The output folder holds ``episodes.jsonl`` (appended per episode, the resume log),
``scenario.yaml`` (the scenario as run), ``scorecard.json``, ``scorecard.md`` and
``report.html`` (written atomically at the end). Re-running the same scenario into the same
folder plays only the episodes that are missing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from omnigym.agent import make_agent
from omnigym.registry import make
from omnigym.scenario import AgentEntry, EnvEntry, Scenario

from .io import atomic_write_text
from .report import write_report
from .rollout import Record, evaluate
from .scorecard import build_scorecard, write_scorecard
from .store import EpisodeStore


@dataclass(frozen=True)
class RunOutput:
    """Where a finished run's files are, and its scorecard."""

    folder: Path
    scorecard: dict[str, Any]
    scorecard_json: Path
    scorecard_md: Path
    report_html: Path


def total_episodes(scenario: Scenario) -> int:
    """How many episodes the scenario plays in all."""
    return len(scenario.envs) * len(scenario.agents) * len(scenario.seeds) * scenario.episodes


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
    with EpisodeStore(out) as store:
        for env in scenario.envs:
            for agent in scenario.agents:
                records += _evaluate_agent(scenario, env, agent, store, on_episode)
    return write_outputs(records, out, title=scenario.name)


def _evaluate_agent(
    scenario: Scenario,
    env: EnvEntry,
    agent: AgentEntry,
    store: EpisodeStore,
    on_episode: Callable[[Record], None] | None,
) -> list[Record]:
    common = dict(
        episodes=scenario.episodes,
        env_kwargs=env.kwargs,
        workers=scenario.workers,
        label=agent.display,
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
            (env.id, agent.display, seed, episode) in store for episode in range(scenario.episodes)
        )
        trained: Any = agent.name
        if not done:
            trained = _train(env, agent, seed)
        records += evaluate(env.id, trained, seeds=[seed], agent_kwargs=agent.kwargs, **common)
    return records


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


def write_outputs(records: list[Record], folder: Path, title: str) -> RunOutput:
    """Build and write ``scorecard.json``, ``scorecard.md`` and ``report.html`` for ``records``."""
    scorecard = build_scorecard(records)
    json_path, md_path = write_scorecard(scorecard, folder)
    html_path = write_report(scorecard, folder, title=title)
    return RunOutput(folder, scorecard, json_path, md_path, html_path)
