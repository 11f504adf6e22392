"""Methods and baselines of the ``Methods/`` papers, one module per paper (spec methods.md).

Each agent takes a problem instance (the env's observation, and ``info["instance"]`` where a
space cannot describe it) and returns a solution. They are registered per env id through
``envs/methods/data/<paper>.yaml``.
"""
