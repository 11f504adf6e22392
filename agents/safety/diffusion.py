"""A small diffusion policy: the actor of FISOR and SDQC as their papers build it.

FISOR (Zheng et al., ICLR 2024) and SDQC (Yang, Xu and Zhang, ICML 2025) act with a
denoising-diffusion model of the data's actions given the state (DDPM, Ho et al. 2020, as
Diffusion-QL and IDQL use it for offline RL), trained by *weighted* denoising: the loss of each
dataset action is multiplied by the agent's behaviour-cloning weight, so the model learns the
weighted action distribution with every mode it has. Its samples stay where the data's actions
are, unlike a Gaussian fitted to several modes, which puts its mean between them and its samples
outside them (``docs/safety.md``). At test time both papers sample 16 actions and play the one
the feasibility critic likes best (``offline.safest_candidate``).

The model, as FISOR's published code sets it up at the scale of this family's other networks:
T = 5 steps of a variance-preserving schedule (β from 0.1 to 10 over T, Diffusion-QL's
``vp`` schedule), a noise-prediction MLP (Mish activations) over the state, the noisy action
and a sinusoidal embedding of the step, and a sampler that clips its estimate to the action box
after every step. ``sample(obs, generator, spread)`` scales the sampler's noise by ``spread``
(its temperature); ``mean_action`` runs the sampler without noise, from x_T = 0: deterministic,
but between the modes where there are several, so the acting rule plays samples only
(``candidate_actions``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from .offline import GaussianPolicy, mlp

ACTORS = ("gaussian", "diffusion")
DEFAULT_STEPS = 5
TIME_DIM = 16
BETA_MIN, BETA_MAX = 0.1, 10.0


def vp_betas(steps: int) -> torch.Tensor:
    """β_1..β_T of the discretised variance-preserving SDE (Diffusion-QL, FISOR): small first,
    large last, so that ᾱ_T is near 0 even for T = 5."""
    t = torch.arange(1, steps + 1, dtype=torch.float64)
    alpha = torch.exp(-BETA_MIN / steps - 0.5 * (BETA_MAX - BETA_MIN) * (2 * t - 1) / steps**2)
    return (1 - alpha).float()


def time_frequencies(dim: int = TIME_DIM) -> torch.Tensor:
    """The ``dim`` / 2 frequencies of the sinusoidal step embedding, 1 down to 1/1000."""
    half = dim // 2
    return torch.exp(-math.log(1000.0) * torch.arange(half) / max(half - 1, 1))


def check_actor(actor: str, steps: int) -> None:
    """``ValueError`` naming the setting unless ``actor`` is one of ``ACTORS`` and ``steps`` (the
    diffusion steps) a positive int."""
    if actor not in ACTORS:
        raise ValueError(f"actor must be one of {ACTORS}, got {actor!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"diffusion steps must be a positive int, got {steps!r}")


class DiffusionPolicy(nn.Module):
    """ε-prediction DDPM over actions in [−1, 1] given a state vector (see the module
    docstring). The same interface as ``offline.GaussianPolicy``: ``imitation_loss`` (one value
    per row, for weighted BC), ``sample`` and ``mean_action``."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden: Sequence[int] = (256, 256),
        steps: int = DEFAULT_STEPS,
    ):
        super().__init__()
        check_actor("diffusion", steps)
        self.act_dim, self.steps = act_dim, steps
        self.noise = mlp([obs_dim + act_dim + TIME_DIM, *hidden, act_dim], activation=nn.Mish)
        betas = vp_betas(steps)
        alphas = 1 - betas
        self.register_buffer("betas", betas, persistent=False)
        self.register_buffer("alphas", alphas, persistent=False)
        self.register_buffer("alpha_bars", torch.cumprod(alphas, 0), persistent=False)
        self.register_buffer("frequencies", time_frequencies(), persistent=False)

    def predict_noise(self, obs: torch.Tensor, noisy: torch.Tensor, t: torch.Tensor):
        angles = t.float()[:, None] * self.frequencies[None]  # the step's sinusoidal embedding
        return self.noise(torch.cat([obs, noisy, angles.sin(), angles.cos()], dim=-1))

    def imitation_loss(
        self, obs: torch.Tensor, actions: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """The denoising loss ‖ε − ε_θ(s, √ᾱ_t·a + √(1 − ᾱ_t)·ε, t)‖² of each row, at a random
        step t and noise ε (the DDPM objective; weighted per row by the agent)."""
        t = torch.randint(self.steps, (len(obs),), generator=generator)
        noise = torch.randn(actions.shape, generator=generator)
        alpha_bar = self.alpha_bars[t][:, None]
        noisy = alpha_bar.sqrt() * actions + (1 - alpha_bar).sqrt() * noise
        return (self.predict_noise(obs, noisy, t) - noise).pow(2).sum(-1)

    def sample(
        self, obs: torch.Tensor, generator: torch.Generator | None = None, spread: float = 1.0
    ) -> torch.Tensor:
        """One action per row by the DDPM sampler, its noise scaled by ``spread`` (0: none)."""
        noisy = spread > 0
        shape = (len(obs), self.act_dim)
        x = spread * torch.randn(shape, generator=generator) if noisy else torch.zeros(shape)
        for step in reversed(range(self.steps)):
            t = torch.full((len(obs),), step, dtype=torch.long)
            eps = self.predict_noise(obs, x, t)
            alpha, alpha_bar = self.alphas[step], self.alpha_bars[step]
            x = (x - (1 - alpha) / (1 - alpha_bar).sqrt() * eps) / alpha.sqrt()
            if step > 0 and noisy:
                noise = torch.randn(x.shape, generator=generator)
                x = x + spread * self.betas[step].sqrt() * noise
            x = x.clamp(-1.0, 1.0)
        return x

    def candidate_actions(
        self, state: torch.Tensor, n: int, generator: torch.Generator, spread: float
    ) -> torch.Tensor:
        """The candidates of ``offline.safest_candidate`` in one ``state``: ``n`` samples (the
        papers' rule; the noiseless ``mean_action`` is not one, as it can fall between modes)."""
        return self.sample(state.expand(n, -1), generator, spread)

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        """The sampler without noise, from x_T = 0 (deterministic)."""
        return self.sample(obs, None, spread=0.0)


def make_actor(
    kind: str, obs_dim: int, act_dim: int, hidden: Sequence[int], steps: int = DEFAULT_STEPS
) -> nn.Module:
    """The actor of FISOR or SDQC: ``"gaussian"`` (``offline.GaussianPolicy``) or
    ``"diffusion"`` (``DiffusionPolicy`` with ``steps`` denoising steps)."""
    if kind == "gaussian":
        return GaussianPolicy(obs_dim, act_dim, hidden)
    check_actor(kind, steps)
    return DiffusionPolicy(obs_dim, act_dim, hidden, steps)
