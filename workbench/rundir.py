"""Layout of a saved run directory — what the demo and ``workbench eval`` write and what the app
and widgets read, with no LLM and without unpickling anything:

    <run>/manifest.json                      what was run (models, params, data, date)
    <run>/conversations/<conv_id>.json       the conversation with its QA (gold) for overlays
    <run>/results.jsonl                      one evaluation row per question (with the Answer JSON)
    <run>/mechanisms.json                    the mechanism census of the run (workbench.eval.mechanisms)
    <run>/memories/<method>/<conv_id>/       one built memory:
        params.json, state.pkl               reloadable with Method.load (pickle: see its trust rule)
        memories.jsonl                       memories() rows
        events.jsonl                         the memory event log
        structures.json                      method-specific plain data for views (tree, graph, clusters)
"""
from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from .data import Conversation
from .data.serialize import conversation_from_dict, conversation_to_dict
from .jsonl import (DamagedFile, LeadsOutside, confined, read_json, read_jsonl, read_jsonl_capped, write_json_atomic,
                    write_jsonl_atomic)
from .trace import Answer, MemoryEvent

#: characters an id keeps in its file name; everything else is %-encoded (UTF-8 bytes)
_KEEP = "-_."
_MAX_NAME = 180  # bytes: well under the 255 most file systems allow, room for a suffix


def safe_name(text: str) -> str:
    """The one id -> file-name mapping of run directories (conversations, methods, memories).

    Letters, digits, ``-``, ``_`` and ``.`` stay; every other character is %-encoded, so the
    mapping is reversible (``id_from_name``) and two different ids never share a file. A leading
    dot is encoded too, so no name is ``.``, ``..`` or hidden, and no name contains ``/``: a file
    name made from an id always stays inside its folder. Very long ids are cut and suffixed
    with a hash of the whole id (``~<hash>``; those names are not reversible).
    """
    text = "" if text is None else str(text)
    if not text:  # an empty id still gets a real, distinct name
        return "%00empty"
    name = quote(text, safe=_KEEP, errors="backslashreplace")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name.encode()) > _MAX_NAME:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = name[:_MAX_NAME - 17] + "~" + digest
    return name


def id_from_name(name: str) -> str:
    """The id a ``safe_name`` file name stands for (names made by hand are returned decoded)."""
    return "" if name == "%00empty" else unquote(name)


def _child(parent: Path, ident: str, suffix: str = "") -> Path:
    """``parent/<safe_name(ident)><suffix>``; when that does not exist but a child named exactly
    ``ident`` does (a folder renamed by hand, an older run), that child — never anything outside
    ``parent``."""
    path = parent / f"{safe_name(ident)}{suffix}"
    if path.exists():
        return path
    raw = f"{ident}{suffix}"
    if raw and "/" not in raw and "\\" not in raw and "\0" not in raw and raw not in (".", ".."):
        alt = parent / raw
        try:
            if alt.exists() and alt.resolve().parent == parent.resolve():
                return alt
        except (OSError, ValueError):
            pass
    return path


