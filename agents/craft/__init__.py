"""Scripted agents for the Craft tasks, one module per task (spec craft.md §4).

They play from what the task exposes to a scripted controller (``env.unwrapped``'s simulation:
player pose, target, world grid) and set the score ranges of ``data/tasks/*.yaml`` where the
spec defines them as a scripted agent's mean return.
"""
