"""Loader for LongMemEval (oracle / ``_s`` / ``_m`` files; xiaowu0162/LongMemEval).

Each question owns its haystack, so every item becomes one ``Conversation`` holding one ``QA``.
Sessions get opaque ids ``S<n>`` in time order (the dataset's own ids name the evidence sessions
``answer_<hash>_<n>``, a label a method must not see); turn ids are ``S<n>:<index>`` (1-based).
Gold evidence = the turns flagged ``has_answer``; when an item flags none, the turns of
``answer_session_ids`` are used and the fallback is counted. The gold side keeps the mapping:
``QA.extras['answer_session_ids']`` holds the opaque ids (for session recall) and
``QA.extras['session_ids']`` maps each opaque id to the dataset's id. Turns carry no ``has_answer``
flag. Abstention questions (``_abs`` suffix) keep their type and get ``extras['abstention'] = True``.

Foreign files are checked, not trusted. Refused with a ``DatasetError`` naming file, item and
field: a missing field, a ``question_id`` that is not a non-empty string (``null`` included) or
repeats, an unknown ``question_type``, a question that is not a non-empty string, an answer
that is not a string or a finite number, a bad date, ``haystack_*`` that are not lists of
equal length, session ids that are not strings or integers, a turn without string
``role``/``content`` or with a role other than ``user``/``assistant``, an id with invisible,
look-alike or extra whitespace characters (``check_id``: ids differing only so would be two to the
code, one to a reader), a date outside 1900-2100 or a haystack date more than ``MAX_HAYSTACK_SPAN`` from the question's,
a non-boolean ``has_answer``, an item with no turns, texts over
``MAX_TEXT_CHARS``. Repaired and counted in ``Dataset.skipped``: an empty session is dropped
(``empty_sessions_dropped``); a session id repeated inside one item is counted
(``duplicate_session_ids_renamed``: each copy gets its own opaque id); ``answer_session_ids``
naming no haystack session are counted (``answer_session_ids_not_in_haystack``).

Issue #68 added: refused are a date whose weekday disagrees with its day (``strptime`` does not compare
them), a haystack session dated more than ``MAX_AFTER_QUESTION`` after its question, and ``NaN``/``Infinity``
anywhere in the file. Counted: ``answer_session_ids`` that repeat an id (``duplicate_answer_session_ids_dropped``)
or are empty (``questions_without_answer_sessions``: session recall has nothing to score), a ``has_answer``
turn in a session ``answer_session_ids`` does not name (``has_answer_outside_answer_sessions``: the two gold
labels disagree; the turn evidence is kept as flagged), a turn of empty or invisible content
(``empty_turns_kept``: chat logs hold empty replies), item and turn keys no loader reads
(``unknown_item_keys_ignored``, ``unknown_turn_keys_ignored``), and a UTF-8 byte-order mark
(``byte_order_mark_removed``).
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from .types import (MAX_DATE_CHARS, MAX_TEXT_CHARS, QA, Conversation, Dataset, DatasetError, NonFinite, Session,
                    Turn, check_answer, check_id, check_string, check_year, read_json_file, visible_form)

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
#: how far a haystack session may lie from its question's date (real items: under a year); further is
#: a misdated session (a century out, a typo in the year), which time-aware methods would take at its word
MAX_HAYSTACK_SPAN = timedelta(days=3653)
#: how far a haystack session may be dated after its question: the real oracle file has 57 sessions up to
#: 23.3 hours after theirs (a time-zone slip, kept as dated); days later means a question asked about a
#: session that had not happened yet, which a time-aware method would read as the future
MAX_AFTER_QUESTION = timedelta(days=2)
ROLES = ("user", "assistant")  # the conversation's two speakers: any other role would be a third
REQUIRED = ("question_id", "question_type", "question", "answer", "question_date", "haystack_dates",
            "haystack_session_ids", "haystack_sessions", "answer_session_ids")
TURN_KEYS = ("role", "content", "has_answer")


def parse_lme_date(text: str) -> datetime:
    """Parse ``"2023/05/28 (Sun) 19:47"``."""
    return datetime.strptime(str(text).strip(), "%Y/%m/%d (%a) %H:%M")


def _check(cond, file, loc, what):
    if not cond:
        raise DatasetError(file, loc, what)


def _date(file, loc, value) -> datetime:
    """A date with its weekday checked: ``strptime`` reads ``(Mon)`` without comparing it to the day,
    and a weekday that disagrees says the day (or the weekday) was mistyped, which one is a guess."""
    text = check_string(file, loc, value, limit=MAX_DATE_CHARS)
    try:
        when = parse_lme_date(text)
    except ValueError as exc:
        raise DatasetError(file, loc, f"{text[:80]!r} is not a date like '2023/05/28 (Sun) 19:47' ({exc})") from None
    check_year(file, loc, when)
    named = text.partition("(")[2].partition(")")[0].strip()
    _check(named.casefold() == f"{when:%a}".casefold(), file, loc,
           f"{text!r} names the weekday {named!r}, but {when:%d %B %Y} is a {when:%A}")
    return when


def _session_id(file, loc, value) -> str:
    _check(isinstance(value, (str, int)) and not isinstance(value, bool), file, loc,
           f"session id must be a string or an integer, got {type(value).__name__}")
    return check_id(file, loc, str(value))


def _item(file: str, i: int, raw: dict, skipped: Counter) -> Conversation:
    loc = f"item[{i}]"
    _check(isinstance(raw, dict), file, loc, f"must be an object, got {type(raw).__name__}")
    for key in REQUIRED:
        _check(key in raw, file, f"{loc}.{key}", "missing")
    qid = check_id(file, f"{loc}.question_id", raw["question_id"])
    loc = f"item[{i}] ({qid})"
    unknown = sum(1 for k in raw if k not in REQUIRED)
    if unknown:  # fields no loader reads (e.g. a misspelt copy of a required one): ignored, and said so
        skipped["unknown_item_keys_ignored"] += unknown
    qtype = raw["question_type"]
    _check(isinstance(qtype, str) and qtype in QUESTION_TYPES, file, f"{loc}.question_type",
           f"unknown type {qtype!r}"[:200])
    question = check_string(file, f"{loc}.question", raw["question"], limit=MAX_TEXT_CHARS)
    answer = check_answer(file, f"{loc}.answer", raw["answer"])
    qdate = _date(file, f"{loc}.question_date", raw["question_date"])
    dates, ids, hay = raw["haystack_dates"], raw["haystack_session_ids"], raw["haystack_sessions"]
    for key, value in (("haystack_dates", dates), ("haystack_session_ids", ids), ("haystack_sessions", hay),
                       ("answer_session_ids", raw["answer_session_ids"])):
        _check(isinstance(value, list), file, f"{loc}.{key}", f"must be a list, got {type(value).__name__}")
    _check(len(dates) == len(ids) == len(hay), file, f"{loc}.haystack_sessions",
           f"haystack_dates ({len(dates)}), haystack_session_ids ({len(ids)}) and haystack_sessions ({len(hay)}) "
           "must have equal lengths")
    parsed, seen = [], Counter()
    for j, (d, sid_raw, turns) in enumerate(zip(dates, ids, hay)):
        when = _date(file, f"{loc}.haystack_dates[{j}]", d)
        _check(abs(when - qdate) <= MAX_HAYSTACK_SPAN, file, f"{loc}.haystack_dates[{j}]",
               f"{d!r} is {abs(when - qdate).days} days from the question date {raw['question_date']!r} "
               f"(more than {MAX_HAYSTACK_SPAN.days})")
        _check(when - qdate <= MAX_AFTER_QUESTION, file, f"{loc}.haystack_dates[{j}]",
               f"{d!r} is {(when - qdate).total_seconds() / 86400:.1f} days after the question date "
               f"{raw['question_date']!r}: a question cannot be asked before its sessions (at most "
               f"{MAX_AFTER_QUESTION.days} days after is kept)")
        sid = _session_id(file, f"{loc}.haystack_session_ids[{j}]", sid_raw)
        seen[sid] += 1
        if seen[sid] > 1:  # repair: each copy gets its own opaque id below
            skipped["duplicate_session_ids_renamed"] += 1
        _check(isinstance(turns, list), file, f"{loc}.haystack_sessions[{j}]",
               f"must be a list of turns, got {type(turns).__name__}")
        parsed.append((when, j, sid, d, turns))
    sessions, has_answer, original, to_opaque = [], [], {}, {}
    # The oracle file is not sorted by time; S/M are. Sorting (stable) makes both chronological.
    for when, j, raw_sid, d, turns in sorted(parsed, key=lambda x: (x[0], x[1])):
        if not turns:
            skipped["empty_sessions_dropped"] += 1  # repair: a session with no turns carries nothing
            continue
        sid = f"S{len(sessions) + 1}"  # opaque: the dataset's id would tell evidence sessions apart
        original[sid] = raw_sid
        to_opaque.setdefault(raw_sid, []).append(sid)
        out = []
        for k, t in enumerate(turns, start=1):
            tloc = f"{loc}.haystack_sessions[{j}][{k - 1}]"
            _check(isinstance(t, dict), file, tloc, f"turn must be an object, got {type(t).__name__}")
            extra = sum(1 for key in t if key not in TURN_KEYS)
            if extra:
                skipped["unknown_turn_keys_ignored"] += extra
            role = check_id(file, f"{tloc}.role", t.get("role"))
            _check(role in ROLES, file, f"{tloc}.role", f"must be one of {', '.join(ROLES)}, got {role[:80]!r}")
            content = check_string(file, f"{tloc}.content", t.get("content"), limit=MAX_TEXT_CHARS, empty_ok=True)
            if not visible_form(content):  # kept (a chat log may hold an empty reply), but counted
                skipped["empty_turns_kept"] += 1
            flag = t.get("has_answer", False)
            _check(flag is None or isinstance(flag, bool), file, f"{tloc}.has_answer",
                   f"must be true or false, got {flag!r}"[:200])
            tid = f"{sid}:{k}"
            if flag:
                has_answer.append((tid, raw_sid))
            out.append(Turn(tid, role, content, sid, when))  # no has_answer: it is gold
        sessions.append(Session(sid, when, tuple(out), d))
    _check(bool(sessions), file, f"{loc}.haystack_sessions", "no turns in any session")
    listed = tuple(_session_id(file, f"{loc}.answer_session_ids[{j}]", v)
                   for j, v in enumerate(raw["answer_session_ids"]))
    answer_ids = tuple(dict.fromkeys(listed))
    if len(answer_ids) < len(listed):  # one session named twice would count twice in session recall
        skipped["duplicate_answer_session_ids_dropped"] += len(listed) - len(answer_ids)
    if not answer_ids:  # session recall has nothing to score against
        skipped["questions_without_answer_sessions"] += 1
    missing = sum(1 for a in answer_ids if a not in to_opaque)
    if missing:
        skipped["answer_session_ids_not_in_haystack"] += missing
    outside = sum(1 for _, raw_sid in has_answer if raw_sid not in answer_ids)
    if outside:  # the two gold labels disagree: turn evidence is kept as flagged, the disagreement counted
        skipped["has_answer_outside_answer_sessions"] += outside
    answer_sessions = tuple(o for a in answer_ids for o in to_opaque.get(a, ()))
    evidence = tuple(tid for tid, _ in has_answer)
    if not evidence:
        evidence = tuple(t.id for s in sessions if s.id in set(answer_sessions) for t in s.turns)
        skipped["evidence_from_answer_sessions"] += 1
    extras = {"answer_session_ids": answer_sessions, "session_ids": original, "abstention": qid.endswith("_abs")}
    qa = QA(qid, question, answer, qtype, evidence, qdate, extras)
    return Conversation(qid, ("user", "assistant"), tuple(sessions), (qa,), file)


def load_longmemeval(path: str | Path, *, limit: int | None = None) -> Dataset:
    path = Path(path)
    file = str(path)
    skipped: Counter = Counter()
    non_finite = NonFinite(file)
    data = read_json_file(path, non_finite=non_finite, skipped=skipped)
    _check(isinstance(data, list), file, "<top level>", f"must be a list of question items, got {type(data).__name__}")
    _check(bool(data), file, "<top level>", "the list of question items is empty")
    convs, seen = [], {}
    for i, raw in enumerate(data[:limit] if limit else data):
        conv = _item(file, i, raw, skipped)
        _check(conv.id not in seen, file, f"item[{i}].question_id",
               f"duplicate question_id {conv.id!r} (also item[{seen.get(conv.id)}])")
        seen[conv.id] = i
        convs.append(conv)
    non_finite.raise_if_any()  # a NaN no check above read (a field no loader reads): refused all the same
    return Dataset(path.stem, tuple(convs), dict(skipped))
