"""How the C-3PO proxy is trained: supervised fine-tuning on teacher paths, then reinforcement
learning with tree-structured rollouts and Monte-Carlo credit per node, PPO grouped by role
(Chen et al., ICML 2025; ``docs/c3po.md``). Read top to bottom:

1. :class:`C3POConfig`: every setting, with its default.
2. :func:`teacher_decisions`: the shortest successful path of each training question
   (:class:`~.search.TreeSearch`), as (observation, role, target) decisions.
3. :func:`sft`: cross-entropy on those targets (soft over equally short choices; per-passage
   keep labels for the filter), each role's loss averaged on its own, then summed.
4. :func:`tree_rollout`: one question's rollout tree. At the root the router tries all three
   strategies; below, each node samples ``query_samples``, ``filter_samples`` or
   ``decider_samples`` actions from the current proxy (duplicates merged); every leaf is
   scored by the reader (1 correct, 0 not). A node's :func:`credit` is the mean leaf reward
   below it (children weighted by how often they were sampled), and an action's advantage is
   its child's credit minus the node's.
5. :func:`trajectory`: the single-trajectory baseline: one sampled episode, every action's
   advantage the outcome minus the update's mean outcome.
6. :func:`ppo_update`: PPO's clipped objective with an entropy bonus, nodes grouped by role:
   advantages scaled per role and each role's loss averaged on its own, so that the many
   filter and query nodes do not drown the few router nodes.
7. :func:`reinforce`: the loop; its budget is environment calls (``env.step``), counted the
   same way for both kinds of rollout, so they compare at equal cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import torch

from .proxy import DOCS, FILTER, HEADS, ROUTER, Batch, ProxyNetwork, env_action, featurise
from .search import Decision, TreeSearch

ROLL_OUTS = ("tree", "outcome")


@dataclass
class C3POConfig:
    """The proxy's size and training settings (module docstring)."""

    width: int = 128
    layers: int = 2
    heads: int = 4
    # teacher paths and supervised fine-tuning
    sft_questions: int = 1000
    sft_epochs: int = 16
    sft_batch: int = 64
    sft_lr: float = 1e-3
    # reinforcement learning
    rl_lr: float = 1e-4
    calls_per_update: int = 400
    query_samples: int = 2
    filter_samples: int = 2
    decider_samples: int = 3
    ppo_epochs: int = 4
    clip: float = 0.2
    entropy: float = 0.01

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> C3POConfig:
        """A config from keyword settings, an unknown name raising ``ValueError``."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ValueError(f"unknown C-3PO settings {unknown} (known: {sorted(known)})")
        return cls(**settings)

    def network(self) -> ProxyNetwork:
        return ProxyNetwork(self.width, self.layers, self.heads)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- 2. teacher paths --------------------------------------------------------------------------


def teacher_decisions(env: Any, questions: Sequence[int], split: str = "train") -> list[Decision]:
    """The teacher decisions of ``questions`` (indices into ``split``) on the unwrapped
    ``env``; questions no path answers give none."""
    decisions = []
    for index in questions:
        observation, _ = env.reset(options={"question": int(index), "split": split})
        decisions += TreeSearch(env).teacher_path(observation)
    return decisions


# ---- 3. supervised fine-tuning ------------------------------------------------------------------


def _sft_loss(network: ProxyNetwork, batch: Batch, targets: torch.Tensor) -> torch.Tensor:
    logits = network.logits(batch)
    losses = []
    for role, head in enumerate(HEADS):
        rows = batch.role == role
        if not rows.any():
            continue
        if role == FILTER:
            valid = ~batch.empty[rows][:, DOCS]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits[head][rows], targets[rows, :10], reduction="none"
            )
            losses.append(((loss * valid).sum(-1) / valid.sum(-1).clamp(min=1)).mean())
        else:
            width = logits[head].shape[1]
            log_p = torch.log_softmax(logits[head][rows], -1)
            losses.append(-(targets[rows, :width] * log_p).sum(-1).mean())
    return torch.stack(losses).sum()


def sft(
    network: ProxyNetwork, decisions: Sequence[Decision], config: C3POConfig, seed: int
) -> list[float]:
    """Fine-tune ``network`` on the teacher ``decisions``; returns the mean loss per epoch."""
    generator = torch.Generator().manual_seed(seed)
    batch = featurise([d.observation for d in decisions])
    targets = torch.zeros(len(decisions), 16)
    for row, decision in enumerate(decisions):
        targets[row, : len(decision.target)] = torch.tensor(decision.target)
    optimizer = torch.optim.Adam(network.parameters(), lr=config.sft_lr)
    curve = []
    network.train()
    for _ in range(config.sft_epochs):
        order = torch.randperm(len(decisions), generator=generator)
        losses = []
        for start in range(0, len(order), config.sft_batch):
            rows = order[start : start + config.sft_batch]
            loss = _sft_loss(network, batch.index(rows), targets[rows])
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
        curve.append(float(np.mean(losses)))
    network.eval()
    return curve


# ---- 4.-5. rollouts -----------------------------------------------------------------------------


@dataclass
class Rollout:
    """The PPO samples of one rollout: featurised observations, actions (B, 10), their
    log-probabilities when sampled and their advantages; the environment calls it took and the
    mean leaf (or episode) reward."""

    batch: list[Batch]
    actions: list[torch.Tensor]
    log_probs: list[float]
    advantages: list[float]
    calls: int = 0
    reward: float = 0.0


def _samples(role: int, config: C3POConfig) -> int:
    return (1, config.query_samples, config.filter_samples, config.decider_samples)[role]


@dataclass
class TreeNode:
    """A node of a rollout tree: a leaf holds the reader's ``reward``; an inner node holds its
    children with how often each was sampled."""

    reward: float | None = None
    children: list[tuple[int, TreeNode]] = field(default_factory=list)


def credit(node: TreeNode) -> float:
    """Monte-Carlo credit: the mean leaf reward below ``node``, each child weighted by how
    often it was sampled."""
    if node.reward is not None:
        return node.reward
    total = sum(count for count, _ in node.children)
    return sum(count * credit(child) for count, child in node.children) / total


def tree_rollout(
    env: Any, network: ProxyNetwork, question: int, config: C3POConfig, generator: torch.Generator
) -> Rollout:
    """One question's rollout tree (module docstring, step 4) on the unwrapped ``env``."""
    rollout = Rollout([], [], [], [])
    edges: list[tuple[TreeNode, TreeNode]] = []
    observation, _ = env.reset(options={"question": int(question), "split": "train"})

    def expand(state: dict, observation: dict) -> TreeNode:
        role = int(observation["role"])
        batch = featurise([observation])
        if role == ROUTER and not state["steps"]:
            actions = torch.zeros(3, 10, dtype=torch.long)
            actions[:, 0] = torch.arange(3)
            counts = [1, 1, 1]
            with torch.no_grad():
                log_probs, _ = network.log_prob(
                    batch.index(torch.zeros(3, dtype=torch.long)), actions
                )
        else:
            actions, log_probs, counts = network.sample(batch, generator, _samples(role, config))
            counts = counts.tolist()
        node = TreeNode()
        for action, count, log_prob in zip(actions, counts, log_probs, strict=True):
            env.set_state(state)
            child_observation, reward, done, _, _ = env.step(env_action(role, action))
            rollout.calls += 1
            child = TreeNode(reward=reward) if done else expand(env.get_state(), child_observation)
            node.children.append((count, child))
            rollout.batch.append(batch)
            rollout.actions.append(action)
            rollout.log_probs.append(float(log_prob))
            edges.append((node, child))
        return node

    root = expand(env.get_state(), observation)
    rollout.advantages = [credit(child) - credit(parent) for parent, child in edges]
    rollout.reward = credit(root)
    return rollout


