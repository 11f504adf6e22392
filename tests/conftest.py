"""Shared fixtures: every test runs with omnigym imported and a clean temporary folder.

``SINGLE_IDS`` and ``MULTI_IDS`` hold every registered id. MCU's curated suite (docs/mcu.md)
has about 200 ids that share one environment class, at about 1.5 CPU-seconds each through the
registry-wide tests, so a seeded sample of them runs in the fast suite and the rest carry the
``slow`` mark (``pytest -m "not slow"`` skips them; the full run checks every id).
"""

import random

import pytest

import omnigym

CURATED_FAST = 24
"""Curated MCU ids (atomic and composite) in the fast suite, drawn with seed 0."""


@pytest.fixture
def out_dir(tmp_path):
    return tmp_path / "out"


def sampled(ids):
    """``ids`` with every curated MCU id outside the seeded fast sample marked ``slow``."""
    curated = [info.id for info in omnigym.list_envs(family="MCU") if info.kwargs]
    fast = set(random.Random(0).sample(curated, min(CURATED_FAST, len(curated))))
    slow = set(curated) - fast
    return [pytest.param(i, marks=pytest.mark.slow) if i in slow else i for i in ids]


SINGLE_IDS = sampled([info.id for info in omnigym.list_envs(kind="single")])
MULTI_IDS = [info.id for info in omnigym.list_envs(kind="multi")]
