"""Craft action interface: raw Dict space, Discrete and Binary wrappers."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from omnigym.envs.craft.actions import (
    ACTION_ORDER,
    BinaryActionWrapper,
    CheckedAction,
    DiscreteActionWrapper,
    check_raw_action,
    raw_action_space,
)

SEVEN_ACTIONS = ["forward", "jump", "dig", "mouse x+", "mouse x-", "mouse y+", "mouse y-"]
"""A wrapper input: three keys and the four mouse moves (any key names would do)."""


class RawActionEcho(gym.Env):
    """Stand-in env with Craftium's raw action space; remembers the complete last action."""

    action_space = raw_action_space()
    observation_space = spaces.Discrete(1)

    def __init__(self):
        self.last_action = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        self.last_action = check_raw_action(action, "RawActionEcho")
        return 0, 0.0, False, False, {}


def as_lists(action):
    """A raw action dict with the mouse array turned into a list, for equality checks."""
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in action.items()}


def test_raw_space_has_craftium_keys_in_order():
    space = raw_action_space()
    assert tuple(space.spaces) == ACTION_ORDER
    assert list(ACTION_ORDER[:12]) == [
        "forward", "backward", "left", "right", "jump", "aux1",
        "sneak", "zoom", "dig", "place", "drop", "inventory",
    ]  # fmt: skip
    assert list(ACTION_ORDER[12:21]) == [f"slot_{i}" for i in range(1, 10)]
    assert len(ACTION_ORDER) == 22
    assert all(space[k] == spaces.Discrete(2) for k in ACTION_ORDER[:21])
    assert space["mouse"] == spaces.Box(-1.0, 1.0, (2,), np.float32)


def test_partial_raw_action_fills_missing_keys_with_zero():
    complete = check_raw_action({"dig": 1})
    assert list(complete) == list(ACTION_ORDER)
    assert complete["dig"] == 1
    assert sum(complete[k] for k in ACTION_ORDER[:21]) == 1
    assert complete["mouse"].dtype == np.float32
    assert complete["mouse"].tolist() == [0.0, 0.0]


def test_complete_raw_action_lies_in_the_dict_space():
    assert raw_action_space().contains(check_raw_action({"jump": 1, "mouse": [0.5, -1.0]}))


def test_raw_action_with_unknown_key_lists_the_valid_keys():
    with pytest.raises(ValueError, match="'fly'.*valid keys.*'slot_9', 'mouse'"):
        check_raw_action({"fly": 1})


@pytest.mark.parametrize(
    "action, pattern",
    [
        ({"forward": 2}, r"action\['forward'\] = 2 is outside Discrete\(2\)"),
        ({"jump": 0.5}, r"action\['jump'\] = 0.5 is outside Discrete\(2\)"),
        ({"mouse": [1.5, 0.0]}, r"action\['mouse'\] = \[1.5, 0.0\] is outside Box"),
        ({"mouse": [0.1]}, r"outside Box\(-1.0, 1.0, \(2,\), float32\)"),
        (3, r"action 3 is outside the Dict action space"),
    ],
)
def test_raw_action_outside_the_space_names_the_space(action, pattern):
    with pytest.raises(ValueError, match=pattern):
        check_raw_action(action, "Craft/Test-v0")


def test_discrete_wrapper_space_counts_the_noop():
    env = DiscreteActionWrapper(RawActionEcho(), SEVEN_ACTIONS, mouse_mov=0.5)
    assert env.action_space == spaces.Discrete(8)
    assert env.unwrapped.action_space == raw_action_space()


def test_discrete_wrapper_maps_every_index_to_craftiums_dict():
    env = DiscreteActionWrapper(RawActionEcho(), SEVEN_ACTIONS, mouse_mov=0.5)
    expected = [
        {},
        {"forward": 1, "mouse": [0.0, 0.0]},
        {"jump": 1, "mouse": [0.0, 0.0]},
        {"dig": 1, "mouse": [0.0, 0.0]},
        {"mouse": [0.5, 0.0]},
        {"mouse": [-0.5, 0.0]},
        {"mouse": [0.0, 0.5]},
        {"mouse": [0.0, -0.5]},
    ]
    assert [as_lists(env.action(i)) for i in range(8)] == expected


