"""The claims of Lukasik et al. (ICML 2025), loss versus label aggregation, on a run of
``ranking.yaml``.

Environments are read from their labels (``pi1=<value>``, optionally ``s=<value>``; the
sharpness defaults to 40) and agents by their registry names. The claims are about the
scorecard's per-metric means and 95% CIs over draws. Claims 1–3 are checked on the
sharpness-40 sweep; claim 4 (the learners beside their Bayes-optimal references, and the s = 8
sweep when run) is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from omnigym.evaluators.claims import claim, sweep, verdict
from omnigym.evaluators.experiment import Run

#: The sharpness of an env label without ``s=...``: the registered default.
DEFAULT_SHARPNESS = 40.0
BALANCE = 0.15  # "within 0.5 ± 0.15": balanced mixed pairs
DICTATED = 0.9  # a mixed-pair preference this high: label 1 decides the mixed pairs
LOSS, LABEL = "loss-aggregation", "label-aggregation"
REFERENCES = ("bayes-loss-aggregation-reference", "bayes-label-aggregation-reference")
#: Loss aggregation's mixed-pair preference in the paper's synthetic experiment (s = 40).
PAPER_PREFERENCE = {"pi1=0.5": 0.50, "pi1=0.2": 0.96, "pi1=0.05": 0.97, "pi1=0.01": 0.99}
_KNOB = re.compile(r"\b(pi1|s)=([0-9.eE+-]+)")

#: One metric of one agent over a π₁ sweep: π₁ -> {"mean", "ci95"}.
Sweep = dict[float, dict[str, Any]]


def _knobs(env_label: str) -> tuple[float, float] | None:
    """(pi1, sharpness) named by an env label such as ``"pi1=0.05"`` or ``"s=8 pi1=0.05"``."""
    knobs = {name: float(value) for name, value in _KNOB.findall(env_label)}
    if "pi1" not in knobs:
        return None
    return knobs["pi1"], knobs.get("s", DEFAULT_SHARPNESS)


def _named(sweep: Sweep) -> dict[str, dict[str, Any]]:
    """``sweep`` keyed ``"pi1=<value>"`` for claims.json."""
    return {f"pi1={pi1:g}": summary for pi1, summary in sweep.items()}


def check(run: Run) -> list[dict[str, Any]]:
    """The paper's claims on ``run`` (see the module docstring)."""
    envs: dict[float, dict[float, str]] = {}  # sharpness -> pi1 -> env label
    for env_label in run.scorecard["envs"]:
        knobs = _knobs(env_label)
        if knobs is not None:
            envs.setdefault(knobs[1], {})[knobs[0]] = env_label

    def over_pi1(sharpness: float, agent: str, metric: str) -> Sweep:
        return sweep(run.scorecard, envs.get(sharpness, {}), agent, metric)

    sharp = DEFAULT_SHARPNESS
    recorded = {
        f"s={s:g}": {
            agent: _named(over_pi1(s, agent, "mixed_pair_preference"))
            for agent in (LOSS, LABEL, *REFERENCES)
        }
        for s in sorted(envs)
    }
    anything_recorded = any(any(by_agent.values()) for by_agent in recorded.values())
    return [
        _dictatorship_claim(over_pi1(sharp, LOSS, "mixed_pair_preference")),
        _balance_claim(over_pi1(sharp, LABEL, "mixed_pair_preference")),
        _trade_off_claim(
            {agent: over_pi1(sharp, agent, "auc_1") for agent in (LOSS, LABEL)},
            {agent: over_pi1(sharp, agent, "auc_2") for agent in (LOSS, LABEL)},
        ),
        claim(
            4,
            "the learners' mixed-pair preferences beside their Bayes-optimal references; "
            "the s = 8 sweep (noisy labels) when run",
            "recorded" if anything_recorded else "not run",
            measured=recorded,
            paper="the Bayes-optimal scorer of loss aggregation weights label k by "
            "1/(π_k(1 − π_k)); that of label aggregation is η₁ + η₂ whatever the π_k",
        ),
    ]


def _dictatorship_claim(loss: Sweep) -> dict[str, Any]:
    statement = (
        "as π₁ falls, loss aggregation's mixed-pair preference rises from ≈ 0.5 (within "
        f"0.5 ± {BALANCE} at π₁ = 0.5) to ≥ {DICTATED} at every π₁ ≤ 0.2: label 1 dictates the "
        "mixed pairs"
    )
    measured = {"mixed_pair_preference": _named(loss)}
    paper = {"mixed_pair_preference": PAPER_PREFERENCE}
    rare = [summary["mean"] for pi1, summary in loss.items() if pi1 <= 0.2]
    if 0.5 not in loss or not rare:
        return claim(1, statement, "not run", measured=measured, paper=paper)
    balanced = abs(loss[0.5]["mean"] - 0.5) <= BALANCE
    dictated = min(rare) >= DICTATED
    return claim(1, statement, verdict(balanced and dictated), measured=measured, paper=paper)


def _balance_claim(label: Sweep) -> dict[str, Any]:
    statement = (
        f"label aggregation's mixed-pair preference stays within 0.5 ± {BALANCE} at every π₁ ≥ 0.05"
    )
    measured = {"mixed_pair_preference": _named(label)}
    paper = "label aggregation orders (1, 0) and (0, 1) examples alike, whatever the prevalences"
    checked = [summary["mean"] for pi1, summary in label.items() if pi1 >= 0.05]
    if not checked:
        return claim(2, statement, "not run", measured=measured, paper=paper)
    balanced = all(abs(mean - 0.5) <= BALANCE for mean in checked)
    return claim(2, statement, verdict(balanced), measured=measured, paper=paper)


def _trade_off_claim(auc_1: Mapping[str, Sweep], auc_2: Mapping[str, Sweep]) -> dict[str, Any]:
    statement = (
        "not a higher AUC but a trade: at every π₁ < 0.5 loss aggregation has the higher AUC₁ "
        "and label aggregation the higher AUC₂"
    )
    measured = {
        "auc_1": {agent: _named(values) for agent, values in auc_1.items()},
        "auc_2": {agent: _named(values) for agent, values in auc_2.items()},
    }
    paper = "the difference is the prevalence-driven tie-break, not a higher AUC"
    shared = set(auc_1[LOSS]) & set(auc_1[LABEL]) & set(auc_2[LOSS]) & set(auc_2[LABEL])
    checked = sorted(pi1 for pi1 in shared if pi1 < 0.5)
    if not checked:
        return claim(3, statement, "not run", measured=measured, paper=paper)
    traded = all(
        auc_1[LOSS][pi1]["mean"] > auc_1[LABEL][pi1]["mean"]
        and auc_2[LABEL][pi1]["mean"] > auc_2[LOSS][pi1]["mean"]
        for pi1 in checked
    )
    return claim(3, statement, verdict(traded), measured=measured, paper=paper)
