"""DipLLM-lite's training loop, the equilibrium targets of the fine-tuning set, and the ranking
of a location's orders (with their probabilities) that picks the Q candidates.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025): AdamW on minibatches of turns with the head's loss
(:mod:`omnigym.llm_agents.dipllm.losses`), used for behaviour cloning (every weight 1) and for
fine-tuning toward the equilibrium policy π* ∝ π_base·exp(Q/λ) of each Q group, π_base being
the model itself when fine-tuning starts (:func:`equilibrium_targets`), or, in the ablation,
toward the data's orders with the weights of :mod:`omnigym.llm_agents.dipllm.weights`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .config import TrainConfig
from .data import Dataset, Turn
from .losses import candidate_joint_logits, factorised_logits, factorised_loss, joint_loss
from .model import DipLLMModel
from .weights import equilibrium_policy


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
def equilibrium_targets(model: DipLLMModel, dataset: Dataset, lam: float) -> float:
    """Set every Q group's target (:attr:`.data.Turn.targets`) to π* ∝ π_base · exp(Q/λ) over
    its candidates, π_base being ``model``'s probabilities of them (renormalised over the
    candidates; the factorised head given the behaviour's earlier orders, the joint head over
    the candidates' joint actions). Returns the mean total variation between π_base and π* over
    the groups: how far the targets move the policy."""
    shifts = []
    for turn in dataset.turns:
        if not turn.groups:
            continue
        turn.targets = {}
        if model.config.head == "factorised":
            logits, decisions = factorised_logits(model, dataset, [turn])
            log_probabilities = torch.log_softmax(logits, dim=-1)
        else:
            joint, places = candidate_joint_logits(model, dataset, turn)
        for d, (candidates, q) in turn.groups.items():
            if model.config.head == "factorised":
                place = {int(order): i for i, order in enumerate(decisions[d][0])}
                scores = log_probabilities[d, [place[int(order)] for order in candidates]]
            else:
                scores = joint[places[d]]
            base = torch.softmax(scores.double(), dim=-1).numpy()
            turn.targets[d] = equilibrium_policy(base, q, lam)
            shifts.append(0.5 * float(np.abs(turn.targets[d] - base).sum()))
    return float(np.mean(shifts)) if shifts else 0.0


@torch.inference_mode()
def rank_choices(model: DipLLMModel, dataset: Dataset, turn: Turn) -> list[list[tuple[str, float]]]:
    """Each location's choices with their probabilities, most probable first, under the
    factorised ``model`` conditioned on the behaviour's earlier orders (one teacher-forced
    pass)."""
    if model.config.head != "factorised":
        raise ValueError("ranking orders per location needs a factorised model")
    logits, decisions = factorised_logits(model, dataset, [turn])
    ranked = []
    for row, (options, _) in enumerate(decisions):
        probabilities = torch.softmax(logits[row, : len(options)], dim=-1)
        order = torch.argsort(probabilities, descending=True, stable=True)
        ranked.append([(dataset.orders[options[i]], float(probabilities[i])) for i in order])
    return ranked
