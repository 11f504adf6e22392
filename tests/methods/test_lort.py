"""LoRT / D-LoRT on transferable low-tubal-rank tensor regression (Wang et al., ICML 2025)."""

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.agents.methods.lort import (
    DLoRTAgent,
    LeastSquares,
    LoRTAgent,
    LoRTFusionOnlyAgent,
    PooledAgent,
    Settings,
    SubspaceProximity,
    TargetOnlyAgent,
    debias_one_step,
    fuse,
    t_factors,
    t_svt,
    tnn,
    tubal_rank,
)
from omnigym.envs.methods.lort import (
    SHIFT_UNIT,
    TARGET_DEPARTURE,
    TensorTransfer,
    low_tubal_rank,
    t_product,
)
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.lort import check
from tests.helpers import finished_run

ENV_ID = "Methods/TensorTransfer-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "lort.yaml"


def _relative_error(estimate, truth):
    return np.linalg.norm(estimate - truth) / np.linalg.norm(truth)


def _solution(estimate, iterations=0.0, floats=0.0):
    return {
        "estimate": estimate,
        "iterations": np.array([iterations]),
        "communicated_floats": np.array([floats]),
    }


# ---- t-SVD algebra ---------------------------------------------------------------------------


def _block_circulant(tensor):
    """bcirc(A): the (d1·d3) × (d2·d3) matrix whose block (i, j) is the frontal slice
    A[:, :, (i − j) mod d3] (Kilmer and Martin, 2011)."""
    d3 = tensor.shape[2]
    return np.block([[tensor[:, :, (i - j) % d3] for j in range(d3)] for i in range(d3)])


def _unfold(tensor):
    return np.concatenate([tensor[:, :, k] for k in range(tensor.shape[2])])


def test_t_product_is_the_block_circulant_matrix_product():
    rng = np.random.default_rng(0)
    left, right = rng.standard_normal((3, 2, 5)), rng.standard_normal((2, 4, 5))
    expected = _block_circulant(left) @ _unfold(right)
    assert np.allclose(_unfold(t_product(left, right)), expected)


def test_tnn_of_a_single_slice_is_the_matrix_nuclear_norm():
    matrix = np.random.default_rng(1).standard_normal((4, 3))
    assert tnn(matrix[:, :, None]) == pytest.approx(np.linalg.svd(matrix, compute_uv=False).sum())


def test_t_svt_is_the_proximal_map_of_the_tensor_nuclear_norm():
    rng = np.random.default_rng(2)
    point, threshold = rng.standard_normal((4, 3, 4)), 0.7

    def objective(candidate):
        return 0.5 * np.sum((candidate - point) ** 2) + threshold * tnn(candidate)

    proximal = t_svt(point, threshold)
    best = objective(proximal)
    for _ in range(20):
        assert objective(proximal + 0.05 * rng.standard_normal(point.shape)) > best
    assert np.allclose(t_svt(point, 0.0), point)
    assert np.allclose(t_svt(point, 1e6), 0.0)


def test_low_tubal_rank_tensors_have_their_rank_and_norm_and_split_into_real_factors():
    rng = np.random.default_rng(3)
    for shape in ((6, 5, 4), (5, 6, 3)):
        tensor = low_tubal_rank(rng, shape, 2, 1.5)
        assert tubal_rank(tensor) == 2
        assert np.linalg.norm(tensor) == pytest.approx(1.5)
        left, right = t_factors(tensor)
        assert left.shape == (shape[0], 2, shape[2]) and right.shape == (2, shape[1], shape[2])
        assert left.dtype == right.dtype == np.float64
        assert np.allclose(t_product(left, right), tensor)


# ---- the environment -------------------------------------------------------------------------


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.unwrapped.shape == (8, 8, 3) and env.unwrapped.sources == 5
    paper = omnigym.make(ENV_ID, size="paper").unwrapped
    assert paper.shape == (16, 16, 4)
    assert (paper.target_samples, paper.source_samples) == (100, 400)
    claim_shape = omnigym.make(ENV_ID, size="paper", shape=[12, 12, 4]).unwrapped
    assert claim_shape.action_space["estimate"].shape == (12, 12, 4)
    assert claim_shape.observation_space["source_design"].shape == (5, 400, 12, 12, 4)


