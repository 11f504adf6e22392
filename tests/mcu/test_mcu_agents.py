"""The MCU agents learn: BC cloned from the oracle and PPO on the macro actions each beat the
same agent untrained; the plain-command random baseline stays near zero."""

import numpy as np
import pytest

import omnigym
from omnigym.evaluators.rollout import evaluate

pytest.importorskip("trl")

BC = "omnigym.agents.mcu.bc:MCUBCAgent"
PPO = "omnigym.agents.mcu.ppo:MCUPPOAgent"


def progress(env_id, agent, kwargs, episodes=2):
    records = evaluate(env_id, agent, episodes=episodes, agent_kwargs=kwargs)
    return float(np.mean([r["metrics"]["task_progress"] for r in records]))


def trained(agent, env_id, budget, folder, **kwargs):
    env = omnigym.make(env_id)
    built = omnigym.make_agent(agent, env=env, **kwargs)
    built.reset(0)
    built.learn(env, budget)
    built.save(folder)
    return str(folder)


def test_bc_cloned_from_the_oracle_beats_the_untrained_model(tmp_path):
    tasks = ["find_diamond", "sleep_in_bed"]
    settings = {"envs": [f"MCU/{t}-simple-v0" for t in tasks], "demo_seeds": 3}
    good = trained(BC, "MCU/find_diamond-simple-v0", 60, tmp_path / "bc", **settings)
    bad = trained(BC, "MCU/find_diamond-simple-v0", 1, tmp_path / "untrained", lr=1e-12, **settings)
    for env_id in ("MCU/find_diamond-simple-v0", "MCU/sleep_in_bed-simple-v0"):
        learned = progress(env_id, BC, {"checkpoint": good})
        assert learned == 10.0 and progress(env_id, BC, {"checkpoint": bad}) < learned


def test_ppo_on_the_macro_actions_beats_the_untrained_policy(tmp_path):
    env_id = "MCU/hunt_cow-simple-v0"
    good = trained(PPO, env_id, 1536, tmp_path / "ppo")
    bad = trained(PPO, env_id, 256, tmp_path / "untrained", learning_rate=0.0)
    learned = progress(env_id, PPO, {"checkpoint": good}, episodes=3)
    assert learned > progress(env_id, PPO, {"checkpoint": bad}, episodes=3)
    assert learned >= 7.0


def test_random_commands_are_valid_but_make_little_progress():
    records = evaluate("MCU/craft_to_clock-simple-v0", "random_commands", episodes=2)
    assert all(r["metrics"]["invalid_commands"] < r["length"] for r in records)
    assert max(r["metrics"]["task_progress"] for r in records) < 10.0
