"""The HTML report: one self-contained page that shows a scorecard at a glance.

The plots follow rliable (Agarwal et al., NeurIPS 2021): point estimates always come with their
95% stratified bootstrap confidence intervals, envs with a normalized score share one axis and
get a performance profile (the fraction of envs whose score exceeds each threshold τ), and agents
are compared by probability of improvement. The page reads only a scorecard dict from
:func:`omnigym.evaluators.scorecard.build_scorecard`; statistics come from
:mod:`omnigym.evaluators.stats`.

Departure from rliable: a scorecard keeps summaries, not runs, and LMRL-style normalizers only
exist for summaries, so the performance profile is drawn over each env's mean normalized score
(one point per env) rather than over individual runs, and has no confidence band.

Agents that train may also bring learning curves (episode return against training timesteps,
per run seed, from :meth:`omnigym.evaluators.experiment.RunFolder.learning_curves`); the page
then plots them, one panel per env: each seed as a thin line (a running mean over 5% of its
episodes), the mean over seeds as a thick one, and the evaluation mean of every agent without a
curve as a dashed reference line.

Everything is inlined (CSS in a ``<style>`` element, plots as matplotlib PNGs in
``data:image/png;base64`` URIs), so the file can be mailed or archived alone. matplotlib is
imported inside the plotting functions, and only its object-oriented Agg API is used (no pyplot
state), so importing this module is cheap and never touches a user's interactive backend.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from omnigym.evaluators.scorecard import format_interval, format_number, format_percent, overview
from omnigym.evaluators.stats import performance_profile
from omnigym.io import atomic_write_text

#: Okabe–Ito colours (readable with colour-vision deficiencies), without the yellow that vanishes
#: on white; agents take them in sorted order, the same in every plot and table.
AGENT_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")

REPORT_CSS = """
:root { color-scheme: light; }
body { margin: 0; background: #f6f7f9; color: #1d2330;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 28px 32px 48px; background: #fff;
       box-shadow: 0 0 0 1px #e3e6eb; min-height: 100vh; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #e3e6eb; }
h3 { font-size: 15px; margin: 0 0 6px; }
p.summary { margin: 0 0 10px; color: #4a5263; }
p.note { color: #5b6475; font-size: 13px; margin: 4px 0 10px; }
td.agent, td.env { white-space: nowrap; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px;
          margin-right: 6px; vertical-align: -1px; }
.figures { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 16px 40px; }
figure { margin: 8px 0 0; max-width: 100%; }
figcaption { color: #5b6475; font-size: 13px; margin-top: 4px; }
figure img { display: block; max-width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 13.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 10px; border-bottom: 1px solid #e9ecf0; text-align: right; }
th { background: #f1f3f6; font-weight: 600; border-bottom: 1px solid #cfd4dc; }
th.text, td.text, td.env, td.agent { text-align: left; }
td.env { font-weight: 600; vertical-align: top; border-right: 1px solid #e9ecf0; }
td.missing { color: #9aa1ad; }
.results { width: 100%; }
.matrices { display: flex; flex-wrap: wrap; gap: 20px 32px; }
.matrix th, .matrix td { text-align: center; min-width: 56px; }
.matrix th.text, .matrix td.agent { text-align: left; }
.matrix td.diag { color: #9aa1ad; background: #f6f7f9; }
footer { margin-top: 40px; font-size: 12px; color: #7a8291; }
.claims td { text-align: left; vertical-align: top; }
.status { font-weight: 600; white-space: nowrap; }
.status.pass { color: #1a7f37; } .status.fail { color: #c62828; }
.status.recorded, .status.not-run { color: #5b6475; }
"""


def write_report(
    scorecard: Mapping[str, Any],
    out_dir: str | os.PathLike,
    title: str = "omnigym scorecard",
    learning_curves: Sequence[Mapping[str, Any]] = (),
    claims: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``report.html`` (one self-contained page) for ``scorecard`` into ``out_dir``.

    The page shows per-env score bars with 95% CI whiskers (normalized score where the env has
    one, else return), a performance profile when two or more envs have normalized scores, the
    learning curves when ``learning_curves`` has any (records with ``env_id``, ``agent``,
    ``seed``, ``timesteps`` and ``returns``), the results table and the
    probability-of-improvement matrices; first, when ``claims`` is given (a ``claims.json``
    document), the paper's claims with their status. Returns the file's path.
    """
    colors = agent_colors(scorecard["agents"])
    normalized_envs = [
        env
        for env in scorecard["envs"]
        if any("normalized_score" in r for r in _rows(scorecard, env))
    ]
    return_envs = [env for env in scorecard["envs"] if env not in normalized_envs]
    sections = [section_claims(claims)] if claims else []
    sections.append(_section_scores(scorecard, normalized_envs, return_envs, colors))
    if len(normalized_envs) >= 2:
        sections.append(_section_profile(scorecard, normalized_envs, colors))
    curves = [c for c in learning_curves if c["agent"] in colors and c["timesteps"]]
    if curves:
        sections.append(_section_learning(scorecard, curves, colors))
    sections.append(_section_results(scorecard, colors))
    if scorecard["comparisons"]:
        sections.append(_section_improvement(scorecard, colors))
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{REPORT_CSS}</style>
</head>
<body>
<main>
<h1>{html.escape(title)}</h1>
<p class="summary">{html.escape(overview(scorecard))}</p>
{"".join(sections)}
<footer>Bars and intervals: mean with its 95% stratified percentile bootstrap confidence interval
over run seeds; probability of improvement on returns. Methods follow rliable (Agarwal et al.,
NeurIPS 2021).</footer>
</main>
</body>
</html>
"""
    return atomic_write_text(Path(out_dir) / "report.html", page)


def section_claims(claims: Mapping[str, Any], heading: str = "Claims") -> str:
    """An HTML section with one row per claim: status, statement, the paper's numbers, ours."""
    rows = []
    for entry in claims["claims"]:
        status = entry["status"]
        rows.append(
            f'<tr><td class="status {status.replace(" ", "-")}">{html.escape(status)}</td>'
            f"<td>{html.escape(str(entry['id']))}. {html.escape(entry['statement'])}</td>"
            f"<td>{_claim_value(entry.get('paper'))}</td>"
            f"<td>{_claim_value(entry.get('measured'))}</td></tr>"
        )
    note = ""
    if claims.get("profile") == "quick":
        note = '<p class="note">Quick profile: a smoke run at reduced size, not a measurement.</p>'
    return (
        f"<section><h2>{html.escape(heading)}</h2>{note}"
        '<table class="claims"><tr><th class="text">status</th><th class="text">claim</th>'
        '<th class="text">paper</th><th class="text">measured (95% CI)</th></tr>'
        f"{''.join(rows)}</table></section>"
    )


def _claim_value(value: Any) -> str:
    from .claims import format_value

    return "–" if value is None else html.escape(format_value(value, limit=400))


def agent_colors(agents: Sequence[str]) -> dict[str, str]:
    """One colour per agent, in the given order, cycling :data:`AGENT_COLORS`."""
    return {agent: AGENT_COLORS[i % len(AGENT_COLORS)] for i, agent in enumerate(agents)}


def _rows(scorecard: Mapping[str, Any], env_id: str) -> list[Mapping[str, Any]]:
    return [r for r in scorecard["results"] if r["env_id"] == env_id]


def _section_scores(
    scorecard: Mapping[str, Any],
    normalized_envs: list[str],
    return_envs: list[str],
    colors: dict[str, str],
) -> str:
    figures = []
    if normalized_envs:
        figures.append(
            _embed(
                _plot_grouped_bars(scorecard, normalized_envs, colors),
                alt="Normalized score per environment and agent with 95% CIs",
                caption="Normalized score per env, one bar per agent: mean and 95% CI.",
            )
        )
    if return_envs:
        figures.append(
            _embed(
                _plot_return_panels(scorecard, return_envs, colors),
                alt="Return per environment and agent with 95% CIs",
                caption="Return per env without a normalized score: mean and 95% CI;"
                " each panel has its own scale.",
            )
        )
    return f'<section><h2>Scores</h2><div class="figures">{"".join(figures)}</div></section>'


def _section_profile(
    scorecard: Mapping[str, Any], normalized_envs: list[str], colors: dict[str, str]
) -> str:
    figure = _embed(
        _plot_profile(scorecard, normalized_envs, colors),
        alt="Performance profile over normalized scores",
        caption="Fraction of envs whose mean normalized score exceeds τ;"
        " the curve further up and to the right is better.",
    )
    return f"<section><h2>Performance profile</h2>{figure}</section>"


def _section_learning(
    scorecard: Mapping[str, Any], curves: list[Mapping[str, Any]], colors: dict[str, str]
) -> str:
    figure = _embed(
        _plot_learning_curves(scorecard, curves, colors),
        alt="Training return against timesteps per environment and agent",
        caption="Training episode return against environment steps: thin lines are run seeds"
        f" (running means over {SMOOTHING_FRACTION:.0%} of their episodes), the thick line their"
        " mean; dashed lines are the evaluation means of agents without training.",
    )
    return f"<section><h2>Learning curves</h2>{figure}</section>"


def _section_results(scorecard: Mapping[str, Any], colors: dict[str, str]) -> str:
    results = scorecard["results"]
    show_success = any(r["success_rate"] is not None for r in results)
    show_normalized = any("normalized_score" in r for r in results)
    show_cost = any("cost" in r for r in results)
    headers = ["env", "agent", "episodes", "return [95% CI]", "return IQM"]
    headers += ["success"] * show_success
    headers += ["normalized [95% CI]"] * show_normalized
    headers += ["cost [95% CI]"] * show_cost
    body = []
    for env_id in scorecard["envs"]:
        rows = _rows(scorecard, env_id)
        for i, row in enumerate(rows):
            cells = []
            if i == 0:
                cells.append(f'<td class="env" rowspan="{len(rows)}">{html.escape(env_id)}</td>')
            cells.append(_agent_cell(row["agent"], colors))
            cells.append(f"<td>{row['episodes']}</td>")
            cells.append(f"<td>{format_interval(row['return'])}</td>")
            cells.append(f"<td>{format_number(row['return']['iqm'])}</td>")
            if show_success:
                rate = row["success_rate"]
                cells.append(_cell(None if rate is None else format_percent(rate)))
            if show_normalized:
                cells.append(_cell(_interval_or_none(row, "normalized_score")))
            if show_cost:
                cells.append(_cell(_interval_or_none(row, "cost")))
            body.append(f"<tr>{''.join(cells)}</tr>")
    head = "".join(
        f'<th class="text">{h}</th>' if h in ("env", "agent") else f"<th>{html.escape(h)}</th>"
        for h in headers
    )
    return (
        '<section><h2>Results</h2><table class="results">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></section>"
    )


def _section_improvement(scorecard: Mapping[str, Any], colors: dict[str, str]) -> str:
    matrices = []
    by_env: dict[str, dict[tuple[str, str], float]] = {}
    for c in scorecard["comparisons"]:
        pair = (c["agent_x"], c["agent_y"])
        by_env.setdefault(c["env_id"], {})[pair] = c["probability_of_improvement"]
    if len(by_env) >= 2:
        pairs = {pair for table in by_env.values() for pair in table}
        averaged = {
            pair: float(np.mean([t[pair] for t in by_env.values() if pair in t])) for pair in pairs
        }
        matrices.append(_matrix("Average over envs", averaged, colors))
    matrices += [_matrix(env_id, table, colors) for env_id, table in by_env.items()]
    return (
        "<section><h2>Probability of improvement</h2>"
        '<p class="note">Each cell is P(row agent’s return &gt; column agent’s return) + ½·P(tie)'
        " over episodes; above 0.5 (blue) the row agent tends to do better. The average over"
        " envs is rliable’s aggregate.</p>"
        f'<div class="matrices">{"".join(matrices)}</div></section>'
    )


def _matrix(caption: str, table: dict[tuple[str, str], float], colors: dict[str, str]) -> str:
    agents = sorted({agent for pair in table for agent in pair})
    head = '<th class="text">row &gt; column</th>' + "".join(
        f"<th>{_swatch(a, colors)}{html.escape(a)}</th>" for a in agents
    )
    rows = []
    for x in agents:
        cells = [_agent_cell(x, colors)]
        for y in agents:
            if x == y:
                cells.append('<td class="diag">–</td>')
            elif (x, y) in table:
                p = table[(x, y)]
                cells.append(f'<td style="background:{_diverging(p)}">{p:.2f}</td>')
            else:
                cells.append('<td class="missing">–</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<div><h3>{html.escape(caption)}</h3><table class="matrix">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _diverging(p: float) -> str:
    """Red (0) through white (0.5) to blue (1), light enough for dark text."""
    red, white, blue = (
        np.array([244, 165, 130]),
        np.array([255, 255, 255]),
        np.array([146, 197, 222]),
    )
    end, weight = (blue, 2 * p - 1) if p >= 0.5 else (red, 1 - 2 * p)
    r, g, b = np.round(white + (end - white) * weight).astype(int)
    return f"rgb({r},{g},{b})"


def _swatch(agent: str, colors: dict[str, str]) -> str:
    return f'<i class="swatch" style="background:{colors[agent]}"></i>'


def _agent_cell(agent: str, colors: dict[str, str]) -> str:
    return f'<td class="agent">{_swatch(agent, colors)}{html.escape(agent)}</td>'


def _cell(text: str | None) -> str:
    return '<td class="missing">–</td>' if text is None else f"<td>{html.escape(text)}</td>"


def _interval_or_none(row: Mapping[str, Any], key: str) -> str | None:
    return format_interval(row[key]) if key in row else None


def _embed(figure: Any, alt: str, caption: str) -> str:
    """The figure as an inline PNG, drawn at 150 dpi but shown at 100 px per inch, so that its
    text matches the page's and it stays sharp on high-density screens."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=150, facecolor="white")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    width = round(figure.get_figwidth() * 100)
    return (
        f'<figure style="width:{width}px"><img src="data:image/png;base64,{data}" width="{width}" '
        f'alt="{html.escape(alt)}"><figcaption>{html.escape(caption)}</figcaption></figure>'
    )


def _new_figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _style_axes(ax: Any) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#e3e6eb", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=9)


def _bars(
    ax: Any, centers: np.ndarray, summaries: list[Mapping | None], width: float, color: str
) -> None:
    """Bars at the means with CI whiskers; missing summaries leave a gap."""
    for center, summary in zip(centers, summaries, strict=True):
        if summary is None:
            continue
        mean, (low, high) = summary["mean"], summary["ci95"]
        ax.bar(center, mean, width=width, color=color, edgecolor="white", linewidth=0.5)
        ax.errorbar(
            center,
            mean,
            yerr=[[max(mean - low, 0.0)], [max(high - mean, 0.0)]],
            fmt="none",
            ecolor="#2b2f36",
            elinewidth=1.1,
            capsize=3,
        )
        # The value beside the whisker, so that a bar of height zero still reads as a score.
        y, va = (max(high, mean), "bottom") if mean >= 0 else (min(low, mean), "top")
        ax.annotate(
            f"{mean:.3g}",
            (center, y),
            xytext=(0, 2 if va == "bottom" else -2),
            textcoords="offset points",
            ha="center",
            va=va,
            fontsize=7,
            color="#2b2f36",
        )


def _plot_grouped_bars(
    scorecard: Mapping[str, Any], envs: list[str], colors: dict[str, str]
) -> Any:
    agents = list(colors)
    fig = _new_figure(min(10.5, 2.2 + 1.0 * len(envs) * max(1, len(agents) / 2)), 3.8)
    ax = fig.add_subplot()
    width = 0.8 / len(agents)
    positions = np.arange(len(envs))
    lookup = {(r["env_id"], r["agent"]): r for r in scorecard["results"]}
    for i, agent in enumerate(agents):
        summaries = [lookup.get((env, agent), {}).get("normalized_score") for env in envs]
        offsets = positions - 0.4 + width * (i + 0.5)
        _bars(ax, offsets, summaries, width, colors[agent])
    ax.axhline(0, color="#8a919c", linewidth=0.8)
    ax.set_xticks(
        positions,
        envs,
        rotation=20 if len(envs) > 4 else 0,
        ha="right" if len(envs) > 4 else "center",
    )
    ax.set_xlim(-0.6, len(envs) - 0.4)
    ax.set_ylabel("normalized score (mean, 95% CI)")
    ax.set_xlabel("environment")
    _style_axes(ax)
    _legend(fig, colors)
    return fig


def _plot_return_panels(
    scorecard: Mapping[str, Any], envs: list[str], colors: dict[str, str]
) -> Any:
    agents = list(colors)
    columns = min(3, len(envs))
    rows = -(-len(envs) // columns)
    fig = _new_figure(3.4 * columns + 0.4, 2.9 * rows + 0.5)
    lookup = {(r["env_id"], r["agent"]): r for r in scorecard["results"]}
    for k, env in enumerate(envs):
        ax = fig.add_subplot(rows, columns, k + 1)
        summaries = [lookup.get((env, agent), {}).get("return") for agent in agents]
        for i, agent in enumerate(agents):
            _bars(ax, np.array([i]), [summaries[i]], 0.7, colors[agent])
        ax.axhline(0, color="#8a919c", linewidth=0.8)
        # Beyond three agents the names collide under narrow panels; the legend names the colours.
        ax.set_xticks(np.arange(len(agents)), agents if len(agents) <= 3 else [])
        ax.set_title(env, fontsize=10)
        ax.set_ylabel("return (mean, 95% CI)", fontsize=9)
        _style_axes(ax)
    _legend(fig, colors)
    return fig


def _plot_profile(scorecard: Mapping[str, Any], envs: list[str], colors: dict[str, str]) -> Any:
    scores = {
        agent: {
            r["env_id"]: r["normalized_score"]["mean"]
            for r in scorecard["results"]
            if r["agent"] == agent and r["env_id"] in envs and "normalized_score" in r
        }
        for agent in colors
    }
    values = [v for per_env in scores.values() for v in per_env.values()]
    pad = 0.05 * (max(values) - min(values) or 1.0)
    taus = np.linspace(min(values) - pad, max(values) + pad, 400)
    fig = _new_figure(6.4, 3.8)
    ax = fig.add_subplot()
    for agent, per_env in scores.items():
        if per_env:
            ax.plot(taus, performance_profile(per_env, taus), color=colors[agent], linewidth=2)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("normalized score threshold τ")
    ax.set_ylabel("fraction of envs with score > τ")
    _style_axes(ax)
    ax.grid(axis="x", color="#e3e6eb", linewidth=0.8)
    _legend(fig, {a: c for a, c in colors.items() if scores[a]})
    return fig


#: A learning curve is smoothed over this fraction of its episodes (at least one episode).
SMOOTHING_FRACTION = 0.05


def smoothed_curve(
    timesteps: Sequence[float], returns: Sequence[float], window: int
) -> tuple[np.ndarray, np.ndarray]:
    """The running mean of the last ``window`` episode returns, at each episode's end from the
    ``window``-th on (as SB3's ``ep_rew_mean``, over a shorter window)."""
    order = np.argsort(timesteps, kind="stable")
    t = np.asarray(timesteps, dtype=float)[order]
    r = np.asarray(returns, dtype=float)[order]
    window = max(1, min(window, len(r)))
    sums = np.cumsum(np.concatenate([[0.0], r]))
    return t[window - 1 :], (sums[window:] - sums[:-window]) / window


def _plot_learning_curves(
    scorecard: Mapping[str, Any], curves: list[Mapping[str, Any]], colors: dict[str, str]
) -> Any:
    envs = [env for env in scorecard["envs"] if any(c["env_id"] == env for c in curves)]
    envs += sorted({c["env_id"] for c in curves} - set(envs))
    columns = min(2, len(envs))
    rows = -(-len(envs) // columns)
    fig = _new_figure(4.8 * columns + 0.4, 3.2 * rows + 0.5)
    lookup = {(r["env_id"], r["agent"]): r for r in scorecard["results"]}
    for k, env in enumerate(envs):
        ax = fig.add_subplot(rows, columns, k + 1)
        for agent, color in colors.items():
            runs = [
                smoothed_curve(c["timesteps"], c["returns"], _window(c))
                for c in curves
                if c["env_id"] == env and c["agent"] == agent
            ]
            if runs:
                for t, r in runs:
                    ax.plot(t, r, color=color, linewidth=0.8, alpha=0.4)
                # The seeds' mean where every seed has a point: on a common grid of timesteps.
                grid = np.linspace(max(t[0] for t, _ in runs), min(t[-1] for t, _ in runs), 200)
                mean = np.mean([np.interp(grid, t, r) for t, r in runs], axis=0)
                ax.plot(grid, mean, color=color, linewidth=2)
            elif (env, agent) in lookup:
                mean = lookup[env, agent]["return"]["mean"]
                ax.axhline(mean, color=color, linestyle="--", linewidth=1.2)
        ax.set_title(env, fontsize=10)
        ax.set_xlabel("environment steps", fontsize=9)
        ax.set_ylabel("episode return", fontsize=9)
        _style_axes(ax)
    _legend(fig, colors)
    return fig


def _window(curve: Mapping[str, Any]) -> int:
    return max(1, round(SMOOTHING_FRACTION * len(curve["returns"])))


def _legend(fig: Any, colors: dict[str, str]) -> None:
    """One legend above the plots, with as many columns as fit the figure's width."""
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=color, label=agent) for agent, color in colors.items()]
    # A 9 pt label is about 0.075 inch per character, plus the patch and padding.
    entry_width = 0.6 + 0.075 * max(len(agent) for agent in colors)
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncols=max(1, min(len(handles), int(fig.get_figwidth() // entry_width))),
        frameon=False,
        fontsize=9,
    )
