"""DipLLM-lite's losses: cross-entropy toward each decision's target under the factorised head
(one location at a time) and under the joint head (whole joint actions).

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025). A decision's target is its Q group's equilibrium policy π* where it has
one (:attr:`.data.Turn.targets`, :func:`.weights.equilibrium_policy`), else its chosen order;
either is scaled by the decision's weight (:mod:`omnigym.llm_agents.dipllm.weights`: 1 in
behaviour cloning and for an equilibrium target, 0 for a decision that only conditions, exp(Q/λ)
normalised in the behaviour-weighted ablation). The loss is Σ_decisions −Σ_a target(a) ·
log π(a | s, a^{<d}), divided by the number of decisions of positive weight: the weighted
negative log-likelihood of the chosen orders when no decision has a target. The factorised head
scores a location's legal orders from the hidden state at the location's name (a masked softmax,
teacher-forced on the earlier orders); the joint head, the ablation without factorisation,
scores whole joint actions (the sum of their orders' vectors) from the hidden state at a
``<joint>`` token after the board, in a softmax over the behaviour's joint action, the joint
actions of the turn's Q candidates (each in the behaviour's joint action) and uniformly sampled
ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

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


def _cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Σ_rows −Σ_a target · log softmax(logits) over the rows with a positive target mass,
    divided by their number (a row's mass is its decision's weight)."""
    log_probabilities = torch.log_softmax(logits, dim=-1)
    log_probabilities = log_probabilities.masked_fill(torch.isinf(log_probabilities), 0.0)
    counted = (targets.sum(-1) > 0).sum().clamp(min=1)
    return -(targets * log_probabilities).sum() / counted


def factorised_targets(
    turns: Sequence[Turn], decisions: Sequence[tuple[np.ndarray, int]], width: int
) -> torch.Tensor:
    """``(decisions, width)`` targets over each decision's choices: its equilibrium target over
    its Q candidates where it has one, else its chosen order, times its weight."""
    targets = np.zeros((len(decisions), width), dtype=np.float32)
    row = 0
    for turn in turns:
        for d, weight in enumerate(turn.weights):
            options, chosen = decisions[row]
            if d in turn.targets:
                place = {int(order): i for i, order in enumerate(options)}
                for order, mass in zip(turn.groups[d][0], turn.targets[d], strict=True):
                    targets[row, place[int(order)]] += weight * mass
            else:
                targets[row, chosen] = weight
            row += 1
    return torch.as_tensor(targets)


def factorised_loss(model: DipLLMModel, dataset: Dataset, turns: Sequence[Turn]) -> torch.Tensor:
    """−Σ target · log π(a | s, a^{<d}) over the turns' decisions of positive weight (module
    docstring), divided by their number."""
    logits, decisions = factorised_logits(model, dataset, turns)
    return _cross_entropy(logits, factorised_targets(turns, decisions, logits.shape[1]))


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


def candidate_joints(turn: Turn) -> tuple[list[list[int]], dict[int, list[int]]]:
    """The behaviour's joint action (order ids), then for each Q group of ``turn`` each other
    candidate put in the behaviour's joint action; and per grouped location, the list index of
    each of its candidates' joint actions (its first candidate, the behaviour's order, is 0)."""
    joints = [list(turn.chosen)]
    places: dict[int, list[int]] = {}
    for d, (candidates, _) in sorted(turn.groups.items()):
        places[d] = []
        for order in candidates.tolist():
            if order == turn.chosen[d]:
                places[d].append(0)
                continue
            joint = list(turn.chosen)
            joint[d] = order
            joints.append(joint)
            places[d].append(len(joints) - 1)
    return joints, places


def candidate_joint_logits(
    model: DipLLMModel, dataset: Dataset, turn: Turn
) -> tuple[torch.Tensor, dict[int, list[int]]]:
    """The joint head's logits of ``turn``'s candidate joint actions and their places
    (:func:`candidate_joints`)."""
    joints, places = candidate_joints(turn)
    vectors = _candidate_vectors(model, dataset, np.array([joints])).sum(2)
    return joint_logits(model, [turn.tokens.tolist()], vectors)[0], places


def _joint_target(turn: Turn, size: int) -> np.ndarray:
    """A turn's target over its list of joint actions: the mean over its Q groups of each
    group's equilibrium target on its candidates' joint actions; else the behaviour's joint
    action (index 0) with the geometric mean of the turn's weights."""
    target = np.zeros(size, dtype=np.float32)
    if not turn.targets:
        target[0] = joint_weight(turn.weights)
        return target
    _, places = candidate_joints(turn)
    for d, policy in turn.targets.items():
        np.add.at(target, places[d], policy / len(turn.targets))
    return target


def joint_loss(
    model: DipLLMModel,
    dataset: Dataset,
    turns: Sequence[Turn],
    size: int,
    rng: np.random.Generator,
) -> torch.Tensor:
    """Cross-entropy toward each turn's target (:func:`_joint_target`) in a softmax over its
    candidate joint actions (:func:`candidate_joints`, the behaviour's first) and joint actions
    drawn with :func:`sample_joint`, ``size`` in all (more when the candidates need it)."""
    listed = [candidate_joints(turn)[0] for turn in turns]
    size = max(size, *(len(joints) for joints in listed))
    depth = max(len(turn.locations) for turn in turns)
    ids = np.zeros((len(turns), size, depth), dtype=np.int64)
    present = np.zeros((len(turns), 1, depth, 1), dtype=np.float32)
    for row, (turn, joints) in enumerate(zip(turns, listed, strict=True)):
        width = len(turn.locations)
        ids[row, : len(joints), :width] = joints
        for j in range(len(joints), size):
            ids[row, j, :width] = sample_joint(turn.legal, turn.adjust, rng, none=0)
        present[row, 0, :width] = 1.0
    vectors = (_candidate_vectors(model, dataset, ids) * torch.as_tensor(present)).sum(2)
    logits = joint_logits(model, [turn.tokens.tolist() for turn in turns], vectors)
    targets = torch.as_tensor(np.stack([_joint_target(turn, size) for turn in turns]))
    return _cross_entropy(logits, targets)
