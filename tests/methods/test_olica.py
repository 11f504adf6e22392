"""Olica: structured pruning of a LLaMA-architecture model without retraining (docs/methods.md).

Everything here runs on the tiny byte-level model (built once, about a minute, then cached)."""

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.agents.methods.olica import (
    MagnitudePruneAgent,
    OlicaAgent,
    OlicaNoCalibrationAgent,
    WandaPruneAgent,
    decompose_heads,
    low_rank,
    qk_rank,
    rotary_pair_columns,
    shares,
)
from omnigym.envs.methods import llama
from omnigym.envs.methods.olica import (
    StructuredPruning,
    dense_solution,
    kept_parameters,
    structured_parameters,
)
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.olica import check

ENV_ID = "Methods/StructuredPruning-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "olica.yaml"


def _play(agent, seed=0, **kwargs):
    env = StructuredPruning(**kwargs)
    observation, info = env.reset(seed=seed)
    _, reward, terminated, _, info = env.step(agent.act(observation, info))
    assert terminated
    return reward, info


def test_the_registered_id_makes_the_tiny_model_task_that_passes_check_env():
    env = omnigym.make(ENV_ID)
    check_env(env.unwrapped, skip_render_check=True)
    space = env.action_space
    assert space["q"].shape == (2, 128, 128) and space["k"].shape == (2, 128, 64)
    assert space["q_a"].shape == (2, 128, 64) and space["k_b"].shape == (2, 42, 64)
    assert space["down"].shape == (2, 344, 128) and space["cal_a"].shape == (2, 128, 3)
    assert env.observation_space["calibration"].shape == (32, 64)


def test_the_forward_pass_matches_the_tiny_model_s_training_loss_scale():
    model = llama.load_model("tiny")
    assert model.parameters() == 256 * 128 + 128 + 2 * (
        2 * 128 + 2 * 128 * 128 + 2 * 128 * 64 + 3 * 128 * 344
    )
    _, info = _play(OlicaAgent(truncate=False, decompose=False), sparsity=0.0)
    # a trained byte model: far below the 256-way uniform perplexity
    assert 3.0 < info["metrics"]["perplexity_original"] < 30.0


def test_parameters_are_counted_as_nonzero_rows_times_nonzero_columns():
    matrix = np.ones((2, 4, 5))
    matrix[0, 1, :] = 0.0  # a removed input
    matrix[0, :, 2] = 0.0  # a removed output
    matrix[1, 0, 0] = 0.0  # an unstructured zero saves nothing
    assert structured_parameters(matrix) == 3 * 4 + 4 * 5


def test_the_dense_model_keeps_every_parameter_and_its_perplexity():
    env = StructuredPruning(sparsity=0.0)
    env.reset(seed=0)
    solution = dense_solution(env.model)
    assert kept_parameters(env.model, solution) == env.model.parameters()
    _, reward, _, _, info = env.step(solution)
    metrics = info["metrics"]
    assert metrics["params_kept"] == 1.0 and metrics["layer_rel_error_max"] == 0.0
    assert metrics["perplexity"] == pytest.approx(metrics["perplexity_original"], rel=1e-6)
    assert reward == pytest.approx(-np.log(metrics["perplexity"]))


def test_an_answer_over_the_budget_scores_minus_20_and_is_flagged():
    env = StructuredPruning(sparsity=0.2)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(dense_solution(env.model))
    assert reward == -20.0 and terminated and info["invalid_action"] is True
    assert info["metrics"] == {"invalid": 1.0} and env.budget < env.model.parameters()


def test_non_finite_answers_fail_and_wrong_shapes_raise_naming_them():
    env = StructuredPruning(sparsity=0.0)
    env.reset(seed=0)
    solution = dense_solution(env.model)
    solution["up"][0, 0, 0] = np.nan
    _, reward, _, _, info = env.step(solution)
    assert reward == -20.0 and info["invalid_action"] is True
    env.reset(seed=0)
    solution = dense_solution(env.model)
    solution["q"] = solution["q"][:, :, :64]
    with pytest.raises(ValueError, match=r"shape \(2, 128, 64\), expected \(2, 128, 128\)"):
        env.step(solution)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"sparsity": -0.1}, "sparsity"), ({"sparsity": 0.9}, "sparsity"), ({"size": "huge"}, "size"),
     ({"calibration_samples": 0}, "calibration_samples")],
)  # fmt: skip
def test_bad_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        StructuredPruning(**kwargs)


