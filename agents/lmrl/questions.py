"""The oracle of LMRL-Gym's two question games, Twenty Questions and Guess My City.

LMRL-Gym (Abdulhai et al., ICML 2025) scores the question games against a strong questioner.
This one is the greedy information-gain questioner of :mod:`omnigym.envs.lmrl.questions` played
without noise: the yes/no question whose answer splits the remaining items most evenly, a guess
once at most three remain. It knows only the public knowledge base and the answers it reads;
on Guess My City it asks yes/no questions only. Its mean return is the normalized score's 100
(``docs/lmrl.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from omnigym.envs.lmrl.guess_my_city import load_cities
from omnigym.envs.lmrl.questions import (
    YES,
    Candidates,
    KnowledgeBase,
    Move,
    greedy_questioner,
)
from omnigym.envs.lmrl.twenty_questions import load_objects


class InformationGainOracle:
    """Greedy information-gain questioner over a game's knowledge base (module docstring).

    Asks only the first phrasing of each attribute's questions and of each item's guesses
    (tests check the environment parses them back), reads only ``info["last_message"]``, and
    knows only the public knowledge base. ``env`` is accepted for the agent protocol and unused.
    """

    knowledge: ClassVar[Callable[[], KnowledgeBase]]

    def __init__(self, env: Any = None) -> None:
        self.kb = self.knowledge()
        self._questioner = greedy_questioner(self.kb)
        self._everything: Candidates = tuple(range(len(self.kb.items)))
        self._candidates = self._everything
        self._move: Move = ("guess", 0)

    def reset(self, seed: int | None = None) -> None:
        self._candidates = self._everything

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self._candidates = self._everything
        else:
            yes = info["last_message"] == YES
            self._candidates = self._questioner.narrow(self._candidates, self._move, yes)
            if not self._candidates:
                self._candidates = self._everything
        self._move = self._questioner.best(self._candidates)
        kind, index = self._move
        if kind == "guess":
            return self.kb.guesses[index][0]
        return self.kb.attributes[index].questions[0]


class TwentyQuestionsOracle(InformationGainOracle):
    """Greedy information-gain questioner over the objects knowledge base."""

    knowledge = staticmethod(load_objects)


class GuessMyCityOracle(InformationGainOracle):
    """Greedy information-gain questioner over the cities, yes/no questions only."""

    knowledge = staticmethod(load_cities)
