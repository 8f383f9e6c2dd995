"""Tolerant JSON Lines reading and crash-safe writing, shared by every file the workbench keeps.

Cassettes (``llm/cache.py``), the results store (``eval/store.py``), run directories
(``rundir.py``) and the app all read JSONL through ``read_jsonl``: a line that is not UTF-8, not
JSON, not an object, too deeply nested or refused by the caller's ``check`` is skipped and
reported as ``file:line: reason`` — one bad line never makes a whole file unreadable, and never
passes silently either. A final line without its newline is a torn write (a crash mid-append):
it is skipped and reported the same way. Files are read line by line, never whole, and the rows
of one read share their key strings. Readers that *show* a run (the app, ``workbench report``,
``workbench mechanisms``) read through ``read_jsonl_capped``: a file above the stated limit
(``MAX_READ_BYTES``, ``MAX_READ_ROWS``) is read up to it, and ``CappedRead`` says what was left out.

Writers: ``append_line`` takes an exclusive lock and starts on a fresh line when the file ends
in a torn fragment, so a new record is never glued onto garbage; ``write_text_atomic`` /
``write_jsonl_atomic`` write a temporary file in the same folder and rename it over the target,
so a reader sees the old file or the new one, never half of one. ``read_json`` reads whole JSON
files (manifests, structures) and raises ``DamagedFile`` naming the file when they are damaged.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from filelock import FileLock

#: a caller's row check: returns None for a good row, or the reason it is refused
RowCheck = Callable[[dict], "str | None"]


class DamagedFile(ValueError):
    """A whole-file JSON document (manifest, structures, conversation) that cannot be read."""

    def __init__(self, path, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path}: {reason}")


# -- bounded, strict JSON ------------------------------------------------------------------------
#: deeper than this is refused before parsing: no file of ours nests past a few dozen levels, and a
#: document nested thousands deep would exhaust the recursion of the parser or of whatever walks it
MAX_DEPTH = 200
#: numbers beyond int64 are refused: no count, time or size of ours comes near, and bigger ones turn
#: pandas columns into objects, overflow float conversion, or (past 4300 digits) cannot even be printed
MAX_ABS_NUMBER = 2 ** 63 - 1
_INT_DIGITS = len(str(MAX_ABS_NUMBER))
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class RefusedJson(ValueError):
    """Valid-looking JSON this workbench will not read (too deep, a number out of range, NaN/Infinity,
    a lone surrogate, a repeated key); the message is the reason, for ``file:line: reason``. ``where``
    is the path to the refused value inside the document (``[0].qa[1].answer``) when it was found."""

    def __init__(self, reason: str, where: str = ""):
        self.reason, self.where = reason, where
        super().__init__(f"{reason} at {where}" if where else reason)


class _Refused:
    """Stands in for a refused value in the second, locating parse (``_locate_refusal``)."""


class _RepeatedKeys(dict):
    """An object that repeated a key, in the locating parse."""


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > _INT_DIGITS or abs(int(digits)) > MAX_ABS_NUMBER:
        shown = digits if len(digits) <= 24 else f"{digits[:12]}...({len(digits)} digits)"
        raise RefusedJson(f"integer {shown} out of range (more than {MAX_ABS_NUMBER} in size)")
    return int(digits)


def _bounded_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_ABS_NUMBER:
        shown = text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"
        raise RefusedJson(f"number {shown} out of range")
    return value


def _refuse_constant(name: str):
    raise RefusedJson(f"{name} is not a JSON number")


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """How deep ``text``'s brackets nest (outside strings), up to just past ``limit``, without recursion
    and without a Python loop over characters: strings and everything but brackets are dropped, then
    each pass deletes every empty ``[]``/``{}`` pair, which peels one level. Free when a document has
    few brackets (the usual line); unbalanced brackets stop the count (the parser reports them)."""
    if text.count("[") + text.count("{") <= limit:
        return 0
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depth = 0
    while brackets and depth <= limit:
        peeled = _EMPTY_PAIR.sub("", brackets)
        if len(peeled) == len(brackets):
            break
        brackets, depth = peeled, depth + 1
    return depth


def _is_lone_surrogate(v) -> bool:
    """Whether ``v`` is a string that cannot be written as UTF-8 (it holds an unpaired surrogate)."""
    if not isinstance(v, str):
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def escape_undecodable(text: str) -> str:
    """``text`` with each lone surrogate spelled out: ``\\xNN`` for a byte of a file name that was not UTF-8
    (Python reads such names with ``surrogateescape``: ``b"run\\xff"`` becomes ``"run\\udcff"``), ``\\uNNNN`` for
    any other. What comes out can be printed on any terminal, written as UTF-8 and put in JSON; what goes in is
    unchanged when it holds none (the usual case costs one ``encode``)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else
                       f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def escape_undecodable_all(value: Any) -> Any:
    """``value`` (plain JSON data: dicts, lists, strings) with ``escape_undecodable`` applied to every string and
    key: a census or report built from non-UTF-8 folder names can then be written and printed."""
    if isinstance(value, str):
        return escape_undecodable(value)
    if isinstance(value, dict):
        return {escape_undecodable(k) if isinstance(k, str) else k: escape_undecodable_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escape_undecodable_all(v) for v in value]
    return value


