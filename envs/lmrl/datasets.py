"""Offline datasets for the LMRL text tasks, made by each task's seeded behaviour policy.

LMRL-Gym (Abdulhai et al., ICML 2025) ships offline datasets collected from mixtures of
sub-optimal policies; nothing is downloaded here: each task's ``behavior`` agent (a
:class:`~omnigym.envs.lmrl.text_task.ScriptedBehaviour`, documented in the task's module) is
replayed through the environment instead (``docs/lmrl.md``). Run::

    omnigym dataset LMRL/Wordle-v0 --episodes N --seed S --out FILE.jsonl[.gz]
    python -m omnigym.envs.lmrl.datasets --env LMRL/Wordle-v0 --episodes N --seed S --out FILE

Each line of ``FILE`` is one episode: ``task`` (the env id), ``seed`` (the episode's reset
seed), ``behaviour`` (policy id and parameters), ``turns`` (``{role: env|agent, text, reward}``:
the environment's messages and the agent's actions as the transcript records them), ``return``,
``success``, ``truncated``. Statistics go to ``FILE``'s ``.stats.json`` sibling. A name ending in
``.gz`` is gzipped; either way the bytes are a function of the arguments alone.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import omnigym
from omnigym.envs.lmrl.text_task import transcript_line
from omnigym.io import atomic_write_bytes, atomic_write_text

FIXTURES = Path(__file__).parent / "data" / "fixtures"
FIXTURE_EPISODES = 100


def dataset_env_ids() -> list[str]:
    """Every single-agent LMRL id (each has a behaviour policy and so a dataset)."""
    return [info.id for info in omnigym.list_envs(family="LMRL", kind="single")]


def behaviour_class(env_id: str) -> Any:
    """The behaviour policy class of ``env_id`` (its ``default_episodes``, ``lmrl_success``)."""
    from omnigym.agent import load_agent_factory

    return load_agent_factory("behavior", env_id)


def _check_env_id(env_id: str) -> None:
    if env_id not in dataset_env_ids():
        raise ValueError(f"env_id must be one of {', '.join(dataset_env_ids())}, got {env_id!r}")


def generate(env_id: str, episodes: int, seed: int) -> Iterator[dict[str, Any]]:
    """Yield ``episodes`` episode records of ``env_id``'s behaviour policy, deterministically.

    Episode ``i`` is reset with the ``i``-th word of ``SeedSequence(seed)``'s state; the policy
    is reset with a seed drawn from ``SeedSequence([that word, 1])``.
    """
    _check_env_id(env_id)
    env = omnigym.make(env_id)
    behaviour = omnigym.make_agent("behavior", env=env, env_id=env_id)
    try:
        for episode_seed in np.random.SeedSequence(seed).generate_state(episodes).tolist():
            behaviour.reset(int(np.random.SeedSequence([episode_seed, 1]).generate_state(1)[0]))
            observation, info = env.reset(seed=episode_seed)
            turns = [{"role": "env", "text": info["last_message"], "reward": 0.0}]
            done = truncated = False
            while not done:
                action = behaviour.act(observation, info)
                observation, reward, terminated, truncated, info = env.step(action)
                turns.append({"role": "agent", "text": transcript_line(action), "reward": reward})
                turns.append({"role": "env", "text": info["last_message"], "reward": 0.0})
                done = terminated or truncated
            yield {
                "task": env_id,
                "seed": episode_seed,
                "behaviour": behaviour.parameters(),
                "turns": turns,
                "return": info["episode_return"],
                "success": info["success"],
                "truncated": truncated,
            }
    finally:
        env.close()


def summarize(env_id: str, seed: int, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The statistics written beside a dataset."""
    returns = np.array([record["return"] for record in records], dtype=np.float64)
    behaviour = behaviour_class(env_id)
    return {
        "task": env_id,
        "seed": seed,
        "episodes": len(records),
        "success_rate": float(np.mean([record["success"] for record in records])),
        "lmrl_success_rate": behaviour.lmrl_success,
        "mean_return": float(returns.mean()),
        "median_return": float(np.median(returns)),
        "mean_agent_turns": float(np.mean([len(record["turns"]) // 2 for record in records])),
        "behaviour": behaviour.policy,
    }


def stats_path(path: str | Path) -> Path:
    """Where the statistics of the dataset at ``path`` go: ``NAME.stats.json`` beside it."""
    path = Path(path)
    name = path.name
    for suffix in (".gz", ".jsonl"):
        name = name.removesuffix(suffix)
    return path.with_name(f"{name}.stats.json")


def write_dataset(env_id: str, episodes: int | None, seed: int, path: str | Path) -> dict[str, Any]:
    """Generate and write the dataset to ``path`` (gzipped if it ends in ``.gz``) and its
    statistics beside it; return the statistics. ``episodes=None`` is the behaviour's default
    size (the one behind the normalized score)."""
    _check_env_id(env_id)
    if episodes is None:
        episodes = behaviour_class(env_id).default_episodes
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    records = list(generate(env_id, episodes, seed))
    data = "".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records)
    payload = data.encode("utf-8")
    path = Path(path)
    if path.name.endswith(".gz"):
        buffer = io.BytesIO()
        # mtime=0 and no file name in the header keep the bytes a function of the arguments.
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as archive:
            archive.write(payload)
        payload = buffer.getvalue()
    atomic_write_bytes(path, payload)
    stats = summarize(env_id, seed, records)
    atomic_write_text(stats_path(path), json.dumps(stats, indent=2) + "\n")
    return stats


def load_dataset(path: str | Path) -> list[dict[str, Any]]:
    """The episode records of a JSONL dataset, gzipped or not."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def fixture_path(env_id: str) -> Path:
    """The committed fixture of ``env_id``: ``data/fixtures/<Name-vN>.jsonl.gz``."""
    return FIXTURES / f"{env_id.split('/', 1)[1]}.jsonl.gz"


def load_fixture(env_id: str) -> list[dict[str, Any]]:
    """The committed 100-episode fixture of ``env_id`` (seed 0)."""
    return load_dataset(fixture_path(env_id))


def write_fixtures(env_ids: list[str] | None = None) -> None:
    """Regenerate the committed fixtures (``FIXTURE_EPISODES`` episodes, seed 0)."""
    for env_id in env_ids or dataset_env_ids():
        write_dataset(env_id, FIXTURE_EPISODES, 0, fixture_path(env_id))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write an LMRL offline dataset.")
    parser.add_argument("--env", required=True, choices=dataset_env_ids(), metavar="ENV_ID")
    parser.add_argument("--episodes", type=int, help="default: the behaviour's default size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="output file (.jsonl or .jsonl.gz)")
    args = parser.parse_args(argv)
    print(json.dumps(write_dataset(args.env, args.episodes, args.seed, args.out), indent=2))


if __name__ == "__main__":
    main()
