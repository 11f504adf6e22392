"""A small e3nn interatomic potential, the EMT-labelled clusters it learns from, and its training.

The model of ``Methods/EquivariantFineTuning-v0`` (:mod:`omnigym.envs.methods.elora`), in the
style of NequIP and MACE but small enough for a CPU (Batzner et al., Nat. Commun. 2022; Batatia
et al., NeurIPS 2022), built from e3nn's irreps, ``o3.Linear``, ``o3.TensorProduct`` and
``nn.Gate`` (Geiger and Smidt, 2022):

- every atom starts from one learned vector of scalars (the clusters hold one element);
- each of 2 interaction layers: an ``o3.Linear`` of the node features, a tensor product with the
  spherical harmonics (l ≤ 1) of each edge's direction whose path weights come from a radial MLP
  of 8 Bessel functions of the edge length (smooth cutoff at 5 Å), a sum over neighbours, an
  ``o3.Linear`` plus an ``o3.Linear`` skip connection, and a gate nonlinearity; features
  16x0e + 8x1o;
- an ``o3.Linear`` read-out to one scalar per atom, scaled and shifted; the energy is their sum
  and the forces are −∂E/∂positions (autograd).

Data (:func:`clusters`): compact clusters of 8–12 atoms cut from an FCC lattice (Cu, Ag or Au),
strained and rattled, labelled by ASE's EMT calculator (energies in eV, forces in eV/Å). The
pretrained potential (:func:`pretrained`) is fit to 600 Cu clusters from a fixed seed in about
a minute of one core, and kept in the user's cache directory as arrays read back without pickle.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from omnigym.threads import one_torch_thread

from .core import cache_dir, cached_arrays

#: FCC lattice constants (Å) of the elements EMT knows and the clusters use.
LATTICE = {"Cu": 3.61, "Ag": 4.09, "Au": 4.08}
MAX_ATOMS = 12
MIN_ATOMS = 8
PRETRAIN_SEED = 0
PRETRAIN_CLUSTERS = 600
PRETRAIN_STEPS = 800
PRETRAIN_BATCH = 20
#: Weight of the force term in the loss (forces in eV/Å, energies per atom in eV).
FORCE_WEIGHT = 1.0


@dataclass(frozen=True)
class ClusterSet:
    """Clusters padded to :data:`MAX_ATOMS`: ``positions`` (n, MAX_ATOMS, 3), ``mask`` (n,
    MAX_ATOMS) of real atoms, ``energies`` (n,), ``forces`` (n, MAX_ATOMS, 3)."""

    positions: np.ndarray
    mask: np.ndarray
    energies: np.ndarray
    forces: np.ndarray

    def __len__(self) -> int:
        return len(self.energies)


def emt_label(element: str, positions: np.ndarray) -> tuple[float, np.ndarray]:
    """EMT's energy (eV) and forces (eV/Å) of one cluster of ``element``."""
    from ase import Atoms
    from ase.calculators.emt import EMT

    atoms = Atoms(element * len(positions), positions=positions)
    atoms.calc = EMT()
    return float(atoms.get_potential_energy()), atoms.get_forces()


def cluster_positions(
    rng: np.random.Generator, element: str, rattle: float, strain: float
) -> np.ndarray:
    """A cluster of 8–12 atoms: the FCC sites nearest a random point, scaled by a random factor
    in [1 − strain, 1 + strain], centred, each atom displaced by N(0, rattle²) per axis."""
    a = LATTICE[element]
    grid = np.array([(i, j, k) for i in range(-3, 4) for j in range(-3, 4) for k in range(-3, 4)])
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    sites = (grid[:, None, :] + basis[None]).reshape(-1, 3) * a
    count = int(rng.integers(MIN_ATOMS, MAX_ATOMS + 1))
    centre = rng.uniform(-0.5, 0.5, 3) * a
    nearest = sites[np.argsort(np.linalg.norm(sites - centre, axis=1), kind="stable")[:count]]
    scaled = nearest * rng.uniform(1 - strain, 1 + strain)
    scaled -= scaled.mean(axis=0)
    return scaled + rng.normal(0.0, rattle, scaled.shape)


