"""Loader for the LoCoMo format (``locomo10.json``; snap-research/locomo), quirks included.

Quirks handled (see DATA.md §1.4): ``session_<N>_date_time`` keys beyond the last session
(we iterate the ``session_<N>`` keys that hold lists), integer answers (cast with ``str``),
category-5 items with only ``adversarial_answer`` (answer ``""``, trap kept in ``extras``),
malformed evidence strings (split on ``;`` and whitespace, invalid ids dropped and counted),
and image turns (``blip_caption``/``query``/``img_url`` kept in ``Turn.extras``). A question asked twice is kept
twice, as the file has it (MemR3's appendix drops 12 such repeats from the full LoCoMo; in the dev copy, conv-30
asks one as single-hop and again as adversarial).

Foreign files are checked, not trusted. Refused with a ``DatasetError`` naming file, record and
field: duplicate ``sample_id`` or ``dia_id``, a ``dia_id`` in the wrong session, an empty or
over-long id, an id or speaker name with invisible, look-alike or extra whitespace characters
(``check_id``), a ``conversation`` key other than ``speaker_a|b``, ``session_<N>`` and
``session_<N>_date_time`` (``session_01``, ``Session_2``, ``session_2 ``), a session date outside
1900-2100 or more than ``MAX_BACKSTEP`` before the session numbered before it, a non-list
``session_<N>``, speakers that are not two distinct strings, a turn by a third speaker, ``category`` that is
not an integer 1-5 (``true`` included), an answer
that is not a string or a finite number (NaN, objects, booleans), an empty question or
answer, evidence that is neither a string nor a list of strings, texts over
``MAX_TEXT_CHARS``. Repaired and counted in ``Dataset.skipped``: an empty session is dropped
(``empty_sessions_dropped``), a non-string ``blip_caption``/``query`` is dropped
(``non_string_turn_extras_dropped``), a session dated up to ``MAX_BACKSTEP`` before the previous
one is kept and counted (``session_dates_out_of_order``), plus the quirks above.
"""
from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from .types import (MAX_DATE_CHARS, MAX_TEXT_CHARS, QA, Conversation, Dataset, DatasetError, Session, Turn,
                    check_answer, check_id, check_string, check_year, read_json_file)

DIA_ID = re.compile(r"^D([1-9]\d*):([1-9]\d*)$", re.ASCII)  # ASCII: "D١:1" would be session 1 yet match no evidence
SESSION_KEY = re.compile(r"^session_([1-9]\d*)$", re.ASCII)  # "session_01" would name session 1 twice
DATE_KEY = re.compile(r"^session_([1-9]\d*)_date_time$", re.ASCII)
SPEAKER_KEYS = ("speaker_a", "speaker_b")
#: how far a session may be dated before the one numbered before it, kept and counted in
#: ``skipped['session_dates_out_of_order']``; further back is an error (a misdated session, not a slip)
MAX_BACKSTEP = timedelta(days=31)
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EXTRA_TURN_KEYS = ("img_url", "blip_caption", "query", "re-download")
TEXT_EXTRAS = ("blip_caption", "query")  # appended to the text methods see: must be strings


