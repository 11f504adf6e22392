"""The claims of C-3PO (Chen et al., "C-3PO: Compact Plug-and-Play Proxy Optimization to
Achieve Human-like Retrieval-Augmented Generation", ICML 2025), checked on a run of
``c3po.yaml`` (``docs/c3po.md``).

Agents are found by registry name: ``c3po`` without ``strategy`` (the proxy), ``c3po`` with
``strategy`` (forced strategies), ``c3po-sft-only``, ``c3po-outcome-rl``, ``direct``,
``standard-rag``. Envs are found by kwargs: the reference env is the one the proxies trained
on (``options.train_env``, default the first; BM25 and the rule reader), the others differ by
``retriever: minilm``, ``reader: smollm2`` or ``ood: true``. Agents play the same questions in
every env (episode seeds are shared), so comparisons are paired by (seed, episode); 95 %
intervals are stratified bootstraps over episodes with the run seeds as strata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run
from omnigym.evaluators.stats import summarize
from omnigym.scenario import EnvEntry

Key = tuple[int, int]
RESAMPLES = 1000


def _envs(run: Run) -> dict[str, EnvEntry]:
    """Role -> env entry: ``reference``, ``minilm``, ``smollm2``, ``ood`` (those present)."""
    envs = run.scenario.envs
    wanted = run.options.get("train_env")
    reference = next((e for e in envs if e.display == wanted), envs[0])
    found = {"reference": reference}
    for env in envs:
        kwargs = env.kwargs
        if kwargs.get("retriever") == "minilm" and kwargs.get("reader", "rule") == "rule":
            found.setdefault("minilm", env)
        if kwargs.get("reader") == "smollm2" and kwargs.get("retriever", "bm25") == "bm25":
            found.setdefault("smollm2", env)
        if kwargs.get("ood"):
            found.setdefault("ood", env)
    return found


def _agents(run: Run) -> dict[str, str]:
    """Role -> agent label: ``c3po``, ``sft``, ``outcome``, ``direct``, ``standard``, and
    ``forced <strategy>`` for each forced strategy."""
    names = {"c3po-sft-only": "sft", "c3po-outcome-rl": "outcome", "direct": "direct",
             "standard-rag": "standard"}  # fmt: skip
    found: dict[str, str] = {}
    for agent in run.scenario.agents:
        if agent.name == "c3po":
            strategy = agent.kwargs.get("strategy")
            found.setdefault(f"forced {strategy}" if strategy else "c3po", agent.display)
        elif agent.name in names:
            found.setdefault(names[agent.name], agent.display)
    return found


def outcomes(records: Sequence[Mapping[str, Any]], env: str, agent: str) -> dict[Key, dict]:
    """(seed, episode) -> the episode's metrics and its ``seconds``, for one env and agent
    label."""
    return {
        (int(r["seed"]), int(r["episode"])): {**r["metrics"], "seconds": r["wall_time"]}
        for r in records
        if r["env_id"] == env and r["agent"] == agent
    }


def _paired(a: dict[Key, dict], b: dict[Key, dict], keys: Sequence[Key]) -> np.ndarray:
    return np.array([a[k]["accuracy"] - b[k]["accuracy"] for k in keys])


def difference(a: dict[Key, dict], b: dict[Key, dict], where=None) -> dict[str, Any] | None:
    """Paired accuracy difference a - b over their common episodes (``where(metrics)`` keeps
    some), as a ``{"mean", "ci95"}`` summary; None without common episodes."""
    keys = sorted(k for k in a.keys() & b.keys() if where is None or where(a[k]))
    if not keys:
        return None
    found = summarize(_paired(a, b, keys), [k[0] for k in keys], n_resamples=RESAMPLES)
    return {"mean": found["mean"], "ci95": found["ci95"], "episodes": len(keys)}


def share(metrics: dict[Key, dict], holds, where) -> dict[str, Any] | None:
    """The share of episodes (among those ``where`` keeps) for which ``holds(metrics)``."""
    keys = sorted(k for k in metrics if where(metrics[k]))
    if not keys:
        return None
    values = [float(holds(metrics[k])) for k in keys]
    found = summarize(values, [k[0] for k in keys], n_resamples=RESAMPLES)
    return {"mean": found["mean"], "ci95": found["ci95"], "episodes": len(keys)}


def gain_ratio(
    new: tuple[dict[Key, dict], dict[Key, dict]], reference: tuple[dict[Key, dict], dict[Key, dict]]
) -> dict[str, Any] | None:
    """The proxy's gain over Standard RAG in a new setting divided by its gain in the
    reference setting, on the episodes both settings played (``new`` and ``reference`` are
    (proxy, standard RAG) outcomes), with a paired bootstrap interval (episodes resampled
    within seeds)."""
    keys = sorted(new[0].keys() & new[1].keys() & reference[0].keys() & reference[1].keys())
    if not keys:
        return None
    gain_new, gain_ref = _paired(*new, keys), _paired(*reference, keys)
    seeds = np.array([k[0] for k in keys])
    rng = np.random.default_rng(0)
    ratios = []
    for _ in range(RESAMPLES):
        rows = np.concatenate(
            [rng.choice(np.flatnonzero(seeds == s), (seeds == s).sum()) for s in np.unique(seeds)]
        )
        ref = gain_ref[rows].mean()
        ratios.append(gain_new[rows].mean() / ref if ref > 0 else np.nan)
    ratios = np.array(ratios)
    point = gain_new.mean() / gain_ref.mean() if gain_ref.mean() > 0 else float("nan")
    low, high = (
        np.nanpercentile(ratios, [2.5, 97.5]) if np.isfinite(ratios).any() else (np.nan,) * 2
    )
    return {
        "mean": float(point),
        "ci95": [float(low), float(high)],
        "gain_new": float(gain_new.mean()),
        "gain_reference": float(gain_ref.mean()),
        "episodes": len(keys),
    }


def _accuracy(metrics: dict[Key, dict]) -> dict[str, Any] | None:
    return share(metrics, lambda m: m["accuracy"] == 1, lambda m: True)


def _missing(needed: Sequence[str], found: Mapping[str, Any]) -> list[str]:
    return [name for name in needed if name not in found]


def _not_run(number, text, missing, paper) -> dict[str, Any]:
    return claim(number, text, "not run", {"missing": missing}, paper)


def _above_zero(summary: Mapping[str, Any] | None) -> bool:
    return summary is not None and summary["ci95"][0] > 0


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1-7 on this run (see the module docstring)."""
    envs, agents = _envs(run), _agents(run)
    records = run.records

    def of(env_role: str, agent_role: str) -> dict[Key, dict]:
        return outcomes(records, envs[env_role].display, agents[agent_role])

    return [
        _claim_1(of, agents),
        _claim_2(of, agents, run.diagnostics),
        _claim_3(of, agents),
        _claim_4(of, envs, agents),
        _claim_5(of, agents),
        _claim_6(of, agents),
        _claim_7(of, envs, agents),
    ]


