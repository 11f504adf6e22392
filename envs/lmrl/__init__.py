"""LMRL-Gym text tasks (Abdulhai et al., ICML 2025; arXiv 2311.18232), rule-based re-creations
(``docs/lmrl.md``).

Importing this package registers the ``LMRL/`` ids of ``registry.yaml`` with their ``oracle``
and ``behavior`` agents and, as metadata, each task's language-model prompt and filtered-BC
rule; the task modules are only imported when an environment or agent is made.

Every single-agent task module provides, for its ids:

- the environment (a :class:`~omnigym.envs.lmrl.text_task.TextTaskEnv`, whose class attributes
  ``min_return`` and ``evaluation_runs()`` feed the normalized score);
- ``oracle``: the best scripted policy, which reads only what a player may read;
- ``behavior``: the scripted policy behind the task's offline dataset; behaviour policies are
  data generators and may read the simulator's state through ``env.unwrapped``.
"""

from omnigym.registry import register_family

register_family(__name__)
