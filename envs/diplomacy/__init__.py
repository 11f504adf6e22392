"""Diplomacy: the DATC-compliant ``diplomacy`` engine as a PettingZoo environment (spec
diplomacy.md).

Importing this package registers the ``Diplomacy/`` ids with entry-point strings only: the
engine (the optional, AGPL-licensed extra ``omnigym[diplomacy]``) is imported when an
environment is made, and making one without it raises an ``ImportError`` that names the extra.

- ``Diplomacy/Standard-v0``: the standard map, seven powers, solo at 18 of 34 centres.
- ``Diplomacy/Pure-v0``: the engine's tiny ``pure`` map (seven powers on seven centres, solo at
  4), for fast tests.

Both are ``env.DiplomacyEnv`` (a ``ParallelEnv``; ``omnigym.make_aec`` gives the AEC form);
``orders.orders_to_action`` / ``orders.action_to_orders`` convert between order strings and
index actions.
"""

from omnigym.registry import EnvInfo, register

_PAPER = (
    "DipLLM: Fine-Tuning LLM for Strategic Decision-making in Diplomacy (Xu et al., ICML 2025); "
    "the diplomacy engine (Paquette et al., No-Press Diplomacy, NeurIPS 2019)"
)
_ENTRY = "omnigym.envs.diplomacy.env:DiplomacyEnv"

_IDS = (
    (
        "Diplomacy/Standard-v0",
        "standard",
        "No-press Diplomacy on the standard map: seven powers, one step per phase, "
        "sum-of-squares score at the end (solo at 18 of 34 centres).",
    ),
    (
        "Diplomacy/Pure-v0",
        "pure",
        "No-press Diplomacy on the engine's tiny 'pure' map: seven powers on seven centres, "
        "solo at 4.",
    ),
)

for _id, _map, _description in _IDS:
    register(
        EnvInfo(
            id=_id,
            entry_point=_ENTRY,
            family="Diplomacy",
            kind="multi",
            obs_kind="dict",
            paper=_PAPER,
            description=_description,
            kwargs={"map_name": _map},
        )
    )
