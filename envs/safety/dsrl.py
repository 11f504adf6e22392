"""The DSRL data layer: episode bookkeeping, the grid filter, the HDF5 format and the metrics.

Follows DSRL (Liu et al., "Datasets and Benchmarks for Offline Safe Reinforcement Learning",
DMLR 2024; ``docs/safety.md``). Everything here works on arrays and knows no environment:

- a dataset is a dict of the seven :data:`KEYS`, rows in trajectory order, an episode ending on
  each row where ``terminals or timeouts`` (:func:`episode_bounds`, :func:`trajectory_returns`,
  :func:`select_trajectories`);
- :func:`grid_filter` is DSRL's filter over the (cost return, reward return) plane: bins above
  ``npb`` trajectories are randomly down-sampled to ``npb``, bins with at most ``min_npb`` are
  dropped;
- the file is DSRL's flat HDF5 (one gzip dataset per key at the root), written by
  :func:`write_dataset` and named by :func:`dataset_filename`; :func:`load_dataset` reads it and
  the real DSRL files alike; :func:`write_references` writes the per-task reference sidecar;
- :func:`pre_process_data` is DSRL's ``OfflineEnv.pre_process_data`` (density, outliers, noise,
  inpainting, ε-frontier);
- :func:`normalized_reward`, :func:`normalized_cost` and :func:`is_safe` are DSRL's metrics.

Departures from DSRL, each deliberate:

- grid filter: a return equal to the upper end of the range falls in the last bin (DSRL gives it
  a bin of its own past the grid); a zero-width range puts every trajectory in one bin (DSRL
  divides by zero); the kept indices come back sorted;
- ``pre_process_data``: the outlier candidates are the trajectories with cost return and reward
  return at least half the dataset's largest (DSRL halves the task's reference maxima, which
  this array-level function does not know); at most the candidates present are rewritten; the
  ε-frontier works on the trajectories that remain after inpainting (DSRL indexes the full list
  there); the defaults ``0.0`` and ``()`` mean "off" where DSRL uses ``None``;
- file attributes (``env_id``, ``obs_groups``, the generator ``config``, ``seed``,
  ``omnigym_version``) are an addition; DSRL files carry none and load all the same;
- the writer goes through an in-memory image and an atomic rename, and disables HDF5 timestamps,
  so the same arrays and attributes give the same bytes.
"""

from __future__ import annotations

import io
import json
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

import omnigym
from omnigym.io import atomic_write_bytes, atomic_write_text

KEYS = (
    "observations",
    "next_observations",
    "actions",
    "rewards",
    "costs",
    "terminals",
    "timeouts",
)
FLOAT_KEYS = ("observations", "next_observations", "actions", "rewards", "costs")
FLAG_KEYS = ("terminals", "timeouts")
PER_ROW_KEYS = ("rewards", "costs", "terminals", "timeouts")
JSON_ATTRIBUTES = "json_attributes"
DSRL_SEED = 1234  # DSRL's OfflineEnv seeds its pre-processing Generator with this.
GZIP_LEVEL = 1  # level 4 or byte shuffling cost 1.5-2x the time for ~10 % smaller files


# --- episodes ----------------------------------------------------------------------------------


def _episode_starts_stops(terminals: np.ndarray, timeouts: np.ndarray) -> tuple[np.ndarray, ...]:
    ends = np.asarray(terminals, dtype=bool) | np.asarray(timeouts, dtype=bool)
    if ends.ndim != 1:
        raise ValueError(f"terminals and timeouts must be 1-D, got shape {ends.shape}")
    stops = np.flatnonzero(ends) + 1
    last_stop = int(stops[-1]) if len(stops) else 0
    if last_stop != len(ends):
        raise ValueError(
            f"rows {last_stop}..{len(ends) - 1} form a partial episode: row {len(ends) - 1} "
            "is neither terminal nor timeout"
        )
    starts = np.concatenate(([0], stops))[:-1]
    return starts.astype(np.int64), stops.astype(np.int64)


