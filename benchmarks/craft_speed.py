"""Speed and memory of the Craft environments; writes one JSON file.

    .venv/bin/python benchmarks/craft_speed.py [--quick] [--out PATH] [--cases NAME ...]

Each case runs in a fresh interpreter (so its peak RSS is its own), pinned to one core unless
the case is about both cores, and takes random actions (episodes that end are reset inside the
timed loop). A warm-up first builds the env and loads or compiles the Numba kernels; its time is
recorded as ``compile_s``. The timed loop runs ``ROUNDS`` rounds of ``--seconds`` / ``ROUNDS``
each (0.5 s in all with ``--quick``); ``steps_per_s`` is their median, ``rounds_steps_per_s``
lists them, and ``load_average`` holds the machine's 1-minute load average before and after (the
machine is shared: run it under ``nice -n -10`` and read figures beside their load).

Cases, with their targets (``TARGETS``; "recorded" cases have none):

- ``single_rgb``: ``CraftEnv`` ChopTree 64×64 RGB, frameskip 1, in the ``DiscreteActionWrapper``
  of its registered id: ≥ 3,000 steps/s.
- ``crafter_ratio``: ``single_rgb`` against ``crafter.Env()`` 64×64 in one process on one core,
  alternating rounds of each (so that load falls on both alike): the median over rounds of
  ours / Crafter, ≥ 5; with both medians.
- ``single_voxels``: the same with ``obs_mode="voxels"`` (default radii): ≥ 40,000 steps/s.
- ``vector_voxels``: ``CraftVectorEnv`` of 64 ChopTree worlds, voxels, ``workers=2`` on both
  cores: ≥ 60,000 steps/s in all.
- ``vector_voxels_one_process``: the same in one process (``workers=1``) on one core: recorded.
- ``vector_rgb_one_core``: 64 worlds, 64×64 RGB, one process on one core: recorded.
- ``vector_rgb_two_cores``: the same with ``workers=2`` on both cores: recorded, with its
  ratio to ``vector_rgb_one_core`` (expected ≥ 1.8).
- ``vector_rgb_render_threads``: one process drawing with ``render_threads=2`` on both cores
  (frames drawn in threads, the worlds stepped by one): recorded.
- ``soft_reset``: ChopTree RGB ``reset()`` time over ``step()`` time: < 10 steps.
- ``mcu_text``: the MCU family on the same engine (``docs/mcu.md``), text mode:
  ``MCU/Atomic-v0`` on ``combat_spiders`` (a mob that moves every tick), a command drawn uniformly
  among the plain ones per step; the median time of one ``step()`` in ms: ≤ 0.5 ms.
- ``open_world_rgb``: OpenWorld 320×180 RGB, ``render_threads=2`` on both cores: ≥ 400 steps/s.
- ``open_world_rgb_one_core``: the same drawn by one thread on one core: recorded.
- ``crafter``: Crafter (Hafner, ICLR 2022; ``pip install crafter``), ``crafter.Env()`` 64×64:
  recorded; every steps/s case above gets ``ratio_vs_crafter`` = ours / Crafter.

A task whose module is not in the tree yet is measured on ``FALLBACK_TASK`` with
``status: "fallback"`` and the reason; a case that cannot run at all (OpenWorld missing, Crafter
not installed) is recorded with ``status: "unavailable"`` and the reason. A plain script:
nothing here is a test, and no timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "craft.json"
FALLBACK_TASK = "Room"
VECTOR_WORLDS = 64
ROUNDS = 3
CASES = (
    "crafter",
    "single_rgb",
    "crafter_ratio",
    "single_voxels",
    "vector_voxels",
    "vector_voxels_one_process",
    "vector_rgb_one_core",
    "vector_rgb_two_cores",
    "vector_rgb_render_threads",
    "soft_reset",
    "open_world_rgb",
    "open_world_rgb_one_core",
    "mcu_text",
)
TWO_CORE_CASES = (
    "vector_voxels",
    "vector_rgb_two_cores",
    "vector_rgb_render_threads",
    "open_world_rgb",
)
TARGETS: dict[str, dict[str, Any]] = {
    "single_rgb": {"op": ">=", "value": 3000.0, "unit": "steps/s"},
    "crafter_ratio": {"op": ">=", "value": 5.0, "unit": "x Crafter"},
    "single_voxels": {"op": ">=", "value": 40000.0, "unit": "steps/s"},
    "vector_voxels": {"op": ">=", "value": 60000.0, "unit": "steps/s"},
    "soft_reset": {"op": "<", "value": 10.0, "unit": "steps"},
    "mcu_text": {"op": "<=", "value": 0.5, "unit": "ms"},
    "open_world_rgb": {"op": ">=", "value": 400.0, "unit": "steps/s"},
}
VECTOR_RGB_EXPECTED = 1.8
"""Expected ratio of ``vector_rgb_two_cores`` to ``vector_rgb_one_core``: recorded beside the
figure, not a target."""


# ---- one case, inside its own interpreter ---------------------------------------------------


class Unavailable(Exception):
    """The case cannot run here; the message says why."""


def _make_single(task: str, **kwargs: Any):
    """The registered id's env: ``DiscreteActionWrapper(CraftEnv(task, **kwargs))``."""
    from omnigym.envs.craft.actions import DiscreteActionWrapper
    from omnigym.envs.craft.env import CraftEnv

    env = CraftEnv(task, **kwargs)
    return DiscreteActionWrapper(env, env.task.actions, env.task.mouse_mov)


