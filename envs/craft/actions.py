"""Craft's action interface: the raw key-and-mouse ``Dict`` space and Craftium's two wrappers.

Follows Craftium (Malagón, Ceberio, Lozano, ICML 2025), ``craftium/craftium_env.py`` and
``craftium/wrappers.py``: the same 22 keys in the same order, the same pseudo-actions
``"mouse x+"``, ``"mouse x-"``, ``"mouse y+"``, ``"mouse y-"`` and the same dicts produced for
every index, so code written against Craftium's wrappers runs unchanged.

Raw action space (Craftium's 22 keys, in Craftium's order)::

    Dict(forward, backward, left, right, jump, aux1, sneak, zoom, dig, place, drop, inventory,
         slot_1 ... slot_9: Discrete(2), mouse: Box(-1, 1, (2,), float32))

A partial dict is a valid raw action: missing keys are not pressed and a missing ``mouse`` does
not move the camera (Craftium's engine reads it the same way). ``check_raw_action`` turns such a
dict into the complete one.

- ``DiscreteActionWrapper(env, actions, mouse_mov=0.5)``: ``Discrete(len(actions) + 1)``;
  index 0 is the no-op ``{}``, index i ≥ 1 presses ``actions[i - 1]`` for this step.
- ``BinaryActionWrapper(env, actions, mouse_mov=0.5)``: ``MultiBinary(len(actions))``; every
  action whose bit is 1 is pressed, together; mouse pseudo-actions are summed.
- ``CheckedAction(action)``: a complete raw action, checked once and read-only; an env takes it
  without checking it again (the Discrete wrapper steps with one built per index).

Departures from Craftium, all about bad input: Craftium asserts on unknown action names and clips
``mouse_mov`` into [0, 1] with a printed warning; here both raise ``ValueError`` naming the
argument. An action outside a wrapper's space raises ``ValueError`` naming the space and the value,
as every omnigym environment does, where Craftium asserts or passes it through. Craftium builds its
``Dict`` from a mapping, which Gymnasium sorts alphabetically; here the space keeps Craftium's key
order, ``ACTION_ORDER``, and the wrappers accept either ordering of the same keys.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

KEY_ACTIONS = (
    "forward",
    "backward",
    "left",
    "right",
    "jump",
    "aux1",
    "sneak",
    "zoom",
    "dig",
    "place",
    "drop",
    "inventory",
    "slot_1",
    "slot_2",
    "slot_3",
    "slot_4",
    "slot_5",
    "slot_6",
    "slot_7",
    "slot_8",
    "slot_9",
)
"""The 21 keys of the raw action, in the order Craftium sends them to its engine."""

ACTION_ORDER = (*KEY_ACTIONS, "mouse")
"""All 22 entries of the raw ``Dict`` action, in Craftium's order."""

MOUSE_ACTIONS = {
    "mouse x+": (1.0, 0.0),
    "mouse x-": (-1.0, 0.0),
    "mouse y+": (0.0, 1.0),
    "mouse y-": (0.0, -1.0),
}
"""Pseudo-actions of the wrappers: direction of the mouse move, scaled by ``mouse_mov``."""

WRAPPER_ACTIONS = (*KEY_ACTIONS, *MOUSE_ACTIONS)
"""Every name a wrapper's ``actions`` list may hold."""


def raw_action_space() -> spaces.Dict:
    """Return Craftium's raw action space: 21 ``Discrete(2)`` keys and a ``Box`` mouse.

    Built from a list of pairs because Gymnasium's ``Dict`` sorts the keys of a mapping
    alphabetically; the list keeps Craftium's order, ``ACTION_ORDER``.
    """
    keys = [(name, spaces.Discrete(2)) for name in KEY_ACTIONS]
    return spaces.Dict([*keys, ("mouse", spaces.Box(-1.0, 1.0, (2,), np.float32))])


def describe(value: Any) -> str:
    """Short text of an action for error messages (plain numbers, not ``np.int64(8)``)."""
    if isinstance(value, np.ndarray):
        return repr(value.tolist())
    if isinstance(value, np.generic):
        return repr(value.item())
    return repr(value)


