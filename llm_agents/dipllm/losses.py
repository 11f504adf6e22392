"""DipLLM-lite's losses: the weighted negative log-likelihood of the behaviour's orders under
the factorised head (one location at a time) and under the joint head (whole joint actions).

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025): the loss is Σ w · (−log π(a^d | s, a^{<d})) with the equilibrium
weights of :mod:`omnigym.llm_agents.dipllm.weights`, divided by the number of weighted
decisions. The factorised head scores a location's legal orders from the hidden state at the
location's name (a masked softmax, teacher-forced on the earlier orders); the joint head, the
ablation without factorisation, scores whole joint actions (the sum of their orders' vectors)
from the hidden state at a ``<joint>`` token after the board, in a softmax over the
behaviour's joint action and uniformly sampled ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .data import Dataset, Turn
from .model import DipLLMModel
from .text import ASK, JOINT, NONE, PAD, UNK
from .weights import joint_weight


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
