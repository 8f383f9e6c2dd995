"""Frozen, JSON round-trippable records of what a method did: Answer, Step, Hit, LLMCall, Usage,
and the unified MemoryEvent log. A run saved with ``to_dict``/``to_json`` replays in the widgets
with no LLM. ``_repr_html_`` is static HTML with every piece of text escaped.
"""
from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable, Literal

EVENT_KINDS = ("ADD", "UPDATE", "DELETE", "MERGE", "CONSOLIDATE", "SUMMARIZE", "LINK", "BUFFER")
EventKind = Literal["ADD", "UPDATE", "DELETE", "MERGE", "CONSOLIDATE", "SUMMARIZE", "LINK", "BUFFER"]


def _jsonable(value: Any) -> Any:
    """Normalise to plain JSON types (tuples become lists) so a round trip compares equal."""
    return json.loads(json.dumps(value, default=_default))


def _default(obj):
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _counts(d: dict, names: tuple[str, ...], where: str) -> dict:
    """``d`` with each count in ``names`` checked: a whole number of at least 0 (an integral float is
    taken as its int). A count read from a run someone else made may be text, negative or ``true``:
    that is a ``ValueError`` naming the field, which the run's reader reports as one damaged record,
    instead of a view raising when it adds the counts up."""
    out = dict(d)
    for name in names:
        if name not in out:
            continue
        v = out[name]
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{where}.{name}: expected a whole number of at least 0, got {v!r:.40}")
        out[name] = v
    return out


class _Record:
    """Shared JSON helpers for the frozen records below."""

    def to_dict(self) -> dict:
        return _jsonable(asdict(self))

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_json(cls, text: str):
        return cls.from_dict(json.loads(text))


