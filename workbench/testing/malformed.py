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

``python -m workbench.testing.malformed [--timeout S]`` prints the table as Markdown
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
    args = parser.parse_args(argv)
    results = run_all(timeout_s=args.timeout)
    print(markdown_table(results))
    return 1 if any(r.outcome in BAD_OUTCOMES for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
