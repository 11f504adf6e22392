"""Pareto front learning with hypernetworks, PHN-HVVS and its baselines (Chen et al., ICML
2025)."""

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from pymoo.indicators.hv import HV
from pymoo.indicators.igd import IGD
from pymoo.problems import get_problem

import omnigym
from omnigym.agents.methods.phn_hvvs import (
    PHNHVIAgent,
    PHNHVVSAgent,
    PHNLSAgent,
    PHNRandomRaysAgent,
    VoronoiGA,
    evolve_voronoi_sites,
    hypervolume_gradient,
    hypervolume_gradient_2d,
    hypervolume_weights,
)
from omnigym.envs.methods.phn_hvvs import (
    PROBLEMS,
    REGRESSION_NOISE,
    ParetoFrontLearning,
    cell_area_variance,
    cell_points,
    simplex_points,
)
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims import phn_hvvs as checker
from tests.helpers import finished_run

ENV_ID = "Methods/ParetoFrontLearning-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "phn_hvvs.yaml"
EVERY_PROBLEM = [("fonseca_fleming", 2), ("convex_quadratic", 2), ("dtlz2", 3), ("regression", 4)]


def _answer(env, agent, seed=0):
    observation, info = env.reset(seed=seed)
    _, reward, _, _, info = env.step(agent.act(observation, info))
    return reward, info["metrics"]


def _fonseca_fleming_on_its_front(env, seed=0):
    """A hand-made answer on the true front: x = c + s/√d·1 for s evenly in [−1, 1]."""
    observation, _ = env.reset(seed=seed)
    s = np.linspace(-1.0, 1.0, env.action_space.shape[0])
    return observation["center"] + s[:, None] / np.sqrt(env.problem.n_var)


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID, problem="dtlz2", n_obj=5)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space.shape == (15, 14)
    paper = omnigym.make(ENV_ID, size="paper", problem="regression", n_obj=7)
    assert paper.action_space.shape == (84, 10)
    assert paper.observation_space["features"].shape == (7, 256, 10)


@pytest.mark.parametrize(("problem", "n_obj"), EVERY_PROBLEM)
def test_the_seed_draws_the_instance_and_leaves_rays_and_reference_point_fixed(problem, n_obj):
    first = ParetoFrontLearning(problem=problem, n_obj=n_obj)
    second = ParetoFrontLearning(problem=problem, n_obj=n_obj)
    a, _ = first.reset(seed=7)
    b, _ = second.reset(seed=7)
    c, _ = second.reset(seed=8)
    assert all(np.array_equal(a[key], b[key]) for key in a)
    assert np.array_equal(a["rays"], c["rays"])
    assert np.array_equal(a["reference_point"], c["reference_point"])
    drawn = [key for key in a if key not in ("rays", "reference_point")]
    assert drawn and all(not np.array_equal(a[key], c[key]) for key in drawn)
    solution = first.action_space.sample()
    second.reset(seed=7)
    assert first.step(solution)[1] == second.step(solution)[1]


def test_rays_are_das_dennis_and_the_reference_point_is_ten_percent_past_the_nadir():
    env = ParetoFrontLearning(problem="dtlz2", n_obj=3)
    observation, _ = env.reset(seed=0)
    rays = observation["rays"]
    assert rays.shape == (15, 3) and np.allclose(rays.sum(1), 1.0)
    assert np.allclose(rays * 4, np.round(rays * 4))  # 4 partitions
    assert observation["reference_point"] == pytest.approx([1.1, 1.1, 1.1])


def test_dtlz2_with_centred_distance_variables_is_pymoos_dtlz2():
    env = ParetoFrontLearning(problem="dtlz2", n_obj=5)
    x = np.random.default_rng(0).random((6, 14))
    expected = get_problem("dtlz2", n_var=14, n_obj=5).evaluate(x)
    assert env.problem.losses({"center": np.full(10, 0.5)}, x) == pytest.approx(expected)


@pytest.mark.parametrize(("problem", "n_obj"), EVERY_PROBLEM)
def test_the_losses_are_the_same_for_numpy_arrays_and_torch_tensors(problem, n_obj):
    env = ParetoFrontLearning(problem=problem, n_obj=n_obj)
    observation, _ = env.reset(seed=1)
    x = env.action_space.sample()
    as_numpy = env.problem.losses(observation, x)
    tensors = {key: torch.as_tensor(value) for key, value in observation.items()}
    as_torch = env.problem.losses(tensors, torch.as_tensor(x), torch).numpy()
    assert as_numpy.shape == (len(x), n_obj) and as_torch == pytest.approx(as_numpy)


