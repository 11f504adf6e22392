"""MC returns: a behaviour-cloned language-model policy whose candidate utterances are reranked
by a return-to-go value head.

LMRL-Gym's "MC Returns" baseline (Abdulhai et al., "LMRL-Gym: Benchmarks for Multi-Turn
Reinforcement Learning with Language Models", ICML 2025, Section 5; ``docs/lmrl.md``) fits
Q(h, a) to the Monte-Carlo return-to-go of the dataset and decodes from the BC policy perturbed
by β·Q. Algorithm (:meth:`MCReturnsAgent.learn`):

1. **Policy.** BC through :class:`omnigym.llm_agents.bc.BCAgent` (TRL's ``SFTTrainer``) on the
   whole dataset for ``bc_updates`` updates, or the BC checkpoint named by ``policy`` (the
   claims runner trains BC once per task and seed and starts MC, ILQL-lite and PPO from it).
2. **Critic.** A trainable copy of the BC model's transformer body (its LM head dropped) with a
   scalar Q head read at the last token of prompt + utterance (:class:`UtteranceCritic`); the
   prompt and the utterance are the policy's own token ids
   (:class:`~omnigym.llm_agents.policy.PromptFormat`, so Q reads what the policy reads).
3. **Regression.** ``budget`` AdamW updates of ½·(Q − G/σ)² on minibatches of the dataset's
   agent turns (:func:`omnigym.llm_agents.data.dataset_examples`), G the undiscounted return to
   go and σ the standard deviation of G over the dataset, so that β has one meaning on every
   task (LMRL tunes β per task).
4. **Acting.** The candidates are the legal actions where the env lists a few of them (the
   policy's constrained decoding), scored by log π_BC(a | h) + β·Q(h, a); elsewhere k = 8
   utterances sampled from the BC policy at temperature 1 (through the prefix tree of the legal
   actions where the env lists many, :mod:`omnigym.llm_agents.constrained`), scored by
   log n(a) + β·Q(h, a) with n(a) the number of times a was drawn (self-normalised importance
   sampling of π_BC·exp(β·Q)). The
   best-scoring candidate is played (``temperature = 0``) or one is drawn from the softmax of
   the scores divided by ``temperature``.

Departures from LMRL-Gym: Q is utterance-level (one value per candidate utterance) instead of a
per-token head whose values perturb every next-token distribution, because the tasks' actions
are a few tokens long and the small CPU models cannot afford token-level search; LMRL's MC adds
a conservative cross-entropy term, left to ILQL-lite here (:mod:`omnigym.llm_agents.ilql`),
which builds on this module's critic and reranking.

Every prompt runs through the transformer once per minibatch: its key/value cache is expanded
over the utterances scored on it (:func:`run_turns`), with gradients, so a candidate costs its
own few tokens. Seeding: the head initialisation, minibatch order, dropout and sampled
candidates come from the agent's seed (or the latest ``reset(seed)`` before ``learn``); the
global generators of Python, NumPy and torch are left as they were, and training runs on one
torch thread. Checkpoints: the BC policy (:meth:`~omnigym.llm_agents.bc.BCAgent.save`) in
``policy/``, the critic's state dict in ``critic.pt`` (read back with ``weights_only=True``)
and the agent's JSON record in ``agent.json``.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from omnigym.llm_agents.bc import BCAgent, BCConfig
from omnigym.llm_agents.data import Example, dataset_examples, load_records
from omnigym.llm_agents.models import LanguageModel, global_rng_preserved, require_llm_stack
from omnigym.llm_agents.policy import LMPolicy, sample_index
from omnigym.threads import one_torch_thread

POLICY_DIR = "policy"
CRITIC_FILE = "critic.pt"
AGENT_FILE = "agent.json"


@dataclass(frozen=True)
class MCConfig:
    """Hyperparameters of MC returns (module docstring)."""

    policy: str | None = None  # a BC checkpoint folder to start from; None: train BC first
    bc: dict[str, Any] = field(default_factory=dict)  # BCConfig fields of the BC stage
    bc_updates: int | None = None  # BC updates; None: the learn() budget
    lr: float = 1e-3  # AdamW, critic
    batch_size: int = 32  # agent turns per critic update
    max_grad_norm: float = 1.0
    beta: float = 8.0  # weight of Q, in units of the dataset's return-to-go std
    candidates: int = 8  # k utterances sampled where the env lists no legal actions
    proposal_temperature: float = 1.0  # of the BC policy that samples them
    temperature: float = 0.0  # of the final choice: 0 plays the best candidate

    def __post_init__(self) -> None:
        for name in ("lr", "max_grad_norm", "proposal_temperature"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        for name in ("beta", "temperature"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        for name in ("batch_size", "candidates"):
            _require_positive_int(name, getattr(self, name))
        if self.bc_updates is not None:
            _require_positive_int("bc_updates", self.bc_updates)
        BCConfig.from_dict(self.bc)  # a bad BC field fails here, by name


def _require_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


# ---- prompts and utterances through one transformer pass -------------------------------------


def decoder_parts(model: Any) -> tuple[torch.nn.Module, torch.nn.Module]:
    """(transformer body, LM head) of a causal LM, through a PEFT wrapper when there is one."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return inner.base_model, inner.get_output_embeddings()


