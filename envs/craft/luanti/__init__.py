"""Craft's second backend: the tasks in a headless Luanti 5.6 server (``docs/craft.md``,
"Backends").

``server.py`` runs one ``minetestserver`` with the bridge mod (``mods/omnigym_bridge``, Lua) and a
task mod (``tasks/``); ``env.py`` is the Gymnasium environment over it, which
``CraftEnv(task, backend="luanti")`` makes.
"""
