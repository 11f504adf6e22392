"""DipLLM-lite's unit-level Q, estimated by Monte Carlo rollouts of the bots.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025), whose equilibrium target needs Q^d, the value of a location's order
given the earlier units' orders. For a (state, earlier orders, candidate order) triple the
position is reloaded into a fresh environment from the saved phase (``reset(options={"saved_game":
...})``), the candidate is fixed, the power's later units take the orders its rollout bot gives
them, and every power is then played by a bot: the bots of the data game
(``continuation="data"``) or one bot for all seven (``"greedy"``, ...). The game is rolled on for
``horizon_years`` years (to the first phase of year start + horizon) and valued by the change in
the power's supply centres, or by its sum-of-squares score when the game ends first (the cap);
averaged over ``rollouts`` rollouts. Rollout ``i`` of a group draws the same seeds whatever the
candidate (common random numbers), so the differences between candidates are estimated with
less noise than the values themselves (:mod:`.noise` measures both). Candidates are the
behaviour's order, the ``top_k`` most likely other orders of the current policy (a trained
factorised checkpoint) and ``sampled`` more drawn from it in proportion to their probabilities
(without one, ``top_k + sampled`` other legal orders drawn uniformly); each group records the
policy's probabilities of its candidates (``base``) and every rollout's value (``values``).

Departures from the paper: the bots are the rollout policy (a first round of the policy
improvement; no further rounds), and Q is estimated only for movement-phase decisions, for a
seeded sample of ``groups`` of them within the run's CPU budget.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnigym.envs.diplomacy.orders import order_location
from omnigym.pool import Pool
from omnigym.processes import measured

from .config import QConfig
from .data import Dataset, cached_env, make_bot, map_jobs, read_phases
from .model import DipLLMModel
from .text import Tokenizer
from .training import rank_choices


@dataclass(frozen=True)
class RolloutTask:
    """One (state, location) group: the position, who plays it, the orders around the location
    and the candidate orders to value."""

    game: int
    phase_index: int
    power: str
    location: str
    phase: str
    map_name: str
    max_year: int
    saved_phase: dict[str, Any]
    bots: dict[str, str]
    earlier: tuple[str, ...]  # the behaviour's orders of the locations before
    later: tuple[str, ...]  # the locations after (ordered by their rollout bot)
    behaviour: str
    candidates: tuple[str, ...]
    base: tuple[float, ...] | None  # the policy's probability of each candidate
    rollouts: int
    horizon_years: int
    seed: int
    continuation: str = "data"

    @property
    def key(self) -> tuple[int, int, str, str]:
        return (self.game, self.phase_index, self.power, self.location)


def select_groups(
    path: str | os.PathLike, config: QConfig, games: int | None = None
) -> list[tuple[int, int, str, str]]:
    """The (game, phase index, power, location) groups to estimate: movement-phase decisions
    with at least two legal orders, ``config.groups`` of them drawn uniformly (seeded)."""
    pool = [
        (record["game"], record["phase_index"], power, location)
        for record in read_phases(path, games)
        if record["phase"][-1] == "M"
        for power, turn in record["turns"].items()
        for location, legal in zip(turn["locations"], turn["legal"], strict=True)
        if len(legal) >= 2
    ]
    if config.groups is not None and config.groups < len(pool):
        rng = np.random.default_rng(np.random.SeedSequence([config.seed, 2]))
        pool = [pool[i] for i in np.sort(rng.choice(len(pool), config.groups, replace=False))]
    return pool


def rollout_tasks(
    path: str | os.PathLike,
    config: QConfig,
    policy: DipLLMModel | None = None,
    tokenizer: Tokenizer | None = None,
    games: int | None = None,
) -> list[RolloutTask]:
    """The groups of :func:`select_groups` with their candidates: the behaviour's order, the
    ``top_k`` most probable others under ``policy`` (with its ``tokenizer``) and ``sampled``
    others drawn from it, or ``top_k + sampled`` others drawn uniformly without a policy."""
    wanted: dict[tuple[int, int, str], list[str]] = {}
    for game, phase_index, power, location in select_groups(path, config, games):
        wanted.setdefault((game, phase_index, power), []).append(location)
    tasks = []
    for record in read_phases(path, games):
        for power, turn in record["turns"].items():
            locations = wanted.get((record["game"], record["phase_index"], power))
            if not locations:
                continue
            ranked = None
            if policy is not None:
                scratch = Dataset(tokenizer)
                ranked = rank_choices(policy, scratch, scratch.add_turn(record, power, turn))
            for location in locations:
                d = turn["locations"].index(location)
                behaviour = turn["orders"][d]
                power_index = sorted(record["bots"]).index(power)
                seed = [config.seed, record["game"], record["phase_index"], power_index, d]
                rng = np.random.default_rng(np.random.SeedSequence(seed))
                if ranked is not None:
                    candidates, base = _policy_candidates(ranked[d], behaviour, config, rng)
                else:
                    others = [o for o in turn["legal"][d] if o != behaviour]
                    others = [others[i] for i in rng.permutation(len(others))]
                    candidates, base = (behaviour, *others[: config.top_k + config.sampled]), None
                tasks.append(
                    RolloutTask(
                        game=record["game"],
                        phase_index=record["phase_index"],
                        power=power,
                        location=location,
                        phase=record["phase"],
                        map_name=record["map_name"],
                        max_year=record["max_year"],
                        saved_phase=record["saved_phase"],
                        bots=record["bots"],
                        earlier=tuple(turn["orders"][:d]),
                        later=tuple(turn["locations"][d + 1 :]),
                        behaviour=behaviour,
                        candidates=candidates,
                        base=base,
                        rollouts=config.rollouts,
                        horizon_years=config.horizon_years,
                        seed=config.seed,
                        continuation=config.continuation,
                    )
                )
    return tasks


def _policy_candidates(
    ranked: Sequence[tuple[str, float]], behaviour: str, config: QConfig, rng: np.random.Generator
) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The behaviour's order, the ``top_k`` most probable others and ``sampled`` others drawn
    from the rest in proportion to their probabilities; with each one's probability."""
    probability = dict(ranked)
    others = [order for order, _ in ranked if order != behaviour]
    chosen, rest = others[: config.top_k], others[config.top_k :]
    draws = min(config.sampled, len(rest))
    if draws:
        weights = np.array([probability[order] for order in rest]) + 1e-12
        picks = rng.choice(len(rest), size=draws, replace=False, p=weights / weights.sum())
        chosen += [rest[i] for i in sorted(picks)]
    candidates = (behaviour, *chosen)
    return candidates, tuple(probability[order] for order in candidates)


