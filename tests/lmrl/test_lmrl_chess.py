"""Chess and Endgames: moves, rewards, opponents, the Stockfish
process, the committed evaluation positions and the agents.

Tests that need python-chess skip without it; tests that need Stockfish skip without a binary.
Games are kept short with low node limits.
"""

import gc
import os
import subprocess
import sys
import textwrap
from collections import Counter
from contextlib import suppress
from pathlib import Path

import numpy as np
import pytest

import omnigym
from omnigym.agents.lmrl.chess_task import ChessOracle
from omnigym.envs.lmrl import chess_task
from omnigym.envs.lmrl.chess_task import (
    CHESS_LADDER_NODES,
    ENDGAME_MATERIALS,
    ENDGAMES_EPSILONS,
    MATE_CP,
    MAX_AGENT_MOVES,
    OPPONENT_CODES,
    ChessEnv,
    EndgamesBehaviour,
    EndgamesEnv,
    eval_positions,
    fallback_top_moves,
    fen_from_observation,
    find_stockfish,
    game_result,
)
from omnigym.envs.lmrl.endgames_positions import generate as generate_eval_positions
from omnigym.envs.lmrl.endgames_positions import material

from .episodes import play

START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8#
STALEMATE_IN_ONE = "7k/8/6Q1/8/8/8/8/K7 w - - 0 1"  # Qf7 stalemates
MATED_NEXT = "8/3P1k2/6r1/8/7K/6q1/8/8 w - - 0 1"  # White's only move, Kh5, allows a mate
FAST = {"opponent_nodes": 50}


@pytest.fixture
def chess():
    return pytest.importorskip("chess", reason="python-chess (the chess extra) is not installed")


@pytest.fixture
def stockfish(chess):
    path = find_stockfish()
    if path is None:
        pytest.skip("no stockfish binary on PATH or at /usr/games/stockfish")
    return path


@pytest.fixture
def no_stockfish(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(chess_task, "STOCKFISH_LOCATIONS", ())


def _children() -> set[str]:
    found: set[str] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with suppress(FileNotFoundError):  # a thread that ended meanwhile
            found |= set((task / "children").read_text().split())
    return found


# -- packaging --------------------------------------------------------------------------------


def test_importing_omnigym_and_listing_envs_does_not_import_chess():
    code = "import sys, omnigym; omnigym.list_envs(); print('chess' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr


def test_construction_without_python_chess_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "chess", None)
    monkeypatch.setitem(sys.modules, "chess.engine", None)
    expected = r"^LMRL/Chess-v0 needs the optional extra: pip install 'omnigym\[chess\]'$"
    with pytest.raises(ImportError, match=expected):
        ChessEnv(opponent="random")


# -- moves, observation, rewards --------------------------------------------------------------


def test_observation_is_the_spaced_fen_of_the_position(chess):
    env = ChessEnv(opponent="random")
    observation, info = env.reset(seed=0)
    assert observation == " ".join(START_FEN)
    assert observation.startswith("r n b q k b n r / p p")
    assert fen_from_observation(observation) == START_FEN
    assert info["last_message"] == observation
    assert env.observation_space.contains(observation)


def test_legal_actions_are_the_san_moves_of_the_position(chess):
    env = ChessEnv(opponent="random")
    _, info = env.reset(seed=0)
    assert len(info["legal_actions"]) == 20
    assert {"e4", "Nf3", "a3", "Nh3"} <= set(info["legal_actions"])
    _, info = env.reset(options={"fen": MATE_IN_ONE})
    assert "Ra8#" in info["legal_actions"]


@pytest.mark.parametrize("action", ["e4", "e 4", " e2e4 ", "e 2 e 4"])
def test_san_spaced_san_and_uci_name_the_same_move(chess, action):
    env = ChessEnv(opponent="random")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(action)
    assert info["invalid_action"] is False and reward == 0.0
    first, reply = env.board.move_stack
    assert first == chess.Move.from_uci("e2e4")
    env.board.pop()
    assert info["opponent_move"] == env.board.san(reply)


