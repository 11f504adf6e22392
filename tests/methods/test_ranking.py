"""Bipartite ranking from two labels, loss vs label aggregation (Lukasik et al., ICML 2025)."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.agents.methods.ranking import (
    BayesLabelAggregationReference,
    BayesLossAggregationReference,
    LabelAggregationAgent,
    LossAggregationAgent,
    SingleLabel1Agent,
    SingleLabel2Agent,
    loss_aggregation_weights,
)
from omnigym.envs.methods.ranking import (
    MultiLabelRanking,
    auc,
    conditional_probabilities,
    label_threshold,
    mixed_pair_preference,
    prevalences,
)
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.ranking import check
from tests.helpers import finished_run

ENV_ID = "Methods/MultiLabelRanking-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "ranking.yaml"


def _play(agent, pi1=0.05, seed=0):
    env = MultiLabelRanking(pi1=pi1)
    observation, info = env.reset(seed=seed)
    _, reward, _, _, info = env.step(agent.act(observation, info))
    return reward, info["metrics"]


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID, pi1=0.2)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.unwrapped.n_train == 2000 and env.action_space.shape == (5000,)
    assert omnigym.make(ENV_ID, size="paper").action_space.shape == (50000,)


def test_draws_follow_the_generator_and_hide_the_test_labels():
    env = MultiLabelRanking(pi1=0.2, sharpness=40.0)
    observation, _ = env.reset(seed=1)
    labels, features = observation["train_labels"], observation["train_features"]
    assert set(observation) == {"train_features", "train_labels", "test_features"}
    assert labels.dtype == np.int8 and features.shape == (2000, 4)
    assert labels.mean(axis=0) == pytest.approx(prevalences(0.2, 40.0), abs=0.035)
    # sharpness 40: label 1 is almost exactly x1 > t1, label 2 almost exactly x2 > 0
    assert np.mean(labels[:, 0] == (features[:, 0] > label_threshold(0.2))) > 0.95
    assert np.mean(labels[:, 1] == (features[:, 1] > 0)) > 0.95
    assert env.instance.shape == (5000, 2)


def test_the_same_seed_draws_the_same_instance():
    first, second = MultiLabelRanking(), MultiLabelRanking()
    a, _ = first.reset(seed=7)
    b, _ = second.reset(seed=7)
    assert all(np.array_equal(a[key], b[key]) for key in a)
    assert np.array_equal(first.instance, second.instance)
    c, _ = second.reset(seed=8)
    assert not np.array_equal(a["test_features"], c["test_features"])


def test_prevalences_integrate_the_logistic_and_tend_to_pi1_when_sharp():
    x = np.random.default_rng(0).standard_normal((400_000, 4))
    monte_carlo = conditional_probabilities(x, 0.05, 8.0).mean(axis=0)
    assert prevalences(0.05, 8.0) == pytest.approx(monte_carlo, abs=0.003)
    assert prevalences(0.05, 8.0)[0] > 0.052  # a soft label is more common than its threshold
    assert prevalences(0.05, 5000.0) == pytest.approx([0.05, 0.5], abs=1e-4)


def test_auc_counts_every_positive_negative_pair_and_exact_ties_as_half():
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 5, 60).astype(float)
    labels = rng.integers(0, 2, 60)
    pairs = [
        1.0 if p > n else 0.5 if p == n else 0.0
        for p, n in itertools.product(scores[labels == 1], scores[labels == 0])
    ]
    assert auc(scores, labels) == pytest.approx(np.mean(pairs))
    assert np.isnan(auc(scores, np.ones(60)))


def test_mixed_pair_preference_counts_near_ties_as_half():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=80)
    labels = rng.integers(0, 2, (80, 2))
    tolerance = 0.3 * np.std(scores)
    first = scores[(labels[:, 0] == 1) & (labels[:, 1] == 0)]
    second = scores[(labels[:, 0] == 0) & (labels[:, 1] == 1)]
    differences = (first[:, None] - second[None, :]).ravel()
    expected_ties = np.mean(np.abs(differences) <= tolerance)
    expected = np.mean(differences > tolerance) + 0.5 * expected_ties
    preference, ties = mixed_pair_preference(scores, labels, tie_fraction=0.3)
    assert preference == pytest.approx(expected) and ties == pytest.approx(expected_ties)


def test_mixed_pair_preference_is_half_for_a_balanced_ranker_and_one_for_a_dictated_one():
    labels = np.array([[1, 1], [1, 0], [1, 0], [0, 1], [0, 1], [0, 0]])
    balanced = np.array([2.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    assert mixed_pair_preference(balanced, labels) == (0.5, 1.0)
    dictated = np.array([3.0, 2.0, 2.0, 1.0, 1.0, 0.0])
    assert mixed_pair_preference(dictated, labels) == (1.0, 0.0)
    assert np.isnan(mixed_pair_preference(balanced, labels[:, ::-1] * [1, 0])[0])


def test_scoring_a_hidden_label_itself_gives_that_label_a_perfect_auc():
    env = MultiLabelRanking(pi1=0.2)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(env.instance[:, 0].astype(float))
    metrics = info["metrics"]
    assert terminated and metrics["auc_1"] == 1.0 and metrics["mixed_pair_preference"] == 1.0
    assert reward == pytest.approx((1.0 + metrics["auc_2"]) / 2) == metrics["auc_mean"]
    assert info["invalid_action"] is False and metrics["invalid"] == 0.0


def test_wrong_shapes_raise_and_non_finite_scores_fail_the_episode():
    env = MultiLabelRanking()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(4999,\), expected \(5000,\)"):
        env.step(np.zeros(4999))
    scores = np.zeros(5000)
    scores[3] = np.nan
    _, reward, terminated, _, info = env.step(scores)
    assert terminated and reward == 0.0 and info["invalid_action"] is True


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"pi1": 0.0}, "pi1"),
        ({"pi1": 1.0}, "pi1"),
        ({"pi1": 0.001}, "pi1"),  # too rare for 5000 test points at size=small
        ({"pi1": True}, "pi1"),
        ({"sharpness": -1.0}, "sharpness"),
        ({"sharpness": float("inf")}, "sharpness"),
        ({"size": "huge"}, "size"),
    ],
)
def test_bad_constructor_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MultiLabelRanking(**kwargs)


def test_a_rare_pi1_is_allowed_at_the_paper_size():
    assert MultiLabelRanking(size="paper", pi1=0.001).pi1 == 0.001


def test_loss_aggregation_weights_are_the_inverse_label_variances():
    assert loss_aggregation_weights([0.5, 0.2]) == pytest.approx([4.0, 6.25])
    assert loss_aggregation_weights([0.5, 0.01], [2.0, 1.0]) == pytest.approx([8.0, 1 / 0.0099])
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        loss_aggregation_weights([0.0, 0.5])


def test_bayes_references_show_label_dictatorship_only_under_loss_aggregation():
    loss = BayesLossAggregationReference(env=MultiLabelRanking(pi1=0.05))
    label = BayesLabelAggregationReference(env=MultiLabelRanking(pi1=0.05))
    assert loss.coefficients == pytest.approx(loss_aggregation_weights(prevalences(0.05, 40.0)))
    assert _play(loss)[1]["mixed_pair_preference"] > 0.95
    assert abs(_play(label)[1]["mixed_pair_preference"] - 0.5) < 0.1
    balanced = BayesLossAggregationReference(env=MultiLabelRanking(pi1=0.5))
    assert abs(_play(balanced, pi1=0.5)[1]["mixed_pair_preference"] - 0.5) < 0.05


def test_references_refuse_to_be_built_without_their_environment():
    with pytest.raises(ValueError, match="privileged reference"):
        BayesLossAggregationReference()


def test_learned_loss_aggregation_lets_a_rarer_label_dictate_and_label_aggregation_does_not():
    # π₁ = 0.2: at the small size a rarer label leaves too few test pairs for a stable reading
    _, loss = _play(LossAggregationAgent(seed=0), pi1=0.2)
    _, label = _play(LabelAggregationAgent(seed=0), pi1=0.2)
    assert loss["mixed_pair_preference"] > 0.9
    assert abs(label["mixed_pair_preference"] - 0.5) < 0.15
    assert loss["auc_1"] > label["auc_1"] and label["auc_2"] > loss["auc_2"]


def test_single_label_rankers_rank_their_own_label_and_ignore_the_other():
    _, first = _play(SingleLabel1Agent(seed=0), pi1=0.2)
    _, second = _play(SingleLabel2Agent(seed=0), pi1=0.2)
    assert first["auc_1"] > 0.97 and abs(first["auc_2"] - 0.5) < 0.05
    assert second["auc_2"] > 0.97 and abs(second["auc_1"] - 0.5) < 0.05


def test_learners_use_only_the_observation_and_repeat_under_the_same_seed():
    env = omnigym.make(ENV_ID, pi1=0.2)
    observation, info = env.reset(seed=4)
    env.unwrapped.instance = None  # the hidden labels are out of reach
    agent = omnigym.make_agent("label-aggregation", env=env, env_id=ENV_ID)
    agent.reset(5)
    first = agent.act(observation, info)
    agent.reset(5)
    assert np.array_equal(first, agent.act(observation, info))
    with pytest.raises(ValueError, match="threads"):
        LabelAggregationAgent(threads=0)


def _records(preferences, auc_1=None, auc_2=None, sharpness=""):
    """Fake episode records: agent -> {pi1: mixed-pair preference}, two seeds of two draws."""
    records = []
    for agent, by_pi1 in preferences.items():
        for pi1, preference in by_pi1.items():
            for seed, episode in itertools.product((0, 1), (0, 1)):
                noise = 0.01 * (seed - episode)
                metrics = {
                    "mixed_pair_preference": preference + noise,
                    "auc_1": (auc_1 or {}).get(agent, 0.9) + noise,
                    "auc_2": (auc_2 or {}).get(agent, 0.9) + noise,
                }
                records.append(
                    {
                        "env_id": f"{sharpness}pi1={pi1}",
                        "agent": agent,
                        "seed": seed,
                        "episode": episode,
                        "return": 0.9,
                        "metrics": metrics,
                    }
                )
    return records


def _statuses(records):
    result = check(finished_run(records))
    return [entry["status"] for entry in result], result


def test_claims_pass_when_loss_aggregation_is_dictated_and_label_aggregation_balanced():
    records = _records(
        {
            "loss-aggregation": {0.5: 0.5, 0.2: 0.96, 0.05: 0.97, 0.01: 0.99},
            "label-aggregation": {0.5: 0.5, 0.2: 0.49, 0.05: 0.46, 0.01: 0.43},
            "bayes-loss-aggregation-reference": {0.5: 0.5, 0.2: 0.97},
        },
        auc_1={"loss-aggregation": 0.99, "label-aggregation": 0.85},
        auc_2={"loss-aggregation": 0.9, "label-aggregation": 0.95},
    )
    statuses, result = _statuses(
        records + _records({"loss-aggregation": {0.5: 0.5}}, sharpness="s=8 ")
    )
    assert statuses == ["pass", "pass", "pass", "recorded"]
    preference = result[0]["measured"]["mixed_pair_preference"]
    assert preference["pi1=0.2"]["mean"] == pytest.approx(0.96)
    assert preference["pi1=0.2"]["ci95"][0] <= 0.96 <= preference["pi1=0.2"]["ci95"][1]
    assert result[0]["paper"]["mixed_pair_preference"]["pi1=0.2"] == 0.96
    recorded = result[3]["measured"]
    reference = recorded["s=40"]["bayes-loss-aggregation-reference"]
    assert reference["pi1=0.2"]["mean"] == pytest.approx(0.97)
    assert recorded["s=8"]["loss-aggregation"]["pi1=0.5"]["mean"] == pytest.approx(0.5)


def test_claims_fail_when_loss_aggregation_stays_balanced_or_label_aggregation_drifts():
    records = _records(
        {
            "loss-aggregation": {0.5: 0.5, 0.2: 0.6, 0.05: 0.97},
            "label-aggregation": {0.5: 0.5, 0.2: 0.49, 0.05: 0.8},
        }
    )
    statuses, _ = _statuses(records)
    assert statuses == ["fail", "fail", "fail", "recorded"]


def test_claims_are_not_run_without_the_sweep():
    records = _records({"random": {0.2: 0.5}})
    statuses, _ = _statuses(records)
    assert statuses == ["not run"] * 4
    assert _statuses([])[0] == ["not run"] * 4


def test_the_claims_scenario_loads_and_its_quick_profile_sweeps_pi1_at_sharpness_40():
    scenario = load_scenario(SCENARIO)
    assert scenario.out == "results/methods/ranking"
    assert scenario.claims == "omnigym.scenarios.claims.ranking:check"
    assert "Bipartite Ranking From Multiple Labels" in scenario.paper
    quick = scenario.quickened()
    assert [env.kwargs["pi1"] for env in quick.envs] == [0.5, 0.2, 0.05, 0.01]
    assert all("sharpness" not in env.kwargs for env in quick.envs)
    assert {agent.name for agent in quick.agents} >= {"loss-aggregation", "label-aggregation"}
