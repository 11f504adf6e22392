"""``episodes.jsonl``: the append-only log of episode records that makes runs resumable.

Each finished episode is one JSON line, written and flushed at once, so a killed run loses at
most the episode in flight. A run killed in the middle of a write leaves a partial last line;
opening the store cuts it off before anything is appended after it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

EPISODES_FILE = "episodes.jsonl"

EpisodeKey = tuple[str, str, int, int]


def episode_key(record: dict[str, Any]) -> EpisodeKey:
    """The identity of an episode: (env id, agent label, run seed, episode index)."""
    return (record["env_id"], record["agent"], int(record["seed"]), int(record["episode"]))


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every complete record of an ``episodes.jsonl`` (a partial last line is skipped)."""
    file = Path(path)
    if not file.exists():
        return []
    text = file.read_text(encoding="utf-8")
    complete, _, _partial = text.rpartition("\n")
    records = []
    for number, line in enumerate(complete.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise ValueError(f"{file}:{number}: not a JSON episode record ({error})") from None
    return records


class EpisodeStore:
    """Appends records to ``<folder>/episodes.jsonl`` and remembers which episodes are done."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.path = Path(folder) / EPISODES_FILE
        self._drop_partial_line()
        self.records = read_records(self.path)
        self._done = {episode_key(record) for record in self.records}
        self._file: IO[str] | None = None  # opened on the first append: no record, no file

    def _drop_partial_line(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            with self.path.open("r+b") as file:
                file.truncate(end)

    def __contains__(self, key: EpisodeKey) -> bool:
        return key in self._done

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and flush it; an episode already stored is never written twice."""
        key = episode_key(record)
        if key in self._done:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()
        self._done.add(key)
        self.records.append(record)

    def select(self, keys: Iterable[EpisodeKey]) -> list[dict[str, Any]]:
        """The stored records of ``keys``, in that order (missing keys are skipped)."""
        by_key = {episode_key(record): record for record in self.records}
        return [by_key[key] for key in keys if key in by_key]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> EpisodeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
