"""Playing one whole episode, for the LMRL task tests."""


def play(env, agent, seed, options=None, agent_seed=None):
    """Play ``agent`` on ``env`` from ``reset(seed=seed, options=options)`` to the end; return the
    last observation and info. The agent is reset with ``agent_seed`` (default ``seed``)."""
    if hasattr(agent, "reset"):
        agent.reset(seed if agent_seed is None else agent_seed)
    observation, info = env.reset(seed=seed, options=options)
    done = False
    while not done:
        observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
        done = terminated or truncated
    return observation, info
