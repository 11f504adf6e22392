"""The DSRL data layer: episodes, grid filter, HDF5 writer and loader, pre-processing, metrics."""

import json
import time

import h5py
import numpy as np
import pytest
from gymnasium import spaces

import omnigym
from omnigym.envs.safety import dsrl

OBS_DIM, ACT_DIM = 4, 2


def make_dataset(rng, reward_returns, cost_returns, length=5):
    """Episodes of ``length`` rows whose returns sit on their last row; random observations."""
    n_episodes = len(reward_returns)
    rows = n_episodes * length
    last = np.arange(length - 1, rows, length)
    rewards = np.zeros(rows, dtype=np.float32)
    costs = np.zeros(rows, dtype=np.float32)
    rewards[last] = reward_returns
    costs[last] = cost_returns
    terminals = np.zeros(rows, dtype=bool)
    timeouts = np.zeros(rows, dtype=bool)
    terminals[last[::2]] = True
    timeouts[last[1::2]] = True
    observations = rng.normal(size=(rows, OBS_DIM)).astype(np.float32)
    return {
        "observations": observations,
        "next_observations": np.roll(observations, -1, axis=0),
        "actions": rng.uniform(-1, 1, size=(rows, ACT_DIM)).astype(np.float32),
        "rewards": rewards,
        "costs": costs,
        "terminals": terminals,
        "timeouts": timeouts,
    }


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture
def dataset(rng):
    return make_dataset(rng, [1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 10.0, 20.0])


ATTRS = {
    "env_id": "Safe/PointGoal1-v0",
    "seed": 3,
    "obs_groups": {"robot": slice(0, 2), "reward": slice(2, 3), "cost": slice(3, 4)},
    "config": {"policy": "scripted", "betas": [0.0, 0.5, 1.0]},
}


def write_raw(path, arrays):
    with h5py.File(path, "w") as file:
        for key, value in arrays.items():
            file.create_dataset(key, data=value)
    return path


# --- episodes ----------------------------------------------------------------------------------


def test_episodes_end_on_terminal_or_timeout_rows():
    terminals = np.array([0, 1, 0, 0, 0, 1], dtype=bool)
    timeouts = np.array([0, 0, 0, 1, 0, 0], dtype=bool)
    assert dsrl.episode_bounds(terminals, timeouts) == [(0, 2), (2, 4), (4, 6)]


def test_trailing_partial_episode_is_an_error_naming_its_rows():
    terminals = np.array([0, 1, 0, 0], dtype=bool)
    with pytest.raises(ValueError, match=r"rows 2\.\.3 .* row 3 is neither terminal nor timeout"):
        dsrl.episode_bounds(terminals, np.zeros(4, dtype=bool))


def test_no_rows_make_no_episodes():
    assert dsrl.episode_bounds(np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)) == []


def test_trajectory_returns_sum_rewards_and_costs_per_episode():
    data = {
        "rewards": np.array([1.0, 2.0, 0.5, -1.0, 4.0], dtype=np.float32),
        "costs": np.array([0.0, 1.0, 1.0, 1.0, 0.0], dtype=np.float32),
        "terminals": np.array([0, 1, 0, 0, 1], dtype=bool),
        "timeouts": np.zeros(5, dtype=bool),
    }
    rewards, costs, lengths = dsrl.trajectory_returns(data)
    np.testing.assert_array_equal(rewards, [3.0, 3.5])
    np.testing.assert_array_equal(costs, [1.0, 2.0])
    np.testing.assert_array_equal(lengths, [2, 3])


def test_select_trajectories_keeps_dataset_order_of_the_chosen_episodes(dataset):
    chosen = dsrl.select_trajectories(dataset, [3, 1])
    np.testing.assert_array_equal(
        chosen["observations"],
        np.concatenate([dataset["observations"][5:10], dataset["observations"][15:20]]),
    )
    rewards, costs, lengths = dsrl.trajectory_returns(chosen)
    np.testing.assert_array_equal(rewards, [2.0, 4.0])
    np.testing.assert_array_equal(costs, [5.0, 20.0])
    assert set(chosen) == set(dsrl.KEYS)


