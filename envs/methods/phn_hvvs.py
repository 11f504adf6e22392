"""Pareto front learning with a hypernetwork, as a task: one decision vector per test ray.

Chen, Wu, Liu, He, Ong, Jin, Lao, Yu, "Voronoi-grid-based Pareto Front Learning and Its
Application to Collaborative Federated Learning", ICML 2025 (``docs/methods.md``). A Pareto front
learner (the paper's PHN-HVVS and its baselines, :mod:`omnigym.agents.methods.phn_hvvs`) sees one
multi-objective problem and a Das–Dennis set of test rays (preference vectors on the simplex)
and answers one decision vector per ray; the answer is scored by the hypervolume of the rays'
loss vectors.

Problems (``problem``; J objectives, d decision variables, bounds of every variable):

- ``fonseca_fleming`` (J = 2, d = 10, [−4, 4]): f₁,₂(x) = 1 − exp(−Σᵢ (xᵢ − cᵢ ∓ 1/√d)²), a
  concave front (1 − e^{−(s−1)²}, 1 − e^{−(s+1)²}), s ∈ [−1, 1];
- ``convex_quadratic`` (J = 2, d = 10, [−4, 4]): f_j(x) = ‖x − a_j‖² / ‖a₁ − a₂‖² with
  ‖a₁ − a₂‖ = 2, a convex front (t², (1 − t)²), t ∈ [0, 1];
- ``dtlz2`` (J = 3 or 5, d = J + 9, [0, 1]): Deb et al.'s DTLZ2 whose distance variables
  x_J … x_d have their optimum at cᵢ instead of ½, a concave front (the unit sphere's orthant);
- ``regression`` (J = 4 … 7, d = p = 10 weights, [−4, 4]): J linear-Gaussian regression tasks
  (one data set per task, as the clients of the paper's federated setting) sharing one linear
  model w. Task j has x ∼ N(0, I_p), y = xᵀβ_j + ε, ε ∼ N(0, σ²), σ = ½, and
  β_j = β₀ + u_j/√2 with u₁ … u_J orthonormal, so the tasks conflict pairwise alike. A method
  sees the training sets; the score uses the population losses ℓ_j(w) = ‖w − β_j‖² + σ², whose
  front is {σ² + ½‖λ − e_j‖² : λ on the simplex} (the minimisers of Σ_j λ_j ℓ_j are Σ_j λ_j β_j).

What ``reset(seed)`` draws: for the analytic problems the position of the Pareto set in the
decision space (c, or a₁, a₂, or the distance variables' optima), so a method must learn it
from the observation while the front, the test rays and the reference point stay fixed; for
``regression`` the task parameters (β₀, the u_j) and the training sets. Every front therefore
has a fixed ideal and nadir point and the reference point is ideal + 1.1·(nadir − ideal).

The losses an agent can compute from the observation are :meth:`Problem.losses` (for
``regression`` the training mean squared errors), written once for NumPy arrays and torch
tensors alike (``xp`` is the array module).

Departures from the paper: the problems are small stand-ins for the paper's (the
paper's real-data multi-task and federated benchmarks are replaced by the linear-Gaussian
tasks); the seed moves the Pareto set of the analytic problems, which the paper keeps fixed, so
that episodes are distinct instances with one true front; the regression score uses the
population losses (exact for linear-Gaussian data) rather than a held-out sample; and
``cell_area_variance`` is computed on the answer (the Voronoi cells, on the simplex, of the loss
vectors' normalised directions (ℓ − ideal)/Σ(ℓ − ideal)) since the environment never sees a
method's training rays. Hypervolume and IGD are pymoo's indicators; the Das–Dennis rays are
pymoo's reference directions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from gymnasium import spaces
from pymoo.indicators.hv import HV
from pymoo.indicators.igd import IGD
from pymoo.util.ref_dirs import get_reference_directions

from .core import MethodEnv

PROBLEMS = ("fonseca_fleming", "convex_quadratic", "dtlz2", "regression")
#: The objective counts each problem allows; the first is the default.
OBJECTIVES = {
    "fonseca_fleming": (2,),
    "convex_quadratic": (2,),
    "dtlz2": (3, 5),
    "regression": (5, 4, 6, 7),
}
#: Das–Dennis partitions of the test rays per (size, J): 11 / 51 rays in 2-D, 15 / 91 in 3-D,
#: 20 / 84 at J = 4, 15 / 126 at J = 5, 21 / 126 at J = 6, 28 / 84 at J = 7.
PARTITIONS = {
    "small": {2: 10, 3: 4, 4: 3, 5: 2, 6: 2, 7: 2},
    "paper": {2: 50, 3: 12, 4: 6, 5: 5, 6: 4, 7: 3},
}
#: The reference point is ideal + REFERENCE_MARGIN·(nadir − ideal).
REFERENCE_MARGIN = 1.1
#: Monte Carlo points on the simplex for cell areas (20k, as the paper's GA), drawn once per J
#: from this seed.
CELL_POINTS, CELL_SEED = 20_000, 0
#: Points of the true front that IGD measures against, per J (about this many).
FRONT_POINTS = 500
N_VARIABLES = 10  # d of Fonseca–Fleming and the quadratic pair; p of the regression
DTLZ2_DISTANCE_VARIABLES = 10  # k of DTLZ2 (d = J + k − 1)
REGRESSION_NOISE = 0.5  # σ
#: Training samples per regression task, per size.
REGRESSION_SAMPLES = {"small": 64, "paper": 256}


def simplex_points(count: int, n_obj: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` points drawn uniformly from the probability simplex in R^``n_obj``."""
    return rng.dirichlet(np.ones(n_obj), size=count)


