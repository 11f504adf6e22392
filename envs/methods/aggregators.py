"""The five MIL aggregators of ``Methods/MILTransfer-v0``, their training, and the pretrained
fixtures they transfer from.

Every model is an instance encoder (a 2-layer MLP 64 → 128 → 128 with ReLU, applied to each
instance) followed by an aggregator and class-specific layers (:data:`AGGREGATORS`):

- ``mean``: the mean of the instance embeddings, then a linear head;
- ``max``: their coordinate-wise maximum, then a linear head;
- ``abmil``: gated attention pooling (Ilse et al., ICML 2018): a_i ∝ exp(wᵀ(tanh(V h_i) ⊙
  σ(U h_i))), z = Σ a_i h_i, then a linear head;
- ``transmil``: TransMIL-lite (after Shao et al., NeurIPS 2021): the instance embeddings
  projected to 64 dimensions, a class token, and both through two
  ``torch.nn.TransformerEncoder`` layers (4 heads, pre-norm, feed-forward width 128), the class
  token's output through a layer norm and a linear head (no PPEG, full instead of Nyström
  attention);
- ``dsmil``: dual-stream MIL (Li et al., CVPR 2021): an instance classifier whose top-scoring
  instance per class is the critical instance; attention of every instance to it by their
  queries, a per-class attention-pooled value b_c and a per-class linear bag score; the logit is
  the mean of the max-instance and the bag score, and training averages the two streams' losses.

``new_head(classes)`` replaces the class-specific layers (the head; ``dsmil``'s instance
classifier and bag scores) for a transfer target with zero-initialised ones, so that the first
fine-tuning steps do not push the random gradients of a fresh head into the pretrained layers
(with random heads, fine-tuning at the shared learning rate scored below the linear probe).

:func:`embed` gives the bag embedding a linear probe reads (the pooled vector before the head;
for ``dsmil`` the per-class pooled values averaged over the pretraining classes, next to the
max-pooled instance embedding). :func:`train` is the one recipe of every fit: Adam, cross-entropy,
mini-batches of 8 bags in a seeded order.

Pretrained fixtures (:func:`pretrained`): each aggregator trained on the ``pan-organ`` and the
``single-organ`` task of :mod:`omnigym.envs.methods.slides` (2,000 bags of 100 instances each,
drawn from a fixed seed; 10 epochs of :func:`train` at learning rate 3e-3, 1e-3 for
``transmil``, which diverges at 3e-3) and kept in the user's cache directory as arrays read
back without pickle; built in-process once, never downloaded (``python -m
omnigym.envs.methods.aggregators`` builds all ten ahead of a run).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np

from omnigym.threads import one_torch_thread

from . import slides
from .core import cache_dir, cached_arrays

AGGREGATORS = ("mean", "max", "abmil", "transmil", "dsmil")
HIDDEN = 128
#: TransMIL-lite's transformer width.
WIDTH = 64
BATCH = 8
PRETRAIN_SEED = 0
PRETRAIN_EPOCHS = 10
#: Pretraining learning rates (the transformer diverges at 3e-3).
PRETRAIN_LEARNING_RATES = {"transmil": 1e-3}
PRETRAIN_LEARNING_RATE = 3e-3


def check_aggregator(aggregator: str) -> str:
    if aggregator not in AGGREGATORS:
        raise ValueError(f"aggregator must be one of {AGGREGATORS}, got {aggregator!r}")
    return aggregator


@functools.cache
def _classes() -> dict[str, Any]:
    import torch
    from torch import nn

    def _zero(layer):
        nn.init.zeros_(layer.weight)
        nn.init.zeros_(layer.bias)
        return layer

    class Encoder(nn.Sequential):
        def __init__(self):
            super().__init__(
                nn.Linear(slides.FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU()
            )

    class Pooled(nn.Module):
        """Encoder, a pooling to one vector, a linear head (``mean``, ``max``, ``abmil``)."""

        def __init__(self, aggregator: str, classes: int):
            super().__init__()
            self.aggregator = aggregator
            self.encoder = Encoder()
            if aggregator == "abmil":
                self.attention_v = nn.Linear(HIDDEN, HIDDEN // 2)
                self.attention_u = nn.Linear(HIDDEN, HIDDEN // 2)
                self.attention_w = nn.Linear(HIDDEN // 2, 1)
            self.head = nn.Linear(HIDDEN, classes)

        def embed(self, bags):
            h = self.encoder(bags)
            if self.aggregator == "mean":
                return h.mean(dim=1)
            if self.aggregator == "max":
                return h.amax(dim=1)
            gate = torch.tanh(self.attention_v(h)) * torch.sigmoid(self.attention_u(h))
            weights = torch.softmax(self.attention_w(gate).squeeze(-1), dim=1)
            return torch.einsum("bn,bnh->bh", weights, h)

        def forward(self, bags):
            return self.head(self.embed(bags)), None

        def new_head(self, classes: int) -> None:
            self.head = _zero(nn.Linear(HIDDEN, classes))

    class TransMIL(nn.Module):
        def __init__(self, classes: int):
            super().__init__()
            self.encoder = Encoder()
            self.project = nn.Sequential(nn.Linear(HIDDEN, WIDTH), nn.ReLU())
            self.token = nn.Parameter(torch.zeros(1, 1, WIDTH))
            layer = nn.TransformerEncoderLayer(
                WIDTH, 4, 2 * WIDTH, dropout=0.0, batch_first=True, norm_first=True
            )
            self.transformer = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(WIDTH)
            self.head = nn.Linear(WIDTH, classes)

        def embed(self, bags):
            h = self.project(self.encoder(bags))
            h = torch.cat([self.token.expand(len(h), -1, -1), h], dim=1)
            return self.norm(self.transformer(h)[:, 0])

        def forward(self, bags):
            return self.head(self.embed(bags)), None

        def new_head(self, classes: int) -> None:
            self.head = _zero(nn.Linear(WIDTH, classes))

    class DSMIL(nn.Module):
        def __init__(self, classes: int):
            super().__init__()
            self.encoder = Encoder()
            self.query = nn.Sequential(nn.Linear(HIDDEN, HIDDEN // 2), nn.Tanh())
            self.value = nn.Linear(HIDDEN, HIDDEN)
            self.instance_head = nn.Linear(HIDDEN, classes)
            self.bag_weight = nn.Parameter(torch.randn(classes, HIDDEN) / HIDDEN**0.5)
            self.bag_bias = nn.Parameter(torch.zeros(classes))

        def new_head(self, classes: int) -> None:
            self.instance_head = _zero(nn.Linear(HIDDEN, classes))
            self.bag_weight = nn.Parameter(torch.zeros(classes, HIDDEN))
            self.bag_bias = nn.Parameter(torch.zeros(classes))

        def streams(self, bags):
            h = self.encoder(bags)
            scores = self.instance_head(h)  # (b, n, c)
            top, critical = scores.max(dim=1)  # (b, c)
            q = self.query(h)
            q_critical = torch.gather(q, 1, critical.unsqueeze(-1).expand(-1, -1, q.shape[-1]))
            logits = torch.einsum("bnq,bcq->bcn", q, q_critical) / q.shape[-1] ** 0.5
            pooled = torch.einsum("bcn,bnh->bch", torch.softmax(logits, dim=-1), self.value(h))
            return h, top, pooled

        def embed(self, bags):
            h, _, pooled = self.streams(bags)
            return torch.cat([pooled.mean(dim=1), h.amax(dim=1)], dim=1)

        def forward(self, bags):
            _, top, pooled = self.streams(bags)
            bag = (pooled * self.bag_weight).sum(-1) + self.bag_bias
            return (top + bag) / 2, (top, bag)

    return {"Pooled": Pooled, "TransMIL": TransMIL, "DSMIL": DSMIL}


def build(aggregator: str, classes: int, seed: int) -> Any:
    """A freshly initialised model (weights from ``seed``)."""
    import torch

    check_aggregator(aggregator)
    torch.manual_seed(seed)
    kinds = _classes()
    if aggregator == "transmil":
        return kinds["TransMIL"](classes)
    if aggregator == "dsmil":
        return kinds["DSMIL"](classes)
    return kinds["Pooled"](aggregator, classes)


def parameter_count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def train(
    model: Any,
    bags: np.ndarray,
    labels: np.ndarray,
    epochs: int,
    learning_rate: float,
    seed: int,
    parameters: Any = None,
) -> list[float]:
    """Adam (``learning_rate`` with a cosine decay to 0, weight decay 1e-4) on the cross-entropy
    of ``model`` for ``epochs`` passes over ``bags`` in mini-batches of :data:`BATCH` (order from
    ``seed``), on one torch thread; ``dsmil`` averages its two streams' losses. Returns the epoch
    losses."""
    import torch
    from torch.nn import functional

    parameters = list(model.parameters() if parameters is None else parameters)
    optimiser = torch.optim.Adam(parameters, lr=learning_rate, weight_decay=1e-4)
    steps = epochs * -(-len(bags) // BATCH)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, max(steps, 1))
    rng = np.random.default_rng(seed)
    x, y = torch.from_numpy(bags), torch.from_numpy(labels)
    losses = []
    model.train()
    with one_torch_thread():
        for _ in range(epochs):
            total = 0.0
            order = rng.permutation(len(x))
            for start in range(0, len(x), BATCH):
                rows = torch.from_numpy(order[start : start + BATCH])
                logits, streams = model(x[rows])
                if streams is None:
                    value = functional.cross_entropy(logits, y[rows])
                else:
                    value = sum(functional.cross_entropy(s, y[rows]) for s in streams) / 2
                optimiser.zero_grad()
                value.backward()
                optimiser.step()
                schedule.step()
                total += float(value.detach()) * len(rows)
            losses.append(total / len(x))
    model.eval()
    return losses


def predict(model: Any, bags: np.ndarray, chunk: int = 50) -> np.ndarray:
    """Class probabilities (bags, classes) as float64."""
    return _chunks(lambda x: _softmax(model(x)[0]), bags, chunk)


def embed(model: Any, bags: np.ndarray, chunk: int = 50) -> np.ndarray:
    """Bag embeddings (bags, dim) as float64 (see the module docstring)."""
    return _chunks(model.embed, bags, chunk)


def _softmax(logits: Any) -> Any:
    import torch

    return torch.softmax(logits.double(), dim=-1)


def _chunks(function: Any, bags: np.ndarray, chunk: int) -> np.ndarray:
    import torch

    out = []
    model_input = torch.from_numpy(np.ascontiguousarray(bags, dtype=np.float32))
    with one_torch_thread(), torch.no_grad():
        for start in range(0, len(bags), chunk):
            out.append(function(model_input[start : start + chunk]).double().numpy())
    return np.concatenate(out)


# ---- the pretrained fixtures --------------------------------------------------------------------


def _rate(aggregator: str) -> float:
    return PRETRAIN_LEARNING_RATES.get(aggregator, PRETRAIN_LEARNING_RATE)


def _key(aggregator: str, task: str) -> str:
    import torch

    recipe = {
        "aggregator": aggregator, "task": task, "seed": PRETRAIN_SEED, "hidden": HIDDEN,
        "bags": slides.PRETRAIN_BAGS, "instances": slides.PRETRAIN_INSTANCES,
        "epochs": PRETRAIN_EPOCHS, "lr": _rate(aggregator), "batch": BATCH,
        "schedule": "cosine", "width": WIDTH,
        "world": hashlib.sha256(slides.world().centres.tobytes()).hexdigest(),
        "slides": [slides.BACKGROUND, slides.STAIN, slides.SHIFT, slides.BACKGROUND_SHARE,
                   slides.DIAGNOSTIC_SHARE],
        "torch": torch.__version__,
    }  # fmt: skip
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def pretraining_set(task: str) -> tuple[np.ndarray, np.ndarray]:
    """The :data:`~slides.PRETRAIN_BAGS` bags of pretraining ``task`` (seed
    :data:`PRETRAIN_SEED`)."""
    if task not in slides.PRETRAINING:
        raise ValueError(f"task must be one of {slides.PRETRAINING}, got {task!r}")
    rng = np.random.default_rng([PRETRAIN_SEED, slides.PRETRAINING.index(task)])
    return slides.bags(rng, task, slides.PRETRAIN_BAGS, slides.PRETRAIN_INSTANCES)


@functools.cache
def pretrained(aggregator: str, task: str) -> dict[str, np.ndarray]:
    """The state dict (as arrays) of ``aggregator`` pretrained on ``task``: trained by
    :func:`pretrain` once, then read from ``cache_dir("mil")`` (``np.load`` without pickle)."""
    check_aggregator(aggregator)
    path = cache_dir("mil") / f"{aggregator}-{task}-{_key(aggregator, task)}.npz"
    return cached_arrays(path, lambda: pretrain(aggregator, task))


def pretrain(aggregator: str, task: str) -> dict[str, np.ndarray]:
    """Train a fresh ``aggregator`` (seed :data:`PRETRAIN_SEED`) on :func:`pretraining_set`."""
    bags, labels = pretraining_set(task)
    model = build(aggregator, slides.TASKS[task][0], PRETRAIN_SEED)
    train(model, bags, labels, PRETRAIN_EPOCHS, _rate(aggregator), PRETRAIN_SEED)
    return {name: value.detach().numpy() for name, value in model.state_dict().items()}


def load(aggregator: str, task: str) -> Any:
    """A fresh copy of ``aggregator`` pretrained on ``task`` (training it leaves the cache
    unchanged)."""
    import torch

    model = build(aggregator, slides.TASKS[task][0], PRETRAIN_SEED)
    state = pretrained(aggregator, task)
    model.load_state_dict({name: torch.tensor(value) for name, value in state.items()})
    model.eval()
    return model


def build_fixtures() -> None:
    """Build (or find cached) every aggregator's fixture on both pretraining tasks."""
    for aggregator in AGGREGATORS:
        for task in slides.PRETRAINING:
            pretrained(aggregator, task)


if __name__ == "__main__":
    build_fixtures()
