"""Space helpers shared by every family: the printable text space and action checks.

Gymnasium's ``Text`` defaults (alphanumeric charset, ``min_length=1``) cannot hold a transcript,
so text environments build their spaces with :func:`text_space` instead.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

PRINTABLE = "".join(chr(code) for code in range(32, 127)) + "\n"
"""Printable ASCII (space included) plus newline: the charset of every omnigym text space."""


def text_space(max_length: int) -> spaces.Text:
    """A ``Text`` space of up to ``max_length`` printable characters, possibly empty."""
    return spaces.Text(max_length, min_length=0, charset=PRINTABLE)


def describe(space: spaces.Space) -> str:
    """A short human name for ``space`` (``Text`` reprs print their whole charset)."""
    if isinstance(space, spaces.Text):
        return f"Text(min_length={space.min_length}, max_length={space.max_length})"
    return repr(space)


def require_text_action(action: Any, space: spaces.Text) -> None:
    """Raise ``ValueError`` naming ``space`` unless ``action`` is a ``str``.

    Only the type is checked: a string that is too long, has characters outside the charset or
    does not parse is a legal *move* that the task penalises (``docs/architecture.md``).
    """
    if not isinstance(action, str):
        raise ValueError(
            f"action {action!r} ({type(action).__name__}) is not in the action space "
            f"{describe(space)}: text environments take a str"
        )


def require_action(action: Any, space: spaces.Space) -> None:
    """Raise ``ValueError`` naming ``space`` and the value unless ``space.contains(action)``."""
    if not space.contains(action):
        raise ValueError(f"action {action!r} is not in the action space {describe(space)}")
