"""Synthetic pose clips of ``Methods/PoseEstimation-v0``: a moving 14-joint skeleton, cluttered
renders, noisy 2-D detections with left/right flips, and the pose metrics.

- **Skeleton** (:data:`JOINTS`, the 14 joints of the LSP order): a kinematic tree rooted at the
  pelvis (the midpoint of the hips, not itself a joint) with fixed bone offsets in metres
  (:data:`OFFSETS`, a body about 1.65 m tall) and a per-clip bone-length scale in [0.9, 1.1].
- **Motion** (:func:`motion`): every articulated joint (:data:`ARTICULATED`) turns by Euler angles
  ``base + amplitude · sin(2π f t + phase)`` with a random base, amplitude, frequency (0.2-0.8
  cycles a clip) and phase per clip and axis, except the knees and elbows (:data:`HINGES`),
  which bend about one axis only and one way only (knees back, elbows forward), by
  ``FLEX / 2 · (1 + sin(2π f t + phase))`` times a random extent, so poses change smoothly over the
  :data:`FRAMES`-frame clip; the whole body turns by a random camera yaw. Poses are root-relative
  (pelvis at the origin), in metres.
- **Camera** (:func:`project`): a pinhole :data:`DISTANCE` m in front of the pelvis, focal length
  :data:`FOCAL` pixels, image centre at (32, 32) of the 64×64 frame; image y points down.
- **Render** (:func:`render`): "RGB" frames, uint8 (3, 64, 64): limbs as thick segments (left
  limbs reddish, right limbs bluish, the torso and head grey, each with a per-clip colour jitter)
  blurred by a Gaussian, over a noisy background, with :data:`DISTRACTORS` moving blobs in limb
  colours and, in each frame with probability :data:`OCCLUSION`, an occluding rectangle.
- **Detections** (:func:`detect`): the projected joints plus Gaussian pixel noise
  (:data:`DETECTION_NOISE`); in each frame with probability :data:`FLIP` the left and right joints
  are swapped (the gross left/right outliers of 2-D detectors).
- :func:`skeleton_image` draws detections as an image in the same (3, 64, 64) layout as a render
  (left limbs in channel 0, right limbs in channel 2, the centre line in channel 1), so that one
  patch embedding reads both.
- Metrics in millimetres (:func:`pose_metrics`): ``mpjpe`` after aligning the pelvis,
  ``pa_mpjpe`` after the similarity (rotation, scale, translation) that best aligns each predicted
  frame to the truth (the rotation by :meth:`scipy.spatial.transform.Rotation.align_vectors`, a
  proper rotation: a mirror image is not aligned away), and ``acceleration_error``, the mean
  distance between predicted and true second differences of the pelvis-aligned joints within each
  clip (per frame squared, as in Kanazawa et al., CVPR 2019).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.spatial.transform import Rotation

FRAMES = 16
IMAGE = 64
JOINTS = (
    "right_ankle", "right_knee", "right_hip", "left_hip", "left_knee", "left_ankle",
    "right_wrist", "right_elbow", "right_shoulder", "left_shoulder", "left_elbow", "left_wrist",
    "neck", "head",
)  # fmt: skip
#: Each joint's parent (-1: the pelvis, the root).
PARENTS = (1, 2, -1, -1, 3, 4, 7, 8, 12, 12, 9, 10, -1, 12)
#: Each joint's offset from its parent in the rest pose, metres (x towards the body's left, y
#: up, z forward).
OFFSETS = np.array(
    [
        [0.0, -0.42, 0.0], [0.0, -0.45, 0.0], [-0.10, 0.0, 0.0],
        [0.10, 0.0, 0.0], [0.0, -0.45, 0.0], [0.0, -0.42, 0.0],
        [0.0, -0.26, 0.0], [0.0, -0.28, 0.0], [-0.18, -0.02, 0.0],
        [0.18, -0.02, 0.0], [0.0, -0.28, 0.0], [0.0, -0.26, 0.0],
        [0.0, 0.55, 0.0], [0.0, 0.22, 0.0],
    ]
)  # fmt: skip
#: Joints whose own rotation moves their children (hips, knees, shoulders, elbows, neck).
ARTICULATED = (1, 2, 3, 4, 7, 8, 9, 10, 12)
#: The largest amplitude of an articulated joint's Euler angles, radians.
SWING = 0.9
#: Knees and elbows: hinges that bend about the x axis, knees backwards (+), elbows forwards (-).
HINGES = {1: 1.0, 4: 1.0, 7: -1.0, 10: -1.0}
#: A hinge's largest bend, radians.
FLEX = 1.5
#: Left/right partners: index i's mirror joint.
MIRROR = np.array([5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6, 12, 13])
LEFT = (3, 4, 5, 9, 10, 11)
RIGHT = (0, 1, 2, 6, 7, 8)
#: Bones drawn in a render or a skeleton image: (joint, parent joint) pairs plus the hips and
#: shoulders joined through the pelvis and the neck.
BONES = tuple((j, p) for j, p in enumerate(PARENTS) if p >= 0) + ((2, 3), (2, 12), (3, 12))
DISTANCE = 4.0
FOCAL = 80.0
LIMB_WIDTH = 1.6
BLUR = 0.8
BACKGROUND_NOISE = 0.08
DISTRACTORS = 3
OCCLUSION = 0.3
DETECTION_NOISE = 1.0
FLIP = 0.1


def motion(rng: np.random.Generator, clips: int) -> np.ndarray:
    """Root-relative 3-D joints (clips, :data:`FRAMES`, 14, 3), metres (see the module)."""
    t = np.arange(FRAMES) / FRAMES
    poses = np.empty((clips, FRAMES, len(JOINTS), 3))
    for clip in range(clips):
        angles = np.zeros((FRAMES, len(JOINTS), 3))
        shape = (len(ARTICULATED), 3)
        base = rng.uniform(-0.4, 0.4, shape)
        amplitude = rng.uniform(0.0, SWING, shape)
        frequency = rng.uniform(0.2, 0.8, shape)
        phase = rng.uniform(0.0, 2 * np.pi, shape)
        wave = np.sin(2 * np.pi * frequency * t[:, None, None] + phase)
        angles[:, ARTICULATED] = base + amplitude * wave
        for row, joint in enumerate(ARTICULATED):
            if joint in HINGES:
                extent = rng.uniform(0.3, 1.0)
                bend = FLEX / 2 * extent * (1 + wave[:, row, 0])
                angles[:, joint] = [HINGES[joint], 0.0, 0.0] * bend[:, None]
        offsets = OFFSETS * rng.uniform(0.9, 1.1)
        yaw = Rotation.from_euler("y", rng.uniform(0.0, 2 * np.pi))
        poses[clip] = yaw.apply(_forward(angles, offsets).reshape(-1, 3)).reshape(FRAMES, -1, 3)
    return poses


def _forward(angles: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Forward kinematics: joint positions (frames, 14, 3) from local Euler angles."""
    frames = len(angles)
    local = [Rotation.from_euler("xyz", angles[:, j]) for j in range(len(JOINTS))]
    world: dict[int, Rotation] = {}
    positions = np.zeros((frames, len(JOINTS), 3))
    for joint in _order():
        parent = PARENTS[joint]
        turn = Rotation.identity(frames) if parent < 0 else world[parent]
        start = np.zeros((frames, 3)) if parent < 0 else positions[:, parent]
        positions[:, joint] = start + turn.apply(offsets[joint])
        world[joint] = turn * local[joint]
    return positions


