"""Step-size rules for Frank–Wolfe, as a task: how few oracle calls reach a 1e-6 gap?

Hendrych, Pokutta, Besançon, Martínez-Rubio, "Secant Line Search for Frank-Wolfe Algorithms",
ICML 2025 (``docs/methods.md``).

An instance is one of the paper's problem kinds, min f(x) over a polytope P:

- ``least_squares``: f(x) = ‖Ax − b‖² / (2m) over the probability simplex, A Gaussian (m × n),
  b = A x* + noise with x* sparse on the simplex (8 of n = 100 coordinates at paper size);
- ``portfolio``: log-utility f(x) = −(1/T) Σ_t log⟨r_t, x⟩ over the simplex, gross returns r_t
  the exponential of heavy-tailed (Student-t, 3 degrees of freedom) log returns (T × n);
- ``d_optimal``: D-optimal design f(x) = −log det(Σ_i x_i v_i v_iᵀ) over the simplex, Gaussian
  points v_i ∈ R^p; f is +∞ where the matrix is singular, so the step rules need the **domain
  oracle** (a Cholesky factorisation) to stay where f is finite; starts at the uniform design;
- ``logistic``: f(x) = (1/m) Σ_i log(1 + exp(−y_i⟨a_i, x⟩)) over the ℓ1 ball of radius r = 5,
  labels from a sparse vector of ℓ1 norm 2r plus noise (so the constraint binds).

Least squares and logistic regression are L-smooth with a known L (λ_max(AᵀA)/m and
λ_max(AᵀA)/(4m)); the portfolio and design objectives are only locally smooth.

**Counting oracles.** The agent never sees the data. ``reset`` hands it a
:class:`FrankWolfeProblem` in ``info["instance"]``: the counting oracles ``f``, ``grad``,
``lmo`` (linear minimisation over P, answering a vertex index), ``vertex`` and ``in_domain``,
and :meth:`FrankWolfeProblem.run`, the Frank–Wolfe driver (vanilla or away-step) that calls a
step rule once per iteration with a :class:`LineSearch`: the line problem φ(γ) = f(x − γd),
γ ∈ [0, γ_max], with counting ``phi``, ``dphi`` and ``in_domain``. Every rule runs on the same
driver, so the rules differ only in their step sizes and in what those cost. The counters live
in the problem object the env keeps a reference to, and ``step`` reads them there: an agent
cannot report its own count. A value the driver already holds is not bought twice: φ(0) when
the last step's φ was evaluated at the accepted point, φ′(0) = −(the gap), and the gradient at
the new iterate when the rule evaluated φ′ there (each distinct point costs one call).

**One-step form** (:class:`FrankWolfeLineSearch`, ``Methods/FrankWolfeLineSearch-v0``): the
solution is the final iterate (``Box(n)``). ``step`` checks that it lies in P (to 1e-8) and in
f's domain, computes its FW gap with the env's own uncounted oracles and reads the counts.
Metrics ``gap``, ``value``, ``f_evals``, ``grad_evals``, ``evaluations`` (their sum),
``iterations`` (the LMO calls: one per FW iteration, the final certifying one included) and
``domain_evals``; success is gap ≤ 1e-6; the reward is −log10(f_evals + grad_evals) on
success, −10 otherwise (and for a point outside P or the domain, flagged ``invalid_action``).

**Multi-step form** (:class:`FrankWolfeLineSearchSteps`,
``Methods/FrankWolfeLineSearchSteps-v0``): one step is one iteration of the env's driver
(``variant`` kwarg); the observation is the FW gap, ‖d‖, γ_max, the previous step, f(x) and
whether this is an away step; ``info["instance"]`` is the iteration's :class:`LineSearch`; the
action ``Box(0, 1, (1,))`` is the step as a fraction of γ_max; the reward is the decrease of f;
the episode terminates at gap ≤ 1e-6 and is truncated at the iteration cap. A step that leaves
f's domain ends the episode with −10 and ``invalid_action``.

The data sit in the problem's private attributes: an agent uses only the public oracles, as
it never reads the env's ``instance``. The multi-step observation's f(x) is the env's own
(uncounted) evaluation, a feature; the rules here buy φ(0) through the line search, so both
forms count the same run alike.

Departures from the paper: the instances come from seeded generators written here, at the sizes of
:data:`SHAPES` (the portfolio's synthetic returns are tuned so that the log-optimal portfolio
spreads over some 30 assets, as real ones do); f is averaged over rows, so that the absolute 1e-6
gap means the same at every size; the iteration cap is 5000 (1000 at ``size="small"``, where the
problems are 3–5 times smaller); ``iterations`` counts LMO calls, one more than the
steps of a converged run; ``wall_time`` is not a metric (the evaluator records each episode's
wall time, and a timed metric would break the determinism every env must keep); FrankWolfe.jl,
the paper's code, re-evaluates f(x) inside each line search where this driver reuses a value it
holds, so absolute counts run lower than the paper's, for every rule alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from scipy import linalg

from .core import MethodEnv, check_size, check_solution

PROBLEMS = ("least_squares", "portfolio", "d_optimal", "logistic")
VARIANTS = ("vanilla", "away")
#: The FW gap at which a run has converged.
TOLERANCE = 1e-6
#: Frank–Wolfe iterations at most, per size.
MAX_ITERATIONS = {"small": 1_000, "paper": 5_000}
#: (rows, columns) of each problem's data per size; the columns are the dimension n of x
#: (for ``d_optimal``: (dimension p of the points, number n of points)).
SHAPES = {
    "least_squares": {"small": (60, 20), "paper": (300, 100)},
    "portfolio": {"small": (160, 30), "paper": (800, 150)},
    "d_optimal": {"small": (6, 40), "paper": (20, 200)},
    "logistic": {"small": (100, 20), "paper": (500, 100)},
}
#: Non-zeros of the vector that generates the least-squares targets and the logistic labels.
SUPPORT = {"small": 4, "paper": 8}
#: The radius r of the ℓ1 ball of ``logistic``; the labels come from a sparse vector of ℓ1 norm 2r.
RADIUS = 5.0
#: Reward of a run that misses the tolerance (or answers a point outside P or f's domain).
FAILED_REWARD = -10.0
#: Away-step FW drops an active vertex whose weight falls below this.
PURGE_THRESHOLD = 1e-12
#: How far outside P (sum and sign on the simplex, norm on the ℓ1 ball) a solution may lie.
FEASIBILITY_TOLERANCE = 1e-8


# ---- feasible sets ---------------------------------------------------------------------------


class Simplex:
    """The probability simplex {x ≥ 0, Σ x = 1} ⊂ R^n; vertex k is the unit vector e_k."""

    def __init__(self, n: int):
        self.n = n
        self.bounds = (0.0, 1.0)  # of each coordinate

    def vertex(self, k: int) -> np.ndarray:
        point = np.zeros(self.n)
        point[k] = 1.0
        return point

    def lmo(self, gradient: np.ndarray) -> int:
        """The vertex minimising ⟨gradient, v⟩."""
        return int(np.argmin(gradient))

    def vertex_values(self, gradient: np.ndarray, ks: np.ndarray) -> np.ndarray:
        """⟨gradient, v_k⟩ for each k in ``ks``."""
        return gradient[ks]

    def contains(self, x: np.ndarray, tolerance: float) -> bool:
        return bool(x.min() >= -tolerance and abs(x.sum() - 1.0) <= tolerance)


class L1Ball:
    """The ℓ1 ball {‖x‖₁ ≤ r} ⊂ R^n; vertex k < n is r·e_k, vertex n + k is −r·e_k."""

    def __init__(self, n: int, radius: float):
        self.n = n
        self.radius = radius
        self.bounds = (-radius, radius)  # of each coordinate

    def vertex(self, k: int) -> np.ndarray:
        point = np.zeros(self.n)
        point[k % self.n] = self.radius if k < self.n else -self.radius
        return point

    def lmo(self, gradient: np.ndarray) -> int:
        i = int(np.argmax(np.abs(gradient)))
        return i if gradient[i] < 0 else self.n + i

    def vertex_values(self, gradient: np.ndarray, ks: np.ndarray) -> np.ndarray:
        signs = np.where(ks < self.n, self.radius, -self.radius)
        return signs * gradient[ks % self.n]

    def contains(self, x: np.ndarray, tolerance: float) -> bool:
        return bool(np.abs(x).sum() <= self.radius * (1.0 + tolerance))


# ---- objectives ------------------------------------------------------------------------------


class LeastSquares:
    """f(x) = ‖Ax − b‖² / (2m); L = λ_max(AᵀA) / m."""

    has_domain = False

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.a, self.b = a, b
        self.lipschitz: float | None = float(np.linalg.eigvalsh(a.T @ a)[-1]) / len(b)

    def value(self, x: np.ndarray) -> float:
        residual = self.a @ x - self.b
        return float(residual @ residual) / (2 * len(self.b))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return self.a.T @ (self.a @ x - self.b) / len(self.b)

    def in_domain(self, x: np.ndarray) -> bool:
        return True


class LogUtility:
    """f(x) = −(1/T) Σ_t log⟨r_t, x⟩ (+∞ where some ⟨r_t, x⟩ ≤ 0); no global L."""

    has_domain = True
    lipschitz: float | None = None

    def __init__(self, returns: np.ndarray):
        self.returns = returns

    def in_domain(self, x: np.ndarray) -> bool:
        return bool(np.all(self.returns @ x > 0))

    def value(self, x: np.ndarray) -> float:
        wealth = self.returns @ x
        if np.any(wealth <= 0):
            return math.inf
        return -float(np.mean(np.log(wealth)))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        wealth = self.returns @ x
        if np.any(wealth <= 0):
            return np.full(len(x), np.nan)
        return -self.returns.T @ (1.0 / wealth) / len(wealth)


class DOptimalDesign:
    """f(x) = −log det(Vᵀ diag(x) V) (+∞ where the matrix is not positive definite); no L.

    The domain oracle is the Cholesky factorisation: it succeeds exactly on the domain."""

    has_domain = True
    lipschitz: float | None = None

    def __init__(self, points: np.ndarray):
        self.points = points

    def _cholesky(self, x: np.ndarray) -> np.ndarray | None:
        # LAPACK directly: SciPy's and NumPy's wrappers add checks, and the triangular solve
        # of scipy.linalg runs threaded, which costs far more than it saves at this size.
        factor, info = linalg.lapack.dpotrf((self.points.T * x) @ self.points, lower=1)
        return factor if info == 0 else None

    def in_domain(self, x: np.ndarray) -> bool:
        return self._cholesky(x) is not None

    def value(self, x: np.ndarray) -> float:
        factor = self._cholesky(x)
        if factor is None:
            return math.inf
        return -2.0 * float(np.sum(np.log(np.diag(factor))))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        factor = self._cholesky(x)
        if factor is None:
            return np.full(len(x), np.nan)
        inverse, _ = linalg.lapack.dtrtri(factor, lower=1)
        whitened = self.points @ inverse.T  # row i: L⁻¹ v_i
        return -np.sum(whitened**2, axis=1)  # −v_iᵀ M⁻¹ v_i


class Logistic:
    """f(x) = (1/m) Σ_i log(1 + exp(−y_i⟨a_i, x⟩)); L = λ_max(AᵀA) / (4m)."""

    has_domain = False

    def __init__(self, a: np.ndarray, y: np.ndarray):
        self.a, self.y = a, y
        self.lipschitz: float | None = float(np.linalg.eigvalsh(a.T @ a)[-1]) / (4 * len(y))

    def value(self, x: np.ndarray) -> float:
        return float(np.mean(np.logaddexp(0.0, -self.y * (self.a @ x))))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        margins = self.y * (self.a @ x)
        weights = np.exp(-np.logaddexp(0.0, margins))  # σ(−margin), computed without overflow
        return -self.a.T @ (self.y * weights) / len(self.y)

    def in_domain(self, x: np.ndarray) -> bool:
        return True


# ---- instances -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    """One drawn problem: objective, feasible set, starting point and its vertex weights."""

    objective: Any
    feasible_set: Simplex | L1Ball
    x0: np.ndarray
    weights: Mapping[int, float]  # x0 = Σ_k weights[k]·vertex(k)


def check_problem(problem: Any) -> str:
    if problem not in PROBLEMS:
        raise ValueError(f"problem must be one of {PROBLEMS}, got {problem!r}")
    return problem


def check_variant(variant: Any) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return variant


def dimension(problem: str, size: str) -> int:
    """The dimension n of x for ``problem`` at ``size``."""
    return SHAPES[check_problem(problem)][check_size(size)][1]


def draw_instance(problem: str, size: str, rng: np.random.Generator) -> Instance:
    """Draw one instance of ``problem`` at ``size`` (see the module docstring)."""
    rows, n = SHAPES[check_problem(problem)][check_size(size)]
    if problem == "least_squares":
        a = rng.normal(size=(rows, n))
        truth = np.zeros(n)
        support = rng.choice(n, SUPPORT[size], replace=False)
        truth[support] = rng.dirichlet(np.ones(SUPPORT[size]))
        b = a @ truth + 0.05 * rng.normal(size=rows)
        start = int(rng.integers(n))
        simplex = Simplex(n)
        return Instance(LeastSquares(a, b), simplex, simplex.vertex(start), {start: 1.0})
    if problem == "portfolio":
        # Log returns μ_j + σ_j·ε with ε Student-t(3) of unit variance; μ_j = −σ_j²/2 + noise
        # puts the assets' mean gross returns close together, so the log-optimal portfolio
        # spreads over many of them (a face of the simplex, not a vertex).
        volatility = rng.uniform(0.2, 0.5, size=n)
        drift = rng.normal(0.0, 0.01, size=n) - volatility**2 / 2
        shocks = rng.standard_t(3, size=(rows, n)) / np.sqrt(3.0)
        returns = np.exp(drift + volatility * shocks)
        start = int(rng.integers(n))
        simplex = Simplex(n)
        return Instance(LogUtility(returns), simplex, simplex.vertex(start), {start: 1.0})
    if problem == "d_optimal":
        points = rng.normal(size=(n, rows))
        return Instance(
            DOptimalDesign(points),
            Simplex(n),
            np.full(n, 1.0 / n),
            {k: 1.0 / n for k in range(n)},
        )
    a = rng.normal(size=(rows, n))
    truth = np.zeros(n)
    truth[rng.choice(n, SUPPORT[size], replace=False)] = rng.normal(size=SUPPORT[size])
    truth *= 2 * RADIUS / np.abs(truth).sum()
    labels = np.where(a @ truth + rng.normal(size=rows) >= 0, 1.0, -1.0)
    ball = L1Ball(n, RADIUS)
    start = int(rng.integers(2 * n))
    return Instance(Logistic(a, labels), ball, ball.vertex(start), {start: 1.0})


def frank_wolfe_gap(instance: Instance, x: np.ndarray) -> float:
    """max_v ⟨∇f(x), x − v⟩ over P, by the instance's own (uncounted) oracles."""
    gradient = instance.objective.gradient(x)
    vertex = instance.feasible_set.vertex(instance.feasible_set.lmo(gradient))
    return float(gradient @ (x - vertex))


