"""Self-verification of MCU tasks: every task's oracle must solve it on every seed.

The counterpart of MCU's run-and-refine loop (Zheng et al., ICML 2025; ``docs/mcu.md``). Run::

    python -m omnigym.envs.mcu.verify [--seeds 0,1,2] [--tasks a,b] [--out verify_report.json]

It plays each listed task (all verified tasks by default) with its oracle, writes a JSON report
(per task: success per seed, steps, ticks, failure reason) and prints the successes per
category; the exit status is 1 when any task fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from omnigym.envs.mcu import oracles
from omnigym.envs.mcu.env import AtomicEnv
from omnigym.envs.mcu.tasks import Task, list_tasks, load_task


def verify_task(task: Task, seeds: list[int]) -> dict[str, Any]:
    """The oracle's result on each seed: ``success`` (on every seed), ``steps`` and ``ticks``
    (first seed), ``reason`` (first failure) and ``per_seed``."""
    env = AtomicEnv(task)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="seeds, comma-separated")
    parser.add_argument("--tasks", default="", help="task names, comma-separated (default all)")
    parser.add_argument("--out", type=Path, default=Path("verify_report.json"))
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    names = args.tasks.split(",") if args.tasks else list_tasks()
    report = {}
    solved: Counter = Counter()
    total: Counter = Counter()
    for name in names:
        task = load_task(name)
        report[name] = verify_task(task, seeds)
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
