"""Fixtures the Safe tests share: small DSRL-format datasets rolled out in the real envs, and
one torch thread for the agents' tiny networks."""

import importlib.util

import numpy as np
import pytest

import omnigym
from omnigym import threads


def rollout_dataset(env_id, episodes=4, seed=0, horizon=None, noise=1.0):
    """A DSRL dict of ``episodes`` episodes of uniform random actions scaled by ``noise`` (env
    seeds ``seed + e``); ``horizon`` cuts episodes short as time-outs."""
    env = omnigym.make(env_id).unwrapped
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("observations", "next_observations", "actions", "rewards", "costs")}
    terminals, timeouts = [], []
    for e in range(episodes):
        obs, _ = env.reset(seed=seed + e)
        t = 0
        while True:
            action = (noise * rng.uniform(-1, 1, env.action_space.shape)).astype(np.float32)
            next_obs, reward, terminated, truncated, info = env.step(action)
            t += 1
            cut = horizon is not None and t >= horizon
            rows["observations"].append(obs)
            rows["next_observations"].append(next_obs)
            rows["actions"].append(action)
            rows["rewards"].append(reward)
            rows["costs"].append(info["cost"])
            terminals.append(terminated)
            timeouts.append((truncated or cut) and not terminated)
            obs = next_obs
            if terminated or truncated or cut:
                break
    data = {k: np.asarray(v, dtype=np.float32) for k, v in rows.items()}
    data["terminals"] = np.asarray(terminals, dtype=bool)
    data["timeouts"] = np.asarray(timeouts, dtype=bool)
    return data


@pytest.fixture(scope="session")
def point_goal_data():
    """Six 60-step episodes of Safe/PointGoal1-v0 under random actions."""
    return rollout_dataset("Safe/PointGoal1-v0", episodes=6, seed=0, horizon=60)


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    """Tiny networks: with two intra-op threads on a shared 2-core machine the thread hand-offs
    cost more than the arithmetic (10x slower measured), so the Safe tests train on one."""
    if importlib.util.find_spec("torch") is None:  # the env and data tests need no torch
        yield
        return
    with threads.one_torch_thread():
        yield
