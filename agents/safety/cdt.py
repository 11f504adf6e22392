"""CDT-lite: a small Constrained Decision Transformer, one model for every cost threshold.

Follows CDT (Liu et al., "Constrained Decision Transformer for Offline Safe Reinforcement Learning",
ICML 2023) at small scale (``docs/safety.md``). Offline safe RL becomes sequence modelling: the
policy reads the last K steps as tokens (reward-to-go, cost-to-go, state, action) and predicts each
step's action from the tokens up to that step's state. The algorithm, top to bottom:

1. Training data are trajectory segments of K steps with their reward-to-go
   R̂_t = Σ_{t′≥t} r_{t′} and cost-to-go Ĉ_t = Σ_{t′≥t} c_{t′}; the loss is the mean squared
   error of the predicted actions.
2. A 2-layer causal transformer (``nn.TransformerEncoder`` with a causal mask over the 4K
   tokens) with a learned timestep embedding added to every token.
3. Pareto-frontier relabelling (CDT's data augmentation): the trajectories' (cost return, reward
   return) points give the frontier F(c) = the best reward return at cost ≤ c. The cost axis is
   cut into ``augment_bins`` bins; a bin whose best observed reward return is below F(its upper
   edge) — or that is empty — is a target the data answers badly. With probability
   ``augment_prob`` a training segment is taken from the frontier trajectory of such a bin
   instead, its cost-to-go raised by (c − its cost return) with c drawn uniformly in the bin:
   "with budget c, behave like the best trajectory that fits under c".
4. At test time the agent is conditioned on a target reward return (``target_return``, by
   default the frontier's reward at κ) and the cost threshold κ (``set_target_cost``: one
   model serves every κ); after each step the to-go values fall by the observed reward and
   cost.

Departures from the paper, each deliberate:

- small: embedding width 32, 2 heads, 32 segments of K = 10 steps per update (the paper's
  models are several times wider and train on far larger batches), so that 30k updates fit the
  5 minutes per (task, seed) budgeted for each baseline on two CPU cores;
- no dropout by default (DT and CDT use 0.1; on the CPU it halves the update rate);
- deterministic tanh action head trained by mean squared error (CDT: a stochastic Gaussian
  policy with an entropy regulariser);
- the relabelling works on cost bins of the dataset's own range, a simpler reading of CDT's
  frontier-based augmentation;
- training segments may run past the end of their episode: the missing steps are padded on the
  right and left out of the loss (causality makes the padding invisible to the real steps), so
  no attention padding mask is needed;
- the evaluator's loop gives ``act`` the step's ``info`` only: the cost comes from
  ``info["cost"]``, the reward from ``info["reward"]`` (the Safe envs repeat it there); with an
  environment that does not, the reward-to-go stays at its target.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from omnigym.envs.safety.core import check_target_cost
from omnigym.envs.safety.dsrl import episode_bounds

from .offline import OfflineAgent, resolve_target_cost

TOKENS_PER_STEP = 4  # reward-to-go, cost-to-go, state, action
STATE_TOKEN = 2
FRONTIER_POINTS = 64


def frontier_relabel_targets(
    reward_returns: np.ndarray, cost_returns: np.ndarray, bins: int
) -> list[tuple[float, float, int]]:
    """The relabelling targets ``(cost_low, cost_high, trajectory)`` of Pareto-frontier
    augmentation: cost bins whose best reward return is below the frontier at the bin's upper
    edge, each with the trajectory that attains the frontier there (cost return ≤ cost_low)."""
    rewards = np.asarray(reward_returns, dtype=np.float64)
    costs = np.asarray(cost_returns, dtype=np.float64)
    edges = np.linspace(costs.min(), costs.max(), bins + 1)
    # Bin b is (edge_b, edge_b+1]; the first bin also holds the lowest cost.
    bin_of = np.clip(np.searchsorted(edges, costs, side="left") - 1, 0, bins - 1)
    targets = []
    for b in range(bins):
        in_bin = bin_of == b
        under = costs <= edges[b + 1]
        best = int(np.flatnonzero(under)[np.argmax(rewards[under])])
        best_in_bin = rewards[in_bin].max() if in_bin.any() else -np.inf
        if best_in_bin < rewards[best]:
            targets.append((float(edges[b]), float(edges[b + 1]), best))
    return targets


class CausalTransformer(nn.Module):
    """Actions from (reward-to-go, cost-to-go, state, action) token sequences.

    ``forward(rtg, ctg, states, actions, timesteps)`` takes tensors of shapes (B, T), (B, T),
    (B, T, obs_dim), (B, T, act_dim), (B, T) and returns (B, T, act_dim): the action at step t
    predicted from the tokens up to the state of step t. The buffers hold the dataset's
    observation statistics, return scales and reward-cost frontier, so a checkpoint carries them.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        embed_dim: int,
        layers: int,
        heads: int,
        max_timestep: int,
        dropout: float,
    ):
        super().__init__()
        self.embed_rtg = nn.Linear(1, embed_dim)
        self.embed_ctg = nn.Linear(1, embed_dim)
        self.embed_state = nn.Linear(obs_dim, embed_dim)
        self.embed_action = nn.Linear(act_dim, embed_dim)
        self.embed_time = nn.Embedding(max_timestep, embed_dim)
        self.embed_norm = nn.LayerNorm(embed_dim)
        block = nn.TransformerEncoderLayer(
            embed_dim,
            heads,
            4 * embed_dim,
            dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.action_head = nn.Sequential(nn.Linear(embed_dim, act_dim), nn.Tanh())
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))
        self.register_buffer("return_scale", torch.ones(()))
        self.register_buffer("cost_scale", torch.ones(()))
        self.register_buffer("frontier_costs", torch.zeros(FRONTIER_POINTS))
        self.register_buffer("frontier_rewards", torch.zeros(FRONTIER_POINTS))
        self.max_timestep = max_timestep

    def forward(
        self,
        rtg: torch.Tensor,
        ctg: torch.Tensor,
        states: torch.Tensor,
        actions: torch.Tensor,
        timesteps: torch.Tensor,
    ) -> torch.Tensor:
        batch, steps = rtg.shape
        time = self.embed_time(timesteps.clamp(0, self.max_timestep - 1))
        tokens = torch.stack(
            [
                self.embed_rtg((rtg / self.return_scale).unsqueeze(-1)) + time,
                self.embed_ctg((ctg / self.cost_scale).unsqueeze(-1)) + time,
                self.embed_state((states - self.obs_mean) / self.obs_std) + time,
                self.embed_action(actions) + time,
            ],
            dim=2,
        ).reshape(batch, TOKENS_PER_STEP * steps, -1)
        length = TOKENS_PER_STEP * steps
        mask = nn.Transformer.generate_square_subsequent_mask(length, dtype=tokens.dtype)
        hidden = self.blocks(self.embed_norm(tokens), mask=mask, is_causal=True)
        state_tokens = hidden.reshape(batch, steps, TOKENS_PER_STEP, -1)[:, :, STATE_TOKEN]
        return self.action_head(state_tokens)

    def frontier_reward(self, cost: float) -> float:
        """The best reward return of the training data at cost return ≤ ``cost`` (the lowest
        cost's when ``cost`` is below every trajectory's)."""
        reachable = int(torch.searchsorted(self.frontier_costs, torch.tensor(cost), right=True))
        return float(self.frontier_rewards[max(reachable - 1, 0)])


