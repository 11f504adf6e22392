"""DipLLM-lite's training loop, and the ranking of a location's orders that picks the Q
candidates.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025): AdamW on minibatches of turns with the head's weighted loss
(:mod:`omnigym.llm_agents.dipllm.losses`), used for behaviour cloning (every weight 1) and for
equilibrium fine-tuning (the weights of :mod:`omnigym.llm_agents.dipllm.weights`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .config import TrainConfig
from .data import Dataset, Turn
from .losses import factorised_logits, factorised_loss, joint_loss
from .model import DipLLMModel


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