def _task_or_fallback(task: str, build: Callable[[str], Any]) -> tuple[Any, dict[str, Any]]:
    """``build(task)``, or ``build(FALLBACK_TASK)`` when ``task`` is not available yet."""
    try:
        return build(task), {"task": task, "status": "ok"}
    except (ImportError, KeyError, AttributeError) as error:
        reason = f"{task} unavailable ({type(error).__name__}: {error})"
    return build(FALLBACK_TASK), {
        "task": FALLBACK_TASK,
        "status": "fallback",
        "reason": f"{reason}; measured on {FALLBACK_TASK}",
    }


def _time_loop(step: Callable[[], int], seconds: float) -> tuple[int, float]:
    """Calls ``step`` (which returns the env steps it made) until ``seconds`` have passed."""
    steps, start = 0, time.perf_counter()
    while True:
        for _ in range(8):
            steps += step()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps, elapsed


def _rounds(step: Callable[[], int], seconds: float) -> dict[str, Any]:
    """``ROUNDS`` timed loops of ``seconds / ROUNDS``: the median steps/s and every round's."""
    rates, steps, elapsed = [], 0, 0.0
    for _ in range(ROUNDS):
        n, dt = _time_loop(step, seconds / ROUNDS)
        rates.append(n / dt)
        steps, elapsed = steps + n, elapsed + dt
    return {
        "steps": steps,
        "seconds": elapsed,
        "steps_per_s": statistics.median(rates),
        "rounds_steps_per_s": rates,
    }


