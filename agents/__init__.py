"""Agents usable on any environment (``random``) and, in later modules, the paper agents.

Importing this package registers the generic agents; it imports nothing heavy.
"""

from omnigym.agent import register_agent

register_agent("random", "omnigym.agents.random:RandomAgent")
