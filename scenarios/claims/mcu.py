"""The claims of MCU, checked on a run of ``mcu.yaml``.

MCU (Zheng et al., "MCU: An Evaluation Framework for Open-Ended Game Agents", ICML 2025;
``docs/mcu.md``) reports that every agent loses 5–9 points of Task Progress from simple to hard
tasks, does better on programmatic than on creative tasks, and scores lowest on Error
Recognition and Creative Attempts; its tasks are refined until they run, and composite tasks
are built with ``and``, ``or`` and ``then``. On omnigym's curated suite:

1. the oracle solves every curated atomic task, simple and hard, with Task Progress 10;
2. the random baseline (uniform plain commands): mean Task Progress ≤ 1.5, success ≤ 5 %;
3. BC loses at least 5 points of Task Progress (× 10) from simple to hard, paired by task and
   draw;
4. BC's Task Progress is higher on programmatic than on creative tasks;
5. for BC and PPO, Error Recognition and Creative Attempts are the two lowest dimensions (no
   other dimension's mean below either);
6. composition logic, for every agent: ``and`` success ≤ the lowest part's, ``then`` success ≤
   the same tasks joined by ``and``, ``or`` success ≥ the highest part's; a comparison fails only
   when the 95 % CI of the paired difference (same seeds and episodes) lies wholly on the wrong
   side.

Agents are read by label (``oracle``, ``random``, ``BC``, ``PPO``), envs by the experiment's
``mcu`` block (labels, role, tasks and ops of each env). Means carry 95 % bootstrap CIs
stratified by seed; ``paper`` holds MCU's reported numbers (:data:`~omnigym.evaluators.
mcu_tables.REPORTED`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omnigym.envs.mcu.evaluation import DIMENSIONS
from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run
from omnigym.evaluators.mcu_tables import REPORTED
from omnigym.scenarios.claims.draws import mean_ci, paired

ORACLE, RANDOM, BC, PPO = "oracle", "random", "BC", "PPO"
RANDOM_PROGRESS, RANDOM_SUCCESS = 1.5, 0.05
DROP_POINTS = 5.0
LOWEST = ("error_recognition_and_correction", "creative_attempts")

Draws = dict[tuple[int, int], float]


def _draws(records, agent: str, envs: Sequence[str], value) -> dict[str, Draws]:
    """env → (seed, episode) → ``value(record)`` for ``agent``'s records on ``envs``."""
    out: dict[str, Draws] = {env: {} for env in envs}
    for record in records:
        if record["agent"] == agent and record["env_id"] in out:
            out[record["env_id"]][(int(record["seed"]), int(record["episode"]))] = value(record)
    return {env: draws for env, draws in out.items() if draws}


def _pooled(per_env: Mapping[str, Draws], names: Mapping[str, str] | None = None) -> dict:
    """Every env's draws as one sample, keyed ``(seed, "<name>#<episode>")``; ``names`` maps
    an env to the name in its keys (default: the env), so two levels of one task pair up."""
    names = names or {}
    return {
        (seed, f"{names.get(env, env)}#{episode}"): value
        for env, draws in per_env.items()
        for (seed, episode), value in draws.items()
    }


def _progress(record) -> float:
    return float(record["metrics"]["task_progress"])


def _success(record) -> float:
    return float(bool(record["success"]))


def _scaled(summary: dict | None, factor: float) -> dict | None:
    if summary is None:
        return None
    return {
        **summary,
        "mean": summary["mean"] * factor,
        "ci95": [v * factor for v in summary["ci95"]],
    }