def parse_locomo_date(text: str) -> datetime:
    """Parse LoCoMo's session timestamp, e.g. ``"1:56 pm on 8 May, 2023"``."""
    cleaned = " ".join(str(text).replace("am", "AM").replace("pm", "PM").split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    raise ValueError(f"unrecognised date {text!r}")


def split_evidence(raw, file: str = "", location: str = "evidence") -> tuple[list[str], int]:
    """Split evidence entries on ``;`` and whitespace; return (valid ids, number dropped).
    Evidence that is neither a string nor a list of strings is a ``DatasetError``."""
    if raw is None:
        return [], 0
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise DatasetError(file, location, f"must be a list of dia_id strings, got {type(raw).__name__}")
    ids, dropped = [], 0
    for i, entry in enumerate(raw):
        check_string(file, f"{location}[{i}]", entry, limit=MAX_DATE_CHARS * 16, empty_ok=True)
        for part in re.split(r"[;\s]+", entry.strip()):
            if not part:
                continue
            if DIA_ID.match(part):
                ids.append(part)
            else:
                dropped += 1
    return ids, dropped


def _key_shown(key: str) -> str:
    """A key for a location: as it is when plain, else spelled out (``ascii``) so odd spacing shows."""
    return key if key.isascii() and key.isprintable() and key.strip() == key and len(key) <= 80 else ascii(key[:80])


def _require(cond: bool, file: str, location: str, what: str) -> None:
    if not cond:
        raise DatasetError(file, location, what)


def _load_turn(file, loc, raw, session_id, when, speakers, skipped: Counter) -> Turn:
    _require(isinstance(raw, dict), file, loc, f"turn must be an object, got {type(raw).__name__}")
    for key in ("speaker", "dia_id", "text"):
        _require(key in raw, file, loc, f"missing field '{key}'")
    check_id(file, f"{loc}.speaker", raw["speaker"])
    check_id(file, f"{loc}.dia_id", raw["dia_id"])
    check_string(file, f"{loc}.text", raw["text"], limit=MAX_TEXT_CHARS, empty_ok=True)
    m = DIA_ID.match(raw["dia_id"])
    _require(bool(m), file, f"{loc}.dia_id", f"malformed dia_id {raw['dia_id']!r}")
    _require(f"S{int(m.group(1))}" == session_id, file, f"{loc}.dia_id",
             f"{raw['dia_id']!r} names session {int(m.group(1))} but stands in session {session_id[1:]}")
    _require(raw["speaker"] in speakers, file, f"{loc}.speaker",
             f"{raw['speaker'][:80]!r} is neither speaker_a nor speaker_b")
    extras = {k: raw[k] for k in EXTRA_TURN_KEYS if k in raw}
    for k in TEXT_EXTRAS:
        if k in extras and not (isinstance(extras[k], str) and len(extras[k]) <= MAX_TEXT_CHARS):
            del extras[k]  # repair: a caption that is not a string is not shown to methods
            skipped["non_string_turn_extras_dropped"] += 1
    return Turn(raw["dia_id"], raw["speaker"], raw["text"], session_id, when, extras)


def _load_sessions(file, loc, conv, speakers, skipped: Counter) -> tuple[Session, ...]:
    _require(isinstance(conv, dict), file, loc, "'conversation' must be an object")
    for k, v in conv.items():
        if not (k in SPEAKER_KEYS or SESSION_KEY.match(k) or DATE_KEY.match(k)):
            raise DatasetError(file, f"{loc}.{_key_shown(k)}",
                               "unknown key (expected speaker_a, speaker_b, session_<N> "
                               "and session_<N>_date_time, N from 1 without leading zeros); a misspelt session "
                               "would be dropped")
        if SESSION_KEY.match(k) and not isinstance(v, list):
            raise DatasetError(file, f"{loc}.{k}", f"must be a list of turns, got {type(v).__name__}")
    numbers = sorted(int(m.group(1)) for k in conv if (m := SESSION_KEY.match(k)))
    _require(bool(numbers), file, loc, "no session_<N> lists found")
    sessions, seen, previous = [], {}, None
    for n in numbers:
        raw_turns = conv[f"session_{n}"]
        if not raw_turns:
            skipped["empty_sessions_dropped"] += 1  # repair: a session with no turns carries nothing
            continue
        date_key = f"session_{n}_date_time"
        _require(date_key in conv, file, f"{loc}.{date_key}", "missing (every session needs its date)")
        date_text = check_string(file, f"{loc}.{date_key}", conv[date_key], limit=MAX_DATE_CHARS)
        try:
            when = parse_locomo_date(date_text)
        except ValueError as exc:
            raise DatasetError(file, f"{loc}.{date_key}", str(exc)) from None
        check_year(file, f"{loc}.{date_key}", when)
        if previous is not None and when < previous[1]:
            if previous[1] - when > MAX_BACKSTEP:
                raise DatasetError(file, f"{loc}.{date_key}",
                                   f"{date_text!r} is {(previous[1] - when).days} days before "
                                   f"session_{previous[0]} ({previous[1]:%d %B %Y}); sessions must follow in time")
            skipped["session_dates_out_of_order"] += 1  # a slip of days: kept as dated, counted
        previous = (n, when)
        sid = f"S{n}"
        turns = tuple(_load_turn(file, f"{loc}.session_{n}[{i}]", raw, sid, when, speakers, skipped)
                      for i, raw in enumerate(raw_turns))
        for i, t in enumerate(turns):
            if t.id in seen:
                raise DatasetError(file, f"{loc}.session_{n}[{i}].dia_id", f"duplicate dia_id {t.id!r} "
                                   f"(first at {seen[t.id]})")
            seen[t.id] = f"session_{n}[{i}]"
        sessions.append(Session(sid, when, turns, date_text))
    _require(bool(sessions), file, loc, "every session_<N> list is empty: no turns")
    return tuple(sessions)


def _load_qa(file, loc, raw, sample_id, index, skipped: Counter) -> QA:
    _require(isinstance(raw, dict), file, loc, "QA item must be an object")
    _require("question" in raw, file, f"{loc}.question", "missing")
    question = check_string(file, f"{loc}.question", raw["question"], limit=MAX_TEXT_CHARS)
    _require("category" in raw, file, f"{loc}.category", "missing")
    category = raw["category"]
    _require(isinstance(category, int) and not isinstance(category, bool) and 1 <= category <= 5,
             file, f"{loc}.category", f"must be an integer 1-5, got {category!r}"[:200])
    extras = {}
    if "adversarial_answer" in raw:
        extras["adversarial_answer"] = check_answer(file, f"{loc}.adversarial_answer", raw["adversarial_answer"])
    if "answer" in raw:
        answer = check_answer(file, f"{loc}.answer", raw["answer"])
    elif category == 5:
        answer = ""  # adversarial: the correct response is that the conversation does not say
        skipped["category5_without_answer"] += 1
    else:
        raise DatasetError(file, f"{loc}.answer", "missing (only category-5 items may omit it)")
    evidence, dropped = split_evidence(raw.get("evidence", []), file, f"{loc}.evidence")
    if dropped:
        skipped["malformed_evidence_parts_dropped"] += dropped
    if not evidence:
        skipped["qa_without_evidence"] += 1
    return QA(f"{sample_id}/q{index}", question, answer, category, tuple(evidence), None, extras)


def load_locomo(path: str | Path, *, limit: int | None = None) -> Dataset:
    """Load a LoCoMo-format file (the official ``locomo10.json``, the dev copy or project samples)."""
    path = Path(path)
    file = str(path)
    data = read_json_file(path)
    _require(isinstance(data, list), file, "<top level>", f"must be a list of samples, got {type(data).__name__}")
    _require(bool(data), file, "<top level>", "the list of samples is empty")
    skipped: Counter = Counter()
    conversations, seen = [], {}
    for i, sample in enumerate(data[:limit] if limit else data):
        loc = f"sample[{i}]"
        _require(isinstance(sample, dict), file, loc, f"must be an object, got {type(sample).__name__}")
        _require("sample_id" in sample, file, f"{loc}.sample_id", "missing")
        sid = check_id(file, f"{loc}.sample_id", sample["sample_id"])
        _require(sid not in seen, file, f"{loc}.sample_id",
                 f"duplicate sample_id {sid!r} (also sample[{seen.get(sid)}])")
        seen[sid] = i
        loc = f"sample[{i}] ({sid})"
        conv = sample.get("conversation")
        _require(conv is not None, file, f"{loc}.conversation", "missing")
        _require(isinstance(conv, dict), file, f"{loc}.conversation", f"must be an object, got {type(conv).__name__}")
        speakers = tuple(check_id(file, f"{loc}.conversation.{k}", conv.get(k)) for k in SPEAKER_KEYS)
        _require(speakers[0] != speakers[1], file, f"{loc}.conversation.speaker_b", "same as speaker_a")
        sessions = _load_sessions(file, f"{loc}.conversation", conv, speakers, skipped)
        qa_raw = sample.get("qa", [])
        _require(isinstance(qa_raw, list), file, f"{loc}.qa", f"must be a list, got {type(qa_raw).__name__}")
        last_time = sessions[-1].date_time
        qa = tuple(
            _with_time(_load_qa(file, f"{loc}.qa[{j}]", q, sid, j, skipped), last_time) for j, q in enumerate(qa_raw)
        )
        known = {t.id for s in sessions for t in s.turns}
        unknown = sum(1 for q in qa for e in q.evidence if e not in known)
        if unknown:
            skipped["evidence_ids_not_in_conversation"] += unknown
        conversations.append(Conversation(sid, speakers, sessions, qa, file))
    return Dataset(path.stem, tuple(conversations), dict(skipped))


def _with_time(qa: QA, when) -> QA:
    # LoCoMo questions are asked after the last session; the harness passes this as "now".
    return QA(qa.id, qa.question, qa.answer, qa.category, qa.evidence, when, qa.extras)
