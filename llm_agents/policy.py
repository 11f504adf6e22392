"""``LMPolicy``: a language model that plays an LMRL text task, one utterance per turn.

LMRL-Gym (Abdulhai et al., "LMRL-Gym: Benchmarks for Multi-Turn Reinforcement Learning with
Language Models", ICML 2025) conditions its GPT-2 policies on the whole interaction so far and
lets them write the next utterance (``docs/lmrl.md``):

- **Prompt** (:class:`PromptFormat`). The task's instructions (:func:`task_prompt`: the
  ``prompt`` registered beside each LMRL task; a generic line for other text envs), then the
  observation — the env's transcript, or the position for Chess and Endgames — then the cue
  for the next line. A plain model reads
  ``instructions + "\\n\\n" + observation + "\\n"`` (:func:`format_prompt`), so its completion
  is the transcript's next line; a model with a chat template (SmolLM2-Instruct) gets the
  instructions as the system message and the observation as the user message. The pieces are
  tokenised separately and the observation is cut from the left to fit ``max_prompt_tokens``
  (its last tokens, counted in the shortest run of whole last lines that holds enough of them:
  a 100-move maze transcript is not re-tokenised whole at every turn), so the instructions
  always survive and training (:mod:`omnigym.llm_agents.data`) and play see the same token
  ids. The completion is the action's tokens and the end-of-sequence token.
- **History window** (``history_lines``). Before the token cut, the transcript may be cut to
  its last lines (one message a line): LMRL-Gym's policies read the last 256 GPT-2 tokens of
  the maze transcript, about 8 turns of the fully observed maze and 20 of the partially
  observed one, while a tiny model's task-trained tokenizer packs a whole maze message into
  one token, so a token budget alone would show it 32 turns or more. The task's
  :class:`TaskPrompt` gives the window (``envs/lmrl/registry.yaml``: 16 and 40 lines on the
  mazes, none elsewhere); ``history_lines=None`` lifts it.
- **Constrained decoding** (``constrained=True``, the default) where the env lists
  ``info["legal_actions"]`` (Maze, Text-Nav, Chess, Endgames; Wordle and the question games on
  request): up to ``enumerate_limit`` legal actions are each scored by their log-likelihood
  under the model (:meth:`LMPolicy.action_log_likelihoods`; the prompt runs once and its
  key/value cache is shared by the candidates, scored ``batch_size`` at a time), and the best is
  played, or one is sampled from their softmax at ``temperature > 0``; more (Wordle's 11,406
  guesses) are written token by token through their prefix tree
  (:class:`~omnigym.llm_agents.constrained.ActionTrie`), greedily or sampled. Elsewhere,
  and with ``constrained=False``: greedy or sampled generation (``transformers``' ``generate``)
  up to the end-of-sequence token, a newline or ``max_new_tokens``; the text is passed to the
  env as it is, so text that parses to nothing is a move the task penalises. LMRL-Gym decodes
  unconstrained; here constrained decoding is the default where the task lists legal actions,
  which is what small models trained on small datasets need to be measured at all —
  ``constrained=False`` gives LMRL's setting.
- **Batching.** :meth:`LMPolicy.act_batch` decides for many observations (episodes) at once:
  unconstrained ones share left-padded ``generate`` calls of ``batch_size`` prompts.
- **Out-of-memory guard** (:func:`check_inference_budget`): ``batch_size``,
  ``max_new_tokens`` and ``max_prompt_tokens`` are checked at construction against the model's
  context and a memory limit (key/value cache of a full batch plus the logits of its new
  tokens), before anything runs.
- **Models** (:func:`omnigym.llm_agents.models.load_model`): ``"tiny"`` (an untrained tiny
  model whose tokenizer is trained on the task's committed dataset — a smoke-test baseline),
  ``"smollm2"`` (SmolLM2-135M-Instruct: with the task instructions, the zero-shot prompting
  baseline that stands in for the paper's GPT-4 row), or a path (a checkpoint of an LM agent,
  whose saved policy settings become the defaults, or a Hugging Face folder). The agent names
  ``lm:tiny``, ``lm:smollm2`` and ``lm:/path`` resolve through :func:`agent_factory`.

Seeding: sampled actions come from a NumPy generator (``reset(seed)``) that also seeds a
forked torch generator around ``generate``, so the caller's global generators are untouched.
Threads: the policy computes on one torch thread (``single_thread``), as the project's small
models do: under contention on a shared 2-core machine two threads made zero-shot SmolLM2 on
Wordle 20x slower (12.5 minutes for 5 episodes instead of 38 s).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from omnigym.llm_agents.constrained import ActionTrie
from omnigym.llm_agents.models import (
    CHECKPOINT_FILE,
    SMOLLM2,
    TINY,
    LanguageModel,
    TinyConfig,
    load_checkpoint,
    load_model,
    model_path,
)
from omnigym.registry import UnknownEnvError, spec
from omnigym.threads import one_torch_thread

MEMORY_LIMIT = 8 * 2**30
"""Default ceiling, in bytes, of :func:`inference_bytes` (8 GiB)."""
DEFAULT_CONTEXT = 1024
"""Prompt plus new tokens when the model allows more (SmolLM2 has 8,192 positions)."""
STOP = "\n"
TASK_WINDOW = "task"
"""``LMPolicy(history_lines=TASK_WINDOW)``: the task's window (:attr:`TaskPrompt.history_lines`)."""
SENTINEL = "\x00OBSERVATION\x00"
ENUMERATE_LIMIT = 64
"""Legal-action sets up to this size are scored whole; larger ones go through the prefix tree."""