def test_the_decomposition_reproduces_each_head_s_ov_product_and_orders_its_spectrum():
    rng = np.random.default_rng(0)
    v = rng.standard_normal((24, 6))
    blocks = [rng.standard_normal((6, 24)) for _ in range(3)]
    v_new, blocks_new, rotation = decompose_heads(v, blocks)
    for old, new in zip(blocks, blocks_new, strict=True):
        assert np.allclose(v_new @ new, v @ old)
    assert np.allclose(v @ rotation, v_new)
    product = v @ np.concatenate(blocks, axis=1)
    singular = np.linalg.svd(product, compute_uv=False)
    stacked = np.concatenate(blocks_new, axis=1)
    for rank in (1, 3, 5):  # keeping the first neurons is the best rank-r cut (Eckart-Young)
        error = np.linalg.norm(product - v_new[:, :rank] @ stacked[:rank])
        assert error == pytest.approx(np.sqrt(np.sum(singular[rank:] ** 2)))


def test_the_untruncated_decomposition_reproduces_the_model():
    _, info = _play(OlicaAgent(truncate=False), sparsity=0.0)
    metrics = info["metrics"]
    assert metrics["layer_rel_error_max"] < 1e-5
    assert metrics["perplexity"] == pytest.approx(metrics["perplexity_original"], rel=1e-5)


def test_a_full_rank_weighted_svd_is_exact_and_a_truncated_one_is_best_in_the_weighted_norm():
    rng = np.random.default_rng(1)
    weight, scale = rng.standard_normal((10, 8)), rng.uniform(0.1, 3.0, 10)
    a, b = low_rank(weight, scale, 8)
    assert np.allclose(a @ b, weight)
    a, b = low_rank(weight, scale, 3)
    weighted_error = np.linalg.norm(scale[:, None] * (weight - a @ b))
    plain_a, plain_b = low_rank(weight, None, 3)
    assert weighted_error < np.linalg.norm(scale[:, None] * (weight - plain_a @ plain_b))


def test_rotary_pairs_take_both_halves_of_a_head_and_every_query_head_of_its_group():
    config = llama.TINY
    q_columns, k_columns = rotary_pair_columns(config, group=1, pair=3)
    assert k_columns == [32 + 3, 32 + 19]
    assert q_columns == [64 + 3, 64 + 19, 96 + 3, 96 + 19]


def test_the_allocation_is_the_paper_s():
    assert shares(0.2, 3.0) == pytest.approx((0.4, 0.1))
    assert shares(0.5, 3.0) == pytest.approx((0.75, 0.25))


@pytest.mark.parametrize("sparsity", [0.2, 0.3])
def test_every_agent_meets_the_budget_and_olica_beats_magnitude_and_wanda_pruning(sparsity):
    perplexity = {}
    for agent in (
        OlicaAgent(),
        OlicaNoCalibrationAgent(),
        WandaPruneAgent(),
        MagnitudePruneAgent(),
    ):
        reward, info = _play(agent, sparsity=sparsity)
        assert info["invalid_action"] is False
        assert 1 - sparsity - 0.01 < info["metrics"]["params_kept"] <= 1 - sparsity
        perplexity[type(agent).__name__] = info["metrics"]["perplexity"]
    assert perplexity["OlicaAgent"] < perplexity["WandaPruneAgent"]
    assert perplexity["OlicaNoCalibrationAgent"] < perplexity["MagnitudePruneAgent"]


def test_olica_calibrates_a_linear_branch_on_one_layer_but_not_the_last():
    env = StructuredPruning(sparsity=0.3)
    observation, info = env.reset(seed=0)
    solution = OlicaAgent().act(observation, info)
    assert np.any(solution["cal_a"][0]) and not np.any(solution["cal_a"][1])
    rank = qk_rank(llama.TINY, "q", shares(0.3, 3.0)[0])
    assert rank == 25 and np.count_nonzero(np.any(solution["q_a"][0] != 0, axis=0)) == rank


