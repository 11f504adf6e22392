"""The claims of DipLLM's ablation, checked on a run of ``dipllm.yaml`` (``docs/diplomacy.md``).

DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in Diplomacy", ICML
2025) reports that the autoregressive factorisation (AF) and the equilibrium fine-tuning (EW)
each matter: AF + fine-tuning 29.4 % SoS, AF only 9.9 %, fine-tuning without AF 0.8 %, neither
0.2 %; that the full model, trained on about 500 games, reaches 23.0 % SoS against its opponent
pool (Cicero 20.8 %, DNVI 6.6 %, DipNet 4.2 %); and that 100 games of data already beat DipNet.
Here the opponents are six greedy bots (equal strength: SoS 1/7), so the claims are the
orderings, not the levels:

1. AF+EW > AF+BC with disjoint 95 % CIs (the equilibrium fine-tuning improves on the
   behaviour-cloned model it starts from, beyond the noise of the games), AF+EW > joint+EW, and
   both AF variants above both joint variants (mean SoS); beside the SoS, what the fine-tuning
   rested on: the Q estimate's settings and measured noise (the ``q`` diagnostics line) and how
   far AF+EW's equilibrium targets moved its policy (``target_shift`` per seed);
2. AF+EW has SoS above 1/7 against the opponent, and above AF+EW small (trained on the first
   100 of the 500 games in the full profile);
3. AF+EW small matches or beats AF+BC large (400 games): data efficiency;
4. recorded: SoS, win, draw, survival and defeat rates of every agent against every opponent.

Agents are read by label (``AF+EW``, ``AF+BC``, ``joint+EW``, ``joint+BC``, ``AF+EW small``,
``AF+BC large``) from the ``dipllm`` scorecard block of
:class:`omnigym.llm_agents.dipllm.experiment.DipLLMExperiment`; the games each was trained on
come from its latest ``train`` diagnostics line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run

AF_EW, AF_BC, JOINT_EW, JOINT_BC = "AF+EW", "AF+BC", "joint+EW", "joint+BC"
AF_EW_SMALL, AF_BC_LARGE = "AF+EW small", "AF+BC large"
EQUAL_SHARE = 1 / 7
RATES = ("sos", "win_rate", "draw_rate", "survival_rate", "defeat_rate")

#: DipLLM's reported results (fractions): the full model against its opponent pool, and the
#: ablation of its two ideas.
PAPER_TABLE = {
    "DipLLM": {"sos": 0.230, "win_rate": 0.223, "survival_rate": 0.503, "defeat_rate": 0.274},
    "Cicero": {"sos": 0.208, "win_rate": 0.205, "survival_rate": 0.501, "defeat_rate": 0.294},
    "DNVI": {"sos": 0.066, "win_rate": 0.043, "survival_rate": 0.311, "defeat_rate": 0.646},
    "DipNet": {"sos": 0.042, "win_rate": 0.021, "survival_rate": 0.243, "defeat_rate": 0.736},
}
PAPER_ABLATION = {
    AF_EW: {"sos": 0.294, "win_rate": 0.252, "defeat_rate": 0.290},
    AF_BC: {"sos": 0.099, "win_rate": 0.067, "defeat_rate": 0.533},
    JOINT_EW: {"sos": 0.008, "win_rate": 0.0, "defeat_rate": 0.808},
    JOINT_BC: {"sos": 0.002, "win_rate": 0.0, "defeat_rate": 0.957},
}


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–4 on this run (see the module docstring)."""
    block = run.scorecard["dipllm"]
    matches, opponent = block["matches"], block["opponent"]
    table = {
        agent: by_opponent[opponent]
        for agent, by_opponent in matches.get(block["env_label"], {}).items()
        if opponent in by_opponent
    }
    sos = {label: _sos(row) for label, row in table.items()}
    trained = {d["agent"]: d for d in run.diagnostics if d.get("stage") == "train"}
    against = opponent.removeprefix("diplomacy_").rsplit(":", 1)[-1]
    return [
        _claim_1(sos, trained, _fine_tuning(run.diagnostics)),
        _claim_2(sos, trained, against),
        _claim_3(sos, trained),
        _claim_4(matches),
    ]


def _summary(rate: Mapping[str, Any]) -> dict[str, Any]:
    return {"mean": rate["mean"], "ci95": rate["ci95"]}


def _sos(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"mean": row["sos"]["mean"], "ci95": row["sos"]["ci95"], "games": row["games"]}


