"""LMRL-Gym's text Maze, fully (FO) and partially (PO) observed, and its dataset's behaviour.

Follows the Maze task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232): an agent moves
through a small maze by typing ``move up/down/left/right`` and pays −1 per move until it reaches
the goal. The layout is data (``maze.yaml``): a 10×13 double-T in the spirit of LMRL's maze, not
its exact layout. Departures from the paper's code: an illegal string costs −1 (the paper's
number; the code uses −4, available through ``illegal_reward``); reaching the 100-move cap costs
one more −1 so that returns span [−101, 0] as in LMRL's normalization constants; the split of
``done`` into ``terminated`` and ``truncated`` is ours.

The task's oracles (shortest paths on FO, belief planning on PO) are players, in
:mod:`omnigym.agents.lmrl.maze`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from omnigym.envs.lmrl.text_task import (
    ScriptedBehaviour,
    TextTaskEnv,
    Turn,
    require_choice,
    require_finite_number,
)

Cell = tuple[int, int]
OBSERVABILITIES = ("full", "partial")
LAYOUT_PATH = Path(__file__).with_name("maze.yaml")


@dataclass(frozen=True)
class MazeLayout:
    """The maze as public data: free cells, goal, moves and the text of each cell."""

    free: frozenset[Cell]
    goal: Cell
    starts: tuple[Cell, ...]
    moves: dict[str, Cell]
    wall_words: dict[str, str]
    max_moves: int
    sub_mazes: dict[Cell, str]

    def next_cell(self, cell: Cell, move: str) -> Cell:
        """Where ``move`` takes an agent at ``cell`` (it stays put against a wall)."""
        d_row, d_col = self.moves[move]
        target = (cell[0] + d_row, cell[1] + d_col)
        return target if target in self.free else cell

    def walls(self, cell: Cell) -> tuple[str, ...]:
        """The moves that are blocked at ``cell``, in ``moves`` order."""
        return tuple(move for move in self.moves if self.next_cell(cell, move) == cell)

    def wall_sentence(self, cell: Cell) -> str:
        """The PO observation of ``cell``: which neighbours are walls."""
        words = [self.wall_words[move] for move in self.walls(cell)]
        if not words:
            return "There are no walls around you."
        if len(words) == 1:
            return f"There is a wall {words[0]}."
        return f"There are walls {', '.join(words[:-1])} and {words[-1]}."

    def full_sentence(self, cell: Cell) -> str:
        """The FO observation of ``cell``: goal, own position and walls."""
        return (
            f"The goal is at position {_spell_cell(self.goal)}. Your current position is at "
            f"position {_spell_cell(cell)}. {self.wall_sentence(cell)}"
        )

    def distances(
        self, target: Cell | None = None, within: Collection[Cell] | None = None
    ) -> dict[Cell, int]:
        """Moves from each cell to ``target`` (default: the goal), by breadth-first search.

        Only cells of ``within`` (default: every free cell) are used; cells that cannot reach
        ``target`` that way are left out. Moves are reversible, so the search runs from
        ``target`` outwards.
        """
        target = self.goal if target is None else target
        within = self.free if within is None else within
        distance = {target: 0}
        frontier = deque([target])
        while frontier:
            cell = frontier.popleft()
            for move in self.moves:
                neighbour = self.next_cell(cell, move)
                if neighbour in within and neighbour not in distance:
                    distance[neighbour] = distance[cell] + 1
                    frontier.append(neighbour)
        return distance

    def sub_maze(self, cell: Cell) -> str:
        """The name of the behaviour policy's sub-maze that holds ``cell``."""
        return self.sub_mazes[cell]


def _spell_cell(cell: Cell) -> str:
    # LMRL writes multi-digit numbers digit by digit ("1 0") for its tokenizer.
    return ", ".join(" ".join(str(number)) for number in cell)