def _exact_tensors(shift, seed=4):
    """Each task's tensor solved from its measurements: tiny tensors, near-noiseless, more
    samples than entries."""
    env = TensorTransfer(shift=shift, noise=1e-9, shape=(3, 3, 2))
    observation, _ = env.reset(seed=seed)

    def solve(design, response):
        matrix = design.reshape(len(design), -1)
        return np.linalg.lstsq(matrix, response, rcond=None)[0].reshape(env.shape)

    sources = [
        solve(design, response)
        for design, response in zip(
            observation["source_design"], observation["source_response"], strict=True
        )
    ]
    return (
        env.instance,
        solve(observation["target_design"], observation["target_response"]),
        sources,
    )


def test_a_draw_is_a_shared_component_plus_the_target_s_own_part_and_shifted_sources():
    target, solved_target, unshifted = _exact_tensors(shift=0.0)
    assert np.allclose(solved_target, target, atol=1e-6)
    shared = unshifted[0]
    # without shift every source is the shared component, of tubal rank 2
    assert all(np.allclose(source, shared, atol=1e-6) for source in unshifted)
    assert tubal_rank(shared, 1e-6) == 2 and np.linalg.norm(shared) == pytest.approx(1.0)
    own = target - shared
    assert tubal_rank(own, 1e-6) == 1 and np.linalg.norm(own) == pytest.approx(TARGET_DEPARTURE)
    # the same seed with shift 2 moves each source by a tubal-rank-1 tensor of norm 2·SHIFT_UNIT
    _, _, shifted = _exact_tensors(shift=2.0)
    for source in shifted:
        assert tubal_rank(source - shared, 1e-6) == 1
        assert np.linalg.norm(source - shared) == pytest.approx(2 * SHIFT_UNIT, rel=1e-5)


def test_source_designs_are_rescaled_by_the_covariate_shift():
    env = TensorTransfer(covariate_shift=0.3)
    observation, _ = env.reset(seed=0)
    assert np.allclose(env.design_scales, [0.7, 0.85, 1.0, 1.15, 1.3])
    spreads = observation["source_design"].reshape(5, -1).std(axis=1)
    assert np.allclose(spreads, env.design_scales, rtol=0.03)
    assert observation["target_design"].std() == pytest.approx(1.0, rel=0.03)


def test_completion_observes_distinct_entries_once_each_with_the_isotropic_scaling():
    env = TensorTransfer(task="completion", covariate_shift=0.3)
    observation, _ = env.reset(seed=0)
    entries = 8 * 8 * 3
    assert (env.target_samples, env.source_samples) == (round(0.1 * entries), round(0.4 * entries))
    target = observation["target_design"].reshape(env.target_samples, -1)
    assert np.array_equal(np.count_nonzero(target, axis=1), np.ones(env.target_samples))
    assert len(set(np.argmax(target, axis=1))) == env.target_samples
    for design, scale in zip(observation["source_design"], env.design_scales, strict=True):
        rows = design.reshape(env.source_samples, -1)
        assert np.allclose(rows.sum(axis=1), scale * np.sqrt(entries))
        assert len(set(np.argmax(rows, axis=1))) == env.source_samples


def test_the_reward_is_minus_the_relative_error_and_the_reported_costs_are_metrics():
    env = TensorTransfer()
    env.reset(seed=5)
    _, reward, terminated, _, info = env.step(_solution(env.instance, 12.0, 345.0))
    assert terminated and reward == pytest.approx(0.0)
    assert info["metrics"] == {
        "relative_error": 0.0,
        "iterations": 12.0,
        "communicated_floats": 345.0,
        "invalid": 0.0,
    }
    env.reset(seed=5)
    _, reward, _, _, info = env.step(_solution(2 * env.instance))
    assert reward == pytest.approx(-1.0) and info["metrics"]["relative_error"] == pytest.approx(1.0)


def test_non_finite_estimates_fail_the_episode_and_wrong_shapes_raise():
    env = TensorTransfer()
    env.reset(seed=0)
    estimate = np.zeros(env.shape)
    estimate[0, 0, 0] = np.nan
    _, reward, terminated, _, info = env.step(_solution(estimate))
    assert terminated and reward == -1.0 and info["invalid_action"] is True
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(8, 8\), expected \(8, 8, 3\)"):
        env.step(_solution(np.zeros((8, 8))))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"task": "regression"}, "task"),
        ({"shift": -1.0}, "shift"),
        ({"covariate_shift": 1.0}, "covariate_shift"),
        ({"sources": 0}, "sources"),
        ({"noise": 0.0}, "noise"),
        ({"size": "huge"}, "size"),
        ({"shape": (4, 4)}, "shape"),
    ],
)
def test_bad_constructor_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TensorTransfer(**kwargs)