def trainable_body(lm: LanguageModel) -> torch.nn.Module:
    """A copy of ``lm``'s transformer body with every weight trainable (a LoRA adapter merged
    in), for a critic that starts from the policy's representation."""
    model = copy.deepcopy(lm.model)
    if lm.adapter:
        model = model.merge_and_unload()
    body, _ = decoder_parts(model)
    body.requires_grad_(True)
    return body


@dataclass
class TurnBatch:
    """Right-padded token ids of prompts and of the utterances scored on them: completion ``j``
    follows prompt ``rows[j]``."""

    prompt_ids: torch.Tensor  # (B, P)
    prompt_mask: torch.Tensor  # (B, P)
    completion_ids: torch.Tensor  # (N, W)
    completion_mask: torch.Tensor  # (N, W)
    rows: torch.Tensor  # (N,)
    allowed: torch.Tensor | None = None  # (N, W, V): tokens a constrained policy may write

    @classmethod
    def build(
        cls,
        prompts: Sequence[Sequence[int]],
        completions: Sequence[Sequence[int]],
        rows: Sequence[int],
        pad_id: int,
        allowed: Sequence[torch.Tensor | None] | None = None,
    ) -> TurnBatch:
        """``allowed[j]``: ``bool[len(completions[j]), V]``, the tokens each position of
        completion ``j`` may take, or None for every token (padding always allows all)."""
        prompt_ids, prompt_mask = _right_padded(prompts, pad_id)
        completion_ids, completion_mask = _right_padded(completions, pad_id)
        masks = None
        if allowed is not None and any(mask is not None for mask in allowed):
            vocab = next(mask for mask in allowed if mask is not None).shape[1]
            masks = torch.ones((*completion_ids.shape, vocab), dtype=torch.bool)
            for row, mask in enumerate(allowed):
                if mask is not None:
                    masks[row, : mask.shape[0]] = mask
        return cls(
            prompt_ids,
            prompt_mask,
            completion_ids,
            completion_mask,
            torch.tensor(list(rows)),
            masks,
        )


def _right_padded(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, ...]:
    width = max(map(len, sequences))
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        mask[row, : len(sequence)] = 1
    return ids, mask


