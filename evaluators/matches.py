"""1-vs-N matches on multi-agent environments, with seat rotation (``docs/diplomacy.md``).

The no-press Diplomacy literature (DipNet, Paquette et al., NeurIPS 2019; DORA/DNVI, Bakhtin et
al., NeurIPS 2021; DipLLM, Xu et al., ICML 2025) rates an agent by playing it against six copies
of a fixed opponent, rotating it over the seven powers, and reporting its mean sum-of-squares
score (SoS) with win, draw, survival and defeat rates. This module does that for any PettingZoo
``ParallelEnv`` id whose final ``infos[agent]["metrics"]`` carry ``sos``, ``won``, ``drawn``,
``survived``, ``eliminated``, ``centers``, ``invalid_orders`` and ``phases`` (the Diplomacy
environment's, ``docs/diplomacy.md``):

- :func:`play_match` plays one game between given agent objects and returns its record;
- :func:`one_vs_rest` plays ``games_per_seat`` games for each seat per run seed, the evaluated
  agent on that seat and fresh copies of the opponent on every other, and returns one record per
  game from the evaluated agent's side;
- :func:`summarize_matches` aggregates those records per (env, agent, opponent): mean and 95 %
  stratified bootstrap confidence interval (:func:`omnigym.evaluators.stats.summarize`, seats as
  strata) of SoS and of each rate, next to the equal-strength SoS 1/N.

Seeds follow :mod:`omnigym.evaluators.rollout`: game ``g`` of run seed ``s`` draws its
environment seed and one agent seed per seat from NumPy's ``SeedSequence([s, g])``, so a record
never depends on which worker played it or in which order. Games run in a pool
(:mod:`omnigym.pool`: local processes or Ray tasks; an experiment's own, or local processes
started for the call), in batches that each build their environment once.

Departure from the papers: they report the rates without confidence intervals, and their
opponents are learned agents; here the opponents are any registered agent (the reference bots
of :mod:`omnigym.agents.diplomacy.bots` by default in scenarios).
"""

from __future__ import annotations

import inspect
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omnigym.agent import make_agent
from omnigym.pool import Pool, WorkerPool
from omnigym.processes import measured
from omnigym.registry import EnvInfo, make, register, spec

from .stats import summarize

Record = dict[str, Any]
#: An agent as :func:`one_vs_rest` takes it: a registry name (``"diplomacy_greedy"``,
#: ``"module:Class"``) or a factory called with ``env=`` when it takes that argument.
AgentSpec = str | Callable[..., Any]

#: The final-step metrics a match record keeps, with their types.
METRICS: dict[str, type] = {
    "sos": float,
    "won": bool,
    "drawn": bool,
    "survived": bool,
    "eliminated": bool,
    "centers": int,
    "invalid_orders": int,
}

#: Rates reported by :func:`summarize_matches`: name -> the record field averaged.
RATES = {
    "win_rate": "won",
    "draw_rate": "drawn",
    "survival_rate": "survived",
    "defeat_rate": "eliminated",
}


def game_seeds(seed: int, game: int, seats: int) -> tuple[int, list[int]]:
    """The environment seed and the per-seat agent seeds of game ``game`` of run seed ``seed``."""
    env_seed, *agent_seeds = np.random.SeedSequence([seed, game]).generate_state(1 + seats)
    return int(env_seed), [int(agent_seed) for agent_seed in agent_seeds]


def play_match(
    env_id: str,
    agents: Mapping[str, Any],
    seed: int,
    env_kwargs: dict[str, Any] | None = None,
) -> Record:
    """Play one game of ``env_id`` with ``agents[seat]`` on each seat and return its record.

    The environment is reset with ``seed``; the agent on the i-th of ``possible_agents`` is
    reset with the i-th seed of ``SeedSequence(seed)``. The record holds ``env_id``, ``seed``,
    ``phases`` (environment steps), ``wall_time``, ``cpu_seconds`` and ``peak_rss_mb`` (what
    the game cost this process) and ``results``: seat -> that seat's final metrics
    (:data:`METRICS`).
    """
    env = make(env_id, **(env_kwargs or {}))
    try:
        _check_seats(env, agents)
        agent_seeds = np.random.SeedSequence(seed).generate_state(len(env.possible_agents))
        seeds = {seat: int(s) for seat, s in zip(env.possible_agents, agent_seeds, strict=True)}
        return {"env_id": env_id, "seed": seed, **_play(env, agents, seed, seeds)}
    finally:
        env.close()


