"""IDFlow and flow-matching baselines on ``Methods/MoleculeGeneration-v0``.

Zhou, Sprague, Viliuga, Tadiello, Elofsson, Azizpour, "Energy-Based Flow Matching for
Generating 3D Molecular Structure", ICML 2025.

Every agent trains one network f(x, t) that predicts the clean structure x₁ from a noisy one
(x₁-prediction flow matching): x_t = (1 − t)·x₀ + t·x₁ with x₀ ∼ N(0, I) (centred), loss
‖f(x_t, t) − x₁‖², on structures centred and scaled by their standard deviation. f is by default
(``network="egnn"``) an E(n)-equivariant graph network (Satorras, Hoogeboom, Welling, ICML
2021) on the complete graph of the atoms: node features from a learned embedding of each atom's
index and a sinusoidal embedding of t, messages from the squared distances (current and input),
the two nodes' features and a learned embedding of the pair, positions moved along the relative
vectors (4 layers of width 32); the input is centred and its centre added back, so f commutes
with rotations, reflections and translations. Each noise sample is rotated onto its structure
(Kabsch) before interpolating, the equivariant pairing of Klein, Krämer, Noé ("Equivariant flow
matching", NeurIPS 2023). ``network="mlp"`` is the earlier stand-in: an MLP on the flattened
coordinates and the embedding of t, with the training structures rotated onto the first one
instead (every score is invariant to rotation); its former settings were ``hidden=256,
layers=3, batch=256, learning_rate=1e-3, steps=1500``. Training: Adam
(learning rate 3e-3, cosine schedule), 1,000 steps of 64 structures.
Samples start from x₀ and follow the velocity (x̂ − x_t)/(1 − t) toward the prediction x̂:

- **refinement in training** (IDFlow): after f(x_t, t), k ∼ U{1, …, 3} further passes
  x̂ ← f(x̂, 1) (the network as an energy-minimising map of the data manifold at t = 1), the
  loss on the last;
- **predictor–refiner sampling** (IDFlow): each step predicts x̂ = f(x_t, t), refines it once,
  x̂ ← f(x̂, 1), and takes the Euler step toward the refined point; the refinement pass counts in
  the budget, so a budget of N evaluations buys ⌊N/2⌋ steps instead of N.

Agents: ``idflow`` (both), ``flow-matching`` (neither: standard flow matching with Euler
steps), ``idflow-train-only`` (refinement in training, standard sampling),
``idflow-sample-only`` (standard training, predictor–refiner sampling). A trained network is
kept per process for its training set, training settings and seed, so an agent asked for
several budgets on the same draw trains once, and agents that differ only in sampling share
it. Keyword arguments: the fields of :class:`Settings` (``network``, ``steps``, ``batch``,
``hidden``, ``layers``, ``learning_rate``, ``refinements``).

Departures from the paper: a small EGNN, trained for 1,000 steps on one CPU thread, stands in
for the paper's far larger equivariant networks; a learned embedding of each atom pair (the
atoms' order is fixed in both datasets) stands in for bond or residue-index features; gradients
flow through every refinement pass.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from omnigym.envs.methods.idflow import align
from omnigym.threads import one_torch_thread

#: Trained networks a process keeps (agent settings × training sets × seeds).
CACHED_MODELS = 32
_MODELS: collections.OrderedDict = collections.OrderedDict()


@dataclass(frozen=True)
class Settings:
    """One agent's training and sampling (see the module docstring)."""

    refine_train: bool = True
    refine_sample: bool = True
    network: str = "egnn"
    steps: int = 1000
    batch: int = 64
    hidden: int = 32
    layers: int = 4
    learning_rate: float = 3e-3
    refinements: int = 3

    def __post_init__(self) -> None:
        if self.network not in NETWORKS:
            raise ValueError(f"network must be one of {sorted(NETWORKS)}, got {self.network!r}")
        if self.steps < 1 or self.hidden < 1 or self.layers < 1 or self.refinements < 1:
            raise ValueError("steps, hidden, layers and refinements must be positive")


def _embedding(t: Any, frequencies: Any) -> Any:
    import torch

    angle = t[:, None] * frequencies
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)


def _mlp(atoms: int, settings: Settings) -> Any:
    import torch

    class Denoiser(torch.nn.Module):
        """f(x, t): x₁ predicted from the flattened coordinates and an embedding of t."""

        def __init__(self):
            super().__init__()
            sizes = [atoms * 3 + 16] + [settings.hidden] * settings.layers
            blocks = []
            for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
                blocks += [torch.nn.Linear(fan_in, fan_out), torch.nn.SiLU()]
            self.body = torch.nn.Sequential(*blocks, torch.nn.Linear(settings.hidden, atoms * 3))
            self.register_buffer("frequencies", torch.exp(torch.linspace(0.0, 6.0, 8)))

        def forward(self, x, t):
            return self.body(torch.cat([x, _embedding(t, self.frequencies)], dim=1))

    return Denoiser()


