"""``make bench``: speed and memory figures, each beside its reference as a ratio.

    python -m benchmarks.run --out benchmarks/results.json [--only NAME ...]

Every figure is a record ``{"name", "value", "unit", "reference", "ratio", "goal", "meets_goal",
"details"}``; ``ratio`` is value / reference, oriented so that ``ratio >= 1`` meets the goal
(for costs such as overhead the reference is the allowed maximum and the ratio is inverted).
Nothing here is a test: timings go to the JSON file, never into assertions.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

Figure = dict[str, Any]


def _figure(
    name: str,
    value: float,
    unit: str,
    reference: float | None,
    goal: str | None,
    higher_is_better: bool = True,
    **details: Any,
) -> Figure:
    """One figure; ``reference=None`` records a number that has no goal."""
    if reference is None:
        return {"name": name, "value": value, "unit": unit, "reference": None, "ratio": None,
                "goal": None, "meets_goal": None, "details": details}  # fmt: skip
    # A cost at or below 1 % of its allowance counts as 100x better, not as infinitely better.
    ratio = value / reference if higher_is_better else reference / max(value, reference / 100)
    return {
        "name": name,
        "value": value,
        "unit": unit,
        "reference": reference,
        "ratio": ratio,
        "goal": goal,
        "meets_goal": ratio >= 1.0,
        "details": details,
    }


def env_steps_per_second(
    env_id: str, steps: int = 50_000, agent: str = "random", goal: bool = True
) -> Figure:
    """Environment steps per second through ``omnigym.make`` (the agent's own time excluded)."""
    from omnigym.cli import bench

    result = bench(env_id, steps=steps, agent=agent)
    return _figure(
        f"{env_id} steps/s ({agent} acting)",
        result["steps_per_sec"],
        "steps/s",
        10_000.0 if goal else None,
        ">= 10,000 steps/s" if goal else None,
        peak_rss_mb=result["peak_rss_mb"],
        steps=steps,
        agent=agent,
    )


CHESS_IDS = ("LMRL/Chess-v0", "LMRL/Endgames-v0")


def lmrl_oracle_steps(env_id: str) -> Figure:
    """An LMRL task's steps/s with its oracle acting; chess is recorded without a goal (each
    of its steps includes the Stockfish opponent's reply at its node limit)."""
    if env_id in CHESS_IDS:
        import omnigym

        figure = env_steps_per_second(env_id, steps=300, agent="oracle", goal=False)
        env = omnigym.make(env_id).unwrapped
        figure["details"]["opponent_nodes_per_move"] = env.opponent_nodes
        env.close()
        return figure
    return env_steps_per_second(env_id, steps=20_000, agent="oracle")


def wordle_step_time(steps: int = 20_000) -> Figure:
    """Milliseconds per ``LMRL/Wordle-v0`` step (resets included) with the behaviour policy
    guessing, so that every step looks up a feedback row, against 0.1 ms; the small vocabulary
    beside it. The feedback table is built before the clock starts (once per process)."""
    from omnigym.envs.lmrl.wordle import WordleBehaviour, WordleEnv

    def milliseconds(vocabulary: str) -> float:
        env = WordleEnv(vocabulary=vocabulary)
        behaviour = WordleBehaviour(env)
        behaviour.reset(0)
        observation, info = env.reset(seed=0)
        seconds = 0.0
        for _ in range(steps):
            guess = behaviour.act(observation, info)
            start = time.perf_counter()
            observation, _, terminated, _, info = env.step(guess)
            if terminated:
                observation, info = env.reset()
            seconds += time.perf_counter() - start
        return 1000 * seconds / steps

    return _figure(
        "LMRL/Wordle-v0 step time (behaviour guessing)",
        milliseconds("standard"),
        "ms",
        0.1,
        "< 0.1 ms per step",
        higher_is_better=False,
        steps=steps,
        answers=2129,
        guesses=11406,
        small_vocabulary_ms=milliseconds("small"),
    )


def dataset_write_time(env_id: str, episodes: int = 10_000) -> Figure:
    """Seconds to generate and write a 10,000-episode offline dataset (recorded, no goal)."""
    import tempfile

    from omnigym.envs.lmrl.datasets import write_dataset

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        write_dataset(env_id, episodes, 0, Path(folder) / "data.jsonl.gz")
        seconds = time.perf_counter() - start
    return _figure(
        f"{env_id} {episodes:,}-episode dataset", seconds, "s", None, None, episodes=episodes
    )


def import_time(repeats: int = 5) -> Figure:
    """Wall time of ``python -c 'import omnigym'`` (best of ``repeats``), against 0.5 s."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import omnigym"], check=True)
        times.append(time.perf_counter() - start)
    bare = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - start)
    return _figure(
        "import omnigym",
        min(times),
        "s",
        0.5,
        "< 0.5 s",
        higher_is_better=False,
        interpreter_start_s=min(bare),
    )


def evaluator_overhead(env_id: str = "LMRL/MazeFO-v0", episodes: int = 200) -> Figure:
    """Per-episode time of ``evaluate`` (records + episodes.jsonl) over a bare reset/step loop."""
    import tempfile

    import omnigym
    from omnigym.evaluators.rollout import episode_seeds, evaluate
    from omnigym.evaluators.store import EpisodeStore

    env = omnigym.make(env_id)
    agent = omnigym.make_agent("random", env=env, env_id=env_id)

    def bare_loop() -> float:
        start = time.perf_counter()
        for episode in range(episodes):
            env_seed, agent_seed = episode_seeds(0, episode)
            agent.reset(agent_seed)
            observation, info = env.reset(seed=env_seed)
            done = False
            while not done:
                observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
                done = terminated or truncated
        return time.perf_counter() - start

    def evaluator() -> float:
        with tempfile.TemporaryDirectory() as folder, EpisodeStore(folder) as store:
            start = time.perf_counter()
            evaluate(env_id, "random", episodes=episodes, seeds=[0], store=store)
            return time.perf_counter() - start

    # This machine's speed drifts between runs: alternate the two, compare each pair, and take
    # the median of the paired overheads.
    bare_loop(), evaluator()  # warm caches and imports
    pairs = [(bare_loop(), evaluator()) for _ in range(9)]
    overhead = statistics.median((full - bare) / bare for bare, full in pairs)
    bare = statistics.median(bare for bare, _ in pairs)
    full = statistics.median(full for _, full in pairs)
    return _figure(
        "evaluator overhead per episode",
        overhead,
        "fraction of a bare loop",
        0.10,
        "<= 10 % over a bare loop",
        higher_is_better=False,
        env_id=env_id,
        episodes=episodes,
        bare_ms_per_episode=1000 * bare / episodes,
        evaluate_ms_per_episode=1000 * full / episodes,
    )


def worker_speedup(
    env_id: str = "LMRL/Wordle-v0", agent: str = "oracle", episodes: int = 3000
) -> Figure:
    """Wall-time speed-up of ``evaluate(workers=2)`` over ``workers=1`` on a CPU-bound pair."""
    from omnigym.evaluators.rollout import evaluate

    evaluate(env_id, agent, episodes=2)  # warm the oracle's caches in this process

    def timed(workers: int) -> float:
        start = time.perf_counter()
        evaluate(env_id, agent, episodes=episodes, seeds=[0], workers=workers)
        return time.perf_counter() - start

    # The machine's speed drifts between runs: take the median of three paired runs.
    pairs = [(timed(1), timed(2)) for _ in range(3)]
    serial = statistics.median(serial for serial, _ in pairs)
    parallel = statistics.median(parallel for _, parallel in pairs)
    speedup = statistics.median(serial / parallel for serial, parallel in pairs)
    return _figure(
        "workers=2 speed-up",
        speedup,
        "x over workers=1",
        1.6,
        ">= 1.6x",
        env_id=env_id,
        agent=agent,
        episodes=episodes,
        serial_s=serial,
        parallel_s=parallel,
    )


def _lmrl_ids() -> list[str]:
    import omnigym

    return [info.id for info in omnigym.list_envs(family="LMRL", kind="single")]


def _short(env_id: str) -> str:
    return env_id.split("/", 1)[1].split("-v", 1)[0].lower()


BENCHMARKS: dict[str, Callable[[], Figure]] = {
    "wordle_steps": lambda: env_steps_per_second("LMRL/Wordle-v0"),
    "maze_fo_steps": lambda: env_steps_per_second("LMRL/MazeFO-v0"),
    "lmrl_wordle_step_time": wordle_step_time,
    "import_time": import_time,
    "evaluator_overhead": evaluator_overhead,
    "worker_speedup": worker_speedup,
    **{
        f"lmrl_{_short(env_id)}_oracle_steps": (lambda env_id=env_id: lmrl_oracle_steps(env_id))
        for env_id in _lmrl_ids()
    },
    **{
        f"lmrl_{_short(env_id)}_dataset": (lambda env_id=env_id: dataset_write_time(env_id))
        for env_id in ("LMRL/Wordle-v0", "LMRL/MazeFO-v0", "LMRL/TwentyQuestions-v0")
    },
}


def _run_named(name: str) -> Figure:
    return BENCHMARKS[name]()


def _isolated(name: str) -> Figure:
    """Run one benchmark in a fresh interpreter, so that no figure inherits another's memory
    (peak RSS is per process) or garbage-collector load."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(_run_named, name).result()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results.json"))
    parser.add_argument("--only", nargs="*", choices=sorted(BENCHMARKS), help="run only these")
    args = parser.parse_args(argv)
    figures = []
    for name in args.only or BENCHMARKS:
        figure = _isolated(name)
        figures.append(figure)
        mark = {True: "ok  ", False: "MISS", None: "rec "}[figure["meets_goal"]]
        against = "" if figure["goal"] is None else f" (goal {figure['goal']}; "
        against += "" if figure["goal"] is None else f"ratio {figure['ratio']:.2f})"
        print(
            f"[{mark}] {figure['name']}: {figure['value']:.4g} {figure['unit']}{against}",
            flush=True,
        )
    result = {
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "figures": figures,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
