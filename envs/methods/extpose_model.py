"""The ExtPose pose model of ``Methods/PoseEstimation-v0``: the shared tiny ViT with a pose head,
its training, and the RGB-only fixture the ExtPose agents fine-tune from.

:class:`PoseViT` wraps the backbone of :mod:`omnigym.envs.methods.vit` (4 pre-norm blocks of
width 96, patch :data:`PATCH` = 8, so 64 tokens of a 64×64 frame, a class token), feeds it each
frame minus its per-channel mean times :data:`CONTRAST`, starts its position embeddings at
spread :data:`POSITION_SPREAD` rather than the backbone's 0.02 (without these two the ViT stayed
at the mean pose, ``docs/methods.md``) and regresses
the 14 root-relative joints (metres) through a linear head on the class token's output, in
standardised units (each coordinate minus its mean over the fixture's training poses, divided
by their common spread; buffers of the model, so fine-tuned models keep them). Optional inputs,
each switched on by the model's ``variant`` (:data:`VARIANTS`), hold the ExtPose mechanisms
(Chen et al., ICML 2025):

- ``rgb``: the frame's patch tokens only;
- ``skeleton``: the detections drawn as an image (:func:`omnigym.envs.methods.poses.
  skeleton_image`) patchified by the same patch embedding (with the same position embeddings)
  and concatenated after the RGB tokens, with only a learned modality embedding added to each
  set;
- ``coordinates``: one extra token, an MLP (28 → 96 → 96) of the detections' pixel coordinates
  (the paper's representation ablation);
- ``temporal``: ``skeleton`` plus a cross-frame attention layer over the class tokens of
  :data:`WINDOW` consecutive frames of a clip, before the head.

The fixture (:func:`pretrained`) is the ``rgb`` model trained on :data:`PRETRAIN_CLIPS` clips of
:mod:`omnigym.envs.methods.poses` drawn from a fixed seed (:func:`train`: AdamW, L1 loss, a
linear warm-up then cosine decay, mini-batches of :data:`BATCH` frames), kept in the user's
cache folder as arrays read back without pickle; built in-process once, never downloaded
(``python -m omnigym.envs.methods.extpose_model`` builds it ahead of a run). Its state dict loads
into every variant: the variants' extra parameters start fresh.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np

from omnigym.threads import one_torch_thread

from . import poses, vit
from .core import cache_dir, cached_arrays

VARIANTS = ("rgb", "skeleton", "coordinates", "temporal")
#: One frame's pose: 14 joints, 3-D.
POSE = (len(poses.JOINTS), 3)
PATCH = 8
WINDOW = 4
#: Frames enter the ViT as each channel minus its mean over the frame, times this gain: the
#: per-clip background colour goes and the limbs stand out.
CONTRAST = 4.0
#: The spread of the position embeddings at initialisation, larger than the backbone's 0.02 so
#: that where a patch lies weighs as much as what it shows from the first step.
POSITION_SPREAD = 0.5
BATCH = 32
WARMUP = 0.05
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

    joints = len(poses.JOINTS)
    width = vit.WIDTH

    def _contrast(images):
        return (images - images.mean(dim=(2, 3), keepdim=True)) * CONTRAST

    class PoseViT(nn.Module):
        """See the module docstring; ``forward(images, skeletons, detections)`` takes frames
        (batch, 3, 64, 64) in [0, 1] (for ``temporal``, batch = clips × :data:`WINDOW` frames in
        clip order), skeleton images of the same shape and pixel detections (batch, 14, 2); the
        inputs a variant does not use may be None. It returns poses in metres."""

        def __init__(self, variant: str):
            super().__init__()
            self.variant = check_variant(variant)
            self.backbone = vit.build(poses.IMAGE, PATCH, channels=3, class_token=True)
            nn.init.normal_(self.backbone.position, std=POSITION_SPREAD)
            self.head = nn.Linear(width, 3 * joints)
            self.register_buffer("pose_mean", torch.zeros(joints, 3))
            self.register_buffer("pose_spread", torch.ones(()))
            if variant in ("skeleton", "temporal"):
                self.modality = nn.Parameter(torch.zeros(2, 1, width))
            if variant == "coordinates":
                self.coordinates = nn.Sequential(
                    nn.Linear(2 * joints, width), nn.GELU(), nn.Linear(width, width)
                )
            if variant == "temporal":
                self.cross_norm = nn.LayerNorm(width)
                self.cross = nn.MultiheadAttention(width, vit.HEADS, batch_first=True)

        def standardised(self, images, skeletons=None, detections=None):
            """The pose in standardised units (batch, 14, 3)."""
            tokens = [self.backbone.embed(_contrast(images))]
            if self.variant in ("skeleton", "temporal"):
                tokens = [tokens[0] + self.modality[0], self.backbone.embed(_contrast(skeletons))]
                tokens[1] = tokens[1] + self.modality[1]
            if self.variant == "coordinates":
                centred = (detections.flatten(1) - poses.IMAGE / 2) / (poses.IMAGE / 2)
                tokens.append(self.coordinates(centred)[:, None])
            out = self.backbone.encode(torch.cat(tokens, dim=1))[:, 0]
            if self.variant == "temporal":
                window = out.reshape(-1, WINDOW, width)
                query = self.cross_norm(window)
                mixed = self.cross(query, query, query, need_weights=False)[0]
                out = (window + mixed).flatten(0, 1)
            return self.head(out).reshape(-1, joints, 3)

        def forward(self, images, skeletons=None, detections=None):
            standard = self.standardised(images, skeletons, detections)
            return standard * self.pose_spread + self.pose_mean

    return PoseViT


def build(variant: str, seed: int) -> Any:
    """A freshly initialised :class:`PoseViT` of ``variant`` (weights from ``seed``)."""
    import torch

    torch.manual_seed(seed)
    return _model_class()(check_variant(variant))


def inputs(images: np.ndarray, detections: np.ndarray, variant: str) -> dict[str, np.ndarray]:
    """The inputs a ``variant`` model reads from clips' renders (clips, 16, 3, 64, 64) uint8 and
    detections (clips, 16, 14, 2), every frame flattened in clip order: ``images`` (frames, 3,
    64, 64) float32 in [0, 1], and ``skeletons`` (the same shape; ``skeleton`` and ``temporal``)
    or ``detections`` (frames, 14, 2; ``coordinates``)."""
    detections = np.asarray(detections).reshape(-1, len(poses.JOINTS), 2)
    out = {"images": np.asarray(images).reshape(-1, 3, poses.IMAGE, poses.IMAGE)}
    out["images"] = out["images"].astype(np.float32) / 255
    if check_variant(variant) in ("skeleton", "temporal"):
        out["skeletons"] = poses.skeleton_image(detections)
    if variant == "coordinates":
        out["detections"] = detections.astype(np.float32)
    return out


def _call(model: Any, batch: dict[str, Any]) -> Any:
    return model.standardised(batch["images"], batch.get("skeletons"), batch.get("detections"))


def standardise(model: Any, targets: np.ndarray) -> None:
    """Set ``model``'s pose mean and spread from training poses (frames, 14, 3), metres."""
    import torch

    mean = targets.mean(axis=0)
    model.pose_mean.copy_(torch.from_numpy(mean.astype(np.float32)))
    model.pose_spread.fill_(float(np.abs(targets - mean).mean()))


