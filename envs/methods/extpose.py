"""Lift cluttered frames and noisy 2-D detections to 3-D poses with a tiny ViT.

Chen, Zhuo, Yang, Wang, Bo, Zhang, Yao, "ExtPose: Robust and Coherent Pose Estimation by
Extending ViTs", ICML 2025.

An instance is a set of training and test clips of :mod:`omnigym.envs.methods.poses`: a
14-joint skeleton moving smoothly for 16 frames under a random camera yaw, rendered at 64×64
with distractor blobs and occluders, with 2-D detections carrying pixel noise and left/right
flips in 10 % of the frames. The training clips come with their true root-relative 3-D poses; a
method answers the 3-D pose of every test frame. The RGB-only ViT the ExtPose agents fine-tune
from is in ``info["instance"]`` (:class:`Pretrained`; built in-process on first use and cached,
see :mod:`omnigym.envs.methods.extpose_model`).

Departures from the paper: synthetic stick-figure renders stand in for 3DPW and FreiHAND
images, noisy projected joints with whole-frame left/right flips for a 2-D detector's output, a
4-layer width-96 ViT pretrained here on 4,000 synthetic frames for ViTPose-style backbones
pretrained on large image sets; poses are scored in millimetres of a body about 1.65 m tall.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from . import extpose_model, poses
from .core import MethodEnv

#: Root-relative joints lie within this many metres of the pelvis (a body is under 1 m from it).
POSE_BOUND = 3.0


@dataclass(frozen=True)
class Size:
    """Training and test clips."""

    train: int
    test: int


SIZES = {"small": Size(train=6, test=3), "paper": Size(train=250, test=32)}


@dataclass(frozen=True)
class Pretrained:
    """What an agent gets in ``info["instance"]``: :meth:`model`, a fresh copy of the RGB-only
    fixture in one of :data:`~omnigym.envs.methods.extpose_model.VARIANTS` (its extra
    parameters from ``seed``)."""

    variants: tuple[str, ...] = extpose_model.VARIANTS

    def model(self, variant: str = "rgb", seed: int = extpose_model.PRETRAIN_SEED) -> Any:
        return extpose_model.load(variant, seed)


class PoseEstimation(MethodEnv):
    """3-D pose estimation from cluttered renders and flipped 2-D detections (Chen et al.).

    ## Description

    ``reset(seed)`` draws training clips with their 3-D poses and test clips without; the agent
    trains (typically fine-tuning the RGB-only ViT of ``info["instance"]``) and answers the
    root-relative 3-D joints of every test frame.

    ## Observation space

    ``Dict``: ``train_images`` ``Box(0, 255, (n_train, 16, 3, 64, 64))`` uint8,
    ``train_detections`` ``Box(-inf, inf, (n_train, 16, 14, 2))`` float32 (pixels: x right, y
    down), ``train_poses`` ``Box(-3, 3, (n_train, 16, 14, 3))`` float32 (metres, pelvis at the
    origin, x towards the camera's right, y up, z towards the camera), ``test_images`` and
    ``test_detections`` for the test clips. Joints in the LSP order
    (:data:`omnigym.envs.methods.poses.JOINTS`).

    ## Action space

    ``Box(-3, 3, (n_test × 16, 14, 3))`` float64: the root-relative joints of every test frame,
    clip by clip, in metres.

    ## Rewards

    Minus the PA-MPJPE (mm). Metrics: ``pa_mpjpe``, ``mpjpe`` (after aligning the pelvis),
    ``acceleration_error`` (mm per frame², within clips), and the flip measures: after each
    frame's Procrustes alignment, the mean error of the twelve left and right joints in the test
    frames whose detections were left/right-flipped (``flipped_joint_error``, NaN if none was)
    and in the others (``clean_joint_error``). A non-finite answer scores -1000 with
    ``info["invalid_action"]``.

    ## Episode end

    One step.

    ## Arguments

    ``size`` (``"small"``: 6 training and 3 test clips; ``"paper"``: 250 (4,000 frames) and 32);
    ``render_mode`` (None or ``"rgb_array"``: :meth:`render` shows a sample of the instance).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    invalid_reward = -1000.0
    #: How many times a 64×64 frame is enlarged in :meth:`render`.
    ZOOM = 4

    def __init__(self, size: str = "small", render_mode: str | None = None):
        super().__init__(size)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        shape = SIZES[size]
        self.train_clips, self.test_clips = shape.train, shape.test
        frames, joints, side = poses.FRAMES, len(poses.JOINTS), poses.IMAGE

        def images(clips: int) -> spaces.Box:
            return spaces.Box(0, 255, (clips, frames, 3, side, side), np.uint8)

        def detections(clips: int) -> spaces.Box:
            return spaces.Box(-np.inf, np.inf, (clips, frames, joints, 2), np.float32)

        bound = POSE_BOUND
        self.observation_space = spaces.Dict(
            {
                "train_images": images(self.train_clips),
                "train_detections": detections(self.train_clips),
                "train_poses": spaces.Box(
                    -bound, bound, (self.train_clips, frames, joints, 3), np.float32
                ),
                "test_images": images(self.test_clips),
                "test_detections": detections(self.test_clips),
            }
        )
        self.action_space = spaces.Box(
            -bound, bound, (self.test_clips * frames, joints, 3), np.float64
        )

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], poses.Clips]:
        train = poses.clips(rng, self.train_clips)
        test = poses.clips(rng, self.test_clips)
        observation = {
            "train_images": train.images,
            "train_detections": train.detections,
            "train_poses": train.poses,
            "test_images": test.images,
            "test_detections": test.detections,
        }
        return observation, test

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        return observation, {**info, "instance": Pretrained()}

    def render(self) -> np.ndarray | None:
        """The first test frame and its detections drawn as a skeleton image, side by side,
        enlarged :data:`ZOOM` times: (256, 512, 3) uint8 (None without ``render_mode``)."""
        if self.render_mode is None:
            return None
        if self._observation is None:
            raise RuntimeError("PoseEstimation.render() before reset()")
        frame = self._observation["test_images"][0, 0]
        skeleton = poses.skeleton_image(self._observation["test_detections"][0, 0])
        skeleton = np.clip(skeleton * 255, 0, 255).astype(np.uint8)
        sample = np.concatenate([frame, skeleton], axis=2).transpose(1, 2, 0)
        return sample.repeat(self.ZOOM, axis=0).repeat(self.ZOOM, axis=1)

    def score(self, solution: np.ndarray) -> tuple[float, dict[str, float]]:
        truth: poses.Clips = self.instance
        predicted = solution.reshape(truth.poses.shape)
        metrics = poses.pose_metrics(predicted, truth.poses)
        metrics.update(poses.flip_errors(predicted, truth.poses, truth.flipped))
        return -metrics["pa_mpjpe"], metrics
