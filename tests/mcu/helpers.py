"""Small builders shared by the MCU tests: a task from a few fields, an env on it, a bare world."""

import numpy as np

from omnigym.envs.mcu.env import AtomicEnv
from omnigym.envs.mcu.registries import registry
from omnigym.envs.mcu.tasks import parse_task
from omnigym.envs.mcu.world import MCUWorld


def make_task(init=(), success="mined(stone) >= 1", **fields):
    data = {
        "name": "test_task",
        "category": "Mine Blocks",
        "subcategory": "Stone",
        "text": "A test task.",
        "init_commands": list(init),
        "success": success,
        "milestones": [{"when": success, "weight": 1.0}],
        "oracle": {"solver": "mine", "block": "stone"},
        **fields,
    }
    return parse_task(data, "test_task.yaml")


def make_env(init=(), success="mined(stone) >= 1", seed=0, **fields):
    env = AtomicEnv(make_task(init, success, **fields))
    env.reset(seed=seed)
    return env


def bare_world(seed=0):
    return MCUWorld(registry(), np.random.default_rng(seed))