def trajectory(
    env: Any, network: ProxyNetwork, question: int, generator: torch.Generator
) -> Rollout:
    """One sampled episode (module docstring, step 5); advantages are filled in later."""
    rollout = Rollout([], [], [], [])
    observation, _ = env.reset(options={"question": int(question), "split": "train"})
    done = False
    while not done:
        batch = featurise([observation])
        actions, log_probs, _ = network.sample(batch, generator, 1)
        action = actions[0]
        rollout.batch.append(batch)
        rollout.actions.append(action)
        rollout.log_probs.append(float(log_probs[0]))
        observation, reward, done, _, _ = env.step(env_action(int(observation["role"]), action))
        rollout.calls += 1
    rollout.reward = float(reward)
    return rollout


# ---- 6. PPO grouped by role ---------------------------------------------------------------------


def ppo_update(
    network: ProxyNetwork, optimizer: torch.optim.Optimizer, rollouts: Sequence[Rollout],
    config: C3POConfig,
) -> float:  # fmt: skip
    """PPO epochs on the samples of ``rollouts`` (module docstring, step 6); returns the last
    epoch's loss."""
    batch = Batch.concat([b for r in rollouts for b in r.batch])
    actions = torch.stack([a for r in rollouts for a in r.actions])
    old = torch.tensor([p for r in rollouts for p in r.log_probs])
    advantages = torch.tensor([a for r in rollouts for a in r.advantages], dtype=torch.float32)
    groups = [batch.role == role for role in range(4) if (batch.role == role).any()]
    for rows in groups:
        scale = advantages[rows].std() if rows.sum() > 1 else torch.tensor(0.0)
        if scale > 1e-6:
            advantages[rows] = advantages[rows] / scale
    network.train()
    for _ in range(config.ppo_epochs):
        log_probs, entropy = network.log_prob(batch, actions)
        ratio = torch.exp(log_probs - old)
        clipped = torch.clamp(ratio, 1 - config.clip, 1 + config.clip)
        per_sample = -torch.minimum(ratio * advantages, clipped * advantages)
        per_sample = per_sample - config.entropy * entropy
        loss = torch.stack([per_sample[rows].mean() for rows in groups]).sum()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
    network.eval()
    return float(loss.detach())


