"""Fixtures the Craft engine tests share: the packaged material, tool and physics tables."""

import pytest

from omnigym.envs.craft.digging import ToolTable
from omnigym.envs.craft.engine import MaterialTable
from omnigym.envs.craft.physics import PhysicsConfig


@pytest.fixture(scope="module")
def materials():
    return MaterialTable.load()


@pytest.fixture(scope="module")
def config():
    return PhysicsConfig.load()


@pytest.fixture(scope="module")
def tools():
    return ToolTable.load()
