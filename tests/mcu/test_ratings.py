"""MCU-style per-episode rating files written from episode records."""

import json
import math

import pytest

from omnigym.envs.mcu.evaluation import DIMENSIONS
from omnigym.evaluators.mcu_ratings import TITLES, main, rating, write_ratings
from omnigym.evaluators.rollout import evaluate
from omnigym.evaluators.store import EpisodeStore


def record(episode=0, **metrics):
    scores = dict.fromkeys(DIMENSIONS, 0.0) | metrics
    return {
        "env_id": "MCU/sleep_in_bed-simple-v0",
        "agent": "oracle",
        "seed": 0,
        "episode": episode,
        "success": True,
        "metrics": {**scores, "steps": 2.0},
    }


def test_a_rating_holds_the_six_scores_under_mcus_names_with_bands():
    out = rating(
        record(task_progress=10.0, action_control=6.4, material_selection_and_usage=math.nan)
    )
    assert list(out["scores"]) == [TITLES[name] for name in DIMENSIONS]
    assert out["scores"]["Task Progress"] == {"score": 10.0, "band": "completely"}
    assert out["scores"]["Action Control"] == {"score": 6.4, "band": "partially"}
    assert out["scores"]["Creative Attempts"] == {"score": 0.0, "band": "unrelated"}
    assert out["scores"]["Material Selection and Usage"] == {"score": None, "band": None}
    assert (out["env_id"], out["agent"], out["success"], out["steps"]) == (
        "MCU/sleep_in_bed-simple-v0",
        "oracle",
        True,
        2.0,
    )


def test_a_record_without_the_six_metrics_is_refused_naming_them():
    with pytest.raises(ValueError, match="creative_attempts"):
        rating({"env_id": "X", "metrics": {"task_progress": 1.0}})


def test_write_ratings_writes_one_strict_json_file_per_episode(tmp_path):
    paths = write_ratings([record(0), record(1, material_selection_and_usage=math.nan)], tmp_path)
    assert [p.name for p in paths] == [
        "MCU-sleep_in_bed-simple-v0__oracle__s0_e0.json",
        "MCU-sleep_in_bed-simple-v0__oracle__s0_e1.json",
    ]
    loaded = json.loads(paths[1].read_text(), parse_constant=lambda c: pytest.fail(c))
    assert loaded["scores"]["Material Selection and Usage"]["score"] is None


def test_the_command_line_rates_the_episodes_of_a_real_run(tmp_path):
    with EpisodeStore(tmp_path) as store:
        evaluate("MCU/sleep_in_bed-simple-v0", "oracle", episodes=1, store=store)
    main([str(tmp_path / "episodes.jsonl"), str(tmp_path / "ratings")])
    (path,) = (tmp_path / "ratings").iterdir()
    scores = json.loads(path.read_text())["scores"]
    assert scores["Task Progress"]["score"] == 10.0
    assert scores["Task Completion Efficiency"]["score"] == 10.0


def test_omnigym_eval_exports_the_ratings_of_its_episodes(tmp_path, capsys):
    from omnigym.cli import main as cli

    out = tmp_path / "ratings"
    cli(
        ["eval", "MCU/sleep_in_bed-simple-v0", "--agent", "oracle", "--episodes", "2"]
        + ["--export-ratings", str(out)]
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "MCU-sleep_in_bed-simple-v0__oracle__s0_e0.json",
        "MCU-sleep_in_bed-simple-v0__oracle__s0_e1.json",
    ]
    assert "wrote 2 ratings" in capsys.readouterr().out


def test_the_judge_hook_writes_rubric_log_rating_and_frames_per_episode(tmp_path):
    from omnigym.evaluators.mcu_judge import write_judge_material

    (folder,) = write_judge_material(
        "MCU/sleep_in_bed-simple-v0", "oracle", 1, tmp_path, pixels=True
    )
    assert "Sleep in the white bed." in (folder / "rubric.txt").read_text()
    log = (folder / "log.txt").read_text()
    assert "> sleep" in log and "slept" in log
    assert json.loads((folder / "rating.json").read_text())["success"] is True
    frames = sorted((folder / "frames").iterdir())
    assert len(frames) == log.count("> ") + 1
