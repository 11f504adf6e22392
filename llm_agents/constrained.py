"""Constrained decoding over a large set of legal actions, token by token through a prefix tree.

Where a task lists few legal actions (the Maze's four moves, a Text-Nav room's commands),
:class:`~omnigym.llm_agents.policy.LMPolicy` scores every one by its log-likelihood and draws
among them. Wordle's 11,406 guesses (``list_guesses=True``) and the questions a question game
lists (``list_questions=True``) are too many to score at every turn on the CPU, so the policy
writes the action token by token instead, each token chosen among those that continue some legal
action: the prefix tree (:class:`ActionTrie`) of the legal actions' completions (their token ids
and the end of sequence). The policy this defines is the locally normalised one,

    π(a | h) = Π_k p(t_k | h, t_<k) / Σ_{t ∈ allowed(t_<k)} p(t | h, t_<k),

a distribution over the legal actions only, whose log-probability of any action is one
teacher-forced pass with the disallowed tokens masked (:meth:`ActionTrie.masks`; PPO's ratios
use it). It is not the renormalised sequence probability p(a | h) / Σ_{a'} p(a' | h) that
scoring every action gives; the two agree when the model puts its mass on legal actions, which
is what behaviour cloning teaches it. LMRL-Gym (Abdulhai et al., ICML 2025) decodes
unconstrained; ``docs/lmrl.md`` has why the tiny models here are constrained.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

TERMINAL = -1
"""The key under which a node that ends an action stores the action's index."""


class ActionTrie:
    """The token prefix tree of ``actions``, each tokenised by ``completion`` (its ids and the
    end of sequence). Actions whose token ids coincide keep the first."""

    def __init__(self, actions: Sequence[str], completion: Callable[[str], list[int]]):
        self.actions = tuple(actions)
        self.root: dict[int, Any] = {}
        self.completions: list[list[int]] = []
        for index, action in enumerate(self.actions):
            ids = completion(action)
            self.completions.append(ids)
            node = self.root
            for token in ids:
                node = node.setdefault(token, {})
            node.setdefault(TERMINAL, index)

    @staticmethod
    def allowed(node: dict[int, Any]) -> list[int]:
        """The tokens that continue some action from ``node``."""
        return [token for token in node if token != TERMINAL]

    def masks(self, ids: Sequence[int], vocab_size: int) -> torch.Tensor:
        """``bool[len(ids), vocab_size]``: row ``k`` the tokens allowed after ``ids[:k]``
        (``ids`` must follow the tree)."""
        mask = torch.zeros((len(ids), vocab_size), dtype=torch.bool)
        node = self.root
        for k, token in enumerate(ids):
            mask[k, self.allowed(node)] = True
            node = node[token]
        return mask

    def sample(
        self,
        model: Any,
        prompt: Sequence[int],
        rows: int,
        temperature: float,
        rng: np.random.Generator,
    ) -> list[tuple[int, float]]:
        """``rows`` actions written after ``prompt`` with ``model``: ``(action index, log π)``
        each, log π at temperature 1 (module docstring). At ``temperature`` 0 every row takes
        the most likely allowed token; above 0 tokens are drawn (from ``rng``) from the allowed
        tokens' softmax at that temperature. The prompt runs once; its key/value cache is
        expanded over the rows, which advance one token per model call."""
        from transformers import DynamicCache

        with torch.inference_mode():
            ids = torch.tensor([list(prompt)])
            output = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
            cache = DynamicCache(
                ddp_cache_data=[
                    (layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1))
                    for layer in output.cache.layers
                ]
            )
            logits = output.logits[0, -1].double().expand(rows, -1)
            nodes = [self.root] * rows
            done: list[int | None] = [None] * rows
            scores = np.zeros(rows)
            while any(index is None for index in done):
                chosen = torch.zeros(rows, dtype=torch.long)
                for row in range(rows):
                    if done[row] is not None:
                        continue
                    token, log_prob = _choose(
                        logits[row], self.allowed(nodes[row]), temperature, rng
                    )
                    chosen[row] = token
                    scores[row] += log_prob
                    nodes[row] = nodes[row][token]
                    if TERMINAL in nodes[row]:
                        done[row] = nodes[row][TERMINAL]
                if all(index is not None for index in done):
                    break
                step = model(input_ids=chosen[:, None], cache=cache, use_cache=True)
                cache = step.cache
                logits = step.logits[:, -1].double()
        return [(int(index), float(score)) for index, score in zip(done, scores, strict=True)]


def _choose(
    logits: torch.Tensor, allowed: list[int], temperature: float, rng: np.random.Generator
) -> tuple[int, float]:
    """One token among ``allowed`` (greedy at temperature 0) and its log-probability among
    them at temperature 1."""
    values = logits[allowed].numpy()
    log_probs = values - np.logaddexp.reduce(values)
    if temperature == 0:
        pick = int(np.argmax(values))
    else:
        scaled = values / temperature
        weights = np.exp(scaled - scaled.max())
        pick = int(rng.choice(len(allowed), p=weights / weights.sum()))
    return allowed[pick], float(log_probs[pick])
