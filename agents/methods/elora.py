"""ELoRA and its fine-tuning baselines on ``Methods/EquivariantFineTuning-v0``.

Wang, Hu, Tan, Jia, "ELoRA: Low-Rank Adaptation for Equivariant GNNs", ICML 2025.

Every agent copies the pretrained potential from ``info["instance"]``, re-fits its per-atom
energy shift on the training clusters (the atomic reference energies MACE re-averages on a new
dataset), trains what its method trains — Adam, learning rate 5e-3 with a cosine schedule, 150
full-batch steps on the per-atom energy and force loss — and answers the potential's
predictions for the test clusters:

- ``elora`` (:class:`ELoRAAgent`, the paper's): a separate low-rank update per path. An
  ``o3.Linear`` holds one weight matrix W_p (multiplicity in × multiplicity out) per
  instruction p, read from its ``instructions``; each gets (α/r)·A_p B_p with A_p Gaussian and
  B_p zero, r capped by the path's multiplicities. Each update is itself an equivariant weight
  of that path, so the adapted model is exactly as equivariant as the pretrained one. The
  tensor products' path weights come from radial MLPs of the edge length (invariant scalars,
  as in NequIP and MACE), which get plain LoRA. The pretrained weights stay frozen; the updates
  are added through ``torch.nn.utils.parametrize``, so e3nn itself is used unchanged.
- ``naive-lora``: LoRA on the flattened features of each ``o3.Linear``: out = Linear(x) +
  (α/r)·x A B with A (dim in × r), B (r × dim out) over the whole irreps vector, mixing the
  components of vectors with scalars and across axes (not equivariant; on purpose); the radial
  MLPs as in ELoRA.
- ``full-finetune``: every weight trained.
- ``readout-only``: only the read-out ``o3.Linear``.
- ``from-scratch``: a freshly initialised potential (scale and shift from the training data),
  every weight trained for the same steps.

Keyword arguments: ``rank`` (r, 16), ``alpha`` (α, 16), ``steps`` (150), ``learning_rate``
(5e-3).

Departures from the paper: with the paper's r = 16 capped by the multiplicities (8 and 16 in
this small potential) every path update of an ``o3.Linear`` is full rank; only the radial
MLPs' second layers get a rank below their size. The paper adapts MACE's symmetric
contractions as well; this potential has none. All agents share one learning rate and step
budget instead of per-method tuning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from omnigym.envs.methods import potential

ARGUMENTS = ("rank", "alpha", "steps", "learning_rate")


def _path_low_rank_class():
    import torch

    class PathLowRank(torch.nn.Module):
        """ΔW of an ``o3.Linear``'s flat weight: per instruction p, (α/r)·A_p B_p flattened in
        the instruction's (multiplicity in, multiplicity out) layout."""

        def __init__(self, instructions, rank: int, alpha: float, generator):
            super().__init__()
            self.a, self.b, self.scales = torch.nn.ParameterList(), torch.nn.ParameterList(), []
            for instruction in instructions:
                mul_in, mul_out = instruction.path_shape
                r = min(rank, mul_in, mul_out)
                a = torch.randn(mul_in, r, generator=generator) / mul_in**0.5
                self.a.append(torch.nn.Parameter(a))
                self.b.append(torch.nn.Parameter(torch.zeros(r, mul_out)))
                self.scales.append(alpha / r)

        def forward(self, weight):
            parts = [
                s * (a @ b).reshape(-1) for s, a, b in zip(self.scales, self.a, self.b, strict=True)
            ]
            return weight + torch.cat(parts)

    class MatrixLowRank(torch.nn.Module):
        """ΔW = (α/r)·A B of a weight matrix (h_in × h_out)."""

        def __init__(self, shape, rank: int, alpha: float, generator):
            super().__init__()
            r = min(rank, *shape)
            self.a = torch.nn.Parameter(
                torch.randn(shape[0], r, generator=generator) / shape[0] ** 0.5
            )
            self.b = torch.nn.Parameter(torch.zeros(r, shape[1]))
            self.scale = alpha / r

        def forward(self, weight):
            return weight + self.scale * self.a @ self.b

    return PathLowRank, MatrixLowRank


def _linears(model: Any) -> list[Any]:
    from e3nn import o3

    return [m for m in model.modules() if isinstance(m, o3.Linear)]


def _radial_layers(model: Any) -> list[Any]:
    from e3nn import nn as enn

    return [
        layer
        for module in model.modules()
        if isinstance(module, enn.FullyConnectedNet)
        for layer in module.children()
    ]


def add_path_lora(model: Any, rank: int, alpha: float, seed: int) -> list[Any]:
    """ELoRA's updates on ``model`` (path-wise on every ``o3.Linear``, plain on the radial
    MLPs' layers); returns the new parameters (the rest of the model is frozen)."""
    import torch
    from torch.nn.utils import parametrize

    path, matrix = _path_low_rank_class()
    generator = torch.Generator().manual_seed(seed)
    model.requires_grad_(False)
    for linear in _linears(model):
        parametrize.register_parametrization(
            linear, "weight", path(linear.instructions, rank, alpha, generator)
        )
    _add_radial_lora(model, matrix, rank, alpha, generator)
    return [
        p for name, p in model.named_parameters() if ".original" not in name and p.requires_grad
    ]


