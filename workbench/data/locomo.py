"""Loader for the LoCoMo format (``locomo10.json``; snap-research/locomo), quirks included.

Quirks handled (see DATA.md §1.4): ``session_<N>_date_time`` keys beyond the last session
(we iterate the ``session_<N>`` keys that hold lists), integer answers (cast with ``str``),
category-5 items with only ``adversarial_answer`` (answer ``""``, trap kept in ``extras``),
malformed evidence strings (split on ``;`` and whitespace and counted, invalid ids dropped and counted),
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

Issue #68 added (nothing repaired without a word): refused are evidence given as a bare string (not a
list), a sample key other than ``SAMPLE_KEYS`` or a QA key other than ``QA_KEYS`` (a misspelt ``qa`` or
``answer`` would read as absent), session numbers with a gap (a lost session, whether or not its date
key stayed), turns whose dia_ids do not increase within a session, speakers that differ only by case,
a turn whose text is empty or invisible with no ``blip_caption`` to stand for it, and ``NaN``/``Infinity``
anywhere in the file (even in a field no loader reads). Counted: an evidence entry that held more than one
id (``evidence_entries_split``: conv-26's ``"D8:6; D9:17"``), an id named twice in one item's evidence
(``duplicate_evidence_ids_dropped``), date keys beyond the last session (``session_dates_without_session``:
conv-26 has 16), a conversation with no questions (``conversations_without_questions``: it loads, for
browsing, but nothing in it is evaluated), an image turn with an empty text and a caption
(``image_turns_without_text``: methods read ``Turn.content``, the caption), turn keys no loader reads
(``unknown_turn_keys_ignored``), and a UTF-8 byte-order mark (``byte_order_mark_removed``).
"""
from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from .types import (MAX_DATE_CHARS, MAX_TEXT_CHARS, QA, Conversation, Dataset, DatasetError, NonFinite, Session,
                    Turn, check_answer, check_id, check_string, check_year, read_json_file, visible_form)

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
TURN_KEYS = ("speaker", "dia_id", "text", *EXTRA_TURN_KEYS)
#: a sample's keys in locomo10.json; any other is refused (a misspelt ``qa`` would drop every question)
SAMPLE_KEYS = ("sample_id", "conversation", "qa", "event_summary", "observation", "session_summary")
#: a QA item's keys; any other is refused (a misspelt ``answer`` on a category-5 item would read as "no answer")
QA_KEYS = ("question", "answer", "adversarial_answer", "evidence", "category")


