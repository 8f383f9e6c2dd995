"""Conversations to and from plain JSON (for saved runs that the app and widgets read)."""
from __future__ import annotations

from datetime import datetime

from .types import QA, Conversation, Session, Turn


def _dt(value):
    return value.isoformat() if value else None


def _parse(value):
    return datetime.fromisoformat(value) if value else None


def conversation_to_dict(conv: Conversation) -> dict:
    return {
        "id": conv.id, "speakers": list(conv.speakers), "source": conv.source,
        "sessions": [{"id": s.id, "date_time": _dt(s.date_time), "date_text": s.date_text,
                      "turns": [{"id": t.id, "speaker": t.speaker, "text": t.text, "session_id": t.session_id,
                                 "time": _dt(t.time), "extras": dict(t.extras)} for t in s.turns]}
                     for s in conv.sessions],
        "qa": [{"id": q.id, "question": q.question, "answer": q.answer, "category": q.category,
                "evidence": list(q.evidence), "time": _dt(q.time), "extras": dict(q.extras)} for q in conv.qa],
    }


def conversation_from_dict(d: dict) -> Conversation:
    sessions = tuple(
        Session(s["id"], _parse(s.get("date_time")),
                tuple(Turn(t["id"], t["speaker"], t["text"], t["session_id"], _parse(t.get("time")),
                           t.get("extras", {}))
                      for t in s["turns"]), s.get("date_text", ""))
        for s in d["sessions"])
    qa = tuple(QA(q["id"], q["question"], q["answer"], q["category"], tuple(q.get("evidence", ())),
                  _parse(q.get("time")), q.get("extras", {})) for q in d.get("qa", ()))
    return Conversation(d["id"], tuple(d["speakers"]), sessions, qa, d.get("source", ""))
