"""The claims of Chen et al. (ICML 2025), PHN-HVVS, on a run of ``phn_hvvs.yaml``.

Environments are read from their labels (``"<problem> J=<objectives>"``, e.g. ``"dtlz2 J=5"``),
agents by their registry names. Agents are compared on the same instances (the episode seeds are
shared), by the paired HV differences' means and 95% bootstrap CIs. Claim 1 (LS below HVVS)
needs the CI above 0 on every Fonseca–Fleming and DTLZ2 env; claim 2 (HVI ≈ HVVS) a mean
relative difference within ±:data:`SAME_HV` on every 2-objective env; claim 3 (HVVS ≥ HVI) a
mean difference ≥ 0 on every regression env with 4–7 objectives (the paper's multi-task setting;
DTLZ2 at J ≥ 4 is recorded beside it, see :mod:`omnigym.agents.methods.phn_hvvs` for why).
Claim 4 (the GA lowers the cell-area variance) and claim 5 (Voronoi rays against uniform random
rays under the same loss) are recorded. The paper's HV values are of its own problems and
networks and are not compared.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from omnigym.agents.methods.phn_hvvs import grid_variances
from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run
from omnigym.evaluators.stats import summarize

HVVS, LS, HVI, RANDOM_RAYS = "phn-hvvs", "phn-ls", "phn-hvi", "phn-random-rays"
#: "HVI ≈ HVVS": the mean paired relative HV difference is within this fraction.
SAME_HV = 0.02
#: The problems with a concave front, where linear scalarisation misses most of it.
CONCAVE = ("fonseca_fleming", "dtlz2")
_LABEL = re.compile(r"^(?P<problem>[a-z_0-9]+) J=(?P<n_obj>\d+)$")


def _env_labels(scorecard: Mapping[str, Any]) -> dict[str, tuple[str, int]]:
    """Env label -> (problem, J) for every label of the form ``"<problem> J=<n>"``."""
    found = {}
    for label in scorecard["envs"]:
        match = _LABEL.match(label)
        if match:
            found[label] = (match["problem"], int(match["n_obj"]))
    return found


def _hv_by_episode(records: Sequence[Mapping[str, Any]], env: str, agent: str) -> dict:
    """(seed, episode) -> HV of ``agent``'s valid episodes on ``env``."""
    return {
        (r["seed"], r["episode"]): r["metrics"]["hv"]
        for r in records
        if r["env_id"] == env and r["agent"] == agent and "hv" in (r.get("metrics") or {})
    }


def paired_difference(
    records: Sequence[Mapping[str, Any]], env: str, agent_x: str, agent_y: str, relative: bool
) -> dict[str, Any] | None:
    """HV(x) − HV(y) over the episodes both agents played on ``env`` (the same instances),
    divided by HV(y) when ``relative``: mean and stratified bootstrap CI; None if none."""
    x, y = _hv_by_episode(records, env, agent_x), _hv_by_episode(records, env, agent_y)
    keys = sorted(set(x) & set(y))
    if not keys or (relative and any(y[key] <= 0 for key in keys)):
        return None
    differences = [(x[k] - y[k]) / (y[k] if relative else 1.0) for k in keys]
    summary = summarize(differences, [k[0] for k in keys], n_resamples=2000)
    return {"mean": summary["mean"], "ci95": summary["ci95"], "episodes": len(keys)}


def check(run: Run) -> list[dict[str, Any]]:
    """The paper's claims on ``run`` (see the module docstring)."""
    scorecard, records = run.scorecard, run.records
    envs = _env_labels(scorecard)
    hv = {
        (r["env_id"], r["agent"]): r["metrics"]["hv"]
        for r in scorecard["results"]
        if "hv" in r["metrics"]
    }

    def compared(agent: str, wanted, relative: bool = False) -> dict[str, Any]:
        """env -> the HVs of HVVS and ``agent`` and HVVS's paired difference to it."""
        found = {}
        for env, (problem, n_obj) in sorted(envs.items()):
            if not wanted(problem, n_obj) or (env, HVVS) not in hv or (env, agent) not in hv:
                continue
            pair = (HVVS, agent) if not relative else (agent, HVVS)
            difference = paired_difference(records, env, *pair, relative=relative)
            if difference is not None:
                found[env] = {HVVS: hv[(env, HVVS)], agent: hv[(env, agent)], "diff": difference}
        return found

    concave = compared(LS, lambda problem, n_obj: problem in CONCAVE)
    convex = compared(LS, lambda problem, n_obj: problem not in CONCAVE)
    planar = compared(HVI, lambda problem, n_obj: n_obj == 2, relative=True)
    many = compared(HVI, lambda problem, n_obj: problem == "regression" and n_obj >= 4)
    many_dtlz2 = compared(HVI, lambda problem, n_obj: problem == "dtlz2" and n_obj >= 4)
    ablation = compared(RANDOM_RAYS, lambda problem, n_obj: True)

    def status(checked: Mapping[str, Any], holds) -> str:
        if not checked:
            return "not run"
        return verdict(all(holds(entry["diff"]) for entry in checked.values()))

    return [
        claim(
            1,
            "PHN-LS misses the concave parts of the front: lower HV than PHN-HVVS on "
            "Fonseca–Fleming and DTLZ2 (HVVS − LS CI above 0; convex problems recorded)",
            status(concave, lambda diff: diff["ci95"][0] > 0),
            measured={"concave": concave, "convex": convex},
            paper="linear scalarisation cannot reach the concave parts of a front; PHN-HVVS "
            "covers the whole front",
        ),
        claim(
            2,
            f"PHN-HVI ≈ PHN-HVVS in 2-D: mean relative HV difference within ±{SAME_HV:.0%}",
            status(planar, lambda diff: abs(diff["mean"]) <= SAME_HV),
            measured={"two_objectives": planar},
            paper="PHN-HVI ≈ PHN-HVVS on two objectives",
        ),
        claim(
            3,
            "PHN-HVVS ≥ PHN-HVI at 4–7 objectives (multi-task regression; mean HVVS − HVI "
            "≥ 0 on every J; DTLZ2 at J ≥ 4 recorded)",
            status(many, lambda diff: diff["mean"] >= 0),
            measured={"regression": many, "dtlz2": many_dtlz2},
            paper="PHN-HVVS outperforms the baselines in HV, the more so with more objectives, "
            "where sampling rays is hard",
        ),
        claim(
            4,
            "the GA lowers the cell-area variance Var(p) of the 16 Voronoi sites below that "
            "of random sites; the answers' cell-area variance per agent",
            "recorded" if envs else "not run",
            measured={
                "sites": {
                    f"J={n_obj}": grid_variances(16, n_obj)
                    for n_obj in sorted({n_obj for _, n_obj in envs.values()})
                },
                "answers": {
                    env: {
                        r["agent"]: r["metrics"]["cell_area_variance"]
                        for r in scorecard["results"]
                        if r["env_id"] == env and "cell_area_variance" in r["metrics"]
                    }
                    for env in sorted(envs)
                },
            },
            paper="the GA partitions the simplex into Voronoi cells of near-equal area",
        ),
        claim(
            5,
            "ablation: PHN-HVVS's loss with one ray per Voronoi cell against uniform random "
            "rays (HVVS − random-rays HV)",
            "recorded" if ablation else "not run",
            measured={"ablation": ablation},
            paper="sampling one ray per Voronoi cell addresses sampling rays in many dimensions",
        ),
    ]