def _order() -> list[int]:
    """Joints with every parent before its children."""
    order: list[int] = []
    while len(order) < len(JOINTS):
        order += [j for j, p in enumerate(PARENTS) if j not in order and (p < 0 or p in order)]
    return order


def project(poses: np.ndarray) -> np.ndarray:
    """Pixel coordinates (..., 14, 2) of root-relative 3-D joints (..., 14, 3) (x right, y down)."""
    depth = DISTANCE - poses[..., 2]
    x = IMAGE / 2 + FOCAL * poses[..., 0] / depth
    y = IMAGE / 2 - FOCAL * poses[..., 1] / depth
    return np.stack([x, y], axis=-1)


def detect(rng: np.random.Generator, pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Noisy detections (frames..., 14, 2) of ``pixels`` and the mask of left/right-flipped
    frames (see the module)."""
    noisy = pixels + rng.normal(0.0, DETECTION_NOISE, pixels.shape)
    flipped = rng.random(pixels.shape[:-2]) < FLIP
    noisy[flipped] = noisy[flipped][:, MIRROR]
    return noisy, flipped


#: Pixel coordinates: row index y, column index x.
_Y, _X = np.mgrid[0:IMAGE, 0:IMAGE].astype(np.float32)


def _segments(a: np.ndarray, b: np.ndarray, width: float) -> np.ndarray:
    """Masks (..., 64, 64) of pixels within ``width`` of the segments a→b (..., 2) (pixels x,
    y)."""
    a, b = a.astype(np.float32)[..., None, None, :], b.astype(np.float32)[..., None, None, :]
    dx, dy = b[..., 0] - a[..., 0], b[..., 1] - a[..., 1]
    rx, ry = _X - a[..., 0], _Y - a[..., 1]
    along = np.clip((rx * dx + ry * dy) / np.maximum(dx * dx + dy * dy, 1e-9), 0.0, 1.0)
    ex, ey = rx - along * dx, ry - along * dy
    return ex * ex + ey * ey <= width**2


def _bone_side(bone: tuple[int, int]) -> int:
    """0 left, 2 right, 1 centre."""
    if set(bone) <= set(LEFT):
        return 0
    if set(bone) <= set(RIGHT):
        return 2
    return 1


SIDES = np.array([_bone_side(bone) for bone in BONES])
#: Per side (left, centre, right), which bones are on it.
ON_SIDE = SIDES[None] == np.arange(3)[:, None]
_STARTS = np.array([bone[0] for bone in BONES])
_ENDS = np.array([bone[1] for bone in BONES])
#: Base limb colours (RGB in [0, 1]) of the left, centre and right bones.
COLOURS = np.array([[0.85, 0.35, 0.3], [0.6, 0.6, 0.6], [0.3, 0.4, 0.85]])


def render(rng: np.random.Generator, pixels: np.ndarray) -> np.ndarray:
    """Cluttered "RGB" frames (clips, :data:`FRAMES`, 3, 64, 64) uint8 of projected joints
    ``pixels`` (clips, :data:`FRAMES`, 14, 2)."""
    clips = len(pixels)
    out = np.empty((clips, FRAMES, 3, IMAGE, IMAGE), np.uint8)
    for clip in range(clips):
        colours = np.clip(COLOURS + rng.normal(0.0, 0.08, COLOURS.shape), 0.0, 1.0)
        background = rng.uniform(0.1, 0.5, 3)
        walk = rng.normal(0.0, 0.7, (FRAMES, DISTRACTORS, 2)).cumsum(axis=0)
        blobs = rng.uniform(8, 56, (DISTRACTORS, 2)) + walk
        blob_colours = colours[rng.integers(0, 3, DISTRACTORS)]
        blob_radius = rng.uniform(2.0, 5.0, DISTRACTORS)
        limbs = _segments(pixels[clip][:, _STARTS], pixels[clip][:, _ENDS], LIMB_WIDTH)
        for frame in range(FRAMES):
            image = np.broadcast_to(background[:, None, None], (3, IMAGE, IMAGE)).copy()
            for centre, colour, radius in zip(blobs[frame], blob_colours, blob_radius, strict=True):
                inside = (_X - centre[0]) ** 2 + (_Y - centre[1]) ** 2 <= radius**2
                image[:, inside] = colour[:, None]
            for side in (1, 0, 2):
                inside = limbs[frame, ON_SIDE[side]].any(axis=0)
                image[:, inside] = colours[side][:, None]
            if rng.random() < OCCLUSION:
                corner = rng.integers(0, IMAGE - 16, 2)
                extent = rng.integers(10, 24, 2)
                image[:, corner[1] : corner[1] + extent[1], corner[0] : corner[0] + extent[0]] = (
                    rng.uniform(0.0, 1.0, 3)[:, None, None]
                )
            image = ndimage.gaussian_filter(image, (0, BLUR, BLUR))
            image += rng.normal(0.0, BACKGROUND_NOISE, image.shape)
            out[clip, frame] = np.clip(image * 255, 0, 255).astype(np.uint8)
    return out


def skeleton_image(detections: np.ndarray) -> np.ndarray:
    """Detections (..., 14, 2) drawn as images (..., 3, 64, 64) float32 in [0, 1]: each bone a
    one-pixel-wide line in its side's channel (left 0, centre 1, right 2), blurred."""
    lead = detections.shape[:-2]
    flat = detections.reshape(-1, len(JOINTS), 2)
    out = np.empty((len(flat), 3, IMAGE, IMAGE), np.float32)
    for start in range(0, len(flat), FRAMES):  # a clip at a time bounds the masks' memory
        chunk = flat[start : start + FRAMES]
        masks = _segments(chunk[:, _STARTS], chunk[:, _ENDS], 0.75)
        for side in range(3):
            out[start : start + FRAMES, side] = masks[:, ON_SIDE[side]].any(axis=1)
    out = ndimage.gaussian_filter(out, (0, 0, 0.6, 0.6))
    return out.reshape(*lead, 3, IMAGE, IMAGE)


@dataclass(frozen=True)
class Clips:
    """Clips of one split: renders, detections, true root-relative poses, flipped frames."""

    images: np.ndarray
    detections: np.ndarray
    poses: np.ndarray
    flipped: np.ndarray


def clips(rng: np.random.Generator, count: int) -> Clips:
    """``count`` clips: motion, renders, detections (see the module)."""
    poses = motion(rng, count)
    pixels = project(poses)
    images = render(rng, pixels)
    detections, flipped = detect(rng, pixels)
    return Clips(
        images=images,
        detections=detections.astype(np.float32),
        poses=poses.astype(np.float32),
        flipped=flipped,
    )


# ---- metrics ------------------------------------------------------------------------------------


def pelvis_aligned(poses: np.ndarray) -> np.ndarray:
    """Poses (..., 14, 3) moved so that the hips' midpoint is the origin."""
    pelvis = (poses[..., 2, :] + poses[..., 3, :]) / 2
    return poses - pelvis[..., None, :]


def procrustes_aligned(predicted: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each predicted frame (frames, 14, 3) moved by the rotation, scale and translation that
    best match it to the true frame (proper rotations only)."""
    aligned = np.empty_like(predicted, dtype=np.float64)
    for index, (p, t) in enumerate(zip(predicted, truth, strict=True)):
        p_centred, t_centred = p - p.mean(0), t - t.mean(0)
        if not np.any(p_centred):
            aligned[index] = t.mean(0)
            continue
        rotation, _ = Rotation.align_vectors(t_centred, p_centred)
        turned = rotation.apply(p_centred)
        scale = (turned * t_centred).sum() / (p_centred**2).sum()
        aligned[index] = scale * turned + t.mean(0)
    return aligned


def pa_joint_errors(predicted: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each joint's error (frames, 14) in millimetres after each predicted frame's Procrustes
    alignment to the true frame (frames, 14, 3), metres."""
    aligned = procrustes_aligned(np.asarray(predicted, np.float64), truth)
    return 1000.0 * np.linalg.norm(aligned - truth, axis=-1)


def pa_mpjpe(predicted: np.ndarray, truth: np.ndarray) -> float:
    """PA-MPJPE in millimetres of predicted frames (frames, 14, 3) against the truth, metres."""
    return float(pa_joint_errors(predicted, truth).mean())


def flip_errors(predicted: np.ndarray, truth: np.ndarray, flipped: np.ndarray) -> dict[str, float]:
    """The mean Procrustes-aligned error (mm) of the left and right joints in the frames whose
    detections were flipped (``flipped_joint_error``) and in the others (``clean_joint_error``),
    NaN where there is no such frame; poses (clips, frames, 14, 3), ``flipped`` (clips,
    frames)."""
    frames = (-1, len(JOINTS), 3)
    errors = pa_joint_errors(predicted.reshape(frames), truth.reshape(frames))[:, LEFT + RIGHT]
    mask = flipped.reshape(-1)
    return {
        name: float(errors[rows].mean()) if rows.any() else float("nan")
        for name, rows in (("flipped_joint_error", mask), ("clean_joint_error", ~mask))
    }


def pose_metrics(predicted: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """``pa_mpjpe``, ``mpjpe`` and ``acceleration_error`` in millimetres of predicted poses
    (clips, frames, 14, 3) against the truth, metres (see the module)."""
    p, t = pelvis_aligned(np.asarray(predicted, np.float64)), pelvis_aligned(truth)
    acceleration = np.diff(p, n=2, axis=1) - np.diff(t, n=2, axis=1)
    frames = (-1, len(JOINTS), 3)
    return {
        "pa_mpjpe": pa_mpjpe(p.reshape(frames), t.reshape(frames)),
        "mpjpe": 1000.0 * float(np.linalg.norm(p - t, axis=-1).mean()),
        "acceleration_error": 1000.0 * float(np.linalg.norm(acceleration, axis=-1).mean()),
    }
