"""Self-verification of MCU tasks: every task's oracle must solve it on every seed.

The counterpart of MCU's run-and-refine loop (Zheng et al., ICML 2025; ``docs/mcu.md``). Run::

    python -m omnigym.envs.mcu.verify [--difficulty simple,hard] [--seeds 0,1,2] [--tasks a,b]
        [--out verify_report.json] [--workers N] [--backend local|ray] [--address auto|HOST:PORT]

It plays each listed task (all verified tasks by default) with its oracle at each difficulty,
writes a JSON report (per task: success per seed, steps, ticks, failure reason, and the same
per difficulty) and prints the successes per
category; the exit status is 1 when any task fails. Tasks are verified one job each in a pool
(:mod:`omnigym.pool`): ``--workers`` local processes, or Ray tasks with ``--backend ray``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from omnigym.envs.mcu import oracles
from omnigym.envs.mcu.difficulty import check
from omnigym.envs.mcu.env import AtomicEnv
from omnigym.envs.mcu.tasks import Task, list_tasks, load_task, parse_task
from omnigym.pool import BACKENDS, make_pool


def verify_task(
    task: Task, seeds: list[int], difficulties: tuple[str, ...] = ("simple",)
) -> dict[str, Any]:
    """The oracle's result at each difficulty on each seed: ``success`` (everywhere), ``steps``
    and ``ticks`` (first difficulty, first seed), ``reason`` (the failures), ``per_seed``
    (first difficulty) and ``by_difficulty`` (the same fields per difficulty)."""
    levels = {level: _verify_level(task, seeds, level) for level in difficulties}
    failures = [
        f"{level}: {result['reason']}" if len(levels) > 1 else result["reason"]
        for level, result in levels.items()
        if not result["success"]
    ]
    return {
        **levels[difficulties[0]],
        "success": not failures,
        "reason": "; ".join(failures),
        "by_difficulty": levels,
    }


def _verify_level(task: Task, seeds: list[int], difficulty: str) -> dict[str, Any]:
    env = AtomicEnv(task, difficulty=difficulty)
    per_seed = {seed: oracles.run(env, seed) for seed in seeds}
    first = per_seed[seeds[0]]
    failures = [f"seed {s}: {r['reason']}" for s, r in per_seed.items() if not r["success"]]
    return {
        "success": not failures,
        "steps": first["steps"],
        "ticks": first["ticks"],
        "reason": "; ".join(failures),
        "per_seed": {str(s): r["success"] for s, r in per_seed.items()},
    }


def _verify_job(job: tuple[str | dict, list[int], tuple[str, ...]]) -> dict[str, Any]:
    task, seeds, difficulties = job
    # A verified task's name, or a generated task's data (not yet written).
    loaded = parse_task(task, f"{task['name']}.yaml") if isinstance(task, dict) else load_task(task)
    return verify_task(loaded, seeds, difficulties)


def verify_all(
    tasks: list[str | dict],
    seeds: list[int],
    difficulties: tuple[str, ...],
    pool: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """:func:`verify_task` for each of ``tasks`` (names of verified tasks, or a task file's
    data), in order, one job each in the pool that ``pool`` describes (the keyword arguments of
    :func:`omnigym.pool.make_pool`; default one local worker, this process)."""
    settings = {"workers": 1, **(pool or {})}
    jobs = [(task, seeds, difficulties) for task in tasks]
    with make_pool(**settings, job="each task's verification") as workers:
        return list(workers.map(_verify_job, jobs))


def add_pool_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workers``, ``--backend`` and ``--address`` (see :func:`pool_settings`)."""
    parser.add_argument("--workers", type=int, default=1, help="verification jobs at once")
    parser.add_argument("--backend", default="local", choices=BACKENDS, help="pool backend")
    parser.add_argument(
        "--address", default=None, help="with --backend ray: auto or the head node's HOST:PORT"
    )


def pool_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The pool the command line asks for, as :func:`verify_all` takes it."""
    return {"workers": args.workers, "backend": args.backend, "address": args.address}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="seeds, comma-separated")
    parser.add_argument("--tasks", default="", help="task names, comma-separated (default all)")
    parser.add_argument(
        "--difficulty", default="simple", help="difficulties, comma-separated (simple,hard)"
    )
    parser.add_argument("--out", type=Path, default=Path("verify_report.json"))
    add_pool_arguments(parser)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    difficulties = tuple(check(level) for level in args.difficulty.split(","))
    names = args.tasks.split(",") if args.tasks else list_tasks()
    report = {}
    solved: Counter = Counter()
    total: Counter = Counter()
    results = verify_all(names, seeds, difficulties, pool_settings(args))
    for name, result in zip(names, results, strict=True):
        task = load_task(name)
        report[name] = result
        total[task.category] += 1
        solved[task.category] += report[name]["success"]
        if not report[name]["success"]:
            print(f"FAILED {name}: {report[name]['reason']}")
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
    for category in sorted(total):
        print(f"{category}: {solved[category]}/{total[category]}")
    print(f"total: {sum(solved.values())}/{sum(total.values())} (report: {args.out})")
    return 0 if sum(solved.values()) == sum(total.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