# ---- estimators ------------------------------------------------------------------------------


def test_tnn_regression_recovers_a_low_rank_tensor_from_plentiful_noiseless_measurements():
    rng = np.random.default_rng(6)
    truth = low_tubal_rank(rng, (4, 4, 2), 1, 1.0)
    design = rng.standard_normal((100, 4, 4, 2))
    block = LeastSquares(design, design.reshape(100, -1) @ truth.ravel())
    settings = Settings(penalty=1e-4, max_iterations=2000, tolerance=1e-12)
    fit = fuse(block, [], truth.shape, 0.5, settings)
    assert _relative_error(fit.estimate, truth) < 1e-3


def test_one_debiasing_step_more_than_halves_the_shrinkage_error_and_keeps_the_ranks():
    rng = np.random.default_rng(7)
    truth = low_tubal_rank(rng, (5, 4, 3), 2, 1.0)
    design = rng.standard_normal((3000, 5, 4, 3))
    block = LeastSquares(design, design.reshape(3000, -1) @ truth.ravel())
    shrunk = t_svt(truth, 0.3)
    debiased = debias_one_step(block, shrunk)
    assert _relative_error(debiased, truth) < 0.5 * _relative_error(shrunk, truth)
    assert tubal_rank(debiased) == tubal_rank(shrunk) == 2


def test_a_subspace_stand_in_pulls_only_within_its_center_s_singular_subspaces():
    rng = np.random.default_rng(8)
    center = low_tubal_rank(rng, (5, 4, 3), 1, 1.0)
    stand_in = SubspaceProximity(center, curvature=3.0, samples=10)
    assert np.allclose(stand_in.gradient(center.ravel()), 0.0)
    assert np.allclose(stand_in.gradient(2 * center.ravel()), 3.0 * center.ravel())
    other = rng.standard_normal(center.size)
    outside = other - stand_in.project(other)
    assert np.linalg.norm(outside) > 1.0
    assert np.allclose(stand_in.gradient(center.ravel() + outside), 0.0)


def _errors(shift, seeds, agents):
    env = TensorTransfer(shift=shift)
    found = {name: [] for name in agents}
    for seed in seeds:
        observation, info = env.reset(seed=seed)
        for name, agent in agents.items():
            estimate = agent.act(observation, info)["estimate"]
            found[name].append(_relative_error(estimate, env.instance))
    return {name: float(np.mean(values)) for name, values in found.items()}


def test_at_a_large_shift_lort_beats_target_only_and_pooling():
    errors = _errors(
        shift=2.0,
        seeds=(0, 1),
        agents={"lort": LoRTAgent(), "target": TargetOnlyAgent(), "pooled": PooledAgent()},
    )
    assert errors["target"] > 0.8
    assert errors["lort"] < errors["pooled"] - 0.05 < errors["target"]


def test_without_shift_pooling_is_the_best_estimate():
    errors = _errors(
        shift=0.0,
        seeds=(0, 1),
        agents={"lort": LoRTFusionOnlyAgent(), "pooled": PooledAgent()},
    )
    assert errors["pooled"] < errors["lort"]


def test_d_lort_sends_factor_tensors_while_centralised_methods_need_the_raw_data():
    env = TensorTransfer(shift=0.5)
    observation, info = env.reset(seed=0)
    raw = 5 * env.source_samples * (8 * 8 * 3 + 1)
    for agent in (LoRTAgent(), LoRTFusionOnlyAgent(), PooledAgent()):
        assert agent.act(observation, info)["communicated_floats"][0] == raw
    assert TargetOnlyAgent().act(observation, info)["communicated_floats"][0] == 0
    solution = DLoRTAgent().act(observation, info)
    floats = solution["communicated_floats"][0]
    # each message: r_k·(8 + 8)·3 factor floats plus n_k and the curvature
    assert (floats - 5 * 2) % (16 * 3) == 0 and 0 < floats < raw / 100
    assert _relative_error(solution["estimate"], env.instance) < 0.8


def test_agents_use_only_the_observation_and_repeat_their_estimates():
    env = TensorTransfer(task="completion", shift=2.0)
    observation, info = env.reset(seed=1)
    kept = {key: value.copy() for key, value in observation.items()}
    for agent_class in (LoRTAgent, DLoRTAgent):
        first = agent_class(seed=0).act(observation, info)
        second = agent_class(env=env, seed=9).act(observation, info)
        assert np.array_equal(first["estimate"], second["estimate"])
        solves = 2 if agent_class is LoRTAgent else 2 + 5  # D-LoRT: each source's fit too
        assert 0 < first["iterations"][0] <= 150 * solves
    assert all(np.array_equal(observation[key], kept[key]) for key in kept)


