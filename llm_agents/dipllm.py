"""DipLLM-lite: a small transformer that orders one unit at a time, trained toward an
equilibrium policy by Q-weighted fine-tuning (spec diplomacy.md §5).

Follows DipLLM (Xu, Chai, Li, Fu, Zhu, Zhao, "DipLLM: Fine-Tuning LLM for Strategic
Decision-making in Diplomacy", ICML 2025; arXiv 2506.09655), which publishes no code. Its two
ideas are reproduced at a small scale:

1. **Autoregressive factorisation.** A power with D orderable locations picks its orders one
   location at a time, π(a | s) = Π_d π(a_d | s, a_1 … a_{d−1}), in the env's sorted location
   order. The model reads the board text, the orders already chosen this phase and the name of
   the next location, and scores only that location's legal orders (a masked softmax), so it
   can never emit an illegal order.
2. **Equilibrium fine-tuning.** The model is first trained by behaviour cloning (BC) on the
   data, then fine-tuned with DipLLM's objective, maximising E[log π(a^d | s, a^{<d}) ·
   exp(Q^d / λ)]: each decision with a unit-level value Q^d (the value of the chosen order given
   the earlier units' orders, estimated by Monte Carlo rollouts) is weighted by w = exp(Q^d/λ)
   normalised within its (state, location) group, and the loss is Σ w · (−log π(a^d | s,
   a^{<d})). λ → ∞ gives every weight 1: plain BC.

Pipeline (each step is also a command, ``python -m omnigym.llm_agents.dipllm data|q|train``):

- ``data``: seeded games of a mix of the reference bots (:mod:`omnigym.agents.diplomacy_bots`)
  capped at a year; one gzipped JSON line per phase holds the board text, the engine's own
  phase record (``Game.get_phase_data()``, the entries of its saved-game format, from which a
  rollout restarts the position) and, per power, the orderable locations in decoding order with
  their legal orders and the order its bot chose (``<none>`` where it gave none). The earlier
  orders of location d are the chosen orders of the locations before it.
- ``q``: for a (state, earlier orders, candidate order) triple the position is reloaded into a
  fresh environment from the saved phase (``reset(options={"saved_game": ...})``), the candidate
  is fixed, the power's later units take its behaviour bot's orders, every other power plays its
  bot; the game is rolled on for ``horizon_years`` years (to the first phase of year start +
  horizon) and valued by the change in the power's supply centres, or by its sum-of-squares
  score when the game ends first (the cap); averaged over ``rollouts`` rollouts that share their
  seeds across candidates (common random numbers). Candidates are the behaviour's order plus the
  ``top_k`` most likely orders of the current policy (a trained factorised checkpoint; without
  one, ``top_k`` other legal orders drawn uniformly).
- ``train``: a model from scratch: ``--updates`` of BC on every decision, then, with a Q file,
  ``--finetune`` epochs of equilibrium-weighted fine-tuning on the decisions that have a Q
  group (the rest of their turn only conditions them); ``--init`` starts from a BC checkpoint
  and skips the first stage when ``--updates 0``.

**Weights.** A (state, location) group holds its candidates' Q values; exp(Q/λ) is normalised
within the group to mean 1, and the decision's weight is the behaviour order's normalised value,
in (0, number of candidates]; every weight is 1 when λ = ∞. This is the sample form of
E_{a∼data}[log π(a) · exp(Q/λ)] with a per-group normaliser (the candidates stand in for the
policy's alternatives). The fine-tuning loss is divided by the number of weighted decisions.

**Ablations** (spec §5.2): AF + EW (factorised head, BC then equilibrium fine-tuning), AF + BC
(factorised, BC only: DipLLM's "AF only" row), joint + EW and joint + BC. Heads:

- ``factorised`` (AF): the hidden state at location d's name is projected to a query and
  dotted with an embedding of every legal order there;
- ``joint``: no factorisation; the hidden state at a ``<joint>`` token after the board scores
  whole joint actions (the sum of their orders' embeddings) in a softmax over a capped list of
  ``joint_candidates`` joint actions: the behaviour's plus uniformly sampled ones in training,
  all sampled uniformly in play. A turn's weight is the geometric mean of its decisions'
  positive weights.

**Model.** Word-level tokens (:class:`Tokenizer`: the map's locations, powers, phase names, unit
and order words and the few words of the env's text view), learned positions, pre-norm
causal transformer blocks (``torch.nn.TransformerEncoderLayer`` with a causal mask, i.e. a
decoder-only stack), and an order encoder that maps an order's word embeddings (up to seven
slots, position-aware) to one vector. The defaults (d = 128, 2 layers, 4 heads, feed-forward
1024, 1024 positions) have 1.01 M parameters on the standard map.

Departures from the paper, and why: a 1 M-parameter model trained from scratch on the CPU
instead of Llama-3-8B with LoRA (the spec's budget), so BC on the bots' games plays the part of
the pretrained model; data from the scripted bots instead of DipNet (no weights offline); Q from
the bots' rollouts with the behaviour bot as the rollout policy (the spec's "round 1"; no further
rounds); Q only for movement-phase decisions (nearly all decisions) and, within the spec's time
budget, only for a seeded sample of ``groups`` of them, which is why the weights enter through a
fine-tuning stage on those decisions rather than as a reweighting of the whole data set (where
they would touch about 0.1 % of the decisions); adjustment-phase locations may also choose
``<none>`` (the env's "no order", index 0: waive, or leave a site unused), and once the due
builds or removals are ordered only ``<none>`` is left, so the agent never over-orders.

Seeding: data games, rollouts, minibatches and joint-action samples come from NumPy generators
seeded by the given seed (``SeedSequence``); model initialisation from a forked torch generator;
no global RNG is touched. Worker processes run one torch thread.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from omnigym.envs.diplomacy.board import text_view
from omnigym.envs.diplomacy.orders import as_action, order_location
from omnigym.threads import map_in_workers

NONE = "<none>"
"""The "no order" choice (the env's index 0) of an adjustment-phase location."""
MAX_ORDER_WORDS = 7
"""Words of the longest order (``A PAR S A BUR - MUN``, ``F ENG C A LON - BRE``)."""
HEADS = ("factorised", "joint")
BOT_NAMES = ("greedy", "defensive", "random")
WEIGHTS_FILE = "weights.pt"
CONFIG_FILE = "config.json"


# ---- configuration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelConfig:
    """The transformer's shape and head."""

    head: str = "factorised"
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 1024
    max_len: int = 1024

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"head must be one of {list(HEADS)}, got {self.head!r}")
        for name in ("d_model", "n_layers", "n_heads", "d_ff", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} must be a multiple of n_heads {self.n_heads}")


