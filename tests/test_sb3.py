"""SB3Agent: trains Stable-Baselines3 PPO on a Craft task, plays it, saves and reloads it."""

import json
import os

import gymnasium as gym
import numpy as np
import pytest
import yaml

pytest.importorskip("stable_baselines3")

import omnigym  # noqa: E402
from omnigym.agents.sb3 import SB3Agent, channels_first, stacked_space  # noqa: E402
from omnigym.evaluators.experiment import LEARNING_CURVES_FILE, RunFolder  # noqa: E402
from omnigym.evaluators.store import read_records  # noqa: E402

ENV_ID = "Craft/SmallRoom-v0"
# Small frames and short episodes keep training to a few seconds.
ENV_KWARGS = {"obs_width": 32, "obs_height": 32, "frameskip": 4, "rgb_observations": False}
AGENT_KWARGS = {
    "policy_kwargs": {
        "features_extractor_class": "SmallCNN",
        "features_extractor_kwargs": {"features_dim": 32},
    },
    "n_envs": 2,
    "frame_stack": 3,
    "env_kwargs": {"max_timesteps": 20},
    "torch_threads": 1,
    "n_steps": 64,
    "batch_size": 64,
    "n_epochs": 1,
}
BUDGET = 256


def make_env(**kwargs):
    return omnigym.make(ENV_ID, **{**ENV_KWARGS, **kwargs})


@pytest.fixture(scope="module")
def trained():
    env = make_env()
    agent = omnigym.make_agent("omnigym.agents.sb3:SB3Agent", env=env, **AGENT_KWARGS)
    agent.reset(7)
    agent.learn(env, BUDGET)
    env.close()
    return agent


def play(agent, seed, steps=30):
    env = make_env(max_timesteps=steps)
    agent.reset(seed)
    observation, info = env.reset(seed=seed)
    actions = []
    while True:
        action = agent.act(observation, info)
        actions.append(action)
        observation, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    env.close()
    return actions


def test_learn_trains_the_whole_budget_and_records_each_training_episode(trained):
    assert trained.trained_timesteps == BUDGET
    # Every training episode is cut at 20 steps (or ends sooner at the target): -1 per step.
    timesteps = [t for t, _ in trained.learning_curve]
    returns = [r for _, r in trained.learning_curve]
    assert len(timesteps) >= BUDGET // 20 - 2
    assert timesteps == sorted(timesteps) and timesteps[0] > 0 and timesteps[-1] <= BUDGET
    assert all(-20.0 <= r <= -1.0 and r == int(r) for r in returns)


def test_act_returns_actions_of_the_discrete_space(trained):
    actions = play(trained, seed=3)
    assert len(actions) == 30
    assert all(isinstance(a, int) and 0 <= a < 4 for a in actions)


def test_same_seed_gives_the_same_training(trained):
    env = make_env()
    again = SB3Agent(env, **AGENT_KWARGS)
    again.reset(7)
    again.learn(env, BUDGET)
    env.close()
    assert again.learning_curve == trained.learning_curve
    assert play(again, seed=5) == play(trained, seed=5)


def test_save_and_load_round_trip_gives_identical_actions(trained, tmp_path):
    folder = trained.save(tmp_path / "ppo")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "policy.pt"]
    config = json.loads((folder / "config.json").read_text())
    assert config["algo"] == "PPO" and config["frame_stack"] == 3
    assert config["observation_shape"] == [3, 32, 32]
    env = make_env()
    loaded = SB3Agent(env).load(folder)  # the config sets algo, policy and frame stack
    env.close()
    assert loaded.frame_stack == 3 and loaded.learning_curve == trained.learning_curve
    for seed in (0, 1, 2):
        assert play(loaded, seed) == play(trained, seed)


def test_checkpoint_kwarg_loads_at_construction(trained, tmp_path):
    folder = trained.save(tmp_path / "ppo")
    env = make_env()
    agent = omnigym.make_agent("omnigym.agents.sb3:SB3Agent", env=env, checkpoint=str(folder))
    env.close()
    assert play(agent, seed=4) == play(trained, seed=4)


def test_load_refuses_a_checkpoint_for_other_observations(trained, tmp_path):
    folder = trained.save(tmp_path / "ppo")
    env = make_env(obs_width=48, obs_height=48)
    with pytest.raises(ValueError, match="shape"):
        SB3Agent(env).load(folder)
    env.close()