# ---- the counting oracles and the driver -----------------------------------------------------


def _read_only(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=np.float64)
    array.setflags(write=False)
    return array


class FrankWolfeProblem:
    """The counting oracles of one instance and the Frank–Wolfe driver (``info["instance"]``).

    ``f``, ``grad``, ``lmo`` and ``in_domain`` count their calls in ``f_evals``, ``grad_evals``,
    ``lmo_calls`` and ``domain_evals`` (``in_domain`` is free, and always True, on a problem
    without a domain). ``vertex(k)`` (a vertex's coordinates) is free. ``lipschitz`` is the
    smoothness constant when the problem has a global one, else None. Arrays passed in are
    copied and arrays returned are new, so nothing an agent does to them reaches the problem.
    """

    def __init__(self, instance: Instance, tolerance: float, max_iterations: int):
        self._instance = instance
        self.tolerance = tolerance
        self.max_iterations = max_iterations
        self.lipschitz = instance.objective.lipschitz
        self.has_domain = instance.objective.has_domain
        self._calls = {"f": 0, "grad": 0, "lmo": 0, "domain": 0}

    @property
    def f_evals(self) -> int:
        return self._calls["f"]

    @property
    def grad_evals(self) -> int:
        return self._calls["grad"]

    @property
    def lmo_calls(self) -> int:
        return self._calls["lmo"]

    @property
    def domain_evals(self) -> int:
        return self._calls["domain"]

    @property
    def x0(self) -> np.ndarray:
        return self._instance.x0.copy()

    def f(self, x: np.ndarray) -> float:
        """f(x), +∞ outside the domain (one f evaluation)."""
        self._calls["f"] += 1
        return self._instance.objective.value(np.array(x, dtype=np.float64))

    def grad(self, x: np.ndarray) -> np.ndarray:
        """∇f(x), NaN outside the domain (one gradient evaluation)."""
        self._calls["grad"] += 1
        return self._instance.objective.gradient(np.array(x, dtype=np.float64))

    def lmo(self, gradient: np.ndarray) -> int:
        """The index of a vertex of P minimising ⟨gradient, v⟩ (one LMO call)."""
        self._calls["lmo"] += 1
        return self._instance.feasible_set.lmo(np.asarray(gradient, dtype=np.float64))

    def vertex(self, k: int) -> np.ndarray:
        return self._instance.feasible_set.vertex(k)

    def in_domain(self, x: np.ndarray) -> bool:
        """Whether f is finite at x (one domain evaluation, on problems with a domain)."""
        if not self.has_domain:
            return True
        self._calls["domain"] += 1
        return self._instance.objective.in_domain(np.asarray(x, dtype=np.float64))

    def run(self, rule: Callable[[LineSearch], float], variant: str = "away") -> RunResult:
        """Frank–Wolfe (``"vanilla"``) or away-step Frank–Wolfe (``"away"``) from ``x0`` with
        step rule ``rule`` until the gap is at most ``tolerance`` or ``max_iterations`` steps."""
        state = FrankWolfeRun(self, variant)
        while (line := state.next_line_search()) is not None:
            state.advance(rule(line))
        return state.result()


