"""PPO: online RL of a behaviour-cloned language-model policy against the environment.

Proximal Policy Optimization (Schulman, Wolski, Dhariwal, Radford and Klimov, "Proximal Policy
Optimization Algorithms", arXiv 2017) with generalised advantage estimation (Schulman et al.,
ICLR 2016), as LMRL-Gym runs it on its tasks (Abdulhai et al., "LMRL-Gym: Benchmarks for
Multi-Turn Reinforcement Learning with Language Models", ICML 2025, Section 5; ``docs/lmrl.md``):
initialised from BC, GAE λ = 0.95, clipped ratio 0.2, a KL penalty towards the BC policy in the
reward (0.01–0.1) and, on Wordle, a BC loss of weight 10 on the dataset; under 100k samples.

Why a loop of our own: TRL 1.16 has no PPO trainer (``PPOTrainer`` and the value-head models
were removed), and its ``GRPOTrainer`` drives environments only as tool calls in a chat
template, or through ``rollout_func`` as one completion per prompt scored once — no per-turn
rewards, no value function and so no GAE, and a whole 100-turn Maze episode would be one
sequence far beyond a tiny model's context. So the loop is here, CleanRL-style
(``ppo.py``: hyperparameters at the top, the loop in :meth:`PPOAgent.learn`):

1. **Policy.** BC through :class:`omnigym.llm_agents.bc.BCAgent` for ``bc_updates`` updates,
   or the BC checkpoint ``policy``; a frozen copy is the KL reference.
2. **Rollouts.** ``envs`` copies of the env in lockstep for ``steps`` turns (episodes reset as
   they end; the budget counts turns). An action is one utterance: where the env lists a few
   legal actions (and the policy decodes constrained) a draw from the softmax of their
   log-likelihoods, π(a | h) = p(a | h) / Σ_{a'} p(a' | h); where it lists many, a draw through
   their prefix tree, π(a | h) the product of each token's probability among the tokens the
   tree allows (:mod:`omnigym.llm_agents.constrained`); elsewhere a sampled line at
   temperature 1, π(a | h) = p(a | h), the product of its tokens' probabilities (end of
   sequence included).
3. **Rewards and advantages.** r − c·(log π(a | h) − log π_BC(a | h)) with c = ``kl_coef``;
   the value V(h) is a small MLP on the policy's hidden state at the prompt's last token,
   detached (LMRL-Gym reads its value head off the policy too; detached here so the value
   loss does not move the policy); GAE over turns with γ = 1 (the tasks' returns are
   undiscounted), bootstrapped from V at the rollout's end; advantages whitened.
4. **Updates.** ``epochs`` passes over minibatches of turns: the clipped surrogate on the
   utterance-level ratio π_new(a | h) / π_old(a | h), plus ``bc_weight`` × the BC loss (mean
   token negative log-likelihood of dataset turns; LMRL: 10 on Wordle, 0 elsewhere), and the
   value head's squared error on the returns divided by the task's scale (|min return|, at
   least 1).
5. **Play** is the BC policy's decoding (greedy, constrained where legal actions are listed),
   now with the fine-tuned weights.

Departures: utterance-level ratios and advantages (LMRL-Gym's PPO works per token with the
reward on the utterance's last token; the actions here are a few tokens long), turns counted
as samples, no entropy bonus (LMRL has none) and dropout off during the updates so the old and
new log-probabilities are those of one deterministic network. A sampled line is re-read in its
canonical tokenisation to score it, which can differ from the tokens generated; the ratio is
between two scorings of the same tokens, so the objective stays consistent.

Seeding, threads and checkpoints as :mod:`omnigym.llm_agents.mc_returns`: ``policy/`` (a BC
checkpoint of the fine-tuned weights), ``value.pt`` (state dict, ``weights_only=True``) and
``agent.json``. ``learning_curve`` holds (turns so far, return) of each finished training
episode, which the scenario runner plots.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch

import omnigym
from omnigym.llm_agents.bc import BCAgent, BCConfig
from omnigym.llm_agents.data import dataset_examples, load_records
from omnigym.llm_agents.mc_returns import (
    AGENT_FILE,
    POLICY_DIR,
    TurnBatch,
    completion_log_probs,
    decoder_parts,
    group_logsumexp,
    initial_bc,
    prompt_features,
    run_turns,
)
from omnigym.llm_agents.models import global_rng_preserved, require_llm_stack
from omnigym.llm_agents.policy import LMPolicy, env_id_of
from omnigym.threads import one_torch_thread

VALUE_FILE = "value.pt"
LMRL_BC_WEIGHTS = {"LMRL/Wordle-v0": 10.0}
"""LMRL-Gym's BC loss weight in PPO, per task (0 elsewhere)."""


