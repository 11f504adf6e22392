"""Methods: non-RL papers as task environments (``docs/methods.md``).

Each paper is one module here (its task environment) with its methods and baselines as agents in
``omnigym.agents.methods``. What a paper registers is data: its group in ``registry.yaml`` (the
paper, its ids with entry point, kwargs and description, and its agents, usable on those ids
only). Importing this package reads that file and registers the ``Methods/`` ids; no paper module
(nor scikit-learn, torch or pymoo) is imported until an environment is made.
"""

from omnigym.registry import register_family

register_family(__name__)
