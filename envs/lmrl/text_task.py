"""The shared frame of the LMRL text tasks: transcript, text spaces, info keys, action cut.

LMRL-Gym (Abdulhai et al., ICML 2025) gives its agents the whole interaction so far as one text;
every task here does the same through :class:`TextTaskEnv`, which leaves a task only its rules
(:meth:`~TextTaskEnv._begin` and :meth:`~TextTaskEnv._play`). Conventions (``docs/lmrl.md``):

- The observation is the transcript since reset: the opening message, then per turn the agent's
  action line and the environment's reply line, joined by newlines. ``obs_mode="last"`` gives
  only the latest environment message instead.
- An action is any ``str``; a non-``str`` raises ``ValueError`` naming the ``Text`` space. The
  transcript records it cut to 256 characters, with whitespace turned into spaces and other
  characters outside the printable charset into ``?``, so that every transcript stays inside the
  observation space (LMRL-Gym has no such bound; its token budget plays that role).
- ``info`` on every step: ``last_message``, ``invalid_action``, ``episode_return``, ``turn``
  (agent turns taken, 0 at reset) and ``legal_actions`` where the task lists them. On the final
  step also ``success``, ``normalized_score`` and ``metrics`` (``turns``, ``invalid_actions`` and
  the task's own counts, all floats).
- ``terminated`` means the task ended (solved or failed); ``truncated`` means the turn cap. LMRL
  has a single ``done`` flag; the split is ours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium
import numpy as np

from omnigym.envs.lmrl.normalization import final_step_score
from omnigym.spaces import require_text_action, text_space

ACTION_MAX_LENGTH = 256
OBS_MODES = ("transcript", "last")


def transcript_line(action: str) -> str:
    """``action`` as the transcript records it: cut to 256 characters, on one printable line."""
    cut = action[:ACTION_MAX_LENGTH]
    if cut.isascii() and cut.isprintable():
        return cut
    return "".join(char if " " <= char <= "~" else (" " if char.isspace() else "?") for char in cut)


def require_finite_number(name: str, value: Any) -> float:
    """``value`` as a float, or ``ValueError`` naming the kwarg ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def require_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else ``ValueError`` naming the kwarg ``name``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


@dataclass
class Turn:
    """What a task's rules make of one agent action."""

    message: str
    reward: float
    terminated: bool = False
    truncated: bool = False
    invalid: bool = False
    success: bool = False


@dataclass
class _Episode:
    transcript: str = ""
    last_message: str = ""
    turns: int = 0
    invalid_actions: int = 0
    episode_return: float = 0.0
    done: bool = False


class TextTaskEnv(gymnasium.Env[str, str]):
    """Base class of the LMRL text tasks; see the module docstring for the shared conventions.

    A task sets :attr:`observation_max_length`, :attr:`score_id` (the id whose normalization
    constants score it), :attr:`min_return` (the analytic minimum, the normalized score's 0) and
    :attr:`evaluation_episodes` (how many oracle episodes make the normalized score's 100; a
    task whose protocol is not "seeds 0..N-1" overrides :meth:`evaluation_runs`), and implements
    :meth:`_begin`, :meth:`_play`, :meth:`_metrics` and, where the move set is small,
    :meth:`_legal_actions`.
    """

    # "ansi" renders the transcript; a frame rate is declared only because Gymnasium's checker
    # warns when it is missing.
    metadata = {"render_modes": ["ansi"], "render_fps": 4}
    observation_max_length: int
    score_id: str
    min_return: ClassVar[float]
    evaluation_episodes: ClassVar[int] = 1000

    @classmethod
    def evaluation_runs(cls) -> list[tuple[int, dict[str, Any]]]:
        """The (reset seed, reset options) of each episode of the evaluation protocol."""
        return [(seed, {}) for seed in range(cls.evaluation_episodes)]

    def __init__(self, obs_mode: str = "transcript", render_mode: str | None = None) -> None:
        self.obs_mode = require_choice("obs_mode", obs_mode, OBS_MODES)
        if render_mode is not None:
            require_choice("render_mode", render_mode, tuple(self.metadata["render_modes"]))
        self.render_mode = render_mode
        self.action_space = text_space(ACTION_MAX_LENGTH)
        self.observation_space = text_space(self.observation_max_length)
        self._episode = _Episode(done=True)

    # -- what a task implements ---------------------------------------------------------------

    def _begin(self, options: dict[str, Any]) -> str:
        """Start an episode from ``self.np_random`` and ``options``; return the opening message."""
        raise NotImplementedError

    def _play(self, action: str) -> Turn:
        """Apply the agent's (uncut) action to the task state."""
        raise NotImplementedError

    def _render_action(self, line: str) -> str:
        """The transcript line of an action already passed through :func:`transcript_line`."""
        return line

    def _legal_actions(self) -> Sequence[str] | None:
        return None

    def _metrics(self) -> dict[str, float]:
        """Task-specific counts for the final step's ``metrics``."""
        return {}

    # -- the Gymnasium API --------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        message = self._begin(dict(options or {}))
        self._episode = _Episode(transcript=message, last_message=message)
        return self._observation(), self._info(invalid=False)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        require_text_action(action, self.action_space)
        episode = self._episode
        if episode.done:
            raise RuntimeError("the episode is over: call reset() before step()")
        turn = self._play(action)
        episode.turns += 1
        episode.invalid_actions += turn.invalid
        episode.episode_return += turn.reward
        episode.last_message = turn.message
        episode.transcript = (
            f"{episode.transcript}\n{self._render_action(transcript_line(action))}\n{turn.message}"
        )
        info = self._info(invalid=turn.invalid)
        if turn.terminated or turn.truncated:
            episode.done = True
            info["success"] = turn.success
            info["normalized_score"] = final_step_score(self.score_id, episode.episode_return)
            info["metrics"] = {
                "turns": float(episode.turns),
                "invalid_actions": float(episode.invalid_actions),
                **self._metrics(),
            }
        return self._observation(), turn.reward, turn.terminated, turn.truncated, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._episode.transcript
        return None

    # -- shared pieces ------------------------------------------------------------------------

    def _observation(self) -> str:
        if self.obs_mode == "last":
            return self._episode.last_message
        return self._episode.transcript

    def _info(self, invalid: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "last_message": self._episode.last_message,
            "invalid_action": invalid,
            "episode_return": self._episode.episode_return,
            "turn": self._episode.turns,
        }
        legal = self._legal_actions()
        if legal is not None:
            info["legal_actions"] = legal
        return info


class ScriptedBehaviour:
    """Base of the behaviour policies that make the offline datasets (``docs/lmrl.md``).

    A behaviour is an agent (``reset(seed)``, ``act(observation, info)``) with its own seeded
    generator :attr:`rng`. Unlike an oracle it is a data generator, not a player, and may read
    the simulator's state through ``env.unwrapped`` (LMRL-Gym's dataset policies did too). A
    subclass sets :attr:`policy` (its id in the dataset records), :attr:`default_episodes` (the
    dataset size behind the normalized score's 50) and :attr:`lmrl_success` (LMRL's dataset
    success rate, for comparison), and reports its parameters with :meth:`parameters`. A new
    episode is recognised by ``info["turn"] == 0``.
    """

    policy: ClassVar[str]
    default_episodes: ClassVar[int]
    lmrl_success: ClassVar[float]

    def __init__(self, env: Any) -> None:
        self.env = env
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def parameters(self) -> dict[str, Any]:
        """The policy id and parameters, as recorded with each dataset episode."""
        return {"policy": self.policy}

    def act(self, observation: str, info: dict[str, Any]) -> str:
        raise NotImplementedError
