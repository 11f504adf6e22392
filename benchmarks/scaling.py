"""Throughput of the pool backends: episodes per second at 1 and 2 workers, local and Ray.

    .venv/bin/python benchmarks/scaling.py [--out benchmarks/results/scaling.json] [--repeats 3]

A fixed evaluation (:data:`SCALING`: random play on ``Safe/PointGoal1-v0``, about 15 ms of CPU
per episode, so the episodes' work outweighs the pool's) is timed with the local backend at 1
worker (played in this process) and 2 workers, and with Ray at 2 workers on a Ray instance
started here; each as episodes per second and as a ratio to 1 worker (on 2 free cores the goal
is at least 1.7 for both backends). Ray's overhead per episode is the difference between Ray's
and the local backend's seconds per episode at 2 workers, on the fixed evaluation and on one of
short episodes (:data:`OVERHEAD`: random play on ``LMRL/MazeFO-v0``, under 1 ms of CPU each),
where the pool's own cost shows. Ray's start-up (``ray.init`` of a local instance) is timed
apart, and so is each backend's cost per job, the round trip of an empty job (:data:`JOBS` of
them through ``Pool.map``, two workers): an episode's share of it is that over the batch size,
up to 32 episodes per job. Each figure is the fastest of ``--repeats`` runs. Other work on a
shared machine lowers the ratios, so the load average is recorded before and after, and
``cores_used`` gives, per configuration, the CPU seconds the episodes got in their workers (the
records' ``cpu_seconds``) per wall second: a ratio below 1.7 with ``cores_used`` near 2 would be
the pool's fault, one with ``cores_used`` well below 2 is the machine's. A plain script: nothing
is asserted. Prints the JSON it writes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from omnigym.evaluators.rollout import evaluate
from omnigym.io import atomic_write_text
from omnigym.pool import Pool, make_pool

SCALING = {"env_id": "Safe/PointGoal1-v0", "agent": "random", "episodes": 192}
OVERHEAD = {"env_id": "LMRL/MazeFO-v0", "agent": "random", "episodes": 400}
JOBS = 200


def seconds(pool: Pool, case: dict[str, Any], repeats: int) -> tuple[float, float]:
    """The fastest of ``repeats`` evaluations of ``case`` in ``pool`` (each a fresh seed, so
    nothing is cached; the first one's worker start-up is not counted): its wall seconds and
    the CPU seconds its episodes took in the workers."""
    evaluate(case["env_id"], case["agent"], episodes=2 * pool.workers, seeds=[99], pool=pool)
    best = (float("inf"), 0.0)
    for repeat in range(repeats):
        start = time.perf_counter()
        records = evaluate(
            case["env_id"], case["agent"], episodes=case["episodes"], seeds=[repeat], pool=pool
        )
        wall = time.perf_counter() - start
        best = min(best, (wall, sum(record["cpu_seconds"] for record in records)))
    return best


def job_round_trip(pool: Pool, repeats: int) -> float:
    """Seconds per empty job through ``pool``, the fastest of ``repeats`` rounds of
    :data:`JOBS` jobs."""
    list(pool.map(abs, range(2 * pool.workers)))  # workers started, not counted
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        list(pool.map(abs, range(JOBS), ordered=False))
        best = min(best, (time.perf_counter() - start) / JOBS)
    return best


def measure(repeats: int) -> dict[str, Any]:
    load_before = os.getloadavg()
    measured: dict[str, dict[str, tuple[float, float]]] = {"scaling": {}, "overhead": {}}
    round_trip: dict[str, float] = {}
    for name, workers in (("local_1", 1), ("local_2", 2)):
        with make_pool(workers) as pool:
            measured["scaling"][name] = seconds(pool, SCALING, repeats)
            if workers == 2:
                measured["overhead"][name] = seconds(pool, OVERHEAD, repeats)
                round_trip[name] = job_round_trip(pool, repeats)
    start = time.perf_counter()
    with make_pool(2, backend="ray") as pool:
        ray_start = time.perf_counter() - start
        measured["scaling"]["ray_2"] = seconds(pool, SCALING, repeats)
        measured["overhead"]["ray_2"] = seconds(pool, OVERHEAD, repeats)
        round_trip["ray_2"] = job_round_trip(pool, repeats)
    timings = {
        case: {name: wall for name, (wall, _) in runs.items()} for case, runs in measured.items()
    }
    scaling = timings["scaling"]
    rates = {name: SCALING["episodes"] / value for name, value in scaling.items()}
    per_episode = {
        name: {key: value / case["episodes"] for key, value in timings[name].items()}
        for name, case in (("scaling", SCALING), ("overhead", OVERHEAD))
    }
    return {
        "cpus": os.cpu_count(),
        "load_average_before": [round(load, 2) for load in load_before],
        "load_average_after": [round(load, 2) for load in os.getloadavg()],
        "repeats": repeats,
        "scaling_case": SCALING,
        "episodes_per_second": {name: round(rate, 3) for name, rate in rates.items()},
        "ratio_to_1_worker": {
            name: round(rate / rates["local_1"], 3) for name, rate in rates.items()
        },
        "cores_used": {
            name: round(cpu / wall, 2) for name, (wall, cpu) in measured["scaling"].items()
        },
        "ray_start_seconds": round(ray_start, 2),
        "ms_per_empty_job": {name: round(1000 * value, 3) for name, value in round_trip.items()},
        "ray_overhead_ms_per_episode": {
            name: round(1000 * (times["ray_2"] - times["local_2"]), 3)
            for name, times in per_episode.items()
        },
        "overhead_case": OVERHEAD,
        "ms_per_episode": {
            name: {key: round(1000 * value, 3) for key, value in times.items()}
            for name, times in per_episode.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/scaling.json"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    text = json.dumps(measure(args.repeats), indent=2) + "\n"
    atomic_write_text(args.out, text)
    print(text, end="")


if __name__ == "__main__":
    main()
