"""The reproduction dashboard: every paper's claims on one page (``omnigym claims``).

Each paper's claims experiment is a scenario in ``scenarios/claims/`` (:func:`claims_scenarios`).
The dashboard reads, per paper, the ``claims.json`` and ``scorecard.json`` of its run folder
(:func:`omnigym.evaluators.experiment.run_folder`), or, for the full profile when that folder has
no run, the recorded full run committed under ``docs/results/<paper>/``. It writes
``index.md`` and a self-contained ``index.html``: per paper, each claim with its status, the
paper's numbers and ours (with 95% CIs), and a link to the run's report (re-rendered from the
recorded scorecard for recorded runs).
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from omnigym.io import atomic_write_text
from omnigym.scenario import Scenario, load_scenario

from .claims import STATUSES, format_claims, read_claims
from .experiment import run_folder
from .report import REPORT_CSS, section_claims, write_report

CLAIMS_FOLDER = "claims"
RECORDED = Path(__file__).resolve().parents[1] / "docs" / "results"
"""Where a checkout keeps the recorded full runs (``docs/results/<paper>/``)."""


def claims_scenarios() -> dict[str, Path]:
    """Paper name → its claims scenario file, for every ``scenarios/claims/*.yaml`` (data of
    the ``omnigym.scenarios`` package)."""
    folder = Path(str(resources.files("omnigym.scenarios").joinpath(CLAIMS_FOLDER)))
    return {file.stem: file for file in sorted(folder.glob("*.yaml"))}


@dataclass(frozen=True)
class Entry:
    """One paper on the dashboard: its scenario, where its results come from and what they say
    (``claims`` is None when it has no run yet)."""

    paper: str
    scenario: Scenario
    source: str  # "run" | "recorded" | "none"
    folder: Path | None
    claims: dict[str, Any] | None


def collect(
    quick: bool = False, recorded: Path | None = None, papers: list[str] | None = None
) -> list[Entry]:
    """The results of ``papers`` (default all): each one's run folder for the profile, else
    (full profile) its recorded run under ``recorded`` (default :data:`RECORDED`)."""
    recorded = RECORDED if recorded is None else recorded
    entries = []
    for paper, file in claims_scenarios().items():
        if papers is not None and paper not in papers:
            continue
        scenario = load_scenario(file)
        if quick:
            scenario = scenario.quickened()
        folder = run_folder(scenario)
        claims = read_claims(folder)
        if claims is not None and claims.get("profile", "full") == scenario.profile:
            entries.append(Entry(paper, scenario, "run", folder, claims))
            continue
        stored = recorded / paper
        if not quick and (stored / "claims.json").exists():
            entries.append(Entry(paper, scenario, "recorded", stored, read_claims(stored)))
            continue
        entries.append(Entry(paper, scenario, "none", None, None))
    return entries


def write_dashboard(entries: list[Entry], out: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``index.md`` and ``index.html`` into ``out`` (and each recorded run's report under
    ``out/<paper>/``); return both paths."""
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    links = {entry.paper: _report_link(entry, target) for entry in entries}
    markdown = _markdown(entries, links)
    page = _html(entries, links)
    return (
        atomic_write_text(target / "index.md", markdown),
        atomic_write_text(target / "index.html", page),
    )


def _report_link(entry: Entry, out: Path) -> str | None:
    """A relative link to the run's report: the run folder's, or one rendered here from the
    recorded scorecard."""
    if entry.folder is None:
        return None
    report = entry.folder / "report.html"
    if entry.source == "recorded":
        scorecard_file = entry.folder / "scorecard.json"
        if not scorecard_file.exists():
            return None
        scorecard = json.loads(scorecard_file.read_text(encoding="utf-8"))
        report = write_report(
            scorecard,
            out / entry.paper,
            title=f"{entry.scenario.name} (recorded run)",
            claims=entry.claims,
        )
    if not report.exists():
        return None
    return os.path.relpath(report.resolve(), out.resolve())


def _counts(claims: dict[str, Any] | None) -> Counter:
    return Counter(c["status"] for c in (claims or {}).get("claims", []))


def _tally(counts: Counter) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) or "no claims"


def _source_text(entry: Entry) -> str:
    if entry.source == "none":
        command = f"omnigym run scenarios/claims/{entry.paper}.yaml"
        quick = " --quick" if entry.scenario.profile == "quick" else ""
        return f"not run yet: `{command}{quick}`"
    profile = entry.claims.get("profile", "full")
    if entry.source == "recorded":
        return f"recorded full run in `docs/results/{entry.paper}`"
    return f"{profile} run in `{entry.folder}`"


def _markdown(entries: list[Entry], links: dict[str, str | None]) -> str:
    lines = ["# Claims dashboard", "", "| paper | claims | results | report |", "|---|---|---|---|"]
    for entry in entries:
        link = links[entry.paper]
        lines.append(
            f"| {entry.paper} | {_tally(_counts(entry.claims))} | {_source_text(entry)} | "
            f"{f'[report]({link})' if link else '–'} |"
        )
    for entry in entries:
        lines += ["", f"# {entry.paper}", "", entry.scenario.paper or entry.scenario.description]
        lines += ["", _source_text(entry), ""]
        if entry.claims is not None:
            lines.append(format_claims(entry.claims))
    return "\n".join(lines) + "\n"


def _html(entries: list[Entry], links: dict[str, str | None]) -> str:
    rows = []
    sections = []
    for entry in entries:
        counts = _counts(entry.claims)
        link = links[entry.paper]
        anchor = html.escape(entry.paper)
        report = f'<a href="{html.escape(link)}">report</a>' if link else "–"
        badges = "".join(
            f'<span class="status {s.replace(" ", "-")}">{counts[s]} {s}</span> '
            for s in STATUSES
            if counts[s]
        )
        rows.append(
            f'<tr><td class="text"><a href="#{anchor}">{anchor}</a></td>'
            f'<td class="text">{badges or "–"}</td>'
            f'<td class="text">{html.escape(_source_text(entry).replace("`", ""))}</td>'
            f"<td>{report}</td></tr>"
        )
        body = (
            section_claims(entry.claims, heading="Claims")
            if entry.claims is not None
            else '<p class="note">No run yet.</p>'
        )
        sections.append(
            f'<section id="{anchor}"><h2>{anchor}</h2>'
            f'<p class="summary">{html.escape(entry.scenario.paper or entry.scenario.description)}'
            f'</p><p class="note">{html.escape(_source_text(entry).replace("`", ""))} · '
            f"{report}</p>{body}</section>"
        )
    total = sum((_counts(e.claims) for e in entries), Counter())
    overview = html.escape(f"{len(entries)} papers; claims: {_tally(total)}")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>omnigym claims dashboard</title>
<style>{REPORT_CSS}
section h2 {{ margin-top: 40px; }}
section section h2 {{ font-size: 15px; border: none; margin: 12px 0 4px; }}
.status {{ margin-right: 8px; }}
</style>
</head>
<body>
<main>
<h1>Claims dashboard</h1>
<p class="summary">{overview}. Each paper's claims experiment reproduces its main claims at CPU
scale; a failing claim is a finding, explained in the family's page under docs/.</p>
<table class="results"><tr><th class="text">paper</th><th class="text">claims</th>
<th class="text">results</th><th>report</th></tr>{"".join(rows)}</table>
{"".join(sections)}
<footer>Measured values: means with 95% stratified bootstrap confidence intervals over run seeds
(rliable, Agarwal et al., NeurIPS 2021), as each checker reports them.</footer>
</main>
</body>
</html>
"""
