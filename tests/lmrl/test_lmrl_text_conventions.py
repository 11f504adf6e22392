"""Conventions shared by the LMRL text tasks: spaces, actions, info, seeding."""

import warnings

import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.envs.lmrl.maze import MazeEnv
from omnigym.envs.lmrl.text_task import transcript_line
from omnigym.envs.lmrl.wordle import WordleEnv
from omnigym.spaces import PRINTABLE

LMRL_IDS = ["LMRL/MazeFO-v0", "LMRL/MazePO-v0", "LMRL/Wordle-v0"]
OBS_MAX = {"LMRL/MazeFO-v0": 65536, "LMRL/MazePO-v0": 65536, "LMRL/Wordle-v0": 2048}


@pytest.mark.parametrize("env_id", LMRL_IDS)
def test_spaces_are_printable_text_with_min_length_zero(env_id):
    env = omnigym.make(env_id)
    for space, max_length in ((env.action_space, 256), (env.observation_space, OBS_MAX[env_id])):
        assert space.min_length == 0
        assert space.max_length == max_length
        assert set(space.character_set) == set(PRINTABLE)


@pytest.mark.parametrize("env_id", LMRL_IDS)
def test_passes_gymnasium_env_checker_unwrapped_and_made(env_id):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(omnigym.make(env_id).unwrapped)
        check_env(omnigym.make(env_id))
    # The only warning left is the checker's note that a made env is wrapped.
    assert [str(w.message) for w in caught if "unwrapped" not in str(w.message)] == []


@pytest.mark.parametrize("env_id", LMRL_IDS)
def test_non_str_action_raises_value_error_naming_the_text_space(env_id):
    env = omnigym.make(env_id)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Text\(min_length=0, max_length=256\)"):
        env.step(5)


@pytest.mark.parametrize(
    ("factory", "kwargs", "name"),
    [
        (MazeEnv, {"illegal_reward": "x"}, "illegal_reward"),
        (MazeEnv, {"illegal_reward": float("nan")}, "illegal_reward"),
        (MazeEnv, {"observability": "some"}, "observability"),
        (MazeEnv, {"obs_mode": "tail"}, "obs_mode"),
        (MazeEnv, {"render_mode": "human"}, "render_mode"),
        (WordleEnv, {"hidden": "random"}, "hidden"),
        (WordleEnv, {"obs_mode": 3}, "obs_mode"),
    ],
)
def test_bad_constructor_kwargs_raise_value_error_naming_the_kwarg(factory, kwargs, name):
    with pytest.raises(ValueError, match=name):
        factory(**kwargs)


def test_made_env_validates_kwargs_too():
    with pytest.raises(ValueError, match="illegal_reward"):
        omnigym.make("LMRL/MazeFO-v0", illegal_reward="x")


@pytest.mark.parametrize(
    ("env_id", "action"), [("LMRL/MazeFO-v0", "move up"), ("LMRL/Wordle-v0", "crane")]
)
def test_obs_mode_last_observes_only_the_latest_message(env_id, action):
    env = omnigym.make(env_id, obs_mode="last")
    observation, info = env.reset(seed=3)
    assert observation == info["last_message"]
    observation, _, _, _, info = env.step(action)
    assert observation == info["last_message"]
    assert "\n" not in observation


@pytest.mark.parametrize("env_id", LMRL_IDS)
def test_transcript_is_opening_then_action_and_reply_lines(env_id):
    env = omnigym.make(env_id)
    opening, _ = env.reset(seed=1)
    observation, _, _, _, info = env.step("hello there")
    assert observation.split("\n")[0] == opening
    assert observation.split("\n")[-1] == info["last_message"]
    assert len(observation.split("\n")) == 3


def test_transcript_records_actions_cut_to_256_printable_characters():
    env = omnigym.make("LMRL/MazeFO-v0")
    env.reset(seed=0)
    observation, *_ = env.step("é\tmove\n" + "x" * 1000)
    recorded = observation.split("\n")[1]
    assert recorded == "? move " + "x" * 249
    assert transcript_line("move up") == "move up"


@pytest.mark.parametrize("env_id", LMRL_IDS)
def test_info_keys_every_step_and_final_step(env_id):
    env = omnigym.make(env_id)
    _, info = env.reset(seed=2)
    assert {"last_message", "invalid_action", "episode_return", "turn"} <= set(info)
    assert info["turn"] == 0 and info["episode_return"] == 0.0
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step("nonsense")
        done = terminated or truncated
        assert info["invalid_action"] is True
    assert isinstance(info["success"], bool)
    assert isinstance(info["normalized_score"], float)
    metrics = info["metrics"]
    assert metrics["turns"] == float(info["turn"])
    assert metrics["invalid_actions"] == float(info["turn"])
    assert all(isinstance(value, float) for value in metrics.values())


def test_step_after_the_end_asks_for_reset():
    env = WordleEnv()
    env.reset(seed=0)
    for _ in range(6):
        env.step("zzzzz")
    with pytest.raises(RuntimeError, match="reset"):
        env.step("zzzzz")


@pytest.mark.parametrize("env_id", LMRL_IDS)
def test_same_seed_and_actions_give_identical_episodes(env_id):
    actions = ["move up", "crane", "move left", "slate", "move down", "audio", "bogus"] * 3

    def play():
        env = omnigym.make(env_id)
        trace = [env.reset(seed=11)]
        for action in actions:
            step = env.step(action)
            trace.append(step)
            if step[2] or step[3]:
                break
        env.close()
        return trace

    assert play() == play()


@pytest.mark.parametrize("env_id", LMRL_IDS)
def test_render_ansi_returns_the_transcript(env_id):
    env = omnigym.make(env_id, render_mode="ansi")
    observation, _ = env.reset(seed=0)
    assert env.render() == observation
