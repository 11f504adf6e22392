"""The claims of Wang et al. (ICML 2025), LoRT and D-LoRT, on a run of ``lort.yaml``.

Environments are read from their labels (``"<task> s=<shift>"``) and agents by their registry
names; the numbers come from the episode records (the scorecard holds the same means).
Comparisons of two agents are paired: the same draws (episode seeds), the difference of relative
errors per draw, its mean and 95% bootstrap CI stratified by run seed. Claims 1–6 are checked on
the sensing task; the completion task, when run, is recorded (claim 7).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run
from omnigym.evaluators.stats import summarize

#: Env labels of the claims scenario: "<task> s=<shift>".
ENV_LABEL = re.compile(r"^(?P<task>sensing|completion) s=(?P<shift>\d+(?:\.\d+)?)$")
#: The claims are checked on this task; the other task's numbers are recorded.
CHECKED_TASK = "sensing"
FAILS = 0.8  # target-only "fails": relative error at least this
SMALL_SHIFT = 0.5  # shifts up to this are small: LoRT tracks pooling within TRACKS there
LARGE_SHIFT = 1.0  # shifts from this on are moderate or large: LoRT beats pooling there
TRACKS = 0.05
CLOSE = 0.05  # D-LoRT's mean error within this of LoRT's
FEW_FLOATS = 0.1  # D-LoRT sends at most this fraction of LoRT's floats

Draws = dict[tuple[int, int], dict[str, float]]  # (seed, episode) -> metrics
Sweep = dict[float, dict[str, Draws]]  # shift -> agent -> draws


def check(run: Run) -> list[dict[str, Any]]:
    """The paper's claims on ``run`` (see the module docstring)."""
    tasks: dict[str, Sweep] = defaultdict(lambda: defaultdict(dict))
    for record in run.records:
        match = ENV_LABEL.match(str(record["env_id"]))
        if match is None or "relative_error" not in record["metrics"]:
            continue
        draws = tasks[match["task"]][float(match["shift"])].setdefault(record["agent"], {})
        draws[(int(record["seed"]), int(record["episode"]))] = record["metrics"]
    sweep = tasks.get(CHECKED_TASK, {})
    recorded = {
        task: {_name(shift): _errors(by_agent) for shift, by_agent in sorted(other.items())}
        for task, other in sorted(tasks.items())
        if task != CHECKED_TASK
    }
    return [
        _target_only_fails(sweep),
        _beats_at_every_shift(
            2,
            "LoRT beats target-only at every shift",
            "transferring from the sources improves on the target's own estimate",
            sweep,
            "lort",
            "target-only",
        ),
        _pooling_best_then_degrades(sweep),
        _tracks_then_beats_pooling(sweep),
        _beats_at_every_shift(
            5,
            "the refinement helps (the target departs from the shared component): LoRT "
            "beats its fusion step alone at every shift",
            "the refinement step helps because the target departs from the shared component",
            sweep,
            "lort",
            "lort-fusion-only",
        ),
        _distributed_stays_close(sweep),
        claim(
            7,
            "the completion task's relative errors (recorded, not asserted)",
            "recorded" if recorded else "not run",
            measured=recorded,
            paper="experiments on compressed sensing and on completion validate LoRT",
        ),
    ]


def _name(shift: float) -> str:
    return f"s={shift:g}"


