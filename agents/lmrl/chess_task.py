"""The oracle of LMRL-Gym's Chess and Endgames (``LMRL/Chess-v0``, ``LMRL/Endgames-v0``).

LMRL-Gym (Abdulhai et al., ICML 2025) takes the normalized score's 100 from its best runs; here
it is this oracle's mean return (``docs/lmrl.md``): Stockfish searching several times the
opponent's nodes, without the opponent's noise. It follows the game through
:class:`~omnigym.envs.lmrl.chess_task.GameFollower` and runs its own Stockfish
(:func:`~omnigym.envs.lmrl.chess_task.stockfish_for`), as the task's behaviour policies do.
"""

from __future__ import annotations

from typing import Any

from omnigym.envs.lmrl.chess_task import GameFollower, require_int, stockfish_for, task_of

ORACLE_NODES = {"chess": 5_000, "endgames": 10_000}
"""Stockfish's node limit per move when it plays the oracle (the opponent searches 1,000)."""


class ChessOracle:
    """Stockfish playing White at a clearly stronger setting than the opponent.

    Plays Stockfish's best move after ``nodes`` nodes (:data:`ORACLE_NODES`: 5,000 on Chess;
    10,000 on Endgames, with the task's classical evaluation,
    :data:`~omnigym.envs.lmrl.chess_task.CLASSICAL_EVAL_TASKS`), against the opponent's 1,000
    nodes with noise, and answers in SAN. It reads only the FEN of the observation and ``info``
    (its turn and the opponent's last reply, which give Stockfish the game's history); it starts
    a new game at every ``info["turn"] == 0``, so with one Stockfish thread it is deterministic.
    ``stockfish_path`` defaults to the environment's binary (without one it raises
    ``RuntimeError``). ``close()`` quits its engine, as collecting the agent does.
    """

    def __init__(
        self, env: Any = None, nodes: int | None = None, stockfish_path: str | None = None
    ) -> None:
        task = task_of(env)
        self.nodes = require_int("nodes", ORACLE_NODES[task] if nodes is None else nodes, 1)
        self._stockfish = stockfish_for("ChessOracle", env, stockfish_path)
        self._game = GameFollower()

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self._stockfish.new_game()
        board = self._game.follow(observation, info)
        return self._game.play(self._stockfish.best_move(board, self.nodes))

    def close(self) -> None:
        self._stockfish.close()