@cache
def load_layout(path: str | Path = LAYOUT_PATH) -> MazeLayout:
    """Read the maze data file (cached per path)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    rows = data["layout"]
    free = {(r, c) for r, row in enumerate(rows) for c, char in enumerate(row) if char in ".G"}
    (goal,) = [(r, c) for r, row in enumerate(rows) for c, char in enumerate(row) if char == "G"]
    return MazeLayout(
        free=frozenset(free),
        goal=goal,
        starts=tuple(sorted(free - {goal})),
        moves={move: tuple(step) for move, step in data["moves"].items()},
        wall_words=dict(data["wall_words"]),
        max_moves=int(data["max_moves"]),
        sub_mazes={
            (r, c): data["sub_maze_names"][data["sub_mazes"][r][c]] for r, c in sorted(free)
        },
    )


class MazeEnv(TextTaskEnv):
    """Reach the goal of a text maze in as few moves as possible.

    ## Description
    LMRL-Gym's Maze task (Abdulhai et al., ICML 2025). The maze is the 10×13 double-T of
    ``maze.yaml``: a top corridor, a stem down the middle and a second corridor crossing it, with
    the goal at the bottom of the stem. In the fully observed form (``LMRL/MazeFO-v0``) each
    message gives the goal, the agent's cell and the walls around it; in the partially observed
    form (``LMRL/MazePO-v0``) only the walls.

    ## Action Space
    ``Text(max_length=256)``, printable. ``move up``, ``move down``, ``move left`` and
    ``move right`` (matched after trimming and lower-casing) move one cell; a move into a wall
    leaves the agent in place. Any other string is an illegal move: it is penalised and flagged
    with ``info["invalid_action"]``. A non-``str`` action raises ``ValueError``.

    ## Observation Space
    ``Text(max_length=65536)``: the transcript since reset (``obs_mode="transcript"``) or the
    latest message (``obs_mode="last"``). Messages read, FO:
    ``The goal is at position 8, 6. Your current position is at position 1, 1 1. There are walls
    above you and below you.`` and PO: ``There are walls above you and below you.`` (two-digit
    numbers are written digit by digit, as in LMRL).

    ## Rewards
    0 for the move that reaches the goal, −1 for every other move (into a wall too),
    ``illegal_reward`` (−1) for an illegal string, and −1 more when the move cap is reached. The
    return lies in [−101, 0].

    ## Starting State
    A cell drawn uniformly from the 25 free cells other than the goal, or
    ``options={"start": (row, column)}``.

    ## Episode End
    Terminated on reaching the goal (``info["success"] = True``); truncated after 100 moves.

    ## Arguments
    ``observability`` (``"full"`` or ``"partial"``), ``illegal_reward`` (float, −1.0),
    ``obs_mode`` (``"transcript"`` or ``"last"``), ``render_mode`` (``None`` or ``"ansi"``).
    """

    observation_max_length = 65536
    min_return = -101.0
    evaluation_episodes = 32
    """LMRL's protocol: 32 episodes from each of the 25 starts (see :meth:`evaluation_runs`)."""

    @classmethod
    def evaluation_runs(cls) -> list[tuple[int, dict[str, Any]]]:
        return [
            (index * cls.evaluation_episodes + repeat, {"start": start})
            for index, start in enumerate(load_layout().starts)
            for repeat in range(cls.evaluation_episodes)
        ]

    def __init__(
        self,
        observability: str = "full",
        illegal_reward: float = -1.0,
        obs_mode: str = "transcript",
        render_mode: str | None = None,
    ) -> None:
        self.observability = require_choice("observability", observability, OBSERVABILITIES)
        self.illegal_reward = require_finite_number("illegal_reward", illegal_reward)
        super().__init__(obs_mode=obs_mode, render_mode=render_mode)
        self.layout = load_layout()
        self.score_id = "LMRL/MazeFO-v0" if observability == "full" else "LMRL/MazePO-v0"
        describe = (
            self.layout.full_sentence if observability == "full" else self.layout.wall_sentence
        )
        self._messages = {cell: describe(cell) for cell in self.layout.free}
        self._moves = {
            move: {cell: self.layout.next_cell(cell, move) for cell in self.layout.free}
            for move in self.layout.moves
        }
        self._legal = list(self.layout.moves)
        self._distance = self.layout.distances()
        self._position = self.layout.starts[0]
        self._moves_made = 0
        self._wall_bumps = 0

    def _begin(self, options: dict[str, Any]) -> str:
        if "start" in options:
            start = options["start"]
            start = tuple(start) if isinstance(start, (list, tuple)) else start
            if start not in self.layout.starts:
                raise ValueError(
                    f"options['start'] must be a free non-goal cell (row, column), got {start!r}"
                )
        else:
            start = self.layout.starts[int(self.np_random.integers(len(self.layout.starts)))]
        self._position = start
        self._moves_made = 0
        self._wall_bumps = 0
        return self._messages[start]

    def _play(self, action: str) -> Turn:
        moves = self._moves.get(action.strip().lower())
        if moves is None:
            reward, invalid = self.illegal_reward, True
        else:
            target = moves[self._position]
            self._wall_bumps += target == self._position
            self._position = target
            reward, invalid = (0.0 if target == self.layout.goal else -1.0), False
        self._moves_made += 1
        reached = self._position == self.layout.goal
        capped = not reached and self._moves_made >= self.layout.max_moves
        return Turn(
            message=self._messages[self._position],
            reward=reward - 1.0 if capped else reward,
            terminated=reached,
            truncated=capped,
            invalid=invalid,
            success=reached,
        )

    @property
    def position(self) -> Cell:
        """The agent's cell: hidden state, for behaviour policies and tests, never for players."""
        return self._position

    def _legal_actions(self) -> list[str]:
        return list(self._legal)

    def _metrics(self) -> dict[str, float]:
        return {
            "wall_bumps": float(self._wall_bumps),
            "distance_to_goal": float(self._distance[self._position]),
        }