def _egnn(atoms: int, settings: Settings) -> Any:
    """An E(n)-equivariant graph network (Satorras, Hoogeboom, Welling, ICML 2021, eqs. 3–6)
    on the complete graph of the atoms."""
    import torch

    width = settings.hidden

    def mlp(fan_in: int, fan_out: int) -> Any:
        return torch.nn.Sequential(
            torch.nn.Linear(fan_in, width), torch.nn.SiLU(), torch.nn.Linear(width, fan_out)
        )

    class Layer(torch.nn.Module):
        """One EGNN layer: messages m_ij = φ_e(h_i, h_j, ‖x_i − x_j‖², a_ij), positions
        x_i += Σ_j (x_i − x_j)·φ_x(m_ij) / (N − 1), features h_i += φ_h(h_i, Σ_j m_ij). The
        relative vectors are divided by ‖x_i − x_j‖ + 1, as in Hoogeboom, Satorras, Vignac,
        Welling, "Equivariant Diffusion for Molecule Generation in 3D", ICML 2022, to keep the
        updates bounded."""

        def __init__(self):
            super().__init__()
            # φ_e's first linear map split over h_i, h_j and the two distances (the same map).
            self.sender = torch.nn.Linear(width, width)
            self.receiver = torch.nn.Linear(width, width, bias=False)
            self.distances = torch.nn.Linear(2, width, bias=False)
            self.pair = torch.nn.Parameter(0.1 * torch.randn(atoms, atoms, width))
            self.message = torch.nn.Sequential(
                torch.nn.SiLU(), torch.nn.Linear(width, width), torch.nn.SiLU()
            )
            self.shift = mlp(width, 1)
            self.update = mlp(2 * width, width)

        def forward(self, h, x, initial, off_diagonal):
            relative = x[:, :, None] - x[:, None, :]
            squared = (relative**2).sum(-1, keepdim=True)
            pair = self.sender(h)[:, :, None] + self.receiver(h)[:, None, :]
            pair = pair + self.distances(torch.cat([squared, initial], dim=-1)) + self.pair
            message = self.message(pair) * off_diagonal
            # ε under the root: its gradient at an atom's zero distance to itself is finite.
            direction = relative / ((squared + 1e-8).sqrt() + 1.0)
            x = x + (direction * self.shift(message)).sum(2) / (atoms - 1)
            h = h + self.update(torch.cat([h, message.sum(2)], dim=-1))
            return h, x

    class Denoiser(torch.nn.Module):
        """f(x, t): x₁ predicted by the EGNN from the flattened coordinates, a learned embedding
        of each atom's index and an embedding of t; equivariant to rotations and reflections of
        x, and to translations (the input is centred and its centre added back)."""

        def __init__(self):
            super().__init__()
            self.atom = torch.nn.Parameter(0.1 * torch.randn(atoms, width))
            self.time = torch.nn.Linear(16, width)
            self.layers = torch.nn.ModuleList(Layer() for _ in range(settings.layers))
            self.register_buffer("frequencies", torch.exp(torch.linspace(0.0, 6.0, 8)))
            self.register_buffer("off_diagonal", 1.0 - torch.eye(atoms)[None, :, :, None])

        def forward(self, x, t):
            x = x.reshape(len(x), atoms, 3)
            centre = x.mean(dim=1, keepdim=True)
            x = x - centre
            h = self.atom + self.time(_embedding(t, self.frequencies))[:, None, :]
            initial = ((x[:, :, None] - x[:, None, :]) ** 2).sum(-1, keepdim=True)
            for layer in self.layers:
                h, x = layer(h, x, initial, self.off_diagonal)
            return (x - x.mean(dim=1, keepdim=True) + centre).reshape(len(x), -1)

    return Denoiser()


NETWORKS = {"egnn": _egnn, "mlp": _mlp}


def _centred_noise(shape: tuple[int, ...], generator: Any) -> Any:
    import torch

    noise = torch.randn(shape, generator=generator)
    return noise - noise.mean(dim=1, keepdim=True)


