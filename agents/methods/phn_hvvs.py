"""Pareto hypernetworks on ``Methods/ParetoFrontLearning-v0``: PHN-HVVS and its baselines.

Chen, Wu, Liu, He, Ong, Jin, Lao, Yu, "Voronoi-grid-based Pareto Front Learning and Its
Application to Collaborative Federated Learning", ICML 2025 (``docs/methods.md``).

Every agent trains a hypernetwork h(r; φ), an MLP from a ray r on the simplex to a decision
vector, from scratch on the observed instance (the env's public ``problem.losses`` on the
observation) and answers h at the test rays. Each training step draws n = 16 rays, evaluates
their loss vectors ℓ₁ … ℓ_n as one batch and takes an Adam step on the agent's loss:

- ``phn-hvvs`` (:class:`PHNHVVSAgent`), the paper's method: one ray per Voronoi cell of the
  simplex, the cells' 16 sites found once by a genetic algorithm (:func:`voronoi_grid`: 20
  individuals, 100 generations, Monte Carlo cell areas from 20k points, fitness
  1/(1 + Var(p))², tournaments of 3, arithmetic crossover, zero-sum Gaussian mutation σ = 0.05,
  elitism; cached per (n, J) in the process). Loss Σ_j ⟨w_j, ℓ_j⟩ + λ Σ_j dist(ℓ_j, r_j + t·1)
  with w_j the unit-normalised hypervolume gradient of ℓ_j within its non-dominated front
  (:func:`hypervolume_weights`, reference max(ref, 1.1·max ℓ); closed form in 2-D,
  Monte Carlo for J ≥ 3) and the distance to the line through r_j along (1, …, 1);
- ``phn-hvi`` (:class:`PHNHVIAgent`, Hoang et al., AAAI 2023): uniform random rays, the same
  hypervolume weights, and a cosine penalty −λ Σ_j cos(ℓ_j, r_j);
- ``phn-ls`` (:class:`PHNLSAgent`, Navon et al., ICLR 2021): Dirichlet(0.2) rays and linear
  scalarisation Σ_j ⟨r_j, ℓ_j⟩, which can only reach the convex parts of a front;
- ``phn-random-rays`` (:class:`PHNRandomRaysAgent`): an ablation, PHN-HVVS's loss with uniform
  random rays in place of one ray per Voronoi cell.

λ follows our reading of the paper: 5 in 2-D, 4 for DTLZ2 (the paper's other value for its toy
problems) and 0.001 for the regression tasks (the value of the paper's multi-task code); PHN-HVI
uses the same λ. The two penalties place a perfect answer at different points of a front: the line
through r along (1, …, 1) pulls the Das–Dennis test rays towards the middle of DTLZ2's sphere, where
their exact points have a lower hypervolume than the cosine's r/‖r‖ (0.60 against 0.64 at J = 3,
0.86 against 1.07 at J = 5, small size), so PHN-HVI has the higher ceiling there; the claims checker
(:mod:`omnigym.scenarios.claims.phn_hvvs`) therefore checks "HVVS ≥ HVI at many objectives" on the
regression tasks (the paper's multi-task setting, λ = 0.001) and records DTLZ2 at J = 5 beside it.

Departures from the paper: rays, training and the GA are sized for a CPU (16 rays per step,
1000 Adam steps in 2-D and 1500 beyond, a 100-wide two-hidden-layer MLP whose output is
squashed into the bounds by a sigmoid (:class:`Hypernetwork`), 128 Monte Carlo samples per
hypervolume-gradient face); the GA keeps one fixed set of Monte Carlo points, uniform on the
simplex, for every fitness evaluation (the paper redraws normalised uniform-cube points each
time), makes one child per individual per generation from two tournament winners and keeps the
best of parents and children (the paper's code re-pairs fitness values with the wrong
individuals there), and moves each site by a zero-sum step cut back at the simplex's boundary.
A point whose hypervolume gradient vanishes (a duplicate) gets uniform weights 1/√J. PHN-HVI's
warm-up phase is left out, and all agents share the training budget. PHN-EPO and COSMOS are not
included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import torch
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting
from threadpoolctl import threadpool_limits
from torch import nn

from omnigym.envs.methods.phn_hvvs import (
    cell_area_variance,
    cell_points,
    nearest_site,
    simplex_points,
)
from omnigym.threads import one_torch_thread

#: Margin of the training reference point over the worst loss (the paper's 1.1·max ℓ).
DYNAMIC_REFERENCE = 1.1
#: λ per problem name (the paper's values), for the line-distance and cosine penalties.
PENALTIES = {"fonseca_fleming": 5.0, "convex_quadratic": 5.0, "dtlz2": 4.0, "regression": 0.001}
#: Training steps per objective count (2-D problems train in seconds, J = 5 in under 30 s).
STEPS = {2: 1000, 3: 1500, 4: 1500, 5: 1500, 6: 1500, 7: 1500}


# ---- hypervolume gradients ---------------------------------------------------------------------


def hypervolume_gradient_2d(points: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """∂HV/∂ℓ of a mutually non-dominated set of 2-D loss vectors, in closed form.

    Sorted by ℓ₁ ascending (so ℓ₂ descending), HV = Σ_i (x_{i+1} − x_i)(r₂ − y_i) with
    x_{n+1} = r₁, hence ∂HV/∂x_i = y_i − y_{i−1} (y₀ = r₂) and ∂HV/∂y_i = −(x_{i+1} − x_i).
    """
    order = np.lexsort((points[:, 1], points[:, 0]))
    x, y = points[order, 0], points[order, 1]
    gradient = np.empty_like(points, dtype=np.float64)
    gradient[order, 0] = y - np.concatenate([[reference[1]], y[:-1]])
    gradient[order, 1] = -(np.concatenate([x[1:], [reference[0]]]) - x)
    return gradient


def hypervolume_gradient_mc(
    points: np.ndarray, reference: np.ndarray, rng: np.random.Generator, samples: int
) -> np.ndarray:
    """∂HV/∂ℓ of a mutually non-dominated set of J-D loss vectors, by Monte Carlo.

    ∂HV/∂ℓ_ik is minus the (J−1)-volume of the face z_k = ℓ_ik of the region only point i
    dominates: ``samples`` uniform points of the face's box [ℓ_i, ref] (one draw shared by
    every i and k), of which the fraction no other point dominates, times the box's volume.
    """
    count, n_obj = points.shape
    span = reference - points
    uniform = rng.random((samples, n_obj))
    boxes = points[:, None, :] + uniform[None, :, :] * span[:, None, :]  # (i, sample, m)
    fails = points[None, None, :, :] > boxes[:, :, None, :]  # (i, sample, q, m): q_m > z_m
    # On face k, z_k = ℓ_ik: q dominates z when q_k ≤ ℓ_ik and q fails no other coordinate.
    off_face = fails.sum(-1)[..., None] - fails  # (i, sample, q, k)
    below = points[None, :, :] <= points[:, None, :]  # (i, q, k)
    below &= ~np.eye(count, dtype=bool)[:, :, None]  # a point never excludes its own region
    dominated = (off_face == 0) & below[:, None, :, :]
    exclusive = 1.0 - dominated.any(axis=2).mean(axis=1)  # (i, k)
    area = np.prod(np.where(np.eye(n_obj, dtype=bool), 1.0, span[:, None, :]), axis=-1)
    return -area * exclusive


def hypervolume_gradient(
    points: np.ndarray,
    reference: np.ndarray,
    rng: np.random.Generator | None = None,
    samples: int = 128,
) -> np.ndarray:
    """∂HV/∂ℓ of a non-dominated set: closed form in 2-D, Monte Carlo (``rng``) for J ≥ 3."""
    if points.shape[1] == 2:
        return hypervolume_gradient_2d(points, reference)
    if rng is None:
        raise ValueError("the Monte Carlo hypervolume gradient (J >= 3) needs an rng")
    return hypervolume_gradient_mc(points, reference, rng, samples)


def hypervolume_weights(
    losses: np.ndarray,
    reference: np.ndarray,
    rng: np.random.Generator | None = None,
    samples: int = 128,
) -> np.ndarray:
    """w_j: each loss vector's unit-normalised −∂HV/∂ℓ_j within its own non-dominated front.

    The reference is max(``reference``, 1.1·max ℓ) so every point has a region to gain;
    a vanishing gradient (a duplicated point) gets uniform weights.
    """
    reference = np.maximum(reference, DYNAMIC_REFERENCE * losses.max(axis=0))
    weights = np.empty_like(losses, dtype=np.float64)
    for front in NonDominatedSorting().do(losses):
        weights[front] = -hypervolume_gradient(losses[front], reference, rng, samples)
    norms = np.linalg.norm(weights, axis=1, keepdims=True)
    uniform = np.full_like(weights, 1.0 / np.sqrt(losses.shape[1]))
    return np.where(norms > 0, weights / np.where(norms > 0, norms, 1.0), uniform)


# ---- the Voronoi grid of the simplex (the paper's genetic algorithm) ---------------------------


@dataclass(frozen=True)
class VoronoiGA:
    """The GA's settings (the paper's, see the module docstring); ``seed`` makes the grid a
    constant of the method."""

    population: int = 20
    generations: int = 100
    mc_points: int = 20_000
    tournament: int = 3
    mutation_std: float = 0.05
    seed: int = 1


@dataclass(frozen=True)
class VoronoiGrid:
    """The GA's best sites, its Monte Carlo points grouped by cell, and the variances."""

    sites: np.ndarray
    points: np.ndarray
    cells: tuple[np.ndarray, ...]  # the indices of the points in each non-empty cell
    variance: float  # Var(p) of the best sites, on the GA's points
    initial_population: np.ndarray  # the random sites the GA started from
    initial_variances: np.ndarray  # their Var(p), on the GA's points

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` rays, one per non-empty cell in turn, each uniform within its cell."""
        cells = [self.cells[i % len(self.cells)] for i in range(count)]
        return self.points[[cell[rng.integers(cell.size)] for cell in cells]]


def _mutate(sites: np.ndarray, rng: np.random.Generator, std: float) -> np.ndarray:
    """Move every site by a zero-sum Gaussian step, cut back where it would leave the simplex."""
    step = rng.normal(0.0, std, sites.shape)
    step -= step.mean(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        limits = np.where(step < 0, -sites / np.where(step < 0, step, -1.0), np.inf)
    moved = np.clip(sites + np.minimum(1.0, limits.min(-1, keepdims=True)) * step, 0.0, None)
    return moved / moved.sum(axis=-1, keepdims=True)


def _tournament(rng: np.random.Generator, fitness: np.ndarray, count: int, size: int) -> np.ndarray:
    """``count`` winners, each the fittest of ``size`` distinct random individuals."""
    entrants = np.argsort(rng.random((count, len(fitness))), axis=1)[:, :size]
    return entrants[np.arange(count), np.argmax(fitness[entrants], axis=1)]


def evolve_voronoi_sites(n_sites: int, n_obj: int, ga: VoronoiGA = VoronoiGA()) -> VoronoiGrid:
    """Run the GA for ``n_sites`` sites on the simplex in R^``n_obj`` (prefer
    :func:`voronoi_grid`, which caches it)."""
    rng = np.random.default_rng([ga.seed, n_sites, n_obj])
    points = simplex_points(ga.mc_points, n_obj, rng)

    def variances(population: np.ndarray) -> np.ndarray:
        return np.array([cell_area_variance(sites, points) for sites in population])

    population = simplex_points(ga.population * n_sites, n_obj, rng)
    population = population.reshape(ga.population, n_sites, n_obj)
    variance = variances(population)
    initial = population, variance
    for _ in range(ga.generations):
        fitness = 1.0 / (1.0 + variance) ** 2
        first = _tournament(rng, fitness, ga.population, ga.tournament)
        second = _tournament(rng, fitness, ga.population, ga.tournament)
        alpha = rng.random((ga.population, 1, 1))
        children = alpha * population[first] + (1.0 - alpha) * population[second]
        children = _mutate(children, rng, ga.mutation_std)
        pool = np.concatenate([population, children])
        pool_variance = np.concatenate([variance, variances(children)])
        keep = np.argsort(pool_variance, kind="stable")[: ga.population]  # elitism
        population, variance = pool[keep], pool_variance[keep]
    best = population[0]
    labels = nearest_site(best, points)
    cells = tuple(np.flatnonzero(labels == cell) for cell in np.unique(labels))
    return VoronoiGrid(best, points, cells, float(variance[0]), *initial)


@cache
def voronoi_grid(n_sites: int, n_obj: int) -> VoronoiGrid:
    """The GA's grid for (``n_sites``, ``n_obj``), computed once per process (a few seconds)."""
    # 2000 small matrix products: BLAS threads only contend on a shared CPU (tenfold slower).
    with threadpool_limits(limits=1, user_api="blas"):
        return evolve_voronoi_sites(n_sites, n_obj)


def grid_variances(n_sites: int, n_obj: int) -> dict[str, float]:
    """The GA's best sites and its random initial sites, their cell-area variance measured on
    the environment's own Monte Carlo points (independent of the GA's)."""
    grid = voronoi_grid(n_sites, n_obj)
    points = cell_points(n_obj)
    random_sites = [cell_area_variance(sites, points) for sites in grid.initial_population]
    return {
        "ga": cell_area_variance(grid.sites, points),
        "random_sites": float(np.mean(random_sites)),
    }


# ---- the hypernetwork agents -------------------------------------------------------------------


class Hypernetwork(nn.Module):
    """h(r; φ): ray → decision vector, an MLP squashed into [lower, upper] by a sigmoid.

    DTLZ2's front has its edges on the bounds, which a sigmoid reaches only as z → ±∞: the
    answers at the simplex's vertex rays stay short of the front's vertices. A periodic squash
    (1 + sin z)/2 reaches them, but, twice as steep at z = 0, it threw one of five
    Fonseca–Fleming draws of a claims run into the flat region far from the Pareto set, where
    no gradient brings the answers back.
    """

    def __init__(self, n_obj: int, n_var: int, hidden: int, lower: float, upper: float):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_obj, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_var),
        )
        self.lower, self.width = lower, upper - lower

    def forward(self, rays: torch.Tensor) -> torch.Tensor:
        return self.lower + self.width * torch.sigmoid(self.body(rays))


class _ParetoHypernetwork:
    """What the agents share: settings, seeding and the training loop (see the module).

    ``steps`` defaults to :data:`STEPS` for the problem's J, ``penalty`` (λ) to
    :data:`PENALTIES`; ``rays_per_step`` is n (also the number of Voronoi sites), ``hidden``
    the MLP's width and ``hv_samples`` the Monte Carlo samples per HV-gradient face.
    """

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        steps: int | None = None,
        rays_per_step: int = 16,
        hidden: int = 100,
        learning_rate: float = 1e-3,
        penalty: float | None = None,
        hv_samples: int = 128,
    ):
        if env is None:
            raise ValueError(
                f"{type(self).__name__} needs the environment whose public problem "
                "(losses, bounds) it trains on"
            )
        self.problem = env.unwrapped.problem
        self.steps = STEPS[self.problem.n_obj] if steps is None else steps
        self.penalty = PENALTIES[self.problem.name] if penalty is None else penalty
        for name, value, least in (
            ("steps", self.steps, 0),
            ("rays_per_step", rays_per_step, 1),
            ("hidden", hidden, 1),
            ("hv_samples", hv_samples, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        if not learning_rate > 0:
            raise ValueError(f"learning_rate must be positive, got {learning_rate!r}")
        if not self.penalty >= 0:
            raise ValueError(f"penalty must be non-negative, got {self.penalty!r}")
        self.rays_per_step = rays_per_step
        self.hidden = hidden
        self.learning_rate = learning_rate
        self.hv_samples = hv_samples
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    # ---- what each method chooses ---------------------------------------------------------

    def sample_rays(self, rng: np.random.Generator) -> np.ndarray:
        """The n training rays of one step, shape (n, J)."""
        raise NotImplementedError

    def loss(
        self, losses: torch.Tensor, rays: torch.Tensor, reference: np.ndarray, rng: Any
    ) -> torch.Tensor:
        """The scalar the step minimises, from the n loss vectors of the n rays."""
        raise NotImplementedError

    # ---- shared pieces --------------------------------------------------------------------

    def hypervolume_term(
        self, losses: torch.Tensor, reference: np.ndarray, rng: np.random.Generator
    ) -> torch.Tensor:
        """Σ_j ⟨w_j, ℓ_j⟩ with the hypervolume weights held fixed."""
        weights = hypervolume_weights(losses.detach().numpy(), reference, rng, self.hv_samples)
        return (torch.as_tensor(weights) * losses).sum()

    def act(self, observation: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> np.ndarray:
        """Train a hypernetwork on this instance and answer it at the observation's rays."""
        rng = np.random.default_rng(self._rng.integers(2**63 - 1))
        problem = self.problem
        reference = np.asarray(observation["reference_point"], dtype=np.float64)
        observed = {key: torch.as_tensor(value) for key, value in observation.items()}
        with one_torch_thread(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(rng.integers(2**63 - 1)))
            network = Hypernetwork(
                problem.n_obj, problem.n_var, self.hidden, problem.lower, problem.upper
            ).double()
            optimiser = torch.optim.Adam(network.parameters(), lr=self.learning_rate)
            for _ in range(self.steps):
                rays = torch.as_tensor(self.sample_rays(rng))
                losses = problem.losses(observed, network(rays), torch)
                optimiser.zero_grad()
                self.loss(losses, rays, reference, rng).backward()
                optimiser.step()
            with torch.no_grad():
                answer = network(observed["rays"]).numpy()
        return np.clip(answer, problem.lower, problem.upper)


def _line_distances(losses: torch.Tensor, rays: torch.Tensor) -> torch.Tensor:
    """dist(ℓ_j, {r_j + t·1}): the norm of ℓ_j − r_j less its mean along (1, …, 1)."""
    gap = losses - rays
    off_line = gap - gap.mean(dim=-1, keepdim=True)
    return torch.sqrt((off_line**2).sum(-1) + 1e-12)  # the epsilon keeps ∂√ finite at 0


class PHNHVVSAgent(_ParetoHypernetwork):
    """PHN-HVVS: one ray per Voronoi cell, HV weights plus the line-distance penalty."""

    def sample_rays(self, rng: np.random.Generator) -> np.ndarray:
        return voronoi_grid(self.rays_per_step, self.problem.n_obj).sample(rng, self.rays_per_step)

    def loss(self, losses, rays, reference, rng):
        distance = _line_distances(losses, rays).sum()
        return self.hypervolume_term(losses, reference, rng) + self.penalty * distance


class PHNRandomRaysAgent(PHNHVVSAgent):
    """Ablation: PHN-HVVS's loss with uniform random rays instead of the Voronoi cells."""

    def sample_rays(self, rng: np.random.Generator) -> np.ndarray:
        return simplex_points(self.rays_per_step, self.problem.n_obj, rng)


class PHNHVIAgent(_ParetoHypernetwork):
    """PHN-HVI: uniform random rays, HV weights minus λ times the cosine of ℓ_j and r_j."""

    def sample_rays(self, rng: np.random.Generator) -> np.ndarray:
        return simplex_points(self.rays_per_step, self.problem.n_obj, rng)

    def loss(self, losses, rays, reference, rng):
        cosine = torch.nn.functional.cosine_similarity(losses, rays, dim=-1).sum()
        return self.hypervolume_term(losses, reference, rng) - self.penalty * cosine


#: PHN-LS's Dirichlet concentration (PHN's default).
LS_CONCENTRATION = 0.2


class PHNLSAgent(_ParetoHypernetwork):
    """PHN-LS: Dirichlet(0.2) rays and linear scalarisation Σ_j ⟨r_j, ℓ_j⟩."""

    def sample_rays(self, rng: np.random.Generator) -> np.ndarray:
        alpha = np.full(self.problem.n_obj, LS_CONCENTRATION)
        return rng.dirichlet(alpha, size=self.rays_per_step)

    def loss(self, losses, rays, reference, rng):
        return (rays * losses).sum()