def test_select_trajectories_names_indices_past_the_last_episode(dataset):
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 4\), got \[4, 9\]"):
        dsrl.select_trajectories(dataset, [0, 4, 9])


# --- grid filter -------------------------------------------------------------------------------

# 2 × 2 cells over [0, 10]²: cost cell (0, 0) holds 5 trajectories, (1, 0) holds 3, (1, 1) 2
# (one on the upper corner, which belongs to the last cell), (0, 1) a single one.
GRID_COSTS = np.array([0, 1, 2, 3, 4, 6, 7, 8, 7, 10, 2], dtype=float)
GRID_REWARDS = np.array([0, 1, 2, 1, 4, 2, 3, 1, 7, 10, 8], dtype=float)
CELL_00, CELL_10, CELL_11, CELL_01 = {0, 1, 2, 3, 4}, {5, 6, 7}, {8, 9}, {10}


def grid(rng, **kwargs):
    settings = {"cbins": 2, "rbins": 2, "npb": 3, "min_npb": 1, **kwargs}
    return set(dsrl.grid_filter(GRID_REWARDS, GRID_COSTS, rng=rng, **settings).tolist())


def test_grid_filter_downsamples_full_cells_keeps_middling_ones_and_drops_sparse_ones(rng):
    kept = grid(rng)
    assert len(kept & CELL_00) == 3
    assert kept & CELL_10 == CELL_10
    assert kept & CELL_11 == CELL_11
    assert not kept & CELL_01
    assert len(kept) == 8


def test_grid_filter_min_npb_zero_keeps_single_trajectory_cells(rng):
    assert grid(rng, min_npb=0) >= CELL_01


def test_grid_filter_drops_trajectories_outside_the_ranges(rng):
    # Cost range [0, 6]: cells are 3 wide; (7, 3), (8, 1), (7, 7), (10, 10) fall outside.
    kept = grid(rng, npb=10, cost_range=(0.0, 6.0))
    assert kept == {0, 1, 2, 3, 4, 5}


def test_grid_filter_downsampling_is_a_seeded_draw():
    first = grid(np.random.default_rng(0)) & CELL_00
    assert first == grid(np.random.default_rng(0)) & CELL_00
    drawn = set().union(*(grid(np.random.default_rng(seed)) & CELL_00 for seed in range(30)))
    assert drawn == CELL_00


def test_grid_filter_rejects_bad_settings(rng):
    with pytest.raises(ValueError, match="npb must be an integer >= 1, got 0"):
        dsrl.grid_filter(GRID_REWARDS, GRID_COSTS, rng=rng, npb=0)
    with pytest.raises(ValueError, match="shapes"):
        dsrl.grid_filter(GRID_REWARDS, GRID_COSTS[:3], rng=rng)


# --- writer and loader -------------------------------------------------------------------------


def test_dataset_filename_follows_dsrl_pattern():
    assert dsrl.dataset_filename("Safe/PointGoal1-v0", 60, 400) == "Safe-PointGoal1-v0-60-400.hdf5"
    assert dsrl.dataset_filename("Safe/CarRun-v0", 40.0, 7) == "Safe-CarRun-v0-40-7.hdf5"
    assert dsrl.dataset_filename("Safe/CarRun-v0", 12.5, 7) == "Safe-CarRun-v0-12.5-7.hdf5"


def test_writer_then_loader_gives_identical_arrays_and_attributes(tmp_path, dataset):
    path = dsrl.write_dataset(tmp_path / "d.hdf5", dataset, ATTRS)
    loaded = dsrl.load_dataset(path, (OBS_DIM,), (ACT_DIM,))
    assert list(loaded) == list(dsrl.KEYS)
    for key in dsrl.KEYS:
        np.testing.assert_array_equal(loaded[key], dataset[key])
        assert loaded[key].dtype == dataset[key].dtype
    assert dsrl.load_attributes(path) == {
        "env_id": "Safe/PointGoal1-v0",
        "seed": 3,
        "obs_groups": {"robot": [0, 2], "reward": [2, 3], "cost": [3, 4]},
        "config": {"policy": "scripted", "betas": [0.0, 0.5, 1.0]},
        "omnigym_version": omnigym.__version__,
    }


