"""The proxy network of C-3PO: one small transformer for every role, the role selected by a
role token (Chen et al., ICML 2025, use one 0.5B/1.5B language model and an instruction per
role; ``docs/c3po.md``).

**Input.** An observation of ``Methods/ProxyRAG-v0`` becomes one sequence of 39 tokens:

- a *state token*: the role's embedding plus the number of retrievals done;
- one *text token* each for the question, the roadmap, the 10 retrieved passages, the 10 kept
  passages and the 16 candidate queries: the mean embedding of the text's words (hashed into
  :data:`VOCAB` buckets; names, the capitalised words, are left out of the passages and the
  candidate queries), plus the mean embedding (a second table) of its words that are not
  in the question (what a passage says beyond the question: its relation, a "sister of"), plus
  a slot embedding (which text it is) plus a projection of
  word-overlap features (:func:`overlap_features`): how much of the question, the roadmap and
  the kept passages it shares, and whether it repeats a kept passage. The overlap features
  stand in for what a pretrained language model reads off raw text at once; a proxy trained
  from scratch on a few thousand questions would otherwise spend its budget learning string
  matching. Texts as single tokens (rather than word by word) keep a training step cheap on a
  CPU.

**Body.** A 2-layer transformer encoder (width 128, 4 heads, pre-norm).

**Heads.** On the state token: the router (3 logits) and the decider (2 logits). On the
candidate-query items: a pointer (one logit each, empty slots masked). On the retrieved-passage
items: one keep logit each (independent Bernoulli choices, empty slots masked).

:class:`Batch` holds featurised observations; :meth:`ProxyNetwork.log_prob` gives the role's
action log-probabilities (PPO), :meth:`~ProxyNetwork.sample` draws actions (rollouts) and
:meth:`~ProxyNetwork.greedy` acts.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from omnigym.envs.methods.c3po.env import MAX_KEPT, MAX_RETRIEVALS, MAX_SPANS, ROLES, TOP_K
from omnigym.envs.methods.c3po.world import content_words

VOCAB = 4096
WORDS = 24
FEATURES = 6
TEXTS = 2 + TOP_K + MAX_KEPT + MAX_SPANS  # question, roadmap, docs, kept, spans
DOCS = slice(2, 2 + TOP_K)
SPANS = slice(2 + TOP_K + MAX_KEPT, TEXTS)
ROUTER, QUERY, FILTER, DECIDER = range(len(ROLES))


@functools.lru_cache(maxsize=200_000)
def _bucket(word: str) -> int:
    return zlib.crc32(word.encode()) % (VOCAB - 1) + 1


@functools.lru_cache(maxsize=200_000)
def word_ids(
    text: str, limit: int, leave_out: frozenset[str] = frozenset(), names: bool = True
) -> tuple[int, ...]:
    """The first ``limit`` words of ``text`` that are not in ``leave_out`` (lower case), as hash
    buckets 1..VOCAB-1 (0 pads); ``names=False`` also leaves out capitalised words (names)."""
    found = re.findall(r"[A-Za-z0-9]+", text)
    words = [w.lower() for w in found if names or not w[0].isupper()]
    return tuple(_bucket(word) for word in words if word not in leave_out)[:limit]


def _share(part: frozenset, whole: frozenset) -> float:
    return len(part & whole) / len(whole) if whole else 0.0


def overlap_features(item: str, question: frozenset, roadmap: frozenset, kept: frozenset,
                     kept_texts: frozenset[str]) -> list[float]:  # fmt: skip
    """Word-overlap features of one candidate text: the share of the question's (and the
    roadmap's) content words it holds, the share of its own words that are in the question,
    the share of its words found in kept passages but not in the question (a bridge entity),
    whether it repeats a kept passage, whether it is empty."""
    words = content_words(item)
    return [
        _share(words, question),
        _share(question, words),
        _share(words, roadmap),
        _share(kept - question, words),
        float(item in kept_texts),
        float(not item),
    ]


@dataclass
class Batch:
    """Featurised observations (first dimension: the batch)."""

    role: torch.Tensor  # (B,) role index
    retrievals: torch.Tensor  # (B,)
    words: torch.Tensor  # (B, TEXTS, WORDS) word buckets, 0 = pad
    novel: torch.Tensor  # (B, TEXTS, WORDS) the words that are not in the question
    features: torch.Tensor  # (B, TEXTS, FEATURES)
    empty: torch.Tensor  # (B, TEXTS) bool

    def __len__(self) -> int:
        return len(self.role)

    def index(self, rows: Any) -> Batch:
        """The rows ``rows`` of the batch."""
        return Batch(*(getattr(self, name)[rows] for name in self.__dataclass_fields__))

    @staticmethod
    def concat(batches: Sequence[Batch]) -> Batch:
        return Batch(
            *(torch.cat([getattr(b, name) for b in batches]) for name in Batch.__dataclass_fields__)
        )


def featurise(observations: Sequence[Mapping[str, Any]]) -> Batch:
    """Observations of ``Methods/ProxyRAG-v0`` as a :class:`Batch`."""
    roles, retrievals, words, novel, features, empty = [], [], [], [], [], []
    for obs in observations:
        question, roadmap = obs["question"], obs["roadmap"]
        kept_texts = frozenset(text for text in obs["kept"] if text)
        kept_words = frozenset().union(*(content_words(text) for text in kept_texts))
        q_words, r_words = content_words(question), content_words(roadmap)
        roles.append(int(obs["role"]))
        retrievals.append(int(obs["retrievals"]))
        texts = [question, roadmap, *obs["docs"], *obs["kept"], *obs["spans"]]
        # Passages and candidate queries are read by their wording, not by whom they name:
        # names enter through the overlap features alone, so that a passage about a fact the
        # proxy never saw reads like the ones it trained on (with names in its bag, the proxy
        # memorises the training passages instead).
        named = [True, True] + [False] * (len(texts) - 2)
        asked = frozenset(re.findall(r"[a-z0-9]+", question.lower()))
        words.append(
            [_padded(word_ids(t, WORDS, names=n), WORDS) for t, n in zip(texts, named, strict=True)]
        )
        novel.append(
            [
                _padded(word_ids(t, WORDS, asked, n), WORDS)
                for t, n in zip(texts, named, strict=True)
            ]
        )
        row = [overlap_features(t, q_words, r_words, kept_words, kept_texts) for t in texts[2:]]
        features.append([[0.0] * FEATURES, [0.0] * FEATURES, *row])
        empty.append([False, not roadmap, *(not text for text in texts[2:])])
    return Batch(
        role=torch.tensor(roles),
        retrievals=torch.tensor(retrievals),
        words=torch.tensor(words),
        novel=torch.tensor(novel),
        features=torch.tensor(np.asarray(features, dtype=np.float32)),
        empty=torch.tensor(empty),
    )


def _padded(ids: Sequence[int], size: int) -> list[int]:
    return list(ids[:size]) + [0] * (size - len(ids))


def _mean_bag(embedding: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
    counts = (ids > 0).sum(-1, keepdim=True).clamp(min=1)
    return embedding(ids).sum(-2) / counts


class ProxyNetwork(nn.Module):
    """The shared proxy (module docstring)."""

    def __init__(self, width: int = 128, layers: int = 2, heads: int = 4):
        super().__init__()
        self.config = {"width": width, "layers": layers, "heads": heads}
        self.embed = nn.Embedding(VOCAB, width, padding_idx=0)
        self.embed_novel = nn.Embedding(VOCAB, width, padding_idx=0)
        self.role = nn.Embedding(len(ROLES), width)
        self.retrievals = nn.Embedding(MAX_RETRIEVALS + 1, width)
        self.slot = nn.Embedding(TEXTS, width)
        self.features = nn.Linear(FEATURES, width)
        layer = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True,
            norm_first=True,
        )  # fmt: skip
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.router = nn.Linear(width, 3)
        self.decider = nn.Linear(width, 2)
        self.pointer = nn.Linear(width, 1)
        self.keep = nn.Linear(width, 1)

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The state token's and the text tokens' outputs: (B, width), (B, TEXTS, width)."""
        state = self.role(batch.role) + self.retrievals(batch.retrievals)
        bags = _mean_bag(self.embed, batch.words) + _mean_bag(self.embed_novel, batch.novel)
        texts = bags + self.slot(torch.arange(TEXTS)) + self.features(batch.features)
        tokens = torch.cat([state[:, None], texts], dim=1)
        pad = torch.cat([torch.zeros(len(batch), 1, dtype=torch.bool), batch.empty], dim=1)
        hidden = self.norm(self.body(tokens, src_key_padding_mask=pad))
        return hidden[:, 0], hidden[:, 1:]

    def logits(self, batch: Batch) -> dict[str, torch.Tensor]:
        """Every head's logits, masked where a choice is unavailable: ``router`` (B, 3),
        ``decider`` (B, 2), ``query`` (B, 16), ``keep`` (B, 10)."""
        state, items = self(batch)
        query = self.pointer(items[:, SPANS]).squeeze(-1)
        query = query.masked_fill(batch.empty[:, SPANS], -1e9)
        return {
            "router": self.router(state),
            "decider": self.decider(state),
            "query": query,
            "keep": self.keep(items[:, DOCS]).squeeze(-1),
        }

    def log_prob(self, batch: Batch, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probability and entropy of ``actions`` under each row's role. ``actions`` is
        (B, 10): the chosen index in column 0 for router, query and decider, the keep flags
        for the filter."""
        return _log_prob(self.logits(batch), batch, actions)

    @torch.no_grad()
    def greedy(self, batch: Batch) -> torch.Tensor:
        """The most likely action of each row, (B, 10): argmax, and keep when p > 1/2."""
        logits = self.logits(batch)
        chosen = torch.zeros(len(batch), TOP_K, dtype=torch.long)
        for row, role in enumerate(batch.role.tolist()):
            if role == FILTER:
                chosen[row] = (logits["keep"][row] > 0).long() * ~batch.empty[row, DOCS]
            else:
                chosen[row, 0] = logits[HEADS[role]][row].argmax()
        return chosen

    @torch.no_grad()
    def sample(
        self, batch: Batch, generator: torch.Generator, samples: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``samples`` actions for a batch of one observation, duplicates merged: the distinct
        actions (k, 10), their log-probabilities (k,) and how often each was drawn (k,)."""
        logits = self.logits(batch)
        role = int(batch.role[0])
        drawn = torch.zeros(samples, TOP_K, dtype=torch.long)
        if role == FILTER:
            probs = torch.sigmoid(logits["keep"][0]).expand(samples, -1)
            drawn[:] = torch.bernoulli(probs, generator=generator).long() * ~batch.empty[0, DOCS]
        else:
            probs = torch.softmax(logits[HEADS[role]][0], -1)
            drawn[:, 0] = torch.multinomial(probs, samples, replacement=True, generator=generator)
        actions, counts = torch.unique(drawn, dim=0, return_counts=True)
        rows = torch.zeros(len(actions), dtype=torch.long)
        log_p, _ = _log_prob({k: v[rows] for k, v in logits.items()}, batch.index(rows), actions)
        return actions, log_p, counts


HEADS = ("router", "query", "keep", "decider")


def _log_prob(
    logits: dict[str, torch.Tensor], batch: Batch, actions: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    log_p = torch.zeros(len(batch))
    entropy = torch.zeros(len(batch))
    for role in (ROUTER, QUERY, DECIDER):
        rows = batch.role == role
        if rows.any():
            dist = torch.distributions.Categorical(logits=logits[HEADS[role]][rows])
            log_p[rows] = dist.log_prob(actions[rows, 0])
            entropy[rows] = dist.entropy()
    rows = batch.role == FILTER
    if rows.any():
        valid = ~batch.empty[rows][:, DOCS]
        dist = torch.distributions.Bernoulli(logits=logits["keep"][rows])
        log_p[rows] = (dist.log_prob(actions[rows].float()) * valid).sum(-1)
        entropy[rows] = (dist.entropy() * valid).sum(-1)
    return log_p, entropy


def env_action(role: int, action: torch.Tensor) -> dict[str, Any]:
    """The environment's action for ``role`` from one action row of the network."""
    if role == FILTER:
        return {"keep": action.numpy().astype(np.int8)}
    key = ("router", "query", "keep", "decide")[role]
    return {key: int(action[0])}
