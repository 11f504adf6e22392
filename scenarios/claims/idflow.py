"""The claims of IDFlow, checked on a run of ``idflow.yaml`` (``docs/methods.md``).

Zhou et al. (ICML 2025) add refinement — the network applied again to its own prediction, as
an energy-minimising map onto the data — to x₁-prediction flow matching, in training and in
sampling, and report better structures than standard flow matching at few sampling steps.

The checker reads the dataset and budget from the env labels (``"<dataset> nfe=<N>"``, e.g.
``"chains nfe=5"``) and the agents by their registry names (``idflow``, ``flow-matching``,
``idflow-train-only``, ``idflow-sample-only``). Comparisons are paired over draws.
"""

from __future__ import annotations

import re
from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run

from .draws import above_zero, by_draw, mean_ci, paired, summaries

LABEL = re.compile(r"^(?P<dataset>\S+) nfe=(?P<nfe>\d+)$")
FEW, MANY = (5, 10), 20
#: Claim 2: "similar diversity" is a mean relative difference of at most this.
SIMILAR = 0.10
AGENTS = ("idflow", "flow-matching", "idflow-train-only", "idflow-sample-only")
METRICS = ("valid_fraction", "bond_error", "angle_w1", "dihedral_w1", "diversity", "rdkit_valid")
PAPER = "consistent gains over standard flow matching at few sampling steps (docking, backbones)"


def _grid(records: list) -> dict[str, dict[int, str]]:
    """dataset → nfe → env label, for the envs the run has."""
    grid: dict[str, dict[int, str]] = {}
    for record in records:
        match = LABEL.match(record["env_id"])
        if match:
            grid.setdefault(match["dataset"], {})[int(match["nfe"])] = record["env_id"]
    return grid


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–4 on this run (see the module docstring)."""
    grid = _grid(run.records)
    table = {metric: by_draw(run.records, metric) for metric in METRICS}
    return [
        _few_steps(table, grid),
        _diversity(table, grid),
        _closing(table, grid),
        _recorded(run, grid),
    ]


def _pairs(table: dict, grid: dict, budgets: tuple[int, ...]) -> list[str]:
    """The env labels at ``budgets`` (every dataset) where both IDFlow and flow matching ran."""
    envs = [grid[d][n] for d in sorted(grid) for n in budgets if n in grid[d]]
    found = table["bond_error"]
    return [e for e in envs if {"idflow", "flow-matching"} <= set(found.get(e, {}))]


def _few_steps(table: dict, grid: dict) -> dict[str, Any]:
    statement = (
        "At NFE 5 and 10 IDFlow has a lower bond error and a higher valid fraction than "
        "standard flow matching"
    )
    envs = _pairs(table, grid, FEW)
    if not envs:
        return claim(1, statement, "not run", paper=PAPER)
    bond, valid = table["bond_error"], table["valid_fraction"]
    measured = {
        env: {
            "bond error FM - IDFlow": paired(bond[env]["flow-matching"], bond[env]["idflow"]),
            "valid IDFlow - FM": paired(valid[env]["idflow"], valid[env]["flow-matching"]),
        }
        for env in envs
    }
    holds = all(above_zero(m["bond error FM - IDFlow"]) and above_zero(m["valid IDFlow - FM"])
                for m in measured.values())  # fmt: skip
    return claim(1, statement, verdict(holds), measured, PAPER)


def _diversity(table: dict, grid: dict) -> dict[str, Any]:
    statement = (
        f"... with similar diversity: at NFE 5 and 10 IDFlow's mean pairwise RMSD is within "
        f"{SIMILAR:.0%} of flow matching's"
    )
    envs = _pairs(table, grid, FEW)
    if not envs:
        return claim(2, statement, "not run", paper=PAPER)
    diversity = table["diversity"]
    measured = {}
    for env in envs:
        gap = paired(diversity[env]["idflow"], diversity[env]["flow-matching"])
        reference = mean_ci(diversity[env]["flow-matching"])
        measured[env] = {"IDFlow - FM": gap, "relative": gap["mean"] / reference["mean"]}
    holds = all(abs(m["relative"]) <= SIMILAR for m in measured.values())
    return claim(2, statement, verdict(holds), measured, PAPER)


def _closing(table: dict, grid: dict) -> dict[str, Any]:
    statement = (
        f"The gap closes by NFE {MANY}: flow matching's bond-error excess over IDFlow is smaller "
        f"at NFE {MANY} than at NFE {FEW[0]}"
    )
    bond = table["bond_error"]
    pair = {"idflow", "flow-matching"}
    datasets = [
        d for d in sorted(grid)
        if FEW[0] in grid[d] and MANY in grid[d]
        and all(pair <= set(bond.get(grid[d][n], {})) for n in (FEW[0], MANY))
    ]  # fmt: skip
    if not datasets:
        return claim(3, statement, "not run", paper=PAPER)
    measured = {}
    for dataset in datasets:
        few, many = grid[dataset][FEW[0]], grid[dataset][MANY]
        measured[dataset] = {
            f"nfe={FEW[0]}": paired(bond[few]["flow-matching"], bond[few]["idflow"]),
            f"nfe={MANY}": paired(bond[many]["flow-matching"], bond[many]["idflow"]),
        }
    holds = all(m[f"nfe={MANY}"]["mean"] < m[f"nfe={FEW[0]}"]["mean"] for m in measured.values())
    return claim(3, statement, verdict(holds), measured, PAPER)


def _recorded(run: Run, grid: dict) -> dict[str, Any]:
    statement = (
        "Every agent's metrics per budget: the ablations (refinement only in training, only in "
        "sampling), angle and dihedral W1, and for conformers RDKit's acceptance"
    )
    envs = [grid[d][n] for d in sorted(grid) for n in sorted(grid[d])]
    if not envs:
        return claim(4, statement, "not run")
    return claim(4, statement, "recorded", summaries(run.records, METRICS, AGENTS, envs))
