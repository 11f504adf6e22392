"""What the offline safe-RL agents share: datasets in, small torch networks, checkpoints out.

The agents of the Safe family (``bc.py``, ``bcq_lag.py``, ``cdt.py``, ``fisor.py``, ``sdqc.py``;
``docs/safety.md``) follow OSRL's and the papers' algorithms, each in one readable file. This
module holds only the plumbing they would otherwise each write again:

- ``as_dataset(path_or_dict, env=None)``: a DSRL-format dataset (``omnigym.envs.safety.dsrl``)
  from an HDF5 path or an already loaded dict, checked against the env's spaces;
- ``Batches``: the dataset's transitions as float32 torch tensors, with seeded minibatches;
- ``resolve_target_cost``, ``check_positive``, ``check_hidden``: argument checks whose
  ``ValueError`` names the argument;
- ``mlp``, ``GaussianPolicy``: the networks (a tanh-squashed Gaussian whose mean is the
  deterministic action, as in IQL/FISOR's weighted behaviour cloning), and
  ``safest_candidate``, the lowest-Q_h-of-candidates rule of FISOR and SDQC;
- ``Normaliser``: observation standardisation with the dataset's statistics, saved with the
  networks;
- ``OfflineAgent``: omnigym's agent protocol for these agents — ``learn(dataset,
  budget)`` (budget = gradient updates), ``act(observation, info)``, ``reset(seed)``, and
  ``save``/``load`` of state dicts plus a JSON config (read with ``weights_only=True``), and
  ``loss_curves()``, every loss recorded per update.

Everything runs on the CPU with ``torch.set_num_threads`` left to the caller.
"""

from __future__ import annotations

import json
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from omnigym.envs.safety.core import check_target_cost
from omnigym.envs.safety.dsrl import load_dataset

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "weights.pt"
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


def as_dataset(dataset: str | os.PathLike | Mapping[str, np.ndarray], env: Any = None) -> dict:
    """A DSRL dataset dict from an HDF5 path (loaded and checked) or a dict (checked shapes)."""
    if isinstance(dataset, str | os.PathLike):
        return load_dataset(dataset, env=env)
    data = {key: np.asarray(value) for key, value in dataset.items()}
    if env is not None:
        expected = {
            "observations": env.observation_space.shape,
            "actions": env.action_space.shape,
        }
        for key, shape in expected.items():
            found = data[key].shape[1:]
            if tuple(found) != tuple(shape):
                raise ValueError(f"{key} rows have shape {tuple(found)}, expected {tuple(shape)}")
    return data


def resolve_target_cost(env: Any, target_cost: float | None) -> float:
    """κ for an agent: ``target_cost`` when given, else the env's, checked (≥ 0)."""
    if target_cost is None:
        if env is None:
            raise ValueError("target_cost is required when no env is given")
        target_cost = env.unwrapped.target_cost
    return check_target_cost(target_cost)


def check_positive(name: str, value: Any, integer: bool = False) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a number (an int if ``integer``) > 0."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
        noun = "int" if integer else "number"
        raise ValueError(f"{name} must be a positive {noun}, got {value!r}")


def check_hidden(hidden: Any) -> list[int]:
    """``hidden`` (MLP widths) as a list of positive ints, else ``ValueError`` naming it."""
    widths = list(hidden) if isinstance(hidden, Sequence) and not isinstance(hidden, str) else []
    if not widths or any(
        isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1 for w in widths
    ):
        raise ValueError(f"hidden must be a non-empty list of positive ints, got {hidden!r}")
    return [int(w) for w in widths]


class Batches:
    """Transitions of a dataset as float32 tensors; ``sample(n)`` draws a seeded minibatch.

    Keys: ``obs``, ``next_obs``, ``actions``, ``rewards``, ``costs``, ``dones`` (terminal flags;
    time-outs are not terminal, as in DSRL).
    """

    def __init__(self, data: Mapping[str, np.ndarray], seed: int = 0):
        def tensor(key: str) -> torch.Tensor:
            return torch.as_tensor(np.asarray(data[key], dtype=np.float32))

        self.obs = tensor("observations")
        self.next_obs = tensor("next_observations")
        self.actions = tensor("actions")
        self.rewards = tensor("rewards")
        self.costs = tensor("costs")
        self.dones = tensor("terminals")
        self.size = len(self.obs)
        if self.size == 0:
            raise ValueError("the dataset has no transitions")
        self.generator = torch.Generator().manual_seed(int(seed))

    def sample(self, batch_size: int) -> dict[str, torch.Tensor]:
        index = torch.randint(self.size, (batch_size,), generator=self.generator)
        return {
            "obs": self.obs[index],
            "next_obs": self.next_obs[index],
            "actions": self.actions[index],
            "rewards": self.rewards[index],
            "costs": self.costs[index],
            "dones": self.dones[index],
        }


