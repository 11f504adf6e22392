"""NueToEnuVoxelObs: the (east, north, up) view of the table in ``wrappers.py``."""

import numpy as np
import pytest

from omnigym.envs.craft.env import CraftEnv
from omnigym.envs.craft.wrappers import NueToEnuVoxelObs

RADII = {"voxel_obs_rx": 3, "voxel_obs_ry": 2, "voxel_obs_rz": 4}


def test_voxel_info_and_player_vectors_follow_the_table():
    plain = CraftEnv("SmallRoom", enable_voxel_obs=True, **RADII)
    wrapped = NueToEnuVoxelObs(CraftEnv("SmallRoom", enable_voxel_obs=True, **RADII))
    _, info = plain.reset(seed=0)
    _, enu = wrapped.reset(seed=0)
    action = {"forward": 1, "mouse": np.array([0.3, 0.2], dtype=np.float32)}
    for _ in range(5):
        info = plain.step(action)[4]
        enu = wrapped.step(action)[4]
    nue = info["voxel_obs"]  # [z, y, x, c]
    assert enu["voxel_obs"].shape == (7, 9, 5, 3)  # [x, z, y, c]
    for x, y, z in [(0, 0, 0), (6, 4, 8), (2, 1, 5)]:
        assert np.array_equal(enu["voxel_obs"][x, z, y], nue[z, y, x])
    px, py, pz = info["player_pos"]
    assert enu["player_pos"].tolist() == [px, pz, py]
    vx, vy, vz = info["player_vel"]
    assert enu["player_vel"].tolist() == [vx, vz, vy]
    assert enu["player_yaw"] == -info["player_yaw"] != 0
    assert enu["player_pitch"] == -info["player_pitch"] != 0


def test_voxel_mode_observation_is_reordered_and_declared():
    env = NueToEnuVoxelObs(CraftEnv("SmallRoom", obs_mode="voxels", **RADII))
    obs, _ = env.reset(seed=0)
    assert env.observation_space["voxels"].shape == (7, 9, 5)
    assert obs["voxels"].shape == (7, 9, 5)
    raw = CraftEnv("SmallRoom", obs_mode="voxels", **RADII).reset(seed=0)[0]["voxels"]
    assert np.array_equal(obs["voxels"], raw.transpose(2, 0, 1))
    assert env.observation_space.contains(obs)
    assert env.observation_space.contains(env.step({"forward": 1})[0])


@pytest.mark.parametrize("obs_mode", ["rgb", "both"])
def test_wrapper_passes_frames_through(obs_mode):
    env = NueToEnuVoxelObs(CraftEnv("SmallRoom", obs_mode=obs_mode))
    obs, _ = env.reset(seed=1)
    frame = obs if obs_mode == "rgb" else obs["rgb"]
    assert frame.shape == (64, 64, 3)
