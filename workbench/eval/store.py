"""Append-only JSON Lines store of evaluation rows, keyed by (method, params_hash, dataset, qa_id).

Each finished question is written as one whole line and flushed at once, so an interrupted run
loses at most the questions in flight. Reopening the store reads back every complete line; a torn
last line (a crash mid-write) is skipped and counted, and the next append starts on a fresh line.
Nothing is ever rewritten: when a key occurs more than once (a retried failure, two writers), the
last row wins and ``duplicates`` counts the superseded ones.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Iterable, Iterator

KEY_FIELDS = ("method", "params_hash", "dataset", "qa_id")
Key = tuple[str, str, str, str]


def row_key(row: dict) -> Key:
    return tuple(str(row[k]) for k in KEY_FIELDS)  # type: ignore[return-value]


class ResultsStore:
    """Rows by key, backed by a JSONL file (or memory only when ``path`` is None)."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else None
        self._rows: dict[Key, dict] = {}
        self._lock = threading.Lock()
        self.duplicates = 0
        self.bad_lines: list[int] = []
        self._needs_newline = False
        if self.path and self.path.exists():
            self._load()

    def _load(self) -> None:
        with open(self.path, "r", encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.endswith("\n"):
                    self._needs_newline = True  # torn final write: skip it, start the next row on a new line
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    key = row_key(row)
                except (json.JSONDecodeError, KeyError, TypeError):
                    self.bad_lines.append(lineno)
                    continue
                if key in self._rows:
                    self.duplicates += 1
                    del self._rows[key]
                self._rows[key] = row

    # -- reading --------------------------------------------------------------------------------
    def __contains__(self, key: Key) -> bool:
        return key in self._rows

    def get(self, key: Key) -> dict | None:
        return self._rows.get(key)

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[dict]:
        return iter(list(self._rows.values()))

    def rows(self, **filters) -> list[dict]:
        """Rows (the latest per key, in the order they were written), optionally filtered by field values."""
        return [r for r in self._rows.values() if all(r.get(k) == v for k, v in filters.items())]

    # -- writing --------------------------------------------------------------------------------
    def append(self, row: dict) -> None:
        """Write one row as one line and flush it before returning."""
        key = row_key(row)
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self.path:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    if self._needs_newline:
                        f.write("\n")
                        self._needs_newline = False
                    f.write(line)
                    f.flush()
            if key in self._rows:
                self.duplicates += 1
                del self._rows[key]
            self._rows[key] = json.loads(line)

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.path) if self.path else 'memory'}, rows={len(self)})"


def load_rows(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """Rows of several stores; a key present in more than one file keeps the last file's row."""
    merged: dict[Key, dict] = {}
    for p in paths:
        if not Path(p).exists():
            raise FileNotFoundError(f"results file not found: {p}")
        for row in ResultsStore(p):
            merged.pop(row_key(row), None)
            merged[row_key(row)] = row
    return list(merged.values())
