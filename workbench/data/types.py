"""Frozen data model shared by loaders, methods and the evaluation harness.

Inputs (``Conversation``) and labels (``QA.answer``/``QA.evidence``) travel separately: methods get
conversations and question strings only; the harness gives gold data to metrics and judges.
"""
from __future__ import annotations

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
        if caption:
            return f"{self.text} [shares an image: {caption}]"
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


def read_json_file(path) -> object:
    """Read a dataset file; every way it can be unreadable becomes a ``DatasetError`` naming it
    (missing, a directory, not UTF-8, invalid JSON, nested too deeply)."""
    import json
    from pathlib import Path

    file = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DatasetError(file, "<file>", "file not found") from None
    except IsADirectoryError:
        raise DatasetError(file, "<file>", "is a directory, not a JSON file") from None
    except OSError as exc:
        raise DatasetError(file, "<file>", f"cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(file, f"byte {exc.start}", "not UTF-8 text") from None
    from ..jsonl import loads_strict

    try:
        return loads_strict(text, constants_to=float)  # NaN answers: the loaders name record and field
    except json.JSONDecodeError as exc:
        raise DatasetError(file, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # too deep, a number out of range, NaN/Infinity, a lone surrogate
        raise DatasetError(file, "<file>", f"refused JSON: {exc}") from None


def check_string(file: str, location: str, value, *, limit: int = MAX_ID_CHARS, empty_ok: bool = False) -> str:
    """``value`` if it is a string within ``limit`` characters (and not blank unless ``empty_ok``)."""
    if not isinstance(value, str):
        raise DatasetError(file, location, f"must be a string, got {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise DatasetError(file, location, "must not be empty")
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
