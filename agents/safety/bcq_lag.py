"""BCQ-Lagrangian: batch-constrained Q-learning with a cost critic and a PID-Lagrangian multiplier.

Follows BCQ (Fujimoto, Meger, Precup, "Off-Policy Deep Reinforcement Learning without
Exploration", ICML 2019) extended to constraints as OSRL's BCQ-L baseline of DSRL (Liu et al.,
DMLR 2024; OSRL ``algorithms/bcql.py``), with the PID Lagrangian of Stooke, Achiam, Abbeel
("Responsive Safety in Reinforcement Learning by PID Lagrangian Methods", ICML 2020);
``docs/safety.md``.

Algorithm, per gradient update on a minibatch (s, a, r, c, s′, d):

1. CVAE behaviour model G(a | s): encoder q(z | s, a) = N(μ, σ), decoder a = tanh(D(s, z));
   loss ‖D(s, z) − a‖² + β·KL(q ‖ N(0, I)), z = μ + σ·ε.
2. Critics: twin reward critics Q_r1, Q_r2 and a cost critic Q_c, each with a target copy.
   At s′, n candidates a′_j = ξ′(s′, D(s′, z_j)) (z_j ~ N(0, I) clipped to [−0.5, 0.5], ξ′ the
   target perturbation actor) give
   y_r = r + γ(1 − d)·max_j [λ_q·min(Q′_r1, Q′_r2) + (1 − λ_q)·max(Q′_r1, Q′_r2)](s′, a′_j),
   y_c = c + γ(1 − d)·max_j Q′_c(s′, a′_j)  (the costliest candidate: a pessimistic target).
3. Perturbation actor ξ(s, a) = clip(a + Φ·tanh(P(s, a)), −1, 1) on a = D(s, z):
   loss −min(Q_r1, Q_r2)(s, ξ) + λ·(Q_c(s, ξ) − q_c), with λ from the PID controller.
4. PID Lagrangian on the batch mean of Q_c(s, ξ) against the per-step threshold
   q_c = κ·(1 − γ^T) / ((1 − γ)·T) (OSRL's: the discounted value of spending κ/T per step for
   T steps; κ = ``target_cost``, T = ``episode_len``): with e = mean Q_c − q_c,
   I ← max(0, I + e), λ ← max(0, K_P·e + K_I·I + K_D·max(0, e − e_prev)).
5. Soft target updates θ′ ← τ·θ + (1 − τ)·θ′ for ξ′, Q′_r1, Q′_r2 and Q′_c.

Acting: n candidates ξ(s, D(s, z_j)), the one maximising min(Q_r1, Q_r2) − λ·Q_c is taken
(BCQ's arg max over candidates with the Lagrangian objective).

Departures from OSRL, each deliberate:

- one cost critic instead of a twin; its target takes the costliest candidate, where OSRL's
  takes the candidate of highest λ_q-mixed twin value (a mix that leans on the twin minimum,
  optimistic for a cost);
- the cost target is cut at terminal states (OSRL bootstraps costs through them);
- the PID keeps the proportional term signed, as Stooke et al.'s algorithm does; OSRL rectifies
  it, so that there a cost estimate rising while still under the threshold already gives λ > 0;
- test-time actions are BCQ's best of n candidates under Q_r − λ·Q_c; OSRL acts with a single
  decoded and perturbed sample;
- CPU scale: hidden layers 128×128 for every network (OSRL: 256×256, the CVAE 400×400), batch
  256 (OSRL 512), a default budget of 30k updates (OSRL 100k), no reward scaling. The n = 10
  candidate targets dominate the cost of an update (about 3 GFLOP at 256×256, a quarter of that
  at 128×128), and only the smaller width brings 30k updates near the five minutes per
  (task, seed) budgeted for each baseline on two CPU cores;
- the three critics are one batched module (``Critics``) with one Adam optimiser, which is the
  same computation as three MLPs with three optimisers in fewer, larger operations.
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from omnigym.envs.safety.dsrl import trajectory_returns

from .offline import (
    Batches,
    OfflineAgent,
    check_hidden,
    check_positive,
    mlp,
    resolve_target_cost,
)

LOG_STD_MIN, LOG_STD_MAX = -4.0, 15.0  # BCQ's clamp on the CVAE encoder's log σ
LATENT_CLIP = 0.5  # BCQ samples the decoder's latent from N(0, I) clipped to ±0.5


def per_step_cost_threshold(target_cost: float, gamma: float, horizon: int) -> float:
    """OSRL's Q_c threshold: the discounted value of a cost of κ/T per step for T steps."""
    return target_cost * (1.0 - gamma**horizon) / ((1.0 - gamma) * horizon)


