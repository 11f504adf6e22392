"""Board tensors, the text view and sum-of-squares scoring of the Diplomacy env
(``docs/diplomacy.md``).

The board tensor follows the per-location encoding of DipNet (Paquette et al., "No-Press
Diplomacy: Modeling Multi-Agent Gameplay", NeurIPS 2019), laid out as follows: one row per map
location (coasts included, sorted by name), 38 columns:

======== =============================================================================
columns  feature
======== =============================================================================
0–2      unit type: army, fleet, none
3–10     unit owner: the seven powers (map order), none
11       a dislodged unit is here
12–19    dislodged unit's owner: the seven powers, none
20       supply centre
21–28    centre owner: the seven powers, none (also on rows that are no centre)
29–36    home centre of: the seven powers, none
37       this power may build here or must remove a unit here (adjustment phases only)
======== =============================================================================

A unit on a coast (``F STP/SC``) is marked on the coast's row and on its province's row, as in
DipNet; the centre and home features are marked on a province's row and on its coasts' rows.
Departure from DipNet: no ``buildable``/``removable`` pair and no previous-orders channels; one
per-power column says where this power adjusts. The common 37 columns are computed once per
phase with NumPy from location indices fixed at construction; only column 37 differs by power.

Sum-of-squares (SoS): a solo winner scores 1 and everyone else 0; otherwise each power scores
C_i² / Σ_j C_j², C = supply centres (eliminated powers 0), as in the no-press literature
(Bakhtin et al., NeurIPS 2021; DipLLM, ICML 2025).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

UNIT_TYPE = 0
UNIT_OWNER = 3
DISLODGED = 11
DISLODGED_OWNER = 12
SUPPLY_CENTRE = 20
CENTRE_OWNER = 21
HOME = 29
ADJUSTS_HERE = 37
N_FEATURES = 38

PHASES = ("SM", "SR", "FM", "FR", "WA")
"""The ``phase`` one-hot: season letter and phase type of the short phase name."""


def sum_of_squares(centers: Sequence[int], solo_at: int | None) -> np.ndarray:
    """SoS score of each power from its supply-centre count.

    A single power with at least ``solo_at`` centres has a solo: it scores 1, the rest 0.
    Otherwise (or with ``solo_at=None``: the game was drawn) power i scores C_i² / Σ_j C_j²
    (all 0 if nobody holds a centre).
    """
    counts = np.asarray(centers, dtype=np.float64)
    scores = np.zeros_like(counts)
    winners = np.flatnonzero(counts >= solo_at) if solo_at is not None else []
    if len(winners) == 1:
        scores[winners[0]] = 1.0
        return scores
    total = float(np.sum(counts**2))
    return counts**2 / total if total else scores


class BoardEncoder:
    """Encodes the engine's state dictionary as the ``(n_locations, 38)`` board of one map.

    Args:
        powers: the power names, in map order (the owner columns' order).
        locations: the map's locations (``Map.locs``; case is ignored).
        supply_centres: the map's supply-centre provinces.
        homes: power -> home-centre provinces (``state["homes"]``).
    """

    def __init__(
        self,
        powers: Sequence[str],
        locations: Iterable[str],
        supply_centres: Iterable[str],
        homes: Mapping[str, Sequence[str]],
    ):
        self.powers = tuple(powers)
        self.locations = tuple(sorted({location.upper() for location in locations}))
        row = {location: i for i, location in enumerate(self.locations)}
        area: dict[str, list[int]] = {}
        for location in self.locations:
            area.setdefault(location[:3], []).append(row[location])
        self.area_rows = {province: tuple(rows) for province, rows in area.items()}
        """Province -> rows of the province and its coasts."""
        unit_rows = {
            location: (row[location], row[location[:3]]) if "/" in location else (row[location],)
            for location in self.locations
        }
        width = N_FEATURES

        def cells(rows: Sequence[int], columns: Sequence[int]) -> list[int]:
            return [r * width + column for r in rows for column in columns]

        area_rows = self.area_rows.items()
        # Flat indices into the (n_locations, 38) board that each fact sets to 1 ("on") and to
        # 0 ("off": the "none" columns it rules out), so that encoding a phase is a few list
        # concatenations and two NumPy assignments.
        n = len(self.powers)
        self._unit_on = [
            {
                f"{kind} {location}": cells(rows, (UNIT_TYPE + (kind == "F"), UNIT_OWNER + p))
                for location, rows in unit_rows.items()
                for kind in ("A", "F")
            }
            for p in range(n)
        ]
        self._unit_off = {
            f"{kind} {location}": cells(rows, (UNIT_TYPE + 2, UNIT_OWNER + 7))
            for location, rows in unit_rows.items()
            for kind in ("A", "F")
        }
        self._dislodged_on = [
            {
                f"{kind} {location}": cells(rows, (DISLODGED, DISLODGED_OWNER + p))
                for location, rows in unit_rows.items()
                for kind in ("A", "F")
            }
            for p in range(n)
        ]
        self._dislodged_off = {
            f"{kind} {location}": cells(rows, (DISLODGED_OWNER + 7,))
            for location, rows in unit_rows.items()
            for kind in ("A", "F")
        }
        self._centre_on = [
            {province: cells(rows, (CENTRE_OWNER + p,)) for province, rows in area_rows}
            for p in range(n)
        ]
        self._centre_off = {
            province: cells(rows, (CENTRE_OWNER + 7,)) for province, rows in area_rows
        }
        self.static = np.zeros((len(self.locations), N_FEATURES), dtype=np.float32)
        for column in (UNIT_TYPE + 2, UNIT_OWNER + 7, DISLODGED_OWNER + 7, CENTRE_OWNER + 7):
            self.static[:, column] = 1.0
        for centre in supply_centres:
            self.static[list(self.area_rows[centre]), SUPPLY_CENTRE] = 1.0
        self.set_homes(homes)

    def set_homes(self, homes: Mapping[str, Sequence[str]]) -> None:
        """Mark ``homes`` (power -> home-centre provinces) in the home columns (fixed within a
        game: the engine changes homes only when a position is loaded)."""
        self.static[:, HOME : HOME + 8] = 0.0
        self.static[:, HOME + 7] = 1.0
        for p, power in enumerate(self.powers):
            for centre in homes.get(power, ()):
                rows = list(self.area_rows[centre])
                self.static[rows, HOME + p] = 1.0
                self.static[rows, HOME + 7] = 0.0

    @property
    def n_locations(self) -> int:
        return len(self.locations)

    def encode(self, state: Mapping[str, Mapping[str, Sequence[str]]]) -> np.ndarray:
        """The board of ``state`` (the engine's ``get_state()``) with column 37 all 0."""
        on: list[int] = []
        off: list[int] = []
        unit_off, dislodged_off, centre_off = self._unit_off, self._dislodged_off, self._centre_off
        for p, power in enumerate(self.powers):
            unit_on = self._unit_on[p]
            for unit in state["units"][power]:
                if unit[0] != "*":
                    on += unit_on[unit]
                    off += unit_off[unit]
            dislodged_on = self._dislodged_on[p]
            for unit in state["retreats"][power]:
                on += dislodged_on[unit]
                off += dislodged_off[unit]
            centre_on = self._centre_on[p]
            for centre in state["centers"][power]:
                on += centre_on[centre]
                off += centre_off[centre]
        board = self.static.copy()
        flat = board.reshape(-1)
        flat[on] = 1.0
        flat[off] = 0.0
        return board

    def adjustment_rows(self, provinces: Iterable[str]) -> list[int]:
        """Rows of ``provinces`` and their coasts: where column 37 is 1 for a power adjusting
        there."""
        return [row for province in provinces for row in self.area_rows[province[:3]]]


def text_view(state: Mapping[str, object], powers: Sequence[str]) -> str:
    """Phase, then one line per power: units (dislodged ones with their retreat options),
    centres, and pending builds (+) or removals (-)."""
    lines = [f"phase {state['name']}"]
    for power in powers:
        units = [unit for unit in state["units"][power] if unit[0] != "*"]
        line = (
            f"{power}: units {', '.join(units) or '-'}; "
            f"centres {', '.join(sorted(state['centers'][power])) or '-'}"
        )
        retreats = state["retreats"][power]
        if retreats:
            line += "; dislodged " + ", ".join(
                f"{unit} (retreat to {' '.join(options) or 'nowhere'})"
                for unit, options in retreats.items()
            )
        count = state["builds"][power].get("count", 0)
        if count:
            line += f"; adjust {count:+d}"
        lines.append(line)
    return "\n".join(lines)
