"""SDQC: State Decoupling with Q-supervised Contrastive representation, at CPU scale.

Follows Yang, Xu and Zhang, "Q-Supervised Contrastive Representation: A State Decoupling
Framework for Safe Offline Reinforcement Learning" (ICML 2025; ``docs/safety.md``). The paper was
published without code; this file follows its description.

The algorithm, top to bottom:

1. **Decoupling.** Observations are standardised with the dataset's mean and standard deviation,
   then two encoders read them: z_r (reward side) from every ``obs_groups`` group but ``cost``,
   z_h (cost side) from every group but ``reward``. ``encoder="atn"`` (default) makes one token
   per group it reads, projects each to a common width, runs one multi-head self-attention layer
   and mean-pools; ``encoder="mlp"`` is a plain MLP over those groups' columns. Everything
   reward-side (Q_r, V_r, π_r) sees z_r only, everything cost-side (Q_h, V_h, π_h) z_h only; π_to
   sees both.
2. **Behaviour model.** A small CVAE over actions given the state, trained in the first
   ``behaviour_fraction`` of the budget, used only to sample K in-support actions.
3. **Q-supervised contrastive loss**, per side, on the first ``contrast_batch`` states of a
   minibatch: d(s₁, s₂) = max over K actions a ~ CVAE(s₁) of |Q(z(s₁), a) − Q(z(s₂), a)| with Q
   detached (the supervisor); Γ = exp(−d/η); for each of the first I states (anchors) the
   positive is the most similar other state (arg max Γ); an InfoNCE loss over cosine
   similarities at temperature ν in which every other state is a negative weighted by its soft
   label 1 − Γ (a state the critic cannot tell apart from the anchor is not pushed away).
4. **Values**, trained with the encoders: L = L_V + L_Q + δ·L_contrastive.
   Reward side as IQL: V_r is the ``expectile_r`` expectile of Q_r over dataset actions,
   Q_r ← r + γ(1 − done)·V_r(s′). Cost side as FISOR's Hamilton–Jacobi feasibility:
   h = +25 if cost > 0 else −1, Q_h ← (1 − γ)h + γ·max(h, V_h(s′)) (h at terminals), and two
   expectiles of Q_h: V_h^low (``expectile_h_low``, near the best in-support action) and
   V_h^up (``expectile_h_up``, near the worst).
5. **Policies**, three weighted-BC tanh-Gaussians on detached representations:
   π_r on z_r, trained on surely safe states (V_h^up ≤ 0), weight exp(ι_r·(Q_r − V_r)) ≤ 100;
   π_h on z_h, trained on unsafe states (V_h^low > 0), weight exp(ι_h·(V_h^low − Q_h)) ≤ 150;
   π_to on (z_r, z_h), trained on the states in between, weight exp(ι_to·(Q_r − V_r)) for
   feasible actions (Q_h ≤ 0) and exp(ι_to·(V_h^low − Q_h)) otherwise, clipped at 100.
   At test time the V_h bounds pick the active policy, which plays its mean action (with
   ``candidates`` > 1: the lowest-Q_h of its mean and ``candidates`` − 1 samples, the paper's
   rule). With ``q_guard`` (default), an action of π_r or π_to whose Q_h is above 0 (the
   critic predicts a violation even if the best in-support actions follow) is not played:
   π_h's action is, chosen the same way.

Departures from the paper, and why:
- how Γ enters InfoNCE as a soft label is this file's reading of the text (no code was
  published): the positive's term stays whole and each negative is weighted by 1 − Γ;
- the scale η of Γ is relative: d is divided by η times the mean distance of the minibatch, so
  one η serves the reward side (returns of a few units) and the cost side (h = 25) alike;
- the paper's Q and V networks, batch sizes and update counts are cut to CPU scale (hidden width
  128, 32 states compared per side and update); the budget is counted in gradient updates.
  ``DEFAULT_BUDGET`` = 7,000 takes about 4.5 CPU minutes per task and seed on one torch thread
  (``benchmarks/safe_train.py``);
- the policies are tanh-Gaussians by default, not diffusion models (``actor="diffusion"``
  builds the paper's: ``diffusion.py``, trained by the same weights on the denoising loss,
  acting by the lowest Q_h of ``candidates`` samples), and so act with their mean by default:
  a Gaussian fitted by weighted BC to several modes of behaviour is wide (log-std up to 2), its
  samples fall outside the data, and the lowest-Q_h sample is then an action the critic never
  saw. Measured on Safe/PointRun-v0 (2,000 updates, seed 0, 10 episodes at κ = 5): the sampled
  rule played an action 0.76 away from the policy's mean on average and cost 33× the threshold;
  with standardised observations and the mean action the cost is 0;
- without ``obs_groups`` (Bullet tasks) only ``"mlp"`` is available and both encoders read the
  whole observation;
- the behaviour model is a CVAE by default; ``behaviour="diffusion"`` is the paper's other
  choice, a T = 5 DDPM (both only sample the K in-support actions of the contrastive loss);
- ``q_guard`` is this project's addition. The regions come from V_h, an expectile over the
  data's actions, so π_r keeps a state the data never shows (on CarCircle1: driving straight at
  the boundary at full speed, V_h^low = −1.0 at x = 1.32) until V_h jumps at the wall; Q_h of
  the action π_r chose says so earlier. Measured over the 11 level-1 tasks and 3 seeds (strict
  protocol, ``docs/safety.md``): average normalized cost 2.58 → 1.60 (CarCircle1 19.9 → 10.1)
  at the same reward (0.21).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import fisor
from .diffusion import DEFAULT_STEPS, DiffusionPolicy, check_actor, make_actor
from .fisor import expectile_loss
from .offline import (
    Batches,
    Normaliser,
    OfflineAgent,
    mlp,
    safest_candidate,
)

DEFAULT_BUDGET = 7_000
REWARD_WEIGHT_CLIP, COST_WEIGHT_CLIP = 100.0, 150.0
ENCODERS = ("atn", "mlp")
BEHAVIOURS = ("cvae", "diffusion")
REWARD, TRANSITION, COST = 0, 1, 2  # the policy codes of ``choose_policy``
POLICY_NAMES = {REWARD: "pi_r", TRANSITION: "pi_to", COST: "pi_h"}


# ---- the pieces of the loss, as pure functions -----------------------------------------------


def feasibility_target(
    costs: torch.Tensor, next_v: torch.Tensor, dones: torch.Tensor, gamma: float
) -> torch.Tensor:
    """FISOR's discounted Hamilton–Jacobi target (1 − γ)h + γ·max(h, V_h(s′)), h at terminals,
    from the raw costs (h = +25 where cost > 0, else −1)."""
    return fisor.feasibility_target(fisor.cost_to_h(costs), next_v, dones, gamma)


def q_distance(
    q_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    z: torch.Tensor,
    actions: torch.Tensor,
) -> torch.Tensor:
    """d(s_i, s_j) = max_k |Q(z_i, a_ik) − Q(z_j, a_ik)| for the anchors i < I and all j < M.

    ``z`` is (M, dz) with the I anchors first; ``actions`` (I, K, da) are the anchors' sampled
    actions; ``q_fn(z, a)`` returns one value per row. Returns (I, M).
    """
    anchors, k, act_dim = actions.shape
    m = z.shape[0]
    z_rows = z[None, None].expand(anchors, k, m, z.shape[1]).reshape(-1, z.shape[1])
    a_rows = actions[:, :, None].expand(anchors, k, m, act_dim).reshape(-1, act_dim)
    q = q_fn(z_rows, a_rows).reshape(anchors, k, m)
    own = torch.arange(anchors)
    q_anchor = q[own, :, own]  # (I, K): Q(z_i, a_ik)
    return (q - q_anchor[:, :, None]).abs().amax(dim=1)


def similarity(distance: torch.Tensor, eta: float) -> torch.Tensor:
    """Γ = exp(−d/η)."""
    return torch.exp(-distance / eta)


def positives(gamma: torch.Tensor) -> torch.Tensor:
    """For each anchor row i of Γ (I, M), the index of the most similar state other than i."""
    own = torch.arange(gamma.shape[0])
    masked = gamma.clone()
    masked[own, own] = -torch.inf
    return masked.argmax(dim=1)


def soft_info_nce(z: torch.Tensor, gamma: torch.Tensor, nu: float) -> torch.Tensor:
    """InfoNCE of the anchors (first I rows of ``z``) against their positives, temperature ν.

    Logits are cosine similarities / ν. The anchor itself is left out; every state other than
    the positive is a negative whose term in the denominator is weighted by 1 − Γ.
    """
    anchors = gamma.shape[0]
    unit = F.normalize(z, dim=1)
    logits = unit[:anchors] @ unit.T / nu
    own = torch.arange(anchors)
    positive = positives(gamma)
    weight = (1.0 - gamma).clamp(min=0.0)
    weight[own, positive] = 1.0
    weight[own, own] = 0.0
    log_weight = torch.log(weight.clamp(min=1e-8))
    log_weight[own, own] = -torch.inf
    return (torch.logsumexp(logits + log_weight, dim=1) - logits[own, positive]).mean()


def choose_policy(v_low: np.ndarray, v_up: np.ndarray) -> np.ndarray:
    """π_h (``COST``) where even the optimistic V_h^low > 0, π_r (``REWARD``) where even the
    pessimistic V_h^up ≤ 0, π_to (``TRANSITION``) in between."""
    v_low, v_up = np.asarray(v_low), np.asarray(v_up)
    return np.where(v_low > 0, COST, np.where(v_up <= 0, REWARD, TRANSITION))


def groups_as_lists(obs_groups: Mapping[str, Any]) -> dict[str, list[int]]:
    """``obs_groups`` (name → slice or [start, stop]) as JSON-ready name → [start, stop]."""
    if not isinstance(obs_groups, Mapping) or not obs_groups:
        raise ValueError(f"obs_groups must be a non-empty dict name → slice, got {obs_groups!r}")
    groups = {}
    for name, span in obs_groups.items():
        if isinstance(span, slice):
            if span.step not in (None, 1):
                raise ValueError(f"obs_groups[{name!r}] has a step: {span!r}")
            span = [span.start or 0, span.stop]
        if (
            not isinstance(span, list | tuple)
            or len(span) != 2
            or not all(isinstance(x, int | np.integer) for x in span)
            or not 0 <= span[0] < span[1]
        ):
            raise ValueError(
                f"obs_groups[{name!r}] must be a slice or [start, stop] with 0 <= start < stop, "
                f"got {span!r}"
            )
        groups[str(name)] = [int(span[0]), int(span[1])]
    return groups


# ---- networks --------------------------------------------------------------------------------


class GroupAttentionEncoder(nn.Module):
    """One token per observation group (its own linear projection to ``token_dim``), one
    multi-head self-attention layer with a residual and layer norm, mean pooling, a linear map."""

    def __init__(self, groups: list[list[int]], token_dim: int, heads: int, out_dim: int):
        super().__init__()
        self.groups = [slice(start, stop) for start, stop in groups]
        self.project = nn.ModuleList(nn.Linear(s.stop - s.start, token_dim) for s in self.groups)
        self.attention = nn.MultiheadAttention(token_dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(token_dim)
        self.out = nn.Linear(token_dim, out_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        tokens = torch.stack([p(obs[:, s]) for p, s in zip(self.project, self.groups, strict=True)])
        tokens = tokens.transpose(0, 1)  # (batch, groups, token_dim)
        attended, _ = self.attention(tokens, tokens, tokens, need_weights=False)
        return self.out(self.norm(tokens + attended).mean(dim=1))


class ColumnsMLPEncoder(nn.Module):
    """An MLP over the observation columns ``columns`` (all of them when ``None``)."""

    def __init__(self, obs_dim: int, columns: list[int] | None, hidden: int, out_dim: int):
        super().__init__()
        index = torch.arange(obs_dim) if columns is None else torch.as_tensor(columns)
        self.register_buffer("columns", index, persistent=False)
        self.body = mlp([len(index), hidden, out_dim])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.body(obs[:, self.columns])


class TwinQ(nn.Module):
    """Two Q heads over (z, a); ``forward`` returns (batch, 2)."""

    def __init__(self, z_dim: int, act_dim: int, hidden: int):
        super().__init__()
        self.heads = nn.ModuleList(mlp([z_dim + act_dim, hidden, hidden, 1]) for _ in range(2))

    def forward(self, z: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        x = torch.cat([z, actions], dim=-1)
        return torch.cat([head(x) for head in self.heads], dim=-1)


class BehaviourCVAE(nn.Module):
    """A conditional VAE of actions given the observation (BCQ's behaviour model)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int):
        super().__init__()
        self.latent_dim = 2 * act_dim
        self.encoder = mlp([obs_dim + act_dim, hidden, hidden, 2 * self.latent_dim])
        self.decoder = mlp([obs_dim + self.latent_dim, hidden, hidden, act_dim])

    def decode(self, obs: torch.Tensor, latent: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.decoder(torch.cat([obs, latent], dim=-1)))

    def loss(self, obs: torch.Tensor, actions: torch.Tensor, generator: torch.Generator):
        mean, log_std = self.encoder(torch.cat([obs, actions], dim=-1)).chunk(2, dim=-1)
        log_std = log_std.clamp(-4.0, 15.0)
        latent = mean + log_std.exp() * torch.randn(mean.shape, generator=generator)
        reconstruction = (self.decode(obs, latent) - actions).pow(2).sum(-1).mean()
        kl = -0.5 * (1 + 2 * log_std - mean.pow(2) - (2 * log_std).exp()).sum(-1).mean()
        return reconstruction + 0.5 * kl

    def sample(self, obs: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` actions per observation: (batch, n, act_dim); latents clipped to ±0.5 (BCQ)."""
        rows = obs.repeat_interleave(n, dim=0)
        latent = torch.randn((len(rows), self.latent_dim), generator=generator).clamp(-0.5, 0.5)
        return self.decode(rows, latent).reshape(len(obs), n, -1)


class BehaviourDiffusion(nn.Module):
    """The paper's other behaviour model: an unweighted DDPM of the data's actions
    (``diffusion.DiffusionPolicy``) behind the CVAE's ``loss`` and ``sample``."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, steps: int):
        super().__init__()
        self.model = DiffusionPolicy(obs_dim, act_dim, (hidden, hidden), steps)

    def loss(self, obs: torch.Tensor, actions: torch.Tensor, generator: torch.Generator):
        return self.model.imitation_loss(obs, actions, generator).mean()

    def sample(self, obs: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` actions per observation: (batch, n, act_dim)."""
        rows = obs.repeat_interleave(n, dim=0)
        return self.model.sample(rows, generator).reshape(len(obs), n, -1)


# ---- the agent -------------------------------------------------------------------------------


class SDQC(OfflineAgent):
    """SDQC-lite (see the module docstring).

    Arguments: ``encoder`` (``"atn"`` or ``"mlp"``), ``obs_groups`` (name → slice or
    [start, stop]; default ``env.unwrapped.obs_groups``), ``delta`` (δ, weight of the
    contrastive loss; 0 turns it off), ``nu`` (ν, InfoNCE temperature), ``anchors`` (I),
    ``support_actions`` (K), ``eta`` (η, relative scale of Γ), ``contrast_batch`` (states
    compared per side per update), ``z_dim``, ``hidden``, ``token_dim``, ``heads``, ``gamma``,
    ``expectile_r``, ``expectile_h_low``, ``expectile_h_up``, ``iota_r``, ``iota_h``,
    ``iota_to`` (policy temperatures), ``batch_size``, ``lr``, ``tau`` (target update rate),
    ``behaviour_fraction`` (share of the budget spent pre-training the CVAE), ``candidates``
    (1: the active policy's mean action, one sample for the diffusion actor; more: the
    lowest-Q_h of its mean and samples, of samples only for the diffusion actor) and
    ``candidate_spread`` (the samples' share of the policy's standard deviation) and
    ``q_guard`` (π_h's action where π_r's or π_to's has Q_h > 0); ``load`` takes new values of
    these three. ``actor``: ``"gaussian"`` (default) or ``"diffusion"`` (the paper's policies,
    ``diffusion_steps`` denoising steps; ``candidate_spread`` is then the sampler's temperature);
    ``behaviour``: ``"cvae"`` (default) or ``"diffusion"`` (a DDPM of the same steps).

    ``losses`` keeps one entry per update of every loss: ``behaviour`` (CVAE, its updates
    only), ``v_r``, ``q_r``, ``v_h_low``, ``v_h_up``, ``q_h``, ``contrastive_r`` and
    ``contrastive_h`` (InfoNCE, before δ; absent when δ = 0), ``pi_r``, ``pi_h`` and ``pi_to``
    (each policy's weighted BC loss on its region). ``regions`` counts the steps each policy
    played (``pi_r``, ``pi_to``, ``pi_h``, and ``pi_h_guard`` where the guard replaced π_r's
    or π_to's action) since it was last cleared.
    """

    name = "sdqc"
    acting_keys = ("candidates", "candidate_spread", "q_guard")

    def __init__(
        self,
        env: Any = None,
        seed: int = 0,
        encoder: str = "atn",
        obs_groups: Mapping[str, Any] | None = None,
        delta: float = 1.0,
        nu: float = 0.1,
        anchors: int = 8,
        support_actions: int = 8,
        eta: float = 1.0,
        contrast_batch: int = 32,
        z_dim: int = 64,
        hidden: int = 128,
        token_dim: int = 32,
        heads: int = 2,
        gamma: float = 0.99,
        expectile_r: float = 0.7,
        expectile_h_low: float = 0.1,
        expectile_h_up: float = 0.9,
        iota_r: float = 3.0,
        iota_h: float = 5.0,
        iota_to: float = 3.0,
        batch_size: int = 256,
        lr: float = 3e-4,
        tau: float = 0.005,
        behaviour_fraction: float = 0.1,
        candidates: int = 1,
        candidate_spread: float = 1.0,
        q_guard: bool = True,
        actor: str = "gaussian",
        behaviour: str = "cvae",
        diffusion_steps: int = DEFAULT_STEPS,
    ):
        if encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}")
        check_actor(actor, diffusion_steps)
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {BEHAVIOURS}, got {behaviour!r}")
        if obs_groups is None and env is not None:
            obs_groups = getattr(env.unwrapped, "obs_groups", None)
        groups = None if obs_groups is None else groups_as_lists(obs_groups)
        if encoder == "atn" and groups is None:
            raise ValueError('encoder="atn" needs obs_groups (from the env or as an argument)')
        checks = {
            "delta": delta >= 0,
            "nu": nu > 0,
            "anchors": isinstance(anchors, int) and 0 <= anchors < contrast_batch,
            "support_actions": isinstance(support_actions, int) and support_actions >= 1,
            "eta": eta > 0,
            "contrast_batch": isinstance(contrast_batch, int) and contrast_batch >= 2,
            "gamma": 0 < gamma < 1,
            "expectile_r": 0 < expectile_r < 1,
            "expectile_h_low": 0 < expectile_h_low < 1,
            "expectile_h_up": expectile_h_low <= expectile_h_up < 1,
            "batch_size": isinstance(batch_size, int) and batch_size >= contrast_batch,
            "behaviour_fraction": 0 <= behaviour_fraction < 1,
            "heads": isinstance(heads, int) and heads >= 1 and token_dim % heads == 0,
        }
        for key, ok in checks.items():
            if not ok:
                raise ValueError(f"{key} is out of range: {locals()[key]!r}")
        super().__init__(
            env,
            seed,
            encoder=encoder,
            obs_groups=groups,
            delta=float(delta),
            nu=float(nu),
            anchors=anchors,
            support_actions=support_actions,
            eta=float(eta),
            contrast_batch=contrast_batch,
            z_dim=z_dim,
            hidden=hidden,
            token_dim=token_dim,
            heads=heads,
            gamma=float(gamma),
            expectile_r=float(expectile_r),
            expectile_h_low=float(expectile_h_low),
            expectile_h_up=float(expectile_h_up),
            iota_r=float(iota_r),
            iota_h=float(iota_h),
            iota_to=float(iota_to),
            batch_size=batch_size,
            lr=float(lr),
            tau=float(tau),
            behaviour_fraction=float(behaviour_fraction),
            candidates=candidates,
            candidate_spread=candidate_spread,
            q_guard=q_guard,
            actor=actor,
            behaviour=behaviour,
            diffusion_steps=diffusion_steps,
        )
        self.check_acting()
        self.losses: dict[str, list[float]] = {}
        self.regions: Counter[str] = Counter()

    # ---- networks ----------------------------------------------------------------------------

    def _encoder(self, obs_dim: int, side: str) -> nn.Module:
        c = self.config
        groups = c["obs_groups"]
        if groups is not None and max(stop for _, stop in groups.values()) > obs_dim:
            raise ValueError(f"obs_groups {groups} reach past the observation width {obs_dim}")
        seen = None
        if groups is not None:
            unseen = "cost" if side == "reward" else "reward"
            seen = [span for name, span in groups.items() if name != unseen]
        if c["encoder"] == "atn":
            return GroupAttentionEncoder(seen, c["token_dim"], c["heads"], c["z_dim"])
        columns = None if seen is None else [i for a, b in seen for i in range(a, b)]
        return ColumnsMLPEncoder(obs_dim, columns, c["hidden"], c["z_dim"])

    def _actor(self, in_dim: int, act_dim: int) -> nn.Module:
        c = self.config
        return make_actor(
            c["actor"], in_dim, act_dim, (c["hidden"], c["hidden"]), c["diffusion_steps"]
        )

    def build(self, obs_dim: int, act_dim: int) -> None:
        c = self.config
        z, hidden = c["z_dim"], c["hidden"]
        self.modules = {
            "normaliser": Normaliser(obs_dim),
            "behaviour": (
                BehaviourCVAE(obs_dim, act_dim, hidden)
                if c["behaviour"] == "cvae"
                else BehaviourDiffusion(obs_dim, act_dim, hidden, c["diffusion_steps"])
            ),
            "enc_r": self._encoder(obs_dim, "reward"),
            "q_r": TwinQ(z, act_dim, hidden),
            "v_r": mlp([z, hidden, hidden, 1]),
            "enc_h": self._encoder(obs_dim, "cost"),
            "q_h": TwinQ(z, act_dim, hidden),
            "v_h": mlp([z, hidden, hidden, 2]),  # columns: V_h^low, V_h^up
            "pi_r": self._actor(z, act_dim),
            "pi_h": self._actor(z, act_dim),
            "pi_to": self._actor(2 * z, act_dim),
        }
        with torch.no_grad():  # start where a state that never violates ends: h = −1
            for head in (*self.modules["q_h"].heads, self.modules["v_h"]):
                head[-1].bias.fill_(fisor.H_SAFE)
        for key in ("enc_r", "q_r", "enc_h", "q_h"):
            self.modules[f"target_{key}"] = copy.deepcopy(self.modules[key]).requires_grad_(False)

    # ---- values as the rest of the file reads them -------------------------------------------

    def q_reward(self, z_r: torch.Tensor, actions: torch.Tensor, target: bool = False):
        """Q_r: the minimum of the twin heads (IQL)."""
        return self.modules["target_q_r" if target else "q_r"](z_r, actions).amin(dim=-1)

    def q_cost(self, z_h: torch.Tensor, actions: torch.Tensor, target: bool = False):
        """Q_h: the maximum of the twin heads (the pessimistic one for safety)."""
        return self.modules["target_q_h" if target else "q_h"](z_h, actions).amax(dim=-1)

    def encode(self, obs: torch.Tensor, target: bool = False):
        """(z_r, z_h) of raw observations (standardised first)."""
        prefix, state = "target_" if target else "", self.modules["normaliser"](obs)
        return self.modules[f"{prefix}enc_r"](state), self.modules[f"{prefix}enc_h"](state)

    def feasibility(self, observations: np.ndarray) -> np.ndarray:
        """V_h^low (the optimistic bound, FISOR's V_h) of raw observations: ≤ 0 where some
        in-support policy keeps the cost at zero."""
        obs = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        with torch.no_grad():
            return self.modules["v_h"](self.encode(obs)[1])[:, 0].numpy()

    # ---- losses ------------------------------------------------------------------------------

    def critic_losses(
        self, batch: Mapping[str, torch.Tensor], generator: torch.Generator
    ) -> dict[str, torch.Tensor]:
        """The encoder and value losses of one minibatch; ``total`` = L_V + L_Q + δ·L_con."""
        c, m = self.config, self.modules
        obs, actions = batch["obs"], batch["actions"]
        z_r, z_h = self.encode(obs)
        with torch.no_grad():
            next_z_r, next_z_h = self.encode(batch["next_obs"])
            target_z_r, target_z_h = self.encode(obs, target=True)
            q_r_target = self.q_reward(target_z_r, actions, target=True)
            q_h_target = self.q_cost(target_z_h, actions, target=True)
            reward_target = batch["rewards"] + c["gamma"] * (1 - batch["dones"]) * m["v_r"](
                next_z_r
            ).squeeze(-1)
            cost_target = feasibility_target(
                batch["costs"], m["v_h"](next_z_h)[:, 0], batch["dones"], c["gamma"]
            )
        v_h = m["v_h"](z_h)
        losses = {
            "v_r": expectile_loss(q_r_target - m["v_r"](z_r).squeeze(-1), c["expectile_r"]),
            "q_r": (m["q_r"](z_r, actions) - reward_target[:, None]).pow(2).mean(),
            # V_h approaches the best (lowest) in-support Q_h as its expectile goes to 0.
            "v_h_low": expectile_loss(q_h_target - v_h[:, 0], c["expectile_h_low"]),
            "v_h_up": expectile_loss(q_h_target - v_h[:, 1], c["expectile_h_up"]),
            "q_h": (m["q_h"](z_h, actions) - cost_target[:, None]).pow(2).mean(),
        }
        if c["delta"] > 0 and c["anchors"] > 0:
            subset = obs[: c["contrast_batch"]]
            with torch.no_grad():
                sampled = m["behaviour"].sample(
                    m["normaliser"](subset[: c["anchors"]]), c["support_actions"], generator
                )
            for side, z, q_fn in (("r", z_r, self.q_reward), ("h", z_h, self.q_cost)):
                z_subset = z[: c["contrast_batch"]]
                with torch.no_grad():
                    distance = q_distance(q_fn, z_subset.detach(), sampled)
                    scale = c["eta"] * distance.mean().clamp(min=1e-6)
                    gamma = similarity(distance, scale)
                losses[f"contrastive_{side}"] = soft_info_nce(z_subset, gamma, c["nu"])
        contrastive = sum(v for k, v in losses.items() if k.startswith("contrastive"))
        losses["values"] = sum(v for k, v in losses.items() if not k.startswith("contrastive"))
        losses["total"] = losses["values"] + c["delta"] * contrastive
        return losses

    def actor_losses(
        self, batch: Mapping[str, torch.Tensor], generator: torch.Generator | None = None
    ) -> dict[str, torch.Tensor]:
        """Weighted BC of π_r, π_h and π_to, each on its own region of the V_h bounds (zero
        for a policy whose region holds no state of the batch); ``total`` is their sum."""
        c, m = self.config, self.modules
        obs, actions = batch["obs"], batch["actions"]
        with torch.no_grad():
            z_r, z_h = self.encode(obs)
            v_h = m["v_h"](z_h)
            v_low, v_up = v_h[:, 0], v_h[:, 1]
            q_h = self.q_cost(z_h, actions)
            advantage_r = self.q_reward(z_r, actions) - m["v_r"](z_r).squeeze(-1)
            advantage_h = v_low - q_h
            region = torch.as_tensor(choose_policy(v_low.numpy(), v_up.numpy()))
            weight_r = torch.exp(c["iota_r"] * advantage_r).clamp(max=REWARD_WEIGHT_CLIP)
            weight_h = torch.exp(c["iota_h"] * advantage_h).clamp(max=COST_WEIGHT_CLIP)
            weight_to = (
                torch.where(q_h <= 0, c["iota_to"] * advantage_r, c["iota_to"] * advantage_h)
                .exp()
                .clamp(max=REWARD_WEIGHT_CLIP)
            )
        terms = {
            "pi_r": (m["pi_r"].imitation_loss(z_r, actions, generator), weight_r, region == REWARD),
            "pi_h": (m["pi_h"].imitation_loss(z_h, actions, generator), weight_h, region == COST),
            "pi_to": (
                m["pi_to"].imitation_loss(torch.cat([z_r, z_h], -1), actions, generator),
                weight_to,
                region == TRANSITION,
            ),
        }
        losses = {
            name: (w * mask * fit).sum() / mask.sum().clamp(min=1)
            for name, (fit, w, mask) in terms.items()
        }
        losses["total"] = sum(losses.values())
        return losses

    # ---- training ----------------------------------------------------------------------------

    def train(self, data: dict[str, np.ndarray], budget: int) -> None:
        c, m = self.config, self.modules
        if self.updates == 0:
            m["normaliser"].fit(np.asarray(data["observations"], dtype=np.float32))
        batches = Batches(data, self.seed + self.updates)
        generator = torch.Generator().manual_seed(int(self.rng.integers(2**31)))
        critic_params = [
            p for k in ("enc_r", "q_r", "v_r", "enc_h", "q_h", "v_h") for p in _p(m[k])
        ]
        actor_params = [p for k in ("pi_r", "pi_h", "pi_to") for p in _p(m[k])]
        behaviour_opt = torch.optim.Adam(_p(m["behaviour"]), lr=c["lr"], foreach=True)
        critic_opt = torch.optim.Adam(critic_params, lr=c["lr"], foreach=True)
        actor_opt = torch.optim.Adam(actor_params, lr=c["lr"], foreach=True)
        tracked = ("enc_r", "q_r", "enc_h", "q_h")
        targets = [p for key in tracked for p in _p(m[f"target_{key}"])]
        online = [p for key in tracked for p in _p(m[key])]
        behaviour_updates = int(round(c["behaviour_fraction"] * budget))
        for _ in range(behaviour_updates):
            batch = batches.sample(c["batch_size"])
            state = m["normaliser"](batch["obs"])
            loss = m["behaviour"].loss(state, batch["actions"], generator)
            _step(behaviour_opt, loss)
            self.losses.setdefault("behaviour", []).append(loss.item())
        for _ in range(budget - behaviour_updates):
            batch = batches.sample(c["batch_size"])
            critic = self.critic_losses(batch, generator)
            _step(critic_opt, critic["total"])
            actor = self.actor_losses(batch, generator)
            _step(actor_opt, actor["total"])
            with torch.no_grad():
                torch._foreach_lerp_(targets, online, c["tau"])
            for name, loss in (*critic.items(), *actor.items()):
                if name not in ("values", "total"):
                    self.losses.setdefault(name, []).append(loss.item())

    # ---- acting ------------------------------------------------------------------------------

    def check_acting(self) -> None:
        super().check_acting()
        if not isinstance(self.config["q_guard"], bool):
            raise ValueError(f"q_guard must be a bool, got {self.config['q_guard']!r}")

    def policy_action(self, obs: torch.Tensor) -> np.ndarray:
        m, n = self.modules, self.config["candidates"]
        z_r, z_h = self.encode(obs)
        v_h = m["v_h"](z_h)
        active = int(choose_policy(v_h[:, 0].numpy(), v_h[:, 1].numpy())[0])
        policy, z = {
            REWARD: (m["pi_r"], z_r),
            TRANSITION: (m["pi_to"], torch.cat([z_r, z_h], -1)),
            COST: (m["pi_h"], z_h),
        }[active]
        generator = torch.Generator().manual_seed(int(self.rng.integers(2**31)))

        def cost_value(actions: torch.Tensor) -> torch.Tensor:
            return self.q_cost(z_h.expand(len(actions), -1), actions)

        spread = self.config["candidate_spread"]
        action = safest_candidate(policy, z, n, cost_value, generator, spread)
        played = POLICY_NAMES[active]
        if self.config["q_guard"] and active != COST and float(cost_value(action[None])[0]) > 0:
            action = safest_candidate(m["pi_h"], z_h, n, cost_value, generator, spread)
            played = "pi_h_guard"
        self.regions[played] += 1
        return action.numpy()

    # ---- analysis ----------------------------------------------------------------------------

    def knn_q_consistency(self, observations: np.ndarray, k: int = 10, side: str = "both") -> float:
        """Mean |V(s) − V(s′)| over the ``k`` nearest neighbours s′ of each s in representation
        space (SDQC's ablation, claim 8 of ``scenarios/claims/sdqc.py``), divided by the spread
        (std) of V over ``observations`` so the two sides compare; ``side``: ``"reward"`` (V_r on
        z_r), ``"cost"`` (V_h^low on z_h) or ``"both"`` (their mean). Lower is more consistent. V
        stands in for Q at in-support actions (it is their expectile)."""
        if not self.modules:
            raise RuntimeError("SDQC.knn_q_consistency() before learn() or load()")
        if side not in ("reward", "cost", "both"):
            raise ValueError(f"side must be 'reward', 'cost' or 'both', got {side!r}")
        obs = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        if not 1 <= k < len(obs):
            raise ValueError(f"k must be in [1, {len(obs) - 1}] for {len(obs)} observations")
        with torch.no_grad():
            z_r, z_h = self.encode(obs)
            sides = {
                "reward": (z_r, self.modules["v_r"](z_r)[:, 0]),
                "cost": (z_h, self.modules["v_h"](z_h)[:, 0]),
            }
            scores = [_knn_gap(z, v, k) for name, (z, v) in sides.items() if side in (name, "both")]
        return float(np.mean(scores))


def _knn_gap(z: torch.Tensor, v: torch.Tensor, k: int, chunk: int = 1024) -> float:
    gaps = []
    for start in range(0, len(z), chunk):
        rows = slice(start, start + chunk)
        distance = torch.cdist(z[rows], z)
        distance[torch.arange(distance.shape[0]), torch.arange(start, start + len(distance))] = (
            torch.inf
        )
        neighbours = distance.topk(k, dim=1, largest=False).indices
        gaps.append((v[rows, None] - v[neighbours]).abs().mean(dim=1))
    return float(torch.cat(gaps).mean() / v.std().clamp(min=1e-8))


def _p(module: nn.Module) -> list[nn.Parameter]:
    return list(module.parameters())


def _step(optimiser: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
