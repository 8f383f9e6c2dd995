"""Frozen data model shared by loaders, methods and the evaluation harness.

Inputs (``Conversation``) and labels (``QA.answer``/``QA.evidence``) travel separately: methods get
conversations and question strings only; the harness gives gold data to metrics and judges.
"""
from __future__ import annotations

import os
import stat
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping


class DatasetError(ValueError):
    """Malformed dataset input. Names the file, the record and the field that is wrong."""

    def __init__(self, file: str, location: str, what: str):
        self.file, self.location, self.what = str(file), location, what
        super().__init__(f"{file}: {location}: {what}")


@dataclass(frozen=True)
class Turn:
    """One message. ``id`` is the dataset's own id (LoCoMo ``D3:7``; LongMemEval ``<session>:<i>``)."""

    id: str
    speaker: str
    text: str
    session_id: str
    time: datetime | None = None
    extras: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def content(self) -> str:
        """Text as every method sees it: image turns get their caption appended once, the same
        way for every method (LoCoMo image turns carry ``blip_caption``)."""
        caption = self.extras.get("blip_caption") if self.extras else None
        if caption:  # an image turn without words (LoCoMo allows it only with a caption) is its caption alone
            return f"{self.text} [shares an image: {caption}]" if self.text else f"[shares an image: {caption}]"
        return self.text


# Turn extras that reveal gold labels; ``Conversation.without_qa`` drops them before a method sees a turn.
GOLD_TURN_EXTRAS = frozenset({"has_answer"})


def _without_gold(turn: "Turn") -> "Turn":
    if not turn.extras or not GOLD_TURN_EXTRAS & set(turn.extras):
        return turn
    extras = {k: v for k, v in turn.extras.items() if k not in GOLD_TURN_EXTRAS}
    return Turn(turn.id, turn.speaker, turn.text, turn.session_id, turn.time, extras)


@dataclass(frozen=True)
class Session:
    id: str
    date_time: datetime | None
    turns: tuple[Turn, ...]
    date_text: str = ""


@dataclass(frozen=True)
class QA:
    """A question with its gold answer. ``category`` is LoCoMo's integer or LongMemEval's type."""

    id: str
    question: str
    answer: str
    category: int | str
    evidence: tuple[str, ...] = ()
    time: datetime | None = None
    extras: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def dataset_kind(self) -> str:
        """``"locomo"`` (integer categories) or ``"longmemeval"`` (question types): methods whose
        papers use the question date on one benchmark only read this through the harness."""
        return "locomo" if isinstance(self.category, int) else "longmemeval"


DATASET_KINDS = ("locomo", "longmemeval")


@dataclass(frozen=True)
class Conversation:
    id: str
    speakers: tuple[str, ...]
    sessions: tuple[Session, ...]
    qa: tuple[QA, ...] = ()
    source: str = ""

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(t for s in self.sessions for t in s.turns)

    def turn(self, turn_id: str) -> Turn:
        for t in self.turns:
            if t.id == turn_id:
                return t
        raise KeyError(turn_id)

    def session_of(self, turn_id: str) -> Session:
        for s in self.sessions:
            for t in s.turns:
                if t.id == turn_id:
                    return s
        raise KeyError(turn_id)

    def without_qa(self) -> "Conversation":
        """The conversation with labels removed: what a method is allowed to see. Gold-revealing
        turn extras (``GOLD_TURN_EXTRAS``, e.g. LongMemEval's ``has_answer``) are stripped too."""
        sessions = tuple(Session(s.id, s.date_time, tuple(_without_gold(t) for t in s.turns), s.date_text)
                         for s in self.sessions)
        return Conversation(self.id, self.speakers, sessions, (), self.source)

    def head(self, n_sessions: int) -> "Conversation":
        """The first ``n_sessions`` sessions and the questions whose evidence lies inside them."""
        sessions = self.sessions[:n_sessions]
        ids = {t.id for s in sessions for t in s.turns}
        qa = tuple(q for q in self.qa if q.evidence and set(q.evidence) <= ids)
        return Conversation(self.id, self.speakers, sessions, qa, self.source)


@dataclass(frozen=True)
class Dataset:
    """A loaded benchmark: conversations plus a report of what the loader skipped or repaired."""

    name: str
    conversations: tuple[Conversation, ...]
    skipped: Mapping[str, int] = field(default_factory=dict)

    def __iter__(self):
        return iter(self.conversations)

    def __len__(self) -> int:
        return len(self.conversations)

    def __getitem__(self, i):
        if isinstance(i, str):
            for c in self.conversations:
                if c.id == i:
                    return c
            raise KeyError(i)
        return self.conversations[i]

    @property
    def questions(self) -> tuple[QA, ...]:
        return tuple(q for c in self.conversations for q in c.qa)


#: Field-size limits of the loaders (a record beyond them is refused with a DatasetError, not
#: passed on to methods that would take minutes over it). Real data stays far below: LoCoMo
#: ids < 20 characters and turns < 2 KB, LongMemEval turns < 50 KB.
MAX_ID_CHARS = 256
MAX_DATE_CHARS = 64
MAX_TEXT_CHARS = 1_000_000


