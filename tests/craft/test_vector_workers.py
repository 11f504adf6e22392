"""CraftVectorEnv(workers=k): the same batches as one process, bit for bit; observations that
later steps never overwrite; clear errors; workers that end with the env and with its process."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from omnigym.envs.craft import vector_workers
from omnigym.envs.craft.vector import CraftVectorEnv
from omnigym.envs.craft.vector_workers import CraftWorkerVectorEnv, join_infos, split
from omnigym.processes import descendants, start_time
from tests.craft.test_vector import assert_batch_equal, assert_infos_match
from tests.kills import GRACE_SECONDS, running

SMALL = {"max_timesteps": 10, "obs_width": 24, "obs_height": 24}


def test_split_gives_contiguous_shares_differing_by_at_most_one():
    assert split(7, 3) == [(0, 3), (3, 2), (5, 2)]
    assert split(64, 2) == [(0, 32), (32, 32)]


def test_join_infos_places_each_share_and_fills_what_a_share_lacks():
    parts = [
        {"a": np.array([1.0, 2.0]), "_a": np.array([True, True]), "d": {"x": np.array([1, 0])}},
        {"b": np.array([None, "s"], dtype=object), "_b": np.array([False, True])},
    ]
    joined = join_infos(parts, [2, 2])
    np.testing.assert_array_equal(joined["a"], [1.0, 2.0, 0.0, 0.0])
    np.testing.assert_array_equal(joined["_a"], [True, True, False, False])
    assert joined["b"].tolist() == [None, None, None, "s"]
    np.testing.assert_array_equal(joined["d"]["x"], [1, 0, 0, 0])


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("obs_mode", ["rgb", "voxels"])
def test_workers_give_the_one_process_batches_bit_for_bit(mode, obs_mode):
    """Episodes of 10 steps end several times in 30 steps; every return equals one process's."""
    kwargs = {"obs_mode": obs_mode, "autoreset_mode": mode, **SMALL}
    ours = CraftVectorEnv("Room", 5, workers=2, **kwargs)
    reference = CraftVectorEnv("Room", 5, **kwargs)
    assert isinstance(ours, CraftWorkerVectorEnv)
    assert ours.observation_space == reference.observation_space
    assert ours.action_space == reference.action_space
    mine, theirs = ours.reset(seed=11), reference.reset(seed=11)
    assert_batch_equal(mine[0], theirs[0])
    assert_infos_match(mine[1], theirs[1], set())
    rng = np.random.default_rng(3)
    for _ in range(30):
        actions = rng.integers(ours.single_action_space.n, size=5)
        mine, theirs = ours.step(actions), reference.step(actions)
        assert_batch_equal(mine[0], theirs[0])
        for k in (1, 2, 3):
            np.testing.assert_array_equal(mine[k], theirs[k])
            assert mine[k].dtype == theirs[k].dtype
        assert_infos_match(mine[4], theirs[4], set())
    ours.close()


def test_seed_lists_options_and_render_reach_every_share():
    kwargs = {"render_mode": "rgb_array", **SMALL}
    ours = CraftVectorEnv("Room", 3, workers=2, **kwargs)
    reference = CraftVectorEnv("Room", 3, **kwargs)
    seeds = [4, None, 9]
    mine, theirs = ours.reset(seed=seeds), reference.reset(seed=seeds)
    np.testing.assert_array_equal(mine[0][[0, 2]], theirs[0][[0, 2]])
    ours.reset(seed=1), reference.reset(seed=1)
    frames, expected = ours.render(), reference.render()
    assert len(frames) == 3
    for frame, other in zip(frames, expected, strict=True):
        np.testing.assert_array_equal(frame, other)
    ours.close()


