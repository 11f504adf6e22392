"""Rollouts: play episodes of one agent on one environment and record them.

:func:`evaluate` is the entry point. Episodes are identified by ``(seed, episode)``; each gets its
own environment seed and agent seed derived from that pair with NumPy's ``SeedSequence``, so a
result never depends on which worker played it or in which order. With ``workers > 1`` the
episodes run in the workers of a pool (:mod:`omnigym.pool`: local processes or Ray tasks), each of
which builds its environment and agent once per evaluation and then plays many episodes; a pool
kept across evaluations serves a whole scenario (:func:`play_in_pool`). With a ``store`` the run
resumes: stored episodes are skipped, new ones are appended and flushed one by one, also when the
run is interrupted. Each record carries the episode's wall time and the CPU seconds and peak
memory that the process which played it spent on it (:func:`omnigym.processes.measured`).
"""

from __future__ import annotations

import itertools
import pickle
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omnigym.agent import make_agent
from omnigym.pool import Pool, WorkerPool
from omnigym.processes import measured
from omnigym.registry import make, spec

from .store import EpisodeKey, EpisodeStore

Record = dict[str, Any]

MEASURED_KEYS = ("wall_time", "cpu_seconds", "peak_rss_mb")
"""The keys of an episode record that measure what it cost: the rest is the same on every run
of the same seeds, on any backend."""


def episode_seeds(seed: int, episode: int) -> tuple[int, int]:
    """The (environment seed, agent seed) of episode ``episode`` of run seed ``seed``."""
    env_seed, agent_seed = np.random.SeedSequence([seed, episode]).generate_state(2)
    return int(env_seed), int(agent_seed)


@dataclass(frozen=True)
class Job:
    """What a worker needs to rebuild the environment and the agent of one evaluation.

    ``agent`` is a registry name (built in each process) or an agent object (sent to each
    worker by pickling, e.g. an agent trained in the parent).
    """

    env_id: str
    agent: Any
    label: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    env_label: str | None = None

    def tag(self, record: Record) -> Record:
        """``record`` with the env name (the label, if any) and agent label in front; a labelled
        env's record also keeps the registered id as ``env_base``."""
        name = self.env_label or self.env_id
        base = {"env_base": self.env_id} if name != self.env_id else {}
        return {"env_id": name, "agent": self.label, **base, **record}

    def build(self) -> tuple[Any, Any]:
        env = make(self.env_id, **self.env_kwargs)
        if isinstance(self.agent, str):
            agent = make_agent(self.agent, env=env, env_id=self.env_id, **self.agent_kwargs)
        else:
            agent = self.agent
        return env, agent


def run_episode(env: Any, agent: Any, seed: int, episode: int) -> Record:
    """Play one episode and return its record (without env id and agent label); ``wall_time``,
    ``cpu_seconds`` and ``peak_rss_mb`` are what it cost this process."""
    env_seed, agent_seed = episode_seeds(seed, episode)
    start = time.perf_counter()
    with measured() as usage:
        reset_agent = getattr(agent, "reset", None)
        if reset_agent is not None:
            reset_agent(agent_seed)
        observation, info = env.reset(seed=env_seed)
        act, step = agent.act, env.step  # the loop below is the evaluator's hot path
        total_reward = 0.0
        total_cost = None
        length = 0
        while True:
            observation, reward, terminated, truncated, info = step(act(observation, info))
            total_reward += reward
            length += 1
            if "cost" in info:
                total_cost = (total_cost or 0.0) + float(info["cost"])
            if terminated or truncated:
                break
    success = info.get("success")
    normalized = info.get("normalized_score")
    return {
        "seed": seed,
        "episode": episode,
        "episode_seed": env_seed,
        "return": float(total_reward),
        "length": length,
        "success": None if success is None else bool(success),
        "cost": total_cost,
        "normalized_score": None if normalized is None else float(normalized),
        "metrics": {name: float(value) for name, value in info.get("metrics", {}).items()},
        "achievements": _achievements(info.get("achievements", ())),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "wall_time": time.perf_counter() - start,
        **usage,
    }


def _achievements(achievements: Any) -> dict[str, int] | list[str]:
    """The final step's achievements: a dict of unlock counts (Crafter's convention, Craft's
    OpenWorld) is kept whole, names at count 0 included, so success rates count every name; a
    list of unlocked names is kept sorted."""
    if isinstance(achievements, dict):
        return {str(name): int(count) for name, count in sorted(achievements.items())}
    return sorted(achievements)


def _close(job: Job, env: Any, agent: Any) -> None:
    env.close()
    # An agent built from its name is the evaluation's to close (engines, model servers).
    close_agent = getattr(agent, "close", None)
    if isinstance(job.agent, str) and close_agent is not None:
        close_agent()


_worker_state: dict[str, Any] = {}


