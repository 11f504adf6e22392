"""ILQL-lite: utterance-level implicit language Q-learning over a behaviour-cloned policy.

ILQL (Snell, Kostrikov, Su, Yang and Levine, "Offline RL for Natural Language Generation with
Implicit Language Q Learning", ICLR 2023), as LMRL-Gym runs it (Abdulhai et al., "LMRL-Gym:
Benchmarks for Multi-Turn Reinforcement Learning with Language Models", ICML 2025, Section 5;
``docs/lmrl.md``): Q and V heads over a language model, trained offline from the dataset's
rewards; V by expectile regression towards Q so that it approaches the best in-support action's
value without querying unseen actions; Q by one-step TD towards r + γ·V(h'); a conservative
term that pushes down the Q of actions the data did not take; decoding from the BC policy
perturbed by β·(Q − V). Per minibatch of agent turns (h, a, r, h'):

- Q loss ½·(Q(h, a) − (r/σ + γ·V(h')))², V(h') without gradient and 0 after the last turn;
- V loss ½·w·(Q̄(h, a) − V(h))² with w = τ where Q̄ ≥ V, else 1 − τ (expectile τ = 0.7), Q̄ the
  target Q head, a Polyak average (rate ``polyak``) of the Q head;
- conservative term α·(log Σ_{a' ∈ C(h)} exp Q(h, a') − Q(h, a)), C(h) the data action and
  ``negatives`` alternatives drawn from the other legal actions where the env lists them, else
  from the dataset's other agent utterances (α ∈ [1e−4, 1]; a sample of the alternatives keeps
  Text-Nav's dozen commands per room affordable).

Why "lite": Q and V are **utterance-level** — one value per candidate utterance, read at its
last token (:class:`~omnigym.llm_agents.mc_returns.UtteranceCritic`) — where ILQL's heads give
a value per next token and reweight every token's distribution. The actions of these tasks are
a few tokens long and the candidates few (legal moves, or k = 8 sampled utterances), so
reranking whole utterances keeps ILQL's objective while the CPU models never search over
tokens; the conservative term then ranges over utterances instead of the vocabulary. Also
departures: the target head reads the online body's (detached) features rather than a target
copy of the whole model (LMRL-Gym's ``target_base_params`` may be absent too), one Q head
instead of two, and a faster Polyak rate (0.05) for runs of hundreds of updates, not ILQL's
hundreds of thousands. Everything else — the BC stage, σ, candidates, reranking, seeding and
checkpoints — is :mod:`omnigym.llm_agents.mc_returns`'s, with the score β·(Q − V).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from omnigym.llm_agents.data import Example
from omnigym.llm_agents.mc_returns import (
    EncodedTurns,
    MCConfig,
    MCReturnsAgent,
    TurnBatch,
    UtteranceCritic,
    group_logsumexp,
    prompt_features,
)

ALPHA_RANGE = (1e-4, 1.0)
"""The conservative weights allowed (LMRL-Gym's range, ``docs/lmrl.md``)."""


@dataclass(frozen=True)
class ILQLConfig(MCConfig):
    """Hyperparameters of ILQL-lite: :class:`~omnigym.llm_agents.mc_returns.MCConfig`'s and
    the ones below (module docstring)."""

    tau: float = 0.7  # expectile of V
    alpha: float = 0.01  # weight of the conservative term, in [1e-4, 1]
    gamma: float = 0.99
    polyak: float = 0.05  # target head: Q̄ <- (1 - polyak) Q̄ + polyak Q after every update
    negatives: int = 4  # alternatives in C(h): other legal actions, or dataset utterances

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.tau < 1:
            raise ValueError(f"tau must be in (0, 1), got {self.tau!r}")
        low, high = ALPHA_RANGE
        if not (isinstance(self.alpha, (int, float)) and low <= self.alpha <= high):
            raise ValueError(f"alpha must be in [{low:g}, {high:g}], got {self.alpha!r}")
        if not 0 <= self.gamma <= 1:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma!r}")
        if not 0 < self.polyak <= 1:
            raise ValueError(f"polyak must be in (0, 1], got {self.polyak!r}")
        if isinstance(self.negatives, bool) or not isinstance(self.negatives, int):
            raise ValueError(f"negatives must be an int >= 0, got {self.negatives!r}")
        if self.negatives < 0:
            raise ValueError(f"negatives must be an int >= 0, got {self.negatives!r}")


def expectile_loss(difference: torch.Tensor, tau: float) -> torch.Tensor:
    """½·w·d² for ``difference`` d = target − prediction, w = τ where d ≥ 0 else 1 − τ
    (elementwise; ILQL's and IQL's V loss)."""
    weight = torch.where(difference >= 0, tau, 1 - tau)
    return 0.5 * weight * difference**2


