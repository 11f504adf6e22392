"""Offline datasets for the LMRL text tasks, made by seeded scripted behaviour policies.

LMRL-Gym (Abdulhai et al., ICML 2025) ships offline datasets collected from mixtures of
sub-optimal policies; nothing is downloaded here, the same kind of mixtures are replayed through
the environments instead (spec ``lmrl.md`` §4). Run::

    python -m omnigym.envs.lmrl.datasets --task TASK --episodes N --seed S --out DIR

with ``TASK`` one of ``maze_fo``, ``maze_po``, ``wordle``. It writes ``DIR/TASK.jsonl.gz``, one
episode per line: ``task``, ``seed`` (the episode's reset seed), ``behaviour`` (policy id and
parameters), ``turns`` (``{role: env|agent, text, reward}``; joined by newlines the texts are the
episode's transcript), ``return``, ``success``, ``truncated``; and ``DIR/TASK.stats.json``. The
output is byte-identical for the same arguments.

Behaviour policies (parameters tuned so the success rates land within ±0.05 of LMRL's):

- Maze (LMRL: success 0.11). The episode keeps to the sub-maze (``maze.yaml``) of its start;
  each move is, with probability ``solver_probability``, a step of a solver that heads for the
  sub-maze's cell nearest the goal, else a uniformly random move that stays in the sub-maze
  (bumping into walls included). Only episodes starting in the goal's sub-maze can succeed.
- Wordle (LMRL: success 0.70). Each guess is, with probability ``random_probability``, a
  uniformly random word of the guess list, else a uniformly random answer consistent with the
  feedback so far.

Default sizes are LMRL's for Maze (1,240 episodes) and 20,000 for Wordle (LMRL: 1M).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import omnigym
from omnigym.envs.lmrl.maze import Cell, MazeLayout, load_layout
from omnigym.envs.lmrl.wordle import answer_rows, feedback_code, feedback_table, word_lists
from omnigym.evaluators.io import atomic_write_bytes, atomic_write_text

TASK_ENV_IDS = {
    "maze_fo": "LMRL/MazeFO-v0",
    "maze_po": "LMRL/MazePO-v0",
    "wordle": "LMRL/Wordle-v0",
}
DEFAULT_EPISODES = {"maze_fo": 1240, "maze_po": 1240, "wordle": 20000}
LMRL_SUCCESS = {"maze_fo": 0.11, "maze_po": 0.11, "wordle": 0.70}
FIXTURES = Path(__file__).parent / "data" / "fixtures"


@dataclass
class MazeBehaviour:
    """Sub-maze-confined mixture of a goal-seeking solver and random moves (see module doc)."""

    solver_probability: float = 0.15
    policy: ClassVar[str] = "maze_sub_maze_mixture"

    def __post_init__(self) -> None:
        self._layout = load_layout()
        self._moves = list(self._layout.moves)
        self._start: Cell = self._layout.starts[0]
        self._cell = self._start
        self._toward: dict[Cell, list[str]] = {}
        self._inside: dict[Cell, list[str]] = {}

    def start(self, rng: np.random.Generator) -> dict[str, Any]:
        self._start = self._layout.starts[int(rng.integers(len(self._layout.starts)))]
        self._cell = self._start
        region = _reachable_within(self._layout, self._start)
        self._inside = {
            cell: [m for m in self._moves if self._layout.next_cell(cell, m) in region]
            for cell in region
        }
        self._toward = _solver_moves(self._layout, region)
        return {"start": self._cell}

    def parameters(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "solver_probability": self.solver_probability,
            "sub_maze": self._layout.sub_maze(self._start),
            "start": list(self._start),
        }

    def act(self, rng: np.random.Generator, info: dict[str, Any]) -> str:
        use_solver = rng.random() < self.solver_probability
        choices = self._toward[self._cell] if use_solver else self._inside[self._cell]
        move = choices[int(rng.integers(len(choices)))]
        self._cell = self._layout.next_cell(self._cell, move)
        return move


def _reachable_within(layout: MazeLayout, start: Cell) -> set[Cell]:
    """The cells reachable from ``start`` without leaving its sub-maze."""
    name = layout.sub_maze(start)
    return set(
        layout.distances(start, {cell for cell in layout.free if layout.sub_maze(cell) == name})
    )


def _solver_moves(layout: MazeLayout, region: set[Cell]) -> dict[Cell, list[str]]:
    """Per cell of ``region``, the moves on a shortest in-region path to its cell nearest the
    goal (the goal itself in the goal's sub-maze); at that cell, every in-region move."""
    to_goal = layout.distances()
    target = min(region, key=lambda cell: (to_goal[cell], cell))
    steps = layout.distances(target, region)
    moves = {}
    for cell in region:
        inside = [m for m in layout.moves if layout.next_cell(cell, m) in region]
        closer = [m for m in inside if steps[layout.next_cell(cell, m)] < steps[cell]]
        moves[cell] = closer or inside
    return moves


@dataclass
class WordleBehaviour:
    """Random guess-list words mixed with random consistent answers (see module doc)."""

    random_probability: float = 0.66
    policy: ClassVar[str] = "wordle_random_or_consistent"

    def __post_init__(self) -> None:
        self._guesses = word_lists()[1]
        self._table = feedback_table()
        self._answer_rows = answer_rows()
        self._consistent = np.arange(len(word_lists()[0]))
        self._last_row = 0

    def start(self, rng: np.random.Generator) -> dict[str, Any]:
        self._consistent = np.arange(len(word_lists()[0]))
        return {}

    def parameters(self) -> dict[str, Any]:
        return {"policy": self.policy, "random_probability": self.random_probability}

    def act(self, rng: np.random.Generator, info: dict[str, Any]) -> str:
        if info["turn"] > 0:
            code = feedback_code(info["last_message"])
            self._consistent = self._consistent[
                self._table[self._last_row, self._consistent] == code
            ]
        if rng.random() < self.random_probability:
            self._last_row = int(rng.integers(len(self._guesses)))
        else:
            pick = self._consistent[int(rng.integers(len(self._consistent)))]
            self._last_row = int(self._answer_rows[pick])
        return self._guesses[self._last_row]


BEHAVIOURS = {"maze_fo": MazeBehaviour, "maze_po": MazeBehaviour, "wordle": WordleBehaviour}


def generate(task: str, episodes: int, seed: int) -> Iterator[dict[str, Any]]:
    """Yield ``episodes`` episode records of ``task``'s behaviour policy, deterministically.

    Episode ``i`` is reset with the ``i``-th word of ``SeedSequence(seed)``'s state; the policy
    draws from its own generator seeded by ``[that word, 1]``.
    """
    if task not in TASK_ENV_IDS:
        raise ValueError(f"task must be one of {', '.join(TASK_ENV_IDS)}, got {task!r}")
    env = omnigym.make(TASK_ENV_IDS[task])
    behaviour = BEHAVIOURS[task]()
    for episode_seed in np.random.SeedSequence(seed).generate_state(episodes).tolist():
        rng = np.random.default_rng([episode_seed, 1])
        observation, info = env.reset(seed=episode_seed, options=behaviour.start(rng))
        turns = [{"role": "env", "text": observation, "reward": 0.0}]
        done = truncated = False
        while not done:
            action = behaviour.act(rng, info)
            previous = len(observation)
            observation, reward, terminated, truncated, info = env.step(action)
            agent_line, message = observation[previous + 1 :].split("\n", 1)
            turns.append({"role": "agent", "text": agent_line, "reward": reward})
            turns.append({"role": "env", "text": message, "reward": 0.0})
            done = terminated or truncated
        yield {
            "task": task,
            "seed": episode_seed,
            "behaviour": behaviour.parameters(),
            "turns": turns,
            "return": info["episode_return"],
            "success": info["success"],
            "truncated": truncated,
        }
    env.close()


def summarize(task: str, seed: int, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The statistics written beside a dataset."""
    returns = np.array([record["return"] for record in records], dtype=np.float64)
    return {
        "task": task,
        "env_id": TASK_ENV_IDS[task],
        "seed": seed,
        "episodes": len(records),
        "success_rate": float(np.mean([record["success"] for record in records])),
        "lmrl_success_rate": LMRL_SUCCESS[task],
        "mean_return": float(returns.mean()),
        "median_return": float(np.median(returns)),
        "mean_agent_turns": float(np.mean([len(record["turns"]) // 2 for record in records])),
        "behaviour": {"policy": BEHAVIOURS[task].policy, **asdict(BEHAVIOURS[task]())},
    }


def write_dataset(task: str, episodes: int, seed: int, out: str | Path) -> dict[str, Any]:
    """Generate and write ``TASK.jsonl.gz`` and ``TASK.stats.json`` under ``out``; return the
    statistics."""
    records = list(generate(task, episodes, seed))
    buffer = io.BytesIO()
    # mtime=0 and no file name in the gzip header keep the bytes a function of the arguments.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as archive:
        for record in records:
            archive.write((json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8"))
    out = Path(out)
    atomic_write_bytes(out / f"{task}.jsonl.gz", buffer.getvalue())
    stats = summarize(task, seed, records)
    atomic_write_text(out / f"{task}.stats.json", json.dumps(stats, indent=2) + "\n")
    return stats


def load_dataset(path: str | Path) -> list[dict[str, Any]]:
    """The episode records of a gzipped JSONL dataset."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def load_fixture(task: str) -> list[dict[str, Any]]:
    """The committed 100-episode fixture of ``task`` (``data/fixtures/TASK.jsonl.gz``)."""
    return load_dataset(FIXTURES / f"{task}.jsonl.gz")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write an LMRL offline dataset.")
    parser.add_argument("--task", required=True, choices=sorted(TASK_ENV_IDS))
    parser.add_argument("--episodes", type=int, help="default: the task's default size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="output folder")
    args = parser.parse_args(argv)
    episodes = DEFAULT_EPISODES[args.task] if args.episodes is None else args.episodes
    stats = write_dataset(args.task, episodes, args.seed, args.out)
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