def _is_index(value: Any) -> bool:
    """True for integers (Python or NumPy, 0-d arrays included), False for bools and floats."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool | np.bool_):
        return False
    return isinstance(value, numbers.Integral)


def _env_name(env: gym.Env) -> str:
    """The registered id of ``env`` when it has one, else its class name."""
    spec = env.unwrapped.spec
    return spec.id if spec is not None else type(env.unwrapped).__name__


def check_raw_action(action: Any, env_name: str = "the raw action space") -> dict[str, Any]:
    """Validate a raw (possibly partial) action dict and return the complete one.

    The result has all 22 keys of ``ACTION_ORDER``: ``int`` 0/1 for the keys and a fresh
    ``float32`` array of shape (2,) for ``mouse``.

    Raises:
        ValueError: ``action`` is not a dict, has a key outside ``ACTION_ORDER`` (the message
            lists the valid keys), a key value other than 0/1, or a mouse move outside
            ``Box(-1.0, 1.0, (2,), float32)``. Every message names the space and ``env_name``.
    """
    if not isinstance(action, Mapping):
        raise ValueError(
            f"action {describe(action)} is outside the Dict action space of {env_name}"
        )
    complete: dict[str, Any] = dict(_RELEASED)
    mouse = None
    for name, pressed in action.items():
        if name == "mouse":
            mouse = pressed
        elif name not in _RELEASED:
            unknown = [key for key in action if key not in ACTION_ORDER]
            raise ValueError(
                f"action keys {unknown} are not in the Dict action space of {env_name}; "
                f"valid keys: {list(ACTION_ORDER)}"
            )
        elif (type(pressed) is int and 0 <= pressed <= 1) or _is_key_press(pressed):
            complete[name] = int(pressed)
        else:
            raise ValueError(
                f"action[{name!r}] = {describe(pressed)} is outside Discrete(2) of {env_name}"
            )
    if mouse is None:
        complete["mouse"] = np.zeros(2, dtype=np.float32)
        return complete
    try:
        move = np.array(mouse, dtype=np.float32)
    except (TypeError, ValueError):
        move = None
    if move is None or move.shape != (2,) or not (abs(move[0]) <= 1.0 and abs(move[1]) <= 1.0):
        raise ValueError(
            f"action['mouse'] = {describe(mouse)} is outside Box(-1.0, 1.0, (2,), float32) "
            f"of {env_name}"
        )
    complete["mouse"] = move
    return complete


_RELEASED = dict.fromkeys(KEY_ACTIONS, 0)


class CheckedAction(dict):
    """A complete raw action that ``check_raw_action`` has validated, read-only (its ``mouse``
    array too), so that an env takes it without checking it again: ``CheckedAction(action)``
    checks ``action`` as ``check_raw_action`` does. The Discrete wrapper builds one per index
    and reuses it on every step."""

    __slots__ = ()

    def __init__(self, action: Any, env_name: str = "the raw action space"):
        complete = check_raw_action(action, env_name)
        complete["mouse"].flags.writeable = False
        super().__init__(complete)

    def _read_only(self, *args: Any, **kwargs: Any):
        raise TypeError("a CheckedAction is read-only; dict(action) is a writable copy")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only


def _is_key_press(value: Any) -> bool:
    """True for 0 or 1 as any integer or bool type (NumPy included)."""
    return (_is_index(value) or isinstance(value, bool | np.bool_)) and value in (0, 1)


def _check_wrapper_args(env: gym.Env, actions: Sequence[str], mouse_mov: float) -> None:
    """Raise ``ValueError`` naming the argument when a wrapper is built with bad arguments."""
    space = env.action_space
    if not isinstance(space, spaces.Dict) or set(space.spaces) != set(ACTION_ORDER):
        raise ValueError(
            f"env must have Craftium's raw Dict action space with keys {list(ACTION_ORDER)}, "
            f"got {space}"
        )
    if isinstance(actions, str) or not isinstance(actions, Sequence) or len(actions) == 0:
        raise ValueError(f"actions must be a non-empty list of action names, got {actions!r}")
    invalid = [name for name in actions if name not in WRAPPER_ACTIONS]
    if invalid:
        raise ValueError(
            f"actions {invalid} are not valid action names; valid names: {list(WRAPPER_ACTIONS)}"
        )
    if len(set(actions)) != len(actions):
        raise ValueError(f"actions must not repeat a name, got {list(actions)}")
    if (
        isinstance(mouse_mov, bool)
        or not isinstance(mouse_mov, numbers.Real)
        or not 0.0 <= mouse_mov <= 1.0
    ):
        raise ValueError(f"mouse_mov must be a number in [0, 1], got {mouse_mov!r}")


def _mouse_move(names: Sequence[str], mouse_mov: float) -> np.ndarray:
    """Sum of the mouse pseudo-actions among ``names``, as Craftium's float pair."""
    move = np.zeros(2, dtype=np.float32)
    for name in names:
        if name in MOUSE_ACTIONS:
            move += np.asarray(MOUSE_ACTIONS[name], dtype=np.float32) * np.float32(mouse_mov)
    return move


class _ActionListWrapper(gym.ActionWrapper, gym.utils.RecordConstructorArgs):
    """What both Craftium wrappers share: the checked ``actions`` list and ``mouse_mov``; a
    subclass gives its action space for ``len(actions)`` names and maps actions to raw dicts."""

    def __init__(self, env: gym.Env, actions: Sequence[str], mouse_mov: float = 0.5):
        _check_wrapper_args(env, actions, mouse_mov)
        gym.utils.RecordConstructorArgs.__init__(self, actions=list(actions), mouse_mov=mouse_mov)
        gym.ActionWrapper.__init__(self, env)
        self.actions = list(actions)
        self.mouse_mov = float(mouse_mov)
        self.action_space = self._space(len(self.actions))

    def _space(self, count: int) -> spaces.Space:
        raise NotImplementedError


