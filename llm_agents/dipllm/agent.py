"""The DipLLM-lite agent: plays one power with a DipLLM-lite model, trains it (behaviour cloning,
then equilibrium fine-tuning) and saves it as a checkpoint folder.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025): the factorised head orders the power's locations one at a time in the
env's sorted location order, each from its legal orders only; fine-tuning moves each Q group's
decision toward the equilibrium policy π* ∝ π_base·exp(Q/λ) over its candidates (or, in the
``finetune_target="behaviour"`` ablation, weighs the data's order by exp(Q/λ)). The package
docstring (:mod:`omnigym.llm_agents.dipllm`) gives the departures.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from omnigym.agents.diplomacy.base import PowerAgent
from omnigym.llm_agents.policy import sample_index

from .config import ModelConfig, TrainConfig
from .data import Dataset
from .losses import joint_logits, sample_joint
from .model import DipLLMModel, build_model, count_parameters
from .q import read_q
from .text import ASK, BOS, NONE, UNK, Tokenizer, adjustment_count, board_text, choices
from .training import equilibrium_targets, train

WEIGHTS_FILE = "weights.pt"
CONFIG_FILE = "config.json"
FINETUNE_TARGETS = ("equilibrium", "behaviour")


class DipLLMAgent(PowerAgent):
    """An omnigym agent that plays one power with a DipLLM-lite model.

    ``act(observation, info)`` returns order strings, or the ``index`` action when
    ``info["action_format"] == "index"`` (through
    :func:`omnigym.envs.diplomacy.orders.orders_to_action`); every order is one of the
    location's choices, so it is always legal. The factorised head picks each location's
    order in turn (the most probable one, or a sample at ``temperature > 0``); the joint head
    picks the best of ``joint_candidates`` joint actions drawn uniformly.

    Args:
        env: the environment to be played (its map sets the vocabulary of a new model).
        seed: seeds the model's initialisation, the training minibatches and every draw.
        checkpoint: a folder written by :meth:`save`; its config replaces ``head`` and ``model``.
        head: "factorised" or "joint", for a new model.
        lam: λ of the fine-tuning stage's target (``math.inf``: π_base over the candidates, or
            weights 1 for the behaviour target).
        games: train on the data file's first ``games`` games only (all when None).
        finetune: epochs of the fine-tuning stage of :meth:`learn` over its turns (0: none, the
            behaviour-cloning variants; DipLLM fine-tunes for 5).
        finetune_lr: its AdamW learning rate (DipLLM: 2e-4).
        finetune_target: ``"equilibrium"`` (DipLLM's: cross-entropy toward π* ∝
            π_base·exp(Q/λ) over each group's candidates, π_base the model before fine-tuning)
            or ``"behaviour"`` (the ablation: the data's order weighted by exp(Q/λ) normalised
            per group).
        temperature: 0 plays the most probable order; above 0, samples at that temperature.
        joint_candidates: size of the joint head's list, in training and play.
        batch_size, lr: training minibatch (turns) and AdamW learning rate.
        model: ``ModelConfig`` fields for a new model (``d_model``, ``n_layers``, ...).
        map_name: the map of a new model when no ``env`` is given (default "standard").
        threads: torch threads of this process, set once (None: leave as is).
    """

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        checkpoint: str | os.PathLike | None = None,
        head: str = "factorised",
        lam: float = math.inf,
        games: int | None = None,
        finetune: int = 0,
        finetune_lr: float = 2e-4,
        finetune_target: str = "equilibrium",
        temperature: float = 0.0,
        joint_candidates: int = 64,
        batch_size: int = 16,
        lr: float = 1e-3,
        model: Mapping[str, Any] | None = None,
        map_name: str | None = None,
        threads: int | None = None,
    ):
        if threads is not None:
            torch.set_num_threads(threads)
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        if not float(lam) > 0:
            raise ValueError(f"lam must be > 0 (.inf for weights 1), got {lam!r}")
        if not isinstance(finetune, int) or finetune < 0:
            raise ValueError(f"finetune must be an int >= 0, got {finetune!r}")
        if finetune_target not in FINETUNE_TARGETS:
            raise ValueError(
                f"finetune_target must be one of {list(FINETUNE_TARGETS)}, got {finetune_target!r}"
            )
        super().__init__(seed)
        self.lam = float(lam)
        self.games = games
        self.finetune = finetune
        self.finetune_lr = finetune_lr
        self.finetune_target = finetune_target
        self.temperature = float(temperature)
        self.batch_size = batch_size
        self.lr = lr
        self.joint_candidates = joint_candidates
        self.losses: list[float] = []
        self.finetune_losses: list[float] = []
        if checkpoint is not None:
            self.load(checkpoint)
            return
        if map_name is None:
            map_name = getattr(getattr(env, "unwrapped", env), "map_name", "standard")
        self.map_name = map_name
        self.tokenizer = Tokenizer.for_map(map_name)
        self.model = build_model(ModelConfig(head=head, **(model or {})), len(self.tokenizer), seed)
        self.model.eval()

    @property
    def head(self) -> str:
        return self.model.config.head

    # ---- playing

    @torch.inference_mode()
    def orders(self, info: Mapping[str, Any]) -> list[str]:
        """This phase's orders for the power of ``info`` (``<none>`` choices left out)."""
        tokens = [BOS, *self.tokenizer.encode(board_text(info))]
        legal = [info["possible_orders"][location] for location in info["orderable_locations"]]
        adjust = adjustment_count(info)
        if self.head == "joint":
            chosen = self._joint_orders(tokens, legal, adjust)
        else:
            chosen = self._factorised_orders(tokens, info["orderable_locations"], legal, adjust)
        return [order for order in chosen if order != NONE]

    def _factorised_orders(
        self, tokens: list[int], locations: Sequence[str], legal: Sequence[list[str]], adjust: int
    ) -> list[str]:
        model, tokenizer = self.model, self.tokenizer
        chosen: list[str] = []
        for location, options in zip(locations, legal, strict=True):
            options = choices(options, adjust, sum(order != NONE for order in chosen))
            tokens = [*tokens, ASK, tokenizer.ids.get(location, UNK)]
            if len(options) == 1:
                pick = options[0]
            else:
                hidden = model.hidden(torch.as_tensor([tokens]))[0, -1:]
                vectors = model.embed_orders(torch.as_tensor(tokenizer.order_slots(options)))
                logits = model.scores(hidden, vectors[None])[0]
                pick = options[sample_index(logits.numpy(), self.temperature, self._rng)]
            chosen.append(pick)
            tokens += tokenizer.order_words(pick)
        return chosen

    def _joint_orders(self, tokens: list[int], legal: Sequence[list[str]], adjust: int):
        model, tokenizer = self.model, self.tokenizer
        joints = [sample_joint(legal, adjust, self._rng) for _ in range(self.joint_candidates)]
        slots = torch.as_tensor(tokenizer.order_slots([o for joint in joints for o in joint]))
        vectors = model.embed_orders(slots).reshape(len(joints), len(legal), -1).sum(1)
        logits = joint_logits(model, [tokens], vectors[None])[0]
        return joints[sample_index(logits.numpy(), self.temperature, self._rng)]

    # ---- training

    def learn(
        self, data: str | os.PathLike, budget: int, q: str | os.PathLike | None = None
    ) -> dict[str, Any]:
        """Train on the data file ``data`` (its first ``games`` games) in two stages:

        1. behaviour cloning: ``budget`` updates on every decision, weight 1 (none when
           ``budget`` is 0, e.g. after :meth:`init_from` a behaviour-cloning checkpoint);
        2. with the Q file ``q``: ``finetune`` epochs of fine-tuning on the turns with a Q group
           (⌈epochs · turns / batch size⌉ updates) toward ``finetune_target``: each grouped
           decision's equilibrium policy π* ∝ π_base·exp(Q/λ) over its candidates, π_base the
           model as stage 1 left it; or, in the behaviour ablation, its data order weighted by
           exp(Q/λ) normalised per group. The other decisions only condition (weight 0).

        Returns what was trained on: games, turns, decisions, Q-grouped decisions and turns,
        updates of each stage, the target's mean total variation from π_base (equilibrium
        target), parameters and seconds.
        """
        if q is not None and not self.finetune:
            raise ValueError("a Q file was given but finetune is 0: set finetune updates")
        start = time.perf_counter()
        dataset = Dataset.load(data, self.tokenizer, self.games)
        stats = {
            "games": len({turn.key[0] for turn in dataset.turns}),
            "turns": len(dataset.turns),
            "decisions": dataset.decisions(),
            "updates": budget,
            "finetune_target": self.finetune_target if q is not None else None,
            "q_weighted": 0,
            "finetune_turns": 0,
            "finetune_updates": 0,
            "target_shift": None,
            "parameters": count_parameters(self.model),
        }
        common = {"batch_size": self.batch_size, "joint_candidates": self.joint_candidates}
        if budget:
            config = TrainConfig(updates=budget, lr=self.lr, seed=self.seed, **common)
            self.losses += train(self.model, dataset, config)
        if q is not None:
            if self.finetune_target == "equilibrium":
                stats["q_weighted"] = dataset.set_groups(read_q(q))
            else:
                stats["q_weighted"] = dataset.set_weights(read_q(q), self.lam, default=0.0)
            dataset.keep_weighted()
            if not dataset.turns:
                raise ValueError(f"{q}: no Q group falls in the {stats['games']} games trained on")
            if self.finetune_target == "equilibrium":
                stats["target_shift"] = equilibrium_targets(self.model, dataset, self.lam)
            updates = math.ceil(self.finetune * len(dataset.turns) / self.batch_size)
            stats["finetune_turns"] = len(dataset.turns)
            stats["finetune_updates"] = updates
            # Seeded apart from stage 1, so its minibatches are not the first ones replayed.
            seed = int(np.random.SeedSequence([self.seed, 4]).generate_state(1)[0])
            config = TrainConfig(updates=updates, lr=self.finetune_lr, seed=seed, **common)
            self.finetune_losses += train(self.model, dataset, config)
        return {**stats, "seconds": time.perf_counter() - start}

    def init_from(self, checkpoint: str | os.PathLike) -> None:
        """Start from the weights of another checkpoint of the same model config (the
        behaviour-cloning counterpart, before fine-tuning)."""
        base = DipLLMAgent(checkpoint=checkpoint)
        if base.model.config != self.model.config or base.tokenizer.vocabulary != (
            self.tokenizer.vocabulary
        ):
            raise ValueError(f"{checkpoint}: its model config or vocabulary differs from this one")
        self.model.load_state_dict(base.model.state_dict())

    # ---- checkpoints

    def save(self, path: str | os.PathLike) -> None:
        """Write ``weights.pt`` (the state dict) and ``config.json`` (model config, vocabulary,
        λ, the fine-tuning target and the games trained on) into the folder ``path``."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.model.state_dict(), folder / WEIGHTS_FILE)
        config = {
            "model": asdict(self.model.config),
            "map_name": self.map_name,
            "vocabulary": self.tokenizer.vocabulary,
            "lam": None if math.isinf(self.lam) else self.lam,
            "games": self.games,
            "finetune": self.finetune,
            "finetune_target": self.finetune_target,
        }
        (folder / CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")

    def load(self, path: str | os.PathLike) -> None:
        """Read a folder written by :meth:`save` (weights with ``weights_only=True``)."""
        folder = Path(path)
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
        known = {f.name for f in fields(ModelConfig)}
        model_config = ModelConfig(**{k: v for k, v in config["model"].items() if k in known})
        self.map_name = config["map_name"]
        self.tokenizer = Tokenizer(config["vocabulary"])
        self.lam = math.inf if config["lam"] is None else float(config["lam"])
        self.games = config["games"]
        self.finetune = config["finetune"]
        # checkpoints written before the equilibrium target was fine-tuned toward the behaviour
        self.finetune_target = config.get("finetune_target", "behaviour")
        self.model = DipLLMModel(model_config, len(self.tokenizer))
        state = torch.load(folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
        self.model.load_state_dict(state)
        self.model.eval()
