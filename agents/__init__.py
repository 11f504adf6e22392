"""Agents usable on any environment (``random``, ``sb3``: Stable-Baselines3) and the offline
safe-RL agents of the Safe family (``bc_all``, ``bc_safe``, ``bcq_lag``, ``cdt``, ``fisor``,
``sdqc``; spec safety.md §6–§7).

Importing this package registers the generic agents; it imports nothing heavy.
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
