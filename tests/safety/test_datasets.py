"""The Safe offline datasets: behaviour grid, DSRL file and sidecar, CLI, registry hook,
references and ``OfflineSafeEnv``."""

import json
import subprocess
import sys

import numpy as np
import pytest

import omnigym
from omnigym.cli import main as omnigym_main
from omnigym.envs.safety import datasets, dsrl
from omnigym.envs.safety.core import load_references
from omnigym.envs.safety.offline_env import OfflineSafeEnv

GOAL = "Safe/PointGoal1-v0"
RUNNER = "Safe/RunnerVelocity-v0"


@pytest.fixture(scope="module")
def goal_dataset(tmp_path_factory):
    """33 PointGoal1 trajectories (one per default grid cell), generated and written."""
    generated = datasets.generate(GOAL, n_traj=33, seed=0)
    path = datasets.write_generated(generated, tmp_path_factory.mktemp("goal"))
    return generated, path


def mean_returns(env_id, beta, n_traj=6):
    data, _ = datasets.rollouts(env_id, n_traj, seed=3, grid=[(beta, 0.0)])
    rewards, costs, _ = dsrl.trajectory_returns(data)
    return rewards.mean(), costs.mean()


def test_risk_knob_spreads_cost_returns_in_goal():
    safe_reward, safe_cost = mean_returns(GOAL, 0.0)
    plain_reward, _ = mean_returns(GOAL, 0.4)
    _, risky_cost = mean_returns(GOAL, 0.9)
    assert safe_cost <= 1.0
    assert risky_cost >= safe_cost + 10.0
    assert plain_reward > safe_reward + 3.0  # safe-and-slow earns less


def test_risk_knob_orders_cost_and_reward_in_velocity():
    returns = [mean_returns(RUNNER, beta, n_traj=3) for beta in (0.0, 0.5, 0.9)]
    rewards, costs = np.array(returns).T
    assert np.all(np.diff(rewards) > 0) and np.all(np.diff(costs) > 0)
    assert costs[0] == 0.0 and costs[-1] > 200.0


def test_actions_stay_in_the_action_box_under_noise():
    data, knobs = datasets.rollouts("Safe/CarPush2-v0", 2, seed=1, grid=[(1.0, 2.0)])
    assert np.abs(data["actions"]).max() <= 1.0
    assert np.abs(data["actions"]).max() == 1.0  # σ = 2 saturates
    assert knobs.tolist() == [[1.0, 2.0], [1.0, 2.0]]


def test_generated_file_loads_and_round_trips(goal_dataset):
    generated, path = goal_dataset
    loaded = dsrl.load_dataset(path, env=omnigym.make(GOAL))
    assert set(loaded) == set(dsrl.KEYS)
    for key in dsrl.KEYS:
        np.testing.assert_array_equal(loaded[key], generated["data"][key])
    assert loaded["timeouts"].sum() == generated["stats"]["trajectories"]
    attrs = dsrl.load_attributes(path)
    assert attrs["env_id"] == GOAL and attrs["seed"] == 0
    assert attrs["config"]["n_traj"] == 33 and attrs["config"]["npb"] >= 1


def test_file_name_and_sidecar_follow_dsrl(goal_dataset):
    generated, path = goal_dataset
    kept = generated["stats"]["trajectories"]
    assert path.name == f"Safe-PointGoal1-v0-60-{kept}.hdf5"
    sidecar = json.loads(datasets.sidecar_path(path).read_text())
    rewards, costs, _ = dsrl.trajectory_returns(generated["data"])
    assert sidecar["max_reward"] == pytest.approx(rewards.max())
    assert sidecar["min_reward"] == pytest.approx(rewards.min())
    assert sidecar["min_cost"] == costs.min() and sidecar["max_cost"] == 60.0
    assert costs.max() <= 60.0  # the filter clips to [0, cmax]
    assert sidecar["thresholds"] == [6.0, 12.0, 24.0] and sidecar["strict_threshold"] == 3.0
    assert sidecar["max_episode_steps"] == 300
    assert sorted(sidecar["density_cfg"]) == ["0.25", "0.5", "0.75"]


def test_density_cfg_keeps_at_least_each_share(goal_dataset):
    generated, _ = goal_dataset
    rewards, costs, _ = dsrl.trajectory_returns(generated["data"])
    for density, cfg in generated["references"]["density_cfg"].items():
        kept = dsrl.grid_filter(
            rewards,
            costs,
            rng=np.random.default_rng(0),
            cbins=cfg["cbins"],
            rbins=cfg["rbins"],
            npb=cfg["max_npb"],
            min_npb=cfg["min_npb"],
        )
        assert len(kept) >= float(density) * len(rewards)