def rollout_value(task: RolloutTask, candidate: str, rollout: int) -> float:
    """One rollout of ``candidate`` (module docstring): the power's change in supply centres at
    the first phase of year start + horizon, or its sum-of-squares score if the game ends
    first. Rollout ``i`` of a group draws the same seeds whatever the candidate."""
    env = cached_env(task.map_name, task.max_year, "orders")
    powers = env.possible_agents
    seeds = np.random.SeedSequence(
        [task.seed, task.game, task.phase_index, powers.index(task.power), rollout]
    ).generate_state(1 + len(powers))
    saved = {"id": f"dipllm-q-{task.game}", "map": task.map_name, "phases": [task.saved_phase]}
    observations, infos = env.reset(seed=int(seeds[0]), options={"saved_game": saved})
    bots = task.bots if task.continuation == "data" else dict.fromkeys(powers, task.continuation)
    players = {p: make_bot(bots[p], int(s)) for p, s in zip(powers, seeds[1:], strict=True)}
    power = task.power
    start_centres = len(infos[power]["state"]["centers"][power])
    end_year = int(task.phase[1:-1]) + task.horizon_years
    actions = {p: players[p].act(observations[p], infos[p]) for p in env.agents}
    planned = {order_location(order): order for order in actions[power]}
    later = [planned[location] for location in task.later if location in planned]
    actions[power] = [*task.earlier, candidate, *later]
    while True:
        observations, _, terminations, truncations, infos = env.step(actions)
        if terminations[power] or truncations[power]:
            if env.agents:  # eliminated while the game goes on
                return float(-start_centres)
            return float(infos[power]["metrics"]["sos"])
        state = infos[power]["state"]
        if int(state["name"][1:-1]) >= end_year:
            return float(len(state["centers"][power]) - start_centres)
        actions = {p: players[p].act(observations[p], infos[p]) for p in env.agents}


def group_values(task: RolloutTask) -> dict[str, Any]:
    """Q of each candidate of ``task``: the mean of its ``task.rollouts`` rollout values (each
    kept in ``values``)."""
    values = [
        [rollout_value(task, candidate, i) for i in range(task.rollouts)]
        for candidate in task.candidates
    ]
    return {
        "game": task.game,
        "phase_index": task.phase_index,
        "power": task.power,
        "location": task.location,
        "phase": task.phase,
        "behaviour": task.behaviour,
        "candidates": list(task.candidates),
        "base": None if task.base is None else list(task.base),
        "q": [float(np.mean(row)) for row in values],
        "values": values,
        "rollouts": task.rollouts,
        "horizon_years": task.horizon_years,
        "continuation": task.continuation,
    }


def _measured_group_values(task: RolloutTask) -> tuple[dict[str, Any], dict[str, float]]:
    with measured() as usage:
        group = group_values(task)
    return group, usage


def read_q(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The groups of a Q file (JSON lines; a partial last line is skipped)."""
    file = Path(path)
    if not file.exists():
        return []
    text = file.read_text(encoding="utf-8")
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def estimate_q(
    tasks: Sequence[RolloutTask],
    path: str | os.PathLike,
    workers: int = 1,
    on_group: Callable[[dict[str, Any]], None] | None = None,
    pool: Pool | None = None,
    usage: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Value every task's candidates, in ``pool`` or in ``workers`` processes
    (:func:`.data.map_jobs`), and append each group to the JSON-lines file ``path`` as it is
    done (flushed); groups already in the file are kept and not estimated again, so a killed
    estimation resumes. Returns the groups of ``tasks`` in task order. ``usage``, when given,
    receives the ``cpu_seconds`` (summed) and ``peak_rss_mb`` (largest) of the groups estimated
    now, measured in the workers that estimated them."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    for group in read_q(file):
        done[(group["game"], group["phase_index"], group["power"], group["location"])] = group
    if file.exists():  # cut off a partial last line before appending
        data = file.read_bytes()
        with file.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)
    todo = [task for task in tasks if task.key not in done]
    with file.open("a", encoding="utf-8") as handle:
        spent = {"cpu_seconds": 0.0, "peak_rss_mb": 0.0}
        for group, cost in map_jobs(_measured_group_values, todo, workers, pool):
            spent["cpu_seconds"] += cost["cpu_seconds"]
            spent["peak_rss_mb"] = max(spent["peak_rss_mb"], cost["peak_rss_mb"])
            if usage is not None:
                usage.update(spent)
            handle.write(json.dumps(group, separators=(",", ":")) + "\n")
            handle.flush()
            done[(group["game"], group["phase_index"], group["power"], group["location"])] = group
            if on_group is not None:
                on_group(group)
    return [done[task.key] for task in tasks]