# ---- the tasks' prompts ------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskPrompt:
    """What a task tells the model, how many tokens its longest usual action needs, and how
    many last lines of the transcript a prompt holds (None: as many as ``max_prompt_tokens``
    allows)."""

    instructions: str
    max_new_tokens: int
    history_lines: int | None = None


GENERIC = TaskPrompt("Write your next message, on one line.", 32)


def task_prompt(env_id: str | None) -> TaskPrompt:
    """The instructions of ``env_id``: the ``prompt`` its family registers beside the task
    (``EnvInfo.metadata``; LMRL's are in ``envs/lmrl/registry.yaml``), or the generic ones."""
    if env_id is None:
        return GENERIC
    try:
        prompt = spec(env_id).metadata.get("prompt")
    except UnknownEnvError:
        return GENERIC
    return GENERIC if prompt is None else TaskPrompt(**prompt)


def format_prompt(env_id: str | None, observation: str, instructions: bool = True) -> str:
    """The prompt a plain (non-chat) model reads for ``observation``, untruncated."""
    head = f"{task_prompt(env_id).instructions}\n\n" if instructions else ""
    return f"{head}{observation}\n"


def task_corpus(env_id: str | None, records: Iterable[Mapping[str, Any]] | None = None) -> list:
    """Texts to train a tiny model's tokenizer on: every turn of ``records`` (default: the
    env's committed dataset fixture, when it has one) and, once, the task's instructions (so
    that the vocabulary is spent on the task's text, not on the instructions)."""
    if records is None:
        from omnigym.envs.lmrl.datasets import fixture_path, load_fixture

        records = load_fixture(env_id) if env_id and fixture_path(env_id).is_file() else []
    texts = [turn["text"] for record in records for turn in record["turns"]]
    return [*texts, task_prompt(env_id).instructions]


