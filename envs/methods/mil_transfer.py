"""Transfer multiple-instance learning models, pretrained on one slide task, to a new one with few
slides.

Shao, Chen, Song, Runevic, Lu, Ding, Mahmood, "Do Multiple Instance Learning Models Transfer?",
ICML 2025.

An instance is a target task of :mod:`omnigym.envs.methods.slides` with ``train_size``
labelled training slides and unlabelled test slides: ``same-organ`` (organ 0 with a new rule,
positive for two of its four diagnostic prototypes, with benign slides), ``cross-organ`` (the 4
subtypes of an organ the single-organ pretraining never saw) or ``shift`` (a subtle mean shift
of one prototype). The MIL aggregators pretrained on the pan-organ (20 classes) and the
single-organ (4 classes) task are in ``info["instance"]`` (:class:`Pretrained`; built
in-process on first use and cached, see :mod:`omnigym.envs.methods.aggregators`). A method
answers class probabilities for every test slide; binary targets are scored by AUROC, the
4-class one by balanced accuracy (torchmetrics).

Departures from the paper: synthetic bags of 64-d features from 40 prototype clusters stand in
for UNI patch features of whole-slide images and the paper's 19 target tasks (subtyping,
grading and molecular tasks on TCGA, EBRAINS, BRACS, PANDA and others); a bag holds a fixed 100
instances (32 at ``size="small"``) rather than thousands of patches; the pan-organ pretraining
task has 20 classes and 2,000 slides instead of the pan-cancer task's 108 classes and 3,944
slides, and the single-organ task has as many slides as the pan-organ one; the aggregators are
small (27k-102k parameters) and pretrained here; a target has 40 training slides by default
(the knob ``train_size``) instead of the paper's full training splits and few-shot subsets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from . import aggregators, slides
from .core import MethodEnv

TRAIN_SIZES = (4, 1000)
#: Rows of a probability answer must sum to 1 within this.
SUM_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Size:
    """Instances per bag and test slides."""

    instances: int
    test: int


SIZES = {"small": Size(instances=32, test=100), "paper": Size(instances=100, test=500)}


@dataclass(frozen=True)
class Pretrained:
    """What an agent gets in ``info["instance"]``: the target's number of classes, the
    pretraining tasks and :meth:`model`, a fresh copy of an aggregator pretrained on one of
    them."""

    target_classes: int
    tasks: tuple[str, ...] = slides.PRETRAINING
    aggregators: tuple[str, ...] = aggregators.AGGREGATORS

    def classes(self, task: str) -> int:
        return slides.TASKS[task][0]

    def model(self, aggregator: str, task: str) -> Any:
        return aggregators.load(aggregator, task)


class MILTransfer(MethodEnv):
    """Few-shot transfer of pretrained MIL aggregators to a new slide task (Shao et al.).

    ## Description

    ``reset(seed)`` draws ``train_size`` labelled and the test slides of ``target``; the agent
    trains (from scratch, or from a pretrained aggregator of ``info["instance"]``) and answers
    class probabilities for the test slides.

    ## Observation space

    ``Dict``: ``train_bags`` ``Box(n_train, m, 64)`` float32, ``train_labels``
    ``MultiDiscrete`` (n_train,) of ``n_classes``, ``test_bags`` ``Box(n_test, m, 64)``, with m
    instances per bag (32 small, 100 paper). ``info["instance"]`` is the :class:`Pretrained`.

    ## Action space

    ``Box(0, 1, (n_test, n_classes))``: class probabilities; a row that does not sum to 1 (within
    1e-4) is a failed answer.

    ## Rewards

    AUROC of the positive class (``same-organ``, ``shift``) or balanced accuracy
    (``cross-organ``, 4 classes). Metrics: ``score`` (the reward), ``auroc`` (one-vs-rest macro
    for 4 classes), ``balanced_accuracy`` and ``accuracy`` of the most probable class. A failed
    answer (NaN, rows off the simplex) scores 0 with ``info["invalid_action"]``.

    ## Episode end

    One step.

    ## Arguments

    ``target`` (``"same-organ"``, ``"cross-organ"``, ``"shift"``), ``train_size`` (4–1000,
    default 40), ``size`` (``"small"``: 32 instances a bag, 100 test slides; ``"paper"``: 100
    and 500).
    """

    invalid_reward = 0.0

    def __init__(self, target: str = "cross-organ", train_size: int = 40, size: str = "small"):
        super().__init__(size)
        if target not in slides.TARGETS:
            raise ValueError(f"target must be one of {slides.TARGETS}, got {target!r}")
        low, high = TRAIN_SIZES
        if not isinstance(train_size, int) or not low <= train_size <= high:
            raise ValueError(f"train_size must be an int in [{low}, {high}], got {train_size!r}")
        self.target, self.train_size = target, train_size
        self.classes = slides.TASKS[target][0]
        shape = SIZES[size]
        self.instances, self.test_size = shape.instances, shape.test
        bag = (self.instances, slides.FEATURES)
        self.observation_space = spaces.Dict(
            {
                "train_bags": spaces.Box(-np.inf, np.inf, (train_size, *bag), np.float32),
                "train_labels": spaces.MultiDiscrete(np.full(train_size, self.classes)),
                "test_bags": spaces.Box(-np.inf, np.inf, (self.test_size, *bag), np.float32),
            }
        )
        self.action_space = spaces.Box(0.0, 1.0, (self.test_size, self.classes), np.float64)

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
        train, labels = slides.bags(rng, self.target, self.train_size, self.instances)
        test, truth = slides.bags(rng, self.target, self.test_size, self.instances)
        observation = {"train_bags": train, "train_labels": labels, "test_bags": test}
        return observation, truth

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        return observation, {**info, "instance": Pretrained(self.classes)}

    def score(self, solution: np.ndarray) -> tuple[float, dict[str, float]] | None:
        if np.abs(solution.sum(axis=1) - 1.0).max() > SUM_TOLERANCE:
            return None
        metrics = classification_metrics(solution, self.instance)
        reward = metrics["auroc"] if self.classes == 2 else metrics["balanced_accuracy"]
        return reward, {"score": reward, **metrics}


def classification_metrics(probabilities: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """``auroc`` (binary, or one-vs-rest macro), ``balanced_accuracy`` and ``accuracy`` of the
    most probable class, by torchmetrics."""
    import torch
    from torchmetrics.functional import classification as tm

    preds, target = torch.from_numpy(probabilities), torch.from_numpy(labels)
    classes = probabilities.shape[1]
    if classes == 2:
        auroc = tm.binary_auroc(preds[:, 1], target)
    else:
        auroc = tm.multiclass_auroc(preds, target, classes, average="macro")
    balanced = tm.multiclass_recall(preds, target, classes, average="macro")
    accuracy = tm.multiclass_accuracy(preds, target, classes, average="micro")
    return {
        "auroc": float(auroc),
        "balanced_accuracy": float(balanced),
        "accuracy": float(accuracy),
    }
