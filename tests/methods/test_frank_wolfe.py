"""Secant line search for Frank–Wolfe as a task (envs/methods/frank_wolfe.py and its agents)."""

import math
from pathlib import Path

import numpy as np
import pytest

import omnigym
from omnigym.agents.methods.frank_wolfe import (
    AdaptiveStep,
    GoldenSectionStep,
    SecantAgent,
    SecantStep,
    ShortStepAgent,
)
from omnigym.envs.methods.frank_wolfe import (
    MAX_ITERATIONS,
    PROBLEMS,
    TOLERANCE,
    FrankWolfeLineSearch,
    FrankWolfeLineSearchSteps,
    FrankWolfeProblem,
    FrankWolfeRun,
    L1Ball,
    draw_instance,
)
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.frank_wolfe import check
from tests.helpers import finished_run

ONE_STEP = "Methods/FrankWolfeLineSearch-v0"
STEPS = "Methods/FrankWolfeLineSearchSteps-v0"
ROOT = Path(__file__).resolve().parents[2]


def _problem(kind, seed=0):
    instance = draw_instance(kind, "small", np.random.default_rng(seed))
    return instance, FrankWolfeProblem(instance, TOLERANCE, MAX_ITERATIONS["small"])


def _play(env, agent, seed):
    agent.reset(seed)
    observation, info = env.reset(seed=seed)
    total = 0.0
    while True:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        total += reward
        if terminated or truncated:
            return total, info


# ---- the oracles --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", PROBLEMS)
def test_objective_gradients_match_central_differences(kind):
    instance, _ = _problem(kind, seed=1)
    objective = instance.objective
    x = instance.x0 if kind == "d_optimal" else np.full(len(instance.x0), 1.0 / len(instance.x0))
    direction = np.random.default_rng(2).normal(size=len(x))
    h = 1e-6
    numeric = (objective.value(x + h * direction) - objective.value(x - h * direction)) / (2 * h)
    assert objective.gradient(x) @ direction == pytest.approx(numeric, rel=1e-5, abs=1e-8)


def test_l1_ball_lmo_picks_the_signed_vertex_of_the_largest_gradient_entry():
    ball = L1Ball(4, radius=2.0)
    gradient = np.array([0.5, -3.0, 1.0, 2.0])
    k = ball.lmo(gradient)
    assert np.array_equal(ball.vertex(k), [0.0, 2.0, 0.0, 0.0])
    assert ball.vertex_values(gradient, np.array([k]))[0] == -6.0
    assert np.array_equal(ball.vertex(ball.lmo(-gradient)), [0.0, -2.0, 0.0, 0.0])


def test_oracles_count_every_call_and_line_searches_pay_once_per_point():
    _, problem = _problem("least_squares")
    run = FrankWolfeRun(problem, "away")
    assert (problem.grad_evals, problem.f_evals) == (1, 0)  # ∇f(x0)
    line = run.next_line_search()
    assert problem.lmo_calls == 1
    assert line.dphi(0.0) == pytest.approx(-line.gap)  # free: the driver holds ∇f(x)
    for _ in range(2):
        line.phi(0.5)
        line.dphi(0.5)
    assert (problem.f_evals, problem.grad_evals) == (1, 2)
    run.advance(0.5)
    assert problem.grad_evals == 2  # ∇f at the new iterate was already paid for


# ---- the step rules -----------------------------------------------------------------------


def test_the_secant_rule_lands_on_the_minimiser_of_a_quadratic_in_one_step():
    instance, problem = _problem("least_squares")
    line = FrankWolfeRun(problem, "away").next_line_search()
    a, rows = instance.objective.a, len(instance.objective.b)
    minimiser = line.gap / (float(np.sum((a @ line.d) ** 2)) / rows)  # φ is quadratic in γ
    assert 0.0 < minimiser < line.gamma_max
    before = problem.grad_evals
    rule = SecantStep()
    gamma = rule(line)
    assert gamma == pytest.approx(minimiser, rel=1e-10)
    # φ′ at γ₀ = 1, then at the secant point, where |φ′| ≤ 1e-8 stops it: one secant step.
    assert problem.grad_evals - before == 2
    assert abs(line.dphi(gamma)) <= rule.tolerance and rule.last_step == gamma


