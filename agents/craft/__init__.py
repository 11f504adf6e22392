"""Scripted agents for the Craft tasks (Craftium: Malagón, Ceberio, Lozano, ICML 2025), one module
per task, each registered as the ``scripted`` agent of its ids in ``envs/craft/registry.yaml``.

They play from what the task exposes to a scripted controller (``env.unwrapped``'s simulation:
player pose, target, world grid). Where a task's score range is a scripted agent's mean return
(the R_hi of ChopTree and Speleo in ``envs/craft/data/tasks/*.yaml``), that mean is this
package's agent's.
"""
