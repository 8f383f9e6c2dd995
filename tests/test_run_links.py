"""No read or write of a run directory follows a link out of it (app, report, census, eval store)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.jsonl import LeadsOutside, append_line, confined
from workbench.rundir import RunDir, check_links_stay_inside

ROOT = Path(__file__).resolve().parents[1]
ROW = {"method": "m", "params_hash": "h", "dataset": "d", "qa_id": "q1", "conv_id": "c", "f1": 1.0}
SECRET = "private-notes-do-not-show"

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder beside the run holding files a hostile run links to."""
    d = tmp_path / "elsewhere"
    d.mkdir()
    (d / "notes.jsonl").write_text(json.dumps({**ROW, "qa_id": SECRET, "text": SECRET}) + "\n")
    (d / "notes.json").write_text(json.dumps({"secret": SECRET}))
    return d


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path_factory.mktemp("run") / "demo", n_conversations=1, max_questions=2)


def test_confined_accepts_links_that_stay_inside_and_refuses_the_rest(tmp_path, outside):
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "sub" / "a.jsonl").write_text("")
    (run / "inner.jsonl").symlink_to(run / "sub" / "a.jsonl")
    (run / "out.jsonl").symlink_to(outside / "notes.jsonl")
    (run / "up").symlink_to(outside)
    (run / "loop").symlink_to(run / "loop")
    assert confined(run / "inner.jsonl", run) == run / "inner.jsonl"
    assert confined(run / "not-yet-there.jsonl", run)
    for p in (run / "out.jsonl", run / "up" / "notes.json", run / "sub" / ".." / ".." / "elsewhere"):
        with pytest.raises(LeadsOutside, match="outside"):
            confined(p, run)
    with pytest.raises(LeadsOutside):
        confined(run / "loop", run)
    linked_run = tmp_path / "run-link"
    linked_run.symlink_to(run)  # a run directory that is itself a link is fine
    assert confined(linked_run / "sub" / "a.jsonl", linked_run)


def test_run_reader_refuses_results_events_and_whole_files_linked_outside(demo_run, tmp_path, outside):
    run = shutil.copytree(demo_run, tmp_path / "run")
    rd = RunDir(run)
    method, conv = rd.methods()[0], rd.conversation_ids()[0]
    mem = rd.memory_dir(method, conv)
    for target, link in ((outside / "notes.jsonl", run / "results.jsonl"),
                         (outside / "notes.jsonl", mem / "events.jsonl"),
                         (outside / "notes.json", run / "manifest.json"),
                         (outside / "notes.json", mem / "structures.json")):
        link.unlink()
        link.symlink_to(target)
    rd = RunDir(run)
    assert rd.results() == [] and rd.events(method, conv) == []
    assert sum("outside" in p and "refused" in p for p in rd.problems) == 2
    with pytest.raises(LeadsOutside, match="manifest.json"):
        rd.manifest()
    with pytest.raises(LeadsOutside, match="structures.json"):
        rd.structures(method, conv)
    assert not any(SECRET in p for p in rd.problems if "leading to" not in p)


def test_load_method_refuses_a_state_pickle_linked_outside(demo_run, tmp_path, outside):
    run = shutil.copytree(demo_run, tmp_path / "run")
    rd = RunDir(run)
    mem = rd.memory_dir(rd.methods()[0], rd.conversation_ids()[0])
    shutil.move(mem / "state.pkl", outside / "state.pkl")
    (mem / "state.pkl").symlink_to(outside / "state.pkl")
    with pytest.raises(LeadsOutside, match="state.pkl"):
        rd.load_method(rd.methods()[0], rd.conversation_ids()[0], trust=True)


def test_app_shows_a_problem_instead_of_linked_files(demo_run, tmp_path, outside):
    pn = pytest.importorskip("panel")
    from widgets import app as appmod

    run = shutil.copytree(demo_run, tmp_path / "run")
    (run / "results.jsonl").unlink()
    (run / "results.jsonl").symlink_to(outside / "notes.jsonl")
    (run / "manifest.json").unlink()
    (run / "manifest.json").symlink_to(outside / "notes.json")
    app = appmod.build_app(run)
    app.prewarm()
    html = "\n".join(str(p.object) for p in app.__panel__().select(pn.pane.HTML)
                     + app.__panel__().select(appmod.LinkHTML))  # structure cards are link-aware panes
    problems = " ".join(str(p.object) for p in app.problems.objects)
    assert "outside" in problems
    assert SECRET not in html.replace(str(outside), "")


def test_results_store_neither_reads_nor_appends_through_a_link(tmp_path, outside):
    from workbench.eval.store import ResultsStore

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").symlink_to(outside / "notes.jsonl")
    before = (outside / "notes.jsonl").read_text()
    with pytest.raises(LeadsOutside, match="results.jsonl"):
        ResultsStore(run / "results.jsonl")
    with pytest.raises(LeadsOutside):
        append_line(run / "results.jsonl", json.dumps(ROW))
    (run / "results.manifests.jsonl").symlink_to(outside / "log.jsonl")  # dangling: would create the target
    with pytest.raises(LeadsOutside):
        append_line(run / "results.manifests.jsonl", "{}")
    assert (outside / "notes.jsonl").read_text() == before and not (outside / "log.jsonl").exists()


def test_census_reports_linked_files_and_counts_the_rest(demo_run, tmp_path, outside):
    from workbench.eval.mechanisms import census

    run = shutil.copytree(demo_run, tmp_path / "run")
    rd = RunDir(run)
    mem = rd.memory_dir(rd.methods()[0], rd.conversation_ids()[0])
    (mem / "events.jsonl").unlink()
    (mem / "events.jsonl").symlink_to(outside / "notes.jsonl")
    (run / "results.jsonl").rename(run / "kept.jsonl")
    (run / "results.jsonl").symlink_to(outside / "notes.jsonl")
    value = census(run)
    assert sum("outside" in p for p in value["problems"]) == 2
    assert SECRET not in json.dumps(value["methods"])


def _cli(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_eval_and_report_refuse_a_run_directory_with_links_out(tmp_path, outside):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.costs.jsonl").symlink_to(outside / "costs.jsonl")
    with pytest.raises(LeadsOutside, match="results.costs.jsonl"):
        check_links_stay_inside(run)
    out = _cli("eval", "--method", "full_context", "--data", "tiny", "--llm", "openai:m@http://127.0.0.1:9/v1",
               "--embedder", "hash", "--out", str(run), "--no-progress")
    assert out.returncode == 2 and "outside" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (outside / "costs.jsonl").exists()
    (run / "results.jsonl").symlink_to(outside / "notes.jsonl")
    out = _cli("report", str(run / "results.jsonl"))
    assert out.returncode == 2 and "outside" in out.stderr and SECRET not in out.stdout


def test_report_reads_no_judge_audits_through_a_linked_manifest(tmp_path, outside, capsys):
    from workbench.eval.cli import report_audits

    run = tmp_path / "run"
    run.mkdir()
    (outside / "m.json").write_text(json.dumps({"evaluations": [{"judge": {"key": "k", "audit": {"fa": SECRET}}}]}))
    (run / "manifest.json").symlink_to(outside / "m.json")
    found = report_audits([], [run], cache=str(tmp_path / "no-cache.json"))
    assert "k" not in found
    assert "outside" in capsys.readouterr().err
