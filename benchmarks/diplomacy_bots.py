"""Games per minute of the Diplomacy bot round-robin capped at 1910 (goal: a game between
heuristic bots under 0.5 s, i.e. >= 120 games/min; ``docs/diplomacy.md``); prints JSON.

    .venv/bin/python benchmarks/diplomacy_bots.py [--quick] [--games N]

Each line-up (all seven seats one bot: random, greedy, defensive; and the three mixed) plays
``N`` games of ``Diplomacy/Standard-v0`` with ``max_year=1910`` and index actions, through
``omnigym.make``, seeds 0..N-1, after one warm-up game that loads the map and the bots' map
graph. Reported per line-up: games/min, phases/s, seconds per game, and the bots' own time per
``act`` call beside the environment's time per phase (the bots should cost a small fraction of
it). The process pins itself to one core where the platform allows. A plain script: no timing
is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import omnigym
import omnigym.envs.diplomacy  # noqa: F401  (registers Diplomacy/*)
from omnigym.agents.diplomacy.bots import DefensiveBot, GreedySCBot, RandomBot

GOAL_SECONDS_PER_GAME = 0.5
LINEUPS = {
    "random": [RandomBot],
    "greedy": [GreedySCBot],
    "defensive": [DefensiveBot],
    "mixed": [GreedySCBot, DefensiveBot, RandomBot],
}


def play(env, bots, seed: int) -> tuple[int, float, float, int]:
    """One game: (phases, wall seconds, seconds inside the bots' act, act calls)."""
    agents = {
        power: bots[i % len(bots)](seed=seed + i) for i, power in enumerate(env.possible_agents)
    }
    start = time.perf_counter()
    observations, infos = env.reset(seed=seed)
    phases, acting, calls = 0, 0.0, 0
    while env.agents:
        before = time.perf_counter()
        actions = {
            power: agents[power].act(observations[power], infos[power]) for power in env.agents
        }
        acting += time.perf_counter() - before
        calls += len(actions)
        observations, _, _, _, infos = env.step(actions)
        phases += 1
    return phases, time.perf_counter() - start, acting, calls


def measure(bots, games: int) -> dict[str, float]:
    env = omnigym.make("Diplomacy/Standard-v0", max_year=1910)
    play(env, bots, seed=10_000)  # warm-up: map, convoy table and map graph
    results = [play(env, bots, seed) for seed in range(games)]
    env.close()
    phases = sum(result[0] for result in results)
    wall = sum(result[1] for result in results)
    acting = sum(result[2] for result in results)
    calls = sum(result[3] for result in results)
    games_per_min = 60 * games / wall
    return {
        "games": games,
        "games_per_min": round(games_per_min, 1),
        "phases_per_s": round(phases / wall, 1),
        "s_per_game": round(wall / games, 3),
        "bot_ms_per_act": round(1000 * acting / calls, 3),
        "env_ms_per_phase": round(1000 * (wall - acting) / phases, 3),
        "goal": 60 / GOAL_SECONDS_PER_GAME,
        "ratio": round(games_per_min * GOAL_SECONDS_PER_GAME / 60, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 games per line-up (else 20)")
    parser.add_argument("--games", type=int, help="games per line-up (overrides --quick)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    games = args.games or (3 if args.quick else 20)
    results = {name: measure(bots, games) for name, bots in LINEUPS.items()}
    print(json.dumps({"max_year": 1910, "results": results}, indent=2))


if __name__ == "__main__":
    main()
