"""The settings of DipLLM-lite: the model's shape and head, a training run and the Monte Carlo
Q estimation (``docs/diplomacy.md``).

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025); the package docstring (:mod:`omnigym.llm_agents.dipllm`) says where the
small-scale version departs from it.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADS = ("factorised", "joint")


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
    :meth:`.data.Dataset.set_weights`.)"""

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


CONTINUATIONS = ("data", "greedy", "defensive", "random")


@dataclass(frozen=True)
class QConfig:
    """Monte Carlo Q estimation (defaults: M = 4 rollouts, top 4 candidates, 2 years, every
    power continued by its bot from the data game).

    ``groups`` caps the (state, location) groups estimated, drawn uniformly (seeded) from the
    movement-phase decisions with at least two legal orders; None estimates all of them.
    ``sampled`` adds that many candidates drawn from the policy (without replacement, in
    proportion to their probabilities) after its ``top_k``. ``continuation`` names who plays
    every power after the candidate: ``"data"``, the bots of the data game, or one bot
    (``"greedy"``, ``"defensive"``, ``"random"``) for all seven powers.
    """

    rollouts: int = 4
    top_k: int = 4
    horizon_years: int = 2
    groups: int | None = None
    seed: int = 0
    sampled: int = 0
    continuation: str = "data"

    def __post_init__(self) -> None:
        for name in ("rollouts", "horizon_years"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("top_k", "sampled"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if self.continuation not in CONTINUATIONS:
            raise ValueError(
                f"continuation must be one of {list(CONTINUATIONS)}, got {self.continuation!r}"
            )
        if self.groups is not None and (not isinstance(self.groups, int) or self.groups < 1):
            raise ValueError(f"groups must be a positive int or None, got {self.groups!r}")
