"""SDQC: the Q-supervised contrastive pieces, the decoupled encoders, policy switching, training."""

import math

import numpy as np
import pytest
import torch

import omnigym
from omnigym.agents.safety.sdqc import (
    COST,
    REWARD,
    SDQC,
    TRANSITION,
    _knn_gap,
    choose_policy,
    feasibility_target,
    positives,
    q_distance,
    similarity,
    soft_info_nce,
)

GROUPS = {"robot": [0, 4], "reward": [4, 20], "cost": [20, 52]}
SMALL = dict(hidden=32, z_dim=16, token_dim=8, batch_size=64, contrast_batch=16)


def small_agent(**kwargs):
    return SDQC(seed=0, **{"obs_groups": GROUPS, **SMALL, **kwargs})


def test_q_distance_is_the_largest_gap_over_the_anchors_sampled_actions():
    def q_fn(z, a):  # Q(z, a) = z₀·a₀
        return z[:, 0] * a[:, 0]

    z = torch.tensor([[1.0], [3.0], [0.0]])
    actions = torch.tensor([[[0.5], [-2.0]]])  # one anchor (state 0), K = 2 actions
    distance = q_distance(q_fn, z, actions)
    assert distance.shape == (1, 3)
    assert torch.allclose(distance, torch.tensor([[0.0, 4.0, 2.0]]))
    gamma = similarity(distance, eta=2.0)
    assert torch.allclose(gamma, torch.tensor([[1.0, math.exp(-2.0), math.exp(-1.0)]]))


def test_the_positive_is_the_most_similar_other_state():
    gamma = torch.tensor([[1.0, 0.2, 0.9, 0.5], [0.3, 1.0, 0.1, 0.4]])
    assert positives(gamma).tolist() == [2, 3]


def test_info_nce_is_lower_when_representations_cluster_by_q_similarity():
    q = torch.tensor([0.0, 0.1, 0.0, 0.1, 5.0, 5.1, 5.0, 5.1])
    gamma = torch.exp(-(q[:4, None] - q[None, :]).abs())  # four anchors, eight states
    centres = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    clustered = centres[(q > 1).long()] + 0.01 * torch.arange(8.0)[:, None]
    shuffled = clustered[torch.tensor([0, 4, 1, 5, 2, 6, 3, 7])]  # clusters mixed
    assert soft_info_nce(clustered, gamma, nu=0.1) < soft_info_nce(shuffled, gamma, nu=0.1) - 0.5


def test_feasibility_target_is_the_discounted_hamilton_jacobi_backup():
    target = feasibility_target(
        costs=torch.tensor([0.0, 1.0, 0.0, 1.0]),
        next_v=torch.tensor([-3.0, -3.0, 10.0, 0.0]),
        dones=torch.tensor([0.0, 0.0, 0.0, 1.0]),
        gamma=0.9,
    )
    # h = −1, 25, −1, 25; max(h, V′) = −1, 25, 10, (terminal: h)
    assert torch.allclose(target, torch.tensor([-1.0, 25.0, 0.1 * -1 + 0.9 * 10, 25.0]))


def test_policy_switching_follows_the_feasibility_bounds():
    v_low = np.array([-2.0, -1.0, 0.5, -0.5, 0.0])
    v_up = np.array([-1.0, 3.0, 4.0, 0.0, 0.1])
    assert choose_policy(v_low, v_up).tolist() == [REWARD, TRANSITION, COST, REWARD, TRANSITION]


@pytest.mark.parametrize("encoder", ["mlp", "atn"])
def test_encoders_read_only_their_side_of_the_observation(point_goal_data, encoder):
    agent = small_agent(encoder=encoder).learn(point_goal_data, budget=3)
    obs = torch.as_tensor(point_goal_data["observations"][:8])
    actions = torch.as_tensor(point_goal_data["actions"][:8])
    other_cost = obs.clone()
    other_cost[:, 20:52] = torch.rand(8, 32, generator=torch.Generator().manual_seed(0))
    other_reward = obs.clone()
    other_reward[:, 4:20] += 0.5
    with torch.no_grad():
        z_r, z_h = agent.encode(obs)
        z_r_cost_changed, z_h_cost_changed = agent.encode(other_cost)
        z_r_reward_changed, z_h_reward_changed = agent.encode(other_reward)
        assert torch.equal(agent.q_reward(z_r, actions), agent.q_reward(z_r_cost_changed, actions))
        assert torch.equal(agent.modules["v_r"](z_r), agent.modules["v_r"](z_r_cost_changed))
        assert torch.equal(agent.q_cost(z_h, actions), agent.q_cost(z_h_reward_changed, actions))
    assert not torch.equal(z_h, z_h_cost_changed)
    assert not torch.equal(z_r, z_r_reward_changed)


