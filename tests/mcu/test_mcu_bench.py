"""The MCU text-mode step case of the engine benchmark (benchmarks/craft_speed.py, make bench)."""

from benchmarks import craft_speed


def test_the_mcu_text_case_records_the_median_step_time_against_its_target():
    record = craft_speed.run_case("mcu_text", seconds=0.2, warmup=5)
    records = {"mcu_text": record}
    craft_speed.judge(records)
    assert record["status"] == "ok" and record["unit"] == "ms" and record["steps"] > 0
    assert 0 < record["value"] <= record["p90_ms"]
    assert record["target"] == {"op": "<=", "value": 0.5, "unit": "ms"}
    assert record["ratio_to_target"] == 0.5 / record["value"]
    (figure,) = craft_speed.figures({"cases": records})
    assert figure["name"] == "mcu text" and figure["goal"] == "<= 0.5"