class CVAE(nn.Module):
    """Conditional VAE over actions: ``forward`` reconstructs, ``decode`` samples in-support."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int]):
        super().__init__()
        self.latent_dim = 2 * act_dim
        self.encoder = mlp([obs_dim + act_dim, *hidden, 2 * self.latent_dim])
        self.decoder = mlp([obs_dim + self.latent_dim, *hidden, act_dim])

    def forward(
        self, obs: torch.Tensor, actions: torch.Tensor, noise: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, log_std = self.encoder(torch.cat([obs, actions], -1)).chunk(2, -1)
        std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        return self.decode(obs, mean + std * noise), mean, std

    def decode(self, obs: torch.Tensor, latent: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.decoder(torch.cat([obs, latent], -1)))


class Perturbation(nn.Module):
    """ξ(s, a) = clip(a + Φ·tanh(P(s, a)), −1, 1): a bounded correction of a behaviour action."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int], phi: float):
        super().__init__()
        self.net = mlp([obs_dim + act_dim, *hidden, act_dim])
        self.phi = phi

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        shift = self.phi * torch.tanh(self.net(torch.cat([obs, actions], -1)))
        return (actions + shift).clamp(-1.0, 1.0)


class Critics(nn.Module):
    """The three critics Q_r1, Q_r2, Q_c (independent MLPs over (s, a)) evaluated in one
    batched pass: ``forward`` returns a (3, rows) tensor, one row per critic.

    Stacking the weights of equally shaped MLPs turns three small matrix products per layer
    into one batched product (fewer operations to dispatch on the CPU). Each slice is
    initialised as ``nn.Linear`` would be.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int], members: int = 3):
        super().__init__()
        sizes = [obs_dim + act_dim, *hidden, 1]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            bound = fan_in**-0.5
            weight = torch.empty(members, fan_in, fan_out).uniform_(-bound, bound)
            self.weights.append(nn.Parameter(weight))
            self.biases.append(
                nn.Parameter(torch.empty(members, 1, fan_out).uniform_(-bound, bound))
            )

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, actions], -1).expand(len(self.weights[0]), -1, -1)
        for layer, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = torch.baddbmm(bias, x, weight)
            if layer < len(self.weights) - 1:
                x = torch.relu(x)
        return x.squeeze(-1)


class PIDLagrangian(nn.Module):
    """Stooke et al.'s PID-controlled Lagrange multiplier; its state is kept in buffers so that
    checkpoints carry it.

    ``update(cost_value, threshold)`` with e = cost_value − threshold does I ← max(0, I + e) and
    λ ← max(0, K_P·e + K_I·I + K_D·max(0, e − e_prev)), and returns λ.
    """

    def __init__(self, kp: float, ki: float, kd: float):
        super().__init__()
        self.kp, self.ki, self.kd = kp, ki, kd
        self.register_buffer("integral", torch.zeros((), dtype=torch.float64))
        self.register_buffer("previous_error", torch.zeros((), dtype=torch.float64))
        self.register_buffer("multiplier", torch.zeros((), dtype=torch.float64))

    def update(self, cost_value: float, threshold: float) -> float:
        error = float(cost_value) - float(threshold)
        integral = max(0.0, float(self.integral) + error)
        rise = max(0.0, error - float(self.previous_error))
        multiplier = max(0.0, self.kp * error + self.ki * integral + self.kd * rise)
        self.integral.fill_(integral)
        self.previous_error.fill_(error)
        self.multiplier.fill_(multiplier)
        return multiplier


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """θ′ ← τ·θ + (1 − τ)·θ′ for every parameter."""
    with torch.no_grad():
        for target_param, param in zip(target.parameters(), source.parameters(), strict=True):
            target_param.lerp_(param, tau)


def _check_fraction(name: str, value: Any, low_open: bool, high_open: bool) -> None:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        ok = (value > 0 if low_open else value >= 0) and (value < 1 if high_open else value <= 1)
    if not ok:
        interval = f"{'(' if low_open else '['}0, 1{')' if high_open else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")


class BCQLag(OfflineAgent):
    """BCQ with twin reward critics, a cost critic and a PID-Lagrangian multiplier.

    Arguments: ``target_cost`` κ (default: the env's; required without an env), ``hidden``
    (every network, 128×128), ``lr`` (Adam for all networks, 1e-3), ``batch_size`` (256),
    ``gamma`` (0.99), ``tau`` (target update rate, 0.005), ``phi`` (perturbation bound Φ,
    0.05), ``min_q_weight`` (BCQ's λ_q mixing the twin minimum and maximum in the reward
    target, 0.75), ``beta`` (KL weight of the CVAE, 0.5), ``pid`` ((K_P, K_I, K_D), OSRL's
    (0.1, 0.003, 0.001)), ``num_candidates`` (n, 10), ``episode_len`` (T of the threshold:
    default the env's horizon, else the longest episode of the first dataset learned from).

    After ``learn``: ``cost_threshold`` (q_c) and ``history``, the per-update losses
    (``vae``, ``reward_critic``, ``cost_critic``, ``actor``), the batch-mean cost value
    ``cost_value`` and the multiplier ``lagrangian`` (also what ``loss_curves()`` returns).
    """

    name = "bcq_lag"
    target_cost_use = "train"

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        target_cost: float | None = None,
        hidden: Sequence[int] = (128, 128),
        lr: float = 1e-3,
        batch_size: int = 256,
        gamma: float = 0.99,
        tau: float = 0.005,
        phi: float = 0.05,
        min_q_weight: float = 0.75,
        beta: float = 0.5,
        pid: Sequence[float] = (0.1, 0.003, 0.001),
        num_candidates: int = 10,
        episode_len: int | None = None,
    ):
        kappa = resolve_target_cost(env, target_cost)
        check_positive("lr", lr)
        check_positive("batch_size", batch_size, integer=True)
        check_positive("num_candidates", num_candidates, integer=True)
        _check_fraction("gamma", gamma, low_open=False, high_open=True)
        _check_fraction("tau", tau, low_open=True, high_open=False)
        _check_fraction("phi", phi, low_open=False, high_open=False)
        _check_fraction("min_q_weight", min_q_weight, low_open=False, high_open=False)
        check_positive("beta", beta)
        gains = list(pid) if isinstance(pid, Sequence) else []
        if len(gains) != 3 or any(
            isinstance(g, bool) or not isinstance(g, numbers.Real) or g < 0 for g in gains
        ):
            raise ValueError(f"pid must be three gains (K_P, K_I, K_D) >= 0, got {pid!r}")
        if episode_len is None and env is not None:
            episode_len = int(env.unwrapped.horizon)
        if episode_len is not None:
            check_positive("episode_len", episode_len, integer=True)
        super().__init__(
            env,
            seed,
            target_cost=kappa,
            hidden=check_hidden(hidden),
            lr=lr,
            batch_size=batch_size,
            gamma=gamma,
            tau=tau,
            phi=phi,
            min_q_weight=min_q_weight,
            beta=beta,
            pid=[float(g) for g in gains],
            num_candidates=num_candidates,
            episode_len=episode_len,
        )
        self.cost_threshold: float | None = None
        self.history: dict[str, list[float]] = {
            key: []
            for key in ("vae", "reward_critic", "cost_critic", "actor", "cost_value", "lagrangian")
        }

    # ---- networks ---------------------------------------------------------------------------

    def build(self, obs_dim: int, act_dim: int) -> None:
        hidden, lr = self.config["hidden"], self.config["lr"]
        vae = CVAE(obs_dim, act_dim, hidden)
        actor = Perturbation(obs_dim, act_dim, hidden, self.config["phi"])
        critics = Critics(obs_dim, act_dim, hidden)
        self.modules = {
            "vae": vae,
            "actor": actor,
            "critics": critics,
            "actor_target": copy.deepcopy(actor),
            "critics_target": copy.deepcopy(critics),
            "lagrangian": PIDLagrangian(*self.config["pid"]),
        }
        for key, module in self.modules.items():
            if key.endswith("_target"):
                module.requires_grad_(False)
        self.vae_optimiser = torch.optim.Adam(vae.parameters(), lr=lr)
        self.actor_optimiser = torch.optim.Adam(actor.parameters(), lr=lr)
        # One optimiser for the three critics: their parameters are disjoint slices and Adam is
        # elementwise, so this equals one optimiser per critic.
        self.critic_optimiser = torch.optim.Adam(critics.parameters(), lr=lr)

    def _latents(self, rows: int, generator: torch.Generator) -> torch.Tensor:
        latent_dim = self.modules["vae"].latent_dim
        return torch.randn((rows, latent_dim), generator=generator).clamp(-LATENT_CLIP, LATENT_CLIP)

    # ---- training ---------------------------------------------------------------------------

    def train(self, data: dict[str, np.ndarray], budget: int) -> None:
        if self.config["episode_len"] is None:
            self.config["episode_len"] = int(trajectory_returns(data)[2].max())
        self.cost_threshold = per_step_cost_threshold(
            self.config["target_cost"], self.config["gamma"], self.config["episode_len"]
        )
        # Fresh, seeded streams for each learn(): minibatches and the latent / CVAE noise.
        batches = Batches(data, self.seed + self.updates)
        self.noise = torch.Generator().manual_seed(self.seed + self.updates + 1)
        for _ in range(budget):
            for key, value in self.update(batches.sample(self.config["batch_size"])).items():
                self.history[key].append(value)

    def loss_curves(self) -> dict[str, list[float]]:
        return {name: list(values) for name, values in self.history.items()}

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient step of every network, the PID step and the soft target updates."""
        m, config = self.modules, self.config
        obs, actions, next_obs = batch["obs"], batch["actions"], batch["next_obs"]
        gamma, n = config["gamma"], config["num_candidates"]

        # 1. CVAE behaviour model.
        noise = torch.randn((len(obs), m["vae"].latent_dim), generator=self.noise)
        reconstruction, mean, std = m["vae"](obs, actions, noise)
        kl = -0.5 * (1 + 2 * std.log() - mean.pow(2) - std.pow(2)).mean()
        vae_loss = (reconstruction - actions).pow(2).mean() + config["beta"] * kl
        self.vae_optimiser.zero_grad()
        vae_loss.backward()
        self.vae_optimiser.step()

        # 2. Critic targets over n perturbed CVAE candidates at s′.
        with torch.no_grad():
            next_rep = next_obs.repeat_interleave(n, 0)
            candidates = m["actor_target"](
                next_rep, m["vae"].decode(next_rep, self._latents(len(next_rep), self.noise))
            )
            q1, q2, qc = m["critics_target"](next_rep, candidates).view(3, -1, n)
            weight = config["min_q_weight"]
            mixed = weight * torch.minimum(q1, q2) + (1 - weight) * torch.maximum(q1, q2)
            not_done = 1.0 - batch["dones"]
            reward_target = batch["rewards"] + gamma * not_done * mixed.max(1).values
            cost_target = batch["costs"] + gamma * not_done * qc.max(1).values

        errors = (
            (m["critics"](obs, actions) - torch.stack([reward_target, reward_target, cost_target]))
            .pow(2)
            .mean(1)
        )
        reward_loss, cost_loss = errors[0] + errors[1], errors[2]
        self.critic_optimiser.zero_grad()
        (reward_loss + cost_loss).backward()
        self.critic_optimiser.step()

        # 3-4. Perturbation actor under the PID-Lagrangian penalty (critics frozen).
        with torch.no_grad():
            behaviour = m["vae"].decode(obs, self._latents(len(obs), self.noise))
        perturbed = m["actor"](obs, behaviour)
        m["critics"].requires_grad_(False)
        q1, q2, cost_value = m["critics"](obs, perturbed)
        mean_cost_value = cost_value.mean().item()
        multiplier = m["lagrangian"].update(mean_cost_value, self.cost_threshold)
        actor_loss = (
            -torch.minimum(q1, q2).mean() + multiplier * (cost_value - self.cost_threshold).mean()
        )
        self.actor_optimiser.zero_grad()
        actor_loss.backward()
        self.actor_optimiser.step()
        m["critics"].requires_grad_(True)

        # 5. Soft target updates.
        for key in ("actor", "critics"):
            soft_update(m[f"{key}_target"], m[key], config["tau"])
        return {
            "vae": vae_loss.item(),
            "reward_critic": reward_loss.item(),
            "cost_critic": cost_loss.item(),
            "actor": actor_loss.item(),
            "cost_value": mean_cost_value,
            "lagrangian": multiplier,
        }

    # ---- acting -----------------------------------------------------------------------------

    @torch.no_grad()
    def candidates(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The n perturbed CVAE candidates for one observation (latents from the agent's numpy
        Generator) and their scores min(Q_r1, Q_r2) − λ·Q_c."""
        m, n = self.modules, self.config["num_candidates"]
        obs_rep = obs.reshape(1, -1).expand(n, -1)
        latents = np.clip(
            self.rng.standard_normal((n, m["vae"].latent_dim)), -LATENT_CLIP, LATENT_CLIP
        )
        behaviour = m["vae"].decode(obs_rep, torch.as_tensor(latents, dtype=torch.float32))
        actions = m["actor"](obs_rep, behaviour)
        q1, q2, cost_value = m["critics"](obs_rep, actions)
        multiplier = float(m["lagrangian"].multiplier)
        return actions, torch.minimum(q1, q2) - multiplier * cost_value

    def policy_action(self, obs: torch.Tensor) -> np.ndarray:
        actions, scores = self.candidates(obs)
        return actions[scores.argmax()].numpy()