def _envs(run: Run, role: str = "suite", composite: bool | None = False, **where) -> list[str]:
    envs = run.scorecard.get("mcu", {}).get("envs", {})
    return [
        label
        for label, meta in envs.items()
        if meta["role"] == role
        and (composite is None or (len(meta["tasks"]) > 1) == composite)
        and all(meta.get(key) == value for key, value in where.items())
    ]


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–6 on this run (module docstring)."""
    return [
        _oracle(run),
        _random(run),
        _difficulty_drop(run),
        _programmatic(run),
        _lowest(run),
        _composition(run),
    ]


def _oracle(run: Run) -> dict[str, Any]:
    text = "The oracle solves every curated atomic task, simple and hard, with Task Progress 10"
    paper = "MCU runs and refines every task config until it works (its run-and-refine loop)"
    per_env = _draws(run.records, ORACLE, _envs(run), _progress)
    if not per_env:
        return claim(1, text, "not run", {"missing": "oracle episodes"}, paper)
    failed = sorted(env for env, draws in per_env.items() if min(draws.values()) < 10.0)
    episodes = sum(len(draws) for draws in per_env.values())
    measured = {"tasks": len(per_env), "episodes": episodes, "failed": failed}
    return claim(1, text, verdict(not failed), measured, paper)


def _random(run: Run) -> dict[str, Any]:
    text = (
        f"Random plain commands: mean Task Progress <= {RANDOM_PROGRESS} and success <= "
        f"{RANDOM_SUCCESS:.0%} on the curated suite"
    )
    paper = "no random baseline in MCU; a floor for the learned agents"
    envs = _envs(run, composite=None)
    progress = _pooled(_draws(run.records, RANDOM, envs, _progress))
    if not progress:
        return claim(2, text, "not run", {"missing": "random episodes"}, paper)
    per_env = _draws(run.records, RANDOM, envs, _success)
    success = _pooled(per_env)
    solved = {env: int(sum(d.values())) for env, d in per_env.items() if sum(d.values())}
    measured = {
        "task_progress": mean_ci(progress),
        "success": mean_ci(success),
        "episodes": len(success),
        "solved (episodes per env)": dict(sorted(solved.items(), key=lambda kv: -kv[1])),
    }
    holds = (
        measured["task_progress"]["mean"] <= RANDOM_PROGRESS
        and measured["success"]["mean"] <= RANDOM_SUCCESS
    )
    return claim(2, text, verdict(holds), measured, paper)


def _by_task(run: Run, agent: str, difficulty: str) -> dict:
    """``(seed, "<task>#<episode>")`` → Task Progress × 10 over the curated atomic envs of a
    level."""
    envs = run.scorecard["mcu"]["envs"]
    per_env = _draws(run.records, agent, _envs(run, difficulty=difficulty), _progress)
    tasks = {env: envs[env]["task"] for env in per_env}
    return {key: 10.0 * value for key, value in _pooled(per_env, tasks).items()}


def _difficulty_drop(run: Run) -> dict[str, Any]:
    text = f"BC loses at least {DROP_POINTS:g} points of Task Progress from simple to hard"
    paper = {
        "progress simple / hard": {a: row[0] for a, row in REPORTED["simple / hard"].items()},
        "finding": "every agent drops 5-9 points from simple to hard",
    }
    if "mcu" not in run.scorecard:
        return claim(3, text, "not run", {"missing": "the mcu block"}, paper)
    simple, hard = _by_task(run, BC, "simple"), _by_task(run, BC, "hard")
    drop = paired(simple, hard)
    if drop is None:
        return claim(3, text, "not run", {"missing": "BC on both levels"}, paper)
    measured = {"simple": mean_ci(simple), "hard": mean_ci(hard), "drop": drop}
    return claim(3, text, verdict(drop["mean"] >= DROP_POINTS), measured, paper)


def _programmatic(run: Run) -> dict[str, Any]:
    text = "BC's Task Progress is higher on programmatic than on creative atomic tasks"
    paper = {"STEVE-1 progress programmatic / creative": [38.4, 22.6]}
    kinds = {}
    for kind in ("programmatic", "creative"):
        per_env = _draws(run.records, BC, _envs(run, kind=kind), _progress)
        kinds[kind] = _scaled(mean_ci(_pooled(per_env)), 10.0)
    if "mcu" not in run.scorecard or None in kinds.values():
        missing = [kind for kind, summary in kinds.items() if summary is None]
        return claim(4, text, "not run", {"missing": f"BC on {missing or 'the suite'}"}, paper)
    holds = kinds["programmatic"]["mean"] > kinds["creative"]["mean"]
    return claim(4, text, verdict(holds), kinds, paper)


def _lowest(run: Run) -> dict[str, Any]:
    text = "For BC and PPO, Error Recognition and Creative Attempts are the two lowest dimensions"
    paper = {"finding": REPORTED["lowest dimensions"], "simple / hard": REPORTED["simple / hard"]}
    envs = _envs(run, composite=None)
    measured, holds = {}, True
    for agent in (BC, PPO):
        means = {}
        for name in DIMENSIONS:
            per_env = _draws(
                run.records, agent, envs, lambda r, n=name: float(r["metrics"].get(n, "nan"))
            )
            finite = {k: v for k, v in _pooled(per_env).items() if v == v}
            if finite:
                means[name] = _scaled(mean_ci(finite), 10.0)
        if not means:
            return claim(5, text, "not run", {"missing": f"{agent} episodes"}, paper)
        others = [s["mean"] for name, s in means.items() if name not in LOWEST]
        lowest = max(means.get(name, {"mean": 0.0})["mean"] for name in LOWEST)
        ranked = sorted(means, key=lambda name: means[name]["mean"])
        measured[agent] = {"means": means, "lowest two": ranked[:2]}
        holds = holds and all(lowest <= value for value in others)
    return claim(5, text, verdict(holds), measured, paper)


def _composition(run: Run) -> dict[str, Any]:
    text = (
        "Composition logic for every agent: and <= its lowest part, then <= the same tasks "
        "joined by and, or >= its highest part (success rates; fails only beyond the 95% CI)"
    )
    paper = "MCU composes atomic tasks with and / or / then into harder ones"
    meta = run.scorecard.get("mcu", {}).get("envs", {})
    composites = _envs(run, composite=True)
    if not composites:
        return claim(6, text, "not run", {"missing": "composite envs"}, paper)
    simple = {
        m["tasks"][0]: label
        for label, m in meta.items()
        if len(m["tasks"]) == 1 and m["difficulty"] == "simple"
    }
    twins = {tuple(m["tasks"]): label for label, m in meta.items() if m["role"] == "twin"}
    agents = sorted({record["agent"] for record in run.records})
    checks, holds = [], True
    for env in composites:
        tasks, ops = meta[env]["tasks"], set(meta[env]["ops"])
        if ops == {"then"}:
            bounds, op, side = [twins.get(tuple(tasks))], "then <= and", -1
        elif ops == {"and"}:
            bounds, op, side = [simple.get(t) for t in tasks], "and <= min part", -1
        elif ops == {"or"}:
            bounds, op, side = [simple.get(t) for t in tasks], "or >= max part", 1
        else:
            continue
        if None in bounds:
            continue
        for agent in agents:
            rates = _draws(run.records, agent, [env, *bounds], _success)
            if len(rates) < 1 + len(bounds):
                continue
            means = {label: sum(d.values()) / len(d) for label, d in rates.items()}
            pick = min if side < 0 else max
            bound = pick(bounds, key=lambda label: means[label])
            difference = paired(rates[env], rates[bound])
            wrong = difference is not None and (
                difference["ci95"][0] > 0 if side < 0 else difference["ci95"][1] < 0
            )
            holds = holds and not wrong
            checks.append(
                {
                    "env": env,
                    "agent": agent,
                    "rule": op,
                    "composite": means[env],
                    "bound": {bound: means[bound]},
                    "difference": difference,
                    "holds": not wrong,
                }
            )
    if not checks:
        return claim(6, text, "not run", {"missing": "parts of the compositions"}, paper)
    return claim(6, text, verdict(holds), {"checks": checks}, paper)
