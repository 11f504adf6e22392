"""Agents. The general ones are registered here, each with what it runs on: ``random`` (any
single-agent environment) and ``sb3`` (Stable-Baselines3 on single-agent environments with array
observations). Each family's agents live in a sub-package of this one and are registered beside
that family's environments, in ``envs/<family>/registry.yaml``, usable on those ids only.

Importing this package registers the agents by entry-point string; it imports nothing heavy.
"""

from omnigym.agent import register_agent

register_agent("random", "omnigym.agents.random:RandomAgent", runs_on={"kind": ["single"]})
register_agent(
    "sb3",
    "omnigym.agents.sb3:SB3Agent",
    runs_on={"kind": ["single"], "obs_kind": ["pixels", "voxels", "vector", "dict"]},
)
