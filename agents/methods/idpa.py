"""Incremental detectors on the frozen ViT of ``Methods/IncrementalDetection-v0``: sequential
fine-tuning, L2P-style prefix prompts, decoupled prompt attention (DPA) and joint training.

Yi, Xu, Qin, Chen, Wu, Li, Lao, "iDPA: Instance Decoupled Prompt Attention for Incremental
Medical Object Detection", ICML 2025.

Every agent reads each object from the frozen ViT's final tokens pooled in its proposal box
(:func:`omnigym.envs.methods.vit.box_pool`) with a linear classifier over the eight classes and
a linear centre regressor (the offset of the true centre from the proposal's, in half-sizes);
only prompts and heads train (Adam, ``learning_rate`` 3e-3, ``epochs`` passes over the task's
images in mini-batches of 16, cross-entropy plus smooth L1).

- ``sequential`` (lower bound): one classifier fine-tuned on each task in turn, no prompts;
- ``prefix`` (L2P-style, coupled): per task, ``length`` prompt keys and values in every block,
  prepended to the image's in one softmax; the classifier's logits of other tasks' classes are
  masked while training a task;
- ``dpa`` (iDPA's decoupled prompt attention): the same prompts added through a second attention,
  the frozen image attention untouched;
- ``joint`` (upper bound): DPA prompts and heads trained on every task's data seen so far.

For ``prefix`` and ``dpa`` the prompts of a test image are the task's whose key (the mean frozen
image feature of its training images) is nearest in cosine similarity to the image's own (the
query–key matching of L2P and iDPA).

Departures from the paper: one prompt set per task rather than L2P's shared pool; the
classifier is a linear head on pooled tokens instead of GLIP's region-word alignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from omnigym.envs.methods import lesions, vit
from omnigym.threads import one_torch_thread

METHODS = ("sequential", "prefix", "dpa", "joint")
BATCH = 16
CLASSES = len(lesions.LESIONS)


class IncrementalDetector:
    """One method of the module docstring; state carries over the steps of an episode."""

    method = "dpa"

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        epochs: int = 10,
        learning_rate: float = 3e-3,
        length: int = 4,
    ):
        if not isinstance(epochs, int) or epochs < 0 or learning_rate <= 0:
            raise ValueError(
                f"epochs must be an int >= 0 and learning_rate positive, got {epochs!r} and "
                f"{learning_rate!r}"
            )
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"length must be a positive int, got {length!r}")
        self.seed, self.epochs, self.learning_rate, self.length = (
            seed,
            epochs,
            learning_rate,
            length,
        )
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)
        self.frozen: Any = None
        self.heads: Any = None
        self.prompts: list[Any] = []
        self.keys: list[np.ndarray] = []
        self.seen: list[Mapping[str, Any]] = []

    # ---- pieces ---------------------------------------------------------------------------

    def _start(self, instance: Any) -> None:
        import torch
        from torch import nn

        torch.manual_seed(self.seed)
        self.frozen = instance.model()
        self.patch = instance.patch
        self.heads = nn.ModuleDict(
            {"classify": nn.Linear(vit.WIDTH, CLASSES), "locate": nn.Linear(vit.WIDTH, 2)}
        )

    def _new_prompts(self) -> Any:
        import torch
        from torch import nn

        shape = (vit.DEPTH, 2, self.length, vit.WIDTH)
        return nn.Parameter(torch.randn(shape) * 0.02)

    @property
    def mode(self) -> str | None:
        return (
            None
            if self.method == "sequential"
            else "prefix"
            if self.method == "prefix"
            else "decoupled"
        )

    def _tokens(self, images: Any, prompts: Any) -> Any:
        if prompts is None:
            return self.frozen(images)
        batch = len(images)
        per_block = [
            (prompts[i, 0].expand(batch, -1, -1), prompts[i, 1].expand(batch, -1, -1))
            for i in range(vit.DEPTH)
        ]
        return self.frozen(images, per_block, self.mode)

    def _key(self, images: np.ndarray) -> np.ndarray:
        """Mean frozen token per image (batch, WIDTH), as float64."""
        import torch

        out = []
        with torch.no_grad():
            for start in range(0, len(images), 64):
                batch = torch.from_numpy(images[start : start + 64])
                out.append(self.frozen(batch).mean(dim=1).double().numpy())
        return np.concatenate(out)

    def _train(self, data: list[Mapping[str, Any]], prompts: Any, task: int | None) -> None:
        """Fit heads (and ``prompts``) on ``data``; ``task`` masks other tasks' logits."""
        import torch
        from torch.nn import functional

        images = np.concatenate([d["train_images"] for d in data])
        boxes = np.concatenate([d["train_boxes"] for d in data])
        labels = np.concatenate([d["train_labels"] for d in data]).astype(np.int64)
        parameters = list(self.heads.parameters()) + ([prompts] if prompts is not None else [])
        optimiser = torch.optim.Adam(parameters, lr=self.learning_rate)
        mask = torch.zeros(CLASSES)
        if task is not None:
            mask[:] = -1e4
            mask[task * lesions.CLASSES_PER_TASK : (task + 1) * lesions.CLASSES_PER_TASK] = 0
        rng = np.random.default_rng([self.seed, len(self.seen)])
        for _ in range(self.epochs):
            order = rng.permutation(len(images))
            for start in range(0, len(images), BATCH):
                rows = order[start : start + BATCH]
                image, slot = np.nonzero(labels[rows] < CLASSES)
                truth = torch.from_numpy(boxes[rows][image, slot])
                proposal = torch.from_numpy(
                    lesions.proposals(rng, truth.numpy(), np.zeros(len(truth)))
                )
                tokens = self._tokens(torch.from_numpy(images[rows]), prompts)
                pooled = vit.box_pool(tokens, self.patch, torch.from_numpy(image), proposal)
                logits = self.heads["classify"](pooled) + mask
                target = torch.from_numpy(labels[rows][image, slot])
                loss = functional.cross_entropy(logits, target)
                offsets = vit.centre_targets(proposal, truth)
                loss = loss + functional.smooth_l1_loss(self.heads["locate"](pooled), offsets)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()

    def _answer(self, observation: Mapping[str, Any]) -> dict[str, np.ndarray]:
        import torch

        images = np.asarray(observation["test_images"], np.float32)
        proposals = np.asarray(observation["test_proposals"], np.float32)
        logits = np.zeros((*proposals.shape[:2], CLASSES), np.float32)
        centres = np.full((*proposals.shape[:2], 2), lesions.SIDE / 2, np.float32)
        shown = np.flatnonzero(np.asarray(observation["test_objects"]).any(axis=1))
        choice = np.zeros(len(images), int)
        if self.keys and self.method in ("prefix", "dpa"):
            keys = np.stack(self.keys)
            query = self._key(images[shown])
            similarity = (query / np.linalg.norm(query, axis=1, keepdims=True)) @ (
                keys / np.linalg.norm(keys, axis=1, keepdims=True)
            ).T
            choice[shown] = similarity.argmax(axis=1)
        with torch.no_grad():
            for prompt_index in np.unique(choice[shown]):
                rows = shown[choice[shown] == prompt_index]
                prompts = self.prompts[prompt_index] if self.prompts else None
                for start in range(0, len(rows), 64):
                    part = rows[start : start + 64]
                    tokens = self._tokens(torch.from_numpy(images[part]), prompts)
                    index = np.repeat(np.arange(len(part)), lesions.MAX_OBJECTS)
                    box = torch.from_numpy(proposals[part].reshape(-1, 4))
                    box = torch.where(
                        box[:, 2:3] > box[:, :1], box, torch.tensor([0.0, 0.0, 8.0, 8.0])
                    )
                    pooled = vit.box_pool(tokens, self.patch, torch.from_numpy(index), box)
                    logits[part] = (
                        self.heads["classify"](pooled).numpy().reshape(len(part), -1, CLASSES)
                    )
                    where = vit.centres_from(box, self.heads["locate"](pooled)).numpy()
                    centres[part] = np.clip(where, 0, lesions.SIDE).reshape(len(part), -1, 2)
        return {"logits": logits, "centres": centres}

    # ---- the agent API --------------------------------------------------------------------

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, np.ndarray]:
        task = int(observation["task"])
        with one_torch_thread():
            if self.frozen is None:
                self._start(info["instance"])
            self.seen.append(observation)
            if self.method == "sequential":
                self._train([observation], None, None)
            elif self.method == "joint":
                if not self.prompts:
                    self.prompts.append(self._new_prompts())
                self._train(self.seen, self.prompts[0], None)
            else:
                self.prompts.append(self._new_prompts())
                self.keys.append(self._key(np.asarray(observation["train_images"])).mean(axis=0))
                self._train([observation], self.prompts[-1], task)
            return self._answer(observation)


class SequentialAgent(IncrementalDetector):
    """``sequential``: the classifier fine-tuned on each task in turn (lower bound)."""

    method = "sequential"


class PrefixPromptAgent(IncrementalDetector):
    """``prefix``: L2P-style prefix prompts per task, one softmax over prompt and image keys."""

    method = "prefix"


class DPAAgent(IncrementalDetector):
    """``dpa``: iDPA's decoupled prompt attention, prompts per task."""

    method = "dpa"


class JointAgent(IncrementalDetector):
    """``joint``: DPA prompts and heads on all data seen so far (upper bound)."""

    method = "joint"
