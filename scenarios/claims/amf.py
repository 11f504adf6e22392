"""The claims of AMF, checked on a run of ``amf.yaml``.

Bagatella, Hübotter, Martius, Krause, "Active Fine-Tuning of Multi-Task Policies", ICML 2025,
report that AMF is at least as good as uniform task sampling in every setting, most of all when
pre-training is skewed or mismatched, where it asks for the under-represented tasks and comes
close to a privileged rebalancing of the data; that the gap shrinks as pre-training becomes
uniform; and they fine-tune networks with a forgetting control (here the adaptive prior). The
paper shows curves with 90% bootstrap intervals over 10 seeds and reports no table of numbers,
so ``paper`` holds its wording (``docs/amf.md``).

Settings are read from the scenario's env entries (``learner``, ``pretraining``,
``adaptive_prior``; the env's defaults where a kwarg is left out), agents by their registry
names (``amf``, ``uniform``, ``rebalancing``). Agents are compared seed by seed: in one setting
every agent sees the same pre-training data and the same evaluation noise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from omnigym.envs.methods.amf.fine_tuning import pretraining_counts
from omnigym.envs.methods.amf.reach import TASKS
from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run
from omnigym.evaluators.stats import summarize

BUDGETS = (4, 8, 12, 16, 20)
#: Claim 3: the least share of AMF's requests that go to the tasks pre-training left out.
MISSING_SHARE = 0.7
#: Claim 4: the largest drop of a pre-trained task's return (share of its expert-minus-random
#: gap) allowed with the adaptive prior.
FORGETTING_LIMIT = 0.05

PAPER = {
    1: "AMF performs at least as well as uniform task sampling in every setting and budget "
    "(2-D integrator with GPs; FrankaKitchen, Metaworld, Robomimic; Octo); 10 seeds, 90% "
    "bootstrap CIs; curves, no table",
    2: "the gain over uniform is largest when pre-training is skewed or mismatched and shrinks "
    "as pre-training becomes uniform (and as the budget grows)",
    3: "with skewed pre-training AMF favours the under-represented tasks and comes close to the "
    "privileged rebalancing baseline",
    4: "fine-tuning multi-task networks on the requested tasks alone forgets the others; "
    "a forgetting control is needed (no number reported)",
}


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–4 on this run (see the module docstring)."""
    settings = _settings(run)
    table = _records(run.records)
    return [
        _claim_1(settings, table),
        _claim_2(settings, table),
        _claim_3(settings, table),
        _claim_4(settings, table),
    ]


Table = dict[tuple[str, str], dict[tuple[int, int], Mapping[str, float]]]
"""(env label, agent) -> (seed, episode) -> the episode's final metrics."""


def _settings(run: Run) -> dict[str, dict[str, Any]]:
    """Env label -> learner, pretraining and adaptive_prior (the env's defaults filled in)."""
    defaults = {"learner": "gp", "pretraining": "uniform", "adaptive_prior": True}
    return {env.display: {**defaults, **env.kwargs} for env in run.scenario.envs}


def _records(records: Sequence[Mapping[str, Any]]) -> Table:
    table: Table = {}
    for record in records:
        key = (record["env_id"], record["agent"])
        table.setdefault(key, {})[(record["seed"], record["episode"])] = record["metrics"]
    return table


def _paired(table: Table, env: str, agent: str, other: str, metric: str) -> dict | None:
    """Summary of agent − other on ``metric`` over the episodes both played, or None."""
    mine, theirs = table.get((env, agent), {}), table.get((env, other), {})
    keys = sorted(set(mine) & set(theirs))
    if not keys:
        return None
    differences = [mine[k][metric] - theirs[k][metric] for k in keys]
    return summarize(differences, [seed for seed, _ in keys])


def _summary(table: Table, env: str, agent: str, values: Any) -> dict | None:
    """Summary of ``values(metrics)`` over ``agent``'s episodes on ``env``, or None."""
    episodes = table.get((env, agent), {})
    if not episodes:
        return None
    keys = sorted(episodes)
    return summarize([values(episodes[k]) for k in keys], [seed for seed, _ in keys])


def _everywhere(table: Table, envs: Sequence[str], metric: str) -> bool:
    """Whether every episode of ``amf`` and ``uniform`` on ``envs`` reports ``metric``."""
    return all(
        metric in metrics
        for env in envs
        for agent in ("amf", "uniform")
        for metrics in table[(env, agent)].values()
    )


def _gp_envs(settings: Mapping[str, Mapping[str, Any]], table: Table) -> list[str]:
    return [
        env
        for env, kwargs in settings.items()
        if kwargs["learner"] == "gp" and (env, "amf") in table and (env, "uniform") in table
    ]


