"""Behaviour cloning (BC) and filtered BC (%BC) of language-model policies on the LMRL datasets.

LMRL-Gym's offline baselines (Abdulhai et al., "LMRL-Gym: Benchmarks for Multi-Turn
Reinforcement Learning with Language Models", ICML 2025, Section 5; ``docs/lmrl.md``): BC
fine-tunes the policy with the next-token loss on the agent's utterances of the whole dataset;
filtered BC does the same on the best episodes only (LMRL's filters,
:data:`omnigym.llm_agents.data.LMRL_FILTERS`). Algorithm (:meth:`BCAgent.learn`):

1. read the dataset (:func:`omnigym.llm_agents.data.load_records`: an env or env id — its
   committed 100-episode fixture, or ``dataset_episodes`` fresh ones —, a file, or records) and
   keep the episodes :meth:`BCAgent.select_episodes` chooses (all; %BC: LMRL's filter);
2. turn every agent turn into a prompt-completion pair with the policy's own
   :class:`~omnigym.llm_agents.policy.PromptFormat` (instructions + transcript cut from the
   left to ``max_prompt_tokens``; completion = action + end of sequence), pre-tokenised with a
   completion mask, so training sees exactly the token ids the policy reads in play;
3. train with TRL's ``SFTTrainer`` (``completion_only_loss``: the loss is the mean negative
   log-likelihood of the completion tokens) for ``budget`` AdamW updates of ``batch_size``
   examples, constant learning rate, float32 on the CPU;
4. play with :class:`~omnigym.llm_agents.policy.LMPolicy` (constrained decoding where the task
   lists legal actions; greedy by default).

Models: ``model="tiny"`` builds a tiny model from scratch (tokenizer trained on the dataset's
text and the instructions) and trains every weight; ``"smollm2"`` or a local Hugging Face
folder is fine-tuned through a PEFT LoRA adapter (``LoRASettings``: rank 16, α 32 on the
attention projections), its base weights frozen. ``finetune`` overrides the choice.

Departures from LMRL-Gym: tiny models trained from scratch (:mod:`omnigym.llm_agents.models`)
instead of a pretrained GPT-2; datasets of 100 episodes by default (the committed fixtures)
instead of LMRL's thousands; constrained decoding by default (see
:mod:`omnigym.llm_agents.policy`).

Seeding: the tiny model's weights, the LoRA initialisation and the trainer's minibatch order
come from a seed drawn from the agent's generator (``seed``, or the latest ``reset(seed)``
before ``learn``: the scenario runner's training seed). The Hugging Face ``Trainer`` seeds the
global generators; they are restored afterwards (``global_rng_preserved``). Checkpoints
(:meth:`BCAgent.save`): :func:`omnigym.llm_agents.models.save_checkpoint` — the full state dict
(read with ``weights_only=True``) or the LoRA adapter, plus this agent's JSON record; a saved
agent is also playable as the agent name ``lm:/path/to/checkpoint``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from omnigym.llm_agents.data import (
    EpisodeFilter,
    dataset_examples,
    filter_episodes,
    lmrl_filter,
    load_records,
)
from omnigym.llm_agents.models import (
    TINY,
    LanguageModel,
    LoRASettings,
    TinyConfig,
    add_lora,
    build_tiny,
    cpu_sft_config,
    global_rng_preserved,
    load_checkpoint,
    load_model,
    require_llm_stack,
    save_checkpoint,
)
from omnigym.llm_agents.policy import LMPolicy, env_id_of, task_corpus
from omnigym.threads import one_torch_thread


@dataclass(frozen=True)
class BCConfig:
    """Hyperparameters of BC and %BC (module docstring)."""

    model: str = TINY  # "tiny", "smollm2" or a local Hugging Face folder
    finetune: str = "auto"  # "full", "lora", or "auto": full for tiny, LoRA otherwise
    lr: float | None = None  # AdamW; None: 1e-3 (full, from scratch) or 2e-4 (LoRA)
    schedule: str = "constant"  # the learning rate over the budget: "constant" or "linear" to 0
    batch_size: int = 32
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_prompt_tokens: int = 256  # prompt cut from the left to this many tokens
    instructions: bool | None = None  # task instructions in the prompt; None: not for tiny
    dataset_episodes: int | None = None  # from an env id: None = the committed fixture
    dataset_seed: int = 0
    constrained: bool = True  # decoding, see omnigym.llm_agents.policy
    temperature: float = 0.0
    tiny: TinyConfig = field(default_factory=TinyConfig)
    lora: LoRASettings = field(default_factory=LoRASettings)

    def __post_init__(self) -> None:
        if self.finetune not in ("auto", "full", "lora"):
            raise ValueError(f"finetune must be 'auto', 'full' or 'lora', got {self.finetune!r}")
        if self.schedule not in ("constant", "linear"):
            raise ValueError(f"schedule must be 'constant' or 'linear', got {self.schedule!r}")
        if self.lr is not None and not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        for name in ("batch_size", "max_prompt_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")

    @property
    def lora_finetuning(self) -> bool:
        return self.finetune == "lora" or (self.finetune == "auto" and self.model != TINY)

    @property
    def learning_rate(self) -> float:
        if self.lr is not None:
            return self.lr
        return 2e-4 if self.lora_finetuning else 1e-3

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BCConfig:
        """A config from :func:`dataclasses.asdict` output (read back from JSON) or a scenario
        file's kwargs: ``tiny`` and ``lora`` may be mappings."""
        values = dict(values)
        if isinstance(values.get("tiny"), Mapping):
            values["tiny"] = TinyConfig(**values["tiny"])
        if isinstance(values.get("lora"), Mapping):
            lora = dict(values["lora"])
            lora["targets"] = tuple(lora.get("targets", LoRASettings().targets))
            values["lora"] = LoRASettings(**lora)
        return cls(**values)


