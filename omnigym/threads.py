"""One torch thread for small numeric work on a shared CPU.

Tiny networks and small batches gain nothing from several intra-op threads on a 2-core machine:
the hand-offs cost more than the arithmetic (about 10x slower, measured on the Safe agents), so
agents and tests that train them run on one torch thread. torch is imported only when the block
is entered; importing omnigym never imports it (DESIGN §2).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


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
