"""Export of DSRL-format Safe datasets to Minari, and their reading back.

Minari (Farama Foundation) is Gymnasium's standard store of offline datasets: episodes of
``T + 1`` observations, ``T`` actions, rewards, terminations and truncations, plus per-step
``infos``. :func:`export_minari` turns a DSRL flat file (Liu et al., DMLR 2024; written by
:mod:`omnigym.envs.safety.datasets` or downloaded from DSRL) into a Minari dataset, and
:func:`load_minari` turns one back into DSRL's seven arrays, identical to the file's. Run::

    python -m omnigym.envs.safety.datasets export-minari FILE \\
        --dataset-id omnigym/safe-pointgoal1/scripted-v0

The dataset goes where Minari keeps them (``$MINARI_DATASETS_PATH``, default
``~/.minari/datasets``); ``minari.load_dataset(dataset_id)`` opens it. Mapping, episode by
episode (episodes end where ``terminals or timeouts``):

- observations: the episode's ``observations`` then its last ``next_observations`` row;
  actions and rewards as they are; ``terminals`` → terminations, ``timeouts`` → truncations;
- ``infos["cost"]``: ``T + 1`` float32 values, 0 for the reset and then each step's cost, as
  Minari's ``DataCollector`` records the infos of a Safe env (``reset`` returns cost 0);
- dataset metadata: ``references`` (the ``.json`` sidecar beside the file, ``None`` when there
  is none), ``obs_groups`` (name → ``[start, stop]``, ``None`` when the file has none) and
  ``dsrl_attributes`` (all the file's root attributes);
- the environment: the file's ``env_id`` when it is registered (the Safe ids are), else only
  unbounded float32 ``Box`` spaces of the arrays' widths.

Departure from DSRL: a DSRL row carries its own ``next_observations``, Minari keeps each
observation once, so a file whose ``next_observations`` row differs from the next
``observations`` row inside an episode is refused rather than silently changed.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import omnigym  # noqa: F401  (registers the ids a file may name)
from omnigym.envs.safety import dsrl
from omnigym.envs.safety.datasets import sidecar_path

COST_INFO = "cost"
INSTALL_HINT = "pip install 'omnigym[data]'"


def _minari() -> Any:
    try:
        import minari
    except ImportError as error:
        raise ImportError(
            f"the Minari export needs the optional minari package: {INSTALL_HINT}"
        ) from error
    return minari


def _check_dataset_id(dataset_id: str) -> None:
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        parse_dataset_id(dataset_id)
    except (TypeError, ValueError):  # Minari raises TypeError when "-v<version>" is missing
        raise ValueError(
            f"dataset_id must look like NAMESPACE/NAME-v<version> (e.g. "
            f"omnigym/safe-pointgoal1/scripted-v0), got {dataset_id!r}"
        ) from None


def _check_continuity(data: dict[str, np.ndarray]) -> None:
    """Refuse rows whose ``next_observations`` is not the next row's ``observations`` inside an
    episode (Minari could not store both)."""
    ends = data["terminals"] | data["timeouts"]
    same = np.all(data["next_observations"][:-1] == data["observations"][1:], axis=1)
    broken = np.flatnonzero(~same & ~ends[:-1])
    if len(broken):
        row = int(broken[0])
        raise ValueError(
            f"next_observations[{row}] differs from observations[{row + 1}] inside an episode "
            f"({len(broken)} such rows): Minari stores each observation once"
        )


def episode_buffers(data: dict[str, np.ndarray]) -> list[Any]:
    """The episodes of DSRL arrays ``data`` as Minari ``EpisodeBuffer``s (see the module)."""
    from minari.data_collector import EpisodeBuffer

    _check_continuity(data)
    buffers = []
    bounds = dsrl.episode_bounds(data["terminals"], data["timeouts"])
    for index, (start, stop) in enumerate(bounds):
        rows = slice(start, stop)
        observations = np.concatenate(
            [data["observations"][rows], data["next_observations"][stop - 1 : stop]]
        )
        costs = np.concatenate([np.zeros(1, np.float32), data["costs"][rows]])
        buffers.append(
            EpisodeBuffer(
                id=index,
                observations=observations,
                actions=data["actions"][rows],
                rewards=data["rewards"][rows],
                terminations=data["terminals"][rows],
                truncations=data["timeouts"][rows],
                infos={COST_INFO: costs},
            )
        )
    return buffers


def export_minari(
    h5_path: str | os.PathLike,
    dataset_id: str,
    *,
    author: str | None = None,
    author_email: str | None = None,
    code_permalink: str | None = None,
    description: str | None = None,
) -> Any:
    """Write the DSRL-format file ``h5_path`` as the Minari dataset ``dataset_id``.

    ``dataset_id`` is Minari's ``NAMESPACE/NAME-v<version>``; an existing one is not
    overwritten (``ValueError``). ``author``, ``author_email``, ``code_permalink`` and
    ``description`` are Minari's optional metadata (the description defaults to one naming the
    file and its env id). Returns the ``minari.MinariDataset``.
    """
    minari = _minari()
    _check_dataset_id(dataset_id)
    path = Path(h5_path)
    attributes = dsrl.load_attributes(path)
    env_id = attributes.get("env_id")
    sidecar = sidecar_path(path)
    references = json.loads(sidecar.read_text(encoding="utf-8")) if sidecar.exists() else None
    env = gym.make(env_id) if env_id in gym.registry else None
    try:
        data = dsrl.load_dataset(path, env=env)
        if len(data["rewards"]) == 0:
            raise ValueError(f"{os.fspath(path)} holds no episode")
        buffers = episode_buffers(data)
        if env is None:
            space_kwargs = {
                "observation_space": _unbounded(data["observations"]),
                "action_space": _unbounded(data["actions"]),
            }
        else:
            space_kwargs = {"env": env}
        config = attributes.get("config")
        with warnings.catch_warnings():
            # Minari nags about each optional metadata field left None.
            warnings.filterwarnings("ignore", message=r".*is (set to )?None", category=UserWarning)
            dataset = minari.create_dataset_from_buffers(
                dataset_id,
                buffers,
                algorithm_name=config.get("policy") if isinstance(config, dict) else None,
                author=author,
                author_email=author_email,
                code_permalink=code_permalink,
                description=description
                or f"DSRL-format dataset {path.name} of {env_id or 'an unnamed env'}, exported "
                "by omnigym; per-step costs in infos['cost'] (0 at reset).",
                **space_kwargs,
            )
    finally:
        if env is not None:
            env.close()
    dataset.storage.update_metadata(
        {
            "references": references,
            "obs_groups": attributes.get("obs_groups"),
            "dsrl_attributes": attributes,
        }
    )
    return dataset


def _unbounded(array: np.ndarray) -> spaces.Box:
    return spaces.Box(-np.inf, np.inf, array.shape[1:], np.float32)


def load_minari(dataset_id: str) -> dict[str, np.ndarray]:
    """DSRL's seven arrays of the local Minari dataset ``dataset_id`` (the inverse of
    :func:`export_minari`): float32 ``observations``, ``next_observations``, ``actions``,
    ``rewards``, ``costs`` (from ``infos["cost"]``, the reset's value dropped), bool
    ``terminals`` and ``timeouts``. Raises ``ValueError`` for a dataset without
    ``infos["cost"]`` or with an episode that neither terminates nor truncates; the
    references and ``obs_groups`` are in ``minari.load_dataset(dataset_id).storage.metadata``.
    """
    minari = _minari()
    dataset = minari.load_dataset(dataset_id)
    parts: dict[str, list[np.ndarray]] = {key: [] for key in dsrl.KEYS}
    for episode in dataset.iterate_episodes():
        costs = (episode.infos or {}).get(COST_INFO)
        steps = len(episode.rewards)
        if costs is None or len(costs) != steps + 1:
            raise ValueError(
                f"episode {episode.id} of {dataset_id} needs infos['{COST_INFO}'] with "
                f"{steps + 1} values (reset and steps), got "
                f"{'none' if costs is None else len(costs)}"
            )
        observations = np.asarray(episode.observations)
        parts["observations"].append(observations[:-1])
        parts["next_observations"].append(observations[1:])
        parts["actions"].append(np.asarray(episode.actions))
        parts["rewards"].append(episode.rewards)
        parts["costs"].append(np.asarray(costs)[1:])
        parts["terminals"].append(episode.terminations)
        parts["timeouts"].append(episode.truncations)
    if not parts["rewards"]:
        raise ValueError(f"{dataset_id} holds no episode")
    data = {key: np.concatenate(values) for key, values in parts.items()}
    for key in dsrl.FLOAT_KEYS:
        data[key] = data[key].astype(np.float32, copy=False)
    for key in dsrl.FLAG_KEYS:
        data[key] = data[key].astype(bool, copy=False)
    dsrl.episode_bounds(data["terminals"], data["timeouts"])
    return data
