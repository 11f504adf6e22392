"""Generate 3-D structures with a fixed budget of network evaluations.

Zhou, Sprague, Viliuga, Tadiello, Elofsson, Azizpour, "Energy-Based Flow Matching for
Generating 3D Molecular Structure", ICML 2025.

An instance is a training set of structures and a budget ``nfe`` of network evaluations per
sample; a method learns the distribution and answers ``samples`` new structures. The score is
the fraction that are valid, with the bond error, the Wasserstein-1 distances of the bond-angle
and dihedral distributions to held-out structures, and the samples' diversity.

Two datasets:

- ``"chains"`` ("mini-molecules"): 8-atom chains, bond length 1.5 ± 0.02, each bond angle from
  one of two modes (110° or 150°, ± 3°), each dihedral from a three-mode mixture (−60°, 60°,
  180°, ± 10°), randomly rotated and centred. Valid: every bond within 0.1 of 1.5.
- ``"conformers"``: heavy-atom conformers of one small molecule (``molecule``, a SMILES; the
  default and :func:`molecules` ship with the project in ``data/molecules.txt``), embedded by
  RDKit's ETKDG and relaxed with MMFF (a pool of 3,000 from a fixed seed, built once and cached
  in the user's cache directory), centred and aligned to the pool's first conformer. Valid:
  every bond within 0.1 Å of its mean length in the pool; ``rdkit_valid`` is the fraction whose
  bonds RDKit's ``DetermineConnectivity`` recovers from the coordinates alone.

Departures from the paper: these small structures stand in for protein–ligand docking and
protein backbones, and the metrics for the paper's (RMSD to crystal poses, designability). The
budget ``nfe`` is reported to the method, which is trusted to keep it; the environment records
it.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from gymnasium import spaces
from scipy import stats
from scipy.spatial.transform import Rotation

from .core import MethodEnv, cache_dir, cached_arrays

DATASETS = ("chains", "conformers")
CHAIN_ATOMS = 8
BOND, BOND_SPREAD = 1.5, 0.02
ANGLE_MODES, ANGLE_SPREAD = (110.0, 150.0), 3.0
DIHEDRAL_MODES, DIHEDRAL_SPREAD = (-60.0, 60.0, 180.0), 10.0
VALID_TOLERANCE = 0.1
NFE_RANGE = (1, 1000)
#: RDKit's ETKDG seeds every conformer alike when ``randomSeed`` is 0 (3,000 copies of one
#: structure were measured), so the pool's seed is 1.
POOL, POOL_SEED = 3000, 1
#: Samples whose pairwise RMSDs make the diversity.
DIVERSITY_SAMPLES = 200


@dataclass(frozen=True)
class Size:
    """Training, held-out and requested structures."""

    train: int
    held_out: int
    samples: int


SIZES = {
    "small": Size(train=2000, held_out=500, samples=200),
    "paper": Size(train=10000, held_out=2000, samples=2000),
}


# ---- geometry ----------------------------------------------------------------------------------


def angles(x: np.ndarray, triples: np.ndarray) -> np.ndarray:
    """Angles (degrees) i-j-k of structures (n, atoms, 3) at each triple: (n, triples)."""
    u = x[:, triples[:, 0]] - x[:, triples[:, 1]]
    v = x[:, triples[:, 2]] - x[:, triples[:, 1]]
    cos = np.sum(u * v, -1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def dihedrals(x: np.ndarray, quads: np.ndarray) -> np.ndarray:
    """Dihedral angles (degrees, (−180, 180]) i-j-k-l of structures at each quadruple."""
    b0 = x[:, quads[:, 0]] - x[:, quads[:, 1]]
    b1 = x[:, quads[:, 2]] - x[:, quads[:, 1]]
    b2 = x[:, quads[:, 3]] - x[:, quads[:, 2]]
    b1 = b1 / np.linalg.norm(b1, axis=-1, keepdims=True)
    v = b0 - np.sum(b0 * b1, -1, keepdims=True) * b1
    w = b2 - np.sum(b2 * b1, -1, keepdims=True) * b1
    x_part = np.sum(v * w, -1)
    y_part = np.sum(np.cross(b1, v) * w, -1)
    return np.degrees(np.arctan2(y_part, x_part))


def kabsch_rmsd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RMSD between structures a[i] and b[i] (…, atoms, 3) after centring and the best rotation
    (Kabsch), for every leading index."""
    a = a - a.mean(-2, keepdims=True)
    b = b - b.mean(-2, keepdims=True)
    h = np.swapaxes(a, -1, -2) @ b
    u, s, vt = np.linalg.svd(h)
    sign = np.sign(np.linalg.det(u @ vt))
    s[..., -1] *= sign
    squared = np.sum(a**2, (-1, -2)) + np.sum(b**2, (-1, -2)) - 2 * s.sum(-1)
    return np.sqrt(np.maximum(squared, 0.0) / a.shape[-2])


