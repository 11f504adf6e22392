"""HC-SMoE, its grouping and pruning baselines on ``Methods/MoEMerging-v0``.

Chen, Liu, Sun, Chao, Hsu, Lee, "Retraining-Free Merging of Sparse MoE via Hierarchical
Clustering", ICML 2025 (spec methods.md §3).

Every agent reads the layer (router, stacked expert matrices) and the calibration tokens from
the observation and answers the compressed layer (``assignment``, ``keep_router_row``,
``weights``) with K = ``target_experts`` slots. Two statistics of the calibration tokens are
shared (:func:`routing_frequency`, :func:`mean_expert_outputs`):

- f_e, expert e's **frequency**: how often it is among a token's top-2 (the paper's usage
  frequency);
- o_e, its **mean output** (1/T) Σ_t E_e(x_t) over *all* calibration tokens, routed to it or
  not: the representation HC-SMoE clusters, which does not depend on the router.

Merging agents keep every router row and give a cluster's experts one slot, holding the
frequency-weighted average W = Σ_{j ∈ C} (f_j / Σ_{k ∈ C} f_k) W_j of each of W_gate, W_up and
W_down (:func:`merge_by_frequency`; uniform weights for a cluster never routed to):

- ``hc-smoe`` (:class:`HCSMoEAgent`): agglomerative clustering of the o_e (Euclidean;
  ``linkage`` ``"average"`` by default, ``"single"`` or ``"complete"``) by
  ``scipy.cluster.hierarchy``, cut at K clusters;
- ``kmeans-outputs`` (:class:`KMeansOutputsAgent`): scikit-learn's K-means (k-means++, 10
  restarts) on the same o_e;
- ``m-smoe`` (:class:`MSMoEAgent`): M-SMoE's grouping — the K most frequent experts are the
  dominant ones and every other expert joins the dominant expert whose router logits over the
  calibration tokens are the most cosine-similar to its own.

Pruning agents keep K experts as they are and drop the other experts' router rows (the router
then renormalises over the kept ones):

- ``f-prune`` (:class:`FrequencyPruneAgent`): the K most frequent experts;
- ``s-prune`` (:class:`RouterScorePruneAgent`): the K largest mean softmax router scores;
- ``o-prune`` (:class:`OutputPruneAgent`): every one of the C(16, K) retained sets (1,820 for
  K = 4) tried on the first 256 calibration tokens; the set whose pruned layer's output is
  closest to the original's (relative error) is kept.

:func:`claims` checks the spec's claims on a run of ``scenarios/claims/hc_smoe.yaml``.

Departures from the paper: M-SMoE's grouping is its published rule (dominant experts by
frequency, router-logit cosine similarity) without its group-size limit, and without the
permutation alignment and low-rank compression that M-SMoE adds after merging: the comparison
is of groupings under one merging rule, as in the paper's ablations. The paper merges all
layers of a model at once; here there is one layer. K-means uses scikit-learn's k-means++
rather than the paper's own implementation.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.cluster import hierarchy
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from omnigym.envs.methods.hc_smoe import (
    MATRICES,
    expert_outputs,
    mix,
    moe_forward,
    relative_error,
    route,
)
from omnigym.evaluators.claims import claim
from omnigym.evaluators.stats import summarize

LINKAGES = ("average", "single", "complete")
#: O-prune searches on this many calibration tokens (the spec's 256).
O_PRUNE_TOKENS = 256

Observation = Mapping[str, Any]
Solution = dict[str, Any]


# ---- calibration statistics and the two kinds of solution -------------------------------------


def routing_frequency(observation: Observation) -> np.ndarray:
    """f: how many calibration tokens have each expert among their top-2."""
    chosen, _ = route(observation["tokens"] @ observation["router"].T)
    return np.bincount(chosen.ravel(), minlength=len(observation["router"])).astype(np.float64)


def mean_expert_outputs(observation: Observation) -> np.ndarray:
    """o: each expert's output averaged over all calibration tokens, shape (experts, d)."""
    return expert_outputs(observation["tokens"], observation).mean(axis=1)


def merge_by_frequency(
    observation: Observation, labels: np.ndarray, frequency: np.ndarray
) -> Solution:
    """The merging solution for cluster ``labels`` (expert → slot 0..K−1): every router row
    kept, each slot the frequency-weighted average of its experts (uniform if none is used)."""
    slots = int(observation["target_experts"])
    labels = np.asarray(labels, dtype=np.int64)
    weights = {name: np.zeros((slots, *observation[name].shape[1:])) for name in MATRICES}
    for slot in np.unique(labels):
        members = np.flatnonzero(labels == slot)
        share = frequency[members]
        share = share / share.sum() if share.sum() > 0 else np.full(len(members), 1 / len(members))
        for name in MATRICES:
            weights[name][slot] = np.tensordot(share, observation[name][members], axes=1)
    return {
        "assignment": labels,
        "keep_router_row": np.ones(len(labels), dtype=np.int8),
        "weights": weights,
    }


