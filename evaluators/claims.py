"""Claims files: a paper's claims checked on a run, as ``claims.json`` and ``claims.md``.

A claims checker (``options: {claims: "package.module:function"}`` in a scenario run by the
default runner, or a family runner's own) returns ``{"claims": [...]}`` where each entry is
:func:`claim`'s dict: the claim's number and text, its ``status`` — ``pass``, ``fail``,
``recorded`` (reported, not asserted) or ``not run`` (the run lacks what it needs) — and the
numbers behind it. The default runner calls the checker as ``function(scorecard, records)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omnigym.io import atomic_write_text

STATUSES = ("pass", "fail", "recorded", "not run")


def claim(number: int, text: str, status: str, **numbers: Any) -> dict[str, Any]:
    """One claim's entry; ``status`` must be one of :data:`STATUSES`."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    return {"claim": number, "text": text, "status": status, "numbers": numbers}


def write_claims(claims: Mapping[str, Any], folder: str | Path) -> str:
    """Write ``claims.json`` and ``claims.md`` into ``folder``; return the Markdown."""
    out = Path(folder)
    atomic_write_text(out / "claims.json", json.dumps(claims, indent=2) + "\n")
    markdown = format_claims(claims)
    atomic_write_text(out / "claims.md", markdown)
    return markdown


def format_claims(claims: Mapping[str, Any]) -> str:
    """The claims as a Markdown list: status first, then the claim and its headline numbers
    (the heading names ``claims["source"]`` when there is one)."""
    source = claims.get("source")
    lines = [f"## Claims ({source})" if source else "## Claims", ""]
    for entry in claims["claims"]:
        lines.append(f"{entry['claim']}. **{entry['status']}**: {entry['text']}.")
        lines.append(f"   `{_short(entry['numbers'])}`")
    return "\n".join(lines) + "\n"


def _short(numbers: Mapping[str, Any]) -> str:
    def compact(value: Any) -> Any:
        if isinstance(value, float):
            return round(value, 3)
        if isinstance(value, Mapping):
            return {k: compact(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [compact(v) for v in value]
        return value

    text = str(compact(dict(numbers)))
    return text if len(text) <= 600 else text[:597] + "..."
