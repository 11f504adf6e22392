"""One worker pool for everything omnigym fans out: episodes, training jobs, rollouts, matches.

A pool runs ``function(*args)`` somewhere and hands back a :class:`concurrent.futures.Future`
(:meth:`Pool.submit`); :meth:`Pool.map` runs a function over items, in order or as each one
finishes. Evaluations (:func:`omnigym.evaluators.rollout.evaluate`), the experiment kit's stages
(:mod:`omnigym.evaluators.experiment`), the Diplomacy matches and the papers' own jobs all take
a pool, and :func:`make_pool` makes the one a scenario or the command line asks for:

- ``backend="local"``, :class:`WorkerPool`: local worker processes (``forkserver`` start method:
  no fork of a process that holds threads; ``omnigym`` preloaded). It starts on first use and
  lasts until ``close()`` (or the end of its ``with`` block), so the workers and the libraries
  they imported serve a whole experiment. With one worker nothing is started: work runs here.
- ``backend="ray"``, :class:`omnigym.ray_pool.RayPool`: Ray tasks on a cluster, one this run
  starts on this machine or one at ``address`` (``docs/distributed.md``).

Every job keeps to ``cpus_per_job`` torch threads (one by default: tiny networks gain nothing
from intra-op threads on a few cores, and several workers would fight over them). A pool left
by an exception (Ctrl-C, SIGTERM) cancels what has not run and ends its workers at once; a run
killed outright takes its workers with it (:mod:`omnigym.processes`).
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import nullcontext
from typing import Any

from omnigym.processes import exit_with
from omnigym.threads import torch_threads

BACKENDS = ("local", "ray")
_HAS_TORCH = importlib.util.find_spec("torch") is not None


class BackendError(ValueError):
    """A backend that cannot serve the run: Ray not installed, a cluster out of reach, a job
    bigger than any machine."""


class Pool:
    """What every backend offers (see the module docstring)."""

    backend: str = ""
    workers: int = 1
    threads: int = 1

    @property
    def runs_here(self) -> bool:
        """Whether work runs in this process (a one-worker local pool)."""
        return False

    def submit(self, function: Callable[..., Any], *args: Any) -> Future:
        """Run ``function(*args)`` in a worker; ``function`` and ``args`` must pickle."""
        raise NotImplementedError

    def close(self, cancel: bool = False) -> None:
        """Release the workers: after the work in flight is done, or with ``cancel`` at once."""
        raise NotImplementedError

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(cancel=kind is not None)

    def map(
        self, function: Callable[[Any], Any], items: Sequence[Any], ordered: bool = True
    ) -> Iterator[Any]:
        """``function`` over ``items``: here when the pool :attr:`runs_here` or there is at most
        one item of a local pool, else in the workers. Results come in the items' order, or
        with ``ordered=False`` as each one finishes."""
        if self.runs_here or (self.backend == "local" and len(items) <= 1):
            for item in items:
                with _threads(self.threads):
                    result = function(item)
                yield result
            return
        futures = [self.submit(function, item) for item in items]
        if ordered:
            for future in futures:
                yield future.result()
            return
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()


def _init_worker(run_pid: int, threads: int) -> None:
    exit_with(run_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    if _HAS_TORCH:
        import torch

        torch.set_num_threads(threads)


class WorkerPool(Pool):
    """``workers`` local worker processes, started on first use (see the module docstring)."""

    backend = "local"

    def __init__(self, workers: int, cpus_per_job: float = 1):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.threads = max(1, int(cpus_per_job))
        self._executor: ProcessPoolExecutor | None = None

    @property
    def runs_here(self) -> bool:
        return self.workers == 1

    def close(self, cancel: bool = False) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if cancel:
            processes = list(executor._processes.values())  # no public way to end them
            executor.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.kill()
            for process in processes:
                process.join()
        executor.shutdown()

    def submit(self, function: Callable[..., Any], *args: Any) -> Future:
        if self._executor is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["omnigym"])
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=context,
                initializer=_init_worker,
                initargs=(os.getpid(), self.threads),
            )
        return self._executor.submit(function, *args)


def make_pool(
    workers: int,
    backend: str = "local",
    address: str | None = None,
    cpus_per_job: float = 1,
    memory_per_job: int | None = None,
    job: str = "each job",
) -> Pool:
    """The pool of ``backend``: ``workers`` local processes, or Ray tasks on the cluster at
    ``address`` (``None``: one started here with ``workers`` × ``cpus_per_job`` CPUs; ``"auto"``:
    the cluster this machine belongs to; ``HOST:PORT``: its head node). Every job asks for
    ``cpus_per_job`` CPUs and ``memory_per_job`` bytes (Ray schedules by them). Raises
    :class:`BackendError`, naming ``job`` and the numbers, for what cannot be served."""
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if backend == "local":
        if address is not None:
            raise BackendError(f"an address ({address}) is for the ray backend, not local")
        cpus = os.cpu_count() or 1
        if cpus_per_job > cpus:
            raise BackendError(
                f"{job} asks for {cpus_per_job:g} CPUs (cpus_per_job) but this machine has {cpus}"
            )
        return WorkerPool(workers, cpus_per_job)
    from omnigym.ray_pool import RayPool

    return RayPool(workers, address, cpus_per_job, memory_per_job, job)


def _threads(count: int) -> Any:
    return torch_threads(count) if _HAS_TORCH else nullcontext()