def _add_radial_lora(model: Any, matrix: Any, rank: int, alpha: float, generator: Any) -> None:
    from torch.nn.utils import parametrize

    for layer in _radial_layers(model):
        parametrize.register_parametrization(
            layer, "weight", matrix(tuple(layer.weight.shape), rank, alpha, generator)
        )


def add_naive_lora(model: Any, rank: int, alpha: float, seed: int) -> list[Any]:
    """Naive LoRA on ``model``: every ``o3.Linear`` gets out += (α/r)·x A B over its whole
    feature vector (a forward hook), the radial MLPs plain LoRA; returns the new parameters."""
    import torch

    _, matrix = _path_low_rank_class()
    generator = torch.Generator().manual_seed(seed)
    model.requires_grad_(False)
    for linear in _linears(model):
        delta = matrix((linear.irreps_in.dim, linear.irreps_out.dim), rank, alpha, generator)
        linear.naive_lora = delta

        def hook(module, inputs, output):
            (features,) = inputs[:1]
            lora = module.naive_lora
            return output + lora.scale * (features @ lora.a) @ lora.b

        linear.register_forward_hook(hook)
    _add_radial_lora(model, matrix, rank, alpha, generator)
    return [p for p in model.parameters() if p.requires_grad]


class _FineTuner:
    """Shared loop: copy the potential, re-fit the shift, train this method's parameters,
    answer the test predictions."""

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        rank: int = 16,
        alpha: float = 16.0,
        steps: int = 150,
        learning_rate: float = 5e-3,
    ):
        if rank < 1 or steps < 1 or learning_rate <= 0:
            raise ValueError("rank and steps must be positive ints, learning_rate positive")
        self.seed, self.rank, self.alpha = seed, rank, alpha
        self.steps, self.learning_rate = steps, learning_rate

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    def model(self, instance: Any) -> Any:
        return instance.model()

    def prepare(self, model: Any, data: Any) -> None:
        potential.fit_shift(model, data)

    def trainable(self, model: Any) -> list[Any]:
        raise NotImplementedError

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
        instance = info["instance"]
        train = potential.ClusterSet(
            observation["train_positions"],
            observation["train_mask"],
            observation["train_energies"],
            observation["train_forces"],
        )
        data = potential.batch(train.positions, train.mask, instance.config.cutoff, train)
        model = self.model(instance)
        self.prepare(model, data)
        parameters = self.trainable(model)
        potential.fit(model, [data], parameters, self.steps, self.learning_rate, self.seed)
        return predictions(model, observation["test_positions"], observation["test_mask"])


def predictions(model: Any, positions: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """The ``energies`` and zero-padded ``forces`` ``model`` predicts (in chunks of 100)."""
    energies = np.zeros(len(mask))
    forces = np.zeros(positions.shape)
    for start in range(0, len(mask), 100):
        rows = slice(start, start + 100)
        data = potential.batch(positions[rows], mask[rows], model.config.cutoff)
        e, f = potential.predict(model, data)
        energies[rows] = e.double().numpy()
        block = forces[rows]
        block[mask[rows].astype(bool)] = f.double().numpy()
        forces[rows] = block
    return {"energies": energies, "forces": forces}


class ELoRAAgent(_FineTuner):
    """``elora``: path-wise low-rank updates (see the module docstring)."""

    def trainable(self, model: Any) -> list[Any]:
        return add_path_lora(model, self.rank, self.alpha, self.seed)


class NaiveLoRAAgent(_FineTuner):
    """``naive-lora``: LoRA on the flattened irreps features (breaks equivariance)."""

    def trainable(self, model: Any) -> list[Any]:
        return add_naive_lora(model, self.rank, self.alpha, self.seed)


class FullFineTuneAgent(_FineTuner):
    """``full-finetune``: every weight."""

    def trainable(self, model: Any) -> list[Any]:
        return list(model.parameters())


class ReadoutOnlyAgent(_FineTuner):
    """``readout-only``: the read-out ``o3.Linear`` alone."""

    def trainable(self, model: Any) -> list[Any]:
        model.requires_grad_(False)
        model.readout.requires_grad_(True)
        return list(model.readout.parameters())


class FromScratchAgent(_FineTuner):
    """``from-scratch``: a fresh potential, seeded by the agent's seed, every weight."""

    def model(self, instance: Any) -> Any:
        return potential.build(instance.config, self.seed)

    def prepare(self, model: Any, data: Any) -> None:
        import torch

        with torch.no_grad():
            model.scale.fill_(float(data.forces.std()))
        potential.fit_shift(model, data)

    def trainable(self, model: Any) -> list[Any]:
        return list(model.parameters())
