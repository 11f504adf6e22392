"""LMRL offline datasets as training examples for language-model policies, and LMRL's filters.

LMRL-Gym (Abdulhai et al., "LMRL-Gym: Benchmarks for Multi-Turn Reinforcement Learning with
Language Models", ICML 2025) trains its offline agents on the text histories of its datasets:
at every agent turn, the history so far is the input and the agent's utterance the target, with
the turn's reward and return-to-go for the value-based methods. Here:

- **Episodes → examples** (:func:`dataset_examples`). A dataset episode
  (:mod:`omnigym.envs.lmrl.datasets`: ``turns`` of ``{role, text, reward}``) records the env's
  messages and the agent's actions, but the observation an agent reads is the env's own
  transcript, in which some tasks render an action differently (Wordle spaces its letters, Car
  Dealer prefixes the seller) and Chess shows only the position. So each episode is replayed
  through its environment from its recorded reset seed: the observation before each agent turn
  is exactly what :class:`~omnigym.llm_agents.policy.LMPolicy` reads in play, with the turn's
  ``legal_actions``. The replay checks every reward and env message against the record and
  raises ``ValueError`` where they differ (a Chess dataset made with Stockfish does not replay
  against the built-in fallback opponent).
- **Example** fields: ``observation``, ``prompt`` (:func:`~omnigym.llm_agents.policy.
  format_prompt`: the instructions and the observation as a plain model reads them;
  :class:`~omnigym.llm_agents.policy.PromptFormat` frames and truncates the same text for a
  given tokenizer), ``completion`` (the action), ``reward``, ``return_to_go`` (undiscounted
  unless ``gamma`` is given), ``episode_return``, ``success`` and where the episode came from.
- **Filters** for filtered BC (%BC, LMRL-Gym's): the top 10 % of episodes by return for the
  dialogue tasks (Twenty Questions, Guess My City, Car Dealer), the successful episodes for
  Maze, Text-Nav, Chess and Endgames, the top 30 % for Wordle (:func:`lmrl_filter` reads the
  rule from the task's registry entry; :func:`filter_episodes`). "Top q" keeps exactly ceil(q ·
  n) episodes, the highest returns first and ties in dataset order — LMRL's percentile threshold
  would keep every tied episode, which on Wordle's integer returns can be far more than q.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import omnigym
from omnigym.envs.lmrl.datasets import generate, load_dataset, load_fixture
from omnigym.llm_agents.policy import env_id_of, format_prompt
from omnigym.registry import UnknownEnvError, list_envs, spec

Record = Mapping[str, Any]
REWARD_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Example:
    """One agent turn of a dataset episode (module docstring)."""

    env_id: str
    episode: int
    turn: int
    observation: str
    completion: str
    reward: float
    return_to_go: float
    episode_return: float
    success: bool
    legal_actions: tuple[str, ...] | None = None

    @property
    def prompt(self) -> str:
        return format_prompt(self.env_id, self.observation)


# ---- datasets in ---------------------------------------------------------------------------


def load_records(
    source: Any, episodes: int | None = None, seed: int = 0
) -> tuple[str, list[dict[str, Any]]]:
    """``(env_id, episode records)`` of a dataset given as an env id or a made env (its
    committed fixture, or ``episodes`` fresh episodes of its behaviour policy from ``seed``),
    a ``.jsonl[.gz]`` path, or a list of records."""
    if isinstance(source, (str, os.PathLike)) and Path(source).suffix in (".gz", ".jsonl"):
        records = load_dataset(source)
    elif isinstance(source, str) or env_id_of(source) is not None:
        env_id = source if isinstance(source, str) else env_id_of(source)
        omnigym.spec(env_id)  # an unknown id fails here, by name
        records = (
            load_fixture(env_id) if episodes is None else list(generate(env_id, episodes, seed))
        )
    else:
        records = [dict(record) for record in source]
    if not records:
        raise ValueError(f"dataset {source!r} has no episodes")
    tasks = {record["task"] for record in records}
    if len(tasks) != 1:
        raise ValueError(f"dataset {source!r} mixes tasks: {', '.join(sorted(tasks))}")
    return tasks.pop(), records


# ---- episodes -> examples ------------------------------------------------------------------


def returns_to_go(rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    """Σ_{k >= t} γ^(k - t) r_k for every t."""
    total, out = 0.0, []
    for reward in reversed(rewards):
        total = reward + gamma * total
        out.append(total)
    return out[::-1]


POSITION_TASKS = ("LMRL/Chess-v0", "LMRL/Endgames-v0")
"""Tasks whose observation is the current position, i.e. the latest env message (Chess):
their examples are read off the record (legal moves from python-chess) without a replay, which
would need the very opponent that made the dataset."""


def episode_examples(
    record: Record, env: Any = None, index: int = 0, gamma: float = 1.0
) -> list[Example]:
    """The examples of one episode; ``env`` (a made env of the record's task) replays it,
    except for :data:`POSITION_TASKS`, which need none."""
    turns = record["turns"]
    messages, actions = turns[0::2], turns[1::2]
    where = f"{record['task']} episode {index} (seed {record['seed']})"
    if any(turn["role"] != "env" for turn in messages) or any(
        turn["role"] != "agent" for turn in actions
    ):
        raise ValueError(f"{where}: turns must alternate env and agent, starting with env")
    rewards = [float(turn["reward"]) for turn in actions]
    if record["task"] in POSITION_TASKS:
        seen = _positions(messages[: len(actions)])
    else:
        seen = _replay(record, env, messages, actions, where)
    return [
        Example(
            env_id=record["task"],
            episode=index,
            turn=t,
            observation=observation,
            completion=action["text"],
            reward=rewards[t],
            return_to_go=to_go,
            episode_return=float(record["return"]),
            success=bool(record["success"]),
            legal_actions=legal,
        )
        for t, ((observation, legal), action, to_go) in enumerate(
            zip(seen, actions, returns_to_go(rewards, gamma), strict=True)
        )
    ]


def _replay(
    record: Record, env: Any, messages: Sequence[Record], actions: Sequence[Record], where: str
) -> list[tuple[str, tuple[str, ...] | None]]:
    """(observation, legal actions) before each agent turn, from a replay through ``env``."""
    observation, info = env.reset(seed=int(record["seed"]))
    seen = []
    for t, (message, action) in enumerate(zip(messages, actions, strict=False)):
        if info["last_message"] != message["text"]:
            raise ValueError(f"{where}: the replay diverges before agent turn {t}")
        legal = info.get("legal_actions")
        seen.append((observation, None if legal is None else tuple(legal)))
        observation, reward, *_, info = env.step(action["text"])
        if abs(reward - float(action["reward"])) > REWARD_TOLERANCE:
            raise ValueError(
                f"{where}: agent turn {t} earns {reward} on replay, {action['reward']} in the "
                "record"
            )
    return seen


def _positions(messages: Sequence[Record]) -> list[tuple[str, tuple[str, ...]]]:
    """(position, legal SAN moves) before each agent turn of a chess record."""
    from omnigym.envs.lmrl.chess_task import fen_from_observation, import_chess

    chess = import_chess()
    seen = []
    for message in messages:
        board = chess.Board(fen_from_observation(message["text"]))
        seen.append((message["text"], tuple(board.san(move) for move in board.legal_moves)))
    return seen


def dataset_examples(
    records: Sequence[Record],
    env_id: str | None = None,
    gamma: float = 1.0,
    env_kwargs: Mapping[str, Any] | None = None,
) -> list[Example]:
    """Every agent turn of ``records`` as an :class:`Example`, episodes in order (replayed
    through one env of ``env_id``, default the records' task, made with ``env_kwargs``: a
    Wordle made with ``list_guesses=True`` gives each turn its legal actions)."""
    if not 0 <= gamma <= 1:
        raise ValueError(f"gamma must be in [0, 1], got {gamma!r}")
    if not records:
        return []
    env_id = env_id or records[0]["task"]
    env = None if env_id in POSITION_TASKS else omnigym.make(env_id, **(env_kwargs or {}))
    try:
        return [
            example
            for index, record in enumerate(records)
            for example in episode_examples(record, env, index, gamma)
        ]
    finally:
        if env is not None:
            env.close()


# ---- filtered BC -----------------------------------------------------------------------------


@dataclass(frozen=True)
class EpisodeFilter:
    """Which episodes filtered BC keeps: ``"success"`` (the successful ones) or ``"top"`` (the
    ``fraction`` with the highest returns)."""

    kind: str
    fraction: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in ("success", "top"):
            raise ValueError(f"kind must be 'success' or 'top', got {self.kind!r}")
        if not 0 < self.fraction <= 1:
            raise ValueError(f"fraction must be in (0, 1], got {self.fraction!r}")


def lmrl_filter(env_id: str) -> EpisodeFilter:
    """The filtered-BC rule that ``env_id``'s family registers beside the task
    (``EnvInfo.metadata["bc_filter"]``; LMRL's are in ``envs/lmrl/registry.yaml``)."""
    try:
        rule = spec(env_id).metadata.get("bc_filter")
    except UnknownEnvError:
        rule = None
    if rule is None:
        with_rule = [info.id for info in list_envs() if "bc_filter" in info.metadata]
        raise ValueError(f"no filtered-BC rule for {env_id!r} (known: {', '.join(with_rule)})")
    return EpisodeFilter(**rule)


def filter_episodes(
    records: Sequence[Record], env_id: str | None = None, rule: EpisodeFilter | None = None
) -> list[Record]:
    """The episodes ``rule`` keeps (default: LMRL's filter for ``env_id`` or the records'
    task), in dataset order. Raises ``ValueError`` when none is kept."""
    if not records:
        raise ValueError("no episodes to filter")
    rule = rule or lmrl_filter(env_id or records[0]["task"])
    if rule.kind == "success":
        kept = [record for record in records if record["success"]]
    else:
        count = math.ceil(rule.fraction * len(records))
        order = sorted(range(len(records)), key=lambda i: -float(records[i]["return"]))
        kept = [records[i] for i in sorted(order[:count])]
    if not kept:
        raise ValueError(f"the {rule.kind} filter keeps none of the {len(records)} episodes")
    return kept
