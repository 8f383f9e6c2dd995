"""Append-only JSON Lines store of evaluation rows, keyed by (method, params_hash, dataset, qa_id).

Each finished question is written as one whole line and flushed at once, so an interrupted run
loses at most the questions in flight. Reopening the store reads back every complete line through
the shared tolerant reader (``workbench.jsonl``): a torn last line (a crash mid-write) or any other
bad line is skipped, its number listed in ``bad_lines`` and its ``file:line: reason`` in ``bad``,
and the next append starts on a fresh line. A results file that is a link leading out of its
folder (the run directory) is refused (``workbench.jsonl.LeadsOutside``): neither read nor appended to.
A store opened to show a run (``capped=True``: ``load_rows``, the census) reads at most the stated display limit
(``workbench.jsonl.MAX_READ_BYTES`` / ``MAX_READ_ROWS``) and says in ``capped`` what it left out; the harness
opens its store whole, since a row left unread there would be answered again.
Nothing is ever rewritten: when a key occurs more than once (a retried failure, two writers), the
last row wins and ``duplicates`` counts the superseded ones.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Iterable, Iterator

from ..jsonl import BadLine, CappedRead, append_line, confined, dumps_line, read_jsonl, read_jsonl_capped

KEY_FIELDS = ("method", "params_hash", "dataset", "qa_id")
Key = tuple[str, str, str, str]


def _check_row(row: dict) -> str | None:
    missing = [k for k in KEY_FIELDS if k not in row or isinstance(row[k], (dict, list))]
    return f"key field(s) missing or not scalar: {', '.join(missing)}" if missing else None


def row_key(row: dict) -> Key:
    return tuple(str(row[k]) for k in KEY_FIELDS)  # type: ignore[return-value]


class ResultsStore:
    """Rows by key, backed by a JSONL file (or memory only when ``path`` is None)."""

    def __init__(self, path: str | os.PathLike | None = None, *, capped: bool = False):
        self.path = confined(path, Path(path).parent) if path else None
        self.capped_read = capped
        self.capped: CappedRead | None = None  # what a capped read left out (None: the whole file was read)
        self._rows: dict[Key, dict] = {}
        self._lock = threading.Lock()
        self.duplicates = 0
        self.bad_lines: list[int] = []  # line numbers of skipped lines
        self.bad: list[BadLine] = []  # the same lines with file and reason
        if self.path and self.path.exists():
            self._load()

    def _load(self) -> None:
        got = (read_jsonl_capped if self.capped_read else read_jsonl)(self.path, check=_check_row)
        self.bad, self.capped = got.bad, got.capped
        self.bad_lines = [b.line for b in got.bad]
        for row in got.rows:
            key = row_key(row)
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
        if self.capped is not None:  # its unread rows would be superseded or duplicated: never written to
            raise RuntimeError(f"this results store was read capped for display ({self.capped}); it is not appended to")
        key = row_key(row)
        line = dumps_line(row)
        with self._lock:
            if self.path:
                append_line(self.path, line)
            if key in self._rows:
                self.duplicates += 1
                del self._rows[key]
            self._rows[key] = json.loads(line)

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.path) if self.path else 'memory'}, rows={len(self)})"


def load_rows(paths: Iterable[str | os.PathLike], problems: list | None = None) -> list[dict]:
    """Rows of several stores, to show or report (each read under the display limit, ``ResultsStore(capped=True)``);
    a key present in more than one file keeps the last file's row. What a read left out (a file above the limit)
    and every bad line go to ``problems`` (``file: what``); without a list they are warned about
    (``warnings.warn``), never dropped unsaid."""
    merged: dict[Key, dict] = {}
    said: list[str] = []
    for p in paths:
        if not Path(p).exists():
            raise FileNotFoundError(f"results file not found: {p}")
        store = ResultsStore(p, capped=True)
        if store.capped is not None:
            said.append(str(store.capped))
        said.extend(f"skipped {b}" for b in store.bad)
        for row in store:
            merged.pop(row_key(row), None)
            merged[row_key(row)] = row
    if problems is not None:
        problems.extend(said)
    elif said:
        import warnings

        warnings.warn(f"{said[0]}" + (f" (and {len(said) - 1} more problems)" if len(said) > 1 else ""), stacklevel=2)
    return list(merged.values())