def test_the_reward_is_pymoos_hypervolume_of_a_hand_made_answer():
    env = ParetoFrontLearning(problem="fonseca_fleming")
    solution = _fonseca_fleming_on_its_front(env)
    s = np.linspace(-1.0, 1.0, len(solution))
    on_front = np.stack([1 - np.exp(-((s - 1) ** 2)), 1 - np.exp(-((s + 1) ** 2))], 1)
    expected = HV(ref_point=np.full(2, 1.1 * (1 - np.exp(-4.0))))(on_front)
    _, reward, terminated, _, info = env.step(solution)
    assert terminated and reward == pytest.approx(expected) == info["metrics"]["hv"]
    assert info["metrics"]["igd"] < 0.12  # 11 points evenly in s, the front sampled densely
    assert info["invalid_action"] is False and info["metrics"]["invalid"] == 0.0


def test_regression_is_scored_by_the_population_losses_of_the_hidden_tasks():
    env = ParetoFrontLearning(problem="regression", n_obj=4)
    observation, _ = env.reset(seed=2)
    weights = env.instance[1]  # β_j, hidden from the observation
    rays = observation["rays"]
    _, reward, _, _, info = env.step(rays @ weights)  # w = Σ_j r_j β_j, on the front
    gaps = rays[:, None, :] - np.eye(4)[None]
    losses = REGRESSION_NOISE**2 + 0.5 * (gaps**2).sum(-1)
    assert reward == pytest.approx(HV(ref_point=np.full(4, 0.25 + 1.1))(losses))
    assert info["metrics"]["igd"] == pytest.approx(IGD(env.problem.front())(losses))


def test_an_answer_collapsed_to_one_point_has_a_high_cell_area_variance():
    env = ParetoFrontLearning(problem="fonseca_fleming")
    spread = _fonseca_fleming_on_its_front(env)
    spread_metrics = env.step(spread)[4]["metrics"]
    env.reset(seed=0)
    collapsed_metrics = env.step(np.repeat(spread[:1], len(spread), axis=0))[4]["metrics"]
    assert spread_metrics["cell_area_variance"] < 0.01
    assert collapsed_metrics["cell_area_variance"] > 5 * spread_metrics["cell_area_variance"]
    assert collapsed_metrics["hv"] < spread_metrics["hv"]


def test_wrong_shapes_and_out_of_bounds_raise_and_nan_fails_the_episode():
    env = ParetoFrontLearning()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(11, 9\), expected \(11, 10\).*Box"):
        env.step(np.zeros((11, 9)))
    with pytest.raises(ValueError, match="out of the bounds.*Box"):
        env.step(np.full((11, 10), 5.0))
    solution = np.zeros((11, 10))
    solution[2, 3] = np.nan
    _, reward, terminated, _, info = env.step(solution)
    assert terminated and reward == 0.0 and info["invalid_action"] is True


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"problem": "zdt1"}, "problem"),
        ({"problem": "fonseca_fleming", "n_obj": 3}, "n_obj"),
        ({"problem": "dtlz2", "n_obj": 4}, "n_obj"),
        ({"problem": "regression", "n_obj": 8}, "n_obj"),
        ({"problem": "regression", "n_obj": True}, "n_obj"),
        ({"size": "huge"}, "size"),
    ],
)
def test_bad_constructor_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ParetoFrontLearning(**kwargs)


def test_every_problem_has_a_default_objective_count():
    assert [ParetoFrontLearning(problem=p).problem.n_obj for p in PROBLEMS] == [2, 2, 3, 5]


# ---- hypervolume gradients ---------------------------------------------------------------------


def _finite_differences(points, reference, step=1e-6):
    hv = HV(ref_point=reference)
    gradient = np.zeros_like(points)
    for i, k in itertools.product(*map(range, points.shape)):
        up, down = points.copy(), points.copy()
        up[i, k] += step
        down[i, k] -= step
        gradient[i, k] = (hv(up) - hv(down)) / (2 * step)
    return gradient


def test_the_2d_hypervolume_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    x = np.sort(rng.random(7))
    points = np.stack([x, 1.0 - np.sqrt(x)], 1)[rng.permutation(7)]  # non-dominated, shuffled
    reference = np.array([1.2, 1.3])
    analytic = hypervolume_gradient_2d(points, reference)
    assert analytic == pytest.approx(_finite_differences(points, reference), abs=1e-6)
    assert np.all(analytic < 0)


