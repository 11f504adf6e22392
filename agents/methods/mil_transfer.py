"""MIL aggregators trained from scratch or transferred from a pretrained fixture on
``Methods/MILTransfer-v0``.

Shao, Chen, Song, Runevic, Lu, Ding, Mahmood, "Do Multiple Instance Learning Models Transfer?",
ICML 2025.

One agent per aggregator of :mod:`omnigym.envs.methods.aggregators`: ``mean-mil`` (mean-pool
MLP), ``max-mil`` (max pooling), ``abmil`` (gated attention), ``transmil`` (TransMIL-lite) and
``dsmil`` (dual-stream). Keyword arguments choose the paper's transfer settings:

- ``init``: ``"scratch"`` (random initialisation from the agent's seed), ``"pan-organ"`` or
  ``"single-organ"`` (the aggregator pretrained on that task, from ``info["instance"]``, with its
  class-specific layers replaced by zero-initialised ones for the target's classes);
- ``mode``: ``"finetune"`` (every weight trained on the target's training slides: Adam,
  ``learning_rate`` 1e-3, ``epochs`` 20 passes in mini-batches of 8) or ``"probe"`` (the model
  frozen; a logistic regression of scikit-learn, on standardised bag embeddings, C = 1).

The answer is the model's class probabilities for the test slides.

Departures from the paper: one learning rate and epoch budget for every aggregator and
initialisation and no early stopping (40 slides leave no validation split worth the name); the
linear probe's embedding of ``dsmil`` is a choice made here (see
:func:`omnigym.envs.methods.aggregators.embed`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from omnigym.envs.methods import aggregators

INITS = ("scratch", "pan-organ", "single-organ")
MODES = ("finetune", "probe")


class MILAgent:
    """One aggregator, one initialisation, one transfer mode (see the module docstring)."""

    aggregator = "abmil"

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        init: str = "scratch",
        mode: str = "finetune",
        epochs: int = 20,
        learning_rate: float = 1e-3,
    ):
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not isinstance(epochs, int) or epochs < 0 or learning_rate <= 0:
            raise ValueError(
                f"epochs must be an int >= 0 and learning_rate positive, got {epochs!r} and "
                f"{learning_rate!r}"
            )
        self.seed, self.init, self.mode = seed, init, mode
        self.epochs, self.learning_rate = epochs, learning_rate

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    def model(self, instance: Any, classes: int) -> Any:
        """The starting model: fresh, or the pretrained one with zeroed class-specific layers."""
        if self.init == "scratch":
            return aggregators.build(self.aggregator, classes, self.seed)
        model = instance.model(self.aggregator, self.init)
        model.new_head(classes)
        return model

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> np.ndarray:
        bags, labels = observation["train_bags"], np.asarray(observation["train_labels"])
        test = observation["test_bags"]
        classes = info["instance"].target_classes
        model = self.model(info["instance"], classes)
        if self.mode == "probe":
            return probe(model, bags, labels, test, classes)
        aggregators.train(model, bags, labels, self.epochs, self.learning_rate, self.seed)
        return aggregators.predict(model, test)


def probe(
    model: Any, bags: np.ndarray, labels: np.ndarray, test: np.ndarray, classes: int
) -> np.ndarray:
    """Class probabilities (test, classes) of a logistic regression on the frozen model's
    standardised bag embeddings; classes missing from ``labels`` get probability 0."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    present = np.unique(labels)
    out = np.zeros((len(test), classes))
    if len(present) == 1:
        out[:, present[0]] = 1.0
        return out
    pipeline = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    pipeline.fit(aggregators.embed(model, bags), labels)
    out[:, pipeline.classes_] = pipeline.predict_proba(aggregators.embed(model, test))
    return out


class MeanMILAgent(MILAgent):
    """``mean-mil``: mean pooling of instance embeddings, then a linear head."""

    aggregator = "mean"


class MaxMILAgent(MILAgent):
    """``max-mil``: max pooling of instance embeddings, then a linear head."""

    aggregator = "max"


class ABMILAgent(MILAgent):
    """``abmil``: gated attention pooling."""

    aggregator = "abmil"


class TransMILAgent(MILAgent):
    """``transmil``: TransMIL-lite (class token through two transformer layers)."""

    aggregator = "transmil"


class DSMILAgent(MILAgent):
    """``dsmil``: dual-stream MIL (critical-instance attention)."""

    aggregator = "dsmil"
