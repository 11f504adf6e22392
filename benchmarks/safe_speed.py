"""Steps per second of every Safe task on one core (goal: >= 50,000 each); prints JSON.

    .venv/bin/python benchmarks/safe_speed.py [--quick] [--ids ID ...]

Each id is measured through its raw environment (``env.unwrapped``, no Gymnasium wrappers) with
uniform random actions drawn beforehand from a seeded generator; episodes that end are reset
inside the timed loop. A warm-up of one episode first loads or compiles the Numba kernel. The
process pins itself to one core where the platform allows. A plain script: no timing is
asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import omnigym
import omnigym.envs.safety  # noqa: F401  (registers Safe/*)

GOAL = 50_000


def steps_per_second(env_id: str, steps: int) -> float:
    env = omnigym.make(env_id).unwrapped
    rng = np.random.default_rng(0)
    shape = (steps, *env.action_space.shape)
    actions = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    env.reset(seed=0)
    for action in actions[: env.horizon]:
        env.step(action)
    env.reset(seed=1)
    start = time.perf_counter()
    for action in actions:
        truncated = env.step(action)[3]
        if truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 steps per id (else 50,000)")
    parser.add_argument("--ids", nargs="*", help="ids to measure (default: every Safe id)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    ids = args.ids or [info.id for info in omnigym.list_envs(family="Safe")]
    steps = 5_000 if args.quick else 50_000
    results = {}
    for env_id in ids:
        rate = steps_per_second(env_id, steps)
        results[env_id] = {"steps_per_s": round(rate), "goal": GOAL, "ratio": round(rate / GOAL, 2)}
    print(json.dumps({"steps": steps, "results": results}, indent=2))


if __name__ == "__main__":
    main()
