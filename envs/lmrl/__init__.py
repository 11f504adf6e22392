"""LMRL-Gym text tasks (Abdulhai et al., ICML 2025; arXiv 2311.18232), rule-based re-creations.

Importing this package registers the ``LMRL/`` ids and their oracles; the task modules are only
imported when an environment is made. See ``shared/specs/lmrl.md``.
"""

from omnigym.registry import EnvInfo, register

_PAPER = (
    "LMRL-Gym: Benchmarks for Multi-Turn Reinforcement Learning with Language Models (ICML 2025)"
)
_NORMALIZER = "omnigym.envs.lmrl.normalization:normalize_summary"

for _id, _entry, _oracle, _kwargs, _description in (
    (
        "LMRL/MazeFO-v0",
        "omnigym.envs.lmrl.maze:MazeEnv",
        "omnigym.envs.lmrl.maze:MazeOracle",
        {"observability": "full"},
        "Fully observed text maze: reach the goal cell in as few moves as possible.",
    ),
    (
        "LMRL/MazePO-v0",
        "omnigym.envs.lmrl.maze:MazeEnv",
        "omnigym.envs.lmrl.maze:MazeOracle",
        {"observability": "partial"},
        "Partially observed text maze: only the adjacent walls are described.",
    ),
    (
        "LMRL/Wordle-v0",
        "omnigym.envs.lmrl.wordle:WordleEnv",
        "omnigym.envs.lmrl.wordle:WordleOracle",
        {},
        "Wordle in six guesses with g/y/b feedback; the hidden word stays consistent.",
    ),
):
    register(
        EnvInfo(
            id=_id,
            entry_point=_entry,
            family="LMRL",
            kind="single",
            obs_kind="text",
            paper=_PAPER,
            description=_description,
            kwargs=_kwargs,
            normalizer=_NORMALIZER,
            agents={"oracle": _oracle},
        )
    )