def sft_examples(policy: LMPolicy, examples: Sequence[Any]) -> Any:
    """A ``datasets.Dataset`` of pre-tokenised prompt-completion examples (``input_ids``,
    ``completion_mask``) in ``policy``'s prompt format."""
    from datasets import Dataset

    encoded = [policy.format.example(e.observation, e.completion) for e in examples]
    return Dataset.from_dict(
        {
            "input_ids": [ids for ids, _ in encoded],
            "completion_mask": [mask for _, mask in encoded],
        }
    )


def train_sft(
    lm: LanguageModel, dataset: Any, updates: int, config: BCConfig, seed: int
) -> list[float]:
    """``updates`` AdamW steps of TRL's ``SFTTrainer`` on ``dataset`` (completion-only loss,
    constant learning rate, no checkpoints written); returns the loss of every update. The
    global generators are left as they were."""
    with global_rng_preserved(), tempfile.TemporaryDirectory() as scratch:
        # Imported in here: TRL's first import draws from Python's global generator.
        from transformers import PrinterCallback
        from trl import SFTTrainer

        args = cpu_sft_config(
            scratch,
            seed,
            max_steps=updates,
            per_device_train_batch_size=config.batch_size,
            learning_rate=config.learning_rate,
            lr_scheduler_type=config.schedule,
            weight_decay=config.weight_decay,
            max_grad_norm=config.max_grad_norm,
            completion_only_loss=True,
        )
        trainer = SFTTrainer(
            model=lm.model, args=args, train_dataset=dataset, processing_class=lm.tokenizer
        )
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    lm.model.eval()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