def _jsonable(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    return str(v)


def write_jsonl(path: Path, rows) -> None:
    """A whole JSONL file, written atomically (temporary file + rename)."""
    write_jsonl_atomic(path, rows, default=_jsonable)


#: rows of run files already read by this process, by (path, size, modification time, inode, read limits):
#: every session of a served app reads the same results.jsonl, and parsing it strictly was the largest
#: part of a new session's cost (0.08 of ~0.2 s on the demo run). Kept pickled, so each reader gets rows of
#: its own (no view can change another's) at a quarter of the parsing cost; bounded in bytes.
_ROWS_CACHE: OrderedDict[tuple, tuple[bytes, tuple[str, ...], str | None]] = OrderedDict()
_ROWS_CACHE_BYTES = 256 * 1024 * 1024
_ROWS_CACHE_LOCK = threading.Lock()


def _read_cached(path: Path):
    """``(rows, bad lines, cap note)`` of a capped read of ``path``, from ``_ROWS_CACHE`` when its file is
    unchanged. Only the process's own parse is pickled and unpickled here, never a file's bytes."""
    from . import jsonl

    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, jsonl.MAX_READ_BYTES, jsonl.MAX_READ_ROWS)
    with _ROWS_CACHE_LOCK:
        hit = _ROWS_CACHE.get(key)
        if hit is not None:
            _ROWS_CACHE.move_to_end(key)
    if hit is not None:
        blob, bad, capped = hit
        return pickle.loads(blob), list(bad), capped
    got = read_jsonl_capped(path)
    bad, capped = tuple(str(b) for b in got.bad), (str(got.capped) if got.capped is not None else None)
    blob = pickle.dumps(got.rows, protocol=pickle.HIGHEST_PROTOCOL)
    with _ROWS_CACHE_LOCK:
        if len(blob) <= _ROWS_CACHE_BYTES // 4:
            _ROWS_CACHE[key] = (blob, bad, capped)
            while sum(len(v[0]) for v in _ROWS_CACHE.values()) > _ROWS_CACHE_BYTES:
                _ROWS_CACHE.popitem(last=False)
    return got.rows, list(bad), capped


def read_jsonl_rows(path: Path, problems: list | None = None, *, capped: bool = False,
                    notes: set | None = None) -> list[dict]:
    """Rows of a JSONL file through the shared tolerant reader; bad lines go to ``problems``. ``capped=True``
    reads at most the stated display limit (``jsonl.MAX_READ_BYTES`` / ``MAX_READ_ROWS``); what a file above it
    left out is said in ``problems`` too (and that text added to ``notes``: it is a warning, not a skipped line)."""
    if capped:
        rows, bad, cap = _read_cached(Path(path))
    else:
        got = read_jsonl(path)
        rows, bad, cap = got.rows, [str(b) for b in got.bad], None
    if problems is not None:
        problems.extend(bad)
        if cap is not None:
            problems.append(cap)
            if notes is not None:
                notes.add(cap)
    return rows


def save_conversation(run: Path, conv: Conversation) -> Path:
    path = Path(run) / "conversations" / f"{safe_name(conv.id)}.json"
    return write_json_atomic(path, conversation_to_dict(conv), default=_jsonable)


def save_memory_snapshot(method, run: Path, conv_id: str | None = None) -> Path:
    """Save a built method: reloadable state plus plain-JSON views of its memories and events."""
    conv_id = conv_id or method.conversation_.id
    out = Path(run) / "memories" / safe_name(method.name) / safe_name(conv_id)
    method.save(out)
    df = method.memories()
    write_jsonl(out / "memories.jsonl", df.to_dict(orient="records"))
    write_jsonl(out / "events.jsonl", (e.to_dict() for e in method.events))
    structures = method.structures() if hasattr(method, "structures") else {}
    write_json_atomic(out / "structures.json", structures, default=_jsonable)
    return out


def check_links_stay_inside(run: str | Path) -> None:
    """Before writing into an existing run directory (``eval --out``): ``LeadsOutside`` for the first
    entry that is a link leading out of it, so no append, manifest merge or saved memory lands in
    (or reads from) a file elsewhere. Links that stay inside are fine; so is a run that is a link."""
    run = Path(run)
    if run.is_dir():
        for entry in run.rglob("*"):  # rglob lists a linked folder but does not descend into it
            confined(entry, run)


