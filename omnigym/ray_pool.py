"""The Ray backend of :mod:`omnigym.pool`: the same jobs as Ray tasks, here or on a cluster.

:class:`RayPool` runs each job as a task of one remote function (its process shows as
``ray::_run_job``), with the scenario's ``cpus_per_job`` and ``memory_per_job`` as the task's
resources, so Ray places as many jobs on a node as it has room for. A task whose worker
dies (killed, out of memory, a lost node) runs again, up to :data:`MAX_RETRIES` times, on a
new worker; an error raised by the job itself is not retried (the same seeds would raise it
again) and reaches the caller. Jobs carry their own seeds, so where one runs never changes
its result.

Where the tasks run (``docs/distributed.md``):

- ``address=None``: a Ray instance this run starts on this machine (loopback only) with
  ``workers`` × ``cpus_per_job`` CPUs, shut down by :meth:`RayPool.close`. Ray ends most of its
  processes with the run; a :class:`~omnigym.processes.Reaper` ends the rest, so a killed run
  leaves nothing behind;
- ``"auto"``: the cluster this machine has joined (``ray start``);
- ``"HOST:PORT"``: the cluster whose head node listens there (``ray start --head --port``).
  It is tried with a plain TCP connection first, so an address that does not answer fails in
  seconds. On a cluster the pool keeps as many jobs in flight as the cluster's CPUs hold.

Ray is the optional extra ``distributed``; without it :class:`RayPool` raises a
:class:`~omnigym.pool.BackendError` naming the install line.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from omnigym.pool import BackendError, Pool
from omnigym.processes import Reaper, children

INSTALL = 'pip install "omnigym[distributed]"'
"""The line that installs Ray for the ray backend."""

MAX_RETRIES = 3
"""How many times a job whose worker died is run again."""

CONNECT_TIMEOUT = 3.0
"""Seconds to wait for a cluster's head node to accept a connection."""

_configured_threads: list[int] = []


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`BackendError` naming the install line."""
    try:
        import ray
    except ImportError:
        raise BackendError(
            f"the ray backend needs Ray, which is not installed: {INSTALL}"
        ) from None
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise :class:`BackendError` unless something accepts TCP connections at ``address``
    (``HOST:PORT``) within ``timeout`` seconds."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise BackendError(f"Ray address {address!r}: expected auto or HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise BackendError(f"no Ray cluster answers at {address} ({reason})") from None


def _run_job(threads: int, function: Callable[..., Any], *args: Any) -> Any:
    """A job in a Ray worker: ``function(*args)``, the worker's torch kept to ``threads``."""
    if _configured_threads != [threads]:
        import importlib.util

        if importlib.util.find_spec("torch") is not None:
            import torch

            torch.set_num_threads(threads)
        _configured_threads[:] = [threads]
    return function(*args)