def _rotated_onto(x0: Any, x1: Any) -> Any:
    """Each centred x0[i] rotated onto the centred x1[i] (Kabsch): the equivariant pairing of
    noise and data of Klein, Krämer, Noé, "Equivariant flow matching", NeurIPS 2023."""
    import torch

    u, _, vt = torch.linalg.svd(x0.transpose(1, 2) @ x1)
    sign = torch.sign(torch.linalg.det(u @ vt))
    u = torch.cat([u[:, :, :2], u[:, :, 2:] * sign[:, None, None]], dim=2)
    return x0 @ (u @ vt)


def train(structures: np.ndarray, settings: Settings, seed: int) -> tuple[Any, float]:
    """``(f, scale)``: the network trained on ``structures`` (n, atoms, 3) and the scale the
    coordinates were divided by; kept per process (see the module docstring)."""
    # Sampling settings do not change the network: agents that differ only there share it.
    key = (
        hashlib.sha256(structures.tobytes()).hexdigest(),
        replace(settings, refine_sample=False),
        seed,
    )
    if key in _MODELS:
        return _MODELS[key]
    import torch

    structures = structures - structures.mean(axis=1, keepdims=True)
    if settings.network == "mlp":
        structures = align(structures, structures[0])
    scale = float(structures.std())
    data = torch.tensor(structures / scale, dtype=torch.float32)
    n, atoms, _ = data.shape
    generator = torch.Generator().manual_seed(seed)
    with one_torch_thread(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = NETWORKS[settings.network](atoms, settings)
        optimiser = torch.optim.Adam(model.parameters(), lr=settings.learning_rate)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, settings.steps)
        for _ in range(settings.steps):
            x1 = data[torch.randint(0, n, (settings.batch,), generator=generator)]
            x0 = _centred_noise(x1.shape, generator)
            if settings.network == "egnn":
                x0 = _rotated_onto(x0, x1)
            t = torch.rand(settings.batch, generator=generator)
            xt = (1 - t[:, None, None]) * x0 + t[:, None, None] * x1
            prediction = model(xt.reshape(settings.batch, -1), t)
            if settings.refine_train:
                passes = int(torch.randint(1, settings.refinements + 1, (1,), generator=generator))
                one = torch.ones(settings.batch)
                for _ in range(passes):
                    prediction = model(prediction, one)
            loss = ((prediction - x1.reshape(settings.batch, -1)) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
    model.eval()
    _MODELS[key] = (model, scale)
    while len(_MODELS) > CACHED_MODELS:
        _MODELS.popitem(last=False)
    return _MODELS[key]


def sample(
    model: Any, scale: float, count: int, atoms: int, nfe: int, refine: bool, seed: int
) -> np.ndarray:
    """``count`` structures from ``model`` with ``nfe`` network evaluations each: ``nfe``
    Euler steps, or ⌊nfe/2⌋ predictor–refiner steps when ``refine`` (at least one)."""
    import torch

    steps = max(1, nfe // 2) if refine else nfe
    generator = torch.Generator().manual_seed(seed)
    with one_torch_thread(), torch.no_grad():
        x = _centred_noise((count, atoms, 3), generator).reshape(count, -1)
        for step in range(steps):
            t = step / steps
            prediction = model(x, torch.full((count,), t))
            if refine:
                prediction = model(prediction, torch.ones(count))
            x = x + (prediction - x) / steps / (1 - t)
    return x.reshape(count, atoms, 3).double().numpy() * scale


class IDFlowAgent:
    """``idflow``: refinement in training and predictor–refiner sampling (keyword arguments:
    the fields of :class:`Settings`)."""

    defaults = Settings()

    def __init__(self, env: Any = None, seed: int = 0, **settings: Any):
        self.settings = replace(self.defaults, **settings)
        self.samples = None if env is None else env.action_space.shape[0]
        self.seed = seed

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> np.ndarray:
        structures = observation["train"]
        count = self.samples or len(structures)
        model, scale = train(structures, self.settings, self.seed)
        nfe = int(observation["nfe"][0])
        atoms = structures.shape[1]
        return sample(model, scale, count, atoms, nfe, self.settings.refine_sample, self.seed)


class FlowMatchingAgent(IDFlowAgent):
    """``flow-matching``: standard x₁-prediction flow matching with Euler steps."""

    defaults = Settings(refine_train=False, refine_sample=False)


class RefineTrainOnlyAgent(IDFlowAgent):
    """``idflow-train-only``: refinement in training, standard sampling."""

    defaults = Settings(refine_sample=False)


class RefineSampleOnlyAgent(IDFlowAgent):
    """``idflow-sample-only``: standard training, predictor–refiner sampling."""

    defaults = Settings(refine_train=False)
