"""Minari export: a Safe dataset round-trips through Minari with identical arrays, its costs in
``infos["cost"]`` and its references and ``obs_groups`` in the metadata. Skipped where the optional
``minari`` package is absent, except the missing-package message."""

import json
import sys

import h5py
import numpy as np
import pytest

import omnigym
from omnigym.envs.safety import datasets, dsrl
from omnigym.envs.safety.minari_export import export_minari, load_minari

DATASET_ID = "omnigym/safe-pointgoal1/test-v0"


@pytest.fixture
def minari_home(tmp_path, monkeypatch):
    """Minari, storing its datasets under ``tmp_path``."""
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return minari


@pytest.fixture(scope="module")
def generated_file(tmp_path_factory):
    """Six scripted Safe/PointGoal1-v0 trajectories, reckless and cautious, with a sidecar."""
    generated = datasets.generate(
        "Safe/PointGoal1-v0", n_traj=6, seed=0, grid=[(1.0, 0.3), (0.0, 0.0)]
    )
    return datasets.write_generated(generated, tmp_path_factory.mktemp("data"))


def test_round_trip_gives_identical_arrays_and_dtypes(minari_home, generated_file):
    original = dsrl.load_dataset(generated_file)
    assert original["costs"].sum() > 0  # the cost channel is exercised
    export_minari(generated_file, DATASET_ID)
    reloaded = load_minari(DATASET_ID)
    assert sorted(reloaded) == sorted(dsrl.KEYS)
    for key in dsrl.KEYS:
        assert reloaded[key].dtype == original[key].dtype, key
        np.testing.assert_array_equal(reloaded[key], original[key], err_msg=key)


def test_each_episode_carries_its_step_costs_in_infos(minari_home, generated_file):
    dataset = export_minari(generated_file, DATASET_ID)
    original = dsrl.load_dataset(generated_file)
    _, cost_returns, lengths = dsrl.trajectory_returns(original)
    episodes = list(dataset.iterate_episodes())
    assert len(episodes) == dataset.total_episodes == len(lengths) == 6
    assert dataset.total_steps == len(original["rewards"])
    for episode, cost_return, length in zip(episodes, cost_returns, lengths, strict=True):
        costs = episode.infos["cost"]
        assert len(episode.observations) == length + 1 and len(costs) == length + 1
        assert costs[0] == 0.0 and costs.sum() == pytest.approx(cost_return)
    first = episodes[0]
    np.testing.assert_array_equal(first.observations[-1], original["next_observations"][299])


def test_metadata_holds_references_obs_groups_and_the_env(minari_home, generated_file):
    export_minari(generated_file, DATASET_ID, author="tester")
    dataset = minari_home.load_dataset(DATASET_ID)
    metadata = dataset.storage.metadata
    sidecar = json.loads(datasets.sidecar_path(generated_file).read_text())
    assert metadata["references"] == sidecar
    assert metadata["references"]["thresholds"] == [6.0, 12.0, 24.0]
    env = omnigym.make("Safe/PointGoal1-v0")
    groups = env.unwrapped.obs_groups
    assert metadata["obs_groups"] == {k: [s.start, s.stop] for k, s in groups.items()}
    assert metadata["dsrl_attributes"]["env_id"] == "Safe/PointGoal1-v0"
    assert metadata["algorithm_name"] == "scripted" and metadata["author"] == {"tester"}
    assert dataset.spec.env_spec.id == "Safe/PointGoal1-v0"
    assert dataset.observation_space == env.observation_space
    assert dataset.action_space == env.action_space


def test_plain_dsrl_file_without_attributes_or_sidecar_round_trips(minari_home, tmp_path):
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(7, 3)).astype(np.float32)
    data = {
        "observations": observations[:6].copy(),
        "next_observations": observations[1:].copy(),
        "actions": rng.uniform(-1, 1, (6, 2)).astype(np.float32),
        "rewards": rng.normal(size=(6, 1)).astype(np.float32),  # DSRL's (N, 1) layout
        "costs": np.array([0, 1, 0, 0, 1, 1], np.float32),
        "terminals": np.array([0, 0, 1, 0, 0, 0], bool),
        "timeouts": np.array([0, 0, 0, 0, 0, 1], bool),
    }
    data["next_observations"][2] = 9.0  # the terminal row's successor is not the next start
    path = tmp_path / "dsrl.hdf5"
    with h5py.File(path, "w") as file:
        for key, value in data.items():
            file.create_dataset(key, data=value)
    dataset = export_minari(path, "plain-v0")
    metadata = dataset.storage.metadata
    assert metadata["references"] is None and metadata["obs_groups"] is None
    assert dataset.spec.env_spec is None and dataset.observation_space.shape == (3,)
    reloaded = load_minari("plain-v0")
    expected = dsrl.load_dataset(path)
    for key in dsrl.KEYS:
        np.testing.assert_array_equal(reloaded[key], expected[key], err_msg=key)
    assert reloaded["rewards"].shape == (6,)


def test_next_observation_gap_inside_an_episode_is_refused(minari_home, generated_file, tmp_path):
    data = dsrl.load_dataset(generated_file)
    data["next_observations"][5] += 1.0
    path = dsrl.write_dataset(tmp_path / "gap.hdf5", data, {"env_id": "Safe/PointGoal1-v0"})
    with pytest.raises(ValueError, match=r"next_observations\[5\] differs from observations\[6\]"):
        export_minari(path, "gap-v0")


def test_dataset_id_without_version_is_refused(minari_home, generated_file):
    with pytest.raises(ValueError, match="NAMESPACE/NAME-v<version>"):
        export_minari(generated_file, "omnigym/safe-pointgoal1/scripted")


def test_existing_dataset_is_not_overwritten(minari_home, generated_file):
    export_minari(generated_file, DATASET_ID)
    with pytest.raises(ValueError, match="already exists"):
        export_minari(generated_file, DATASET_ID)


@pytest.mark.filterwarnings("ignore:.*is (set to )?None:UserWarning")
def test_minari_dataset_without_costs_is_refused_by_the_loader(minari_home):
    from gymnasium import spaces
    from minari.data_collector import EpisodeBuffer

    buffer = EpisodeBuffer(
        observations=np.zeros((3, 2), np.float32),
        actions=np.zeros((2, 1), np.float32),
        rewards=np.ones(2, np.float32),
        terminations=np.array([False, True]),
        truncations=np.array([False, False]),
    )
    box = spaces.Box(-1.0, 1.0, (2,), np.float32)
    minari_home.create_dataset_from_buffers(
        "nocost-v0", [buffer], observation_space=box, action_space=spaces.Box(-1, 1, (1,))
    )
    with pytest.raises(ValueError, match=r"infos\['cost'\]"):
        load_minari("nocost-v0")


def test_command_line_export_prints_the_dataset(minari_home, generated_file, capsys):
    datasets.main(["export-minari", str(generated_file), "--dataset-id", DATASET_ID])
    summary = json.loads(capsys.readouterr().out)
    assert summary["dataset_id"] == DATASET_ID
    assert (summary["episodes"], summary["steps"]) == (6, 1800)
    assert minari_home.load_dataset(DATASET_ID).total_episodes == 6


def test_missing_minari_names_the_extra(monkeypatch, generated_file):
    monkeypatch.setitem(sys.modules, "minari", None)
    with pytest.raises(ImportError, match=r"pip install 'omnigym\[data\]'"):
        export_minari(generated_file, DATASET_ID)
    with pytest.raises(ImportError, match="minari"):
        load_minari(DATASET_ID)