class PromptFormat:
    """Token ids of prompts and completions for one tokenizer and task (module docstring).

    ``encode(observation)`` is the prompt: the head (instructions and, for chat models, the
    template up to the user's message), the observation's last tokens, then the tail (``"\\n"``,
    or the template's end of the user message and start of the assistant's); at most
    ``max_prompt_tokens`` ids, taken from its last ``history_lines`` lines when that is set.
    ``completion(action)`` is the action's ids and the end-of-sequence id.
    """

    def __init__(
        self,
        tokenizer: Any,
        env_id: str | None,
        max_prompt_tokens: int,
        instructions: bool = True,
        history_lines: int | None = None,
    ):
        self.tokenizer = tokenizer
        self.env_id = env_id
        self.instructions = instructions
        self.history_lines = (
            None if history_lines is None else _positive_int("history_lines", history_lines)
        )
        text = task_prompt(env_id).instructions
        if getattr(tokenizer, "chat_template", None):
            messages = [{"role": "user", "content": SENTINEL}]
            if instructions:
                messages.insert(0, {"role": "system", "content": text})
            rendered = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            head, tail = rendered.split(SENTINEL)
        else:
            head, tail = format_prompt(env_id, SENTINEL, instructions).split(SENTINEL)
        self.head = self.ids(head)
        self.tail = self.ids(tail)
        self.max_prompt_tokens = max_prompt_tokens
        self.budget = max_prompt_tokens - len(self.head) - len(self.tail)
        if self.budget < 1:
            raise ValueError(
                f"max_prompt_tokens ({max_prompt_tokens}) leaves no room for the observation: "
                f"the instructions and framing take {len(self.head) + len(self.tail)} tokens"
            )

    def ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def encode(self, observation: str) -> list[int]:
        return self.head + self.last_tokens(observation) + self.tail

    def last_tokens(self, observation: str) -> list[int]:
        """The observation's last ``budget`` tokens, taken from the shortest suffix of whole
        lines (searched with a doubling window of characters) that has that many, or from the
        whole observation (its last ``history_lines`` lines when that is set)."""
        if self.history_lines is not None:
            lines = observation.rsplit("\n", self.history_lines)
            observation = "\n".join(lines[-self.history_lines :])
        window = 4 * self.budget
        while True:
            start = observation.rfind("\n", 0, max(len(observation) - window, 0)) + 1
            ids = self.ids(observation[start:])
            if len(ids) >= self.budget or start == 0:
                return ids[-self.budget :]
            window *= 2

    def completion(self, action: str) -> list[int]:
        return [*self.ids(action), self.tokenizer.eos_token_id]

    def example(self, observation: str, action: str) -> tuple[list[int], list[int]]:
        """``(input_ids, completion_mask)`` of one training example: 0 on the prompt, 1 on the
        completion (TRL's prompt-completion format, pre-tokenised)."""
        prompt, completion = self.encode(observation), self.completion(action)
        return prompt + completion, [0] * len(prompt) + [1] * len(completion)


# ---- the out-of-memory guard -------------------------------------------------------------------


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def inference_bytes(lm: LanguageModel, batch_size: int, tokens: int, new_tokens: int) -> int:
    """Memory that grows with the batch: the key/value cache of ``batch_size`` sequences of
    ``tokens`` tokens plus float32 logits over the vocabulary for ``new_tokens`` of each."""
    return batch_size * (tokens * lm.kv_bytes_per_token + new_tokens * lm.vocab_size * 4)


def check_inference_budget(
    lm: LanguageModel,
    batch_size: int,
    max_new_tokens: int,
    max_prompt_tokens: int,
    memory_limit: int = MEMORY_LIMIT,
) -> None:
    """Raise ``ValueError`` (naming the argument) unless every size is a positive int, prompt
    plus new tokens fit the model's context and a full batch stays under ``memory_limit``."""
    for name, value in (
        ("batch_size", batch_size),
        ("max_new_tokens", max_new_tokens),
        ("memory_limit", memory_limit),
    ):
        _positive_int(name, value)
    if max_new_tokens >= lm.context:
        raise ValueError(
            f"max_new_tokens ({max_new_tokens}) must be below the model's context of "
            f"{lm.context} tokens, which also holds the prompt"
        )
    _positive_int("max_prompt_tokens", max_prompt_tokens)
    if max_prompt_tokens + max_new_tokens > lm.context:
        raise ValueError(
            f"max_prompt_tokens ({max_prompt_tokens}) + max_new_tokens ({max_new_tokens}) "
            f"exceed the model's context of {lm.context} tokens"
        )
    need = inference_bytes(lm, batch_size, max_prompt_tokens + max_new_tokens, max_new_tokens)
    if need > memory_limit:
        raise ValueError(
            f"batch_size {batch_size} with max_new_tokens {max_new_tokens} and "
            f"max_prompt_tokens {max_prompt_tokens} needs about {need / 2**30:.2f} GiB, over "
            f"memory_limit ({memory_limit / 2**30:.2f} GiB): lower batch_size or the token counts"
        )


# ---- the agent ---------------------------------------------------------------------------------


