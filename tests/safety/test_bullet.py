"""Bullet-Safety-Gym under the Safe conventions: the four ``Safe/Bullet*`` ids, their DSRL horizons
and ``cmax``, ``info["cost"]``, final metrics and determinism. Skipped where the optional
``bullet-safety-gym`` (and ``pybullet``) are absent."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

pytest.importorskip("pybullet")
pytest.importorskip("bullet_safety_gym")

import omnigym  # noqa: E402
from omnigym.envs.safety import bullet  # noqa: E402
from omnigym.envs.safety.core import normalized_cost  # noqa: E402

pytestmark = [
    pytest.mark.bullet,
    pytest.mark.filterwarnings("ignore:.*Box observation space (minimum|maximum):UserWarning"),
]

IDS = {
    "Safe/BulletBallRun-v0": (100, 80.0, 7),
    "Safe/BulletBallCircle-v0": (200, 80.0, 8),
    "Safe/BulletCarRun-v0": (200, 40.0, 7),
    "Safe/BulletCarCircle-v0": (300, 100.0, 8),
}
"""id: DSRL's horizon, DSRL's cmax, observation width."""


def _episode(env, seed, steps, action_seed=1):
    """Observation, rewards and costs of ``steps`` seeded random actions after ``reset(seed)``."""
    rng = np.random.default_rng(action_seed)
    observation, info = env.reset(seed=seed)
    trace = [observation, info]
    for _ in range(steps):
        action = rng.uniform(-1, 1, 2).astype(np.float32)
        observation, reward, terminated, truncated, info = env.step(action)
        trace.append((observation, reward, terminated, truncated, info["cost"]))
    return pickle.dumps(trace)


def _run(env, action, seed=0):
    """One whole episode of a constant ``action``: the step costs and the last step."""
    env.reset(seed=seed)
    costs = []
    while True:
        step = env.step(np.asarray(action, np.float32))
        costs.append(step[4]["cost"])
        if step[2] or step[3]:
            return costs, step


def test_the_four_ids_are_registered_apart_from_the_numpy_safe_family():
    registered = [info.id for info in omnigym.list_envs(family="SafeBullet")]
    assert registered == sorted(IDS)
    assert not set(IDS) & {info.id for info in omnigym.list_envs(family="Safe")}
    assert all(omnigym.spec(env_id).obs_kind == "vector" for env_id in IDS)


@pytest.mark.parametrize("env_id", sorted(IDS))
def test_env_passes_check_env_with_dsrl_horizon_cmax_and_thresholds(env_id):
    horizon, cmax, width = IDS[env_id]
    env = omnigym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    unwrapped = env.unwrapped
    assert (unwrapped.horizon, unwrapped.cmax, unwrapped.target_cost) == (horizon, cmax, 20.0)
    assert unwrapped.constants["thresholds"] == [10, 20, 40]
    assert unwrapped.constants["strict_threshold"] == 5
    assert unwrapped.obs_groups is None and unwrapped.env_id == env_id
    assert env.observation_space.shape == (width,)
    assert env.observation_space.dtype == np.float32
    env.close()


def test_every_step_reports_a_float_cost_and_the_last_the_episode_metrics():
    env = omnigym.make("Safe/BulletBallRun-v0", target_cost=10)
    still, (_, _, terminated, truncated, info) = _run(env, [0.0, 0.0])
    assert len(still) == 100 and not terminated and truncated
    assert set(still) == {0.0} and all(type(cost) is float for cost in still)
    assert info["success"] is True and info["metrics"]["episode_cost"] == 0.0
    flat_out, (_, _, _, _, info) = _run(env, [1.0, 0.0])
    assert 0 < sum(flat_out) < 100 and flat_out[-1] == 1.0  # over the speed limit once moving
    metrics = info["metrics"]
    assert metrics["episode_cost"] == sum(flat_out)
    assert metrics["normalized_cost"] == normalized_cost(sum(flat_out), 10.0)
    assert info["success"] is False
    env.close()


def test_leaving_the_corridor_costs_on_run():
    env = omnigym.make("Safe/BulletBallRun-v0")
    costs, (observation, *_) = _run(env, [0.0, 1.0])
    assert observation[1] > 0.2 and costs[-1] == 1.0  # y = 10 × observation[1] > 2
    env.close()


@pytest.mark.parametrize("env_id", ["Safe/BulletBallCircle-v0", "Safe/BulletCarRun-v0"])
def test_same_seed_and_actions_repeat_on_a_fresh_or_a_used_env(env_id):
    used, fresh = omnigym.make(env_id), omnigym.make(env_id)
    first = _episode(used, seed=3, steps=40)
    _episode(used, seed=5, steps=25, action_seed=2)
    assert _episode(used, seed=3, steps=40) == first
    assert _episode(fresh, seed=3, steps=40) == first
    assert _episode(fresh, seed=4, steps=40) != first
    used.close()
    fresh.close()


def test_reset_leaves_the_global_numpy_rng_untouched():
    env = omnigym.make("Safe/BulletBallCircle-v0")
    np.random.seed(7)
    expected = np.random.random()
    np.random.seed(7)
    env.reset(seed=0)
    assert np.random.random() == expected
    env.close()


def test_out_of_space_action_raises_value_error_naming_the_box():
    env = omnigym.make("Safe/BulletCarCircle-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Box\(-1.0, 1.0, \(2,\), float32\)"):
        env.step(np.array([2.0, 0.0], np.float32))
    with pytest.raises(ValueError, match="not in the action space"):
        env.step(np.array([np.nan, 0.0], np.float32))
    env.close()


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="target_cost"):
        omnigym.make("Safe/BulletBallRun-v0", target_cost=-1)
    with pytest.raises(ValueError, match="task must be one of BallRun"):
        bullet.BulletSafeEnv(task="AntRun")


def test_registration_needs_both_packages(monkeypatch):
    from omnigym import registry

    real = registry.importlib.util.find_spec
    monkeypatch.setattr(
        registry.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "pybullet" else real(name, *args),
    )
    monkeypatch.setattr(registry, "register", lambda info: None)
    registered = registry.register_family("omnigym.envs.safety")
    assert registered and not [env_id for env_id in registered if "Bullet" in env_id]


def test_import_omnigym_lists_the_ids_without_importing_pybullet():
    code = (
        "import sys, omnigym; ids = [i.id for i in omnigym.list_envs(family='SafeBullet')];"
        " print(len(ids), sorted({'pybullet', 'bullet_safety_gym', 'numba'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split(maxsplit=1) == ["4", "[]\n"], result.stderr
