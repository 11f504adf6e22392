"""One torch thread for small numeric work on a shared CPU.

Tiny networks and small batches gain nothing from several intra-op threads on a 2-core machine:
the hand-offs cost more than the arithmetic (about 10x slower, measured on the Safe agents), so
agents and tests that train them run on one torch thread. torch is imported only when the block
is entered; importing omnigym never imports it (DESIGN §2). :func:`map_in_workers` runs a
function over items in worker processes that each keep to one torch thread.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block with one torch intra-op thread, then restore the process's thread count."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _set_one_torch_thread() -> None:
    import torch

    torch.set_num_threads(1)


def map_in_workers(
    workers: int, function: Callable[[Any], Any], items: Sequence[Any], ordered: bool = True
) -> Iterator[Any]:
    """``function`` over ``items``: here (with one torch thread) when ``workers == 1`` or there
    is at most one item, else in ``workers`` forkserver processes with one torch thread each.
    Results come in the items' order, or with ``ordered=False`` as each one finishes."""
    if workers == 1 or len(items) <= 1:
        with one_torch_thread():
            yield from map(function, items)
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["omnigym"])
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_set_one_torch_thread
    ) as pool:
        if ordered:
            yield from pool.map(function, items)
        else:
            for future in as_completed([pool.submit(function, item) for item in items]):
                yield future.result()
