"""Agents usable on any environment (``random``, ``sb3``: Stable-Baselines3), the offline
safe-RL agents of the Safe family (``bc_all``, ``bc_safe``, ``bcq_lag``, ``cdt``, ``fisor``,
``sdqc``; spec safety.md §6–§7) and the Diplomacy reference bots (``diplomacy_random``,
``diplomacy_greedy``, ``diplomacy_defensive``; spec diplomacy.md §4), which play the
``Diplomacy/`` ids.

Importing this package registers the agents by entry-point string; it imports nothing heavy.
"""

from omnigym.agent import register_agent

register_agent("random", "omnigym.agents.random:RandomAgent")
register_agent("sb3", "omnigym.agents.sb3:SB3Agent")
register_agent("bc_all", "omnigym.agents.bc:BCAll")
register_agent("bc_safe", "omnigym.agents.bc:BCSafe")
register_agent("bcq_lag", "omnigym.agents.bcq_lag:BCQLag")
register_agent("cdt", "omnigym.agents.cdt:CDTLite")
register_agent("fisor", "omnigym.agents.fisor:FISORLite")
register_agent("sdqc", "omnigym.agents.sdqc:SDQC")
register_agent("diplomacy_random", "omnigym.agents.diplomacy_bots:RandomBot")
register_agent("diplomacy_greedy", "omnigym.agents.diplomacy_bots:GreedySCBot")
register_agent("diplomacy_defensive", "omnigym.agents.diplomacy_bots:DefensiveBot")