# ---- claims ----------------------------------------------------------------------------------


PAPER_LIKE = {  # shift -> agent -> mean relative error
    0.0: {
        "lort": 0.28,
        "lort-fusion-only": 0.29,
        "d-lort": 0.3,
        "target-only": 0.87,
        "pooled": 0.26,
    },
    0.5: {
        "lort": 0.30,
        "lort-fusion-only": 0.31,
        "d-lort": 0.32,
        "target-only": 0.87,
        "pooled": 0.29,
    },
    2.0: {
        "lort": 0.29,
        "lort-fusion-only": 0.30,
        "d-lort": 0.31,
        "target-only": 0.87,
        "pooled": 0.45,
    },
}


def _records(errors_by_shift, task="sensing"):
    rng = np.random.default_rng(0)
    records = []
    for shift, errors in errors_by_shift.items():
        for seed in (0, 1):
            for episode in range(5):
                wobble = 0.01 * rng.standard_normal()  # shared by every agent on this draw
                for agent, error in errors.items():
                    floats = 2000.0 if agent == "d-lort" else 1_150_000.0
                    metrics = {"relative_error": error + wobble, "communicated_floats": floats}
                    records.append(
                        {
                            "env_id": f"{task} s={shift:g}",
                            "agent": agent,
                            "seed": seed,
                            "episode": episode,
                            "return": -(error + wobble),
                            "metrics": metrics,
                        }
                    )
    return records


def _statuses(records):
    return [entry["status"] for entry in check(finished_run(records, scorecard={}))]


def test_claims_pass_on_a_run_that_shows_the_paper_s_pattern():
    records = _records(PAPER_LIKE) + _records(PAPER_LIKE, task="completion")
    result = check(finished_run(records, scorecard={}))
    assert [entry["status"] for entry in result] == ["pass"] * 6 + ["recorded"]
    gap = result[3]["measured"]["pooled_minus_lort"]["s=2"]
    assert gap["mean"] == pytest.approx(0.16) and gap["ci95"][0] > 0
    assert result[3]["paper"] == {
        "relative_error at s=2, 12 × 12 × 4": {"lort": 0.29, "pooled": 0.45}
    }
    assert result[6]["measured"]["completion"]["s=2"]["pooled"]["mean"] == pytest.approx(
        0.45, abs=0.01
    )


def test_claims_fail_when_lort_loses_to_pooling_at_a_large_shift_or_d_lort_drifts():
    broken = {shift: dict(errors) for shift, errors in PAPER_LIKE.items()}
    broken[2.0]["lort"] = 0.5
    broken[2.0]["d-lort"] = 0.6
    statuses = _statuses(_records(broken))
    assert statuses[3] == "fail" and statuses[4] == "fail" and statuses[5] == "fail"
    assert statuses[:3] == ["pass"] * 3 and statuses[6] == "not run"


def test_every_checked_claim_fails_on_a_run_against_the_paper_s_pattern():
    reversed_pattern = {  # target-only good, pooling worst at s = 0 and best at s = 2, ...
        shift: {
            "lort": 0.28,
            "lort-fusion-only": 0.27,  # the refinement hurts
            "d-lort": 0.5,  # far from LoRT
            "target-only": 0.2,  # beats LoRT
            "pooled": 0.3 if shift == 0.0 else 0.2,
        }
        for shift in (0.0, 0.5, 2.0)
    }
    assert _statuses(_records(reversed_pattern)) == ["fail"] * 6 + ["not run"]


def test_claims_are_not_run_without_the_sweep():
    assert set(_statuses([])) == {"not run"}


def test_the_claims_scenario_loads_and_its_quick_profile_sweeps_the_sensing_shifts():
    scenario = load_scenario(SCENARIO)
    assert scenario.out == "results/methods/lort"
    assert scenario.claims == "omnigym.scenarios.claims.lort:check"
    assert {agent.name for agent in scenario.agents} == {
        "lort",
        "lort-fusion-only",
        "d-lort",
        "target-only",
        "pooled",
    }
    quick = scenario.quickened()
    assert [env.display for env in quick.envs] == [f"sensing s={s}" for s in ("0", "0.5", "1", "2")]
    assert all(env.kwargs["shape"] == [12, 12, 4] for env in scenario.envs)
