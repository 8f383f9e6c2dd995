"""What every session of a served app shares instead of recomputing: the mechanism census block is
computed once per content of the run, and again as soon as any file of the run changes."""
from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("panel")

from widgets import mechanisms_census as mc  # noqa: E402


@pytest.fixture
def run(tmp_path):
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path / "r", n_conversations=1, max_questions=2)


def test_the_census_block_is_computed_once_per_content_of_the_run(run, monkeypatch):
    calls = []
    real = mc.load_census
    monkeypatch.setattr(mc, "load_census", lambda r: calls.append(r) or real(r))
    mc._BLOCKS.clear()
    first = mc.census_block(run, links=True)
    assert mc.census_block(run, links=True) == first and len(calls) == 1  # a second session: shared
    mc.census_block(run, links=False)
    assert len(calls) == 2  # another rendering is its own entry
    census = run / "mechanisms.json"
    value = json.loads(census.read_text()) if census.exists() else None
    if value is not None:
        census.write_text(json.dumps(value) + " ")
    else:
        (run / "results.jsonl").write_text((run / "results.jsonl").read_text() + "\n")
    st = os.stat(run)
    os.utime(census if value is not None else run / "results.jsonl", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    mc.census_block(run, links=True)
    assert len(calls) == 3  # the run changed: computed again


def test_the_fingerprint_sees_added_and_removed_files(run):
    before = mc.run_fingerprint(run)
    (run / "extra.txt").write_text("x")
    assert mc.run_fingerprint(run) != before
    (run / "extra.txt").unlink()
    assert mc.run_fingerprint(run) == before


def test_run_files_are_parsed_once_per_content_and_each_reader_gets_rows_of_its_own(tmp_path, monkeypatch):
    import workbench.rundir as rundir_mod
    from workbench.rundir import RunDir

    (tmp_path / "results.jsonl").write_text('{"qa_id": "q1", "answer": {"text": "a"}}\n{ damaged\n')
    calls = []
    real = rundir_mod.read_jsonl_capped
    monkeypatch.setattr(rundir_mod, "read_jsonl_capped", lambda p: calls.append(p) or real(p))
    first, second = RunDir(tmp_path), RunDir(tmp_path)
    rows = first.results()
    rows[0]["answer"]["text"] = "changed by one view"
    again = second.results()
    assert len(calls) == 1 and again[0]["answer"]["text"] == "a"  # parsed once, not shared
    assert [p for p in second.problems if "results.jsonl:2" in p]  # the damaged line is said to every reader
    (tmp_path / "results.jsonl").write_text('{"qa_id": "q2"}\n')
    assert RunDir(tmp_path).results()[0]["qa_id"] == "q2" and len(calls) == 2  # a changed file is read again
