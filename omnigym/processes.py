"""Processes that end with the run that started them, and what a block of work costs.

A run killed with SIGKILL gets no chance to clean up, so every process it starts is tied to it
when it starts (``docs/distributed.md``, "No orphans"):

- a program started with :mod:`subprocess` (Stockfish) gets ``preexec_fn=die_with_parent``:
  Linux's ``PR_SET_PDEATHSIG`` kills it when the thread that started it ends (start it from a
  thread that lives as long as the program: python-chess's engine thread does);
- a worker of :class:`omnigym.pool.WorkerPool` calls :func:`exit_with` on the run's process. Its
  parent is multiprocessing's ``forkserver``, which outlives the run as long as any worker holds
  its pipe, so a parent-death signal would never come; a daemon thread waits on the run's pidfd
  instead. When the workers are gone, the forkserver and the resource tracker see their pipes
  close and exit;
- a Ray cluster the run starts itself (:mod:`omnigym.ray_pool`) ends most of its processes with
  the run, but its dashboard and runtime-env agents wait a minute or more for the dead cluster
  before they exit: a :class:`Reaper` process records the run's descendants and kills those
  still running when the run ends.

:func:`terminate_raises` turns SIGTERM into :class:`Terminated` (a ``KeyboardInterrupt``), so
``with`` blocks close pools and files on SIGTERM as they do on Ctrl-C.

:func:`measured` gives a block's CPU seconds and peak resident memory, measured in the process
that runs it (a pool worker, a Ray worker), which is what a run's timing table adds up.

This module imports only the standard library: the reaper runs it as a script
(``python processes.py PID``), without importing omnigym.
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Looked up here, in the parent: a child between fork and exec should not load libraries.
_PRCTL = _load_prctl()


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when the thread that started it ends (Linux; a
    no-op elsewhere). Meant as ``subprocess.Popen(..., preexec_fn=die_with_parent)``; the
    setting survives ``exec``."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def exit_with(pid: int) -> None:
    """End this process (``os._exit``) as soon as process ``pid`` ends, watched from a daemon
    thread: a pidfd where the platform has one, else a check every second."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):
        handle = None

    def watch() -> None:
        if handle is not None:
            select.select([handle], [], [])
        else:
            while _alive(pid):
                time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name=f"exit-with-{pid}", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's ``KeyboardInterrupt``."""


