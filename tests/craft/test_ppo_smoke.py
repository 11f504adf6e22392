"""A CleanRL-style PPO smoke run on Craft/SmallRoom-v0 completes.

The loop Craftium's own examples use: grey frames (``rgb_observations=False``), ``frameskip=4``,
Gymnasium's ``FrameStackObservation`` of 4, Stable-Baselines3's PPO with its default NatureCNN
``CnnPolicy``, 2,000 environment steps.
"""

import gymnasium as gym
import pytest

pytest.importorskip("stable_baselines3")

from gymnasium.wrappers import FrameStackObservation  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402

import omnigym  # noqa: E402, F401  (registers the omnigym: ids)
from omnigym.threads import one_torch_thread  # noqa: E402


def make_smallroom():
    env = gym.make("omnigym:Craft/SmallRoom-v0", frameskip=4, rgb_observations=False)
    return FrameStackObservation(env, 4)


@pytest.fixture
def one_thread():
    with one_torch_thread():  # small batches on a shared CPU: more threads only contend
        yield


@pytest.mark.slow
def test_ppo_with_stacked_grey_frames_runs_2000_steps(one_thread):
    envs = make_vec_env(make_smallroom, n_envs=4, seed=0)
    assert envs.observation_space.shape == (4, 64, 64)  # channels-first: no transpose needed
    model = PPO("CnnPolicy", envs, n_steps=128, batch_size=128, n_epochs=1, seed=0, verbose=0)
    model.learn(total_timesteps=2000)
    assert model.num_timesteps >= 2000
    observation = envs.reset()
    actions, _ = model.predict(observation, deterministic=True)
    assert actions.shape == (4,) and set(actions.tolist()) <= {0, 1, 2, 3}
    envs.close()