class LineSearch:
    """The line problem of one iteration: φ(γ) = f(x − γd) for γ ∈ [0, gamma_max].

    ``gap`` = −φ′(0) = ⟨∇f(x), d⟩ > 0 is known (free); ``phi(γ)``, ``dphi(γ)`` (φ′(γ) =
    −⟨∇f(x − γd), d⟩) and ``in_domain(γ)`` call the problem's counting oracles, each distinct γ
    once. ``iteration`` is t (0 at the first step), ``away`` whether d is an away direction,
    ``norm_d2`` = ‖d‖², ``lipschitz`` the problem's L or None. ``x`` and ``d`` are read-only.
    """

    def __init__(
        self,
        problem: FrankWolfeProblem,
        x: np.ndarray,
        d: np.ndarray,
        gradient: np.ndarray,
        gamma_max: float,
        iteration: int,
        away: bool,
        value: float | None,
    ):
        self._problem = problem
        self.x, self.d = _read_only(x), _read_only(d)
        self.gap = float(gradient @ d)
        self.gamma_max = float(gamma_max)
        self.iteration = iteration
        self.away = away
        self.norm_d2 = float(d @ d)
        self.lipschitz = problem.lipschitz
        self.has_domain = problem.has_domain
        self._values: dict[float, float] = {} if value is None else {0.0: value}
        self._gradients: dict[float, np.ndarray] = {0.0: gradient}

    def point(self, gamma: float) -> np.ndarray:
        return self.x - gamma * self.d

    def phi(self, gamma: float) -> float:
        gamma = float(gamma)
        if gamma not in self._values:
            self._values[gamma] = self._problem.f(self.point(gamma))
        return self._values[gamma]

    def dphi(self, gamma: float) -> float:
        gamma = float(gamma)
        if gamma not in self._gradients:
            self._gradients[gamma] = self._problem.grad(self.point(gamma))
        return -float(self._gradients[gamma] @ self.d)

    def in_domain(self, gamma: float) -> bool:
        return self._problem.in_domain(self.point(gamma))

    def evaluated(self, gamma: float) -> tuple[float, float | None, np.ndarray | None]:
        """``(γ, φ(γ), ∇f(x − γd))`` with γ snapped to an evaluated step within rounding (a step
        handed back as a fraction of γ_max), and the values the rule already paid for."""
        for known in (*self._values, *self._gradients):
            if 0.0 <= known <= self.gamma_max and math.isclose(known, gamma, rel_tol=1e-12):
                gamma = known
                break
        return gamma, self._values.get(gamma), self._gradients.get(gamma)

    # Equal by value: Gymnasium's determinism check compares the infos of two seeded steps.
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LineSearch)
            and (self.iteration, self.away, self.gamma_max, self.gap)
            == (other.iteration, other.away, other.gamma_max, other.gap)
            and np.array_equal(self.x, other.x)
            and np.array_equal(self.d, other.d)
        )


