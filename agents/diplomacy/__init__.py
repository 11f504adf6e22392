"""The Diplomacy family's agents (``docs/diplomacy.md``).

- :mod:`.base`: :class:`~.base.PowerAgent`, the protocol every agent that plays one power
  shares (seeding, and orders turned into the env's action); DipLLM-lite
  (:mod:`omnigym.llm_agents.dipllm`) builds on it too;
- :mod:`.bots`: the scripted reference bots ``diplomacy_random``, ``diplomacy_greedy`` and
  ``diplomacy_defensive``, registered in ``envs/diplomacy/registry.yaml``.

Importing this package imports neither the engine nor torch.
"""
