"""The oracles of LMRL-Gym's text Maze (``LMRL/MazeFO-v0``, ``LMRL/MazePO-v0``).

LMRL-Gym (Abdulhai et al., ICML 2025) scores the Maze against an optimal player. FO: the
oracle reads its cell from each message and follows a shortest path. PO: it plans over belief
states (the cells consistent with what it has seen), which LMRL-Gym does not do; the plan is
Bayes-optimal for the uniform start distribution. Both read only the public layout
(:func:`omnigym.envs.lmrl.maze.load_layout`) and the messages, never the simulator. The oracle's
mean return is the normalized score's 100 (``docs/lmrl.md``).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from typing import Any

from omnigym.envs.lmrl.maze import Cell, load_layout

Belief = tuple[tuple[Cell, int], ...]
"""Positions the agent may be in, with their prior weights (sorted, so beliefs compare)."""

_POSITION = re.compile(r"current position is at position ([\d ]+), ([\d ]+)\.")


@cache
def _belief_plan() -> tuple[dict[str, Belief], dict[Belief, str], dict[tuple[Belief, str], Belief]]:
    """The Bayes-optimal PO policy over the layout's uniform start distribution.

    Returns the opening belief for each opening message, the best move in every reachable
    belief, and the belief after each (belief, message) pair. A belief is the multiset of cells
    the agent may occupy; moving maps each cell through the move (cells can merge against walls)
    and the next wall sentence splits it. Value iteration over the reachable beliefs minimises
    the expected number of moves to the goal, which maximises the expected return.
    """
    layout = load_layout()
    groups: dict[str, Counter[Cell]] = {}
    for start in layout.starts:
        groups.setdefault(layout.wall_sentence(start), Counter())[start] += 1
    opening = {message: _as_belief(cells) for message, cells in groups.items()}

    outcomes: dict[tuple[Belief, str], list[tuple[int, str, Belief]]] = {}
    frontier, seen = list(opening.values()), set(opening.values())
    while frontier:
        belief = frontier.pop()
        for move in layout.moves:
            split: dict[str, Counter[Cell]] = {}
            for cell, weight in belief:
                target = layout.next_cell(cell, move)
                if target != layout.goal:
                    split.setdefault(layout.wall_sentence(target), Counter())[target] += weight
            outcomes[belief, move] = []
            for message, cells in split.items():
                after = _as_belief(cells)
                outcomes[belief, move].append((sum(cells.values()), message, after))
                if after not in seen:
                    seen.add(after)
                    frontier.append(after)

    def expected_moves(belief: Belief, move: str, value: dict[Belief, float]) -> float:
        total = sum(weight for _, weight in belief)
        return sum(mass * (1.0 + value[after]) for mass, _, after in outcomes[belief, move]) / total

    value = dict.fromkeys(seen, 0.0)
    while True:
        updated = {
            belief: min(expected_moves(belief, move, value) for move in layout.moves)
            for belief in seen
        }
        converged = max(abs(updated[belief] - value[belief]) for belief in seen) < 1e-12
        value = updated
        if converged:
            break
    policy = {
        belief: min(layout.moves, key=lambda move, b=belief: expected_moves(b, move, value))
        for belief in seen
    }
    successor = {
        (belief, message): after
        for (belief, move), results in outcomes.items()
        if policy[belief] == move
        for _, message, after in results
    }
    return opening, policy, successor


def _as_belief(cells: Counter[Cell]) -> Belief:
    return tuple(sorted(cells.items()))


class MazeOracle:
    """LMRL's maze oracle: shortest paths when the position is observed, belief planning when not.

    FO: parses its cell from the latest message and follows a breadth-first-search shortest path.
    PO: never reads the environment's state. It knows the public layout and start distribution,
    keeps the belief (the cells consistent with its own moves and the wall sentences it has
    read) and follows the policy that minimises the expected number of moves over that belief.
    """

    def __init__(self, env: Any) -> None:
        maze = env.unwrapped
        self.layout = load_layout()
        self.observability = maze.observability
        self._distance = self.layout.distances()
        self._belief: Belief = ()

    def reset(self, seed: int | None = None) -> None:
        self._belief = ()

    def act(self, observation: str, info: dict[str, Any]) -> str:
        message = info["last_message"]
        if self.observability == "full":
            return self._shortest_path_move(message)
        opening, policy, successor = _belief_plan()
        if info["turn"] == 0:
            self._belief = opening[message]
        else:
            self._belief = successor[self._belief, message]
        return policy[self._belief]

    def _shortest_path_move(self, message: str) -> str:
        match = _POSITION.search(message)
        if match is None:
            raise ValueError(f"MazeOracle cannot read a position from {message!r}")
        cell = tuple(int(group.replace(" ", "")) for group in match.groups())
        return min(
            self.layout.moves, key=lambda move: self._distance[self.layout.next_cell(cell, move)]
        )