class DiscreteActionWrapper(_ActionListWrapper):
    """Craftium's ``Discrete`` view of the raw key-and-mouse action.

    ## Action Space

    ``Discrete(len(actions) + 1)``. Index 0 is the no-op and maps to ``{}``. Index i ≥ 1 maps to
    ``{actions[i - 1]: 1, "mouse": [0, 0]}`` for a key, or to ``{"mouse": [±mouse_mov, 0]}`` /
    ``{"mouse": [0, ±mouse_mov]}`` for a mouse pseudo-action (Craftium's dicts exactly; the mouse
    pair is a ``float32`` array). A list or 1-D array of indices (one per agent) maps to a list of
    dicts.

    ## Arguments

    - ``env``: any ``gymnasium.Env`` whose action space is ``raw_action_space()``.
    - ``actions``: names from ``WRAPPER_ACTIONS``, no repeats; index i is ``actions[i - 1]``.
    - ``mouse_mov``: mouse move of one pseudo-action, in [0, 1] (fraction of half the frame).

    Raises ``ValueError`` naming the argument on bad arguments, and naming the space and the
    value when ``step`` gets an index outside ``Discrete(len(actions) + 1)``.
    """

    def __init__(self, env: gym.Env, actions: Sequence[str], mouse_mov: float = 0.5):
        super().__init__(env, actions, mouse_mov)
        self._checked = [CheckedAction(self._one(k)) for k in range(self.action_space.n)]

    def _space(self, count: int) -> spaces.Space:
        return spaces.Discrete(count + 1)

    def step(self, action: Any):
        """Gymnasium's ``ActionWrapper.step``, but a plain integer index in the space goes to the
        env as the ``CheckedAction`` of ``action(index)``, built once: the same raw action,
        without building and checking it again on every step."""
        if (
            type(action) in _PLAIN_INDICES
            and 0 <= action < len(self._checked)
            and type(self).action is DiscreteActionWrapper.action
        ):
            return self.env.step(self._checked[action])
        return super().step(action)

    def _one(self, index: Any) -> dict[str, Any]:
        if not _is_index(index) or not 0 <= int(index) < self.action_space.n:
            raise ValueError(
                f"action {describe(index)} is outside {self.action_space} of {_env_name(self)}"
            )
        if int(index) == 0:
            return {}
        name = self.actions[int(index) - 1]
        if name in MOUSE_ACTIONS:
            return {"mouse": _mouse_move([name], self.mouse_mov)}
        return {name: 1, "mouse": np.zeros(2, dtype=np.float32)}

    def action(self, action: Any) -> dict[str, Any] | list[dict[str, Any]]:
        """Map one index to a raw action dict, or a list / 1-D array of indices to a list."""
        if isinstance(action, list) or (isinstance(action, np.ndarray) and action.ndim == 1):
            return [self._one(index) for index in action]
        return self._one(action)


_PLAIN_INDICES = (int, np.int64, np.int32)


class BinaryActionWrapper(_ActionListWrapper):
    """Craftium's ``MultiBinary`` view of the raw key-and-mouse action.

    ## Action Space

    ``MultiBinary(len(actions))``. Bit i set presses ``actions[i]``; several keys are pressed
    together. The result is ``{name: 1 for every pressed key, "mouse": m}`` where ``m`` is the
    sum of the pressed mouse pseudo-actions (``[0, 0]`` when none), as in Craftium.

    ## Arguments

    - ``env``: any ``gymnasium.Env`` whose action space is ``raw_action_space()``.
    - ``actions``: names from ``WRAPPER_ACTIONS``, no repeats; bit i is ``actions[i]``.
    - ``mouse_mov``: mouse move of one pseudo-action, in [0, 1] (fraction of half the frame).

    Raises ``ValueError`` naming the argument on bad arguments, and naming the space and the
    value when ``step`` gets anything but ``len(actions)`` zeros and ones.
    """

    def _space(self, count: int) -> spaces.Space:
        return spaces.MultiBinary(count)

    def action(self, action: Any) -> dict[str, Any]:
        """Map a vector of ``len(actions)`` bits to a raw action dict."""
        bits = np.asarray(action) if isinstance(action, Sequence | np.ndarray) else None
        valid = (
            bits is not None
            and bits.shape == (len(self.actions),)
            and (bits.dtype.kind in "iub")
            and bool(np.all((bits == 0) | (bits == 1)))
        )
        if not valid:
            raise ValueError(
                f"action {describe(action)} is outside {self.action_space} of {_env_name(self)}"
            )
        pressed = [name for name, bit in zip(self.actions, bits, strict=True) if bit]
        result: dict[str, Any] = {name: 1 for name in pressed if name not in MOUSE_ACTIONS}
        result["mouse"] = _mouse_move(pressed, self.mouse_mov)
        return result