@dataclass(frozen=True)
class TrainConfig:
    """One training run: updates, minibatches of turns (one power's orders in one phase), AdamW
    and the joint head's list size. (λ enters through the turns' weights,
    :meth:`Dataset.set_weights`.)"""

    updates: int = 3000
    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.01
    joint_candidates: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("updates", "batch_size", "joint_candidates"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")


@dataclass(frozen=True)
class QConfig:
    """Monte Carlo Q estimation (spec §5.2: M = 4 rollouts, top 4 candidates, 2 years).

    ``groups`` caps the (state, location) groups estimated, drawn uniformly (seeded) from the
    movement-phase decisions with at least two legal orders; None estimates all of them.
    """

    rollouts: int = 4
    top_k: int = 4
    horizon_years: int = 2
    groups: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("rollouts", "horizon_years"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be an int >= 0, got {self.top_k!r}")
        if self.groups is not None and (not isinstance(self.groups, int) or self.groups < 1):
            raise ValueError(f"groups must be a positive int or None, got {self.groups!r}")


# ---- tokens and text ---------------------------------------------------------------------------

SPECIALS = ("<pad>", "<unk>", "<bos>", NONE, "<joint>", "@")
PAD, UNK, BOS, NONE_ID, JOINT, ASK = range(len(SPECIALS))
PUNCTUATION = (",", ";", ":", "(", ")", "\n")
TEXT_WORDS = (
    "phase",
    "units",
    "centres",
    "dislodged",
    "retreat",
    "to",
    "nowhere",
    "adjust",
    "you",
    "are",
    "orderable",
    "none",
)
ORDER_WORDS = ("A", "F", "-", "H", "S", "C", "B", "D", "R", "VIA", "WAIVE")
PHASE_KINDS = ("SM", "SR", "FM", "FR", "WA")
_WORD = re.compile(r"\n|[,;:()]|[^\s,;:()]+")
_NO_SPACE_BEFORE = frozenset({",", ";", ":", ")", "\n"})
_NO_SPACE_AFTER = frozenset({"(", "\n"})


class Tokenizer:
    """Word-level tokens over the board text of :func:`board_text` and over order strings.

    A word is a run of characters other than white space and ``, ; : ( )``; each of those
    punctuation marks and each newline is a token of its own. ``decode`` puts the spaces back as
    the env's text view writes them (none before ``, ; : )`` or around a newline, none after
    ``(``), so ``decode(encode(text)) == text`` for every board text and order string made of
    known words. Unknown words become ``<unk>``.
    """

    def __init__(self, vocabulary: Sequence[str]):
        self.vocabulary = list(vocabulary)
        if tuple(self.vocabulary[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with the special tokens {list(SPECIALS)}")
        self.ids = {word: i for i, word in enumerate(self.vocabulary)}
        if len(self.ids) != len(self.vocabulary):
            raise ValueError("the vocabulary repeats a word")

    @classmethod
    def for_map(cls, map_name: str, years: int = 101) -> Tokenizer:
        """The vocabulary of the engine's map ``map_name``: its locations (coasts included),
        powers, phase names of ``years`` years, adjustment counts and the order and text words."""
        import diplomacy  # the optional extra

        game_map = diplomacy.Map(map_name)
        locations = sorted({location.upper() for location in game_map.locs})
        counts = [f"{n:+d}" for n in range(-len(game_map.scs), len(game_map.scs) + 1) if n]
        first = game_map.first_year
        phases = [
            f"{kind[0]}{year}{kind[1]}"
            for year in range(first, first + years)
            for kind in PHASE_KINDS
        ]
        words = [
            *SPECIALS,
            *PUNCTUATION,
            *TEXT_WORDS,
            *ORDER_WORDS,
            *counts,
            *game_map.powers,
            *locations,
            *phases,
        ]
        return cls(list(dict.fromkeys(words)))

    def __len__(self) -> int:
        return len(self.vocabulary)

    def encode(self, text: str) -> list[int]:
        ids = self.ids
        return [ids.get(word, UNK) for word in _WORD.findall(text)]

    def decode(self, token_ids: Iterable[int]) -> str:
        parts: list[str] = []
        previous = "\n"
        for token in token_ids:
            word = self.vocabulary[int(token)]
            if parts and word not in _NO_SPACE_BEFORE and previous not in _NO_SPACE_AFTER:
                parts.append(" ")
            parts.append(word)
            previous = word
        return "".join(parts)

    def order_words(self, order: str) -> list[int]:
        """The token ids of an order's words (``<none>`` is one token)."""
        words = [NONE_ID] if order == NONE else self.encode(order)
        if len(words) > MAX_ORDER_WORDS:
            raise ValueError(f"order {order!r} has more than {MAX_ORDER_WORDS} words")
        return words

    def order_slots(self, orders: Sequence[str]) -> np.ndarray:
        """``(len(orders), MAX_ORDER_WORDS)`` word ids, padded with ``<pad>``."""
        slots = np.full((len(orders), MAX_ORDER_WORDS), PAD, dtype=np.int64)
        for row, order in enumerate(orders):
            words = self.order_words(order)
            slots[row, : len(words)] = words
        return slots


def board_view(state: Mapping[str, Any]) -> str:
    """The env's text view of a board state: phase, then every power's units, centres,
    retreats and adjustments."""
    return text_view(state, sorted(state["units"]))


def turn_text(view: str, power: str, locations: Sequence[str]) -> str:
    """What the model reads: the board view and whose turn it is, as the env's ``text``
    observation writes it."""
    return f"{view}\nyou are {power}; orderable: {', '.join(locations) or 'none'}"


def board_text(info: Mapping[str, Any]) -> str:
    """:func:`turn_text` of a power's ``info``."""
    return turn_text(board_view(info["state"]), info["power"], info["orderable_locations"])


def adjustment_count(info: Mapping[str, Any]) -> int:
    """Builds (> 0) or removals (< 0) the power of ``info`` is due; 0 outside adjustments."""
    if info["phase"][-1] != "A":
        return 0
    return int(info["state"]["builds"][info["power"]]["count"])


def choices(legal: Sequence[Any], adjust: int, adjusted: int, none: Any = NONE) -> list[Any]:
    """The orders a location may take, given ``adjusted`` builds or removals already ordered:
    its legal orders; in an adjustment phase also ``none`` first, and only ``none`` once the
    ``|adjust|`` due ones are ordered. (Orders are strings, or ids with ``none=0``.)"""
    if adjust == 0:
        return list(legal)
    if adjusted >= abs(adjust):
        return [none]
    return [none, *legal]


# ---- the model -----------------------------------------------------------------------------------


class DipLLMModel(nn.Module):
    """Decoder-only transformer over word tokens, with an order encoder and a query projection.

    ``hidden`` runs the causal stack; ``embed_orders`` maps orders (word slots) to vectors;
    ``scores`` dots the query of a hidden state with candidate vectors (scaled by 1/√d).
    """

    def __init__(self, config: ModelConfig, vocab_size: int):
        super().__init__()
        self.config = config
        d = config.d_model
        self.tokens = nn.Embedding(vocab_size, d, padding_idx=PAD)
        self.positions = nn.Embedding(config.max_len, d)
        layer = nn.TransformerEncoderLayer(
            d, config.n_heads, config.d_ff, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.order_encoder = nn.Linear(MAX_ORDER_WORDS * d, d)
        self.query = nn.Linear(d, d)

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, L)`` right-padded token ids -> ``(B, L, d)``; position t sees tokens ≤ t, so
        the padding after a sequence never reaches it."""
        length = tokens.shape[1]
        if length > self.config.max_len:
            raise ValueError(f"a sequence of {length} tokens exceeds max_len {self.config.max_len}")
        x = self.tokens(tokens) + self.positions(torch.arange(length))
        causal = nn.Transformer.generate_square_subsequent_mask(length)
        return self.norm(self.blocks(x, mask=causal, is_causal=True))

    def embed_orders(self, slots: torch.Tensor) -> torch.Tensor:
        """``(N, MAX_ORDER_WORDS)`` word ids -> ``(N, d)`` order vectors."""
        return self.order_encoder(self.tokens(slots).flatten(1))

    def scores(self, hidden: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """``(Q, d)`` hidden states and ``(Q, C, d)`` candidate vectors -> ``(Q, C)`` logits."""
        query = self.query(hidden)
        return torch.einsum("qd,qcd->qc", query, candidates) / math.sqrt(self.config.d_model)


def build_model(config: ModelConfig, vocab_size: int, seed: int) -> DipLLMModel:
    """A freshly initialised model; the initialisation draws from a forked, seeded torch
    generator, so the global one is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return DipLLMModel(config, vocab_size)


def count_parameters(model: nn.Module) -> int:
    return sum(parameter.numel() for parameter in model.parameters())


# ---- data --------------------------------------------------------------------------------------


def _bot(name: str, seed: int) -> Any:
    from omnigym.agents.diplomacy_bots import DefensiveBot, GreedySCBot, RandomBot

    classes = {"greedy": GreedySCBot, "defensive": DefensiveBot, "random": RandomBot}
    if name not in classes:
        raise ValueError(f"bot must be one of {list(classes)}, got {name!r}")
    return classes[name](seed=seed)


@dataclass(frozen=True)
class DataSpec:
    """How the training games are played: map, year cap and the bots' mix (name -> weight)."""

    games: int
    seed: int = 0
    max_year: int = 1910
    map_name: str = "standard"
    mix: tuple[tuple[str, float], ...] = (("greedy", 1.0), ("defensive", 1.0), ("random", 1.0))


def _env_id(map_name: str) -> str:
    from omnigym.envs.diplomacy.env import MAP_IDS

    if map_name not in MAP_IDS:
        raise ValueError(f"map_name must be one of {sorted(MAP_IDS)}, got {map_name!r}")
    return MAP_IDS[map_name]


def play_data_game(spec: DataSpec, game: int) -> list[dict[str, Any]]:
    """Game ``game`` of the data: each power's bot drawn from ``spec.mix`` and everything seeded
    by ``SeedSequence([spec.seed, game])``; one record per phase (module docstring)."""
    env = _cached_env(spec.map_name, spec.max_year, "index")
    names = [name for name, _ in spec.mix]
    weights = np.array([weight for _, weight in spec.mix], dtype=np.float64)
    env_seed, draw_seed, *bot_seeds = np.random.SeedSequence([spec.seed, game]).generate_state(9)
    rng = np.random.default_rng(int(draw_seed))
    powers = env.possible_agents
    drawn = rng.choice(len(names), size=len(powers), p=weights / weights.sum())
    bots = {power: names[i] for power, i in zip(powers, drawn, strict=True)}
    players = {p: _bot(bots[p], int(s)) for p, s in zip(powers, bot_seeds, strict=True)}
    observations, infos = env.reset(seed=int(env_seed))
    records = []
    while env.agents:
        actions = {p: players[p].act(observations[p], infos[p]) for p in env.agents}
        some_info = infos[env.agents[0]]
        saved_phase = env.unwrapped.game.get_phase_data().to_dict()
        saved_phase["state"]["timestamp"] = len(records)  # not the wall clock: same seed, same file
        turns = {}
        for power in env.agents:
            info = infos[power]
            locations = info["orderable_locations"]
            if not locations:
                continue
            legal = [info["possible_orders"][location] for location in locations]
            values = actions[power][: len(locations)]
            turns[power] = {
                "locations": locations,
                "legal": legal,
                "orders": [
                    options[value - 1] if value else NONE
                    for options, value in zip(legal, values.tolist(), strict=True)
                ],
                "adjust": adjustment_count(info),
            }
        records.append(
            {
                "game": game,
                "phase_index": len(records),
                "phase": some_info["phase"],
                "map_name": spec.map_name,
                "max_year": spec.max_year,
                "bots": bots,
                "board": board_view(some_info["state"]),
                "saved_phase": saved_phase,
                "turns": turns,
            }
        )
        observations, _, _, _, infos = env.step(actions)
    return records


def generate_data(spec: DataSpec, path: str | os.PathLike, workers: int = 1) -> dict[str, Any]:
    """Play ``spec.games`` games and write their phase records to ``path`` (gzipped JSON lines,
    written under a temporary name and renamed when complete). Returns counts and seconds."""
    start = time.perf_counter()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    phases = turns = 0
    with gzip.open(partial, "wt", encoding="utf-8") as file:
        for records in map_in_workers(
            workers, _data_game_job, [(spec, g) for g in range(spec.games)]
        ):
            for record in records:
                file.write(json.dumps(record, separators=(",", ":")) + "\n")
                phases += 1
                turns += len(record["turns"])
    os.replace(partial, target)
    return {
        "games": spec.games,
        "phases": phases,
        "turns": turns,
        "seconds": time.perf_counter() - start,
    }


def _data_game_job(job: tuple[DataSpec, int]) -> list[dict[str, Any]]:
    return play_data_game(*job)


def read_phases(path: str | os.PathLike, games: int | None = None) -> Iterator[dict[str, Any]]:
    """The phase records of a data file, those of its first ``games`` games when given."""
    with gzip.open(path, "rt", encoding="utf-8") as file:
        for line in file:
            record = json.loads(line)
            if games is not None and record["game"] >= games:
                break
            yield record


@dataclass
class Turn:
    """One power's orders in one phase, as the model trains on them (orders as dataset ids;
    id 0 is ``<none>``)."""

    key: tuple[int, int, str]  # (game, phase index, power)
    tokens: np.ndarray  # <bos> + the board text
    locations: list[str]
    legal: list[np.ndarray]  # per location: its legal orders
    adjust: int  # builds (> 0) or removals (< 0) due; 0 outside adjustment phases
    chosen: list[int]  # per location: the behaviour's order (0: none)
    weights: np.ndarray  # per location: the training weight

    def choices(self) -> list[tuple[np.ndarray, int]]:
        """Per location: the order ids it may take (:func:`choices`) and the index of the chosen
        one among them."""
        result = []
        adjusted = 0
        for legal, chosen in zip(self.legal, self.chosen, strict=True):
            options = np.array(choices(legal.tolist(), self.adjust, adjusted, none=0))
            matches = np.flatnonzero(options == chosen)
            if not matches.size:
                raise ValueError(f"turn {self.key}: order id {chosen} is not among its choices")
            result.append((options, int(matches[0])))
            adjusted += chosen != 0
        return result


class Dataset:
    """A data file's turns, with orders interned as ids (``orders[i]``, word slots
    ``slots[i]``), so that hundreds of games fit in memory."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self.orders: list[str] = []
        self._ids: dict[str, int] = {}
        self._slots: list[np.ndarray] = []
        self._slot_array: np.ndarray | None = None
        self.turns: list[Turn] = []
        self.order_id(NONE)

    def order_id(self, order: str) -> int:
        found = self._ids.get(order)
        if found is None:
            found = self._ids[order] = len(self.orders)
            self.orders.append(order)
            self._slots.append(self.tokenizer.order_slots([order])[0])
            self._slot_array = None
        return found

    @property
    def slots(self) -> np.ndarray:
        """``(len(orders), MAX_ORDER_WORDS)`` word ids of every interned order."""
        if self._slot_array is None:
            self._slot_array = np.stack(self._slots)
        return self._slot_array

    @classmethod
    def load(
        cls, path: str | os.PathLike, tokenizer: Tokenizer, games: int | None = None
    ) -> Dataset:
        """The turns of the first ``games`` games of a data file (all when None)."""
        dataset = cls(tokenizer)
        for record in read_phases(path, games):
            for power, turn in record["turns"].items():
                dataset.add_turn(record, power, turn)
        if not dataset.turns:
            raise ValueError(f"{path}: no turns to train on (games={games})")
        return dataset

    def add_turn(self, record: Mapping[str, Any], power: str, turn: Mapping[str, Any]) -> Turn:
        locations = list(turn["locations"])
        text = turn_text(record["board"], power, locations)
        added = Turn(
            key=(int(record["game"]), int(record["phase_index"]), power),
            tokens=np.array([BOS, *self.tokenizer.encode(text)], dtype=np.int32),
            locations=locations,
            legal=[
                np.array([self.order_id(o) for o in legal], dtype=np.int32)
                for legal in turn["legal"]
            ],
            adjust=int(turn["adjust"]),
            chosen=[self.order_id(order) for order in turn["orders"]],
            weights=np.ones(len(locations)),
        )
        added.choices()  # the behaviour's orders must be among the choices
        self.turns.append(added)
        return added

    def set_weights(
        self, groups: Iterable[Mapping[str, Any]], lam: float, default: float = 1.0
    ) -> int:
        """Weight each decision by its Q group (:func:`behaviour_weight`); decisions without
        one weigh ``default`` (0 leaves them out of the loss). Returns how many decisions got a
        Q weight."""
        by_key = {turn.key: turn for turn in self.turns}
        for turn in self.turns:
            turn.weights = np.full(len(turn.locations), float(default))
        weighted = 0
        for group in groups:
            turn = by_key.get((group["game"], group["phase_index"], group["power"]))
            if turn is not None:
                turn.weights[turn.locations.index(group["location"])] = behaviour_weight(group, lam)
                weighted += 1
        return weighted

    def decisions(self) -> int:
        return sum(len(turn.locations) for turn in self.turns)

    def keep_weighted(self) -> None:
        """Keep only the turns with a decision of positive weight (the fine-tuning set)."""
        self.turns = [turn for turn in self.turns if turn.weights.any()]


# ---- weights -------------------------------------------------------------------------------


def group_weights(q_values: Sequence[float], lam: float) -> np.ndarray:
    """exp(Q/λ) normalised to mean 1 over one (state, location) group's candidates; all ones
    when λ = ∞ (behaviour cloning)."""
    q = np.asarray(q_values, dtype=np.float64)
    if math.isinf(lam):
        return np.ones_like(q)
    scaled = np.exp((q - q.max()) / lam)
    return scaled / scaled.mean()


def behaviour_weight(group: Mapping[str, Any], lam: float) -> float:
    """The training weight of a group's behaviour order: its entry of :func:`group_weights`."""
    weights = group_weights(group["q"], lam)
    return float(weights[list(group["candidates"]).index(group["behaviour"])])


def joint_weight(weights: np.ndarray) -> float:
    """A turn's weight under the joint head: the geometric mean of its decisions' positive
    weights (0 when none is positive)."""
    positive = weights[weights > 0]
    return float(np.exp(np.mean(np.log(positive)))) if positive.size else 0.0


# ---- losses ----------------------------------------------------------------------------------


def _padded(sequences: Sequence[Sequence[int]]) -> torch.Tensor:
    tokens = torch.full((len(sequences), max(map(len, sequences))), PAD, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        tokens[row, : len(sequence)] = torch.as_tensor(sequence)
    return tokens


def _candidate_vectors(model: DipLLMModel, dataset: Dataset, ids: np.ndarray) -> torch.Tensor:
    """Order vectors for an array of order ids (any shape), each distinct order encoded once."""
    used, inverse = np.unique(ids, return_inverse=True)
    vectors = model.embed_orders(torch.as_tensor(dataset.slots[used]))
    return vectors[torch.as_tensor(inverse.reshape(ids.shape))]


def factorised_logits(
    model: DipLLMModel, dataset: Dataset, turns: Sequence[Turn]
) -> tuple[torch.Tensor, list[tuple[np.ndarray, int]]]:
    """Logits of every decision of ``turns`` over its location's choices (``-inf`` past them),
    each conditioned on the board and the turn's earlier chosen orders (teacher forcing: one
    pass per turn), and the per-decision (choices, chosen index)."""
    tokenizer = dataset.tokenizer
    sequences, rows, positions, decisions = [], [], [], []
    for row, turn in enumerate(turns):
        tokens = turn.tokens.tolist()
        for location, chosen in zip(turn.locations, turn.chosen, strict=True):
            tokens += [ASK, tokenizer.ids.get(location, UNK)]
            rows.append(row)
            positions.append(len(tokens) - 1)
            tokens += tokenizer.order_words(dataset.orders[chosen])
        sequences.append(tokens)
        decisions += turn.choices()
    hidden = model.hidden(_padded(sequences))[torch.as_tensor(rows), torch.as_tensor(positions)]
    width = max(len(options) for options, _ in decisions)
    ids = np.zeros((len(decisions), width), dtype=np.int64)
    mask = np.zeros((len(decisions), width), dtype=bool)
    for i, (options, _) in enumerate(decisions):
        ids[i, : len(options)] = options
        mask[i, : len(options)] = True
    logits = model.scores(hidden, _candidate_vectors(model, dataset, ids))
    return logits.masked_fill(~torch.as_tensor(mask), -torch.inf), decisions


def _weighted_mean(weights: torch.Tensor, nll: torch.Tensor) -> torch.Tensor:
    """Σ w · nll over the terms that count (w > 0), divided by their number."""
    return (weights * nll).sum() / (weights > 0).sum().clamp(min=1)


def factorised_loss(model: DipLLMModel, dataset: Dataset, turns: Sequence[Turn]) -> torch.Tensor:
    """Σ w · (−log π(a^d | s, a^{<d})) over the turns' decisions of positive weight, divided by
    their number."""
    logits, decisions = factorised_logits(model, dataset, turns)
    targets = torch.as_tensor([chosen for _, chosen in decisions])
    weights = torch.as_tensor(np.concatenate([turn.weights for turn in turns]), dtype=torch.float32)
    nll = nn.functional.cross_entropy(logits, targets, reduction="none")
    return _weighted_mean(weights, nll)


def sample_joint(
    legal: Sequence[Sequence[Any]], adjust: int, rng: np.random.Generator, none: Any = NONE
) -> list[Any]:
    """A joint action drawn uniformly: a legal order per location; in an adjustment phase
    ``|adjust|`` random locations (all, if fewer) take a legal order and the rest ``none``."""
    if adjust == 0:
        return [options[int(rng.integers(len(options)))] for options in legal]
    acting = set(rng.permutation(len(legal))[: abs(adjust)].tolist())
    return [
        options[int(rng.integers(len(options)))] if i in acting else none
        for i, options in enumerate(legal)
    ]


def joint_logits(model: DipLLMModel, turn_tokens: Sequence[Sequence[int]], joint_vectors):
    """Logits ``(B, J)`` of ``(B, J, d)`` joint-action vectors, read at a ``<joint>`` token
    after each board."""
    sequences = [[*tokens, JOINT] for tokens in turn_tokens]
    hidden = model.hidden(_padded(sequences))
    last = hidden[torch.arange(len(sequences)), torch.as_tensor([len(s) - 1 for s in sequences])]
    return model.scores(last, joint_vectors)


def joint_loss(
    model: DipLLMModel,
    dataset: Dataset,
    turns: Sequence[Turn],
    size: int,
    rng: np.random.Generator,
) -> torch.Tensor:
    """Weighted −log probability of the behaviour's joint action (index 0) in a softmax over it
    and ``size − 1`` joint actions drawn with :func:`sample_joint`."""
    depth = max(len(turn.locations) for turn in turns)
    ids = np.zeros((len(turns), size, depth), dtype=np.int64)
    present = np.zeros((len(turns), 1, depth, 1), dtype=np.float32)
    for row, turn in enumerate(turns):
        width = len(turn.locations)
        ids[row, 0, :width] = turn.chosen
        for j in range(1, size):
            ids[row, j, :width] = sample_joint(turn.legal, turn.adjust, rng, none=0)
        present[row, 0, :width] = 1.0
    vectors = (_candidate_vectors(model, dataset, ids) * torch.as_tensor(present)).sum(2)
    logits = joint_logits(model, [turn.tokens.tolist() for turn in turns], vectors)
    nll = nn.functional.cross_entropy(
        logits, torch.zeros(len(turns), dtype=torch.long), reduction="none"
    )
    weights = torch.as_tensor([joint_weight(turn.weights) for turn in turns], dtype=torch.float32)
    return _weighted_mean(weights, nll)


# ---- training ------------------------------------------------------------------------------


def train(model: DipLLMModel, dataset: Dataset, config: TrainConfig) -> list[float]:
    """``config.updates`` AdamW steps on minibatches of turns drawn uniformly (seeded by
    ``config.seed``), with the head's loss; returns the loss of every update."""
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 1]))
    optimiser = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    losses = []
    model.train()
    for _ in range(config.updates):
        batch = [dataset.turns[i] for i in rng.integers(len(dataset.turns), size=config.batch_size)]
        if model.config.head == "factorised":
            loss = factorised_loss(model, dataset, batch)
        else:
            loss = joint_loss(model, dataset, batch, config.joint_candidates, rng)
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        losses.append(float(loss.item()))
    model.eval()
    return losses


@torch.inference_mode()
def rank_choices(model: DipLLMModel, dataset: Dataset, turn: Turn) -> list[list[str]]:
    """Each location's choices, most probable first, under the factorised ``model``
    conditioned on the behaviour's earlier orders (one teacher-forced pass)."""
    if model.config.head != "factorised":
        raise ValueError("ranking orders per location needs a factorised model")
    logits, decisions = factorised_logits(model, dataset, [turn])
    ranked = []
    for row, (options, _) in enumerate(decisions):
        order = torch.argsort(logits[row, : len(options)], descending=True, stable=True)
        ranked.append([dataset.orders[options[i]] for i in order.tolist()])
    return ranked


# ---- Q by Monte Carlo rollouts ---------------------------------------------------------------


@dataclass(frozen=True)
class RolloutTask:
    """One (state, location) group: the position, who plays it, the orders around the location
    and the candidate orders to value."""

    game: int
    phase_index: int
    power: str
    location: str
    phase: str
    map_name: str
    max_year: int
    saved_phase: dict[str, Any]
    bots: dict[str, str]
    earlier: tuple[str, ...]  # the behaviour's orders of the locations before
    later: tuple[str, ...]  # the locations after (ordered by the behaviour bot)
    behaviour: str
    candidates: tuple[str, ...]
    rollouts: int
    horizon_years: int
    seed: int

    @property
    def key(self) -> tuple[int, int, str, str]:
        return (self.game, self.phase_index, self.power, self.location)


def select_groups(
    path: str | os.PathLike, config: QConfig, games: int | None = None
) -> list[tuple[int, int, str, str]]:
    """The (game, phase index, power, location) groups to estimate: movement-phase decisions
    with at least two legal orders, ``config.groups`` of them drawn uniformly (seeded)."""
    pool = [
        (record["game"], record["phase_index"], power, location)
        for record in read_phases(path, games)
        if record["phase"][-1] == "M"
        for power, turn in record["turns"].items()
        for location, legal in zip(turn["locations"], turn["legal"], strict=True)
        if len(legal) >= 2
    ]
    if config.groups is not None and config.groups < len(pool):
        rng = np.random.default_rng(np.random.SeedSequence([config.seed, 2]))
        pool = [pool[i] for i in np.sort(rng.choice(len(pool), config.groups, replace=False))]
    return pool


def rollout_tasks(
    path: str | os.PathLike,
    config: QConfig,
    policy: DipLLMModel | None = None,
    tokenizer: Tokenizer | None = None,
    games: int | None = None,
) -> list[RolloutTask]:
    """The groups of :func:`select_groups` with their candidates: the behaviour's order and the
    ``top_k`` most probable others under ``policy`` (with its ``tokenizer``), or ``top_k``
    others drawn uniformly without a policy."""
    wanted: dict[tuple[int, int, str], list[str]] = {}
    for game, phase_index, power, location in select_groups(path, config, games):
        wanted.setdefault((game, phase_index, power), []).append(location)
    tasks = []
    for record in read_phases(path, games):
        for power, turn in record["turns"].items():
            locations = wanted.get((record["game"], record["phase_index"], power))
            if not locations:
                continue
            ranked = None
            if policy is not None:
                scratch = Dataset(tokenizer)
                ranked = rank_choices(policy, scratch, scratch.add_turn(record, power, turn))
            for location in locations:
                d = turn["locations"].index(location)
                behaviour = turn["orders"][d]
                if ranked is not None:
                    others = [order for order in ranked[d] if order != behaviour]
                else:
                    power_index = sorted(record["bots"]).index(power)
                    seed = [config.seed, record["game"], record["phase_index"], power_index, d]
                    rng = np.random.default_rng(np.random.SeedSequence(seed))
                    others = [o for o in turn["legal"][d] if o != behaviour]
                    others = [others[i] for i in rng.permutation(len(others))]
                tasks.append(
                    RolloutTask(
                        game=record["game"],
                        phase_index=record["phase_index"],
                        power=power,
                        location=location,
                        phase=record["phase"],
                        map_name=record["map_name"],
                        max_year=record["max_year"],
                        saved_phase=record["saved_phase"],
                        bots=record["bots"],
                        earlier=tuple(turn["orders"][:d]),
                        later=tuple(turn["locations"][d + 1 :]),
                        behaviour=behaviour,
                        candidates=(behaviour, *others[: config.top_k]),
                        rollouts=config.rollouts,
                        horizon_years=config.horizon_years,
                        seed=config.seed,
                    )
                )
    return tasks


def rollout_value(task: RolloutTask, candidate: str, rollout: int) -> float:
    """One rollout of ``candidate`` (module docstring): the power's change in supply centres at
    the first phase of year start + horizon, or its sum-of-squares score if the game ends
    first. Rollout ``i`` of a group draws the same seeds whatever the candidate."""
    env = _cached_env(task.map_name, task.max_year, "orders")
    powers = env.possible_agents
    seeds = np.random.SeedSequence(
        [task.seed, task.game, task.phase_index, powers.index(task.power), rollout]
    ).generate_state(1 + len(powers))
    saved = {"id": f"dipllm-q-{task.game}", "map": task.map_name, "phases": [task.saved_phase]}
    observations, infos = env.reset(seed=int(seeds[0]), options={"saved_game": saved})
    players = {p: _bot(task.bots[p], int(s)) for p, s in zip(powers, seeds[1:], strict=True)}
    power = task.power
    start_centres = len(infos[power]["state"]["centers"][power])
    end_year = int(task.phase[1:-1]) + task.horizon_years
    actions = {p: players[p].act(observations[p], infos[p]) for p in env.agents}
    planned = {order_location(order): order for order in actions[power]}
    later = [planned[location] for location in task.later if location in planned]
    actions[power] = [*task.earlier, candidate, *later]
    while True:
        observations, _, terminations, truncations, infos = env.step(actions)
        if terminations[power] or truncations[power]:
            if env.agents:  # eliminated while the game goes on
                return float(-start_centres)
            return float(infos[power]["metrics"]["sos"])
        state = infos[power]["state"]
        if int(state["name"][1:-1]) >= end_year:
            return float(len(state["centers"][power]) - start_centres)
        actions = {p: players[p].act(observations[p], infos[p]) for p in env.agents}


def group_values(task: RolloutTask) -> dict[str, Any]:
    """Q of each candidate of ``task``: the mean of its ``task.rollouts`` rollout values."""
    q = [
        float(np.mean([rollout_value(task, candidate, i) for i in range(task.rollouts)]))
        for candidate in task.candidates
    ]
    return {
        "game": task.game,
        "phase_index": task.phase_index,
        "power": task.power,
        "location": task.location,
        "phase": task.phase,
        "behaviour": task.behaviour,
        "candidates": list(task.candidates),
        "q": q,
        "rollouts": task.rollouts,
        "horizon_years": task.horizon_years,
    }


def read_q(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The groups of a Q file (JSON lines; a partial last line is skipped)."""
    file = Path(path)
    if not file.exists():
        return []
    text = file.read_text(encoding="utf-8")
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def estimate_q(
    tasks: Sequence[RolloutTask],
    path: str | os.PathLike,
    workers: int = 1,
    on_group: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Value every task's candidates and append each group to the JSON-lines file ``path``
    as it is done (flushed); groups already in the file are kept and not estimated again, so a
    killed estimation resumes. Returns the groups of ``tasks`` in task order."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    for group in read_q(file):
        done[(group["game"], group["phase_index"], group["power"], group["location"])] = group
    if file.exists():  # cut off a partial last line before appending
        data = file.read_bytes()
        with file.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)
    todo = [task for task in tasks if task.key not in done]
    with file.open("a", encoding="utf-8") as handle:
        for group in map_in_workers(workers, group_values, todo):
            handle.write(json.dumps(group, separators=(",", ":")) + "\n")
            handle.flush()
            done[(group["game"], group["phase_index"], group["power"], group["location"])] = group
            if on_group is not None:
                on_group(group)
    return [done[task.key] for task in tasks]


# ---- worker processes ----------------------------------------------------------------------

_ENVS: dict[tuple[str, int, str], Any] = {}


def _cached_env(map_name: str, max_year: int, action_format: str) -> Any:
    """One environment per (map, cap, action format) and process, built on first use."""
    key = (map_name, max_year, action_format)
    if key not in _ENVS:
        from omnigym.registry import make

        _ENVS[key] = make(_env_id(map_name), max_year=max_year, action_format=action_format)
    return _ENVS[key]


# ---- the agent -----------------------------------------------------------------------------


class DipLLMAgent:
    """An omnigym agent that plays one power with a DipLLM-lite model.

    ``act(observation, info)`` returns order strings, or the ``index`` action when
    ``info["action_format"] == "index"`` (through
    :func:`omnigym.envs.diplomacy.orders.orders_to_action`); every order is one of the
    location's choices, so it is always legal. The factorised head picks each location's
    order in turn (the most probable one, or a sample at ``temperature > 0``); the joint head
    picks the best of ``joint_candidates`` joint actions drawn uniformly.

    Args:
        env: the environment to be played (its map sets the vocabulary of a new model).
        seed: seeds the model's initialisation, the training minibatches and every draw.
        checkpoint: a folder written by :meth:`save`; its config replaces ``head`` and ``model``.
        head: "factorised" or "joint", for a new model.
        lam: λ of the equilibrium weights of the fine-tuning stage (``math.inf``: weights 1).
        games: train on the data file's first ``games`` games only (all when None).
        finetune: epochs of the equilibrium-weighted fine-tuning stage of :meth:`learn` over
            its turns (0: none, the behaviour-cloning variants; DipLLM fine-tunes for 5).
        finetune_lr: its AdamW learning rate (DipLLM: 2e-4).
        temperature: 0 plays the most probable order; above 0, samples at that temperature.
        joint_candidates: size of the joint head's list, in training and play.
        batch_size, lr: training minibatch (turns) and AdamW learning rate.
        model: ``ModelConfig`` fields for a new model (``d_model``, ``n_layers``, ...).
        map_name: the map of a new model when no ``env`` is given (default "standard").
        threads: torch threads of this process, set once (None: leave as is).
    """

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        checkpoint: str | os.PathLike | None = None,
        head: str = "factorised",
        lam: float = math.inf,
        games: int | None = None,
        finetune: int = 0,
        finetune_lr: float = 2e-4,
        temperature: float = 0.0,
        joint_candidates: int = 64,
        batch_size: int = 16,
        lr: float = 1e-3,
        model: Mapping[str, Any] | None = None,
        map_name: str | None = None,
        threads: int | None = None,
    ):
        if threads is not None:
            torch.set_num_threads(threads)
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        if not float(lam) > 0:
            raise ValueError(f"lam must be > 0 (.inf for weights 1), got {lam!r}")
        if not isinstance(finetune, int) or finetune < 0:
            raise ValueError(f"finetune must be an int >= 0, got {finetune!r}")
        self.seed = int(seed)
        self.lam = float(lam)
        self.games = games
        self.finetune = finetune
        self.finetune_lr = finetune_lr
        self.temperature = float(temperature)
        self.batch_size = batch_size
        self.lr = lr
        self.joint_candidates = joint_candidates
        self.losses: list[float] = []
        self.finetune_losses: list[float] = []
        self._rng = np.random.default_rng(self.seed)
        if checkpoint is not None:
            self.load(checkpoint)
            return
        if map_name is None:
            map_name = getattr(getattr(env, "unwrapped", env), "map_name", "standard")
        self.map_name = map_name
        self.tokenizer = Tokenizer.for_map(map_name)
        self.model = build_model(ModelConfig(head=head, **(model or {})), len(self.tokenizer), seed)
        self.model.eval()

    @property
    def head(self) -> str:
        return self.model.config.head

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(self.seed if seed is None else seed)

    # ---- playing

    def act(self, observation: Any, info: Mapping[str, Any]) -> Any:
        return as_action(
            self.orders(info) if info["orderable_locations"] else [], observation, info
        )

    @torch.inference_mode()
    def orders(self, info: Mapping[str, Any]) -> list[str]:
        """This phase's orders for the power of ``info`` (``<none>`` choices left out)."""
        tokens = [BOS, *self.tokenizer.encode(board_text(info))]
        legal = [info["possible_orders"][location] for location in info["orderable_locations"]]
        adjust = adjustment_count(info)
        if self.head == "joint":
            chosen = self._joint_orders(tokens, legal, adjust)
        else:
            chosen = self._factorised_orders(tokens, info["orderable_locations"], legal, adjust)
        return [order for order in chosen if order != NONE]

    def _factorised_orders(
        self, tokens: list[int], locations: Sequence[str], legal: Sequence[list[str]], adjust: int
    ) -> list[str]:
        model, tokenizer = self.model, self.tokenizer
        chosen: list[str] = []
        for location, options in zip(locations, legal, strict=True):
            options = choices(options, adjust, sum(order != NONE for order in chosen))
            tokens = [*tokens, ASK, tokenizer.ids.get(location, UNK)]
            if len(options) == 1:
                pick = options[0]
            else:
                hidden = model.hidden(torch.as_tensor([tokens]))[0, -1:]
                vectors = model.embed_orders(torch.as_tensor(tokenizer.order_slots(options)))
                pick = options[self._pick(model.scores(hidden, vectors[None])[0])]
            chosen.append(pick)
            tokens += tokenizer.order_words(pick)
        return chosen

    def _joint_orders(self, tokens: list[int], legal: Sequence[list[str]], adjust: int):
        model, tokenizer = self.model, self.tokenizer
        joints = [sample_joint(legal, adjust, self._rng) for _ in range(self.joint_candidates)]
        slots = torch.as_tensor(tokenizer.order_slots([o for joint in joints for o in joint]))
        vectors = model.embed_orders(slots).reshape(len(joints), len(legal), -1).sum(1)
        logits = joint_logits(model, [tokens], vectors[None])[0]
        return joints[self._pick(logits)]

    def _pick(self, logits: torch.Tensor) -> int:
        if self.temperature == 0:
            return int(torch.argmax(logits))
        probabilities = torch.softmax(logits / self.temperature, dim=-1).double().numpy()
        return int(self._rng.choice(len(probabilities), p=probabilities / probabilities.sum()))

    # ---- training

    def learn(
        self, data: str | os.PathLike, budget: int, q: str | os.PathLike | None = None
    ) -> dict[str, Any]:
        """Train on the data file ``data`` (its first ``games`` games) in two stages:

        1. behaviour cloning: ``budget`` updates on every decision, weight 1 (none when
           ``budget`` is 0, e.g. after :meth:`init_from` a behaviour-cloning checkpoint);
        2. with the Q file ``q``: ``finetune`` epochs of equilibrium-weighted fine-tuning on the
           turns with a Q group (⌈epochs · turns / batch size⌉ updates); the decisions with a
           group weigh exp(Q/λ) normalised per group, the others only condition (weight 0).

        Returns what was trained on: games, turns, decisions, Q-weighted decisions and turns,
        updates of each stage, parameters and seconds.
        """
        if q is not None and not self.finetune:
            raise ValueError("a Q file was given but finetune is 0: set finetune updates")
        start = time.perf_counter()
        dataset = Dataset.load(data, self.tokenizer, self.games)
        stats = {
            "games": len({turn.key[0] for turn in dataset.turns}),
            "turns": len(dataset.turns),
            "decisions": dataset.decisions(),
            "updates": budget,
            "q_weighted": 0,
            "finetune_turns": 0,
            "finetune_updates": 0,
            "parameters": count_parameters(self.model),
        }
        common = {"batch_size": self.batch_size, "joint_candidates": self.joint_candidates}
        if budget:
            config = TrainConfig(updates=budget, lr=self.lr, seed=self.seed, **common)
            self.losses += train(self.model, dataset, config)
        if q is not None:
            stats["q_weighted"] = dataset.set_weights(read_q(q), self.lam, default=0.0)
            dataset.keep_weighted()
            if not dataset.turns:
                raise ValueError(f"{q}: no Q group falls in the {stats['games']} games trained on")
            updates = math.ceil(self.finetune * len(dataset.turns) / self.batch_size)
            stats["finetune_turns"] = len(dataset.turns)
            stats["finetune_updates"] = updates
            # Seeded apart from stage 1, so its minibatches are not the first ones replayed.
            seed = int(np.random.SeedSequence([self.seed, 4]).generate_state(1)[0])
            config = TrainConfig(updates=updates, lr=self.finetune_lr, seed=seed, **common)
            self.finetune_losses += train(self.model, dataset, config)
        return {**stats, "seconds": time.perf_counter() - start}

    def init_from(self, checkpoint: str | os.PathLike) -> None:
        """Start from the weights of another checkpoint of the same model config (the
        behaviour-cloning counterpart, before fine-tuning)."""
        base = DipLLMAgent(checkpoint=checkpoint)
        if base.model.config != self.model.config or base.tokenizer.vocabulary != (
            self.tokenizer.vocabulary
        ):
            raise ValueError(f"{checkpoint}: its model config or vocabulary differs from this one")
        self.model.load_state_dict(base.model.state_dict())

    # ---- checkpoints

    def save(self, path: str | os.PathLike) -> None:
        """Write ``weights.pt`` (the state dict) and ``config.json`` (model config, vocabulary,
        λ and the games trained on) into the folder ``path``."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.model.state_dict(), folder / WEIGHTS_FILE)
        config = {
            "model": asdict(self.model.config),
            "map_name": self.map_name,
            "vocabulary": self.tokenizer.vocabulary,
            "lam": None if math.isinf(self.lam) else self.lam,
            "games": self.games,
            "finetune": self.finetune,
        }
        (folder / CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")

    def load(self, path: str | os.PathLike) -> None:
        """Read a folder written by :meth:`save` (weights with ``weights_only=True``)."""
        folder = Path(path)
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
        known = {f.name for f in fields(ModelConfig)}
        model_config = ModelConfig(**{k: v for k, v in config["model"].items() if k in known})
        self.map_name = config["map_name"]
        self.tokenizer = Tokenizer(config["vocabulary"])
        self.lam = math.inf if config["lam"] is None else float(config["lam"])
        self.games = config["games"]
        self.finetune = config["finetune"]
        self.model = DipLLMModel(model_config, len(self.tokenizer))
        state = torch.load(folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
        self.model.load_state_dict(state)
        self.model.eval()


# ---- command line --------------------------------------------------------------------------


def _lam(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"lam must be > 0 (or inf), got {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m omnigym.llm_agents.dipllm", description=__doc__.splitlines()[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    data = commands.add_parser("data", help="play the bots' games and record every decision")
    data.add_argument("--games", type=int, required=True)
    data.add_argument("--seed", type=int, default=0)
    data.add_argument("--out", type=Path, required=True, help="FILE.jsonl.gz")
    data.add_argument("--max-year", type=int, default=1910)
    data.add_argument("--map", default="standard", choices=("standard", "pure"))
    data.add_argument("--workers", type=int, default=1)
    q = commands.add_parser("q", help="estimate unit-level Q by Monte Carlo rollouts")
    q.add_argument("--data", type=Path, required=True)
    q.add_argument("--out", type=Path, required=True, help="FILE.jsonl (appended, resumable)")
    q.add_argument("--policy", type=Path, help="a factorised checkpoint ranking the candidates")
    q.add_argument("--games", type=int, help="only the first GAMES games")
    q.add_argument("--groups", type=int, help="at most this many (state, location) groups")
    q.add_argument("--rollouts", type=int, default=4)
    q.add_argument("--top-k", type=int, default=4)
    q.add_argument("--horizon", type=int, default=2, help="years rolled out")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--workers", type=int, default=1)
    training = commands.add_parser("train", help="train a model and save its checkpoint")
    training.add_argument("--data", type=Path, required=True)
    training.add_argument("--out", type=Path, required=True, help="checkpoint folder")
    training.add_argument("--q", type=Path, help="Q file: fine-tune with equilibrium weights")
    training.add_argument("--lam", type=_lam, default=math.inf, help="λ (default inf)")
    training.add_argument("--finetune", type=int, default=0, help="fine-tuning epochs")
    training.add_argument("--finetune-lr", type=float, default=2e-4)
    training.add_argument("--init", type=Path, help="start from this checkpoint's weights")
    training.add_argument("--head", choices=HEADS, default="factorised")
    training.add_argument("--updates", type=int, default=3000, help="behaviour cloning updates")
    training.add_argument("--batch-size", type=int, default=16)
    training.add_argument("--lr", type=float, default=1e-3)
    training.add_argument("--games", type=int, help="only the first GAMES games")
    training.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.command == "data":
        spec = DataSpec(args.games, args.seed, args.max_year, args.map)
        result = generate_data(spec, args.out, args.workers)
    elif args.command == "q":
        config = QConfig(args.rollouts, args.top_k, args.horizon, args.groups, args.seed)
        policy = DipLLMAgent(checkpoint=args.policy) if args.policy else None
        start = time.perf_counter()
        tasks = rollout_tasks(
            args.data,
            config,
            policy.model if policy else None,
            policy.tokenizer if policy else None,
            args.games,
        )
        groups = estimate_q(tasks, args.out, args.workers)
        result = {"groups": len(groups), "seconds": time.perf_counter() - start}
    else:
        agent = DipLLMAgent(
            seed=args.seed,
            head=args.head,
            lam=args.lam,
            games=args.games,
            finetune=args.finetune,
            finetune_lr=args.finetune_lr,
            batch_size=args.batch_size,
            lr=args.lr,
            map_name=next(read_phases(args.data))["map_name"],
        )
        if args.init is not None:
            agent.init_from(args.init)
        result = agent.learn(args.data, args.updates, q=args.q)
        agent.save(args.out)
        losses = agent.finetune_losses or agent.losses
        result["final_loss"] = float(np.mean(losses[-50:])) if losses else None
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
