"""Formatting shared by all methods: turns, sessions and retrieved context as prompt text.

One convention everywhere: a turn is ``[<date>] <speaker>: <text>`` with image captions appended
by ``Turn.content``; dates are written as ``8 May 2023`` (plus the clock time for sessions).
"""
from __future__ import annotations

from datetime import datetime
from typing import Iterable, Sequence

from ..data import Conversation, Session, Turn
from ..trace import Hit


def format_date(when: datetime | str | None, *, clock: bool = False) -> str:
    if when is None:
        return "unknown date"
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when)
        except ValueError:
            return when
    text = f"{when.day} {when.strftime('%B %Y')}"
    if clock:
        text = f"{when.strftime('%I:%M %p').lstrip('0').lower()} on {text}"
    return text


def format_turn(turn: Turn, *, with_date: bool = False, with_id: bool = False) -> str:
    prefix = f"[{format_date(turn.time)}] " if with_date else ""
    ident = f"({turn.id}) " if with_id else ""
    return f"{prefix}{ident}{turn.speaker}: {turn.content}"


def format_turns(turns: Iterable[Turn], *, with_id: bool = False) -> str:
    return "\n".join(format_turn(t, with_id=with_id) for t in turns)


def format_session(session: Session, *, with_id: bool = False) -> str:
    return f"Session on {format_date(session.date_time, clock=True)}:\n" + format_turns(session.turns, with_id=with_id)


def format_conversation(conv: Conversation, *, with_id: bool = False) -> str:
    return "\n\n".join(format_session(s, with_id=with_id) for s in conv.sessions)


def format_hits(hits: Sequence[Hit], *, numbered: bool = True) -> str:
    """Retrieved units as a context block; each line carries its id so an LLM can cite it."""
    if not hits:
        return "(no memories retrieved)"
    lines = []
    for i, h in enumerate(hits, start=1):
        head = f"[{h.unit_id}] " if numbered else ""
        lines.append(f"{head}{h.text}")
    return "\n".join(lines)


def question_date_line(now: datetime | None) -> str:
    return f"The question is asked on {format_date(now)}." if now else ""


def exchanges(session: Session) -> list[tuple[Turn, ...]]:
    """Message exchanges of a session, the unit of RecMem's subconscious store and of EagerFacts.

    LoCoMo (two humans): positional pairs (i, i+1) whatever the speaker, an odd last message alone
    (RecMem's code does this). LongMemEval: a user message followed by an assistant message forms a
    pair; any other message stands alone.
    """
    turns = list(session.turns)
    roles = {t.speaker for t in turns}
    out: list[tuple[Turn, ...]] = []
    if roles <= {"user", "assistant"}:
        i = 0
        while i < len(turns):
            if turns[i].speaker == "user" and i + 1 < len(turns) and turns[i + 1].speaker == "assistant":
                out.append((turns[i], turns[i + 1]))
                i += 2
            else:
                out.append((turns[i],))
                i += 1
        return out
    for i in range(0, len(turns), 2):
        out.append(tuple(turns[i:i + 2]))
    return out
