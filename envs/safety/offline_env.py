"""``OfflineSafeEnv``: a Safe task with its offline dataset, DSRL's ``OfflineEnv`` interface.

DSRL (Liu et al., DMLR 2024) wraps each task in an ``OfflineEnv`` that downloads the task's HDF5
file, normalizes scores against per-task references and pre-processes the data (density, outliers,
noise, in-painting, frontier). This wrapper does the same over a Safe env with the committed
references (``envs/safety/data/references.yaml``), except that nothing is downloaded: the dataset is
the one made locally by ``python -m omnigym.envs.safety.datasets generate`` and looked up in
``$OMNIGYM_DATA_DIR`` (default: the working directory) under DSRL's file name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import omnigym
from omnigym.envs.safety import dsrl
from omnigym.envs.safety.core import check_target_cost, load_references

DATA_DIR_VARIABLE = "OMNIGYM_DATA_DIR"


class OfflineSafeEnv(gym.Wrapper):
    """The Safe task ``env_id`` plus its dataset, references and DSRL's score normalization.

    ``get_dataset(h5path=None)`` loads the task's DSRL-format file (default:
    ``$OMNIGYM_DATA_DIR/<references' dataset name>``), ``set_target_cost(κ)`` sets the cost
    budget of the env and of the scores, ``get_normalized_score(reward_return, cost_return)``
    returns DSRL's ``(normalized_reward, normalized_cost)`` and ``pre_process_data(data, ...)``
    is DSRL's pre-processing with the task's ``density_cfg``. Extra ``kwargs`` go to
    ``omnigym.make``.
    """

    def __init__(self, env_id: str, **kwargs: Any):
        super().__init__(omnigym.make(env_id, **kwargs))
        references = load_references().get(env_id)
        if references is None:
            raise ValueError(
                f"{env_id} has no references in envs/safety/data/references.yaml; regenerate "
                "them with: python -m omnigym.envs.safety.datasets references"
            )
        self.env_id = env_id
        self.references = references
        self.target_cost = self.env.unwrapped.target_cost

    @property
    def dataset_filename(self) -> str:
        """DSRL's name of the task's default dataset, e.g. ``Safe-PointGoal1-v0-60-412.hdf5``."""
        return self.references["dataset"]

    def dataset_path(self) -> Path:
        """Where :meth:`get_dataset` looks by default."""
        return Path(os.environ.get(DATA_DIR_VARIABLE, ".")) / self.dataset_filename

    def get_dataset(self, h5path: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
        """The dataset at ``h5path`` (default :meth:`dataset_path`), checked against the env's
        spaces. A missing default file raises ``FileNotFoundError`` quoting the command that
        makes it; nothing is downloaded."""
        path = Path(h5path) if h5path is not None else self.dataset_path()
        if not path.exists():
            folder = path.parent if h5path is None else Path(h5path).parent
            raise FileNotFoundError(
                f"no dataset at {path}; make it with: python -m omnigym.envs.safety.datasets "
                f"generate --env {self.env_id} --seed 0 --out {folder}"
            )
        return dsrl.load_dataset(path, env=self.env)

    def set_target_cost(self, target_cost: float) -> None:
        """Set κ for the scores and for the env's own final metrics."""
        self.target_cost = check_target_cost(target_cost)
        self.env.unwrapped.set_target_cost(self.target_cost)

    def get_normalized_score(self, reward_return: Any, cost_return: Any) -> tuple[Any, Any]:
        """DSRL's ``(normalized_reward, normalized_cost)``: the reward against the task's
        reference returns, the cost against κ (scalars or arrays)."""
        normalized_reward = dsrl.normalized_reward(
            reward_return, self.references["min_reward"], self.references["max_reward"]
        )
        return normalized_reward, dsrl.normalized_cost(cost_return, self.target_cost)

    def pre_process_data(self, data: dict[str, np.ndarray], **kwargs: Any) -> dict:
        """:func:`omnigym.envs.safety.dsrl.pre_process_data` with this task's ``density_cfg``
        and κ (``density``, ``outliers_percent``, ``noise_scale``, ``inpaint_ranges``,
        ``epsilon``, ``rng`` pass through)."""
        kwargs.setdefault("target_cost", self.target_cost)
        return dsrl.pre_process_data(data, density_cfg=self.references["density_cfg"], **kwargs)
