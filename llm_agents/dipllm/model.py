"""The DipLLM-lite model: a decoder-only transformer over word tokens, with an order encoder and
a query projection that score a location's legal orders.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025) at a small scale: instead of Llama-3-8B with LoRA, a model trained from
scratch on the CPU. Word-level tokens (:class:`~omnigym.llm_agents.dipllm.text.Tokenizer`),
learned positions, pre-norm causal transformer blocks (``torch.nn.TransformerEncoderLayer``
with a causal mask, i.e. a decoder-only stack), and an order encoder that maps an order's word
embeddings (up to seven slots, position-aware) to one vector. The defaults (d = 128, 2 layers,
4 heads, feed-forward 1024, 1024 positions) have 1.01 M parameters on the standard map.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import ModelConfig
from .text import MAX_ORDER_WORDS, PAD


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
