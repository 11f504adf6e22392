"""Craft: an embedded voxel engine re-creating the Craftium task suite (Malagón et al., ICML
2025; ``docs/craft.md``).

Importing this package registers the ``Craft/`` ids of ``registry.yaml`` (entry-point strings
only: the engine, its Numba kernels and the task modules load when an environment is made).
Each single-agent id is ``CraftEnv(task=<name>)`` wrapped in Craftium's
``DiscreteActionWrapper`` with the task's actions (``env.make_task_env``), so
``env.action_space`` is ``Discrete(n)`` and ``env.unwrapped.action_space`` the raw 22-key
``Dict``; ``CraftVectorEnv`` is each id's vector entry point. A task's actions, episode length
and score bounds are the data of ``data/tasks/*.yaml``.
"""

from omnigym.registry import register_family

register_family(__name__)