# ---- 7. the loop ---------------------------------------------------------------------------------


def reinforce(
    env: Any,
    network: ProxyNetwork,
    config: C3POConfig,
    budget: int,
    rollout: str,
    seed: int,
    on_update: Callable[[dict[str, float]], None] | None = None,
) -> list[tuple[int, float]]:
    """RL on the unwrapped ``env``'s training questions for ``budget`` environment calls with
    ``rollout`` ``"tree"`` or ``"outcome"``; returns the (calls, mean reward) curve."""
    if rollout not in ROLL_OUTS:
        raise ValueError(f"rollout must be one of {ROLL_OUTS}, got {rollout!r}")
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(network.parameters(), lr=config.rl_lr)
    count = len(env.world.questions["train"])
    calls, curve = 0, []
    while calls < budget:
        rollouts, used = [], 0
        while used < min(config.calls_per_update, budget - calls):
            question = int(rng.integers(count))
            if rollout == "tree":
                rollouts.append(tree_rollout(env, network, question, config, generator))
            else:
                rollouts.append(trajectory(env, network, question, generator))
            used += rollouts[-1].calls
        if rollout == "outcome":
            baseline = float(np.mean([r.reward for r in rollouts]))
            for r in rollouts:
                r.advantages = [r.reward - baseline] * len(r.actions)
        loss = ppo_update(network, optimizer, rollouts, config)
        calls += used
        reward = float(np.mean([r.reward for r in rollouts]))
        curve.append((calls, reward))
        if on_update is not None:
            on_update({"calls": calls, "reward": reward, "loss": loss})
    return curve
