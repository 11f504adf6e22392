"""The claims of iDPA, checked on a run of ``idpa.yaml`` (``docs/methods.md``).

Yi, Xu, Qin, Chen, Wu, Li, Lao (ICML 2025) learn new detection classes task after task with a
frozen detector, training only prompts and heads: decoupled prompt attention (DPA) keeps the
frozen attention over the image untouched, and instance-level prompt generation (IPG) builds a
task's prompts from its objects. Here the claims are checked on the final average (the FAP
analogue) of ``Methods/IncrementalDetection-v0``.

The checker reads the patch size and the backgrounds from the env labels (``"patch <p>
<backgrounds>"``, e.g. ``"patch 8 per-task"``) and the agents by their registry names
(``sequential-finetune``, ``prefix-prompts``, ``dpa``, ``ipg-dpa``, ``joint-training``).
Comparisons are paired over draws (every agent and both patch sizes see the same images).
"""

from __future__ import annotations

import re
from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run

from .draws import Draws, by_draw, mean_ci, paired, summaries

LABEL = re.compile(r"^patch (?P<patch>\d+) (?P<backgrounds>per-task|mixed)$")
AGENTS = (
    "sequential-finetune",
    "prefix-prompts",
    "dpa",
    "ipg-dpa",
    "ipg-dpa instance-query",
    "joint-training",
)
PROMPTS = ("prefix-prompts", "dpa", "ipg-dpa")
METRIC = "final_average"
PAPER_GAINS = {
    "iDPA's final AP over the previous best (13 medical datasets, frozen GLIP)": {
        "full data": "+5.44",
        "1-shot": "+4.83",
        "10-shot": "+12.88",
        "50-shot": "+4.59",
    }
}


def _env(table: dict, patch: int, backgrounds: str) -> str | None:
    for env in table:
        match = LABEL.match(env)
        if match and int(match["patch"]) == patch and match["backgrounds"] == backgrounds:
            return env
    return None


def _has(table: dict, env: str | None, *agents: str) -> bool:
    return env is not None and all(agent in table.get(env, {}) for agent in agents)


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–5 on this run (see the module docstring)."""
    final = by_draw(run.records, METRIC)
    envs = sorted(env for env in final if LABEL.match(env))
    return [
        _decoupled(final),
        _more_tokens(final),
        _instances(final),
        _between(final, envs),
        _recorded(run, envs),
    ]


def _decoupled(final: dict) -> dict[str, Any]:
    statement = (
        "DPA's final average beats coupled prefix prompts' at patch 8 (64 tokens) and at patch 4 "
        "(256 tokens), per-task backgrounds"
    )
    paper = {
        "DPA vs coupled prompt attention": "DPA better (the paper's ablation)",
        **PAPER_GAINS,
    }
    envs = [_env(final, patch, "per-task") for patch in (8, 4)]
    if not all(_has(final, env, "dpa", "prefix-prompts") for env in envs):
        return claim(1, statement, "not run", paper=paper)
    measured = {
        env: {
            "dpa": mean_ci(final[env]["dpa"]),
            "prefix-prompts": mean_ci(final[env]["prefix-prompts"]),
            "dpa - prefix": paired(final[env]["dpa"], final[env]["prefix-prompts"]),
        }
        for env in envs
    }
    holds = all(measured[env]["dpa - prefix"]["mean"] > 0 for env in envs)
    return claim(1, statement, verdict(holds), measured, paper)


def _gap(final: dict, env: str) -> Draws:
    dpa, prefix = final[env]["dpa"], final[env]["prefix-prompts"]
    return {draw: dpa[draw] - prefix[draw] for draw in set(dpa) & set(prefix)}


def _more_tokens(final: dict) -> dict[str, Any]:
    statement = "DPA's gain over prefix prompts is larger at patch 4 (256 tokens) than at patch 8"
    paper = "the coupled softmax dilutes the prompts more as the image has more tokens"
    coarse, fine = _env(final, 8, "per-task"), _env(final, 4, "per-task")
    if not (
        _has(final, coarse, "dpa", "prefix-prompts") and _has(final, fine, "dpa", "prefix-prompts")
    ):
        return claim(2, statement, "not run", paper=paper)
    difference = paired(_gap(final, fine), _gap(final, coarse))
    measured = {
        "gain at patch 8": mean_ci(_gap(final, coarse)),
        "gain at patch 4": mean_ci(_gap(final, fine)),
        "patch 4 - patch 8": difference,
    }
    holds = difference is not None and difference["mean"] > 0
    return claim(2, statement, verdict(holds), measured, paper)


def _instances(final: dict) -> dict[str, Any]:
    statement = "IPG + DPA's final average is at least DPA's when backgrounds differ between tasks"
    paper = "IPG adds to DPA in the paper's ablation, on datasets of different modalities"
    env = _env(final, 8, "per-task")
    if not _has(final, env, "ipg-dpa", "dpa"):
        return claim(3, statement, "not run", paper=paper)
    measured = {
        env: {
            "ipg-dpa": mean_ci(final[env]["ipg-dpa"]),
            "dpa": mean_ci(final[env]["dpa"]),
            "ipg - dpa": paired(final[env]["ipg-dpa"], final[env]["dpa"]),
        }
    }
    if _has(final, env, "ipg-dpa instance-query"):
        measured[env]["ipg instance-query - dpa"] = paired(
            final[env]["ipg-dpa instance-query"], final[env]["dpa"]
        )
    mixed = _env(final, 8, "mixed")
    if _has(final, mixed, "ipg-dpa", "dpa"):
        measured[mixed] = {"ipg - dpa": paired(final[mixed]["ipg-dpa"], final[mixed]["dpa"])}
    holds = measured[env]["ipg - dpa"]["mean"] >= 0
    return claim(3, statement, verdict(holds), measured, paper)


def _between(final: dict, envs: list[str]) -> dict[str, Any]:
    statement = (
        "Every prompt method's final average lies between sequential fine-tuning's (lower "
        "bound) and joint training's (upper bound)"
    )
    paper = "iDPA between its fine-tuning and joint-training baselines on every benchmark"
    envs = [env for env in envs if _has(final, env, "sequential-finetune", "joint-training")]
    envs = [env for env in envs if any(agent in final[env] for agent in PROMPTS)]
    if not envs:
        return claim(4, statement, "not run", paper=paper)
    measured: dict[str, Any] = {}
    holds = True
    for env in envs:
        row = final[env]
        measured[env] = {}
        for agent in (agent for agent in PROMPTS if agent in row):
            above = paired(row[agent], row["sequential-finetune"])
            below = paired(row["joint-training"], row[agent])
            measured[env][agent] = {"minus sequential": above, "joint minus": below}
            holds = holds and above["mean"] > 0 and below["mean"] > 0
    return claim(4, statement, verdict(holds), measured, paper)


def _recorded(run: Run, envs: list[str]) -> dict[str, Any]:
    statement = "Every agent's final average, forgetting and final class accuracy"
    if not envs:
        return claim(5, statement, "not run", paper=PAPER_GAINS)
    measured = summaries(run.records, (METRIC, "forgetting", "accuracy"), AGENTS, envs)
    return claim(5, statement, "recorded", measured, PAPER_GAINS)
