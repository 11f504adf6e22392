"""The claims of ELoRA, checked on a run of ``elora.yaml`` (``docs/methods.md``).

Wang, Hu, Tan and Jia (ICML 2025) fine-tune equivariant interatomic potentials with path-wise
low-rank updates: lower energy and force errors than full fine-tuning on small datasets, with
equivariance kept exactly, which a LoRA on flattened weights would break.

The checker reads the training-set size from the env labels (``"<target> n=<size>"``, e.g.
``"Au n=20"``) and the agents by their registry names (``elora``, ``full-finetune``,
``naive-lora``, ``readout-only``, ``from-scratch``). Comparisons are paired over draws.
"""

from __future__ import annotations

import re
from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run

from .draws import above_zero, by_draw, mean_ci, paired, summaries

LABEL = re.compile(r"^(?P<target>\S+) n=(?P<size>\d+)$")
#: Claim 2's bounds on the equivariance error (eV/Å).
EQUIVARIANT, BROKEN = 1e-5, 1e-3
AGENTS = ("elora", "full-finetune", "naive-lora", "readout-only", "from-scratch")


def _envs(table: dict) -> list[str]:
    return sorted(
        (env for env in table if LABEL.match(env)), key=lambda e: int(LABEL.match(e)["size"])
    )


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–4 on this run (see the module docstring)."""
    force = by_draw(run.records, "force_mae")
    equivariance = by_draw(run.records, "equivariance_error")
    envs = _envs(force)
    return [
        _against_full(force, envs),
        _equivariance(equivariance, envs),
        _readout(force, envs),
        _recorded(run, envs),
    ]


def _with(table: dict, envs: list[str], *agents: str) -> list[str]:
    return [env for env in envs if all(agent in table[env] for agent in agents)]


def _against_full(force: dict, envs: list[str]) -> dict[str, Any]:
    statement = "ELoRA's force MAE is at most full fine-tuning's at every training-set size (20-50)"
    paper = {
        "force error vs full fine-tuning": {"rMD17": "-23.7%", "10 inorganic datasets": "-14.4%"}
    }
    envs = _with(force, envs, "elora", "full-finetune")
    if not envs:
        return claim(1, statement, "not run", paper=paper)
    measured = {
        env: {
            "elora": mean_ci(force[env]["elora"]),
            "full-finetune": mean_ci(force[env]["full-finetune"]),
            "full - elora": paired(force[env]["full-finetune"], force[env]["elora"]),
        }
        for env in envs
    }
    holds = all(measured[env]["full - elora"]["mean"] >= 0 for env in envs)
    return claim(1, statement, verdict(holds), measured, paper)


def _equivariance(equivariance: dict, envs: list[str]) -> dict[str, Any]:
    statement = (
        f"ELoRA's equivariance error stays at most {EQUIVARIANT:g} eV/Å while naive LoRA's is at "
        f"least {BROKEN:g}"
    )
    paper = "path-wise updates keep equivariance; LoRA on flattened weights breaks it"
    envs = _with(equivariance, envs, "elora", "naive-lora")
    if not envs:
        return claim(2, statement, "not run", paper=paper)
    elora = [v for env in envs for v in equivariance[env]["elora"].values()]
    naive = [v for env in envs for v in equivariance[env]["naive-lora"].values()]
    measured = {"elora, max": max(elora), "naive-lora, min": min(naive),
                "naive-lora, max": max(naive), "draws": len(elora)}  # fmt: skip
    holds = max(elora) <= EQUIVARIANT and min(naive) >= BROKEN
    return claim(2, statement, verdict(holds), measured, paper)


def _readout(force: dict, envs: list[str]) -> dict[str, Any]:
    statement = (
        "Adapting the read-out alone underfits: a higher force MAE than ELoRA and than full "
        "fine-tuning at every training-set size"
    )
    paper = "not reported; the paper's baseline is full fine-tuning"
    envs = _with(force, envs, "readout-only", "elora", "full-finetune")
    if not envs:
        return claim(3, statement, "not run", paper=paper)
    measured = {
        env: {
            "readout-only": mean_ci(force[env]["readout-only"]),
            "readout - elora": paired(force[env]["readout-only"], force[env]["elora"]),
            "readout - full": paired(force[env]["readout-only"], force[env]["full-finetune"]),
        }
        for env in envs
    }
    holds = all(
        above_zero(measured[env]["readout - elora"]) and above_zero(measured[env]["readout - full"])
        for env in envs
    )
    return claim(3, statement, verdict(holds), measured, paper)


def _recorded(run: Run, envs: list[str]) -> dict[str, Any]:
    statement = "Every agent's force and per-atom energy MAE, from-scratch training included"
    if not envs:
        return claim(4, statement, "not run")
    measured = summaries(run.records, ("force_mae", "energy_mae_per_atom"), AGENTS, envs)
    return claim(4, statement, "recorded", measured)