@dataclass(frozen=True)
class PPOConfig:
    """Hyperparameters of PPO (module docstring)."""

    policy: str | None = None  # a BC checkpoint folder to start from; None: train BC first
    bc: dict[str, Any] = field(default_factory=dict)  # BCConfig fields of the BC stage
    bc_updates: int = 100  # BC updates when no checkpoint is given
    envs: int = 8  # environments played in lockstep
    steps: int = 32  # turns per environment per rollout
    epochs: int = 4
    minibatch: int = 32  # turns per update
    # AdamW, policy. At 1e-3 the tiny policies clipped 40-70 % of the ratios and collapsed on
    # Text-Nav FO to a loop that never finishes (normalized 0 on every seed); at 3e-4 the clip
    # fraction is 0.1-0.3 and PPO reached 94 there (Maze FO 68 instead of 13). Lower for SmolLM2.
    lr: float = 3e-4
    value_lr: float = 1e-3  # AdamW, value head
    gamma: float = 1.0
    lam: float = 0.95  # GAE
    clip: float = 0.2
    kl_coef: float = 0.05  # penalty on log π − log π_BC, in reward units
    bc_weight: float | None = None  # None: LMRL's (10 on Wordle, else 0)
    bc_minibatch: int = 16  # dataset turns per update for the BC loss
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        for name in ("bc_updates", "envs", "steps", "epochs", "minibatch", "bc_minibatch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("lr", "value_lr", "clip", "max_grad_norm"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        for name in ("gamma", "lam"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        for name in ("kl_coef", "bc_weight"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        BCConfig.from_dict(self.bc)


# ---- the pieces of PPO that can be checked by hand --------------------------------------------


def gae(
    rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, gamma: float, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and returns of a rollout, ``(T, E)`` each.

    ``rewards[t]`` and ``dones[t]`` (the episode ended with turn t) for t < T; ``values`` has
    T + 1 rows, the last being V of the state after the rollout (the bootstrap). δ_t = r_t +
    γ·V_{t+1}·(1 − done_t) − V_t and A_t = δ_t + γλ·(1 − done_t)·A_{t+1}; returns = A + V."""
    steps = rewards.shape[0]
    advantages = np.zeros_like(rewards, dtype=np.float64)
    running = np.zeros(rewards.shape[1:], dtype=np.float64)
    for t in reversed(range(steps)):
        alive = 1.0 - dones[t]
        delta = rewards[t] + gamma * values[t + 1] * alive - values[t]
        running = delta + gamma * lam * alive * running
        advantages[t] = running
    return advantages, advantages + values[:steps]


def clipped_surrogate(
    log_ratio: torch.Tensor, advantages: torch.Tensor, clip: float
) -> torch.Tensor:
    """PPO's loss, mean of max(−A·ρ, −A·clip(ρ, 1 − ε, 1 + ε)) with ρ = exp(log_ratio)."""
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - clip, 1 + clip)
    return torch.maximum(unclipped, clipped).mean()


def approximate_kl(log_ratio: torch.Tensor) -> torch.Tensor:
    """KL(old ‖ new) estimate E[(ρ − 1) − log ρ] (Schulman's k3), ρ = π_new / π_old."""
    return (torch.exp(log_ratio) - 1 - log_ratio).mean()


# ---- rollouts ------------------------------------------------------------------------------------


@dataclass
class Turn:
    """One agent turn of a rollout: the prompt, the utterances the action was drawn among
    (the legal actions, or the one sampled line), which one was played and its scores."""

    prompt: list[int]
    texts: list[str]
    candidates: list[list[int]]
    chosen: int
    log_prob: float
    reference_log_prob: float
    value: float
    allowed: list[torch.Tensor | None] | None = None  # per candidate, tokens the tree allows
    reward: float = 0.0
    done: bool = False


class PPOAgent:
    """PPO (module docstring): ``PPOAgent(env=None, seed=0, **hyperparameters)``, the
    hyperparameters being :class:`PPOConfig`'s fields.

    ``learn(env, budget)`` plays ``budget`` turns (rounded up to whole rollouts of
    ``envs × steps``) of ``env`` (a made env or an env id) and updates after each rollout.
    After it: ``policy``, ``learning_curve``, ``stats`` (per rollout: policy and value losses,
    KL to the old policy and to BC, clip fraction, finished episodes) and ``samples``.
    """

    name = "ppo"

    def __init__(self, env: Any = None, seed: int = 0, **hyperparameters: Any):
        self.config = PPOConfig(**hyperparameters)
        self.bc_config = BCConfig.from_dict(self.config.bc)
        self.env = env
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)
        self.bc: BCAgent | None = None
        self.reference: Any = None
        self.value_head: torch.nn.Module | None = None
        self.return_scale = 1.0
        self.samples = 0
        self.learning_curve: list[tuple[int, float]] = []
        self.stats: list[dict[str, float]] = []
        self._sampler: LMPolicy | None = None

    @property
    def policy(self) -> LMPolicy | None:
        return None if self.bc is None else self.bc.policy

    @property
    def env_id(self) -> str | None:
        return None if self.bc is None else self.bc.env_id

    def bc_weight(self, env_id: str) -> float:
        if self.config.bc_weight is not None:
            return float(self.config.bc_weight)
        return LMRL_BC_WEIGHTS.get(env_id, 0.0)

    # ---- training

    def learn(self, env: Any, budget: int) -> PPOAgent:
        """Train online for ``budget`` turns (class docstring); returns self."""
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"budget must be a positive int (turns), got {budget!r}")
        require_llm_stack()
        env_id = env if isinstance(env, str) else env_id_of(env)
        if env_id is None:
            raise ValueError("PPOAgent.learn needs a registered env or env id")
        config = self.config
        envs = [
            omnigym.make(env_id) if isinstance(env, str) else gymnasium.make(env.spec)
            for _ in range(config.envs)
        ]
        try:
            with one_torch_thread(), global_rng_preserved():
                torch.manual_seed(int(self._rng.integers(2**63)))
                self._start(env_id, envs[0])
                examples = self._bc_examples(env_id)
                optimizer = torch.optim.AdamW(self._trainable(), lr=config.lr, weight_decay=0.0)
                value_optimizer = torch.optim.AdamW(
                    self.value_head.parameters(), lr=config.value_lr, weight_decay=0.0
                )
                state = self._reset_all(envs)
                target = self.samples + budget
                while self.samples < target:
                    turns, bootstrap, state = self._rollout(envs, state)
                    self._update(turns, bootstrap, examples, optimizer, value_optimizer)
        finally:
            for made in envs:
                made.close()
        return self

    def _start(self, env_id: str, env: Any) -> None:
        """The BC stage (or checkpoint), the frozen reference and a fresh value head."""
        if self.bc is not None:
            if env_id != self.env_id:
                raise ValueError(f"this agent was trained on {self.env_id}, not {env_id}")
            return
        self.bc = initial_bc(self.config.policy, self.bc_config, int(self._rng.integers(2**31 - 1)))
        if self.bc.policy is None:
            data = self.bc.config
            records = load_records(env_id, data.dataset_episodes, data.dataset_seed)[1]
            self.bc.learn(records, self.config.bc_updates)
        self.return_scale = max(1.0, abs(float(getattr(env.unwrapped, "min_return", 1.0))))
        self._make_reference_and_value_head()

    def _make_reference_and_value_head(self) -> None:
        self.reference = copy.deepcopy(self.policy.lm.model).requires_grad_(False).eval()
        width = int(self.policy.lm.config.hidden_size)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(self._rng.integers(2**63)))
            self.value_head = torch.nn.Sequential(
                torch.nn.Linear(width, width), torch.nn.Tanh(), torch.nn.Linear(width, 1)
            )

    def _trainable(self) -> list[torch.nn.Parameter]:
        return [p for p in self.policy.lm.model.parameters() if p.requires_grad]

    def _bc_examples(self, env_id: str) -> list[Any]:
        """The dataset's agent turns for the BC loss (none when its weight is 0)."""
        if self.bc_weight(env_id) == 0:
            return []
        data = self.bc.config  # the policy's own dataset
        _, records = load_records(env_id, data.dataset_episodes, data.dataset_seed)
        return dataset_examples(records, env_id)

    def _reset_all(self, envs: Sequence[Any]) -> list[tuple[str, dict[str, Any], float]]:
        return [self._reset(env) for env in envs]

    def _reset(self, env: Any) -> tuple[str, dict[str, Any], float]:
        observation, info = env.reset(seed=int(self._rng.integers(2**31 - 1)))
        return observation, info, 0.0

    @torch.no_grad()
    def _rollout(
        self, envs: Sequence[Any], state: list[tuple[str, dict[str, Any], float]]
    ) -> tuple[list[list[Turn]], np.ndarray, list[tuple[str, dict[str, Any], float]]]:
        """``steps`` turns of every env: ``(turns[t][e], bootstrap values (E,), state)``."""
        turns = []
        for _ in range(self.config.steps):
            row = self._decide([obs for obs, _, _ in state], [info for _, info, _ in state])
            for e, (env, turn) in enumerate(zip(envs, row, strict=True)):
                observation, reward, terminated, truncated, info = env.step(turn.texts[turn.chosen])
                turn.reward, turn.done = float(reward), bool(terminated or truncated)
                self.samples += 1
                episode_return = state[e][2] + turn.reward
                if turn.done:
                    self.learning_curve.append((self.samples, episode_return))
                    state[e] = self._reset(env)
                else:
                    state[e] = (observation, info, episode_return)
            turns.append(row)
        bootstrap = self._values([self.policy.format.encode(obs) for obs, _, _ in state])
        return turns, bootstrap, state

    def _decide(self, observations: Sequence[str], infos: Sequence[Mapping[str, Any]]) -> list:
        """One :class:`Turn` per env: candidates, the draw, its log-probabilities and V."""
        policy = self.policy
        fmt = policy.format
        prompts = [fmt.encode(observation) for observation in observations]
        texts: list[list[str]] = []
        allowed: list[list[torch.Tensor | None]] = []
        free = []
        for e, info in enumerate(infos):
            legal = info.get("legal_actions") if policy.constrained else None
            if legal and len(legal) > policy.enumerate_limit:
                trie = policy.trie(legal)
                index, _ = trie.sample(policy.lm.model, prompts[e], 1, 1.0, self._rng)[0]
                texts.append([trie.actions[index]])
                allowed.append([trie.masks(trie.completions[index], policy.lm.vocab_size)])
                continue
            texts.append(list(legal) if legal else [])
            allowed.append([None] * len(texts[-1]))
            if not legal:
                free.append(e)
        if free:
            lines = self._sampler_policy().generate([observations[e] for e in free])
            for e, line in zip(free, lines, strict=True):
                texts[e], allowed[e] = [line], [None]
        candidates = [[fmt.completion(text) for text in options] for options in texts]
        batch, groups = self._batch(prompts, candidates, allowed)
        log_probs, states = self._log_probs(policy.lm.model, batch, groups)
        reference, _ = self._log_probs(self.reference, batch, groups)
        values = self.value_head(states)[:, 0].double().numpy() * self.return_scale
        row = []
        for e, (prompt, options) in enumerate(zip(prompts, candidates, strict=True)):
            span = groups[e]
            scores = log_probs[span].double().numpy()
            chosen = int(self._rng.choice(len(options), p=_softmax(scores)))
            row.append(
                Turn(
                    prompt=prompt,
                    texts=texts[e],
                    candidates=options,
                    chosen=chosen,
                    log_prob=float(scores[chosen]),
                    reference_log_prob=float(reference[span][chosen]),
                    value=float(values[e]),
                    allowed=allowed[e],
                )
            )
        return row

    def _batch(
        self,
        prompts: Sequence[list[int]],
        candidates: Sequence[Sequence[list[int]]],
        allowed: Sequence[Sequence[torch.Tensor | None] | None] | None = None,
    ) -> tuple[TurnBatch, list[slice]]:
        """The prompts and their candidates as one batch, and each prompt's span of candidates;
        ``allowed[e]`` the tokens each candidate of prompt ``e`` may take (None: all)."""
        allowed = allowed or [None] * len(candidates)
        completions, rows, groups, masks = [], [], [], []
        for e, (options, given) in enumerate(zip(candidates, allowed, strict=True)):
            option_masks = given or [None] * len(options)
            groups.append(slice(len(completions), len(completions) + len(options)))
            completions += options
            masks += option_masks
            rows += [e] * len(options)
        pad = self.policy.lm.pad_id
        return TurnBatch.build(prompts, completions, rows, pad, masks), groups

    @staticmethod
    def _log_probs(
        model: Any, batch: TurnBatch, groups: Sequence[slice]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """log π of every candidate (normalised over its prompt's group: the legal actions;
        a group of one keeps the line's own log-probability) and the prompt states."""
        body, head = decoder_parts(model)
        states, hidden = run_turns(body, batch)
        scores = completion_log_probs(head, states, hidden, batch)
        normaliser = group_logsumexp(scores, batch.rows, len(groups))
        sizes = torch.tensor([group.stop - group.start for group in groups])[batch.rows]
        log_probs = torch.where(sizes > 1, scores - normaliser[batch.rows], scores)
        return log_probs, states

    def _values(self, prompts: Sequence[list[int]]) -> np.ndarray:
        body, _ = decoder_parts(self.policy.lm.model)
        states = prompt_features(body, prompts, self.policy.lm.pad_id)
        return self.value_head(states)[:, 0].double().numpy() * self.return_scale

    def _update(
        self,
        turns: list[list[Turn]],
        bootstrap: np.ndarray,
        examples: Sequence[Any],
        optimizer: torch.optim.Optimizer,
        value_optimizer: torch.optim.Optimizer,
    ) -> None:
        """``epochs`` passes of clipped-surrogate, BC and value updates over the rollout."""
        config = self.config
        rewards = np.array([[t.reward for t in row] for row in turns])
        kl_to_bc = np.array([[t.log_prob - t.reference_log_prob for t in row] for row in turns])
        values = np.vstack([[[t.value for t in row] for row in turns], bootstrap[None]])
        dones = np.array([[float(t.done) for t in row] for row in turns])
        advantages, returns = gae(
            rewards - config.kl_coef * kl_to_bc, values, dones, config.gamma, config.lam
        )
        flat = [turn for row in turns for turn in row]
        advantages = advantages.reshape(-1)
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        returns = returns.reshape(-1) / self.return_scale
        bc_weight = self.bc_weight(self.env_id)
        record = {"policy_loss": 0.0, "value_loss": 0.0, "approx_kl": 0.0, "clip_fraction": 0.0}
        passes = 0
        model = self.policy.lm.model
        model.eval()  # no dropout: old and new log-probabilities of one network
        for _ in range(config.epochs):
            order = self._rng.permutation(len(flat))
            for start in range(0, len(flat), config.minibatch):
                index = order[start : start + config.minibatch]
                chosen = [flat[i] for i in index]
                batch, groups = self._batch(
                    [t.prompt for t in chosen],
                    [t.candidates for t in chosen],
                    [t.allowed for t in chosen],
                )
                log_probs, states = self._log_probs(model, batch, groups)
                new = log_probs[
                    torch.tensor([g.start + t.chosen for g, t in zip(groups, chosen, strict=True)])
                ]
                old = torch.tensor([t.log_prob for t in chosen])
                log_ratio = new - old.float()
                policy_loss = clipped_surrogate(
                    log_ratio, torch.tensor(advantages[index]).float(), config.clip
                )
                loss = policy_loss
                if bc_weight > 0 and examples:
                    loss = loss + bc_weight * self._bc_loss(examples)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self._trainable(), config.max_grad_norm)
                optimizer.step()
                value = self.value_head(states.detach())[:, 0]
                value_loss = 0.5 * ((value - torch.tensor(returns[index]).float()) ** 2).mean()
                value_optimizer.zero_grad()
                value_loss.backward()
                value_optimizer.step()
                with torch.no_grad():
                    ratio = torch.exp(log_ratio)
                    record["policy_loss"] += float(policy_loss)
                    record["value_loss"] += float(value_loss)
                    record["approx_kl"] += float(approximate_kl(log_ratio))
                    record["clip_fraction"] += float(
                        ((ratio - 1).abs() > config.clip).float().mean()
                    )
                passes += 1
        record = {key: value / passes for key, value in record.items()}
        record["kl_to_bc"] = float(kl_to_bc.mean())
        record["samples"] = float(self.samples)
        record["episodes"] = float(sum(turn.done for turn in flat))
        self.stats.append(record)

    def _bc_loss(self, examples: Sequence[Any]) -> torch.Tensor:
        """Mean token negative log-likelihood of ``bc_minibatch`` dataset turns."""
        fmt = self.policy.format
        index = self._rng.choice(
            len(examples), size=min(self.config.bc_minibatch, len(examples)), replace=False
        )
        chosen = [examples[i] for i in index]
        batch = TurnBatch.build(
            [fmt.encode(e.observation) for e in chosen],
            [fmt.completion(e.completion) for e in chosen],
            range(len(chosen)),
            self.policy.lm.pad_id,
        )
        body, head = decoder_parts(self.policy.lm.model)
        states, hidden = run_turns(body, batch)
        log_probs = completion_log_probs(head, states, hidden, batch)
        return -(log_probs.sum() / batch.completion_mask.sum())

    def _sampler_policy(self) -> LMPolicy:
        """The policy sampling lines at temperature 1 (unconstrained) during rollouts."""
        if self._sampler is None:
            policy = self.policy
            self._sampler = policy.variant(
                constrained=False,
                temperature=1.0,
                batch_size=self.config.envs,
                seed=int(self._rng.integers(2**31 - 1)),
                single_thread=True,
            )
        return self._sampler

    # ---- playing

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(self.seed if seed is None else seed)
        if self.policy is not None:
            self.policy.reset(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        if self.policy is None:
            raise RuntimeError("PPOAgent acts after learn() or load()")
        with one_torch_thread():
            return self.policy.act(observation, info)

    # ---- checkpoints

    def save(self, path: str | os.PathLike) -> None:
        """Write ``policy/`` (a BC checkpoint of the fine-tuned weights), ``value.pt`` and
        ``agent.json`` into folder ``path``."""
        if self.policy is None:
            raise RuntimeError("PPOAgent saves after learn() or load()")
        folder = Path(path)
        self.bc.save(folder / POLICY_DIR)
        torch.save(self.value_head.state_dict(), folder / VALUE_FILE)
        record = {
            "agent": self.name,
            "config": asdict(self.config),
            "return_scale": self.return_scale,
            "samples": self.samples,
            "learning_curve": self.learning_curve,
            "stats": self.stats,
        }
        (folder / AGENT_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")

    def load(self, path: str | os.PathLike) -> PPOAgent:
        """Read a folder of :meth:`save` (state dicts with ``weights_only=True``); returns self.
        The KL reference becomes the loaded policy."""
        folder = Path(path)
        record = json.loads((folder / AGENT_FILE).read_text(encoding="utf-8"))
        if record.get("agent") != self.name:
            raise ValueError(f"{folder} holds a {record.get('agent')!r} agent, not {self.name!r}")
        self.config = PPOConfig(**record["config"])
        self.bc_config = BCConfig.from_dict(self.config.bc)
        self.bc = BCAgent(seed=self.seed).load(folder / POLICY_DIR)
        self._sampler = None
        self._make_reference_and_value_head()
        state = torch.load(folder / VALUE_FILE, map_location="cpu", weights_only=True)
        self.value_head.load_state_dict(state)
        self.return_scale = float(record["return_scale"])
        self.samples = int(record["samples"])
        self.learning_curve = [(int(t), float(r)) for t, r in record["learning_curve"]]
        self.stats = [dict(entry) for entry in record["stats"]]
        return self


def _softmax(scores: np.ndarray) -> np.ndarray:
    weights = np.exp(scores - scores.max())
    return weights / weights.sum()