def _lone_surrogate(value) -> bool:
    """True when a string (or key) anywhere in ``value`` holds a surrogate that is not half of a pair
    (it cannot be written back as UTF-8). Iterative: the depth is already bounded, but cheaply so."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """An object's pairs as a dict, or ``RefusedJson`` when a key repeats: ``json`` would keep the last
    value silently, and which one the writer meant is a guess."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        shown = ascii(dup[:60]) + ("..." if len(dup) > 60 else "")
        raise RefusedJson(f"duplicate key {shown} in one object (which of its values is meant is ambiguous)")
    return obj


#: at most this many distinct keys are shared by one read (``_shared_keys``): rows of ours use a few hundred, and a
#: file made of millions of distinct keys would otherwise grow the table without saving anything
MAX_SHARED_KEYS = 10_000


def _shared_keys(keys: dict) -> Callable[[list], dict]:
    """An ``object_pairs_hook`` that takes each key from ``keys`` when it was seen before (and adds it while there
    is room). ``json`` shares keys only within one document, so a million result rows would hold a million copies
    of ``"method"``, ``"params_hash"``, ...: sharing them roughly halves the memory of parsed rows (measured on
    real results rows: 506 MB -> 277 MB for a 100 MB file) for about a third more parsing time. As with plain
    ``json``, a repeated key keeps its last value."""
    setdefault, get = keys.setdefault, keys.get

    def hook(pairs: list) -> dict:
        if len(keys) < MAX_SHARED_KEYS:  # may pass it by one document's keys: a bound, not an exact count
            return {setdefault(k, k): v for k, v in pairs}
        return {get(k, k): v for k, v in pairs}
    return hook