def test_golden_section_search_finds_the_same_minimiser_with_many_more_evaluations():
    _, problem = _problem("least_squares")
    secant_line = FrankWolfeRun(problem, "away").next_line_search()
    golden_line = FrankWolfeRun(problem, "away").next_line_search()
    secant_before = problem.f_evals
    secant = SecantStep()(secant_line)
    golden_before = problem.f_evals
    golden = GoldenSectionStep()(golden_line)
    assert golden == pytest.approx(secant, abs=1e-6)
    assert problem.f_evals - golden_before > 10 * (golden_before - secant_before)


def test_the_adaptive_rule_doubles_its_estimate_until_the_decrease_is_sufficient():
    instance, problem = _problem("least_squares")
    line = FrankWolfeRun(problem, "away").next_line_search()
    a, rows = instance.objective.a, len(instance.objective.b)
    curvature = float(np.sum((a @ line.d) ** 2)) / rows / line.norm_d2  # φ″ / ‖d‖²
    rule = AdaptiveStep(estimate=1e-6)  # far too optimistic: doubled until the test passes
    gamma = rule(line)
    # On a quadratic the test passes exactly when M ≥ the curvature: the first doubling past it.
    assert curvature * (1 - 1e-9) <= rule.estimate < 2 * curvature
    assert gamma == pytest.approx(min(line.gap / (rule.estimate * line.norm_d2), line.gamma_max))


def test_short_step_refuses_problems_without_a_smoothness_constant():
    env = FrankWolfeLineSearch(problem="portfolio")
    observation, info = env.reset(seed=0)
    assert observation["lipschitz"][0] == 0.0 and info["instance"].lipschitz is None
    with pytest.raises(ValueError, match="smoothness constant L"):
        ShortStepAgent(env).act(observation, info)


# ---- the driver ---------------------------------------------------------------------------


def test_away_steps_keep_the_iterate_equal_to_its_vertex_weights():
    instance, problem = _problem("logistic")
    run = FrankWolfeRun(problem, "away")
    rule, away_steps = SecantStep(), 0
    for _ in range(60):
        line = run.next_line_search()
        if line is None:
            break
        away_steps += line.away
        run.advance(rule(line))
    rebuilt = sum(w * instance.feasible_set.vertex(k) for k, w in run.weights.items())
    assert away_steps > 0
    assert sum(run.weights.values()) == pytest.approx(1.0)
    assert min(run.weights.values()) > 0.0
    np.testing.assert_allclose(run.x, rebuilt, atol=1e-12)


def test_a_negligible_vertex_weight_is_dropped_and_the_iterate_rebuilt():
    instance, problem = _problem("least_squares")
    run = FrankWolfeRun(problem, "away")
    line = run.next_line_search()
    target = instance.feasible_set.lmo(run.gradient)
    line.dphi(1.0 - 1e-14)  # a gradient the driver could reuse, but x will move
    before = problem.grad_evals
    run.advance(1.0 - 1e-14)  # leaves x0's vertex a weight of 1e-14
    assert run.weights == {target: 1.0}
    np.testing.assert_array_equal(run.x, instance.feasible_set.vertex(target))
    assert problem.grad_evals == before + 1  # ∇f at the rebuilt iterate, bought afresh


def test_a_step_out_of_the_domain_stops_the_run_at_the_last_feasible_iterate():
    instance, problem = _problem("d_optimal")
    result = problem.run(lambda line: line.gamma_max, variant="vanilla")  # x1 = a vertex: singular
    assert result.status == "left the domain" and result.iterations == 0
    np.testing.assert_array_equal(result.x, instance.x0)


def test_the_driver_refuses_a_step_outside_zero_gamma_max():
    _, problem = _problem("least_squares")
    with pytest.raises(ValueError, match=r"step size must lie in \[0, 1.0\]"):
        problem.run(lambda line: 1.5)


# ---- the one-step env ---------------------------------------------------------------------


