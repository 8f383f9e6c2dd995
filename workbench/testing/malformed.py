"""Malformed dataset files, built on purpose, and what ``load_dataset`` makes of each.

Issue #41 counted dataset files that loaded silently wrong (ids differing only by invisible
characters, misspelt session keys dropped, sessions a century out of order, a duplicate JSON key, a
question of zero-width characters), failed late or without naming the file (a 5000-digit number,
``session_01``, a lone surrogate, dates near year 9999, ``/dev/zero``) or hung (a named pipe). This
module builds such files in both formats (``CASES``) and sorts every outcome into one of
``OUTCOMES``: a ``DatasetError`` naming the file is a *clear error*; a load whose ``skipped`` counts
the expected repair is *repaired*; any other load is *silently wrong*; any other exception (or an
error not naming the file) is a *crash*; no answer within the timeout is a *hang*. Each case runs in
a forked child with a memory cap, so a hang or a runaway read costs one case, not the caller.

Issue #68 added ``ROUND4_CASES`` (``Case.round == 4``), of kinds the first round did not try: evidence
as one string or joined by ``;``, conversations without questions, dates without their session, image
turns without text, NaN in fields no loader reads, encodings and archives (BOM, UTF-16, gzip, zip, JSON
Lines, comments, truncation, empty files), a wrong type at each level, depth bombs inside ignored fields,
100,000 empty sessions, Unicode forms colliding across fields, misspelt keys, turns out of order,
wrong weekdays, questions asked before their sessions, and LongMemEval's two gold labels disagreeing.

``python -m workbench.testing.malformed [--timeout S] [--round N]`` prints the table as Markdown
(``docs/foreign-inputs.md`` holds it); ``tests/test_malformed_datasets.py`` pins that no case is
silently wrong, a crash or a hang.
"""
from __future__ import annotations

import copy
import json
import multiprocessing
import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

OUTCOMES = ("clear error", "repaired", "silently wrong", "crash", "hang")
BAD_OUTCOMES = ("silently wrong", "crash", "hang")
#: address space a case's child may add before a runaway read fails with MemoryError (a crash) instead
#: of taking the machine's memory
CHILD_MEMORY_BYTES = 2 * 1024 ** 3


def locomo_base() -> list:
    """A small valid LoCoMo file: one sample, two sessions, two questions."""
    conv = {"speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi"},
                          {"speaker": "Bo", "dia_id": "D1:2", "text": "Hello"}],
            "session_2_date_time": "9:00 am on 1 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Again"}]}
    qa = [{"question": "When?", "answer": 2022, "evidence": ["D1:1"], "category": 2},
          {"question": "Who?", "answer": "Bo", "evidence": ["D2:1"], "category": 4}]
    return [{"sample_id": "s1", "conversation": conv, "qa": qa}]


def lme_base() -> list:
    """A small valid LongMemEval file: one item, two sessions."""
    return [{"question_id": "q1", "question_type": "knowledge-update", "question": "Where?", "answer": "Geneva",
             "question_date": "2023/05/28 (Sun) 19:47",
             "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/01 (Mon) 09:00"],
             "haystack_session_ids": ["answer_b", "answer_a"],
             "haystack_sessions": [[{"role": "user", "content": "I moved", "has_answer": True},
                                    {"role": "assistant", "content": "Nice"}],
                                   [{"role": "user", "content": "Hello"}]],
             "answer_session_ids": ["answer_b"]}]


@dataclass(frozen=True)
class Case:
    """One malformed file: its format, how it is made from the base records, and what a correct
    loader does with it (``"error"``, or ``"repair:<skipped key>"``)."""

    name: str
    kind: str  # "locomo" | "longmemeval"
    build: Callable[[Path], Path]  # writes the file into a folder, returns its path
    expect: str = "error"
    what: str = ""
    round: int = 3  # the issue round that added it: 3 (#41), 4 (#68)


# -- builders ------------------------------------------------------------------------------------
def _json_file(kind: str, name: str, mutate: Callable[[list], None] | None = None,
               text_edit: Callable[[str], str] | None = None) -> Callable[[Path], Path]:
    """A builder writing the base records of ``kind`` after ``mutate`` (on the data) and ``text_edit``
    (on the JSON text: what no Python object can hold, e.g. a repeated key)."""
    def build(folder: Path) -> Path:
        data = copy.deepcopy(locomo_base() if kind == "locomo" else lme_base())
        if mutate:
            mutate(data)
        text = json.dumps(data, ensure_ascii=False)
        if text_edit:
            text = text_edit(text)
        path = folder / f"{name}.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        return path
    return build


def _special(name: str, make: Callable[[Path], None]) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / f"{name}.json"
        make(path)
        return path
    return build


