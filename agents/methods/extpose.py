"""ExtPose and its ablations on ``Methods/PoseEstimation-v0``: the tiny pose ViT fine-tuned
with RGB only, with skeleton-image tokens, with a coordinate token, or with skeleton-image
tokens and cross-frame attention; and the mean training pose as a floor.

Chen, Zhuo, Yang, Wang, Bo, Zhang, Yao, "ExtPose: Robust and Coherent Pose Estimation by
Extending ViTs", ICML 2025.

Every ViT agent starts from the RGB-only fixture in ``info["instance"]`` (its extra parameters,
the modality embeddings, the coordinate MLP or the cross-frame attention, fresh from the agent's
seed), fine-tunes every weight on the training clips (:func:`omnigym.envs.methods.
extpose_model.train`: AdamW, L1 on the standardised pose, ``epochs`` passes, ``learning_rate``
after a short warm-up then cosine decay) and answers its predictions for the test frames. The
variants (:mod:`omnigym.envs.methods.extpose_model`):

- ``extpose-rgb``: the frame's patch tokens only (the ViT baseline);
- ``extpose-skeleton``: RGB plus the detections drawn as a skeleton image, patchified by the
  same patch embedding, only a modality embedding added (ExtPose's pose evidence);
- ``extpose-coordinates``: RGB plus one token, an MLP of the detections' pixel coordinates (the
  paper's representation ablation);
- ``extpose-temporal``: ``extpose-skeleton`` plus cross-frame attention over the class tokens of
  4 consecutive frames (ExtPose's temporal extension).

``pretrained=False`` trains the same model from a fresh initialisation instead.

Departures from the paper: one short fine-tuning schedule for every variant, no validation
split and no early stopping; the cross-frame attention sees 4-frame windows that do not overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from omnigym.envs.methods import extpose_model


class ExtPoseAgent:
    """One variant of the pose ViT, fine-tuned on the training clips (see the module)."""

    variant = "rgb"

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        epochs: int = 4,
        learning_rate: float = 1e-3,
        pretrained: bool = True,
    ):
        if not isinstance(epochs, int) or epochs < 0 or learning_rate <= 0:
            raise ValueError(
                f"epochs must be an int >= 0 and learning_rate positive, got {epochs!r} and "
                f"{learning_rate!r}"
            )
        self.seed, self.epochs, self.learning_rate = seed, epochs, learning_rate
        self.pretrained = bool(pretrained)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    def model(self, instance: Any, targets: np.ndarray) -> Any:
        """The starting model: the fixture's weights, or fresh ones standardised on
        ``targets``."""
        if self.pretrained:
            return instance.model(self.variant, self.seed)
        model = extpose_model.build(self.variant, self.seed)
        extpose_model.standardise(model, targets)
        return model

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> np.ndarray:
        targets = np.asarray(observation["train_poses"]).reshape(-1, *extpose_model.POSE)
        model = self.model(info["instance"], targets)
        if self.epochs:
            train = extpose_model.inputs(
                observation["train_images"], observation["train_detections"], self.variant
            )
            extpose_model.train(model, train, targets, self.epochs, self.learning_rate, self.seed)
        test = extpose_model.inputs(
            observation["test_images"], observation["test_detections"], self.variant
        )
        return extpose_model.predict(model, test)


class RGBAgent(ExtPoseAgent):
    """``extpose-rgb``: patch tokens of the frame only."""

    variant = "rgb"


class SkeletonAgent(ExtPoseAgent):
    """``extpose-skeleton``: RGB plus skeleton-image tokens through the same patch embedding."""

    variant = "skeleton"


class CoordinateAgent(ExtPoseAgent):
    """``extpose-coordinates``: RGB plus a coordinate-MLP token."""

    variant = "coordinates"


class TemporalAgent(ExtPoseAgent):
    """``extpose-temporal``: skeleton-image tokens plus 4-frame cross-frame attention."""

    variant = "temporal"


class MeanPoseAgent:
    """``mean-pose``: every test frame gets the mean training pose (the floor a model must
    beat)."""

    def __init__(self, env: Any = None, seed: int = 0):
        self.seed = seed

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> np.ndarray:
        targets = np.asarray(observation["train_poses"], np.float64)
        mean = targets.reshape(-1, *extpose_model.POSE).mean(axis=0)
        test = np.asarray(observation["test_images"])
        return np.broadcast_to(mean, (test.shape[0] * test.shape[1], *mean.shape)).copy()
