"""docs/mcu.md stays true to the code: ids, registry sizes and task counts per category."""

import re
from collections import Counter
from pathlib import Path

import pytest

import omnigym
from omnigym.envs.mcu.registries import registry
from omnigym.envs.mcu.tasks import index

DOC = (Path(__file__).resolve().parents[2] / "docs" / "mcu.md").read_text()


@pytest.mark.parametrize("env_id", [info.id for info in omnigym.list_envs(family="MCU")])
def test_every_mcu_id_is_documented(env_id):
    assert f"`{env_id}`" in DOC


def test_documented_registry_sizes_are_the_data_files():
    reg = registry()
    assert f"{len(reg.blocks)} blocks" in DOC and f"{len(reg.items)} items" in DOC
    assert f"{len(reg.recipes)} crafting and {len(reg.smelting)} smelting recipes" in DOC
    assert f"{len(reg.mobs)} mobs" in DOC


def test_documented_task_counts_are_the_index():
    counts = Counter(entry["category"] for entry in index().values())
    for category, n in counts.items():
        row = re.search(rf"^\| {re.escape(category)} \|.*\| (\d+) \|$", DOC, re.M)
        assert row and int(row.group(1)) == n, category
    assert f"**{sum(counts.values())}**" in DOC