# -- the dataset's behaviour policy -----------------------------------------------------------


class MazeBehaviour(ScriptedBehaviour):
    """Sub-maze-confined mixture of a goal-seeking solver and random moves.

    The episode keeps to the sub-maze (``maze.yaml``) of its start, which it reads from the
    simulator; each move is, with probability ``solver_probability``, a step of a solver that
    heads for the sub-maze's cell nearest the goal, else a uniformly random move that stays in
    the sub-maze (bumping into walls included). Only episodes that start in the goal's sub-maze
    can succeed. Departure: the goal's sub-maze holds 15 of the 25 starts, so the dataset
    succeeds in about 57 % of episodes (LMRL: 11 %): on this small layout a uniformly random walk
    already succeeds in about 30 %, and the dataset must beat random play for the normalized
    score's 50 to mean anything.
    """

    policy = "maze_sub_maze_mixture"
    default_episodes = 1240
    lmrl_success = 0.11

    def __init__(self, env: Any, solver_probability: float = 0.15) -> None:
        super().__init__(env)
        self.solver_probability = require_finite_number("solver_probability", solver_probability)
        self._layout = load_layout()
        self._start: Cell = self._layout.starts[0]
        self._cell = self._start
        self._toward: dict[Cell, list[str]] = {}
        self._inside: dict[Cell, list[str]] = {}

    def parameters(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "solver_probability": self.solver_probability,
            "sub_maze": self._layout.sub_maze(self._start),
            "start": list(self._start),
        }

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self._begin(self.env.unwrapped.position)
        use_solver = self.rng.random() < self.solver_probability
        choices = self._toward[self._cell] if use_solver else self._inside[self._cell]
        move = choices[int(self.rng.integers(len(choices)))]
        self._cell = self._layout.next_cell(self._cell, move)
        return move

    def _begin(self, start: Cell) -> None:
        self._start = self._cell = start
        region = _reachable_within(self._layout, start)
        self._inside = {
            cell: [m for m in self._layout.moves if self._layout.next_cell(cell, m) in region]
            for cell in region
        }
        self._toward = _solver_moves(self._layout, region)


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
