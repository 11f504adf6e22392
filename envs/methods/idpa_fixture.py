"""The frozen ViT fixture of ``Methods/IncrementalDetection-v0``: box pooling, centre offsets,
and the shared tiny ViT (:mod:`omnigym.envs.methods.vit`) pretrained on generic shapes.

Detection heads read box-pooled features (:func:`box_pool`: the mean of the final tokens whose
patch centre lies in a box, or the nearest token when none does; pooling by tensor indexing) and
regress an object's centre as an offset from its proposal's centre (:func:`centre_targets`,
:func:`centres_from`).

The fixture (:func:`pretrained`) is the ViT (64×64 grey images, patch 8 or 4, no class token)
with a box-pooled shape classifier and centre regressor trained on
:func:`omnigym.envs.methods.lesions.pretraining_images` (generic shapes on random textures,
:data:`PRETRAIN_IMAGES` images from a fixed seed, :data:`PRETRAIN_EPOCHS` epochs of AdamW with a
one-cycle schedule, in a seeded order), one per patch size, kept in the user's cache directory
(:func:`omnigym.envs.methods.core.cache_dir`) as arrays read back without pickle; built
in-process once, never downloaded (``python -m omnigym.envs.methods.idpa_fixture`` builds both
ahead of a run).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np

from omnigym.threads import one_torch_thread

from . import lesions, vit
from .core import cache_dir, cached_arrays

PATCHES = (8, 4)
PRETRAIN_SEED = 0
PRETRAIN_IMAGES = 3000
PRETRAIN_EPOCHS = 10
#: Peak learning rate of the one-cycle schedule (10 % warm-up, cosine decay) and AdamW's decay.
PRETRAIN_LEARNING_RATE = 3e-3
WEIGHT_DECAY = 0.05
BATCH = 32


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
    """A fresh ViT (``.vit``) with the pretraining heads (``.classify``: shape logits,
    ``.locate``: centre offset), seeded by ``seed``."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    model = nn.Module()
    model.vit = vit.build(lesions.SIDE, check_patch(patch))
    model.classify = nn.Linear(vit.WIDTH, len(lesions.SHAPES))
    model.locate = nn.Linear(vit.WIDTH, 2)
    return model


def _key(patch: int) -> str:
    import torch

    recipe = {
        "patch": patch, "width": vit.WIDTH, "depth": vit.DEPTH, "heads": vit.HEADS,
        "mlp": vit.MLP, "seed": PRETRAIN_SEED, "images": PRETRAIN_IMAGES,
        "epochs": PRETRAIN_EPOCHS, "lr": PRETRAIN_LEARNING_RATE, "decay": WEIGHT_DECAY,
        "batch": BATCH, "shapes": lesions.SHAPES, "sizes": lesions.SIZE_RANGE,
        "texture": lesions.TEXTURE, "proposals": [lesions.JITTER, lesions.GROWTH],
        "schedule": "one-cycle", "torch": torch.__version__,
    }  # fmt: skip
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def pretrain(patch: int) -> dict[str, np.ndarray]:
    """Train :func:`build` (seed :data:`PRETRAIN_SEED`) to classify the shape in each proposal
    and regress its centre; the ViT's state dict as arrays."""
    import torch
    from torch.nn import functional

    rng = np.random.default_rng([PRETRAIN_SEED, patch])
    data = lesions.pretraining_images(rng, PRETRAIN_IMAGES)
    boxes = lesions.proposals(rng, data.boxes, data.labels)
    model = build(patch, PRETRAIN_SEED)
    optimiser = torch.optim.AdamW(
        model.parameters(), lr=PRETRAIN_LEARNING_RATE, weight_decay=WEIGHT_DECAY
    )
    steps = PRETRAIN_EPOCHS * -(-PRETRAIN_IMAGES // BATCH)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimiser, max_lr=PRETRAIN_LEARNING_RATE, total_steps=steps, pct_start=0.1
    )
    images = torch.from_numpy(data.images)
    with one_torch_thread():
        for _ in range(PRETRAIN_EPOCHS):
            order = rng.permutation(len(images))
            for start in range(0, len(images), BATCH):
                batch = order[start : start + BATCH]
                part = lesions.Images(data.images[batch], data.boxes[batch], data.labels[batch])
                image, truth, label = (torch.from_numpy(a) for a in objects(part))
                slot = np.nonzero(part.labels >= 0)
                proposal = torch.from_numpy(boxes[batch][slot])
                pooled = box_pool(model.vit(images[batch]), patch, image, proposal)
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
