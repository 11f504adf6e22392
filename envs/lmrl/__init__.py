"""LMRL-Gym text tasks (Abdulhai et al., ICML 2025; arXiv 2311.18232), rule-based re-creations.

Importing this package registers the ``LMRL/`` ids with their ``oracle`` and ``behavior`` agents;
the task modules are only imported when an environment or agent is made. See
``shared/specs/lmrl.md`` and ``docs/lmrl.md``.

Every single-agent task module provides, for its ids:

- the environment (a :class:`~omnigym.envs.lmrl.text_task.TextTaskEnv`, whose class attributes
  ``min_return`` and ``evaluation_runs()`` feed the normalized score);
- ``oracle``: the best scripted policy, which reads only what a player may read;
- ``behavior``: the scripted policy behind the task's offline dataset (spec §4); behaviour
  policies are data generators and may read the simulator's state through ``env.unwrapped``.
"""

from omnigym.registry import EnvInfo, register

_PAPER = (
    "LMRL-Gym: Benchmarks for Multi-Turn Reinforcement Learning with Language Models "
    "(Abdulhai et al., ICML 2025)"
)
_NORMALIZER = "omnigym.envs.lmrl.normalization:normalize_summary"
_MODULE = "omnigym.envs.lmrl."

# id, module:env class, oracle class, behaviour class, kwargs, description
_SINGLE = (
    (
        "LMRL/MazeFO-v0",
        "maze:MazeEnv",
        "maze:MazeOracle",
        "maze:MazeBehaviour",
        {"observability": "full"},
        "Fully observed text maze: reach the goal cell in as few moves as possible.",
    ),
    (
        "LMRL/MazePO-v0",
        "maze:MazeEnv",
        "maze:MazeOracle",
        "maze:MazeBehaviour",
        {"observability": "partial"},
        "Partially observed text maze: only the adjacent walls are described.",
    ),
    (
        "LMRL/TextNavFO-v0",
        "text_nav:TextNavEnv",
        "text_nav:TextNavOracle",
        "text_nav:TextNavBehaviour",
        {"observability": "full"},
        "Text house: put the stale food in the fridge; room name and inventory shown.",
    ),
    (
        "LMRL/TextNavPO-v0",
        "text_nav:TextNavEnv",
        "text_nav:TextNavOracle",
        "text_nav:TextNavBehaviour",
        {"observability": "partial"},
        "Text house: put the stale food in the fridge; no room name or inventory.",
    ),
    (
        "LMRL/Wordle-v0",
        "wordle:WordleEnv",
        "wordle:WordleOracle",
        "wordle:WordleBehaviour",
        {},
        "Wordle in six guesses with g/y/b feedback; the hidden word stays consistent.",
    ),
    (
        "LMRL/Chess-v0",
        "chess_task:ChessEnv",
        "chess_task:ChessOracle",
        "chess_task:ChessBehaviour",
        {},
        "Chess as White against a deterministically weakened Stockfish (python-chess rules).",
    ),
    (
        "LMRL/Endgames-v0",
        "chess_task:EndgamesEnv",
        "chess_task:ChessOracle",
        "chess_task:EndgamesBehaviour",
        {},
        "Chess endgames: K+Q, K+R, K+Q+R or K+R+R against a lone king, White to mate.",
    ),
    (
        "LMRL/TwentyQuestions-v0",
        "twenty_questions:TwentyQuestionsEnv",
        "twenty_questions:TwentyQuestionsOracle",
        "twenty_questions:TwentyQuestionsBehaviour",
        {},
        "Twenty Questions over 158 objects: ask yes/no questions, then name the object.",
    ),
    (
        "LMRL/GuessMyCity-v0",
        "guess_my_city:GuessMyCityEnv",
        "guess_my_city:GuessMyCityOracle",
        "guess_my_city:GuessMyCityBehaviour",
        {},
        "Guess My City over 100 cities: open or yes/no questions, then name the city.",
    ),
    (
        "LMRL/CarDealer-v0",
        "car_dealer:CarDealerEnv",
        "car_dealer:CarDealerOracle",
        "car_dealer:CarDealerBehaviour",
        {},
        "Car Dealer: sell a car to a scripted buyer with a hidden profile.",
    ),
)

for _id, _entry, _oracle, _behaviour, _kwargs, _description in _SINGLE:
    register(
        EnvInfo(
            id=_id,
            entry_point=_MODULE + _entry,
            family="LMRL",
            kind="single",
            obs_kind="text",
            paper=_PAPER,
            description=_description,
            kwargs=_kwargs,
            normalizer=_NORMALIZER,
            agents={"oracle": _MODULE + _oracle, "behavior": _MODULE + _behaviour},
            dataset=_MODULE + "datasets:write_dataset",
        )
    )

register(
    EnvInfo(
        id="LMRL/CarDealerDuo-v0",
        entry_point=_MODULE + "car_dealer:CarDealerDuoParallelEnv",
        aec_entry_point=_MODULE + "car_dealer:CarDealerDuoAECEnv",
        family="LMRL",
        kind="multi",
        obs_kind="text",
        paper=_PAPER,
        description="Car Dealer for two agents: a seller and a buyer negotiate in turns.",
    )
)