class BCAgent:
    """Behaviour cloning of a language-model policy (module docstring).

    ``BCAgent(env=None, seed=0, single_thread=True, **hyperparameters)``: the hyperparameters
    are the fields of :class:`BCConfig`, ``tiny`` and ``lora`` also as mappings (as a scenario
    file gives them, :meth:`BCConfig.from_dict`); ``single_thread`` trains and acts on one
    torch thread (:func:`omnigym.threads.one_torch_thread`; False keeps the process's setting).
    After :meth:`learn`: ``policy`` (the :class:`~omnigym.llm_agents.policy.LMPolicy` that
    acts), ``losses`` (every update's), ``updates`` and ``episodes_trained`` (the episodes kept
    by :meth:`select_episodes`).
    """

    name = "bc"

    def __init__(
        self, env: Any = None, seed: int = 0, single_thread: bool = True, **hyperparameters
    ):
        self.config = BCConfig.from_dict(hyperparameters)
        self.single_thread = bool(single_thread)
        self.env_id = env_id_of(env)
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)
        self.policy: LMPolicy | None = None
        self.losses: list[float] = []
        self.updates = 0
        self.episodes_trained = 0

    def select_episodes(self, records: list[dict[str, Any]], env_id: str) -> list[dict[str, Any]]:
        """The episodes to imitate: all of them."""
        return records

    # ---- training

    def learn(self, dataset: Any, budget: int) -> BCAgent:
        """Train for ``budget`` updates on ``dataset`` (an env, env id, ``.jsonl[.gz]`` path or
        list of episode records); a trained agent goes on from its weights."""
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"budget must be a positive int (updates), got {budget!r}")
        require_llm_stack()
        with one_torch_thread() if self.single_thread else contextlib.nullcontext():
            self._learn(dataset, budget)
        return self

    def _learn(self, dataset: Any, budget: int) -> None:
        config = self.config
        env_id, records = load_records(dataset, config.dataset_episodes, config.dataset_seed)
        kept = self.select_episodes(records, env_id)
        examples = dataset_examples(kept, env_id)
        seed = int(self._rng.integers(2**31 - 1))
        if self.policy is None:
            self.env_id = env_id
            self.policy = LMPolicy(
                model=self._fresh_model(env_id, records, seed),
                env_id=env_id,
                constrained=config.constrained,
                temperature=config.temperature,
                max_prompt_tokens=config.max_prompt_tokens,
                instructions=config.instructions,
                single_thread=self.single_thread,
                seed=self.seed,
            )
        elif env_id != self.env_id:
            raise ValueError(f"this agent was trained on {self.env_id}, not {env_id}")
        # The updates see budget x batch_size turns: only those are tokenised (a draw without
        # replacement, which is what the trainer's shuffled epoch would give).
        seen = budget * config.batch_size
        if seen < len(examples):
            examples = [examples[i] for i in sorted(self._rng.choice(len(examples), seen, False))]
        losses = train_sft(
            self.policy.lm, sft_examples(self.policy, examples), budget, config, seed
        )
        self.losses += losses
        self.updates += budget
        self.episodes_trained = len(kept)

    def _fresh_model(
        self, env_id: str, records: Sequence[Mapping[str, Any]], seed: int
    ) -> LanguageModel:
        config = self.config
        if config.model == TINY:
            lm = build_tiny(
                task_corpus(env_id, records), dataclasses.replace(config.tiny, seed=seed)
            )
        else:
            lm = load_model(config.model)
        if config.lora_finetuning:
            lm.model = add_lora(lm.model, config.lora, seed)
            lm.adapter = True
        return lm

    # ---- playing

    def _require_policy(self) -> LMPolicy:
        if self.policy is None:
            raise RuntimeError(f"{type(self).__name__} acts after learn() or load()")
        return self.policy

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        return self._require_policy().act(observation, info)

    def act_batch(
        self, observations: Sequence[str], infos: Sequence[Mapping[str, Any]]
    ) -> list[str]:
        return self._require_policy().act_batch(observations, infos)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(self.seed if seed is None else seed)
        if self.policy is not None:
            self.policy.reset(seed)

    # ---- checkpoints

    def save(self, path: str | os.PathLike) -> None:
        """Write the model (:func:`~omnigym.llm_agents.models.save_checkpoint`) and this agent's
        record (config, decoding settings, updates, losses) into folder ``path``."""
        policy = self._require_policy()
        settings = {
            "agent": self.name,
            "config": asdict(self.config),
            "policy": policy.settings(),
            "updates": self.updates,
            "episodes_trained": self.episodes_trained,
            "losses": self.losses,
        }
        save_checkpoint(policy.lm, path, settings)

    def load(self, path: str | os.PathLike) -> BCAgent:
        """Read a folder of :meth:`save` (weights with ``weights_only=True``); returns self."""
        lm, settings = load_checkpoint(path, trainable=True)
        self.config = BCConfig.from_dict(settings["config"])
        # A checkpoint saved before the history window read its transcript without one.
        acting = {"history_lines": None, **settings["policy"]}
        self.policy = LMPolicy(model=lm, seed=self.seed, single_thread=self.single_thread, **acting)
        self.env_id = self.policy.env_id
        self.updates = int(settings["updates"])
        self.episodes_trained = int(settings["episodes_trained"])
        self.losses = [float(loss) for loss in settings["losses"]]
        return self


