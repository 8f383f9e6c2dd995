"""One bounded, strict JSON reading path: a bad value is one skipped line (or a named damaged file), never a crash."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.jsonl import (MAX_DEPTH, DamagedFile, RefusedJson, dumps_line, loads_strict, nesting_depth, read_json,
                             read_jsonl)
from workbench.llm import CachedLLM
from workbench.llm.cache import cache_key, cassette_costs, check_cassette, repair_cassette
from workbench.rundir import RunDir

ROOT = Path(__file__).resolve().parents[1]


def entry(i: int, **extra) -> dict:
    messages = [{"role": "user", "content": f"ask {i}"}]
    return {"key": cache_key("m", messages, None, 0.0, None, None), "role": "probe.r", "model": "m",
            "messages": messages, "schema": None, "temperature": 0.0, "seed": None, "max_tokens": None,
            "reply": f"reply {i}", "prompt_tokens": 7, "completion_tokens": 3, **extra}


def line(row: dict) -> bytes:
    return (json.dumps(row, sort_keys=True) + "\n").encode()


def cli(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


# values json.loads accepts (or chokes on mid-parse) that no file of ours holds
REFUSED_VALUES = [
    ("6000-digit int", "1" * 6000, "out of range"),
    ("4400-digit negative int", "-" + "7" * 4400, "out of range"),
    ("int just past int64", str(2 ** 63), "out of range"),
    ("float overflowing to inf", "2.5e400", "out of range"),
    ("huge finite float", "3e19", "out of range"),
    ("-Infinity", "-Infinity", "-Infinity is not a JSON number"),
    ("NaN", "NaN", "NaN is not a JSON number"),
    ("lone high surrogate", '"ab\\ud834cd"', "lone surrogate"),
    ("lone low surrogate", '"\\udf06"', "lone surrogate"),
    ("deep list", "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "nested too deeply"),
    ("deep objects", '{"a":' * 30_000 + "1" + "}" * 30_000, "nested too deeply"),
]


@pytest.mark.parametrize("name,value,reason", REFUSED_VALUES, ids=[c[0] for c in REFUSED_VALUES])
def test_a_refused_value_is_one_bad_line_between_good_ones(tmp_path, name, value, reason):
    p = tmp_path / "rows.jsonl"
    p.write_bytes(b'{"n": 1}\n' + f'{{"n": 2, "v": {value}}}\n'.encode() + b'{"n": 3}\n')
    got = read_jsonl(p)
    assert [r["n"] for r in got.rows] == [1, 3]
    assert len(got.bad) == 1 and str(got.bad[0]).startswith(f"{p}:2: ") and reason in got.bad[0].reason
    assert len(str(got.bad[0])) < 300  # the reason quotes a few digits, not 6000


@pytest.mark.parametrize("text", ['{"s": "\\ud83d\\ude00"}', '{"s": "\\\\ud800"}', '{"n": 9223372036854775807}',
                                  '{"f": -1.5e-300}', '{"s": "[[[[[[{{{{{{' + "[" * 500 + '"}',
                                  "[" * MAX_DEPTH + "]" * MAX_DEPTH])
def test_values_within_bounds_still_read(text):
    loads_strict(text)


def test_nesting_depth_counts_levels_not_brackets():
    assert nesting_depth("[[]]" * 300, limit=10) == 2 and nesting_depth("{[]}" * 300, limit=10) == 2
    assert nesting_depth('[["]]]]"], {"k": "{{{{"}]' * 100, limit=10) == 2
    assert nesting_depth("[" * 1000 + "]" * 1000, limit=50) == 51  # stops just past the limit


def test_a_deep_whole_file_raises_one_line_naming_it(tmp_path):
    p = tmp_path / "manifest.json"
    p.write_text('{"evaluations": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(DamagedFile) as err:
        read_json(p)
    assert str(err.value) == f"{p}: JSON nested too deeply (more than {MAX_DEPTH} levels)"


def test_a_cassette_with_a_6000_digit_integer_replays_its_good_lines(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(line(entry(1)) + line(entry(2))[:-2] + b', "seed_extra": ' + b"9" * 6000 + b"}\n"
                  + line(entry(3)))
    with pytest.warns(UserWarning, match="skipped 1"):
        llm = CachedLLM.replay(p, model="m")
    assert llm.complete("ask 1").text == "reply 1" and llm.complete("ask 3").text == "reply 3"
    assert [b.line for b in llm.cassette.bad_lines] == [2]
    assert check_cassette(p)["bad_lines"] == [f"{p}:2: integer 999999999999...(6000 digits) out of range "
                                              f"(more than {2 ** 63 - 1} in size) at .seed_extra"]
    assert cassette_costs(p)["by_role"]["probe"]["calls"] == 2


def test_cassette_cli_check_costs_repair_report_the_bad_line(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(line(entry(1)) + line({**entry(2), "prompt_tokens": 10 ** 5000 // 10 ** 4990})
                  + b'{"key": "k", "completion_tokens": ' + b"5" * 5000 + b"}\n" + line(entry(3)))
    for action, code in (("check", 1), ("costs", 1), ("repair", 0)):
        out = cli("cassette", action, str(p))
        assert out.returncode == code and "Traceback" not in out.stderr, out.stderr
        assert f"{p}:3: integer 555555555555...(5000 digits) out of range" in out.stdout
        assert f"{p}:2: field 'prompt_tokens' is 10000000000, more than any one call can use" in out.stdout
    assert check_cassette(p)["bad_lines"] == [] and check_cassette(p)["entries"] == 2


@pytest.mark.parametrize("field,value", [("prompt_tokens", 10 ** 12), ("completion_tokens", 2 ** 62),
                                         ("latency_s", 1e18), ("latency_s", -3.0), ("latency_s", "12")])
def test_cassette_fields_out_of_their_range_are_refused(tmp_path, field, value):
    p = tmp_path / "c.jsonl"
    p.write_bytes(line(entry(1)) + line({**entry(2), field: value}))
    report = repair_cassette(p)
    assert report["kept"] == 1 and f"field '{field}'" in report["bad_lines"][0]


def test_results_row_with_minus_infinity_is_skipped_by_every_reader(tmp_path):
    from workbench.eval.store import ResultsStore

    run = tmp_path / "run"
    run.mkdir()
    row = {"method": "m", "params_hash": "h", "dataset": "d", "qa_id": "q1", "conv_id": "c", "f1": 0.5}
    (run / "results.jsonl").write_text(json.dumps(row) + "\n"
                                       + json.dumps({**row, "qa_id": "q2"})[:-1] + ', "latency_s": -Infinity}\n'
                                       + json.dumps({**row, "qa_id": "q3", "f1": 1.0}) + "\n")
    store = ResultsStore(run / "results.jsonl")
    assert len(store) == 2 and store.bad_lines == [2]
    rd = RunDir(run)
    assert [r["qa_id"] for r in rd.results()] == ["q1", "q3"]
    assert rd.problems == [f"{run / 'results.jsonl'}:2: -Infinity is not a JSON number at .latency_s"]


def test_what_we_write_we_can_read_back(tmp_path):
    text = dumps_line({"mean": float("nan"), "spread": [float("inf"), 1.0], "ok": 2})
    assert loads_strict(text) == {"mean": None, "spread": [None, 1.0], "ok": 2}


def test_refused_json_is_a_value_error():
    with pytest.raises(ValueError):
        loads_strict("[NaN]")
    assert issubclass(RefusedJson, ValueError)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path_factory.mktemp("run") / "demo", n_conversations=1, max_questions=2)


def test_report_and_mechanisms_name_a_50k_deep_manifest(demo_run, tmp_path):
    import shutil

    run = shutil.copytree(demo_run, tmp_path / "run")
    manifest = run / "manifest.json"
    manifest.write_text('{"evaluations": ' + "[" * 50_000 + "]" * 50_000 + "}")
    out = cli("report", str(run / "results.jsonl"))
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert f"warning: {manifest}: JSON nested too deeply (more than {MAX_DEPTH} levels)" in out.stderr
    out = cli("mechanisms", str(run))
    assert "Traceback" not in out.stderr and f"{manifest}: JSON nested too deeply" in out.stdout + out.stderr


def test_app_shows_a_results_line_with_infinity_as_a_problem(demo_run, tmp_path):
    pytest.importorskip("panel")
    import shutil

    from widgets import app as appmod

    run = shutil.copytree(demo_run, tmp_path / "run")
    results = run / "results.jsonl"
    rows = results.read_text().splitlines()
    rows.insert(1, rows[0][:-1] + ', "f1": Infinity}')
    rows.append(rows[0][:-1] + ', "latency_s": ' + "8" * 5000 + "}")
    results.write_text("\n".join(rows) + "\n")
    app = appmod.build_app(run)
    app.prewarm()
    problems = " ".join(str(p.object) for p in app.problems.objects)
    assert "results.jsonl:2: Infinity is not a JSON number" in problems
    assert f"results.jsonl:{len(rows)}: integer 888888888888...(5000 digits) out of range" in problems


def test_a_reply_that_takes_none_of_the_allowed_shapes_is_sent_back():
    """MemR3's paper schema requires the chosen action's text through ``oneOf``: a reply without it is a
    ``ParseError`` naming what is missing (so the client asks for a repair), not a silent skip."""
    import pytest

    from workbench.llm.errors import ParseError
    from workbench.llm.jsonparse import check_schema

    schema = {"type": "object", "required": ["action"],
              "properties": {"action": {"type": "string", "enum": ["retrieve", "answer"]},
                             "query": {"type": "string"}, "draft": {"type": "string"}},
              "oneOf": [{"properties": {"action": {"enum": ["retrieve"]}}, "required": ["query"]},
                        {"properties": {"action": {"enum": ["answer"]}}, "required": ["draft"]}]}
    check_schema({"action": "retrieve", "query": "when?"}, schema)
    with pytest.raises(ParseError, match="matches none of the 2 allowed shapes.*missing required key 'query'"):
        check_schema({"action": "retrieve"}, schema)
    check_schema("a gap", {"anyOf": [{"type": "string"}, {"type": "array"}]})
    with pytest.raises(ParseError, match="allowed shapes"):
        check_schema(3, {"anyOf": [{"type": "string"}, {"type": "array"}]})
