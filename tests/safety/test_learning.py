"""The feasibility-guided agents learn to be safe where behaviour cloning is not.

On a small fixed dataset of Safe/PointRun-v0 in which three quarters of the trajectories run
above the speed limit (cost every step) and one quarter below it (cost 0), BC-All copies the
majority and pays the cost of nearly every step, while FISOR-lite and SDQC learn from the
feasibility value which actions keep the cost at zero. The speed limit (0.8 of full speed)
caps what a safe agent can earn at 0.8 of a full-speed run's progress, so "comparable reward"
here means at least half of BC-All's return.
"""

import numpy as np
import pytest

import omnigym
from omnigym.agents.safety.bc import BCAll
from omnigym.agents.safety.fisor import FISORLite
from omnigym.agents.safety.sdqc import SDQC
from omnigym.envs.safety import datasets
from omnigym.evaluators.rollout import evaluate

RUN = "Safe/PointRun-v0"
RECKLESS_GRID = [(0.0, 0.0), (0.9, 0.0), (1.0, 0.0), (1.0, 0.3)]
UPDATES = 1500
SDQC_UPDATES = 2500


@pytest.fixture(scope="module")
def reckless_run():
    """Twenty scripted trajectories: a quarter at 0.7 of the speed limit (β = 0), the rest at
    or near full speed; and the env's strict threshold κ."""
    data, knobs = datasets.rollouts(RUN, 20, seed=0, grid=RECKLESS_GRID)
    costs = np.add.reduceat(data["costs"], np.flatnonzero(np.r_[True, data["timeouts"][:-1]]))
    assert (costs == 0).sum() == 5 and (costs > 100).sum() == 15
    env = omnigym.make(RUN)
    return data, env, float(env.unwrapped.constants["strict_threshold"])


def played(agent):
    """Mean episode cost and return over three episodes."""
    records = evaluate(RUN, agent, episodes=3, seeds=[0])
    return np.mean([r["cost"] for r in records]), np.mean([r["return"] for r in records])


@pytest.fixture(scope="module")
def bc_all(reckless_run):
    data, env, _ = reckless_run
    return played(BCAll(env=env, seed=0, hidden=[64, 64]).learn(data, UPDATES))


@pytest.mark.slow
@pytest.mark.parametrize(
    "make_agent",
    [
        pytest.param(lambda env: FISORLite(env=env, seed=0, hidden=[64, 64], lr=1e-3), id="fisor"),
        # The attention encoder at this size (8-wide tokens) does not separate the feasibility
        # value in 1,500 updates: V_h^low stays at +1.2 on the safe trajectories' states (their
        # value is -1) and pi_r never plays; the MLP encoder reaches -0.05 to -0.26 and plays
        # cost 0 at a return of 10.2-11.3 on seeds 0-2 after 2,500 updates (docs/safety.md).
        pytest.param(
            lambda env: SDQC(
                env=env, seed=0, hidden=64, z_dim=16, encoder="mlp", contrast_batch=16, lr=1e-3
            ),
            id="sdqc",
        ),
    ],
)
def test_feasibility_guided_agent_costs_less_than_bc_all_at_comparable_reward(
    reckless_run, bc_all, make_agent
):
    data, env, kappa = reckless_run
    bc_cost, bc_return = bc_all
    agent = make_agent(env)
    cost, episode_return = played(
        agent.learn(data, SDQC_UPDATES if isinstance(agent, SDQC) else UPDATES)
    )
    assert bc_cost > 20 * kappa  # BC-All copies the reckless majority
    assert cost <= kappa
    assert episode_return >= 0.5 * bc_return