def test_copy_true_observations_outlive_later_steps_even_when_all_are_held():
    """Twelve observations held at once (more than the shared buffers): none changes."""
    envs = CraftVectorEnv("Room", 4, workers=2, obs_mode="voxels", **SMALL)
    held = [envs.reset(seed=0)[0]]
    rng = np.random.default_rng(0)
    for _ in range(vector_workers.MAX_BUFFERS + 4):
        held.append(envs.step(rng.integers(4, size=4))[0])
    kept = [{key: value.copy() for key, value in obs.items()} for obs in held]
    for _ in range(5):
        envs.step(rng.integers(4, size=4))
    for obs, copy in zip(held, kept, strict=True):
        assert_batch_equal(obs, copy)
    assert len(envs._buffers) == vector_workers.MAX_BUFFERS
    envs.close()


def test_a_view_keeps_its_buffer_and_a_dropped_observation_frees_it():
    envs = CraftVectorEnv("Room", 2, workers=2, **SMALL)
    row = envs.reset(seed=0)[0][1]  # a view of world 1's frame: the batch array is dropped
    kept = row.copy()
    for _ in range(4):
        envs.step(np.array([1, 2]))
    np.testing.assert_array_equal(row, kept)
    assert len(envs._buffers) == 2  # the viewed buffer, and one reused by every later step
    envs.close()


def test_copy_false_writes_every_step_into_one_buffer():
    envs = CraftVectorEnv("Room", 2, workers=2, copy=False, **SMALL)
    first = envs.reset(seed=0)[0]
    assert envs.step(np.array([1, 1]))[0] is first
    envs.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"workers": 0}, "workers"),
        ({"workers": 3}, "workers"),
        ({"workers": "2"}, "workers"),
        ({"workers": True}, "workers"),
        ({"workers": 2, "obs_width": 0}, "obs_width"),
        ({"workers": 2, "copy": 1}, "copy"),
        ({"workers": 2, "backend": "luanti"}, "workers"),
    ],
)
def test_bad_arguments_raise_before_any_worker_starts(kwargs, match):
    before = set(descendants(os.getpid()))
    with pytest.raises(ValueError, match=match):
        CraftVectorEnv("Room", 2, **kwargs)
    assert set(descendants(os.getpid())) <= before


def test_bad_actions_and_a_dead_worker_raise_clear_errors():
    envs = CraftVectorEnv("Room", 2, workers=2, **SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(np.array([0, 0]))
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="outside"):
        envs.step(np.array([0, 99]))
    envs._processes[0].kill()
    envs._processes[0].wait()
    with pytest.raises(RuntimeError, match="worlds 1..1 ended"):
        envs.step(np.array([0, 0]))
    envs.close()


def test_close_ends_the_workers():
    envs = CraftVectorEnv("Room", 3, workers=3, **SMALL)
    processes = list(envs._processes)
    envs.close()
    assert all(process.poll() is not None for process in processes)


SCRIPT = """
from omnigym.envs.craft.vector import CraftVectorEnv
envs = CraftVectorEnv("Room", 3, workers=3, obs_mode="voxels")
envs.reset(seed=0)
print("stepping", flush=True)
while True:
    envs.step(envs.action_space.sample())
"""
"""A script without a ``__main__`` guard: workers must not run it again."""


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_workers_end_with_a_killed_process(signum):
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout.readline().strip() == "stepping", process.stderr.read()
        below = descendants(process.pid)
        assert len(below) == 2
        starts = {pid: start_time(pid) for pid in below}
        os.kill(process.pid, signum)
        process.wait(timeout=30)
        deadline = time.monotonic() + GRACE_SECONDS
        while time.monotonic() < deadline and any(running(p, s) for p, s in starts.items()):
            time.sleep(0.1)
        left = [pid for pid, started in starts.items() if running(pid, started)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_make_vec_passes_workers_to_the_vector_entry_point():
    import gymnasium as gym

    envs = gym.make_vec(
        "omnigym:Craft/Room-v0", num_envs=2, vectorization_mode="vector_entry_point", workers=2
    )
    assert isinstance(envs, CraftWorkerVectorEnv) and envs.reset(seed=0)[0].shape[0] == 2
    envs.close()
