"""LMRL-Gym text tasks (Abdulhai et al., ICML 2025; arXiv 2311.18232), rule-based re-creations
(``docs/lmrl.md``).

Importing this package registers the ``LMRL/`` ids of ``registry.yaml`` with their ``oracle``
and ``behavior`` agents and, as metadata, each task's language-model prompt and filtered-BC
rule; the task modules are only imported when an environment or agent is made.

Every single-agent task module provides, for its ids:

- the environment (a :class:`~omnigym.envs.lmrl.text_task.TextTaskEnv`, whose class attributes
  ``min_return`` and ``evaluation_runs()`` feed the normalized score);
- ``behavior``: the task's data generator, the scripted policy behind its offline dataset
  (:mod:`.datasets`, ``omnigym dataset``), whose average return is the normalized score's 50.
  It is part of the task, not a player: it may read the simulator's state through
  ``env.unwrapped``, as LMRL-Gym's dataset policies did, so it stays here with the task.

The ``oracle`` of each task, the best scripted player (the normalized score's 100), reads only
what a player may read; it is an agent, in :mod:`omnigym.agents.lmrl`. Nothing here imports it:
the registry names it, and the tool that measures it (``python -m
omnigym.agents.lmrl.normalization --recompute``) lives beside it.
"""

from omnigym.registry import register_family

register_family(__name__)
