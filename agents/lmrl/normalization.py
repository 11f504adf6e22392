"""Regenerates LMRL-Gym's normalized-score constants from the behaviour datasets and the oracles.

LMRL-Gym (Abdulhai et al., ICML 2025) scores a return 0 at the task's minimum, 50 at the
offline dataset's average and 100 at the maximum (:mod:`omnigym.envs.lmrl.normalization`, which
reads the constants from ``envs/lmrl/data/normalization.yaml``). Here ``min`` is the env class's
analytic ``min_return``, ``avg`` the mean return of the behaviour dataset at its default size
(:func:`~omnigym.envs.lmrl.normalization.dataset_average`) and ``max`` the mean return of the
task's ``oracle`` over the env class's ``evaluation_runs()`` (:func:`oracle_returns`). The
oracles are agents (this package), so the tool that runs them lives here, above the tasks::

    python -m omnigym.agents.lmrl.normalization                 # print the constants
    python -m omnigym.agents.lmrl.normalization --recompute [--only ENV_ID ...]

Chess and Endgames take minutes of Stockfish time; the other tasks seconds (``docs/lmrl.md``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

import omnigym
from omnigym.envs.lmrl.datasets import behaviour_class, dataset_env_ids
from omnigym.envs.lmrl.normalization import (
    CONSTANTS_PATH,
    RECOMPUTE_SEED,
    dataset_average,
    load_constants,
)
from omnigym.registry import load_entry_point


def _env_class(env_id: str) -> Any:
    """The environment class of ``env_id`` (its ``min_return`` and ``evaluation_runs()``)."""
    return load_entry_point(omnigym.spec(env_id).entry_point)


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
# LMRL-Gym's normalized-score constants (docs/lmrl.md), written by
#   python -m omnigym.agents.lmrl.normalization --recompute [--only ENV_ID ...]
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