def prune_to(observation: Observation, kept: Sequence[int]) -> Solution:
    """The pruning solution keeping experts ``kept`` as slots 0..K−1, every other router row
    dropped."""
    kept = np.asarray(kept, dtype=np.int64)
    n_experts = len(observation["router"])
    assignment = np.zeros(n_experts, dtype=np.int64)
    assignment[kept] = np.arange(len(kept))
    keep = np.zeros(n_experts, dtype=np.int8)
    keep[kept] = 1
    weights = {name: observation[name][kept].copy() for name in MATRICES}
    return {"assignment": assignment, "keep_router_row": keep, "weights": weights}


def _most(scores: np.ndarray, count: int) -> np.ndarray:
    """The indices of the ``count`` largest scores (ties to the lower index)."""
    return np.argsort(-scores, kind="stable")[:count]


class _Compressor:
    """What every agent shares: the registry's (env, seed) signature and a seeded generator."""

    def __init__(self, env: Any = None, seed: int = 0):
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, observation: Observation, info: Mapping[str, Any]) -> Solution:
        raise NotImplementedError


# ---- merging ------------------------------------------------------------------------------------


class HCSMoEAgent(_Compressor):
    """HC-SMoE: hierarchical clustering of the mean expert outputs, cut at K clusters, then
    frequency-weighted merging; the router unchanged."""

    def __init__(self, env: Any = None, seed: int = 0, linkage: str = "average"):
        if linkage not in LINKAGES:
            raise ValueError(f"linkage must be one of {LINKAGES}, got {linkage!r}")
        self.linkage = linkage
        super().__init__(env, seed)

    def act(self, observation: Observation, info: Mapping[str, Any]) -> Solution:
        tree = hierarchy.linkage(
            mean_expert_outputs(observation), method=self.linkage, metric="euclidean"
        )
        labels = hierarchy.cut_tree(tree, n_clusters=int(observation["target_experts"]))
        return merge_by_frequency(observation, labels.ravel(), routing_frequency(observation))


class KMeansOutputsAgent(_Compressor):
    """K-means (k-means++, 10 restarts) of the mean expert outputs, then frequency-weighted
    merging."""

    def act(self, observation: Observation, info: Mapping[str, Any]) -> Solution:
        kmeans = KMeans(
            n_clusters=int(observation["target_experts"]),
            n_init=10,
            random_state=int(self._rng.integers(2**31 - 1)),
        )
        # one thread: the evaluator already runs one episode per worker process
        with threadpool_limits(limits=1):
            labels = kmeans.fit_predict(mean_expert_outputs(observation))
        return merge_by_frequency(observation, labels, routing_frequency(observation))


class MSMoEAgent(_Compressor):
    """M-SMoE's grouping: the K most frequent experts lead the groups, every other expert joins
    the leader with the most cosine-similar router logits; frequency-weighted merging."""

    def act(self, observation: Observation, info: Mapping[str, Any]) -> Solution:
        frequency = routing_frequency(observation)
        leaders = _most(frequency, int(observation["target_experts"]))
        logits = observation["tokens"] @ observation["router"].T
        unit = logits / np.linalg.norm(logits, axis=0, keepdims=True)
        similarity = unit.T @ unit[:, leaders]  # (experts, leaders)
        labels = np.argmax(similarity, axis=1)
        labels[leaders] = np.arange(len(leaders))
        return merge_by_frequency(observation, labels, frequency)


# ---- pruning ------------------------------------------------------------------------------------


class FrequencyPruneAgent(_Compressor):
    """F-prune: keep the K experts most often among the calibration tokens' top-2."""

    def act(self, observation: Observation, info: Mapping[str, Any]) -> Solution:
        kept = _most(routing_frequency(observation), int(observation["target_experts"]))
        return prune_to(observation, np.sort(kept))


class RouterScorePruneAgent(_Compressor):
    """S-prune: keep the K experts with the largest mean softmax router score."""

    def act(self, observation: Observation, info: Mapping[str, Any]) -> Solution:
        logits = observation["tokens"] @ observation["router"].T
        probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
        scores = (probabilities / probabilities.sum(axis=1, keepdims=True)).mean(axis=0)
        kept = _most(scores, int(observation["target_experts"]))
        return prune_to(observation, np.sort(kept))


