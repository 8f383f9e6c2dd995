"""Loader for LongMemEval (oracle / ``_s`` / ``_m`` files; xiaowu0162/LongMemEval).

Each question owns its haystack, so every item becomes one ``Conversation`` holding one ``QA``.
Sessions get opaque ids ``S<n>`` in time order (the dataset's own ids name the evidence sessions
``answer_<hash>_<n>``, a label a method must not see); turn ids are ``S<n>:<index>`` (1-based).
Gold evidence = the turns flagged ``has_answer``; when an item flags none, the turns of
``answer_session_ids`` are used and the fallback is counted. The gold side keeps the mapping:
``QA.extras['answer_session_ids']`` holds the opaque ids (for session recall) and
``QA.extras['session_ids']`` maps each opaque id to the dataset's id. Turns carry no ``has_answer``
flag. Abstention questions (``_abs`` suffix) keep their type and get ``extras['abstention'] = True``.
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path

from .types import QA, Conversation, Dataset, DatasetError, Session, Turn, read_json_file

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
REQUIRED = ("question_id", "question_type", "question", "answer", "question_date", "haystack_dates",
            "haystack_session_ids", "haystack_sessions", "answer_session_ids")


def parse_lme_date(text: str) -> datetime:
    """Parse ``"2023/05/28 (Sun) 19:47"``."""
    return datetime.strptime(str(text).strip(), "%Y/%m/%d (%a) %H:%M")


def _check(cond, file, loc, what):
    if not cond:
        raise DatasetError(file, loc, what)


def _item(file: str, i: int, raw: dict, skipped: Counter) -> Conversation:
    loc = f"item[{i}]"
    _check(isinstance(raw, dict), file, loc, "must be an object")
    for key in REQUIRED:
        _check(key in raw, file, f"{loc}.{key}", "missing")
    qid = raw["question_id"]
    loc = f"item[{i}] ({qid})"
    _check(raw["question_type"] in QUESTION_TYPES, file, f"{loc}.question_type", f"unknown type {raw['question_type']!r}")
    dates, ids, hay = raw["haystack_dates"], raw["haystack_session_ids"], raw["haystack_sessions"]
    _check(isinstance(hay, list) and len(dates) == len(ids) == len(hay), file, f"{loc}.haystack_sessions",
           "haystack_dates, haystack_session_ids and haystack_sessions must be lists of equal length")
    try:
        qdate = parse_lme_date(raw["question_date"])
    except ValueError as exc:
        raise DatasetError(file, f"{loc}.question_date", str(exc)) from None
    try:
        ordered = sorted(zip(dates, ids, hay), key=lambda x: parse_lme_date(x[0]))
    except ValueError as exc:
        raise DatasetError(file, f"{loc}.haystack_dates", str(exc)) from None
    sessions, has_answer, original = [], [], {}
    for j, (d, raw_sid, turns) in enumerate(ordered, start=1):
        # The oracle file is not sorted by time; S/M are. Sorting makes both chronological.
        when = parse_lme_date(d)
        sid = f"S{j}"  # opaque: the dataset's id would tell evidence sessions apart
        original[sid] = str(raw_sid)
        _check(isinstance(turns, list), file, f"{loc}.haystack_sessions[{raw_sid}]", "must be a list of turns")
        out = []
        for k, t in enumerate(turns, start=1):
            tloc = f"{loc}.haystack_sessions[{raw_sid}][{k - 1}]"
            _check(isinstance(t, dict) and isinstance(t.get("role"), str) and isinstance(t.get("content"), str),
                   file, tloc, "turn needs string 'role' and 'content'")
            tid = f"{sid}:{k}"
            if t.get("has_answer"):
                has_answer.append(tid)
            out.append(Turn(tid, t["role"], t["content"], sid, when))
        sessions.append(Session(sid, when, tuple(out), str(d)))
    to_opaque = {v: k for k, v in original.items()}
    answer_sessions = tuple(to_opaque.get(str(s), str(s)) for s in raw["answer_session_ids"])
    evidence = tuple(has_answer)
    if not evidence:
        evidence = tuple(t.id for s in sessions if s.id in set(answer_sessions) for t in s.turns)
        skipped["evidence_from_answer_sessions"] += 1
    extras = {"answer_session_ids": answer_sessions, "session_ids": original, "abstention": str(qid).endswith("_abs")}
    qa = QA(str(qid), raw["question"], str(raw["answer"]), raw["question_type"], evidence, qdate, extras)
    return Conversation(str(qid), ("user", "assistant"), tuple(sessions), (qa,), file)


def load_longmemeval(path: str | Path, *, limit: int | None = None) -> Dataset:
    path = Path(path)
    file = str(path)
    data = read_json_file(path)
    _check(isinstance(data, list), file, "<top level>", "must be a list of question items")
    skipped: Counter = Counter()
    convs = tuple(_item(file, i, raw, skipped) for i, raw in enumerate(data[:limit] if limit else data))
    return Dataset(path.stem, convs, dict(skipped))
