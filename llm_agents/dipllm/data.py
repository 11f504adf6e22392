"""DipLLM-lite's training data: seeded games of the reference bots, recorded phase by phase,
and the data set of turns the model trains on.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025), which learns from DipNet's games; with no DipNet weights offline, the
games here are played by a mix of the scripted bots (:mod:`omnigym.agents.diplomacy.bots`)
capped at a year. One gzipped JSON line per phase holds the board text, the engine's own phase
record (``Game.get_phase_data()``, the entries of its saved-game format, from which a rollout
restarts the position) and, per power, the orderable locations in decoding order with their
legal orders and the order its bot chose (``<none>`` where it gave none). The earlier orders of
location d are the chosen orders of the locations before it.

Data games and Q rollouts (:mod:`omnigym.llm_agents.dipllm.q`) run in the workers of a pool
(:mod:`omnigym.pool`: local processes or Ray tasks; an experiment's, or local processes started
for the call), each of which builds one environment per (map, year cap, action format) on first use.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from omnigym.pool import Pool
from omnigym.processes import measured
from omnigym.threads import map_in_workers

from .text import BOS, NONE, Tokenizer, adjustment_count, board_view, choices, turn_text
from .weights import behaviour_weight


def map_jobs(
    function: Callable[[Any], Any],
    items: Sequence[Any],
    workers: int = 1,
    pool: Pool | None = None,
) -> Iterator[Any]:
    """``function`` over ``items``, in order: in ``pool`` when given, else in a pool of
    ``workers`` started for this call alone."""
    if pool is not None:
        return pool.map(function, items)
    return map_in_workers(workers, function, items)


def make_bot(name: str, seed: int) -> Any:
    """The reference bot ``name`` (greedy, defensive or random), seeded."""
    from omnigym.agents.diplomacy.bots import DefensiveBot, GreedySCBot, RandomBot

    classes = {"greedy": GreedySCBot, "defensive": DefensiveBot, "random": RandomBot}
    if name not in classes:
        raise ValueError(f"bot must be one of {list(classes)}, got {name!r}")
    return classes[name](seed=seed)


@dataclass(frozen=True)
class DataSpec:
    """How the training games are played: map, year cap and the bots' mix (name -> weight)."""

    games: int
    seed: int = 0
    max_year: int = 1910
    map_name: str = "standard"
    mix: tuple[tuple[str, float], ...] = (("greedy", 1.0), ("defensive", 1.0), ("random", 1.0))


def _env_id(map_name: str) -> str:
    from omnigym.envs.diplomacy.env import MAP_IDS

    if map_name not in MAP_IDS:
        raise ValueError(f"map_name must be one of {sorted(MAP_IDS)}, got {map_name!r}")
    return MAP_IDS[map_name]


_ENVS: dict[tuple[str, int, str], Any] = {}


def cached_env(map_name: str, max_year: int, action_format: str) -> Any:
    """One environment per (map, cap, action format) and process, built on first use."""
    key = (map_name, max_year, action_format)
    if key not in _ENVS:
        from omnigym.registry import make

        _ENVS[key] = make(_env_id(map_name), max_year=max_year, action_format=action_format)
    return _ENVS[key]


def play_data_game(spec: DataSpec, game: int) -> list[dict[str, Any]]:
    """Game ``game`` of the data: each power's bot drawn from ``spec.mix`` and everything seeded
    by ``SeedSequence([spec.seed, game])``; one record per phase (module docstring)."""
    env = cached_env(spec.map_name, spec.max_year, "index")
    names = [name for name, _ in spec.mix]
    weights = np.array([weight for _, weight in spec.mix], dtype=np.float64)
    env_seed, draw_seed, *bot_seeds = np.random.SeedSequence([spec.seed, game]).generate_state(9)
    rng = np.random.default_rng(int(draw_seed))
    powers = env.possible_agents
    drawn = rng.choice(len(names), size=len(powers), p=weights / weights.sum())
    bots = {power: names[i] for power, i in zip(powers, drawn, strict=True)}
    players = {p: make_bot(bots[p], int(s)) for p, s in zip(powers, bot_seeds, strict=True)}
    observations, infos = env.reset(seed=int(env_seed))
    records = []
    while env.agents:
        actions = {p: players[p].act(observations[p], infos[p]) for p in env.agents}
        some_info = infos[env.agents[0]]
        saved_phase = env.unwrapped.game.get_phase_data().to_dict()
        saved_phase["state"]["timestamp"] = len(records)  # not the wall clock: same seed, same file
        turns = {}
        for power in env.agents:
            info = infos[power]
            locations = info["orderable_locations"]
            if not locations:
                continue
            legal = [info["possible_orders"][location] for location in locations]
            values = actions[power][: len(locations)]
            turns[power] = {
                "locations": locations,
                "legal": legal,
                "orders": [
                    options[value - 1] if value else NONE
                    for options, value in zip(legal, values.tolist(), strict=True)
                ],
                "adjust": adjustment_count(info),
            }
        records.append(
            {
                "game": game,
                "phase_index": len(records),
                "phase": some_info["phase"],
                "map_name": spec.map_name,
                "max_year": spec.max_year,
                "bots": bots,
                "board": board_view(some_info["state"]),
                "saved_phase": saved_phase,
                "turns": turns,
            }
        )
        observations, _, _, _, infos = env.step(actions)
    return records