def episode_bounds(terminals: np.ndarray, timeouts: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` row ranges of the episodes; each ends on a terminal or timeout row.

    Raises ``ValueError`` naming the rows of a trailing episode that never ends.
    """
    starts, stops = _episode_starts_stops(terminals, timeouts)
    return list(zip(starts.tolist(), stops.tolist(), strict=True))


def trajectory_returns(data: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """``(reward_returns, cost_returns, lengths)`` per episode (float64, float64, int64)."""
    starts, stops = _episode_starts_stops(data["terminals"], data["timeouts"])
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    rewards = np.add.reduceat(np.asarray(data["rewards"], dtype=np.float64), starts)
    costs = np.add.reduceat(np.asarray(data["costs"], dtype=np.float64), starts)
    return rewards, costs, stops - starts


def select_trajectories(
    data: Mapping[str, np.ndarray], indices: Sequence[int] | np.ndarray
) -> dict[str, np.ndarray]:
    """The rows of episodes ``indices`` (every key), episodes in their order in ``data``."""
    starts, stops = _episode_starts_stops(data["terminals"], data["timeouts"])
    chosen = np.unique(np.asarray(indices, dtype=np.int64))
    outside = chosen[(chosen < 0) | (chosen >= len(starts))]
    if len(outside):
        raise ValueError(f"indices must lie in [0, {len(starts)}), got {outside.tolist()}")
    lengths = stops[chosen] - starts[chosen]
    first_row_in_output = np.cumsum(lengths) - lengths
    rows = np.arange(int(lengths.sum())) + np.repeat(starts[chosen] - first_row_in_output, lengths)
    return {key: np.asarray(value)[rows] for key, value in data.items()}


# --- grid filter -------------------------------------------------------------------------------


def _bin_index(values: np.ndarray, low: float, high: float, bins: int) -> np.ndarray:
    width = (high - low) / bins
    if width <= 0:
        return np.zeros(len(values), dtype=np.int64)
    return np.minimum(((values - low) // width).astype(np.int64), bins - 1)


def _check_count(name: str, value: int, minimum: int) -> None:
    if not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def grid_filter(
    reward_returns: np.ndarray,
    cost_returns: np.ndarray,
    *,
    rng: np.random.Generator,
    cbins: int = 60,
    rbins: int = 50,
    cost_range: tuple[float, float] | None = None,
    reward_range: tuple[float, float] | None = None,
    npb: int = 10,
    min_npb: int = 1,
) -> np.ndarray:
    """Indices (sorted) of the trajectories DSRL's grid filter keeps.

    The plane is cut to ``cost_range × reward_range`` intersected with the data's own range
    (``None``: the data's range); trajectories outside are dropped. That rectangle is split into
    ``cbins × rbins`` cells; a cell holding more than ``npb`` trajectories keeps ``npb`` drawn
    from ``rng`` without replacement, a cell holding ``min_npb`` or fewer is dropped.
    """
    rewards = np.asarray(reward_returns, dtype=np.float64)
    costs = np.asarray(cost_returns, dtype=np.float64)
    if rewards.shape != costs.shape or rewards.ndim != 1:
        raise ValueError(
            f"reward_returns and cost_returns must be 1-D of one length, got shapes "
            f"{rewards.shape} and {costs.shape}"
        )
    for name, value, minimum in (("cbins", cbins, 1), ("rbins", rbins, 1), ("npb", npb, 1)):
        _check_count(name, value, minimum)
    _check_count("min_npb", min_npb, 0)
    if len(rewards) == 0:
        return np.zeros(0, dtype=np.int64)
    c_lo, c_hi = cost_range if cost_range is not None else (-np.inf, np.inf)
    r_lo, r_hi = reward_range if reward_range is not None else (-np.inf, np.inf)
    c_lo, c_hi = max(c_lo, costs.min()), min(c_hi, costs.max())
    r_lo, r_hi = max(r_lo, rewards.min()), min(r_hi, rewards.max())
    inside = np.flatnonzero(
        (costs >= c_lo) & (costs <= c_hi) & (rewards >= r_lo) & (rewards <= r_hi)
    )
    cell = _bin_index(costs[inside], c_lo, c_hi, cbins) * rbins + _bin_index(
        rewards[inside], r_lo, r_hi, rbins
    )
    # A random order, then stable grouping by cell: the first npb of each cell are a uniform draw.
    shuffled = rng.permutation(len(inside))
    grouped = shuffled[np.argsort(cell[shuffled], kind="stable")]
    cells, first, counts = np.unique(cell[grouped], return_index=True, return_counts=True)
    rank = np.arange(len(grouped)) - np.repeat(first, counts)
    keep = (rank < npb) & (np.repeat(counts, counts) > min_npb)
    return np.sort(inside[grouped[keep]])


# --- the HDF5 file -----------------------------------------------------------------------------


def dataset_filename(env_id: str, cmax: float, n_traj: int) -> str:
    """DSRL's ``<EnvId>-<cmax>-<ntraj>.hdf5`` with ``/`` written ``-``.

    ``dataset_filename("Safe/PointGoal1-v0", 60, 400) == "Safe-PointGoal1-v0-60-400.hdf5"``.
    """
    _check_count("n_traj", n_traj, 1)
    cmax_text = str(int(cmax)) if float(cmax).is_integer() else f"{cmax:g}"
    return f"{env_id.replace('/', '-')}-{cmax_text}-{n_traj}.hdf5"


def _row_counts_checked(data: Mapping[str, Any]) -> int:
    missing = [key for key in KEYS if key not in data]
    if missing:
        raise ValueError(f"dataset is missing keys {missing} (DSRL needs {list(KEYS)})")
    rows = len(data["observations"])
    for key in KEYS:
        if len(data[key]) != rows:
            raise ValueError(
                f"{key} has {len(data[key])} rows but observations has {rows}: every key needs "
                "one row per transition"
            )
    return rows


def _json_default(value: Any) -> Any:
    if isinstance(value, slice) and value.step in (None, 1):
        return [value.start, value.stop]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {value!r} in a JSON attribute")


def write_dataset(
    path: str | os.PathLike, data: Mapping[str, np.ndarray], attrs: Mapping[str, Any]
) -> Path:
    """Write ``data`` as DSRL's flat HDF5 at ``path`` (atomically) and return the path.

    One gzip dataset per key of :data:`KEYS` at the root: float32 ``observations``,
    ``next_observations`` (N×d), ``actions`` (N×k), ``rewards``, ``costs`` (N); bool
    ``terminals``, ``timeouts`` (N). Rows must form whole episodes. ``attrs`` become root
    attributes and must name ``env_id``; dict or list values (``obs_groups`` with slices stored
    as ``[start, stop]``, the generator ``config``) are stored as JSON text and listed in the
    ``json_attributes`` attribute; ``omnigym_version`` is added.
    """
    rows = _row_counts_checked(data)
    _episode_starts_stops(np.asarray(data["terminals"]), np.asarray(data["timeouts"]))
    if "env_id" not in attrs:
        raise ValueError(f"attrs must name env_id, got keys {sorted(attrs)}")
    arrays = {key: np.asarray(data[key], dtype=np.float32) for key in FLOAT_KEYS}
    arrays.update({key: np.asarray(data[key], dtype=bool) for key in FLAG_KEYS})
    for key in PER_ROW_KEYS:
        if arrays[key].shape not in ((rows,), (rows, 1)):
            raise ValueError(f"{key} has shape {arrays[key].shape}, expected ({rows},)")
        arrays[key] = arrays[key].reshape(rows)
    _check_shape("next_observations", arrays["next_observations"], arrays["observations"].shape[1:])
    image = io.BytesIO()
    with h5py.File(image, "w") as file:
        for key in KEYS:
            file.create_dataset(
                key,
                data=arrays[key],
                compression="gzip",
                compression_opts=GZIP_LEVEL,
                track_times=False,
            )
        json_names = []
        for name, value in sorted({**attrs, "omnigym_version": omnigym.__version__}.items()):
            if isinstance(value, Mapping | list | tuple):
                file.attrs[name] = json.dumps(value, sort_keys=True, default=_json_default)
                json_names.append(name)
            else:
                file.attrs[name] = value
        file.attrs[JSON_ATTRIBUTES] = json.dumps(json_names)
    return atomic_write_bytes(path, image.getbuffer())


def load_attributes(path: str | os.PathLike) -> dict[str, Any]:
    """The root attributes of ``path``, JSON ones decoded (``{}`` for a DSRL file)."""
    with h5py.File(path, "r") as file:
        attrs = {name: file.attrs[name] for name in file.attrs}
    json_names = json.loads(attrs.pop(JSON_ATTRIBUTES, "[]"))
    decoded = {}
    for name, value in attrs.items():
        value = value.decode() if isinstance(value, bytes) else value
        value = value.item() if isinstance(value, np.generic) else value
        decoded[name] = json.loads(value) if name in json_names else value
    return decoded


def _check_shape(key: str, array: np.ndarray, expected: tuple[int, ...] | None) -> None:
    if expected is not None and tuple(array.shape[1:]) != tuple(expected):
        raise ValueError(
            f"{key} has per-row shape {tuple(array.shape[1:])} (array {array.shape}), "
            f"expected {tuple(expected)}"
        )


def load_dataset(
    path: str | os.PathLike,
    observation_shape: tuple[int, ...] | None = None,
    action_shape: tuple[int, ...] | None = None,
    *,
    env: Any = None,
) -> dict[str, np.ndarray]:
    """The seven :data:`KEYS` of a DSRL-format file as arrays, checked.

    Shapes to check come from ``observation_shape``/``action_shape`` or from ``env``'s
    ``observation_space``/``action_space`` (not both). Raises ``ValueError`` for missing keys
    (listing them), unequal row counts (naming the key and both counts) and wrong observation
    or action shapes (naming the key, the shape found and the shape expected). ``(N, 1)``
    rewards, costs, terminals and timeouts are squeezed; float keys come back float32, flags
    bool. Other datasets in the file (DSRL's ``infos/...``) are ignored.
    """
    if env is not None:
        if observation_shape is not None or action_shape is not None:
            raise ValueError("pass env or observation_shape/action_shape, not both")
        observation_shape = env.observation_space.shape
        action_shape = env.action_space.shape
    with h5py.File(path, "r") as file:
        missing = [key for key in KEYS if not isinstance(file.get(key), h5py.Dataset)]
        if missing:
            raise ValueError(f"{os.fspath(path)} is missing keys {missing}")
        shapes = {key: file[key].shape for key in KEYS}
        rows = shapes["observations"][0]
        for key in KEYS:
            if shapes[key][0] != rows:
                raise ValueError(
                    f"{key} has {shapes[key][0]} rows but observations has {rows} "
                    f"in {os.fspath(path)}"
                )
        data = {key: file[key][()] for key in KEYS}
    for key in PER_ROW_KEYS:
        if data[key].shape == (rows, 1):
            data[key] = data[key][:, 0]
        if data[key].shape != (rows,):
            raise ValueError(
                f"{key} has shape {data[key].shape}, expected ({rows},) or ({rows}, 1)"
            )
    _check_shape("observations", data["observations"], observation_shape)
    _check_shape("next_observations", data["next_observations"], data["observations"].shape[1:])
    _check_shape("actions", data["actions"], action_shape)
    for key in FLOAT_KEYS:
        data[key] = data[key].astype(np.float32, copy=False)
    for key in FLAG_KEYS:
        data[key] = data[key].astype(bool, copy=False)
    return data


def write_references(
    path: str | os.PathLike,
    data_or_returns: Mapping[str, np.ndarray] | tuple[np.ndarray, ...],
    cmax: float,
    thresholds: Sequence[float],
    strict_threshold: float,
    density_cfg: Mapping[str, Mapping[str, int]],
    max_episode_steps: int,
) -> dict[str, Any]:
    """Write DSRL's per-task references as JSON at ``path`` (atomically) and return them.

    ``data_or_returns`` is a dataset or its ``(reward_returns, cost_returns[, lengths])``;
    ``max_reward``/``min_reward`` and ``min_cost`` are its episode-return extremes,
    ``max_cost`` is ``cmax``. ``density_cfg`` maps a density (``"0.5"``) to its grid-filter
    settings ``{"cbins", "rbins", "max_npb", "min_npb"}``, as DSRL's ``DENSITY_CFG``.
    """
    if isinstance(data_or_returns, Mapping):
        reward_returns, cost_returns, _ = trajectory_returns(data_or_returns)
    else:
        reward_returns, cost_returns = (np.asarray(a, np.float64) for a in data_or_returns[:2])
    if len(reward_returns) == 0:
        raise ValueError("data_or_returns holds no episode")
    for threshold in (*thresholds, strict_threshold):
        _check_target_cost(threshold)
    _check_count("max_episode_steps", max_episode_steps, 1)
    references = {
        "max_reward": float(np.max(reward_returns)),
        "min_reward": float(np.min(reward_returns)),
        "max_cost": float(cmax),
        "min_cost": float(np.min(cost_returns)),
        "max_episode_steps": int(max_episode_steps),
        "thresholds": [float(t) for t in thresholds],
        "strict_threshold": float(strict_threshold),
        "density_cfg": {str(k): dict(v) for k, v in density_cfg.items()},
    }
    atomic_write_text(path, json.dumps(references, indent=2, sort_keys=True) + "\n")
    return references


# --- pre-processing ----------------------------------------------------------------------------


def _density_settings(density: float, density_cfg: Mapping[Any, Mapping[str, int]] | None):
    for key, settings in (density_cfg or {}).items():
        if math.isclose(float(key), density):
            return settings
    raise ValueError(
        f"density_cfg has no entry for density={density} "
        f"(entries: {sorted(map(str, density_cfg or {}))})"
    )


def _check_fraction(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")


def _rewrite_outliers(
    data: dict[str, np.ndarray],
    reward_returns: np.ndarray,
    cost_returns: np.ndarray,
    starts: np.ndarray,
    stops: np.ndarray,
    share: float,
    target_cost: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """DSRL's outliers: high-cost, high-reward episodes made cheap (below κ) and 1.5× richer."""
    candidates = np.flatnonzero(
        (cost_returns >= cost_returns.max() / 2) & (reward_returns >= reward_returns.max() / 2)
    )
    wanted = max(int(len(starts) * share), 1)
    chosen = rng.choice(candidates, size=min(wanted, len(candidates)), replace=False)
    new_costs = rng.integers(0, max(int(target_cost), 1), size=len(chosen))
    data["costs"] = data["costs"].copy()
    data["rewards"] = data["rewards"].copy()
    for episode, cost in zip(chosen, new_costs, strict=True):
        start, stop = starts[episode], stops[episode]
        cost = min(int(cost), stop - start)
        data["costs"][start:stop] = 0.0
        data["costs"][start + rng.choice(stop - start, size=cost, replace=False)] = 1.0
        data["rewards"][start:stop] *= 1.5
        cost_returns[episode] = cost
        reward_returns[episode] *= 1.5
    return chosen


def pre_process_data(
    data: Mapping[str, np.ndarray],
    density: float = 1.0,
    density_cfg: Mapping[Any, Mapping[str, int]] | None = None,
    outliers_percent: float = 0.0,
    noise_scale: float = 0.0,
    inpaint_ranges: Sequence[tuple[float, float, float, float]] = (),
    epsilon: float | None = None,
    target_cost: float | None = None,
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """DSRL's ``pre_process_data``: a harder or easier copy of ``data``, in this order.

    - ``density < 1``: :func:`grid_filter` over the data's range with
      ``density_cfg[density]`` (``cbins``, ``rbins``, ``max_npb``, ``min_npb``);
    - ``outliers_percent``: that share of the episodes (at least one) drawn among those with
      cost and reward returns at least half the largest ones gets a new cost return drawn in
      ``[0, κ)`` (that many random steps cost 1, the others 0) and its rewards × 1.5;
    - ``inpaint_ranges``: episodes inside any rectangle ``(c_lo, c_hi, r_lo, r_hi)`` are removed,
      the bounds being fractions of the original cost and reward ranges (outliers survive);
    - ``epsilon > 0``: safe episodes (cost return ≤ κ) within ``epsilon`` of the best safe
      reward are removed; ``epsilon < 0``: unsafe ones within ``|epsilon|`` of the best unsafe
      reward are removed;
    - ``noise_scale``: Gaussian noise of std ``noise_scale × std(observations)`` added to the
      observations (and likewise to the next observations).

    Outliers and ``epsilon`` need ``target_cost`` (κ). Random draws come from ``rng`` (default
    ``default_rng(1234)``, DSRL's seed).
    """
    rng = np.random.default_rng(DSRL_SEED) if rng is None else rng
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must lie in (0, 1], got {density}")
    _check_fraction("outliers_percent", outliers_percent)
    if noise_scale < 0:
        raise ValueError(f"noise_scale must be >= 0, got {noise_scale}")
    if target_cost is not None:
        _check_target_cost(target_cost)
    elif outliers_percent > 0 or epsilon is not None:
        raise ValueError("target_cost is needed for outliers_percent and epsilon")
    for rectangle in inpaint_ranges:
        if len(rectangle) != 4 or rectangle[0] > rectangle[1] or rectangle[2] > rectangle[3]:
            raise ValueError(
                f"inpaint_ranges entries are (c_lo, c_hi, r_lo, r_hi) with lo <= hi, "
                f"got {rectangle}"
            )
        for value in rectangle:
            _check_fraction("inpaint_ranges bounds", value)

    reward_returns, cost_returns, _ = trajectory_returns(data)
    if len(reward_returns) == 0:
        raise ValueError("data holds no episode")
    c_min, c_max = cost_returns.min(), cost_returns.max()
    r_min, r_max = reward_returns.min(), reward_returns.max()
    if density < 1.0:
        settings = _density_settings(density, density_cfg)
        kept = grid_filter(
            reward_returns,
            cost_returns,
            rng=rng,
            cbins=settings["cbins"],
            rbins=settings["rbins"],
            npb=settings["max_npb"],
            min_npb=settings["min_npb"],
        )
        data = select_trajectories(data, kept)
        reward_returns, cost_returns = reward_returns[kept], cost_returns[kept]
    data = {key: np.asarray(value) for key, value in data.items()}
    starts, stops = _episode_starts_stops(data["terminals"], data["timeouts"])

    outliers = np.zeros(0, dtype=np.int64)
    if outliers_percent > 0:
        outliers = _rewrite_outliers(
            data, reward_returns, cost_returns, starts, stops, outliers_percent, target_cost, rng
        )
    keep = np.ones(len(starts), dtype=bool)
    for c_lo, c_hi, r_lo, r_hi in inpaint_ranges:
        keep &= ~(
            (cost_returns >= c_min + (c_max - c_min) * c_lo)
            & (cost_returns <= c_min + (c_max - c_min) * c_hi)
            & (reward_returns >= r_min + (r_max - r_min) * r_lo)
            & (reward_returns <= r_min + (r_max - r_min) * r_hi)
        )
    keep[outliers] = True
    if epsilon is not None and epsilon != 0:
        safe = cost_returns <= target_cost
        side = keep & (safe if epsilon > 0 else ~safe)
        if side.any():
            best = reward_returns[side].max()
            keep &= ~(side & (reward_returns >= best - abs(epsilon)))
    data = select_trajectories(data, np.flatnonzero(keep))

    if noise_scale > 0:
        for key in ("observations", "next_observations"):
            std = float(np.std(data[key]))
            noise = rng.normal(0.0, noise_scale * std, size=data[key].shape)
            data[key] = (data[key] + noise).astype(data[key].dtype)
    return data


# --- metrics -----------------------------------------------------------------------------------


def _check_target_cost(target_cost: float) -> None:
    if not isinstance(target_cost, numbers.Real) or not target_cost >= 0:
        raise ValueError(f"target_cost must be a number >= 0, got {target_cost!r}")


def _scalar_or_array(value: np.ndarray) -> float | np.ndarray:
    return float(value) if value.ndim == 0 else value


def normalized_reward(reward_return: Any, r_min: float, r_max: float) -> float | np.ndarray:
    """DSRL's normalized reward ``(R − R_min) / (R_max − R_min)`` (scalar or array)."""
    if r_max == r_min:
        raise ValueError(f"r_max must differ from r_min, both are {r_min}")
    return _scalar_or_array((np.asarray(reward_return, dtype=np.float64) - r_min) / (r_max - r_min))


def normalized_cost(cost_return: Any, target_cost: float) -> float | np.ndarray:
    """DSRL's normalized cost ``(C + ε) / (κ + ε)``, ``ε = 1`` when ``κ = 0`` and 0 otherwise."""
    _check_target_cost(target_cost)
    epsilon = 1.0 if target_cost == 0 else 0.0
    cost = np.asarray(cost_return, dtype=np.float64)
    return _scalar_or_array((cost + epsilon) / (target_cost + epsilon))


def is_safe(normalized_cost: float) -> bool:
    """DSRL's safety criterion: normalized cost at most 1."""
    return bool(normalized_cost <= 1.0)