def test_written_file_holds_exactly_the_seven_keys_with_dsrl_dtypes(tmp_path, dataset):
    path = dsrl.write_dataset(tmp_path / "d.hdf5", dataset, ATTRS)
    with h5py.File(path, "r") as file:
        assert sorted(file) == sorted(dsrl.KEYS)
        assert {key: file[key].dtype.name for key in file} == {
            "observations": "float32",
            "next_observations": "float32",
            "actions": "float32",
            "rewards": "float32",
            "costs": "float32",
            "terminals": "bool",
            "timeouts": "bool",
        }
        assert all(file[key].compression == "gzip" for key in file)
    assert [p.name for p in tmp_path.iterdir()] == ["d.hdf5"]


def test_writing_the_same_data_twice_gives_identical_bytes(tmp_path, dataset):
    first = dsrl.write_dataset(tmp_path / "a.hdf5", dataset, ATTRS).read_bytes()
    # HDF5 timestamps have one-second resolution; a second later they would differ if stored.
    time.sleep(1.1)
    assert dsrl.write_dataset(tmp_path / "b.hdf5", dataset, ATTRS).read_bytes() == first


def test_writer_rejects_a_partial_episode_and_a_missing_env_id(tmp_path, dataset):
    dataset["timeouts"][-1] = False
    with pytest.raises(ValueError, match="partial episode"):
        dsrl.write_dataset(tmp_path / "d.hdf5", dataset, ATTRS)
    dataset["timeouts"][-1] = True
    with pytest.raises(ValueError, match="env_id"):
        dsrl.write_dataset(tmp_path / "d.hdf5", dataset, {"seed": 0})
    assert not list(tmp_path.iterdir())


def test_loader_lists_the_missing_keys(tmp_path, dataset):
    arrays = {k: v for k, v in dataset.items() if k not in ("costs", "timeouts")}
    path = write_raw(tmp_path / "d.hdf5", arrays)
    with pytest.raises(ValueError, match=r"missing keys \['costs', 'timeouts'\]"):
        dsrl.load_dataset(path)


def test_loader_names_the_key_and_both_lengths_when_row_counts_differ(tmp_path, dataset):
    path = write_raw(tmp_path / "d.hdf5", {**dataset, "actions": dataset["actions"][:-2]})
    with pytest.raises(ValueError, match="actions has 18 rows but observations has 20"):
        dsrl.load_dataset(path)


def test_loader_names_key_found_and_expected_shapes(tmp_path, dataset):
    path = dsrl.write_dataset(tmp_path / "d.hdf5", dataset, ATTRS)
    with pytest.raises(ValueError, match=r"observations has per-row shape \(4,\).*expected \(5,\)"):
        dsrl.load_dataset(path, (5,), (ACT_DIM,))
    with pytest.raises(ValueError, match=r"actions has per-row shape \(2,\).*expected \(1,\)"):
        dsrl.load_dataset(path, (OBS_DIM,), (1,))


def test_loader_takes_the_shapes_from_an_env(tmp_path, dataset):
    class Env:
        observation_space = spaces.Box(-np.inf, np.inf, (OBS_DIM + 1,), np.float32)
        action_space = spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)

    path = dsrl.write_dataset(tmp_path / "d.hdf5", dataset, ATTRS)
    with pytest.raises(ValueError, match=r"\(4,\).*expected \(5,\)"):
        dsrl.load_dataset(path, env=Env())
    Env.observation_space = spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
    assert dsrl.load_dataset(path, env=Env())["observations"].shape == (20, OBS_DIM)


def test_dsrl_format_file_with_column_vectors_and_extra_keys_loads(tmp_path, dataset):
    raw = {key: dataset[key].astype(np.float64) for key in dsrl.FLOAT_KEYS}
    for key in ("rewards", "costs", "terminals", "timeouts"):
        raw[key] = dataset[key].astype(np.float64)[:, None]
    raw["infos/cost"] = dataset["costs"]
    path = write_raw(tmp_path / "SafetyPointGoal1Gymnasium-v0-100-4.hdf5", raw)
    loaded = dsrl.load_dataset(path, (OBS_DIM,), (ACT_DIM,))
    assert set(loaded) == set(dsrl.KEYS)
    assert loaded["rewards"].shape == (20,)
    assert loaded["terminals"].dtype == bool
    assert loaded["observations"].dtype == np.float32
    np.testing.assert_array_equal(loaded["timeouts"], dataset["timeouts"])
    np.testing.assert_array_equal(loaded["costs"], dataset["costs"])
    assert dsrl.load_attributes(path) == {}