def _claim_1(of, agents):
    text = (
        "The trained proxy is more accurate than Direct (no retrieval) and Standard RAG, by the "
        "widest margin over Standard RAG on two-hop questions"
    )
    paper = {
        "wording": "C-3PO beats every baseline (Direct, Standard RAG, ...) in-domain; its largest "
        "gain is on multi-hop QA",
        "largest gain (points, 2WikiMultiHopQA)": 15.5,
    }
    if missing := _missing(["c3po", "direct", "standard"], agents):
        return _not_run(1, text, missing, paper)
    proxy, direct, standard = (
        of("reference", "c3po"),
        of("reference", "direct"),
        of("reference", "standard"),
    )
    measured = {
        "accuracy": {
            role: _accuracy(of("reference", role)) for role in ("c3po", "direct", "standard")
        },
        "C-3PO - Direct": difference(proxy, direct),
        "C-3PO - Standard RAG": difference(proxy, standard),
        "C-3PO - Standard RAG, one-hop": difference(proxy, standard, lambda m: m["hops"] == 1),
        "C-3PO - Standard RAG, two-hop": difference(proxy, standard, lambda m: m["hops"] == 2),
    }
    one, two = measured["C-3PO - Standard RAG, one-hop"], measured["C-3PO - Standard RAG, two-hop"]
    holds = (
        _above_zero(measured["C-3PO - Direct"])
        and _above_zero(measured["C-3PO - Standard RAG"])
        and one is not None
        and two is not None
        and two["mean"] > one["mean"]
    )
    return claim(1, text, verdict(holds), measured, paper)


def _claim_2(of, agents, diagnostics):
    text = (
        "At an equal number of environment calls, tree-structured rollouts with Monte-Carlo "
        "credit give a more accurate proxy than single-trajectory outcome-reward RL"
    )
    paper = "the ablation without tree-structured rollout is less accurate than C-3PO"
    if missing := _missing(["c3po", "outcome"], agents):
        return _not_run(2, text, missing, paper)
    calls = {}
    runs = [
        line
        for line in diagnostics
        if line.get("stage") == "rl" and line.get("agent") in (agents["c3po"], agents["outcome"])
    ]
    for line in sorted(runs, key=lambda line: line.get("seed", 0)):  # in seed order, not finish
        calls.setdefault(line["agent"], []).append(int(line["calls"]))
    gap = difference(of("reference", "c3po"), of("reference", "outcome"))
    measured = {
        "accuracy": {role: _accuracy(of("reference", role)) for role in ("c3po", "outcome")},
        "tree - outcome": gap,
        "environment calls per seed": calls,
    }
    return claim(2, text, verdict(_above_zero(gap)), measured, paper)


