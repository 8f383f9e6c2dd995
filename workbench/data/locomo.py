"""Loader for the LoCoMo format (``locomo10.json``; snap-research/locomo), quirks included.

Quirks handled (see DATA.md §1.4): ``session_<N>_date_time`` keys beyond the last session
(we iterate the ``session_<N>`` keys that hold lists), integer answers (cast with ``str``),
category-5 items with only ``adversarial_answer`` (answer ``""``, trap kept in ``extras``),
malformed evidence strings (split on ``;`` and whitespace, invalid ids dropped and counted),
and image turns (``blip_caption``/``query``/``img_url`` kept in ``Turn.extras``).
"""
from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from pathlib import Path

from .types import QA, Conversation, Dataset, DatasetError, Session, Turn, read_json_file

DIA_ID = re.compile(r"^D(\d+):(\d+)$")
SESSION_KEY = re.compile(r"^session_(\d+)$")
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EXTRA_TURN_KEYS = ("img_url", "blip_caption", "query", "re-download")


def parse_locomo_date(text: str) -> datetime:
    """Parse LoCoMo's session timestamp, e.g. ``"1:56 pm on 8 May, 2023"``."""
    cleaned = " ".join(str(text).replace("am", "AM").replace("pm", "PM").split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    raise ValueError(f"unrecognised date {text!r}")


def split_evidence(raw) -> tuple[list[str], int]:
    """Split evidence entries on ``;`` and whitespace; return (valid ids, number dropped)."""
    if raw is None:
        return [], 0
    if isinstance(raw, str):
        raw = [raw]
    ids, dropped = [], 0
    for entry in raw:
        for part in re.split(r"[;\s]+", str(entry).strip()):
            if not part:
                continue
            if DIA_ID.match(part):
                ids.append(part)
            else:
                dropped += 1
    return ids, dropped


def _require(cond: bool, file: str, location: str, what: str) -> None:
    if not cond:
        raise DatasetError(file, location, what)


def _load_turn(file, loc, raw, session_id, when) -> Turn:
    _require(isinstance(raw, dict), file, loc, f"turn must be an object, got {type(raw).__name__}")
    for key in ("speaker", "dia_id", "text"):
        _require(key in raw, file, loc, f"missing field '{key}'")
        _require(isinstance(raw[key], str), file, f"{loc}.{key}", f"must be a string, got {type(raw[key]).__name__}")
    _require(bool(DIA_ID.match(raw["dia_id"])), file, f"{loc}.dia_id", f"malformed dia_id {raw['dia_id']!r}")
    extras = {k: raw[k] for k in EXTRA_TURN_KEYS if k in raw}
    return Turn(raw["dia_id"], raw["speaker"], raw["text"], session_id, when, extras)


def _load_sessions(file, loc, conv) -> tuple[Session, ...]:
    _require(isinstance(conv, dict), file, loc, "'conversation' must be an object")
    numbers = sorted(int(m.group(1)) for k in conv if (m := SESSION_KEY.match(k)) and isinstance(conv[k], list))
    _require(bool(numbers), file, loc, "no session_<N> lists found")
    sessions = []
    for n in numbers:
        date_key = f"session_{n}_date_time"
        _require(date_key in conv, file, f"{loc}.{date_key}", "missing (every session needs its date)")
        try:
            when = parse_locomo_date(conv[date_key])
        except ValueError as exc:
            raise DatasetError(file, f"{loc}.{date_key}", str(exc)) from None
        sid = f"S{n}"
        turns = tuple(
            _load_turn(file, f"{loc}.session_{n}[{i}]", raw, sid, when) for i, raw in enumerate(conv[f"session_{n}"])
        )
        sessions.append(Session(sid, when, turns, str(conv[date_key])))
    return tuple(sessions)


def _load_qa(file, loc, raw, sample_id, index, skipped: Counter) -> QA:
    _require(isinstance(raw, dict), file, loc, "QA item must be an object")
    _require(isinstance(raw.get("question"), str), file, f"{loc}.question", "missing or not a string")
    _require("category" in raw, file, f"{loc}.category", "missing")
    category = raw["category"]
    _require(isinstance(category, int) and 1 <= category <= 5, file, f"{loc}.category",
             f"must be 1-5, got {category!r}")
    extras = {}
    if "adversarial_answer" in raw:
        extras["adversarial_answer"] = str(raw["adversarial_answer"])
    if "answer" in raw:
        _require(isinstance(raw["answer"], (str, int, float)), file, f"{loc}.answer", "must be a string or number")
        answer = str(raw["answer"])
    elif category == 5:
        answer = ""  # adversarial: the correct response is that the conversation does not say
        skipped["category5_without_answer"] += 1
    else:
        raise DatasetError(file, f"{loc}.answer", "missing (only category-5 items may omit it)")
    evidence, dropped = split_evidence(raw.get("evidence", []))
    if dropped:
        skipped["malformed_evidence_parts_dropped"] += dropped
    if not evidence:
        skipped["qa_without_evidence"] += 1
    return QA(f"{sample_id}/q{index}", raw["question"], answer, category, tuple(evidence), None, extras)


def load_locomo(path: str | Path, *, limit: int | None = None) -> Dataset:
    """Load a LoCoMo-format file (the official ``locomo10.json``, the dev copy or project samples)."""
    path = Path(path)
    file = str(path)
    data = read_json_file(path)
    _require(isinstance(data, list), file, "<top level>", "must be a list of samples")
    skipped: Counter = Counter()
    conversations = []
    for i, sample in enumerate(data[:limit] if limit else data):
        loc = f"sample[{i}]"
        _require(isinstance(sample, dict), file, loc, "must be an object")
        _require(isinstance(sample.get("sample_id"), str), file, f"{loc}.sample_id", "missing or not a string")
        sid = sample["sample_id"]
        loc = f"sample[{i}] ({sid})"
        conv = sample.get("conversation")
        _require(conv is not None, file, f"{loc}.conversation", "missing")
        sessions = _load_sessions(file, f"{loc}.conversation", conv)
        speakers = tuple(conv[k] for k in ("speaker_a", "speaker_b") if isinstance(conv.get(k), str))
        _require(len(speakers) == 2, file, f"{loc}.conversation", "speaker_a and speaker_b must be strings")
        qa_raw = sample.get("qa", [])
        _require(isinstance(qa_raw, list), file, f"{loc}.qa", "must be a list")
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