def test_references_sidecar_holds_dsrl_reference_values(tmp_path, dataset):
    density_cfg = {"0.5": {"cbins": 10, "rbins": 50, "max_npb": 5, "min_npb": 2}}
    returned = dsrl.write_references(
        tmp_path / "refs.json", dataset, 60, [6, 12, 24], 3, density_cfg, 300
    )
    written = json.loads((tmp_path / "refs.json").read_text())
    assert (
        written
        == returned
        == {
            "max_reward": 4.0,
            "min_reward": 1.0,
            "max_cost": 60.0,
            "min_cost": 0.0,
            "max_episode_steps": 300,
            "thresholds": [6.0, 12.0, 24.0],
            "strict_threshold": 3.0,
            "density_cfg": density_cfg,
        }
    )
    from_returns = dsrl.write_references(
        tmp_path / "r2.json", (np.array([2.0, -1.0]), np.array([3.0, 1.0])), 10, [1], 1, {}, 5
    )
    assert (from_returns["max_reward"], from_returns["min_reward"]) == (2.0, -1.0)
    assert from_returns["min_cost"] == 1.0
    with pytest.raises(ValueError, match="target_cost"):
        dsrl.write_references(tmp_path / "r3.json", dataset, 60, [-1], 3, {}, 300)


# --- pre-processing ----------------------------------------------------------------------------

PRE_REWARDS = np.array([1.0, 2.0, 8.0, 9.0, 10.0, 3.0, 5.0, 6.0])
PRE_COSTS = np.array([0.0, 2.0, 8.0, 9.0, 10.0, 10.0, 4.0, 1.0])


@pytest.fixture
def spread(rng):
    return make_dataset(rng, PRE_REWARDS, PRE_COSTS)


def returns_of(data):
    rewards, costs, _ = dsrl.trajectory_returns(data)
    return rewards.tolist(), costs.tolist()


def test_default_pre_processing_changes_nothing(spread):
    processed = dsrl.pre_process_data(spread)
    for key in dsrl.KEYS:
        np.testing.assert_array_equal(processed[key], spread[key])


def test_density_filter_uses_the_density_cfg_of_that_density(spread):
    # One trajectory per occupied 2 × 2 cell over cost [0, 10] × reward [1, 10].
    cfg = {"0.5": {"cbins": 2, "rbins": 2, "max_npb": 1, "min_npb": 0}}
    processed = dsrl.pre_process_data(spread, density=0.5, density_cfg=cfg)
    rewards, costs = returns_of(processed)
    cells = {(c >= 5, r >= 5.5) for r, c in zip(rewards, costs, strict=True)}
    assert len(rewards) == 4 and len(cells) == 4
    with pytest.raises(ValueError, match="density_cfg has no entry for density=0.75"):
        dsrl.pre_process_data(spread, density=0.75, density_cfg=cfg)


def test_outliers_make_high_cost_high_reward_episodes_cheap_and_richer(spread):
    # Candidates (cost >= 5 and reward >= 5): episodes 2, 3, 4; 3/8 of 8 episodes is 3.
    processed = dsrl.pre_process_data(spread, outliers_percent=0.375, target_cost=4)
    rewards, costs = returns_of(processed)
    assert rewards == [1.0, 2.0, 12.0, 13.5, 15.0, 3.0, 5.0, 6.0]
    assert all(c < 4 for c in costs[2:5])
    assert costs[:2] + costs[5:] == [0.0, 2.0, 10.0, 4.0, 1.0]
    assert set(np.unique(processed["costs"][10:25]).tolist()) <= {0.0, 1.0}
    np.testing.assert_array_equal(spread["costs"][10:25].reshape(3, 5)[:, -1], [8.0, 9.0, 10.0])


