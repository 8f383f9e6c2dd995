"""Results and events files above the stated read limit (``workbench.jsonl.MAX_READ_BYTES`` / ``MAX_READ_ROWS``).

A 1 GB results file used to be read whole by ``workbench report`` and the app (minutes, gigabytes). Readers that
show a run now read line by line up to the limit, warn naming the file, its size and the limit, and say how many
lines they left out; resuming an evaluation still reads its store whole. The limits are lowered here (monkeypatched
constants) so that small files cross them; no test measures time or memory (benchmarks/bench_big_files.py does).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import workbench.jsonl as jsonl
from workbench.cli import main
from workbench.data import Dataset
from workbench.embed import HashEmbedder
from workbench.eval import ResultsStore, evaluate
from workbench.eval.mechanisms import census
from workbench.eval.store import load_rows
from workbench.jsonl import read_jsonl, read_jsonl_capped
from workbench.llm import ScriptedLLM
from workbench.methods import NaiveRAG
from workbench.rundir import RunDir


def _lines(path: Path, n: int, *, width: int = 80) -> int:
    """``n`` rows of ``width`` bytes or so each, all of one length; returns the bytes written."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"i": i, "pad": "x" * (width - 20 - len(str(i)))}) + "\n")
    return path.stat().st_size


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory, tiny_conv) -> Path:
    out = tmp_path_factory.mktemp("big") / "run"
    evaluate(NaiveRAG(llm=ScriptedLLM({}, default="auto"), embedder=HashEmbedder(64), top_k=3),
             Dataset("tiny", (tiny_conv,)), store=out / "results.jsonl", save_memories_dir=out, progress=False)
    return out


