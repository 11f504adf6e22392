"""The claims of Ghai and Singh (ICML 2025), agnostic boosting with unlabelled data, on a run of
``boosting.yaml``.

Environments are read from their labels (``m=<budget>``, optionally ``shift=<value>``; no shift
means 0) and agents by their registry names. Claims 1 and 2 compare the three potential
boosters' mean excess errors (scorecard means with 95% CIs, plus paired differences over the
shared draws, from the episode records) at shift 0; claim 3 records the unlabelled booster under
the shift; claim 4 records the other agents.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from omnigym.evaluators.claims import claim, sweep, verdict
from omnigym.evaluators.experiment import Run
from omnigym.evaluators.stats import summarize

UNLABELED, REUSE, SPLIT = "boost-unlabeled", "boost-reuse", "boost-sample-split"
BOOSTERS = (UNLABELED, REUSE, SPLIT)
RECORDED = ("adaboost", "gradient-boosting", "best-in-class-reference")
#: "Small m": the claim's ordering is checked at this many of the smallest budgets run.
SMALL_BUDGETS = 2
#: "The curves meet": at the largest budget the three boosters' mean excess errors lie within
#: this of each other (one percentage point).
MEET_TOLERANCE = 0.01
METRIC = "excess_error"
_KNOB = re.compile(r"\b(m|shift)=([0-9.eE+-]+)")

#: One agent's excess error over the budgets: m -> {"mean", "ci95"}.
Curve = dict[int, dict[str, Any]]


def _knobs(env_label: str) -> tuple[int, float] | None:
    """(m, shift) named by an env label such as ``"m=100"`` or ``"m=100 shift=0.3"``."""
    knobs = dict(_KNOB.findall(env_label))
    if "m" not in knobs:
        return None
    return int(float(knobs["m"])), float(knobs.get("shift", 0.0))


def _named(curve: Mapping[int, Any]) -> dict[str, Any]:
    """``curve`` keyed ``"m=<budget>"`` for claims.json."""
    return {f"m={m}": value for m, value in curve.items()}


def check(run: Run) -> list[dict[str, Any]]:
    """The paper's claims on ``run`` (see the module docstring)."""
    envs: dict[float, dict[int, str]] = {}  # shift -> m -> env label
    for env_label in run.scorecard["envs"]:
        knobs = _knobs(env_label)
        if knobs is not None:
            envs.setdefault(knobs[1], {})[knobs[0]] = env_label

    def curve(agent: str, shift: float = 0.0) -> Curve:
        return sweep(run.scorecard, envs.get(shift, {}), agent, METRIC)

    def paired(agent: str, other: str, shift: float = 0.0, other_shift: float = 0.0) -> Curve:
        """agent's excess error less other's, draw by draw, per budget both ran."""
        found = {}
        for m, env_label in sorted(envs.get(shift, {}).items()):
            other_label = envs.get(other_shift, {}).get(m)
            if other_label is not None:
                difference = _paired_difference(
                    run.records, (env_label, agent), (other_label, other)
                )
                if difference is not None:
                    found[m] = difference
        return found

    boosters = {agent: curve(agent) for agent in BOOSTERS}
    differences = {
        f"{UNLABELED} - {REUSE}": _named(paired(UNLABELED, REUSE)),
        f"{REUSE} - {SPLIT}": _named(paired(REUSE, SPLIT)),
    }
    others = {agent: _named(curve(agent)) for agent in RECORDED}
    shifts = sorted(shift for shift in envs if shift != 0.0)
    shifted = {
        f"shift={shift:g}": {
            UNLABELED: _named(curve(UNLABELED, shift)),
            f"{UNLABELED} shifted - unshifted": _named(paired(UNLABELED, UNLABELED, shift, 0.0)),
            f"{UNLABELED} shifted - {REUSE}": _named(paired(UNLABELED, REUSE, shift, 0.0)),
        }
        for shift in shifts
    }
    return [
        _ordering_claim(boosters, differences),
        _meeting_claim(boosters, differences),
        claim(
            3,
            "under a shifted unlabelled marginal the unlabelled booster degrades gracefully: "
            "its excess error beside its unshifted self and the labelled-only reuse booster",
            "recorded" if shifts else "not run",
            measured={"unshifted": _named(boosters[UNLABELED]), **shifted},
            paper="the guarantee is resilient to a mismatch between the labelled and unlabelled "
            "distributions",
        ),
        claim(
            4,
            "AdaBoost, gradient boosting and the best-in-class reference on the same draws "
            "(the reference's excess error is 0 by definition)",
            "recorded" if any(others.values()) else "not run",
            measured=others,
            paper="no counterpart in the paper's claims (reference points for the boosters)",
        ),
    ]


def _paired_difference(
    records: Sequence[Mapping[str, Any]], first: tuple[str, str], second: tuple[str, str]
) -> dict[str, Any] | None:
    """Mean and 95% CI (stratified by seed) of first's excess error less second's, over the
    draws (seed, episode) both played; None when they share none."""

    def by_draw(env_label: str, agent: str) -> dict[tuple[int, int], float]:
        return {
            (r["seed"], r["episode"]): r["metrics"][METRIC]
            for r in records
            if r["env_id"] == env_label and r["agent"] == agent and METRIC in r["metrics"]
        }

    mine, theirs = by_draw(*first), by_draw(*second)
    shared = sorted(set(mine) & set(theirs))
    if not shared:
        return None
    summary = summarize(
        [mine[draw] - theirs[draw] for draw in shared], [seed for seed, _ in shared]
    )
    return {"mean": summary["mean"], "ci95": list(summary["ci95"]), "draws": len(shared)}


def _ordering_claim(boosters: Mapping[str, Curve], differences: Mapping[str, Any]) -> dict:
    statement = (
        f"at small m (the {SMALL_BUDGETS} smallest budgets) the unlabelled booster has the lowest "
        "mean excess error, sample splitting the highest and reuse in between"
    )
    measured = {
        "excess_error": {agent: _named(values) for agent, values in boosters.items()},
        "paired_differences": differences,
    }
    paper = (
        "with polynomially many unlabelled samples the booster matches ERM's labelled sample "
        "complexity, which earlier agnostic boosters fall short of"
    )
    shared = sorted(set.intersection(*(set(values) for values in boosters.values())))
    if not shared:
        return claim(1, statement, "not run", measured=measured, paper=paper)
    ordered = all(
        boosters[UNLABELED][m]["mean"] < boosters[REUSE][m]["mean"] < boosters[SPLIT][m]["mean"]
        for m in shared[:SMALL_BUDGETS]
    )
    return claim(1, statement, verdict(ordered), measured=measured, paper=paper)


def _meeting_claim(boosters: Mapping[str, Curve], differences: Mapping[str, Any]) -> dict:
    statement = (
        "the curves meet at large m: at the largest budget the three boosters' mean excess "
        f"errors lie within {MEET_TOLERANCE:g} of each other"
    )
    shared = sorted(set.intersection(*(set(values) for values in boosters.values())))
    spread = {
        m: max(values[m]["mean"] for values in boosters.values())
        - min(values[m]["mean"] for values in boosters.values())
        for m in shared
    }
    measured = {"spread": _named(spread), "paired_differences": differences}
    paper = (
        "the boosters differ in how many labelled samples they need for a given excess error, "
        "not in the error they converge to"
    )
    if len(shared) < 2:
        return claim(2, statement, "not run", measured=measured, paper=paper)
    met = spread[shared[-1]] <= MEET_TOLERANCE
    return claim(2, statement, verdict(met), measured=measured, paper=paper)
