"""HC-SMoE, its grouping and pruning baselines on ``Methods/MoEMerging-v0``.

Chen, Liu, Sun, Chao, Hsu, Lee, "Retraining-Free Merging of Sparse MoE via Hierarchical
Clustering", ICML 2025 (``docs/methods.md``).

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

Departures from the paper: M-SMoE's grouping is its published rule (dominant experts by
frequency, router-logit cosine similarity) without its group-size limit, and without the
permutation alignment and low-rank compression that M-SMoE adds after merging: the comparison
is of groupings under one merging rule, as in the paper's ablations. The paper merges all
layers of a model at once; here there is one layer. K-means uses scikit-learn's k-means++
rather than the paper's own implementation.
"""

from __future__ import annotations

import itertools
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

LINKAGES = ("average", "single", "complete")
#: O-prune searches on this many calibration tokens.
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