class RayPool(Pool):
    """Jobs as Ray tasks (see the module docstring)."""

    backend = "ray"

    def __init__(
        self,
        workers: int,
        address: str | None = None,
        cpus_per_job: float = 1,
        memory_per_job: int | None = None,
        job: str = "each job",
    ):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        ray = import_ray()
        self._ray = ray
        self._connected = False  # whether this pool called ray.init (and so ends the connection)
        self._reaper: Reaper | None = None
        self._running: set[Any] = set()
        if not ray.is_initialized():
            self._connect(workers, address, cpus_per_job, job)
        try:
            self.workers = self._check_room(workers, address, cpus_per_job, memory_per_job, job)
        except BackendError:
            self.close()
            raise
        self.threads = max(1, int(cpus_per_job))
        self._task = ray.remote(_run_job).options(
            num_cpus=cpus_per_job,
            memory=memory_per_job,
            max_retries=MAX_RETRIES,
            retry_exceptions=False,
        )

    def _connect(self, workers: int, address: str | None, cpus_per_job: float, job: str) -> None:
        quiet = {"logging_level": logging.WARNING, "include_dashboard": False}
        if address is not None:
            if address != "auto":
                check_reachable(address)
            try:
                self._init(address=address, **quiet)
            except ConnectionError as error:
                raise BackendError(f"cannot join the Ray cluster at {address}: {error}") from None
            return
        cpus = os.cpu_count() or 1
        if cpus_per_job > cpus:
            raise BackendError(
                f"{job} asks for {cpus_per_job:g} CPUs (cpus_per_job) but this machine has {cpus}"
            )
        self._reaper = Reaper()
        before = set(children(os.getpid()))
        try:
            self._init(
                address="local",  # a new instance, even where `ray start` runs one
                num_cpus=math.ceil(workers * cpus_per_job),
                _node_ip_address="127.0.0.1",
                # Ray lowers its workers' priority by 15 (nice) by default; a run's workers keep
                # the run's own, as the local pool's do, or any other work starves them.
                _system_config={"worker_niceness": 0},
                **quiet,
            )
        except Exception as error:  # Ray raises a bare Exception when its start times out
            self.close()
            raise BackendError(f"Ray did not start on this machine: {error}") from None
        except BaseException:
            self.close()
            raise
        self._reaper.adopt(sorted(set(children(os.getpid())) - before - {self._reaper.pid}))

    def _init(self, **settings: Any) -> None:
        """``ray.init``, keeping this process's SIGTERM handler: Ray replaces it with one that
        aborts, so SIGTERM would no longer stop a run cleanly."""
        main = threading.current_thread() is threading.main_thread()
        handler = signal.getsignal(signal.SIGTERM) if main else None
        self._ray.init(**settings)
        self._connected = True
        if handler is not None:
            signal.signal(signal.SIGTERM, handler)

    def _check_room(
        self,
        workers: int,
        address: str | None,
        cpus_per_job: float,
        memory_per_job: int | None,
        job: str,
    ) -> int:
        """How many jobs run at once: ``workers`` on a Ray instance of this run's own, as many
        as the cluster's CPUs hold on a cluster; :class:`BackendError` when no node can hold
        one job."""
        nodes = [node["Resources"] for node in self._ray.nodes() if node.get("Alive")]
        own = self._reaper is not None
        if own:
            where = "this run's Ray instance"
        else:
            where = f"the Ray cluster at {address}" if address else "the connected Ray cluster"
        largest = max((node.get("CPU", 0) for node in nodes), default=0)
        if cpus_per_job > largest:
            raise BackendError(
                f"{job} asks for {cpus_per_job:g} CPUs (cpus_per_job) but the largest node of "
                f"{where} has {largest:g}"
            )
        if memory_per_job is not None:
            memory = max((node.get("memory", 0) for node in nodes), default=0)
            if memory_per_job > memory:
                raise BackendError(
                    f"{job} asks for {memory_per_job / 2**30:.2f} GiB of memory "
                    f"(memory_per_job) but the largest node of {where} has "
                    f"{memory / 2**30:.2f} GiB for tasks"
                )
        if own:
            return workers
        return max(1, sum(int(node.get("CPU", 0) // cpus_per_job) for node in nodes))

    def submit(self, function: Callable[..., Any], *args: Any) -> Future:
        reference = self._task.remote(self.threads, function, *args)
        self._running.add(reference)
        future = reference.future()
        future.add_done_callback(lambda _: self._running.discard(reference))
        return future

    def close(self, cancel: bool = False) -> None:
        ray = self._ray
        if cancel and ray.is_initialized():
            for reference in list(self._running):
                try:
                    ray.cancel(reference, force=True)
                except (ValueError, TypeError, ray.exceptions.RayError):
                    continue
        self._running.clear()
        if self._connected and ray.is_initialized():
            ray.shutdown()
        self._connected = False
        if self._reaper is not None:
            self._reaper.close()
            self._reaper = None