@contextmanager
def terminate_raises() -> Iterator[None]:
    """Inside the block, SIGTERM raises :class:`Terminated` in the main thread (outside the
    main thread, where handlers cannot be set, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: Any) -> None:
        raise Terminated(signal.Signals(signum).name)

    before = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


# -- descendants and the reaper ---------------------------------------------------------------


def _read(path: str) -> bytes | None:
    """A ``/proc`` file's bytes, or ``None`` when it is gone (plain ``os`` calls: a finished
    episode reads several, and ``pathlib`` costs ten times as much)."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(handle, 1 << 16)
    except OSError:
        return None
    finally:
        os.close(handle)


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first)."""
    stat = _read(f"/proc/{pid}/stat")
    return None if stat is None else stat.rsplit(b")", 1)[1].split()


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux ``/proc``; empty elsewhere)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found = []
    for task in tasks:
        found += [
            int(child) for child in (_read(f"/proc/{pid}/task/{task}/children") or b"").split()
        ]
    return found


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, parents before their children."""
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``None`` when it is gone): with the pid,
    it names one process even after the pid is reused."""
    fields = _stat(pid)
    return None if fields is None else int(fields[19])


class Reaper:
    """A small process that kills what part of this one leaves behind (a Ray cluster).

    Started before that part starts its processes, it records every new process below this
    one, twice a second; :meth:`adopt` narrows that to the trees of the given processes once
    they are known, so nothing else of this process's is touched. When this process ends (by
    any signal) or calls :meth:`close`, the reaper kills those still running and anything below
    them, then exits.
    """

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-I", __file__, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def adopt(self, pids: list[int]) -> None:
        """Watch only ``pids`` and what runs below them from now on."""
        if self._process.stdin is not None:
            self._process.stdin.write(" ".join(map(str, pids)).encode() + b"\n")
            self._process.stdin.flush()

    def close(self) -> None:
        """Let the reaper kill what is left of the watched processes, and wait for it."""
        if self._process.stdin is not None:
            self._process.stdin.close()
            self._process.stdin = None
            self._process.wait(timeout=30)


def _reap(pid: int, interval: float = 0.5) -> None:
    """The reaper's loop (see :class:`Reaper`): its stdin is ``pid``'s pipe, which ends when
    ``pid`` does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the run, which closes us
    before = {*descendants(pid), os.getpid()}
    roots: set[int] | None = None
    known: dict[int, int | None] = {}
    pending = b""
    while True:
        watched = descendants(pid) if roots is None else _trees(roots)
        for process in watched:
            if process not in before and process not in known:
                known[process] = start_time(process)
        ready, _, _ = select.select([sys.stdin], [], [], interval)
        if not ready:
            continue
        data = os.read(sys.stdin.fileno(), 4096)
        if not data:
            break
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            roots = (roots or set()) | {int(word) for word in line.split()}
            tree = set(_trees(roots))
            known = {process: started for process, started in known.items() if process in tree}
    left = [process for process, started in known.items() if start_time(process) == started]
    for process in _trees(left):
        try:
            os.kill(process, signal.SIGKILL)
        except OSError:
            continue


def _trees(roots: Iterable[int]) -> list[int]:
    """``roots`` and every process below them."""
    roots = list(roots)
    return roots + [below for root in roots for below in descendants(root)]


# -- what a block of work costs ---------------------------------------------------------------

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_open_blocks: list[list[float]] = []  # per open measured() block, innermost last: its peak MB


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and its child processes (Stockfish), live or
    finished."""
    own = time.process_time()
    finished = resource.getrusage(resource.RUSAGE_CHILDREN)
    running = 0
    for child in children(os.getpid()):
        fields = _stat(child)
        if fields is not None:
            running += int(fields[11]) + int(fields[12])  # utime, stime
    return own + finished.ru_utime + finished.ru_stime + running / _CLOCK_TICKS


def peak_rss_mb() -> float:
    """The peak resident memory of this process in MB, since the last :func:`reset_peak_rss`
    where the platform allows one, else over its life."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def reset_peak_rss() -> None:
    """Start a new peak of resident memory (Linux: ``/proc/self/clear_refs``); where that is not
    allowed the peak stays the process's."""
    try:
        handle = os.open("/proc/self/clear_refs", os.O_WRONLY)
    except OSError:
        return
    try:
        os.write(handle, b"5")
    except OSError:
        pass
    finally:
        os.close(handle)


@contextmanager
def measured() -> Iterator[dict[str, float]]:
    """``with measured() as usage:`` fills ``usage`` with the block's ``cpu_seconds``
    (:func:`cpu_seconds`) and ``peak_rss_mb``, its peak resident memory. Blocks nest: an outer
    block's peak includes its inner blocks'."""
    if _open_blocks:
        _open_blocks[-1][0] = max(_open_blocks[-1][0], peak_rss_mb())
    reset_peak_rss()
    block = [0.0]
    _open_blocks.append(block)
    usage: dict[str, float] = {}
    start = cpu_seconds()
    try:
        yield usage
    finally:
        usage["cpu_seconds"] = cpu_seconds() - start
        usage["peak_rss_mb"] = max(block[0], peak_rss_mb())
        _open_blocks.pop()
        if _open_blocks:
            _open_blocks[-1][0] = max(_open_blocks[-1][0], usage["peak_rss_mb"])


if __name__ == "__main__":
    _reap(int(sys.argv[1]))
