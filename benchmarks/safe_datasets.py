"""Seconds to generate and grid-filter 10^6 transitions of a Safe task (goal: < 120 s).

    .venv/bin/python benchmarks/safe_datasets.py [--env Safe/PointGoal1-v0] [--transitions N]

Times :func:`omnigym.envs.safety.datasets.generate` (scripted rollouts over the default (β, σ)
grid, then DSRL's grid filter and the references) for enough trajectories to make
``--transitions`` rows, then the HDF5 write separately. One core (pinned where the platform
allows); a warm-up trajectory loads the Numba kernel first. A plain script: no timing is
asserted anywhere. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

from omnigym.envs.safety import datasets

GOAL_SECONDS = 120.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Safe/PointGoal1-v0")
    parser.add_argument("--transitions", type=int, default=1_000_000)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    horizon = datasets.task_settings(args.env)["max_episode_steps"]
    n_traj = math.ceil(args.transitions / horizon)
    datasets.rollouts(args.env, 1, seed=0)
    start = time.perf_counter()
    generated = datasets.generate(args.env, n_traj=n_traj, seed=0)
    generate_seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        path = datasets.write_generated(generated, Path(folder))
        write_seconds = time.perf_counter() - start
        size = path.stat().st_size
    print(
        json.dumps(
            {
                "env_id": args.env,
                "rolled_out_transitions": n_traj * horizon,
                "rolled_out_trajectories": n_traj,
                "kept_trajectories": generated["stats"]["trajectories"],
                "generate_and_filter_seconds": round(generate_seconds, 2),
                "write_seconds": round(write_seconds, 2),
                "file_bytes": size,
                "transitions_per_second": round(n_traj * horizon / generate_seconds),
                "goal_seconds": GOAL_SECONDS,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