def test_the_monte_carlo_hypervolume_gradient_matches_finite_differences_in_3d():
    directions = simplex_points(5, 3, np.random.default_rng(1))
    points = directions / np.linalg.norm(directions, axis=1, keepdims=True)  # on the sphere
    reference = np.full(3, 1.1)
    estimate = hypervolume_gradient(points, reference, np.random.default_rng(2), samples=20_000)
    exact = _finite_differences(points, reference)
    assert estimate == pytest.approx(exact, abs=0.02)
    with pytest.raises(ValueError, match="rng"):
        hypervolume_gradient(points, reference)


def test_hypervolume_weights_are_unit_vectors_taken_per_non_dominated_front():
    losses = np.array([[0.2, 0.8], [0.8, 0.2], [0.95, 0.95]])  # the last is dominated
    weights = hypervolume_weights(losses, np.array([1.0, 1.0]))
    reference = np.full(2, 1.1 * 0.95)  # max(ref, 1.1·max ℓ)
    alone = -hypervolume_gradient_2d(losses[2:], reference)[0]
    assert np.linalg.norm(weights, axis=1) == pytest.approx(np.ones(3))
    assert weights[2] == pytest.approx(alone / np.linalg.norm(alone))
    assert weights[0, 1] > weights[0, 0]  # the first point gains most by lowering ℓ₂


# ---- the genetic algorithm ---------------------------------------------------------------------


def test_the_genetic_algorithm_lowers_the_cell_area_variance_below_random_sites():
    grid = evolve_voronoi_sites(8, 3, VoronoiGA(generations=15, mc_points=5000))
    assert np.allclose(grid.sites.sum(1), 1.0) and np.all(grid.sites >= 0)
    assert grid.variance < grid.initial_variances.mean() / 3
    held_out = cell_area_variance(grid.sites, cell_points(3))
    assert held_out < np.median(grid.initial_variances)
    rays = grid.sample(np.random.default_rng(0), 8)
    assert sorted(np.argmin(((rays[:, None] - grid.sites[None]) ** 2).sum(-1), 1)) == list(
        range(8)
    )  # one ray per cell


# ---- the agents --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fonseca_fleming():
    return ParetoFrontLearning(problem="fonseca_fleming")


def test_a_trained_hypernetwork_beats_an_untrained_one_and_random_answers(fonseca_fleming):
    trained, _ = _answer(fonseca_fleming, PHNHVVSAgent(env=fonseca_fleming, steps=400))
    untrained, _ = _answer(fonseca_fleming, PHNHVVSAgent(env=fonseca_fleming, steps=0))
    random = omnigym.make_agent("random", env=fonseca_fleming, env_id=ENV_ID)
    random.reset(0)
    random_hv, _ = _answer(fonseca_fleming, random)
    assert trained > 0.4 and trained > untrained + 0.2 and trained > random_hv + 0.2


def test_linear_scalarisation_misses_the_concave_front_that_hypervolume_methods_cover(
    fonseca_fleming,
):
    ls_hv, ls = _answer(fonseca_fleming, PHNLSAgent(env=fonseca_fleming, steps=800))
    hvi_hv, hvi = _answer(fonseca_fleming, PHNHVIAgent(env=fonseca_fleming, steps=800))
    assert ls_hv < hvi_hv - 0.1
    assert ls["cell_area_variance"] > 5 * hvi["cell_area_variance"]


def test_agents_use_only_the_observation_and_repeat_under_the_same_seed(fonseca_fleming):
    observation, info = fonseca_fleming.reset(seed=4)
    fonseca_fleming.instance = None  # the scoring side is out of reach
    agent = omnigym.make_agent("phn-random-rays", env=fonseca_fleming, env_id=ENV_ID, steps=30)
    assert isinstance(agent, PHNRandomRaysAgent)
    agent.reset(5)
    first = agent.act(observation, info)
    agent.reset(5)
    assert np.array_equal(first, agent.act(observation, info))
    agent.reset(6)
    assert not np.array_equal(first, agent.act(observation, info))
    assert first.shape == (11, 10) and np.all(np.abs(first) <= 4.0)


