"""Speed of the Diplomacy env against the raw ``diplomacy`` engine (``docs/diplomacy.md``); prints
JSON.

    .venv/bin/python benchmarks/diplomacy_speed.py [--quick]

Two figures, each beside its reference or goal, with the ratio:

- ``seconds_per_phase``: seeded random games (uniform legal index per unit, to 1910) are played
  once through the env to record their actions; then the same games are replayed, timed, through
  ``env.step`` and through the raw engine (per phase ``get_all_possible_orders``,
  ``get_orderable_locations``, ``set_orders`` of the same orders, ``process``: what any agent
  loop over the bare engine does). Goal: env / engine <= 1.10. The raw engine is timed with its
  default ``set_orders`` (order expansion on) and with ``expand=False`` (what the env passes);
  the ratio to the latter isolates the env's own per-phase work. Each game's replays are
  interleaved and repeated, and the fastest of each kept, so background load hits all alike.
- ``games_per_minute``: whole random games capped at 1910 through the env, the random policy
  included; reference: a budget of under 0.5 s per game (120 games per minute).

Phase times are this process's CPU time (``time.process_time``), which other load on a shared
machine disturbs less than wall-clock time; games per minute are wall-clock. The process pins
itself to one core where the platform allows. A plain script: no timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import omnigym
import omnigym.envs.diplomacy  # noqa: F401  (registers Diplomacy/*)

GOAL_OVERHEAD = 1.10
REFERENCE_GAMES_PER_MINUTE = 120.0
MAX_YEAR = 1910


def random_action(observation: dict, rng: np.random.Generator) -> np.ndarray:
    """A uniform legal value per row of the mask (0 included)."""
    mask = observation["action_mask"]
    counts = mask.sum(axis=1)
    return (rng.random(len(counts)) * counts).astype(np.int64)


def play(env, seed: int) -> tuple[list[dict], int]:
    """One random game; returns its per-step actions and its number of phases."""
    rng = np.random.default_rng(seed)
    observations, _ = env.reset(seed=seed)
    steps = []
    while env.agents:
        actions = {agent: random_action(observations[agent], rng) for agent in env.agents}
        steps.append(actions)
        observations = env.step(actions)[0]
    return steps, len(steps)


def replay_env(env, seed: int, steps: list[dict]) -> float:
    env.reset(seed=seed)
    start = time.process_time()
    for actions in steps:
        env.step(actions)
    return time.process_time() - start


def replay_engine(game_class, orders: list[dict], expand: bool) -> float:
    game = game_class(map_name="standard")
    start = time.process_time()
    for phase_orders in orders:
        game.get_all_possible_orders()
        game.get_orderable_locations()
        for power, power_orders in phase_orders.items():
            if power_orders:
                game.set_orders(power, power_orders, expand=expand)
        game.process()
        if game.get_current_phase()[1:5] > str(MAX_YEAR):
            break
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 games, 5 repeats (else 10, 9)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    games, repeats = (3, 5) if args.quick else (10, 9)
    env = omnigym.make("Diplomacy/Standard-v0", max_year=MAX_YEAR)
    game_class = type(env.unwrapped.game)

    recorded = []
    for seed in range(games):
        steps, _ = play(env, seed)
        history = env.unwrapped.game.order_history
        orders = [dict(phase_orders) for phase_orders in history.values()]
        recorded.append((seed, steps, orders))
    phases = sum(len(steps) for _, steps, _ in recorded)

    totals = dict.fromkeys(("env", "engine", "engine_expand_false"), 0.0)
    for seed, steps, orders in recorded:
        best = dict.fromkeys(totals, np.inf)
        for _ in range(repeats):
            best["engine"] = min(best["engine"], replay_engine(game_class, orders, True))
            best["env"] = min(best["env"], replay_env(env, seed, steps))
            best["engine_expand_false"] = min(
                best["engine_expand_false"], replay_engine(game_class, orders, False)
            )
        for key in totals:
            totals[key] += best[key]
    per_phase = {key: value / phases for key, value in totals.items()}

    start = time.perf_counter()
    for seed in range(games):
        play(env, 1000 + seed)
    games_per_minute = games / (time.perf_counter() - start) * 60

    result = {
        "games": games,
        "phases": phases,
        "seconds_per_phase": {
            "env": round(per_phase["env"], 6),
            "engine": round(per_phase["engine"], 6),
            "engine_expand_false": round(per_phase["engine_expand_false"], 6),
            "ratio_env_to_engine": round(per_phase["env"] / per_phase["engine"], 3),
            "ratio_env_to_engine_expand_false": round(
                per_phase["env"] / per_phase["engine_expand_false"], 3
            ),
            "goal_ratio": GOAL_OVERHEAD,
        },
        "games_per_minute": {
            "env_random_play_to_1910": round(games_per_minute, 1),
            "reference": REFERENCE_GAMES_PER_MINUTE,
            "ratio": round(games_per_minute / REFERENCE_GAMES_PER_MINUTE, 2),
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
