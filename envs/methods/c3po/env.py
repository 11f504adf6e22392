"""``Methods/ProxyRAG-v0``: a small proxy between a frozen retriever and a frozen reader.

Follows Chen, Liao, Yu, Wang, Qiao, Yang, Zhao, Fan, "C-3PO: Compact Plug-and-Play Proxy
Optimization to Achieve Human-like Retrieval-Augmented Generation", ICML 2025
(``docs/c3po.md``): the agent is the proxy, and it plays C-3PO's roles in turn. The reader
stands for the large language model, the retriever for the search engine; neither learns.

Departures from the paper, and why:

- a seeded synthetic world (:mod:`.world`) replaces Wikipedia and the QA datasets, so that the
  task is built and scored on a CPU in seconds and "known" facts, distractors and two-hop
  questions are controlled;
- the proxy picks its query among at most 16 candidate spans (the question, the roadmap's
  sub-questions with the bridge filled in by an entity named in the kept passages, entity
  names) instead of writing free text, so that the action tree is small enough to search
  exhaustively for teacher paths;
- the query-writing and document-filtering parts of C-3PO's Information Filter are two roles
  here (``query`` then ``filter``), since the documents to filter exist only after the query;
- C-3PO caps the tree depth at 9: here a planning episode retrieves at most twice (router, then
  decider-query-filter twice, then the final decider is 8 steps; a third retrieval would make
  11), so the decider hands over to the reader once two retrievals are done, whatever it says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from omnigym.envs.methods.core import check_solution
from omnigym.spaces import describe, text_space

from .readers import READERS, is_correct
from .retrievers import RETRIEVERS, TOP_K
from .world import SPLITS, Question, build_world

ROLES = ("router", "query", "filter", "decider")
ACTION_KEYS = {"router": "router", "query": "query", "filter": "keep", "decider": "decide"}
STRATEGIES = ("no retrieval", "retrieval", "planning")
NO_RETRIEVAL, RETRIEVAL, PLANNING = range(3)
RETRIEVE, ANSWER = range(2)
MAX_SPANS = 16
MAX_KEPT = 10
MAX_RETRIEVALS = 2


def _copied(state: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an episode state (its lists copied, its other values immutable)."""
    return {key: list(value) if isinstance(value, list) else value for key, value in state.items()}


