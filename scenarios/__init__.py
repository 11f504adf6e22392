"""Scenario files shipped with omnigym (package data); ``path(name)`` finds one."""

from importlib import resources
from pathlib import Path


def path(name: str) -> Path:
    """The installed path of scenario ``name`` (e.g. ``"quickstart.yaml"``)."""
    return Path(str(resources.files(__name__).joinpath(name)))
