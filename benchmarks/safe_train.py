"""Training time of each offline safe agent at the budgets of ``scenarios/claims/sdqc.yaml``.

    .venv/bin/python benchmarks/safe_train.py [--env Safe/PointGoal1-v0] [--profile quick|full]

Reads the claims scenario, generates its dataset of ``--env`` (the profile's ``n_traj``), and trains
every agent of the scenario once with the profile's budget (gradient updates) on one torch thread,
as the scenario's workers do. Reports wall and CPU seconds per training unit, updates per CPU
second, and for the full budgets the limits set for them (at most 5 minutes per baseline and 15
minutes for SDQC per task and seed, on two CPU cores) with the ratio limit / CPU seconds. A plain
script: nothing is asserted. Prints JSON. On a shared machine the wall time grows with the load;
the CPU time is what one free core would take (±15 %).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from omnigym.agent import make_agent
from omnigym.envs.safety.datasets import generate
from omnigym.registry import make
from omnigym.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "claims" / "sdqc.yaml"
LIMIT_SECONDS = {"sdqc": 900.0}
DEFAULT_LIMIT_SECONDS = 300.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Safe/PointGoal1-v0")
    parser.add_argument("--profile", choices=("quick", "full"), default="quick")
    args = parser.parse_args()
    torch.set_num_threads(1)
    scenario = load_scenario(SCENARIO)
    if args.profile == "quick":
        scenario = scenario.quickened()
    settings = {"n_traj": 1000, "seed": 0, **scenario.options.get("dataset", {})}
    start = time.perf_counter()
    data = generate(args.env, n_traj=settings["n_traj"], seed=settings["seed"])["data"]
    generate_seconds = time.perf_counter() - start
    env = make(args.env)
    results = []
    for entry in scenario.agents:
        if entry.train is None:  # every trained agent, even one the scenario runs elsewhere
            continue
        agent = make_agent(entry.name, env=env, env_id=args.env, seed=0, **entry.kwargs)
        budget = entry.train.budget
        start, cpu_start = time.perf_counter(), time.process_time()
        agent.learn(data, budget)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        limit = LIMIT_SECONDS.get(entry.name, DEFAULT_LIMIT_SECONDS)
        results.append(
            {
                "agent": entry.display,
                "updates": budget,
                "seconds": round(seconds, 2),
                "cpu_seconds": round(cpu, 2),
                "updates_per_cpu_second": round(budget / cpu, 1),
                "limit_seconds": limit,
                "ratio_limit_to_measured": round(limit / cpu, 2),
            }
        )
    env.close()
    print(
        json.dumps(
            {
                "env_id": args.env,
                "profile": args.profile,
                "transitions": int(len(data["rewards"])),
                "generate_seconds": round(generate_seconds, 2),
                "torch_threads": 1,
                "agents": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
