"""FISOR-lite: the feasibility target, the switched weights, safe action choice, checkpoints."""

import json

import numpy as np
import pytest
import torch

import omnigym
from omnigym.agents.safety.fisor import (
    FISORLite,
    cost_to_h,
    expectile_loss,
    feasibility_target,
    policy_weights,
)

SMALL = {"hidden": [32, 32], "batch_size": 64, "lr": 1e-3}
GOAL = "Safe/PointGoal1-v0"


def costly_region_data(n=2000, seed=0):
    """Random 3-d states and uniform actions; reward grows with a₀, and every action with
    a₀ > 0.3 costs 1: the best-paid actions are the unsafe ones."""
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    timeouts = np.arange(n) % 50 == 49
    return {
        "observations": rng.normal(size=(n, 3)).astype(np.float32),
        "next_observations": rng.normal(size=(n, 3)).astype(np.float32),
        "actions": actions,
        "rewards": actions[:, 0].copy(),
        "costs": (actions[:, 0] > 0.3).astype(np.float32),
        "terminals": np.zeros(n, dtype=bool),
        "timeouts": timeouts,
    }


def test_cost_maps_to_h_of_plus_25_and_minus_1():
    assert cost_to_h(torch.tensor([0.0, 1.0, 0.2])).tolist() == [-1.0, 25.0, 25.0]


def test_feasibility_target_on_hand_values():
    h = torch.tensor([-1.0, -1.0, 25.0, -1.0])
    next_v_h = torch.tensor([-3.0, 4.0, 2.0, 4.0])
    dones = torch.tensor([0.0, 0.0, 0.0, 1.0])
    target = feasibility_target(h, next_v_h, dones, gamma=0.9)
    # 0.1·h + 0.9·max(h, V_h(s′)); a terminal step keeps h alone.
    expected = [0.1 * -1 + 0.9 * -1, 0.1 * -1 + 0.9 * 4, 0.1 * 25 + 0.9 * 25, -1.0]
    assert target.tolist() == pytest.approx(expected)


def test_reversed_expectile_pulls_the_value_to_the_low_end():
    q = torch.tensor([0.0, 10.0])
    values = torch.linspace(-1, 11, 1201)
    upper = [expectile_loss(q - v, 0.9) for v in values]
    lower = [expectile_loss(v - q, 0.9) for v in values]
    assert float(values[int(np.argmin(upper))]) == pytest.approx(9.0, abs=0.02)
    assert float(values[int(np.argmin(lower))]) == pytest.approx(1.0, abs=0.02)


def test_weights_switch_between_reward_and_feasibility_advantages_and_clip():
    # the three cases of FISOR's published actor update
    q_r = torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    v_r = torch.tensor([0.5, -2.0, 0.0, 0.0, 0.0, 0.0])
    q_h = torch.tensor([-1.0, -1.0, 1.0, 2.0, 3.0, -5.0])
    v_h = torch.tensor([-1.0, -1.0, 2.0, 1.0, -1.0, 40.0])
    weights = policy_weights(q_r, v_r, q_h, v_h).tolist()
    assert weights[0] == pytest.approx(np.exp(3 * 0.5))  # feasible: exp(3·(Q_r − V_r))
    assert weights[1] == pytest.approx(100.0)  # exp(9) clipped at 100
    assert weights[2] == pytest.approx(np.exp(5 * 1.0))  # infeasible: exp(5·(V_h − Q_h))
    assert weights[3] == pytest.approx(1.0)  # exp(−5) raised to the floor of 1 (FISOR's code)
    assert weights[4] == 0.0  # V_h ≤ 0 but Q_h > 0: an action that loses feasibility
    assert weights[5] == pytest.approx(150.0)  # exp(225) clipped at 150


def test_chosen_actions_avoid_the_region_that_always_costs():
    data = costly_region_data()
    agent = FISORLite(seed=0, **SMALL).learn(data, budget=200)
    agent.reset(0)
    chosen = np.array([agent.act(obs, {}) for obs in data["observations"][:60]])
    assert (data["actions"][:, 0] > 0.3).mean() > 0.3  # the behaviour data is often unsafe
    assert (chosen[:, 0] > 0.3).mean() <= 0.05
    # The feasibility critic ranks the costly region above the safe one.
    obs = agent.modules["normaliser"](torch.as_tensor(data["observations"][:60]))
    safe, unsafe = torch.tensor([[-0.5, 0.0]]), torch.tensor([[0.8, 0.0]])
    q_h = agent.modules["cost_q"]
    gap = (
        q_h(obs, unsafe.expand(60, -1)).max(0).values - q_h(obs, safe.expand(60, -1)).max(0).values
    )
    assert (gap > 5).all()


def test_learns_on_rollouts_and_the_critic_losses_decrease(point_goal_data):
    env = omnigym.make("Safe/PointGoal1-v0")
    agent = FISORLite(env=env, seed=1, **SMALL).learn(point_goal_data, budget=120)
    assert agent.updates == 120 and len(agent.losses["actor"]) == 120
    for key in ("reward_q", "cost_q"):
        assert np.mean(agent.losses[key][-30:]) < 0.5 * np.mean(agent.losses[key][:30])
    assert np.isfinite(agent.losses["actor"]).all()
    obs, _ = env.reset(seed=0)
    action = agent.act(obs, {"cost": 0.0})
    assert action.dtype == np.float32 and action.shape == (2,)
    assert env.action_space.contains(action)


