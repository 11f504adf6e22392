"""Incremental object detection with a frozen ViT: one step per task, each bringing new lesion
classes.

Yi, Xu, Qin, Chen, Wu, Li, Lao, "iDPA: Instance Decoupled Prompt Attention for Incremental
Medical Object Detection", ICML 2025.

An episode is :data:`~omnigym.envs.methods.lesions.TASKS` (4) tasks of two new lesion classes
each (:mod:`omnigym.envs.methods.lesions`). Each step's observation is the new task's labelled
training images and the test images and proposal boxes of every task seen so far; the answer is
class logits over all eight classes and a centre for every test object. The frozen ViT fixture
(:mod:`omnigym.envs.methods.idpa_fixture`) is in ``info["instance"]``.

Scoring. An object is detected when the most probable class among the seen classes is right and
the answered centre lies within :data:`RADIUS` px of the true one (the AP analogue); a task's
score is the fraction of its test objects detected, the reward the mean over seen tasks. With
``predict_boxes=True`` the answer also holds a box per object and the metrics add box AP at IoU
0.5 (``box_ap50``, the mean over seen classes of all-point interpolated AP, VOC style, each box
scored by its class probability). It is computed here: torchmetrics' ``MeanAveragePrecision``
and its functional IoU need torchvision (and pycocotools or faster-coco-eval), which cannot be
installed next to the pinned CPU torch. Final metrics: ``final_average`` (the FAP analogue: the
mean task score after the last step) and ``forgetting`` (the mean over all but the last task of
its best earlier score minus its final one).

Departures from the paper: synthetic 64×64 lesions on modality-like backgrounds stand in for 13
medical detection datasets; a 4-block ViT of width 96 pretrained here on generic shapes stands
in for GLIP; detection is reduced to classifying each object in a jittered proposal box and
locating its centre.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from . import idpa_fixture, lesions
from .core import MethodEnv, check_solution

#: A centre within this many pixels of the truth counts (with the right class) as detected.
RADIUS = 4.0
IOU = 0.5
BACKGROUNDS = ("per-task", "mixed")
CLASSES = len(lesions.LESIONS)
SLOTS = lesions.MAX_OBJECTS
#: ``render``: pixels per image pixel, and an outline colour per lesion class.
ZOOM = 4
COLOURS = np.array(
    [[230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200],
     [245, 130, 48], [145, 30, 180], [70, 240, 240], [240, 50, 230]],
    np.uint8,
)  # fmt: skip


@dataclass(frozen=True)
class Size:
    train: int
    test: int


SIZES = {"small": Size(train=60, test=20), "paper": Size(train=300, test=100)}


@dataclass(frozen=True)
class Frozen:
    """``info["instance"]``: the patch size and :meth:`model`, a fresh frozen copy of the
    pretrained ViT (see :mod:`omnigym.envs.methods.idpa_fixture` for box pooling and
    :mod:`omnigym.envs.methods.vit` for prompts)."""

    patch: int
    classes_per_task: int = lesions.CLASSES_PER_TASK
    tasks: int = lesions.TASKS

    def model(self) -> Any:
        return idpa_fixture.load(self.patch)


class IncrementalDetection(MethodEnv):
    """Class-incremental lesion detection over four tasks (Yi et al.; see the module).

    ## Observation space

    ``Dict`` with n training images of the new task and m test images per task:
    ``task`` ``Discrete(4)``; ``train_images`` ``Box(0, 1, (n, 64, 64))``, ``train_boxes``
    ``Box(0, 64, (n, 3, 4))`` (x0, y0, x1, y1), ``train_labels`` ``MultiDiscrete`` (n, 3) of 9
    (8 for an empty slot); ``test_images`` ``Box(0, 1, (4 m, 64, 64))`` and ``test_proposals``
    ``Box(0, 64, (4 m, 3, 4))`` of every task, zero for tasks not yet seen, and
    ``test_objects`` ``MultiBinary`` (4 m, 3) marking the present objects of seen tasks.

    ## Action space

    ``Dict``: ``logits`` ``Box(-inf, inf, (4 m, 3, 8))`` float32 and ``centres`` ``Box(0, 64,
    (4 m, 3, 2))`` (x, y); with ``predict_boxes`` also ``boxes`` ``Box(0, 64, (4 m, 3, 4))``.
    Rows of empty slots and unseen tasks are ignored. NaN anywhere is a failed answer (every
    seen task scores 0 this step).

    ## Rewards

    The mean over seen tasks of the fraction of test objects detected. Metrics: ``average``
    (the reward), ``task_<t>`` for each seen task, ``accuracy`` (class alone), ``box_ap50`` with
    ``predict_boxes``; on the final step ``final_average`` and ``forgetting``.

    ## Episode end

    After the fourth task's step.

    ## Rendering

    ``render_mode="rgb_array"``: the first training image of each task side by side (tasks 0–3,
    left to right), enlarged 4×, each lesion's box outlined in its class's colour
    (:data:`COLOURS`); (256, 1024, 3) uint8. ``omnigym render Methods/IncrementalDetection-v0
    --out sample.png`` saves it.

    ## Arguments

    ``patch`` (8 or 4: the frozen ViT's patch size, 64 or 256 tokens), ``backgrounds``
    (``"per-task"``: task t on modality t; ``"mixed"``: every task on all four),
    ``predict_boxes`` (bool), ``size`` (``"small"``: 60 training and 20 test images per task;
    ``"paper"``: 300 and 100), ``render_mode`` (None or ``"rgb_array"``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}
    invalid_reward = 0.0

    def __init__(
        self,
        patch: int = 8,
        backgrounds: str = "per-task",
        predict_boxes: bool = False,
        size: str = "small",
        render_mode: str | None = None,
    ):
        super().__init__(size)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        if backgrounds not in BACKGROUNDS:
            raise ValueError(f"backgrounds must be one of {BACKGROUNDS}, got {backgrounds!r}")
        if not isinstance(predict_boxes, bool):
            raise ValueError(f"predict_boxes must be a bool, got {predict_boxes!r}")
        self.patch, self.backgrounds = idpa_fixture.check_patch(patch), backgrounds
        self.predict_boxes = predict_boxes
        shape = SIZES[size]
        self.train_size, self.test_size = shape.train, shape.test
        n, m, side = shape.train, lesions.TASKS * shape.test, lesions.SIDE
        self.observation_space = spaces.Dict(
            {
                "task": spaces.Discrete(lesions.TASKS),
                "train_images": spaces.Box(0.0, 1.0, (n, side, side), np.float32),
                "train_boxes": spaces.Box(0.0, side, (n, SLOTS, 4), np.float32),
                "train_labels": spaces.MultiDiscrete(np.full((n, SLOTS), CLASSES + 1)),
                "test_images": spaces.Box(0.0, 1.0, (m, side, side), np.float32),
                "test_proposals": spaces.Box(0.0, side, (m, SLOTS, 4), np.float32),
                "test_objects": spaces.MultiBinary((m, SLOTS)),
            }
        )
        answer = {
            "logits": spaces.Box(-np.inf, np.inf, (m, SLOTS, CLASSES), np.float32),
            "centres": spaces.Box(0.0, side, (m, SLOTS, 2), np.float32),
        }
        if predict_boxes:
            answer["boxes"] = spaces.Box(0.0, side, (m, SLOTS, 4), np.float32)
        self.action_space = spaces.Dict(answer)

    # ---- the instance -----------------------------------------------------------------------

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, Any], dict[str, Any]]:
        train, test, proposals = [], [], []
        for task in range(lesions.TASKS):
            train.append(lesions.task_images(rng, task, self.train_size, self.backgrounds))
            test.append(lesions.task_images(rng, task, self.test_size, self.backgrounds))
            proposals.append(lesions.proposals(rng, test[-1].boxes, test[-1].labels))
        instance = {
            "train": train,
            "test": lesions.Images(
                np.concatenate([t.images for t in test]),
                np.concatenate([t.boxes for t in test]),
                np.concatenate([t.labels for t in test]),
            ),
            "proposals": np.concatenate(proposals),
        }
        self._task = 0
        self._scores = np.full((lesions.TASKS, lesions.TASKS), np.nan)
        return self._task_observation(instance, 0), instance

    def _task_observation(self, instance: dict[str, Any], task: int) -> dict[str, Any]:
        train, test = instance["train"][task], instance["test"]
        seen = np.arange(len(test.images)) < (task + 1) * self.test_size
        return {
            "task": task,
            "train_images": train.images.copy(),
            "train_boxes": train.boxes.copy(),
            "train_labels": np.where(train.labels >= 0, train.labels, CLASSES),
            "test_images": np.where(seen[:, None, None], test.images, 0).astype(np.float32),
            "test_proposals": np.where(seen[:, None, None], instance["proposals"], 0).astype(
                np.float32
            ),
            "test_objects": ((test.labels >= 0) & seen[:, None]).astype(np.int8),
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        return observation, {**info, "instance": Frozen(self.patch)}

    def render(self) -> np.ndarray | None:
        """The picture of the class docstring's Rendering section (None without
        ``render_mode``); before the first reset, nothing to draw."""
        if self.render_mode is None:
            return None
        if self.instance is None:
            raise RuntimeError(f"{type(self).__name__}.render() before reset()")
        panels = []
        for train in self.instance["train"]:
            grey = np.repeat(np.repeat(train.images[0], ZOOM, axis=0), ZOOM, axis=1)
            panel = np.repeat((grey * 255).astype(np.uint8)[..., None], 3, axis=-1)
            for box, label in zip(train.boxes[0], train.labels[0], strict=True):
                if label >= 0:
                    x0, y0, x1, y1 = np.clip(
                        np.round(box * ZOOM).astype(int), 0, lesions.SIDE * ZOOM - 2
                    )
                    for x in (x0, x1):
                        panel[y0 : y1 + 2, x : x + 2] = COLOURS[label]
                    for y in (y0, y1):
                        panel[y : y + 2, x0 : x1 + 2] = COLOURS[label]
            panels.append(panel)
        return np.concatenate(panels, axis=1)

    # ---- scoring ----------------------------------------------------------------------------

    def task_scores(self, solution: dict[str, np.ndarray], tasks: int) -> dict[str, float]:
        """Per seen task the fraction detected, and class accuracy (see the module)."""
        test = self.instance["test"]
        seen = tasks * lesions.CLASSES_PER_TASK
        predicted = solution["logits"][..., :seen].argmax(axis=-1)
        close = np.linalg.norm(solution["centres"] - test.centres, axis=-1) <= RADIUS
        right = predicted == test.labels
        metrics: dict[str, float] = {}
        present = test.labels >= 0
        for task in range(tasks):
            rows = slice(task * self.test_size, (task + 1) * self.test_size)
            mask = present[rows]
            metrics[f"task_{task}"] = float((right[rows] & close[rows])[mask].mean())
        mask = present[: tasks * self.test_size]
        metrics["accuracy"] = float(right[: tasks * self.test_size][mask].mean())
        return metrics

    def step(self, solution: Any):
        if self._observation is None:
            raise RuntimeError(f"{type(self).__name__}.step() before reset()")
        checked, finite = check_solution(solution, self.action_space)
        task = self._task
        if finite:
            metrics = self.task_scores(checked, task + 1)
            if self.predict_boxes:
                metrics["box_ap50"] = box_ap(
                    checked, self.instance["test"], task + 1, self.test_size
                )
            metrics["invalid"] = 0.0
        else:
            metrics = {f"task_{t}": 0.0 for t in range(task + 1)} | {"invalid": 1.0}
        self._scores[task, : task + 1] = [metrics[f"task_{t}"] for t in range(task + 1)]
        reward = float(np.mean(self._scores[task, : task + 1]))
        metrics["average"] = reward
        terminated = task == lesions.TASKS - 1
        if terminated:
            metrics["final_average"] = reward
            metrics["forgetting"] = forgetting(self._scores)
            self._observation = None
            observation = self._task_observation(self.instance, task)
        else:
            self._task = task + 1
            self._observation = self._task_observation(self.instance, self._task)
            observation = copy.deepcopy(self._observation)
        info = {
            "invalid_action": not finite,
            "metrics": metrics,
            "task": task,
            "instance": Frozen(self.patch),
        }
        return observation, reward, terminated, False, info


def forgetting(scores: np.ndarray) -> float:
    """Mean over all but the last task of (best score before the last step − final score);
    ``scores[s, t]`` is task t's score after step s."""
    last = len(scores) - 1
    drops = [np.max(scores[t:last, t]) - scores[last, t] for t in range(last)]
    return float(np.mean(drops))


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of boxes a (..., 4) and b (..., 4) (x0, y0, x1, y1)."""
    low, high = np.maximum(a[..., :2], b[..., :2]), np.minimum(a[..., 2:], b[..., 2:])
    inter = np.prod(np.clip(high - low, 0, None), axis=-1)
    area = np.prod(a[..., 2:] - a[..., :2], axis=-1) + np.prod(b[..., 2:] - b[..., :2], axis=-1)
    return inter / np.maximum(area - inter, 1e-9)


def average_precision(scores: np.ndarray, hits: np.ndarray, positives: int) -> float:
    """All-point interpolated AP (VOC 2010+) of detections ranked by ``scores``."""
    if positives == 0:
        return float("nan")
    order = np.argsort(-scores, kind="stable")
    true = np.cumsum(hits[order])
    recall = np.concatenate([[0.0], true / positives])
    precision = np.concatenate([[1.0], true / np.arange(1, len(order) + 1)])
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    return float(np.sum(np.diff(recall) * precision[1:]))


def box_ap(
    solution: dict[str, np.ndarray], test: lesions.Images, tasks: int, per_task: int
) -> float:
    """Mean over seen classes of AP at IoU 0.5: one detection per answered object, of its most
    probable seen class, scored by that class's probability. With one detection per ground-truth
    slot, a detection matches its own object when the class is right and the IoU is ≥ 0.5."""
    rows = tasks * per_task
    seen = tasks * lesions.CLASSES_PER_TASK
    labels = test.labels[:rows]
    present = labels >= 0
    logits = solution["logits"][:rows, :, :seen].astype(np.float64)
    probability = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probability /= probability.sum(axis=-1, keepdims=True)
    predicted = probability.argmax(axis=-1)
    confidence = probability.max(axis=-1)
    overlap = iou(solution["boxes"][:rows], test.boxes[:rows]) >= IOU
    aps = []
    for c in range(seen):
        mine = present & (predicted == c)
        hits = (overlap & (labels == c))[mine]
        aps.append(average_precision(confidence[mine], hits, int(np.sum(labels == c))))
    return float(np.nanmean(aps))
