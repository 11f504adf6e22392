"""A text policy behaviour-cloned from the MCU oracle: the tiny language model of the LM agents.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) evaluates imitation-learned agents (VPT-BC,
STEVE-1); here the counterpart is a tiny transformer trained from scratch on the CPU to imitate
the scripted oracle, with the model code of LMRL's BC agent (:mod:`omnigym.llm_agents.bc`: the
tiny GPT-2 and its BPE tokenizer of :func:`~omnigym.llm_agents.models.build_tiny`, TRL's
completion-only SFT of :func:`~omnigym.llm_agents.bc.train_sft`, constrained decoding of
:class:`~omnigym.llm_agents.policy.LMPolicy`). Algorithm (:meth:`MCUBCAgent.learn`):

1. **Demonstrations**: the oracle plays every env of the curated suite at the simple level (its
   atomic tasks and its compositions, or the ``envs`` given), ``demo_seeds`` episodes each;
   every step gives one example: the :func:`prompt` of the observation and the oracle's
   command.
2. **Model**: a tokenizer trained on those texts, a GPT-2 of ``tiny`` size with random weights;
   ``budget`` AdamW updates of the completion's negative log-likelihood.
3. **Play**: greedy (or sampled at ``temperature``) among :func:`candidates`: the plain
   commands, the item commands of the task's relevant objects and every command the oracle
   used on that task (or on the parts of a composition). A greedy choice is remembered per
   prompt, so a prompt seen again costs no model call.

Only what the text observation shows reaches the model; hard-level scenes (night, distractors,
displaced targets) are never in the demonstrations, so the policy meets them untrained.
Checkpoints: the model (:func:`~omnigym.llm_agents.models.save_checkpoint`) plus the candidate
commands per task in its record; ``MCUBCAgent(env, checkpoint=folder)`` plays a saved one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from omnigym.envs.mcu.evaluation import relevant
from omnigym.envs.mcu.macro import PRIMITIVES
from omnigym.envs.mcu.oracles import solve
from omnigym.envs.mcu.suite import curated
from omnigym.threads import one_torch_thread

KEPT_LINES = ("events", "inventory", "holding", "position", "mobs in view", "blocks in view")
"""Lines of the text observation the prompt keeps, in this order (the prompt is cut from the
left, so what matters most comes last: then the block looked at and the task)."""
ITEM_VERBS = ("equip", "place", "craft", "smelt", "eat", "drop")
SCORING_BATCH = 64
"""Candidates scored in one forward pass (all of a task's, usually)."""
CACHE_SIZE = 4096
"""Greedy choices remembered per prompt (a stuck policy sees the same prompt again)."""
DEMO_SEED_BASE = 10_000
"""Demonstration episodes use reset seeds from here on (evaluation seeds are derived apart)."""


class Example(NamedTuple):
    observation: str
    completion: str


def prompt(observation: Mapping[str, Any]) -> str:
    """The model's input: :data:`KEPT_LINES` of the text report, the block looked at, then the
    instruction."""
    lines = dict(line.split(": ", 1) for line in observation["text"].split("\n") if ": " in line)
    kept = [f"{key}: {lines[key]}" for key in KEPT_LINES if key in lines]
    kept.append(f"looking at: {lines.get('looking at', 'nothing')}")
    return "\n".join([*kept, f"task: {observation['task']}"])


def candidates(task, reg, seen: Mapping[str, Iterable[str]], parts: Iterable[str]) -> list[str]:
    """Commands the policy chooses among on ``task``: :data:`PRIMITIVES`, ``verb item`` for
    every relevant item and :data:`ITEM_VERBS`, and the oracle's commands on ``parts`` (the
    task's name, or a composition's parts) in ``seen``; sorted, without repeats."""
    items = [name for name in relevant(task, reg) if name in reg.items]
    found = set(PRIMITIVES) | {f"{verb} {item}" for verb in ITEM_VERBS for item in items}
    for part in parts:
        found |= set(seen.get(part, ()))
    return sorted(found)


def _task_names(env: Any) -> list[str]:
    base = env.unwrapped
    return [part.name for part in getattr(base, "parts", [base.task])]


def demonstrations(
    envs: Iterable[str | tuple[str, Mapping[str, Any]]], episodes: int
) -> tuple[list[Example], dict[str, list[str]]]:
    """The oracle's play of each env (an id, or an ``(id, kwargs)`` pair), ``episodes`` seeds
    each: the examples and the commands it used per task (a composition's commands count for
    each of its parts)."""
    import omnigym

    examples: list[Example] = []
    seen: dict[str, set[str]] = {}
    for spec in envs:
        env_id, kwargs = (spec, {}) if isinstance(spec, str) else spec
        env = omnigym.make(env_id, **dict(kwargs))
        base = env.unwrapped
        used: set[str] = set()
        for episode in range(episodes):
            observation, _ = env.reset(seed=DEMO_SEED_BASE + episode)
            for command in solve(base.world, base.task.oracle):
                examples.append(Example(prompt(observation), command))
                used.add(command)
                observation, _, terminated, truncated, _ = env.step(command)
                if terminated or truncated:
                    break
        for name in _task_names(env):
            seen.setdefault(name, set()).update(used)
        env.close()
    return examples, {name: sorted(commands) for name, commands in seen.items()}


def suite_envs() -> list[str]:
    """The curated ids at the simple level: atomic tasks and compositions."""
    return [entry.env_id for entry in curated() if entry.difficulty == "simple"]


class MCUBCAgent:
    """Behaviour cloning of the MCU oracle with the LM agents' tiny model (module docstring).

    Args:
        env: the MCU environment the agent plays (its task picks the candidate commands).
        seed: the model's initial weights and minibatch order (``reset(seed)`` before
            ``learn`` overrides it).
        checkpoint: a folder of :meth:`save` to play.
        envs: envs to take demonstrations on, ids or ``[id, kwargs]`` pairs (default:
            :func:`suite_envs`).
        demo_seeds: oracle episodes per env.
        tiny: the model's size (:class:`~omnigym.llm_agents.models.TinyConfig` fields).
        max_prompt_tokens, batch_size, lr: as LMRL's BC.
        temperature: 0 plays the most likely candidate.
    """

    multitask = True
    """One model for every task of the suite (an experiment trains it once per seed)."""

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        checkpoint: str | os.PathLike | None = None,
        envs: list | None = None,
        demo_seeds: int = 6,
        tiny: Mapping[str, Any] | None = None,
        max_prompt_tokens: int = 160,
        batch_size: int = 32,
        lr: float = 1e-3,
        temperature: float = 0.0,
    ):
        from omnigym.llm_agents.models import TinyConfig

        self.env = env
        self.seed = int(seed)
        self.envs = envs
        self.demo_seeds = int(demo_seeds)
        size = {"layers": 2, "width": 64, "heads": 4, "context": 256} | dict(tiny or {})
        self.tiny = TinyConfig(**size)
        self.max_prompt_tokens = int(max_prompt_tokens)
        self.batch_size = int(batch_size)
        self.lr = float(lr)
        self.temperature = float(temperature)
        self.policy = None
        self.seen: dict[str, list[str]] = {}
        self.losses: list[float] = []
        self._legal: list[str] | None = None
        self._chosen: dict[str, str] = {}
        if checkpoint is not None:
            self.load(checkpoint)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None and self.policy is None:
            self.seed = int(seed)
        if self.policy is not None:
            self.policy.reset(seed)

    def _config(self):
        from omnigym.llm_agents.bc import BCConfig

        return BCConfig(
            batch_size=self.batch_size, lr=self.lr, max_prompt_tokens=self.max_prompt_tokens
        )

    def learn(self, env: Any, budget: int) -> MCUBCAgent:
        """``budget`` updates on fresh oracle demonstrations (``env`` only names the run's
        environment: the demonstrations come from ``envs``)."""
        from omnigym.llm_agents.bc import sft_examples, train_sft
        from omnigym.llm_agents.models import build_tiny, require_llm_stack

        require_llm_stack()
        examples, self.seen = demonstrations(self.envs or suite_envs(), self.demo_seeds)
        rng = np.random.default_rng(self.seed)
        with one_torch_thread():
            texts = [e.observation for e in examples] + [e.completion for e in examples]
            lm = build_tiny(texts, dataclasses.replace(self.tiny, seed=self.seed))
            self.policy = self._policy(lm)
            seen = budget * self.batch_size
            if seen < len(examples):
                picked = sorted(rng.choice(len(examples), seen, replace=False))
                examples = [examples[i] for i in picked]
            dataset = sft_examples(self.policy, examples)
            self.losses = train_sft(lm, dataset, budget, self._config(), self.seed)
        self.examples = len(examples)
        return self

    def _policy(self, lm):
        from omnigym.llm_agents.policy import LMPolicy

        return LMPolicy(
            model=lm,
            constrained=True,
            temperature=self.temperature,
            max_prompt_tokens=self.max_prompt_tokens,
            instructions=False,
            batch_size=SCORING_BATCH,
            seed=self.seed,
        )

    def legal(self) -> list[str]:
        """The candidate commands on the played environment's task."""
        if self._legal is None:
            base = self.env.unwrapped
            self._legal = candidates(base.task, base.registry, self.seen, _task_names(self.env))
        return self._legal

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> str:
        if self.policy is None:
            raise RuntimeError("MCUBCAgent acts after learn() or load()")
        text = prompt(observation)
        if self.temperature > 0:
            return self.policy.act(text, {"legal_actions": self.legal()})
        if text not in self._chosen:
            if len(self._chosen) >= CACHE_SIZE:
                self._chosen.clear()
            self._chosen[text] = self.policy.act(text, {"legal_actions": self.legal()})
        return self._chosen[text]

    def save(self, path: str | os.PathLike) -> None:
        from omnigym.llm_agents.models import save_checkpoint

        if self.policy is None:
            raise RuntimeError("MCUBCAgent.save() before learn()")
        settings = {
            "agent": "mcu_bc",
            "seen": self.seen,
            "losses": self.losses,
            "max_prompt_tokens": self.max_prompt_tokens,
            "temperature": self.temperature,
        }
        save_checkpoint(self.policy.lm, path, settings)

    def load(self, path: str | os.PathLike) -> MCUBCAgent:
        from omnigym.llm_agents.models import load_checkpoint

        lm, settings = load_checkpoint(path)
        self.seen = {task: list(commands) for task, commands in settings["seen"].items()}
        self.losses = [float(loss) for loss in settings["losses"]]
        self.max_prompt_tokens = int(settings["max_prompt_tokens"])
        self.policy = self._policy(lm)
        return self
