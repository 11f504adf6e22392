"""What the Craft task tests share: a wrapped task env, action indices, seeded rollouts, deep
equality."""

import numpy as np

from omnigym.envs.craft.actions import DiscreteActionWrapper
from omnigym.envs.craft.env import CraftEnv
from omnigym.envs.craft.tasks.base import task_table


def make_task_env(task, **kwargs):
    """``CraftEnv(task)`` in the DiscreteActionWrapper of the task's registered action set."""
    base = CraftEnv(task=task, **kwargs)
    return DiscreteActionWrapper(base, base.task.actions, base.task.mouse_mov)


def action_index(task, name):
    """The ``DiscreteActionWrapper`` index that presses ``name`` in ``task``'s registered action
    set (``data/tasks/*.yaml``; index 0 is the no-op)."""
    return task_table()[task]["actions"].index(name) + 1


def random_rollout(env, reset_seed, steps, action_seed=0):
    """Everything ``steps`` seeded random actions produce: obs bytes, rewards, flags, infos."""
    rng = np.random.default_rng(action_seed)
    obs, info = env.reset(seed=reset_seed)
    record = [(obs.tobytes(), info)]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        record.append((obs.tobytes(), reward, terminated, truncated, info))
        if terminated or truncated:
            obs, info = env.reset()
            record.append((obs.tobytes(), info))
    return record


def run_agent(env, agent, seed):
    """Plays one episode; returns its return and the final info."""
    obs, info = env.reset(seed=seed)
    agent.reset(seed)
    total = 0.0
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        total += reward
        if terminated or truncated:
            return total, info


def assert_same(a, b):
    """Equal values, recursing into dicts, lists and tuples; arrays equal in dtype and bytes."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    else:
        assert a == b