@cache
def cell_points(n_obj: int) -> np.ndarray:
    """The fixed Monte Carlo points (:data:`CELL_POINTS` of them) that measure cell areas."""
    points = simplex_points(CELL_POINTS, n_obj, np.random.default_rng(CELL_SEED))
    points.flags.writeable = False
    return points


def nearest_site(sites: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The index of each point's nearest site (its Voronoi cell; ties go to the lower index)."""
    distances = points @ sites.T  # ‖p − s‖² less ‖p‖², in place: the GA calls this 2000 times
    distances *= -2.0
    distances += (sites**2).sum(1)
    return distances.argmin(axis=1)


def cell_fractions(sites: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The fraction of ``points`` in each site's Voronoi cell (Monte Carlo cell areas)."""
    return np.bincount(nearest_site(sites, points), minlength=len(sites)) / len(points)


def cell_area_variance(sites: np.ndarray, points: np.ndarray) -> float:
    """Var(p) of the cell-area fractions p, the quantity the paper's GA minimises."""
    return float(np.var(cell_fractions(sites, points)))


def das_dennis(n_obj: int, partitions: int) -> np.ndarray:
    """pymoo's Das–Dennis reference directions (rows on the simplex)."""
    return get_reference_directions("das-dennis", n_obj, n_partitions=partitions)


def _front_partitions(n_obj: int) -> int:
    """The fewest Das–Dennis partitions giving at least :data:`FRONT_POINTS` directions."""
    partitions = 1
    while len(das_dennis(n_obj, partitions)) < FRONT_POINTS:
        partitions += 1
    return partitions


@dataclass(frozen=True)
class Problem:
    """One multi-objective problem family at one objective count (see the module docstring).

    ``parameters`` are the shapes of the observed arrays a draw adds to the observation;
    ``ideal`` and ``nadir`` bound its true front.
    """

    name: str
    n_obj: int
    n_var: int
    lower: float
    upper: float
    ideal: tuple[float, ...]
    nadir: tuple[float, ...]

    @property
    def reference_point(self) -> np.ndarray:
        ideal, nadir = np.array(self.ideal), np.array(self.nadir)
        return ideal + REFERENCE_MARGIN * (nadir - ideal)

    def parameter_spaces(self, size: str) -> dict[str, spaces.Box]:
        raise NotImplementedError

    def draw(self, rng: np.random.Generator, size: str) -> tuple[dict[str, np.ndarray], Any]:
        """``(observed parameters, hidden parameters)`` of one instance."""
        raise NotImplementedError

    def losses(self, observed: dict[str, Any], x: Any, xp: Any = np) -> Any:
        """The loss vectors (…, J) of decisions ``x`` (…, d) that the observation defines."""
        raise NotImplementedError

    def true_losses(self, observed: dict[str, Any], hidden: Any, x: np.ndarray) -> np.ndarray:
        """The loss vectors the score uses (the observed losses, unless overridden)."""
        return self.losses(observed, x)

    def front(self) -> np.ndarray:
        """About :data:`FRONT_POINTS` points of the true front (the IGD reference)."""
        raise NotImplementedError


class FonsecaFleming(Problem):
    """Fonseca–Fleming with its Pareto set centred on the drawn c."""

    def parameter_spaces(self, size: str) -> dict[str, spaces.Box]:
        return {"center": spaces.Box(-1.0, 1.0, (self.n_var,), np.float64)}

    def draw(self, rng: np.random.Generator, size: str) -> tuple[dict[str, np.ndarray], Any]:
        return {"center": rng.uniform(-1.0, 1.0, self.n_var)}, None

    def losses(self, observed: dict[str, Any], x: Any, xp: Any = np) -> Any:
        z = x - observed["center"]
        offset = 1.0 / np.sqrt(self.n_var)
        first = 1.0 - xp.exp(-((z - offset) ** 2).sum(-1))
        second = 1.0 - xp.exp(-((z + offset) ** 2).sum(-1))
        return xp.stack([first, second], -1)

    def front(self) -> np.ndarray:
        s = np.linspace(-1.0, 1.0, FRONT_POINTS)
        return np.stack([1.0 - np.exp(-((s - 1.0) ** 2)), 1.0 - np.exp(-((s + 1.0) ** 2))], 1)


#: ‖a₁ − a₂‖ of the convex quadratic pair.
QUADRATIC_SEPARATION = 2.0


class ConvexQuadratic(Problem):
    """Two isotropic quadratics with drawn minimisers a₁, a₂ two apart."""

    def parameter_spaces(self, size: str) -> dict[str, spaces.Box]:
        return {"centers": spaces.Box(-2.0, 2.0, (2, self.n_var), np.float64)}

    def draw(self, rng: np.random.Generator, size: str) -> tuple[dict[str, np.ndarray], Any]:
        middle = rng.uniform(-1.0, 1.0, self.n_var)
        direction = rng.standard_normal(self.n_var)
        half = 0.5 * QUADRATIC_SEPARATION * direction / np.linalg.norm(direction)
        return {"centers": np.stack([middle + half, middle - half])}, None

    def losses(self, observed: dict[str, Any], x: Any, xp: Any = np) -> Any:
        squared = ((x[..., None, :] - observed["centers"]) ** 2).sum(-1)
        return squared / QUADRATIC_SEPARATION**2

    def front(self) -> np.ndarray:
        t = np.linspace(0.0, 1.0, FRONT_POINTS)
        return np.stack([t**2, (1.0 - t) ** 2], 1)


class DTLZ2(Problem):
    """DTLZ2 with the distance variables' optima drawn in [0.25, 0.75]."""

    def parameter_spaces(self, size: str) -> dict[str, spaces.Box]:
        shape = (self.n_var - self.n_obj + 1,)
        return {"center": spaces.Box(0.25, 0.75, shape, np.float64)}

    def draw(self, rng: np.random.Generator, size: str) -> tuple[dict[str, np.ndarray], Any]:
        return {"center": rng.uniform(0.25, 0.75, self.n_var - self.n_obj + 1)}, None

    def losses(self, observed: dict[str, Any], x: Any, xp: Any = np) -> Any:
        m = self.n_obj
        distance = ((x[..., m - 1 :] - observed["center"]) ** 2).sum(-1)
        angles = x[..., : m - 1] * (np.pi / 2)
        ones = xp.ones_like(distance[..., None])
        # f_J, …, f_1 = P₀ sin θ₁, P₁ sin θ₂, …, P_{J−2} sin θ_{J−1}, P_{J−1} with P_k the
        # product of the first k cosines.
        products = xp.concatenate([ones, xp.cumprod(xp.cos(angles), -1)], -1)
        sines = xp.concatenate([xp.sin(angles), ones], -1)
        return xp.flip(products * sines, (-1,)) * (1.0 + distance[..., None])

    def front(self) -> np.ndarray:
        directions = das_dennis(self.n_obj, _front_partitions(self.n_obj))
        return directions / np.linalg.norm(directions, axis=1, keepdims=True)


class Regression(Problem):
    """J linear-Gaussian regression tasks sharing one linear model (hidden: the β_j)."""

    def parameter_spaces(self, size: str) -> dict[str, spaces.Box]:
        n = REGRESSION_SAMPLES[size]
        return {
            "features": spaces.Box(-np.inf, np.inf, (self.n_obj, n, self.n_var), np.float64),
            "targets": spaces.Box(-np.inf, np.inf, (self.n_obj, n), np.float64),
        }

    def draw(self, rng: np.random.Generator, size: str) -> tuple[dict[str, np.ndarray], Any]:
        n, p, tasks = REGRESSION_SAMPLES[size], self.n_var, self.n_obj
        base = 0.5 * rng.standard_normal(p)
        orthonormal, _ = np.linalg.qr(rng.standard_normal((p, tasks)))
        weights = base[None, :] + orthonormal.T / np.sqrt(2.0)  # β_j, one row per task
        features = rng.standard_normal((tasks, n, p))
        noise = REGRESSION_NOISE * rng.standard_normal((tasks, n))
        targets = np.einsum("jnp,jp->jn", features, weights) + noise
        return {"features": features, "targets": targets}, weights

    def losses(self, observed: dict[str, Any], x: Any, xp: Any = np) -> Any:
        predictions = xp.einsum("jnp,...p->...jn", observed["features"], x)
        return ((predictions - observed["targets"]) ** 2).mean(-1)

    def true_losses(self, observed: dict[str, Any], hidden: Any, x: np.ndarray) -> np.ndarray:
        return ((x[..., None, :] - hidden) ** 2).sum(-1) + REGRESSION_NOISE**2

    def front(self) -> np.ndarray:
        mixtures = das_dennis(self.n_obj, _front_partitions(self.n_obj))
        gaps = mixtures[:, None, :] - np.eye(self.n_obj)[None, :, :]
        return REGRESSION_NOISE**2 + 0.5 * (gaps**2).sum(-1)


def make_problem(name: str, n_obj: int) -> Problem:
    """The :class:`Problem` called ``name`` with ``n_obj`` objectives (checked by the env)."""
    if name == "fonseca_fleming":
        nadir = 1.0 - np.exp(-4.0)
        return FonsecaFleming(name, 2, N_VARIABLES, -4.0, 4.0, (0.0, 0.0), (nadir, nadir))
    if name == "convex_quadratic":
        return ConvexQuadratic(name, 2, N_VARIABLES, -4.0, 4.0, (0.0, 0.0), (1.0, 1.0))
    if name == "dtlz2":
        n_var = n_obj + DTLZ2_DISTANCE_VARIABLES - 1
        return DTLZ2(name, n_obj, n_var, 0.0, 1.0, (0.0,) * n_obj, (1.0,) * n_obj)
    low = REGRESSION_NOISE**2
    return Regression(name, n_obj, N_VARIABLES, -4.0, 4.0, (low,) * n_obj, (low + 1.0,) * n_obj)


@cache
def _true_front(name: str, n_obj: int) -> np.ndarray:
    return make_problem(name, n_obj).front()


class ParetoFrontLearning(MethodEnv):
    """Answer one decision vector per test ray of a multi-objective problem.

    ## Description

    One step. ``reset`` draws an instance of the chosen problem (module docstring) and returns
    the test rays, the reference point and the problem's observed parameters; ``step`` takes one
    decision vector per test ray and scores the set of their loss vectors by its hypervolume.
    ``env.problem`` (a :class:`Problem`) is public: its ``losses`` computes, from the
    observation, the losses a method trains on.

    ## Action space

    ``Box(lower, upper, (R, d), float64)``: row i is the decision vector (for ``regression``,
    the model weights) answered for test ray i; [−4, 4] except ``dtlz2``'s [0, 1]. R is the
    number of Das–Dennis test rays (:data:`PARTITIONS`), d the problem's dimension.

    ## Observation space

    ``Dict`` with ``rays`` ``Box(0, 1, (R, J))`` (the test rays), ``reference_point``
    ``Box(0, inf, (J,))`` and the problem's parameters: ``center`` (Fonseca–Fleming: c in
    [−1, 1]^d; DTLZ2: the distance variables' optima in [0.25, 0.75]^(d−J+1)), ``centers``
    (quadratic pair: a₁, a₂, shape (2, d)), or ``features`` (J, n, p) and ``targets`` (J, n)
    (regression: each task's training set, n = 64 small / 256 paper).

    ## Rewards

    The hypervolume (pymoo) of the R loss vectors with respect to ``reference_point``.
    ``info["metrics"]``: ``hv``, ``igd`` (pymoo's, to about 500 points of the true front) and
    ``cell_area_variance`` (Var of the Voronoi-cell area fractions, on the simplex, of the loss
    vectors' normalised directions; 0 when the answer covers the directions evenly). A
    non-finite answer scores 0 with ``info["invalid_action"]``.

    ## Starting state

    Each ``reset(seed)`` draws the instance from ``self.np_random``: the Pareto set's position
    (analytic problems) or the regression tasks and their training sets. The test rays, the
    reference point and the front are fixed by ``problem``, ``n_obj`` and ``size``.

    ## Episode end

    After the one step (``terminated=True``).

    ## Arguments

    ``problem`` (one of :data:`PROBLEMS`, default ``"fonseca_fleming"``), ``n_obj`` (the
    objective count: 2 for the 2-D problems, 3 or 5 for ``dtlz2``, 4 … 7 for ``regression``;
    default the problem's first in :data:`OBJECTIVES`) and ``size`` (``"small"``: 11 to 28 test
    rays; ``"paper"``: 51 to 126 rays and 256 training samples per regression task).
    """

    invalid_reward = 0.0

    def __init__(
        self, size: str = "small", problem: str = "fonseca_fleming", n_obj: int | None = None
    ):
        super().__init__(size)
        if problem not in PROBLEMS:
            raise ValueError(f"problem must be one of {PROBLEMS}, got {problem!r}")
        allowed = OBJECTIVES[problem]
        if n_obj is None:
            n_obj = allowed[0]
        if isinstance(n_obj, bool) or not isinstance(n_obj, int) or n_obj not in allowed:
            raise ValueError(
                f"n_obj must be one of {sorted(allowed)} for problem {problem!r}, got {n_obj!r}"
            )
        self.problem = make_problem(problem, n_obj)
        self.rays = das_dennis(n_obj, PARTITIONS[self.size][n_obj])
        self.rays.flags.writeable = False
        count, dimension = len(self.rays), self.problem.n_var
        self.observation_space = spaces.Dict(
            {
                "rays": spaces.Box(0.0, 1.0, (count, n_obj), np.float64),
                "reference_point": spaces.Box(0.0, np.inf, (n_obj,), np.float64),
                **self.problem.parameter_spaces(self.size),
            }
        )
        self.action_space = spaces.Box(
            self.problem.lower, self.problem.upper, (count, dimension), np.float64
        )
        self._hypervolume = HV(ref_point=self.problem.reference_point)
        self._igd = IGD(_true_front(problem, n_obj))

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], Any]:
        observed, hidden = self.problem.draw(rng, self.size)
        observation = {
            "rays": np.array(self.rays),
            "reference_point": self.problem.reference_point,
            **observed,
        }
        # The instance keeps its own copies: an agent may write into its observation.
        return observation, ({key: value.copy() for key, value in observed.items()}, hidden)

    def score(self, solution: np.ndarray) -> tuple[float, dict[str, float]]:
        observed, hidden = self.instance
        losses = self.problem.true_losses(observed, hidden, solution)
        hv = float(self._hypervolume(losses))
        metrics = {
            "hv": hv,
            "igd": float(self._igd(losses)),
            "cell_area_variance": self.direction_cell_variance(losses),
        }
        return hv, metrics

    def direction_cell_variance(self, losses: np.ndarray) -> float:
        """``cell_area_variance`` of loss vectors (see the class docstring)."""
        excess = np.clip(losses - np.array(self.problem.ideal), 0.0, None)
        totals = excess.sum(1, keepdims=True)
        uniform = np.full_like(excess, 1.0 / excess.shape[1])
        directions = np.where(totals > 0, excess / np.where(totals > 0, totals, 1.0), uniform)
        return cell_area_variance(directions, cell_points(self.problem.n_obj))
