"""Sample-optimal agnostic boosting with unlabelled data (Ghai and Singh, ICML 2025)."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from threadpoolctl import threadpool_limits

import omnigym
from omnigym.agents.methods.boosting import (
    AdaBoostAgent,
    BestInClassReference,
    GradientBoostingAgent,
    SampleReuseBoostingAgent,
    SampleSplitBoostingAgent,
    Stump,
    StumpGrid,
    UnlabeledBoostingAgent,
    surrogate_targets,
    vote,
)
from omnigym.envs.methods.boosting import (
    BOUNDARY_NOISE_PEAK,
    UNIFORM_NOISE,
    AgnosticBoosting,
    DepthTwoTree,
    Halfspace,
    classification_error,
    flip_probability,
)
from omnigym.evaluators.experiment import run_scenario
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.boosting import check
from tests.helpers import finished_run

ENV_ID = "Methods/AgnosticBoosting-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "boosting.yaml"
LEARNERS = ["boost-unlabeled", "boost-reuse", "boost-sample-split", "adaboost", "gradient-boosting"]


@pytest.fixture(autouse=True)
def _one_thread():
    # the machine is shared: scikit-learn's OpenMP and BLAS stay on one thread
    with threadpool_limits(limits=1):
        yield


def _play(agent, env, seed=0):
    observation, info = env.reset(seed=seed)
    if hasattr(agent, "reset"):
        agent.reset(seed)
    _, reward, _, _, info = env.step(agent.act(observation, info))
    return reward, info["metrics"]


# ---- the environment -------------------------------------------------------------------------


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID, m=50, shift=0.3)
    check_env(env.unwrapped, skip_render_check=True)
    space = env.observation_space
    assert space["labelled_features"].shape == (50, 10) and space["labels"].shape == (50,)
    assert space["unlabelled_features"].shape == (4000, 10)
    assert env.action_space.shape == (4000,) and env.action_space.low.min() == -1.0
    assert omnigym.make(ENV_ID, size="paper").action_space.shape == (20000,)


def test_labels_are_the_rule_flipped_at_about_a_quarter_of_the_points():
    env = AgnosticBoosting(m=4000)
    observation, _ = env.reset(seed=1)
    labels, rule = observation["labels"], env.instance.rule
    assert labels.dtype == np.int8 and set(np.unique(labels)) == {-1, 1}
    flipped = np.mean(labels != rule.predict(observation["labelled_features"]))
    assert flipped == pytest.approx(0.25, abs=0.03)
    assert env.instance.best_in_class_error == pytest.approx(0.25, abs=0.03)
    assert set(observation) == {
        "labelled_features",
        "labels",
        "unlabelled_features",
        "test_features",
    }


def test_boundary_noise_flips_ten_percent_for_a_centred_halfspace_and_peaks_on_the_boundary():
    normal = np.zeros(10)
    normal[0] = 1.0
    rule = Halfspace(normal, 0.0)
    x = np.random.default_rng(0).standard_normal((400_000, 10))
    probability = flip_probability(rule, x)
    assert probability.mean() - UNIFORM_NOISE == pytest.approx(0.101, abs=0.002)
    assert probability.max() < 0.5  # the rule stays Bayes-optimal
    on_boundary = flip_probability(rule, np.zeros((1, 10)))
    assert on_boundary[0] == pytest.approx(UNIFORM_NOISE + BOUNDARY_NOISE_PEAK)


def test_tree_boundary_distance_is_the_distance_to_the_nearest_differently_labelled_region():
    # left (x0 <= 0) labels sign(x1), right labels sign(x2)
    tree = DepthTwoTree(features=(0, 1, 2), thresholds=(0.0, 0.0, 0.0), signs=(1, 1))
    points = np.zeros((3, 10))
    points[0, :3] = [-1.0, 0.5, -2.0]  # own split at 0.5; across the root already disagrees: 1
    points[1, :3] = [-0.3, 2.0, 1.0]  # across the root agrees: also cross x2, hypot(0.3, 1)
    points[2, :3] = [0.4, -3.0, -0.2]  # right, labelled -1: own split at 0.2
    assert tree.predict(points).tolist() == [1, 1, -1]
    expected = [0.5, np.hypot(0.3, 1.0), 0.2]
    assert tree.boundary_distance(points) == pytest.approx(expected)


def test_a_tree_rule_is_drawn_over_three_distinct_features():
    env = AgnosticBoosting(rule="tree")
    env.reset(seed=3)
    rule = env.instance.rule
    assert isinstance(rule, DepthTwoTree) and len(set(rule.features)) == 3


def test_classification_error_counts_a_zero_answer_as_half():
    error = classification_error(np.array([1.0, -1.0, 0.0, 0.3]), np.array([1, 1, 1, -1]))
    assert error == pytest.approx((0 + 1 + 0.5 + 1) / 4)


def test_the_score_is_the_excess_error_over_the_best_in_class_rule():
    env = AgnosticBoosting()
    observation, _ = env.reset(seed=0)
    best = env.instance.best_in_class_error
    hidden = env.instance.test_labels.astype(float)
    rule = env.instance.rule.predict(observation["test_features"]).astype(float)
    for answer, error in [(hidden, 0.0), (-hidden, 1.0), (np.zeros_like(hidden), 0.5)]:
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step(answer)
        metrics = info["metrics"]
        assert terminated and metrics["test_error"] == pytest.approx(error)
        assert metrics["excess_error"] == pytest.approx(error - best) == -reward
        assert metrics["accuracy"] == pytest.approx(1.0 - error)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(rule)
    assert reward == 0.0 and info["metrics"]["best_in_class_error"] == best


def test_wrong_shapes_raise_and_non_finite_answers_fail_the_episode():
    env = AgnosticBoosting()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(3999,\), expected \(4000,\).*Box"):
        env.step(np.zeros(3999))
    with pytest.raises(ValueError, match="bounds"):
        env.step(np.full(4000, 2.0))
    answer = np.zeros(4000)
    answer[7] = np.nan
    _, reward, terminated, _, info = env.step(answer)
    assert terminated and reward == -1.0 and info["invalid_action"] is True


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"m": -1}, "m"),
        ({"m": 0}, "m"),
        ({"m": 2.5}, "m"),
        ({"m": True}, "m"),
        ({"m": 10**6}, "m"),
        ({"shift": float("nan")}, "shift"),
        ({"shift": float("inf")}, "shift"),
        ({"shift": "0.3"}, "shift"),
        ({"shift": 9.0}, "shift"),
        ({"rule": "forest"}, "rule"),
        ({"size": "huge"}, "size"),
    ],
)
def test_bad_constructor_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        AgnosticBoosting(**kwargs)


def test_the_same_seed_draws_the_same_instance():
    first, second = AgnosticBoosting(rule="tree"), AgnosticBoosting(rule="tree")
    a, _ = first.reset(seed=7)
    b, _ = second.reset(seed=7)
    assert all(np.array_equal(a[key], b[key]) for key in a)
    assert np.array_equal(first.instance.test_labels, second.instance.test_labels)
    c, _ = second.reset(seed=8)
    assert not np.array_equal(a["test_features"], c["test_features"])


def test_budget_and_shift_change_only_their_own_part_of_the_draw():
    base, _ = AgnosticBoosting(m=100).reset(seed=5)
    more, _ = AgnosticBoosting(m=400).reset(seed=5)
    shifted_env = AgnosticBoosting(m=100, shift=0.3)
    shifted, _ = shifted_env.reset(seed=5)
    assert np.array_equal(base["test_features"], more["test_features"])
    assert np.array_equal(base["unlabelled_features"], more["unlabelled_features"])
    assert np.array_equal(base["labels"], shifted["labels"])
    assert np.allclose(shifted["unlabelled_features"], base["unlabelled_features"] + 0.3)
    assert shifted["unlabelled_features"].mean() == pytest.approx(0.3, abs=0.02)


# ---- the weak learner and the potential ------------------------------------------------------


def test_the_stump_grid_finds_the_split_that_carries_the_labels():
    x = np.array([[0.0, 5.0], [1.0, 1.0], [2.0, 4.0], [3.0, 2.0]])
    labels = np.array([1.0, -1.0, 1.0, -1.0])  # +1 exactly where x1 > 3
    grid = StumpGrid(x)
    assert grid.edges[1].tolist() == [1.5, 3.0, 4.5]
    bins = grid.bins(x)
    stump = grid.best(grid.histogram(bins, labels / 4))
    assert (stump.feature, stump.threshold, stump.sign) == (1, 3.0, 1.0)
    assert grid.output(stump, bins).tolist() == labels.tolist()
    assert vote([stump], np.ones(1), x).tolist() == labels.tolist()


def test_the_constant_stump_wins_when_no_split_helps():
    x = np.arange(6.0).reshape(3, 2)
    grid = StumpGrid(x)
    stump = grid.best(grid.histogram(grid.bins(x), np.full(3, -1.0)))
    assert stump.index == -1 and stump.threshold == -np.inf and stump.sign == -1.0
    assert StumpGrid(x[:1]).best(np.zeros((2, 1))).index == -1  # one point: no threshold


def test_vote_is_the_weighted_sum_of_the_stumps_outputs():
    rng = np.random.default_rng(4)
    features, thresholds = rng.integers(0, 3, 40), rng.normal(size=40)
    thresholds[features == 2] = -np.inf  # constants among them
    signs = rng.choice([-1.0, 1.0], 40)
    stumps = [Stump(int(f), 0, t, s) for f, t, s in zip(features, thresholds, signs, strict=True)]
    x, weights = rng.normal(size=(200, 3)), rng.random(40)
    outputs = np.stack(
        [np.where(x[:, s.feature] > s.threshold, s.sign, -s.sign) for s in stumps], axis=1
    )
    assert vote(stumps, weights, x) == pytest.approx(outputs @ weights)


def test_the_surrogate_puts_half_the_weight_on_labels_and_half_on_the_clipped_margin():
    labelled, relabelled = surrogate_targets(np.array([1.0, -1.0]), np.array([2.0, 0.5, -3.0]))
    assert labelled == pytest.approx([0.25, -0.25])
    # the expected relabelled label, +1 with probability (1 - clip(H)) / 2, is -clip(H)
    assert relabelled == pytest.approx([-1 / 6, -1 / 12, 1 / 6])


# ---- the agents ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LEARNERS)
def test_each_learner_beats_chance_on_a_small_instance(name):
    env = omnigym.make(ENV_ID, m=1600)
    _, metrics = _play(omnigym.make_agent(name, env=env, env_id=ENV_ID), env)
    assert metrics["accuracy"] > 0.62 and metrics["excess_error"] < 0.12


def test_at_a_small_budget_unlabelled_data_beats_reuse_which_beats_splitting():
    env = AgnosticBoosting(m=100)
    agents = (UnlabeledBoostingAgent(), SampleReuseBoostingAgent(), SampleSplitBoostingAgent())
    means = [
        np.mean([_play(agent, env, seed)[1]["excess_error"] for seed in range(4)])
        for agent in agents
    ]
    assert means[0] < means[1] < means[2]


def test_learners_use_only_the_observation_and_repeat_under_the_same_seed():
    env = omnigym.make(ENV_ID, m=200)
    observation, info = env.reset(seed=4)
    env.unwrapped.instance = None  # the rule and the hidden labels are out of reach
    for name in LEARNERS:
        agent = omnigym.make_agent(name, env=env, env_id=ENV_ID)
        agent.reset(5)
        first = agent.act(observation, info)
        agent.reset(5)
        assert np.array_equal(first, agent.act(observation, info)), name
        assert first.shape == (4000,) and np.abs(first).max() <= 1.0


def test_the_reference_answers_the_best_in_class_rule():
    env = AgnosticBoosting(rule="tree")
    reward, metrics = _play(BestInClassReference(env=env), env)
    assert reward == 0.0 and metrics["accuracy"] == 1.0 - metrics["best_in_class_error"]
    with pytest.raises(ValueError, match="privileged reference"):
        BestInClassReference()


@pytest.mark.parametrize(
    ("factory", "kwargs", "name"),
    [
        (UnlabeledBoostingAgent, {"rounds": 0}, "rounds"),
        (SampleSplitBoostingAgent, {"step": 0.0}, "step"),
        (SampleReuseBoostingAgent, {"step": True}, "step"),
        (AdaBoostAgent, {"rounds": 1.5}, "rounds"),
        (GradientBoostingAgent, {"threads": 0}, "threads"),
    ],
)
def test_bad_agent_arguments_raise_value_errors_naming_them(factory, kwargs, name):
    with pytest.raises(ValueError, match=name):
        factory(**kwargs)


# ---- the claims ------------------------------------------------------------------------------


def _records(curves, shifted=None):
    """Fake episode records: agent -> {m: excess error}, two seeds of two draws; ``shifted``:
    the unlabelled booster's {m: excess error} at shift 0.3."""
    records = []
    runs = [
        (agent, f"m={m}", value) for agent, curve in curves.items() for m, value in curve.items()
    ]
    runs += [("boost-unlabeled", f"m={m} shift=0.3", v) for m, v in (shifted or {}).items()]
    for agent, env_label, value in runs:
        for seed, episode in itertools.product((0, 1), (0, 1)):
            noise = 0.002 * (seed - episode)
            records.append(
                {
                    "env_id": env_label,
                    "agent": agent,
                    "seed": seed,
                    "episode": episode,
                    "return": -value - noise,
                    "metrics": {"excess_error": value + noise},
                }
            )
    return records


