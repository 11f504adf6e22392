"""DipLLM-lite's command line: play the bots' games, estimate unit-level Q, measure its noise,
train a model.

``python -m omnigym.llm_agents.dipllm data|q|noise|train``, one command per step of the
pipeline.

Follows DipLLM (Xu et al., "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025); the package docstring (:mod:`omnigym.llm_agents.dipllm`) describes the
pipeline.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from .agent import FINETUNE_TARGETS, DipLLMAgent
from .config import CONTINUATIONS, HEADS, QConfig
from .data import DataSpec, generate_data, read_phases
from .noise import q_noise
from .q import estimate_q, read_q, rollout_tasks


def positive_lam(text: str) -> float:
    """A command-line λ: a number > 0, ``inf`` for weights 1."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"lam must be > 0 (or inf), got {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m omnigym.llm_agents.dipllm", description=__doc__.splitlines()[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    data = commands.add_parser("data", help="play the bots' games and record every decision")
    data.add_argument("--games", type=int, required=True)
    data.add_argument("--seed", type=int, default=0)
    data.add_argument("--out", type=Path, required=True, help="FILE.jsonl.gz")
    data.add_argument("--max-year", type=int, default=1910)
    data.add_argument("--map", default="standard", choices=("standard", "pure"))
    data.add_argument("--workers", type=int, default=1)
    q = commands.add_parser("q", help="estimate unit-level Q by Monte Carlo rollouts")
    q.add_argument("--data", type=Path, required=True)
    q.add_argument("--out", type=Path, required=True, help="FILE.jsonl (appended, resumable)")
    q.add_argument("--policy", type=Path, help="a factorised checkpoint ranking the candidates")
    q.add_argument("--games", type=int, help="only the first GAMES games")
    q.add_argument("--groups", type=int, help="at most this many (state, location) groups")
    q.add_argument("--rollouts", type=int, default=4)
    q.add_argument("--top-k", type=int, default=4)
    q.add_argument("--horizon", type=int, default=2, help="years rolled out")
    q.add_argument("--sampled", type=int, default=0, help="candidates drawn from the policy")
    q.add_argument("--continuation", choices=CONTINUATIONS, default="data")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--workers", type=int, default=1)
    noise = commands.add_parser("noise", help="how well a Q file's rollouts order its candidates")
    noise.add_argument("--q", type=Path, required=True)
    noise.add_argument("--lam", type=positive_lam, default=0.5, help="λ of the targets compared")
    training = commands.add_parser("train", help="train a model and save its checkpoint")
    training.add_argument("--data", type=Path, required=True)
    training.add_argument("--out", type=Path, required=True, help="checkpoint folder")
    training.add_argument("--q", type=Path, help="Q file: fine-tune with equilibrium weights")
    training.add_argument("--lam", type=positive_lam, default=math.inf, help="λ (default inf)")
    training.add_argument("--finetune", type=int, default=0, help="fine-tuning epochs")
    training.add_argument("--finetune-lr", type=float, default=2e-4)
    training.add_argument("--target", choices=FINETUNE_TARGETS, default="equilibrium")
    training.add_argument("--init", type=Path, help="start from this checkpoint's weights")
    training.add_argument("--head", choices=HEADS, default="factorised")
    training.add_argument("--updates", type=int, default=3000, help="behaviour cloning updates")
    training.add_argument("--batch-size", type=int, default=16)
    training.add_argument("--lr", type=float, default=1e-3)
    training.add_argument("--games", type=int, help="only the first GAMES games")
    training.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.command == "data":
        spec = DataSpec(args.games, args.seed, args.max_year, args.map)
        result = generate_data(spec, args.out, args.workers)
    elif args.command == "q":
        config = QConfig(
            args.rollouts,
            args.top_k,
            args.horizon,
            args.groups,
            args.seed,
            args.sampled,
            args.continuation,
        )
        policy = DipLLMAgent(checkpoint=args.policy) if args.policy else None
        start = time.perf_counter()
        tasks = rollout_tasks(
            args.data,
            config,
            policy.model if policy else None,
            policy.tokenizer if policy else None,
            args.games,
        )
        groups = estimate_q(tasks, args.out, args.workers)
        result = {"groups": len(groups), "seconds": time.perf_counter() - start}
    elif args.command == "noise":
        result = q_noise(read_q(args.q), args.lam)
    else:
        agent = DipLLMAgent(
            seed=args.seed,
            head=args.head,
            lam=args.lam,
            games=args.games,
            finetune=args.finetune,
            finetune_lr=args.finetune_lr,
            finetune_target=args.target,
            batch_size=args.batch_size,
            lr=args.lr,
            map_name=next(read_phases(args.data))["map_name"],
        )
        if args.init is not None:
            agent.init_from(args.init)
        result = agent.learn(args.data, args.updates, q=args.q)
        agent.save(args.out)
        losses = agent.finetune_losses or agent.losses
        result["final_loss"] = float(np.mean(losses[-50:])) if losses else None
    print(json.dumps(result))
    return 0