def _worker_episodes(token: int, payload: bytes, tasks: list[tuple[int, int]]) -> list[Record]:
    """Play ``tasks`` of the evaluation ``token``; its environment and agent are built from
    ``payload`` (the pickled :class:`Job`) on this worker's first batch of it, and the previous
    evaluation's are closed then."""
    if _worker_state.get("token") != token:
        if "job" in _worker_state:
            _close(_worker_state["job"], _worker_state["env"], _worker_state["agent"])
            _worker_state.clear()
        job = pickle.loads(payload)
        _worker_state["env"], _worker_state["agent"] = job.build()
        _worker_state["job"], _worker_state["token"] = job, token
    job, env, agent = _worker_state["job"], _worker_state["env"], _worker_state["agent"]
    return [job.tag(run_episode(env, agent, seed, episode)) for seed, episode in tasks]


_tokens = itertools.count()


def play_in_pool(
    pool: Pool, job: Job, tasks: list[tuple[int, int]], collect: Callable[[Record], None]
) -> None:
    """Play ``tasks`` (``(seed, episode)`` pairs) of ``job`` in ``pool``'s workers, passing each
    record to ``collect`` as its batch comes back. ``job`` is pickled once and built at most once
    per worker. Interrupted (Ctrl-C, SIGTERM), it still passes on the batches already back."""
    token, payload = next(_tokens), pickle.dumps(job)
    # Episodes travel in small batches: one message per episode would cost the parent as much
    # CPU as a fast episode. A batch is at most 1/8 of a worker's share and at most 32 episodes,
    # so a killed run loses little, and at most 4 batches per worker are in flight.
    size = max(1, min(32, len(tasks) // (8 * pool.workers)))
    batches = iter([tasks[start : start + size] for start in range(0, len(tasks), size)])
    in_flight: set[Future] = set()
    back: list[Future] = []  # batches back, not yet passed on
    try:
        while True:
            for batch in itertools.islice(batches, 4 * pool.workers - len(in_flight)):
                in_flight.add(pool.submit(_worker_episodes, token, payload, batch))
            if not in_flight:
                break
            done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            back = list(done)
            while back:
                for record in back[-1].result():
                    collect(record)
                back.pop()
    except KeyboardInterrupt:
        # Stored episodes are never written twice, so a batch cut short is passed on whole.
        for future in back + [future for future in in_flight if future.done()]:
            if not future.cancelled() and future.exception() is None:
                for record in future.result():
                    collect(record)
        raise


def evaluate(
    env_id: str,
    agent: Any,
    episodes: int = 10,
    seeds: Sequence[int] = (0,),
    env_kwargs: dict[str, Any] | None = None,
    agent_kwargs: dict[str, Any] | None = None,
    workers: int = 1,
    label: str | None = None,
    env_label: str | None = None,
    store: EpisodeStore | None = None,
    on_episode: Callable[[Record], None] | None = None,
    pool: Pool | None = None,
) -> list[Record]:
    """Play ``episodes`` episodes for each of ``seeds`` and return their records.

    ``agent`` is a registry name (``"random"``, ``"oracle"``, ``"module:Class"``) or an agent
    object. Records are ordered by (seed, episode) and carry ``env_id`` (``env_label`` when given,
    with the registered id as ``env_base``) and ``agent`` (``label``,
    by default the agent's name or class name). Episodes already in ``store`` are not replayed;
    new ones are appended to it as they finish. ``on_episode`` is called after each new episode
    (progress bars). ``pool`` runs the episodes in that pool (:mod:`omnigym.pool`; its worker
    count replaces ``workers``; a one-worker local pool plays here); without one, ``workers > 1``
    starts a local pool for this call alone.
    """
    spec(env_id)  # unknown ids fail here, before any process starts
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if label is None:
        label = agent if isinstance(agent, str) else type(agent).__name__
    job = Job(env_id, agent, label, dict(env_kwargs or {}), dict(agent_kwargs or {}), env_label)
    name = env_label or env_id
    keys: list[EpisodeKey] = [
        (name, label, int(seed), episode) for seed in seeds for episode in range(episodes)
    ]
    todo = [key for key in keys if store is None or key not in store]
    fresh: dict[EpisodeKey, Record] = {}

    def collect(record: Record) -> None:
        fresh[(name, label, record["seed"], record["episode"])] = record
        if store is not None:
            store.append(record)
        if on_episode is not None:
            on_episode(record)

    tasks = [(seed, episode) for _, _, seed, episode in todo]
    if pool is not None and not pool.runs_here and todo:
        play_in_pool(pool, job, tasks, collect)
    elif todo and (workers == 1 or pool is not None):
        env, built_agent = job.build()
        try:
            for seed, episode in tasks:
                collect(job.tag(run_episode(env, built_agent, seed, episode)))
        finally:
            _close(job, env, built_agent)
    elif todo:
        with WorkerPool(workers) as own_pool:
            play_in_pool(own_pool, job, tasks, collect)
    if store is None:
        return [fresh[key] for key in keys]
    return store.select(keys)