def _statuses(records):
    result = check(finished_run(records))
    return [entry["status"] for entry in result], result


def test_claims_pass_when_unlabelled_leads_at_small_m_and_the_curves_meet():
    records = _records(
        {
            "boost-unlabeled": {100: 0.11, 200: 0.09, 1600: 0.060},
            "boost-reuse": {100: 0.13, 200: 0.11, 1600: 0.062},
            "boost-sample-split": {100: 0.19, 200: 0.17, 1600: 0.065},
            "adaboost": {100: 0.12, 200: 0.10, 1600: 0.05},
        },
        shifted={100: 0.12, 1600: 0.07},
    )
    statuses, result = _statuses(records)
    assert statuses == ["pass", "pass", "recorded", "recorded"]
    first = result[0]["measured"]
    assert first["excess_error"]["boost-reuse"]["m=100"]["mean"] == pytest.approx(0.13)
    difference = first["paired_differences"]["boost-unlabeled - boost-reuse"]["m=100"]
    assert difference["mean"] == pytest.approx(-0.02) and difference["draws"] == 4
    shift = result[2]["measured"]["shift=0.3"]
    assert shift["boost-unlabeled shifted - unshifted"]["m=1600"]["mean"] == pytest.approx(0.01)
    assert result[1]["measured"]["spread"]["m=1600"] == pytest.approx(0.005)
    assert result[3]["measured"]["adaboost"]["m=100"]["mean"] == pytest.approx(0.12)


