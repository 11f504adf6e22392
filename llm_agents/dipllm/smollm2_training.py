"""The training side of DipLLM on SmolLM2-135M: prompts, training decisions drawn from the bots'
games with their Q weights, and Q-weighted LoRA fine-tuning through TRL.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025) as :mod:`omnigym.llm_agents.dipllm.smollm2` describes (prompt format,
loss, departures); the agent that plays with the adapter lives there.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from omnigym.llm_agents.models import cpu_sft_config, global_rng_preserved, require_llm_stack

from .config import QConfig
from .data import read_phases
from .q import estimate_q, rollout_tasks
from .text import NONE, choices, turn_text
from .weights import behaviour_weight


@dataclass(frozen=True)
class Example:
    """One training decision: the board text (:func:`omnigym.llm_agents.dipllm.board_text`),
    the (location, order) pairs already chosen this phase in decoding order, the location to
    order, the behaviour's order there (the completion) and the training weight."""

    board: str
    earlier: tuple[tuple[str, str], ...]
    location: str
    order: str
    weight: float = 1.0
    key: tuple[int, int, str, str] | None = None  # (game, phase index, power, location)


def order_line(location: str, order: str) -> str:
    return f"{location}: {order}\n"


def query_text(location: str) -> str:
    return f"order for {location}:"


def prompt_text(board: str, earlier: Sequence[tuple[str, str]], location: str) -> str:
    """The prompt as one string (what :func:`encode_example` tokenises piece by piece)."""
    return board + "\n" + "".join(order_line(*pair) for pair in earlier) + query_text(location)


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """The token ids of ``text``, without special tokens (the pieces of a prompt are encoded
    one by one)."""
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def completion_ids(tokenizer: Any, order: str) -> list[int]:
    """The completion of an order: a space, the order and the end-of-sequence token."""
    return [*encode_text(tokenizer, f" {order}"), tokenizer.eos_token_id]


def encode_example(tokenizer: Any, example: Example) -> tuple[list[int], list[int]]:
    """``(input_ids, labels)`` of an example: the prompt pieces and the completion, labels -100
    on the prompt (completion-only loss)."""
    prompt = encode_text(tokenizer, example.board + "\n")
    for location, order in example.earlier:
        prompt += encode_text(tokenizer, order_line(location, order))
    prompt += encode_text(tokenizer, query_text(example.location))
    completion = completion_ids(tokenizer, example.order)
    return prompt + completion, [-100] * len(prompt) + completion


def decisions_of(record: Mapping[str, Any]) -> Iterator[Example]:
    """The decisions of a phase record of :mod:`omnigym.llm_agents.dipllm`'s data with at least
    two choices, as examples of weight 1."""
    for power, turn in record["turns"].items():
        locations = list(turn["locations"])
        board = turn_text(record["board"], power, locations)
        adjusted = 0
        for d, (location, legal, order) in enumerate(
            zip(locations, turn["legal"], turn["orders"], strict=True)
        ):
            if len(choices(legal, int(turn["adjust"]), adjusted)) >= 2:
                yield Example(
                    board=board,
                    earlier=tuple(zip(locations[:d], turn["orders"][:d], strict=True)),
                    location=location,
                    order=order,
                    key=(int(record["game"]), int(record["phase_index"]), power, location),
                )
            adjusted += order != NONE