class FilteredBCAgent(BCAgent):
    """Filtered BC (%BC): BC on the episodes that LMRL's filter for the task keeps (top 10 %
    returns for the dialogue tasks, successes for Maze, Text-Nav, Chess and Endgames, top 30 %
    for Wordle), or on those ``episode_filter`` keeps."""

    name = "filtered_bc"

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        single_thread: bool = True,
        episode_filter: EpisodeFilter | None = None,
        **hyperparameters,
    ):
        super().__init__(env, seed, single_thread, **hyperparameters)
        self.episode_filter = episode_filter

    def select_episodes(self, records: list[dict[str, Any]], env_id: str) -> list[dict[str, Any]]:
        return filter_episodes(records, env_id, self.episode_filter or lmrl_filter(env_id))


# ---- command line ----------------------------------------------------------------------------


def compare_with_untrained(agent: BCAgent, episodes: int, seed: int = 0) -> dict[str, Any]:
    """Normalized scores (mean and 95 % bootstrap interval, :mod:`omnigym.evaluators.stats`)
    of ``agent`` and of an untrained model with the same tokenizer and decoding settings, over
    ``episodes`` episodes of the evaluator each."""
    from omnigym.evaluators.rollout import evaluate
    from omnigym.evaluators.stats import summarize

    policy = agent._require_policy()
    settings = policy.settings()
    if policy.lm.base == TINY:
        untrained = LMPolicy(model=TINY, tiny=agent.config.tiny, **settings)
    else:
        untrained = LMPolicy(model=agent.config.model, **settings)
    result = {}
    for name, player in (("trained", agent), ("untrained", untrained)):
        records = evaluate(policy.env_id, player, episodes=episodes, seeds=(seed,))
        result[name] = {
            "normalized_score": summarize([r["normalized_score"] for r in records]),
            "return": summarize([r["return"] for r in records]),
            "success_rate": float(np.mean([bool(r["success"]) for r in records])),
            "invalid_actions": float(np.mean([r["metrics"]["invalid_actions"] for r in records])),
        }
    return result


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import json
    import time

    parser = argparse.ArgumentParser(
        prog="python -m omnigym.llm_agents.bc",
        description="Train BC (or %%BC) on an LMRL dataset, save it, and compare it with the "
        "untrained model on the evaluator.",
    )
    parser.add_argument("--env", default="LMRL/MazeFO-v0", help="LMRL env id (its dataset)")
    parser.add_argument("--filtered", action="store_true", help="filtered BC (LMRL's filter)")
    parser.add_argument("--model", default=TINY, help="tiny, smollm2 or a local HF folder")
    parser.add_argument("--budget", type=int, default=200, help="updates")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--max-prompt-tokens", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    parser.add_argument("--dataset-episodes", type=int, help="default: the committed fixture")
    parser.add_argument("--episodes", type=int, default=50, help="evaluation episodes each")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="folder for the checkpoint (then: lm:FOLDER)")
    args = parser.parse_args(argv)
    agent_class = FilteredBCAgent if args.filtered else BCAgent
    agent = agent_class(
        seed=args.seed,
        model=args.model,
        batch_size=args.batch_size,
        max_prompt_tokens=args.max_prompt_tokens,
        temperature=args.temperature,
        dataset_episodes=args.dataset_episodes,
    )
    start = time.perf_counter()
    agent.learn(args.env, args.budget)
    seconds = time.perf_counter() - start
    if args.out:
        agent.save(args.out)
    result = {
        "env": args.env,
        "agent": agent.name,
        "updates": agent.updates,
        "episodes_trained": agent.episodes_trained,
        "train_seconds": round(seconds, 1),
        "loss_first_last": [agent.losses[0], float(np.mean(agent.losses[-10:]))],
        "checkpoint": args.out,
        **compare_with_untrained(agent, args.episodes, args.seed),
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