class ProxyRAG(gym.Env):
    """Answer a question through a frozen retriever and a frozen reader, acting as C-3PO's proxy.

    ## Description

    Each episode is one question of a seeded synthetic world (people, cities, countries,
    companies and universities, their facts written as about 3,000 passages with paraphrases
    and distractors; ``docs/c3po.md``). The proxy plays four roles, one per step, as the
    observation's ``role`` says:

    - **router** (first step): answer directly (*no retrieval*), retrieve once (*retrieval*), or
      *plan* (the reader writes a roadmap of sub-questions, then the decider and the filter
      iterate);
    - **query**: pick the retrieval query among the candidate spans; the retriever returns the
      top 10 passages;
    - **filter**: keep some of those passages; kept passages go to the reader (at most 10);
    - **decider** (planning only): retrieve again, or hand the kept passages to the reader.

    The reader answers when the router skips retrieval, after the filter in retrieval mode, and
    when the decider hands over (or after the second retrieval of a planning episode).

    ## Action space

    ``Dict(router: Discrete(3), query: Discrete(16), keep: MultiBinary(10), decide:
    Discrete(2))``; only the current role's key is read (``router``, ``query``, ``keep`` or
    ``decide``) and an action may hold that key alone. Router 0/1/2 = no retrieval / retrieval /
    planning; decide 0/1 = retrieve / answer. A query naming an empty span slot queries with
    the question; keep flags on empty document slots are ignored.

    ## Observation space

    ``Dict`` with ``role`` Discrete(4) (router, query, filter, decider), ``question`` (text),
    ``roadmap`` (the reader's sub-questions, one a line; empty unless planning), ``docs`` (the
    last retrieval's top 10 passages while the filter acts, else empty), ``kept`` (the passages
    kept so far, 10 slots), ``spans`` (16 candidate queries, empty slots last) and
    ``retrievals`` Discrete(3).

    ## Rewards

    1 at the end if the reader's answer contains the gold answer after SQuAD normalisation
    (C-3PO's accuracy), else 0.

    ## Episode end

    Terminates when the reader answers: after 1 step (no retrieval), 3 (retrieval) or at most 8
    (planning). Final ``info``: ``success`` (correct), ``answer`` and ``metrics``:
    ``accuracy``, ``strategy`` (0/1/2), ``retrievals``, ``docs_to_reader``, ``reader_calls``,
    ``hops``, ``known`` (the reader's memory holds the facts the question needs), ``steps``.

    ## Arguments

    - ``retriever``: ``"bm25"`` (default, ``bm25s``) or ``"minilm"`` (all-MiniLM-L6-v2);
    - ``reader``: ``"rule"`` (default, deterministic) or ``"smollm2"`` (SmolLM2-135M-Instruct);
    - ``ood``: passages and questions in the held-out wording;
    - ``split``: ``"test"`` (default, 1,000 questions) or ``"train"`` (6,000): the questions
      ``reset`` draws from;
    - ``world_seed``: the world (entities, facts, passages, questions).

    ``reset(options={"question": i, "split": s})`` asks question ``i`` of split ``s``.
    ``get_state()`` / ``set_state(state)`` save and restore an episode (tree rollouts).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        retriever: str = "bm25",
        reader: str = "rule",
        ood: bool = False,
        split: str = "test",
        world_seed: int = 0,
    ):
        if retriever not in RETRIEVERS:
            raise ValueError(f"retriever must be one of {sorted(RETRIEVERS)}, got {retriever!r}")
        if reader not in READERS:
            raise ValueError(f"reader must be one of {sorted(READERS)}, got {reader!r}")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if not isinstance(ood, bool):
            raise ValueError(f"ood must be a bool, got {ood!r}")
        if not isinstance(world_seed, int) or world_seed < 0:
            raise ValueError(f"world_seed must be an int >= 0, got {world_seed!r}")
        self.split = split
        self.world = build_world(world_seed, ood)
        self.retriever = RETRIEVERS[retriever](self.world.passages)
        self.reader = READERS[reader](self.world)
        passage, line = text_space(200), text_space(200)
        self.observation_space = spaces.Dict(
            {
                "role": spaces.Discrete(len(ROLES)),
                "question": line,
                "roadmap": text_space(400),
                "docs": spaces.Tuple([passage] * TOP_K),
                "kept": spaces.Tuple([passage] * MAX_KEPT),
                "spans": spaces.Tuple([line] * MAX_SPANS),
                "retrievals": spaces.Discrete(MAX_RETRIEVALS + 1),
            }
        )
        self.action_space = spaces.Dict(
            {
                "router": spaces.Discrete(len(STRATEGIES)),
                "query": spaces.Discrete(MAX_SPANS),
                "keep": spaces.MultiBinary(TOP_K),
                "decide": spaces.Discrete(2),
            }
        )
        self._state: dict[str, Any] | None = None

    # ---- the episode state -------------------------------------------------------------------

    @property
    def question(self) -> Question:
        """The current question."""
        state = self._state
        return self.world.questions[state["split"]][state["question"]]

    def get_state(self) -> dict[str, Any]:
        """A copy of the episode's state, for :meth:`set_state`."""
        if self._state is None:
            raise RuntimeError("get_state() before reset()")
        return _copied(self._state)

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore an episode saved by :meth:`get_state` (:meth:`observation` shows it)."""
        self._state = _copied(state)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        split = options.get("split", self.split)
        if split not in SPLITS:
            raise ValueError(f"options['split'] must be one of {SPLITS}, got {split!r}")
        count = len(self.world.questions[split])
        index = options.get("question")
        if index is None:
            index = int(self.np_random.integers(count))
        elif not 0 <= int(index) < count:
            raise ValueError(f"options['question'] must be in [0, {count}), got {index!r}")
        self._state = {
            "split": split,
            "question": int(index),
            "role": 0,
            "strategy": -1,
            "roadmap": [],
            "docs": [],
            "kept": [],
            "retrievals": 0,
            "steps": 0,
            "done": False,
        }
        return self.observation(), {"invalid_action": False}

    # ---- what the proxy sees -----------------------------------------------------------------

    def spans(self) -> list[str]:
        """The candidate queries (at most 16, no duplicates): the question, the roadmap's
        sub-questions (the bridge one once per entity named in the kept passages), the entity
        names of the question, then those of the kept passages."""
        state, question = self._state, self.question
        passages = self.world.passages
        named = self.world.mentions(question.text)
        bridges = []
        for index in state["kept"]:
            bridges += [n for n in self.world.mentions(passages[index]) if n not in named]
        found = [question.text]
        for step in state["roadmap"]:
            found += [step.replace("#1", b) for b in bridges] if "#1" in step else [step]
        found += [*named, *bridges]
        return list(dict.fromkeys(found))[:MAX_SPANS]

    def observation(self) -> dict[str, Any]:
        """What the proxy sees now."""
        state, passages = self._state, self.world.passages
        docs = [passages[i] for i in state["docs"]]
        kept = [passages[i] for i in state["kept"]]
        spans = self.spans()
        return {
            "role": state["role"],
            "question": self.question.text,
            "roadmap": "\n".join(state["roadmap"]),
            "docs": tuple(docs + [""] * (TOP_K - len(docs))),
            "kept": tuple(kept + [""] * (MAX_KEPT - len(kept))),
            "spans": tuple(spans + [""] * (MAX_SPANS - len(spans))),
            "retrievals": state["retrievals"],
        }

    # ---- acting ------------------------------------------------------------------------------

    def _checked(self, action: Any) -> Any:
        """The current role's entry of ``action``, checked against its space."""
        role = ROLES[self._state["role"]]
        key = ACTION_KEYS[role]
        if not isinstance(action, Mapping):
            raise ValueError(
                f"action {action!r} is not in the action space {describe(self.action_space)}: "
                f"give a dict with the {role}'s key {key!r}"
            )
        unknown = sorted(set(action) - set(self.action_space.spaces))
        if unknown:
            raise ValueError(
                f"action keys {unknown} are not in the action space {describe(self.action_space)}"
            )
        if key not in action:
            raise ValueError(
                f"the {role} acts now: the action needs the key {key!r} (got keys {sorted(action)})"
            )
        space, value = self.action_space[key], action[key]
        if isinstance(space, spaces.Discrete) and type(value) is int and 0 <= value < space.n:
            return value  # the common case, checked without NumPy
        value, finite = check_solution(value, space)
        if not finite:
            raise ValueError(f"action[{key!r}] must be finite, got {action[key]!r}")
        return value

    def step(self, action: Any):
        if self._state is None or self._state["done"]:
            raise RuntimeError("step() before reset() or after the episode ended")
        value = self._checked(action)
        state = self._state
        role = ROLES[state["role"]]
        state["steps"] += 1
        answer_now = False
        if role == "router":
            state["strategy"] = int(value)
            if value == NO_RETRIEVAL:
                answer_now = True
            elif value == RETRIEVAL:
                state["role"] = ROLES.index("query")
            else:
                state["roadmap"] = self.world.plan(self.question)
                state["role"] = ROLES.index("decider")
        elif role == "query":
            spans = self.spans()
            query = spans[value] if value < len(spans) else spans[0]
            state["docs"] = list(self.retriever.search(query, TOP_K))
            state["retrievals"] += 1
            state["role"] = ROLES.index("filter")
        elif role == "filter":
            chosen = [doc for doc, flag in zip(state["docs"], value, strict=False) if flag]
            for doc in chosen:
                if doc not in state["kept"] and len(state["kept"]) < MAX_KEPT:
                    state["kept"].append(doc)
            state["docs"] = []
            answer_now = state["strategy"] == RETRIEVAL
            state["role"] = ROLES.index("decider")
        else:
            answer_now = value == ANSWER or state["retrievals"] >= MAX_RETRIEVALS
            state["role"] = ROLES.index("query")
        if not answer_now:
            return self.observation(), 0.0, False, False, {"invalid_action": False}
        return self._finish()

    def _finish(self):
        state, question = self._state, self.question
        kept = [self.world.passages[i] for i in state["kept"]]
        answer = self.reader.answer(question, kept)
        correct = is_correct(answer, question.answer)
        state["done"] = True
        metrics = {
            "accuracy": float(correct),
            "strategy": float(state["strategy"]),
            "retrievals": float(state["retrievals"]),
            "docs_to_reader": float(len(kept)),
            "reader_calls": 1.0 + (state["strategy"] == PLANNING),
            "hops": float(question.hops),
            "known": float(question.known),
            "steps": float(state["steps"]),
        }
        info = {"invalid_action": False, "success": correct, "answer": answer, "metrics": metrics}
        return self.observation(), float(correct), True, False, info