def json_path(parent: str, key) -> str:
    """``parent`` extended by a list index (``[3]``) or an object key (``.name``; spelled out with
    ``ascii`` unless it is a plain identifier)."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if key.isidentifier() and key.isascii() else f"{parent}[{ascii(key[:60])}]"


def path_to(value: Any, hit: Callable[[Any], bool]) -> str | None:
    """The path (``[0].qa[1].answer``) to the first value or key, in document order, for which ``hit``
    is true; ``""`` for the document itself, None when none is. Iterative (depth is bounded anyway)."""
    stack = [(value, "")]
    while stack:
        v, path = stack.pop()
        if hit(v):
            return path
        if isinstance(v, dict):
            for k in v:
                if hit(k):
                    return f"{json_path(path, k)} (its key)"
            stack.extend(reversed([(x, json_path(path, k)) for k, x in v.items()]))
        elif isinstance(v, list):
            stack.extend(reversed([(x, json_path(path, i)) for i, x in enumerate(v)]))
    return None


def _locate_refusal(text: str, constants_to: Callable | None, unique_keys: bool) -> str:
    """Where a value the strict parse refused sits: the text parsed again with every refused number,
    constant or repeated-key object replaced by a marker, then searched for the first marker. Runs
    only after a refusal, so the ordinary parse pays nothing for it."""
    def number(parse):
        def mark(token: str):
            try:
                return parse(token)
            except RefusedJson:
                return _Refused()
        return mark

    def pairs(items):
        obj = dict(items)
        return _RepeatedKeys(obj) if unique_keys and len(obj) != len(items) else obj

    value = json.loads(text, parse_int=number(_bounded_int), parse_float=number(_bounded_float),
                       parse_constant=constants_to or (lambda name: _Refused()), object_pairs_hook=pairs)
    where = path_to(value, lambda v: isinstance(v, (_Refused, _RepeatedKeys)))
    return "<top level>" if where == "" else (where or "")


def loads_strict(text: str, *, max_depth: int = MAX_DEPTH, constants_to: Callable | None = None,
                 unique_keys: bool = False, keys: dict | None = None) -> Any:
    """``json.loads`` for files someone else may have written: raises ``json.JSONDecodeError`` for
    invalid JSON and ``RefusedJson`` (saying why) for nesting deeper than ``max_depth``, integers
    or floats beyond ``MAX_ABS_NUMBER`` (a 5000-digit integer would otherwise raise Python's own
    int-conversion ``ValueError`` mid-parse, or later wherever it is printed), ``NaN``/``Infinity``,
    and lone surrogates. ``constants_to`` (dataset loaders, which name the record and field of a
    NaN themselves) receives ``NaN``/``Infinity`` instead of refusing them. ``unique_keys=True``
    (dataset files) refuses an object that repeats a key. ``keys`` (a dict a reader keeps over many
    documents, ``read_jsonl``): object keys seen before are shared from it instead of each document
    holding its own copy of every key (``_shared_keys``)."""
    if nesting_depth(text, max_depth) > max_depth:
        raise RefusedJson(f"JSON nested too deeply (more than {max_depth} levels)")
    hook = _unique_keys if unique_keys else (_shared_keys(keys) if keys is not None else None)
    try:
        value = json.loads(text, parse_int=_bounded_int, parse_float=_bounded_float,
                           parse_constant=constants_to or _refuse_constant, object_pairs_hook=hook)
    except RecursionError:  # only when the caller's stack is already deep: still a refusal, not a crash
        raise RefusedJson("JSON nested too deeply") from None
    except RefusedJson as exc:  # a number, constant or repeated key: say where it is
        raise RefusedJson(exc.reason, _locate_refusal(text, constants_to, unique_keys)) from None
    if _SURROGATE_ESCAPE.search(text) and _lone_surrogate(value):
        where = path_to(value, _is_lone_surrogate)
        raise RefusedJson("a string holds a lone surrogate escape (not text)",
                          "<top level>" if where == "" else (where or ""))
    return value


def json_reason(exc: ValueError) -> str:
    """One line saying why ``loads_strict`` refused a document."""
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if isinstance(exc, RefusedJson):
        return str(exc)
    return f"unreadable JSON value ({exc})"


class LeadsOutside(DamagedFile):
    """A file inside a folder we read or write (a run directory) that is a link, or sits under one,
    leading out of that folder: refused, never read or written through. A run directory may come
    from someone else, and a link to ``~/.ssh/...`` would otherwise be shown by the app or, for an
    appended file, written into."""


def confined(path: str | os.PathLike, root: str | os.PathLike) -> Path:
    """``path`` when, with every link followed, it stays inside ``root`` (itself followed: a run
    directory that is a link is fine); else ``LeadsOutside``. Links that stay inside are fine."""
    path, root_real = Path(path), Path(root).resolve()
    try:
        real = path.resolve()
    except (OSError, RuntimeError) as exc:  # a link loop (RuntimeError before Python 3.13)
        raise LeadsOutside(path, f"its links cannot be followed ({exc})") from None
    if real != root_real and not real.is_relative_to(root_real):
        raise LeadsOutside(path, f"a link leading to {real}, outside {root}; refused (not read, not written "
                                 "through)")
    return path


@dataclass(frozen=True)
class BadLine:
    """One skipped line: where it is and why it was refused."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass
class JsonlRead:
    """What ``read_jsonl`` found: the good rows (with their line numbers) and every skipped line."""

    rows: list[dict] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    torn_tail: bool = False  # the file ends without a newline (the next append must start a new line)
    end_offset: int = 0  # byte offset just past the last complete line (for incremental readers)
    next_line: int = 1  # the line number at ``end_offset``
    capped: "CappedRead | None" = None  # set when a capped read stopped before the end (what it left out)

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def parse_line(raw: bytes, check: RowCheck | None = None, keys: dict | None = None) -> tuple[dict | None, str | None]:
    """One line's bytes -> (row, None) or (None, reason). ``keys``: shared over a file's lines (``loads_strict``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start})"
    text = text.strip()
    if not text:
        return None, None
    try:
        row = loads_strict(text, keys=keys)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:  # RefusedJson, or anything else json raises on a value: a bad line, not a crash
        return None, json_reason(exc)
    if not isinstance(row, dict):
        return None, f"a JSON {type(row).__name__}, not an object"
    if check is not None:
        reason = check(row)
        if reason:
            return None, reason
    return row, None


#: The stated size limit of one JSONL file read *for display* from a run directory (``results.jsonl``,
#: ``events.jsonl``, ``memories.jsonl``: the app, ``workbench report``, ``workbench mechanisms``). A file past
#: ``MAX_READ_BYTES`` or ``MAX_READ_ROWS`` is read line by line up to the limit, and what was left out is said
#: (``CappedRead``). Why these figures: parsed rows take 2 to 3 times their file size (results rows with their
#: traces: 100 MB of rows hold 290 MB), and the report and the app build tables and figures on top, so 128 MB is
#: what keeps either under about 1 GB of memory however large the file (benchmarks/bench_big_files.py, a 1 GB
#: results file: the report took 265 s and 12.9 GB before the limit, 21 s and 0.84 GB with it; the app 152 s to
#: its first page and 12.3 GB, then 10 to 15 s and 0.93 GB). No real run comes near it: LoCoMo's 1,986 questions
#: answered by all eight methods are about 16,000 rows, some 30 MB with their traces. The row limit bounds a file of
#: many small rows (events) the same way. Resuming an evaluation reads its store whole: the limit is for showing a
#: run, never for deciding what is already done.
MAX_READ_BYTES = 128 * 1024 * 1024
MAX_READ_ROWS = 100_000
#: a capped read lists at most this many bad lines one by one (the rest are counted in one more entry): a file of
#: millions of damaged lines would otherwise hold a report larger than the rows themselves
MAX_LISTED_BAD = 10_000


@dataclass(frozen=True)
class CappedRead:
    """What a capped read (``read_jsonl(..., max_bytes=, max_rows=)``) left out of a file above the limit."""

    file: str
    size: int  # the file's bytes (from where reading started)
    limit_bytes: int
    limit_rows: int
    rows_read: int
    lines_left: int  # lines not read, the last one counted even without its newline
    bytes_left: int

    def __str__(self) -> str:
        return (f"{self.file} is {_size(self.size)}, above the read limit of {_size(self.limit_bytes)} or "
                f"{self.limit_rows:,} rows (workbench.jsonl.MAX_READ_BYTES / MAX_READ_ROWS): only its first "
                f"{self.rows_read:,} rows were read; {self.lines_left:,} lines ({_size(self.bytes_left)}) were left "
                "out, so every figure shown from it covers those rows only")


def _size(n: int) -> str:
    """A byte count for a person: ``1.0 GB``, ``256 MB``, ``12 kB``, ``300 bytes``."""
    for unit, scale in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("kB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"


def _count_lines(f, start: int, end: int) -> int:
    """How many lines the bytes ``start``..``end`` of ``f`` hold (a last one without newline counted), read in
    1 MiB chunks so counting what a capped read left out costs no memory."""
    f.seek(start)
    lines, left, last = 0, end - start, b"\n"
    while left > 0:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            break
        lines += chunk.count(b"\n")
        left -= len(chunk)
        last = chunk[-1:]
    return lines + (last != b"\n")


def read_jsonl(path: str | os.PathLike, *, check: RowCheck | None = None, offset: int = 0,
               first_line: int = 1, keep_tail: bool = False, max_bytes: int | None = None,
               max_rows: int | None = None) -> JsonlRead:
    """Every good row of a JSONL file, skipping (and reporting) bad lines.

    ``offset``/``first_line`` resume reading at a byte offset (``end_offset`` of a previous read).
    ``keep_tail=True`` leaves a final line without newline unread (and unreported) so an
    incremental reader can pick it up later. The file's size is taken under the shared lock that
    writers (``append_line``) take for each whole line, and only that much is read: a final line
    without newline is a torn write, not a line in progress. A missing file reads as empty.

    ``max_bytes``/``max_rows`` (readers for display pass ``MAX_READ_BYTES``/``MAX_READ_ROWS``) stop
    reading at the last whole line within that many bytes, or after that many good rows; ``capped``
    then says what was left out. The file is read line by line, never whole, so memory follows the
    rows kept, not the file's size.
    """
    out = JsonlRead(end_offset=offset, next_line=first_line)
    path = Path(path)
    if not path.exists():
        return out
    with open(path, "rb") as f:
        with _file_lock(path, reading=True):  # writers append whole lines under it: the size ends on one
            end = os.fstat(f.fileno()).st_size
        f.seek(offset)
        pos, number, budget = offset, first_line, None if max_bytes is None else offset + max_bytes
        unlisted = 0  # bad lines a capped read counted without listing each
        keys: dict = {}  # object keys shared by every row of the file (``_shared_keys``)
        while pos < end:
            limit = end - pos if budget is None else min(end, budget) - pos
            raw = f.readline(limit) if limit > 0 else b""
            if not raw.endswith(b"\n"):
                if budget is not None and pos + len(raw) == budget < end:  # the next line passes the byte limit
                    out.capped = _capped(f, path, offset, end, pos, max_bytes, max_rows, len(out.rows))
                elif raw:  # the file's last bytes, without their newline
                    out.torn_tail = True
                    if not keep_tail:
                        row, reason = parse_line(raw, check)
                        out.bad.append(BadLine(str(path), number, "torn final line (no newline; a write was cut "
                                               "off)" + (f": {reason}" if reason else "")))
                break
            row, reason = parse_line(raw, check, keys)
            if row is not None:
                out.rows.append(row)
                out.lines.append(number)
            elif reason:
                if budget is None or len(out.bad) < MAX_LISTED_BAD:
                    out.bad.append(BadLine(str(path), number, reason))
                else:
                    unlisted += 1
            pos, number = pos + len(raw), number + 1
            out.end_offset, out.next_line = pos, number
            if max_rows is not None and len(out.rows) >= max_rows and pos < end:
                out.capped = _capped(f, path, offset, end, pos, max_bytes, max_rows, len(out.rows))
                break
    if unlisted:
        out.bad.append(BadLine(str(path), number, f"and {unlisted:,} more bad lines before this one, not listed one by "
                                                  f"one (a capped read lists the first {MAX_LISTED_BAD:,})"))
    return out


def _capped(f, path: Path, offset: int, end: int, pos: int, max_bytes, max_rows, rows: int) -> CappedRead:
    return CappedRead(str(path), end - offset, MAX_READ_BYTES if max_bytes is None else max_bytes,
                      MAX_READ_ROWS if max_rows is None else max_rows, rows, _count_lines(f, pos, end), end - pos)


def read_jsonl_capped(path: str | os.PathLike, *, check: RowCheck | None = None) -> JsonlRead:
    """``read_jsonl`` under the stated display limits (``MAX_READ_BYTES``, ``MAX_READ_ROWS``, read when called, so a
    test may lower them); ``capped`` says what a file above them left out."""
    return read_jsonl(path, check=check, max_bytes=MAX_READ_BYTES, max_rows=MAX_READ_ROWS)


def dumps_line(row: Any, *, default=str) -> str:
    """One record as a JSONL line (no newline inside: ``json.dumps`` escapes them). A NaN or
    infinite float is written as ``null`` (see ``dumps_finite``)."""
    return dumps_finite(row, default=default)


def dumps_finite(value: Any, *, default=str, indent: int | None = None) -> str:
    """``json.dumps`` that never writes ``NaN``/``Infinity``: they are not JSON, and ``loads_strict``
    refuses them, so a non-finite float (a mean over nothing) is written as ``null`` instead —
    what we write, we can read back."""
    try:
        return json.dumps(value, ensure_ascii=False, default=default, indent=indent, allow_nan=False)
    except ValueError as exc:
        if "float" not in str(exc):  # a circular reference: not ours to hide
            raise
        return json.dumps(_finite(value), ensure_ascii=False, default=default, indent=indent, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def append_line(path: str | os.PathLike, line: str, *, root: str | os.PathLike | None = None) -> None:
    """Append one line under an exclusive lock; when the file ends in a torn fragment, the new
    line starts on a fresh line (the fragment stays a single bad line, reported when read).

    Never through a link out of ``root`` (default: the file's own folder): ``LeadsOutside``
    instead, so a run directory from elsewhere cannot aim our appends at another file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    confined(path, path.parent if root is None else root)
    data = (line if line.endswith("\n") else line + "\n").encode("utf-8")
    with naming(path), _file_lock(path), open(path, "a+b") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                data = b"\n" + data
        f.seek(0, os.SEEK_END)
        f.write(data)
        f.flush()  # a full disk is met here, inside ``naming``, not when the file is closed


@contextlib.contextmanager
def naming(path: str | os.PathLike, temp_prefix: str | None = None):
    """An ``OSError`` raised inside without a file name (``write`` on a full disk says only "No space left on
    device"), or naming a temporary file whose name starts with ``temp_prefix`` (which means nothing to the user),
    raised again naming ``path``, as the same subclass (``OSError(errno, ...)`` picks it): whoever reports it
    (``workbench.cli``) can then say which file could not be written."""
    try:
        yield
    except OSError as exc:
        named = exc.filename is not None and not (temp_prefix and Path(str(exc.filename)).name.startswith(temp_prefix))
        if named or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path)) from exc


