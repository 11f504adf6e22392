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
from omnigym.registry import load_entry_point

CONSTANTS_PATH = Path(__file__).parent / "data" / "normalization.yaml"
SUMMARY_KEYS = ("mean", "median", "iqm")
RECOMPUTE_SEED = 0


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


def final_step_score(env_id: str, ret: float) -> float | None:
    """The normalized score an episode's final ``info`` carries: ``None`` while ``env_id`` has
    no constants yet (the only such moment is their first ``--recompute``)."""
    if env_id not in load_constants():
        return None
    return normalize(env_id, ret)


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


def _env_class(env_id: str) -> Any:
    return load_entry_point(omnigym.spec(env_id).entry_point)


def dataset_average(env_id: str, episodes: int | None = None, seed: int = RECOMPUTE_SEED) -> float:
    """Mean return of the behaviour dataset of ``env_id`` (default size unless ``episodes``)."""
    # Imported here: the task modules import this one for the final-step score.
    from omnigym.envs.lmrl.datasets import behaviour_class, generate

    count = behaviour_class(env_id).default_episodes if episodes is None else episodes
    return float(np.mean([record["return"] for record in generate(env_id, count, seed)]))


def oracle_returns(env_id: str, runs: int | None = None) -> list[float]:
    """The oracle's returns under ``env_id``'s evaluation protocol (its first ``runs`` runs)."""
    env = omnigym.make(env_id)
    oracle = omnigym.make_agent("oracle", env=env, env_id=env_id)
    returns = []
    try:
        for seed, options in _env_class(env_id).evaluation_runs()[:runs]:
            if hasattr(oracle, "reset"):
                oracle.reset(seed)
            observation, info = env.reset(seed=seed, options=options)
            done = False
            while not done:
                action = oracle.act(observation, info)
                observation, _, terminated, truncated, info = env.step(action)
                done = terminated or truncated
            returns.append(info["episode_return"])
    finally:
        env.close()
    return returns


def recompute(env_id: str) -> dict[str, float]:
    """The constants of ``env_id``, regenerated from its behaviour policy and its oracle."""
    return {
        "min": float(_env_class(env_id).min_return),
        "avg": round(dataset_average(env_id), 4),
        "max": round(float(np.mean(oracle_returns(env_id))), 4),
    }


_HEADER = """\
# LMRL normalized-score constants (spec lmrl.md section 6), written by
#   python -m omnigym.envs.lmrl.normalization --recompute [--only ENV_ID ...]
# min: the analytic minimum return (the env class's min_return).
# avg: mean return of the behaviour dataset (seed {seed}) at the behaviour's default size,
#   as written by `omnigym dataset ENV_ID --seed {seed} --out FILE`.
# max: mean return of the oracle agent over the env class's evaluation_runs() (for the Maze,
#   LMRL's 32 episodes from each of the 25 starts; otherwise reset seeds 0..N-1).
# Each entry records the sizes it was computed with.
"""


def write_constants(constants: Mapping[str, Mapping[str, Any]], path: Path = CONSTANTS_PATH):
    """Write the constants file with its provenance header."""
    body = yaml.safe_dump(
        {"constants": {k: dict(v) for k, v in sorted(constants.items())}}, sort_keys=False
    )
    path.write_text(_HEADER.format(seed=RECOMPUTE_SEED) + body, encoding="utf-8")
    load_constants.cache_clear()


def main(argv: list[str] | None = None) -> None:
    from omnigym.envs.lmrl.datasets import behaviour_class, dataset_env_ids

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--recompute", action="store_true", help="regenerate data/normalization.yaml"
    )
    parser.add_argument("--only", nargs="+", metavar="ENV_ID", choices=dataset_env_ids())
    args = parser.parse_args(argv)
    if args.recompute:
        data = yaml.safe_load(CONSTANTS_PATH.read_text(encoding="utf-8")) or {}
        constants = dict(data.get("constants", {}))
        for env_id in args.only or dataset_env_ids():
            constants[env_id] = {
                **recompute(env_id),
                "dataset_episodes": behaviour_class(env_id).default_episodes,
                "oracle_episodes": len(_env_class(env_id).evaluation_runs()),
            }
            print(env_id, constants[env_id], flush=True)
        write_constants(constants)
    else:
        print(yaml.safe_dump(load_constants(), sort_keys=False), end="")


if __name__ == "__main__":
    main()