def test_delta_zero_removes_the_contrastive_term(point_goal_data):
    batch = {
        "obs": torch.as_tensor(point_goal_data["observations"][:64]),
        "next_obs": torch.as_tensor(point_goal_data["next_observations"][:64]),
        "actions": torch.as_tensor(point_goal_data["actions"][:64]),
        "rewards": torch.as_tensor(point_goal_data["rewards"][:64]),
        "costs": torch.as_tensor(point_goal_data["costs"][:64]),
        "dones": torch.zeros(64),
    }
    for delta, contrastive in ((0.0, False), (10.0, True)):
        agent = small_agent(delta=delta).learn(point_goal_data, budget=1)
        losses = agent.critic_losses(batch, torch.Generator().manual_seed(0))
        values = sum(losses[k] for k in ("v_r", "q_r", "v_h_low", "v_h_up", "q_h"))
        assert ("contrastive_r" in losses) is contrastive
        extra = delta * (losses["contrastive_r"] + losses["contrastive_h"]) if contrastive else 0
        assert torch.isclose(losses["total"], values + extra)


def test_every_loss_is_recorded_per_update(point_goal_data):
    env = omnigym.make("Safe/PointGoal1-v0")
    agent = SDQC(env=env, seed=0, **SMALL, lr=1e-3, behaviour_fraction=0.25)
    agent.learn(point_goal_data, 80)
    curves = agent.loss_curves()
    assert agent.updates == 80 and len(curves["behaviour"]) == 20
    joint = ("v_r", "q_r", "v_h_low", "v_h_up", "q_h", "contrastive_r", "contrastive_h")
    assert sorted(curves) == sorted(("behaviour", *joint, "pi_r", "pi_h", "pi_to"))
    assert all(len(curves[name]) == 60 for name in joint)
    assert np.mean(curves["q_h"][-10:]) < 0.5 * np.mean(curves["q_h"][:10])
    assert min(curves["contrastive_r"]) > 0 and min(curves["contrastive_h"]) > 0


def test_observations_are_standardised_with_the_datasets_statistics(point_goal_data):
    agent = small_agent().learn(point_goal_data, budget=1)
    normaliser = agent.modules["normaliser"]
    observations = point_goal_data["observations"]
    assert np.allclose(normaliser.mean.numpy(), observations.mean(axis=0), atol=1e-5)
    assert np.allclose(normaliser.std.numpy(), observations.std(axis=0) + 1e-3, atol=1e-5)


def test_playing_counts_the_states_each_policy_handles(point_goal_data):
    agent = small_agent().learn(point_goal_data, budget=2)
    for obs in point_goal_data["observations"][:7]:
        agent.act(obs, {})
    assert sum(agent.regions.values()) == 7
    assert set(agent.regions) <= {"pi_r", "pi_to", "pi_h"}
    values = agent.feasibility(point_goal_data["observations"][:7])
    assert values.shape == (7,) and np.isfinite(values).all()


def test_checkpoints_round_trip_to_identical_actions(point_goal_data, tmp_path):
    agent = small_agent().learn(point_goal_data, budget=20)
    agent.save(tmp_path / "sdqc")
    restored = SDQC(encoder="mlp").load(tmp_path / "sdqc")
    assert restored.config == agent.config
    for obs in point_goal_data["observations"][:5]:
        agent.reset(3)
        restored.reset(3)
        assert np.array_equal(agent.act(obs, {}), restored.act(obs, {}))


def test_attention_encoder_takes_obs_groups_as_lists_or_slices(point_goal_data):
    env = omnigym.make("Safe/PointGoal1-v0")
    from_env = SDQC(env=env, **SMALL)
    from_lists = SDQC(obs_groups=GROUPS, **SMALL)
    assert from_env.config == from_lists.config
    assert from_lists.config["obs_groups"] == GROUPS
    from_lists.learn(point_goal_data, budget=2)
    z_r, z_h = from_lists.encode(torch.as_tensor(point_goal_data["observations"][:4]))
    assert z_r.shape == z_h.shape == (4, SMALL["z_dim"])


def test_knn_q_consistency_averages_neighbour_value_gaps(point_goal_data):
    z = torch.tensor([[0.0], [1.0], [10.0], [11.0]])
    assert _knn_gap(z, torch.tensor([0.0, 0.0, 5.0, 5.0]), k=1) == 0.0
    v = torch.tensor([0.0, 1.0, 0.0, 1.0])
    assert _knn_gap(z, v, k=1) == pytest.approx(1.0 / float(v.std()))
    agent = small_agent().learn(point_goal_data, budget=2)
    score = agent.knn_q_consistency(point_goal_data["observations"][:200], k=10)
    assert np.isfinite(score) and score >= 0