def test_claims_fail_when_the_order_breaks_or_splitting_stays_behind():
    records = _records(
        {
            "boost-unlabeled": {100: 0.14, 200: 0.09, 1600: 0.06},
            "boost-reuse": {100: 0.13, 200: 0.11, 1600: 0.06},
            "boost-sample-split": {100: 0.19, 200: 0.17, 1600: 0.09},
        }
    )
    statuses, _ = _statuses(records)
    assert statuses == ["fail", "fail", "not run", "not run"]


def test_claims_are_not_run_without_the_boosters():
    records = _records({"boost-unlabeled": {100: 0.1, 200: 0.09}})
    statuses, _ = _statuses(records)
    assert statuses == ["not run"] * 4


def test_the_claims_scenario_sweeps_the_budgets_and_the_shift_at_the_paper_size():
    scenario = load_scenario(SCENARIO)
    assert scenario.out == "results/methods/boosting"
    assert scenario.claims == "omnigym.scenarios.claims.boosting:check"
    budgets = [env.kwargs["m"] for env in scenario.envs if "shift" not in env.kwargs]
    assert budgets == [100, 200, 400, 800, 1600]
    assert {env.kwargs.get("shift", 0.0) for env in scenario.envs} == {0.0, 0.3}
    assert all(env.kwargs["size"] == "paper" for env in scenario.envs)
    assert {agent.name for agent in scenario.agents} == {*LEARNERS, "best-in-class-reference"}
    assert scenario.quickened().seeds == [0, 1, 2, 3, 4]


def test_the_quick_scenario_runs_end_to_end_at_a_tiny_scale(tmp_path):
    quick = load_scenario(SCENARIO).quickened()
    kept = [env for env in quick.envs if env.display in ("m=100", "m=400", "m=100 shift=0.3")]
    tiny = quick.model_copy(
        update={
            "envs": [
                env.model_copy(update={"kwargs": {**env.kwargs, "size": "small"}}) for env in kept
            ],
            "seeds": [0],
        }
    )
    run_scenario(tiny, tmp_path)
    result = json.loads((tmp_path / "claims.json").read_text())
    assert result["experiment"] == "boosting" and "Ghai" in result["paper"]
    assert [entry["id"] for entry in result["claims"]] == [1, 2, 3, 4]
    assert result["claims"][2]["status"] == "recorded"
    assert "m=100" in result["claims"][2]["measured"]["shift=0.3"]["boost-unlabeled"]