def _measured(sos: Mapping[str, Any], trained: Mapping[str, Any], *labels: str) -> dict:
    """The SoS of ``labels`` and, where their training is recorded, the games each trained on."""
    measured: dict[str, Any] = {"sos": {label: sos.get(label) for label in labels}}
    games = {label: trained[label]["games"] for label in labels if label in trained}
    if games:
        measured["games_trained_on"] = games
    return measured


def _not_run(number: int, text: str, measured: Any, paper: Any) -> dict[str, Any]:
    return claim(number, text, "not run", measured, paper)


def _fine_tuning(diagnostics: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The Q estimate (settings and noise of the latest ``q`` line) and AF+EW's target shifts."""
    found: dict[str, Any] = {}
    estimates = [d for d in diagnostics if d.get("stage") == "q"]
    if estimates:
        wanted = (
            "groups",
            "rollouts",
            "top_k",
            "sampled",
            "horizon_years",
            "continuation",
            "noise",
        )
        found["q"] = {key: estimates[-1][key] for key in wanted if key in estimates[-1]}
    shifts = [
        d["target_shift"]
        for d in diagnostics
        if d.get("stage") == "train"
        and d.get("agent") == AF_EW
        and d.get("target_shift") is not None
    ]
    if shifts:
        found["AF+EW target_shift"] = shifts
    return found


def _claim_1(sos, trained, fine_tuning):
    text = (
        "Ablation ordering: AF+EW > AF+BC with disjoint 95% CIs, AF+EW > joint+EW, and both AF "
        "variants above both joint variants (mean SoS)"
    )
    paper = {"sos": {label: rates["sos"] for label, rates in PAPER_ABLATION.items()}}
    labels = (AF_EW, AF_BC, JOINT_EW, JOINT_BC)
    measured = {**_measured(sos, trained, *labels), **fine_tuning}
    if not all(label in sos for label in labels):
        return _not_run(1, text, measured, paper)
    mean = {label: sos[label]["mean"] for label in labels}
    separated = sos[AF_EW]["ci95"][0] > sos[AF_BC]["ci95"][1]
    measured["AF+EW above AF+BC, CIs disjoint"] = separated
    holds = (
        mean[AF_EW] > mean[AF_BC]
        and separated
        and mean[AF_EW] > mean[JOINT_EW]
        and min(mean[AF_EW], mean[AF_BC]) > max(mean[JOINT_EW], mean[JOINT_BC])
    )
    return claim(1, text, verdict(holds), measured, paper)


def _claim_2(sos, trained, against):
    text = (
        f"AF+EW has SoS above 1/7 against {against}, and its SoS with the full data (500 games "
        "in the full profile) exceeds that with the small data (100 games)"
    )
    paper = {
        "DipLLM SoS": PAPER_TABLE["DipLLM"]["sos"],
        "data": "about 500 games (1.5 % of Cicero's)",
        "equal_share": EQUAL_SHARE,
    }
    measured = {**_measured(sos, trained, AF_EW, AF_EW_SMALL), "equal_share": EQUAL_SHARE}
    if AF_EW not in sos or AF_EW_SMALL not in sos:
        return _not_run(2, text, measured, paper)
    mean = sos[AF_EW]["mean"]
    holds = mean > EQUAL_SHARE and mean > sos[AF_EW_SMALL]["mean"]
    return claim(2, text, verdict(holds), measured, paper)


def _claim_3(sos, trained):
    text = (
        "Data efficiency: AF+EW on the small data (100 games in the full profile) matches or "
        "beats AF+BC on the large data (400 games)"
    )
    paper = {
        "100 games": "already beat DipNet",
        "DipNet SoS": PAPER_TABLE["DipNet"]["sos"],
    }
    measured = _measured(sos, trained, AF_EW_SMALL, AF_BC_LARGE)
    if AF_EW_SMALL not in sos or AF_BC_LARGE not in sos:
        return _not_run(3, text, measured, paper)
    holds = sos[AF_EW_SMALL]["mean"] >= sos[AF_BC_LARGE]["mean"]
    return claim(3, text, verdict(holds), measured, paper)


def _claim_4(matches):
    text = "Recorded: SoS, win, draw, survival and defeat rates of every agent and opponent"
    paper = {"against its opponent pool": PAPER_TABLE, "ablation": PAPER_ABLATION}
    recorded = {
        env: {
            agent: {
                against: {rate: _summary(row[rate]) for rate in RATES} | {"games": row["games"]}
                for against, row in by_opponent.items()
            }
            for agent, by_opponent in agents.items()
        }
        for env, agents in matches.items()
    }
    if not any(recorded.values()):
        return _not_run(4, text, None, paper)
    return claim(4, text, "recorded", recorded, paper)