@dataclass(frozen=True)
class RunResult:
    """The end of a run: the final iterate, its FW gap, the steps taken and why it stopped
    (``"converged"``, ``"iteration cap"`` or ``"left the domain"``)."""

    x: np.ndarray
    gap: float
    iterations: int
    status: str


class FrankWolfeRun:
    """One run of (away-step) Frank–Wolfe, one iteration at a time.

    ``next_line_search()`` computes the FW vertex (one LMO call) and the gap at the current
    iterate and returns the iteration's :class:`LineSearch`, or None when the run is over (gap
    ≤ tolerance, or the iteration cap). ``advance(γ)`` takes the step x ← x − γd. Away-step FW
    (Lacoste-Julien & Jaggi, NeurIPS 2015) keeps the iterate's vertex weights and steps away
    from the worst active vertex when that direction is steeper than the FW one; γ = γ_max on
    an away step drops that vertex, and so does a weight below :data:`PURGE_THRESHOLD`
    (FrankWolfe.jl's active-set cleanup), x then rebuilt from the remaining weights: without it
    a vertex of weight ~1e-16 is stepped away from by ever smaller γ_max for ever. A step that
    leaves f's domain stops the run at the last iterate inside it (checked here, uncounted: it
    is the referee's check, not the rule's).
    """

    def __init__(self, problem: FrankWolfeProblem, variant: str = "away"):
        self.problem = problem
        self.variant = check_variant(variant)
        instance = problem._instance
        self._set = instance.feasible_set
        self._objective = instance.objective
        self.x = instance.x0.copy()
        self.weights = dict(instance.weights)
        self.gradient = problem.grad(self.x)
        self.value: float | None = None
        self.gap = math.inf
        self.iterations = 0
        self.previous_step = 0.0
        self.status = "running"
        self._line: LineSearch | None = None
        self._fw_vertex = -1
        self._away_vertex = -1

    def next_line_search(self) -> LineSearch | None:
        if self.status != "running":
            return None
        self._fw_vertex = self.problem.lmo(self.gradient)
        fw_direction = self.x - self._set.vertex(self._fw_vertex)
        self.gap = float(self.gradient @ fw_direction)
        if self.gap <= self.problem.tolerance:
            self.status = "converged"
            return None
        if self.iterations >= self.problem.max_iterations:
            self.status = "iteration cap"
            return None
        direction, gamma_max, away = fw_direction, 1.0, False
        if self.variant == "away":
            active = np.fromiter(self.weights, dtype=np.int64, count=len(self.weights))
            worst = int(active[np.argmax(self._set.vertex_values(self.gradient, active))])
            away_direction = self._set.vertex(worst) - self.x
            weight = self.weights[worst]
            if weight < 1.0 and float(self.gradient @ away_direction) > self.gap:
                direction, gamma_max, away = away_direction, weight / (1.0 - weight), True
                self._away_vertex = worst
        self._line = LineSearch(
            self.problem,
            self.x,
            direction,
            self.gradient,
            gamma_max,
            self.iterations,
            away,
            self.value,
        )
        return self._line

    def advance(self, gamma: float) -> None:
        line = self._line
        if line is None:
            raise RuntimeError("advance() without a pending line search")
        gamma = float(gamma)
        if not 0.0 <= gamma <= line.gamma_max:
            raise ValueError(f"step size must lie in [0, {line.gamma_max}], got {gamma}")
        gamma, value, gradient = line.evaluated(gamma)
        x = line.point(gamma)
        weights = self._updated_weights(gamma, line)
        negligible = [k for k, w in weights.items() if w < PURGE_THRESHOLD]
        if negligible:  # x moves by less than the threshold, but the values held are stale
            for k in negligible:
                del weights[k]
            total = sum(weights.values())
            weights = {k: w / total for k, w in weights.items()}
            x = sum(w * self._set.vertex(k) for k, w in weights.items())
            value, gradient = None, None
        if self.problem.has_domain and not self._objective.in_domain(x):
            self.status = "left the domain"
            self._line = None
            return
        self.weights = weights
        self.x = x
        if gamma > 0.0:
            self.gradient = self.problem.grad(x) if gradient is None else gradient
            self.value = value
        self.iterations += 1
        self.previous_step = gamma
        self._line = None

    def _updated_weights(self, gamma: float, line: LineSearch) -> dict[int, float]:
        """The vertex weights of x − γd (only away-step FW keeps them)."""
        if self.variant == "vanilla" or gamma == 0.0:
            return self.weights
        if line.away:
            vertex = self._away_vertex
            weights = {k: (1.0 + gamma) * w for k, w in self.weights.items()}
            if gamma >= line.gamma_max:
                del weights[vertex]
            else:
                weights[vertex] -= gamma
            return weights
        vertex = self._fw_vertex
        if gamma >= 1.0:
            return {vertex: 1.0}
        weights = {k: (1.0 - gamma) * w for k, w in self.weights.items()}
        weights[vertex] = weights.get(vertex, 0.0) + gamma
        return weights

    def result(self) -> RunResult:
        """The run's outcome; the iterate is clipped to P's coordinate bounds, which rounding
        may overstep by an ulp (a vertex reached as x − 1·(x − v))."""
        x = np.clip(self.x, *self._set.bounds)
        return RunResult(x, self.gap, self.iterations, self.status)


