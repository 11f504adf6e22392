"""FISOR-lite: feasibility-guided safe offline RL with a weighted-BC Gaussian or diffusion actor.

Follows FISOR (Zheng et al., "Safe Offline Reinforcement Learning with Feasibility-Guided Diffusion
Model", ICLR 2024), with a Gaussian actor by default (``docs/safety.md``). FISOR treats the
constraint as hard: a state is feasible when some in-support policy keeps the cost at zero
forever, and the agent maximises reward only there. The algorithm, top to bottom:

1. Cost as a constraint signal: h(s, a) = +25 where cost > 0, −1 otherwise (negative = safe).
2. Feasibility value (Hamilton–Jacobi reachability in discounted form):
   Q_h(s, a) ← (1 − γ)·h + γ·max(h, V_h(s′)) (just h at a terminal), and V_h is fitted to Q_h
   by a *reversed* expectile regression (τ = 0.9 on the low side), so V_h approaches the
   *smallest* in-support Q_h: the most feasible action the data shows.
3. Reward values by IQL: Q_r(s, a) ← r + γ·V_r(s′), V_r fitted to the target-network Q_r by an
   expectile 0.9 (the largest in-support Q_r).
4. Actor by weighted behaviour cloning (maximum likelihood of dataset actions), three cases:
   in a feasible state (V_h ≤ 0) an action that keeps it feasible (Q_h ≤ 0) weighs
   exp(3·(Q_r − V_r)), clipped at 100, and one that does not weighs 0; in an infeasible state
   (V_h > 0) every action weighs exp(5·(V_h − Q_h)) clipped to [1, 150]: the data's actions
   are copied, those that lower the feasibility value most the most. The floor of 1 is that of
   FISOR's published implementation (its actor update clips the infeasible weight to
   [1, cost_ub]); without it an infeasible state's actions weigh exp(5·(V_h − Q_h)) < 1
   wherever Q_h is above V_h, a low expectile, so most of them weigh nearly 0 and the actor
   learns little where it must recover (measured in ``docs/safety.md``).
5. At test time FISOR samples 16 actions from its diffusion actor and plays the one with the
   lowest Q_h. ``actor="diffusion"`` builds that actor (``diffusion.py``: a T = 5 DDPM trained
   by weighted denoising) and with ``candidates=16, candidate_spread=1`` plays that rule; the
   default Gaussian actor plays its mean action (``candidates`` > 1: the lowest-Q_h of the mean
   and samples).

Departures from the paper, each deliberate:

- by default the actor is the tanh-Gaussian MLP of ``omnigym.agents.safety.offline`` (the
  "lite" in the name), not FISOR's diffusion model (``actor="diffusion"``); the weight function
  is the same. A diffusion actor's
  samples stay in the data's support, a Gaussian's do not (its log-std reaches 2 where the
  weighted data has several modes), so the lowest-Q_h of its samples is an action the critic
  never saw: measured on Safe/PointRun-v0 (3,000 updates, seed 0, 10 episodes at κ = 5), the
  sampled rule played actions 1.0 away from the mean and cost 33× the threshold at normalized
  reward −1.25; the same networks with the mean action cost 0 at reward 0.42;
- 128 × 128 MLPs (FISOR's networks are larger), so that 30k updates fit the 5 minutes
  per (task, seed) budgeted for each baseline on two CPU cores;
- twin critics on both sides (the minimum of the reward pair, the maximum of the feasibility
  pair, the pessimistic side each time) with Polyak-averaged targets, as in IQL;
- observations are standardised with the dataset's mean and standard deviation (stored with the
  networks).
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import numpy as np
import torch
from torch import nn

from .diffusion import DEFAULT_STEPS, check_actor, make_actor
from .offline import (
    Batches,
    Normaliser,
    OfflineAgent,
    check_candidates,
    mlp,
    safest_candidate,
)

H_UNSAFE = 25.0  # h where the step costs (FISOR's value)
H_SAFE = -1.0  # h where it does not


def cost_to_h(costs: torch.Tensor) -> torch.Tensor:
    """FISOR's constraint signal: +25 where the cost is positive, −1 elsewhere."""
    return torch.where(costs > 0, torch.full_like(costs, H_UNSAFE), torch.full_like(costs, H_SAFE))


def feasibility_target(
    h: torch.Tensor, next_v_h: torch.Tensor, dones: torch.Tensor, gamma: float
) -> torch.Tensor:
    """The discounted reachability target (1 − γ)·h + γ·max(h, V_h(s′)); h alone at a terminal."""
    bootstrapped = (1.0 - gamma) * h + gamma * torch.maximum(h, next_v_h)
    return torch.where(dones > 0, h, bootstrapped)


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """Mean of |τ − 1(diff < 0)|·diff²; with diff = Q − V, V tends to the τ-expectile of Q.

    The reversed expectile of the feasibility side is ``expectile_loss(-diff, τ)``: V tends to
    the (1 − τ)-expectile, the low end of Q_h.
    """
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return (weight * diff.pow(2)).mean()


