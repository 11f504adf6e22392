"""Steps per second of Craft's Luanti backend beside the embedded engine; writes one JSON file.

    .venv/bin/python benchmarks/craft_luanti_speed.py [--seconds S] [--out PATH]

Cases: Room, ChopTree and ProcDungeons, 64×64 RGB, frameskip 1, random actions of the
registered ``Discrete`` set (episodes that end are reset inside the timed loop), once with each
backend; Room also with ``obs_mode="voxels"``. Per case: steps/s over ``--seconds`` of stepping,
the first reset's time (for Luanti, the server's start), and a soft reset's time. Beside them,
Craftium's own figure at its default ``fps_max=200`` (Malagón, Ceberio, Lozano, ICML 2025:
about 200 steps/s, the engine capped at 200 frames per second), as ``craftium_default``. The
Luanti server runs in its own process, so its CPU time is not this process's; the machine's
cores are shared by both. Where Luanti is not installed (``make luanti``) its cases are recorded
as unavailable. A plain script: nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "craft_luanti.json"
CRAFTIUM_DEFAULT_STEPS_PER_S = 200.0
CASES = (
    ("Room", "rgb"),
    ("Room", "voxels"),
    ("ChopTree", "rgb"),
    ("ProcDungeons", "rgb"),
)


def measure(task: str, obs_mode: str, backend: str, seconds: float) -> dict[str, Any]:
    import numpy as np

    import omnigym

    kwargs = {"obs_mode": obs_mode}
    if backend != "embedded":
        kwargs["backend"] = backend
    env = omnigym.make(f"Craft/{task}-v0", **kwargs)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    env.reset(seed=0)
    first_reset = time.perf_counter() - start
    start = time.perf_counter()
    env.reset(seed=1)
    soft_reset = time.perf_counter() - start
    n = env.action_space.n
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, terminated, truncated, _ = env.step(int(rng.integers(n)))
        steps += 1
        if terminated or truncated:
            env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return {
        "task": task,
        "obs_mode": obs_mode,
        "backend": backend,
        "status": "ok",
        "steps": steps,
        "seconds": elapsed,
        "steps_per_s": steps / elapsed,
        "first_reset_s": first_reset,
        "soft_reset_s": soft_reset,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    from omnigym.envs.craft.luanti.server import available

    cases: dict[str, Any] = {}
    for task, obs_mode in CASES:
        for backend in ("embedded", "luanti"):
            name = f"{task}_{obs_mode}_{backend}"
            if backend == "luanti" and not available():
                cases[name] = {"status": "unavailable", "reason": "Luanti is not installed"}
                continue
            cases[name] = measure(task, obs_mode, backend, args.seconds)
            print(name, f"{cases[name]['steps_per_s']:.0f} steps/s", flush=True)
        embedded = cases[f"{task}_{obs_mode}_embedded"]["steps_per_s"]
        luanti = cases[f"{task}_{obs_mode}_luanti"]
        if luanti["status"] == "ok":
            luanti["ratio_vs_embedded"] = luanti["steps_per_s"] / embedded
            luanti["ratio_vs_craftium_default"] = (
                luanti["steps_per_s"] / CRAFTIUM_DEFAULT_STEPS_PER_S
            )
    result = {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "seconds_per_case": args.seconds,
        "craftium_default": {
            "steps_per_s": CRAFTIUM_DEFAULT_STEPS_PER_S,
            "source": "Craftium (Malagon et al., ICML 2025) at its default fps_max=200",
        },
        "cases": cases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