# ---- the environments ------------------------------------------------------------------------


class FrankWolfeLineSearch(MethodEnv):
    """Minimise f over a polytope with Frank–Wolfe; scored by the oracle calls to a 1e-6 gap.

    ## Description

    One step. ``reset`` draws an instance of ``problem`` (module docstring) and hands the agent
    its counting oracles and the Frank–Wolfe driver (:class:`FrankWolfeProblem`) in
    ``info["instance"]``; the agent runs the algorithm with its step rule and answers the final
    iterate, which ``step`` scores.

    ## Action space

    ``Box(low, high, (n,), float64)``: the final iterate; [0, 1] on the simplex, [−5, 5] for
    ``logistic`` (the ℓ1 ball of radius 5). It must lie in P (to 1e-8) and in f's domain.

    ## Observation space

    ``Dict``: ``x0`` ``Box(low, high, (n,))`` (the starting point), ``kind`` ``Discrete(4)``
    (the index of ``problem`` in :data:`PROBLEMS`), ``lipschitz`` ``Box(0, inf, (1,))`` (L, or
    0 when the problem has no global L). n is 20/100 (least squares), 30/150 (portfolio),
    40/200 (D-optimal design, the number of points), 20/100 (logistic) at small/paper size.

    ## Rewards

    −log10(f_evals + grad_evals) when the gap is at most 1e-6, else −10; −10 and
    ``info["invalid_action"]`` for a point outside P or f's domain or with a non-finite value.
    ``info["metrics"]``: ``gap``, ``value``, ``f_evals``, ``grad_evals``, ``evaluations``,
    ``iterations``, ``domain_evals``; ``info["success"]``: gap ≤ 1e-6.

    ## Starting state

    Each ``reset(seed)`` draws a fresh instance from ``self.np_random``; x0 is a random vertex
    (the uniform design for ``d_optimal``).

    ## Episode end

    After the one step (``terminated=True``).

    ## Arguments

    ``problem`` (one of :data:`PROBLEMS`, default ``"least_squares"``), ``size`` (``"small"``
    or ``"paper"``).
    """

    invalid_reward = FAILED_REWARD

    def __init__(self, problem: str = "least_squares", size: str = "small"):
        super().__init__(size)
        self.problem = check_problem(problem)
        n = dimension(problem, size)
        low, bound = (-RADIUS, RADIUS) if problem == "logistic" else (0.0, 1.0)
        self.observation_space = spaces.Dict(
            {
                "x0": spaces.Box(low, bound, (n,), np.float64),
                "kind": spaces.Discrete(len(PROBLEMS)),
                "lipschitz": spaces.Box(0.0, np.inf, (1,), np.float64),
            }
        )
        self.action_space = spaces.Box(low, bound, (n,), np.float64)
        self._oracles: FrankWolfeProblem | None = None

    def draw(self, rng: np.random.Generator) -> tuple[dict[str, Any], Instance]:
        instance = draw_instance(self.problem, self.size, rng)
        self._oracles = FrankWolfeProblem(instance, TOLERANCE, MAX_ITERATIONS[self.size])
        observation = {
            "x0": instance.x0.copy(),
            "kind": PROBLEMS.index(self.problem),
            "lipschitz": np.array([instance.objective.lipschitz or 0.0]),
        }
        return observation, instance

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        return observation, {**info, "instance": self._oracles}

    def score(self, solution: np.ndarray) -> tuple[float, dict[str, float]] | None:
        instance: Instance = self.instance
        if not instance.feasible_set.contains(solution, FEASIBILITY_TOLERANCE):
            return None
        if not instance.objective.in_domain(solution):
            return None
        oracles = self._oracles
        gap = frank_wolfe_gap(instance, solution)
        metrics = {
            "gap": gap,
            "value": instance.objective.value(solution),
            "f_evals": float(oracles.f_evals),
            "grad_evals": float(oracles.grad_evals),
            "iterations": float(oracles.lmo_calls),
            "domain_evals": float(oracles.domain_evals),
            "evaluations": float(oracles.f_evals + oracles.grad_evals),
        }
        evaluations = max(1, oracles.f_evals + oracles.grad_evals)
        reward = -math.log10(evaluations) if gap <= TOLERANCE else FAILED_REWARD
        return reward, metrics

    def success(self, metrics: Mapping[str, float]) -> bool:
        return metrics["gap"] <= TOLERANCE


