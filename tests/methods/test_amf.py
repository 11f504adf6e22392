"""AMF on active multi-task fine-tuning (docs/amf.md): the 2-D integrator, the learners, the
information gain, the selection agents and the claims checker."""

import json
from pathlib import Path

import numpy as np
import pytest

import omnigym
from omnigym.agents.methods.amf import (
    AMFAgent,
    ExpertAgent,
    LeastDemonstratedAgent,
    RebalancingAgent,
    RoundRobinAgent,
    UniformAgent,
    condition,
    importance_weights,
    information_gain,
)
from omnigym.envs.methods.amf.fine_tuning import ActiveFineTuning, pretraining_counts
from omnigym.envs.methods.amf.learners import (
    NOISE_VARIANCE,
    GaussianProcessPolicy,
    backward,
    fine_tune,
    forward,
    init_network,
    pretrain,
    rbf_kernel,
    stack,
)
from omnigym.envs.methods.amf.reach import (
    TASKS,
    Demonstration,
    MultiTaskReach,
    demonstrate,
    task_angle,
)
from omnigym.evaluators.experiment import Run, RunFolder, run_scenario
from omnigym.scenario import Scenario, load_scenario
from omnigym.scenarios.claims.amf import BUDGETS, check

FINE_TUNING = "Methods/ActiveFineTuning-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "amf.yaml"


def _play(env, agent, seed=0):
    """The requests and the final info of one episode."""
    if hasattr(agent, "reset"):
        agent.reset(seed)
    observation, info = env.reset(seed=seed)
    requests, rewards = [], []
    while True:
        action = agent.act(observation, info)
        requests.append(action)
        observation, reward, terminated, _, info = env.step(action)
        rewards.append(reward)
        if terminated:
            return requests, rewards, info


# ---- the 2-D integrator ----------------------------------------------------------------------


@pytest.mark.parametrize("task", [0, 3, 7])
def test_the_scripted_expert_reaches_the_goal_of_its_task(task):
    env, agent = MultiTaskReach(task=task), ExpertAgent()
    agent.reset(1)
    observation, info = env.reset(seed=1)
    assert np.allclose(observation[2:], [np.cos(task_angle(task)), np.sin(task_angle(task))])
    total, truncated = 0.0, False
    while not truncated:
        observation, reward, _, truncated, info = env.step(agent.act(observation, info))
        total += reward
    assert info["success"] and info["metrics"]["final_distance"] <= 0.1
    assert -8.0 < total < -4.0  # standing still would score -30


def test_a_demonstration_logs_the_expert_density_of_its_noisy_actions():
    demonstration = demonstrate(5, np.random.default_rng(0))
    mean = np.clip(
        2.0 * (demonstration.observations[:, 2:] - demonstration.observations[:, :2]), -1, 1
    )
    expected = -0.5 * np.sum((demonstration.actions - mean) ** 2, axis=1) / 0.01 - np.log(
        2 * np.pi * 0.01
    )
    assert demonstration.task == 5 and demonstration.observations.shape == (30, 4)
    assert np.allclose(demonstration.log_probs, expected)


def test_multitask_reach_checks_its_kwargs():
    with pytest.raises(ValueError, match="task"):
        MultiTaskReach(task=12)
    with pytest.raises(ValueError, match="task must be None"):
        MultiTaskReach(task=2, continuous=True)


# ---- the fine-tuning environment -------------------------------------------------------------


