"""The Ray backend on a real cluster on this machine: a head node and a second node joined to it,
one CPU each, on 127.0.0.1 only. A run on it matches the local backend record for record, a
Ray worker killed mid-run loses nothing, bad addresses and oversized jobs fail with exit status
2, and a run killed on a Ray instance of its own leaves no process behind."""

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from omnigym.cli import main
from omnigym.evaluators.rollout import MEASURED_KEYS
from omnigym.evaluators.store import EPISODES_FILE, read_records
from omnigym.pool import BackendError, make_pool
from omnigym.processes import descendants, start_time
from omnigym.ray_pool import CONNECT_TIMEOUT
from tests.kills import ROOT, command_line, kill_run, running

pytest.importorskip("ray")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

RAY = str(Path(sys.executable).with_name("ray"))
SMALL = (
    "name: small\nenvs: [LMRL/MazeFO-v0, LMRL/Wordle-v0]\nagents: [random, oracle]\n"
    "episodes: 4\nseeds: [0, 1]\nworkers: 2\n"
)
SLOW = (
    "name: slow\nenvs: [LMRL/MazeFO-v0]\n"
    "agents: [{name: 'tests.helpers:SlowRandomAgent', label: slow}]\n"
    "episodes: 10\nseeds: [0, 1]\nworkers: 2\n"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _node_ports() -> list[str]:
    """Ports two nodes on one machine would otherwise both take."""
    names = (
        "dashboard-agent-listen",
        "dashboard-agent-grpc",
        "metrics-export",
        "runtime-env-agent",
    )
    return [f"--{name}-port={_free_port()}" for name in names]


@dataclass
class Cluster:
    address: str
    env: dict[str, str]  # what a driver needs to join it (its token)
    temp: Path

    def processes(self) -> list[int]:
        """Every process of the cluster: those naming its folder and everything below them."""
        roots = [
            int(pid)
            for pid in os.listdir("/proc")
            if pid.isdigit() and str(self.temp) in command_line(int(pid), limit=None)
        ]
        return roots + [below for root in roots for below in descendants(root)]

    def omnigym(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "omnigym.cli", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            **kwargs,
        )


@pytest.fixture(scope="module")
def cluster():
    """Two one-CPU nodes on 127.0.0.1, with a token of their own. Stopped by killing exactly
    its processes (:func:`_stop`): ``ray stop`` would stop every Ray process of this user on the
    machine, other clusters included."""
    temp = Path(tempfile.mkdtemp(prefix="og-ray-", dir="/tmp"))  # Ray's socket paths are short
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    port = _free_port()
    common = [
        "--num-cpus=1",
        "--node-ip-address=127.0.0.1",
        f"--temp-dir={temp}",
        f"--object-store-memory={200 * 2**20}",
        "--disable-usage-stats",
    ]
    started = Cluster(f"127.0.0.1:{port}", env, temp)
    try:
        head = [RAY, "start", "--head", f"--port={port}", "--include-dashboard=false"]
        subprocess.run([*head, *common, *_node_ports()], env=env, check=True, capture_output=True)
        node = [RAY, "start", f"--address={started.address}", *common, *_node_ports()]
        subprocess.run(node, env=env, check=True, capture_output=True)
        status = _status_once_both_nodes_are_up(started)
        assert status.count(" node_") == 2 and "0.0/2.0 CPU" in status, status
        yield started
    finally:
        _stop(started)
        shutil.rmtree(temp, ignore_errors=True)


def _status_once_both_nodes_are_up(cluster: Cluster, timeout: float = 60) -> str:
    """``ray status`` once it lists two nodes (a node that ``ray start`` has just started
    registers with the head a moment later, seconds on a loaded machine), or at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        status = subprocess.run(
            [RAY, "status", f"--address={cluster.address}"],
            env=cluster.env,
            capture_output=True,
            text=True,
        ).stdout
        if status.count(" node_") == 2 or time.monotonic() > deadline:
            return status
        time.sleep(1.0)


def _stop(cluster: Cluster) -> None:
    """``ray stop --force`` for this cluster alone: SIGKILL every process of it, wait until they
    are gone, and again while any is left (one may start while the others die)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        processes = {pid: start_time(pid) for pid in cluster.processes()}
        if not processes:
            return
        for pid in processes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        while time.monotonic() < deadline and any(running(p, s) for p, s in processes.items()):
            time.sleep(0.2)


def _comparable(folder: Path) -> list[str]:
    records = read_records(folder / EPISODES_FILE)
    kept = [{k: v for k, v in r.items() if k not in MEASURED_KEYS} for r in records]
    return sorted(json.dumps(record, sort_keys=True) for record in kept)


def _scorecard(folder: Path) -> tuple[dict, dict]:
    scorecard = json.loads((folder / "scorecard.json").read_text())
    return scorecard, scorecard.pop("timing")


def test_a_run_on_two_nodes_gives_the_local_backends_records_and_scorecard(cluster, tmp_path):
    scenario = tmp_path / "small.yaml"
    scenario.write_text(SMALL)
    local, distributed = tmp_path / "local", tmp_path / "ray"
    assert main(["run", str(scenario), "--out", str(local)]) == 0
    args = ["run", str(scenario), "--out", str(distributed), "--backend", "ray"]
    result = cluster.omnigym(*args, "--address", cluster.address)
    assert result.returncode == 0, result.stderr
    assert len(_comparable(local)) == 32 and _comparable(distributed) == _comparable(local)
    (local_card, _), (ray_card, timing) = _scorecard(local), _scorecard(distributed)
    assert ray_card == local_card
    assert [row["measured"] for row in timing["episodes"]] == [8, 8, 8, 8]
    assert all(row["cpu_seconds"] > 0 and row["peak_rss_mb"] > 0 for row in timing["episodes"])


_NODES = """
import sys, time
from omnigym.pool import make_pool

def node(_):
    import ray
    time.sleep(1.0)
    return ray.get_runtime_context().get_node_id()

with make_pool(1, backend="ray", address=sys.argv[1]) as pool:
    print(pool.workers, len(set(pool.map(node, range(4)))))
"""


def test_jobs_spread_over_both_nodes_and_the_pool_sizes_itself_to_the_cluster(cluster):
    result = subprocess.run(
        [sys.executable, "-c", _NODES, cluster.address],
        cwd=ROOT,
        env=cluster.env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "2"]  # two jobs at once, on two nodes


def test_a_ray_worker_killed_mid_run_loses_no_episode(cluster, tmp_path):
    scenario = tmp_path / "slow.yaml"
    scenario.write_text(SLOW)
    expected, out = tmp_path / "expected", tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(expected)]) == 0
    args = ["run", str(scenario), "--out", str(out), "--backend", "ray", "--address"]
    with (tmp_path / "stderr").open("w") as stderr:
        run = subprocess.Popen(
            [sys.executable, "-m", "omnigym.cli", *args, cluster.address],
            cwd=ROOT,
            env=cluster.env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    killed = None
    deadline = time.monotonic() + 180
    while killed is None and time.monotonic() < deadline and run.poll() is None:
        busy = [p for p in cluster.processes() if command_line(p).startswith("ray::_run_job")]
        if busy and len(read_records(out / EPISODES_FILE)) >= 2:
            killed = busy[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    assert run.wait(timeout=300) == 0, (tmp_path / "stderr").read_text()
    assert killed is not None, "the run ended before a worker could be killed"
    assert _comparable(out) == _comparable(expected)
    assert len(read_records(out / EPISODES_FILE)) == 20  # none twice


def test_a_killed_driver_leaves_no_job_running_on_the_cluster(cluster, tmp_path):
    scenario, out = tmp_path / "slow.yaml", tmp_path / "out"
    scenario.write_text(SLOW.replace("episodes: 10", "episodes: 100"))
    args = ["run", str(scenario), "--out", str(out), "--backend", "ray", "--address"]
    run = subprocess.Popen(
        [sys.executable, "-m", "omnigym.cli", *args, cluster.address],
        cwd=ROOT,
        env=cluster.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    busy: dict[int, int | None] = {}
    deadline = time.monotonic() + 180
    while not busy and time.monotonic() < deadline and run.poll() is None:
        jobs = [p for p in cluster.processes() if command_line(p).startswith("ray::_run_job")]
        busy = {pid: start_time(pid) for pid in jobs}
        time.sleep(0.1)
    run.kill()
    run.wait()
    assert busy, "no job ran on the cluster"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(running(p, s) for p, s in busy.items()):
        time.sleep(0.1)
    assert not any(running(p, s) for p, s in busy.items())


def test_a_job_bigger_than_any_node_names_the_job_and_the_numbers(cluster, tmp_path):
    scenario = tmp_path / "big.yaml"
    scenario.write_text(
        SMALL.replace("name: small", "name: big") + "resources: {cpus_per_job: 2}\n"
    )
    out = tmp_path / "out"
    args = ["run", str(scenario), "--out", str(out), "--backend", "ray"]
    result = cluster.omnigym(*args, "--address", cluster.address)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "omnigym run: each job of 'big' asks for 2 CPUs (cpus_per_job) but the largest node of "
        f"the Ray cluster at {cluster.address} has 1"
    )
    assert not out.exists()


def test_an_address_where_no_cluster_answers_fails_within_seconds_naming_it(tmp_path):
    import ray  # noqa: F401  (imported before the clock starts: a loaded machine imports slowly)

    address = f"127.0.0.1:{_free_port()}"
    started = time.monotonic()
    with pytest.raises(BackendError, match=f"no Ray cluster answers at {address}"):
        make_pool(2, backend="ray", address=address)
    assert time.monotonic() - started < CONNECT_TIMEOUT + 2
    result = subprocess.run(
        [sys.executable, "-m", "omnigym.cli", "eval", "LMRL/MazeFO-v0", "--agent", "random",
         "--workers", "2", "--backend", "ray", "--address", address, "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(f"omnigym eval: no Ray cluster answers at {address} (")
    )
    assert not (tmp_path / EPISODES_FILE).exists()


# SIGINT takes the same way out as SIGTERM (tests/test_pool.py kills local runs with all three).
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=lambda signum: signum.name)
def test_a_killed_run_on_its_own_ray_instance_leaves_no_process_behind(tmp_path, signum):
    scenario, out = tmp_path / "slow.yaml", tmp_path / "out"
    scenario.write_text(SLOW.replace("episodes: 10", "episodes: 30"))
    args = ["run", str(scenario), "--out", str(out), "--backend", "ray"]
    killed = kill_run(args, out, signum, ready="ray::_run_job")
    commands = list(killed.processes.values())
    assert any("raylet" in command for command in commands)
    assert any("gcs_server" in command for command in commands)
    assert sum(command.startswith("ray::") for command in commands) >= 3  # agents, workers
    assert killed.left == {}
    if signum != signal.SIGKILL:
        assert killed.returncode == 128 + signum
        assert f"Resume with the same command: omnigym run {scenario} --out {out}" in (
            killed.stderr
        )
        return
    stored = (out / EPISODES_FILE).read_text()
    stored = stored[: stored.rfind("\n") + 1]  # the line being written when killed is dropped
    resumed = subprocess.run(
        [sys.executable, "-m", "omnigym.cli", *args], cwd=ROOT, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (out / EPISODES_FILE).read_text().startswith(stored)  # nothing stored is played again
    keys = [(r["seed"], r["episode"]) for r in read_records(out / EPISODES_FILE)]
    assert sorted(keys) == [(seed, episode) for seed in (0, 1) for episode in range(30)]