def test_discrete_wrapper_step_presses_one_key_for_the_step():
    env = DiscreteActionWrapper(RawActionEcho(), SEVEN_ACTIONS)
    env.reset(seed=0)
    env.step(3)
    pressed = [k for k in ACTION_ORDER[:21] if env.unwrapped.last_action[k]]
    assert pressed == ["dig"]
    env.step(0)
    assert not any(env.unwrapped.last_action[k] for k in ACTION_ORDER[:21])
    assert env.unwrapped.last_action["mouse"].tolist() == [0.0, 0.0]


def test_discrete_wrapper_mouse_move_uses_mouse_mov():
    env = DiscreteActionWrapper(RawActionEcho(), ["forward", "mouse x+"], mouse_mov=0.1)
    env.step(2)
    np.testing.assert_array_equal(env.unwrapped.last_action["mouse"], np.float32([0.1, 0.0]))


def test_discrete_wrapper_steps_send_the_raw_action_of_every_index_type():
    env = DiscreteActionWrapper(RawActionEcho(), SEVEN_ACTIONS)
    for index in range(8):
        expected = as_lists(check_raw_action(env.action(index)))
        for kind in (int, np.int64, np.int32, np.array):
            env.step(kind(index))
            assert as_lists(env.unwrapped.last_action) == expected, (index, kind)


def test_checked_action_is_the_complete_action_and_read_only():
    action = CheckedAction({"jump": 1, "mouse": [0.5, 0.0]})
    assert as_lists(action) == as_lists(check_raw_action({"jump": 1, "mouse": [0.5, 0.0]}))
    with pytest.raises(TypeError, match="read-only"):
        action["dig"] = 1
    with pytest.raises(TypeError, match="read-only"):
        action.update(dig=1)
    with pytest.raises(ValueError, match="read-only"):
        action["mouse"][0] = 1.0
    with pytest.raises(ValueError, match="outside Discrete"):
        CheckedAction({"jump": 2})


def test_discrete_wrapper_accepts_numpy_integer_indices():
    env = DiscreteActionWrapper(RawActionEcho(), SEVEN_ACTIONS)
    assert as_lists(env.action(np.int64(1))) == {"forward": 1, "mouse": [0.0, 0.0]}
    assert as_lists(env.action(np.array(4))) == {"mouse": [0.5, 0.0]}


def test_discrete_wrapper_maps_an_index_array_to_one_dict_per_agent():
    env = DiscreteActionWrapper(RawActionEcho(), SEVEN_ACTIONS)
    dicts = env.action(np.array([0, 1, 5]))
    assert [as_lists(d) for d in dicts] == [
        {},
        {"forward": 1, "mouse": [0.0, 0.0]},
        {"mouse": [-0.5, 0.0]},
    ]


@pytest.mark.parametrize("bad", [8, -1, 1.0, True, "1", np.int64(9)])
def test_discrete_wrapper_rejects_indices_outside_the_space(bad):
    env = DiscreteActionWrapper(RawActionEcho(), SEVEN_ACTIONS)
    with pytest.raises(ValueError, match=r"is outside Discrete\(8\) of RawActionEcho"):
        env.step(bad)


def test_discrete_wrapper_error_names_the_index_and_the_registered_id():
    inner = RawActionEcho()
    inner.spec = gym.envs.registration.EnvSpec("Craft/ChopTree-v0", entry_point=None)
    env = DiscreteActionWrapper(inner, SEVEN_ACTIONS)
    with pytest.raises(
        ValueError, match=r"^action 8 is outside Discrete\(8\) of Craft/ChopTree-v0$"
    ):
        env.step(np.int64(8))


