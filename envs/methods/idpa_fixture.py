"""The frozen ViT fixture of ``Methods/IncrementalDetection-v0``: box pooling, centre offsets,
and the shared tiny ViT (:mod:`omnigym.envs.methods.vit`) pretrained on generic shapes.

Detection heads read box-pooled features (:func:`box_pool`: the mean of the final tokens whose
patch centre lies in a box, or the nearest token when none does; pooling by tensor indexing) and
regress an object's centre as an offset from its proposal's centre (:func:`centre_targets`,
:func:`centres_from`).

The fixture (:func:`pretrained`) is the ViT (64×64 grey images, patch 8 or 4, no class token)
with a box-pooled classifier of shape and polarity and a centre regressor trained on
:func:`omnigym.envs.methods.lesions.pretraining_images` (generic shapes on random textures), one
per patch size, kept in the user's cache directory (:func:`omnigym.envs.methods.core.cache_dir`)
as arrays read back without pickle; built in-process once, never downloaded (``python -m
omnigym.envs.methods.idpa_fixture`` builds both ahead of a run).

Recipe (:data:`RECIPES`): AdamW (decay 0.05) with a one-cycle schedule (10 % warm-up, cosine
decay, peak 1e-3), batches of 32, and a fresh set of :data:`IMAGES_PER_EPOCH` seeded images
every epoch, so the ViT never sees an image twice. The patch-8 ViT trains 30 epochs from
scratch. The patch-4 ViT, with four times as many tokens and about five times the cost per
image, starts from the patch-8 fixture instead: the same blocks and final norm (they do not
depend on the patch size), the 8×8 patch kernel summed over 2×2 blocks into a 4×4 one (a uniform
patch embeds as before), position embeddings interpolated bilinearly from the 8×8 grid to 16×16
(as Dosovitskiy et al. do for a new resolution), then 5 epochs. Measured by linear probes
(logistic regression on the standardised box-pooled features of jittered proposals; 300
training and 150 held-out images, seeded) against the same ViT at random initialisation:

| probe | patch 8 random | patch 8 fixture | patch 4 random | patch 4 fixture |
|---|---|---|---|---|
| held-out pretraining shapes (5 shapes) | 0.30 | 0.96 | 0.39 | 0.93 |
| the 8 lesion classes, mixed backgrounds | 0.27 | 0.56 | 0.27 | 0.59 |
| the 8 lesion classes, per-task backgrounds | 0.62 | 0.90 | 0.66 | 0.87 |

(The centre probe, ridge regression of the offset, puts 98–100 % of centres within 4 px for
every ViT, random ones included: a proposal's own centre already does for 99 %.) Building took
234 CPU-seconds at patch 8 and 168 at patch 4 on one thread. The recipe it replaces (3,000
fixed images, 10 epochs at peak 3e-3, shape labels only) reached 0.40, 0.30 and 0.66 at patch
8: about 940 optimiser steps are too few for a ViT trained from scratch, and its training
accuracy stayed near 55 %; at about 2,800 steps on fresh images it passes 95 %.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from omnigym.threads import one_torch_thread

from . import lesions, vit
from .core import cache_dir, cached_arrays

PATCHES = (8, 4)
PRETRAIN_SEED = 0
IMAGES_PER_EPOCH = 3000
BATCH = 32
WEIGHT_DECAY = 0.05


@dataclass(frozen=True)
class Recipe:
    """How one patch size's fixture is trained: ``epochs`` of fresh images at peak learning rate
    ``learning_rate``, from scratch or (``start``) from another patch size's fixture."""

    epochs: int
    learning_rate: float
    start: int | None = None


RECIPES = {
    8: Recipe(epochs=30, learning_rate=1e-3),
    4: Recipe(epochs=5, learning_rate=1e-3, start=8),
}


def check_patch(patch: int) -> int:
    if patch not in PATCHES:
        raise ValueError(f"patch must be one of {PATCHES}, got {patch!r}")
    return patch


def box_pool(tokens: Any, patch: int, image_index: Any, boxes: Any) -> Any:
    """Mean final token inside each box: ``tokens`` (batch, grid², WIDTH), ``image_index`` (m,)
    the image of each box, ``boxes`` (m, 4) in pixels; (m, WIDTH)."""
    import torch

    grid = lesions.SIDE // patch
    centres = (torch.arange(grid, dtype=tokens.dtype) + 0.5) * patch
    cy, cx = torch.meshgrid(centres, centres, indexing="ij")
    cx, cy = cx.reshape(-1), cy.reshape(-1)
    inside = (
        (cx >= boxes[:, :1]) & (cx <= boxes[:, 2:3]) & (cy >= boxes[:, 1:2]) & (cy <= boxes[:, 3:4])
    )
    middle_x, middle_y = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
    nearest = ((cx - middle_x[:, None]) ** 2 + (cy - middle_y[:, None]) ** 2).argmin(dim=1)
    inside[torch.arange(len(boxes)), nearest] = True
    weights = inside.to(tokens.dtype)
    weights = weights / weights.sum(dim=1, keepdim=True)
    return torch.einsum("mt,mtd->md", weights, tokens[image_index])


def objects(data: lesions.Images) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(image index, box, label) of every present object of ``data``."""
    image, slot = np.nonzero(data.labels >= 0)
    return image, data.boxes[image, slot], data.labels[image, slot]


def centre_targets(proposals: Any, boxes: Any) -> Any:
    """The true centre as an offset from the proposal's centre in proposal half-sizes."""
    half = (proposals[:, 2:] - proposals[:, :2]) / 2
    return ((boxes[:, :2] + boxes[:, 2:]) / 2 - (proposals[:, :2] + proposals[:, 2:]) / 2) / half


