"""The secant step size for Frank–Wolfe and its baselines, as agents.

Hendrych, Pokutta, Besançon, Martínez-Rubio, "Secant Line Search for Frank-Wolfe Algorithms",
ICML 2025 (``docs/methods.md``).

A step rule is a callable ``rule(line) -> γ`` on the line problem of one iteration,
:class:`omnigym.envs.methods.frank_wolfe.LineSearch`: φ(γ) = f(x − γd) on [0, γ_max], with
counting ``phi``, ``dphi`` (φ′) and ``in_domain``, the free ``gap`` = −φ′(0), ``iteration`` t,
``norm_d2`` = ‖d‖² and the problem's ``lipschitz`` L (None when it has none). The rules:

- :class:`SecantStep` (the paper's method, ``fw-secant``): the secant method on φ′,
  γ_{i+1} = γ_i − φ′(γ_i)(γ_i − γ_{i−1}) / (φ′(γ_i) − φ′(γ_{i−1})) clamped to [0, γ_max], from
  γ_{−1} = 0 (φ′(0) is free) and γ₀ = the previous accepted step (1 at first); it accepts γ_max
  at once when φ is still decreasing there, stops when |φ′| ≤ 1e-8, after 40 steps or when two
  consecutive φ′ coincide, and returns the lowest-φ point seen. On problems with a domain it
  first halves γ_max until the domain oracle accepts it; when the 40 steps run out without
  convergence, an Armijo backtracking step replaces the answer if it has a lower φ. On a
  quadratic φ′ is linear, so one secant step lands on the minimiser;
- :class:`AdaptiveStep` (``fw-adaptive``): Pedregosa, Negiar, Askari, Jaggi, "Linearly
  Convergent Frank-Wolfe with Backtracking Line-Search", AISTATS 2020: a local smoothness
  estimate M ← 0.9·M, γ = min(gap/(M‖d‖²), γ_max), accepted when φ(γ) ≤ φ(0) − γ·gap +
  γ²M‖d‖²/2, else M ← 2M (no step once M passes 10²⁰);
- :class:`BacktrackingStep` (``fw-backtracking``): Armijo backtracking from γ_max, halving until
  φ(γ) ≤ φ(0) − 10⁻⁴·γ·gap (no step after 60 halvings);
- :class:`GoldenSectionStep` (``fw-golden``): golden-section search on [0, γ_max] to a bracket
  of 10⁻⁷·γ_max, the exact line search of reference;
- :class:`OpenLoopStep` (``fw-open-loop``): γ = 2/(t + 2), clipped to γ_max;
- :class:`ShortStep` (``fw-short-step``): γ = min(gap/(L‖d‖²), γ_max), for problems with a known
  L (least squares, logistic regression).

Each agent plays both forms of the task. On ``Methods/FrankWolfeLineSearch-v0`` it runs the
env's driver (``info["instance"].run``) with a fresh rule and its ``variant`` (``"away"``,
the default, or ``"vanilla"``) and answers the final iterate; on
``Methods/FrankWolfeLineSearchSteps-v0`` it answers its rule's step for the iteration's line
search as a fraction of γ_max (the env's ``variant`` decides the algorithm there, and the rule
starts afresh at iteration 0). The rules are deterministic: the agents' seeds are unused.

Departures from the paper: the adaptive rule's first estimate is the curvature of φ along the
first direction, (φ′(ε) − φ′(0))/(ε‖d‖²) with ε = min(10⁻³, γ_max) (FrankWolfe.jl takes the
gradient difference's norm), and its test allows a rounding slack of 10⁻¹⁴·|φ(0)| so that it
does not fail on differences below floating-point resolution near the optimum; the secant rule
starts from γ_max when the previous accepted step was 0 (from 0 it would stall); golden-section
search and the open-loop rule halve their upper end until it is in f's domain, as the paper's
implementations do; rules with a test on φ (backtracking, adaptive) need no domain oracle,
since φ = +∞ outside the domain fails their test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from omnigym.envs.methods.frank_wolfe import LineSearch, check_variant

# ---- step rules ------------------------------------------------------------------------------


def _largest_feasible_step(line: LineSearch, gamma: float) -> float:
    """``gamma`` halved until x − γd is in f's domain (unchanged on problems without one)."""
    if line.has_domain:
        while not line.in_domain(gamma):
            gamma /= 2.0
    return gamma


@dataclass
class BacktrackingStep:
    """Armijo backtracking: γ = γ_max·shrink^k for the first k with sufficient decrease."""

    armijo: float = 1e-4
    shrink: float = 0.5
    max_halvings: int = 60

    def __call__(self, line: LineSearch) -> float:
        return self.search(line, line.gamma_max)

    def search(self, line: LineSearch, gamma: float) -> float:
        """The Armijo step from ``gamma`` down, or 0 when none of ``max_halvings`` passes."""
        value = line.phi(0.0)
        for _ in range(self.max_halvings):
            if line.phi(gamma) <= value - self.armijo * gamma * line.gap:
                return gamma
            gamma *= self.shrink
        return 0.0


