"""The diffusion actor of FISOR and SDQC: schedule, sampler, weighted denoising, agents."""

import json

import numpy as np
import pytest
import torch

from omnigym.agents.safety.diffusion import DiffusionPolicy, make_actor, vp_betas
from omnigym.agents.safety.fisor import FISORLite
from omnigym.agents.safety.offline import GaussianPolicy
from omnigym.agents.safety.sdqc import SDQC

from .test_fisor import SMALL, costly_region_data

SDQC_SMALL = {"encoder": "mlp", "hidden": 32, "z_dim": 16, "batch_size": 64, "lr": 1e-3}


def two_modes(n=4096, seed=0):
    """States of noise; the first action coordinate is +0.8 or −0.8 (half each), the second
    0.3: a mean between the modes is an action the data never shows."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn((n, 3), generator=g)
    sign = torch.where(torch.rand(n, generator=g) < 0.5, 1.0, -1.0)
    actions = torch.stack([0.8 * sign, torch.full((n,), 0.3)], 1)
    return obs, (actions + 0.05 * torch.randn((n, 2), generator=g)).clamp(-1, 1), sign


def fit(policy, obs, actions, weights, updates=1500, seed=0):
    torch.manual_seed(seed)
    optimiser = torch.optim.Adam(policy.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(updates):
        rows = torch.randint(len(obs), (256,), generator=g)
        loss = (weights[rows] * policy.imitation_loss(obs[rows], actions[rows], g)).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return policy


def test_the_vp_schedule_grows_and_ends_near_pure_noise():
    betas = vp_betas(5)
    assert (betas[1:] > betas[:-1]).all() and (betas > 0).all() and (betas < 1).all()
    assert torch.prod(1 - betas) < 0.1


def test_samples_stay_on_the_datas_modes_where_a_gaussian_falls_between_them():
    obs, actions, _ = two_modes()
    ones = torch.ones(len(obs))
    diffusion = fit(DiffusionPolicy(3, 2, (128, 128)), obs, actions, ones)
    gaussian = fit(GaussianPolicy(3, 2, (128, 128)), obs, actions, ones)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        between = {
            name: float((policy.sample(obs[:2000], g)[:, 0].abs() < 0.4).float().mean())
            for name, policy in (("diffusion", diffusion), ("gaussian", gaussian))
        }
    # the data puts no action there
    assert float((actions[:, 0].abs() < 0.4).float().mean()) == 0.0
    assert between["diffusion"] < 0.7 * between["gaussian"], between


def test_weighted_denoising_moves_the_samples_to_the_weighted_mode():
    obs, actions, sign = two_modes()
    weights = (sign > 0).float() * 2.0  # the agents' BC weights: the upper mode only
    policy = fit(DiffusionPolicy(3, 2, (64, 64)), obs, actions, weights)
    with torch.no_grad():
        drawn = policy.sample(obs[:1000], torch.Generator().manual_seed(2))
    assert float((drawn[:, 0] > 0.4).float().mean()) > 0.85


def test_the_sampler_is_seeded_boxed_and_noiseless_at_spread_zero():
    policy = DiffusionPolicy(4, 3, (16,))
    obs = torch.randn(50, 4)
    with torch.no_grad():
        first = policy.sample(obs, torch.Generator().manual_seed(5))
        again = policy.sample(obs, torch.Generator().manual_seed(5))
        assert torch.equal(first, again) and first.abs().max() <= 1.0
        assert torch.equal(policy.mean_action(obs), policy.sample(obs, None, spread=0.0))
        assert policy.candidate_actions(obs[:1], 16, torch.Generator(), 1.0).shape == (16, 3)
    assert policy.imitation_loss(obs, torch.zeros(50, 3)).shape == (50,)


def test_bad_actor_settings_are_named():
    with pytest.raises(ValueError, match="actor"):
        make_actor("flow", 3, 2, (8,))
    with pytest.raises(ValueError, match="steps"):
        DiffusionPolicy(3, 2, (8,), steps=0)
    with pytest.raises(ValueError, match="actor"):
        FISORLite(actor="flow")
    with pytest.raises(ValueError, match="actor"):
        SDQC(encoder="mlp", actor="flow")
    with pytest.raises(ValueError, match="behaviour"):
        SDQC(encoder="mlp", behaviour="flow")


def test_sdqc_with_the_diffusion_behaviour_model_samples_in_the_box(point_goal_data):
    agent = SDQC(seed=1, behaviour="diffusion", **SDQC_SMALL).learn(point_goal_data, budget=40)
    assert len(agent.loss_curves()["behaviour"]) == 4
    assert len(agent.loss_curves()["contrastive_h"]) == 36
    obs = agent.modules["normaliser"](torch.as_tensor(point_goal_data["observations"][:3]))
    with torch.no_grad():
        drawn = agent.modules["behaviour"].sample(obs, 8, torch.Generator().manual_seed(0))
    assert drawn.shape == (3, 8, 2) and drawn.abs().max() <= 1.0


def test_fisor_with_the_diffusion_actor_avoids_the_region_that_always_costs():
    data = costly_region_data()
    agent = FISORLite(seed=0, actor="diffusion", candidates=16, **SMALL).learn(data, budget=300)
    assert isinstance(agent.modules["actor"], DiffusionPolicy)
    assert np.isfinite(agent.losses["actor"]).all()
    agent.reset(0)
    chosen = np.array([agent.act(obs, {}) for obs in data["observations"][:60]])
    assert (data["actions"][:, 0] > 0.3).mean() > 0.3  # the behaviour data is often unsafe
    assert (chosen[:, 0] > 0.3).mean() <= 0.05


@pytest.mark.parametrize("make", [FISORLite, SDQC])
def test_diffusion_agents_round_trip_and_older_checkpoints_load_as_gaussian(
    make, tmp_path, point_goal_data
):
    small = SMALL if make is FISORLite else SDQC_SMALL
    blank = {} if make is FISORLite else {"encoder": "mlp"}
    agent = make(seed=2, actor="diffusion", candidates=4, **small)
    agent.learn(point_goal_data, budget=20)
    agent.save(tmp_path / "agent")
    restored = make(**blank).load(tmp_path / "agent")
    assert restored.config == agent.config
    agent.reset(7)
    restored.reset(7)
    for row in point_goal_data["observations"][:5]:
        action = agent.act(row, {})
        assert np.array_equal(action, restored.act(row, {}))
        assert np.abs(action).max() <= 1.0
    # a checkpoint saved before the actor setting existed is a Gaussian one
    make(seed=2, **small).learn(point_goal_data, budget=5).save(tmp_path / "old")
    config = tmp_path / "old" / "config.json"
    record = json.loads(config.read_text())
    for key in ("actor", "diffusion_steps", "behaviour"):
        record["config"].pop(key, None)
    config.write_text(json.dumps(record))
    old = make(**blank).load(tmp_path / "old")
    assert old.config["actor"] == "gaussian" and old.config.get("behaviour", "cvae") == "cvae"
    assert not any(isinstance(m, DiffusionPolicy) for m in old.modules.values())
