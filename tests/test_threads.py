"""omnigym.threads: one torch thread in a block, and map_in_workers here or in processes."""

import math

import pytest

from omnigym.threads import map_in_workers, one_torch_thread

torch = pytest.importorskip("torch")


def test_one_torch_thread_restores_the_thread_count():
    before = torch.get_num_threads()
    with one_torch_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("workers", [1, 2])
def test_map_in_workers_keeps_order_unless_told(workers):
    items = [float(i) for i in range(12)]
    expected = [math.sqrt(x) for x in items]
    assert list(map_in_workers(workers, math.sqrt, items)) == expected
    assert sorted(map_in_workers(workers, math.sqrt, items, ordered=False)) == expected
