"""Layout of a saved run directory — what the demo and ``workbench eval`` write and what the app
and widgets read, with no LLM and without unpickling anything:

    <run>/manifest.json                      what was run (models, params, data, date)
    <run>/conversations/<conv_id>.json       the conversation with its QA (gold) for overlays
    <run>/results.jsonl                      one evaluation row per question (with the Answer JSON)
    <run>/memories/<method>/<conv_id>/       one built memory:
        params.json, state.pkl               reloadable with Method.load (pickle: trusted runs only)
        memories.jsonl                       memories() rows
        events.jsonl                         the memory event log
        structures.json                      method-specific plain data for views (tree, graph, clusters)
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .data import Conversation
from .data.serialize import conversation_from_dict, conversation_to_dict
from .trace import Answer, MemoryEvent

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str) -> str:
    return _SAFE.sub("_", text).strip("_") or "unnamed"


def _jsonable(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    return str(v)


def write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, default=_jsonable, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {i}: invalid JSON ({exc.msg})") from None
    return rows


def save_conversation(run: Path, conv: Conversation) -> Path:
    path = Path(run) / "conversations" / f"{safe_name(conv.id)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conversation_to_dict(conv), default=_jsonable, ensure_ascii=False))
    return path


def save_memory_snapshot(method, run: Path, conv_id: str | None = None) -> Path:
    """Save a built method: reloadable state plus plain-JSON views of its memories and events."""
    conv_id = conv_id or method.conversation_.id
    out = Path(run) / "memories" / safe_name(method.name) / safe_name(conv_id)
    method.save(out)
    df = method.memories()
    write_jsonl(out / "memories.jsonl", df.to_dict(orient="records"))
    write_jsonl(out / "events.jsonl", (e.to_dict() for e in method.events))
    structures = method.structures() if hasattr(method, "structures") else {}
    (out / "structures.json").write_text(json.dumps(structures, default=_jsonable, ensure_ascii=False))
    return out


class RunDir:
    """Read-only access to a saved run. Missing parts give empty results, malformed ones clear errors."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"run directory not found: {self.path}")

    def manifest(self) -> dict:
        p = self.path / "manifest.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def conversation_ids(self) -> list[str]:
        d = self.path / "conversations"
        return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []

    def conversation(self, conv_id: str) -> Conversation:
        p = self.path / "conversations" / f"{safe_name(conv_id)}.json"
        try:
            return conversation_from_dict(json.loads(p.read_text()))
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{p}: malformed conversation file ({exc})") from None

    def results(self) -> list[dict]:
        p = self.path / "results.jsonl"
        return read_jsonl(p) if p.exists() else []

    def answers(self, conv_id: str | None = None) -> list[tuple[dict, Answer]]:
        out = []
        for row in self.results():
            if conv_id and row.get("conv_id") != conv_id:
                continue
            if row.get("answer"):
                out.append((row, Answer.from_dict(row["answer"])))
        return out

    def methods(self) -> list[str]:
        d = self.path / "memories"
        return sorted(p.name for p in d.iterdir() if p.is_dir()) if d.is_dir() else []

    def memory_dir(self, method: str, conv_id: str) -> Path:
        return self.path / "memories" / safe_name(method) / safe_name(conv_id)

    def memories(self, method: str, conv_id: str) -> list[dict]:
        p = self.memory_dir(method, conv_id) / "memories.jsonl"
        return read_jsonl(p) if p.exists() else []

    def events(self, method: str, conv_id: str) -> list[MemoryEvent]:
        p = self.memory_dir(method, conv_id) / "events.jsonl"
        return [MemoryEvent.from_dict(r) for r in read_jsonl(p)] if p.exists() else []

    def structures(self, method: str, conv_id: str) -> dict[str, Any]:
        p = self.memory_dir(method, conv_id) / "structures.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def load_method(self, method: str, conv_id: str, *, llm=None, embedder=None):
        """Reload the full method object (unpickles: only for runs you trust)."""
        from .methods import get_method

        return get_method(method).load(self.memory_dir(method, conv_id), llm=llm, embedder=embedder)
