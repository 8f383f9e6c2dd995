"""Inputs someone else made: malformed datasets, damaged cassettes and JSONL files, a hostile run
directory, odd ids, secrets in URLs, saved memories from another machine, CLI errors.

Every malformed dataset gets a ``DatasetError`` naming the file, the record and the field, or a
documented repair counted in ``Dataset.skipped``. Every damaged cassette line is skipped and
reported as ``file:line``; appends start on a fresh line; ``workbench cassette check|repair``.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.data import DatasetError, load_locomo, load_longmemeval
from workbench.jsonl import DamagedFile, append_line, read_json, read_jsonl, write_text_atomic
from workbench.llm import CachedLLM, ScriptedLLM
from workbench.llm.cache import cache_key, check_cassette
from workbench.rundir import RunDir, id_from_name, safe_name

ROOT = Path(__file__).resolve().parents[1]
TEN_MB = 10 * 1024 * 1024


# ================================================================================================
# Datasets
# ================================================================================================
def locomo_sample() -> dict:
    conv = {"speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi"},
                          {"speaker": "Bo", "dia_id": "D1:2", "text": "Look", "img_url": ["u"],
                           "blip_caption": "a photo of a cat", "query": "cat"}],
            "session_2_date_time": "9:00 am on 1 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Again"}]}
    qa = [{"question": "Year?", "answer": 2022, "evidence": ["D1:1"], "category": 2},
          {"question": "Trap?", "adversarial_answer": "yes", "evidence": ["D2:1"], "category": 5}]
    return {"sample_id": "s1", "conversation": conv, "qa": qa}


def lme_item() -> dict:
    return {"question_id": "q1", "question_type": "knowledge-update", "question": "Where?", "answer": "Geneva",
            "question_date": "2023/05/28 (Sun) 19:47",
            "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/01 (Mon) 09:00"],
            "haystack_session_ids": ["answer_b", "answer_a"],
            "haystack_sessions": [[{"role": "user", "content": "I moved", "has_answer": True},
                                   {"role": "assistant", "content": "Nice"}],
                                  [{"role": "user", "content": "Hello"}]],
            "answer_session_ids": ["answer_b"]}


def _set(path, value):
    """A mutator setting ``data[path...] = value`` (path of keys/indices into the top-level list)."""
    def mutate(data):
        obj = data
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return mutate


def _pop(path):
    def mutate(data):
        obj = data
        for k in path[:-1]:
            obj = obj[k]
        del obj[path[-1]]
    return mutate


def _dup_first(data):
    data.append(copy.deepcopy(data[0]))


def _raw(text_or_bytes):
    return ("raw", text_or_bytes)


HUGE = "x" * TEN_MB
C = ("conversation",)

# (case id, mutator or ("raw", content) or "dir", expected location fragment | ("repair", skipped key))
LOCOMO_CASES = [
    ("not-utf8", _raw(b'[{"sample_id": "\xff\xfe"}]'), "byte"),
    ("deep-nesting", _raw("[" * 100_000 + "]" * 100_000), "nested too deeply"),
    ("directory", "dir", "directory"),
    ("empty-file", _raw(""), "line 1 column 1"),
    ("empty-list", lambda d: d.clear(), "<top level>"),
    ("top-level-object", _raw('{"sample_id": "s1"}'), "<top level>"),
    ("sample-not-object", _set([0], "s1"), "sample[0]"),
    ("sample-id-missing", _pop([0, "sample_id"]), "sample[0].sample_id"),
    ("sample-id-empty", _set([0, "sample_id"], ""), "sample[0].sample_id"),
    ("sample-id-int", _set([0, "sample_id"], 7), "sample[0].sample_id"),
    ("sample-id-10MB", _set([0, "sample_id"], HUGE), "sample[0].sample_id"),
    ("sample-id-duplicate", _dup_first, "sample[1].sample_id"),
    ("conversation-missing", _pop([0, "conversation"]), ".conversation"),
    ("conversation-list", _set([0, "conversation"], []), ".conversation"),
    ("speaker-missing", _pop([0, *C, "speaker_a"]), "conversation.speaker_a"),
    ("speakers-equal", _set([0, *C, "speaker_b"], "Ann"), "conversation.speaker_b"),
    ("session-is-object", _set([0, *C, "session_2"], {"0": {}}), "conversation.session_2"),
    ("all-sessions-empty", lambda d: d[0]["conversation"].update(session_1=[], session_2=[]), ".conversation"),
    ("turn-not-object", _set([0, *C, "session_1", 0], "Hi"), "session_1[0]"),
    ("dia-id-duplicate", _set([0, *C, "session_1", 1, "dia_id"], "D1:1"), "session_1[1].dia_id"),
    ("dia-id-wrong-session", _set([0, *C, "session_2", 0, "dia_id"], "D1:9"), "session_2[0].dia_id"),
    ("dia-id-malformed", _set([0, *C, "session_1", 0, "dia_id"], "D1-1"), "session_1[0].dia_id"),
    ("dia-id-10MB", _set([0, *C, "session_1", 0, "dia_id"], HUGE), "session_1[0].dia_id"),
    ("turn-third-speaker", _set([0, *C, "session_1", 0, "speaker"], "Mallory"), "session_1[0].speaker"),
    ("turn-text-list", _set([0, *C, "session_1", 0, "text"], ["Hi"]), "session_1[0].text"),
    ("turn-text-10MB", _set([0, *C, "session_1", 0, "text"], HUGE), "session_1[0].text"),
    ("date-10MB", _set([0, *C, "session_1_date_time"], HUGE), "session_1_date_time"),
    ("date-int", _set([0, *C, "session_1_date_time"], 20230508), "session_1_date_time"),
    ("date-garbage", _set([0, *C, "session_1_date_time"], "soon"), "session_1_date_time"),
    ("category-true", _set([0, "qa", 0, "category"], True), "qa[0].category"),
    ("category-string", _set([0, "qa", 0, "category"], "2"), "qa[0].category"),
    ("category-float", _set([0, "qa", 0, "category"], 2.0), "qa[0].category"),
    ("answer-nan", "nan", "qa[0].answer"),
    ("answer-infinity", "inf", "qa[0].answer"),
    ("answer-object", _set([0, "qa", 0, "answer"], {"text": "2022"}), "qa[0].answer"),
    ("answer-bool", _set([0, "qa", 0, "answer"], False), "qa[0].answer"),
    ("answer-empty", _set([0, "qa", 0, "answer"], ""), "qa[0].answer"),
    ("adversarial-answer-list", _set([0, "qa", 1, "adversarial_answer"], ["yes"]), "qa[1].adversarial_answer"),
    ("question-object", _set([0, "qa", 0, "question"], {"q": "Year?"}), "qa[0].question"),
    ("question-empty", _set([0, "qa", 0, "question"], "  "), "qa[0].question"),
    ("evidence-int", _set([0, "qa", 0, "evidence"], 3), "qa[0].evidence"),
    ("evidence-list-of-ints", _set([0, "qa", 0, "evidence"], [1, 2]), "qa[0].evidence[0]"),
    ("evidence-object", _set([0, "qa", 0, "evidence"], {"D1:1": True}), "qa[0].evidence"),
    ("qa-item-not-object", _set([0, "qa", 0], "Year?"), "qa[0]"),
    ("qa-not-list", _set([0, "qa"], {"0": {}}), ".qa"),
    ("empty-session", _set([0, *C, "session_2"], []), ("repair", "empty_sessions_dropped")),
    ("caption-object", _set([0, *C, "session_1", 1, "blip_caption"], {"a": 1}),
     ("repair", "non_string_turn_extras_dropped")),
    ("evidence-bad-parts", _set([0, "qa", 0, "evidence"], ["D1:1; D", "x"]),
     ("repair", "malformed_evidence_parts_dropped")),
    ("evidence-unknown-turn", _set([0, "qa", 0, "evidence"], ["D9:9"]), ("repair", "evidence_ids_not_in_conversation")),
]

L = ("haystack_sessions",)
LME_CASES = [
    ("lme-not-utf8", _raw(b'[{"question_id": "\xc3\x28"}]'), "byte"),
    ("lme-deep-nesting", _raw('{"a":' * 100_000 + "1" + "}" * 100_000), "nested too deeply"),
    ("lme-directory", "dir", "directory"),
    ("lme-empty-list", lambda d: d.clear(), "<top level>"),
    ("lme-item-not-object", _set([0], ["q1"]), "item[0]"),
    ("lme-question-id-null", _set([0, "question_id"], None), "item[0].question_id"),
    ("lme-question-id-empty", _set([0, "question_id"], ""), "item[0].question_id"),
    ("lme-question-id-object", _set([0, "question_id"], {"id": "q1"}), "item[0].question_id"),
    ("lme-question-id-10MB", _set([0, "question_id"], HUGE), "item[0].question_id"),
    ("lme-question-id-duplicate", _dup_first, "item[1].question_id"),
    ("lme-field-missing", _pop([0, "question_date"]), "question_date"),
    ("lme-type-unknown", _set([0, "question_type"], "trivia"), "question_type"),
    ("lme-type-object", _set([0, "question_type"], {"t": 1}), "question_type"),
    ("lme-question-object", _set([0, "question"], {"text": "Where?"}), "(q1).question"),
    ("lme-answer-nan", "lme-nan", "(q1).answer"),
    ("lme-answer-list", _set([0, "answer"], ["Geneva"]), "(q1).answer"),
    ("lme-answer-null", _set([0, "answer"], None), "(q1).answer"),
    ("lme-question-date-bad", _set([0, "question_date"], "28 May"), "question_date"),
    ("lme-haystack-date-bad", _set([0, "haystack_dates", 1], "2023-05-01"), "haystack_dates[1]"),
    ("lme-haystack-date-int", _set([0, "haystack_dates", 0], 20230520), "haystack_dates[0]"),
    ("lme-dates-not-list", _set([0, "haystack_dates"], "2023/05/20 (Sat) 10:00"), "haystack_dates"),
    ("lme-ids-not-list", _set([0, "haystack_session_ids"], 5), "haystack_session_ids"),
    ("lme-session-id-object", _set([0, "haystack_session_ids", 0], {"id": "b"}), "haystack_session_ids[0]"),
    ("lme-session-id-bool", _set([0, "haystack_session_ids", 0], True), "haystack_session_ids[0]"),
    ("lme-lengths-differ", _set([0, "haystack_dates"], ["2023/05/20 (Sat) 10:00"]), "haystack_sessions"),
    ("lme-session-not-list", _set([0, *L, 1], {"role": "user"}), "haystack_sessions[1]"),
    ("lme-turn-no-role", _pop([0, *L, 0, 0, "role"]), "haystack_sessions[0][0].role"),
    ("lme-turn-content-int", _set([0, *L, 0, 1, "content"], 42), "haystack_sessions[0][1].content"),
    ("lme-turn-content-10MB", _set([0, *L, 0, 1, "content"], HUGE), "haystack_sessions[0][1].content"),
    ("lme-has-answer-string", _set([0, *L, 0, 0, "has_answer"], "false"), "haystack_sessions[0][0].has_answer"),
    ("lme-answer-sessions-not-list", _set([0, "answer_session_ids"], "answer_b"), "answer_session_ids"),
    ("lme-all-sessions-empty", _set([0, *L], [[], []]), "haystack_sessions"),
    ("lme-empty-session", _set([0, *L, 1], []), ("repair", "empty_sessions_dropped")),
    ("lme-duplicate-session-id", _set([0, "haystack_session_ids", 1], "answer_b"),
     ("repair", "duplicate_session_ids_renamed")),
    ("lme-answer-session-unknown", _set([0, "answer_session_ids"], ["answer_b", "nope"]),
     ("repair", "answer_session_ids_not_in_haystack")),
]


def write_case(tmp_path: Path, base: list, mutate, name: str) -> Path:
    """The malformed file of one case (its name carries the case id, so the error can name it)."""
    path = tmp_path / f"{name}.json"
    if mutate == "dir":
        path.mkdir()
        return path
    if isinstance(mutate, tuple) and mutate[0] == "raw":
        content = mutate[1]
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return path
    data = copy.deepcopy(base)
    if mutate in ("nan", "inf", "lme-nan"):  # JSON that Python accepts: NaN / Infinity literals
        text = json.dumps(data).replace('"answer": 2022', '"answer": ' + ("Infinity" if mutate == "inf" else "NaN"))
        text = text.replace('"answer": "Geneva"', '"answer": NaN')
        path.write_text(text)
        return path
    mutate(data)
    path.write_text(json.dumps(data))
    return path


def run_case(loader, path: Path):
    """``("error", message)`` / ``("ok", dataset)`` for a case; anything else propagates (a crash)."""
    try:
        return "ok", loader(path)
    except DatasetError as exc:
        return "error", exc


ALL_CASES = ([(load_locomo, [locomo_sample()], c) for c in LOCOMO_CASES]
             + [(load_longmemeval, [lme_item()], c) for c in LME_CASES])


def test_the_base_records_are_valid(tmp_path):
    ds = load_locomo(write_case(tmp_path, [locomo_sample()], lambda d: None, "locomo"))
    assert len(ds) == 1 and len(ds.questions) == 2 and ds.skipped == {"category5_without_answer": 1}
    ds = load_longmemeval(write_case(tmp_path, [lme_item()], lambda d: None, "lme"))
    assert len(ds) == 1 and ds.skipped == {}


@pytest.mark.parametrize("loader,base,case", ALL_CASES, ids=[c[2][0] for c in ALL_CASES])
def test_malformed_dataset(tmp_path, loader, base, case):
    name, mutate, expect = case
    path = write_case(tmp_path, base, mutate, name)
    kind, value = run_case(loader, path)
    if isinstance(expect, tuple):  # a documented repair, counted
        assert kind == "ok", f"expected a repair, got {value}"
        assert value.skipped.get(expect[1], 0) >= 1, value.skipped
        return
    assert kind == "error", f"accepted silently: {value.skipped if kind == 'ok' else value}"
    message = str(value)
    assert message.startswith(str(path)) and name in message  # the file
    assert expect in message, message  # the record / field
    assert len(message) < 600  # a 10 MB value is never echoed back


def test_duplicate_sample_ids_no_longer_merge_report_rows(tmp_path):
    """The old failure: two samples with one id gave colliding QA ids (10 result lines -> 5 rows)."""
    data = [locomo_sample(), locomo_sample()]
    with pytest.raises(DatasetError, match=r"sample\[1\].sample_id.*duplicate"):
        load_locomo(write_case(tmp_path, data, lambda d: None, "dups"))


def test_empty_session_repair_keeps_the_rest(tmp_path):
    data = [locomo_sample()]
    data[0]["conversation"]["session_2"] = []
    data[0]["qa"][1]["evidence"] = []
    ds = load_locomo(write_case(tmp_path, data, lambda d: None, "empty"))
    assert [s.id for s in ds[0].sessions] == ["S1"] and ds.skipped["empty_sessions_dropped"] == 1


def test_special_token_text_loads_and_counts(tmp_path):
    from workbench.llm.tokens import count_tokens

    data = [locomo_sample()]
    data[0]["conversation"]["session_1"][0]["text"] = "<|endoftext|> hi"
    conv = load_locomo(write_case(tmp_path, data, lambda d: None, "special"))[0]
    assert count_tokens(conv.turns[0].text) > 0  # counted as text, not refused as a special token


# ================================================================================================
# JSONL: the shared tolerant reader / writers
# ================================================================================================
def test_reader_skips_and_reports_every_kind_of_bad_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n\xff\xfe\n[1, 2]\n{bad\n' + b"[" * 5000 + b"\n\n" + b'{"a": 2}\r\n{"a": 3')
    got = read_jsonl(p)
    assert [r["a"] for r in got.rows] == [1, 2]
    assert [(b.line, b.reason.split(" ")[0]) for b in got.bad] == [
        (2, "not"), (3, "a"), (4, "invalid"), (5, "JSON"), (8, "torn")]
    assert all(str(b).startswith(f"{p}:{b.line}: ") for b in got.bad) and got.torn_tail


def test_append_after_a_torn_end_starts_a_fresh_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n{"a": 2, "b')
    append_line(p, json.dumps({"a": 3}))
    got = read_jsonl(p)
    assert [r["a"] for r in got.rows] == [1, 3] and [b.line for b in got.bad] == [2] and not got.torn_tail


def test_atomic_write_leaves_no_temp_and_replaces(tmp_path):
    p = tmp_path / "m.json"
    p.write_text("old")
    inode = p.stat().st_ino
    write_text_atomic(p, '{"new": true}')
    assert read_json(p) == {"new": True} and p.stat().st_ino != inode
    assert [q.name for q in tmp_path.iterdir()] == ["m.json"]


@pytest.mark.parametrize("content,reason", [("{oops", "invalid JSON"), ("[1]", "expected a JSON dict"),
                                            (b"\xff", "not UTF-8")])
def test_damaged_whole_file_names_it(tmp_path, content, reason):
    p = tmp_path / "manifest.json"
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(DamagedFile, match=reason) as err:
        read_json(p)
    assert str(p) in str(err.value)


def test_results_store_and_run_reader_share_the_tolerant_reader(tmp_path):
    from workbench.eval.store import ResultsStore

    run = tmp_path / "run"
    run.mkdir()
    row = {"method": "m", "params_hash": "h", "dataset": "d", "qa_id": "q1", "conv_id": "c"}
    (run / "results.jsonl").write_text(json.dumps(row) + "\n" + '{"method": "m", "params_ha')  # crash mid-write
    store = ResultsStore(run / "results.jsonl")
    assert len(store) == 1 and store.bad_lines == [2]
    store.append({**row, "qa_id": "q2"})
    rd = RunDir(run)
    assert [r["qa_id"] for r in rd.results()] == ["q1", "q2"]  # the app's reader no longer rejects the file
    assert len(rd.problems) == 1 and rd.problems[0].startswith(f"{run / 'results.jsonl'}:2: ")


def test_damaged_manifest_is_reported_not_reset(tmp_path):
    from workbench.eval.manifest import update_run_manifest as _update_run_manifest

    (tmp_path / "manifest.json").write_text('{"evaluations": [{"method": "x"}')  # torn
    with pytest.raises(DamagedFile):
        RunDir(tmp_path).manifest()
    _update_run_manifest(tmp_path, {"method": "y"})
    assert (tmp_path / "manifest.json.damaged").read_text() == '{"evaluations": [{"method": "x"}'
    assert read_json(tmp_path / "manifest.json")["evaluations"][0]["method"] == "y"


# ================================================================================================
# Cassettes
# ================================================================================================
def _entry(i: int, model: str = "m") -> dict:
    messages = [{"role": "user", "content": f"question {i}"}]
    return {"key": cache_key(model, messages, None, 0.0, None, None), "role": "r", "model": model,
            "messages": messages, "schema": None, "temperature": 0.0, "seed": None, "max_tokens": None,
            "reply": f"answer {i}", "prompt_tokens": 5, "completion_tokens": 2}


def _line(e) -> bytes:
    return (json.dumps(e, sort_keys=True) + "\n").encode()


def _replay(path: Path, i: int) -> str:
    llm = CachedLLM.replay(path, model="m")
    return llm.complete(f"question {i}").text


BAD_CASSETTE_LINES = [
    ("garbage", b"this is not json\n", "invalid JSON"),
    ("non-utf8", b'{"key": "\xff\xfe"}\n', "not UTF-8"),
    ("array", b"[1, 2, 3]\n", "not an object"),
    ("deep", b"[" * 50_000 + b"\n", "nested too deeply"),
    ("no-reply", _line({k: v for k, v in _entry(9).items() if k != "reply"}), "'reply'"),
    ("tokens-negative", _line({**_entry(9), "prompt_tokens": -1}), "prompt_tokens"),
    ("tokens-string", _line({**_entry(9), "completion_tokens": "2"}), "completion_tokens"),
    ("key-int", _line({**_entry(9), "key": 5}), "'key'"),
]


@pytest.mark.parametrize("name,bad,reason", BAD_CASSETTE_LINES, ids=[c[0] for c in BAD_CASSETTE_LINES])
def test_cassette_skips_a_bad_line_and_reports_file_line(tmp_path, name, bad, reason):
    p = tmp_path / "c.jsonl"
    p.write_bytes(_line(_entry(1)) + bad + _line(_entry(2)))
    with pytest.warns(UserWarning, match="cassette: skipped 1"):
        llm = CachedLLM.replay(p, model="m")
    assert [str(b) for b in llm.cassette.bad_lines] == [f"{p}:2: " + llm.cassette.bad_lines[0].reason]
    assert reason in llm.cassette.bad_lines[0].reason
    assert llm.complete("question 1").text == "answer 1" and llm.complete("question 2").text == "answer 2"


def test_cassette_torn_end_then_recording_starts_a_fresh_line(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(_line(_entry(1)) + _line(_entry(2))[:40])  # crash mid-append
    with pytest.warns(UserWarning, match="torn final line"):
        llm = CachedLLM(ScriptedLLM(["fresh"], model="m"), p)
    assert llm.complete("question 1").text == "answer 1"
    assert llm.complete("question 3").text == "fresh"  # recorded after the fragment
    lines = p.read_bytes().split(b"\n")
    assert lines[1] == _line(_entry(2))[:40] and json.loads(lines[2])["reply"] == "fresh"
    again = check_cassette(p)
    assert again["entries"] == 2 and again["bad_lines"] == [f"{p}:2: invalid JSON" + again["bad_lines"][0][len(
        f"{p}:2: invalid JSON"):]]
    with pytest.warns(UserWarning):
        assert _replay(p, 3) == "fresh"


def test_cassette_crlf_and_blank_lines_are_fine(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(_line(_entry(1)).replace(b"\n", b"\r\n") + b"\n\n" + _line(_entry(2)))
    assert check_cassette(p)["bad_lines"] == [] and _replay(p, 1) == "answer 1"


def _cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """``workbench ...`` in a subprocess, run from a scratch folder (a command that succeeds by
    mistake writes its default ``runs/demo`` there, not into the checkout)."""
    import tempfile

    cwd = cwd or tempfile.mkdtemp(prefix="wb-cli-")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_cassette_check_and_repair_cli(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(_line(_entry(1)) + b"garbage\n" + _line({**_entry(2), "reply": "old"}) + _line(_entry(2))
                  + b'{"key": "torn')
    out = _cli("cassette", "check", str(p))
    assert out.returncode == 1 and f"{p}:2: invalid JSON" in out.stdout and f"{p}:5: torn" in out.stdout
    assert "3 good entries (2 keys), 2 bad lines -> damaged" in out.stdout
    inode = p.stat().st_ino
    out = _cli("cassette", "repair", str(p))
    assert out.returncode == 0 and "with 2 entries (2 bad lines dropped)" in out.stdout
    left = sorted(q.name for q in tmp_path.iterdir() if q.suffix != ".lock")  # filelock's sidecar stays
    assert p.stat().st_ino != inode and left == ["c.jsonl"]  # atomic rename
    assert _cli("cassette", "check", str(p)).returncode == 0
    assert _replay(p, 2) == "answer 2"  # the last entry per key was kept


def test_cassette_cli_missing_file_is_one_line(tmp_path):
    out = _cli("cassette", "check", str(tmp_path / "nope.jsonl"))
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0 and "cassette not found" in out.stderr


def test_committed_cassettes_are_clean():
    for p in sorted((ROOT / "sample_data" / "cassettes").glob("*.jsonl")):
        assert check_cassette(p)["bad_lines"] == [], p


# ================================================================================================
# Paths: one id -> file-name mapping
# ================================================================================================
@pytest.mark.parametrize("ident", ["..", ".", "", "../../etc/passwd", "a/b", "a\\b", ".hidden", "conv-26",
                                   "sample 1", "ü/ñ", "<script>", "x" * 1000, "%2F", "\x00nul"])
def test_safe_name_stays_inside_and_round_trips(tmp_path, ident):
    name = safe_name(ident)
    assert name not in ("", ".", "..") and "/" not in name and "\\" not in name and "\x00" not in name
    assert not name.startswith(".") and len(name.encode()) <= 200
    assert (tmp_path / name).resolve().parent == tmp_path.resolve()
    if len(ident) < 100:
        assert id_from_name(name) == ident


def test_safe_name_is_injective_on_lookalikes():
    idents = ["a b", "a_b", "a%20b", "a/b", "a%2Fb", "..", "%2E%2E", "", "%00empty"]
    assert len({safe_name(i) for i in idents}) == len(idents)


def test_run_dir_lists_real_ids_and_finds_them(tmp_path):
    from workbench.data import load_sample
    from workbench.rundir import save_conversation

    conv = load_sample("tiny_conversation")[0]
    odd = type(conv)("odd/../id?", conv.speakers, conv.sessions, conv.qa, conv.source)
    save_conversation(tmp_path, odd)
    rd = RunDir(tmp_path)
    assert rd.conversation_ids() == ["odd/../id?"] and rd.conversation("odd/../id?").id == "odd/../id?"
    assert sorted(p.name for p in (tmp_path / "conversations").iterdir()) == [f"{safe_name('odd/../id?')}.json"]
    assert rd.memory_dir("../..", "..").resolve().is_relative_to((tmp_path / "memories").resolve())


# ================================================================================================
# Secrets in URLs
# ================================================================================================
def test_openai_chat_repr_and_errors_redact_credentials():
    from workbench.llm.openai_chat import OpenAIChat
    from workbench.llm.redact import redact_url

    url = "https://bob:hunter2@llm.example/v1?api_key=sk-secret&x=1&token=t0k"
    assert redact_url(url) == "https://bob:***@llm.example/v1?api_key=***&x=1&token=***"

    class Rejecting:
        class chat:
            class completions:
                @staticmethod
                def create(**kw):
                    import httpx
                    import openai

                    req = httpx.Request("POST", url)
                    raise openai.BadRequestError(f"bad format at {url}", response=httpx.Response(400, request=req),
                                                 body=None)

    llm = OpenAIChat("m", base_url=url, client=Rejecting(), structured="json_schema")
    assert "hunter2" not in repr(llm) and "sk-secret" not in repr(llm) and "bob:***@" in repr(llm)
    from workbench.llm import LLMError

    with pytest.raises(LLMError) as err:
        llm.complete("hi", schema={"type": "object"})
    assert "hunter2" not in str(err.value) and "sk-secret" not in str(err.value) and "t0k" not in str(err.value)


def test_cli_error_with_a_url_is_redacted():
    out = _cli("ask", "q", "--llm", "openai:m@https://u:pw@host/v1?token=abc", "--method", "nope", "--embedder", "hash")
    assert out.returncode == 2 and "pw@" not in out.stderr and "abc" not in out.stderr


# ================================================================================================
# CLI: one line per user error, tracebacks only with --debug
# ================================================================================================
def test_cli_dataset_error_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[{oops")
    out = _cli("build", "--data", f"locomo:{bad}", "--method", "naive_rag", "--embedder", "hash")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [f"workbench: error: {bad}: line 1 column 3: invalid JSON: "
                                               "Expecting property name enclosed in double quotes"]
    debug = _cli("--debug", "build", "--data", f"locomo:{bad}", "--embedder", "hash")
    assert debug.returncode != 0 and "Traceback" in debug.stderr


NO_SERVER = "openai:m@http://127.0.0.1:9/v1"  # a client is built, no call is made before the error


@pytest.mark.parametrize("args,fragment", [
    (["build", "--method", "no_such_method", "--embedder", "hash", "--data", "tiny", "--llm", NO_SERVER],
     "no_such_method"),
    (["build", "--data", "csv:/tmp/x", "--embedder", "hash", "--llm", NO_SERVER], "unknown data spec"),
    (["build", "--embedder", "word2vec", "--data", "tiny", "--llm", NO_SERVER], "unknown embedder"),
    (["build", "--data", "tiny", "--embedder", "hash", "--llm", "bogus:x"], "unknown LLM spec"),
    (["build", "--data", "tiny", "--embedder", "hash", "--llm", NO_SERVER, "--param", "top_k"], "key=value"),
    (["ask", "q", "--run", "/nonexistent/run", "--embedder", "hash", "--llm", NO_SERVER], "not found"),
    (["ask", "q", "--embedder", "hash", "--llm", "replay:/nonexistent.jsonl"], "cassette not found"),
    (["report", "/nonexistent/results.jsonl"], "not found"),
])
def test_cli_user_errors_are_one_line(args, fragment):
    out = _cli(*args)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and fragment in lines[0], out.stderr


def test_app_refuses_a_public_address_without_allow_remote(capsys):
    pytest.importorskip("panel")
    from widgets.app import check_address, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    with pytest.raises(SystemExit, match="--allow-remote"):
        check_address("0.0.0.0", allow_remote=False)
    check_address("0.0.0.0", allow_remote=True)
    assert "WARNING" in capsys.readouterr().err and "--basic-auth" in (ROOT / "README.md").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "panel serve widgets/app.py --auth-module widgets/host_auth.py --address 127.0.0.1" in readme


# ================================================================================================
# Saved memories: the pickle is only loaded when this machine signed it
# ================================================================================================
@pytest.fixture
def trust_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_load_refuses_a_state_from_another_machine(tmp_path, trust_home, monkeypatch, tiny_conv, hash_embedder):
    from workbench.methods import NaiveRAG
    from workbench.trust import UntrustedStateError

    m = NaiveRAG(llm=ScriptedLLM([], default="ok"), embedder=hash_embedder).ingest(tiny_conv)
    m.save(tmp_path / "mem")
    assert (trust_home / "memory-workbench" / "trust.key").stat().st_mode & 0o777 == 0o600
    again = NaiveRAG.load(tmp_path / "mem", llm=m.llm, embedder=hash_embedder)  # saved here: loads
    assert len(again.memories()) == len(m.memories())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-machine"))
    with pytest.raises(UntrustedStateError, match="trust=True"):
        NaiveRAG.load(tmp_path / "mem", llm=m.llm, embedder=hash_embedder)
    assert len(NaiveRAG.load(tmp_path / "mem", llm=m.llm, embedder=hash_embedder, trust=True).memories())
    monkeypatch.setenv("XDG_CACHE_HOME", str(trust_home))
    (tmp_path / "mem" / "state.pkl").write_bytes((tmp_path / "mem" / "state.pkl").read_bytes() + b"\x00")
    with pytest.raises(UntrustedStateError, match="changed"):  # tampered after saving
        NaiveRAG.load(tmp_path / "mem", llm=m.llm, embedder=hash_embedder)


# ================================================================================================
# Failures reach the result rows
# ================================================================================================
def test_failures_and_fallbacks_are_on_the_rows(sample_data, hash_embedder):
    from workbench.eval import evaluate
    from workbench.eval.report import failure_counts, summary_table
    from workbench.llm import LLMError
    from workbench.methods import EagerFacts

    def extract(messages):
        raise LLMError("extractor down")

    llm = ScriptedLLM({"eager_facts.extract": extract, "eager_facts.answer": ""}, default="auto")
    res = evaluate(EagerFacts(llm=llm, embedder=hash_embedder), sample_data, conversations=0, questions=2,
                   progress=False)
    for row in res:
        kinds = [f["kind"] for f in row.failures]
        assert kinds[0] == "construction" and row.failures[0]["method_failures"] > 0
        assert row.failures[0]["llm_errors"] == row.failures[0]["method_failures"]
        assert "empty_reply" in kinds and "empty_answer" in kinds and row.error is None
    counts = failure_counts(res.rows).set_index("method").loc["eager_facts"]
    assert counts["flagged_rows"] == 2 and counts["empty_answer"] == 2 and counts["construction"] == 2
    table = summary_table(res.to_frame())
    assert set(table["flagged"]) == {2}


def test_clean_rows_carry_no_failures(sample_data, hash_embedder):
    from workbench.eval import evaluate
    from workbench.methods import NaiveRAG

    res = evaluate(NaiveRAG(llm=ScriptedLLM([], default="Paris"), embedder=hash_embedder), sample_data,
                   conversations=0, questions=2, progress=False)
    assert [r.failures for r in res] == [[], []]


# ================================================================================================
# Token counting
# ================================================================================================
def test_token_counting_long_runs_and_the_limit():
    from workbench.llm.tokens import MAX_COUNT_CHARS, TokenCountError, count_tokens

    assert count_tokens("hello world") == 2
    assert 0 < count_tokens("q" * 50_000) <= 50_000  # one 50k-character pre-token (was quadratic)
    with pytest.raises(TokenCountError, match="too long"):
        count_tokens("x" * (MAX_COUNT_CHARS + 1))
    assert count_tokens("ab " * 10, limit=None) == count_tokens("ab " * 10)


# ================================================================================================
# The hostile run directory in the app (built in-process; the browser test runs it for real)
# ================================================================================================
@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    pytest.importorskip("panel")
    from scripts.make_demo_run import make_demo_run
    from workbench.testing.hostile import add_hostile_parts

    run = make_demo_run(tmp_path_factory.mktemp("run") / "hostile", n_conversations=1, max_questions=2,
                        inject_html=True)
    return run, add_hostile_parts(run)


def _all_html(app) -> str:
    """Every HTML string the app renders, link-aware panes (structure cards among them) included."""
    import panel as pn

    from widgets.panel_parts import LinkHTML

    panes = app.__panel__().select(pn.pane.HTML) + app.__panel__().select(LinkHTML)
    return "\n".join(str(p.object) for p in panes)


def test_hostile_run_renders_escaped(hostile_run):
    import panel as pn

    from widgets import app as appmod
    from widgets.panel_parts import LinkHTML
    from workbench.testing.hostile import PAYLOADS

    run, added = hostile_run
    app = appmod.build_app(run)
    store = app.store
    assert added["method"] in store.methods and added["conv_id"] in store.param.conv_id.objects
    # the torn results line and the garbage lines are reported, not fatal
    assert any(":" in e and "results.jsonl" in e and "torn" in e for e in store.errors), store.errors
    store.conv_id = added["conv_id"]
    mem = app.views["Memories"]
    mem.method.value = added["method"]
    cols = list(mem.table.value.columns)
    assert added["key"] not in cols and any("&lt;img" in c for c in cols)  # header escaped
    assert any("memories.jsonl" in e and "invalid JSON" in e for e in store.errors)
    structures = app.views["Structures"]
    headings = structures.headings()  # escaped, as shown
    assert all("<" not in h for h in headings) and any("&lt;img" in h for h in headings)
    cards_html = {}
    for method in structures.method.values:  # one method's card at a time: pick each (the picker shows titles)
        structures.method.value = method
        card = structures.panel.objects[-1]  # after the tab's lead line and the picker
        panes = card.select(pn.pane.HTML) + card.select(LinkHTML)  # a card with jump links is link-aware
        cards_html[method] = "".join(str(p.object) for p in panes)
    assert "&lt;img src=&quot;/pwned-img&quot;" in cards_html["ama"] and "Judge verdicts:" in cards_html["ama"]
    assert "summary failed" in cards_html["hymem"] and "name an event that is not stored" in cards_html["hymem"]
    traces = app.views["Traces"]
    assert traces.question.options and added["method"] in traces.current  # odd ids work in Traces
    for tab in app.views.values():
        if hasattr(tab, "load"):
            tab.load()
    html = _all_html(app) + "".join(headings)
    for payload in PAYLOADS + (added["method"], added["key"]):
        assert payload not in html, payload
    assert "&lt;img src=&quot;/pwned-img&quot;" in html
    header = app.header_html()
    assert "<script>" not in header and "&lt;script&gt;" in header
    assert isinstance(app.__panel__(), pn.Column)


def test_long_text_is_capped_with_an_expand_control(hostile_run):
    from widgets import app as appmod
    from widgets.html import pre
    from workbench.testing.hostile import LONG_TURN_CHARS

    run, added = hostile_run
    app = appmod.build_app(run)
    app.store.conv_id = added["conv_id"]
    mem = app.views["Memories"]
    mem.method.value = added["method"]
    longest = max(len(t) for t in mem.table.value["text"])
    assert longest <= appmod.CELL_LIMIT + 40  # the table cell is cut
    mem.table.selection = [list(mem.results["id"]).index("m-long")]
    mem.show_selected()
    detail = mem.detail.object
    assert "<details" in detail and f"{LONG_TURN_CHARS:,} characters" in detail  # full text one click away
    shown = pre("y" * LONG_TURN_CHARS)
    assert shown.index("<details") < 10_000  # what is open before the control is short


def test_long_event_diffs_are_folded_not_diffed_word_by_word():
    pytest.importorskip("panel")
    from widgets.html import diff_html

    short = diff_html("a cat", "a dog")
    assert "<del>cat</del>" in short and "<ins>dog</ins>" in short
    huge = diff_html("word " * 30_000, "word " * 30_000 + "<script>x</script>")
    assert huge.count("<details") == 2 and "<script>" not in huge


def test_recording_keeps_each_call_time_and_costs_sum_it_per_method(tmp_path):
    import time as _time

    from workbench.llm.cache import cassette_costs
    from workbench.llm.fake import ScriptedLLM

    class Slow(ScriptedLLM):
        def _generate(self, messages, **kw):
            _time.sleep(0.05)
            return super()._generate(messages, **kw)

    p = tmp_path / "c.jsonl"
    p.write_bytes(_line({**_entry(9), "role": "ama.construct"}))  # recorded before call times were kept
    llm = CachedLLM(Slow({"ama.judge": "Pass", "judge.locomo": "CORRECT"}, model="m"), p)
    llm.complete("a conflict?", role="ama.judge")
    llm.complete("another conflict?", role="ama.judge.retry")
    llm.complete("is it right?", role="judge.locomo")
    rows = [json.loads(line) for line in p.read_text().splitlines()]
    assert [r.get("latency_s") is not None for r in rows] == [False, True, True, True]
    assert all(r["latency_s"] >= 0.05 for r in rows[1:])
    costs = cassette_costs(p)
    assert set(costs["by_role"]) == {"ama", "judge"} and costs["models"] == ["m"]
    ama, judge = costs["by_role"]["ama"], costs["by_role"]["judge"]
    assert ama["calls"] == 3 and ama["calls_without_latency"] == 1 and 0.1 <= ama["seconds"] < 5
    assert judge["calls"] == 1 and judge["calls_without_latency"] == 0 and judge["seconds"] >= 0.05
    replayed = CachedLLM.replay(p, model="m").complete("is it right?", role="judge.locomo")
    assert replayed.text == "CORRECT"  # replay as before
    out = _cli("cassette", "costs", str(p))
    assert out.returncode == 0 and "1 calls recorded without their time" in out.stdout and "judge" in out.stdout