def generate_data(
    spec: DataSpec, path: str | os.PathLike, workers: int = 1, pool: Pool | None = None
) -> dict[str, Any]:
    """Play ``spec.games`` games and write their phase records to ``path`` (gzipped JSON lines,
    written under a temporary name and renamed when complete), in ``pool`` or in ``workers``
    processes (:func:`map_jobs`). Returns counts, wall seconds, and the CPU seconds and largest
    peak memory of the games, measured in the workers that played them."""
    start = time.perf_counter()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    phases = turns = 0
    cpu_seconds, peak_rss_mb = 0.0, 0.0
    with gzip.open(partial, "wt", encoding="utf-8") as file:
        jobs = [(spec, game) for game in range(spec.games)]
        for records, usage in map_jobs(_data_game_job, jobs, workers, pool):
            cpu_seconds += usage["cpu_seconds"]
            peak_rss_mb = max(peak_rss_mb, usage["peak_rss_mb"])
            for record in records:
                file.write(json.dumps(record, separators=(",", ":")) + "\n")
                phases += 1
                turns += len(record["turns"])
    os.replace(partial, target)
    return {
        "games": spec.games,
        "phases": phases,
        "turns": turns,
        "seconds": time.perf_counter() - start,
        "cpu_seconds": cpu_seconds,
        "peak_rss_mb": peak_rss_mb,
    }