def clusters(
    rng: np.random.Generator, count: int, element: str, rattle: float, strain: float
) -> ClusterSet:
    """``count`` EMT-labelled clusters (:func:`cluster_positions`), padded."""
    positions = np.zeros((count, MAX_ATOMS, 3))
    forces = np.zeros((count, MAX_ATOMS, 3))
    mask = np.zeros((count, MAX_ATOMS), dtype=np.int8)
    energies = np.zeros(count)
    for index in range(count):
        atoms = cluster_positions(rng, element, rattle, strain)
        n = len(atoms)
        energies[index], forces[index, :n] = emt_label(element, atoms)
        positions[index, :n], mask[index, :n] = atoms, 1
    return ClusterSet(positions, mask, energies, forces)


# ---- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PotentialConfig:
    """The architecture's sizes."""

    scalars: int = 16
    vectors: int = 8
    layers: int = 2
    basis: int = 8
    radial_hidden: int = 32
    cutoff: float = 5.0
    neighbours: float = 8.0  # messages are summed, then divided by this typical count


def _modules():
    """The torch module classes (built on first use, so that importing this module does not
    import torch or e3nn)."""
    import torch
    from e3nn import nn as enn
    from e3nn import o3

    class Interaction(torch.nn.Module):
        def __init__(self, irreps_in: Any, config: PotentialConfig):
            super().__init__()
            self.sh = o3.Irreps.spherical_harmonics(1)
            hidden = o3.Irreps(f"{config.scalars}x0e + {config.vectors}x1o")
            self.up = o3.Linear(irreps_in, irreps_in)
            mid, instructions = [], []
            for i, (mul, ir_in) in enumerate(irreps_in):
                for j, (_, ir_sh) in enumerate(self.sh):
                    for ir_out in ir_in * ir_sh:
                        if ir_out in hidden:
                            instructions.append((i, j, len(mid), "uvu", True))
                            mid.append((mul, ir_out))
            mid = o3.Irreps(mid)
            self.tp = o3.TensorProduct(
                irreps_in, self.sh, mid, instructions, shared_weights=False, internal_weights=False
            )
            self.radial = enn.FullyConnectedNet(
                [config.basis, config.radial_hidden, self.tp.weight_numel], torch.nn.functional.silu
            )
            self.gate = enn.Gate(
                f"{config.scalars}x0e", [torch.nn.functional.silu],
                f"{config.vectors}x0e", [torch.sigmoid],
                f"{config.vectors}x1o",
            )  # fmt: skip
            self.down = o3.Linear(mid, self.gate.irreps_in)
            self.skip = o3.Linear(irreps_in, self.gate.irreps_in)
            self.irreps_out = self.gate.irreps_out
            self.neighbours = config.neighbours

        def forward(self, h, edges, sh, radial):
            sender, receiver = edges
            messages = self.tp(self.up(h)[sender], sh, self.radial(radial))
            summed = torch.zeros(len(h), messages.shape[1], dtype=h.dtype)
            summed = summed.index_add(0, receiver, messages) / self.neighbours
            return self.gate(self.down(summed) + self.skip(h))

    class Potential(torch.nn.Module):
        """E = scale·Σ_i read-out(h_i) + shift·n_atoms."""

        def __init__(self, config: PotentialConfig):
            super().__init__()
            self.config = config
            self.embedding = torch.nn.Parameter(torch.randn(config.scalars))
            irreps = o3.Irreps(f"{config.scalars}x0e")
            self.interactions = torch.nn.ModuleList()
            for _ in range(config.layers):
                self.interactions.append(Interaction(irreps, config))
                irreps = self.interactions[-1].irreps_out
            self.readout = o3.Linear(irreps, "1x0e")
            self.register_buffer("scale", torch.ones(()))
            self.register_buffer("shift", torch.zeros(()))
            self.sh = o3.Irreps.spherical_harmonics(1)

        def forward(self, positions, graph, edges, graphs: int):
            sender, receiver = edges
            vectors = positions[sender] - positions[receiver]
            length = vectors.norm(dim=1)
            sh = o3.spherical_harmonics(self.sh, vectors, normalize=True, normalization="component")
            radial = bessel(length, self.config.basis, self.config.cutoff)
            h = self.embedding.expand(len(positions), -1)
            for interaction in self.interactions:
                h = interaction(h, edges, sh, radial)
            atomic = self.readout(h)[:, 0] * self.scale + self.shift
            return torch.zeros(graphs, dtype=positions.dtype).index_add(0, graph, atomic)

    def bessel(length, count: int, cutoff: float):
        n = torch.arange(1, count + 1, dtype=length.dtype)
        x = length[:, None] / cutoff
        basis = (2 / cutoff) ** 0.5 * torch.sin(n * torch.pi * x) / length[:, None]
        envelope = 0.5 * (torch.cos(torch.pi * x) + 1) * (x < 1)
        return basis * envelope

    return Potential


