"""HC-SMoE: retraining-free merging of sparse MoE layers (Chen et al., ICML 2025)."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scipy import special

import omnigym
from omnigym.agents.methods.hc_smoe import (
    FrequencyPruneAgent,
    HCSMoEAgent,
    KMeansOutputsAgent,
    MSMoEAgent,
    OutputPruneAgent,
    RouterScorePruneAgent,
    mean_expert_outputs,
    merge_by_frequency,
    prune_to,
    routing_frequency,
)
from omnigym.envs.methods.hc_smoe import (
    MoEMerging,
    expert_outputs,
    moe_forward,
    relative_error,
)
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.hc_smoe import check
from tests.helpers import finished_run

ENV_ID = "Methods/MoEMerging-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "hc_smoe.yaml"


def _play(agent, seed=0, **kwargs):
    env = MoEMerging(**kwargs)
    observation, info = env.reset(seed=seed)
    _, reward, terminated, _, info = env.step(agent.act(observation, info))
    assert terminated
    return reward, info


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID, router="aligned")
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space["w_gate"].shape == (16, 32, 16)
    assert env.action_space["weights"]["w_down"].shape == (4, 16, 32)
    paper = omnigym.make(ENV_ID, size="paper", target_experts=6)
    assert paper.observation_space["tokens"].shape == (2000, 32)
    assert paper.action_space["assignment"].nvec.tolist() == [6] * 16


def test_experts_come_in_four_shuffled_families_of_four():
    observation, _ = MoEMerging(sigma=0.05).reset(seed=1)
    flat = observation["w_up"].reshape(16, -1)
    correlation = np.corrcoef(flat)
    related = (correlation > 0.9).sum(axis=1)
    assert related.tolist() == [4] * 16  # each expert and its three siblings
    assert not np.all(correlation[0, :4] > 0.9)  # membership is shuffled


def test_identity_merge_with_one_cluster_per_expert_reproduces_the_layer():
    reward, info = _play(HCSMoEAgent(), target_experts=16)
    assert reward == 0.0 and info["metrics"]["relative_error"] == 0.0
    assert info["metrics"]["slots_used"] == 16.0


def test_a_merged_slot_is_the_frequency_weighted_average_of_its_experts():
    observation, _ = MoEMerging().reset(seed=2)
    labels = np.repeat(np.arange(4), 4)
    frequency = np.arange(1.0, 17.0)
    solution = merge_by_frequency(observation, labels, frequency)
    shares = np.array([5.0, 6.0, 7.0, 8.0]) / 26.0
    expected = np.tensordot(shares, observation["w_down"][4:8], axes=1)
    assert np.allclose(solution["weights"]["w_down"][1], expected)
    assert solution["keep_router_row"].tolist() == [1] * 16
    unused = merge_by_frequency(observation, labels, np.zeros(16))
    assert np.allclose(unused["weights"]["w_gate"][0], observation["w_gate"][:4].mean(axis=0))


def test_routing_frequency_counts_each_tokens_top_two():
    observation, _ = MoEMerging().reset(seed=3)
    frequency = routing_frequency(observation)
    logits = observation["tokens"] @ observation["router"].T
    top_two = np.argsort(-logits, axis=1)[:, :2]
    assert frequency.sum() == 2 * len(observation["tokens"])
    assert frequency[5] == np.sum(top_two == 5)


def test_pruning_drops_router_rows_and_renormalises_the_gates_over_the_kept_experts():
    observation, _ = MoEMerging().reset(seed=4)
    kept = [1, 6, 9, 14]
    solution = prune_to(observation, kept)
    x = observation["tokens"][:20]
    got = moe_forward(
        x,
        observation["router"],
        solution["weights"],
        solution["assignment"],
        solution["keep_router_row"],
    )
    outputs = expert_outputs(x, observation)
    for t in range(len(x)):
        logits = observation["router"][kept] @ x[t]
        first, second = np.argsort(-logits)[:2]
        gates = special.softmax(logits[[first, second]])
        expected = gates[0] * outputs[kept[first], t] + gates[1] * outputs[kept[second], t]
        assert np.allclose(got[t], expected)
    assert solution["keep_router_row"].tolist() == [int(e in kept) for e in range(16)]


def test_merging_keeps_the_original_routing_and_both_gates():
    observation, _ = MoEMerging().reset(seed=5)
    x = observation["tokens"][:20]
    slots = np.arange(16) % 4
    solution = merge_by_frequency(observation, slots, np.ones(16))
    got = moe_forward(x, observation["router"], solution["weights"], slots)
    merged = expert_outputs(x, solution["weights"])
    for t in range(len(x)):
        logits = observation["router"] @ x[t]
        first, second = np.argsort(-logits)[:2]
        gates = special.softmax(logits[[first, second]])
        expected = gates[0] * merged[slots[first], t] + gates[1] * merged[slots[second], t]
        assert np.allclose(got[t], expected)


def test_hc_smoe_beats_frequency_pruning_on_related_experts():
    merged, _ = _play(HCSMoEAgent(), seed=6, sigma=0.2)
    pruned, _ = _play(FrequencyPruneAgent(), seed=6, sigma=0.2)
    assert -merged < 0.4 and -pruned > 0.8


def test_hc_smoe_groups_the_families_at_small_sigma():
    env = MoEMerging(sigma=0.1)
    observation, info = env.reset(seed=7)
    assignment = HCSMoEAgent(linkage="single").act(observation, info)["assignment"]
    outputs = mean_expert_outputs(observation)
    for slot in range(4):
        members = outputs[assignment == slot]
        assert len(members) == 4
        assert np.ptp(members, axis=0).max() < np.ptp(outputs, axis=0).max() / 2


def test_m_smoe_leads_each_group_with_one_of_the_most_frequent_experts():
    observation, info = MoEMerging(router="aligned").reset(seed=8)
    assignment = MSMoEAgent().act(observation, info)["assignment"]
    leaders = np.argsort(-routing_frequency(observation), kind="stable")[:4]
    assert sorted(assignment[leaders].tolist()) == [0, 1, 2, 3]


def test_o_prune_keeps_the_best_set_on_its_calibration_tokens():
    observation, info = MoEMerging().reset(seed=9)
    kept_by = {
        "o": OutputPruneAgent().act(observation, info),
        "f": FrequencyPruneAgent().act(observation, info),
        "s": RouterScorePruneAgent().act(observation, info),
    }
    x = observation["tokens"][:256]
    reference = moe_forward(x, observation["router"], observation)

    def error(solution):
        arrays = (solution["weights"], solution["assignment"], solution["keep_router_row"])
        return relative_error(reference, moe_forward(x, observation["router"], *arrays))

    assert error(kept_by["o"]) <= min(error(kept_by["f"]), error(kept_by["s"]))
    assert kept_by["o"]["keep_router_row"].sum() == 4


def test_kmeans_repeats_under_the_same_agent_seed():
    observation, info = MoEMerging(sigma=0.5).reset(seed=10)
    agent = KMeansOutputsAgent()
    agent.reset(3)
    first = agent.act(observation, info)["assignment"]
    agent.reset(3)
    assert np.array_equal(first, agent.act(observation, info)["assignment"])


def test_the_same_seed_draws_the_same_layer_and_gives_the_same_score():
    first, second = MoEMerging(router="aligned"), MoEMerging(router="aligned")
    a, _ = first.reset(seed=11)
    b, _ = second.reset(seed=11)
    assert all(np.array_equal(a[key], b[key]) for key in a)
    solution = HCSMoEAgent().act(a, {})
    assert first.step(solution)[1] == second.step(solution)[1]
    c, _ = second.reset(seed=12)
    assert not np.array_equal(a["router"], c["router"])


def test_wrong_shapes_raise_naming_the_space():
    env = MoEMerging()
    observation, info = env.reset(seed=0)
    solution = FrequencyPruneAgent().act(observation, info)
    solution["weights"]["w_up"] = solution["weights"]["w_up"][:3]
    with pytest.raises(ValueError, match=r"shape \(3, 32, 16\), expected \(4, 32, 16\)"):
        env.step(solution)
    with pytest.raises(ValueError, match="Dict"):
        env.step({"assignment": np.zeros(16)})


def test_nan_weights_and_an_empty_router_fail_the_episode():
    env = MoEMerging()
    observation, info = env.reset(seed=0)
    solution = FrequencyPruneAgent().act(observation, info)
    solution["weights"]["w_gate"][0, 0, 0] = np.nan
    _, reward, _, _, info = env.step(solution)
    assert reward == -1.0 and info["invalid_action"] is True
    observation, info = env.reset(seed=0)
    solution = FrequencyPruneAgent().act(observation, info)
    solution["keep_router_row"][:] = 0
    _, reward, _, _, info = env.step(solution)
    assert reward == -1.0 and info["invalid_action"] is True


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"sigma": -1}, "sigma"),
        ({"sigma": float("nan")}, "sigma"),
        ({"sigma": True}, "sigma"),
        ({"router": "learned"}, "router"),
        ({"target_experts": 0}, "target_experts"),
        ({"target_experts": 17}, "target_experts"),
        ({"target_experts": 4.0}, "target_experts"),
        ({"task": "vision"}, "task"),
        ({"size": "huge"}, "size"),
    ],
)
def test_bad_constructor_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MoEMerging(**kwargs)


def test_hc_smoe_refuses_an_unknown_linkage():
    with pytest.raises(ValueError, match="linkage"):
        HCSMoEAgent(linkage="ward")


def test_the_language_model_variant_scores_the_held_out_loss_of_the_compressed_model():
    env = MoEMerging(task="lm")
    observation, info = env.reset(seed=0)
    instance = env.instance
    without_moe = instance.model.loss(instance.held_out, 0 * instance.reference, instance.targets)
    assert instance.loss_original < without_moe < np.log(256)  # the model uses its MoE layer
    _, reward, _, _, info = env.step(OutputPruneAgent().act(observation, info))
    metrics = info["metrics"]
    assert reward == -metrics["loss"] and metrics["loss_increase"] > 0
    assert metrics["loss_original"] == pytest.approx(instance.loss_original)
    env.reset(seed=0)
    identity = MoEMerging(task="lm", target_experts=16)
    observation, info = identity.reset(seed=0)
    _, reward, _, _, info = identity.step(HCSMoEAgent().act(observation, info))
    assert info["metrics"]["loss_increase"] == 0.0


def _records(errors):
    """Fake episode records: (env label, agent) -> mean error, two seeds of two draws."""
    records = []
    for (env_label, agent), error in errors.items():
        metric = "loss" if env_label.startswith("lm") else "relative_error"
        for seed, episode in itertools.product((0, 1), (0, 1)):
            value = error + 0.01 * (seed - episode) + 0.003 * seed * episode
            records.append(
                {
                    "env_id": env_label,
                    "agent": agent,
                    "seed": seed,
                    "episode": episode,
                    "return": -value,
                    "metrics": {
                        metric: value,
                        **({"loss_original": 2.0} if metric == "loss" else {}),
                    },
                }
            )
    return records


def _errors(hc, competitors, single_gap=0.01):
    """Errors by σ for HC-SMoE and every competitor, both routers, plus the LM variant."""
    errors = {}
    for router, (sigma, hc_error) in itertools.product(("random", "aligned"), hc.items()):
        label = f"{router} s={sigma:g}"
        errors[(label, "hc-smoe")] = hc_error
        errors[(label, "hc-smoe-single")] = hc_error + single_gap
        errors[(label, "kmeans-outputs")] = hc_error
        for agent in ("f-prune", "s-prune", "o-prune", "m-smoe"):
            errors[(label, agent)] = competitors[sigma]
    errors[("lm random s=0.2", "hc-smoe")] = 2.5
    errors[("lm random s=0.2", "f-prune")] = 2.3
    return errors


def _statuses(errors):
    result = check(finished_run(_records(errors)))
    return [entry["status"] for entry in result], result


def test_claims_pass_when_merging_wins_at_small_sigma_by_a_shrinking_margin():
    statuses, result = _statuses(
        _errors({0.2: 0.27, 0.5: 0.6, 1.0: 0.9}, {0.2: 0.9, 0.5: 1.0, 1.0: 1.0})
    )
    assert statuses == ["pass", "pass", "pass", "pass", "recorded", "recorded"]
    margin = result[1]["measured"]["random"]["s=0.2"]
    assert margin["mean"] == pytest.approx(0.63)
    lm = result[5]["measured"]["lm random s=0.2"]
    assert lm["minus_hc"]["f-prune"]["mean"] == pytest.approx(-0.2)
    assert lm["uncompressed"]["mean"] == 2.0
    assert result[0]["paper"]["zero_shot_accuracy"]["Mixtral 8×7B 8→6 experts"]["hc-smoe"] == 0.6425


def test_claims_fail_when_pruning_wins_the_margin_grows_or_linkages_differ():
    statuses, _ = _statuses(
        _errors({0.2: 0.9, 0.5: 0.6, 1.0: 0.5}, {0.2: 0.8, 0.5: 0.9, 1.0: 1.0}, single_gap=0.2)
    )
    assert statuses[:4] == ["fail", "fail", "fail", "fail"]


def test_claims_are_not_run_without_the_sweep():
    statuses, _ = _statuses({("random s=0.2", "hc-smoe"): 0.3, ("random s=0.2", "f-prune"): 0.9})
    assert statuses == ["not run"] * 6


def test_the_claims_scenario_sweeps_sigma_under_both_routers_with_the_lm_variant():
    scenario = load_scenario(SCENARIO)
    assert scenario.out == "results/methods/hc_smoe"
    assert scenario.claims == "omnigym.scenarios.claims.hc_smoe:check"
    labels = [env.display for env in scenario.quickened().envs]
    assert {"random s=0.2", "aligned s=1", "lm random s=0.2", "lm aligned s=0.2"} <= set(labels)
    assert all(env.kwargs["size"] == "paper" for env in scenario.envs)
    agents = {agent.display for agent in scenario.agents}
    assert {"hc-smoe", "hc-smoe-single", "m-smoe", "f-prune", "s-prune", "o-prune"} <= agents
