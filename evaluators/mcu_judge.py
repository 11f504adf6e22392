"""The judge hook: what an external LLM or VLM judge needs to rate MCU episodes.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) rates each episode by showing a vision-language
model the task's rubric and the episode's video (AutoEval). omnigym scores the six dimensions
from the episode log instead (:mod:`omnigym.envs.mcu.evaluation`), and no judge is a
dependency; this hook writes, per episode, the material a judge would read, so that its ratings
can be compared with the programmatic ones:

- ``rubric.txt``: the instruction and the task's six-dimension rubric;
- ``log.txt``: the text observation at reset, then every command with what it did (invalid and
  why, reward) and the observation after it;
- ``frames/NNNN.png``: the first-person frame before each command and after the last, when the
  environment was made with ``pixels=True``;
- ``rating.json``: the programmatic scores of the episode, MCU-style
  (:func:`omnigym.evaluators.mcu_ratings.rating`).

Run::

    python -m omnigym.evaluators.mcu_judge MCU/combat_spiders-hard-v0 --agent oracle \\
        --episodes 2 --out judge/ [--pixels]

or wrap an environment in :class:`JudgeLog` and play it with any loop.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from omnigym.evaluators.mcu_ratings import file_name, rating


class JudgeLog(gym.Wrapper):
    """Writes one folder per episode into ``out`` (module docstring), named like the rating
    files; set ``tag`` (``{"env_id", "agent", "seed", "episode"}``) before an episode to name
    it (default: the env id and a running episode number)."""

    def __init__(self, env: gym.Env, out: str | Path, agent: str = "agent"):
        super().__init__(env)
        self.out = Path(out)
        self.agent = agent
        self.tag: dict[str, Any] | None = None
        self._count = 0
        self._lines: list[str] = []
        self._frames: list[np.ndarray] = []

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = self.env.reset(seed=seed, options=options)
        self._lines = [f"reset (seed {seed})", observation["text"], ""]
        self._frames = [observation["rgb"]] if "rgb" in observation else []
        return observation, info

    def step(self, action: Any):
        observation, reward, terminated, truncated, info = self.env.step(action)
        outcome = f"invalid: {info['invalid_reason']}" if info["invalid_action"] else "ok"
        self._lines += [f"> {action}", f"({outcome}; reward {reward:.3f})", observation["text"], ""]
        if "rgb" in observation:
            self._frames.append(observation["rgb"])
        if terminated or truncated:
            self._write(info)
        return observation, reward, terminated, truncated, info

    def _write(self, info: dict[str, Any]) -> Path:
        from PIL import Image

        base = self.env.unwrapped
        tag = self.tag or {
            "env_id": base.spec.id if base.spec else "MCU",
            "agent": self.agent,
            "seed": None,
            "episode": self._count,
        }
        self._count += 1
        record = {**tag, "success": info["success"], "metrics": info["metrics"]}
        folder = self.out / file_name(record).removesuffix(".json")
        folder.mkdir(parents=True, exist_ok=True)
        rubric = f"Instruction: {base.task.text}\n\nRubric:\n{base.task.rubric}\n"
        (folder / "rubric.txt").write_text(rubric, encoding="utf-8")
        (folder / "log.txt").write_text("\n".join(self._lines), encoding="utf-8")
        text = json.dumps(rating(record), indent=1, allow_nan=False)
        (folder / "rating.json").write_text(text + "\n", encoding="utf-8")
        if self._frames:
            (folder / "frames").mkdir(exist_ok=True)
            for index, frame in enumerate(self._frames):
                Image.fromarray(frame).save(folder / "frames" / f"{index:04d}.png")
        return folder


def write_judge_material(
    env_id: str, agent: str, episodes: int, out: str | Path, seed: int = 0, pixels: bool = False
) -> list[Path]:
    """Plays ``episodes`` of ``agent`` on ``env_id`` with :class:`JudgeLog`; returns the
    episode folders."""
    from omnigym.agent import make_agent
    from omnigym.evaluators.rollout import run_episode
    from omnigym.registry import make

    env = JudgeLog(make(env_id, **({"pixels": True} if pixels else {})), out, agent)
    player = make_agent(agent, env=env, env_id=env_id)
    folders = []
    for episode in range(episodes):
        env.tag = {"env_id": env_id, "agent": agent, "seed": seed, "episode": episode}
        record = run_episode(env, player, seed, episode)
        folders.append(Path(out) / file_name({**env.tag, **record}).removesuffix(".json"))
    env.close()
    return folders


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id", help="an MCU id")
    parser.add_argument("--agent", required=True)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pixels", action="store_true", help="also write the frames")
    args = parser.parse_args(argv)
    folders = write_judge_material(
        args.env_id, args.agent, args.episodes, args.out, args.seed, args.pixels
    )
    print(f"wrote {len(folders)} episodes for a judge to {args.out}")


if __name__ == "__main__":
    main()