class OutputPruneAgent(_Compressor):
    """O-prune: the retained set of K experts whose pruned layer reproduces the original's
    output best on the first :data:`O_PRUNE_TOKENS` calibration tokens (exhaustive search)."""

    def act(self, observation: Observation, info: Mapping[str, Any]) -> Solution:
        tokens = observation["tokens"][:O_PRUNE_TOKENS]
        router = observation["router"]
        reference = moe_forward(tokens, router, observation)
        outputs = expert_outputs(tokens, observation)  # every expert, computed once
        logits = tokens @ router.T
        slots = int(observation["target_experts"])
        best, best_error = None, np.inf
        for kept in itertools.combinations(range(len(router)), slots):
            kept = np.array(kept)
            chosen, gates = route(logits[:, kept])
            error = relative_error(reference, mix(outputs, kept[chosen], gates))
            if error < best_error:
                best, best_error = kept, error
        return prune_to(observation, best)


# ---- the claims of spec methods.md §3 ---------------------------------------------------------

HC, SINGLE, KMEANS, MSMOE = "hc-smoe", "hc-smoe-single", "kmeans-outputs", "m-smoe"
PRUNING = ("f-prune", "s-prune", "o-prune")
COMPETITORS = (*PRUNING, MSMOE)
SIGMAS = (0.2, 0.5, 1.0)
ROUTER_KINDS = ("random", "aligned")
#: The language model's own loss, beside the methods' in claim 6.
UNCOMPRESSED = "uncompressed"
CLOSE = 0.05  # "close": mean relative errors at most this far apart
FLOOR = 0.8  # at σ = 1 every method's error is at least this
_LABEL = re.compile(r"^(?:(lm) )?(random|aligned) s=([0-9.]+)$")

#: One metric per draw: (seed, episode) -> value.
Draws = dict[tuple[int, int], float]


def _summary(draws: Draws) -> dict[str, Any]:
    """Mean and 95% CI (bootstrap stratified by run seed) of per-draw values."""
    keys = sorted(draws)
    values = np.array([draws[key] for key in keys])
    return summarize(values, strata=np.array([seed for seed, _ in keys]))


def _paired(minuend: Draws, subtrahend: Draws) -> Draws:
    """Per-draw ``minuend − subtrahend`` over the draws both have."""
    return {key: minuend[key] - subtrahend[key] for key in sorted(set(minuend) & set(subtrahend))}