class FrankWolfeLineSearchSteps(gym.Env):
    """Frank–Wolfe one iteration per step: the action is the step size.

    ## Description

    ``reset`` draws an instance of ``problem`` (as :class:`FrankWolfeLineSearch`) and starts the
    driver (``variant``) at x0; each ``step`` takes the iteration's step γ = action·γ_max along
    the current direction d (x ← x − γd) and moves on to the next iteration.
    ``info["instance"]`` is the current iteration's :class:`LineSearch` (counting φ and φ′ along
    d; None once the episode is over).

    ## Action space

    ``Box(0, 1, (1,), float64)``: the step as a fraction of γ_max.

    ## Observation space

    ``Dict`` of ``Box(-inf, inf, (1,), float64)``: ``gap`` (the FW gap at x), ``norm_d`` (‖d‖),
    ``gamma_max``, ``previous_step`` (the last γ, 0 at first), ``f`` (f(x)); and ``away_step``
    ``Discrete(2)`` (1 when d is an away direction). After the last step ``norm_d`` and
    ``gamma_max`` are 0.

    ## Rewards

    The decrease f(x) − f(x_new) of the step; −10 and ``info["invalid_action"]`` for a step that
    leaves f's domain or a non-finite action. ``info["metrics"]``: ``gap``, ``value``,
    ``f_evals``, ``grad_evals``, ``evaluations``, ``iterations``, ``domain_evals`` (the counts
    of the oracle calls through ``info["instance"]``); ``info["success"]``: gap ≤ 1e-6.

    ## Starting state

    x0 of the drawn instance (a random vertex; the uniform design for ``d_optimal``).

    ## Episode end

    Terminated when the gap reaches 1e-6 (or after an invalid step); truncated at the iteration
    cap (:data:`MAX_ITERATIONS`).

    ## Arguments

    ``problem`` (one of :data:`PROBLEMS`), ``size`` (``"small"`` or ``"paper"``), ``variant``
    (``"away"``, the default, or ``"vanilla"``).
    """

    metadata = {"render_modes": []}

    def __init__(self, problem: str = "least_squares", size: str = "small", variant: str = "away"):
        self.problem, self.size = check_problem(problem), check_size(size)
        self.variant = check_variant(variant)
        scalar = spaces.Box(-np.inf, np.inf, (1,), np.float64)
        self.observation_space = spaces.Dict(
            {
                "gap": scalar,
                "norm_d": scalar,
                "gamma_max": scalar,
                "previous_step": scalar,
                "f": scalar,
                "away_step": spaces.Discrete(2),
            }
        )
        self.action_space = spaces.Box(0.0, 1.0, (1,), np.float64)
        self._instance: Instance | None = None
        self._oracles: FrankWolfeProblem | None = None
        self._run: FrankWolfeRun | None = None
        self._line: LineSearch | None = None
        self._value = math.nan

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._instance = draw_instance(self.problem, self.size, self.np_random)
        self._oracles = FrankWolfeProblem(self._instance, TOLERANCE, MAX_ITERATIONS[self.size])
        self._run = FrankWolfeRun(self._oracles, self.variant)
        self._value = self._instance.objective.value(self._run.x)
        self._line = self._run.next_line_search()
        return self._observation(), {"invalid_action": False, "instance": self._line}

    def _observation(self) -> dict[str, Any]:
        line, run = self._line, self._run

        def scalar(value: float) -> np.ndarray:
            return np.array([value], dtype=np.float64)

        return {
            "gap": scalar(run.gap),
            "norm_d": scalar(0.0 if line is None else math.sqrt(line.norm_d2)),
            "gamma_max": scalar(0.0 if line is None else line.gamma_max),
            "previous_step": scalar(run.previous_step),
            "f": scalar(self._value),
            "away_step": int(line is not None and line.away),
        }

    def _metrics(self) -> dict[str, float]:
        oracles = self._oracles
        return {
            "gap": float(self._run.gap),
            "value": float(self._value),
            "f_evals": float(oracles.f_evals),
            "grad_evals": float(oracles.grad_evals),
            "iterations": float(oracles.lmo_calls),
            "domain_evals": float(oracles.domain_evals),
            "evaluations": float(oracles.f_evals + oracles.grad_evals),
        }

    def step(self, action: Any):
        if self._line is None:
            raise RuntimeError(f"{type(self).__name__}.step() before reset() or after the end")
        checked, finite = check_solution(action, self.action_space)
        if finite:
            self._run.advance(float(checked[0]) * self._line.gamma_max)
        if not finite or self._run.status == "left the domain":
            self._line = None
            info = {"invalid_action": True, "instance": None, "metrics": self._metrics()}
            info["success"] = False
            return self._observation(), FAILED_REWARD, True, False, info
        before, self._value = self._value, self._instance.objective.value(self._run.x)
        self._line = self._run.next_line_search()
        info = {"invalid_action": False, "instance": self._line, "metrics": self._metrics()}
        info["success"] = self._run.status == "converged"
        terminated = self._run.status == "converged"
        truncated = self._run.status == "iteration cap"
        return self._observation(), before - self._value, terminated, truncated, info
