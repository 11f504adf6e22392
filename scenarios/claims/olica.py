"""The claims of Olica, checked on a run of ``olica.yaml`` (``docs/methods.md``).

He and Lin (ICML 2025) prune LLaMA-7B/13B without retraining: the orthogonal neuron
decomposition (OND) of the V·O products lets neurons be cut where they carry least, the linear
calibration (LC) of pruned FFNs lowers perplexity further, OND itself changes nothing until
neurons are cut, and the whole takes minutes with 256 calibration samples.

The checker reads the sparsity from the env labels (``"s=0"``, ``"s=0.2"``, ``"s=0.3"``) and the
agents by their labels: ``olica``, ``olica-no-calibration``, ``olica-unrotated`` (the ``olica``
agent with ``decompose: false, calibrate: false``: the same pipeline on the raw V/O neurons),
``olica-untruncated`` (``truncate: false`` on ``s=0``), ``olica-plain-svd``, ``wanda-prune``,
``magnitude-prune``. Comparisons are paired over draws, on the log perplexity.
"""

from __future__ import annotations

import math
from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run

from .draws import above_zero, by_draw, mean_ci, paired, summaries

SPARSITIES = ("s=0.2", "s=0.3")
AGENTS = ("olica", "olica-no-calibration", "olica-unrotated", "olica-plain-svd", "wanda-prune",
          "magnitude-prune")  # fmt: skip
#: Claim 3's tolerance on the untruncated model's relative perplexity and layer error (float32).
EXACT = 1e-4
#: Claim 4: "minutes" is read as at most this many seconds on the shared 2-core machine.
MINUTES = 900.0
CALIBRATION_SAMPLES = 256


def _log_perplexity(metrics: dict[str, float]) -> float | None:
    return math.log(metrics["perplexity"]) if "perplexity" in metrics else None


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–5 on this run (see the module docstring)."""
    log_ppl = by_draw(run.records, _log_perplexity)
    return [
        _decomposition(log_ppl),
        _calibration(log_ppl),
        _exactness(run),
        _time(run),
        _recorded(run),
    ]


def _have(table: dict, envs: tuple[str, ...], agents: tuple[str, ...]) -> bool:
    return all(agent in table.get(env, {}) for env in envs for agent in agents)


def _decomposition(log_ppl: dict) -> dict[str, Any]:
    statement = (
        "At 20% and 30% sparsity the orthogonal neuron decomposition beats pruning the raw V/O "
        "neurons (lower held-out perplexity, all else equal, no calibration)"
    )
    paper = "OND outperforms pruning V/O neurons directly (LLaMA-7B ablation)"
    if not _have(log_ppl, SPARSITIES, ("olica-unrotated", "olica-no-calibration")):
        return claim(1, statement, "not run", paper=paper)
    measured = {
        env: {
            "log ppl unrotated - OND": paired(
                log_ppl[env]["olica-unrotated"], log_ppl[env]["olica-no-calibration"]
            ),
            "perplexity OND": _perplexity(log_ppl[env]["olica-no-calibration"]),
            "perplexity unrotated": _perplexity(log_ppl[env]["olica-unrotated"]),
        }
        for env in SPARSITIES
    }
    holds = all(above_zero(measured[env]["log ppl unrotated - OND"]) for env in SPARSITIES)
    return claim(1, statement, verdict(holds), measured, paper)


def _calibration(log_ppl: dict) -> dict[str, Any]:
    statement = (
        "Linear calibration lowers the perplexity further at 20% and 30% sparsity, most at 30%"
    )
    paper = "LC lowers perplexity at every pruning ratio, the more the higher the ratio"
    if not _have(log_ppl, SPARSITIES, ("olica", "olica-no-calibration")):
        return claim(2, statement, "not run", paper=paper)
    gains = {
        env: paired(log_ppl[env]["olica-no-calibration"], log_ppl[env]["olica"])
        for env in SPARSITIES
    }
    measured = {f"log ppl without LC - with LC, {env}": gains[env] for env in SPARSITIES}
    holds = all(above_zero(gains[env]) for env in SPARSITIES)
    holds = holds and gains["s=0.3"]["mean"] > gains["s=0.2"]["mean"]
    return claim(2, statement, verdict(holds), measured, paper)


def _exactness(run: Run) -> dict[str, Any]:
    statement = (
        "The decomposition without truncation reproduces the model: perplexity and every "
        f"layer's output within {EXACT:g} (relative)"
    )
    paper = "OND is exact: the rotated V and O give the same V·O products"
    episodes = [
        r["metrics"]
        for r in run.records
        if r["env_id"] == "s=0"
        and r["agent"] == "olica-untruncated"
        and "perplexity" in r["metrics"]
    ]
    if not episodes:
        return claim(3, statement, "not run", paper=paper)
    ratio = max(abs(m["perplexity"] / m["perplexity_original"] - 1) for m in episodes)
    layer = max(m["layer_rel_error_max"] for m in episodes)
    measured = {
        "max relative perplexity change": ratio,
        "max layer relative error": layer,
        "draws": len(episodes),
    }
    return claim(3, statement, verdict(ratio <= EXACT and layer <= EXACT), measured, paper)


def _time(run: Run) -> dict[str, Any]:
    statement = (
        f"Olica prunes SmolLM2-135M with {CALIBRATION_SAMPLES} calibration samples in minutes: at "
        f"most {MINUTES:.0f} CPU seconds on one core, its calibration pass included"
    )
    paper = "LLaMA-7B: about 7 minutes with 256 samples on one RTX 4090"
    paper_size = {
        env.display
        for env in run.scenario.envs
        if env.kwargs.get("size") == "paper"
        and env.kwargs.get("calibration_samples", CALIBRATION_SAMPLES) == CALIBRATION_SAMPLES
    }
    episodes = [
        r["metrics"]
        for r in run.records
        if r["env_id"] in paper_size and r["env_id"] in SPARSITIES and r["agent"] == "olica"
        and "prune_cpu_seconds" in r["metrics"]
    ]  # fmt: skip
    if not episodes:
        return claim(4, statement, "not run", paper=paper)
    cpu = [m["prune_cpu_seconds"] for m in episodes]
    wall = [m["prune_seconds"] for m in episodes]
    measured = {
        "CPU seconds, max": max(cpu),
        "CPU seconds, mean": sum(cpu) / len(cpu),
        "wall seconds on the shared machine, max": max(wall),
        "episodes": len(cpu),
    }
    return claim(4, statement, verdict(max(cpu) <= MINUTES), measured, paper)


def _recorded(run: Run) -> dict[str, Any]:
    statement = "Every agent's held-out perplexity and kept parameters per sparsity"
    measured: dict[str, Any] = summaries(
        run.records, ("perplexity", "params_kept"), AGENTS, SPARSITIES
    )
    if not measured:
        return claim(5, statement, "not run")
    dense: dict = {}
    for agents in by_draw(run.records, "perplexity_original").values():
        for draws in agents.values():
            dense.update(draws)
    measured["dense perplexity"] = mean_ci(dense)
    return claim(5, statement, "recorded", measured)


def _perplexity(log_draws: dict) -> dict[str, Any] | None:
    return mean_ci({key: math.exp(value) for key, value in log_draws.items()})