class RunDir:
    """Read-only access to a saved run, possibly made by someone else: everything read is data.

    Missing parts give empty results; a damaged whole file (manifest, conversation, structures)
    raises ``DamagedFile`` naming it (the app shows it, nothing is silently reset); bad JSONL
    lines are skipped and listed in ``problems`` as ``file:line: reason``. No read follows a link
    out of the run directory: such a file raises ``LeadsOutside`` (a ``DamagedFile``), or for a
    JSONL file is listed in ``problems`` and reads as empty. A JSONL file above the stated display
    limit (``jsonl.MAX_READ_BYTES`` / ``MAX_READ_ROWS``: a 1 GB results file) is read up to it, and
    what was left out is said in ``problems`` (that text is also in ``cap_notes``, for a reader who
    shows warnings apart from skipped lines).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"run directory not found: {self.path}")
        self.problems: list[str] = []
        self.cap_notes: set[str] = set()

    def _inside(self, p: Path) -> Path:
        """``p`` when it resolves inside the run directory; ``LeadsOutside`` when a link leads out."""
        return confined(p, self.path)

    def _rows(self, p: Path) -> list[dict]:
        try:
            self._inside(p)
        except LeadsOutside as exc:
            self.problems.append(str(exc))
            return []
        return read_jsonl_rows(p, self.problems, capped=True, notes=self.cap_notes) if p.is_file() else []

    def _json(self, p: Path) -> Any:
        """A whole JSON file of the run (``{}`` when absent), never through a link out of it."""
        return read_json(self._inside(p)) if p.exists() else {}

    def manifest(self) -> dict:
        return self._json(self.path / "manifest.json")

    def conversation_ids(self) -> list[str]:
        d = self.path / "conversations"
        return sorted(id_from_name(p.stem) for p in d.glob("*.json") if p.is_file()) if d.is_dir() else []

    def conversation(self, conv_id: str) -> Conversation:
        p = _child(self.path / "conversations", conv_id, ".json")
        data = read_json(self._inside(p))
        try:
            return conversation_from_dict(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DamagedFile(p, f"malformed conversation ({type(exc).__name__}: {exc})") from None

    def results(self) -> list[dict]:
        return self._rows(self.path / "results.jsonl")

    def answers(self, conv_id: str | None = None) -> list[tuple[dict, Answer]]:
        out = []
        for row in self.results():
            if conv_id and row.get("conv_id") != conv_id:
                continue
            if row.get("answer"):
                try:
                    out.append((row, Answer.from_dict(row["answer"])))
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    self.problems.append(f"{self.path / 'results.jsonl'}: answer of {row.get('qa_id')!r}: "
                                         f"{type(exc).__name__}: {exc}")
        return out

    def methods(self) -> list[str]:
        d = self.path / "memories"
        return sorted(id_from_name(p.name) for p in d.iterdir() if p.is_dir()) if d.is_dir() else []

    def memory_dir(self, method: str, conv_id: str) -> Path:
        return _child(_child(self.path / "memories", method), conv_id)

    def memories(self, method: str, conv_id: str) -> list[dict]:
        return self._rows(self.memory_dir(method, conv_id) / "memories.jsonl")

    def events(self, method: str, conv_id: str) -> list[MemoryEvent]:
        p = self.memory_dir(method, conv_id) / "events.jsonl"
        out = []
        for i, r in enumerate(self._rows(p)):
            try:
                out.append(MemoryEvent.from_dict(r))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                self.problems.append(f"{p}: event {i}: {type(exc).__name__}: {exc}")
        return out

    def structures(self, method: str, conv_id: str) -> dict[str, Any]:
        return self._json(self.memory_dir(method, conv_id) / "structures.json")

    def params(self, method: str, conv_id: str, *, backend: bool = False) -> dict[str, Any]:
        """``params.json`` of a saved memory (``{}`` when absent): the method's class and settings.
        ``backend=True`` reads the one MemR3 saves for its backend (``backend/params.json``)."""
        d = self.memory_dir(method, conv_id)
        return self._json((d / "backend" if backend else d) / "params.json")

    def load_method(self, method: str, conv_id: str, *, llm=None, embedder=None, trust: bool = False,
                    reranker=None):
        """Reload the full method object. Its state file is a pickle: a memory saved on another
        machine is refused unless ``trust=True`` (see ``MemoryMethod.load``)."""
        from .methods import get_method

        folder = self.memory_dir(method, conv_id)
        for part in [folder, *(folder / name for name in ("params.json", "state.pkl", "state.sig")),
                     *(folder.rglob("*") if folder.is_dir() else [])]:
            self._inside(part)  # a linked state.pkl or backend folder is not unpickled from elsewhere
        return get_method(method).load(folder, llm=llm, embedder=embedder, trust=trust, reranker=reranker)
