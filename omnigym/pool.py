"""One worker pool for everything omnigym fans out: episodes, training jobs, rollouts.

:class:`WorkerPool` holds local worker processes (``forkserver`` start method: no fork of a
process that holds threads; ``omnigym`` preloaded), each keeping to one torch thread (tiny
networks gain nothing from intra-op threads on a few cores, and several workers would fight over
them). It starts on first use and lasts until ``close()`` (or the end of its ``with`` block), so
the workers and the libraries they imported serve a whole experiment instead of one call. With
one worker nothing is started: work runs here, on one torch thread.

Evaluations (:func:`omnigym.evaluators.rollout.evaluate`), the experiment kit's stages
(:mod:`omnigym.evaluators.experiment`), the Diplomacy matches and the papers' own jobs all take a
pool, so a backend that runs the same functions elsewhere has one place to plug in.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from omnigym.threads import one_torch_thread

_HAS_TORCH = importlib.util.find_spec("torch") is not None


def _init_worker() -> None:
    if _HAS_TORCH:
        import torch

        torch.set_num_threads(1)


class WorkerPool:
    """``workers`` local worker processes, started on first use (see the module docstring)."""

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self._executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def submit(self, function: Callable[..., Any], *args: Any) -> Future:
        """Run ``function(*args)`` in a worker process."""
        if self._executor is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["omnigym"])
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=context, initializer=_init_worker
            )
        return self._executor.submit(function, *args)

    def map(
        self, function: Callable[[Any], Any], items: Sequence[Any], ordered: bool = True
    ) -> Iterator[Any]:
        """``function`` over ``items``: here (on one torch thread) with one worker or at most
        one item, else in the workers. Results come in the items' order, or with
        ``ordered=False`` as each one finishes."""
        if self.workers == 1 or len(items) <= 1:
            for item in items:
                with _one_thread():
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


def _one_thread() -> Any:
    if _HAS_TORCH:
        return one_torch_thread()
    from contextlib import nullcontext

    return nullcontext()