class CDTLite(OfflineAgent):
    """The Constrained Decision Transformer at small scale (see the module docstring).

    Arguments: ``target_cost`` (κ, the cost-to-go at an episode's start; default the env's
    ``target_cost``), ``target_return`` (the reward-to-go at the start; ``None``: the training
    data's best reward return at cost ≤ κ), ``context`` (K steps), ``embed_dim``, ``layers``,
    ``heads``, ``dropout``, ``max_timestep`` (size of the timestep embedding), ``lr``,
    ``weight_decay``, ``batch_size`` (segments per update), ``grad_clip``, ``augment_prob`` and
    ``augment_bins`` (Pareto-frontier relabelling).

    ``losses`` holds the action loss of every update. ``reward_to_go`` and ``cost_to_go`` are
    the current conditioning values.
    """

    name = "cdt"
    target_cost_use = "act"

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        target_cost: float | None = None,
        target_return: float | None = None,
        context: int = 10,
        embed_dim: int = 32,
        layers: int = 2,
        heads: int = 2,
        dropout: float = 0.0,
        max_timestep: int = 1000,
        lr: float = 1e-4,
        weight_decay: float = 1e-4,
        batch_size: int = 32,
        grad_clip: float = 0.25,
        augment_prob: float = 0.2,
        augment_bins: int = 20,
    ):
        target_cost = resolve_target_cost(env, target_cost)
        for key, value in (
            ("context", context),
            ("embed_dim", embed_dim),
            ("layers", layers),
            ("heads", heads),
            ("max_timestep", max_timestep),
            ("batch_size", batch_size),
            ("augment_bins", augment_bins),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a positive int, got {value!r}")
        if embed_dim % heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be a multiple of heads ({heads})")
        for key, value in (("dropout", dropout), ("augment_prob", augment_prob)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{key} must lie in [0, 1], got {value!r}")
        for key, value in (("lr", lr), ("grad_clip", grad_clip)):
            if not value > 0:
                raise ValueError(f"{key} must be positive, got {value!r}")
        super().__init__(
            env,
            seed,
            target_cost=float(target_cost),
            target_return=None if target_return is None else float(target_return),
            context=context,
            embed_dim=embed_dim,
            layers=layers,
            heads=heads,
            dropout=dropout,
            max_timestep=max_timestep,
            lr=lr,
            weight_decay=weight_decay,
            batch_size=batch_size,
            grad_clip=grad_clip,
            augment_prob=augment_prob,
            augment_bins=augment_bins,
        )
        self.target_cost = float(target_cost)
        self.losses: list[float] = []
        self._new_episode()

    # ---- networks and training --------------------------------------------------------------

    def build(self, obs_dim: int, act_dim: int) -> None:
        c = self.config
        self.modules = {
            "transformer": CausalTransformer(
                obs_dim,
                act_dim,
                c["embed_dim"],
                c["layers"],
                c["heads"],
                c["max_timestep"],
                c["dropout"],
            ).eval()
        }

    def train(self, data: dict[str, np.ndarray], budget: int) -> None:
        c = self.config
        model = self.modules["transformer"]
        obs = np.asarray(data["observations"], dtype=np.float32)
        actions = np.asarray(data["actions"], dtype=np.float32)
        rewards = np.asarray(data["rewards"], dtype=np.float64)
        costs = np.asarray(data["costs"], dtype=np.float64)
        bounds = np.asarray(episode_bounds(data["terminals"], data["timeouts"]))
        starts, stops = bounds[:, 0], bounds[:, 1]
        lengths = stops - starts
        episode_of_row = np.repeat(np.arange(len(bounds)), lengths)
        timesteps = np.arange(len(obs)) - np.repeat(starts, lengths)
        rtg, ctg = _to_go(rewards, starts), _to_go(costs, starts)
        reward_returns, cost_returns = rtg[starts], ctg[starts]
        if self.updates == 0:
            self._fit_statistics(model, obs, reward_returns, cost_returns)
        targets = frontier_relabel_targets(reward_returns, cost_returns, c["augment_bins"])

        obs_t, actions_t = torch.as_tensor(obs), torch.as_tensor(actions)
        rtg_t = torch.as_tensor(rtg, dtype=torch.float32)
        ctg_t = torch.as_tensor(ctg, dtype=torch.float32)
        timesteps_t = torch.as_tensor(timesteps)
        offsets = np.arange(c["context"])
        rng = np.random.default_rng([self.seed, self.updates])
        optimiser = torch.optim.AdamW(
            model.parameters(), lr=c["lr"], weight_decay=c["weight_decay"], foreach=True
        )
        model.train()
        for _ in range(budget):
            first = rng.integers(len(obs), size=c["batch_size"])
            cost_shift = np.zeros(c["batch_size"])
            if targets:
                relabel = np.flatnonzero(rng.uniform(size=c["batch_size"]) < c["augment_prob"])
                for i in relabel:
                    low, high, trajectory = targets[rng.integers(len(targets))]
                    first[i] = starts[trajectory] + rng.integers(lengths[trajectory])
                    cost_shift[i] = rng.uniform(low, high) - cost_returns[trajectory]
            rows = first[:, None] + offsets
            valid = rows < stops[episode_of_row[first]][:, None]
            rows = torch.as_tensor(np.where(valid, rows, first[:, None]))
            mask = torch.as_tensor(valid, dtype=torch.float32).unsqueeze(-1)
            shift = torch.as_tensor(cost_shift, dtype=torch.float32).unsqueeze(-1)
            predicted = model(
                rtg_t[rows], ctg_t[rows] + shift, obs_t[rows], actions_t[rows], timesteps_t[rows]
            )
            squared = (predicted - actions_t[rows]).pow(2) * mask
            loss = squared.sum() / (mask.sum() * actions_t.shape[1])
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), c["grad_clip"])
            optimiser.step()
            self.losses.append(float(loss.detach()))
        model.eval()

    @staticmethod
    def _fit_statistics(
        model: CausalTransformer,
        obs: np.ndarray,
        reward_returns: np.ndarray,
        cost_returns: np.ndarray,
    ) -> None:
        model.obs_mean.copy_(torch.as_tensor(obs.mean(axis=0)))
        model.obs_std.copy_(torch.as_tensor(obs.std(axis=0) + 1e-3))
        model.return_scale.fill_(max(float(np.abs(reward_returns).max()), 1e-3))
        model.cost_scale.fill_(max(float(cost_returns.max()), 1.0))
        levels = np.linspace(cost_returns.min(), cost_returns.max(), FRONTIER_POINTS)
        best = [reward_returns[cost_returns <= level].max() for level in levels]
        model.frontier_costs.copy_(torch.as_tensor(levels, dtype=torch.float32))
        model.frontier_rewards.copy_(torch.as_tensor(best, dtype=torch.float32))

    # ---- acting -----------------------------------------------------------------------------

    def set_target_cost(self, target_cost: float) -> None:
        """Sets κ; within an episode the cost already spent still counts against it."""
        check_target_cost(target_cost)
        self.target_cost = float(target_cost)

    @property
    def target_return(self) -> float:
        """The reward-to-go at an episode's start."""
        if self.config["target_return"] is not None:
            return self.config["target_return"]
        return self.modules["transformer"].frontier_reward(self.target_cost)

    @property
    def reward_to_go(self) -> float:
        return self.target_return - self.reward_earned

    @property
    def cost_to_go(self) -> float:
        return self.target_cost - self.cost_spent

    def _new_episode(self) -> None:
        context = self.config["context"]
        self.history: dict[str, deque] = {
            key: deque(maxlen=context) for key in ("obs", "actions", "rtg", "ctg", "timesteps")
        }
        self.reward_earned = 0.0
        self.cost_spent = 0.0
        self.timestep = 0

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._new_episode()

    def act(self, observation: Any, info: Mapping[str, Any]) -> np.ndarray:
        if not self.modules:
            raise RuntimeError(f"{type(self).__name__}.act() before learn() or load()")
        if self.timestep > 0:  # the info of an episode's first call is the reset's
            self.cost_spent += float(info["cost"])
            self.reward_earned += float(info.get("reward", 0.0))
        history = self.history
        history["obs"].append(np.asarray(observation, dtype=np.float32).reshape(-1))
        history["rtg"].append(self.reward_to_go)
        history["ctg"].append(self.cost_to_go)
        history["timesteps"].append(self.timestep)
        # A placeholder for this step's action: the causal mask hides it from the prediction.
        history["actions"].append(np.zeros(self.dims[1], dtype=np.float32))
        action = super().act(observation, info)
        history["actions"][-1] = action
        self.timestep += 1
        return action

    def policy_action(self, obs: torch.Tensor) -> np.ndarray:
        h = self.history
        predicted = self.modules["transformer"](
            torch.tensor([list(h["rtg"])], dtype=torch.float32),
            torch.tensor([list(h["ctg"])], dtype=torch.float32),
            torch.as_tensor(np.stack(h["obs"]))[None],
            torch.as_tensor(np.stack(h["actions"]))[None],
            torch.tensor([list(h["timesteps"])]),
        )
        return predicted[0, -1].numpy()

    def load(self, path: Any) -> CDTLite:
        super().load(path)
        self.modules["transformer"].eval()
        self.target_cost = float(self.config["target_cost"])
        self._new_episode()
        return self


def _to_go(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Σ_{t′≥t} values within each episode (episodes start at ``starts``, run to the next)."""
    stops = np.append(starts[1:], len(values))
    cumulative = np.cumsum(values)
    episode_end = np.repeat(cumulative[stops - 1], stops - starts)
    return episode_end - cumulative + values
