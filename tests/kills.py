"""Killing real runs for the no-orphans tests: start ``omnigym`` in a session of its own, wait
for episodes, record every process below it, send a signal, then wait for all of them to end."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from omnigym.evaluators.store import EPISODES_FILE, read_records
from omnigym.processes import descendants, start_time

ROOT = Path(__file__).resolve().parents[1]
GRACE_SECONDS = 10.0
"""How long the processes of a killed run may take to end."""


@dataclass
class Killed:
    returncode: int
    stderr: str
    processes: dict[int, str]  # pid -> command line, every process below the run when killed
    left: dict[int, str]  # those still running GRACE_SECONDS after the run ended


def command_line(pid: int, limit: int | None = 160) -> str:
    """The command line of ``pid`` ("" once it is gone), cut at ``limit`` characters."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:limit]
    except OSError:
        return ""


def running(pid: int, started: int | None) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (zombies do not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X") and start_time(pid) == started


def _default_sigint() -> None:
    """Give the run Ctrl-C's default action: a test started in the background by a shell
    without job control inherits SIGINT ignored, and the run would then never see it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill_run(
    args: list[str], out: Path, signum: int, episodes: int = 2, ready: str | None = None
) -> Killed:
    """Run ``omnigym *args`` (storing into ``out``) until ``episodes`` episodes are stored and,
    when given, a process whose command line holds ``ready`` runs below it; then send
    ``signum`` (SIGINT to its whole process group, as Ctrl-C in a terminal does)."""
    # stderr goes to a file: a pipe would stay open as long as any process below the run lives
    log = out.with_name(f"{out.name}.stderr")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "omnigym.cli", *args],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=_default_sigint,
        )
    try:
        deadline, waiting = time.monotonic() + 240, True
        while waiting and time.monotonic() < deadline and process.poll() is None:
            below = descendants(process.pid)
            started = ready is None or any(ready in command_line(pid) for pid in below)
            waiting = not started or len(read_records(out / EPISODES_FILE)) < episodes
            time.sleep(0.1)
        assert process.poll() is None, f"the run ended before it was killed: {log.read_text()}"
        assert not waiting, f"the run was not under way after 240 s: {log.read_text()}"
        below = descendants(process.pid)
        processes = {pid: command_line(pid) for pid in below}
        starts = {pid: start_time(pid) for pid in below}
        if signum == signal.SIGINT:
            os.killpg(process.pid, signum)
        else:
            os.kill(process.pid, signum)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline and any(running(p, s) for p, s in starts.items()):
        time.sleep(0.1)
    left = {pid: processes[pid] for pid, started in starts.items() if running(pid, started)}
    for pid in left:  # never leave them to the next test
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return Killed(process.returncode, log.read_text(), processes, left)