@dataclass
class SecantStep:
    """The secant line search on φ′ (the paper's Algorithm; see the module docstring)."""

    tolerance: float = 1e-8
    max_steps: int = 40
    fallback: bool = True
    last_step: float = 1.0

    def __call__(self, line: LineSearch) -> float:
        gamma_max = _largest_feasible_step(line, line.gamma_max)
        gamma = min(self.last_step if self.last_step > 0.0 else gamma_max, gamma_max)
        best_gamma, best_value = gamma, line.phi(gamma)
        previous_gamma, previous_slope = 0.0, -line.gap
        finished = False
        for _ in range(self.max_steps):
            slope = line.dphi(gamma)
            if gamma == gamma_max and slope < 0.0:  # still descending at the end: take it
                best_gamma, finished = gamma_max, True
                break
            if abs(slope) <= self.tolerance or math.isclose(slope, previous_slope, rel_tol=1e-12):
                finished = True
                break
            step = slope * (gamma - previous_gamma) / (slope - previous_slope)
            previous_gamma, previous_slope = gamma, slope
            gamma = min(max(gamma - step, 0.0), gamma_max)
            value = line.phi(gamma)
            if value < best_value:
                best_gamma, best_value = gamma, value
        if not finished and self.fallback:
            candidate = BacktrackingStep().search(line, gamma_max)
            if line.phi(candidate) < best_value:
                best_gamma = candidate
        self.last_step = best_gamma
        return best_gamma


@dataclass
class AdaptiveStep:
    """Pedregosa et al. (2020)'s adaptive step: a backtracked local smoothness estimate M."""

    eta: float = 0.9
    tau: float = 2.0
    max_estimate: float = 1e20
    estimate: float | None = None

    def __call__(self, line: LineSearch) -> float:
        if self.estimate is None:
            epsilon = min(1e-3, line.gamma_max)
            curvature = (line.dphi(epsilon) - line.dphi(0.0)) / (epsilon * line.norm_d2)
            self.estimate = curvature if curvature > 1e-12 else 1e-12  # NaN too: off the domain
        value = line.phi(0.0)
        slack = 1e-14 * abs(value)
        m = self.eta * self.estimate
        while m <= self.max_estimate:
            gamma = min(line.gap / (m * line.norm_d2), line.gamma_max)
            model = value - gamma * line.gap + 0.5 * gamma**2 * m * line.norm_d2
            if line.phi(gamma) <= model + slack:
                self.estimate = m
                return gamma
            m *= self.tau
        return 0.0


@dataclass
class GoldenSectionStep:
    """Golden-section search for the minimiser of φ on [0, γ_max] (exact line search)."""

    tolerance: float = 1e-7  # final bracket width, relative to γ_max

    RATIO: ClassVar[float] = (math.sqrt(5.0) - 1.0) / 2.0

    def __call__(self, line: LineSearch) -> float:
        upper = _largest_feasible_step(line, line.gamma_max)
        low, high = 0.0, upper
        left, right = high - self.RATIO * high, self.RATIO * high
        left_value, right_value = line.phi(left), line.phi(right)
        while high - low > self.tolerance * upper:
            if left_value <= right_value:
                high, right, right_value = right, left, left_value
                left = high - self.RATIO * (high - low)
                left_value = line.phi(left)
            else:
                low, left, left_value = left, right, right_value
                right = low + self.RATIO * (high - low)
                right_value = line.phi(right)
        candidates = [(left_value, left), (right_value, right)]
        if high == upper:  # the minimiser may be the end itself: a full (or drop) step
            candidates.insert(0, (line.phi(upper), upper))
        return min(candidates, key=lambda pair: pair[0])[1]


@dataclass
class OpenLoopStep:
    """γ = 2/(t + 2), clipped to γ_max (and halved into f's domain)."""

    def __call__(self, line: LineSearch) -> float:
        return _largest_feasible_step(line, min(2.0 / (line.iteration + 2.0), line.gamma_max))


@dataclass
class ShortStep:
    """γ = min(gap/(L‖d‖²), γ_max): the minimiser of the L-smooth upper model."""

    def __call__(self, line: LineSearch) -> float:
        if line.lipschitz is None:
            raise ValueError(
                "the short step needs the smoothness constant L, and this problem has none "
                "(use it on least_squares or logistic)"
            )
        return min(line.gap / (line.lipschitz * line.norm_d2), line.gamma_max)


# ---- agents ----------------------------------------------------------------------------------


class StepRuleAgent:
    """Frank–Wolfe with one step rule, on either form of the task (module docstring).

    ``variant`` is ``"away"`` (away-step FW, default) or ``"vanilla"``; other keyword
    arguments go to the rule (e.g. ``max_steps=10`` for the secant rule).
    """

    rule: ClassVar[type]

    def __init__(self, env: Any = None, seed: int = 0, variant: str = "away", **rule_kwargs: Any):
        self.variant = check_variant(variant)
        self.rule_kwargs = rule_kwargs
        self.make_rule()  # unknown rule arguments fail here, not mid-episode
        self._rule: Any = None

    def make_rule(self) -> Any:
        return self.rule(**self.rule_kwargs)

    def reset(self, seed: int | None = None) -> None:
        self._rule = None

    def act(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        instance = info["instance"]
        if isinstance(instance, LineSearch):
            if self._rule is None or instance.iteration == 0:
                self._rule = self.make_rule()
            return np.array([min(self._rule(instance) / instance.gamma_max, 1.0)])
        return instance.run(self.make_rule(), self.variant).x


class SecantAgent(StepRuleAgent):
    """``fw-secant``: the paper's secant line search."""

    rule = SecantStep


class AdaptiveAgent(StepRuleAgent):
    """``fw-adaptive``: Pedregosa et al. (2020)'s adaptive step size."""

    rule = AdaptiveStep


class BacktrackingAgent(StepRuleAgent):
    """``fw-backtracking``: Armijo backtracking from γ_max."""

    rule = BacktrackingStep


class GoldenSectionAgent(StepRuleAgent):
    """``fw-golden``: golden-section search, the exact line search."""

    rule = GoldenSectionStep


class OpenLoopAgent(StepRuleAgent):
    """``fw-open-loop``: the agnostic step 2/(t + 2)."""

    rule = OpenLoopStep


class ShortStepAgent(StepRuleAgent):
    """``fw-short-step``: the short step with the known smoothness constant L."""

    rule = ShortStep
