"""Write the committed Endgames evaluation positions, ``data/endgames_eval.txt``.

LMRL-Gym (Abdulhai et al., ICML 2025) evaluates Endgames on 645 fixed positions that are not
trivially won; its positions are not published in a form we can regenerate, so this seeded
script makes an equivalent set. It draws endgames exactly as ``LMRL/Endgames-v0`` draws its
training starts (:func:`~omnigym.envs.lmrl.chess_task.random_endgame`: White king plus Q, R, Q+R
or R+R against a lone king, White to move, Black not in check), skips repeats, and drops every
position in which Stockfish, searching a fixed number of nodes from a new game, announces a mate
in at most four moves (LMRL dropped mates in fewer than 15 moves). Run::

    python -m omnigym.envs.lmrl.endgames_positions [--seed 0] [--count 645] [--out FILE]

The output depends only on the arguments and the Stockfish version (Debian bookworm's 15.1 made
the committed file); its header records how it was made.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

from omnigym.envs.lmrl.chess_task import (
    ENDGAME_MATERIALS,
    EVAL_POSITIONS_PATH,
    StockfishProcess,
    find_stockfish,
    import_chess,
    random_endgame,
)

SEED = 0
COUNT = 645
FILTER_NODES = 20_000
"""Nodes Stockfish searches per position when looking for a short mate."""
MAX_TRIVIAL_MATE = 4
"""A position Stockfish mates in this many moves or fewer is too easy to keep."""


def material(fen: str) -> str:
    """White's pieces besides its king, in ``ENDGAME_MATERIALS`` spelling (``"QR"``)."""
    pieces = fen.split()[0]
    return "".join(sorted((c for c in pieces if c in "QR"), key="QR".index))


def generate(
    seed: int = SEED,
    count: int = COUNT,
    nodes: int = FILTER_NODES,
    stockfish_path: str | None = None,
) -> tuple[list[str], Counter[str], str]:
    """``count`` positions that Stockfish does not mate in ``MAX_TRIVIAL_MATE`` moves or fewer at
    ``nodes`` nodes; counts of what was ``drawn``, ``repeated`` and ``trivial``; the engine's
    name and version."""
    path = find_stockfish(stockfish_path)
    if path is None:
        raise RuntimeError("the evaluation positions are filtered with Stockfish: install it")
    chess = import_chess()
    rng = np.random.default_rng(seed)
    stockfish = StockfishProcess(path)
    kept: list[str] = []
    seen: set[str] = set()
    counts: Counter[str] = Counter()
    try:
        version = stockfish.engine().id["name"]
        while len(kept) < count:
            fen = random_endgame(rng).fen()
            counts["drawn"] += 1
            if fen in seen:
                counts["repeated"] += 1
                continue
            seen.add(fen)
            stockfish.new_game()
            (line,) = stockfish.analyse(chess.Board(fen), nodes)
            mate = line["score"].white().mate()
            if mate is not None and 0 < mate <= MAX_TRIVIAL_MATE:
                counts["trivial"] += 1
                continue
            kept.append(fen)
    finally:
        stockfish.close()
    return kept, counts, version


def render(fens: list[str], counts: Counter[str], seed: int, nodes: int, version: str) -> str:
    """The file's text: a provenance header, then one FEN per line."""
    by_material = Counter(material(fen) for fen in fens)
    header = [
        "# LMRL/Endgames-v0 evaluation positions (docs/lmrl.md), one FEN a line,",
        "# written by python -m omnigym.envs.lmrl.endgames_positions "
        f"--seed {seed} --count {len(fens)} --nodes {nodes}",
        f"# with {version}. Random endgames (White K + Q, R, QR or RR against a lone K, White",
        f"# to move); repeats skipped; positions Stockfish mates in <= {MAX_TRIVIAL_MATE} moves "
        f"at {nodes} nodes dropped.",
        f"# Drawn {counts['drawn']}, repeated {counts['repeated']}, dropped {counts['trivial']}. "
        "Kept: " + ", ".join(f"K{name}K {by_material[name]}" for name in ENDGAME_MATERIALS) + ".",
    ]
    return "\n".join(header + fens) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--nodes", type=int, default=FILTER_NODES)
    parser.add_argument("--out", type=Path, default=EVAL_POSITIONS_PATH)
    parser.add_argument("--stockfish-path", default=None)
    args = parser.parse_args(argv)
    fens, counts, version = generate(args.seed, args.count, args.nodes, args.stockfish_path)
    args.out.write_text(render(fens, counts, args.seed, args.nodes, version), encoding="ascii")
    print(f"wrote {len(fens)} positions to {args.out} ({dict(counts)})")


if __name__ == "__main__":
    main()