@pytest.mark.parametrize("action", ["Ke2", "e5", "0000", "--", "nf3", "move e4", "", "e4" * 200])
def test_illegal_move_costs_one_and_leaves_the_board_unchanged(chess, action):
    env = ChessEnv(opponent="random")
    observation, _ = env.reset(seed=0)
    after, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated) == (-1.0, False, False)
    assert info["invalid_action"] is True
    assert after == observation and env.board.fen() == START_FEN
    assert info["turn"] == 1 and info["opponent_move"] is None
    assert len(info["legal_actions"]) == 20


def test_mating_the_opponent_wins_plus_one(chess):
    env = ChessEnv(opponent="random")
    env.reset(options={"fen": MATE_IN_ONE})
    _, reward, terminated, truncated, info = env.step("Ra8")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["success"] is True and info["legal_actions"] == []
    metrics = info["metrics"]
    assert (metrics["win"], metrics["draw"], metrics["loss"], metrics["moves"]) == (1, 0, 0, 1)
    assert metrics["opponent"] == OPPONENT_CODES["random"]


def test_being_mated_loses_minus_one(stockfish):
    env = ChessEnv(opponent_top_k=1, opponent_epsilon=0.0, **FAST)
    env.reset(seed=0, options={"fen": MATED_NEXT})
    _, reward, terminated, _, info = env.step("Kh5")
    assert (reward, terminated) == (-1.0, True)
    assert info["success"] is False and info["metrics"]["loss"] == 1.0
    assert info["opponent_move"].endswith("#")
    env.close()


def test_stalemate_is_a_draw_worth_zero(chess):
    env = ChessEnv(opponent="random")
    env.reset(options={"fen": STALEMATE_IN_ONE})
    _, reward, terminated, _, info = env.step("Qf7")
    assert (reward, terminated) == (0.0, True)
    assert info["success"] is False and info["metrics"]["draw"] == 1.0


