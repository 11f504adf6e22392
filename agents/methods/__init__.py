"""Methods and baselines of the ``Methods/`` papers, one module per paper, named as the paper's
env module (``docs/methods.md``).

Each agent takes a problem instance (the env's observation, and ``info["instance"]`` where a
space cannot describe it) and returns a solution. They are registered with their paper's ids in
``envs/methods/registry.yaml``.
"""