def _stepper(env, seed: int = 0) -> Callable[[], int]:
    """One random step of ``env`` per call (resetting an episode that ends)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    actions = rng.integers(env.action_space.n, size=1 << 16)
    position = 0

    def step() -> int:
        nonlocal position
        _, _, terminated, truncated, _ = env.step(actions[position & 0xFFFF])
        position += 1
        if terminated or truncated:
            env.reset()
        return 1

    return step


def _single_steps(env, seconds: float, seed: int = 0) -> dict[str, Any]:
    return _rounds(_stepper(env, seed), seconds)


def _warm_single(task: str, warmup_steps: int, **kwargs: Any):
    start = time.perf_counter()
    env, record = _task_or_fallback(task, lambda name: _make_single(name, **kwargs))
    env.reset(seed=0)
    env.step(0)
    record["compile_s"] = time.perf_counter() - start
    for _ in range(warmup_steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    record["kernel"] = env.unwrapped.sim.kernel
    return env, record


def case_single(task: str, seconds: float, warmup: int, **kwargs: Any) -> dict[str, Any]:
    env, record = _warm_single(task, warmup, **kwargs)
    env.reset(seed=1)
    record.update(_single_steps(env, seconds))
    record["env_kwargs"] = kwargs
    return record


def case_vector(task: str, seconds: float, warmup: int, **kwargs: Any) -> dict[str, Any]:
    import numpy as np

    from omnigym.envs.craft import render
    from omnigym.envs.craft.vector import CraftVectorEnv

    start = time.perf_counter()
    env, record = _task_or_fallback(
        task, lambda name: CraftVectorEnv(name, VECTOR_WORLDS, **kwargs)
    )
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    batches = rng.integers(env.single_action_space.n, size=(256, env.num_envs))
    env.step(batches[0])
    record["compile_s"] = time.perf_counter() - start
    for k in range(max(1, warmup // env.num_envs)):
        env.step(batches[k & 0xFF])
    position = 0

    def step() -> int:
        nonlocal position
        env.step(batches[position & 0xFF])
        position += 1
        return env.num_envs

    record.update(_rounds(step, seconds))
    record["kernel"] = env.kernel if hasattr(env, "kernel") else env.envs[0].sim.kernel
    record["worlds"] = env.num_envs
    record["env_kwargs"] = kwargs
    # Threads drawing frames overlap only inside a kernel compiled with nogil=True.
    kernel = getattr(render, "_render_kernel", None)
    record["render_kernel_releases_gil"] = bool(
        getattr(kernel, "targetoptions", {}).get("nogil", False)
    )
    env.close()
    return record


def case_soft_reset(task: str, seconds: float, warmup: int) -> dict[str, Any]:
    """Mean ``reset()`` time over mean ``step()`` time, from alternating rounds of one reset
    and up to 20 steps."""
    env, record = _warm_single(task, warmup)
    env.reset(seed=1)
    reset_s = step_s = 0.0
    resets = steps = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        env.reset()
        reset_s += time.perf_counter() - start
        resets += 1
        start = time.perf_counter()
        for _ in range(20):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            if terminated or truncated:
                break
        step_s += time.perf_counter() - start
    record.update(
        value=(reset_s / resets) / (step_s / steps),
        unit="steps",
        resets=resets,
        steps=steps,
        reset_ms=1e3 * reset_s / resets,
        step_ms=1e3 * step_s / steps,
    )
    return record


def _crafter_stepper(warmup: int) -> tuple[Callable[[], int], float]:
    """One random step of ``crafter.Env()`` per call, and the seconds building it took."""
    try:
        import crafter
    except ImportError as error:
        raise Unavailable(f"crafter is not installed ({error}); pip install crafter") from None
    import numpy as np

    start = time.perf_counter()
    env = crafter.Env(seed=0)
    env.reset()
    compile_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    actions = rng.integers(env.action_space.n, size=1 << 16)
    for k in range(warmup):
        if env.step(int(actions[k]))[2]:
            env.reset()
    position = 0

    def step() -> int:
        nonlocal position
        if env.step(int(actions[position & 0xFFFF]))[2]:
            env.reset()
        position += 1
        return 1

    return step, compile_s


def case_crafter(seconds: float, warmup: int) -> dict[str, Any]:
    step, compile_s = _crafter_stepper(warmup)
    return {
        "task": "crafter.Env() 64x64",
        "status": "ok",
        "kernel": "crafter (NumPy)",
        "compile_s": compile_s,
        **_rounds(step, seconds),
        "crafter_version": importlib.metadata.version("crafter"),
    }


def case_mcu_text(seconds: float, warmup: int) -> dict[str, Any]:
    """Median, mean and 90th percentile of one MCU text-mode ``step()``, in ms."""
    import numpy as np

    from omnigym.envs.mcu.env import AtomicEnv
    from omnigym.envs.mcu.macro import PRIMITIVES

    start = time.perf_counter()
    env = AtomicEnv("combat_spiders")
    env.reset(seed=0)
    compile_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    commands = [PRIMITIVES[i] for i in rng.integers(len(PRIMITIVES), size=1 << 12)]
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    k = 0
    while k < warmup or time.perf_counter() < deadline:
        tick = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(commands[k & 0xFFF])
        if k >= warmup:
            times.append(time.perf_counter() - tick)
        k += 1
        if terminated or truncated:
            env.reset()
    ms = 1e3 * np.array(times)
    return {
        "task": "MCU/Atomic-v0 combat_spiders, random plain commands",
        "status": "ok",
        "kernel": "MCU rules (Python) on the Craft engine",
        "compile_s": compile_s,
        "steps": len(times),
        "value": float(np.median(ms)),
        "unit": "ms",
        "mean_ms": float(ms.mean()),
        "p90_ms": float(np.percentile(ms, 90)),
    }


def case_crafter_ratio(seconds: float, warmup: int) -> dict[str, Any]:
    """ChopTree 64×64 RGB against Crafter in this process, in alternating rounds."""
    crafter_step, _ = _crafter_stepper(warmup)
    env, record = _warm_single("ChopTree", warmup)
    env.reset(seed=1)
    ours_step = _stepper(env)
    ours, theirs = [], []
    for _ in range(ROUNDS):
        n, dt = _time_loop(crafter_step, seconds / (2 * ROUNDS))
        theirs.append(n / dt)
        n, dt = _time_loop(ours_step, seconds / (2 * ROUNDS))
        ours.append(n / dt)
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    record.update(
        value=statistics.median(ratios),
        unit="x Crafter",
        rounds_ratio=ratios,
        steps_per_s_median=statistics.median(ours),
        crafter_steps_per_s_median=statistics.median(theirs),
        rounds_steps_per_s=ours,
        rounds_crafter_steps_per_s=theirs,
        crafter_version=importlib.metadata.version("crafter"),
    )
    return record


def run_case(name: str, seconds: float, warmup: int) -> dict[str, Any]:
    """Runs case ``name`` in this process and returns its record (no target yet)."""
    if name == "crafter":
        return case_crafter(seconds, warmup)
    if name == "mcu_text":
        return case_mcu_text(seconds, warmup)
    if name == "crafter_ratio":
        return case_crafter_ratio(seconds, warmup)
    if name == "single_rgb":
        return case_single("ChopTree", seconds, warmup)
    if name == "single_voxels":
        return case_single("ChopTree", seconds, warmup, obs_mode="voxels")
    if name == "vector_voxels":
        return case_vector("ChopTree", seconds, warmup, obs_mode="voxels", workers=2)
    if name == "vector_voxels_one_process":
        return case_vector("ChopTree", seconds, warmup, obs_mode="voxels")
    if name == "vector_rgb_one_core":
        return case_vector("ChopTree", seconds, warmup)
    if name == "vector_rgb_two_cores":
        return case_vector("ChopTree", seconds, warmup, workers=2)
    if name == "vector_rgb_render_threads":
        return case_vector("ChopTree", seconds, warmup, render_threads=2)
    if name == "soft_reset":
        return case_soft_reset("ChopTree", seconds, warmup)
    if name in ("open_world_rgb", "open_world_rgb_one_core"):
        threads = 2 if name == "open_world_rgb" else 1
        try:
            env, record = _warm_single("OpenWorld", warmup, render_threads=threads)
        except (ImportError, KeyError, AttributeError) as error:
            raise Unavailable(f"OpenWorld unavailable ({type(error).__name__}: {error})") from None
        if record["status"] == "fallback":
            raise Unavailable(record["reason"].split(";")[0])
        env.reset(seed=1)
        record.update(_single_steps(env, seconds))
        record["env_kwargs"] = {"render_threads": threads}
        return record
    raise ValueError(f"unknown case {name!r}; cases: {list(CASES)}")


def _child(name: str, seconds: float, warmup: int, cores: int) -> dict[str, Any]:
    allowed = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, allowed[:cores])
    load_before = os.getloadavg()[0]
    try:
        record = run_case(name, seconds, warmup)
    except Unavailable as error:
        record = {"status": "unavailable", "reason": str(error)}
    record["load_average"] = [load_before, os.getloadavg()[0]]
    record["cores"] = len(os.sched_getaffinity(0))
    record["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return record


# ---- the whole run --------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _in_subprocess(name: str, seconds: float, warmup: int) -> dict[str, Any]:
    cores = 2 if name in TWO_CORE_CASES else 1
    command = [sys.executable, __file__, "--child", name, "--seconds", str(seconds)]
    command += ["--warmup", str(warmup), "--cores", str(cores)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return {"status": "error", "reason": done.stderr.strip().splitlines()[-5:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def judge(records: dict[str, dict[str, Any]]) -> None:
    """Adds to each case record its target, ``value``/``unit``, ``ratio_to_target`` (oriented
    so that ``>= 1`` meets the target), ``meets_target`` and the ratios to Crafter and, for the
    two-core case, to ``single_rgb``."""
    for name, record in records.items():
        _judge_one(name, record, records)


def _judge_one(name: str, record: dict[str, Any], records: dict[str, dict[str, Any]]) -> None:
    target = TARGETS.get(name)
    record["target"] = target
    value = record.get("value", record.get("steps_per_s"))
    if record.get("status") in ("ok", "fallback") and value is not None:
        record.setdefault("value", value)
        record.setdefault("unit", "steps/s")
        if target is not None:
            if target["op"] == ">=":
                record["ratio_to_target"] = value / target["value"]
            else:
                record["ratio_to_target"] = target["value"] / value
            record["meets_target"] = record["ratio_to_target"] >= 1.0 and value > 0
        crafter = records.get("crafter", {})
        if name != "crafter" and "steps_per_s" in record and crafter.get("status") == "ok":
            record["ratio_vs_crafter"] = record["steps_per_s"] / crafter["steps_per_s"]
    single = records.get("vector_rgb_one_core", {})
    if name == "vector_rgb_two_cores" and "steps_per_s" in record and "steps_per_s" in single:
        ratio = record["steps_per_s"] / single["steps_per_s"]
        record["ratio_vs_one_core"] = ratio
        record["expected_ratio_vs_single_rgb"] = VECTOR_RGB_EXPECTED
        record["meets_expected_ratio"] = ratio >= VECTOR_RGB_EXPECTED
    record.setdefault("meets_target", None)


def measure(cases: list[str], quick: bool, seconds: float | None = None) -> dict[str, Any]:
    """Runs ``cases`` one subprocess each; returns the JSON document."""
    import numba
    import numpy

    seconds = seconds if seconds is not None else (0.5 if quick else 10.0)
    warmup = 20 if quick else 200
    records: dict[str, dict[str, Any]] = {}
    for name in cases:
        records[name] = _in_subprocess(name, seconds, warmup)
        print(f"{name}: {_summary(records[name])}", file=sys.stderr, flush=True)
    judge(records)
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "quick": quick,
        "seconds_per_case": seconds,
        "cases": records,
    }


def write_document(document: dict[str, Any], path: Path) -> None:
    """Writes ``document`` to ``path`` atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n")
    temporary.replace(path)