def test_a_converged_run_scores_minus_log10_of_the_counted_evaluations():
    env = omnigym.make(ONE_STEP)
    reward, info = _play(env, omnigym.make_agent("fw-secant", env=env, env_id=ONE_STEP), seed=4)
    metrics = info["metrics"]
    assert info["success"] is True and metrics["gap"] <= TOLERANCE
    assert metrics["evaluations"] == metrics["f_evals"] + metrics["grad_evals"]
    assert reward == pytest.approx(-math.log10(metrics["evaluations"]))


def test_evaluations_are_read_from_the_oracles_not_from_the_agent():
    env = FrankWolfeLineSearch()
    _, info = env.reset(seed=0)
    oracles = info["instance"]
    x = SecantAgent(env).act(None, info)
    calls = oracles.f_evals
    for _ in range(7):
        oracles.f(x)
    _, _, _, _, step_info = env.step(x)
    assert step_info["metrics"]["f_evals"] == calls + 7


def test_answering_the_start_without_running_fails():
    env = FrankWolfeLineSearch()
    observation, _ = env.reset(seed=0)
    _, reward, terminated, _, info = env.step(observation["x0"])
    assert terminated and reward == -10.0 and info["success"] is False
    assert info["invalid_action"] is False and info["metrics"]["evaluations"] == 0.0


@pytest.mark.parametrize(
    ("problem", "solution"),
    [("least_squares", np.full(20, 0.5)), ("d_optimal", np.eye(40)[0])],
    ids=["off the simplex", "outside the domain"],
)
def test_points_outside_the_set_or_the_domain_are_invalid_answers(problem, solution):
    env = FrankWolfeLineSearch(problem=problem)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(solution)
    assert reward == -10.0 and info["invalid_action"] is True and info["success"] is False


def test_bad_solutions_raise_or_fail_as_the_methods_family_does():
    env = FrankWolfeLineSearch()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(3,\), expected \(20,\)"):
        env.step(np.zeros(3))
    _, reward, _, _, info = env.step(np.full(20, np.nan))
    assert reward == -10.0 and info["invalid_action"] is True


def test_unknown_problems_and_variants_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match="problem must be one of"):
        FrankWolfeLineSearch(problem="lasso")
    with pytest.raises(ValueError, match="variant must be one of"):
        FrankWolfeLineSearchSteps(variant="pairwise")
    with pytest.raises(ValueError, match="variant must be one of"):
        SecantAgent(variant="pairwise")


def test_the_same_seed_draws_the_same_instance():
    first, second = FrankWolfeLineSearch("logistic"), FrankWolfeLineSearch("logistic")
    observation_1, _ = first.reset(seed=9)
    observation_2, _ = second.reset(seed=9)
    np.testing.assert_array_equal(observation_1["x0"], observation_2["x0"])
    np.testing.assert_array_equal(first.instance.objective.a, second.instance.objective.a)


# ---- the multi-step env -------------------------------------------------------------------


def test_both_forms_count_the_same_secant_run_alike():
    one_step = omnigym.make(ONE_STEP, problem="portfolio")
    steps = omnigym.make(STEPS, problem="portfolio")
    _, one_info = _play(one_step, SecantAgent(one_step), seed=2)
    rewards, step_info = _play(steps, SecantAgent(steps), seed=2)
    for name in ("f_evals", "grad_evals", "iterations", "domain_evals"):
        assert step_info["metrics"][name] == one_info["metrics"][name], name
    assert step_info["metrics"]["value"] == pytest.approx(one_info["metrics"]["value"], rel=1e-12)
    assert step_info["success"] is True
    start = FrankWolfeLineSearchSteps(problem="portfolio").reset(seed=2)[0]["f"][0]
    assert rewards == pytest.approx(start - step_info["metrics"]["value"])  # decreases of f


def test_a_step_leaving_the_domain_ends_the_episode_as_invalid():
    env = FrankWolfeLineSearchSteps(problem="d_optimal", variant="vanilla")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(np.array([1.0]))
    assert terminated and reward == -10.0 and info["invalid_action"] is True
    assert info["instance"] is None


def test_the_multi_step_env_truncates_at_the_iteration_cap():
    env = FrankWolfeLineSearchSteps()
    env.reset(seed=0)
    truncated, steps = False, 0
    while not truncated:
        _, _, terminated, truncated, _ = env.step(np.array([1e-9]))
        steps += 1
        assert not terminated
    assert steps == MAX_ITERATIONS["small"]