def test_binary_wrapper_presses_keys_together_and_sums_the_mouse():
    actions = ["forward", "jump", "mouse x+", "mouse x-", "mouse y+"]
    env = BinaryActionWrapper(RawActionEcho(), actions, mouse_mov=0.5)
    assert env.action_space == spaces.MultiBinary(5)
    assert as_lists(env.action([1, 1, 1, 0, 1])) == {
        "forward": 1,
        "jump": 1,
        "mouse": [0.5, 0.5],
    }
    assert as_lists(env.action(np.array([0, 0, 1, 1, 0]))) == {"mouse": [0.0, 0.0]}
    assert as_lists(env.action(np.zeros(5, dtype=np.int8))) == {"mouse": [0.0, 0.0]}


def test_binary_wrapper_step_reaches_the_raw_env():
    env = BinaryActionWrapper(RawActionEcho(), ["left", "dig", "mouse y-"], mouse_mov=0.25)
    env.step(np.array([1, 1, 1], dtype=np.int8))
    last = env.unwrapped.last_action
    assert [k for k in ACTION_ORDER[:21] if last[k]] == ["left", "dig"]
    assert last["mouse"].tolist() == [0.0, -0.25]


@pytest.mark.parametrize("bad", [[1, 0], [1, 0, 2], [0.5, 0, 0], 1, "101"])
def test_binary_wrapper_rejects_actions_outside_the_space(bad):
    env = BinaryActionWrapper(RawActionEcho(), ["left", "dig", "mouse y-"])
    with pytest.raises(ValueError, match=r"is outside MultiBinary\(3\) of RawActionEcho"):
        env.step(bad)


@pytest.mark.parametrize("wrapper", [DiscreteActionWrapper, BinaryActionWrapper])
def test_wrapper_rejects_unknown_action_names_listing_the_valid_ones(wrapper):
    with pytest.raises(ValueError, match=r"\['fly'\] are not valid.*'mouse x\+'"):
        wrapper(RawActionEcho(), ["forward", "fly"])


@pytest.mark.parametrize("wrapper", [DiscreteActionWrapper, BinaryActionWrapper])
@pytest.mark.parametrize("mouse_mov", [-0.1, 1.5, "0.5"])
def test_wrapper_rejects_mouse_mov_outside_unit_interval(wrapper, mouse_mov):
    with pytest.raises(ValueError, match="mouse_mov must be a number in"):
        wrapper(RawActionEcho(), ["forward"], mouse_mov=mouse_mov)


def test_wrapper_rejects_repeated_or_empty_action_lists():
    with pytest.raises(ValueError, match="must not repeat"):
        DiscreteActionWrapper(RawActionEcho(), ["forward", "forward"])
    with pytest.raises(ValueError, match="non-empty list"):
        DiscreteActionWrapper(RawActionEcho(), [])


def test_wrapper_requires_the_raw_dict_space():
    class BoxEnv(RawActionEcho):
        action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)

    with pytest.raises(ValueError, match="raw Dict action space"):
        DiscreteActionWrapper(BoxEnv(), ["forward"])


def test_wrapper_accepts_the_raw_space_with_alphabetically_sorted_keys():
    class SortedKeysEnv(RawActionEcho):
        action_space = spaces.Dict(dict(raw_action_space().spaces))

    env = DiscreteActionWrapper(SortedKeysEnv(), ["jump"])
    env.step(1)
    assert env.unwrapped.last_action["jump"] == 1


def test_wrapper_records_its_arguments_for_the_env_spec():
    inner = RawActionEcho()
    inner.spec = gym.envs.registration.EnvSpec("Craft/Test-v0", entry_point=None)
    env = DiscreteActionWrapper(inner, ["forward", "mouse x+"], mouse_mov=0.1)
    (wrapper_spec,) = env.spec.additional_wrappers
    assert wrapper_spec.kwargs == {"actions": ["forward", "mouse x+"], "mouse_mov": 0.1}