def sample_examples(
    path: str | Path, count: int, seed: int = 0, games: int | None = None
) -> list[Example]:
    """``count`` decisions drawn uniformly without replacement (seeded) from the decisions with
    at least two choices of a data file (its first ``games`` games), in file order; all of them
    when there are fewer."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    pool = [example for record in read_phases(path, games) for example in decisions_of(record)]
    if not pool:
        raise ValueError(f"{path}: no decisions with two or more choices")
    if count < len(pool):
        rng = np.random.default_rng(np.random.SeedSequence([seed, 4]))
        pool = [pool[i] for i in np.sort(rng.choice(len(pool), count, replace=False))]
    return pool


def estimate_example_q(
    path: str | Path,
    examples: Sequence[Example],
    config: QConfig,
    out: str | Path,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """Q groups (:func:`omnigym.llm_agents.dipllm.estimate_q`, appended to ``out``, resumable)
    for the movement-phase examples: the behaviour's order and ``config.top_k`` other legal
    orders, each valued by ``config.rollouts`` rollouts of the bots. ``config.groups`` is
    ignored: the examples are the groups."""
    wanted = {example.key for example in examples}
    tasks = rollout_tasks(path, replace(config, groups=None))
    return estimate_q([task for task in tasks if task.key in wanted], out, workers)


def with_q_weights(
    examples: Sequence[Example], groups: Sequence[Mapping[str, Any]], lam: float
) -> list[Example]:
    """The examples with weight :func:`omnigym.llm_agents.dipllm.behaviour_weight` (exp(Q/λ)
    normalised to mean 1 over the group's candidates, read at the behaviour's order) where a Q
    group exists, 1 elsewhere and everywhere when λ = ∞."""
    by_key = {(g["game"], g["phase_index"], g["power"], g["location"]): g for g in groups}
    weighted = []
    for example in examples:
        group = by_key.get(example.key)
        weight = 1.0 if group is None else behaviour_weight(group, lam)
        weighted.append(replace(example, weight=weight))
    return weighted


# ---- training through TRL --------------------------------------------------------------------


@dataclass(frozen=True)
class LMTrainConfig:
    """One fine-tuning run: epochs over the examples, minibatch size, AdamW learning rate (2e-4
    as DipLLM, constant) and gradient clipping."""

    epochs: float = 1.0
    batch_size: int = 4
    lr: float = 2e-4
    max_grad_norm: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.epochs > 0:
            raise ValueError(f"epochs must be > 0, got {self.epochs!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {self.batch_size!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")


class _WeightedCollator:
    """TRL's language-modelling collator (right padding, labels -100 on padding) plus the
    examples' ``weight`` as a float tensor."""

    def __init__(self, pad_token_id: int):
        from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

        self.collate = DataCollatorForLanguageModeling(pad_token_id=pad_token_id)

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        batch = self.collate([{k: v for k, v in e.items() if k != "weight"} for e in examples])
        batch["weight"] = torch.tensor([e["weight"] for e in examples], dtype=torch.float32)
        return batch


@functools.cache
def weighted_sft_trainer() -> type:
    """``QWeightedSFTTrainer``: TRL's ``SFTTrainer`` whose loss is Σ_i w_i · NLL_i / B, NLL_i
    the summed negative log-likelihood of example i's completion tokens (TRL's fused LM head
    scores only the labelled positions), w_i the batch's ``weight`` column, kept through the
    trainer's column filter. (A class built on first use: TRL is an optional dependency.)"""
    from trl import SFTTrainer

    class QWeightedSFTTrainer(SFTTrainer):
        def _set_signature_columns_if_needed(self) -> None:
            super()._set_signature_columns_if_needed()
            if "weight" not in self._signature_columns:
                self._signature_columns = [*self._signature_columns, "weight"]

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            weights = inputs.pop("weight")
            outputs = model(**inputs, use_cache=False, fused_lm_head=True)
            nll = -outputs.log_probs.sum(dim=1)  # zero on prompt and padding positions
            loss = (weights.to(nll.dtype) * nll).mean()
            return (loss, outputs) if return_outputs else loss

    return QWeightedSFTTrainer


def weighted_nll(model: Any, tokenizer: Any, examples: Sequence[Example]) -> float:
    """The training objective on ``examples`` without updating: Σ_i w_i · NLL_i / n."""
    total = 0.0
    with torch.inference_mode():
        for example in examples:
            input_ids, labels = encode_example(tokenizer, example)
            logits = model(input_ids=torch.tensor([input_ids])).logits[0, :-1]
            targets = torch.tensor(labels[1:])
            keep = targets != -100
            log_probs = torch.log_softmax(logits[keep].double(), dim=-1)
            nll = -log_probs.gather(1, targets[keep][:, None]).sum()
            total += example.weight * float(nll)
    return total / len(examples)


def train_lora(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    config: LMTrainConfig,
    verbose: bool = False,
) -> list[float]:
    """Fine-tune the LoRA adapter of the PEFT ``model`` on ``examples`` with the Q-weighted
    loss through :func:`weighted_sft_trainer` (AdamW, constant learning rate, float32 on the
    CPU, no checkpoints written). Returns the loss of every update. ``verbose`` prints the
    trainer's log lines."""
    require_llm_stack()
    from datasets import Dataset
    from transformers import PrinterCallback

    if not examples:
        raise ValueError("no examples to train on")
    encoded = [encode_example(tokenizer, example) for example in examples]
    dataset = Dataset.from_dict(
        {
            "input_ids": [ids for ids, _ in encoded],
            "labels": [labels for _, labels in encoded],
            "weight": [float(example.weight) for example in examples],
        }
    )
    with tempfile.TemporaryDirectory() as scratch, global_rng_preserved():
        args = cpu_sft_config(
            scratch,
            config.seed,
            num_train_epochs=config.epochs,
            per_device_train_batch_size=config.batch_size,
            learning_rate=config.lr,
            lr_scheduler_type="constant",
            weight_decay=0.0,
            max_grad_norm=config.max_grad_norm,
        )
        trainer = weighted_sft_trainer()(
            model=model,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            data_collator=_WeightedCollator(tokenizer.pad_token_id),
        )
        if not verbose:
            trainer.remove_callback(PrinterCallback)
        trainer.train()
    model.eval()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