def _summary(values: Sequence[float], draws: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """Mean and 95% CI (stratified by run seed) of one value per draw."""
    summary = summarize(np.asarray(values), strata=np.asarray([seed for seed, _ in draws]))
    return {"mean": summary["mean"], "ci95": summary["ci95"]}


def _errors(by_agent: Mapping[str, Draws], metric: str = "relative_error") -> dict[str, Any]:
    return {
        agent: _summary([m[metric] for m in draws.values()], list(draws))
        for agent, draws in sorted(by_agent.items())
    }


def _gap(worse: Draws, better: Draws) -> dict[str, Any]:
    """error(worse) − error(better) over the draws both played."""
    draws = sorted(set(worse) & set(better))
    return _summary(
        [worse[d]["relative_error"] - better[d]["relative_error"] for d in draws], draws
    )


def _gaps(sweep: Sweep, worse: str, better: str) -> dict[float, dict[str, Any]]:
    return {
        shift: _gap(by_agent[worse], by_agent[better])
        for shift, by_agent in sorted(sweep.items())
        if worse in by_agent and better in by_agent
    }


def _target_only_fails(sweep: Sweep) -> dict[str, Any]:
    statement = f"target-only fails: relative error ≥ {FAILS} at every shift"
    paper = {"target_only_relative_error": [0.85, 0.9]}
    found = {
        _name(shift): _errors({"target-only": by_agent["target-only"]})["target-only"]
        for shift, by_agent in sorted(sweep.items())
        if "target-only" in by_agent
    }
    if not found:
        return claim(1, statement, "not run", paper=paper)
    fails = all(summary["mean"] >= FAILS for summary in found.values())
    return claim(1, statement, verdict(fails), measured={"target_only": found}, paper=paper)


def _beats_at_every_shift(
    number: int, statement: str, paper: str, sweep: Sweep, better: str, worse: str
) -> dict[str, Any]:
    statement += f" (paired gap {worse} − {better}, CI above 0)"
    gaps = _gaps(sweep, worse, better)
    if not gaps:
        return claim(number, statement, "not run", paper=paper)
    return claim(
        number,
        statement,
        verdict(all(gap["ci95"][0] > 0 for gap in gaps.values())),
        measured={"gap": {_name(shift): gap for shift, gap in gaps.items()}},
        paper=paper,
    )


def _pooling_best_then_degrades(sweep: Sweep) -> dict[str, Any]:
    statement = (
        "pooling is best at s = 0 (lowest mean error of all agents) and degrades as s grows "
        "(paired gap between its errors at the largest shift and at s = 0, CI above 0)"
    )
    paper = "pooling is best without a model shift and degrades as the shift grows"
    shifts = sorted(shift for shift, by_agent in sweep.items() if "pooled" in by_agent)
    if len(shifts) < 2 or shifts[0] != 0:
        return claim(3, statement, "not run", paper=paper)
    at_zero = _errors(sweep[0.0])
    best = min(at_zero, key=lambda agent: at_zero[agent]["mean"])
    growth = _gap(sweep[shifts[-1]]["pooled"], sweep[0.0]["pooled"])
    return claim(
        3,
        statement,
        verdict(best == "pooled" and growth["ci95"][0] > 0),
        measured={
            "errors_at_s0": at_zero,
            "pooled": {
                _name(shift): _errors({"p": sweep[shift]["pooled"]})["p"] for shift in shifts
            },
            "growth": growth,
        },
        paper=paper,
    )


def _tracks_then_beats_pooling(sweep: Sweep) -> dict[str, Any]:
    statement = (
        f"LoRT tracks pooling at small shift (s ≤ {SMALL_SHIFT}: mean errors within {TRACKS}) "
        f"and beats it once the shift is moderate or large (s ≥ {LARGE_SHIFT}: paired gap, CI "
        "above 0)"
    )
    paper = {"relative_error at s=2, 12 × 12 × 4": {"lort": 0.29, "pooled": 0.45}}
    gaps = _gaps(sweep, "pooled", "lort")
    small = [gap for shift, gap in gaps.items() if shift <= SMALL_SHIFT]
    large = [gap for shift, gap in gaps.items() if shift >= LARGE_SHIFT]
    if not small or not large:
        return claim(4, statement, "not run", paper=paper)
    tracks = all(abs(gap["mean"]) <= TRACKS for gap in small)
    beats = all(gap["ci95"][0] > 0 for gap in large)
    return claim(
        4,
        statement,
        verdict(tracks and beats),
        measured={
            "errors": {
                _name(shift): _errors({a: sweep[shift][a] for a in ("lort", "pooled")})
                for shift in gaps
            },
            "pooled_minus_lort": {_name(shift): gap for shift, gap in gaps.items()},
        },
        paper=paper,
    )


def _distributed_stays_close(sweep: Sweep) -> dict[str, Any]:
    statement = (
        f"D-LoRT stays close to LoRT (mean error within {CLOSE} at every shift) while "
        f"communicating far fewer floats (at most {FEW_FLOATS:.0%} of LoRT's)"
    )
    paper = "D-LoRT keeps LoRT's statistical efficiency with minimal communication"
    gaps = _gaps(sweep, "d-lort", "lort")
    if not gaps:
        return claim(6, statement, "not run", paper=paper)
    floats = {
        shift: _errors({a: sweep[shift][a] for a in ("lort", "d-lort")}, "communicated_floats")
        for shift in gaps
    }
    close = all(gap["mean"] <= CLOSE for gap in gaps.values())
    few = all(f["d-lort"]["mean"] <= FEW_FLOATS * f["lort"]["mean"] for f in floats.values())
    return claim(
        6,
        statement,
        verdict(close and few),
        measured={
            "d_lort_minus_lort": {_name(shift): gap for shift, gap in gaps.items()},
            "communicated_floats": {
                _name(shift): {agent: s["mean"] for agent, s in pair.items()}
                for shift, pair in floats.items()
            },
        },
        paper=paper,
    )
