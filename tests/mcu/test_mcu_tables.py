"""MCU's tables: the six dimensions x 10 by category, subcategory, difficulty and kind."""

import json
import math

from omnigym.envs.mcu.evaluation import DIMENSIONS
from omnigym.envs.mcu.suite import curated, is_creative, labels
from omnigym.evaluators.mcu_tables import format_tables, main, tables


def record(env_id, progress, success, material=5.0):
    metrics = dict.fromkeys(DIMENSIONS, 2.0) | {
        "task_progress": progress,
        "material_selection_and_usage": material,
    }
    return {"env_id": env_id, "agent": "A", "seed": 0, "episode": 0, "success": success,
            "metrics": metrics}  # fmt: skip


RECORDS = [
    record("MCU/mine_iron_ore-simple-v0", 10.0, True),
    record("MCU/mine_iron_ore-hard-v0", 4.0, False, material=math.nan),
    record("MCU/build_pillar-simple-v0", 2.0, False),
    record("Craft/ChopTree-v0", 10.0, True),
]


def test_the_curated_suite_is_read_from_the_registry_with_its_labels():
    ids = {entry.env_id: entry for entry in curated()}
    assert ids["MCU/combat_spiders-hard-v0"].tasks == ("combat_spiders",)
    assert ids["MCU/combat_spiders-hard-v0"].difficulty == "hard"
    assert ids["MCU/find_diamond_or_find_cow-v0"].ops == ("or",)
    assert "MCU/Atomic-v0" not in ids
    assert labels(["build_pillar"], "hard")["kind"] == "creative"
    assert labels(["mine_iron_ore", "build_pillar"], "simple")["category"] == "Composite"
    assert is_creative("use_shears_on_sheep", "Tool-use")
    assert not is_creative("eat_bread", "Tool-use")


def test_tables_group_mcu_records_and_report_percentages():
    built = tables(RECORDS)
    by_difficulty = built["difficulty"]["A"]
    assert by_difficulty["simple"]["episodes"] == 2 and by_difficulty["simple"]["success"] == 0.5
    assert by_difficulty["simple"]["task_progress"] == 60.0
    assert by_difficulty["hard"]["material_selection_and_usage"] is None
    kinds = built["kind"]["A"]
    assert kinds["creative"]["task_progress"] == 20.0
    assert kinds["programmatic"]["task_progress"] == 70.0
    assert set(built["category"]["A"]) == {"Build", "Mine Blocks"}
    assert "| A | creative | 1 | 0.0 | 20.0 |" in format_tables(built)


def test_the_command_line_prints_the_tables(tmp_path, capsys):
    path = tmp_path / "episodes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    main([str(path)])
    out = capsys.readouterr().out
    assert "### By subcategory" in out and "| A | Ore | 2 |" in out