def _file_lock(path: Path, *, reading: bool = False):
    """The cross-platform lock every writer of ``path`` takes (a ``<file>.lock`` beside it, via
    ``filelock``; ``fcntl`` would tie ``import workbench`` to POSIX). A reader of a file in a folder
    it cannot write (an installed package's cassettes) reads without the lock: no writer of ours
    can be appending there either."""
    if reading and not os.access(path.parent, os.W_OK):
        return contextlib.nullcontext()
    return FileLock(f"{path}.lock", timeout=60)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write a whole file via a temporary file in the same folder and a rename (never half-written)."""
    path = Path(path)
    with naming(path, temp_prefix=f".{path.name}."):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path


def write_jsonl_atomic(path: str | os.PathLike, rows: Iterable[Any], *, default=str) -> Path:
    """A whole JSONL file, one line per row, written atomically."""
    return write_text_atomic(path, "".join(dumps_line(r, default=default) + "\n" for r in rows))


def write_json_atomic(path: str | os.PathLike, value: Any, *, indent: int | None = None, default=str) -> Path:
    return write_text_atomic(path, dumps_finite(value, indent=indent, default=default))


def read_json(path: str | os.PathLike, *, expect: type | None = dict) -> Any:
    """A whole JSON file; ``DamagedFile`` (naming the file) when unreadable or of the wrong shape."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DamagedFile(path, f"not UTF-8 (byte {exc.start})") from None
    except IsADirectoryError:
        raise DamagedFile(path, "is a directory, not a file") from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise DamagedFile(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        value = loads_strict(text)
    except json.JSONDecodeError as exc:
        raise DamagedFile(path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise DamagedFile(path, json_reason(exc)) from None
    if expect is not None and not isinstance(value, expect):
        raise DamagedFile(path, f"expected a JSON {expect.__name__}, found {type(value).__name__}")
    return value