def test_agents_refuse_bad_settings_and_a_missing_environment(fonseca_fleming):
    with pytest.raises(ValueError, match="environment"):
        PHNHVVSAgent()
    with pytest.raises(ValueError, match="steps"):
        PHNLSAgent(env=fonseca_fleming, steps=-1)
    with pytest.raises(ValueError, match="penalty"):
        PHNHVIAgent(env=fonseca_fleming, penalty=-1.0)


def test_the_penalty_defaults_to_the_papers_value_per_problem():
    assert PHNHVVSAgent(env=ParetoFrontLearning()).penalty == 5.0
    assert PHNHVVSAgent(env=ParetoFrontLearning(problem="dtlz2")).penalty == 4.0
    assert PHNHVIAgent(env=ParetoFrontLearning(problem="regression")).penalty == 0.001


# ---- the claims checker ------------------------------------------------------------------------


def _records(hv):
    """Fake episode records: env label -> agent -> HV, two seeds of two draws each."""
    records = []
    for env, by_agent in hv.items():
        for agent, value in by_agent.items():
            for seed, episode in itertools.product((0, 1), (0, 1)):
                noise = 0.002 * (seed - episode) + 0.001 * episode
                metrics = {"hv": value + noise, "cell_area_variance": 0.001}
                records.append(
                    {
                        "env_id": env,
                        "agent": agent,
                        "seed": seed,
                        "episode": episode,
                        "return": value + noise,
                        "metrics": metrics,
                    }
                )
    return records


@pytest.fixture
def no_ga(monkeypatch):
    """The checker's GA record, stubbed: the GA itself is tested above."""
    monkeypatch.setattr(checker, "grid_variances", lambda n, j: {"ga": 1e-5, "random_sites": 1e-3})


def _statuses(records):
    result = checker.check(finished_run(records))
    return [entry["status"] for entry in result], result


def test_claims_pass_when_ls_falls_short_on_concave_fronts_and_hvvs_holds_its_own(no_ga):
    records = _records(
        {
            "fonseca_fleming J=2": {"phn-hvvs": 0.46, "phn-hvi": 0.459, "phn-ls": 0.30},
            "convex_quadratic J=2": {"phn-hvvs": 1.0, "phn-hvi": 1.001, "phn-ls": 1.0},
            "dtlz2 J=3": {"phn-hvvs": 0.55, "phn-hvi": 0.6, "phn-ls": 0.28},
            "regression J=5": {"phn-hvvs": 0.30, "phn-hvi": 0.29, "phn-random-rays": 0.29},
        }
    )
    statuses, result = _statuses(records)
    assert statuses == ["pass", "pass", "pass", "recorded", "recorded"]
    concave = result[0]["measured"]["concave"]
    assert set(concave) == {"fonseca_fleming J=2", "dtlz2 J=3"}
    assert concave["fonseca_fleming J=2"]["diff"]["mean"] == pytest.approx(0.16)
    assert result[4]["measured"]["ablation"]["regression J=5"]["diff"]["mean"] == pytest.approx(
        0.01
    )
    assert result[3]["measured"]["sites"] == {
        f"J={n}": {"ga": 1e-5, "random_sites": 1e-3} for n in (2, 3, 5)
    }


def test_claims_fail_when_ls_keeps_up_hvi_drifts_or_hvvs_falls_behind(no_ga):
    records = _records(
        {
            "fonseca_fleming J=2": {"phn-hvvs": 0.46, "phn-hvi": 0.40, "phn-ls": 0.46},
            "regression J=7": {"phn-hvvs": 0.13, "phn-hvi": 0.14},
        }
    )
    statuses, _ = _statuses(records)
    assert statuses == ["fail", "fail", "fail", "recorded", "not run"]


def test_claims_are_not_run_without_the_problems_they_need(no_ga):
    records = _records({"convex_quadratic J=3x": {"phn-hvvs": 1.0, "phn-ls": 1.0}})
    statuses, _ = _statuses(records)
    assert statuses == ["not run"] * 5


def test_the_claims_scenario_loads_and_its_quick_profile_covers_every_checked_claim():
    scenario = load_scenario(SCENARIO)
    assert scenario.out == "results/methods/phn_hvvs"
    assert scenario.claims == "omnigym.scenarios.claims.phn_hvvs:check"
    quick = scenario.quickened()
    labels = [env.label for env in quick.envs]
    assert {"fonseca_fleming J=2", "dtlz2 J=3", "regression J=5"} <= set(labels)
    assert {agent.name for agent in quick.agents} == {
        "phn-hvvs",
        "phn-hvi",
        "phn-ls",
        "phn-random-rays",
    }