def test_act_stacks_frames_as_the_training_wrappers_do():
    env = make_env()
    agent = SB3Agent(env, frame_stack=3)
    wrapped = agent._observation_wrappers(gym.make(env.spec))
    seen, _ = wrapped.reset(seed=0)
    agent.reset(0)
    raw, _ = env.reset(seed=0)
    for action in (1, 1, 2, 0):
        np.testing.assert_array_equal(agent._stack(raw), seen)
        seen, *_ = wrapped.step(action)
        raw, *_ = env.step(action)
    np.testing.assert_array_equal(agent._stack(raw), seen)
    assert seen.shape == (3, 32, 32)
    env.close()
    wrapped.close()


def test_frames_become_channels_first_and_stack_on_the_channel_axis():
    grey = np.arange(6, dtype=np.uint8).reshape(2, 3)
    rgb = np.arange(18, dtype=np.uint8).reshape(2, 3, 3)
    assert channels_first(grey).shape == (1, 2, 3)
    np.testing.assert_array_equal(channels_first(rgb)[2], rgb[:, :, 2])
    space = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)
    assert stacked_space(space, 4).shape == (12, 64, 64)


def test_act_before_training_and_unknown_algorithms_are_errors():
    env = make_env()
    with pytest.raises(RuntimeError, match="before learn"):
        SB3Agent(env).act(env.reset(seed=0)[0], {})
    with pytest.raises(ValueError, match="not a Stable-Baselines3 algorithm"):
        SB3Agent(env, algo="NoSuchAlgo")
    with pytest.raises(ValueError, match="frame_stack"):
        SB3Agent(env, frame_stack=0)
    env.close()


PPO_ENTRY = {
    "name": "omnigym.agents.sb3:SB3Agent",
    "label": "ppo",
    "kwargs": AGENT_KWARGS,
    "train": {"budget": 128},
}


def _ppo_scenario(**fields):
    """A scenario of one episode per seed on the test task, with ``fields`` set."""
    return {"name": "ppo", "envs": [{"id": ENV_ID, "kwargs": ENV_KWARGS}], "episodes": 1, **fields}


def test_scenario_run_writes_curve_and_checkpoint_and_resumes_from_the_checkpoint(tmp_path):
    from omnigym.cli import main

    scenario = _ppo_scenario(agents=[PPO_ENTRY, "random"], seeds=[0])
    path = tmp_path / "ppo.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 0
    (curve,) = RunFolder(out).learning_curves()
    assert (curve["env_id"], curve["agent"], curve["seed"]) == (ENV_ID, "ppo", 0)
    assert len(curve["timesteps"]) == len(curve["returns"]) > 0
    assert "<h2>Learning curves</h2>" in (out / "report.html").read_text()
    assert (RunFolder(out).checkpoint(ENV_ID, "ppo", 0) / "policy.pt").exists()

    first = read_records(out / "episodes.jsonl")
    (out / "episodes.jsonl").unlink()  # replay the evaluation: the checkpoint replaces training
    assert main(["run", str(path), "--out", str(out)]) == 0
    assert len((out / LEARNING_CURVES_FILE).read_text().splitlines()) == 1
    again = read_records(out / "episodes.jsonl")
    assert [r["return"] for r in again] == [r["return"] for r in first]


def test_two_workers_train_the_seeds_in_the_pool_as_one_process_would(tmp_path):
    from omnigym.cli import main

    scenario = _ppo_scenario(agents=[PPO_ENTRY], seeds=[0, 1])
    runs = {}
    for workers in (1, 2):
        path = tmp_path / f"ppo{workers}.yaml"
        path.write_text(yaml.safe_dump({**scenario, "workers": workers}))
        out = tmp_path / f"out{workers}"
        assert main(["run", str(path), "--out", str(out)]) == 0
        folder = RunFolder(out)
        trained = folder.diagnostics("train")
        assert sorted(line["seed"] for line in trained) == [0, 1]
        assert all(folder.checkpoint(ENV_ID, "ppo", seed).exists() for seed in (0, 1))
        assert len(folder.learning_curves()) == 2
        runs[workers] = (trained, read_records(out / "episodes.jsonl"))
    assert {line["pid"] for line in runs[1][0]} == {os.getpid()}
    assert os.getpid() not in {line["pid"] for line in runs[2][0]}
    returns = {
        w: sorted((r["seed"], r["return"]) for r in records) for w, (_, records) in runs.items()
    }
    assert returns[1] == returns[2]
