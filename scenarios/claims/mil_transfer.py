"""The claims of "Do Multiple Instance Learning Models Transfer?", checked on a run of
``mil_transfer.yaml`` (``docs/methods.md``).

Shao et al. (ICML 2025) fine-tune MIL aggregators pretrained on a pan-cancer or a single-organ
task on new slide tasks: pretrained beats random initialisation, pan-cancer pretraining
transfers best across organs, and the benefit is largest with little target data. Here the same
mechanism on synthetic slides (``Methods/MILTransfer-v0``).

The checker reads the target and the training-set size from the env labels
(``"<target> n=<size>"``, e.g. ``"cross-organ n=40"``) and the agents from their labels
(``"<agent> <init> <mode>"``, e.g. ``"abmil pan-organ finetune"``). The score of a draw is the
env's reward (``metrics["score"]``: AUROC or balanced accuracy); comparisons are paired over
draws.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run

from .draws import by_draw, mean_ci, paired, summaries

ENV = re.compile(r"^(?P<target>\S+) n=(?P<size>\d+)$")
AGGREGATORS = ("mean-mil", "max-mil", "abmil", "transmil", "dsmil")
ATTENTION = ("abmil", "transmil", "dsmil")
SCRATCH, PAN, SINGLE = "scratch finetune", "pan-organ finetune", "single-organ finetune"
PAPER = (
    'Shao, Chen, Song, Runevic, Lu, Ding, Mahmood, "Do Multiple Instance Learning Models '
    'Transfer?", ICML 2025'
)


def _envs(table: dict) -> dict[str, list[tuple[int, str]]]:
    """target → [(size, env label)] sorted by size."""
    out: dict[str, list[tuple[int, str]]] = {}
    for env in table:
        match = ENV.match(env)
        if match:
            out.setdefault(match["target"], []).append((int(match["size"]), env))
    return {target: sorted(sizes) for target, sizes in sorted(out.items())}


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–5 on this run (see the module docstring)."""
    score = by_draw(run.records, "score")
    envs = _envs(score)
    return [
        _pretrained_beats_scratch(score, envs),
        _pan_beats_single(score, envs),
        _gap_shrinks(score, envs),
        _mean_gains_least(score, envs),
        _recorded(run, score),
    ]


def _gain(score: dict, env: str, agent: str, init: str = PAN) -> dict[str, Any] | None:
    table = score.get(env, {})
    first, second = f"{agent} {init}", f"{agent} {SCRATCH}"
    if first not in table or second not in table:
        return None
    return paired(table[first], table[second])


def _pretrained_beats_scratch(score: dict, envs: dict) -> dict[str, Any]:
    statement = (
        "With the fewest target slides, fine-tuning the pan-organ pretrained ABMIL, TransMIL and "
        "DSMIL beats training them from scratch on every target (mean paired gain > 0)"
    )
    paper = (
        "fine-tuning pretrained MIL models beats random initialisation, averaged over 19 "
        "target tasks, for the 11 aggregators tested, even across organs (Fig. 1)"
    )
    measured = {}
    for sizes in envs.values():
        env = sizes[0][1]
        gains = {a: _gain(score, env, a) for a in ATTENTION}
        gains = {a: g for a, g in gains.items() if g is not None}
        if gains:
            measured[env] = {f"{a}: pan - scratch": g for a, g in gains.items()}
    if not measured:
        return claim(1, statement, "not run", paper=paper)
    holds = all(g["mean"] > 0 for row in measured.values() for g in row.values())
    return claim(1, statement, verdict(holds), measured, paper)


