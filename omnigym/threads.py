"""One torch thread for small numeric work on a shared CPU.

Tiny networks and small batches gain nothing from several intra-op threads on a 2-core machine:
the hand-offs cost more than the arithmetic (about 10x slower, measured on the Safe agents), so
agents and tests that train them run on one torch thread. torch is imported only when the block
is entered; importing omnigym never imports it. :func:`map_in_workers` runs a function over
items in a :class:`~omnigym.pool.WorkerPool` of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` torch intra-op threads, then restore the process's count."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def one_torch_thread() -> AbstractContextManager[None]:
    """Run the block with one torch intra-op thread, then restore the process's thread count."""
    return torch_threads(1)


def map_in_workers(
    workers: int, function: Callable[[Any], Any], items: Sequence[Any], ordered: bool = True
) -> Iterator[Any]:
    """``function`` over ``items`` in a pool of ``workers`` started for this call alone
    (:meth:`omnigym.pool.Pool.map` of a :class:`~omnigym.pool.WorkerPool`: here when
    ``workers == 1``, else in processes with one torch thread each). Results come in the items'
    order, or with ``ordered=False`` as each one finishes."""
    from omnigym.pool import WorkerPool

    with WorkerPool(workers) as pool:
        yield from pool.map(function, items, ordered=ordered)
