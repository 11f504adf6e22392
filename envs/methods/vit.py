"""The tiny pose ViT of ``Methods/PoseEstimation-v0``, its training, and the RGB-only fixture the
ExtPose agents fine-tune from.

The ViT is written on ``torch.nn`` (``nn.TransformerEncoderLayer``) rather than taken from
timm: timm imports torchvision, and the only torchvision build published for the CPU torch this
project pins is a CUDA build whose extension fails to load ("operator torchvision::nms does not
exist").

:class:`PoseViT` (4 pre-norm layers, width :data:`WIDTH` = 96, 4 heads, feed-forward 192, patch
:data:`PATCH` = 8, so 64 tokens of a 64×64 frame, a class token, learned position embeddings)
regresses the 14 root-relative joints (metres, divided by :data:`POSE_SCALE`) from the class
token's output through a layer norm and a linear head. Optional inputs, each switched on by the
model's ``variant`` (:data:`VARIANTS`), hold the ExtPose mechanisms:

- ``rgb``: the frame's patch tokens only;
- ``skeleton``: the detections drawn as an image (:func:`omnigym.envs.methods.poses.
  skeleton_image`) patchified by the same patch embedding and concatenated after the RGB tokens,
  with only a learned modality embedding added to each set (Chen et al., ICML 2025);
- ``coordinates``: one extra token, an MLP (28 → 96 → 96) of the detections' pixel coordinates
  (the paper's representation ablation);
- ``temporal``: ``skeleton`` plus a cross-frame attention layer over the class tokens of
  :data:`WINDOW` consecutive frames of a clip, before the head.

The fixture (:func:`pretrained`) is the ``rgb`` model trained on :data:`PRETRAIN_CLIPS` clips of
:mod:`omnigym.envs.methods.poses` drawn from a fixed seed (:func:`train`: AdamW, L1 loss, a
cosine schedule, mini-batches of :data:`BATCH` frames), kept in the user's cache directory as
arrays read back without pickle; built in-process once, never downloaded (``python -m
omnigym.envs.methods.vit`` builds it ahead of a run). Its state dict loads into every variant:
the variants' extra parameters start fresh.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np

from omnigym.threads import one_torch_thread

from . import poses
from .core import cache_dir, cached_arrays

VARIANTS = ("rgb", "skeleton", "coordinates", "temporal")
WIDTH = 96
LAYERS = 4
HEADS = 4
PATCH = 8
WINDOW = 4
#: Poses are regressed in units of this many metres.
POSE_SCALE = 0.5
BATCH = 32
PRETRAIN_SEED = 0
PRETRAIN_CLIPS = 250
PRETRAIN_EPOCHS = 8
PRETRAIN_LEARNING_RATE = 1e-3


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return variant


@functools.cache
def _model_class() -> Any:
    import torch
    from torch import nn

    tokens = (poses.IMAGE // PATCH) ** 2
    joints = len(poses.JOINTS)

    class PoseViT(nn.Module):
        """See the module docstring; ``forward(images, skeletons, detections)`` takes frames
        (batch, 3, 64, 64) in [0, 1] (for ``temporal``, batch = clips × :data:`WINDOW` frames in
        clip order), skeleton images of the same shape and pixel detections (batch, 14, 2); the
        inputs a variant does not use may be None."""

        def __init__(self, variant: str):
            super().__init__()
            self.variant = check_variant(variant)
            self.patch = nn.Conv2d(3, WIDTH, PATCH, stride=PATCH)
            self.position = nn.Parameter(torch.zeros(1, tokens, WIDTH))
            self.cls = nn.Parameter(torch.zeros(1, 1, WIDTH))
            nn.init.trunc_normal_(self.position, std=0.02)
            nn.init.trunc_normal_(self.cls, std=0.02)
            layer = nn.TransformerEncoderLayer(
                WIDTH, HEADS, 2 * WIDTH, dropout=0.0, batch_first=True, norm_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(WIDTH)
            self.head = nn.Linear(WIDTH, 3 * joints)
            if variant in ("skeleton", "temporal"):
                self.modality = nn.Parameter(torch.zeros(2, 1, WIDTH))
            if variant == "coordinates":
                self.coordinates = nn.Sequential(
                    nn.Linear(2 * joints, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH)
                )
            if variant == "temporal":
                self.cross_norm = nn.LayerNorm(WIDTH)
                self.cross = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)

        def _patches(self, images):
            return self.patch(images).flatten(2).transpose(1, 2) + self.position

        def forward(self, images, skeletons=None, detections=None):
            parts = [self.cls.expand(len(images), -1, -1), self._patches(images)]
            if self.variant in ("skeleton", "temporal"):
                parts[1] = parts[1] + self.modality[0]
                parts.append(self._patches(skeletons) + self.modality[1])
            if self.variant == "coordinates":
                centred = (detections.flatten(1) - poses.IMAGE / 2) / (poses.IMAGE / 2)
                parts.append(self.coordinates(centred)[:, None])
            out = self.norm(self.encoder(torch.cat(parts, dim=1))[:, 0])
            if self.variant == "temporal":
                window = out.reshape(-1, WINDOW, WIDTH)
                query = self.cross_norm(window)
                mixed = self.cross(query, query, query, need_weights=False)[0]
                out = (window + mixed).flatten(0, 1)
            return self.head(out).reshape(-1, joints, 3)

    return PoseViT


def build(variant: str, seed: int) -> Any:
    """A freshly initialised :class:`PoseViT` of ``variant`` (weights from ``seed``)."""
    import torch

    torch.manual_seed(seed)
    return _model_class()(check_variant(variant))


def inputs(clips: poses.Clips, variant: str) -> dict[str, np.ndarray]:
    """The inputs a ``variant`` model reads, every frame flattened in clip order: ``images``
    (frames, 3, 64, 64) float32 in [0, 1], and ``skeletons`` (the same shape; ``skeleton`` and
    ``temporal``) or ``detections`` (frames, 14, 2; ``coordinates``)."""
    detections = clips.detections.reshape(-1, len(poses.JOINTS), 2)
    out = {"images": clips.images.reshape(-1, 3, poses.IMAGE, poses.IMAGE).astype(np.float32)}
    out["images"] /= 255
    if check_variant(variant) in ("skeleton", "temporal"):
        out["skeletons"] = poses.skeleton_image(detections)
    if variant == "coordinates":
        out["detections"] = detections.astype(np.float32)
    return out


def _call(model: Any, batch: dict[str, Any]) -> Any:
    return model(batch["images"], batch.get("skeletons"), batch.get("detections"))


def train(
    model: Any,
    frames: dict[str, np.ndarray],
    targets: np.ndarray,
    epochs: int,
    learning_rate: float,
    seed: int,
) -> list[float]:
    """AdamW (``learning_rate``, cosine decay to 0, weight decay 0.05) on the L1 error of the
    pose (``targets`` (frames, 14, 3) metres, in units of :data:`POSE_SCALE`) for ``epochs``
    passes in mini-batches of :data:`BATCH` frames (for ``temporal``, of :data:`WINDOW`-frame
    windows) in a seeded order, on one torch thread. Returns the epoch losses."""
    import torch

    group = WINDOW if model.variant == "temporal" else 1
    data = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in frames.items()}
    y = torch.from_numpy(np.ascontiguousarray(targets, np.float32)) / POSE_SCALE
    units = len(y) // group
    per_batch = max(BATCH // group, 1)
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.05)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimiser, max(epochs * -(-units // per_batch), 1)
    )
    rng = np.random.default_rng(seed)
    losses = []
    model.train()
    with one_torch_thread():
        for _ in range(epochs):
            total = 0.0
            order = rng.permutation(units)
            for start in range(0, units, per_batch):
                chosen = order[start : start + per_batch]
                rows = torch.from_numpy((chosen[:, None] * group + np.arange(group)).ravel())
                value = (_call(model, {k: v[rows] for k, v in data.items()}) - y[rows]).abs()
                value = value.mean()
                optimiser.zero_grad()
                value.backward()
                optimiser.step()
                schedule.step()
                total += float(value.detach()) * len(rows)
            losses.append(total / (units * group))
    model.eval()
    return losses


def predict(model: Any, frames: dict[str, np.ndarray], chunk: int = 64) -> np.ndarray:
    """Root-relative poses (frames, 14, 3) in metres, float64."""
    import torch

    data = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in frames.items()}
    out = []
    with one_torch_thread(), torch.no_grad():
        for start in range(0, len(data["images"]), chunk):
            batch = {k: v[start : start + chunk] for k, v in data.items()}
            out.append(_call(model, batch).double().numpy() * POSE_SCALE)
    return np.concatenate(out)


# ---- the RGB-only fixture -----------------------------------------------------------------------


def _key() -> str:
    import torch

    probe = poses.clips(np.random.default_rng(PRETRAIN_SEED), 1)
    recipe = {
        "seed": PRETRAIN_SEED, "clips": PRETRAIN_CLIPS, "epochs": PRETRAIN_EPOCHS,
        "lr": PRETRAIN_LEARNING_RATE, "batch": BATCH, "width": WIDTH, "layers": LAYERS,
        "heads": HEADS, "patch": PATCH, "scale": POSE_SCALE, "torch": torch.__version__,
        "data": hashlib.sha256(probe.images.tobytes() + probe.poses.tobytes()).hexdigest(),
    }  # fmt: skip
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def pretraining_set() -> poses.Clips:
    """The :data:`PRETRAIN_CLIPS` clips of the fixture (seed :data:`PRETRAIN_SEED`)."""
    return poses.clips(np.random.default_rng([PRETRAIN_SEED, 1]), PRETRAIN_CLIPS)


@functools.cache
def pretrained() -> dict[str, np.ndarray]:
    """The state dict (as arrays) of the RGB-only fixture: trained by :func:`pretrain` once,
    then read from the cache folder ``omnigym/extpose/`` (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    return cached_arrays(cache_dir("extpose") / f"rgb-{_key()}.npz", pretrain)


def pretrain() -> dict[str, np.ndarray]:
    """Train a fresh ``rgb`` model (seed :data:`PRETRAIN_SEED`) on :func:`pretraining_set`."""
    clips = pretraining_set()
    frames = inputs(clips, "rgb")
    model = build("rgb", PRETRAIN_SEED)
    targets = clips.poses.reshape(-1, len(poses.JOINTS), 3)
    train(model, frames, targets, PRETRAIN_EPOCHS, PRETRAIN_LEARNING_RATE, PRETRAIN_SEED)
    return {name: value.detach().numpy() for name, value in model.state_dict().items()}


def load(variant: str = "rgb", seed: int = PRETRAIN_SEED) -> Any:
    """A ``variant`` model holding the RGB-only fixture's weights (its extra parameters fresh
    from ``seed``); training it leaves the cache unchanged."""
    import torch

    model = build(variant, seed)
    state = {name: torch.tensor(value) for name, value in pretrained().items()}
    loaded = model.load_state_dict(state, strict=False)
    if loaded.unexpected_keys:
        extra = loaded.unexpected_keys
        raise ValueError(f"the fixture has parameters {extra} no {variant} model holds")
    model.eval()
    return model


if __name__ == "__main__":
    pretrained()
