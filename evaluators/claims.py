"""Claims: a paper's claims checked on a run, as ``claims.json`` and ``claims.md``.

A paper's claims checker is a function beside its scenario (``scenarios/claims/<paper>.py``,
named in the scenario as ``claims: omnigym.scenarios.claims.<paper>:check``). The experiment kit
calls it once the run's scorecard is built, as ``check(run)`` with the finished
:class:`~omnigym.evaluators.experiment.Run` (scorecard, episode records, diagnostics, options),
and it returns a list of :func:`claim` entries::

    {"id": 1, "statement": "...", "measured": {...}, "paper": {...}, "status": "pass"}

``measured`` holds our numbers (a value, or a ``{"mean", "ci95"}`` summary, or a mapping of
them), ``paper`` the paper's reported numbers or wording for the same claim, and ``status`` one
of :data:`STATUSES`: ``pass`` and ``fail`` for claims that are checked, ``recorded`` for numbers
that are reported but not asserted, ``not run`` when the run lacks what the claim needs.
:func:`metric_summary` and :func:`sweep` read such summaries off the run's scorecard.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omnigym.io import atomic_write_text

STATUSES = ("pass", "fail", "recorded", "not run")
CLAIMS_JSON = "claims.json"
CLAIMS_MD = "claims.md"


def claim(
    id: int | str,  # noqa: A002  (the claim's id, as the paper numbers it)
    statement: str,
    status: str,
    measured: Any = None,
    paper: Any = None,
) -> dict[str, Any]:
    """One claim's entry; ``status`` must be one of :data:`STATUSES`."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    return {
        "id": id,
        "statement": statement,
        "measured": measured,
        "paper": paper,
        "status": status,
    }


def verdict(holds: bool) -> str:
    """``"pass"`` or ``"fail"``."""
    return "pass" if holds else "fail"


def metric_summary(result: Mapping[str, Any], metric: str) -> dict[str, Any] | None:
    """A scorecard result's ``metric`` as a ``{"mean", "ci95"}`` summary (None when its
    episodes report no value of it)."""
    summary = result["metrics"].get(metric)
    return None if summary is None else {"mean": summary["mean"], "ci95": list(summary["ci95"])}


def sweep(
    scorecard: Mapping[str, Any], envs: Mapping[Any, str], agent: str, metric: str
) -> dict[Any, dict[str, Any]]:
    """``agent``'s ``metric`` over a knob swept across environments: ``envs`` maps each knob
    value to its env label; the result maps, in knob order, each value the agent has the metric
    at to its :func:`metric_summary`."""
    results = {(r["env_id"], r["agent"]): r for r in scorecard["results"]}
    found = {}
    for knob, env_label in sorted(envs.items()):
        result = results.get((env_label, agent))
        summary = None if result is None else metric_summary(result, metric)
        if summary is not None:
            found[knob] = summary
    return found


def write_claims(document: Mapping[str, Any], folder: str | Path) -> str:
    """Write ``claims.json`` and ``claims.md`` (:func:`format_claims`) into ``folder``; return
    the Markdown. ``document`` holds ``claims`` and the run's ``experiment``, ``paper`` and
    ``profile``."""
    out = Path(folder)
    atomic_write_text(out / CLAIMS_JSON, json.dumps(document, indent=2) + "\n")
    markdown = format_claims(document)
    atomic_write_text(out / CLAIMS_MD, markdown)
    return markdown


def read_claims(folder: str | Path) -> dict[str, Any] | None:
    """The ``claims.json`` of a run folder, or None when it has none."""
    path = Path(folder) / CLAIMS_JSON
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def format_claims(document: Mapping[str, Any]) -> str:
    """The claims as Markdown: one line per claim with its status, then the paper's numbers and
    ours."""
    paper = document.get("paper")
    lines = [f"## Claims ({paper})" if paper else "## Claims", ""]
    profile = document.get("profile")
    if profile == "quick":
        lines += ["Quick profile: a smoke run at reduced size, not a measurement.", ""]
    for entry in document["claims"]:
        lines.append(f"{entry['id']}. **{entry['status']}**: {entry['statement']}.")
        if entry.get("paper") is not None:
            lines.append(f"   - paper: {format_value(entry['paper'])}")
        if entry.get("measured") is not None:
            lines.append(f"   - measured: {format_value(entry['measured'])}")
    return "\n".join(lines) + "\n"


def format_value(value: Any, limit: int = 600) -> str:
    """A compact one-line rendering of claim numbers: ``{"mean", "ci95"}`` summaries as
    ``m [lo, hi]``, floats to three significant decimals, mappings as ``key: value`` lists."""
    text = _compact(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _compact(value: Any) -> str:
    if isinstance(value, Mapping):
        if "mean" in value and "ci95" in value and value["ci95"] is not None:
            low, high = value["ci95"]
            return f"{_number(value['mean'])} [{_number(low)}, {_number(high)}]"
        return "; ".join(f"{key}: {_compact(item)}" for key, item in value.items())
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(_compact(item) for item in value) + "]"
    return _number(value)


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if value != value:  # NaN
        return "nan"
    magnitude = abs(value)
    if magnitude >= 100 or value == int(value):
        return f"{value:.1f}" if magnitude < 1e6 else f"{value:.3g}"
    return f"{value:.3g}" if magnitude >= 0.001 else f"{value:.2e}"
