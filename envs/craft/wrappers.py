"""Craftium's ``NueToEnuVoxelObs`` wrapper: voxel data and player vectors in (east, north, up).

Follows Craftium (Malagón, Ceberio, Lozano, ICML 2025), ``craftium/wrappers.py``. The engine
lays voxels out ``[z, y, x]`` (Luanti's north, up, east) and reports positions as (x, y, z); this
wrapper turns them into the (east, north, up) = (x, z, y) order that robotics code expects.
This table defines the mapping, since Craftium's own axis naming is inconsistent:

| quantity | engine | after the wrapper |
|---|---|---|
| ``info["voxel_obs"]`` | ``[z, y, x, channel]`` | ``[x, z, y, channel]`` |
| observation ``voxels`` (voxel modes) | ``[z, y, x]`` | ``[x, z, y]`` |
| ``info["player_pos"]``, ``info["player_vel"]`` | (x, y, z) | (x, z, y) |
| ``info["player_yaw"]``, ``info["player_pitch"]`` | Luanti's degrees | negated |

Departure from Craftium: it rewrites ``info["voxel_obs"]`` only; here the ``voxels`` entry of a
voxel-mode observation (a key Craftium does not have) is reordered the same way, so the two
never disagree.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ZYX_TO_XZY = (2, 0, 1)
"""Axis permutation taking a ``[z, y, x]`` array to ``[x, z, y]``."""


class NueToEnuVoxelObs(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reorders voxel arrays and player vectors from Luanti's axes to (east, north, up)."""

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        space = env.observation_space
        if isinstance(space, spaces.Dict) and "voxels" in space.spaces:
            voxels = space["voxels"]
            entries = dict(space.spaces)
            entries["voxels"] = spaces.Box(
                0, 65535, tuple(voxels.shape[a] for a in ZYX_TO_XZY), voxels.dtype
            )
            self.observation_space = spaces.Dict(list(entries.items()))

    def reset(self, **kwargs: Any):
        observation, info = self.env.reset(**kwargs)
        return self._observation(observation), self._info(info)

    def step(self, action: Any):
        observation, reward, terminated, truncated, info = self.env.step(action)
        return self._observation(observation), reward, terminated, truncated, self._info(info)

    @staticmethod
    def _observation(observation: Any) -> Any:
        if isinstance(observation, dict) and "voxels" in observation:
            observation = dict(observation)
            observation["voxels"] = np.ascontiguousarray(
                observation["voxels"].transpose(ZYX_TO_XZY)
            )
        return observation

    @staticmethod
    def _info(info: dict[str, Any]) -> dict[str, Any]:
        info = dict(info)
        info["voxel_obs"] = info["voxel_obs"].transpose(2, 0, 1, 3)
        for key in ("player_pos", "player_vel"):
            x, y, z = info[key]
            info[key] = np.array([x, z, y], dtype=info[key].dtype)
        info["player_yaw"] = -info["player_yaw"]
        info["player_pitch"] = -info["player_pitch"]
        return info