def _pan_beats_single(score: dict, envs: dict) -> dict[str, Any]:
    statement = (
        "On the cross-organ target, pan-organ pretraining transfers at least as well as "
        "single-organ pretraining, averaged over the five aggregators at every training-set size"
    )
    paper = (
        "pan-cancer pretraining (108 classes, 3,944 slides) generalises across organs and tasks "
        "more consistently than single-organ pretraining"
    )
    measured = {}
    for _, env in envs.get("cross-organ", []):
        table = score[env]
        agents = [a for a in AGGREGATORS if f"{a} {PAN}" in table and f"{a} {SINGLE}" in table]
        if not agents:
            continue
        row: dict[str, Any] = {
            f"{a}: pan - single": paired(table[f"{a} {PAN}"], table[f"{a} {SINGLE}"])
            for a in agents
        }
        row["average"] = _average_gain(table, agents, PAN, SINGLE)
        measured[env] = row
    if not measured:
        return claim(2, statement, "not run", paper=paper)
    holds = all(row["average"]["mean"] >= 0 for row in measured.values())
    return claim(2, statement, verdict(holds), measured, paper)


def _average_gain(table: dict, agents: list[str], init: str, baseline: str) -> dict[str, Any]:
    """Per draw, the mean over ``agents`` of (init − baseline); its mean and CI."""
    draws = set.intersection(
        *(set(table[f"{a} {init}"]) & set(table[f"{a} {baseline}"]) for a in agents)
    )
    average = {
        d: float(np.mean([table[f"{a} {init}"][d] - table[f"{a} {baseline}"][d] for a in agents]))
        for d in draws
    }
    return {**(mean_ci(average) or {"mean": float("nan"), "ci95": None}), "draws": len(draws)}


def _gap_shrinks(score: dict, envs: dict) -> dict[str, Any]:
    statement = (
        "The gain of pan-organ pretraining over scratch (averaged over ABMIL, TransMIL, DSMIL) is "
        "smaller with the most target slides than with the fewest, on every target run at two "
        "or more sizes"
    )
    paper = "pretraining helps most in the few-shot regime; the gap narrows with more data"
    measured = {}
    for target, sizes in envs.items():
        if len(sizes) < 2:
            continue
        row = {}
        for size, env in (sizes[0], sizes[-1]):
            table = score[env]
            agents = [a for a in ATTENTION if f"{a} {PAN}" in table and f"{a} {SCRATCH}" in table]
            if agents:
                row[f"n={size}"] = _average_gain(table, agents, PAN, SCRATCH)
        if len(row) == 2:
            measured[target] = row
    if not measured:
        return claim(3, statement, "not run", paper=paper)
    holds = all(
        list(row.values())[1]["mean"] < list(row.values())[0]["mean"] for row in measured.values()
    )
    return claim(3, statement, verdict(holds), measured, paper)


def _mean_gains_least(score: dict, envs: dict) -> dict[str, Any]:
    statement = (
        "Mean pooling gains least from pan-organ pretraining: its gain over scratch, averaged "
        "over the targets at the fewest slides, is the smallest of the five aggregators"
    )
    paper = (
        "posed for this reproduction, not stated by the paper, which reports a gain for every "
        "aggregator it tests (Fig. 1)"
    )
    gains: dict[str, list[float]] = {}
    for sizes in envs.values():
        env = sizes[0][1]
        for agent in AGGREGATORS:
            gain = _gain(score, env, agent)
            if gain is not None:
                gains.setdefault(agent, []).append(gain["mean"])
    complete = {a: g for a, g in gains.items() if len(g) == len(envs)}
    if "mean-mil" not in complete or len(complete) < 2:
        return claim(4, statement, "not run", paper=paper)
    measured = {a: float(np.mean(g)) for a, g in complete.items()}
    holds = measured["mean-mil"] == min(measured.values())
    return claim(4, statement, verdict(holds), measured, paper)


def _recorded(run: Run, score: dict) -> dict[str, Any]:
    statement = "Every agent's score (AUROC or balanced accuracy), linear probes included"
    envs = [env for sizes in _envs(score).values() for _, env in sizes]
    if not envs:
        return claim(5, statement, "not run")
    agents = sorted({agent for env in envs for agent in score[env]})
    return claim(5, statement, "recorded", summaries(run.records, ("score",), agents, envs))