def test_repetition_fifty_moves_and_bare_kings_are_draws(chess):
    board = chess.Board()
    for san in ["Nf3", "Nf6", "Ng1", "Ng8"] * 2:
        assert game_result(board) is None
        board.push_san(san)
    assert game_result(board) == "draw"
    assert game_result(chess.Board("8/8/8/8/8/8/8/K6k w - - 0 1")) == "draw"
    assert game_result(chess.Board("8/8/8/8/8/8/7r/K6k w - - 99 80")) is None
    assert game_result(chess.Board("8/8/8/8/8/8/7r/K6k w - - 100 80")) == "draw"
    assert game_result(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1")) is None
    assert game_result(chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1")) == "win"


def test_move_cap_truncates_after_400_agent_moves_at_minus_401(chess):
    env = ChessEnv(opponent="random")
    env.reset(seed=0)
    for turn in range(1, MAX_AGENT_MOVES + 1):
        _, reward, terminated, truncated, info = env.step("pass")
        assert terminated is False and truncated == (turn == MAX_AGENT_MOVES)
    assert reward == -2.0
    assert info["episode_return"] == ChessEnv.min_return == -401.0
    assert info["legal_actions"] == [] and info["metrics"]["moves"] == 0.0


def test_observation_space_holds_the_longest_possible_position(chess):
    # 71 board characters (eight ranks like "p1p1p1p1" and seven slashes), full castling
    # rights, an en-passant square, the half-move clock at its claimed-draw maximum and the
    # largest full-move number that an accepted start can reach in 400 moves.
    board = "/".join(["p1p1p1p1", "1p1p1p1p"] * 4)
    longest = f"{board} w KQkq e3 100 {9_999 + MAX_AGENT_MOVES}"
    assert len(board) == 71 and len(longest) == 91
    spaced = " ".join(longest)
    assert len(spaced) == 181 <= ChessEnv.observation_max_length
    assert ChessEnv(opponent="random").observation_space.contains(spaced)


@pytest.mark.parametrize(
    ("fen", "problem"),
    [
        ("not a fen", "FEN string"),
        (42, "FEN string"),
        ("8/8/8/8/8/8/8/K7 w - - 0 1", "not a legal position"),
        ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1", "White to move"),
        ("7K/5k2/6q1/8/8/8/8/8 w - - 0 1", "finished game"),
        ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 10000", "9,999"),
    ],
)
def test_bad_fen_option_raises_value_error(chess, fen, problem):
    env = ChessEnv(opponent="random")
    with pytest.raises(ValueError, match=problem):
        env.reset(options={"fen": fen})


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"opponent": "human"}, "opponent"),
        ({"opponent_nodes": 0}, "opponent_nodes"),
        ({"opponent_nodes": 1.5}, "opponent_nodes"),
        ({"opponent_top_k": 0}, "opponent_top_k"),
        ({"opponent_temperature_cp": 0.0}, "opponent_temperature_cp"),
        ({"opponent_temperature_cp": "warm"}, "opponent_temperature_cp"),
        ({"opponent_epsilon": 1.5}, "opponent_epsilon"),
        ({"opponent_skill_level": 21}, "opponent_skill_level"),
        ({"opponent": "random", "opponent_skill_level": 3}, "opponent_skill_level"),
        ({"stockfish_path": "/nonexistent/stockfish"}, "stockfish_path"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_kwargs_raise_value_error_naming_the_kwarg(chess, kwargs, name):
    with pytest.raises(ValueError, match=name):
        ChessEnv(**kwargs)


def test_bad_split_raises_value_error_naming_the_kwarg(chess):
    with pytest.raises(ValueError, match="split"):
        EndgamesEnv(split="test", opponent="random")


def test_ansi_render_is_the_record_of_positions_and_moves(chess):
    env = ChessEnv(opponent="random", render_mode="ansi")
    env.reset(options={"fen": MATE_IN_ONE})
    env.step("R a 8 #")
    assert env.render() == " ".join(MATE_IN_ONE) + "\nR a 8 #\n" + env.unwrapped._position


# -- opponents --------------------------------------------------------------------------------


def test_stockfish_opponent_is_recorded_in_info_and_metrics(stockfish):
    env = omnigym.make("LMRL/Chess-v0", **FAST)
    _, info = env.reset(seed=0)
    assert env.unwrapped.opponent == info["opponent"] == "stockfish"
    _, _, _, _, info = env.step("e4")
    assert info["opponent"] == "stockfish" and info["opponent_move"]
    env.reset(options={"fen": MATE_IN_ONE})
    _, _, _, _, info = env.step("Ra8#")
    assert info["metrics"]["opponent"] == OPPONENT_CODES["stockfish"] == 0.0
    env.close()


def test_without_a_binary_the_fallback_plays_and_warns(chess, no_stockfish):
    before = _children()
    with pytest.warns(UserWarning) as caught:
        env = omnigym.make("LMRL/Chess-v0")
    message = str(caught[0].message)
    assert message.startswith(
        "stockfish binary not found: LMRL/Chess-v0 is using the built-in fallback opponent; "
        "scores are not comparable with Stockfish runs (install Debian's stockfish package or "
        "pass stockfish_path=)"
    )
    assert 'opponent="random"' in message
    _, info = env.reset(seed=0)
    assert info["opponent"] == env.unwrapped.opponent == "fallback"
    _, reward, _, _, info = env.step("e4")
    assert reward == 0.0 and info["opponent_move"] is not None
    assert len(env.unwrapped.board.move_stack) == 2
    assert _children() <= before
    env.reset(options={"fen": MATE_IN_ONE})
    _, _, _, _, info = env.step("Ra8#")
    assert info["metrics"]["opponent"] == OPPONENT_CODES["fallback"]
    env.close()


def test_choosing_the_fallback_or_random_opponent_does_not_warn(chess, recwarn):
    assert ChessEnv(opponent="fallback").opponent == "fallback"
    assert ChessEnv(opponent="random").opponent == "random"
    assert not [warning for warning in recwarn if issubclass(warning.category, UserWarning)]


def test_fallback_search_sees_mate_in_one_and_saves_an_attacked_queen(chess):
    board = chess.Board(MATE_IN_ONE)
    (best, score), *_ = fallback_top_moves(board, 2, 3)
    assert board.san(best) == "Ra8#" and score == MATE_CP
    board = chess.Board("4k3/8/8/8/3q4/4P3/8/4K3 b - - 0 1")  # Black's queen hit by a pawn
    moves = fallback_top_moves(board, 2, 3)
    assert len(moves) == 3
    for move, score in moves:
        assert board.piece_type_at(move.from_square) == chess.QUEEN and score > 700
        assert move.to_square not in board.attacks(chess.E3) | board.attacks(chess.E1)


def test_opponent_skill_level_is_opt_in_and_warns_of_nondeterminism(stockfish):
    with pytest.warns(UserWarning, match="not deterministic"):
        env = ChessEnv(opponent_skill_level=0, **FAST)
    env.reset(seed=0)
    _, reward, _, _, info = env.step("e4")
    assert reward == 0.0 and info["opponent_move"]
    env.close()


def _opening(env, seed, moves=12):
    rng = np.random.default_rng(seed)
    observation, info = env.reset(seed=seed)
    trace = [observation]
    for _ in range(moves):
        legal = info["legal_actions"]
        observation, reward, terminated, truncated, info = env.step(
            legal[int(rng.integers(len(legal)))]
        )
        trace.append((observation, reward, info["opponent_move"]))
        if terminated or truncated:
            break
    return trace


def test_stockfish_games_repeat_under_the_same_seed_also_after_close(stockfish):
    env = ChessEnv(**FAST)
    first = _opening(env, seed=5)
    assert _opening(env, seed=5) == first
    env.close()
    assert _opening(env, seed=5) == first
    assert _opening(env, seed=6) != first
    env.close()


# -- the Stockfish process --------------------------------------------------------------------


def test_close_quits_stockfish(stockfish):
    before = _children()
    env = ChessEnv(**FAST)
    env.reset(seed=0)
    env.step("e4")
    assert str(env._opponent.stockfish.pid) in _children() - before
    env.close()
    assert _children() <= before


def test_collecting_the_env_quits_stockfish(stockfish):
    before = _children()
    env = ChessEnv(**FAST)
    env.reset(seed=0)
    env.step("d4")
    assert _children() - before
    del env
    gc.collect()
    assert _children() <= before


class _CrashingAgent:
    def __init__(self):
        self.moves = 0

    def act(self, observation, info):
        self.moves += 1
        if self.moves > 2:
            raise RuntimeError("agent crashed mid-game")
        return info["legal_actions"][0]


def test_an_agent_raising_mid_game_in_the_evaluator_leaves_no_stockfish(stockfish):
    from omnigym.evaluators.rollout import evaluate

    before = _children()
    with pytest.raises(RuntimeError, match="mid-game"):
        evaluate("LMRL/Chess-v0", _CrashingAgent(), episodes=1, env_kwargs=FAST)
    assert _children() <= before


def test_a_script_dying_mid_game_exits_and_leaves_no_stockfish(stockfish):
    script = textwrap.dedent(
        """
        import omnigym
        env = omnigym.make("LMRL/Chess-v0", opponent_nodes=50)
        env.reset(seed=0)
        env.step("e4")
        print(env.unwrapped._opponent.stockfish.pid, flush=True)
        raise RuntimeError("agent crashed mid-game")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "mid-game" in result.stderr
    engine = Path(f"/proc/{result.stdout.split()[0]}/cmdline")
    assert not engine.exists() or b"stockfish" not in engine.read_bytes()


# -- Endgames ---------------------------------------------------------------------------------


def test_evaluation_positions_are_645_distinct_legal_endgames_of_the_listed_material(chess):
    positions = eval_positions()
    assert len(positions) == len(set(positions)) == 645
    for fen in positions:
        board = chess.Board(fen)
        assert board.is_valid() and board.turn == chess.WHITE and not board.is_check()
        assert game_result(board) is None and board.fen() == fen
        assert material(fen) in ENDGAME_MATERIALS
        pieces = sorted(piece.symbol() for piece in board.piece_map().values())
        assert pieces == sorted("Kk" + material(fen))
    assert set(Counter(material(fen) for fen in positions)) == set(ENDGAME_MATERIALS)


def test_evaluation_positions_regenerate_from_the_seeded_script(stockfish):
    fens, counts, version = generate_eval_positions(count=5)
    assert fens == list(eval_positions()[:5])
    assert counts["drawn"] >= 5 and version.startswith("Stockfish")


def test_training_starts_are_random_endgames_never_evaluation_positions(chess):
    env = EndgamesEnv(opponent="random")
    held_out = set(eval_positions())
    materials = Counter()
    for seed in range(300):
        fen = fen_from_observation(env.reset(seed=seed)[0])
        board = chess.Board(fen)
        assert board.is_valid() and board.turn == chess.WHITE and not board.is_check()
        assert fen not in held_out
        materials[material(fen)] += 1
    assert set(materials) == set(ENDGAME_MATERIALS) and min(materials.values()) > 45


def test_eval_split_plays_the_committed_positions_in_order(chess):
    env = EndgamesEnv(split="eval", opponent="random")
    fens = [fen_from_observation(env.reset(seed=seed)[0]) for seed in range(3)]
    assert fens == list(eval_positions()[:3])
    runs = EndgamesEnv.evaluation_runs()
    assert len(runs) == 645 and runs[7] == (7, {"fen": eval_positions()[7]})


def test_score_ids_and_minimum_returns(chess):
    assert EndgamesEnv(opponent="random").score_id == "LMRL/Endgames-v0"
    assert ChessEnv(opponent="random").score_id == "LMRL/Chess-v0"
    assert EndgamesEnv.min_return == -1.0 and ChessEnv.min_return == -401.0


# -- agents -----------------------------------------------------------------------------------


def test_oracle_mates_from_evaluation_positions(stockfish):
    env = omnigym.make("LMRL/Endgames-v0", split="eval", **FAST)
    oracle = omnigym.make_agent("oracle", env=env, env_id="LMRL/Endgames-v0", nodes=2000)
    for seed in range(3):
        _, info = play(env, oracle, seed)
        assert info["success"] and info["metrics"]["invalid_actions"] == 0
    env.close()
    oracle.close()


def test_oracle_reads_the_position_from_the_observation_only(stockfish):
    oracle = ChessOracle(nodes=500)
    assert oracle.act(" ".join(MATE_IN_ONE), {"turn": 0}) == "Ra8#"
    oracle.close()


def test_chess_behaviour_draws_a_node_limit_per_game_and_records_it(stockfish):
    env = ChessEnv(**FAST)
    behaviour = omnigym.make_agent("behavior", env=env, env_id="LMRL/Chess-v0")
    behaviour.reset(0)
    limits = set()
    for _ in range(25):
        observation, info = env.reset(seed=0, options={"fen": MATE_IN_ONE})
        assert behaviour.act(observation, info) in info["legal_actions"]
        parameters = behaviour.parameters()
        assert parameters["policy"] == "stockfish_node_ladder"
        limits.add(parameters["nodes"])
    assert limits == set(CHESS_LADDER_NODES)
    behaviour.close()
    env.close()


def test_endgames_behaviour_is_epsilon_greedy_with_epsilon_drawn_per_game(stockfish):
    env = EndgamesEnv(**FAST)
    behaviour = EndgamesBehaviour(env)
    assert behaviour.policy == "stockfish_epsilon_greedy" and behaviour.lmrl_success == 0.59
    epsilons = set()
    for seed in range(12):
        _, info = play(env, behaviour, seed)
        epsilons.add(behaviour.parameters()["epsilon"])
        assert info["metrics"]["invalid_actions"] == 0
    assert epsilons == set(ENDGAMES_EPSILONS)
    behaviour.close()
    env.close()
