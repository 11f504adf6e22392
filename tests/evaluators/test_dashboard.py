"""The claims dashboard: recorded runs, run folders and papers without a run, on one page."""

import json

from omnigym.cli import main
from omnigym.evaluators import dashboard
from omnigym.evaluators.claims import claim
from omnigym.evaluators.rollout import evaluate
from omnigym.evaluators.scorecard import build_scorecard


def _recorded(folder, statement, status):
    folder.mkdir(parents=True)
    records = evaluate("LMRL/MazeFO-v0", "oracle", episodes=2)
    (folder / "scorecard.json").write_text(json.dumps(build_scorecard(records)))
    claims = {
        "experiment": folder.name,
        "paper": "A paper",
        "profile": "full",
        "claims": [claim(1, statement, status, {"mean": 0.5, "ci95": [0.4, 0.6]}, 0.7)],
    }
    (folder / "claims.json").write_text(json.dumps(claims))


def test_report_builds_the_dashboard_from_recorded_runs(tmp_path, monkeypatch, capsys):
    recorded = tmp_path / "recorded"
    _recorded(recorded / "sdqc", "SDQC is the safest", "pass")
    monkeypatch.setattr(dashboard, "RECORDED", recorded)
    monkeypatch.chdir(tmp_path)  # no results/ folder here: only recorded runs
    assert main(["claims", "--report", "--papers", "sdqc", "--out", "board"]) == 0
    page = (tmp_path / "board" / "index.html").read_text()
    assert "SDQC is the safest" in page and "0.5 [0.4, 0.6]" in page
    assert 'href="sdqc/report.html"' in page and (tmp_path / "board/sdqc/report.html").exists()
    markdown = (tmp_path / "board" / "index.md").read_text()
    assert "| sdqc | 1 pass | recorded full run" in markdown
    assert "sdqc: 1 pass" in capsys.readouterr().out
    assert main(["claims", "--report", "--quick", "--papers", "sdqc", "--out", "quick"]) == 0
    assert "not run yet" in (tmp_path / "quick" / "index.html").read_text()


def test_a_run_folder_of_the_profile_wins_over_the_recorded_run(tmp_path, monkeypatch):
    recorded = tmp_path / "recorded"
    _recorded(recorded / "sdqc", "recorded claim", "fail")
    monkeypatch.chdir(tmp_path)
    scenario = dashboard.load_scenario(dashboard.claims_scenarios()["sdqc"])
    _recorded(tmp_path / scenario.out, "fresh claim", "pass")
    (entry,) = dashboard.collect(recorded=recorded, papers=["sdqc"])
    assert entry.source == "run" and entry.claims["claims"][0]["statement"] == "fresh claim"
    (quick,) = dashboard.collect(quick=True, recorded=recorded, papers=["sdqc"])
    assert quick.source == "none"  # a quick dashboard never shows full runs


def test_unknown_papers_are_a_usage_error(capsys):
    assert main(["claims", "--report", "--papers", "nope"]) == 2
    assert "unknown papers ['nope']" in capsys.readouterr().err
