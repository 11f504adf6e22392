"""docs/lmrl.md stays true to the code: every task is listed with its committed constants."""

import re
from pathlib import Path

import pytest

import omnigym
from omnigym.envs.lmrl.normalization import load_constants

DOC = (Path(__file__).resolve().parents[2] / "docs" / "lmrl.md").read_text()


@pytest.mark.parametrize("env_id", [info.id for info in omnigym.list_envs(family="LMRL")])
def test_every_lmrl_id_is_documented(env_id):
    assert f"`{env_id}`" in DOC


@pytest.mark.parametrize("env_id", sorted(load_constants()))
def test_documented_constants_are_the_committed_ones(env_id):
    number = r"\s*(−?[\d.]+)\s*"
    row = re.search(rf"^\| `{re.escape(env_id)}` \|{number}\|{number}\|{number}\|", DOC, re.M)
    assert row, f"no constants row for {env_id}"
    documented = [float(cell.replace("−", "-")) for cell in row.groups()]
    constants = load_constants()[env_id]
    assert documented == pytest.approx([constants["min"], constants["avg"], constants["max"]])
