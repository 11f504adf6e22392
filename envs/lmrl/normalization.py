"""LMRL-Gym's normalized score, and the tool that regenerates its constants.

Abdulhai et al. (ICML 2025) score a return R piecewise-linearly so that the task minimum maps to
0, the offline dataset's average return to 50 and the maximum to 100:

- R <= avg: 50 * (R - min) / (avg - min)
- R >  avg: 50 + 50 * (R - avg) / (max - avg)

The score is not clipped: an agent better than the oracle exceeds 100. The constants per env id
live in ``data/normalization.yaml``: ``min`` analytic, ``avg`` the mean return of the generated
offline dataset at its default size, ``max`` the oracle's mean return under the evaluation
protocol (LMRL takes ``max`` from its own best or scripted runs; ours is always the oracle).
``python -m omnigym.envs.lmrl.normalization --recompute`` regenerates the file.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

import omnigym

CONSTANTS_PATH = Path(__file__).parent / "data" / "normalization.yaml"
SUMMARY_KEYS = ("mean", "median", "iqm")

MAZE_STARTS_EPISODES = 32
"""LMRL's maze protocol: 32 episodes from each of the 25 starts."""
WORDLE_ORACLE_EPISODES = 2000
"""Wordle oracle episodes (seeds 0..1999) behind ``max``; LMRL does not state its count."""
RECOMPUTE_SEED = 0
MINIMA = {"LMRL/MazeFO-v0": -101.0, "LMRL/MazePO-v0": -101.0, "LMRL/Wordle-v0": -6.0}
DATASET_TASKS = {
    "LMRL/MazeFO-v0": "maze_fo",
    "LMRL/MazePO-v0": "maze_po",
    "LMRL/Wordle-v0": "wordle",
}


def normalized_score(ret: float, minimum: float, average: float, maximum: float) -> float:
    """LMRL's piecewise-linear score of the return ``ret`` (0 at min, 50 at avg, 100 at max)."""
    if ret <= average:
        return 50.0 * (ret - minimum) / (average - minimum)
    return 50.0 + 50.0 * (ret - average) / (maximum - average)


