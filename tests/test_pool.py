"""omnigym.pool and omnigym.processes: the local backend, bad backends, processes that end with
the run that started them (killed runs are listed afterwards), and per-worker accounting."""

import math
import os
import signal
import subprocess
import sys
import time

import pytest

from omnigym.cli import main
from omnigym.evaluators.experiment import timed
from omnigym.evaluators.store import EPISODES_FILE, read_records
from omnigym.evaluators.timing import format_timing, timing_block
from omnigym.pool import BackendError, WorkerPool, make_pool
from omnigym.processes import measured
from omnigym.ray_pool import INSTALL
from tests.kills import kill_run

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="parent-death signals and /proc are Linux's"
)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_local_pool_maps_in_order_or_as_finished(workers):
    items = [float(i) for i in range(8)]
    with make_pool(workers) as pool:
        assert isinstance(pool, WorkerPool) and pool.runs_here == (workers == 1)
        assert list(pool.map(math.sqrt, items)) == [math.sqrt(x) for x in items]
        assert sorted(pool.map(math.sqrt, items, ordered=False)) == [math.sqrt(x) for x in items]


def test_a_pool_left_by_an_exception_ends_its_workers_at_once():
    pool = WorkerPool(2)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), pool:
        pool.submit(time.sleep, 60)
        pool.submit(time.sleep, 60)
        raise KeyboardInterrupt
    assert time.monotonic() - started < 20


def test_bad_backends_are_errors_naming_what_is_wrong():
    with pytest.raises(BackendError, match="unknown backend 'spark'"):
        make_pool(2, backend="spark")
    with pytest.raises(BackendError, match=r"address \(auto\) is for the ray backend"):
        make_pool(2, address="auto")
    cpus = os.cpu_count()
    with pytest.raises(BackendError, match=f"job x asks for {cpus + 1} CPUs .* has {cpus}"):
        make_pool(2, cpus_per_job=cpus + 1, job="job x")


def test_the_ray_backend_without_ray_names_the_install_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # what a missing package looks like
    with pytest.raises(BackendError, match="not installed") as error:
        make_pool(2, backend="ray")
    assert INSTALL in str(error.value)
    args = ["eval", "LMRL/MazeFO-v0", "--agent", "random", "--workers", "2", "--backend", "ray"]
    assert main(args) == 2
    assert f"omnigym eval: the ray backend needs Ray, which is not installed: {INSTALL}" in (
        capsys.readouterr().err
    )


def test_an_address_without_the_ray_backend_exits_2(capsys):
    args = ["eval", "LMRL/MazeFO-v0", "--agent", "random", "--address", "127.0.0.1:6379"]
    assert main(args) == 2
    assert "--address 127.0.0.1:6379 is for --backend ray" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("backend: spark\n", "field backend: Input should be 'local' or 'ray'"),
        ("backend: ray\naddress: nowhere\n", "field address: Value error, expected auto or HOST"),
        ("address: auto\n", "address 'auto' is for backend: ray"),
        ("resources: {cpus_per_job: 0}\n", "field resources.cpus_per_job: Input should be"),
        ("resources: {memory_per_job: lots}\n", "field resources.memory_per_job"),
        ("resources: {gpus: 1}\n", "field resources.gpus: Extra inputs are not permitted"),
    ],
)
def test_bad_backend_fields_of_a_scenario_exit_2_naming_the_field(
    tmp_path, capsys, fields, message
):
    path = tmp_path / "bad.yaml"
    path.write_text(f"name: bad\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\n{fields}")
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_scenario_resources_read_sizes_with_units(tmp_path):
    from omnigym.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\nbackend: ray\naddress: auto\n"
        "resources: {cpus_per_job: 0.5, memory_per_job: 2GiB}\n"
    )
    scenario = load_scenario(path)
    assert scenario.resources.cpus_per_job == 0.5
    assert scenario.resources.memory_per_job == 2 * 2**30


# -- processes that end with the run ----------------------------------------------------------

_STARTER = """
import subprocess, sys, time
from omnigym.processes import die_with_parent
tie = die_with_parent if sys.argv[1] == "1" else None
child = subprocess.Popen(["sleep", "60"], preexec_fn=tie)
print(child.pid, flush=True)
time.sleep(60)
"""


@linux_only
@pytest.mark.parametrize("tied", [True, False])
def test_a_program_started_with_die_with_parent_ends_with_its_starter(tied):
    starter = subprocess.Popen(
        [sys.executable, "-c", _STARTER, "1" if tied else "0"], stdout=subprocess.PIPE, text=True
    )
    child = int(starter.stdout.readline())
    starter.kill()
    starter.wait()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.05)
    try:
        assert _running(child) is not tied
    finally:
        if _running(child):
            os.kill(child, signal.SIGKILL)


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


_SLOW_RUN = (
    "name: kill\nenvs: [LMRL/MazeFO-v0]\n"
    "agents: [{name: 'tests.helpers:SlowRandomAgent', label: slow}]\n"
    "episodes: 200\nseeds: [0, 1]\nworkers: 2\n"
)