def sample_index(scores: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """The index of the highest score at ``temperature`` 0, else one drawn (from ``rng``) from
    the softmax of ``scores / temperature``."""
    if temperature == 0:
        return int(np.argmax(scores))
    logits = np.asarray(scores, dtype=np.float64) / temperature
    probabilities = np.exp(logits - logits.max())
    return int(rng.choice(len(logits), p=probabilities / probabilities.sum()))


def env_id_of(env: Any) -> str | None:
    """The registered id of a made environment (``env.spec.id``), if it has one."""
    spec = getattr(env, "spec", None)
    return getattr(spec, "id", None)


class LMPolicy:
    """An omnigym agent: a causal language model that writes the next utterance.

    Args:
        env: the environment to be played; only its id is read (for the task's instructions
            and, for ``"tiny"``, its dataset fixture).
        model: ``"tiny"``, ``"smollm2"``, a path (:func:`omnigym.llm_agents.models.load_model`)
            or a loaded :class:`~omnigym.llm_agents.models.LanguageModel`.
        env_id: the task, when there is no ``env`` (or to override its id).
        constrained: score ``info["legal_actions"]`` where the env lists them (module
            docstring); False always generates.
        temperature: 0 plays the most likely action (greedy); above 0 samples at it.
        max_new_tokens: generated tokens per action (default: the task's :class:`TaskPrompt`).
        max_prompt_tokens: prompt length (default: 1,024 or the model's context if smaller,
            minus ``max_new_tokens``).
        instructions: put the task's instructions in the prompt (default: for every model but
            a tiny one, which is trained from scratch and so learns nothing from them).
        history_lines: the most last lines of the transcript a prompt holds, None for no
            limit but ``max_prompt_tokens``; default ``TASK_WINDOW``, the task's window (module
            docstring), or a checkpoint's setting (none for one saved before the window).
        batch_size: prompts per ``generate`` call and candidates per scoring pass.
        enumerate_limit: the most legal actions scored one by one; a larger list is decoded
            through its prefix tree (module docstring).
        memory_limit: bytes a full batch may take (:func:`check_inference_budget`).
        seed: seeds sampled actions (and an untrained tiny model's weights).
        single_thread: compute on one torch thread (:func:`omnigym.threads.one_torch_thread`,
            the process's setting restored after each call): on a shared CPU a small model gains
            little from more and loses up to 10x from contention; False keeps the process's
            setting (an idle many-core machine).
        tiny: the architecture of an untrained ``"tiny"`` model.
    """

    def __init__(
        self,
        env: Any = None,
        model: str | os.PathLike | LanguageModel = TINY,
        env_id: str | None = None,
        constrained: bool | None = None,
        temperature: float | None = None,
        max_new_tokens: int | None = None,
        max_prompt_tokens: int | None = None,
        instructions: bool | None = None,
        history_lines: int | None | str = TASK_WINDOW,
        batch_size: int = 8,
        enumerate_limit: int = ENUMERATE_LIMIT,
        memory_limit: int = MEMORY_LIMIT,
        seed: int = 0,
        single_thread: bool = True,
        tiny: TinyConfig | None = None,
    ):
        self.single_thread = bool(single_thread)
        self.env_id = env_id or env_id_of(env)
        saved: dict[str, Any] = {}
        if isinstance(model, LanguageModel):
            self.lm = model
        elif model == TINY:
            self.lm = load_model(TINY, task_corpus(self.env_id), tiny or TinyConfig(seed=seed))
        elif Path(model).expanduser().joinpath(CHECKPOINT_FILE).is_file():
            self.lm, settings = load_checkpoint(Path(model).expanduser())
            saved = settings.get("policy", {})
        else:
            self.lm = load_model(model)
        self.env_id = self.env_id or saved.get("env_id")

        def setting(given: Any, key: str, default: Any) -> Any:
            """The argument when given, else the checkpoint's setting, else the default."""
            return given if given is not None else saved.get(key, default)

        self.constrained = bool(setting(constrained, "constrained", True))
        self.temperature = float(setting(temperature, "temperature", 0.0))
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
        default_new = task_prompt(self.env_id).max_new_tokens
        self.max_new_tokens = _positive_int(
            "max_new_tokens", setting(max_new_tokens, "max_new_tokens", default_new)
        )
        max_prompt_tokens = setting(
            max_prompt_tokens,
            "max_prompt_tokens",
            min(self.lm.context, DEFAULT_CONTEXT) - self.max_new_tokens,
        )
        instructions = setting(instructions, "instructions", self.lm.base != TINY)
        if history_lines == TASK_WINDOW:
            # A checkpoint saved before the window existed read its transcript without one.
            task_window = None if saved else task_prompt(self.env_id).history_lines
            history_lines = saved.get("history_lines", task_window)
        check_inference_budget(
            self.lm, batch_size, self.max_new_tokens, max_prompt_tokens, memory_limit
        )
        self.batch_size = batch_size
        self.enumerate_limit = _positive_int("enumerate_limit", enumerate_limit)
        self._tries: dict[int, tuple[Sequence[str], ActionTrie]] = {}
        self.format = PromptFormat(
            self.lm.tokenizer, self.env_id, max_prompt_tokens, bool(instructions), history_lines
        )
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)

    @property
    def max_prompt_tokens(self) -> int:
        return self.format.max_prompt_tokens

    def settings(self) -> dict[str, Any]:
        """The decoding settings, as a checkpoint records them (the defaults of a reload)."""
        return {
            "env_id": self.env_id,
            "constrained": self.constrained,
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
            "instructions": self.format.instructions,
            "history_lines": self.format.history_lines,
        }

    def variant(self, **changes: Any) -> LMPolicy:
        """A policy over the same model and prompt (task, token budget, history window,
        instructions) with ``changes`` to its other arguments (decoding, batch size, seed)."""
        return LMPolicy(
            **{"model": self.lm, "single_thread": self.single_thread, **self.settings(), **changes}
        )

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(self.seed if seed is None else seed)

    # ---- playing

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        return self.act_batch([observation], [info])[0]

    def act_batch(
        self, observations: Sequence[str], infos: Sequence[Mapping[str, Any]]
    ) -> list[str]:
        """One action per (observation, info) pair, e.g. one per episode of a batch of envs."""
        if len(observations) != len(infos):
            raise ValueError(f"{len(observations)} observations but {len(infos)} infos")
        with self._threads():
            return self._act_batch(observations, infos)

    def _threads(self) -> Any:
        return one_torch_thread() if self.single_thread else contextlib.nullcontext()

    def _act_batch(
        self, observations: Sequence[str], infos: Sequence[Mapping[str, Any]]
    ) -> list[str]:
        actions: list[str | None] = [None] * len(observations)
        free = []
        for row, (observation, info) in enumerate(zip(observations, infos, strict=True)):
            legal = info.get("legal_actions") if self.constrained else None
            if legal and len(legal) <= self.enumerate_limit:
                scores = self.action_log_likelihoods(observation, legal)
                actions[row] = legal[sample_index(scores, self.temperature, self._rng)]
            elif legal:
                actions[row] = self.propose(observation, legal, 1, self.temperature)[0]
            else:
                free.append(row)
        for start in range(0, len(free), self.batch_size):
            rows = free[start : start + self.batch_size]
            for row, text in zip(rows, self.generate([observations[r] for r in rows]), strict=True):
                actions[row] = text
        return actions

    def trie(self, legal: Sequence[str]) -> ActionTrie:
        """The prefix tree of ``legal`` in this policy's tokenisation, kept for the same list
        object (an env hands out one list at every turn; a few are kept)."""
        key = id(legal)
        if key not in self._tries or self._tries[key][0] is not legal:
            if len(self._tries) >= 4:
                self._tries.clear()
            self._tries[key] = (legal, ActionTrie(legal, self.format.completion))
        return self._tries[key][1]

    def propose(
        self, observation: str, legal: Sequence[str], count: int, temperature: float
    ) -> list[str]:
        """``count`` legal actions written through the prefix tree of ``legal`` at
        ``temperature`` (0: the greedy one, ``count`` times)."""
        with self._threads():
            trie = self.trie(legal)
            rows = 1 if temperature == 0 else count
            drawn = trie.sample(
                self.lm.model, self.format.encode(observation), rows, temperature, self._rng
            )
        return [trie.actions[index] for index, _ in drawn] * (count // rows)

    def action_log_likelihoods(self, observation: str, actions: Sequence[str]) -> np.ndarray:
        """log p(action | prompt) of each action: the sum over its completion tokens (the
        action and the end of sequence), float64. The prompt runs once; its key/value cache is
        expanded over each chunk of ``batch_size`` candidates."""
        with self._threads(), torch.inference_mode():
            return self._log_likelihoods(observation, actions)

    def _log_likelihoods(self, observation: str, actions: Sequence[str]) -> np.ndarray:
        from transformers import DynamicCache

        model = self.lm.model
        prompt = model(input_ids=torch.tensor([self.format.encode(observation)]), use_cache=True)
        cache = [(layer.keys, layer.values) for layer in prompt.cache.layers]
        first = torch.log_softmax(prompt.logits[0, -1].double(), dim=-1)
        scores = []
        for start in range(0, len(actions), self.batch_size):
            batch = [
                self.format.completion(action)
                for action in actions[start : start + self.batch_size]
            ]
            width = max(map(len, batch))
            targets = torch.full((len(batch), width), -100, dtype=torch.long)
            for row, ids in enumerate(batch):
                targets[row, : len(ids)] = torch.tensor(ids)
            score = first[targets[:, 0]]
            if width > 1:
                # Right padding: causal attention keeps it out of every real position.
                past = DynamicCache(
                    ddp_cache_data=[
                        (k.expand(len(batch), -1, -1, -1), v.expand(len(batch), -1, -1, -1))
                        for k, v in cache
                    ]
                )
                logits = model(input_ids=targets[:, :-1].clamp(min=0), cache=past).logits
                rest = targets[:, 1:]
                picked = torch.log_softmax(logits.double(), dim=-1).gather(
                    2, rest.clamp(min=0)[..., None]
                )[..., 0]
                score = score + (picked * (rest != -100)).sum(dim=1)
            scores.append(score.numpy())
        return np.concatenate(scores)

    def generate(self, observations: Sequence[str]) -> list[str]:
        """One generated line per observation (at most ``batch_size`` of them): greedy or
        sampled, up to the end of sequence, a newline or ``max_new_tokens``; stripped."""
        if len(observations) > self.batch_size:
            raise ValueError(f"{len(observations)} prompts exceed batch_size {self.batch_size}")
        with self._threads(), torch.inference_mode():
            return self._generate(observations)

    def _generate(self, observations: Sequence[str]) -> list[str]:
        from transformers import GenerationConfig

        tokenizer = self.lm.tokenizer
        prompts = [self.format.encode(observation) for observation in observations]
        width = max(map(len, prompts))
        pad = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        input_ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, ids in enumerate(prompts):  # left padding: every prompt ends at the same column
            input_ids[row, width - len(ids) :] = torch.tensor(ids)
            attention_mask[row, width - len(ids) :] = 1
        sample = self.temperature > 0
        config = GenerationConfig(
            max_new_tokens=self.max_new_tokens,
            do_sample=sample,
            temperature=self.temperature if sample else None,
            top_k=0 if sample else None,
            top_p=1.0 if sample else None,
            pad_token_id=pad,
            eos_token_id=tokenizer.eos_token_id,
            stop_strings=[STOP],
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(self._rng.integers(2**63)))
            output = self.lm.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                generation_config=config,
                tokenizer=tokenizer,
            )
        texts = tokenizer.batch_decode(output[:, width:], skip_special_tokens=True)
        return [text.split(STOP, 1)[0].strip() for text in texts]


# ---- agent names ---------------------------------------------------------------------------


def agent_factory(argument: str) -> Any:
    """The factory behind the agent name ``lm:ARGUMENT`` (``lm:tiny``, ``lm:smollm2``,
    ``lm:/path/to/model_or_checkpoint``): :class:`LMPolicy` with ``model=ARGUMENT``. A path is
    checked here, so a bad name fails before any episode runs."""
    if not argument:
        raise ValueError("lm: needs a model: lm:tiny, lm:smollm2 or lm:/path/to/model")
    if argument not in (TINY, SMOLLM2):
        model_path(argument)
    return functools.partial(LMPolicy, model=argument)