def centres_from(proposals: Any, offsets: Any) -> Any:
    """Inverse of :func:`centre_targets`: centres (m, 2) in pixels."""
    half = (proposals[:, 2:] - proposals[:, :2]) / 2
    return (proposals[:, :2] + proposals[:, 2:]) / 2 + offsets * half


def build(patch: int, seed: int) -> Any:
    """A fresh ViT (``.vit``) with the pretraining heads (``.classify``: shape-and-polarity logits,
    ``.locate``: centre offset), seeded by ``seed``."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    model = nn.Module()
    model.vit = vit.build(lesions.SIDE, check_patch(patch))
    model.classify = nn.Linear(vit.WIDTH, len(lesions.PRETRAIN_CLASSES))
    model.locate = nn.Linear(vit.WIDTH, 2)
    return model


def _key(patch: int) -> str:
    import torch

    recipe = {
        "patch": patch, "width": vit.WIDTH, "depth": vit.DEPTH, "heads": vit.HEADS,
        "mlp": vit.MLP, "seed": PRETRAIN_SEED, "images": IMAGES_PER_EPOCH, "batch": BATCH,
        "decay": WEIGHT_DECAY, "recipe": asdict(RECIPES[patch]),
        "classes": lesions.PRETRAIN_CLASSES, "sizes": lesions.SIZE_RANGE,
        "texture": lesions.TEXTURE, "proposals": [lesions.JITTER, lesions.GROWTH],
        "schedule": "one-cycle", "torch": torch.__version__,
    }  # fmt: skip
    start = RECIPES[patch].start
    if start is not None:
        recipe["start"] = _key(start)
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def _start_from(model: Any, patch: int, state: dict[str, np.ndarray]) -> None:
    """Load another patch size's fixture ``state`` into ``model`` (see the module docstring)."""
    import torch
    from torch.nn import functional

    weights = {name: torch.tensor(value) for name, value in state.items()}
    kernel = weights["patches.weight"]
    factor = kernel.shape[-1] // patch
    weights["patches.weight"] = (
        kernel.unflatten(-1, (patch, factor)).unflatten(-3, (patch, factor)).sum(dim=(-1, -3))
    )
    grid = lesions.SIDE // patch
    old = weights["position"]
    side = int(round(old.shape[1] ** 0.5))
    square = old.reshape(1, side, side, -1).permute(0, 3, 1, 2)
    resized = functional.interpolate(square, size=(grid, grid), mode="bilinear")
    weights["position"] = resized.permute(0, 2, 3, 1).reshape(1, grid * grid, -1)
    model.load_state_dict(weights)


def pretrain(patch: int) -> dict[str, np.ndarray]:
    """Train :func:`build` (seed :data:`PRETRAIN_SEED`) by ``RECIPES[patch]`` to classify the
    shape and polarity in each proposal and regress its centre; the ViT's state dict as
    arrays."""
    import torch
    from torch.nn import functional

    recipe = RECIPES[patch]
    rng = np.random.default_rng([PRETRAIN_SEED, patch])
    model = build(patch, PRETRAIN_SEED)
    if recipe.start is not None:
        _start_from(model.vit, patch, pretrained(recipe.start))
    optimiser = torch.optim.AdamW(
        model.parameters(), lr=recipe.learning_rate, weight_decay=WEIGHT_DECAY
    )
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimiser,
        max_lr=recipe.learning_rate,
        total_steps=recipe.epochs * -(-IMAGES_PER_EPOCH // BATCH),
        pct_start=0.1,
    )
    with one_torch_thread():
        for _ in range(recipe.epochs):
            data = lesions.pretraining_images(rng, IMAGES_PER_EPOCH)
            boxes = lesions.proposals(rng, data.boxes, data.labels)
            order = rng.permutation(IMAGES_PER_EPOCH)
            for start in range(0, IMAGES_PER_EPOCH, BATCH):
                batch = order[start : start + BATCH]
                part = lesions.Images(data.images[batch], data.boxes[batch], data.labels[batch])
                image, truth, label = (torch.from_numpy(a) for a in objects(part))
                proposal = torch.from_numpy(boxes[batch][np.nonzero(part.labels >= 0)])
                tokens = model.vit(torch.from_numpy(part.images))
                pooled = box_pool(tokens, patch, image, proposal)
                loss = functional.cross_entropy(model.classify(pooled), label)
                target = centre_targets(proposal, truth)
                loss = loss + functional.smooth_l1_loss(model.locate(pooled), target)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                schedule.step()
    return {name: value.detach().numpy() for name, value in model.vit.state_dict().items()}


@functools.cache
def pretrained(patch: int) -> dict[str, np.ndarray]:
    """The pretrained ViT's state dict as arrays: trained by :func:`pretrain` once, then read
    from ``cache_dir("idpa")``."""
    path = cache_dir("idpa") / f"vit-p{check_patch(patch)}-{_key(patch)}.npz"
    return cached_arrays(path, lambda: pretrain(patch))


def load(patch: int) -> Any:
    """A fresh, frozen copy of the pretrained ViT (eval mode, no gradients)."""
    import torch

    model = vit.build(lesions.SIDE, check_patch(patch))
    model.load_state_dict({name: torch.tensor(value) for name, value in pretrained(patch).items()})
    model.eval()
    model.requires_grad_(False)
    return model


if __name__ == "__main__":
    for size in PATCHES:
        pretrained(size)