def _claim_1(settings: Mapping[str, Mapping[str, Any]], table: Table) -> dict[str, Any]:
    statement = (
        "AMF's multi-task return is at least uniform sampling's at every budget 4-20 and every "
        "pre-training (GP learner): no paired mean difference AMF - uniform is below 0 beyond "
        "its 95% CI"
    )
    envs = _gp_envs(settings, table)
    if not envs:
        return claim(1, statement, "not run", paper=PAPER[1])
    budgets = [n for n in BUDGETS if _everywhere(table, envs, f"multitask_return_after_{n}")]
    measured = {
        env: {
            f"n={n}": _paired(table, env, "amf", "uniform", f"multitask_return_after_{n}")
            for n in budgets
        }
        for env in envs
    }
    cells = [summary for by_budget in measured.values() for summary in by_budget.values()]
    measured["mean >= 0 in"] = f"{sum(s['mean'] >= 0 for s in cells)} of {len(cells)}"
    return claim(
        1,
        statement,
        verdict(all(s["ci95"][1] >= 0 for s in cells)),
        measured=measured,
        paper=PAPER[1],
    )


def _claim_2(settings: Mapping[str, Mapping[str, Any]], table: Table) -> dict[str, Any]:
    statement = (
        "The gain of AMF over uniform at the end of the budget (n = 20) shrinks as pre-training "
        "becomes uniform: largest with skewed:2 or skewed:4, within its 95% CI of 0 with "
        "uniform pre-training"
    )
    envs = {
        settings[env]["pretraining"]: env
        for env in _gp_envs(settings, table)
        if settings[env]["pretraining"] != "mismatched"
    }
    if "uniform" not in envs or not {"skewed:2", "skewed:4"} & set(envs):
        return claim(2, statement, "not run", paper=PAPER[2])
    coverage = sorted(envs, key=lambda p: int(np.count_nonzero(pretraining_counts(p))))
    gains = {p: _paired(table, envs[p], "amf", "uniform", "multitask_return") for p in coverage}
    largest = max(gains, key=lambda p: gains[p]["mean"])
    low, high = gains["uniform"]["ci95"]
    return claim(
        2,
        statement,
        verdict(largest in ("skewed:2", "skewed:4") and low <= 0 <= high),
        measured={"AMF - uniform at the end": gains, "largest at": largest},
        paper=PAPER[2],
    )


def _allocation(metrics: Mapping[str, float]) -> np.ndarray:
    counts = np.array([metrics[f"demos_task_{c}"] for c in range(TASKS)])
    return counts / counts.sum()


def _claim_3(settings: Mapping[str, Mapping[str, Any]], table: Table) -> dict[str, Any]:
    statement = (
        f"With skewed:4 pre-training at least {MISSING_SHARE:.0%} of AMF's requests go to the "
        "tasks 4-11 that pre-training left out, and AMF's allocation is nearer the privileged "
        "rebalancing allocation than uniform's (total variation distance, seed by seed)"
    )
    envs = [
        env
        for env in _gp_envs(settings, table)
        if settings[env]["pretraining"] == "skewed:4" and (env, "rebalancing") in table
    ]
    if not envs:
        return claim(3, statement, "not run", paper=PAPER[3])
    env = envs[0]
    missing = pretraining_counts("skewed:4") == 0
    share = _summary(table, env, "amf", lambda m: float(_allocation(m)[missing].sum()))
    reference = table[(env, "rebalancing")]
    distances = {}
    for agent in ("amf", "uniform"):
        episodes = {k: m for k, m in table[(env, agent)].items() if k in reference}
        keys = sorted(episodes)
        distances[agent] = summarize(
            [
                0.5 * float(np.abs(_allocation(episodes[k]) - _allocation(reference[k])).sum())
                for k in keys
            ],
            [seed for seed, _ in keys],
        )
    holds = (
        share["mean"] >= MISSING_SHARE and distances["amf"]["mean"] < distances["uniform"]["mean"]
    )
    return claim(
        3,
        statement,
        verdict(holds),
        measured={
            "share of AMF's requests to tasks 4-11": share,
            "distance to rebalancing": distances,
        },
        paper=PAPER[3],
    )


def _claim_4(settings: Mapping[str, Mapping[str, Any]], table: Table) -> dict[str, Any]:
    statement = (
        "MLP learner, skewed:6 pre-training: with the adaptive prior, AMF's fine-tuning lowers "
        f"no pre-trained task's return by more than {FORGETTING_LIMIT:.0%} of its "
        "expert-minus-random gap (mean over seeds of the largest drop); without it forgetting "
        "is larger (recorded)"
    )
    mlp = {
        bool(kwargs["adaptive_prior"]): env
        for env, kwargs in settings.items()
        if kwargs["learner"] == "mlp"
        and kwargs["pretraining"] == "skewed:6"
        and (env, "amf") in table
    }
    if True not in mlp:
        return claim(4, statement, "not run", paper=PAPER[4])
    forgetting = {
        ("with adaptive prior" if prior else "without"): _summary(
            table, env, "amf", lambda m: m["forgetting"]
        )
        for prior, env in sorted(mlp.items(), reverse=True)
    }
    measured: dict[str, Any] = {"AMF's forgetting": forgetting}
    if (mlp[True], "uniform") in table:
        measured["uniform's forgetting with adaptive prior"] = _summary(
            table, mlp[True], "uniform", lambda m: m["forgetting"]
        )
    return claim(
        4,
        statement,
        verdict(forgetting["with adaptive prior"]["mean"] <= FORGETTING_LIMIT),
        measured=measured,
        paper=PAPER[4],
    )