def test_bad_arguments_are_named(point_goal_data):
    for kwargs, name in (
        ({"encoder": "cnn"}, "encoder"),
        ({"nu": 0.0}, "nu"),
        ({"delta": -1.0}, "delta"),
        ({"anchors": 40}, "anchors"),
        ({"support_actions": 0}, "support_actions"),
        ({"eta": 0.0}, "eta"),
        ({"obs_groups": {"robot": [4, 2]}}, "obs_groups"),
    ):
        with pytest.raises(ValueError, match=name):
            small_agent(**kwargs)
    with pytest.raises(ValueError, match="obs_groups"):
        SDQC(encoder="atn")
    with pytest.raises(ValueError, match="obs_groups"):
        small_agent(obs_groups={"robot": [0, 4], "cost": [4, 60]}).learn(point_goal_data, 1)
    with pytest.raises(RuntimeError, match="before learn"):
        small_agent().knn_q_consistency(point_goal_data["observations"])


@pytest.mark.parametrize(
    ("bounds", "policy"),
    [((-2.0, -1.0), "pi_r"), ((-1.0, 1.0), "pi_to"), ((1.0, 2.0), "pi_h")],
)
def test_acting_follows_the_policy_the_bounds_pick(point_goal_data, bounds, policy):
    agent = small_agent(candidates=1, q_guard=False).learn(point_goal_data, budget=2)
    head = agent.modules["v_h"][-1]
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.tensor(bounds))
        obs = torch.as_tensor(point_goal_data["observations"][:1])
        z_r, z_h = agent.encode(obs)
        z = {"pi_r": z_r, "pi_h": z_h, "pi_to": torch.cat([z_r, z_h], -1)}[policy]
        expected = agent.modules[policy].mean_action(z)[0].numpy()
    assert np.allclose(agent.act(obs[0].numpy(), {}), expected)


@pytest.mark.parametrize(("q_h", "played"), [(-5.0, "pi_r"), (5.0, "pi_h_guard")])
def test_the_guard_plays_pi_h_where_the_chosen_action_would_violate(point_goal_data, q_h, played):
    agent = small_agent(candidates=1).learn(point_goal_data, budget=2)
    with torch.no_grad():
        head = agent.modules["v_h"][-1]  # bounds in π_r's region
        head.weight.zero_()
        head.bias.copy_(torch.tensor([-2.0, -1.0]))
        for q_head in agent.modules["q_h"].heads:  # every action's Q_h = q_h
            q_head[-1].weight.zero_()
            q_head[-1].bias.fill_(q_h)
        obs = torch.as_tensor(point_goal_data["observations"][:1])
        z_r, z_h = agent.encode(obs)
        policy, z = ("pi_r", z_r) if played == "pi_r" else ("pi_h", z_h)
        expected = agent.modules[policy].mean_action(z)[0].numpy()
    agent.regions.clear()
    assert np.allclose(agent.act(obs[0].numpy(), {}), expected)
    assert dict(agent.regions) == {played: 1}


def test_the_guard_is_an_acting_setting(point_goal_data, tmp_path):
    with pytest.raises(ValueError, match="q_guard"):
        small_agent(q_guard=1)
    small_agent(candidates=1).learn(point_goal_data, budget=2).save(tmp_path / "sdqc")
    loaded = small_agent().load(tmp_path / "sdqc", q_guard=False)
    assert loaded.config["q_guard"] is False


def test_the_safest_of_the_candidates_is_taken(point_goal_data):
    agent = small_agent(candidates=16, q_guard=False).learn(point_goal_data, budget=20)
    agent.reset(0)
    with torch.no_grad():
        obs = torch.as_tensor(point_goal_data["observations"][:1])
        action = torch.as_tensor(agent.act(obs[0].numpy(), {}))[None]
        z_r, z_h = agent.encode(obs)
        q_taken = agent.q_cost(z_h, action)
        v_h = agent.modules["v_h"](z_h)[0].numpy()
        active = {REWARD: "pi_r", TRANSITION: "pi_to", COST: "pi_h"}[
            int(choose_policy(v_h[:1], v_h[1:])[0])
        ]
        z = {"pi_r": z_r, "pi_h": z_h, "pi_to": torch.cat([z_r, z_h], -1)}[active]
        q_mean = agent.q_cost(z_h, agent.modules[active].mean_action(z))
    assert q_taken <= q_mean
