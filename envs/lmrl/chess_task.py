"""LMRL-Gym's Chess and Endgames: White against a deterministically weakened Stockfish.

Follows the Chess and Endgames tasks of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232):
the agent plays White by typing moves in SAN, sees the position as a FEN string with its
characters spaced out (LMRL's tokenizer convention), and is rewarded +1 for a win, −1 for a loss
and for every illegal move, 0 otherwise. Rules, move parsing and game outcomes come from
python-chess (``chess``, GPL-3.0, the optional extra ``chess``, imported only when an environment
or agent is built); the opponent is Debian's ``stockfish`` binary driven through python-chess's
UCI engine API (1 thread, 16 MB hash, a new game at every reset).

Departures from LMRL-Gym (``docs/lmrl.md``):

- **Opponent strength.** LMRL asked Stockfish for Elo 1200, which Stockfish 15.1 cannot give
  (its ``UCI_Elo`` floor is 1350) and which is weakened through a time-seeded random choice. Here
  the reply is searched to ``opponent_nodes`` nodes with MultiPV ``opponent_top_k``, drawn from
  those moves by a softmax over their centipawn scores (temperature ``opponent_temperature_cp``),
  and replaced with probability ``opponent_epsilon`` by a uniformly random legal move, all from
  the environment's ``np_random``: the same seed and moves give the same game.
  ``opponent_skill_level`` opts into Stockfish's own weakening (and loses that determinism).
- **Fallback opponent.** Without a Stockfish binary the opponent is a depth-2 alpha-beta search
  over material and piece-square bonuses, written here because it only has to stand in for
  Stockfish (same top-k softmax and ε noise); ``metrics["opponent"]`` says which one played.
- **Draws are claimed at once**: threefold repetition and the fifty-move rule end the game as a
  draw, like stalemate and insufficient material (LMRL ends games only by python-chess's
  automatic rules, fivefold repetition and the 75-move rule).
- **Illegal moves** cost −1 and leave the board unchanged, as in LMRL; LMRL ends the game on a
  null move ("0000"), here it is one more illegal move.
- **Move cap.** At most 400 agent moves (illegal ones included); the 400th, if the game is not
  over, truncates the episode and costs one more −1, as the Maze's cap does. LMRL's code stops
  after the 401st move instead; both make −401 the minimum return.
- **Endgame positions.** Training starts are drawn at reset; the 645 evaluation positions
  (LMRL's count) are committed in ``data/endgames_eval.txt``, written by the seeded script
  :mod:`omnigym.envs.lmrl.endgames_positions`, which drops positions Stockfish mates in at most
  four moves (LMRL drops those it mates in fewer than 15). Training starts never repeat them.
- **Opponent record.** ``info["opponent"]`` names the opponent on every step; the final
  ``metrics["opponent"]`` holds it as a number (:data:`OPPONENT_CODES`), as metrics are floats.
- **Agents and sizes.** The oracle is Stockfish at 5× (Chess) or 10× (Endgames, with Stockfish
  15.1's classical evaluation) the opponent's nodes, without noise. The Chess behaviour policy
  plays the opponent's own recipe at a node limit drawn per game from a ladder around the
  opponent's (LMRL: Stockfish at Elo 800–1600 against Elo 1200); the Endgames one is ε-greedy
  (LMRL's). Datasets default to 200 games per task (LMRL: 625k and 97.8k) and the Chess
  oracle's normalized 100 to 100 games (LMRL: 1,000), so
  that recomputing both tasks' normalization constants takes about 6 minutes (4 for Chess, 2 for
  Endgames) on two cores with Debian's Stockfish 15.1.

Stockfish runs as a child process. ``close()`` quits it; so does garbage collection of its owner
(:func:`weakref.finalize`), and interpreter exit, also after an uncaught exception: the engine's
background thread is started as a daemon thread, so it cannot keep the interpreter waiting. A
process killed outright takes Stockfish with it (:func:`omnigym.processes.die_with_parent`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import warnings
import weakref
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from omnigym.envs.lmrl.text_task import (
    ACTION_MAX_LENGTH,
    ScriptedBehaviour,
    TextTaskEnv,
    Turn,
    require_choice,
    require_finite_number,
)
from omnigym.processes import die_with_parent

if TYPE_CHECKING:
    import chess
    import chess.engine

EVAL_POSITIONS_PATH = Path(__file__).parent / "data" / "endgames_eval.txt"
STOCKFISH_LOCATIONS = ("/usr/games/stockfish",)
"""Where Debian installs stockfish (off many shells' PATH); searched after PATH."""
OPPONENTS = ("stockfish", "fallback", "random")
OPPONENT_CODES = {"stockfish": 0.0, "fallback": 1.0, "random": 2.0}
"""``metrics["opponent"]``: which opponent played, as a float (metrics are floats)."""
SPLITS = ("train", "eval")
ENDGAME_MATERIALS = ("Q", "R", "QR", "RR")
"""White's pieces besides its king in an endgame; Black has its king alone."""
MAX_AGENT_MOVES = 400
MATE_CP = 100_000
"""Centipawn value of a forced mate (minus its length in plies) in the opponent's softmax."""
ENGINE_THREADS = 1
ENGINE_HASH_MB = 16
FALLBACK_DEPTH = 2
OPPONENT_NODES = 1_000
OPPONENT_TOP_K = 3
OPPONENT_TEMPERATURE_CP = 100.0
OPPONENT_EPSILON = 0.05
"""The opponent's defaults: node limit, MultiPV, softmax temperature, chance of a random move."""

CLASSICAL_EVAL_TASKS = frozenset({"endgames"})
"""Tasks whose Stockfish players (not the opponent) use Stockfish 15.1's classical evaluation:
its rule for a lone king (drive it to the edge, bring the kings together) mates in a fraction of
the nodes that the default NNUE evaluation needs. Stockfish 16 and later have no such option
and play with NNUE."""
CHESS_LADDER_NODES = (500, 1_000, 2_000, 4_000, 8_000)
"""The node limits the Chess behaviour policy draws from uniformly, one per game."""
ENDGAMES_EPSILONS = (0.1, 0.3, 0.5)
"""The Endgames behaviour policy's chance of a random legal move, drawn once per game..."""
ENDGAMES_EPSILON_WEIGHTS = (0.2, 0.2, 0.6)
"""... with these probabilities, tuned so the dataset's success rate is near LMRL's 0.59."""
ENDGAMES_BEHAVIOUR_NODES = 500
DATASET_GAMES = 200
"""Default dataset size of both tasks (LMRL: 625k Chess and 97.8k Endgames episodes), kept
small so that recomputing the normalization constants takes minutes."""
CHESS_EVALUATION_GAMES = 100
"""Oracle games from the start position behind Chess's normalized 100 (LMRL: 1,000)."""


def import_chess() -> Any:
    """The ``chess`` package, imported on first use (GPL-3.0, the optional extra ``chess``)."""
    try:
        import chess
        import chess.engine
    except ImportError:
        raise ImportError(
            "LMRL/Chess-v0 needs the optional extra: pip install 'omnigym[chess]'"
        ) from None
    return chess


def find_stockfish(path: str | None = None) -> str | None:
    """The Stockfish binary to run: ``path`` if given, else ``stockfish`` on ``PATH``, else
    :data:`STOCKFISH_LOCATIONS`; ``None`` when there is none. A given ``path`` that is not an
    executable file raises ``ValueError`` naming ``stockfish_path``."""
    if path is not None:
        if not isinstance(path, (str, os.PathLike)) or not _executable(path):
            raise ValueError(f"stockfish_path must be an executable file, got {path!r}")
        return os.fspath(path)
    found = shutil.which("stockfish")
    if found is not None:
        return found
    return next((location for location in STOCKFISH_LOCATIONS if _executable(location)), None)


def _executable(path: str | os.PathLike) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def spaced_fen(board: chess.Board) -> str:
    """LMRL's observation of ``board``: its FEN with a space between any two characters."""
    return " ".join(board.fen())


def fen_from_observation(observation: str) -> str:
    """The FEN that :func:`spaced_fen` spaced out (its characters sit at the even offsets)."""
    return observation[::2]


@cache
def eval_positions() -> tuple[str, ...]:
    """The 645 committed Endgames evaluation FENs (``data/endgames_eval.txt``)."""
    lines = EVAL_POSITIONS_PATH.read_text(encoding="ascii").splitlines()
    return tuple(line for line in lines if line and not line.startswith("#"))


def random_endgame(rng: np.random.Generator, exclude: frozenset[str] = frozenset()) -> chess.Board:
    """A random endgame: White king plus one of :data:`ENDGAME_MATERIALS` against a lone black
    king, every piece on a uniformly random square, White to move, Black not in check, the game
    not over, and its FEN not in ``exclude``."""
    chess = import_chess()
    while True:
        pieces = "K" + ENDGAME_MATERIALS[int(rng.integers(len(ENDGAME_MATERIALS)))] + "k"
        board = chess.Board(None)
        squares = rng.choice(64, size=len(pieces), replace=False)
        for symbol, square in zip(pieces, squares, strict=True):
            board.set_piece_at(int(square), chess.Piece.from_symbol(symbol))
        if board.is_valid() and board.outcome() is None and board.fen() not in exclude:
            return board


def game_result(board: chess.Board) -> str | None:
    """``"win"``, ``"loss"`` or ``"draw"`` for White if the game is over, else ``None``.

    Over means python-chess's automatic endings (checkmate, stalemate, insufficient material,
    the 75-move rule, fivefold repetition) or a draw that could be claimed (threefold
    repetition, the fifty-move rule), which is claimed at once.
    """
    outcome = board.outcome()
    if outcome is not None:
        if outcome.winner is None:
            return "draw"
        return "win" if outcome.winner == import_chess().WHITE else "loss"
    if board.is_fifty_moves() or board.is_repetition(3):
        return "draw"
    return None


def parse_move(board: chess.Board, action: str) -> chess.Move | None:
    """The legal move that ``action`` names in SAN (spaces anywhere ignored, so LMRL's spaced
    form ``N f 3`` reads as ``Nf3``) or in UCI (``g1f3``), else ``None``."""
    if len(action) > ACTION_MAX_LENGTH:
        return None
    chess = import_chess()
    text = "".join(action.split())
    for parse in (board.parse_san, chess.Move.from_uci):
        try:
            move = parse(text)
        except ValueError:
            continue
        if move and board.is_legal(move):
            return move
    return None


# -- Stockfish as a child process -------------------------------------------------------------


class StockfishProcess:
    """One Stockfish process driven through python-chess's ``SimpleEngine`` (1 thread, 16 MB
    hash), started on first use and quit by :meth:`close` or when this object is collected.

    python-chess runs the engine from a background thread that the interpreter waits for at
    exit; it is started from a daemon thread here (a thread inherits that flag), so an
    interpreter that exits without ``close()`` (an uncaught exception mid-game) does not hang,
    and the finalizer still quits the engine at exit.
    """

    def __init__(
        self, path: str, options: dict[str, Any] | None = None, classical_eval: bool = False
    ) -> None:
        self.path = path
        self.options = {"Threads": ENGINE_THREADS, "Hash": ENGINE_HASH_MB, **(options or {})}
        self.classical_eval = classical_eval
        self._engine: chess.engine.SimpleEngine | None = None
        self._finalizer: weakref.finalize | None = None
        self._game = object()

    @property
    def pid(self) -> int | None:
        """The engine's process id while it runs."""
        return None if self._engine is None else self._engine.transport.get_pid()

    def engine(self) -> chess.engine.SimpleEngine:
        if self._engine is None:
            started: dict[str, Any] = {}

            def start() -> None:
                try:
                    started["engine"] = import_chess().engine.SimpleEngine.popen_uci(
                        self.path, preexec_fn=die_with_parent
                    )
                except BaseException as error:  # re-raised in the calling thread below
                    started["error"] = error

            thread = threading.Thread(target=start, name="stockfish-start", daemon=True)
            thread.start()
            thread.join()
            if "error" in started:
                raise started["error"]
            engine = started["engine"]
            self._finalizer = weakref.finalize(self, _shut_down, engine)
            options = dict(self.options)
            if self.classical_eval and "Use NNUE" in engine.options:
                options["Use NNUE"] = False
            engine.configure(options)
            self._engine = engine
        return self._engine

    def new_game(self) -> None:
        """Make the next search start a new game (python-chess sends ``ucinewgame``)."""
        self._game = object()

    def analyse(self, board: chess.Board, nodes: int, count: int = 1) -> list[dict[str, Any]]:
        """python-chess's analysis lines (``pv``, ``score``) of the ``count`` best moves."""
        limit = import_chess().engine.Limit(nodes=nodes)
        return self.engine().analyse(board, limit, multipv=count, game=self._game)

    def top_moves(self, board: chess.Board, nodes: int, count: int) -> list[tuple[Any, float]]:
        """Up to ``count`` best moves with their centipawn scores for the side to move."""
        return [
            (line["pv"][0], float(line["score"].relative.score(mate_score=MATE_CP)))
            for line in self.analyse(board, nodes, count)
            if line.get("pv")
        ]

    def best_move(self, board: chess.Board, nodes: int) -> chess.Move:
        """Stockfish's move after searching ``nodes`` nodes."""
        chess = import_chess()
        return self.engine().play(board, chess.engine.Limit(nodes=nodes), game=self._game).move

    def close(self) -> None:
        """Quit the engine (a later search starts a new process)."""
        if self._finalizer is not None:
            self._finalizer()
        self._engine = self._finalizer = None


def _shut_down(engine: chess.engine.SimpleEngine) -> None:
    # quit() blocks on the engine's event loop; when collection happens on that loop's own
    # thread, closing the transport (which kills the process) is all that can be done.
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is not engine.protocol.loop:
        with suppress(import_chess().engine.EngineError, TimeoutError):
            engine.quit()
    engine.close()


# -- opponents --------------------------------------------------------------------------------


def _pick_weakened(
    candidates: list[tuple[Any, float]], temperature: float, rng: np.random.Generator
) -> Any:
    scores = np.array([score for _, score in candidates])
    weights = np.exp((scores - scores.max()) / temperature)
    return candidates[int(rng.choice(len(candidates), p=weights / weights.sum()))][0]


def _random_move(board: chess.Board, rng: np.random.Generator) -> chess.Move:
    moves = list(board.legal_moves)
    return moves[int(rng.integers(len(moves)))]


class RandomOpponent:
    """Uniformly random legal replies."""

    name = "random"

    def new_game(self) -> None:
        pass

    def reply(self, board: chess.Board, rng: np.random.Generator) -> chess.Move:
        return _random_move(board, rng)

    def close(self) -> None:
        pass


class WeakenedPlayer:
    """The deterministic weakening over a search that scores its ``top_k`` best moves:
    with probability ``epsilon`` a uniformly random legal move, else one of those moves drawn by
    a softmax over their centipawn scores at ``temperature_cp``. With ``skill_level`` set
    (Stockfish only) the move is Stockfish's own weakened best move instead of the softmax.

    The opponent plays this way; so do the behaviour policies (Chess: the opponent's recipe at
    another node limit; Endgames: ``top_k=1``, which is ε-greedy).
    """

    def __init__(
        self,
        stockfish: StockfishProcess | None,
        nodes: int,
        top_k: int,
        temperature_cp: float,
        epsilon: float,
        skill_level: int | None = None,
    ) -> None:
        self.stockfish = stockfish
        self.name = "fallback" if stockfish is None else "stockfish"
        self.nodes, self.top_k = nodes, top_k
        self.temperature_cp, self.epsilon = temperature_cp, epsilon
        self.skill_level = skill_level

    def new_game(self) -> None:
        if self.stockfish is not None:
            self.stockfish.new_game()

    def reply(self, board: chess.Board, rng: np.random.Generator) -> chess.Move:
        if rng.random() < self.epsilon:
            return _random_move(board, rng)
        if self.stockfish is None:
            candidates = fallback_top_moves(board, FALLBACK_DEPTH, self.top_k)
        elif self.skill_level is not None:
            return self.stockfish.best_move(board, self.nodes)
        else:
            candidates = self.stockfish.top_moves(board, self.nodes, self.top_k)
        return _pick_weakened(candidates, self.temperature_cp, rng)

    def close(self) -> None:
        if self.stockfish is not None:
            self.stockfish.close()


# -- the fallback opponent's search -----------------------------------------------------------

PIECE_VALUES = (0, 100, 320, 330, 500, 900, 0)
"""Centipawns by python-chess piece type (index 1 pawn ... 6 king)."""
INFINITY = 10 * MATE_CP


@cache
def piece_square_tables() -> dict[tuple[int, bool], tuple[int, ...]]:
    """Positional bonuses in centipawns by (piece type, endgame?) and square, White's view.

    Built from two numbers per square, its rank and its ring (0 on the edge, 3 in the centre):
    pawns gain by advancing, knights and bishops by centralising, rooks on the seventh rank, the
    king hides from the centre while queens are on the board and walks to it once they are off.
    """
    tables = {}
    for endgame in (False, True):
        rows: dict[int, list[int]] = {piece: [] for piece in range(1, 7)}
        for square in range(64):
            file, rank = square % 8, square // 8
            ring = 3 - int(max(abs(file - 3.5), abs(rank - 3.5)))
            rows[1].append(8 * (rank - 1) + 4 * ring)
            rows[2].append(10 * ring - 15)
            rows[3].append(5 * ring)
            rows[4].append(15 if rank == 6 else 2 * ring)
            rows[5].append(2 * ring)
            rows[6].append(10 * ring if endgame else -10 * ring)
        for piece, row in rows.items():
            tables[piece, endgame] = tuple(row)
    return tables


def evaluate_material(board: chess.Board) -> int:
    """Material plus piece-square bonuses, in centipawns for the side to move."""
    chess = import_chess()
    tables = piece_square_tables()
    endgame = not board.queens
    score = 0
    for piece in chess.PIECE_TYPES:
        table = tables[piece, endgame]
        value = PIECE_VALUES[piece]
        for square in chess.scan_forward(board.pieces_mask(piece, chess.WHITE)):
            score += value + table[square]
        for square in chess.scan_forward(board.pieces_mask(piece, chess.BLACK)):
            score -= value + table[chess.square_mirror(square)]
    return score if board.turn == chess.WHITE else -score


def _negamax(board: chess.Board, depth: int, alpha: float, beta: float) -> float:
    if depth == 0:
        if board.is_check() and board.is_checkmate():
            return -MATE_CP
        return evaluate_material(board)
    best = -INFINITY
    for move in board.legal_moves:
        board.push(move)
        value = -_negamax(board, depth - 1, -beta, -alpha)
        board.pop()
        best = max(best, value)
        alpha = max(alpha, value)
        if alpha >= beta:
            break
    if best == -INFINITY:  # no legal move: mated or stalemated
        return -MATE_CP if board.is_check() else 0
    return best


def fallback_top_moves(board: chess.Board, depth: int, count: int) -> list[tuple[Any, float]]:
    """The ``count`` best moves of a ``depth``-ply alpha-beta search with their scores.

    A root move only needs an exact score while it can still enter the best ``count``, so each
    is searched with the current ``count``-th best score as its lower bound.
    """
    best: list[tuple[Any, float]] = []
    for move in board.legal_moves:
        bound = best[-1][1] if len(best) == count else -INFINITY
        board.push(move)
        value = -_negamax(board, depth - 1, -INFINITY, -bound)
        board.pop()
        if value > bound:
            best.append((move, float(value)))
            best.sort(key=lambda entry: -entry[1])
            del best[count:]
    return best


# -- the environments -------------------------------------------------------------------------


def require_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    return int(value)


class ChessEnv(TextTaskEnv):
    """Win a game of chess as White against a weakened Stockfish.

    ## Description
    LMRL-Gym's Chess task (Abdulhai et al., ICML 2025). The agent plays White from the standard
    starting position; after each of its legal moves the opponent replies at once. The opponent
    is Stockfish searching ``opponent_nodes`` nodes, weakened deterministically (module
    docstring); without a Stockfish binary, a built-in depth-2 search (with a ``UserWarning``).

    ## Action Space
    ``Text(max_length=256)``, printable. A move in SAN (``Nf3``, ``O-O``, ``exd8=Q+``; spaces
    anywhere are ignored, so LMRL's ``N f 3`` works) or UCI (``g1f3``). Anything that is not a
    legal move in the position is an illegal move: −1, board unchanged, game continues, and
    ``info["invalid_action"]``. A non-``str`` action raises ``ValueError``.

    ## Observation Space
    ``Text(max_length=256)``: the current position's FEN with a space between any two characters
    (``r n b q k b n r / p p p p ...``), as LMRL gives it. No FEN is longer than 91 characters
    (71 for the board, the rest for side, castling, en-passant square and two counters of at
    most 3 and 5 digits), so the spaced form fits in 181.

    ## Rewards
    +1 for a win, −1 for a loss and for each illegal move, 0 for a draw and every other move;
    one more −1 when the 400-move cap is reached. Returns lie in [−401, 1].

    ## Starting State
    The standard position, or ``options={"fen": FEN}`` (a legal position with White to move,
    not over, whose full-move number is at most 9,999).

    ## Episode End
    Terminated when the game is over: checkmate, stalemate, insufficient material, threefold
    repetition, the fifty-move rule (draws are claimed at once). Truncated after 400 agent moves.
    ``info`` carries ``legal_actions`` (SAN), ``opponent`` (its name) and ``opponent_move`` (its
    last reply in SAN, or ``None``); the final ``metrics`` add ``win``, ``draw``, ``loss`` (0/1),
    ``moves`` (legal agent moves) and ``opponent`` (:data:`OPPONENT_CODES`: 0 Stockfish,
    1 fallback, 2 random).

    ## Arguments
    ``opponent`` (``"stockfish"``, ``"fallback"`` or ``"random"``), ``stockfish_path`` (``None``:
    ``PATH`` then ``/usr/games/stockfish``), ``opponent_nodes`` (1000), ``opponent_top_k`` (3),
    ``opponent_temperature_cp`` (100.0), ``opponent_epsilon`` (0.05), ``opponent_skill_level``
    (``None``, or 0..20 for Stockfish's own non-deterministic weakening), ``render_mode``
    (``None`` or ``"ansi"``: the game's record of positions and moves).
    """

    observation_max_length = 256
    score_id = "LMRL/Chess-v0"
    min_return: ClassVar[float] = -(MAX_AGENT_MOVES + 1.0)
    evaluation_episodes: ClassVar[int] = CHESS_EVALUATION_GAMES
    task: ClassVar[str] = "chess"

    def __init__(
        self,
        opponent: str = "stockfish",
        stockfish_path: str | None = None,
        opponent_nodes: int = OPPONENT_NODES,
        opponent_top_k: int = OPPONENT_TOP_K,
        opponent_temperature_cp: float = OPPONENT_TEMPERATURE_CP,
        opponent_epsilon: float = OPPONENT_EPSILON,
        opponent_skill_level: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        self._chess = import_chess()
        require_choice("opponent", opponent, OPPONENTS)
        self.opponent_nodes = require_int("opponent_nodes", opponent_nodes, 1)
        self.opponent_top_k = require_int("opponent_top_k", opponent_top_k, 1)
        temperature = require_finite_number("opponent_temperature_cp", opponent_temperature_cp)
        if temperature <= 0:
            raise ValueError(f"opponent_temperature_cp must be > 0, got {temperature!r}")
        epsilon = require_finite_number("opponent_epsilon", opponent_epsilon)
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"opponent_epsilon must be in [0, 1], got {epsilon!r}")
        if opponent_skill_level is not None:
            opponent_skill_level = require_int("opponent_skill_level", opponent_skill_level, 0, 20)
        self.opponent_temperature_cp, self.opponent_epsilon = temperature, epsilon
        self.opponent_skill_level = opponent_skill_level
        self.stockfish_path = find_stockfish(stockfish_path) if opponent == "stockfish" else None
        if opponent == "stockfish" and self.stockfish_path is None:
            warnings.warn(
                f"stockfish binary not found: {self.score_id} is using the built-in fallback "
                "opponent; scores are not comparable with Stockfish runs (install Debian's "
                'stockfish package or pass stockfish_path=); pass opponent="random" for a '
                "uniformly random opponent instead",
                UserWarning,
                stacklevel=2,
            )
        if opponent_skill_level is not None:
            if self.stockfish_path is None:
                raise ValueError("opponent_skill_level needs the Stockfish opponent")
            warnings.warn(
                f"opponent_skill_level={opponent_skill_level}: Stockfish weakens itself with a "
                f"time-seeded random choice, so {self.score_id} is not deterministic under "
                "reset(seed)",
                UserWarning,
                stacklevel=2,
            )
        super().__init__(render_mode=render_mode)
        self._opponent: RandomOpponent | WeakenedPlayer
        if opponent == "random":
            self._opponent = RandomOpponent()
        else:
            options = {} if opponent_skill_level is None else {"Skill Level": opponent_skill_level}
            stockfish = (
                None
                if self.stockfish_path is None
                else StockfishProcess(self.stockfish_path, options)
            )
            self._opponent = WeakenedPlayer(
                stockfish,
                self.opponent_nodes,
                self.opponent_top_k,
                temperature,
                epsilon,
                opponent_skill_level,
            )
        self.opponent = self._opponent.name
        self.board = self._chess.Board()
        self._position = spaced_fen(self.board)
        self._result: str | None = None
        self._opponent_move: str | None = None
        self._moves_made = 0
        self._legal_moves = 0

    # -- episode ------------------------------------------------------------------------------

    def _start_board(self) -> chess.Board:
        """The position a game starts from when ``options`` names none."""
        return self._chess.Board()

    def _begin(self, options: dict[str, Any]) -> str:
        if "fen" in options:
            self.board = self._board_from_option(options["fen"])
        else:
            self.board = self._start_board()
        self._opponent.new_game()
        self._result = None
        self._opponent_move = None
        self._moves_made = self._legal_moves = 0
        self._position = spaced_fen(self.board)
        return self._position

    def _board_from_option(self, fen: Any) -> chess.Board:
        try:
            board = self._chess.Board(fen if isinstance(fen, str) else None)
        except ValueError:
            board = None
        if board is None or not isinstance(fen, str):
            raise ValueError(f"options['fen'] must be a FEN string, got {fen!r}")
        problem = None
        if not board.is_valid():
            problem = "is not a legal position"
        elif board.turn != self._chess.WHITE:
            problem = "must have White to move"
        elif game_result(board) is not None:
            problem = "is a finished game"
        elif board.fullmove_number > 9_999:
            problem = "has a full-move number above 9,999"
        if problem is not None:
            raise ValueError(f"options['fen'] {problem}: {fen!r}")
        return board

    def _play(self, action: str) -> Turn:
        self._moves_made += 1
        self._opponent_move = None
        move = parse_move(self.board, action)
        reward = -1.0 if move is None else 0.0
        if move is not None:
            self._legal_moves += 1
            self.board.push(move)
            self._result = game_result(self.board)
            if self._result is None:
                reply = self._opponent.reply(self.board, self.np_random)
                self._opponent_move = self.board.san(reply)
                self.board.push(reply)
                self._result = game_result(self.board)
            reward = {"win": 1.0, "loss": -1.0}.get(self._result, 0.0)
        terminated = self._result is not None
        truncated = not terminated and self._moves_made >= MAX_AGENT_MOVES
        self._position = spaced_fen(self.board)
        return Turn(
            message=self._position,
            reward=reward - 1.0 if truncated else reward,
            terminated=terminated,
            truncated=truncated,
            invalid=move is None,
            success=self._result == "win",
        )

    def _observation(self) -> str:
        return self._position

    def _legal_actions(self) -> list[str]:
        if self._result is not None or self._moves_made >= MAX_AGENT_MOVES:
            return []
        return [self.board.san(move) for move in self.board.legal_moves]

    def _info(self, invalid: bool) -> dict[str, Any]:
        info = super()._info(invalid)
        info["opponent"] = self.opponent
        info["opponent_move"] = self._opponent_move
        return info

    def _metrics(self) -> dict[str, float]:
        return {
            "win": float(self._result == "win"),
            "draw": float(self._result == "draw"),
            "loss": float(self._result == "loss"),
            "moves": float(self._legal_moves),
            "opponent": OPPONENT_CODES[self.opponent],
        }

    def close(self) -> None:
        self._opponent.close()
        super().close()


class EndgamesEnv(ChessEnv):
    """Checkmate a lone king with king and queen, rook, queen and rook, or two rooks.

    ## Description
    LMRL-Gym's Endgames task (Abdulhai et al., ICML 2025): chess from a theoretical endgame in
    which White has its king plus Q, R, Q+R or R+R and Black its king alone, against the same
    weakened Stockfish as ``LMRL/Chess-v0``. Black cannot win, so a game ends in a mate (+1) or
    a draw (0: stalemate, a captured piece leaving insufficient material, threefold repetition,
    the fifty-move rule).

    ## Action Space
    As ``LMRL/Chess-v0``: a SAN or UCI move; an illegal one costs −1 and changes nothing.

    ## Observation Space
    As ``LMRL/Chess-v0``: the spaced FEN of the current position, ``Text(max_length=256)``.

    ## Rewards
    As ``LMRL/Chess-v0``. The normalized score takes −1 as its minimum (LMRL's), so an agent
    that plays illegal moves can score below 0.

    ## Starting State
    ``split="train"``: the material drawn uniformly from the four sets, every piece on a
    uniformly random square; White to move, Black not in check, never one of the evaluation
    positions. ``split="eval"``: the 645 committed positions of ``data/endgames_eval.txt`` in
    order, one per reset (the seed then drives only the opponent). ``options={"fen": FEN}``
    pins any position in either split.

    ## Episode End
    As ``LMRL/Chess-v0``.

    ## Arguments
    ``split`` (``"train"`` or ``"eval"``) and those of ``LMRL/Chess-v0``.
    """

    score_id = "LMRL/Endgames-v0"
    min_return: ClassVar[float] = -1.0
    task: ClassVar[str] = "endgames"

    @classmethod
    def evaluation_runs(cls) -> list[tuple[int, dict[str, Any]]]:
        """One game from each committed evaluation position, with reset seeds 0..644."""
        return [(index, {"fen": fen}) for index, fen in enumerate(eval_positions())]

    def __init__(self, split: str = "train", **kwargs: Any) -> None:
        self.split = require_choice("split", split, SPLITS)
        super().__init__(**kwargs)
        self._held_out = frozenset(eval_positions())
        self._next_eval = 0

    def _start_board(self) -> chess.Board:
        if self.split == "train":
            return random_endgame(self.np_random, self._held_out)
        positions = eval_positions()
        board = self._chess.Board(positions[self._next_eval % len(positions)])
        self._next_eval += 1
        return board


# -- Stockfish players: the oracle's tools and the behaviour policies ------------------------


class GameFollower:
    """A player's own copy of the game, with its move history, rebuilt from what it is shown:
    its last move, ``info["opponent_move"]`` and the FEN of the observation (which wins when
    they disagree). The history lets Stockfish see repetitions that a bare FEN hides."""

    def __init__(self) -> None:
        self._chess = import_chess()
        self.board = self._chess.Board()
        self._last_move: chess.Move | None = None

    def follow(self, observation: str, info: dict[str, Any]) -> chess.Board:
        fen = fen_from_observation(observation)
        if info["turn"] > 0 and self._last_move is not None:
            self.board.push(self._last_move)
            if info.get("opponent_move"):
                with suppress(ValueError):  # a reply that does not fit: the FEN decides below
                    self.board.push_san(info["opponent_move"])
        if info["turn"] == 0 or self.board.fen() != fen:
            self.board = self._chess.Board(fen)
        self._last_move = None
        return self.board

    def play(self, move: chess.Move) -> str:
        self._last_move = move
        return self.board.san(move)


def stockfish_for(agent: str, env: Any, stockfish_path: str | None) -> StockfishProcess:
    """The agent's own Stockfish: ``stockfish_path``, else the binary the environment was
    configured with, else the usual search (:func:`find_stockfish`)."""
    configured = getattr(getattr(env, "unwrapped", None), "stockfish_path", None)
    path = find_stockfish(stockfish_path or configured)
    if path is None:
        raise RuntimeError(
            f"{agent} plays with Stockfish: install Debian's stockfish package or pass "
            "stockfish_path="
        )
    return StockfishProcess(path, classical_eval=task_of(env) in CLASSICAL_EVAL_TASKS)


def task_of(env: Any) -> str:
    """``"chess"`` or ``"endgames"``: the task of the environment a player is given."""
    return getattr(getattr(env, "unwrapped", None), "task", "chess")


class ChessBehaviour(ScriptedBehaviour):
    """The policy behind the Chess dataset.

    Stockfish playing White exactly as the opponent plays Black (top-3 softmax at 100
    centipawns, ε = 0.05) but at a node limit drawn per game from :data:`CHESS_LADDER_NODES`
    (LMRL drew its agent's Elo from 800 to 1600 against an Elo-1200 opponent), recorded as
    ``nodes`` in :meth:`parameters`. Like the oracle it reads only the observation and ``info``;
    all its randomness comes from :attr:`rng`.
    """

    policy: ClassVar[str] = "stockfish_node_ladder"
    default_episodes: ClassVar[int] = DATASET_GAMES
    lmrl_success: ClassVar[float] = 0.60

    def __init__(self, env: Any, stockfish_path: str | None = None) -> None:
        super().__init__(env)
        self._player = self._make_player(stockfish_for(type(self).__name__, env, stockfish_path))
        self._game = GameFollower()

    def _make_player(self, stockfish: Any) -> WeakenedPlayer:
        return WeakenedPlayer(
            stockfish,
            CHESS_LADDER_NODES[0],
            OPPONENT_TOP_K,
            OPPONENT_TEMPERATURE_CP,
            OPPONENT_EPSILON,
        )

    def _new_game(self) -> None:
        self._player.nodes = CHESS_LADDER_NODES[int(self.rng.integers(len(CHESS_LADDER_NODES)))]

    def parameters(self) -> dict[str, Any]:
        return {"policy": self.policy, "nodes": self._player.nodes}

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self._player.new_game()
            self._new_game()
        board = self._game.follow(observation, info)
        return self._game.play(self._player.reply(board, self.rng))

    def close(self) -> None:
        self._player.close()


class EndgamesBehaviour(ChessBehaviour):
    """The policy behind the Endgames dataset: ε-greedy engine moves.

    Each move is a uniformly random legal move with probability ε, else Stockfish's best move at
    :data:`ENDGAMES_BEHAVIOUR_NODES` nodes (classical evaluation, as the oracle), with ε drawn per
    game from :data:`ENDGAMES_EPSILONS` (weights :data:`ENDGAMES_EPSILON_WEIGHTS`).
    """

    policy: ClassVar[str] = "stockfish_epsilon_greedy"
    lmrl_success: ClassVar[float] = 0.59

    def _make_player(self, stockfish: Any) -> WeakenedPlayer:
        return WeakenedPlayer(stockfish, ENDGAMES_BEHAVIOUR_NODES, 1, 1.0, 0.0)

    def _new_game(self) -> None:
        pick = self.rng.choice(len(ENDGAMES_EPSILONS), p=ENDGAMES_EPSILON_WEIGHTS)
        self._player.epsilon = ENDGAMES_EPSILONS[int(pick)]

    def parameters(self) -> dict[str, Any]:
        return {"policy": self.policy, "epsilon": self._player.epsilon, "nodes": self._player.nodes}