# ---- the claim, on small instances, and its checker ---------------------------------------


def test_secant_matches_golden_iterations_at_a_fraction_of_the_evaluations():
    counts = {}
    for name in ("fw-secant", "fw-golden", "fw-adaptive"):
        env = omnigym.make(ONE_STEP)
        counts[name] = _play(env, omnigym.make_agent(name, env=env, env_id=ONE_STEP), 0)[1]
    secant, golden, adaptive = (
        counts[n]["metrics"] for n in ("fw-secant", "fw-golden", "fw-adaptive")
    )
    assert all(info["success"] for info in counts.values())
    assert secant["iterations"] == pytest.approx(golden["iterations"], rel=0.1)
    assert secant["evaluations"] < 0.2 * golden["evaluations"]
    assert adaptive["iterations"] > 1.5 * secant["iterations"]


def _result(env, agent, iterations, evaluations, success=1.0):
    def summary(value):
        return {"mean": value, "median": value, "iqm": value, "ci95": [value, value]}

    return {
        "env_id": env,
        "agent": agent,
        "success_rate": success,
        "metrics": {
            "iterations": summary(iterations),
            "evaluations": summary(evaluations),
            "gap": summary(1e-7),
        },
    }


def test_the_claims_checker_passes_the_papers_pattern_and_fails_its_opposite():
    paper = [
        _result("least_squares", "secant", 219, 1295),
        _result("least_squares", "golden", 300, 14101),
        _result("least_squares", "backtracking", 254, 2901),
        _result("least_squares", "adaptive", 342, 1088),
        _result("least_squares", "open-loop (FW)", 5001, 5001, success=0.0),
    ]
    result = check(finished_run([], scorecard={"results": paper}))
    assert [c["status"] for c in result] == ["pass", "pass", "pass", "recorded", "recorded"]
    assert result[1]["measured"]["evaluations"]["least_squares"]["secant"]["mean"] == 1295
    assert result[1]["paper"]["evaluations"]["least_squares"] == {
        "secant": 647 + 648,
        "golden": 13800 + 301,
        "backtracking": 2646 + 255,
    }
    assert result[3]["measured"]["vanilla"]["least_squares"]["open-loop (FW)"]["success_rate"] == 0
    opposite = [
        _result("portfolio", "secant", 900, 20000),
        _result("portfolio", "golden", 300, 14000),
        _result("portfolio", "backtracking", 254, 2900),
        _result("portfolio", "adaptive", 342, 1100),
    ]
    statuses = [c["status"] for c in check(finished_run([], scorecard={"results": opposite}))]
    assert statuses == ["fail", "fail", "fail", "not run", "recorded"]


def test_a_baseline_stopped_by_the_iteration_cap_counts_as_a_lower_bound():
    results = [
        _result("d_optimal", "secant", 1300, 6700),
        _result("d_optimal", "golden", 1400, 50000),
        _result("d_optimal", "backtracking", 2600, 90000, success=2 / 3),
        _result("d_optimal", "adaptive", 2100, 4500),
    ]
    statuses = [c["status"] for c in check(finished_run([], scorecard={"results": results}))]
    assert statuses[:3] == ["pass", "pass", "pass"]
    unconverged_secant = [dict(results[0], success_rate=0.5), *results[1:]]
    run = finished_run([], scorecard={"results": unconverged_secant})
    assert [c["status"] for c in check(run)][:3] == ["fail", "fail", "fail"]


def test_the_claims_are_not_run_without_the_four_away_step_rules():
    statuses = [c["status"] for c in check(finished_run([], scorecard={"results": []}))]
    assert statuses == ["not run"] * 5


def test_the_claims_scenario_loads_with_a_quick_profile():
    scenario = load_scenario(ROOT / "scenarios" / "claims" / "frank_wolfe.yaml")
    assert scenario.quick is not None and scenario.out == "results/methods/frank_wolfe"
    assert scenario.claims == "omnigym.scenarios.claims.frank_wolfe:check"
    assert {env.kwargs["problem"] for env in scenario.envs} == set(PROBLEMS)