def test_save_load_round_trip_gives_identical_actions(tmp_path, point_goal_data):
    agent = FISORLite(seed=2, **SMALL).learn(point_goal_data, budget=20)
    agent.save(tmp_path / "fisor")
    restored = FISORLite().load(tmp_path / "fisor")
    assert restored.config == agent.config
    obs = point_goal_data["observations"][:5]
    agent.reset(7)
    restored.reset(7)
    for row in obs:
        assert np.array_equal(agent.act(row, {}), restored.act(row, {}))


def test_the_default_action_is_the_actors_mean(point_goal_data):
    agent = FISORLite(seed=3, **SMALL).learn(point_goal_data, budget=5)
    obs = point_goal_data["observations"][:1]
    with torch.no_grad():
        mean = agent.modules["actor"].mean_action(agent.modules["normaliser"](torch.as_tensor(obs)))
    assert np.allclose(agent.act(obs[0], {}), mean[0].numpy())
    assert sum(agent.regions.values()) == 1
    assert agent.feasibility(obs).shape == (1,)


def test_with_candidates_the_sampled_choice_is_seeded_and_never_less_safe_than_the_mean(
    point_goal_data,
):
    agent = FISORLite(seed=3, candidates=16, **SMALL).learn(point_goal_data, budget=5)
    obs = point_goal_data["observations"][0]
    agent.reset(11)
    first = agent.act(obs, {})
    agent.reset(11)
    assert np.array_equal(agent.act(obs, {}), first)
    with torch.no_grad():
        state = agent.modules["normaliser"](torch.as_tensor(obs[None]))
        mean = agent.modules["actor"].mean_action(state)
        q_h = agent.modules["cost_q"]
        assert (
            q_h(state, torch.as_tensor(first[None])).max(0).values <= q_h(state, mean).max(0).values
        )


def test_load_takes_new_acting_settings_and_refuses_others(tmp_path, point_goal_data):
    FISORLite(seed=2, **SMALL).learn(point_goal_data, budget=5).save(tmp_path / "fisor")
    agent = FISORLite().load(tmp_path / "fisor", candidates=16, candidate_spread=0.3)
    assert (agent.config["candidates"], agent.config["candidate_spread"]) == (16, 0.3)
    assert FISORLite().load(tmp_path / "fisor").config["candidates"] == 1  # as saved
    with pytest.raises(ValueError, match="hidden"):
        FISORLite().load(tmp_path / "fisor", hidden=[8])  # what it learned is not an acting setting
    with pytest.raises(ValueError, match="candidate_spread"):
        FISORLite().load(tmp_path / "fisor", candidates=4, candidate_spread=0.0)
    # a checkpoint saved before candidate_spread existed plays the agent's own value
    config = tmp_path / "fisor" / "config.json"
    record = json.loads(config.read_text())
    del record["config"]["candidate_spread"]
    config.write_text(json.dumps(record))
    assert FISORLite().load(tmp_path / "fisor").config["candidate_spread"] == 1.0


def test_the_dsrl_experiment_plays_a_checkpoint_with_the_scenarios_acting_settings(
    tmp_path, point_goal_data, monkeypatch
):
    from omnigym.evaluators import dsrl_experiment
    from omnigym.scenario import AgentEntry

    FISORLite(seed=0, **SMALL).learn(point_goal_data, budget=3).save(tmp_path / "fisor")
    made, make_agent = [], dsrl_experiment.make_agent

    def spy(*args, **kwargs):
        made.append(make_agent(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(dsrl_experiment, "make_agent", spy)
    entry = AgentEntry(
        name="fisor",
        label="FISOR",
        kwargs={"candidates": 16, "candidate_spread": 0.3},
        train={"budget": 3},
    )
    play = dsrl_experiment.Play(env_id=GOAL, target_cost=3.0, label="FISOR")
    unit = dsrl_experiment.Unit(
        task=GOAL,
        agent=entry,
        seed=0,
        train_cost=None,
        use=None,
        plays=(play,),
        checkpoint=str(tmp_path / "fisor"),
        episodes=1,
        knn=False,
    )
    records, _ = dsrl_experiment._run_unit(unit)
    assert len(records) == 1
    assert (made[0].config["candidates"], made[0].config["candidate_spread"]) == (16, 0.3)
    assert made[0].updates == 3  # loaded, not retrained


def test_a_narrower_spread_keeps_the_candidates_nearer_the_mean(point_goal_data):
    actor = FISORLite(seed=3, **SMALL).learn(point_goal_data, budget=5).modules["actor"]
    state = torch.zeros((256, point_goal_data["observations"].shape[1]))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        mean = actor.mean_action(state)
        gaps = {
            spread: (actor.sample(state, generator, spread) - mean).abs().mean().item()
            for spread in (1.0, 0.3, 1e-6)
        }
    assert gaps[1e-6] < 1e-5 < gaps[0.3] < gaps[1.0]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"gamma": 1.0}, "gamma"),
        ({"candidate_spread": -0.5}, "candidate_spread"),
        ({"cost_expectile": 0.0}, "cost_expectile"),
        ({"candidates": 0}, "candidates"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"reward_clip": -1}, "reward_clip"),
        ({"cost_temperature": 0}, "cost_temperature"),
    ],
)
def test_bad_arguments_raise_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        FISORLite(**kwargs)