def test_prune_seconds_count_the_shared_calibration_pass_once_for_every_agent():
    env = StructuredPruning(sparsity=0.2, calibration_samples=8)
    observation, info = env.reset(seed=11)
    _, _, _, _, first = env.step(OlicaNoCalibrationAgent().act(observation, info))
    statistics = info["instance"].statistics()
    observation, info = env.reset(seed=11)
    _, _, _, _, second = env.step(WandaPruneAgent().act(observation, info))
    for metrics in (first["metrics"], second["metrics"]):
        assert metrics["prune_seconds"] >= statistics.seconds
        assert metrics["prune_cpu_seconds"] >= statistics.cpu_seconds


# ---- claims ----------------------------------------------------------------------------------

PAPER_LIKE = {  # sparsity -> agent -> perplexity
    "s=0.2": {"olica": 20.0, "olica-no-calibration": 20.6, "olica-unrotated": 21.5,
              "olica-plain-svd": 20.3, "wanda-prune": 24.0, "magnitude-prune": 30.0},
    "s=0.3": {"olica": 24.0, "olica-no-calibration": 25.5, "olica-unrotated": 27.0,
              "olica-plain-svd": 24.5, "wanda-prune": 33.0, "magnitude-prune": 45.0},
}  # fmt: skip


def _records(table, untruncated=1.0, prune_seconds=400.0):
    rng = np.random.default_rng(0)
    records = []
    for seed in (0, 1, 2):
        for episode in (0, 1):
            wobble = np.exp(0.01 * rng.standard_normal())  # shared by every agent of a draw
            dense = 15.0 * wobble
            records.append(_record("s=0", "olica-untruncated", seed, episode, dense * untruncated,
                                   dense, 100.0, 1e-7))  # fmt: skip
            for env, agents in table.items():
                for agent, perplexity in agents.items():
                    records.append(_record(env, agent, seed, episode, perplexity * wobble, dense,
                                           prune_seconds, 0.2))  # fmt: skip
    return records


def _record(env, agent, seed, episode, perplexity, dense, seconds, layer_error):
    metrics = {"perplexity": perplexity, "perplexity_original": dense, "params_kept": 0.8,
               "prune_seconds": 2 * seconds, "prune_cpu_seconds": seconds,
               "layer_rel_error_max": layer_error}  # fmt: skip
    return {"env_id": env, "agent": agent, "seed": seed, "episode": episode,
            "return": -np.log(perplexity), "metrics": metrics}  # fmt: skip


def _statuses(records, scenario=None):
    scenario = scenario or load_scenario(SCENARIO)
    run = Run(scenario, {}, RunFolder(Path("unused")), {}, records)
    return [entry["status"] for entry in check(run)]


def test_claims_pass_on_a_run_that_shows_the_paper_s_pattern():
    assert _statuses(_records(PAPER_LIKE)) == ["pass"] * 4 + ["recorded"]


def test_each_claim_fails_when_its_pattern_breaks():
    unrotated = {env: dict(agents) for env, agents in PAPER_LIKE.items()}
    unrotated["s=0.3"]["olica-unrotated"] = 25.0  # better than the decomposition
    assert _statuses(_records(unrotated))[0] == "fail"
    flat = {env: dict(agents) for env, agents in PAPER_LIKE.items()}
    flat["s=0.3"]["olica"] = 25.4  # calibration helps less at 30% than at 20%
    assert _statuses(_records(flat))[1] == "fail"
    assert _statuses(_records(PAPER_LIKE, untruncated=1.001))[2] == "fail"
    assert _statuses(_records(PAPER_LIKE, prune_seconds=1200.0))[3] == "fail"


def test_claims_are_not_run_without_their_agents_or_at_small_size():
    assert _statuses([])[:4] == ["not run"] * 4
    quick = load_scenario(SCENARIO).quickened()
    assert _statuses(_records(PAPER_LIKE), quick) == ["pass"] * 3 + ["not run", "recorded"]


def test_the_scenario_runs_smollm2_and_its_quick_profile_the_tiny_model_with_the_same_labels():
    scenario = load_scenario(SCENARIO)
    assert [env.display for env in scenario.envs] == ["s=0", "s=0.2", "s=0.3"]
    assert {env.kwargs["size"] for env in scenario.envs} == {"paper"}
    assert scenario.agents[1].name == "olica" and scenario.workers == 1
    quick = scenario.quickened()
    assert [env.display for env in quick.envs] == ["s=0", "s=0.2", "s=0.3"]
    assert {env.kwargs["size"] for env in quick.envs} == {"small"}