def train(
    model: Any,
    frames: dict[str, np.ndarray],
    targets: np.ndarray,
    epochs: int,
    learning_rate: float,
    seed: int,
) -> list[float]:
    """AdamW (``learning_rate`` after a linear warm-up over the first :data:`WARMUP` of the
    steps, then cosine decay to 0; weight decay 0.05) on the L1 error of the standardised pose
    (``targets`` (frames, 14, 3) metres) for ``epochs`` passes in mini-batches of :data:`BATCH`
    frames (for ``temporal``, of :data:`WINDOW`-frame windows) in a seeded order, on one torch
    thread. Returns the epoch losses (standardised units)."""
    import torch

    group = WINDOW if model.variant == "temporal" else 1
    data = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in frames.items()}
    y = torch.from_numpy(np.ascontiguousarray(targets, np.float32))
    y = (y - model.pose_mean) / model.pose_spread
    units = len(y) // group
    per_batch = max(BATCH // group, 1)
    steps = max(epochs * -(-units // per_batch), 1)
    warm = max(int(WARMUP * steps), 1)
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.05)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser,
        lambda step: min((step + 1) / warm, 0.5 * (1 + np.cos(np.pi * step / steps))),
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
    model.eval()
    with one_torch_thread(), torch.no_grad():
        for start in range(0, len(data["images"]), chunk):
            batch = {k: v[start : start + chunk] for k, v in data.items()}
            out.append(model(batch["images"], batch.get("skeletons"), batch.get("detections")))
    return torch.cat(out).double().numpy()


def _key() -> str:
    import torch

    probe = poses.clips(np.random.default_rng(PRETRAIN_SEED), 1)
    recipe = {
        "seed": PRETRAIN_SEED, "clips": PRETRAIN_CLIPS, "epochs": PRETRAIN_EPOCHS,
        "lr": PRETRAIN_LEARNING_RATE, "batch": BATCH, "warmup": WARMUP, "contrast": CONTRAST,
        "position": POSITION_SPREAD, "width": vit.WIDTH,
        "depth": vit.DEPTH, "heads": vit.HEADS, "mlp": vit.MLP, "patch": PATCH,
        "torch": torch.__version__,
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
    frames = inputs(clips.images, clips.detections, "rgb")
    model = build("rgb", PRETRAIN_SEED)
    targets = clips.poses.reshape(-1, len(poses.JOINTS), 3)
    standardise(model, targets)
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
