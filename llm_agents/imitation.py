"""How well a language-model policy imitates its dataset: held-out token and action accuracy.

Behaviour cloning (LMRL-Gym's BC, Abdulhai et al., ICML 2025; :mod:`omnigym.llm_agents.bc`)
should land on the dataset's average return, the normalized score's 50 (``docs/lmrl.md``); when
it does not, the first question is whether it learnt the data at all. On dataset turns that it
did not train on (a fresh dataset seed):

- **token accuracy**: with the prompt and the completion's earlier tokens given (teacher
  forcing), how often the model's most likely next token is the completion's next token, over
  every completion token (the action's and the end of sequence); beside it the **held-out
  loss**, the mean negative log-likelihood of those tokens (the training loss, on new turns);
- **action accuracy**: how often the policy's greedy action is the dataset's: the most likely
  legal action where the turn lists them (scored as :class:`~omnigym.llm_agents.policy.
  LMPolicy` scores them), else the greedy line;
- **majority-class rates**, the baselines the two must beat: predicting at every completion
  position the token most frequent at that position in the data, and always playing the most
  frequent action. Measured on the same turns, so they are the best constant predictors there.

:func:`imitation_report` returns them all; the claims run records it for BC on every task.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from omnigym.llm_agents.data import Example
from omnigym.llm_agents.policy import LMPolicy

BATCH = 32


def completion_token_scores(
    policy: LMPolicy, examples: Sequence[Example]
) -> tuple[np.ndarray, np.ndarray]:
    """Over every completion token of ``examples`` (teacher forcing, the policy's prompt
    format): whether it is the model's most likely next token, and its negative
    log-likelihood."""
    fmt, model = policy.format, policy.lm.model
    hits, losses = [], []
    with policy._threads(), torch.inference_mode():
        for start in range(0, len(examples), BATCH):
            chunk = examples[start : start + BATCH]
            pairs = [fmt.example(e.observation, e.completion) for e in chunk]
            width = max(len(ids) for ids, _ in pairs)
            input_ids = torch.full((len(pairs), width), policy.lm.pad_id, dtype=torch.long)
            attention = torch.zeros((len(pairs), width), dtype=torch.long)
            for row, (ids, _) in enumerate(pairs):
                input_ids[row, : len(ids)] = torch.tensor(ids)
                attention[row, : len(ids)] = 1
            logits = model(input_ids=input_ids, attention_mask=attention).logits
            log_probs = torch.log_softmax(logits.double(), dim=-1)
            for row, (ids, mask) in enumerate(pairs):
                positions = [i for i, m in enumerate(mask) if m]
                before = [p - 1 for p in positions]
                targets = torch.tensor([ids[p] for p in positions])
                hits.append((log_probs[row, before].argmax(-1) == targets).numpy())
                losses.append(-log_probs[row, before, targets].numpy())
    return np.concatenate(hits), np.concatenate(losses)


def greedy_actions(policy: LMPolicy, examples: Sequence[Example]) -> list[str]:
    """The policy's greedy action on each example's observation (its legal actions listed as
    in the dataset turn)."""
    greedy = policy.variant(temperature=0.0, batch_size=policy.batch_size)
    # The examples share their task's list of legal actions where it is one object (Wordle's
    # guesses), so the policy builds its prefix tree once.
    infos = [
        {} if e.legal_actions is None else {"legal_actions": e.legal_actions} for e in examples
    ]
    return greedy.act_batch([e.observation for e in examples], infos)


def majority_token_rate(policy: LMPolicy, examples: Sequence[Example]) -> float:
    """Token accuracy of predicting, at each completion position, the token most frequent at
    that position over ``examples``."""
    completions = [policy.format.completion(e.completion) for e in examples]
    by_position: dict[int, Counter] = {}
    for ids in completions:
        for position, token in enumerate(ids):
            by_position.setdefault(position, Counter())[token] += 1
    hits = sum(counts.most_common(1)[0][1] for counts in by_position.values())
    return hits / sum(map(len, completions))


def majority_action_rate(examples: Sequence[Example]) -> float:
    """The share of the most frequent action among ``examples``."""
    return Counter(e.completion for e in examples).most_common(1)[0][1] / len(examples)


def imitation_report(policy: LMPolicy, examples: Sequence[Example]) -> dict[str, Any]:
    """Token and action accuracy of ``policy`` on ``examples`` beside the majority-class rates
    (module docstring), and the number of turns measured."""
    if not examples:
        raise ValueError("imitation_report needs at least one example")
    hits, losses = completion_token_scores(policy, examples)
    actions = greedy_actions(policy, examples)
    return {
        "turns": len(examples),
        "held_out_loss": float(losses.mean()),
        "token_accuracy": float(hits.mean()),
        "majority_token_rate": majority_token_rate(policy, examples),
        "action_accuracy": float(
            np.mean([a == e.completion for a, e in zip(actions, examples, strict=True)])
        ),
        "majority_action_rate": majority_action_rate(examples),
    }