def place(a: np.ndarray, b: np.ndarray, c: np.ndarray, bond, angle, torsion) -> np.ndarray:
    """The atom d with |cd| = bond, angle b-c-d = ``angle`` and dihedral a-b-c-d = ``torsion``
    (radians), for arrays of atoms (the NeRF construction)."""
    bc = c - b
    bc /= np.linalg.norm(bc, axis=-1, keepdims=True)
    normal = np.cross(b - a, bc)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    m = np.stack([bc, np.cross(normal, bc), normal], axis=-1)
    local = np.stack(
        [-np.cos(angle), np.sin(angle) * np.cos(torsion), np.sin(angle) * np.sin(torsion)], -1
    )
    return c + bond[:, None] * np.einsum("nij,nj->ni", m, local)


def chains(rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` mini-molecule chains (count, 8, 3) (see the module docstring)."""
    n = CHAIN_ATOMS
    bonds = rng.normal(BOND, BOND_SPREAD, (count, n - 1))
    bend = rng.choice(ANGLE_MODES, (count, n - 2)) + rng.normal(0, ANGLE_SPREAD, (count, n - 2))
    twist = rng.choice(DIHEDRAL_MODES, (count, n - 3))
    twist = twist + rng.normal(0, DIHEDRAL_SPREAD, (count, n - 3))
    bend, twist = np.radians(bend), np.radians(twist)
    x = np.zeros((count, n, 3))
    x[:, 1, 0] = bonds[:, 0]
    x[:, 2] = x[:, 1] + bonds[:, 1, None] * np.stack(
        [-np.cos(bend[:, 0]), np.sin(bend[:, 0]), np.zeros(count)], -1
    )
    for i in range(3, n):
        x[:, i] = place(x[:, i - 3], x[:, i - 2], x[:, i - 1], bonds[:, i - 1], bend[:, i - 2],
                        twist[:, i - 3])  # fmt: skip
    x -= x.mean(axis=1, keepdims=True)
    turns = Rotation.random(count, random_state=rng).as_matrix()
    return np.einsum("nai,nji->naj", x, turns)


# ---- molecules ----------------------------------------------------------------------------------


def molecules() -> dict[str, str]:
    """The shipped SMILES (``data/molecules.txt``) and their names."""
    text = resources.files(__package__).joinpath("data", "molecules.txt").read_text("utf-8")
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    return {smiles: name for smiles, name in rows}


@dataclass(frozen=True)
class Topology:
    """A structure's bonds (pairs), bond angles (triples) and dihedrals (quadruples)."""

    bonds: np.ndarray
    triples: np.ndarray
    quads: np.ndarray
    smiles: str | None = None


def chain_topology() -> Topology:
    """The chain's consecutive pairs, triples and quadruples."""
    n = CHAIN_ATOMS
    return Topology(
        np.array([(i, i + 1) for i in range(n - 1)]),
        np.array([(i, i + 1, i + 2) for i in range(n - 2)]),
        np.array([(i, i + 1, i + 2, i + 3) for i in range(n - 3)]),
    )


def molecule_topology(smiles: str) -> Topology:
    """The heavy-atom bonds, bonded triples and bonded quadruples of ``smiles``."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    bonds = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in mol.GetBonds()]
    neighbours = {a.GetIdx(): [n.GetIdx() for n in a.GetNeighbors()] for a in mol.GetAtoms()}
    triples = [(i, j, k) for j in neighbours for i in neighbours[j] for k in neighbours[j] if i < k]
    quads = [
        (i, j, k, l)
        for j, k in bonds
        for i in neighbours[j]
        if i != k
        for l in neighbours[k]  # noqa: E741 (the fourth atom, as chemists name it)
        if l != j and l != i
    ]
    return Topology(np.array(bonds), np.array(triples), np.array(quads), smiles)


def pool_split(size: Size) -> Size:
    """The sizes for conformers: the pool holds :data:`POOL` distinct conformers, so at most a
    fifth of it is held out and the rest (up to ``size.train``) trains; samples are unchanged."""
    held_out = min(size.held_out, POOL // 5)
    return Size(train=min(size.train, POOL - held_out), held_out=held_out, samples=size.samples)


@functools.cache
def conformer_pool(smiles: str) -> np.ndarray:
    """:data:`POOL` heavy-atom conformers of ``smiles`` (POOL, atoms, 3): ETKDG (seed
    :data:`POOL_SEED`), MMFF relaxation, centred and aligned to the first (cached on disk)."""
    import rdkit

    key = hashlib.sha256(f"{smiles}|{POOL}|{POOL_SEED}|{rdkit.__version__}".encode()).hexdigest()
    path = cache_dir("conformers") / f"{key[:16]}.npz"
    return cached_arrays(path, lambda: {"pool": _embed(smiles)})["pool"]


def _embed(smiles: str) -> np.ndarray:
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    parameters = AllChem.ETKDGv3()
    parameters.randomSeed = POOL_SEED
    parameters.numThreads = 1
    ids = list(AllChem.EmbedMultipleConfs(mol, POOL, parameters))
    AllChem.MMFFOptimizeMoleculeConfs(mol, numThreads=1)
    heavy = [a.GetIdx() for a in mol.GetAtoms() if a.GetAtomicNum() > 1]
    pool = np.stack([mol.GetConformer(i).GetPositions()[heavy] for i in ids])
    pool -= pool.mean(axis=1, keepdims=True)
    return align(pool, pool[0])


def align(x: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Every centred structure of ``x`` rotated onto the centred ``reference`` (Kabsch)."""
    h = np.swapaxes(x, -1, -2) @ reference
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(u @ vt))
    u[..., :, -1] *= d[..., None]
    return x @ (u @ vt)


def rdkit_accepts(smiles: str, x: np.ndarray) -> np.ndarray:
    """Whether RDKit's ``DetermineConnectivity`` finds exactly the molecule's heavy-atom bonds
    from each structure's coordinates."""
    from rdkit import Chem
    from rdkit.Chem import rdDetermineBonds
    from rdkit.Geometry import Point3D

    mol = Chem.MolFromSmiles(smiles)
    expected = {tuple(sorted((b.GetBeginAtomIdx(), b.GetEndAtomIdx()))) for b in mol.GetBonds()}
    bare = Chem.RWMol()
    for atom in mol.GetAtoms():
        bare.AddAtom(Chem.Atom(atom.GetAtomicNum()))
    accepted = np.zeros(len(x), dtype=bool)
    for index, structure in enumerate(x):
        probe = Chem.Mol(bare)
        conformer = Chem.Conformer(probe.GetNumAtoms())
        for atom, (px, py, pz) in enumerate(structure):
            conformer.SetAtomPosition(atom, Point3D(float(px), float(py), float(pz)))
        probe.AddConformer(conformer)
        rdDetermineBonds.DetermineConnectivity(probe)
        found = {tuple(sorted((b.GetBeginAtomIdx(), b.GetEndAtomIdx()))) for b in probe.GetBonds()}
        accepted[index] = found == expected
    return accepted


# ---- the environment ----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Instance:
    """What scoring needs: the held-out structures, the topology and the reference bond
    lengths."""

    held_out: np.ndarray
    topology: Topology
    bond_lengths: np.ndarray


def bond_lengths(x: np.ndarray, bonds: np.ndarray) -> np.ndarray:
    """Bond lengths of structures (n, atoms, 3): (n, bonds)."""
    return np.linalg.norm(x[:, bonds[:, 0]] - x[:, bonds[:, 1]], axis=-1)


def diversity(x: np.ndarray) -> float:
    """Mean pairwise Kabsch RMSD of the first :data:`DIVERSITY_SAMPLES` structures."""
    x = x[:DIVERSITY_SAMPLES]
    i, j = np.triu_indices(len(x), 1)
    return float(np.mean(kabsch_rmsd(x[i], x[j])))


class MoleculeGeneration(MethodEnv):
    """3-D structure generation under a budget of network evaluations (IDFlow).

    ## Description

    ``reset(seed)`` draws the training structures (and held-out ones the agent never sees); the
    agent learns their distribution and answers ``samples`` structures generated with at most
    ``nfe`` network evaluations each.

    ## Observation space

    ``Dict``: ``train`` ``Box(n_train, atoms, 3)``, ``nfe`` ``Box(1, ∞, (1,))``.

    ## Action space

    ``Box(samples, atoms, 3)``: the generated structures.

    ## Rewards

    The fraction of valid samples (every bond within 0.1 of its reference length). Metrics:
    ``valid_fraction``, ``bond_error`` (mean |bond − reference|), ``angle_w1`` and
    ``dihedral_w1`` (Wasserstein-1, degrees, of the pooled bond-angle and dihedral values against
    the held-out structures'), ``diversity`` (mean pairwise RMSD after Kabsch alignment, of the
    first 200 samples) and ``held_out_diversity`` (the same of the held-out structures),
    ``nfe``; for conformers ``rdkit_valid``. A non-finite answer: 0 with
    ``info["invalid_action"]``.

    ## Episode end

    One step.

    ## Arguments

    ``dataset`` (``"chains"`` or ``"conformers"``), ``molecule`` (a SMILES, conformers only;
    default the first of :func:`molecules`), ``nfe`` (1–1000, default 10), ``size``
    (training/held-out structures and samples: ``"small"`` 2,000/500/200, ``"paper"``
    10,000/2,000/2,000; conformers come from a pool of 3,000 per molecule, so ``"paper"``
    trains on 2,400 and holds out 600 of them).
    """

    invalid_reward = 0.0

    def __init__(
        self,
        dataset: str = "chains",
        nfe: int = 10,
        molecule: str | None = None,
        size: str = "small",
    ):
        super().__init__(size)
        if dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
        low, high = NFE_RANGE
        if not isinstance(nfe, int) or not low <= nfe <= high:
            raise ValueError(f"nfe must be an int in [{low}, {high}], got {nfe!r}")
        if molecule is not None and dataset != "conformers":
            raise ValueError("molecule is for dataset 'conformers' only")
        self.dataset, self.nfe = dataset, nfe
        self.settings = SIZES[size] if dataset == "chains" else pool_split(SIZES[size])
        if dataset == "chains":
            self.topology, atoms = chain_topology(), CHAIN_ATOMS
        else:
            smiles = molecule or next(iter(molecules()))
            if molecule is not None:
                from rdkit import Chem

                if Chem.MolFromSmiles(molecule) is None:
                    raise ValueError(f"molecule {molecule!r} is not a SMILES RDKit can read")
            self.topology = molecule_topology(smiles)
            atoms = len(conformer_pool(smiles)[0])
        s = self.settings
        self.observation_space = spaces.Dict(
            {
                "train": spaces.Box(-np.inf, np.inf, (s.train, atoms, 3), np.float64),
                "nfe": spaces.Box(1.0, np.inf, (1,), np.float64),
            }
        )
        self.action_space = spaces.Box(-np.inf, np.inf, (s.samples, atoms, 3), np.float64)

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, Any], Instance]:
        s = self.settings
        if self.dataset == "chains":
            structures = chains(rng, s.train + s.held_out)
            reference = np.full(len(self.topology.bonds), BOND)
        else:
            pool = conformer_pool(self.topology.smiles)
            structures = pool[rng.permutation(len(pool))[: s.train + s.held_out]]
            reference = bond_lengths(pool, self.topology.bonds).mean(axis=0)
        train, held_out = structures[: s.train], structures[s.train :]
        observation = {"train": train, "nfe": np.array([float(self.nfe)])}
        return observation, Instance(held_out, self.topology, reference)

    def score(self, solution: np.ndarray) -> tuple[float, dict[str, float]]:
        instance: Instance = self.instance
        topology = instance.topology
        error = np.abs(bond_lengths(solution, topology.bonds) - instance.bond_lengths)
        valid = float(np.mean(np.all(error <= VALID_TOLERANCE, axis=1)))
        held = instance.held_out
        metrics = {
            "valid_fraction": valid,
            "bond_error": float(error.mean()),
            "angle_w1": float(stats.wasserstein_distance(
                angles(solution, topology.triples).ravel(), angles(held, topology.triples).ravel()
            )),
            "dihedral_w1": float(stats.wasserstein_distance(
                dihedrals(solution, topology.quads).ravel(), dihedrals(held, topology.quads).ravel()
            )),
            "diversity": diversity(solution),
            "held_out_diversity": diversity(held),
            "nfe": float(self.nfe),
        }  # fmt: skip
        if topology.smiles is not None:
            metrics["rdkit_valid"] = float(np.mean(rdkit_accepts(topology.smiles, solution)))
        return valid, metrics
