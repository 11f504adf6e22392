"""C-3PO and its baselines as agents of ``Methods/ProxyRAG-v0`` (``docs/c3po.md``).

- ``c3po`` (:class:`C3POAgent`): the proxy network (:mod:`.proxy`), trained by supervised
  fine-tuning on teacher paths and then tree-structured rollout RL (:mod:`.training`); greedy
  when it acts. ``strategy="no retrieval" | "retrieval" | "planning"`` forces its router (the
  forced-strategy ablation, no retraining);
- ``c3po-sft-only`` (:class:`SFTOnlyProxyAgent`): the same proxy after fine-tuning alone;
- ``c3po-outcome-rl`` (:class:`OutcomeRLProxyAgent`): fine-tuning, then RL on single sampled
  trajectories with the outcome as every action's reward, at the same environment-call budget;
- ``direct`` (:class:`DirectAgent`): no retrieval, the reader answers alone;
- ``standard-rag`` (:class:`StandardRAGAgent`): the question as the query, the top 5 passages
  to the reader;
- ``oracle-path`` (:class:`OraclePathAgent`): the first step of the shortest successful path,
  searched from the episode's state at every step (an upper bound that reads the environment's
  state).

A trained proxy's ``learn(env, budget)`` searches the teacher paths of the first
``sft_questions`` training questions, fine-tunes on them, then spends ``budget`` environment
calls on RL. Checkpoints: ``proxy.pt`` (the state dict, read with ``weights_only=True``) and
``proxy.json`` (settings and training record).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from omnigym.envs.methods.c3po.env import STRATEGIES, TOP_K

from .proxy import ROUTER, env_action, featurise
from .search import TreeSearch
from .training import C3POConfig, reinforce, sft, teacher_decisions

WEIGHTS_FILE = "proxy.pt"
SETTINGS_FILE = "proxy.json"


class C3POAgent:
    """The C-3PO proxy (module docstring). ``settings`` are :class:`~.training.C3POConfig`
    fields; ``checkpoint`` loads a saved proxy."""

    rollout: str | None = "tree"

    def __init__(
        self,
        env: Any = None,
        checkpoint: str | os.PathLike | None = None,
        strategy: str | None = None,
        **settings: Any,
    ):
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES} or None, got {strategy!r}")
        self.strategy = None if strategy is None else STRATEGIES.index(strategy)
        self.config = C3POConfig.from_settings(settings)
        self.network = self.config.network()
        self.network.eval()
        self.seed = 0
        self.record: dict[str, Any] = {}
        if checkpoint is not None:
            self.load(checkpoint)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        role = int(observation["role"])
        if role == ROUTER and self.strategy is not None:
            return {"router": self.strategy}
        return env_action(role, self.network.greedy(featurise([observation]))[0])

    # ---- training ----------------------------------------------------------------------------

    def fine_tune(self, env: Any) -> None:
        """Teacher paths of the first ``sft_questions`` training questions, then SFT."""
        torch.manual_seed(self.seed)
        self.network = self.config.network()
        decisions = teacher_decisions(env.unwrapped, range(self.config.sft_questions))
        self.record["sft_decisions"] = len(decisions)
        self.record["sft_loss"] = sft(self.network, decisions, self.config, self.seed)

    def reinforce(self, env: Any, budget: int) -> None:
        """RL with this agent's kind of rollout for ``budget`` environment calls (the last
        rollout may run past it: ``calls`` records those made)."""
        curve = reinforce(env.unwrapped, self.network, self.config, budget, self.rollout, self.seed)
        self.record["rl"] = {
            "rollout": self.rollout,
            "budget": budget,
            "calls": curve[-1][0],
            "curve": curve,
        }

    def learn(self, env: Any, budget: int) -> None:
        """Fine-tune on teacher paths, then RL for ``budget`` environment calls."""
        self.fine_tune(env)
        if self.rollout is not None:
            self.reinforce(env, budget)

    @property
    def learning_curve(self) -> list[tuple[int, float]]:
        """(environment calls, mean rollout reward) of the RL stage."""
        return self.record.get("rl", {}).get("curve", [])

    # ---- checkpoints -------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.network.state_dict(), folder / WEIGHTS_FILE)
        settings = {"config": self.config.as_dict(), "record": self.record}
        (folder / SETTINGS_FILE).write_text(json.dumps(settings, indent=1), encoding="utf-8")

    def load(self, path: str | os.PathLike) -> None:
        folder = Path(path)
        settings = json.loads((folder / SETTINGS_FILE).read_text(encoding="utf-8"))
        self.config = C3POConfig.from_settings(settings["config"])
        self.record = settings["record"]
        self.network = self.config.network()
        state = torch.load(folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
        self.network.load_state_dict(state)
        self.network.eval()


class SFTOnlyProxyAgent(C3POAgent):
    """The proxy after supervised fine-tuning alone (``learn`` ignores its budget)."""

    rollout = None


class OutcomeRLProxyAgent(C3POAgent):
    """The proxy fine-tuned, then trained on single trajectories with outcome reward."""

    rollout = "outcome"


class DirectAgent:
    """No retrieval: the reader answers from what it knows."""

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        return {"router": 0}


class StandardRAGAgent:
    """Retrieve once with the question, hand the top ``top_k`` passages to the reader."""

    def __init__(self, top_k: int = 5):
        if not 1 <= top_k <= TOP_K:
            raise ValueError(f"top_k must be in [1, {TOP_K}], got {top_k!r}")
        self.keep = np.zeros(TOP_K, dtype=np.int8)
        self.keep[:top_k] = 1

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        role = int(observation["role"])
        return ({"router": 1}, {"query": 0}, {"keep": self.keep.copy()}, {"decide": 1})[role]


class OraclePathAgent:
    """The first step of the shortest successful path from the current state (module
    docstring); when none succeeds it answers at once. Its search is kept for the episode
    (``reset`` drops it)."""

    def __init__(self, env: Any):
        self.env = env.unwrapped
        self.search: TreeSearch | None = None

    def reset(self, seed: int | None = None) -> None:
        self.search = None

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        state = self.env.get_state()
        if self.search is None:
            self.search = TreeSearch(self.env)
        action, _ = self.search.best_action(state, observation)
        self.env.set_state(state)
        return action