@cache
def load_constants(path: Path = CONSTANTS_PATH) -> dict[str, dict[str, float]]:
    """``{env_id: {"min", "avg", "max"}}`` from the constants file (cached)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {
        env_id: {key: float(entry[key]) for key in ("min", "avg", "max")}
        for env_id, entry in data["constants"].items()
    }


def constants_for(env_id: str, constants: Mapping[str, float] | None = None) -> dict[str, float]:
    """The ``min``/``avg``/``max`` of ``env_id``, or ``constants`` when given explicitly."""
    if constants is not None:
        return {key: float(constants[key]) for key in ("min", "avg", "max")}
    table = load_constants()
    if env_id not in table:
        raise ValueError(
            f"no LMRL normalization constants for {env_id!r} (known: {', '.join(sorted(table))})"
        )
    return table[env_id]


def normalize(env_id: str, ret: float, constants: Mapping[str, float] | None = None) -> float:
    """The normalized score of the return ``ret`` on ``env_id``."""
    c = constants_for(env_id, constants)
    return normalized_score(float(ret), c["min"], c["avg"], c["max"])


def normalize_summary(
    env_id: str, summary: Mapping[str, Any], constants: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """Normalize a summary of returns ``{"mean", "median", "iqm", "ci95": [lo, hi]}``.

    The score is monotone increasing in the return, so the interval's bounds map to the
    normalized interval's bounds; keys that are absent stay absent.
    """
    c = constants_for(env_id, constants)
    result: dict[str, Any] = {
        key: normalized_score(float(summary[key]), c["min"], c["avg"], c["max"])
        for key in SUMMARY_KEYS
        if key in summary
    }
    if "ci95" in summary:
        low, high = summary["ci95"]
        result["ci95"] = [
            normalized_score(float(low), c["min"], c["avg"], c["max"]),
            normalized_score(float(high), c["min"], c["avg"], c["max"]),
        ]
    return result


# -- regenerating the constants ---------------------------------------------------------------


def dataset_average(env_id: str, episodes: int | None = None, seed: int = RECOMPUTE_SEED) -> float:
    """Mean return of the behaviour dataset of ``env_id`` (default size unless ``episodes``)."""
    # Imported here: the task modules import this one for the final-step score.
    from omnigym.envs.lmrl.datasets import DEFAULT_EPISODES, generate

    task = DATASET_TASKS[env_id]
    count = DEFAULT_EPISODES[task] if episodes is None else episodes
    return float(np.mean([record["return"] for record in generate(task, count, seed)]))


def oracle_returns(env_id: str, episodes: int | None = None) -> list[float]:
    """The oracle's returns under the evaluation protocol of ``env_id``.

    Maze: ``MAZE_STARTS_EPISODES`` episodes from each start (``episodes`` overrides the count
    per start); Wordle: ``WORDLE_ORACLE_EPISODES`` episodes (or ``episodes``) with seeds 0, 1, ...
    """
    from omnigym.envs.lmrl.maze import load_layout

    env = omnigym.make(env_id)
    oracle = omnigym.make_agent("oracle", env=env, env_id=env_id)
    if env_id.startswith("LMRL/Maze"):
        per_start = MAZE_STARTS_EPISODES if episodes is None else episodes
        runs = [
            (index * per_start + repeat, {"start": start})
            for index, start in enumerate(load_layout().starts)
            for repeat in range(per_start)
        ]
    else:
        count = WORDLE_ORACLE_EPISODES if episodes is None else episodes
        runs = [(seed, {}) for seed in range(count)]
    returns = []
    for seed, options in runs:
        oracle.reset(seed)
        observation, info = env.reset(seed=seed, options=options)
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(oracle.act(observation, info))
            done = terminated or truncated
        returns.append(info["episode_return"])
    env.close()
    return returns


def recompute() -> dict[str, dict[str, float]]:
    """Every constant, regenerated from the dataset generator and the oracles."""
    return {
        env_id: {
            "min": minimum,
            "avg": round(dataset_average(env_id), 4),
            "max": round(float(np.mean(oracle_returns(env_id))), 4),
        }
        for env_id, minimum in MINIMA.items()
    }


_HEADER = """\
# LMRL normalized-score constants (spec lmrl.md section 6), written by
#   python -m omnigym.envs.lmrl.normalization --recompute
# min: the analytic minimum return (Maze: 100 moves at -1 and -1 for the cap; Wordle: 6 x -1).
# avg: mean return of the behaviour dataset made by
#   python -m omnigym.envs.lmrl.datasets --task TASK --seed {seed} --episodes N
#   at the default sizes ({sizes})
#   of spec section 4 (Wordle scaled down from LMRL's 1M episodes).
# max: mean return of the oracle agent under the evaluation protocol: Maze, {maze} episodes from
#   each of the 25 starts (LMRL's protocol; the oracles are deterministic); Wordle, {wordle}
#   episodes with reset seeds 0..{wordle_last}.
"""


def write_constants(constants: Mapping[str, Mapping[str, float]], path: Path = CONSTANTS_PATH):
    """Write the constants file with its provenance header."""
    from omnigym.envs.lmrl.datasets import DEFAULT_EPISODES

    header = _HEADER.format(
        seed=RECOMPUTE_SEED,
        sizes=", ".join(f"{task} {count}" for task, count in DEFAULT_EPISODES.items()),
        maze=MAZE_STARTS_EPISODES,
        wordle=WORDLE_ORACLE_EPISODES,
        wordle_last=WORDLE_ORACLE_EPISODES - 1,
    )
    body = yaml.safe_dump(
        {"constants": {k: dict(v) for k, v in constants.items()}}, sort_keys=False
    )
    path.write_text(header + body, encoding="utf-8")
    load_constants.cache_clear()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--recompute", action="store_true", help="regenerate data/normalization.yaml"
    )
    args = parser.parse_args(argv)
    if args.recompute:
        constants = recompute()
        write_constants(constants)
        print(yaml.safe_dump(constants, sort_keys=False), end="")
    else:
        print(yaml.safe_dump(load_constants(), sort_keys=False), end="")


if __name__ == "__main__":
    main()