def parse_locomo_date(text: str) -> datetime:
    """Parse LoCoMo's session timestamp, e.g. ``"1:56 pm on 8 May, 2023"``."""
    cleaned = " ".join(str(text).replace("am", "AM").replace("pm", "PM").split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    raise ValueError(f"unrecognised date {text!r}")


def split_evidence(raw, file: str = "", location: str = "evidence") -> tuple[list[str], int, int]:
    """Split evidence entries on ``;`` and whitespace; return (valid ids, parts dropped, entries split).
    An entry that is not exactly one id (``"D8:6; D9:17"`` in conv-26, a padded ``" D1:1"``) is split
    and counted, so the repair is never silent. Evidence that is not a list of strings, a bare string
    included, is a ``DatasetError``: ``"D1:1"`` for ``["D1:1"]`` is a different shape, and which other
    shapes a writer meant is a guess."""
    if raw is None:
        return [], 0, 0
    if isinstance(raw, str):
        raise DatasetError(file, location, f"must be a list of dia_id strings, got a string {raw[:80]!r} "
                                           f"(write [{raw[:40]!r}, ...])")
    if not isinstance(raw, list):
        raise DatasetError(file, location, f"must be a list of dia_id strings, got {type(raw).__name__}")
    ids, dropped, split = [], 0, 0
    for i, entry in enumerate(raw):
        check_string(file, f"{location}[{i}]", entry, limit=MAX_DATE_CHARS * 16, empty_ok=True)
        if DIA_ID.match(entry):
            ids.append(entry)
            continue
        found = 0
        for part in re.split(r"[;\s]+", entry.strip()):
            if not part:
                continue
            if DIA_ID.match(part):
                ids.append(part)
                found += 1
            else:
                dropped += 1
        split += found > 0  # ids taken out of an entry that held more (or other) than one id
    return ids, dropped, split


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
    unknown = sum(1 for k in raw if k not in TURN_KEYS)
    if unknown:  # e.g. "caption" for "blip_caption": not shown to methods, and said so
        skipped["unknown_turn_keys_ignored"] += unknown
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
    if not visible_form(raw["text"]):
        # An image shared without words: what a method reads is ``Turn.content``, the caption; with no
        # caption there is nothing to read, and a blank turn would be a silent gap in the conversation.
        _require(bool(visible_form(extras.get("blip_caption") or "")), file, f"{loc}.text",
                 "is empty (or only invisible characters) and the turn has no blip_caption to stand for it")
        skipped["image_turns_without_text"] += 1
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
    _check_numbering(file, loc, conv, numbers)
    dates = [int(m.group(1)) for k in conv if (m := DATE_KEY.match(k))]
    beyond = sum(1 for n in dates if n > numbers[-1])
    if beyond:  # LoCoMo's own quirk (conv-26 has 16): dates kept for sessions the file does not hold
        skipped["session_dates_without_session"] += beyond
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
        for i in range(1, len(turns)):  # the list's order is the conversation's: ids must agree with it
            before, here = (int(turns[k].id.partition(":")[2]) for k in (i - 1, i))
            _require(here > before, file, f"{loc}.session_{n}[{i}].dia_id",
                     f"{turns[i].id!r} follows {turns[i - 1].id!r}: turns out of order (dia_ids must increase "
                     "within a session)")
        sessions.append(Session(sid, when, turns, date_text))
    _require(bool(sessions), file, loc, "every session_<N> list is empty: no turns")
    return tuple(sessions)


def _check_numbering(file, loc, conv, numbers) -> None:
    """Sessions numbered 1..N without a gap: a missing number is a session lost on the way (its
    evidence would only show up as unknown ids), whether or not its date key was left behind."""
    held = set(numbers)
    missing = next((n for n in range(1, numbers[-1] + 1) if n not in held), None)
    if missing is None:
        return
    after = next(n for n in numbers if n > missing)
    date_key = f"session_{missing}_date_time"
    if date_key in conv:
        raise DatasetError(file, f"{loc}.{date_key}", f"has no session_{missing} list, though session_{after} "
                                                      "follows: a session is missing")
    raise DatasetError(file, f"{loc}.session_{after}", f"session numbers skip session_{missing}: a session is "
                                                       "missing (sessions run from session_1 without gaps)")


def _load_qa(file, loc, raw, sample_id, index, skipped: Counter) -> QA:
    _require(isinstance(raw, dict), file, loc, "QA item must be an object")
    for k in raw:
        _require(k in QA_KEYS, file, f"{loc}.{_key_shown(k)}",
                 f"unknown key (expected {', '.join(QA_KEYS)}); a misspelt field would be read as absent")
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
    evidence, dropped, split = split_evidence(raw.get("evidence", []), file, f"{loc}.evidence")
    if dropped:
        skipped["malformed_evidence_parts_dropped"] += dropped
    if split:
        skipped["evidence_entries_split"] += split
    unique = list(dict.fromkeys(evidence))
    if len(unique) < len(evidence):  # one turn named twice would count twice in evidence recall
        skipped["duplicate_evidence_ids_dropped"] += len(evidence) - len(unique)
        evidence = unique
    if not evidence:
        skipped["qa_without_evidence"] += 1
    return QA(f"{sample_id}/q{index}", question, answer, category, tuple(evidence), None, extras)


def load_locomo(path: str | Path, *, limit: int | None = None) -> Dataset:
    """Load a LoCoMo-format file (the official ``locomo10.json``, the dev copy or project samples)."""
    path = Path(path)
    file = str(path)
    skipped: Counter = Counter()
    non_finite = NonFinite(file)
    data = read_json_file(path, non_finite=non_finite, skipped=skipped)
    _require(isinstance(data, list), file, "<top level>", f"must be a list of samples, got {type(data).__name__}")
    _require(bool(data), file, "<top level>", "the list of samples is empty")
    conversations, seen = [], {}
    for i, sample in enumerate(data[:limit] if limit else data):
        loc = f"sample[{i}]"
        _require(isinstance(sample, dict), file, loc, f"must be an object, got {type(sample).__name__}")
        _require("sample_id" in sample, file, f"{loc}.sample_id", "missing")
        for k in sample:
            _require(k in SAMPLE_KEYS, file, f"{loc}.{_key_shown(k)}",
                     f"unknown key (expected {', '.join(SAMPLE_KEYS)}); a misspelt qa or conversation would be "
                     "read as absent")
        sid = check_id(file, f"{loc}.sample_id", sample["sample_id"])
        _require(sid not in seen, file, f"{loc}.sample_id",
                 f"duplicate sample_id {sid!r} (also sample[{seen.get(sid)}])")
        seen[sid] = i
        loc = f"sample[{i}] ({sid})"
        conv = sample.get("conversation")
        _require(conv is not None, file, f"{loc}.conversation", "missing")
        _require(isinstance(conv, dict), file, f"{loc}.conversation", f"must be an object, got {type(conv).__name__}")
        speakers = tuple(check_id(file, f"{loc}.conversation.{k}", conv.get(k)) for k in SPEAKER_KEYS)
        _require(speakers[0].casefold() != speakers[1].casefold(), file, f"{loc}.conversation.speaker_b",
                 "same as speaker_a" if speakers[0] == speakers[1] else
                 f"{speakers[1]!r} differs from speaker_a {speakers[0]!r} only by case: one person to a reader")
        sessions = _load_sessions(file, f"{loc}.conversation", conv, speakers, skipped)
        qa_raw = sample.get("qa", [])
        _require(isinstance(qa_raw, list), file, f"{loc}.qa", f"must be a list, got {type(qa_raw).__name__}")
        if not qa_raw:  # loadable (the Conversations tab shows it) but nothing to evaluate: said, not silent
            skipped["conversations_without_questions"] += 1
        last_time = sessions[-1].date_time
        qa = tuple(
            _with_time(_load_qa(file, f"{loc}.qa[{j}]", q, sid, j, skipped), last_time) for j, q in enumerate(qa_raw)
        )
        known = {t.id for s in sessions for t in s.turns}
        unknown = sum(1 for q in qa for e in q.evidence if e not in known)
        if unknown:
            skipped["evidence_ids_not_in_conversation"] += unknown
        conversations.append(Conversation(sid, speakers, sessions, qa, file))
    non_finite.raise_if_any()  # a NaN no check above read (an ignored field): refused all the same
    return Dataset(path.stem, tuple(conversations), dict(skipped))


def _with_time(qa: QA, when) -> QA:
    # LoCoMo questions are asked after the last session; the harness passes this as "now".
    return QA(qa.id, qa.question, qa.answer, qa.category, qa.evidence, when, qa.extras)
