"""What every ``Methods/`` task environment shares (``docs/methods.md``).

A non-RL paper becomes a task environment: ``reset(seed)`` draws one problem instance from the
paper's data generator and returns it as a ``Dict`` observation (objects no space describes go
in ``info["instance"]``); ``step(solution)`` scores the solution with the paper's metric. The
reward is the headline metric signed so that higher is better (an error e becomes −e) and every
metric is in ``info["metrics"]``. One step ends the episode unless the subclass is multi-step.

:class:`MethodEnv` holds the plumbing so each paper's module only says what is particular to it:

- ``size`` is ``"small"`` (default: built and scored in seconds, used by tests) or ``"paper"``;
- a solution is checked by :func:`check_solution`: a wrong structure, shape or dtype raises
  ``ValueError`` naming the space, the expected and the received shape; **non-finite** values
  (NaN, ±inf) are a legal but failed answer: the episode is scored ``invalid_reward`` with
  ``info["invalid_action"] = True`` and ``metrics["invalid"] = 1`` — never an exception from deep
  inside NumPy. A subclass may flag further rule breaks (over a budget) the same way by
  returning ``None`` from ``score``;
- ``info`` on every step has ``invalid_action``; the final step has ``metrics`` and ``success``
  (when the subclass defines it).

Subclasses set ``observation_space``, ``action_space``, ``invalid_reward`` and implement
``draw(rng) -> (observation, instance)`` and ``score(solution) -> (reward, metrics) | None``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from omnigym.spaces import describe

SIZES = ("small", "paper")


def check_size(size: Any) -> str:
    """``size`` if it is one of :data:`SIZES`, else ``ValueError`` naming ``size``."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    return size


def check_solution(solution: Any, space: spaces.Space) -> tuple[Any, bool]:
    """``(solution as the space's arrays, finite)`` or ``ValueError`` naming the space.

    Box, MultiDiscrete, MultiBinary and Discrete solutions are converted to the space's dtype
    (integers must be integral); Dict solutions need exactly the space's keys. ``finite`` is
    False when a float value is NaN or infinite: the caller scores that as a failed answer.
    Bounds are checked only for finite values.
    """
    if isinstance(space, spaces.Dict):
        if not isinstance(solution, Mapping) or set(solution) != set(space.spaces):
            got = sorted(solution) if isinstance(solution, Mapping) else type(solution).__name__
            raise ValueError(
                f"solution must be a dict with keys {sorted(space.spaces)}, got {got}; "
                f"the action space is {describe(space)}"
            )
        checked, finite = {}, True
        for key, sub in space.spaces.items():
            checked[key], ok = check_solution(solution[key], sub)
            finite = finite and ok
        return checked, finite
    if isinstance(space, spaces.Discrete):
        value = _as_array(solution, space, ())
        if not np.isfinite(value).all():
            return value, False
        if value != np.round(value) or not space.contains(int(value)):
            raise ValueError(f"solution {solution!r} is not in the action space {describe(space)}")
        return int(value), True
    if not isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
        raise TypeError(f"check_solution does not handle {describe(space)}")
    array = _as_array(solution, space, tuple(space.shape))
    finite = bool(np.isfinite(array).all())
    if not finite:
        return array, False
    if np.issubdtype(space.dtype, np.integer):
        if not np.array_equal(array, np.round(array)):
            raise ValueError(f"solution must hold integers for the action space {describe(space)}")
        array = array.astype(space.dtype)
    else:
        array = array.astype(space.dtype)
    if not space.contains(array):
        raise ValueError(
            f"solution values are out of the bounds of the action space {describe(space)}"
        )
    return array, True


def _as_array(solution: Any, space: spaces.Space, shape: tuple[int, ...]) -> np.ndarray:
    try:
        array = np.asarray(solution, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"solution of type {type(solution).__name__} is not numeric; "
            f"the action space is {describe(space)}"
        ) from None
    if array.shape != shape:
        raise ValueError(
            f"solution has shape {array.shape}, expected {shape} "
            f"(the action space is {describe(space)})"
        )
    return array


def cache_dir(name: str) -> Path:
    """Where a fixture built in-process is kept: ``$XDG_CACHE_HOME`` or ``~/.cache``, then
    ``omnigym/<name>/``."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "omnigym" / name


def cached_arrays(path: Path, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The arrays saved at ``path`` (``np.load`` without pickle), or ``build()`` saved there
    first (written to a private file, then renamed, so that a reader never sees half a file)."""
    if path.exists():
        with np.load(path, allow_pickle=False) as saved:
            return dict(saved)
    arrays = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial.npz")
    np.savez(partial, **arrays)
    os.replace(partial, path)
    return arrays


class MethodEnv(gym.Env):
    """A one-step task: ``reset`` draws an instance, ``step(solution)`` scores it (see module)."""

    metadata = {"render_modes": []}
    invalid_reward: float = -1.0

    def __init__(self, size: str = "small"):
        self.size = check_size(size)
        self.instance: Any = None
        self._observation: Any = None

    # ---- subclass hooks ---------------------------------------------------------------------

    def draw(self, rng: np.random.Generator) -> tuple[Any, Any]:
        """Draw one problem: ``(observation, instance)`` (the instance is whatever scoring
        needs, e.g. the ground truth)."""
        raise NotImplementedError

    def score(self, solution: Any) -> tuple[float, dict[str, float]] | None:
        """``(reward, metrics)`` of a checked, finite solution; ``None`` when the solution
        breaks the problem's rules (scored ``invalid_reward`` and flagged)."""
        raise NotImplementedError

    def success(self, metrics: Mapping[str, float]) -> bool | None:
        """Whether ``metrics`` count as a solved instance (None: the task has no such notion)."""
        return None

    # ---- Gymnasium API ----------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._observation, self.instance = self.draw(self.np_random)
        return self._observation, {"invalid_action": False}

    def step(self, solution: Any):
        if self._observation is None:
            raise RuntimeError(f"{type(self).__name__}.step() before reset()")
        checked, finite = check_solution(solution, self.action_space)
        scored = self.score(checked) if finite else None
        if scored is None:
            reward, metrics = float(self.invalid_reward), {"invalid": 1.0}
        else:
            reward, metrics = float(scored[0]), {**scored[1], "invalid": 0.0}
        info: dict[str, Any] = {"invalid_action": scored is None, "metrics": metrics}
        solved = None if scored is None else self.success(metrics)
        info["success"] = False if scored is None else solved
        if info["success"] is None:
            del info["success"]
        # The final observation is the instance again, as a copy: Gymnasium asks that no two
        # calls return shared objects.
        observation = copy.deepcopy(self._observation)
        self._observation = None
        return observation, reward, True, False, info
