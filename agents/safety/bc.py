"""Behaviour cloning baselines of offline safe RL: BC-All and BC-Safe.

Follows DSRL's baselines as implemented in OSRL (Liu et al., "Datasets and Benchmarks for
Offline Safe Reinforcement Learning", DMLR 2024; OSRL ``algorithms/bc.py`` with
``bc_mode="all"`` and ``"safe"``); ``docs/safety.md``.

Algorithm:

1. choose the training episodes — BC-All: every episode; BC-Safe: the episodes whose
   undiscounted cost return is at most κ (``target_cost``), as OSRL's ``process_bc_dataset``
   does with γ = 1;
2. regress a deterministic actor a = tanh(MLP(s)) on the dataset actions of those episodes by
   mean squared error, with Adam, on seeded minibatches of ``batch_size`` transitions;
3. act with the actor's output.

The loss is OSRL's (MSE on a deterministic tanh actor), not the likelihood of a Gaussian
policy: on the unimodal behaviour data of these tasks both fit the conditional mean, and the
MSE needs no variance head.

Departures from OSRL: a batch of 256 (OSRL 512) and a default budget of 30k updates (OSRL 300k),
so that one (task, seed) trains in minutes on two CPU cores; BC-Safe raises ``ValueError``
when no episode is within κ, where OSRL would train on an empty set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from omnigym.envs.safety.dsrl import select_trajectories, trajectory_returns

from .offline import (
    Batches,
    OfflineAgent,
    check_hidden,
    check_positive,
    mlp,
    resolve_target_cost,
)


class BCAll(OfflineAgent):
    """Behaviour cloning on every episode of the dataset (high reward, usually unsafe).

    Arguments: ``hidden`` (actor MLP widths, default 256×256), ``lr`` (Adam, 1e-3),
    ``batch_size`` (256). After ``learn``, ``selected_episodes`` holds the indices of the
    episodes trained on and ``losses`` the MSE of every update.
    """

    name = "bc_all"

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        hidden: Sequence[int] = (256, 256),
        lr: float = 1e-3,
        batch_size: int = 256,
    ):
        check_positive("lr", lr)
        check_positive("batch_size", batch_size, integer=True)
        super().__init__(env, seed, hidden=check_hidden(hidden), lr=lr, batch_size=batch_size)
        self.selected_episodes = np.zeros(0, dtype=np.int64)
        self.losses: list[float] = []

    def select_episodes(self, data: dict[str, np.ndarray]) -> np.ndarray:
        """Indices of the episodes to imitate: all of them."""
        return np.arange(len(trajectory_returns(data)[0]))

    def build(self, obs_dim: int, act_dim: int) -> None:
        actor = nn.Sequential(mlp([obs_dim, *self.config["hidden"], act_dim]), nn.Tanh())
        self.modules = {"actor": actor}
        self.optimiser = torch.optim.Adam(actor.parameters(), lr=self.config["lr"])

    def train(self, data: dict[str, np.ndarray], budget: int) -> None:
        self.selected_episodes = self.select_episodes(data)
        episodes = select_trajectories(data, self.selected_episodes)
        # A second learn() continues with fresh minibatches rather than replaying the first.
        batches = Batches(episodes, self.seed + self.updates)
        actor = self.modules["actor"]
        for _ in range(budget):
            batch = batches.sample(self.config["batch_size"])
            loss = (actor(batch["obs"]) - batch["actions"]).pow(2).mean()
            self.optimiser.zero_grad()
            loss.backward()
            self.optimiser.step()
            self.losses.append(loss.item())

    def policy_action(self, obs: torch.Tensor) -> np.ndarray:
        return self.modules["actor"](obs).numpy()


class BCSafe(BCAll):
    """Behaviour cloning on the episodes whose cost return is at most κ = ``target_cost``.

    ``target_cost`` defaults to the env's κ when an env is given and is required otherwise.
    ``learn`` raises ``ValueError`` when no episode of the dataset is within κ.
    """

    name = "bc_safe"
    target_cost_use = "train"

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        target_cost: float | None = None,
        hidden: Sequence[int] = (256, 256),
        lr: float = 1e-3,
        batch_size: int = 256,
    ):
        kappa = resolve_target_cost(env, target_cost)
        super().__init__(env, seed, hidden=hidden, lr=lr, batch_size=batch_size)
        self.config["target_cost"] = kappa

    def select_episodes(self, data: dict[str, np.ndarray]) -> np.ndarray:
        """Indices of the episodes with cost return ≤ κ; ``ValueError`` when there are none."""
        cost_returns = trajectory_returns(data)[1]
        kappa = self.config["target_cost"]
        safe = np.flatnonzero(cost_returns <= kappa)
        if len(safe) == 0:
            lowest = float(cost_returns.min()) if len(cost_returns) else float("nan")
            raise ValueError(
                f"no episode has cost return <= target_cost={kappa:g} "
                f"({len(cost_returns)} episodes, lowest cost return {lowest:g})"
            )
        return safe
