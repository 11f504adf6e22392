"""The tiny Vision Transformer that the vision Methods papers (iDPA, ExtPose) build on.

A plain pre-norm ViT (Dosovitskiy et al., ICLR 2021): a patch embedding (a strided convolution),
learned position embeddings, an optional class token, :data:`DEPTH` blocks of width
:data:`WIDTH`, :data:`HEADS` heads and MLP width :data:`MLP`, and a final layer norm. It is
written on ``torch.nn`` rather than taken from timm: timm imports torchvision, and the only
torchvision build published for the CPU torch this project pins is a CUDA build whose extension
fails to load ("operator torchvision::nms does not exist"); and the attention must be open so
that prompts can enter it.

Prompts enter every block's attention in one of two ways (:func:`attention`, ``mode``):

- ``"prefix"`` (L2P / prefix tuning, coupled): prompt keys and values are prepended to the
  image's, and one softmax runs over both: Attn(Q_X, [K_P; K_X], [V_P; V_X]);
- ``"decoupled"`` (iDPA's DPA): the image attention is kept as it is and a second attention over
  the prompts alone is added: Attn(Q_X, K_X, V_X) + Attn(Q_X, K_P, V_P).

``ViT.embed`` turns images into position-embedded patch tokens and ``ViT.encode`` runs the blocks
over any token sequence, so a model can add tokens of its own (another modality, coordinates)
between the two; ``ViT.forward`` is both.
"""

from __future__ import annotations

import functools
from typing import Any

WIDTH, DEPTH, HEADS, MLP = 96, 4, 4, 192
MODES = ("prefix", "decoupled")


def attention(q: Any, k: Any, v: Any) -> Any:
    """Softmax attention over the last two axes (batch, heads, tokens, head width)."""
    from torch.nn import functional

    return functional.scaled_dot_product_attention(q, k, v)


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
            elif mode == "decoupled":
                pk, pv = (self._heads(part) for part in prompt)
                out = attention(q, k, v) + attention(q, pk, pv)
            else:
                raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
            x = x + self.proj(out.transpose(1, 2).flatten(2))
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        """Images (batch, channels, side, side), or (batch, side, side) for one channel."""

        def __init__(self, side: int, patch: int, channels: int = 1, class_token: bool = False):
            super().__init__()
            if side % patch:
                raise ValueError(f"patch {patch} does not divide the image side {side}")
            self.patch, self.grid = patch, side // patch
            self.patches = nn.Conv2d(channels, WIDTH, patch, stride=patch)
            self.position = nn.Parameter(torch.zeros(1, self.grid**2, WIDTH))
            nn.init.trunc_normal_(self.position, std=0.02)
            self.cls = nn.Parameter(torch.zeros(1, 1, WIDTH)) if class_token else None
            if class_token:
                nn.init.trunc_normal_(self.cls, std=0.02)
            self.blocks = nn.ModuleList(Block() for _ in range(DEPTH))
            self.norm = nn.LayerNorm(WIDTH)

        def embed(self, images):
            """Position-embedded patch tokens (batch, grid², WIDTH), no class token."""
            if images.dim() == 3:
                images = images[:, None]
            return self.patches(images).flatten(2).transpose(1, 2) + self.position

        def encode(self, tokens, prompts=None, mode=None):
            """The blocks and final norm over ``tokens`` (batch, n, WIDTH), with the class token
            first when the model has one; ``prompts`` one (keys, values) per block or None."""
            if self.cls is not None:
                tokens = torch.cat([self.cls.expand(len(tokens), -1, -1), tokens], dim=1)
            for i, block in enumerate(self.blocks):
                tokens = block(tokens, None if prompts is None else prompts[i], mode)
            return self.norm(tokens)

        def forward(self, images, prompts=None, mode=None):
            return self.encode(self.embed(images), prompts, mode)

    return {"Block": Block, "ViT": ViT}


def build(side: int, patch: int, channels: int = 1, class_token: bool = False) -> Any:
    """A freshly initialised :class:`ViT` (seed torch first for reproducible weights)."""
    return _classes()["ViT"](side, patch, channels, class_token)