def test_same_seed_gives_identical_bytes(tmp_path):
    paths = [
        datasets.write_generated(datasets.generate(RUNNER, n_traj=20, seed=seed), tmp_path / name)
        for seed, name in ((5, "a"), (5, "b"), (6, "c"))
    ]
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="policy must be 'scripted'"):
        datasets.generate(RUNNER, n_traj=2, policy="ppo-lag")
    with pytest.raises(ValueError, match="env_id must be one of"):
        datasets.generate("Safe/Nope-v0", n_traj=2)
    with pytest.raises(ValueError, match="grid must be"):
        datasets.rollouts(RUNNER, 2, grid=[(1.5, 0.0)])
    with pytest.raises(ValueError, match="filter keys"):
        datasets.generate(RUNNER, n_traj=2, filter={"bins": 3})


def test_module_cli_writes_the_dataset(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "omnigym.envs.safety.datasets", "generate", "--env", RUNNER]
        + ["--seed", "0", "--out", str(tmp_path), "--n-traj", "30"],
        capture_output=True,
        text=True,
        check=True,
    )
    stats = json.loads(completed.stdout)
    assert stats["rolled_out"] == 30 and stats["env_id"] == RUNNER
    written = sorted(p.name for p in tmp_path.iterdir())
    name = f"Safe-RunnerVelocity-v0-60-{stats['trajectories']}"
    assert written == [name + ".hdf5", name + ".json"]
    assert len(dsrl.load_dataset(tmp_path / written[0])["rewards"]) == stats["transitions"]


def test_omnigym_dataset_command_writes_a_folder_or_a_file(tmp_path, capsys):
    assert omnigym_main(["dataset", RUNNER, "--episodes", "20", "--out", str(tmp_path)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["rolled_out"] == 20
    assert (tmp_path / f"Safe-RunnerVelocity-v0-60-{stats['trajectories']}.hdf5").exists()
    target = tmp_path / "named.hdf5"
    assert omnigym_main(["dataset", RUNNER, "--episodes", "20", "--out", str(target)]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == str(target)
    assert target.exists() and (tmp_path / "named.json").exists()


def test_every_safe_id_has_committed_references():
    references = load_references()
    assert sorted(references) == sorted(datasets.dataset_env_ids())
    for env_id, entry in references.items():
        assert entry["min_reward"] < entry["max_reward"]
        assert entry["dataset"].startswith(env_id.replace("/", "-") + "-")


def test_references_regenerate_identically(tmp_path):
    regenerated = datasets.write_references_yaml(tmp_path / "refs.yaml", [RUNNER])
    assert load_references(tmp_path / "refs.yaml") == regenerated
    assert regenerated[RUNNER] == load_references()[RUNNER]


def test_final_step_info_carries_normalized_reward():
    env = omnigym.make(GOAL)
    env.reset(seed=0)
    total, truncated = 0.0, False
    while not truncated:
        _, reward, _, truncated, info = env.step(np.zeros(2, np.float32))
        total += reward
    refs = load_references()[GOAL]
    expected = (total - refs["min_reward"]) / (refs["max_reward"] - refs["min_reward"])
    assert info["metrics"]["normalized_reward"] == pytest.approx(expected)
    assert info["metrics"]["normalized_score"] == pytest.approx(100 * expected)


def test_offline_env_missing_dataset_quotes_the_generate_command(tmp_path, monkeypatch):
    monkeypatch.setenv("OMNIGYM_DATA_DIR", str(tmp_path))
    env = OfflineSafeEnv(GOAL)
    with pytest.raises(FileNotFoundError) as error:
        env.get_dataset()
    message = str(error.value)
    assert str(tmp_path / env.dataset_filename) in message
    assert (
        f"python -m omnigym.envs.safety.datasets generate --env {GOAL} --seed 0 --out {tmp_path}"
        in message
    )


def test_offline_env_loads_scores_and_pre_processes(goal_dataset, tmp_path, monkeypatch):
    generated, path = goal_dataset
    monkeypatch.setenv("OMNIGYM_DATA_DIR", str(tmp_path))
    env = OfflineSafeEnv(GOAL)
    (tmp_path / env.dataset_filename).write_bytes(path.read_bytes())
    data = env.get_dataset()
    np.testing.assert_array_equal(data["costs"], generated["data"]["costs"])
    np.testing.assert_array_equal(env.get_dataset(path)["rewards"], data["rewards"])

    refs = load_references()[GOAL]
    reward, cost = env.get_normalized_score(refs["max_reward"], 6.0)
    assert reward == pytest.approx(1.0) and cost == pytest.approx(0.5)  # default κ = 12
    env.set_target_cost(0)
    assert env.get_normalized_score(refs["min_reward"], 3.0) == pytest.approx((0.0, 4.0))
    assert env.unwrapped.target_cost == 0.0
    with pytest.raises(ValueError, match="target_cost"):
        env.set_target_cost(-1)

    half = env.pre_process_data(data, density=0.5)
    cfg = refs["density_cfg"]["0.5"]
    rewards, costs, _ = dsrl.trajectory_returns(data)
    expected = dsrl.grid_filter(
        rewards,
        costs,
        rng=np.random.default_rng(dsrl.DSRL_SEED),
        cbins=cfg["cbins"],
        rbins=cfg["rbins"],
        npb=cfg["max_npb"],
        min_npb=cfg["min_npb"],
    )
    assert dsrl.trajectory_returns(half)[0].tolist() == rewards[expected].tolist()