def _check_seats(env: Any, agents: Mapping[str, Any]) -> None:
    if set(agents) != set(env.possible_agents):
        raise ValueError(
            f"agents must cover exactly the seats {sorted(env.possible_agents)}, "
            f"got {sorted(agents)}"
        )


def _play(
    env: Any, agents: Mapping[str, Any], env_seed: int, agent_seeds: Mapping[str, int]
) -> Record:
    """One game on an existing environment: phases, what it cost (wall time, and the CPU
    seconds and peak memory of this process: :func:`omnigym.processes.measured`) and each
    seat's final metrics."""
    start = time.perf_counter()
    with measured() as usage:
        for seat, agent in agents.items():
            reset_agent = getattr(agent, "reset", None)
            if reset_agent is not None:
                reset_agent(agent_seeds[seat])
        observations, infos = env.reset(seed=env_seed)
        results: dict[str, dict[str, Any]] = {}
        phases = 0
        while env.agents:
            actions = {s: agents[s].act(observations[s], infos[s]) for s in env.agents}
            observations, _, terminations, truncations, infos = env.step(actions)
            phases += 1
            for seat in actions:
                if terminations[seat] or truncations[seat]:
                    metrics = infos[seat]["metrics"]
                    results[seat] = {name: kind(metrics[name]) for name, kind in METRICS.items()}
    missing = sorted(set(agents) - set(results))
    if missing:
        raise RuntimeError(f"the game ended without final metrics for {missing}")
    return {
        "phases": phases,
        "wall_time": time.perf_counter() - start,
        **usage,
        "results": results,
    }


@dataclass(frozen=True)
class _Match:
    """What a worker needs to play the games of one 1-vs-rest evaluation."""

    env_info: EnvInfo
    agent: AgentSpec
    opponent: AgentSpec
    labels: tuple[str, str]
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def env_id(self) -> str:
        return self.env_info.id

    def play(self, env: Any, seed: int, game: int) -> Record:
        seats = list(env.possible_agents)
        seat = seats[game % len(seats)]
        env_seed, agent_seeds = game_seeds(seed, game, len(seats))
        agents = {
            other: _build(self.agent if other == seat else self.opponent, env, self.env_id)
            for other in seats
        }
        try:
            played = _play(env, agents, env_seed, dict(zip(seats, agent_seeds, strict=True)))
        finally:
            for agent in agents.values():
                close = getattr(agent, "close", None)
                if close is not None:
                    close()
        return {
            "env_id": self.env_id,
            "agent": self.labels[0],
            "opponent": self.labels[1],
            "seat": seat,
            "seed": seed,
            "game": game,
            "n_seats": len(seats),
            **played["results"][seat],
            "phases": played["phases"],
            **{key: played[key] for key in ("wall_time", "cpu_seconds", "peak_rss_mb")},
        }


def _build(agent: AgentSpec, env: Any, env_id: str) -> Any:
    if isinstance(agent, str):
        return make_agent(agent, env=env, env_id=env_id)
    try:
        takes_env = "env" in inspect.signature(agent).parameters
    except (TypeError, ValueError):
        takes_env = False
    return agent(env=env) if takes_env else agent()


def _label(agent: AgentSpec) -> str:
    return agent if isinstance(agent, str) else getattr(agent, "__name__", type(agent).__name__)