def test_inpainting_removes_the_rectangle_as_fractions_of_the_ranges(spread):
    # Upper-right quarter: cost >= 5 and reward >= 5.5 (ranges [0, 10] and [1, 10]).
    processed = dsrl.pre_process_data(spread, inpaint_ranges=[(0.5, 1.0, 0.5, 1.0)])
    assert returns_of(processed) == ([1.0, 2.0, 3.0, 5.0, 6.0], [0.0, 2.0, 10.0, 4.0, 1.0])


def test_positive_epsilon_removes_the_best_safe_episodes(spread):
    # Safe at κ = 4: rewards 1, 2, 5, 6; within 3.5 of the best (6): 5 and 6.
    processed = dsrl.pre_process_data(spread, epsilon=3.5, target_cost=4)
    assert returns_of(processed)[0] == [1.0, 2.0, 8.0, 9.0, 10.0, 3.0]


def test_negative_epsilon_removes_the_best_unsafe_episodes(spread):
    # Unsafe at κ = 4: rewards 8, 9, 10, 3; within 1.5 of the best (10): 9 and 10.
    processed = dsrl.pre_process_data(spread, epsilon=-1.5, target_cost=4)
    assert returns_of(processed)[0] == [1.0, 2.0, 8.0, 3.0, 5.0, 6.0]


def test_noise_perturbs_observations_only_with_the_scaled_std(rng):
    data = make_dataset(rng, np.arange(200.0), np.zeros(200), length=10)
    processed = dsrl.pre_process_data(data, noise_scale=0.1, rng=np.random.default_rng(0))
    for key in ("observations", "next_observations"):
        noise = processed[key] - data[key]
        assert processed[key].dtype == np.float32
        assert np.std(noise) == pytest.approx(0.1 * np.std(data[key]), rel=0.05)
    for key in ("actions", "rewards", "costs", "terminals", "timeouts"):
        np.testing.assert_array_equal(processed[key], data[key])


def test_pre_processing_leaves_its_input_untouched(spread):
    before = {key: value.copy() for key, value in spread.items()}
    dsrl.pre_process_data(spread, outliers_percent=0.5, noise_scale=1.0, target_cost=4)
    for key in dsrl.KEYS:
        np.testing.assert_array_equal(spread[key], before[key])


def test_outliers_and_epsilon_need_a_target_cost(spread):
    with pytest.raises(ValueError, match="target_cost"):
        dsrl.pre_process_data(spread, outliers_percent=0.1)
    with pytest.raises(ValueError, match="target_cost"):
        dsrl.pre_process_data(spread, epsilon=1.0)
    with pytest.raises(ValueError, match="target_cost"):
        dsrl.pre_process_data(spread, epsilon=1.0, target_cost=-2)


# --- metrics -----------------------------------------------------------------------------------


def test_normalized_reward_maps_reference_returns_to_zero_and_one():
    assert dsrl.normalized_reward(15.0, 10.0, 20.0) == 0.5
    np.testing.assert_allclose(
        dsrl.normalized_reward(np.array([10.0, 20.0, 25.0]), 10, 20), [0, 1, 1.5]
    )


def test_normalized_cost_divides_by_the_budget():
    assert dsrl.normalized_cost(10.0, 20.0) == 0.5
    assert dsrl.normalized_cost(30.0, 20.0) == 1.5


def test_normalized_cost_at_zero_budget_adds_one_to_both_sides():
    assert dsrl.normalized_cost(0.0, 0.0) == 1.0
    assert dsrl.normalized_cost(3.0, 0.0) == 4.0


def test_negative_budget_is_an_error_naming_target_cost():
    with pytest.raises(ValueError, match="target_cost must be a number >= 0, got -1"):
        dsrl.normalized_cost(1.0, -1)


def test_safe_means_normalized_cost_at_most_one():
    assert dsrl.is_safe(1.0) is True
    assert dsrl.is_safe(dsrl.normalized_cost(0.0, 0.0)) is True
    assert dsrl.is_safe(dsrl.normalized_cost(1.0, 0.0)) is False
