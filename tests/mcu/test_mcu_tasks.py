"""Task files, the generator and the oracles: every committed task loads, regeneration
reproduces the files, and each solver solves sample tasks."""

import json
from collections import Counter

import numpy as np
import pytest
import yaml

import omnigym.envs.mcu as mcu
from omnigym.envs.mcu import generate, verify
from omnigym.envs.mcu.tasks import TASK_DIR, index, load_task, parse_task

SOLVERS = sorted({load_task(name).oracle["solver"] for name in mcu.list_tasks()})


def test_every_indexed_task_loads_and_its_milestones_sum_to_one():
    for name in mcu.list_tasks():
        task = load_task(name)
        assert task.name == name and task.category == index()[name]["category"]
        assert sum(m.weight for m in task.milestones) == pytest.approx(1.0)


def test_regenerating_from_seed_zero_reproduces_the_committed_task_files():
    made = {data["name"]: data for data in generate.candidates(0)}
    committed = mcu.list_tasks()
    assert set(committed) <= set(made)
    for name in committed:
        assert load_task(name).source == made[name], name
    assert yaml.safe_load((TASK_DIR / "index.yaml").read_text())["seed"] == 0


def test_list_tasks_filters_by_category_and_subcategory():
    combat = mcu.list_tasks(category="Combat")
    hunting = mcu.list_tasks(subcategory="Hunt Animals")
    assert "combat_spiders" in combat and "hunt_cow" in hunting
    assert set(hunting) < set(combat)
    assert mcu.list_tasks(category="No Such Category") == []


def test_the_curated_mcu_turbo_names_exist():
    for name in (
        "combat_spiders",
        "craft_to_clock",
        "collect_wood",
        "sleep_in_bed",
        "build_pillar",
        "find_diamond",
    ):
        assert name in index()


@pytest.mark.parametrize("solver", SOLVERS)
def test_each_oracle_solves_its_sample_tasks_on_two_seeds(solver):
    names = [n for n in mcu.list_tasks() if load_task(n).oracle["solver"] == solver]
    for name in (names[0], names[-1]):
        result = verify.verify_task(load_task(name), [0, 1])
        assert result["success"], (name, result["reason"])
        assert result["steps"] == index()[name]["oracle_steps"]


def test_an_unsolvable_task_fails_verification_with_a_reason():
    data = dict(yaml.safe_load((TASK_DIR / "mine_iron_ore.yaml").read_text()))
    data["init_commands"] = ["replaceitem entity @s weapon.mainhand stone_pickaxe"]
    result = verify.verify_task(parse_task(data, "broken.yaml"), [0])
    assert result["success"] is False and result["reason"]


def test_verify_writes_a_report(tmp_path):
    out = tmp_path / "report.json"
    status = verify.main(["--seeds", "0", "--tasks", "eat_bread,drop_stick", "--out", str(out)])
    report = json.loads(out.read_text())
    assert status == 0 and report["eat_bread"]["per_seed"] == {"0": True}
    assert report["drop_stick"]["steps"] == 1


def test_verify_reports_each_difficulty(tmp_path):
    out = tmp_path / "report.json"
    argv = ["--seeds", "0", "--tasks", "combat_spiders", "--difficulty", "simple,hard"]
    assert verify.main([*argv, "--out", str(out)]) == 0
    levels = json.loads(out.read_text())["combat_spiders"]["by_difficulty"]
    assert set(levels) == {"simple", "hard"} and all(v["success"] for v in levels.values())
    with pytest.raises(ValueError, match="difficulty"):
        verify.main(["--tasks", "combat_spiders", "--difficulty", "extreme"])


SAMPLE = 100
MINIMUM_TASKS = {
    "Craft Tools": 280,
    "Find & Navigation": 210,
    "Mine Blocks": 120,
    "Tool-use": 80,
    "Build": 60,
    "Motion": 60,
    "Trade": 50,
    "Art": 40,
    "Others": 40,
    "Animal care": 30,
    "Combat": 30,
}
"""The task counts the MCU paper's taxonomy is grown to here (docs/mcu.md)."""


def test_a_seeded_sample_of_a_hundred_tasks_is_solved_simple_and_hard():
    rng = np.random.default_rng(0)
    names = mcu.list_tasks()
    picks = rng.choice(len(names), size=SAMPLE, replace=False)
    levels = rng.permutation(["simple", "hard"] * (SAMPLE // 2))
    for i, level in zip(picks, levels, strict=True):
        result = verify.verify_task(load_task(names[i]), [0], (str(level),))
        assert result["success"], (names[i], level, result["reason"])


@pytest.mark.slow
def test_every_verified_task_is_solved_simple_and_hard_on_seed_zero():
    failed = []
    for name in mcu.list_tasks():
        result = verify.verify_task(load_task(name), [0], ("simple", "hard"))
        if not result["success"]:
            failed.append((name, result["reason"]))
    assert not failed


def test_the_taxonomy_reaches_its_minimum_counts():
    entries = index().values()
    categories = Counter(entry["category"] for entry in entries)
    subcategories = Counter((entry["category"], entry["subcategory"]) for entry in entries)
    assert sum(categories.values()) >= 1000
    for category, minimum in MINIMUM_TASKS.items():
        assert categories[category] >= minimum, category
    assert min(subcategories.values()) >= 3 and len(subcategories) == 40


def test_a_task_whose_milestone_holds_at_reset_fails_verification():
    data = dict(yaml.safe_load((TASK_DIR / "combat_spiders.yaml").read_text()))
    data["milestones"] = [
        {"when": "near(spider, 8)", "weight": 0.5},
        {"when": "killed(spider) >= 1", "weight": 0.5},
    ]
    result = verify.verify_task(parse_task(data, "early.yaml"), [0])
    assert set(result.pop("by_difficulty")) == {"simple"}
    assert result == {
        "success": False,
        "steps": 0,
        "ticks": 0,
        "reason": "seed 0: a milestone holds at reset",
        "per_seed": {"0": False},
    }


def test_generate_writes_verified_tasks_and_replaces_only_its_own_files(tmp_path, monkeypatch):
    made = [t for t in generate.candidates(0) if t["name"] in ("drop_stick", "eat_bread")]
    monkeypatch.setattr(generate, "candidates", lambda seed: made)
    (tmp_path / "notes.yaml").write_text("keep: me\n")
    (tmp_path / "index.yaml").write_text("tasks: [{name: old_task}]\n")
    (tmp_path / "old_task.yaml").write_text("name: old_task\n")
    counts = generate.generate(0, [0], tmp_path)
    assert counts == {"Motion": 1, "Tool-use": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "drop_stick.yaml",
        "eat_bread.yaml",
        "index.yaml",
        "notes.yaml",
    ]
    entries = yaml.safe_load((tmp_path / "index.yaml").read_text())["tasks"]
    assert [e["name"] for e in entries] == ["drop_stick", "eat_bread"]