# -- the reader -----------------------------------------------------------------------------------------------
def test_a_capped_read_stops_at_the_byte_limit_and_says_what_it_left_out(tmp_path):
    path = tmp_path / "events.jsonl"
    size = _lines(path, 100)
    line = size // 100
    got = read_jsonl(path, max_bytes=10 * line + line // 2, max_rows=10 ** 6)
    assert [r["i"] for r in got.rows] == list(range(10))  # whole lines only, within the limit
    capped = got.capped
    assert capped is not None and (capped.rows_read, capped.lines_left, capped.bytes_left) == (10, 90, 90 * line)
    text = str(capped)
    assert str(path) in text and "above the read limit" in text and "only its first 10 rows were read" in text
    assert "90 lines" in text and "MAX_READ_BYTES" in text
    assert got.end_offset == 10 * line and got.next_line == 11  # where a later read would go on


def test_a_capped_read_stops_at_the_row_limit(tmp_path):
    path = tmp_path / "results.jsonl"
    _lines(path, 50)
    (tmp_path / "results.jsonl").open("a").write("not json\n")
    got = read_jsonl(path, max_bytes=10 ** 9, max_rows=20)
    assert len(got.rows) == 20 and got.capped.lines_left == 31 and "20 rows" in str(got.capped)


def test_a_file_within_the_limit_reads_as_before(tmp_path):
    """Under the limit nothing changes: every row, bad lines listed, a torn last line reported, no ``capped``."""
    path = tmp_path / "results.jsonl"
    _lines(path, 5)
    with open(path, "a", encoding="utf-8") as f:
        f.write("[1]\n{\"torn\": ")
    whole, capped = read_jsonl(path), read_jsonl(path, max_bytes=10 ** 6, max_rows=10 ** 6)
    for got in (whole, capped):
        assert len(got.rows) == 5 and got.capped is None and got.torn_tail
        assert [b.line for b in got.bad] == [6, 7] and "torn final line" in got.bad[1].reason
    assert read_jsonl(path, keep_tail=True).end_offset == path.stat().st_size - len('{"torn": ')


def test_a_capped_read_lists_a_bounded_number_of_bad_lines(tmp_path, monkeypatch):
    """A file of damaged lines reports the first ``MAX_LISTED_BAD`` one by one and counts the rest in one entry."""
    monkeypatch.setattr(jsonl, "MAX_LISTED_BAD", 3)
    path = tmp_path / "events.jsonl"
    path.write_text("garbage\n" * 10)
    got = read_jsonl(path, max_bytes=10 ** 6, max_rows=10)
    assert len(got.bad) == 4 and "and 7 more bad lines" in got.bad[-1].reason
    assert len(read_jsonl(path).bad) == 10  # an uncapped read lists every one, as before


def test_rows_read_share_their_keys(tmp_path):
    """Rows of one read share each key string (the memory a large file's rows take); values are unchanged."""
    path = tmp_path / "results.jsonl"
    _lines(path, 3)
    rows = read_jsonl(path).rows
    assert rows[0] == {"i": 0, "pad": "x" * 59}
    assert all(next(iter(r)) is next(iter(rows[0])) for r in rows)


# -- the readers of a run ---------------------------------------------------------------------------------------
def _lower(monkeypatch, saved_run: Path, rows: int) -> int:
    """Lower the byte limit to ``rows`` whole result rows of ``saved_run``; returns the file's row count."""
    lines = (saved_run / "results.jsonl").read_bytes().splitlines(keepends=True)
    monkeypatch.setattr(jsonl, "MAX_READ_BYTES", sum(len(x) for x in lines[:rows]))
    return len(lines)


def test_load_rows_and_the_census_warn_and_read_up_to_the_limit(saved_run, monkeypatch):
    total = _lower(monkeypatch, saved_run, 2)
    problems: list[str] = []
    rows = load_rows([saved_run / "results.jsonl"], problems)
    assert len(rows) == 2 and len(problems) == 1
    assert f"{saved_run / 'results.jsonl'} is" in problems[0] and f"{total - 2} lines" in problems[0]
    with pytest.warns(UserWarning, match="above the read limit"):
        assert len(load_rows([saved_run / "results.jsonl"])) == 2
    counted = census(saved_run)
    assert any("above the read limit" in p and "the counts cover those rows only" in p for p in counted["problems"])


def test_a_capped_store_is_never_appended_to(saved_run, monkeypatch):
    _lower(monkeypatch, saved_run, 2)
    store = ResultsStore(saved_run / "results.jsonl", capped=True)
    with pytest.raises(RuntimeError, match="read capped for display"):
        store.append(next(iter(store)))


def test_resuming_an_evaluation_reads_its_store_whole(saved_run, tmp_path, tiny_conv, monkeypatch):
    """The limit is for showing a run: the harness's store is read whole, so nothing done is answered again."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(saved_run, run)
    _lower(monkeypatch, run, 1)
    monkeypatch.setattr(jsonl, "MAX_READ_ROWS", 1)
    llm = ScriptedLLM({}, default="auto")
    again = evaluate(NaiveRAG(llm=llm, embedder=HashEmbedder(64), top_k=3), Dataset("tiny", (tiny_conv,)),
                     store=run / "results.jsonl", progress=False)
    assert again.manifest["resumed_rows"] == len(tiny_conv.qa) and not llm.requests


def test_the_app_store_shows_the_warning_and_the_rows_it_read(saved_run, monkeypatch):
    from widgets.run_store import RunStore

    _lower(monkeypatch, saved_run, 3)
    store = RunStore(saved_run)
    assert len(store.results()) == 3
    notes = [e for e in store.errors if "above the read limit" in e]
    assert len(notes) == 1 and notes[0].startswith(str(saved_run / "results.jsonl"))  # a warning, not "skipped"
    run = RunDir(saved_run)
    monkeypatch.setattr(jsonl, "MAX_READ_ROWS", 2)
    events = run.events("naive_rag", "tiny-1")
    assert len(events) == 2 and any("events.jsonl is" in p for p in run.problems)


def test_workbench_report_warns_and_still_reports(saved_run, tmp_path, monkeypatch, capsys):
    total = _lower(monkeypatch, saved_run, 2)
    out = tmp_path / "report.md"
    assert main(["report", str(saved_run), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    warning = next(line for line in err.splitlines() if "above the read limit" in line)
    assert warning.startswith(f"warning: {saved_run / 'results.jsonl'} is ")
    assert f"only its first 2 rows were read; {total - 2} lines" in warning
    assert "naive_rag" in out.read_text()


def test_the_limits_are_read_when_called(tmp_path, monkeypatch):
    """``read_jsonl_capped`` reads the module's constants at each call: one place states the limit."""
    path = tmp_path / "results.jsonl"
    _lines(path, 10)
    assert read_jsonl_capped(path).capped is None
    monkeypatch.setattr(jsonl, "MAX_READ_ROWS", 4)
    assert read_jsonl_capped(path).capped.rows_read == 4