def policy_weights(
    q_r: torch.Tensor,
    v_r: torch.Tensor,
    q_h: torch.Tensor,
    v_h: torch.Tensor,
    reward_temperature: float = 3.0,
    cost_temperature: float = 5.0,
    reward_clip: float = 100.0,
    cost_clip: float = 150.0,
) -> torch.Tensor:
    """FISOR's behaviour-cloning weights (step 4 above): the reward advantage for a feasible
    state's feasible actions, 0 for its infeasible ones, the feasibility advantage clipped to
    [1, ``cost_clip``] in an infeasible state (exponents clipped before ``exp``)."""
    reward_weight = torch.exp(
        (reward_temperature * (q_r - v_r)).clamp(max=float(np.log(reward_clip)))
    )
    cost_weight = torch.exp(
        (cost_temperature * (v_h - q_h)).clamp(min=0.0, max=float(np.log(cost_clip)))
    )
    feasible_weight = torch.where(q_h <= 0, reward_weight, torch.zeros_like(reward_weight))
    return torch.where(v_h <= 0, feasible_weight, cost_weight)


class TwinQ(nn.Module):
    """Two independent Q(s, a) MLPs; ``forward`` returns both, stacked on the first axis."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: list[int]):
        super().__init__()
        self.first = mlp([obs_dim + act_dim, *hidden, 1])
        self.second = mlp([obs_dim + act_dim, *hidden, 1])

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, actions], dim=-1)
        return torch.stack([self.first(x).squeeze(-1), self.second(x).squeeze(-1)])


class FISORLite(OfflineAgent):
    """FISOR with a weighted-BC Gaussian actor (see the module docstring).

    Arguments: ``hidden`` (MLP widths of every network), ``lr``, ``batch_size``, ``gamma``,
    ``polyak`` (target-network step), ``reward_expectile`` and ``cost_expectile`` (τ of the two
    value regressions), ``reward_temperature``/``reward_clip`` and
    ``cost_temperature``/``cost_clip`` (the actor weights), ``candidates`` (1: the mean action,
    one sample for the diffusion actor; more: the lowest-Q_h of the mean and samples, of samples
    only for the diffusion actor) and ``candidate_spread`` (the samples' share of
    the actor's standard deviation, or the diffusion sampler's temperature); ``load`` takes new
    values of these two. ``actor`` is ``"gaussian"`` (default) or ``"diffusion"`` (FISOR's, with
    ``diffusion_steps`` denoising steps). FISOR needs no cost threshold: the constraint is "cost
    zero" throughout.

    ``losses`` holds one value per update for ``reward_q``, ``reward_v``, ``cost_q``,
    ``cost_v`` and ``actor``; ``regions`` counts the steps played in ``feasible`` states
    (V_h ≤ 0) and in ``infeasible`` ones since it was last cleared.
    """

    name = "fisor"
    acting_keys = ("candidates", "candidate_spread")

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        hidden: tuple[int, ...] | list[int] = (128, 128),
        lr: float = 3e-4,
        batch_size: int = 256,
        gamma: float = 0.99,
        polyak: float = 0.005,
        reward_expectile: float = 0.9,
        cost_expectile: float = 0.9,
        reward_temperature: float = 3.0,
        reward_clip: float = 100.0,
        cost_temperature: float = 5.0,
        cost_clip: float = 150.0,
        candidates: int = 1,
        candidate_spread: float = 1.0,
        actor: str = "gaussian",
        diffusion_steps: int = DEFAULT_STEPS,
    ):
        check_actor(actor, diffusion_steps)
        for key, value, low, high in (
            ("gamma", gamma, 0.0, 1.0),
            ("reward_expectile", reward_expectile, 0.0, 1.0),
            ("cost_expectile", cost_expectile, 0.0, 1.0),
            ("polyak", polyak, 0.0, 1.0),
        ):
            if not low < value < high:
                raise ValueError(f"{key} must lie in ({low}, {high}), got {value!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        check_candidates(candidates, candidate_spread)
        for key, value in (
            ("lr", lr),
            ("reward_temperature", reward_temperature),
            ("reward_clip", reward_clip),
            ("cost_temperature", cost_temperature),
            ("cost_clip", cost_clip),
        ):
            if not value > 0:
                raise ValueError(f"{key} must be positive, got {value!r}")
        super().__init__(
            env,
            seed,
            hidden=[int(width) for width in hidden],
            lr=lr,
            batch_size=batch_size,
            gamma=gamma,
            polyak=polyak,
            reward_expectile=reward_expectile,
            cost_expectile=cost_expectile,
            reward_temperature=reward_temperature,
            reward_clip=reward_clip,
            cost_temperature=cost_temperature,
            cost_clip=cost_clip,
            candidates=candidates,
            candidate_spread=candidate_spread,
            actor=actor,
            diffusion_steps=diffusion_steps,
        )
        self.losses: dict[str, list[float]] = {
            key: [] for key in ("reward_q", "reward_v", "cost_q", "cost_v", "actor")
        }
        self.regions: Counter[str] = Counter()

    def build(self, obs_dim: int, act_dim: int) -> None:
        hidden = self.config["hidden"]
        reward_q = TwinQ(obs_dim, act_dim, hidden)
        cost_q = TwinQ(obs_dim, act_dim, hidden)
        self.modules = {
            "normaliser": Normaliser(obs_dim),
            "reward_q": reward_q,
            "reward_q_target": copy.deepcopy(reward_q).requires_grad_(False),
            "reward_v": mlp([obs_dim, *hidden, 1]),
            "cost_q": cost_q,
            "cost_q_target": copy.deepcopy(cost_q).requires_grad_(False),
            "cost_v": mlp([obs_dim, *hidden, 1]),
            "actor": make_actor(
                self.config["actor"], obs_dim, act_dim, hidden, self.config["diffusion_steps"]
            ),
        }

    def train(self, data: dict[str, np.ndarray], budget: int) -> None:
        c = self.config
        m = self.modules
        if self.updates == 0:
            m["normaliser"].fit(np.asarray(data["observations"], dtype=np.float32))
        batches = Batches(data, self.seed + self.updates)
        # the diffusion actor's steps and noise (a stream of its own: the Gaussian draws none)
        generator = torch.Generator().manual_seed(7919 * (self.seed + 1) + self.updates)
        learned = ("reward_q", "reward_v", "cost_q", "cost_v", "actor")
        # The five losses touch disjoint parameters (every target is computed without
        # gradient), so one optimiser over their sum equals five separate Adam steps.
        optimiser = torch.optim.Adam(
            [p for key in learned for p in m[key].parameters()], lr=c["lr"], foreach=True
        )
        pairs = [
            pair
            for key in ("reward_q", "cost_q")
            for pair in zip(m[key].parameters(), m[f"{key}_target"].parameters(), strict=True)
        ]
        for _ in range(budget):
            batch = batches.sample(c["batch_size"])
            obs = m["normaliser"](batch["obs"])
            next_obs = m["normaliser"](batch["next_obs"])
            actions, dones = batch["actions"], batch["dones"]
            with torch.no_grad():
                q_r_target = m["reward_q_target"](obs, actions).min(0).values
                q_h_target = m["cost_q_target"](obs, actions).max(0).values
                next_v_r = m["reward_v"](next_obs).squeeze(-1)
                next_v_h = m["cost_v"](next_obs).squeeze(-1)

            # Value regressions: V_r towards the high expectile of Q_r, V_h towards the low one.
            v_r = m["reward_v"](obs).squeeze(-1)
            v_h = m["cost_v"](obs).squeeze(-1)
            losses = {
                "reward_v": expectile_loss(q_r_target - v_r, c["reward_expectile"]),
                "cost_v": expectile_loss(v_h - q_h_target, c["cost_expectile"]),
            }

            # Critics: IQL's Bellman backup and the feasibility backup.
            reward_target = batch["rewards"] + c["gamma"] * (1.0 - dones) * next_v_r
            losses["reward_q"] = (m["reward_q"](obs, actions) - reward_target).pow(2).sum(0).mean()
            h = cost_to_h(batch["costs"])
            cost_target = feasibility_target(h, next_v_h, dones, c["gamma"])
            losses["cost_q"] = (m["cost_q"](obs, actions) - cost_target).pow(2).sum(0).mean()

            # Actor: behaviour cloning weighted by the feasibility-switched advantages.
            weights = policy_weights(
                q_r_target,
                v_r.detach(),
                q_h_target,
                v_h.detach(),
                c["reward_temperature"],
                c["cost_temperature"],
                c["reward_clip"],
                c["cost_clip"],
            )
            fit = m["actor"].imitation_loss(obs, actions, generator)
            losses["actor"] = (weights * fit).mean()

            optimiser.zero_grad()
            sum(losses.values()).backward()
            optimiser.step()
            with torch.no_grad():
                for p, p_target in pairs:
                    p_target.lerp_(p, c["polyak"])
            for key, loss in losses.items():
                self.losses[key].append(float(loss.detach()))

    def feasibility(self, observations: np.ndarray) -> np.ndarray:
        """V_h of raw observations: ≤ 0 where some in-support policy keeps the cost at zero."""
        obs = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        with torch.no_grad():
            return self.modules["cost_v"](self.modules["normaliser"](obs))[:, 0].numpy()

    def policy_action(self, obs: torch.Tensor) -> np.ndarray:
        m = self.modules
        state = m["normaliser"](obs)
        if m["cost_v"](state)[0, 0] <= 0:
            self.regions["feasible"] += 1
        else:
            self.regions["infeasible"] += 1
        generator = torch.Generator().manual_seed(int(self.rng.integers(2**63)))
        action = safest_candidate(
            m["actor"],
            state,
            self.config["candidates"],
            lambda actions: m["cost_q"](state.expand(len(actions), -1), actions).max(0).values,
            generator,
            self.config["candidate_spread"],
        )
        return action.numpy()