def mlp(sizes: Sequence[int], activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """Linear layers of ``sizes`` with ``activation`` between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(activation())
    return nn.Sequential(*layers)


class GaussianPolicy(nn.Module):
    """A state-conditioned Gaussian squashed by tanh into [−1, 1]; ``mean_action`` is the
    deterministic action, ``log_prob`` the density of a dataset action (for weighted BC)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int] = (256, 256)):
        super().__init__()
        self.body = mlp([obs_dim, *hidden, 2 * act_dim])
        self.act_dim = act_dim

    def _moments(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.body(obs).split(self.act_dim, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self._moments(obs)[0])

    def sample(
        self, obs: torch.Tensor, generator: torch.Generator | None = None, spread: float = 1.0
    ) -> torch.Tensor:
        """Actions drawn from the Gaussian with its standard deviation times ``spread`` (1: the
        policy itself; below 1, closer to its mean, as sampling at a lower temperature)."""
        mean, log_std = self._moments(obs)
        noise = torch.randn(mean.shape, generator=generator)
        return torch.tanh(mean + spread * log_std.exp() * noise)

    def candidate_actions(
        self, state: torch.Tensor, n: int, generator: torch.Generator, spread: float
    ) -> torch.Tensor:
        """The candidates of ``safest_candidate`` in one ``state``: the mean action and n − 1
        samples at ``spread``."""
        mean = self.mean_action(state)
        if n == 1:
            return mean
        return torch.cat([mean, self.sample(state.expand(n - 1, -1), generator, spread)])

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        mean, log_std = self._moments(obs)
        clipped = actions.clamp(-0.999, 0.999)
        pre_tanh = torch.atanh(clipped)
        normal = torch.distributions.Normal(mean, log_std.exp())
        correction = torch.log1p(-clipped.pow(2) + 1e-6)
        return (normal.log_prob(pre_tanh) - correction).sum(-1)

    def imitation_loss(
        self, obs: torch.Tensor, actions: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """−log π(a | s) of each row (for weighted BC; ``generator`` unused, as the diffusion
        actor's ``imitation_loss`` takes one)."""
        return -self.log_prob(obs, actions)


def safest_candidate(
    policy: nn.Module,
    state: torch.Tensor,
    candidates: int,
    cost_value: Callable[[torch.Tensor], torch.Tensor],
    generator: torch.Generator,
    spread: float = 1.0,
) -> torch.Tensor:
    """The action FISOR's and SDQC's rule plays in one ``state`` (a (1, d) row): of the
    policy's ``candidate_actions`` (a ``GaussianPolicy``'s mean and ``candidates`` − 1 samples
    at ``spread`` times its standard deviation; a ``diffusion.DiffusionPolicy``'s ``candidates``
    samples at temperature ``spread``), the one whose ``cost_value`` (Q_h of the candidate
    actions, one per row) is lowest."""
    actions = policy.candidate_actions(state, candidates, generator, spread)
    if len(actions) == 1:
        return actions[0]
    return actions[int(cost_value(actions).argmin())]


def check_candidates(candidates: Any, candidate_spread: Any) -> None:
    """Raises ``ValueError`` unless ``candidates`` is a positive int and ``candidate_spread`` a
    positive number (the settings of :func:`safest_candidate`)."""
    if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
        raise ValueError(f"candidates must be a positive int, got {candidates!r}")
    if (
        isinstance(candidate_spread, bool)
        or not isinstance(candidate_spread, int | float)
        or not candidate_spread > 0
    ):
        raise ValueError(f"candidate_spread must be a positive number, got {candidate_spread!r}")


class Normaliser(nn.Module):
    """Observation standardisation with the dataset's statistics (saved as buffers)."""

    def __init__(self, obs_dim: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(obs_dim))
        self.register_buffer("std", torch.ones(obs_dim))

    def fit(self, observations: np.ndarray) -> None:
        self.mean.copy_(torch.as_tensor(observations.mean(axis=0), dtype=torch.float32))
        self.std.copy_(torch.as_tensor(observations.std(axis=0) + 1e-3, dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs - self.mean) / self.std


class OfflineAgent:
    """Base of the offline safe agents: config, seeding, checkpoints and the act loop.

    Subclasses set ``name``, build their networks in ``build(obs_dim, act_dim)`` (stored in
    ``self.modules``, a dict name → ``nn.Module``), train in ``train(data, budget)`` and answer
    ``policy_action(obs_tensor) -> np.ndarray``. ``config`` holds every constructor argument
    (JSON-serialisable), so ``load`` rebuilds the same networks.
    """

    name = "offline"
    # When κ (``target_cost``) shapes the agent: None (never: BC-All, FISOR, SDQC), "train" (it is
    # trained for one κ: BC-Safe, BCQ-Lag) or "act" (one model, κ set by ``set_target_cost``
    # before playing: CDT). The DSRL experiment (omnigym.evaluators.dsrl_experiment) trains and
    # plays by it.
    target_cost_use: str | None = None
    # Settings that change how a trained agent acts, not what it learns: ``load`` takes new
    # values for them (``agent.load(folder, candidates=16)``) over those saved with the weights.
    acting_keys: tuple[str, ...] = ()

    def __init__(self, env: Any = None, seed: int = 0, **config: Any):
        self.env = env
        self.seed = int(seed)
        self.config = dict(config)
        self.modules: dict[str, nn.Module] = {}
        self.dims: tuple[int, int] | None = None
        self.updates = 0
        if env is not None:
            self.dims = (
                int(np.prod(env.observation_space.shape)),
                int(np.prod(env.action_space.shape)),
            )
        self.rng = np.random.default_rng(self.seed)

    # ---- subclass hooks ---------------------------------------------------------------------

    def build(self, obs_dim: int, act_dim: int) -> None:
        raise NotImplementedError

    def train(self, data: dict[str, np.ndarray], budget: int) -> None:
        raise NotImplementedError

    def policy_action(self, obs: torch.Tensor) -> np.ndarray:
        raise NotImplementedError

    def check_acting(self) -> None:
        """Raises ``ValueError`` when an acting setting of ``config`` is out of range."""
        if "candidates" in self.acting_keys:
            check_candidates(self.config["candidates"], self.config["candidate_spread"])

    # ---- protocol ---------------------------------------------------------------------------

    def learn(self, dataset: Any, budget: int) -> OfflineAgent:
        """Trains for ``budget`` gradient updates on a DSRL dataset (path or dict)."""
        if not isinstance(budget, int) or budget < 0:
            raise ValueError(f"budget must be a non-negative int, got {budget!r}")
        data = as_dataset(dataset, self.env)
        dims = (data["observations"].shape[1], data["actions"].shape[1])
        if not self.modules:
            torch.manual_seed(self.seed)
            self.dims = dims
            self.build(*dims)
        elif dims != self.dims:
            raise ValueError(f"dataset dimensions {dims} differ from the agent's {self.dims}")
        self.train(data, budget)
        self.updates += budget
        return self

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def loss_curves(self) -> dict[str, list[float]]:
        """Every loss recorded since construction, one value per update, by name: the agent's
        ``losses`` (a dict of lists, or one list named ``loss``); empty after ``load``."""
        losses = getattr(self, "losses", None)
        if isinstance(losses, Mapping):
            return {str(name): list(values) for name, values in losses.items()}
        return {"loss": list(losses)} if losses else {}

    def act(self, observation: Any, info: Mapping[str, Any]) -> np.ndarray:
        if not self.modules:
            raise RuntimeError(f"{type(self).__name__}.act() before learn() or load()")
        obs = torch.as_tensor(np.asarray(observation, dtype=np.float32)).reshape(1, -1)
        with torch.no_grad():
            action = self.policy_action(obs)
        return np.clip(np.asarray(action, dtype=np.float32).reshape(-1), -1.0, 1.0)

    def save(self, path: str | os.PathLike) -> Path:
        """Writes ``config.json`` and ``weights.pt`` (state dicts) into folder ``path``."""
        if not self.modules:
            raise RuntimeError(f"{type(self).__name__}.save() before learn() or load()")
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save({k: m.state_dict() for k, m in self.modules.items()}, folder / WEIGHTS_FILE)
        record = {
            "agent": self.name,
            "seed": self.seed,
            "dims": list(self.dims),
            "updates": self.updates,
            "config": self.config,
        }
        (folder / CONFIG_FILE).write_text(json.dumps(record, indent=2), encoding="utf-8")
        return folder

    def load(self, path: str | os.PathLike, **acting: Any) -> OfflineAgent:
        """Rebuilds the networks of a ``save``d folder and reads their weights; ``acting``
        (keys of ``acting_keys``) replaces the saved acting settings."""
        unknown = sorted(set(acting) - set(self.acting_keys))
        if unknown:
            raise ValueError(
                f"{type(self).__name__}.load() takes acting settings {list(self.acting_keys)}, "
                f"not {unknown}"
            )
        folder = Path(path)
        record = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
        if record["agent"] != self.name:
            raise ValueError(f"{folder} holds a {record['agent']} agent, not {self.name}")
        # a setting the checkpoint predates (an acting rule, the actor's kind) keeps this
        # agent's constructor value, whose default is what the older code did
        self.config = {**self.config, **record["config"], **acting}
        self.check_acting()
        self.seed = int(record["seed"])
        self.updates = int(record["updates"])
        self.dims = tuple(record["dims"])
        self.modules = {}
        self.build(*self.dims)
        states = torch.load(folder / WEIGHTS_FILE, weights_only=True)
        for key, module in self.modules.items():
            module.load_state_dict(states[key])
        return self
