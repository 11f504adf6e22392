"""Exhaustive search of an episode's action tree: C-3PO's teacher paths and the oracle.

C-3PO seeds its proxy with paths found by tree-structured rollouts with a large model as the
proxy (Chen et al., ICML 2025); the action tree of ``Methods/ProxyRAG-v0`` is small enough to
search outright, through the environment's ``get_state`` / ``set_state``. At each node every
choice is tried: the three strategies, every distinct candidate query, keeping no passage or
any single one, retrieving again or handing over. (Keeping a single passage suffices to reach
any answer the reader can give; the teacher's filter label is then every passage that works
alone.) A node's value is whether the reader can still be made correct from it, then how few
steps it takes; the teacher path is the shortest successful one.

:class:`TreeSearch` memoises node values per question, so states reached by different queries
(the same top 10) are searched once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omnigym.envs.methods.c3po.env import MAX_RETRIEVALS, TOP_K

from .proxy import DECIDER, FILTER, QUERY, ROUTER

FAIL = (False, 0)


@dataclass
class Decision:
    """One teacher decision: the observation, the role, and the target: a probability vector
    over the choices (router 3, query 16, decider 2) or per-passage keep labels (filter)."""

    observation: dict[str, Any]
    role: int
    target: list[float]


@dataclass
class TreeSearch:
    """Search the action tree of the episode ``env`` (unwrapped) is playing."""

    env: Any
    memo: dict[tuple, tuple[bool, int]] = field(default_factory=dict)
    calls: int = 0

    def _key(self, state: dict) -> tuple:
        return (
            state["split"],
            state["question"],
            state["role"],
            state["strategy"],
            tuple(state["docs"]),
            tuple(state["kept"]),
            state["retrievals"],
        )

    def choices(self, state: dict, observation: dict) -> list[dict[str, Any]]:
        """The actions tried at this node (module docstring)."""
        role = state["role"]
        if role == ROUTER:
            return [{"router": strategy} for strategy in range(3)]
        if role == QUERY:
            return [{"query": i} for i, span in enumerate(observation["spans"]) if span]
        if role == FILTER:
            keeps = [np.zeros(TOP_K, dtype=np.int8)]
            for slot, doc in enumerate(state["docs"]):
                if doc not in state["kept"]:
                    flags = np.zeros(TOP_K, dtype=np.int8)
                    flags[slot] = 1
                    keeps.append(flags)
            return [{"keep": flags} for flags in keeps]
        if state["retrievals"] >= MAX_RETRIEVALS:
            return [{"decide": 1}]
        return [{"decide": 1}, {"decide": 0}]

    def step(self, state: dict, action: dict) -> tuple[dict, dict, float, bool]:
        """Play ``action`` from ``state``: (next state, observation, reward, done)."""
        self.env.set_state(state)
        observation, reward, done, _, _ = self.env.step(action)
        self.calls += 1
        return self.env.get_state(), observation, reward, done

    def value(self, state: dict, observation: dict) -> tuple[bool, int]:
        """(success reachable, fewest steps to it) from ``state``."""
        key = self._key(state)
        if key not in self.memo:
            best = FAIL
            for action in self.choices(state, observation):
                outcome = self.child_value(state, action)
                if _better(outcome, best):
                    best = outcome
                # Answering at once (one step) cannot be beaten.
                if best == (True, 1):
                    break
            self.memo[key] = best
        return self.memo[key]

    def child_value(self, state: dict, action: dict) -> tuple[bool, int]:
        """The value of playing ``action`` from ``state``, the step counted."""
        child, observation, reward, done = self.step(state, action)
        if done:
            return (reward > 0, 1)
        success, steps = self.value(child, observation)
        return (success, steps + 1) if success else FAIL

    def best_action(self, state: dict, observation: dict) -> tuple[dict, Decision | None]:
        """The action of the shortest successful path from ``state`` and its teacher decision
        (None when no path succeeds; the action is then the first choice)."""
        choices = self.choices(state, observation)
        outcomes = [self.child_value(state, action) for action in choices]
        best = FAIL
        for outcome in outcomes:
            if _better(outcome, best):
                best = outcome
        if not best[0]:
            return choices[0], None
        optimal = [a for a, o in zip(choices, outcomes, strict=True) if o == best]
        role = state["role"]
        if role == FILTER:
            flags = np.zeros(TOP_K, dtype=np.int8)
            for action in optimal:
                flags |= action["keep"]
            union = {"keep": flags}
            action = union if self.child_value(state, union) == best else optimal[0]
            return action, Decision(observation, role, flags.astype(float).tolist())
        key, size = {ROUTER: ("router", 3), QUERY: ("query", 16), DECIDER: ("decide", 2)}[role]
        target = np.zeros(size)
        for action in optimal:
            target[action[key]] = 1.0
        return optimal[0], Decision(observation, role, (target / target.sum()).tolist())

    def teacher_path(self, observation: dict) -> list[Decision]:
        """The teacher decisions of the episode from its current state (empty when the reader
        cannot be made correct)."""
        decisions = []
        state = self.env.get_state()
        while True:
            action, decision = self.best_action(state, observation)
            if decision is None:
                return []
            decisions.append(decision)
            state, observation, _, done = self.step(state, action)
            if done:
                return decisions


def _better(outcome: tuple[bool, int], best: tuple[bool, int]) -> bool:
    if outcome[0] != best[0]:
        return outcome[0]
    return outcome[0] and outcome[1] < best[1]