#: Session dates outside these years are refused: no benchmark of ours is dated outside them, and a
#: date near year 9999 makes date arithmetic (H-Mem's time windows) overflow on every row.
MIN_YEAR, MAX_YEAR = 1900, 2100

_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_regular_file(file: str, *, what: str = "JSON file", limit: int | None = None) -> bytes:
    """The bytes of ``file`` if it is a regular file; else a ``DatasetError`` naming it, raised
    before any read. Opened without blocking (``O_NONBLOCK``: a named pipe with no writer would
    otherwise hang the open) and checked on the open descriptor (``fstat``), so the file checked is
    the file read: a pipe never hangs the loader, ``/dev/zero`` is never read forever. ``what`` names the
    kind of file in the messages; with ``limit``, a file over that many bytes is refused before reading
    (and one that grows past it while read, after)."""
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise DatasetError(file, "<file>", "file not found") from None
    except IsADirectoryError:
        raise DatasetError(file, "<file>", f"is a directory, not a {what}") from None
    except OSError as exc:
        raise DatasetError(file, "<file>", f"cannot be read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise DatasetError(file, "<file>", f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
        raise DatasetError(file, "<file>", f"is {kind}, not a regular {what} (refused before reading)")
    with os.fdopen(fd, "rb") as f:
        try:
            if limit is not None and os.fstat(f.fileno()).st_size > limit:
                raise DatasetError(file, "<file>", f"is {os.fstat(f.fileno()).st_size:,} bytes; a {what} may "
                                                   f"hold at most {limit:,} (refused before reading)")
            data = f.read() if limit is None else f.read(limit + 1)
        except OSError as exc:
            raise DatasetError(file, "<file>", f"cannot be read ({exc.strerror or exc})") from None
    if limit is not None and len(data) > limit:
        raise DatasetError(file, "<file>", f"is more than {limit:,} bytes (refused)")
    return data


#: What a file that is not UTF-8 JSON most often is, told by its first bytes: said in the error, so the
#: reader knows what to do (decompress, re-save as UTF-8) rather than only that byte 0 is wrong.
_MAGIC = ((b"\x1f\x8b", "gzip-compressed data (decompress it first)"),
          (b"PK\x03\x04", "a zip archive (extract the JSON file from it)"),
          (b"BZh", "bzip2-compressed data (decompress it first)"),
          (b"\xfd7zXZ\x00", "xz-compressed data (decompress it first)"),
          (b"\xff\xfe\x00\x00", "UTF-32 text (save it as UTF-8)"),
          (b"\x00\x00\xfe\xff", "UTF-32 text (save it as UTF-8)"),
          (b"\xff\xfe", "UTF-16 text (save it as UTF-8)"),
          (b"\xfe\xff", "UTF-16 text (save it as UTF-8)"))
UTF8_BOM = b"\xef\xbb\xbf"


def _not_json_text(file: str, data: bytes) -> None:
    """A ``DatasetError`` for bytes that are plainly not a UTF-8 JSON document (empty, an archive,
    UTF-16/32 with or without a byte-order mark); returns quietly otherwise."""
    if not data:
        raise DatasetError(file, "line 1 column 1", "the file is empty (0 bytes), no JSON")
    if not data.strip():
        raise DatasetError(file, "<file>", "holds only whitespace, no JSON")
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise DatasetError(file, "<file>", f"is {what}, not UTF-8 JSON text")
    head = data[:64]
    if len(head) >= 4 and head.count(0) * 3 >= len(head):  # ASCII in UTF-16 or UTF-32: every other byte is NUL
        raise DatasetError(file, "<file>", "is UTF-16 or UTF-32 text without a byte-order mark (save it as UTF-8)")


def _json_lines_hint(text: str) -> str:
    """A hint that ``text`` is JSON Lines: its first line alone is one JSON object (a record)."""
    import json

    first = text.lstrip().split("\n", 1)[0]
    try:
        record = json.loads(first)
    except ValueError:  # not one document on its own line: no hint, the parser's message stands
        return ""
    if not isinstance(record, dict):
        return ""
    return "; the file looks like JSON Lines (one record per line), but a dataset file is one JSON list"


class NonFinite:
    """Where a dataset file holds ``NaN``/``Infinity`` (``where``, its JSON path), found by
    ``read_json_file`` and raised by the loader after its own checks (``raise_if_any``): a NaN in a
    field the loader reads (an answer) is then named by record and field, one anywhere else (a field
    no loader reads) by its JSON path. Either way it is refused: neither is JSON, and a NaN that
    reaches a saved run or a pandas column stays there."""

    def __init__(self, file: str):
        self.file, self.seen, self.where = file, 0, None

    def constant(self, name: str) -> float:
        self.seen += 1
        return float(name)

    def locate(self, value) -> None:
        if self.seen:
            import math

            from ..jsonl import path_to

            where = path_to(value, lambda v: isinstance(v, float) and not math.isfinite(v))
            self.where = "<top level>" if where == "" else (where or "<file>")

    def raise_if_any(self) -> None:
        if self.seen:
            raise DatasetError(self.file, f"JSON {self.where}", "NaN or Infinity is not a JSON number (refused "
                                                                 "anywhere in a dataset file, read or not)")


def read_json_file(path, *, non_finite: NonFinite | None = None, skipped=None) -> object:
    """Read a dataset file; every way it can be unreadable becomes a ``DatasetError`` naming it
    (missing, not a regular file, empty, compressed or UTF-16, not UTF-8, invalid JSON, JSON Lines,
    nested too deeply, a key repeated inside one object: which value is meant would be a guess).
    ``NaN``/``Infinity`` go to ``non_finite`` when given (the loader raises them after naming what it
    reads), else are refused here. A UTF-8 byte-order mark is dropped and counted in ``skipped``
    (``byte_order_mark_removed``) when given."""
    import json

    file = str(path)
    data = read_regular_file(file)
    _not_json_text(file, data)
    if data.startswith(UTF8_BOM) and skipped is not None:
        skipped["byte_order_mark_removed"] += 1
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(file, f"byte {exc.start}", "not UTF-8 text") from None
    from ..jsonl import loads_strict

    try:
        value = loads_strict(text, constants_to=non_finite.constant if non_finite else None, unique_keys=True)
    except json.JSONDecodeError as exc:
        comment = text[exc.pos:exc.pos + 2] in ("//", "/*") or text[exc.pos:exc.pos + 1] == "#"
        hint = (_json_lines_hint(text) if exc.msg == "Extra data" else "; JSON has no comments" if comment else "")
        raise DatasetError(file, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}{hint}") from None
    except ValueError as exc:  # too deep, a number out of range, a lone surrogate, a duplicate key: said where
        where = getattr(exc, "where", "")
        reason = getattr(exc, "reason", str(exc))
        raise DatasetError(file, f"JSON {where}" if where else "<file>", f"refused JSON: {reason}") from None
    if non_finite is not None:
        non_finite.locate(value)
    return value


def visible_form(text: str) -> str:
    """``text`` as a reader sees it: NFKC-normalised (full-width and compatibility look-alikes folded),
    without invisible format and control characters (zero-width spaces and joiners, BOMs, direction
    marks), whitespace runs as one space, no leading or trailing space."""
    folded = unicodedata.normalize("NFKC", text)
    if not folded.isprintable():  # cheap test: plain text skips the character loop
        folded = "".join(ch for ch in folded if ch.isspace() or unicodedata.category(ch) not in ("Cf", "Cc"))
    return " ".join(folded.split())


def _shown(value: str, limit: int = 80) -> str:
    """A value for an error message, every invisible character spelled out (``ascii``)."""
    return ascii(value[:limit]) + ("..." if len(value) > limit else "")


def check_id(file: str, location: str, value, *, limit: int = MAX_ID_CHARS) -> str:
    """An id or a speaker name: a non-empty string equal to its ``visible_form``. Two ids that differ
    only by whitespace, a zero-width character or a look-alike would be two records to the code and
    one to every reader (and evidence naming one would miss the other), so such an id is refused."""
    check_string(file, location, value, limit=limit)
    visible = visible_form(value)
    if visible != value:
        raise DatasetError(file, location, f"{_shown(value)} holds invisible, look-alike or extra whitespace "
                                           f"characters (reads as {_shown(visible)}); ids and names must be plain")
    return value


def check_year(file: str, location: str, when: datetime) -> datetime:
    """``when`` if its year lies within ``MIN_YEAR``-``MAX_YEAR``."""
    if not MIN_YEAR <= when.year <= MAX_YEAR:
        raise DatasetError(file, location, f"year {when.year} is outside {MIN_YEAR}-{MAX_YEAR}")
    return when


def check_string(file: str, location: str, value, *, limit: int = MAX_ID_CHARS, empty_ok: bool = False) -> str:
    """``value`` if it is a string within ``limit`` characters (and not blank unless ``empty_ok``)."""
    if not isinstance(value, str):
        raise DatasetError(file, location, f"must be a string, got {type(value).__name__}")
    if not empty_ok and not (value.strip() if value.isascii() else visible_form(value)):
        raise DatasetError(file, location, "must not be empty (or only invisible characters)")
    if len(value) > limit:
        raise DatasetError(file, location, f"is {len(value):,} characters long; the limit is {limit:,}")
    return value


def check_answer(file: str, location: str, value) -> str:
    """A gold answer: a string or a finite number (cast with ``str``); booleans, NaN and containers
    are refused rather than turned into "True"/"nan"."""
    import math

    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DatasetError(file, location, f"must be a string or a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise DatasetError(file, location, f"must be a finite number, got {value!r}")
    if isinstance(value, str):
        check_string(file, location, value, limit=MAX_TEXT_CHARS)
    return str(value)
