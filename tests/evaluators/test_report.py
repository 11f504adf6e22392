"""The HTML report: one self-contained page with embedded plots, tables and comparisons."""

import base64
import re
import subprocess
import sys

import numpy as np

from omnigym.evaluators.report import agent_colors, smoothed_curve, write_report


def summary(mean, half_width=1.0):
    return {
        "mean": mean,
        "median": mean,
        "iqm": mean,
        "ci95": [mean - half_width, mean + half_width],
    }


def result(env_id, agent, mean, normalized=None, **extra):
    row = {
        "env_id": env_id,
        "agent": agent,
        "episodes": 6,
        "return": summary(mean),
        "success_rate": None,
        "metrics": {},
        **extra,
    }
    if normalized is not None:
        row["normalized_score"] = summary(normalized, 5.0)
    return row


def scorecard(results):
    """A scorecard dict around ``results``, with probability 0.75 for every ordered pair."""
    envs = sorted({r["env_id"] for r in results})
    comparisons = [
        {"env_id": x["env_id"], "agent_x": x["agent"], "agent_y": y["agent"]}
        | {"probability_of_improvement": 0.75 if x["agent"] < y["agent"] else 0.25}
        for x in results
        for y in results
        if x["env_id"] == y["env_id"] and x["agent"] != y["agent"]
    ]
    return {
        "results": sorted(results, key=lambda r: (r["env_id"], r["agent"])),
        "comparisons": comparisons,
        "agents": sorted({r["agent"] for r in results}),
        "envs": envs,
    }


def three_env_card():
    return scorecard(
        [
            result("Fake/Maze-v0", "bc", -40.0, normalized=35.0, success_rate=0.5),
            result("Fake/Maze-v0", "oracle", -4.0, normalized=90.0, success_rate=1.0),
            result("Fake/Wordle-v0", "bc", -3.0, normalized=58.0),
            result("Fake/Wordle-v0", "oracle", -1.0, normalized=99.0),
            result("Fake/Safe-v0", "bc", 11.0, cost=summary(2.0)),
            result("Fake/Safe-v0", "oracle", 19.5, cost=summary(0.0, 0.0)),
        ]
    )


def images(page):
    return re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)


def test_report_is_one_self_contained_html_file(tmp_path):
    path = write_report(three_env_card(), tmp_path / "out", title="Three envs")
    assert path == tmp_path / "out" / "report.html"
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>Three envs</title>" in page
    assert not re.search(r"\bhref=", page)
    assert re.findall(r'\bsrc="([^"]*)"', page)
    assert all(
        src.startswith("data:image/png;base64,") for src in re.findall(r'\bsrc="([^"]*)"', page)
    )
    assert "<link" not in page and "<script" not in page and "url(" not in page


def test_report_embeds_score_bars_profile_and_tables(tmp_path):
    page = write_report(three_env_card(), tmp_path).read_text()
    pngs = images(page)
    # Normalized-score bars, return panels for the env without one, the performance profile.
    assert len(pngs) == 3
    assert all(base64.b64decode(png).startswith(b"\x89PNG\r\n\x1a\n") for png in pngs)
    assert "3 envs · 2 agents · 36 episodes" in page
    assert "Performance profile" in page
    assert "Probability of improvement" in page
    assert "Average over envs" in page
    assert "-4.00 [-5.00, -3.00]" in page
    assert "90.00 [85.00, 95.00]" in page
    assert "100%" in page


def test_report_skips_the_profile_with_fewer_than_two_normalized_envs(tmp_path):
    card = scorecard([result("Fake/Maze-v0", "bc", 1.0), result("Fake/Maze-v0", "oracle", 2.0)])
    page = write_report(card, tmp_path).read_text()
    assert len(images(page)) == 1
    assert "Performance profile" not in page
    assert "Average over envs" not in page


def test_report_of_one_agent_has_no_improvement_section(tmp_path):
    page = write_report(scorecard([result("Fake/Maze-v0", "solo", 1.0)]), tmp_path).read_text()
    assert "Probability of improvement" not in page
    assert len(images(page)) == 1


def test_report_escapes_names(tmp_path):
    card = scorecard([result("Fake/<Maze>-v0", "<b>bold</b>", 1.0)])
    page = write_report(card, tmp_path, title="A & B").read_text()
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "Fake/&lt;Maze&gt;-v0" in page
    assert "<h1>A &amp; B</h1>" in page


def test_agent_colors_are_stable_and_distinct():
    colors = agent_colors(["bc", "oracle", "random"])
    assert list(colors) == ["bc", "oracle", "random"]
    assert len(set(colors.values())) == 3
    assert agent_colors(["bc", "oracle", "random"]) == colors


def test_importing_the_report_module_does_not_import_matplotlib():
    code = "import sys, omnigym.evaluators.report; print('matplotlib' in sys.modules)"
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert output.stdout.strip() == "False"


def curve(agent, seed, returns, env_id="Fake/Maze-v0", every=100):
    return {
        "env_id": env_id,
        "agent": agent,
        "seed": seed,
        "timesteps": [every * (i + 1) for i in range(len(returns))],
        "returns": list(returns),
    }


def test_report_plots_learning_curves_when_an_agent_has_one(tmp_path):
    card = scorecard(
        [result("Fake/Maze-v0", "ppo", -30.0), result("Fake/Maze-v0", "random", -90.0)]
    )
    curves = [curve("ppo", 0, [-100, -80, -40]), curve("ppo", 1, [-95, -60, -35])]
    page = write_report(card, tmp_path, learning_curves=curves).read_text()
    assert "<h2>Learning curves</h2>" in page
    assert len(images(page)) == 2  # the return panels and the learning curves
    assert page.index("Learning curves") < page.index("<h2>Results</h2>")


def test_report_without_learning_curves_has_no_curve_section(tmp_path):
    card = scorecard([result("Fake/Maze-v0", "ppo", -30.0)])
    for curves in ((), [curve("someone-else", 0, [-1.0])]):
        page = write_report(card, tmp_path, learning_curves=curves).read_text()
        assert "Learning curves" not in page and len(images(page)) == 1


def test_smoothed_curve_is_the_running_mean_at_each_episode_end():
    t, r = smoothed_curve([300, 100, 200, 400], [-1.0, -9.0, -5.0, -3.0], window=2)
    np.testing.assert_array_equal(t, [200, 300, 400])  # sorted by timesteps first
    np.testing.assert_array_equal(r, [-7.0, -3.0, -2.0])
    t, r = smoothed_curve([10, 20], [-4.0, -2.0], window=5)  # the window shrinks to the run
    assert t.tolist() == [20] and r.tolist() == [-3.0]