def _replace_once(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return edit


def _conv(data) -> dict:
    return data[0]["conversation"]


def _rename_key(d: dict, old: str, new: str) -> None:
    """Rename a key in place, keeping the order of the others."""
    items = [(new if k == old else k, v) for k, v in d.items()]
    d.clear()
    d.update(items)


def _second_sample(sample_id: str):
    def mutate(data):
        twin = copy.deepcopy(data[0])
        twin["sample_id"] = sample_id
        data.append(twin)
    return mutate


def _second_item(question_id: str):
    def mutate(data):
        twin = copy.deepcopy(data[0])
        twin["question_id"] = question_id
        data.append(twin)
    return mutate


def _speaker(value: str, *, rename_turns: bool = True, which: str = "speaker_a", old: str = "Ann"):
    def mutate(data):
        _conv(data)[which] = value
        if rename_turns:
            for k, turns in _conv(data).items():
                if isinstance(turns, list):
                    for t in turns:
                        if t["speaker"] == old:
                            t["speaker"] = value
    return mutate


def _set(*path, value):
    def mutate(data):
        obj = data
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return mutate


def _session_key(old: str, new: str, date_too: bool = True):
    def mutate(data):
        _rename_key(_conv(data), old, new)
        if date_too:
            _rename_key(_conv(data), f"{old}_date_time", f"{new}_date_time")
    return mutate


def _add_session_01(data):
    conv = _conv(data)
    conv["session_01_date_time"] = conv["session_1_date_time"]
    conv["session_01"] = [{"speaker": "Bo", "dia_id": "D1:3", "text": "Twin"}]


def _mkfifo(path: Path) -> None:
    os.mkfifo(path)


def _link_to(target: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.symlink_to(target)
    return make


def _big_number(text: str) -> str:
    return text.replace('"answer": 2022', '"answer": ' + "9" * 5000, 1)


C = ("conversation",)
S = "session_1"
ZW = "\u200b"

CASES: tuple[Case, ...] = (
    # --- LoCoMo: ids and names that differ only invisibly
    Case("locomo-sample-id-trailing-space", "locomo", _json_file("locomo", "locomo-sample-id-trailing-space",
         _second_sample("s1 ")), what="second sample 's1 ' beside 's1'"),
    Case("locomo-sample-id-zero-width", "locomo", _json_file("locomo", "locomo-sample-id-zero-width",
         _second_sample("s1" + ZW)), what="second sample 's1<ZWSP>' beside 's1'"),
    Case("locomo-sample-id-fullwidth", "locomo", _json_file("locomo", "locomo-sample-id-fullwidth",
         _second_sample("\uff531")), what="second sample with a full-width 's'"),
    Case("locomo-sample-id-nbsp", "locomo", _json_file("locomo", "locomo-sample-id-nbsp",
         _set(0, "sample_id", value="s\u00a01")), what="a no-break space inside the id"),
    Case("locomo-sample-id-rtl-override", "locomo", _json_file("locomo", "locomo-sample-id-rtl-override",
         _set(0, "sample_id", value="s1\u202e")), what="a right-to-left override in the id"),
    Case("locomo-speakers-differ-by-zwj", "locomo", _json_file("locomo", "locomo-speakers-differ-by-zwj",
         _speaker("Ann\u200d", which="speaker_b", old="Bo")), what="speaker_b 'Ann<ZWJ>' beside speaker_a 'Ann'"),
    Case("locomo-speaker-leading-space", "locomo", _json_file("locomo", "locomo-speaker-leading-space",
         _speaker(" Ann")), what="speaker ' Ann' everywhere"),
    Case("locomo-speaker-tab-inside", "locomo", _json_file("locomo", "locomo-speaker-tab-inside",
         _speaker("Ann\tLee")), what="a tab inside a speaker name"),
    Case("locomo-turn-speaker-bom", "locomo", _json_file("locomo", "locomo-turn-speaker-bom",
         _set(0, *C, S, 1, "speaker", value="Bo\ufeff")), what="a BOM after one turn's speaker"),
    Case("locomo-dia-id-zero-width", "locomo", _json_file("locomo", "locomo-dia-id-zero-width",
         _set(0, *C, S, 0, "dia_id", value="D1:1" + ZW)), what="'D1:1<ZWSP>'"),
    Case("locomo-dia-id-arabic-digit", "locomo", _json_file("locomo", "locomo-dia-id-arabic-digit",
         _set(0, *C, S, 0, "dia_id", value="D\u0661:1")), what="'D<Arabic-Indic 1>:1'"),
    Case("locomo-dia-id-leading-zero", "locomo", _json_file("locomo", "locomo-dia-id-leading-zero",
         _set(0, *C, S, 0, "dia_id", value="D01:1")), what="'D01:1' (evidence says D1:1)"),
    # --- LoCoMo: session keys with odd spelling or spacing
    Case("locomo-session-01", "locomo", _json_file("locomo", "locomo-session-01", _session_key(S, "session_01")),
         what="session_01 / session_01_date_time"),
    Case("locomo-session-01-beside-session-1", "locomo", _json_file("locomo", "locomo-session-01-beside-session-1",
         _add_session_01), what="session_01 beside session_1"),
    Case("locomo-session-capital", "locomo", _json_file("locomo", "locomo-session-capital",
         _session_key("session_2", "Session_2", date_too=False)), what="Session_2"),
    Case("locomo-session-trailing-space", "locomo", _json_file("locomo", "locomo-session-trailing-space",
         _session_key("session_2", "session_2 ", date_too=False)), what="'session_2 '"),
    Case("locomo-session-no-underscore", "locomo", _json_file("locomo", "locomo-session-no-underscore",
         _session_key("session_2", "session2", date_too=False)), what="session2"),
    Case("locomo-date-key-misspelt", "locomo", _json_file("locomo", "locomo-date-key-misspelt",
         lambda d: _rename_key(_conv(d), "session_2_date_time", "session_2_datetime")), what="session_2_datetime"),
    # --- LoCoMo: session dates
    Case("locomo-session-a-century-early", "locomo", _json_file("locomo", "locomo-session-a-century-early",
         _set(0, *C, "session_2_date_time", value="9:00 am on 1 June, 1923")), what="session 2 in 1923"),
    Case("locomo-session-year-2123", "locomo", _json_file("locomo", "locomo-session-year-2123",
         _set(0, *C, "session_2_date_time", value="9:00 am on 1 June, 2123")), what="session 2 in 2123"),
    Case("locomo-session-year-9999", "locomo", _json_file("locomo", "locomo-session-year-9999",
         lambda d: _conv(d).update(session_1_date_time="1:56 pm on 30 December, 9999",
                                   session_2_date_time="9:00 am on 31 December, 9999")), what="both in 9999"),
    Case("locomo-session-year-1899", "locomo", _json_file("locomo", "locomo-session-year-1899",
         lambda d: _conv(d).update(session_1_date_time="1:56 pm on 8 May, 1899",
                                   session_2_date_time="9:00 am on 1 June, 1899")), what="both in 1899"),
    Case("locomo-session-a-year-early", "locomo", _json_file("locomo", "locomo-session-a-year-early",
         _set(0, *C, "session_2_date_time", value="9:00 am on 1 June, 2022")), what="session 2 a year before 1"),
    Case("locomo-session-days-early", "locomo", _json_file("locomo", "locomo-session-days-early",
         _set(0, *C, "session_2_date_time", value="9:00 am on 3 May, 2023")),
         expect="repair:session_dates_out_of_order", what="session 2 five days before 1 (kept, counted)"),
    # --- LoCoMo: JSON-level damage
    Case("locomo-duplicate-answer-key", "locomo", _json_file("locomo", "locomo-duplicate-answer-key",
         text_edit=_replace_once('"answer": 2022', '"answer": 2022, "answer": 1999')), what='"answer" twice'),
    Case("locomo-duplicate-session-key", "locomo", _json_file("locomo", "locomo-duplicate-session-key",
         text_edit=_replace_once('"session_2": [', '"session_1": [], "session_2": [')), what='"session_1" twice'),
    Case("locomo-question-zero-width-only", "locomo", _json_file("locomo", "locomo-question-zero-width-only",
         _set(0, "qa", 0, "question", value=ZW * 3)), what="question of three ZWSPs"),
    Case("locomo-question-word-joiners-only", "locomo", _json_file("locomo", "locomo-question-word-joiners-only",
         _set(0, "qa", 0, "question", value="\u2060\ufeff\u200c ")), what="word joiner, BOM, ZWNJ, space"),
    Case("locomo-answer-zero-width-only", "locomo", _json_file("locomo", "locomo-answer-zero-width-only",
         _set(0, "qa", 1, "answer", value=ZW)), what="answer of one ZWSP"),
    Case("locomo-5000-digit-answer", "locomo", _json_file("locomo", "locomo-5000-digit-answer",
         text_edit=_big_number), what="a 5000-digit integer answer"),
    Case("locomo-lone-surrogate", "locomo", _json_file("locomo", "locomo-lone-surrogate",
         text_edit=_replace_once('"Hello"', '"Hel\\ud800lo"')), what="an escaped lone surrogate in a turn"),
    # --- LoCoMo: not a regular file
    Case("locomo-named-pipe", "locomo", _special("locomo-named-pipe", _mkfifo), what="a FIFO with no writer"),
    Case("locomo-dev-zero", "locomo", _special("locomo-dev-zero", _link_to("/dev/zero")), what="a link to /dev/zero"),
    Case("locomo-dev-null", "locomo", _special("locomo-dev-null", _link_to("/dev/null")), what="a link to /dev/null"),
    # --- LongMemEval
    Case("lme-question-id-trailing-space", "longmemeval", _json_file("longmemeval", "lme-question-id-trailing-space",
         _second_item("q1 ")), what="second item 'q1 ' beside 'q1'"),
    Case("lme-question-id-zero-width", "longmemeval", _json_file("longmemeval", "lme-question-id-zero-width",
         _second_item("q1" + ZW)), what="second item 'q1<ZWSP>'"),
    Case("lme-question-id-fullwidth", "longmemeval", _json_file("longmemeval", "lme-question-id-fullwidth",
         _second_item("\uff511")), what="second item with a full-width 'q'"),
    Case("lme-session-id-zero-width", "longmemeval", _json_file("longmemeval", "lme-session-id-zero-width",
         _set(0, "haystack_session_ids", 0, value="answer_b" + ZW)), what="evidence session id 'answer_b<ZWSP>'"),
    Case("lme-answer-session-id-space", "longmemeval", _json_file("longmemeval", "lme-answer-session-id-space",
         _set(0, "answer_session_ids", 0, value="answer_b ")), what="answer_session_ids ['answer_b ']"),
    Case("lme-role-capitalised", "longmemeval", _json_file("longmemeval", "lme-role-capitalised",
         _set(0, "haystack_sessions", 0, 0, "role", value="User")), what="role 'User'"),
    Case("lme-role-trailing-space", "longmemeval", _json_file("longmemeval", "lme-role-trailing-space",
         _set(0, "haystack_sessions", 0, 1, "role", value="assistant ")), what="role 'assistant '"),
    Case("lme-role-system", "longmemeval", _json_file("longmemeval", "lme-role-system",
         _set(0, "haystack_sessions", 1, 0, "role", value="system")), what="role 'system' (a third speaker)"),
    Case("lme-haystack-year-9999", "longmemeval", _json_file("longmemeval", "lme-haystack-year-9999",
         _set(0, "haystack_dates", 0, value="9999/12/31 (Fri) 23:59")), what="a session on 31 Dec 9999"),
    Case("lme-question-year-1850", "longmemeval", _json_file("longmemeval", "lme-question-year-1850",
         _set(0, "question_date", value="1850/05/28 (Tue) 19:47")), what="question dated 1850"),
    Case("lme-haystack-a-century-early", "longmemeval", _json_file("longmemeval", "lme-haystack-a-century-early",
         _set(0, "haystack_dates", 1, value="1923/05/01 (Tue) 09:00")), what="one session in 1923"),
    Case("lme-duplicate-answer-key", "longmemeval", _json_file("longmemeval", "lme-duplicate-answer-key",
         text_edit=_replace_once('"answer": "Geneva"', '"answer": "Geneva", "answer": "Bern"')),
         what='"answer" twice'),
    Case("lme-question-zero-width-only", "longmemeval", _json_file("longmemeval", "lme-question-zero-width-only",
         _set(0, "question", value=ZW * 4)), what="question of four ZWSPs"),
    Case("lme-5000-digit-number", "longmemeval", _json_file("longmemeval", "lme-5000-digit-number",
         text_edit=_replace_once('"answer": "Geneva"', '"answer": ' + "7" * 5000)), what="a 5000-digit answer"),
    Case("lme-lone-surrogate", "longmemeval", _json_file("longmemeval", "lme-lone-surrogate",
         text_edit=_replace_once('"Nice"', '"Ni\\udc00ce"')), what="an escaped lone surrogate in a turn"),
    Case("lme-named-pipe", "longmemeval", _special("lme-named-pipe", _mkfifo), what="a FIFO with no writer"),
    Case("lme-dev-zero", "longmemeval", _special("lme-dev-zero", _link_to("/dev/zero")), what="a link to /dev/zero"),
    Case("lme-directory", "longmemeval", _special("lme-directory", lambda p: p.mkdir()), what="a folder"),
    Case("lme-session-ids-int-and-string", "longmemeval", _json_file("longmemeval", "lme-session-ids-int-and-string",
         _set(0, "haystack_session_ids", value=[1, "1"])),
         expect="repair:duplicate_session_ids_renamed", what="session ids 1 and '1' (each kept, counted)"),
)


# -- round 4 (issue #68): kinds no earlier round tried ------------------------------------------
def _raw(name: str, make: Callable[[list], bytes], kind: str = "locomo") -> Callable[[Path], Path]:
    """A builder writing bytes made from the base records of ``kind`` (encodings, archives, broken JSON)."""
    def build(folder: Path) -> Path:
        path = folder / f"{name}.json"
        path.write_bytes(make(copy.deepcopy(locomo_base() if kind == "locomo" else lme_base())))
        return path
    return build


def _dumps(data) -> str:
    return json.dumps(data, ensure_ascii=False)


def _literal(*path, literal: str):
    """Put ``literal`` (JSON text no Python value writes: NaN, a 50,000-deep list) at ``path``: a marker
    string is set there, then replaced in the text."""
    marker = "__LITERAL_%d__" % len(literal)
    return {"mutate": _set(*path, value=marker), "text_edit": _replace_once(f'"{marker}"', literal)}


def _literal_file(kind: str, name: str, *path, literal: str) -> Callable[[Path], Path]:
    return _json_file(kind, name, **_literal(*path, literal=literal))


def _gzip(data) -> bytes:
    import gzip

    return gzip.compress(_dumps(data).encode())


def _zip(data) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("locomo10.json", _dumps(data))
    return buf.getvalue()


def _json_lines(data) -> bytes:
    twin = copy.deepcopy(data[0])
    twin["sample_id"] = "s2"
    return "\n".join(_dumps(s) for s in (data[0], twin)).encode()


def _renumber_session(old: int, new: int):
    """Session ``old`` becomes session ``new`` (its key, its date key, its dia_ids, the evidence naming them)."""
    def mutate(data):
        conv = _conv(data)
        _rename_key(conv, f"session_{old}", f"session_{new}")
        _rename_key(conv, f"session_{old}_date_time", f"session_{new}_date_time")
        for t in conv[f"session_{new}"]:
            t["dia_id"] = t["dia_id"].replace(f"D{old}:", f"D{new}:")
        for q in data[0]["qa"]:
            q["evidence"] = [e.replace(f"D{old}:", f"D{new}:") for e in q["evidence"]]
    return mutate


def _orphan_date_in_gap(data):
    """session_2's list gone (its date kept) while a session_3 follows: a lost session."""
    conv = _conv(data)
    del conv["session_2"]
    conv["session_3_date_time"] = "9:00 am on 8 June, 2023"
    conv["session_3"] = [{"speaker": "Bo", "dia_id": "D3:1", "text": "Later"}]
    data[0]["qa"][1]["evidence"] = ["D3:1"]


def _empty_sessions(n: int):
    def mutate(data):
        conv = _conv(data)
        for k in range(3, n + 3):
            conv[f"session_{k}"] = []
    return mutate


def _lme_empty_sessions(n: int):
    def mutate(data):
        item = data[0]
        item["haystack_dates"] += ["2023/05/02 (Tue) 09:00"] * n
        item["haystack_session_ids"] += [f"noise_{k}" for k in range(n)]
        item["haystack_sessions"] += [[] for _ in range(n)]
    return mutate


def _nfd_speaker(data):
    import unicodedata

    _speaker("Zo\u00eb")(data)  # NFC everywhere
    for t in _conv(data)["session_1"]:
        if t["speaker"] == "Zo\u00eb":
            t["speaker"] = unicodedata.normalize("NFD", "Zo\u00eb")  # the same name, decomposed, in the turns


def _evidence_in_other_conversation(data):
    twin = copy.deepcopy(data[0])
    twin["sample_id"] = "s2"
    _conv(data)["session_3_date_time"] = "9:00 am on 8 June, 2023"
    _conv(data)["session_3"] = [{"speaker": "Bo", "dia_id": "D3:1", "text": "Only in s1"}]
    twin["qa"][1]["evidence"] = ["D3:1"]  # names a turn of s1, not of s2
    data.append(twin)


def _misspelt_answer_key(data):
    data[0]["qa"].append({"question": "Trap?", "anwser": "Paris", "evidence": ["D1:2"], "category": 5})


def _lme_nfd_ids(data):
    import unicodedata

    data[0]["haystack_session_ids"][0] = "caf\u00e9"
    data[0]["answer_session_ids"] = [unicodedata.normalize("NFD", "caf\u00e9")]


def _reverse_session_1(data):
    _conv(data)["session_1"].reverse()


L4 = "locomo"
M4 = "longmemeval"
H = ("haystack_sessions",)


def _c4(name, kind, build, expect="error", what=""):
    return Case(name, kind, build, expect, what, round=4)


def _j(kind, name, mutate=None, text_edit=None):
    return _json_file(kind, name, mutate, text_edit)


ROUND4_CASES: tuple[Case, ...] = (
    # --- the six the issue found (evidence repaired without a word; accepted where an error or a warning is due)
    _c4("locomo-evidence-one-string", L4, _j(L4, "locomo-evidence-one-string", _set(0, "qa", 0, "evidence",
        value="D1:1")), what='evidence "D1:1", not a list'),
    _c4("locomo-evidence-semicolon-joined", L4, _j(L4, "locomo-evidence-semicolon-joined",
        _set(0, "qa", 1, "evidence", value=["D1:1; D2:1"])), "repair:evidence_entries_split",
        "one entry 'D1:1; D2:1' (split, counted)"),
    _c4("locomo-evidence-space-joined", L4, _j(L4, "locomo-evidence-space-joined",
        _set(0, "qa", 1, "evidence", value=["D1:1 D2:1"])), "repair:evidence_entries_split",
        "one entry 'D1:1 D2:1' (split, counted)"),
    _c4("locomo-no-questions", L4, _j(L4, "locomo-no-questions", _set(0, "qa", value=[])),
        "repair:conversations_without_questions", "qa [] (loaded, counted)"),
    _c4("locomo-qa-key-absent", L4, _j(L4, "locomo-qa-key-absent", lambda d: d[0].pop("qa")),
        "repair:conversations_without_questions", "no qa key (loaded, counted)"),
    _c4("locomo-date-without-session", L4, _j(L4, "locomo-date-without-session",
        _set(0, *C, "session_3_date_time", value="9:00 am on 8 June, 2023")),
        "repair:session_dates_without_session", "session_3_date_time after the last session (counted)"),
    _c4("locomo-date-without-session-in-gap", L4, _j(L4, "locomo-date-without-session-in-gap", _orphan_date_in_gap),
        what="session_2_date_time without session_2, session_3 after it"),
    _c4("locomo-session-number-gap", L4, _j(L4, "locomo-session-number-gap", _renumber_session(2, 3)),
        what="sessions 1 and 3, no session 2 at all"),
    _c4("locomo-image-turn-empty-text", L4, _j(L4, "locomo-image-turn-empty-text",
        lambda d: _conv(d)["session_1"][1].update(text="", img_url=["https://example.org/x.jpg"],
                                                  blip_caption="a photo of a dog")),
        "repair:image_turns_without_text", "image turn, text '', a caption (kept, counted)"),
    _c4("locomo-image-turn-empty-text-no-caption", L4, _j(L4, "locomo-image-turn-empty-text-no-caption",
        lambda d: _conv(d)["session_1"][1].update(text="", img_url=["https://example.org/x.jpg"])),
        what="image turn, text '', no caption"),
    _c4("locomo-turn-text-invisible-only", L4, _j(L4, "locomo-turn-text-invisible-only",
        _set(0, *C, S, 0, "text", value=ZW * 2)), what="a turn of two ZWSPs, no image"),
    _c4("locomo-nan-in-ignored-field", L4, _literal_file(L4, "locomo-nan-in-ignored-field", 0, "event_summary",
        literal='{"score": NaN}'), what="event_summary {score: NaN}"),
    _c4("locomo-infinity-in-turn-extra", L4, _literal_file(L4, "locomo-infinity-in-turn-extra", 0, *C, S, 0,
        "re-download", literal="Infinity"), what="a turn's re-download: Infinity"),
    _c4("lme-nan-in-item-extra-field", M4, _literal_file(M4, "lme-nan-in-item-extra-field", 0, "score",
        literal="NaN"), what="an extra item key score: NaN"),
    _c4("lme-negative-infinity-in-turn", M4, _literal_file(M4, "lme-negative-infinity-in-turn", 0, *H, 0, 1,
        "weight", literal="-Infinity"), what="a turn's extra key weight: -Infinity"),
    # --- whole-file damage: encodings, archives, not one JSON document
    _c4("locomo-utf8-bom", L4, _raw("locomo-utf8-bom", lambda d: b"\xef\xbb\xbf" + _dumps(d).encode()),
        "repair:byte_order_mark_removed", "UTF-8 with a byte-order mark (read, counted)"),
    _c4("lme-utf16-file", M4, _raw("lme-utf16-file", lambda d: _dumps(d).encode("utf-16"), M4),
        what="saved as UTF-16 (with BOM)"),
    _c4("locomo-utf16-no-bom", L4, _raw("locomo-utf16-no-bom", lambda d: _dumps(d).encode("utf-16-le")),
        what="saved as UTF-16LE, no BOM"),
    _c4("lme-gzip-named-json", M4, _raw("lme-gzip-named-json", _gzip, M4), what="gzip data named .json"),
    _c4("locomo-zip-named-json", L4, _raw("locomo-zip-named-json", _zip), what="a zip archive named .json"),
    _c4("locomo-json-lines", L4, _raw("locomo-json-lines", _json_lines), what="two samples as JSON Lines"),
    _c4("lme-trailing-garbage", M4, _raw("lme-trailing-garbage", lambda d: (_dumps(d) + "\n}extra").encode(), M4),
        what="text after the JSON list"),
    _c4("locomo-comments", L4, _raw("locomo-comments", lambda d: ("// exported\n" + _dumps(d)).encode()),
        what="a // comment line first"),
    _c4("locomo-trailing-comma", L4, _raw("locomo-trailing-comma", lambda d: (_dumps(d)[:-1] + ",]").encode()),
        what="a trailing comma before ]"),
    _c4("lme-truncated", M4, _raw("lme-truncated", lambda d: _dumps(d)[:len(_dumps(d)) // 2].encode(), M4),
        what="the first half of the file"),
    _c4("locomo-empty-file", L4, _raw("locomo-empty-file", lambda d: b""), what="0 bytes"),
    _c4("lme-only-whitespace", M4, _raw("lme-only-whitespace", lambda d: b" \n\t\r\n ", M4), what="whitespace only"),
    _c4("lme-raw-nul-byte", M4, _raw("lme-raw-nul-byte", lambda d: _dumps(d).replace("Nice", "Ni\x00ce").encode(),
        M4), what="an unescaped NUL byte inside a string"),
    _c4("locomo-top-level-null", L4, _raw("locomo-top-level-null", lambda d: b"null"), what="null"),
    _c4("lme-top-level-number", M4, _raw("lme-top-level-number", lambda d: b"42", M4), what="42"),
    _c4("locomo-top-level-string", L4, _raw("locomo-top-level-string", lambda d: b'"locomo10.json"'),
        what="a JSON string"),
    _c4("lme-top-level-single-item", M4, _raw("lme-top-level-single-item", lambda d: _dumps(d[0]).encode(), M4),
        what="one item, not in a list"),
    # --- a wrong type at each level
    _c4("locomo-sample-is-list", L4, _j(L4, "locomo-sample-is-list", lambda d: d.__setitem__(0, [d[0]])),
        what="the sample wrapped in a list"),
    _c4("locomo-sample-id-number", L4, _j(L4, "locomo-sample-id-number", _set(0, "sample_id", value=26)),
        what="sample_id 26"),
    _c4("locomo-speaker-number", L4, _j(L4, "locomo-speaker-number", _set(0, *C, "speaker_b", value=2)),
        what="speaker_b 2"),
    _c4("locomo-dia-id-number", L4, _j(L4, "locomo-dia-id-number", _set(0, *C, S, 0, "dia_id", value=1.1)),
        what="dia_id 1.1"),
    _c4("locomo-turn-is-list", L4, _j(L4, "locomo-turn-is-list", _set(0, *C, S, 1, value=["Bo", "D1:2", "Hello"])),
        what="a turn as a list"),
    _c4("lme-question-id-number", M4, _j(M4, "lme-question-id-number", _set(0, "question_id", value=7)),
        what="question_id 7"),
    _c4("lme-question-date-list", M4, _j(M4, "lme-question-date-list",
        _set(0, "question_date", value=["2023/05/28 (Sun) 19:47"])), what="question_date in a list"),
    _c4("lme-turn-is-string", M4, _j(M4, "lme-turn-is-string", _set(0, *H, 1, 0, value="user: Hello")),
        what="a turn as a string"),
    _c4("lme-haystack-sessions-object", M4, _j(M4, "lme-haystack-sessions-object",
        lambda d: d[0].update(haystack_sessions=dict(zip(d[0]["haystack_session_ids"], d[0]["haystack_sessions"])))),
        what="haystack_sessions as {id: turns}"),
    # --- depth and size
    _c4("locomo-depth-bomb-in-ignored-field", L4, _literal_file(L4, "locomo-depth-bomb-in-ignored-field", 0,
        "observation", literal="[" * 50_000 + "]" * 50_000), what="observation nested 50,000 deep"),
    _c4("lme-depth-bomb-in-turn", M4, _literal_file(M4, "lme-depth-bomb-in-turn", 0, *H, 0, 0, "meta",
        literal='{"a":' * 5_000 + "1" + "}" * 5_000), what="a turn key nested 5,000 deep"),
    _c4("locomo-question-2MB", L4, _j(L4, "locomo-question-2MB", _set(0, "qa", 0, "question", value="Why? " * 400_000)),
        what="a 2 MB question"),
    _c4("locomo-speaker-300-chars", L4, _j(L4, "locomo-speaker-300-chars", _speaker("A" * 300)),
        what="a 300-character speaker name"),
    _c4("locomo-100k-empty-sessions", L4, _j(L4, "locomo-100k-empty-sessions", _empty_sessions(100_000)),
        "repair:empty_sessions_dropped", "100,000 empty sessions (dropped, counted)"),
    _c4("lme-50k-empty-sessions", M4, _j(M4, "lme-50k-empty-sessions", _lme_empty_sessions(50_000)),
        "repair:empty_sessions_dropped", "50,000 empty haystack sessions (dropped, counted)"),
    # --- Unicode forms colliding across fields
    _c4("locomo-speaker-nfd-in-turns", L4, _j(L4, "locomo-speaker-nfd-in-turns", _nfd_speaker),
        what="speaker_a 'Zoë' (NFC), turns 'Zoë' (NFD)"),
    _c4("locomo-speakers-differ-by-case", L4, _j(L4, "locomo-speakers-differ-by-case",
        _speaker("ann", which="speaker_b", old="Bo")), what="speakers 'Ann' and 'ann'"),
    _c4("locomo-evidence-fullwidth-digit", L4, _j(L4, "locomo-evidence-fullwidth-digit",
        _set(0, "qa", 0, "evidence", value=["D\uff11:1"])), "repair:malformed_evidence_parts_dropped",
        "evidence 'D<full-width 1>:1' (dropped, counted)"),
    _c4("lme-answer-session-id-nfd", M4, _j(M4, "lme-answer-session-id-nfd", _lme_nfd_ids),
        what="haystack id 'café' (NFC), answer_session_ids 'café' (NFD)"),
    # --- LoCoMo: meaning
    _c4("locomo-evidence-other-conversation", L4, _j(L4, "locomo-evidence-other-conversation",
        _evidence_in_other_conversation), "repair:evidence_ids_not_in_conversation",
        "s2's evidence names a turn of s1 (counted)"),
    _c4("locomo-duplicate-evidence-ids", L4, _j(L4, "locomo-duplicate-evidence-ids",
        _set(0, "qa", 0, "evidence", value=["D1:1", "D1:1"])), "repair:duplicate_evidence_ids_dropped",
        "evidence ['D1:1', 'D1:1'] (one kept, counted)"),
    _c4("locomo-category-zero", L4, _j(L4, "locomo-category-zero", _set(0, "qa", 0, "category", value=0)),
        what="category 0"),
    _c4("locomo-category-name", L4, _j(L4, "locomo-category-name", _set(0, "qa", 0, "category", value="temporal")),
        what="category 'temporal'"),
    _c4("locomo-adversarial-answer-only-category-2", L4, _j(L4, "locomo-adversarial-answer-only-category-2",
        lambda d: d[0]["qa"][0].update(adversarial_answer=d[0]["qa"][0].pop("answer"))),
        what="a category-2 item with adversarial_answer, no answer"),
    _c4("locomo-qa-key-misspelt", L4, _j(L4, "locomo-qa-key-misspelt", _misspelt_answer_key),
        what="a category-5 item with 'anwser'"),
    _c4("locomo-sample-key-misspelt", L4, _j(L4, "locomo-sample-key-misspelt",
        lambda d: _rename_key(d[0], "qa", "QA")), what="'QA' for 'qa'"),
    _c4("locomo-turn-extra-key", L4, _j(L4, "locomo-turn-extra-key", _set(0, *C, S, 1, "caption", value="a dog")),
        "repair:unknown_turn_keys_ignored", "a turn key 'caption' (ignored, counted)"),
    _c4("locomo-turns-out-of-order", L4, _j(L4, "locomo-turns-out-of-order", _reverse_session_1),
        what="D1:2 before D1:1"),
    _c4("locomo-date-13-pm", L4, _j(L4, "locomo-date-13-pm", _set(0, *C, "session_1_date_time",
        value="13:56 pm on 8 May, 2023")), what="'13:56 pm'"),
    _c4("locomo-date-february-30", L4, _j(L4, "locomo-date-february-30", _set(0, *C, "session_1_date_time",
        value="1:56 pm on 30 February, 2023")), what="30 February"),
    # --- LongMemEval: meaning
    _c4("lme-session-ids-longer", M4, _j(M4, "lme-session-ids-longer",
        lambda d: d[0]["haystack_session_ids"].append("extra")), what="3 session ids for 2 sessions"),
    _c4("lme-answer-session-ids-empty", M4, _j(M4, "lme-answer-session-ids-empty",
        _set(0, "answer_session_ids", value=[])), "repair:questions_without_answer_sessions",
        "answer_session_ids [] (counted)"),
    _c4("lme-answer-session-ids-repeated", M4, _j(M4, "lme-answer-session-ids-repeated",
        _set(0, "answer_session_ids", value=["answer_b", "answer_b"])), "repair:duplicate_answer_session_ids_dropped",
        "answer_session_ids twice the same (one kept, counted)"),
    _c4("lme-question-type-capitalised", M4, _j(M4, "lme-question-type-capitalised",
        _set(0, "question_type", value="Knowledge-Update")), what="'Knowledge-Update'"),
    _c4("lme-question-before-sessions", M4, _j(M4, "lme-question-before-sessions",
        _set(0, "question_date", value="2023/04/01 (Sat) 10:00")), what="question asked before both sessions"),
    _c4("lme-weekday-wrong", M4, _j(M4, "lme-weekday-wrong", _set(0, "haystack_dates", 0,
        value="2023/05/20 (Mon) 10:00")), what="20 May 2023 called a Monday"),
    _c4("lme-date-february-29-2023", M4, _j(M4, "lme-date-february-29-2023", _set(0, "haystack_dates", 1,
        value="2023/02/29 (Wed) 09:00")), what="29 February 2023"),
    _c4("lme-has-answer-int", M4, _j(M4, "lme-has-answer-int", _set(0, *H, 0, 0, "has_answer", value=1)),
        what="has_answer 1"),
    _c4("lme-has-answer-outside-answer-session", M4, _j(M4, "lme-has-answer-outside-answer-session",
        _set(0, *H, 1, 0, "has_answer", value=True)), "repair:has_answer_outside_answer_sessions",
        "a flagged turn in a session not in answer_session_ids (counted)"),
    _c4("lme-turn-extra-key", M4, _j(M4, "lme-turn-extra-key", _set(0, *H, 0, 0, "name", value="Ann")),
        "repair:unknown_turn_keys_ignored", "a turn key 'name' (ignored, counted)"),
    _c4("lme-item-extra-key", M4, _j(M4, "lme-item-extra-key", _set(0, "answer_session_id", value=["answer_a"])),
        "repair:unknown_item_keys_ignored", "'answer_session_id' beside answer_session_ids (ignored, counted)"),
    _c4("lme-turn-content-empty", M4, _j(M4, "lme-turn-content-empty", _set(0, *H, 0, 1, "content", value="")),
        "repair:empty_turns_kept", "an assistant turn with content '' (kept, counted)"),
)

CASES = CASES + ROUND4_CASES


# -- running -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    case: Case
    outcome: str  # one of OUTCOMES
    detail: str


def _load_in_child(spec: str, path: str, expect: str, conn) -> None:
    """The child's side: load, classify, send ``(outcome, detail)``. Memory is capped first."""
    try:
        import importlib

        # POSIX only, and optional: imported by name so that the package imports on Windows (portable core)
        resource = importlib.import_module("resource")
        resource.setrlimit(resource.RLIMIT_DATA, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):  # no resource module (Windows) or a lower hard limit
        pass
    from ..data import DatasetError, load_dataset

    try:
        ds = load_dataset(f"{spec}:{path}")
    except DatasetError as exc:
        message = str(exc)
        named = message.startswith(path) and len(message) < 1000
        conn.send(("clear error" if named else "crash", message[:300]))
        return
    except BaseException as exc:  # anything else is the failure being measured: reported, not hidden
        conn.send(("crash", f"{type(exc).__name__}: {str(exc)[:300]}"))
        return
    key = expect.partition(":")[2]
    if key and ds.skipped.get(key):
        conn.send(("repaired", f"skipped {dict(ds.skipped)}"))
    else:
        conn.send(("silently wrong", f"loaded {len(ds)} conversation(s), skipped {dict(ds.skipped)}"))


def run_case(case: Case, folder: Path, *, timeout_s: float = 10.0) -> Outcome:
    """Build ``case`` in ``folder`` and load it in a forked child; a child silent past ``timeout_s``
    is killed and the case is a hang."""
    path = case.build(folder)
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_load_in_child, args=(case.kind, str(path), case.expect, send), daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(timeout_s):
            outcome, detail = receive.recv()
        else:
            outcome, detail = "hang", f"no answer in {timeout_s:g} s"
    except EOFError:  # the child died without a word (killed for memory, a segfault)
        outcome, detail = "crash", f"the loading process died (exit code {child.exitcode})"
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
    return Outcome(case, outcome, detail)


def run_all(cases=CASES, *, timeout_s: float = 10.0) -> list[Outcome]:
    """Every case, each in a fresh temporary folder."""
    results = []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="malformed-") as folder:
            results.append(run_case(case, Path(folder), timeout_s=timeout_s))
    return results


def markdown_table(results: list[Outcome]) -> str:
    """The counts per outcome, then one line per case (for ``docs/foreign-inputs.md``)."""
    counts = Counter(r.outcome for r in results)
    lines = ["| outcome | cases |", "|---|---|"]
    lines += [f"| {o} | {counts.get(o, 0)} |" for o in OUTCOMES]
    lines += ["", "| case | format | what | outcome | message / detail |", "|---|---|---|---|---|"]
    for r in results:
        detail = r.detail.replace("|", "\\|").replace("\n", " ")
        detail = detail.split("/malformed-", 1)[-1].split("/", 1)[-1] if "/malformed-" in detail else detail
        lines.append(f"| {r.case.name} | {r.case.kind} | {r.case.what} | {r.outcome} | {detail[:160]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a case counts as a hang")
    parser.add_argument("--round", type=int, default=None,
                        help="only the cases an issue round added (3: issue #41, 4: issue #68); default all")
    args = parser.parse_args(argv)
    cases = tuple(c for c in CASES if args.round is None or c.round == args.round)
    results = run_all(cases, timeout_s=args.timeout)
    print(markdown_table(results))
    return 1 if any(r.outcome in BAD_OUTCOMES for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