def _data_game_job(job: tuple[DataSpec, int]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    with measured() as usage:
        records = play_data_game(*job)
    return records, usage


def read_phases(path: str | os.PathLike, games: int | None = None) -> Iterator[dict[str, Any]]:
    """The phase records of a data file, those of its first ``games`` games when given."""
    with gzip.open(path, "rt", encoding="utf-8") as file:
        for line in file:
            record = json.loads(line)
            if games is not None and record["game"] >= games:
                break
            yield record


@dataclass
class Turn:
    """One power's orders in one phase, as the model trains on them (orders as dataset ids;
    id 0 is ``<none>``)."""

    key: tuple[int, int, str]  # (game, phase index, power)
    tokens: np.ndarray  # <bos> + the board text
    locations: list[str]
    legal: list[np.ndarray]  # per location: its legal orders
    adjust: int  # builds (> 0) or removals (< 0) due; 0 outside adjustment phases
    chosen: list[int]  # per location: the behaviour's order (0: none)
    weights: np.ndarray  # per location: the training weight
    # location index -> its Q group: candidate order ids (the behaviour's first) and their Q
    groups: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    # location index -> the fine-tuning target over its group's candidates (the equilibrium
    # policy); a location without one is trained toward its chosen order
    targets: dict[int, np.ndarray] = field(default_factory=dict)

    def choices(self) -> list[tuple[np.ndarray, int]]:
        """Per location: the order ids it may take (:func:`.text.choices`) and the index of the
        chosen one among them."""
        result = []
        adjusted = 0
        for legal, chosen in zip(self.legal, self.chosen, strict=True):
            options = np.array(choices(legal.tolist(), self.adjust, adjusted, none=0))
            matches = np.flatnonzero(options == chosen)
            if not matches.size:
                raise ValueError(f"turn {self.key}: order id {chosen} is not among its choices")
            result.append((options, int(matches[0])))
            adjusted += chosen != 0
        return result


class Dataset:
    """A data file's turns, with orders interned as ids (``orders[i]``, word slots
    ``slots[i]``), so that hundreds of games fit in memory."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self.orders: list[str] = []
        self._ids: dict[str, int] = {}
        self._slots: list[np.ndarray] = []
        self._slot_array: np.ndarray | None = None
        self.turns: list[Turn] = []
        self.order_id(NONE)

    def order_id(self, order: str) -> int:
        found = self._ids.get(order)
        if found is None:
            found = self._ids[order] = len(self.orders)
            self.orders.append(order)
            self._slots.append(self.tokenizer.order_slots([order])[0])
            self._slot_array = None
        return found

    @property
    def slots(self) -> np.ndarray:
        """``(len(orders), MAX_ORDER_WORDS)`` word ids of every interned order."""
        if self._slot_array is None:
            self._slot_array = np.stack(self._slots)
        return self._slot_array

    @classmethod
    def load(
        cls, path: str | os.PathLike, tokenizer: Tokenizer, games: int | None = None
    ) -> Dataset:
        """The turns of the first ``games`` games of a data file (all when None)."""
        dataset = cls(tokenizer)
        for record in read_phases(path, games):
            for power, turn in record["turns"].items():
                dataset.add_turn(record, power, turn)
        if not dataset.turns:
            raise ValueError(f"{path}: no turns to train on (games={games})")
        return dataset

    def add_turn(self, record: Mapping[str, Any], power: str, turn: Mapping[str, Any]) -> Turn:
        locations = list(turn["locations"])
        text = turn_text(record["board"], power, locations)
        added = Turn(
            key=(int(record["game"]), int(record["phase_index"]), power),
            tokens=np.array([BOS, *self.tokenizer.encode(text)], dtype=np.int32),
            locations=locations,
            legal=[
                np.array([self.order_id(o) for o in legal], dtype=np.int32)
                for legal in turn["legal"]
            ],
            adjust=int(turn["adjust"]),
            chosen=[self.order_id(order) for order in turn["orders"]],
            weights=np.ones(len(locations)),
        )
        added.choices()  # the behaviour's orders must be among the choices
        self.turns.append(added)
        return added

    def set_weights(
        self, groups: Iterable[Mapping[str, Any]], lam: float, default: float = 1.0
    ) -> int:
        """Weight each decision by its Q group (:func:`.weights.behaviour_weight`, the
        behaviour target); decisions without one weigh ``default`` (0 leaves them out of the
        loss). Returns how many decisions got a Q weight."""
        by_key = {turn.key: turn for turn in self.turns}
        for turn in self.turns:
            turn.weights = np.full(len(turn.locations), float(default))
            turn.groups, turn.targets = {}, {}
        weighted = 0
        for group in groups:
            turn = by_key.get((group["game"], group["phase_index"], group["power"]))
            if turn is not None:
                turn.weights[turn.locations.index(group["location"])] = behaviour_weight(group, lam)
                weighted += 1
        return weighted

    def set_groups(self, groups: Iterable[Mapping[str, Any]]) -> int:
        """Attach each Q group to its decision (:attr:`Turn.groups`), which then weighs 1 while
        every other decision weighs 0 (it only conditions the later ones): the fine-tuning set
        of the equilibrium target. Returns how many decisions got a group."""
        by_key = {turn.key: turn for turn in self.turns}
        for turn in self.turns:
            turn.weights = np.zeros(len(turn.locations))
            turn.groups, turn.targets = {}, {}
        attached = 0
        for group in groups:
            turn = by_key.get((group["game"], group["phase_index"], group["power"]))
            if turn is None:
                continue
            d = turn.locations.index(group["location"])
            candidates = np.array([self.order_id(o) for o in group["candidates"]], dtype=np.int64)
            turn.groups[d] = (candidates, np.asarray(group["q"], dtype=np.float64))
            turn.weights[d] = 1.0
            attached += 1
        return attached

    def decisions(self) -> int:
        return sum(len(turn.locations) for turn in self.turns)

    def keep_weighted(self) -> None:
        """Keep only the turns with a decision of positive weight (the fine-tuning set)."""
        self.turns = [turn for turn in self.turns if turn.weights.any()]