@linux_only
@pytest.mark.slow
@pytest.mark.parametrize(
    "signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda signum: signum.name
)
def test_a_killed_local_run_leaves_no_process_behind(tmp_path, signum):
    scenario, out = tmp_path / "kill.yaml", tmp_path / "out"
    scenario.write_text(_SLOW_RUN)
    killed = kill_run(["run", str(scenario), "--out", str(out)], out, signum)
    commands = " ".join(killed.processes.values())
    assert "forkserver" in commands and "resource_tracker" in commands
    assert len(killed.processes) >= 4  # the tracker, the forkserver and two workers
    assert killed.left == {}
    if signum == signal.SIGKILL:
        return
    assert killed.returncode == 128 + signum
    stored = len(read_records(out / EPISODES_FILE))
    assert f"interrupted ({signal.Signals(signum).name})" in killed.stderr
    assert f"{stored} finished episodes are stored in {out / EPISODES_FILE}" in killed.stderr
    assert f"Resume with the same command: omnigym run {scenario} --out {out}" in killed.stderr


@linux_only
@pytest.mark.slow
def test_a_killed_chess_run_takes_stockfish_with_it(tmp_path):
    pytest.importorskip("chess")
    from omnigym.envs.lmrl.chess_task import find_stockfish

    if find_stockfish() is None:
        pytest.skip("Debian's stockfish is not installed")
    scenario, out = tmp_path / "chess.yaml", tmp_path / "out"
    scenario.write_text(
        "name: chess\nenvs: [LMRL/Chess-v0]\nagents: [random]\nepisodes: 50\nseeds: [0]\n"
        "workers: 2\n"
    )
    killed = kill_run(
        ["run", str(scenario), "--out", str(out)], out, signal.SIGKILL, episodes=0,
        ready="stockfish",
    )  # fmt: skip
    assert any("stockfish" in command for command in killed.processes.values())
    assert killed.left == {}


# -- what the workers spend -------------------------------------------------------------------


def test_measured_counts_the_blocks_cpu_and_peak_memory_and_nests():
    with measured() as outer:
        start = time.process_time()
        while time.process_time() - start < 0.2:
            pass
        with measured() as inner:
            block = bytearray(200 * 2**20)
            block[:: 2**12] = b"x" * len(block[:: 2**12])  # touch every page
            del block
    assert outer["cpu_seconds"] >= 0.2 and inner["cpu_seconds"] < outer["cpu_seconds"]
    assert inner["peak_rss_mb"] >= 200 and outer["peak_rss_mb"] >= inner["peak_rss_mb"]


_BUSY = "import time\nwhile time.process_time() < 0.3: pass\nprint('done', flush=True)\n"


@linux_only
@pytest.mark.parametrize("wait_for_it", [True, False])
def test_measured_counts_child_programs_running_or_finished(wait_for_it):
    tail = "" if wait_for_it else "time.sleep(30)\n"
    with measured() as usage:
        child = subprocess.Popen([sys.executable, "-c", _BUSY + tail], stdout=subprocess.PIPE)
        assert child.stdout.readline() == b"done\n"
        if wait_for_it:
            child.wait()
        else:
            time.sleep(0.05)
    child.kill()
    child.wait()
    assert usage["cpu_seconds"] >= 0.25  # clock ticks of 10 ms on a running child


def test_timed_gives_wall_cpu_and_peak_memory():
    with timed() as timing:
        time.sleep(0.01)
    assert set(timing) == {"seconds", "cpu_seconds", "peak_rss_mb"}
    assert timing["seconds"] >= 0.01 and timing["peak_rss_mb"] > 0


def test_the_timing_block_adds_up_episodes_and_jobs_apart():
    records = [
        {"env_id": "E", "agent": "a", "wall_time": 1.0, "cpu_seconds": 0.5, "peak_rss_mb": 100},
        {"env_id": "E", "agent": "a", "wall_time": 2.0, "cpu_seconds": 1.5, "peak_rss_mb": 300},
        {"env_id": "E", "agent": "b", "wall_time": 4.0},  # stored before CPU was recorded
    ]
    diagnostics = [
        {"stage": "train", "seconds": 10.0, "cpu_seconds": 9.0, "peak_rss_mb": 500},
        {"stage": "train", "seconds": 20.0, "cpu_seconds": 19.0, "peak_rss_mb": 400},
        {"stage": "data", "games": 3},  # not a timed job
    ]
    block = timing_block(records, diagnostics)
    assert block["episodes"] == [
        {"env_id": "E", "agent": "a", "episodes": 2, "measured": 2, "wall_seconds": 3.0,
         "cpu_seconds": 2.0, "peak_rss_mb": 300},
        {"env_id": "E", "agent": "b", "episodes": 1, "measured": 0, "wall_seconds": 0,
         "cpu_seconds": 0, "peak_rss_mb": None},
    ]  # fmt: skip
    assert block["jobs"] == [
        {"stage": "train", "jobs": 2, "measured": 2, "wall_seconds": 30.0, "cpu_seconds": 28.0,
         "peak_rss_mb": 500},
    ]  # fmt: skip
    table = format_timing(block)
    assert "| E | a | 2 | 3.0 | 2.0 | 1.000 | 300 |" in table
    assert "| train | 2 | 30.0 | 28.0 | 500 |" in table
    assert "| E | b |" not in table
    assert format_timing(timing_block([records[2]], [])) == ""