def test_requesting_task_12_raises_naming_the_action_space():
    env = omnigym.make(FINE_TUNING, budget=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Discrete\(12\)"):
        env.step(12)


@pytest.mark.parametrize("bad", ["skewed:0", "skewed:13", "skewed", "uniformly", 4])
def test_a_bad_pretraining_raises_naming_pretraining(bad):
    with pytest.raises(ValueError, match="pretraining"):
        ActiveFineTuning(pretraining=bad)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"learner": "svm"}, "learner"),
        ({"budget": 0}, "budget"),
        ({"batch": 0}, "batch"),
        ({"adaptive_prior": "yes"}, "adaptive_prior"),
        ({"mu": [1.0] * 11}, "mu"),
        ({"mu": [0.0] * 12}, "mu"),
    ],
)
def test_bad_kwargs_raise_naming_the_kwarg(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ActiveFineTuning(**kwargs)


def test_pretraining_spreads_twelve_demonstrations_over_the_covered_tasks():
    assert pretraining_counts("uniform").tolist() == [1] * 12
    assert pretraining_counts("skewed:4").tolist() == [3] * 4 + [0] * 8
    assert pretraining_counts("skewed:5").tolist() == [3, 3, 2, 2, 2] + [0] * 7
    assert pretraining_counts("mismatched").tolist() == [2, 0] * 6


def test_the_episode_return_is_the_final_minus_the_pretrained_multitask_return():
    env = ActiveFineTuning(pretraining="skewed:4", budget=12)
    requests, rewards, info = _play(env, RoundRobinAgent())
    metrics = info["metrics"]
    assert requests == list(range(12))
    assert sum(rewards) == pytest.approx(metrics["multitask_return"] - metrics["pretrained_return"])
    assert [metrics[f"demos_task_{c}"] for c in range(TASKS)] == [1.0] * 12
    closed = (metrics["multitask_return"] - metrics["pretrained_return"]) / (
        metrics["expert_return"] - metrics["pretrained_return"]
    )
    assert info["normalized_score"] == pytest.approx(100 * closed)
    assert closed > 0.9  # one demonstration of each task brings the GP close to the expert
    assert metrics["multitask_return_after_12"] == metrics["multitask_return"]


def test_the_mlp_is_refitted_once_a_batch_is_complete():
    env = ActiveFineTuning(learner="mlp", pretraining="skewed:6", budget=6, batch=4)
    _, rewards, info = _play(env, RoundRobinAgent())
    assert rewards[:3] == [0.0, 0.0, 0.0] and rewards[3] != 0.0 and rewards[5] != 0.0
    assert sorted(k for k in info["metrics"] if "after" in k) == [
        "multitask_return_after_4",
        "multitask_return_after_6",
    ]


def test_the_pending_demonstrations_are_shown_until_the_refit():
    env = ActiveFineTuning(learner="mlp", pretraining="skewed:6", budget=4, batch=4)
    _, info = env.reset(seed=0)
    for task, pending in [(7, 1), (8, 2), (9, 3)]:
        _, _, _, _, info = env.step(task)
        assert info["instance"].pending == pending
    _, _, _, _, info = env.step(10)
    assert info["instance"].pending == 0 and len(info["instance"].demonstrations) == 4


# ---- the learners ------------------------------------------------------------------------------


def _demonstrations(tasks, seed=0):
    rng = np.random.default_rng(seed)
    return [demonstrate(task, rng) for task in tasks]


def test_extending_the_gp_equals_fitting_it_on_all_the_data():
    first, more = _demonstrations([0, 3, 6]), _demonstrations([9, 1], seed=1)
    extended = GaussianProcessPolicy.fit(first).extended(more)
    scratch = GaussianProcessPolicy.fit(first + more)
    points = np.random.default_rng(2).uniform(-1, 1, (7, 4))
    assert np.allclose(extended.factor, scratch.factor)
    assert np.allclose(extended(points), scratch(points))


def test_the_gp_posterior_is_the_textbook_formula():
    data = _demonstrations([2, 5])
    policy = GaussianProcessPolicy.fit(data)
    inputs, targets = stack(data)
    points = np.random.default_rng(3).uniform(-1, 1, (6, 4))
    inverse = np.linalg.inv(rbf_kernel(inputs, inputs) + NOISE_VARIANCE * np.eye(len(inputs)))
    cross = rbf_kernel(points, inputs)
    covariance = rbf_kernel(points, points) - cross @ inverse @ cross.T
    assert np.allclose(policy(points), cross @ inverse @ targets)
    assert np.allclose(policy.posterior_covariance(points), covariance)
    assert np.allclose(policy.variance(points), np.diag(covariance))


def test_the_network_gradients_match_finite_differences():
    rng = np.random.default_rng(4)
    network, observations = init_network(rng), stack(_demonstrations([1, 8]))[0][::7]
    weights = rng.standard_normal((len(observations), 2))
    output, cache = forward(network, observations)
    grads = backward(network, cache, weights)
    for key in ("w1", "b2", "w3", "b3"):
        index = (0,) * network[key].ndim
        shifted = {k: v.copy() for k, v in network.items()}
        shifted[key][index] += 1e-6
        numeric = np.sum(forward(shifted, observations)[0] * weights) - np.sum(output * weights)
        assert grads[key][index] == pytest.approx(numeric / 1e-6, rel=1e-3, abs=1e-6)


@pytest.fixture(scope="module")
def skewed_network():
    pretraining = _demonstrations([0, 1, 2, 3, 4, 5] * 2)
    return pretraining, pretrain(pretraining, np.random.default_rng(5))


def test_the_adaptive_prior_keeps_the_tasks_without_new_demonstrations(skewed_network):
    pretraining, network = skewed_network
    new = _demonstrations([6, 7, 8, 9, 10, 11], seed=6)
    old_states = stack(_demonstrations([0, 2, 4], seed=7))[0]
    pretrained = fine_tune(network, pretraining, (), adaptive_prior=True)(old_states)
    with_prior = fine_tune(network, pretraining, new, adaptive_prior=True)
    without = fine_tune(network, pretraining, new, adaptive_prior=False)
    drift_with = np.abs(with_prior(old_states) - pretrained).max()
    drift_without = np.abs(without(old_states) - pretrained).max()
    assert drift_with < 0.05 < drift_without
    new_states, new_actions = stack(new)
    assert np.mean((with_prior(new_states) - new_actions) ** 2) < 0.05


# ---- the information gain ----------------------------------------------------------------------


def _random_covariance(rng, size):
    factor = rng.standard_normal((size, size))
    return factor @ factor.T / size


def test_the_information_gain_is_the_direct_log_determinant_difference():
    rng, size, noise = np.random.default_rng(8), 4, 0.05
    for _ in range(5):
        joint = _random_covariance(rng, 2 * size)
        query, cross, candidate = joint[:size, :size], joint[:size, size:], joint[size:, size:]
        gain = information_gain(query[None], cross[None, None], candidate[None], noise)[0, 0]
        sigma_x, sigma_candidate = query + noise * np.eye(size), candidate + noise * np.eye(size)
        sigma_x_given = sigma_x - cross @ np.linalg.inv(sigma_candidate) @ cross.T
        direct = 0.5 * (np.linalg.slogdet(sigma_x)[1] - np.linalg.slogdet(sigma_x_given)[1])
        # The same mutual information from the joint entropy: H(X) + H(X') - H(X, X').
        mutual = 0.5 * (
            np.linalg.slogdet(sigma_x)[1]
            + np.linalg.slogdet(sigma_candidate)[1]
            - np.linalg.slogdet(joint + noise * np.eye(2 * size))[1]
        )
        assert gain == pytest.approx(direct) and gain == pytest.approx(mutual)
        assert gain > 0


def test_the_batched_information_gain_equals_the_pairwise_one():
    rng = np.random.default_rng(9)
    points = _random_covariance(rng, 4 * 3 + 2 * 3)  # 4 query sets, 2 candidate sets, 3 points
    queries = np.arange(12).reshape(4, 3)
    candidates = 12 + np.arange(6).reshape(2, 3)
    batched = information_gain(
        points[queries[:, :, None], queries[:, None, :]],
        points[queries[:, None, :, None], candidates[None, :, None, :]],
        points[candidates[:, :, None], candidates[:, None, :]],
        0.1,
    )
    for j, query in enumerate(queries):
        for c, candidate in enumerate(candidates):
            single = information_gain(
                points[np.ix_(query, query)][None],
                points[np.ix_(query, candidate)][None, None],
                points[np.ix_(candidate, candidate)][None],
                0.1,
            )
            assert batched[j, c] == pytest.approx(single[0, 0])


def test_conditioning_on_received_demonstrations_equals_refitting_the_gp():
    data, received = _demonstrations([0, 4]), _demonstrations([8], seed=1)
    points = np.random.default_rng(10).uniform(-1, 1, (5, 4))
    extra = received[0].observations[::3]
    joint = GaussianProcessPolicy.fit(data).posterior_covariance(np.concatenate([points, extra]))
    conditioned = condition(joint, len(extra), NOISE_VARIANCE)[:5, :5]
    # The GP's covariance does not depend on the actions: a stand-in demonstration will do.
    stand_in = Demonstration(8, extra, np.zeros((len(extra), 2)), np.zeros(len(extra)))
    refitted = GaussianProcessPolicy.fit(data).extended([stand_in])
    assert np.allclose(conditioned, refitted.posterior_covariance(points))


def test_importance_weights_favour_the_demonstration_the_policy_would_play():
    demonstrations = _demonstrations([3, 3, 3], seed=11)

    class Replays:  # a policy whose mean is the first demonstration's actions
        noise_variance = NOISE_VARIANCE

        def __call__(self, observations):
            lookup = {o.tobytes(): a for o, a in zip(*stack(demonstrations[:1]), strict=True)}
            return np.array([lookup.get(o.tobytes(), np.zeros(2)) for o in observations])

        def variance(self, observations):
            return np.zeros(len(observations))

    weights = importance_weights(Replays(), demonstrations)
    assert weights.sum() == pytest.approx(1.0)
    assert weights[0] > 0.99


# ---- the agents --------------------------------------------------------------------------------


def test_amf_asks_first_for_the_one_task_pretraining_left_out():
    env = ActiveFineTuning(pretraining="skewed:11", budget=1)
    requests, _, _ = _play(env, AMFAgent())
    assert requests == [11]


def test_amf_asks_for_every_missing_task_under_skewed_pretraining_and_beats_uniform():
    requests, _, amf = _play(ActiveFineTuning(pretraining="skewed:4", budget=8), AMFAgent())
    _, _, uniform = _play(ActiveFineTuning(pretraining="skewed:4", budget=8), UniformAgent())
    assert sorted(requests) == list(range(4, 12))
    assert amf["metrics"]["multitask_return"] > uniform["metrics"]["multitask_return"] + 1.0


def test_amf_with_the_mlp_spreads_a_batch_over_the_missing_tasks():
    env = ActiveFineTuning(learner="mlp", pretraining="skewed:6", budget=4, batch=4)
    requests, _, _ = _play(env, AMFAgent())
    assert len(set(requests)) == 4 and set(requests) <= set(range(6, 12))


def test_rebalancing_makes_the_demonstrations_uniform_over_tasks():
    env = ActiveFineTuning(pretraining="skewed:4", budget=24)
    _, _, info = _play(env, RebalancingAgent())
    counts = [info["metrics"][f"demos_task_{c}"] for c in range(TASKS)]
    assert counts == [0.0] * 4 + [3.0] * 8


def test_least_demonstrated_covers_every_task_once_in_twelve_requests():
    env = ActiveFineTuning(pretraining="skewed:4", budget=12)
    requests, _, _ = _play(env, LeastDemonstratedAgent(), seed=3)
    assert sorted(requests) == list(range(12)) and requests != list(range(12))


def test_uniform_draws_its_requests_from_mu_and_is_seeded():
    mu = [0.0] * 12
    mu[2] = mu[5] = 1.0
    requests, _, _ = _play(ActiveFineTuning(budget=10, mu=mu), UniformAgent(), seed=4)
    again, _, _ = _play(ActiveFineTuning(budget=10, mu=mu), UniformAgent(), seed=4)
    assert set(requests) == {2, 5} and requests == again


def test_the_selection_agents_are_registered_on_the_fine_tuning_id_only():
    offered = set(omnigym.list_agents(FINE_TUNING))
    assert {"amf", "uniform", "round-robin", "least-demonstrated", "rebalancing"} <= offered
    assert "expert" in omnigym.list_agents("Methods/MultiTaskReach-v0")
    assert "amf" not in omnigym.list_agents("Methods/MultiTaskReach-v0")


# ---- the claims checker -----------------------------------------------------------------------

SETTINGS = {
    "gp skewed:2": {"learner": "gp", "pretraining": "skewed:2"},
    "gp skewed:4": {"learner": "gp", "pretraining": "skewed:4"},
    "gp uniform": {"learner": "gp", "pretraining": "uniform"},
    "mlp": {"learner": "mlp", "pretraining": "skewed:6"},
    "mlp no prior": {"learner": "mlp", "pretraining": "skewed:6", "adaptive_prior": False},
}
MISSING = list(range(4, 12))


def _metrics(returns, demos, forgetting=0.0):
    metrics = {f"multitask_return_after_{n}": returns[i] for i, n in enumerate(BUDGETS)}
    metrics["multitask_return"] = returns[-1]
    metrics.update({f"demos_task_{c}": float(demos.count(c)) for c in range(TASKS)})
    metrics["forgetting"] = forgetting
    return metrics


def _good_world(seed):
    """Per (env, agent) the metrics of a run where every claim holds."""
    noise = 0.01 * ((seed % 3) - 1)
    gain = {"gp skewed:2": 3.0, "gp skewed:4": 2.0, "gp uniform": noise}
    world = {}
    for env in ("gp skewed:2", "gp skewed:4", "gp uniform"):
        base = [-12.0, -9.0, -7.0, -6.0, -5.5]
        world[(env, "uniform")] = _metrics(base, [0, 5, 9, 11] * 5)
        world[(env, "amf")] = _metrics([b + gain[env] for b in base], MISSING * 2 + [4, 5, 6, 7])
        world[(env, "rebalancing")] = _metrics(base, MISSING * 2 + [8, 9, 10, 11])
    for env, forgetting in (("mlp", 0.01), ("mlp no prior", 0.3)):
        world[(env, "amf")] = _metrics([-8.0] * 5, MISSING * 2 + [0, 1, 2, 3], forgetting)
        world[(env, "uniform")] = _metrics([-9.0] * 5, list(range(12)) + MISSING, 0.02)
    return world


def _run(change=None, seeds=range(5), drop=()):
    records = []
    for seed in seeds:
        world = _good_world(seed)
        if change is not None:
            change(world, seed)
        for (env, agent), metrics in world.items():
            if (env, agent) not in drop:
                records.append(
                    {"env_id": env, "agent": agent, "seed": seed, "episode": 0, "metrics": metrics}
                )
    scenario = Scenario(
        name="amf",
        envs=[{"id": FINE_TUNING, "label": label, "kwargs": kw} for label, kw in SETTINGS.items()],
        agents=["amf", "uniform", "rebalancing"],
    )
    return Run(scenario, {}, RunFolder("unused"), {}, records)


def _statuses(run):
    return {entry["id"]: entry["status"] for entry in check(run)}


def test_every_claim_passes_on_a_run_where_it_holds():
    assert _statuses(_run()) == {1: "pass", 2: "pass", 3: "pass", 4: "pass"}


def test_claim_1_fails_when_amf_is_clearly_worse_at_one_budget():
    def worse(world, seed):
        world[("gp skewed:4", "amf")]["multitask_return_after_8"] -= 5.0 + 0.1 * seed

    assert _statuses(_run(worse))[1] == "fail"


def test_claim_2_fails_when_amf_still_gains_with_uniform_pretraining():
    def gains(world, seed):
        metrics = world[("gp uniform", "amf")]
        metrics["multitask_return_after_20"] = metrics["multitask_return"] = -5.5 + 4 + 0.1 * seed

    assert _statuses(_run(gains))[2] == "fail"


def test_claim_3_fails_when_amf_asks_for_the_pretrained_tasks():
    def pretrained_tasks(world, seed):
        world[("gp skewed:4", "amf")].update(_metrics([-5.0] * 5, [0, 1, 2, 3] * 4 + MISSING[:4]))

    assert _statuses(_run(pretrained_tasks))[3] == "fail"


def test_claim_4_fails_when_the_adaptive_prior_forgets():
    def forgets(world, seed):
        world[("mlp", "amf")]["forgetting"] = 0.2 + 0.01 * seed

    assert _statuses(_run(forgets))[4] == "fail"


def test_claims_are_not_run_without_the_settings_they_need():
    drop = {("gp uniform", "amf"), ("gp skewed:4", "rebalancing"), ("mlp", "amf")}
    assert _statuses(_run(drop=drop)) == {1: "pass", 2: "not run", 3: "not run", 4: "not run"}


def test_the_scenario_runs_end_to_end_at_a_tiny_scale(tmp_path):
    quick = load_scenario(SCENARIO).quickened()
    kept = [env for env in quick.envs if env.display == "gp skewed:4"]
    tiny = quick.model_copy(
        update={
            "envs": [
                env.model_copy(update={"kwargs": {**env.kwargs, "budget": 4}}) for env in kept
            ],
            "agents": [a for a in quick.agents if a.name in ("amf", "uniform", "rebalancing")],
            "seeds": [0, 1],
            "workers": 1,
        }
    )
    run_scenario(tiny, tmp_path)
    claims = json.loads((tmp_path / "claims.json").read_text())["claims"]
    statuses = {entry["id"]: entry["status"] for entry in claims}
    assert statuses == {1: "pass", 2: "not run", 3: "pass", 4: "not run"}
    assert claims[2]["measured"]["share of AMF's requests to tasks 4-11"]["mean"] == 1.0
    assert list(claims[0]["measured"]["gp skewed:4"]) == ["n=4"]