def build(config: PotentialConfig, seed: int) -> Any:
    """A fresh :class:`Potential` with weights drawn from torch's generator seeded by
    ``seed``."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _modules()(config)


# ---- batches, energies and forces ---------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """Clusters as one graph: atom positions (N, 3), each atom's cluster, the directed edges
    within the cutoff, and (when labelled) energies and forces."""

    positions: Any
    graph: Any
    edges: Any
    graphs: int
    energies: Any = None
    forces: Any = None
    atoms: Any = None


def batch(
    positions: np.ndarray, mask: np.ndarray, cutoff: float, labels: ClusterSet | None = None
) -> Batch:
    """The :class:`Batch` of padded clusters (``labels`` adds their energies and forces)."""
    import torch

    keep = mask.astype(bool)
    flat = torch.tensor(positions[keep], dtype=torch.float32)
    graph = torch.from_numpy(np.nonzero(keep)[0])
    distance = np.linalg.norm(positions[:, :, None] - positions[:, None, :], axis=-1)
    pair = keep[:, :, None] & keep[:, None, :] & (distance < cutoff)
    pair &= ~np.eye(keep.shape[1], dtype=bool)[None]
    index = -np.ones(keep.shape, dtype=np.int64)
    index[keep] = np.arange(int(keep.sum()))
    which, i, j = np.nonzero(pair)
    edges = torch.from_numpy(np.stack([index[which, j], index[which, i]]))
    atoms = torch.tensor(keep.sum(axis=1), dtype=torch.float32)
    if labels is None:
        return Batch(flat, graph, edges, len(keep), atoms=atoms)
    energies = torch.tensor(labels.energies, dtype=torch.float32)
    forces = torch.tensor(labels.forces[keep], dtype=torch.float32)
    return Batch(flat, graph, edges, len(keep), energies, forces, atoms)


def predict(model: Any, data: Batch, training: bool = False) -> tuple[Any, Any]:
    """``(energies, forces)`` of a batch; ``training`` keeps the graph for a loss on forces."""
    import torch

    with torch.enable_grad():
        positions = data.positions.detach().requires_grad_(True)
        energies = model(positions, data.graph, data.edges, data.graphs)
        (gradient,) = torch.autograd.grad(energies.sum(), positions, create_graph=training)
    if not training:
        energies, gradient = energies.detach(), gradient.detach()
    return energies, -gradient


def loss(model: Any, data: Batch) -> Any:
    """Mean squared per-atom energy error plus :data:`FORCE_WEIGHT` × mean squared force
    component error."""
    energies, forces = predict(model, data, training=True)
    energy_term = (((energies - data.energies) / data.atoms) ** 2).mean()
    return energy_term + FORCE_WEIGHT * ((forces - data.forces) ** 2).mean()


def fit_shift(model: Any, data: Batch) -> None:
    """Move the per-atom energy shift so that the mean per-atom energy error on ``data`` is 0
    (the atomic reference energies that MACE re-averages on a new dataset)."""
    import torch

    energies, _ = predict(model, data)
    with torch.no_grad():
        model.shift += ((data.energies - energies.detach()) / data.atoms).mean()


def fit(
    model: Any,
    data: Sequence[Batch],
    parameters: Iterable[Any],
    steps: int,
    learning_rate: float,
    seed: int,
) -> list[float]:
    """Adam with a cosine schedule for ``steps`` steps over the batches in ``data`` (in an
    order drawn from ``seed``), on one torch thread; returns the losses."""
    import torch

    parameters = list(parameters)
    optimiser = torch.optim.Adam(parameters, lr=learning_rate)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps)
    order = np.random.default_rng(seed).integers(0, len(data), steps)
    losses = []
    with one_torch_thread():
        for index in order:
            value = loss(model, data[index])
            optimiser.zero_grad()
            value.backward()
            optimiser.step()
            schedule.step()
            losses.append(float(value.detach()))
    return losses


# ---- the pretrained potential -------------------------------------------------------------------


def pretraining_set() -> ClusterSet:
    """The :data:`PRETRAIN_CLUSTERS` Cu clusters (rattle 0.1 Å, strain 3 %) of seed
    :data:`PRETRAIN_SEED`."""
    rng = np.random.default_rng(PRETRAIN_SEED)
    return clusters(rng, PRETRAIN_CLUSTERS, "Cu", rattle=0.1, strain=0.03)


def _key(config: PotentialConfig) -> str:
    import ase
    import e3nn
    import torch

    recipe = {"config": asdict(config), "seed": PRETRAIN_SEED, "clusters": PRETRAIN_CLUSTERS,
              "steps": PRETRAIN_STEPS, "batch": PRETRAIN_BATCH, "torch": torch.__version__,
              "e3nn": e3nn.__version__, "ase": ase.__version__}  # fmt: skip
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def pretrained(config: PotentialConfig = PotentialConfig()) -> dict[str, np.ndarray]:
    """The pretrained potential's state dict as arrays: built by :func:`pretrain` once, then
    read from ``cache_dir("potential")`` (``np.load`` without pickle)."""
    path = cache_dir("potential") / f"cu-{_key(config)}.npz"
    return cached_arrays(path, lambda: pretrain(config))


def pretrain(config: PotentialConfig) -> dict[str, np.ndarray]:
    """Fit a fresh potential (seed :data:`PRETRAIN_SEED`) to :func:`pretraining_set`: the
    scale set to the forces' standard deviation and the shift to the mean per-atom energy,
    then :data:`PRETRAIN_STEPS` Adam steps (learning rate 5e-3) on batches of
    :data:`PRETRAIN_BATCH` clusters."""
    import torch

    data = pretraining_set()
    model = build(config, PRETRAIN_SEED)
    with torch.no_grad():
        model.scale.fill_(float(np.std(data.forces[data.mask.astype(bool)])))
    batches = [
        batch(
            data.positions[i : i + PRETRAIN_BATCH],
            data.mask[i : i + PRETRAIN_BATCH],
            config.cutoff,
            _slice(data, slice(i, i + PRETRAIN_BATCH)),
        )  # fmt: skip
        for i in range(0, len(data), PRETRAIN_BATCH)
    ]
    fit_shift(model, batches[0])
    fit(model, batches, model.parameters(), PRETRAIN_STEPS, 5e-3, PRETRAIN_SEED)
    return {name: value.detach().numpy() for name, value in model.state_dict().items()}


def _slice(data: ClusterSet, index: Any) -> ClusterSet:
    return ClusterSet(
        data.positions[index], data.mask[index], data.energies[index], data.forces[index]
    )


def load(state: dict[str, np.ndarray], config: PotentialConfig = PotentialConfig()) -> Any:
    """A potential holding ``state`` (a fresh copy: training it leaves ``state`` unchanged)."""
    import torch

    model = build(config, PRETRAIN_SEED)
    model.load_state_dict({name: torch.tensor(value) for name, value in state.items()})
    return model
