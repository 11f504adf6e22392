"""The structured log of an MCU episode: what each command did, for the six-dimension evaluator.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) rates an episode from its video; here the
environment keeps, next to the world's event counters and its text log, one :class:`StepRecord`
per command holding the game acts the command caused (:class:`Act`: a block mined with which
tool, a block placed where, a mob hit with which weapon, an item crafted from which
ingredients, ...). :mod:`omnigym.envs.mcu.evaluation` scores an episode from these records
alone, so scores can be recomputed, and tested on hand-built logs, without replaying the game.
"""

from __future__ import annotations

from dataclasses import dataclass

Cell = tuple[int, int, int]


@dataclass(frozen=True)
class Act:
    """One game act.

    ``kind``: ``mine``, ``place``, ``attack``, ``craft``, ``smelt``, ``drop`` or ``eat``;
    ``name``: the block mined or placed, the mob hit, the item crafted or dropped or eaten, the
    input smelted. Station, tool and animal acts: ``brew`` (the potion), ``enchant``,
    ``repair``, ``rename``, ``combine`` (the item), ``trade`` (the item traded), ``drink`` (the
    potion), ``plant`` (the seed), ``use`` (what a tool was used on), and ``feed``, ``tame``,
    ``leash``, ``tie``, ``trap``, ``ride`` (the mob). ``cell``: the node mined or placed.
    ``tool``: the item held (``None``: the hand). ``harvested``: a mined block gave its drops.
    ``high_ground``: the player hit the mob from a node above it, standing on a block it had
    placed. ``inventory``: the distinct items held when mining or attacking (the alternatives
    to ``tool``). ``consumed``: the items an act used up, as ``(item, count)`` pairs.
    """

    kind: str
    name: str
    cell: Cell | None = None
    tool: str | None = None
    harvested: bool = True
    high_ground: bool = False
    inventory: tuple[str, ...] = ()
    consumed: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class StepRecord:
    """One command and its outcome: ``invalid`` (it did not parse or could not be done),
    ``effect`` (it changed the player's place, look, inventory or hunger, or caused an act),
    ``acts``, the milestones ``reached`` so far (latched, in task order) and ``success``."""

    command: str
    invalid: bool
    effect: bool
    acts: tuple[Act, ...]
    reached: tuple[bool, ...]
    success: bool