def figures(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The measured cases as ``benchmarks/run.py`` figures (``name, value, unit, reference,
    ratio, goal, meets_goal, details``; ``ratio >= 1`` meets the goal). Cases that could not run
    stay in the JSON document only."""
    result = []
    for name, record in document["cases"].items():
        if record.get("value") is None:
            continue
        target = record.get("target")
        details = {k: v for k, v in record.items() if k not in ("value", "unit", "target")}
        result.append(
            {
                "name": name.replace("_", " ") if name.startswith("mcu") else f"craft {name}",
                "value": record.get("value"),
                "unit": record.get("unit"),
                "reference": None if target is None else target["value"],
                "ratio": record.get("ratio_to_target"),
                "goal": None if target is None else f"{target['op']} {target['value']:g}",
                "meets_goal": record.get("meets_target"),
                "details": details,
            }
        )
    return result


def _summary(record: dict[str, Any]) -> str:
    if record.get("status") not in ("ok", "fallback"):
        return f"{record.get('status')}: {record.get('reason')}"
    value = record.get("value", record.get("steps_per_s"))
    unit = record.get("unit", "steps/s")
    return f"{value:.4g} {unit} ({record.get('task')}, peak RSS {record['peak_rss_mb']:.0f} MB)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short timings (smoke test)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--seconds", type=float, help="timed seconds per case")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=200, help=argparse.SUPPRESS)
    parser.add_argument("--cores", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.seconds, args.warmup, args.cores)))
        return 0
    document = measure(args.cases, args.quick, args.seconds)
    write_document(document, args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
