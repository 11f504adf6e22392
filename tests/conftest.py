"""Shared fixtures: every test runs with omnigym imported and a clean temporary folder."""

import pytest

import omnigym


@pytest.fixture
def out_dir(tmp_path):
    return tmp_path / "out"


SINGLE_IDS = [info.id for info in omnigym.list_envs(kind="single")]
MULTI_IDS = [info.id for info in omnigym.list_envs(kind="multi")]
