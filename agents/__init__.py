"""Agents usable on any environment (``random``, ``sb3``: Stable-Baselines3) and, in later
modules, the paper agents.

Importing this package registers the generic agents; it imports nothing heavy.
"""

from omnigym.agent import register_agent

register_agent("random", "omnigym.agents.random:RandomAgent")
register_agent("sb3", "omnigym.agents.sb3:SB3Agent")