@dataclass(frozen=True)
class Usage(_Record):
    """Token and call counts. Cached calls cost nothing: their tokens are counted in ``cached_*``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    latency_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.calls + other.calls, self.cached_calls + other.cached_calls,
                     round(self.latency_s + other.latency_s, 6))

    @classmethod
    def total(cls, items: Iterable["Usage"]) -> "Usage":
        out = cls()
        for u in items:
            out = out + u
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Usage":
        return cls(**_counts(d, ("prompt_tokens", "completion_tokens", "calls", "cached_calls"), "usage"))


@dataclass(frozen=True)
class LLMCall(_Record):
    """One model call as recorded by the LLM boundary, with its ledger tags.

    Token counts are those of the call as made, whether or not it was served from the cache,
    so a replayed run reports the same cost as the live one; ``cached`` says which it was.
    """

    role: str
    method: str
    phase: str
    model: str
    messages: tuple = ()
    response: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None
    # "local" when the reply was not JSON as sent and the boundary repaired it locally (json_repair, then the
    # schema) instead of spending a repair call; "" otherwise (and then left out of the saved record)
    repaired: str = ""

    def __post_init__(self):
        object.__setattr__(self, "messages", tuple(_jsonable(list(self.messages))))

    def to_dict(self) -> dict:
        d = super().to_dict()
        if not d.get("repaired"):
            d.pop("repaired", None)  # saved traces of calls read as sent stay as they were
        return d

    def marked_repaired(self, how: str) -> None:
        """Complete this record once its reply was read: the LLM boundary marks a locally repaired reply on the
        same object its ledger and trackers hold (the record is otherwise never changed)."""
        object.__setattr__(self, "repaired", str(how))

    @property
    def usage(self) -> Usage:
        return Usage(self.prompt_tokens, self.completion_tokens, 1, int(self.cached), self.latency_s)

    @classmethod
    def from_dict(cls, d: dict) -> "LLMCall":
        d = _counts(d, ("prompt_tokens", "completion_tokens"), "call")
        return cls(**{**d, "messages": tuple(d.get("messages", ()))})


@dataclass(frozen=True)
class Hit(_Record):
    """A retrieved unit: its id, text, score and provenance (source turn ids)."""

    unit_id: str
    text: str
    score: float = 0.0
    source_ids: tuple[str, ...] = ()
    kind: str = ""

    def __post_init__(self):
        object.__setattr__(self, "source_ids", tuple(self.source_ids))
        object.__setattr__(self, "score", float(self.score))

    @classmethod
    def from_dict(cls, d: dict) -> "Hit":
        return cls(**d)


#: step kinds whose text becomes the answer (a plain ``answer``, HyMem's ``final``, H-Mem's
#: ``synthesize``); the last one in a trace wrote the answer the method returned. Readers of traces
#: (the mechanism census, the Question view) use it to tell a failed answer from a failed earlier step.
ANSWER_WRITER_KINDS = ("answer", "final", "synthesize")


@dataclass(frozen=True)
class Step(_Record):
    """One decision a method made while answering (a tier, a router action, a judge verdict...).

    ``data`` holds the method-specific state to show (plain JSON); ``hits`` what this step
    retrieved; ``calls`` the LLM calls made inside the step.
    """

    kind: str
    title: str
    data: dict = field(default_factory=dict)
    hits: tuple[Hit, ...] = ()
    calls: tuple[LLMCall, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "data", _jsonable(dict(self.data)))
        object.__setattr__(self, "hits", tuple(self.hits))
        object.__setattr__(self, "calls", tuple(self.calls))

    @property
    def usage(self) -> Usage:
        return Usage.total(c.usage for c in self.calls)

    @classmethod
    def from_dict(cls, d: dict) -> "Step":
        return cls(d["kind"], d["title"], d.get("data", {}), tuple(Hit.from_dict(h) for h in d.get("hits", ())),
                   tuple(LLMCall.from_dict(c) for c in d.get("calls", ())))


@dataclass(frozen=True)
class Answer(_Record):
    """A method's answer with the full trace of how it got there.

    ``context`` follows one convention for every method: exactly the units put in front of the
    method's *final reader* (the call whose reply is the answer). When that call reads only text an
    earlier call wrote from units (MemR3's evidence list, H-Mem's sub-answers), it is the units in
    front of the call(s) that last wrote that text. Everything else a method retrieved stays in its
    steps' ``hits``. Evidence recall, ``turns_shown`` and evidence precision are computed on the
    provenance of ``context`` (``workbench.eval.metrics``). Answers saved before this convention
    load unchanged; for MemR3 and HyMem their ``context`` may be a superset (every hit).
    """

    question: str
    text: str
    steps: tuple[Step, ...] = ()
    context: tuple[Hit, ...] = ()
    usage: Usage = Usage()
    method: str = ""
    error: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "context", tuple(self.context))

    @property
    def calls(self) -> tuple[LLMCall, ...]:
        return tuple(c for s in self.steps for c in s.calls)

    @property
    def source_ids(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for h in self.context:
            for s in h.source_ids:
                seen.setdefault(s, None)
        return tuple(seen)

    @classmethod
    def from_dict(cls, d: dict) -> "Answer":
        return cls(d["question"], d["text"], tuple(Step.from_dict(s) for s in d.get("steps", ())),
                   tuple(Hit.from_dict(h) for h in d.get("context", ())), Usage.from_dict(d.get("usage", {})),
                   d.get("method", ""), d.get("error"))

    def __repr__(self) -> str:
        text = self.text if len(self.text) < 80 else self.text[:77] + "..."
        return (f"Answer({text!r}, steps={len(self.steps)}, context={len(self.context)}, "
                f"tokens={self.usage.total_tokens}, calls={self.usage.calls})")

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = "".join(
            f"<tr><td>{i}</td><td>{esc(s.kind)}</td><td>{esc(s.title)}</td><td>{len(s.hits)}</td>"
            f"<td>{s.usage.total_tokens}</td></tr>" for i, s in enumerate(self.steps))
        return (f"<div><b>Q:</b> {esc(self.question)}<br><b>A:</b> {esc(self.text)}<br>"
                f"<small>{self.usage.total_tokens} tokens in {self.usage.calls} calls</small>"
                f"<table><tr><th>#</th><th>kind</th><th>step</th><th>hits</th><th>tokens</th></tr>{rows}</table></div>")


@dataclass(frozen=True)
class MemoryEvent(_Record):
    """One change to a method's memory, in one schema across all methods.

    ``kind``: ADD, UPDATE, DELETE, MERGE, CONSOLIDATE, SUMMARIZE, LINK (and BUFFER for RecMem's
    subconscious store). ``cause`` says why (the triggering turn, question or rule).
    """

    seq: int
    kind: str
    unit_id: str
    before: str | None = None
    after: str | None = None
    cause: str = ""
    source_ids: tuple[str, ...] = ()
    time: str | None = None
    method: str = ""
    data: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {self.kind!r}; expected one of {EVENT_KINDS}")
        object.__setattr__(self, "source_ids", tuple(self.source_ids))
        object.__setattr__(self, "data", _jsonable(dict(self.data)))
        if self.time is not None and not isinstance(self.time, str):
            object.__setattr__(self, "time", _default(self.time))

    @classmethod
    def from_dict(cls, d: dict) -> "MemoryEvent":
        return cls(**d)

    def _repr_html_(self) -> str:
        esc = html.escape
        return (f"<div><b>{esc(self.kind)}</b> {esc(self.unit_id)}: {esc(self.before or '')} &rarr; "
                f"{esc(self.after or '')} <i>{esc(self.cause)}</i></div>")


def events_frame(events: Iterable[MemoryEvent]):
    """Events as a pandas DataFrame (one row per event)."""
    import pandas as pd

    rows = [e.to_dict() for e in events]
    cols = [f.name for f in fields(MemoryEvent)]
    return pd.DataFrame(rows, columns=cols)
