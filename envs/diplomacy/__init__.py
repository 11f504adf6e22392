"""Diplomacy: the DATC-compliant ``diplomacy`` engine as a PettingZoo environment
(``docs/diplomacy.md``).

Importing this package registers the ``Diplomacy/`` ids of ``registry.yaml`` with entry-point
strings only: the engine (the optional, AGPL-licensed extra ``omnigym[diplomacy]``) is imported
when an environment is made, and making one without it raises an ``ImportError`` that names the
extra.

- ``Diplomacy/Standard-v0``: the standard map, seven powers, solo at 18 of 34 centres.
- ``Diplomacy/Pure-v0``: the engine's tiny ``pure`` map (seven powers on seven centres, solo at
  4), for fast tests.

Both are ``env.DiplomacyEnv`` (a ``ParallelEnv``; ``omnigym.make_aec`` gives the AEC form);
``orders.orders_to_action`` / ``orders.action_to_orders`` convert between order strings and
index actions.
"""

from omnigym.registry import register_family

register_family(__name__)
