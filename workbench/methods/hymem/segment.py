"""HyMem helpers: cutting sessions into topic event units, and the Level-2 (event) retriever.

The paper (arXiv 2602.13933 §3.1) partitions the dialogue "into discrete event units based on
discussed topics" and lets neighbouring units overlap, but gives no procedure, prompt, size or
overlap. Three procedures are offered (see ``HyMem(segmentation=...)`` and the digest §10.1):

- ``llm``: one LLM call per session returns topic spans ``{start, end, topic}`` over numbered
  turns; spans are cleaned (clamped, de-duplicated), turns no span covers become their own
  "gap" events (so nothing is lost), and every event is widened by ``overlap_turns`` per side;
- ``window``: fixed windows of ``window_turns`` turns every ``window_stride`` turns (no LLM);
- ``session``: one event per session (no LLM, no overlap).

Spans are half-open ``(start, end)`` index ranges into ``session.turns``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ...data import Session
from ...trace import Hit
from ..common import format_date, format_turn


@dataclass(frozen=True)
class Span:
    """One event unit inside a session: turns ``start`` (inclusive) to ``end`` (exclusive)."""

    start: int
    end: int
    topic: str = ""
    origin: str = "llm"  # llm | gap | window | session


def window_spans(n: int, size: int, stride: int) -> list[Span]:
    """Fixed windows of ``size`` turns starting every ``stride`` turns; the last window ends at ``n``."""
    spans, start = [], 0
    while start < n:
        end = min(start + size, n)
        spans.append(Span(start, end, "", "window"))
        if end == n:
            break
        start += stride
    return spans


def _valid_span(item, n: int) -> tuple[int, int, str] | None:
    """A model span (1-based, inclusive) as a clamped 0-based half-open range, or None if unusable."""
    if not isinstance(item, dict):
        return None
    start, end = item.get("start"), item.get("end")
    if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool) or isinstance(end, bool):
        return None
    start, end = sorted((start, end))
    start, end = max(start, 1), min(end, n)
    if start > end:
        return None
    return start - 1, end, str(item.get("topic") or "").strip()


def clean_llm_spans(items: Iterable, n: int, overlap: int) -> tuple[list[Span], list[str]]:
    """Turn the model's spans into usable events over ``n`` turns.

    Returns ``(spans, notes)``: the notes say what was repaired (dropped spans, gap events), so
    the caller can record them. An empty result means the reply held no usable span.
    """
    notes, seen, spans = [], set(), []
    for item in items or ():
        parsed = _valid_span(item, n)
        if parsed is None:
            notes.append(f"dropped unusable span {item!r}")
            continue
        if parsed[:2] in seen:
            continue
        seen.add(parsed[:2])
        spans.append(Span(parsed[0], parsed[1], parsed[2], "llm"))
    if not spans:
        return [], notes
    covered = {i for s in spans for i in range(s.start, s.end)}
    for gap in _runs(sorted(set(range(n)) - covered)):
        spans.append(Span(gap[0], gap[-1] + 1, "", "gap"))
        notes.append(f"turns {gap[0] + 1}-{gap[-1] + 1} were in no span: kept as their own event")
    spans.sort(key=lambda s: (s.start, s.end))
    return [widen(s, overlap, n) for s in spans], notes


def widen(span: Span, overlap: int, n: int) -> Span:
    return Span(max(0, span.start - overlap), min(n, span.end + overlap), span.topic, span.origin)


def _runs(indices: Sequence[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def numbered_turns(session: Session, preview_chars: int) -> str:
    """The session's turns numbered from 1, each cut to ``preview_chars`` (topics need no more)."""
    lines = []
    for i, t in enumerate(session.turns, start=1):
        text = t.content if len(t.content) <= preview_chars else t.content[:preview_chars].rstrip() + " ..."
        lines.append(f"{i}. {t.speaker}: {text}")
    return "\n".join(lines)


def event_text(session: Session, span: Span) -> str:
    """Level-2 raw text: the session date, then the verbatim turns with speaker names."""
    turns = session.turns[span.start:span.end]
    return f"[{format_date(session.date_time)}] " + "\n".join(format_turn(t) for t in turns)


class Level2Retriever:
    """Search Level-1 by cosine, backtrack each hit to its event, de-duplicate.

    A Level-2 hit carries the event's raw text, the best score among its Level-1 hits and the
    event's turn ids. ``exclude`` masks event (Level-2) ids.
    """

    def __init__(self, index, level2: dict, name: str = "hymem.L2"):
        self.index = index
        self.level2 = level2
        self.name = name

    def search(self, query: str, k: int, exclude: frozenset = frozenset()) -> list[Hit]:
        if k <= 0 or len(self.index) == 0:
            return []
        out, seen = [], set()
        for h in self.index.search(query, len(self.index)):
            event_id = self.index[h.unit_id].meta["event_id"]
            if event_id in seen or event_id in exclude:
                continue
            seen.add(event_id)
            out.append(self.level2[event_id].hit(h.score))
            if len(out) == k:
                break
        return out
