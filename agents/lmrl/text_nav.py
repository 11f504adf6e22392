"""The oracle of LMRL-Gym's Text-Nav (``LMRL/TextNavFO-v0``, ``LMRL/TextNavPO-v0``).

LMRL-Gym (Abdulhai et al., ICML 2025) scores Text-Nav against an optimal player; here it plays
the task's planner (:func:`omnigym.envs.lmrl.text_nav.walkthrough`, a shortest solution from
every task state) from what it reads, never from the simulator. Its mean return is the
normalized score's 100 (``docs/lmrl.md``).
"""

from __future__ import annotations

import re
from typing import Any

from omnigym.envs.lmrl.text_nav import load_house, task_state, walkthrough

_ROOM_NAME = re.compile(r"You are in the ([a-z ]+)\.")


class TextNavOracle:
    """The walkthrough, from wherever the player starts, planned from what it reads.

    It never reads the environment: it recognises its room from each view (by the room's name
    when the view gives it, FO, else by the room's description, PO; both are public data in
    ``house.yaml``), knows the public opening placement of the stale food and the boxes, and
    tracks the effects of its own commands. From that task state it plays the first command of
    a shortest solution (:func:`walkthrough`): go to the living room, take the stale food, go to
    the kitchen, open the fridge (on the way, when the way passes the kitchen), put the food in,
    close the fridge. ``env`` is accepted for the agent protocol and not used.
    """

    def __init__(self, env: Any = None) -> None:
        self.house = load_house()
        self._plan = walkthrough()
        self._room_of = {text: room for room, text in self.house.descriptions.items()}
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        # The room is read from every view; the stale food and the boxes start as in the data.
        self._belief = task_state(self.house, self.house.start_state(self.house.rooms[0]))

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self.reset()
        room = self._read_room(info["last_message"])
        text, self._belief = self._plan[self._belief._replace(room=room)]
        return text

    def _read_room(self, message: str) -> str:
        named = _ROOM_NAME.search(message)
        if named is not None:
            return named.group(1)
        for description, room in self._room_of.items():
            if description in message:
                return room
        raise ValueError(f"TextNavOracle cannot tell the room from {message!r}")
