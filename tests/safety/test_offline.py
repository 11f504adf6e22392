"""The offline-agent plumbing: dataset checks, minibatches, the Gaussian policy, checkpoints."""

import numpy as np
import pytest
import torch

import omnigym
from omnigym.agents.safety.offline import Batches, GaussianPolicy, OfflineAgent, as_dataset, mlp


def synthetic(n=64, obs_dim=5, act_dim=2, seed=0):
    rng = np.random.default_rng(seed)
    terminals = np.zeros(n, dtype=bool)
    timeouts = np.zeros(n, dtype=bool)
    timeouts[n // 2 - 1] = timeouts[-1] = True
    return {
        "observations": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "next_observations": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "actions": rng.uniform(-1, 1, size=(n, act_dim)).astype(np.float32),
        "rewards": rng.normal(size=n).astype(np.float32),
        "costs": (rng.uniform(size=n) < 0.2).astype(np.float32),
        "terminals": terminals,
        "timeouts": timeouts,
    }


class MeanBC(OfflineAgent):
    """Regresses the policy mean on dataset actions: the smallest agent the base supports."""

    name = "mean_bc"

    def __init__(self, env=None, seed=0, hidden=(16,), lr=1e-2):
        super().__init__(env, seed, hidden=list(hidden), lr=lr)

    def build(self, obs_dim, act_dim):
        self.modules = {"actor": GaussianPolicy(obs_dim, act_dim, self.config["hidden"])}

    def train(self, data, budget):
        batches = Batches(data, self.seed)
        actor = self.modules["actor"]
        optimiser = torch.optim.Adam(actor.parameters(), lr=self.config["lr"])
        for _ in range(budget):
            batch = batches.sample(32)
            loss = (actor.mean_action(batch["obs"]) - batch["actions"]).pow(2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()

    def policy_action(self, obs):
        return self.modules["actor"].mean_action(obs).numpy()


def test_batches_are_seeded_and_typed():
    data = synthetic()
    first, second = Batches(data, seed=3).sample(8), Batches(data, seed=3).sample(8)
    for key in first:
        assert first[key].dtype == torch.float32
        assert torch.equal(first[key], second[key])
    assert first["obs"].shape == (8, 5) and first["dones"].shape == (8,)


def test_as_dataset_checks_shapes_against_the_env():
    class Env:
        observation_space = type("S", (), {"shape": (4,)})()
        action_space = type("S", (), {"shape": (2,)})()

    with pytest.raises(ValueError, match=r"observations rows have shape \(5,\), expected \(4,\)"):
        as_dataset(synthetic(), env=Env())


def test_gaussian_policy_actions_stay_in_the_box_and_densities_are_finite():
    torch.manual_seed(0)
    policy = GaussianPolicy(5, 2, (16,))
    obs = torch.randn(10, 5)
    assert policy.mean_action(obs).abs().max() < 1
    assert policy.sample(obs, torch.Generator().manual_seed(0)).abs().max() <= 1
    assert torch.isfinite(policy.log_prob(obs, torch.ones(10, 2))).all()
    assert len(mlp([3, 8, 8, 1])) == 5  # three linear layers, two activations


def test_learning_acting_and_checkpoints_round_trip(tmp_path):
    data = synthetic()
    agent = MeanBC(seed=1).learn(data, budget=50)
    assert agent.updates == 50
    obs = data["observations"][0]
    action = agent.act(obs, {})
    assert action.shape == (2,) and action.dtype == np.float32
    agent.save(tmp_path / "ckpt")
    restored = MeanBC().load(tmp_path / "ckpt")
    assert np.array_equal(restored.act(obs, {}), action)
    assert restored.config == {"hidden": [16], "lr": 0.01} and restored.updates == 50


def test_errors_name_what_is_wrong(tmp_path):
    with pytest.raises(RuntimeError, match="before learn"):
        MeanBC().act(np.zeros(5), {})
    with pytest.raises(ValueError, match="budget"):
        MeanBC().learn(synthetic(), budget=-1)
    agent = MeanBC().learn(synthetic(), budget=1)
    with pytest.raises(ValueError, match="dimensions"):
        agent.learn(synthetic(obs_dim=7), budget=1)
    agent.save(tmp_path / "a")

    class Other(MeanBC):
        name = "other"

    with pytest.raises(ValueError, match="holds a mean_bc agent"):
        Other().load(tmp_path / "a")


def test_rollout_fixture_is_a_valid_dsrl_dataset(point_goal_data):
    from omnigym.envs.safety.dsrl import episode_bounds, trajectory_returns

    assert len(episode_bounds(point_goal_data["terminals"], point_goal_data["timeouts"])) == 6
    rewards, costs, lengths = trajectory_returns(point_goal_data)
    assert lengths.tolist() == [60] * 6
    assert set(np.unique(point_goal_data["costs"])) <= {0.0, 1.0}
    assert MeanBC(env=omnigym.make("Safe/PointGoal1-v0")).learn(point_goal_data, 5).updates == 5
