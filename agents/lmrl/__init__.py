"""The LMRL family's oracles: the best scripted player of each LMRL-Gym task.

LMRL-Gym (Abdulhai et al., ICML 2025) scores every task between its minimum return (0), its
offline dataset's average (50) and a strong player's return (100). Here that player is the
task's ``oracle``, one module per task beside its environment's name in ``envs/lmrl/``:
:mod:`.maze`, :mod:`.text_nav`, :mod:`.wordle`, :mod:`.chess_task`, :mod:`.questions` (Twenty
Questions and Guess My City) and :mod:`.car_dealer`. An oracle is a player: it reads only what
a player may read (the observation, ``info`` and the task's public data), never the
simulator's state. ``envs/lmrl/registry.yaml`` names each as its task's ``oracle`` agent.

The ``behavior`` policies behind the offline datasets are not here: they are the tasks' data
generators, which define the datasets (``omnigym dataset``) and so the score's 50, and may read
the simulator's state; they stay with the tasks in :mod:`omnigym.envs.lmrl`. :mod:`.normalization`
regenerates the score's constants, since ``max`` is the oracle's mean return (``docs/lmrl.md``).
"""