def one_vs_rest(
    env_id: str,
    agent: AgentSpec,
    opponent: AgentSpec,
    games_per_seat: int = 10,
    seeds: Sequence[int] = (0,),
    env_kwargs: dict[str, Any] | None = None,
    workers: int = 1,
    labels: tuple[str, str] | None = None,
    pool: Pool | None = None,
) -> list[Record]:
    """Play ``agent`` against copies of ``opponent`` on every seat in turn.

    For each run seed, games ``0 .. games_per_seat * N - 1`` are played (N seats); game ``g``
    puts ``agent`` on seat ``g mod N`` of ``possible_agents`` and a fresh ``opponent`` on every
    other seat, so each seat is played ``games_per_seat`` times. ``agent`` and ``opponent`` are
    registry names or factories (a fresh instance per seat and game; a factory must pickle to
    run in worker processes); ``labels`` names them in the records (default: the names, or the
    factories' ``__name__``). ``pool`` plays the games in that pool
    (:mod:`omnigym.pool`, local or Ray; an experiment's, serving all its matches; its worker
    count replaces ``workers``); without one, a local pool of ``workers`` is started for this
    call alone (one worker plays here). Returns one record per game, ordered by (seed, game):
    ``env_id, agent, opponent, seat, seed, game, n_seats``, the evaluated seat's
    :data:`METRICS`, ``phases``, ``wall_time``, ``cpu_seconds`` and ``peak_rss_mb``.
    """
    info = spec(env_id)  # unknown ids fail here, before anything is built
    if info.kind != "multi":
        raise ValueError(f"one_vs_rest needs a multi-agent environment; {env_id} is {info.kind}")
    if games_per_seat < 1:
        raise ValueError(f"games_per_seat must be >= 1, got {games_per_seat}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    match = _Match(
        info,
        agent,
        opponent,
        labels or (_label(agent), _label(opponent)),
        dict(env_kwargs or {}),
    )
    env = make(env_id, **match.env_kwargs)
    seats = len(env.possible_agents)
    env.close()
    tasks = [(seed, game) for seed in seeds for game in range(games_per_seat * seats)]
    if pool is None:
        with WorkerPool(workers) as own_pool:
            return _play_games(own_pool, match, tasks)
    return _play_games(pool, match, tasks)


def _play_games(pool: Pool, match: _Match, tasks: list[tuple[int, int]]) -> list[Record]:
    """The games of ``tasks`` in ``pool``, in batches that each build their environment once;
    the records come back in task order. Each game is seeded by its (seed, game) alone, so the
    batching changes no record."""
    size = len(tasks) if pool.workers == 1 else len(tasks) // (4 * pool.workers)
    size = max(1, size)
    batches = [(match, tasks[start : start + size]) for start in range(0, len(tasks), size)]
    return [record for records in pool.map(_play_batch, batches) for record in records]


def _play_batch(batch: tuple[_Match, list[tuple[int, int]]]) -> list[Record]:
    match, tasks = batch
    # The parent resolved the id; registering that record here makes an id work in a worker
    # even when importing omnigym alone does not register it.
    register(match.env_info)
    env = make(match.env_id, **match.env_kwargs)
    try:
        return [match.play(env, seed, game) for seed, game in tasks]
    finally:
        env.close()


def summarize_matches(records: Sequence[Record], n_resamples: int = 9999) -> dict[str, Any]:
    """Per env id, agent and opponent (``result[env_id][agent][opponent]``): the number of
    games (in all and per seat), the SoS summary of :func:`~omnigym.evaluators.stats.summarize`
    (mean, median, IQM, ``ci95``), the mean and ``ci95`` of each rate in :data:`RATES` and of
    the centres held at the end, the mean SoS per seat, and ``equal_strength_sos`` = 1/N, the
    expected SoS of an agent no stronger than its opponents (the N seats' scores sum to 1).
    Bootstraps are stratified by seat.
    """
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for record in records:
        groups[(record["env_id"], record["agent"], record["opponent"])].append(record)
    result: dict[str, Any] = {}
    for (env_id, agent, opponent), group in sorted(groups.items()):
        seats = [record["seat"] for record in group]
        by_seat: dict[str, list[float]] = defaultdict(list)
        for record in group:
            by_seat[record["seat"]].append(record["sos"])
        sos = [record["sos"] for record in group]
        result.setdefault(env_id, {}).setdefault(agent, {})[opponent] = {
            "games": len(group),
            "games_per_seat": {seat: len(values) for seat, values in sorted(by_seat.items())},
            "sos": summarize(sos, strata=seats, n_resamples=n_resamples),
            **{rate: _mean_ci(group, name, seats, n_resamples) for rate, name in RATES.items()},
            "centers": _mean_ci(group, "centers", seats, n_resamples),
            "sos_by_seat": {seat: float(np.mean(v)) for seat, v in sorted(by_seat.items())},
            "equal_strength_sos": 1.0 / group[0]["n_seats"],
        }
    return result


def _mean_ci(group: list[Record], name: str, seats: list[str], n_resamples: int) -> dict[str, Any]:
    """Mean and seat-stratified bootstrap ``ci95`` of the field ``name`` over ``group``."""
    values = [float(record[name]) for record in group]
    summary = summarize(values, strata=seats, n_resamples=n_resamples)
    return {"mean": summary["mean"], "ci95": summary["ci95"]}
