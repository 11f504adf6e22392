"""The frozen tiny ViT of ``Methods/IncrementalDetection-v0``: architecture, prompt attention,
box pooling, and the pretrained fixture.

A plain pre-norm ViT (Dosovitskiy et al., ICLR 2021): 4 blocks of width 96, 4 heads, MLP width
192, patches of 8 (64 tokens) or 4 px (256 tokens) of a 64×64 grey image, learned position
embeddings, no class token. It is written on ``torch.nn`` rather than taken from timm: timm
imports torchvision, and the only torchvision build available for the pinned CPU torch is a
CUDA one whose extension fails to load ("operator torchvision::nms does not exist"); and the
attention must be open so that prompts can enter it.

Prompts enter every block's attention in one of two ways (:func:`attention`):

- ``prefix`` (L2P / prefix tuning, coupled): prompt keys and values are prepended to the image's,
  and one softmax runs over both: Attn(Q_X, [K_P; K_X], [V_P; V_X]);
- ``decoupled`` (iDPA's DPA): the frozen image attention is kept as it is and a second attention
  over the prompts alone is added: Attn(Q_X, K_X, V_X) + Attn(Q_X, K_P, V_P).

Detection heads read box-pooled features (:func:`box_pool`: the mean of the final tokens whose
patch centre lies in a box, or the nearest token when none does; pooling by tensor indexing).

The fixture (:func:`pretrained`) is the ViT with a box-pooled shape classifier and centre
regressor trained on :func:`omnigym.envs.methods.lesions.pretraining_images` (generic shapes on
random textures, :data:`PRETRAIN_IMAGES` images from a fixed seed, :data:`PRETRAIN_EPOCHS`
epochs of AdamW with a one-cycle schedule, in a seeded order), one per patch size, kept in the
user's cache directory as arrays read back without pickle; built in-process once, never
downloaded (``python -m omnigym.envs.methods.vit`` builds both ahead of a run). On held-out
pretraining images the patch-8 ViT classifies about 40 % of the shapes right (5 classes):
a weak fixture, still to be improved.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from omnigym.threads import one_torch_thread

from . import lesions

WIDTH, DEPTH, HEADS, MLP = 96, 4, 4, 192
PATCHES = (8, 4)
PRETRAIN_SEED = 0
PRETRAIN_IMAGES = 3000
PRETRAIN_EPOCHS = 10
#: Peak learning rate of the one-cycle schedule (10 % warm-up, cosine decay) and AdamW's decay.
PRETRAIN_LEARNING_RATE = 3e-3
WEIGHT_DECAY = 0.05
BATCH = 32
MODES = ("prefix", "decoupled")


def check_patch(patch: int) -> int:
    if patch not in PATCHES:
        raise ValueError(f"patch must be one of {PATCHES}, got {patch!r}")
    return patch


def attention(q: Any, k: Any, v: Any) -> Any:
    """Softmax attention over the last two axes (batch, heads, tokens, head width)."""
    import torch

    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return weights @ v


@functools.cache
def _classes() -> dict[str, Any]:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
            self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
            self.mlp = nn.Sequential(nn.Linear(WIDTH, MLP), nn.GELU(), nn.Linear(MLP, WIDTH))

        def _heads(self, x):
            return x.unflatten(-1, (HEADS, WIDTH // HEADS)).transpose(1, 2)

        def forward(self, x, prompt=None, mode=None):
            """``prompt``: (keys, values), each (batch, prompt tokens, WIDTH), or None."""
            q, k, v = (self._heads(part) for part in self.qkv(self.norm1(x)).chunk(3, dim=-1))
            if prompt is None:
                out = attention(q, k, v)
            elif mode == "prefix":
                pk, pv = (self._heads(part) for part in prompt)
                out = attention(q, torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2))
            else:
                pk, pv = (self._heads(part) for part in prompt)
                out = attention(q, k, v) + attention(q, pk, pv)
            x = x + self.proj(out.transpose(1, 2).flatten(2))
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self, patch: int):
            super().__init__()
            self.patch = patch
            self.grid = lesions.SIDE // patch
            self.embed = nn.Conv2d(1, WIDTH, patch, stride=patch)
            self.position = nn.Parameter(torch.randn(1, self.grid**2, WIDTH) * 0.02)
            self.blocks = nn.ModuleList(Block() for _ in range(DEPTH))
            self.norm = nn.LayerNorm(WIDTH)

        def forward(self, images, prompts=None, mode=None):
            """Final tokens (batch, grid², WIDTH) of images (batch, 64, 64); ``prompts`` one
            (keys, values) per block or None."""
            x = self.embed(images[:, None]).flatten(2).transpose(1, 2) + self.position
            for i, block in enumerate(self.blocks):
                x = block(x, None if prompts is None else prompts[i], mode)
            return self.norm(x)

    class Pretraining(nn.Module):
        """The ViT with the pretraining heads: shape logits and centre offset per box."""

        def __init__(self, patch: int):
            super().__init__()
            self.vit = ViT(patch)
            self.classify = nn.Linear(WIDTH, len(lesions.SHAPES))
            self.locate = nn.Linear(WIDTH, 2)

    return {"ViT": ViT, "Pretraining": Pretraining}


def build(patch: int, seed: int) -> Any:
    """A fresh, randomly initialised ViT with pretraining heads."""
    import torch

    torch.manual_seed(seed)
    return _classes()["Pretraining"](check_patch(patch))


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


# ---- the pretrained fixture ---------------------------------------------------------------------


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME`` or ``~/.cache``, then ``omnigym/idpa/``."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "omnigym" / "idpa"


def _key(patch: int) -> str:
    import torch

    recipe = {
        "patch": patch, "width": WIDTH, "depth": DEPTH, "heads": HEADS, "mlp": MLP,
        "seed": PRETRAIN_SEED, "images": PRETRAIN_IMAGES, "epochs": PRETRAIN_EPOCHS,
        "lr": PRETRAIN_LEARNING_RATE, "decay": WEIGHT_DECAY, "batch": BATCH,
        "shapes": lesions.SHAPES, "sizes": lesions.SIZE_RANGE, "texture": lesions.TEXTURE,
        "proposals": [lesions.JITTER, lesions.GROWTH], "schedule": "one-cycle",
        "torch": torch.__version__,
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
    from :func:`cache_dir` (``np.load`` without pickle)."""
    path = cache_dir() / f"vit-p{check_patch(patch)}-{_key(patch)}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as saved:
            return dict(saved)
    state = pretrain(patch)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial.npz")
    np.savez(partial, **state)
    os.replace(partial, path)
    return state


def load(patch: int) -> Any:
    """A fresh, frozen copy of the pretrained ViT (eval mode, no gradients)."""
    import torch

    vit = _classes()["ViT"](check_patch(patch))
    vit.load_state_dict({name: torch.tensor(value) for name, value in pretrained(patch).items()})
    vit.eval()
    vit.requires_grad_(False)
    return vit


if __name__ == "__main__":
    for size in PATCHES:
        pretrained(size)
