"""LMRL-Gym's Text-Nav, fully (FO) and partially (PO) observed, its planner and dataset policy.

Follows the Text-Nav task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232): a player
in a small text house must find the stale food, carry it to the kitchen and shut it in the
fridge, by typing commands such as ``go east`` or ``take stale food from coffee table``. The
house (rooms, exits, furniture, objects) is data, ``house.yaml``.

Departures from LMRL-Gym:

- The game is simulated here, without TextWorld: the rules of the command grammar below are
  written by hand because no library provides them short of TextWorld's compiled games (which
  need its Inform 7 tool chain). The house has 8 rooms, as LMRL's code builds (its paper says
  10); its layout and wording are ours.
- Every reply to an admissible command repeats the full room view with the admissible commands.
  An inadmissible one changes nothing and gets a one-line reply (as TextWorld answers), and the
  transcript records an admissible command as it was matched (lower-cased, single-spaced), so
  that the longest episode provably fits the 16,384-character observation.
- The episode ends (``terminated``) when the stale food is eaten, with return 0; the 15-command
  cap is ``truncated``. LMRL has a single ``done`` flag.
- The behaviour policy is our reading of LMRL's description: two policies, each
  following the walkthrough (with some random commands) in one half of the house (rooms by
  distance to the kitchen) and acting at random in the other, plus a walkthrough step 10 % of
  the time there.

The oracle (:mod:`omnigym.agents.lmrl.text_nav`) and the behaviour policy share one planner
(:func:`walkthrough`): a breadth-first search over the states that matter to the task (the
room, where the stale food is, which boxes are open), built from the same rules as the
environment so that its commands are always admissible.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import product
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import yaml

from omnigym.envs.lmrl.text_task import (
    ScriptedBehaviour,
    TextTaskEnv,
    Turn,
    require_choice,
    require_finite_number,
)

OBSERVABILITIES = ("full", "partial")
HOUSE_PATH = Path(__file__).with_name("house.yaml")
CARRIED = "inventory"
FLOOR = "floor of "
INADMISSIBLE = "That command is not admissible here."
TASK_DONE = "The stale food is in the closed fridge: task complete."
FOOD_POISONING = "It was spoiled, and you are too ill to go on."


class State(NamedTuple):
    """Where everything is: the player's room, each object's place, each box's open flag.

    ``places`` follows :attr:`House.objects`; a place is a container name, ``"inventory"``,
    ``"floor of <room>"``, or ``None`` once the object is eaten. ``opened`` follows
    :attr:`House.boxes`.
    """

    room: str
    places: tuple[str | None, ...]
    opened: tuple[bool, ...]


class Command(NamedTuple):
    """An admissible command: a verb, the object (index into :attr:`House.objects`, or -1) and a
    direction or container (or ``""``)."""

    verb: str
    item: int
    target: str


@dataclass(frozen=True, eq=False)
class House:
    """The house as public data, with the rules that move things around in it."""

    objective: str
    target: str
    goal_container: str
    max_steps: int
    descriptions: dict[str, str]
    exits: dict[str, dict[str, str]]
    container_room: dict[str, str]
    boxes: tuple[str, ...]
    objects: tuple[str, ...]
    start_places: tuple[str, ...]
    edible: frozenset[str]

    @property
    def rooms(self) -> tuple[str, ...]:
        return tuple(self.descriptions)

    def start_state(self, room: str) -> State:
        """The opening state with the player in ``room``."""
        return State(room, self.start_places, (False,) * len(self.boxes))

    def distances(self, room: str) -> dict[str, int]:
        """Moves from every room to ``room`` (breadth-first search; exits are two-way)."""
        distance = {room: 0}
        frontier = deque([room])
        while frontier:
            here = frontier.popleft()
            for there in self.exits[here].values():
                if there not in distance:
                    distance[there] = distance[here] + 1
                    frontier.append(there)
        return distance

    def only(self, names: tuple[str, ...]) -> House:
        """The same house holding only the objects ``names`` (the planner's view of it)."""
        keep = [self.objects.index(name) for name in names]
        return House(
            objective=self.objective,
            target=self.target,
            goal_container=self.goal_container,
            max_steps=self.max_steps,
            descriptions=self.descriptions,
            exits=self.exits,
            container_room=self.container_room,
            boxes=self.boxes,
            objects=names,
            start_places=tuple(self.start_places[index] for index in keep),
            edible=self.edible & set(names),
        )

    # -- the rules ------------------------------------------------------------------------------

    def receptacles(self, state: State) -> list[tuple[str, str]]:
        """``(container, preposition)`` of the room's containers that can take objects now."""
        found = []
        for container, room in self.container_room.items():
            if room != state.room:
                continue
            if container not in self.boxes:
                found.append((container, "on"))
            elif state.opened[self.boxes.index(container)]:
                found.append((container, "in"))
        return found

    def commands(self, state: State) -> dict[str, Command]:
        """The admissible commands of ``state``, in the order they are listed."""
        found = {f"go {way}": Command("go", -1, way) for way in self.exits[state.room]}
        floor = FLOOR + state.room
        open_here = [container for container, _ in self.receptacles(state)]
        for container in open_here:
            for item, place in enumerate(state.places):
                if place == container:
                    found[f"take {self.objects[item]} from {container}"] = Command(
                        "take", item, container
                    )
        for item, place in enumerate(state.places):
            if place == floor:
                found[f"take {self.objects[item]}"] = Command("take", item, floor)
        for box, is_open in zip(self.boxes, state.opened, strict=True):
            if self.container_room[box] == state.room:
                verb = "close" if is_open else "open"
                found[f"{verb} {box}"] = Command(verb, -1, box)
        carried = [item for item, place in enumerate(state.places) if place == CARRIED]
        for item in carried:
            for container, preposition in self.receptacles(state):
                found[f"put {self.objects[item]} {preposition} {container}"] = Command(
                    "put", item, container
                )
        for item in carried:
            found[f"drop {self.objects[item]}"] = Command("drop", item, floor)
        for item in carried:
            if self.objects[item] in self.edible:
                found[f"eat {self.objects[item]}"] = Command("eat", item, "")
        return found

    def accepted(self, state: State) -> dict[str, Command]:
        """:meth:`commands` plus the accepted variants: ``take X`` for ``take X from Y`` and
        ``insert X into B`` for ``put X in B``."""
        found = self.commands(state)
        variants = {}
        for text, command in found.items():
            name = self.objects[command.item] if command.item >= 0 else ""
            if command.verb == "take" and " from " in text:
                variants[f"take {name}"] = command
            elif command.verb == "put" and command.target in self.boxes:
                variants[f"insert {name} into {command.target}"] = command
        return {**found, **variants}

    def apply(self, state: State, command: Command) -> State:
        """The state after the admissible ``command``."""
        if command.verb == "go":
            return state._replace(room=self.exits[state.room][command.target])
        if command.verb in ("open", "close"):
            opened = list(state.opened)
            opened[self.boxes.index(command.target)] = command.verb == "open"
            return state._replace(opened=tuple(opened))
        place = {"take": CARRIED, "put": command.target, "drop": command.target, "eat": None}
        places = list(state.places)
        places[command.item] = place[command.verb]
        return state._replace(places=tuple(places))

    def solved(self, state: State) -> bool:
        """Whether the stale food is in the fridge and the fridge is closed."""
        return (
            state.places[self.objects.index(self.target)] == self.goal_container
            and not state.opened[self.boxes.index(self.goal_container)]
        )

    # -- the text -------------------------------------------------------------------------------

    def report(self, command: Command) -> str:
        """What the game says an admissible command did."""
        name = self.objects[command.item] if command.item >= 0 else ""
        if command.verb == "go":
            return f"You go {command.target}."
        if command.verb in ("open", "close"):
            return f"You {command.verb} the {command.target}."
        if command.verb == "take":
            source = "" if command.target.startswith(FLOOR) else f" from the {command.target}"
            return f"You take the {name}{source}."
        if command.verb == "put":
            preposition = "in" if command.target in self.boxes else "on"
            return f"You put the {name} {preposition} the {command.target}."
        return f"You {command.verb} the {name}."

    def view(self, state: State, full: bool) -> str:
        """The room as the player sees it; ``full`` adds the room's name and the inventory."""
        parts = [f"You are in the {state.room}."] if full else []
        parts.append(self.descriptions[state.room])
        for container, room in self.container_room.items():
            if room != state.room:
                continue
            inside = self._listing(state, container)
            if container not in self.boxes:
                parts.append(f"On the {container}: {inside}.")
            elif state.opened[self.boxes.index(container)]:
                parts.append(f"The {container} is open; in it: {inside}.")
            else:
                parts.append(f"The {container} is closed.")
        if FLOOR + state.room in state.places:
            parts.append(f"On the floor: {self._listing(state, FLOOR + state.room)}.")
        parts.append(f"Exits: {', '.join(self.exits[state.room])}.")
        if full:
            parts.append(f"You carry: {self._listing(state, CARRIED)}.")
        parts.append(f"Admissible commands: {', '.join(self.commands(state))}.")
        return " ".join(parts)

    def _listing(self, state: State, place: str) -> str:
        names = [name for name, at in zip(self.objects, state.places, strict=True) if at == place]
        return ", ".join(names) or "nothing"


@cache
def load_house(path: str | Path = HOUSE_PATH) -> House:
    """Read the house data file (cached per path)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    rooms = data["rooms"]
    order = data["directions"]
    containers = data["containers"]
    objects = data["objects"]
    return House(
        objective=data["objective"],
        target=data["target"],
        goal_container=data["goal_container"],
        max_steps=int(data["max_steps"]),
        descriptions={room: spec["description"] for room, spec in rooms.items()},
        exits={
            room: {way: spec["exits"][way] for way in order if way in spec["exits"]}
            for room, spec in rooms.items()
        },
        container_room={name: spec["room"] for name, spec in containers.items()},
        boxes=tuple(name for name, spec in containers.items() if spec["kind"] == "box"),
        objects=tuple(objects),
        start_places=tuple(spec["at"] for spec in objects.values()),
        edible=frozenset(name for name, spec in objects.items() if spec["edible"]),
    )


@lru_cache(maxsize=1 << 14)
def _view(state: State, full: bool) -> str:
    return load_house().view(state, full)


@lru_cache(maxsize=1 << 14)
def _accepted(state: State) -> dict[str, Command]:
    return load_house().accepted(state)


@lru_cache(maxsize=1 << 14)
def _legal(state: State) -> tuple[str, ...]:
    return tuple(load_house().commands(state))


class TextNavEnv(TextTaskEnv):
    """Put the stale food in the fridge and close it, in a text house of eight rooms.

    ## Description
    LMRL-Gym's Text-Nav (Abdulhai et al., ICML 2025). The house of ``house.yaml`` has eight
    rooms joined by north/east/south/west exits. The stale food lies on the living room's coffee
    table among distractors (coffee cup, plate, utensils, fresh food, bowl, fruit) spread over
    tables, a closed chest and the closed fridge in the kitchen. The shortest solution takes 5
    to 8 commands depending on the start room. In the fully observed form
    (``LMRL/TextNavFO-v0``) each view names the room and lists what the player carries; in the
    partially observed form (``LMRL/TextNavPO-v0``) it does neither, and the player must
    recognise rooms by their descriptions and remember what it holds.

    ## Action Space
    ``Text(max_length=256)``, printable: one command, matched after lower-casing and collapsing
    whitespace. The grammar: ``go <direction>``, ``take <object> [from <container>]``,
    ``put <object> on <table>``, ``put <object> in <box>`` (or ``insert <object> into <box>``),
    ``open <box>``, ``close <box>``, ``eat <object>``, ``drop <object>``. A command that is not
    admissible in the current state (including any other string) is illegal: nothing changes,
    the reward is 0 and ``info["invalid_action"]`` is set. ``info["legal_actions"]`` lists the
    admissible commands. A non-``str`` action raises ``ValueError``.

    ## Observation Space
    ``Text(max_length=16384)``: the transcript since reset (``obs_mode="transcript"``) or the
    latest message (``obs_mode="last"``). The opening message is the objective and the view;
    an admissible command is answered with what it did and the new view (the transcript
    records the command lower-cased and single-spaced); an inadmissible one with ``That
    command is not admissible here.`` A view reads, FO: ``You are in the living
    room. A sofa faces a television on the far wall. On the coffee table: stale food, coffee
    cup. Exits: north, east. You carry: nothing. Admissible commands: go north, go east, take
    stale food from coffee table, take coffee cup from coffee table.`` and PO the same without
    the first sentence and ``You carry: ...``.

    ## Rewards
    +1 for the command that leaves the stale food in the closed fridge, 0 otherwise: returns
    are 0 or 1.

    ## Starting State
    The player in a room drawn uniformly from the eight (``options={"start": room}`` pins it),
    everything else as in ``house.yaml``, boxes closed.

    ## Episode End
    Terminated with success when the stale food is in the closed fridge; terminated without
    reward when the player eats the stale food; truncated after 15 commands.

    ## Arguments
    ``observability`` (``"full"`` or ``"partial"``), ``obs_mode`` (``"transcript"`` or
    ``"last"``), ``render_mode`` (``None`` or ``"ansi"``).
    """

    observation_max_length = 16384
    min_return = 0.0

    def __init__(
        self,
        observability: str = "full",
        obs_mode: str = "transcript",
        render_mode: str | None = None,
    ) -> None:
        self.observability = require_choice("observability", observability, OBSERVABILITIES)
        super().__init__(obs_mode=obs_mode, render_mode=render_mode)
        self.score_id = "LMRL/TextNavFO-v0" if observability == "full" else "LMRL/TextNavPO-v0"
        self.house = load_house()
        self._full = observability == "full"
        self._target = self.house.objects.index(self.house.target)
        self._state = self.house.start_state(self.house.rooms[0])
        self._steps = 0
        self._visited: set[str] = set()
        self._recorded: str | None = None

    @property
    def house_state(self) -> State:
        """The simulator's state, for data generators (a player may not read it)."""
        return self._state

    def _begin(self, options: dict[str, Any]) -> str:
        rooms = self.house.rooms
        if "start" in options:
            room = options["start"]
            if room not in rooms:
                raise ValueError(
                    f"options['start'] must be a room ({', '.join(rooms)}), got {room!r}"
                )
        else:
            room = rooms[int(self.np_random.integers(len(rooms)))]
        self._state = self.house.start_state(room)
        self._steps = 0
        self._visited = {room}
        return f"{self.house.objective} {_view(self._state, self._full)}"

    def _play(self, action: str) -> Turn:
        self._steps += 1
        capped = self._steps >= self.house.max_steps
        typed = " ".join(action.lower().split())
        command = _accepted(self._state).get(typed)
        self._recorded = None if command is None else typed
        if command is None:
            return Turn(message=INADMISSIBLE, reward=0.0, truncated=capped, invalid=True)
        self._state = self.house.apply(self._state, command)
        self._visited.add(self._state.room)
        report = self.house.report(command)
        if command.verb == "eat" and command.item == self._target:
            return Turn(message=f"{report} {FOOD_POISONING}", reward=0.0, terminated=True)
        if self.house.solved(self._state):
            return Turn(message=f"{report} {TASK_DONE}", reward=1.0, terminated=True, success=True)
        return Turn(
            message=f"{report} {_view(self._state, self._full)}", reward=0.0, truncated=capped
        )

    def _render_action(self, line: str) -> str:
        return line if self._recorded is None else self._recorded

    def _legal_actions(self) -> list[str]:
        return list(_legal(self._state))

    def _metrics(self) -> dict[str, float]:
        return {
            "rooms_visited": float(len(self._visited)),
            "ate_stale_food": float(self._state.places[self._target] is None),
        }


# -- the planner and the behaviour policy ----------------------------------------------------


@cache
def walkthrough() -> dict[State, tuple[str, State]]:
    """The first command of a shortest solution, and the task state it leads to, from every
    task state that has one.

    A task state is a :class:`State` of the house holding only the stale food (the other
    objects never block it). Breadth-first search runs backwards from the solved states over
    every command but eating; ties go to the command listed first.
    """
    house = load_house().only((load_house().target,))
    places = [CARRIED, *house.container_room, *(FLOOR + room for room in house.rooms)]
    states = [
        State(room, (place,), opened)
        for room, place, opened in product(
            house.rooms, places, product((False, True), repeat=len(house.boxes))
        )
    ]
    moves = {
        state: [
            (text, house.apply(state, command))
            for text, command in house.commands(state).items()
            if command.verb != "eat"
        ]
        for state in states
    }
    before: dict[State, list[State]] = {state: [] for state in states}
    for state, options in moves.items():
        for _, after in options:
            before[after].append(state)
    distance = {state: 0 for state in states if house.solved(state)}
    frontier = deque(distance)
    while frontier:
        state = frontier.popleft()
        for previous in before[state]:
            if previous not in distance:
                distance[previous] = distance[state] + 1
                frontier.append(previous)
    return {
        state: next(move for move in moves[state] if distance.get(move[1]) == steps - 1)
        for state, steps in distance.items()
        if steps > 0
    }


def task_state(house: House, state: State) -> State:
    """The planner's projection of a full ``state``: room, stale food, boxes."""
    return State(state.room, (state.places[house.objects.index(house.target)],), state.opened)


class TextNavBehaviour(ScriptedBehaviour):
    """LMRL's Text-Nav dataset policy: two half-house experts, random elsewhere.

    The house is split by distance to the kitchen: the ``near`` half (rooms at most
    ``near_distance`` moves from it: kitchen, living room, dining room, backyard) and the
    ``far`` half (office, garden, bedroom, bathroom). Each episode draws one of two policies,
    ``near`` with probability ``near_probability``, else ``far``. In its own half a policy plays
    the walkthrough command (planned from the simulator's state, read through
    ``env.unwrapped``), except that with probability ``expert_noise`` it plays a uniformly random
    admissible command instead; in the other half it plays a random admissible command, except
    that with probability ``walkthrough_probability`` it plays the walkthrough command. The
    ``far`` policy walks to the living room and then rarely gets further (success about 0.01);
    the ``near`` one succeeds about half the time. ``expert_noise`` is tuned so the dataset's
    success rate lands near LMRL's 0.26.
    """

    policy = "text_nav_half_house_experts"
    default_episodes = 2500
    lmrl_success = 0.26
    near_distance: ClassVar[int] = 1

    def __init__(
        self,
        env: Any,
        near_probability: float = 0.5,
        expert_noise: float = 0.41,
        walkthrough_probability: float = 0.1,
    ) -> None:
        super().__init__(env)
        self.near_probability = _require_probability("near_probability", near_probability)
        self.expert_noise = _require_probability("expert_noise", expert_noise)
        self.walkthrough_probability = _require_probability(
            "walkthrough_probability", walkthrough_probability
        )
        self.house = load_house()
        to_kitchen = self.house.distances(self.house.container_room[self.house.goal_container])
        self.half_of = {
            room: "near" if steps <= self.near_distance else "far"
            for room, steps in to_kitchen.items()
        }
        self._plan = walkthrough()
        self.half = "near"

    def parameters(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "near_probability": self.near_probability,
            "expert_noise": self.expert_noise,
            "walkthrough_probability": self.walkthrough_probability,
            "half": self.half,
        }

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self.half = "near" if self.rng.random() < self.near_probability else "far"
        state = self.env.unwrapped.house_state
        if self.half_of[state.room] == self.half:
            expert = self.rng.random() >= self.expert_noise
        else:
            expert = self.rng.random() < self.walkthrough_probability
        if expert:
            return self._plan[task_state(self.house, state)][0]
        legal = info["legal_actions"]
        return legal[int(self.rng.integers(len(legal)))]


def _require_probability(name: str, value: Any) -> float:
    probability = require_finite_number(name, value)
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return probability