def claims(scorecard: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The spec's claims on a run of ``scenarios/claims/hc_smoe.yaml``.

    Environments are read from their labels (``"<router> s=<sigma>"`` for the layer task,
    ``"lm <router> s=<sigma>"`` for the language model) and agents by their labels
    (:data:`HC`, :data:`SINGLE`, :data:`KMEANS`, :data:`MSMOE` and :data:`PRUNING`). The numbers
    come from ``records``: every agent compresses the same draws (episode seeds are shared), so
    differences are taken draw by draw and bootstrapped (stratified by run seed).
    """
    del scorecard  # the per-draw records carry everything, paired
    metric: dict[tuple[str, str, float], dict[str, Draws]] = {}
    for record in records:
        match = _LABEL.match(record["env_id"])
        if match is None:
            continue
        task, router, sigma = match.group(1) or "layer", match.group(2), float(match.group(3))
        name = "loss" if task == "lm" else "relative_error"
        value = record["metrics"].get(name)
        draw = (record["seed"], record["episode"])
        per_agent = metric.setdefault((task, router, sigma), {})
        if value is not None and np.isfinite(value):
            per_agent.setdefault(record["agent"], {})[draw] = value
        if task == "lm" and "loss_original" in record["metrics"]:
            per_agent.setdefault(UNCOMPRESSED, {})[draw] = record["metrics"]["loss_original"]

    def layer(router: str, sigma: float) -> dict[str, Draws]:
        return metric.get(("layer", router, sigma), {})

    return {
        "source": "Chen et al., ICML 2025 (spec methods.md §3, grade B)",
        "claims": [
            _beats_claim(layer),
            _margin_claim(layer),
            _floor_claim(layer),
            _linkage_claim(layer),
            _kmeans_claim(layer),
            _language_model_claim(metric),
        ],
    }


def _beats_claim(layer: Any) -> dict[str, Any]:
    text = (
        "at σ = 0.2, under both routers, HC-SMoE (average linkage) has lower relative error than "
        "F-, S- and O-prune and M-SMoE-like grouping: every paired difference (theirs − HC's) "
        "has its 95% CI above 0 (spec: ≈ 0.27 vs ≥ 0.85 with the random router)"
    )
    numbers: dict[str, Any] = {}
    verdicts = []
    for router in ROUTER_KINDS:
        found = layer(router, 0.2)
        if HC not in found or not all(agent in found for agent in COMPETITORS):
            return claim(1, text, "not run", **numbers)
        errors = {agent: _summary(found[agent]) for agent in (HC, *COMPETITORS)}
        gaps = {agent: _summary(_paired(found[agent], found[HC])) for agent in COMPETITORS}
        numbers[router] = {"relative_error": errors, "difference_to_hc": gaps}
        verdicts.append(all(gap["ci95"][0] > 0 for gap in gaps.values()))
    return claim(1, text, "pass" if all(verdicts) else "fail", **numbers)


def _margins(found: Mapping[str, Draws]) -> Draws:
    """Per draw: the best competitor's error minus HC-SMoE's."""
    shared = set(found[HC]).intersection(*(found[agent] for agent in COMPETITORS))
    return {
        key: min(found[agent][key] for agent in COMPETITORS) - found[HC][key]
        for key in sorted(shared)
    }


def _margin_claim(layer: Any) -> dict[str, Any]:
    text = (
        "HC-SMoE's margin (the best of F-, S-, O-prune and M-SMoE's error minus HC's, per draw) "
        "shrinks as σ grows 0.2 → 0.5 → 1.0, under both routers"
    )
    numbers: dict[str, Any] = {}
    verdicts = []
    for router in ROUTER_KINDS:
        sweep = {sigma: layer(router, sigma) for sigma in SIGMAS}
        if not all(HC in found and set(COMPETITORS) <= set(found) for found in sweep.values()):
            return claim(2, text, "not run", **numbers)
        margins = {sigma: _summary(_margins(found)) for sigma, found in sweep.items()}
        numbers[router] = {f"s={sigma:g}": margin for sigma, margin in margins.items()}
        means = [margins[sigma]["mean"] for sigma in SIGMAS]
        verdicts.append(all(a > b for a, b in itertools.pairwise(means)))
    return claim(2, text, "pass" if all(verdicts) else "fail", **numbers)


def _floor_claim(layer: Any) -> dict[str, Any]:
    text = f"at σ = 1 every method's mean relative error is at least {FLOOR}, under both routers"
    numbers: dict[str, Any] = {}
    for router in ROUTER_KINDS:
        found = layer(router, 1.0)
        if HC not in found or not set(COMPETITORS) <= set(found):
            return claim(3, text, "not run", **numbers)
        numbers[router] = {agent: _summary(draws) for agent, draws in sorted(found.items())}
    means = [summary["mean"] for by_agent in numbers.values() for summary in by_agent.values()]
    return claim(3, text, "pass" if min(means) >= FLOOR else "fail", **numbers)


def _linkage_claim(layer: Any) -> dict[str, Any]:
    text = (
        f"average and single linkage are close: mean relative errors within {CLOSE} of each "
        "other at every σ and router run"
    )
    numbers: dict[str, Any] = {}
    for router in ROUTER_KINDS:
        for sigma in SIGMAS:
            found = layer(router, sigma)
            if HC in found and SINGLE in found:
                numbers[f"{router} s={sigma:g}"] = {
                    HC: _summary(found[HC]),
                    SINGLE: _summary(found[SINGLE]),
                    "single_minus_average": _summary(_paired(found[SINGLE], found[HC])),
                }
    if not numbers:
        return claim(4, text, "not run")
    close = all(abs(entry["single_minus_average"]["mean"]) <= CLOSE for entry in numbers.values())
    return claim(4, text, "pass" if close else "fail", **numbers)


def _kmeans_claim(layer: Any) -> dict[str, Any]:
    text = "K-means on the same expert outputs beside hierarchical clustering (recorded)"
    numbers = {
        f"{router} s={sigma:g}": _summary(_paired(found[KMEANS], found[HC]))
        for router in ROUTER_KINDS
        for sigma in SIGMAS
        if KMEANS in (found := layer(router, sigma)) and HC in found
    }
    return claim(5, text, "recorded" if numbers else "not run", kmeans_minus_hc=numbers)


def _language_model_claim(metric: Mapping[tuple[str, str, float], dict[str, Draws]]) -> dict:
    text = (
        "downstream: held-out byte loss (nats) of the tiny MoE language model with its layer "
        f"compressed to the same expert budget, per method and {UNCOMPRESSED}, and each loss "
        "minus HC-SMoE's (recorded)"
    )
    numbers = {}
    for (task, router, sigma), found in sorted(metric.items()):
        if task != "lm":
            continue
        entry: dict[str, Any] = {agent: _summary(draws) for agent, draws in sorted(found.items())}
        if HC in found:
            entry["minus_hc"] = {
                agent: _summary(_paired(draws, found[HC]))
                for agent, draws in sorted(found.items())
                if agent != HC
            }
        numbers[f"lm {router} s={sigma:g}"] = entry
    return claim(6, text, "recorded" if numbers else "not run", **numbers)
