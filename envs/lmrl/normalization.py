"""LMRL-Gym's normalized score, and the tool that regenerates its constants.

Abdulhai et al. (ICML 2025) score a return R piecewise-linearly so that the task minimum maps to
0, the offline dataset's average return to 50 and the maximum to 100:

- R <= avg: 50 * (R - min) / (avg - min)
- R >  avg: 50 + 50 * (R - avg) / (max - avg)

The score is not clipped: an agent better than the oracle exceeds 100. The constants per env id
live in ``data/normalization.yaml``: ``min`` analytic, ``avg`` the mean return of the generated
offline dataset at its default size (:func:`dataset_average`), ``max`` the oracle's mean return
under the evaluation protocol (LMRL takes ``max`` from its own best or scripted runs; ours is
always the oracle). The oracles are agents, so the tool that regenerates the file lives with
them: ``python -m omnigym.agents.lmrl.normalization --recompute`` (``docs/lmrl.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

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


def dataset_average(env_id: str, episodes: int | None = None, seed: int = RECOMPUTE_SEED) -> float:
    """Mean return of the behaviour dataset of ``env_id`` (default size unless ``episodes``)."""
    # Imported here: the task modules import this one for the final-step score.
    from omnigym.envs.lmrl.datasets import behaviour_class, generate

    count = behaviour_class(env_id).default_episodes if episodes is None else episodes
    return float(np.mean([record["return"] for record in generate(env_id, count, seed)]))