def last_states(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Hidden state at each right-padded sequence's last real token, (B, d)."""
    return hidden[torch.arange(mask.shape[0]), mask.sum(dim=1) - 1]


def prompt_features(
    body: torch.nn.Module, prompts: Sequence[Sequence[int]], pad_id: int
) -> torch.Tensor:
    """Hidden state at each prompt's last token, (B, d), without a cache."""
    ids, mask = _right_padded(prompts, pad_id)
    hidden = body(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
    return last_states(hidden, mask)


def run_turns(body: torch.nn.Module, batch: TurnBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states at each prompt's last token (B, d) and over every completion's tokens
    (N, W, d). Each prompt runs once; its key/value cache is gathered over its completions,
    which run on it with their true positions (padding masked), gradients flowing through."""
    from transformers import DynamicCache

    output = body(input_ids=batch.prompt_ids, attention_mask=batch.prompt_mask, use_cache=True)
    states = last_states(output.last_hidden_state, batch.prompt_mask)
    rows = batch.rows
    cache = DynamicCache(
        ddp_cache_data=[
            (layer.keys.index_select(0, rows), layer.values.index_select(0, rows))
            for layer in output.cache.layers
        ]
    )
    lengths = batch.prompt_mask.sum(dim=1)[rows]
    width = batch.completion_ids.shape[1]
    hidden = body(
        input_ids=batch.completion_ids,
        attention_mask=torch.cat([batch.prompt_mask[rows], batch.completion_mask], dim=1),
        position_ids=lengths[:, None] + torch.arange(width)[None],
        cache=cache,
    ).last_hidden_state
    return states, hidden


def completion_log_probs(
    lm_head: torch.nn.Module, states: torch.Tensor, hidden: torch.Tensor, batch: TurnBatch
) -> torch.Tensor:
    """log p(completion | prompt) of each completion (N,): its tokens' log-probabilities summed,
    the first predicted from the prompt's last state, the others from the completion's own;
    each over the tokens ``batch.allowed`` leaves, where it is given."""
    inputs = torch.cat([states[batch.rows][:, None], hidden[:, :-1]], dim=1)
    logits = lm_head(inputs).float()
    if batch.allowed is not None:
        logits = logits.masked_fill(~batch.allowed, -math.inf)
    log_probs = torch.log_softmax(logits, dim=-1)
    picked = log_probs.gather(2, batch.completion_ids[..., None])[..., 0]
    return (picked * batch.completion_mask).sum(dim=1)


def group_logsumexp(values: torch.Tensor, rows: torch.Tensor, groups: int) -> torch.Tensor:
    """log Σ exp over each group of ``values`` (``rows[j]`` is the group of ``values[j]``),
    (groups,): the normaliser of a softmax over each prompt's candidates."""
    peak = torch.full((groups,), -math.inf).scatter_reduce(0, rows, values.detach(), "amax")
    total = torch.zeros(groups).index_add(0, rows, torch.exp(values - peak[rows]))
    return peak + torch.log(total)


class EncodedTurns:
    """The policy's token ids ``(prompt, completion)`` of each example, made on first use: a
    transcript of a hundred turns takes about a millisecond to tokenise, and a run of a few
    hundred minibatches reads only part of a dataset."""

    def __init__(self, fmt: Any, examples: Sequence[Example]):
        self.fmt = fmt
        self.examples = examples
        self._ids: dict[int, tuple[list[int], list[int]]] = {}

    def __getitem__(self, index: int) -> tuple[list[int], list[int]]:
        if index not in self._ids:
            example = self.examples[index]
            self._ids[index] = (
                self.fmt.encode(example.observation),
                self.fmt.completion(example.completion),
            )
        return self._ids[index]


class UtteranceCritic(torch.nn.Module):
    """Scalar heads over a transformer body: ``state_value`` reads the prompt's last token (V),
    ``action_value`` the utterance's last token (Q)."""

    def __init__(self, body: torch.nn.Module, heads: Sequence[str], bias: float = 0.0):
        super().__init__()
        self.body = body
        width = int(body.config.hidden_size)
        self.heads = torch.nn.ModuleDict({name: torch.nn.Linear(width, 1) for name in heads})
        for head in self.heads.values():
            torch.nn.init.normal_(head.weight, std=0.02)
            torch.nn.init.constant_(head.bias, bias)

    def features(self, batch: TurnBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(prompt states (B, d), utterance end states (N, d))."""
        states, hidden = run_turns(self.body, batch)
        return states, last_states(hidden, batch.completion_mask)

    def value(self, head: str, features: torch.Tensor) -> torch.Tensor:
        return self.heads[head](features)[:, 0]


# ---- the agent ---------------------------------------------------------------------------------


def initial_bc(
    checkpoint: str | None, config: BCConfig, seed: int, agent_class: type = BCAgent
) -> BCAgent:
    """The BC agent a value-based or online agent starts from: the BC checkpoint folder
    ``checkpoint``, or a new, untrained ``agent_class`` (:class:`~omnigym.llm_agents.bc.BCAgent`
    or a subclass) with ``config`` (its ``policy`` is None until it learns)."""
    if checkpoint is not None:
        return agent_class(seed=seed).load(checkpoint)
    return agent_class(seed=seed, **{f.name: getattr(config, f.name) for f in fields(config)})


class MCReturnsAgent:
    """MC returns (module docstring): ``MCReturnsAgent(env=None, seed=0, **hyperparameters)``,
    the hyperparameters being :class:`MCConfig`'s fields.

    ``learn(dataset, budget)`` trains the critic for ``budget`` updates (after the BC stage or
    the ``policy`` checkpoint) on ``dataset``: an env, env id, ``.jsonl[.gz]`` path or list of
    episode records, read as BC reads it (``bc.dataset_episodes`` / ``bc.dataset_seed``).
    After it: ``policy`` (the BC :class:`~omnigym.llm_agents.policy.LMPolicy`), ``critic``,
    ``losses`` (every critic update's), ``updates`` and ``return_scale`` (σ).
    """

    name = "mc_returns"
    config_class = MCConfig
    heads: tuple[str, ...] = ("q",)

    def __init__(self, env: Any = None, seed: int = 0, **hyperparameters: Any):
        self.config = self.config_class(**hyperparameters)
        self.bc_config = BCConfig.from_dict(self.config.bc)
        self.env = env
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)
        self.bc: BCAgent | None = None
        self.critic: UtteranceCritic | None = None
        self.return_scale = 1.0
        self.losses: list[float] = []
        self.updates = 0
        self._proposal: LMPolicy | None = None

    @property
    def policy(self) -> LMPolicy | None:
        return None if self.bc is None else self.bc.policy

    @property
    def env_id(self) -> str | None:
        return None if self.bc is None else self.bc.env_id

    # ---- training

    def learn(self, dataset: Any, budget: int) -> MCReturnsAgent:
        """Fit the critic for ``budget`` updates (class docstring); returns self."""
        _require_positive_int("budget", budget)
        require_llm_stack()
        with one_torch_thread(), global_rng_preserved():
            if self.bc is None:
                seed = int(self._rng.integers(2**31 - 1))
                self.bc = initial_bc(self.config.policy, self.bc_config, seed)
            data = self.bc.config  # a critic learns on its policy's dataset
            env_id, records = load_records(dataset, data.dataset_episodes, data.dataset_seed)
            if self.bc.policy is None:
                self.bc.learn(records, self.config.bc_updates or budget)
            elif env_id != self.env_id:
                raise ValueError(f"this agent was trained on {self.env_id}, not {env_id}")
            examples = dataset_examples(records, env_id)
            if self.critic is None:
                returns = np.array([example.return_to_go for example in examples])
                self.return_scale = float(returns.std()) if returns.std() > 1e-6 else 1.0
                self.critic = self._fresh_critic(float(returns.mean()) / self.return_scale)
            torch.manual_seed(int(self._rng.integers(2**63)))  # dropout, inside the fork
            self._fit(examples, budget)
        self.updates += budget
        return self

    def _fresh_critic(self, bias: float) -> UtteranceCritic:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(self._rng.integers(2**63)))
            return UtteranceCritic(trainable_body(self.policy.lm), self.heads, bias)

    def _fit(self, examples: Sequence[Example], updates: int) -> None:
        """``updates`` AdamW steps of :meth:`critic_loss` on minibatches drawn uniformly."""
        encoded = EncodedTurns(self.policy.format, examples)
        critic = self.critic
        optimizer = torch.optim.AdamW(critic.parameters(), lr=self.config.lr, weight_decay=0.0)
        self.prepare(examples)
        critic.train()
        size = min(self.config.batch_size, len(examples))
        for _ in range(updates):
            indices = self._rng.choice(len(examples), size=size, replace=False)
            loss = self.critic_loss(examples, encoded, indices)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(critic.parameters(), self.config.max_grad_norm)
            optimizer.step()
            self.after_update()
            self.losses.append(float(loss.detach()))
        critic.eval()

    def critic_loss(
        self,
        examples: Sequence[Example],
        encoded: EncodedTurns,
        indices: np.ndarray,
    ) -> torch.Tensor:
        """½·(Q(h, a) − G/σ)², averaged over the minibatch ``indices``."""
        batch = TurnBatch.build(
            [encoded[i][0] for i in indices],
            [encoded[i][1] for i in indices],
            range(len(indices)),
            self.policy.lm.pad_id,
        )
        _, ends = self.critic.features(batch)
        q = self.critic.value("q", ends)
        target = torch.tensor([examples[i].return_to_go for i in indices]) / self.return_scale
        return 0.5 * ((q - target.float()) ** 2).mean()

    def prepare(self, examples: Sequence[Example]) -> None:
        """Called before the updates of :meth:`learn` (ILQL-lite collects its alternatives)."""

    def after_update(self) -> None:
        """Called after every optimizer step (ILQL-lite moves its target head here)."""

    # ---- playing

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(self.seed if seed is None else seed)
        if self.policy is not None:
            self.policy.reset(seed)
            self._proposer().reset(None if seed is None else seed + 1)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        with one_torch_thread():
            actions, prior = self.candidates(observation, info)
            scores = prior + self.config.beta * self.advantages(observation, actions)
        return actions[sample_index(scores, self.config.temperature, self._rng)]

    def candidates(self, observation: str, info: Mapping[str, Any]) -> tuple[list[str], np.ndarray]:
        """``(utterances, log prior)``: the legal actions with log π_BC where the env lists a few
        (and the policy decodes constrained), else ``candidates`` samples of the BC policy (among
        the legal actions where the env lists many) with the log of each distinct utterance's
        count (module docstring)."""
        policy = self._require_policy()
        legal = info.get("legal_actions") if policy.constrained else None
        if legal and len(legal) <= policy.enumerate_limit:
            actions = list(legal)
            return actions, policy.action_log_likelihoods(observation, actions)
        count, temperature = self.config.candidates, self.config.proposal_temperature
        if legal:
            drawn = policy.propose(observation, legal, count, temperature)
        else:
            drawn = self._proposer().generate([observation] * count)
        distinct = list(dict.fromkeys(drawn))
        return distinct, np.log([drawn.count(text) for text in distinct])

    @torch.inference_mode()
    def action_values(self, observation: str, actions: Sequence[str]) -> tuple[np.ndarray, float]:
        """``(Q(h, a) for each action, V(h) or nan)`` in return-scale units (σ)."""
        fmt = self.policy.format
        batch = TurnBatch.build(
            [fmt.encode(observation)],
            [fmt.completion(action) for action in actions],
            [0] * len(actions),
            self.policy.lm.pad_id,
        )
        states, ends = self._require_critic().features(batch)
        q = self.critic.value("q", ends).double().numpy()
        v = float(self.critic.value("v", states)[0]) if "v" in self.critic.heads else math.nan
        return q, v

    def advantages(self, observation: str, actions: Sequence[str]) -> np.ndarray:
        """What β multiplies in the ranking: Q(h, a)."""
        return self.action_values(observation, actions)[0]

    def _proposer(self) -> LMPolicy:
        """The BC model sampling candidates (unconstrained, at ``proposal_temperature``)."""
        if self._proposal is None:
            policy = self._require_policy()
            self._proposal = policy.variant(
                constrained=False,
                temperature=self.config.proposal_temperature,
                batch_size=self.config.candidates,
                seed=self.seed + 1,
                single_thread=True,
            )
        return self._proposal

    def _require_policy(self) -> LMPolicy:
        if self.policy is None:
            raise RuntimeError(f"{type(self).__name__} acts after learn() or load()")
        return self.policy

    def _require_critic(self) -> UtteranceCritic:
        if self.critic is None:
            raise RuntimeError(f"{type(self).__name__} acts after learn() or load()")
        return self.critic

    # ---- checkpoints

    def save(self, path: str | os.PathLike) -> None:
        """Write ``policy/`` (the BC checkpoint), ``critic.pt`` and ``agent.json`` into ``path``."""
        folder = Path(path)
        self._require_critic()
        self.bc.save(folder / POLICY_DIR)
        torch.save(self.critic.state_dict(), folder / CRITIC_FILE)
        record = {
            "agent": self.name,
            "config": asdict(self.config),
            "return_scale": self.return_scale,
            "updates": self.updates,
            "losses": self.losses,
        }
        (folder / AGENT_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")

    def load(self, path: str | os.PathLike) -> MCReturnsAgent:
        """Read a folder of :meth:`save` (state dicts with ``weights_only=True``); returns self."""
        folder = Path(path)
        record = json.loads((folder / AGENT_FILE).read_text(encoding="utf-8"))
        if record.get("agent") != self.name:
            raise ValueError(f"{folder} holds a {record.get('agent')!r} agent, not {self.name!r}")
        self.config = self.config_class(**record["config"])
        self.bc_config = BCConfig.from_dict(self.config.bc)
        self.bc = BCAgent(seed=self.seed).load(folder / POLICY_DIR)
        self._proposal = None
        self.critic = self._fresh_critic(0.0)
        state = torch.load(folder / CRITIC_FILE, map_location="cpu", weights_only=True)
        self.critic.load_state_dict(state)
        self.critic.eval()
        self.return_scale = float(record["return_scale"])
        self.updates = int(record["updates"])
        self.losses = [float(loss) for loss in record["losses"]]
        return self