def _claim_3(of, agents):
    text = (
        "The router skips retrieval on at least 70% of the questions the reader knows and plans "
        "on at least 70% of the two-hop questions"
    )
    paper = (
        "the Reasoning Router answers directly when the LLM knows the answer and plans "
        "multi-step retrieval for complex questions"
    )
    if missing := _missing(["c3po"], agents):
        return _not_run(3, text, missing, paper)
    proxy = of("reference", "c3po")
    skip = share(proxy, lambda m: m["strategy"] == 0, lambda m: m["known"] == 1)
    plan = share(proxy, lambda m: m["strategy"] == 2, lambda m: m["hops"] == 2)
    measured = {"no retrieval | known": skip, "planning | two-hop": plan}
    holds = skip is not None and plan is not None and skip["mean"] >= 0.7 and plan["mean"] >= 0.7
    return claim(3, text, verdict(holds), measured, paper)


def _claim_4(of, envs, agents):
    text = (
        "Plug-and-play: with the MiniLM retriever, and with the SmolLM2 reader, the proxy keeps "
        "at least 70% of its gain over Standard RAG without retraining"
    )
    paper = "gains carry over to retrievers and LLMs the proxy was not trained with"
    missing = _missing(["c3po", "standard"], agents) + _missing(["minilm", "smollm2"], envs)
    if missing:
        return _not_run(4, text, missing, paper)
    reference = (of("reference", "c3po"), of("reference", "standard"))
    measured = {
        f"gain kept, {role}": gain_ratio((of(role, "c3po"), of(role, "standard")), reference)
        for role in ("minilm", "smollm2")
    }
    measured["accuracy"] = {
        role: {a: _accuracy(of(role, a)) for a in ("c3po", "standard")}
        for role in ("minilm", "smollm2")
    }
    ratios = [measured[f"gain kept, {role}"] for role in ("minilm", "smollm2")]
    holds = all(r is not None and r["mean"] >= 0.7 for r in ratios)
    return claim(4, text, verdict(holds), measured, paper)


def _claim_5(of, agents):
    text = "The proxy trained with SFT then RL is more accurate than the SFT-only proxy"
    paper = "the SFT-only proxy is less accurate than SFT + RL"
    if missing := _missing(["c3po", "sft"], agents):
        return _not_run(5, text, missing, paper)
    gap = difference(of("reference", "c3po"), of("reference", "sft"))
    measured = {
        "accuracy": {role: _accuracy(of("reference", role)) for role in ("c3po", "sft")},
        "SFT+RL - SFT": gap,
    }
    return claim(5, text, verdict(_above_zero(gap)), measured, paper)


def _claim_6(of, agents):
    text = "Learned routing is more accurate than every forced single strategy"
    paper = "a proxy forced to one strategy is less accurate than learned routing"
    forced = sorted(role for role in agents if role.startswith("forced "))
    if "c3po" not in agents or not forced:
        return _not_run(6, text, ["c3po"] if "c3po" not in agents else ["forced strategies"], paper)
    proxy = of("reference", "c3po")
    measured = {f"C-3PO - {role}": difference(proxy, of("reference", role)) for role in forced}
    measured["accuracy"] = {role: _accuracy(of("reference", role)) for role in ("c3po", *forced)}
    holds = all(_above_zero(measured[f"C-3PO - {role}"]) for role in forced)
    return claim(6, text, verdict(holds), measured, paper)


def _claim_7(of, envs, agents):
    text = (
        "Recorded: accuracy of every agent with each retriever, reader and the held-out wording, "
        "and seconds per question with the SmolLM2 reader"
    )
    paper = {
        "wording": "C-3PO also leads out of distribution (FreshQA, MultiHop-RAG, Humanity's Last "
        "Exam)",
        "seconds per question": {"C-3PO": 4.8, "Standard RAG": 3.6},
    }
    accuracy = {
        env_role: {role: _accuracy(of(env_role, role)) for role in agents} for env_role in envs
    }
    measured: dict[str, Any] = {"accuracy": accuracy}
    if "smollm2" in envs:
        measured["seconds per question, SmolLM2 reader"] = {
            role: float(np.mean([m["seconds"] for m in of("smollm2", role).values()]))
            for role in ("c3po", "standard")
            if role in agents and of("smollm2", role)
        }
    return claim(7, text, "recorded", measured, paper)
