"""The omnigym command line: outputs, exit codes, and that bad input writes nothing."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import omnigym
from omnigym.cli import main
from omnigym.evaluators.store import read_records

ROOT = Path(__file__).resolve().parents[1]


def _omnigym(*args, cwd=ROOT, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "omnigym.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        **kwargs,
    )


def _scenario(tmp_path, text, name="scenario.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_list_json_has_every_lmrl_id(capsys):
    assert main(["list", "--family", "LMRL", "--json"]) == 0
    ids = {record["id"] for record in json.loads(capsys.readouterr().out)}
    assert {"LMRL/MazeFO-v0", "LMRL/MazePO-v0", "LMRL/Wordle-v0"} <= ids


def test_eval_json_prints_one_scorecard_record(capsys):
    assert main(["eval", "LMRL/MazeFO-v0", "--agent", "oracle", "--episodes", "5", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["env_id"] == "LMRL/MazeFO-v0" and record["episodes"] == 5
    assert record["success_rate"] == 1.0
    assert set(record["return"]) == {"mean", "median", "iqm", "ci95"}
    assert record["normalized_score"]["mean"] > 90


def test_eval_with_out_writes_episodes_scorecard_and_report(out_dir, capsys):
    assert main(["eval", "LMRL/Wordle-v0", "--agent", "random", "--episodes", "3",
                 "--out", str(out_dir)]) == 0  # fmt: skip
    assert len(read_records(out_dir / "episodes.jsonl")) == 3
    for name in ("scorecard.json", "scorecard.md", "report.html"):
        assert (out_dir / name).stat().st_size > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "LMRL/Wordel-v0", "--agent", "random"], "LMRL/Wordle-v0"),
        (["eval", "LMRL/Wordle-v0", "--agent", "oracel"], "oracle"),
        (["eval", "LMRL/Wordle-v0", "--agent", "nowhere:Agent"], "cannot load"),
        (["list", "--family", "Nope"], "LMRL"),
    ],
)
def test_bad_names_exit_2_with_a_clear_message_and_write_nothing(tmp_path, args, message):
    out = tmp_path / "out"
    result = _omnigym(*args, "--out", out) if args[0] == "eval" else _omnigym(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\nepisodes: [1\n", "not valid YAML"),
        ("name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\nepisodes: -3\n", "field episodes"),
        ("name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\nepisode: 3\n", "field episode"),
        ("name: x\nenvs: [LMRL/Maze-v0]\nagents: [random]\n", "field envs[0].id"),
        ("name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random, orcle]\n", "field agents[1].name"),
        ("name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random, random]\n", "labels must be distinct"),
        ("- just\n- a list\n", "expected a mapping"),
        (
            "name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [{name: random, envs: [LMRL/MazePO-v0]}]\n",
            "field agents[0].envs",
        ),
        (
            "name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\nexperiment: no.such.mod:X\n",
            "field experiment",
        ),
        (
            "name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\nclaims: json:no_such_function\n",
            "field claims",
        ),
        ("name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\noptions: {x: 1}\n", "field options"),
        (
            "name: x\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\nquick: {envs: [X/Y-v0]}\n",
            "quick.envs[0]",
        ),
    ],
)
def test_malformed_scenario_exits_2_naming_file_and_field(tmp_path, text, message):
    path = _scenario(tmp_path, text)
    out = tmp_path / "out"
    result = _omnigym("run", path, "--out", out)
    assert result.returncode == 2, result.stderr
    assert str(path) in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_missing_scenario_file_exits_2(tmp_path):
    result = _omnigym("run", tmp_path / "absent.yaml", "--out", tmp_path / "out")
    assert result.returncode == 2 and "cannot read scenario" in result.stderr


def test_run_quick_applies_the_quick_block(tmp_path, capsys):
    path = _scenario(
        tmp_path,
        "name: tiny\nenvs: [LMRL/MazeFO-v0]\nagents: [random, oracle]\n"
        "episodes: 50\nseeds: [0, 1, 2]\nquick: {episodes: 2, seeds: [5]}\n",
    )
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quick"]) == 0
    records = read_records(tmp_path / "out" / "episodes.jsonl")
    assert sorted((r["agent"], r["seed"], r["episode"]) for r in records) == [
        (agent, 5, episode) for agent in ("oracle", "random") for episode in range(2)
    ]


def test_agent_envs_limit_where_an_agent_plays_and_quick_can_replace_the_envs(tmp_path):
    path = _scenario(
        tmp_path,
        "name: some\nenvs: [LMRL/MazeFO-v0, LMRL/MazePO-v0]\n"
        "agents: [random, {name: oracle, envs: [LMRL/MazePO-v0]}]\nepisodes: 1\n"
        "quick: {envs: [LMRL/MazePO-v0]}\n",
    )
    assert main(["run", str(path), "--out", str(tmp_path / "full")]) == 0
    played = {(r["env_id"], r["agent"]) for r in read_records(tmp_path / "full/episodes.jsonl")}
    assert played == {
        ("LMRL/MazeFO-v0", "random"),
        ("LMRL/MazePO-v0", "random"),
        ("LMRL/MazePO-v0", "oracle"),
    }
    assert main(["run", str(path), "--out", str(tmp_path / "quick"), "--quick"]) == 0
    played = {r["env_id"] for r in read_records(tmp_path / "quick/episodes.jsonl")}
    assert played == {"LMRL/MazePO-v0"}


def test_training_budget_reaches_learn_before_evaluation(tmp_path):
    path = _scenario(
        tmp_path,
        "name: train\nenvs: [LMRL/MazeFO-v0]\n"
        "agents: [{name: 'tests.helpers:LearningAgent', label: learner, train: {budget: 10}}]\n"
        "episodes: 2\nseeds: [0, 1]\n",
    )
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    assert len(read_records(tmp_path / "out" / "episodes.jsonl")) == 4


def test_report_rerenders_from_episodes(tmp_path):
    out = tmp_path / "out"
    assert main(["eval", "LMRL/MazeFO-v0", "--agent", "random", "--episodes", "2",
                 "--out", str(out)]) == 0  # fmt: skip
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").exists()


def test_report_of_an_empty_folder_exits_2(tmp_path):
    result = _omnigym("report", tmp_path)
    assert result.returncode == 2 and "no episode records" in result.stderr


def test_bench_json_has_the_documented_keys(capsys):
    assert main(["bench", "LMRL/MazeFO-v0", "--steps", "500", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"env_id", "steps", "seconds", "steps_per_sec", "peak_rss_mb"}
    assert result["steps"] == 500 and result["steps_per_sec"] > 0


def test_play_reads_moves_until_the_episode_ends():
    moves = "move up\n" * 101
    result = _omnigym("play", "LMRL/MazePO-v0", "--seed", "0", input=moves)
    assert result.returncode == 0, result.stderr
    assert "episode" in result.stdout and "return" in result.stdout


@pytest.mark.slow
def test_run_killed_mid_way_resumes_to_exactly_the_requested_episodes(tmp_path):
    path = _scenario(
        tmp_path,
        "name: resume\nenvs: [LMRL/MazeFO-v0]\n"
        "agents: [{name: 'tests.helpers:SlowRandomAgent', label: slow}, oracle]\n"
        "episodes: 12\nseeds: [0, 1]\n",
    )
    out = tmp_path / "out"
    episodes = out / "episodes.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "omnigym.cli", "run", str(path), "--out", str(out)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if episodes.exists() and len(read_records(episodes)) >= 5:
            break
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    interrupted = len(read_records(episodes))
    assert 5 <= interrupted < 48
    assert not (out / "scorecard.json").exists()

    result = _omnigym("run", path, "--out", out)
    assert result.returncode == 0, result.stderr
    keys = [(r["agent"], r["seed"], r["episode"]) for r in read_records(episodes)]
    assert len(keys) == len(set(keys)) == 48
    scorecard = json.loads((out / "scorecard.json").read_text())
    assert sorted(r["episodes"] for r in scorecard["results"]) == [24, 24]


def test_render_png_writes_the_first_frame_at_the_observation_size(tmp_path):
    from PIL import Image

    out = tmp_path / "room.png"
    args = ["render", "Craft/SmallRoom-v0", "--seed", "3", "--out", str(out)]
    assert main([*args, "--kwargs", '{"obs_width": 48, "obs_height": 40}']) == 0
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size == (48, 40) and image.mode == "RGB"
        first = np.asarray(image)
    env = omnigym.make("Craft/SmallRoom-v0", obs_width=48, obs_height=40)
    observation, _ = env.reset(seed=3)
    env.close()
    np.testing.assert_array_equal(first, observation)


def test_render_gif_holds_the_first_frame_and_one_per_random_step(tmp_path):
    from PIL import Image, ImageSequence

    out = tmp_path / "room.gif"
    assert main(["render", "Craft/SmallRoom-v0", "--out", str(out), "--steps", "6"]) == 0
    with Image.open(out) as image:
        assert image.format == "GIF" and image.size == (64, 64)
        # Pillow merges identical consecutive frames and adds up their durations.
        durations = [frame.info["duration"] for frame in ImageSequence.Iterator(image)]
    assert 1 <= len(durations) <= 7
    assert sum(durations) == 7 * 50  # 7 frames at the env's render_fps of 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["Craft/SmallRom-v0", "--out", "{out}.png"], "Craft/SmallRoom-v0"),
        (["LMRL/Wordle-v0", "--out", "{out}.png"], "not a single-agent pixel environment"),
        (["Craft/SmallRoom-v0", "--out", "{out}.jpg"], ".png or .gif"),
        (["Craft/SmallRoom-v0", "--out", "{out}.png", "--kwargs", "{oops"], "not valid JSON"),
        (["Craft/SmallRoom-v0", "--out", "{out}.png", "--kwargs", '{"obs_width": 0}'], "obs_width"),
    ],
)
def test_render_errors_exit_2_and_write_nothing(tmp_path, args, message):
    out = tmp_path / "frame"
    result = _omnigym("render", *[a.replace("{out}", str(out)) for a in args])
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_report_rerenders_learning_curves_keeping_the_latest_per_seed(tmp_path):
    from omnigym.evaluators.experiment import LEARNING_CURVES_FILE, RunFolder

    out = tmp_path / "out"
    assert main(["eval", "LMRL/MazeFO-v0", "--agent", "random", "--episodes", "2",
                 "--out", str(out)]) == 0  # fmt: skip
    RunFolder(out).append_learning_curve("LMRL/MazeFO-v0", "random", 0, [(10, -5.0)])
    with (out / LEARNING_CURVES_FILE).open("a") as file:
        file.write('{"env_id": "LMRL/Maz')  # a run killed in the middle of a write
    RunFolder(out).append_learning_curve("LMRL/MazeFO-v0", "random", 0, [(10, -4.0), (20, -2.0)])
    (curve,) = RunFolder(out).learning_curves()
    assert curve["timesteps"] == [10, 20] and curve["returns"] == [-4.0, -2.0]
    assert main(["report", str(out)]) == 0
    assert "<h2>Learning curves</h2>" in (out / "report.html").read_text()


def test_the_same_id_twice_with_labels_keeps_both_and_needs_distinct_labels(tmp_path):
    path = _scenario(
        tmp_path,
        "name: sweep\nenvs: [{id: LMRL/MazeFO-v0, label: a}, {id: LMRL/MazeFO-v0, label: b}]\n"
        "agents: [{name: random, envs: [b]}, oracle]\nepisodes: 2\n",
    )
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    records = read_records(tmp_path / "out" / "episodes.jsonl")
    assert sorted({(r["env_id"], r["agent"], r["env_base"]) for r in records}) == [
        ("a", "oracle", "LMRL/MazeFO-v0"),
        ("b", "oracle", "LMRL/MazeFO-v0"),
        ("b", "random", "LMRL/MazeFO-v0"),
    ]
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    assert all("normalized_score" in r for r in card["results"])  # LMRL's normalizer, by env_base
    unlabelled = _scenario(
        tmp_path, "name: x\nenvs: [LMRL/MazeFO-v0, LMRL/MazeFO-v0]\nagents: [random]\n", "u.yaml"
    )
    result = _omnigym("run", unlabelled, "--out", tmp_path / "u")
    assert result.returncode == 2 and "env labels must be distinct" in result.stderr


def test_a_claims_checker_writes_claims_json_and_md(tmp_path, capsys):
    path = _scenario(
        tmp_path,
        "name: c\nenvs: [LMRL/MazeFO-v0]\nagents: [random, oracle]\nepisodes: 2\n"
        "claims: 'tests.helpers:oracle_claims'\n",
    )
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    claims = json.loads((tmp_path / "out" / "claims.json").read_text())
    assert [c["status"] for c in claims["claims"]] == ["pass"]
    assert claims["profile"] == "full" and claims["experiment"] == "c"
    assert "1. **pass**: oracle beats random." in capsys.readouterr().out
    assert "oracle beats random" in (tmp_path / "out" / "report.html").read_text()


def test_list_offers_only_agents_that_run_on_each_env(capsys):
    assert main(["list", "--json"]) == 0
    records = {record["id"]: record for record in json.loads(capsys.readouterr().out)}
    assert "bc_all" in records["Safe/PointGoal1-v0"]["agents"]
    assert "bc_all" not in records["Craft/ChopTree-v0"]["agents"]


def test_eval_with_an_agent_of_another_family_names_the_usable_ones(capsys):
    assert main(["eval", "LMRL/Wordle-v0", "--agent", "sdqc", "--episodes", "1"]) == 2
    error = capsys.readouterr().err
    assert re.search(r"plays the Safe( and SafeBullet)? famil", error) and "oracle" in error


def test_quick_runs_go_to_the_quick_folder_and_never_mix_with_the_full_run(tmp_path):
    out = tmp_path / "results"
    path = _scenario(
        tmp_path,
        f"name: q\nenvs: [LMRL/MazeFO-v0]\nagents: [random]\nepisodes: 3\nout: {out}\n"
        "quick: {episodes: 1}\n",
    )
    assert main(["run", str(path), "--quick"]) == 0
    assert len(read_records(out / "quick" / "episodes.jsonl")) == 1
    assert not (out / "episodes.jsonl").exists()
    assert main(["run", str(path)]) == 0
    assert len(read_records(out / "episodes.jsonl")) == 3
    result = _omnigym("run", path, "--quick", "--out", out)
    assert result.returncode == 2 and "holds a full run" in result.stderr
