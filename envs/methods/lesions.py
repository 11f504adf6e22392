"""Synthetic lesions on modality-like backgrounds for ``Methods/IncrementalDetection-v0``, and the
generic shapes the frozen ViT is pretrained on.

Images are 64×64 grey (float32 in [0, 1]). A background imitates one of four modalities
(:data:`MODALITIES`):

- ``ct``: a smooth grey body ellipse on a dark field, with soft low-frequency mottling and fine
  noise;
- ``mri``: brighter, higher-contrast blobs of tissue (smoothed noise at a coarse scale);
- ``xray``: a vertical exposure gradient with rib-like horizontal bands;
- ``ultrasound``: a fan of multiplicative speckle on black.

A lesion class (:data:`LESIONS`, eight, two per incremental task) is a shape with a contrast
polarity: bright or dark disk, horizontal or vertical ellipse, ring or square, triangle or
three-spot cluster. An image holds 1–3 lesions of its task's classes, 8–16 px across, not
overlapping; each has a box (x0, y0, x1, y1) in pixels and a centre. Pretraining images hold
1–3 :data:`SHAPES` (disk, square, triangle, ring, cross) of either polarity on random smoothed
textures, none of the modality backgrounds, labelled by shape and polarity
(:data:`PRETRAIN_CLASSES`).

Detection is reduced to classifying each object from a proposal box and locating its centre:
:func:`proposals` jitters and enlarges each true box (each side moved by up to a quarter of the
object's size, then the box grown by 30 %), so the proposal's own centre is off by up to a few
pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIDE = 64
MAX_OBJECTS = 3
MODALITIES = ("ct", "mri", "xray", "ultrasound")
#: (shape, polarity) of each lesion class; classes 2t and 2t + 1 are task t's.
LESIONS = (
    ("disk", 1),
    ("disk", -1),
    ("ellipse_h", 1),
    ("ellipse_v", 1),
    ("ring", 1),
    ("square", 1),
    ("triangle", 1),
    ("spots", 1),
)
CLASSES_PER_TASK = 2
TASKS = len(LESIONS) // CLASSES_PER_TASK
SHAPES = ("disk", "square", "triangle", "ring", "cross")
PRETRAIN_CLASSES = tuple((shape, polarity) for shape in SHAPES for polarity in (1, -1))
SIZE_RANGE = (8, 16)
#: Pretraining textures: base level, amplitude of smoothed noise, fine noise.
TEXTURE = (0.25, 0.3, 0.03)
#: Proposal jitter (fraction of the object size per side) and growth.
JITTER, GROWTH = 0.25, 1.3


@dataclass(frozen=True)
class Images:
    """A set of images with up to :data:`MAX_OBJECTS` objects each; unused slots have label
    ``-1`` and an all-zero box."""

    images: np.ndarray  # (n, 64, 64) float32
    boxes: np.ndarray  # (n, MAX_OBJECTS, 4) float32: x0, y0, x1, y1
    labels: np.ndarray  # (n, MAX_OBJECTS) int64, -1 for an empty slot

    @property
    def centres(self) -> np.ndarray:
        return np.stack(
            [
                (self.boxes[..., 0] + self.boxes[..., 2]) / 2,
                (self.boxes[..., 1] + self.boxes[..., 3]) / 2,
            ],
            axis=-1,
        )


def _smooth(rng: np.random.Generator, scale: int) -> np.ndarray:
    """Noise on a coarse (SIDE/scale)² grid, bilinearly upsampled to SIDE², in [0, 1]."""
    cells = SIDE // scale + 2
    coarse = rng.random((cells, cells))
    grid = np.arange(SIDE) / scale
    low = np.floor(grid).astype(int)
    frac = grid - low
    rows = coarse[low] * (1 - frac)[:, None] + coarse[low + 1] * frac[:, None]
    return rows[:, low] * (1 - frac) + rows[:, low + 1] * frac


def background(rng: np.random.Generator, modality: str) -> np.ndarray:
    """One 64×64 background of ``modality`` (see the module docstring)."""
    y, x = np.mgrid[0:SIDE, 0:SIDE] / (SIDE - 1) * 2 - 1
    if modality == "ct":
        a, b = rng.uniform(0.75, 0.95, 2)
        body = ((x / a) ** 2 + (y / b) ** 2 < 1).astype(float)
        image = 0.05 + body * (0.4 + 0.15 * _smooth(rng, 16)) + 0.03 * rng.standard_normal(x.shape)
    elif modality == "mri":
        image = 0.15 + 0.6 * _smooth(rng, 8) ** 2 + 0.02 * rng.standard_normal(x.shape)
    elif modality == "xray":
        phase, period = rng.uniform(0, 2 * np.pi), rng.uniform(8, 12)
        ribs = 0.12 * np.sin(2 * np.pi * (y + 1) * SIDE / 2 / period + phase) ** 2
        image = 0.2 + 0.35 * (y + 1) / 2 + ribs + 0.03 * rng.standard_normal(x.shape)
    elif modality == "ultrasound":
        fan = (np.abs(np.arctan2(x, y + 1.2)) < 0.6).astype(float)
        image = fan * 0.35 * rng.exponential(1.0, x.shape) * (0.6 + 0.4 * _smooth(rng, 16))
    elif modality == "texture":
        low, amplitude, noise = TEXTURE
        scale = int(rng.choice([8, 16]))
        image = low + amplitude * _smooth(rng, scale) + noise * rng.standard_normal(x.shape)
    else:
        raise ValueError(f"modality must be one of {(*MODALITIES, 'texture')}, got {modality!r}")
    return image


def shape_mask(shape: str, size: float, centre: tuple[float, float]) -> np.ndarray:
    """A 64×64 soft mask in [0, 1] of ``shape`` ``size`` px across around ``centre`` (x, y)."""
    y, x = np.mgrid[0:SIDE, 0:SIDE] + 0.5
    dx, dy = (x - centre[0]) / (size / 2), (y - centre[1]) / (size / 2)
    r = np.hypot(dx, dy)
    if shape == "disk":
        inside = 1 - r
    elif shape == "ellipse_h":
        inside = 1 - np.hypot(dx, dy * 2)
    elif shape == "ellipse_v":
        inside = 1 - np.hypot(dx * 2, dy)
    elif shape == "ring":
        inside = 0.3 - np.abs(r - 0.7)
    elif shape == "square":
        inside = 1 - np.maximum(np.abs(dx), np.abs(dy))
    elif shape == "triangle":
        inside = np.minimum(dy + 0.8, np.minimum(0.9 - dy - 1.8 * dx, 0.9 - dy + 1.8 * dx) / 2)
    elif shape == "cross":
        inside = np.maximum(
            np.minimum(0.3 - np.abs(dx), 1 - np.abs(dy)),
            np.minimum(0.3 - np.abs(dy), 1 - np.abs(dx)),
        )
    elif shape == "spots":
        spots = [(0.0, -0.55), (-0.5, 0.4), (0.5, 0.4)]
        inside = 0.35 - np.min([np.hypot(dx - sx, dy - sy) for sx, sy in spots], axis=0)
    else:
        raise ValueError(f"unknown shape {shape!r}")
    return np.clip(inside * size / 2 + 0.5, 0.0, 1.0)


def _place(rng: np.random.Generator, count: int) -> list[tuple[float, float, float]]:
    """``count`` non-overlapping (cx, cy, size) inside the image (rejection sampling)."""
    placed: list[tuple[float, float, float]] = []
    while len(placed) < count:
        size = rng.uniform(*SIZE_RANGE)
        cx, cy = rng.uniform(size / 2 + 1, SIDE - size / 2 - 1, 2)
        if all(np.hypot(cx - px, cy - py) > (size + ps) / 2 + 2 for px, py, ps in placed):
            placed.append((cx, cy, size))
    return placed


def draw(
    rng: np.random.Generator, n: int, classes: list[tuple[str, int]], modalities: list[str]
) -> Images:
    """``n`` images with 1–3 objects of ``classes`` ((shape, polarity) pairs, labelled by index)
    on backgrounds of a uniformly drawn modality from ``modalities``."""
    images = np.zeros((n, SIDE, SIDE), np.float32)
    boxes = np.zeros((n, MAX_OBJECTS, 4), np.float32)
    labels = np.full((n, MAX_OBJECTS), -1, np.int64)
    for i in range(n):
        image = background(rng, modalities[rng.integers(len(modalities))])
        for j, (cx, cy, size) in enumerate(_place(rng, int(rng.integers(1, MAX_OBJECTS + 1)))):
            label = int(rng.integers(len(classes)))
            shape, polarity = classes[label]
            contrast = polarity * rng.uniform(0.3, 0.5)
            image = image + contrast * shape_mask(shape, size, (cx, cy))
            boxes[i, j] = (cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2)
            labels[i, j] = label
        images[i] = np.clip(image, 0.0, 1.0)
    return Images(images, boxes, labels)


def task_images(rng: np.random.Generator, task: int, n: int, backgrounds: str) -> Images:
    """``n`` images of incremental ``task`` (classes 2t, 2t + 1, labelled globally 0–7). With
    ``backgrounds="per-task"`` task t's images lie on modality t; with ``"mixed"`` every task's
    on all four."""
    modalities = [MODALITIES[task]] if backgrounds == "per-task" else list(MODALITIES)
    first = task * CLASSES_PER_TASK
    drawn = draw(rng, n, list(LESIONS[first : first + CLASSES_PER_TASK]), modalities)
    labels = np.where(drawn.labels >= 0, drawn.labels + first, -1)
    return Images(drawn.images, drawn.boxes, labels)


def pretraining_images(rng: np.random.Generator, n: int) -> Images:
    """``n`` images of generic :data:`SHAPES` of either polarity on random textures, labelled
    by their index in :data:`PRETRAIN_CLASSES`."""
    return draw(rng, n, list(PRETRAIN_CLASSES), ["texture"])


def proposals(rng: np.random.Generator, boxes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Jittered, enlarged copies of ``boxes`` (zero where ``labels`` is -1), clipped to the
    image."""
    size = (boxes[..., 2:] - boxes[..., :2]).repeat(2, axis=-1)
    moved = boxes + rng.uniform(-JITTER, JITTER, boxes.shape) * size
    centre = (moved[..., :2] + moved[..., 2:]) / 2
    half = (moved[..., 2:] - moved[..., :2]) / 2 * GROWTH
    grown = np.concatenate([centre - half, centre + half], axis=-1)
    out = np.clip(grown, 0.0, SIDE).astype(np.float32)
    return np.where((labels >= 0)[..., None], out, 0.0).astype(np.float32)