def conservative_term(q: torch.Tensor, rows: torch.Tensor, data: torch.Tensor) -> torch.Tensor:
    """Mean over prompts of log Σ_{a' in the prompt's group} exp Q(h, a') − Q(h, a_data):
    ``q`` holds every candidate's Q, ``rows`` its prompt and ``data`` the index of each
    prompt's data action in ``q``."""
    return (group_logsumexp(q, rows, data.shape[0]) - q[data]).mean()


class ILQLLiteAgent(MCReturnsAgent):
    """ILQL-lite (module docstring): ``ILQLLiteAgent(env=None, seed=0, **hyperparameters)``,
    the hyperparameters being :class:`ILQLConfig`'s fields; the rest of the interface is
    :class:`~omnigym.llm_agents.mc_returns.MCReturnsAgent`'s."""

    name = "ilql_lite"
    config_class = ILQLConfig
    heads = ("q", "v", "q_target")

    def __init__(self, env: Any = None, seed: int = 0, **hyperparameters: Any):
        super().__init__(env, seed, **hyperparameters)
        self._utterances: list[str] = []

    def _fresh_critic(self, bias: float) -> UtteranceCritic:
        critic = super()._fresh_critic(bias)
        target = critic.heads["q_target"]
        target.load_state_dict(critic.heads["q"].state_dict())
        target.requires_grad_(False)
        return critic

    def prepare(self, examples: Sequence[Example]) -> None:
        self._utterances = sorted({example.completion for example in examples})

    def _alternatives(self, example: Example) -> list[str]:
        """C(h) minus the data action: ``negatives`` of the other legal actions where the env
        lists them, else of the dataset's other utterances, drawn without replacement."""
        if example.legal_actions:
            pool = [action for action in example.legal_actions if action != example.completion]
        else:
            pool = [text for text in self._utterances if text != example.completion]
        count = min(self.config.negatives, len(pool))
        return [pool[i] for i in self._rng.choice(len(pool), size=count, replace=False)]

    def critic_loss(
        self,
        examples: Sequence[Example],
        encoded: EncodedTurns,
        indices: np.ndarray,
    ) -> torch.Tensor:
        """Q (TD), V (expectile) and conservative losses on the minibatch ``indices``."""
        config, critic, fmt = self.config, self.critic, self.policy.format
        completions, rows, data = [], [], []
        for row, i in enumerate(indices):
            data.append(len(completions))
            completions.append(encoded[i][1])
            alternatives = [fmt.completion(text) for text in self._alternatives(examples[i])]
            completions += alternatives
            rows += [row] * (1 + len(alternatives))
        batch = TurnBatch.build(
            [encoded[i][0] for i in indices], completions, rows, self.policy.lm.pad_id
        )
        states, ends = critic.features(batch)
        q_all = critic.value("q", ends)
        data_index = torch.tensor(data)
        q = q_all[data_index]
        v = critic.value("v", states)
        with torch.no_grad():
            next_v = self._next_state_values(examples, encoded, indices)
            target_q = critic.value("q_target", ends[data_index])
        rewards = torch.tensor([examples[i].reward for i in indices]).float() / self.return_scale
        q_loss = 0.5 * ((q - (rewards + config.gamma * next_v)) ** 2).mean()
        v_loss = expectile_loss(target_q - v, config.tau).mean()
        conservative = conservative_term(q_all, batch.rows, data_index)
        return q_loss + v_loss + config.alpha * conservative

    def _next_state_values(
        self,
        examples: Sequence[Example],
        encoded: EncodedTurns,
        indices: np.ndarray,
    ) -> torch.Tensor:
        """V(h') of each turn's successor in its episode (examples are in episode order), 0
        after an episode's last turn."""
        successors = [
            i + 1
            if i + 1 < len(examples)
            and examples[i + 1].episode == examples[i].episode
            and examples[i + 1].turn == examples[i].turn + 1
            else None
            for i in indices
        ]
        values = torch.zeros(len(indices))
        present = [row for row, successor in enumerate(successors) if successor is not None]
        if present:
            prompts = [encoded[successors[row]][0] for row in present]
            states = prompt_features(self.critic.body, prompts, self.policy.lm.pad_id)
            values[present] = self.critic.value("v", states)
        return values

    def after_update(self) -> None:
        rate = self.config.polyak
        heads = self.critic.heads
        with torch.no_grad():
            for target, online in zip(
                heads["q_target"].parameters(), heads["q"].parameters(), strict=True
            ):
                target.mul_(1 - rate).add_(online, alpha=rate)

    def advantages(self, observation: str, actions: Sequence[str]) -> np.ndarray:
        """What β multiplies in the ranking: Q(h, a) − V(h)."""
        q, v = self.action_values(observation, actions)
        return q - v
