"""MCU-style per-episode ratings: one JSON file per episode with the six scores and their bands.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) keeps its judge's six 0–10 ratings per episode
video; this writes the same per-episode view from omnigym's episode records (the dicts of
``episodes.jsonl``, whose ``metrics`` the MCU environments fill with the six dimensions of
:mod:`omnigym.envs.mcu.evaluation`). Run::

    python -m omnigym.evaluators.mcu_ratings RUN_DIR/episodes.jsonl OUT_DIR

Undefined scores (NaN in the records) are written as ``null``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from omnigym.envs.mcu.evaluation import DIMENSIONS, band
from omnigym.evaluators.store import read_records

TITLES = {
    "task_progress": "Task Progress",
    "action_control": "Action Control",
    "error_recognition_and_correction": "Error Recognition and Correction",
    "creative_attempts": "Creative Attempts",
    "task_completion_efficiency": "Task Completion Efficiency",
    "material_selection_and_usage": "Material Selection and Usage",
}
"""MCU's name of each dimension."""


def rating(record: Mapping[str, Any]) -> dict[str, Any]:
    """The MCU-style rating of one episode record; ``ValueError`` naming the dimensions its
    ``metrics`` lack (a record of another family)."""
    metrics = record.get("metrics") or {}
    missing = [name for name in DIMENSIONS if name not in metrics]
    if missing:
        where = f"{record.get('env_id')} seed {record.get('seed')} episode {record.get('episode')}"
        raise ValueError(f"episode record {where} has no MCU metrics {missing}")
    scores = {}
    for name in DIMENSIONS:
        value = metrics[name]
        score = None if value is None or math.isnan(value) else float(value)
        scores[TITLES[name]] = {"score": score, "band": band(score)}
    return {
        "env_id": record.get("env_id"),
        "agent": record.get("agent"),
        "seed": record.get("seed"),
        "episode": record.get("episode"),
        "success": record.get("success"),
        "steps": metrics.get("steps"),
        "scores": scores,
    }


def file_name(record: Mapping[str, Any]) -> str:
    """``<env id>__<agent>__s<seed>_e<episode>.json``, other characters than letters, digits,
    ``-``, ``_`` and ``.`` replaced by ``-``."""
    stem = f"{record.get('env_id')}__{record.get('agent')}__s{record.get('seed')}"
    return re.sub(r"[^A-Za-z0-9._-]", "-", f"{stem}_e{record.get('episode')}") + ".json"


def write_ratings(records: Iterable[Mapping[str, Any]], out: str | Path) -> list[Path]:
    """Writes one rating file per record into ``out`` (created); returns the paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for record in records:
        path = folder / file_name(record)
        text = json.dumps(rating(record), indent=1, allow_nan=False)
        path.write_text(text + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("episodes", type=Path, help="an episodes.jsonl of MCU environments")
    parser.add_argument("out", type=Path, help="folder for the rating files")
    args = parser.parse_args(argv)
    paths = write_ratings(read_records(args.episodes), args.out)
    print(f"wrote {len(paths)} ratings to {args.out}")


if __name__ == "__main__":
    main()
