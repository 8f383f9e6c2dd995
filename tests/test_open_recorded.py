"""``workbench open locomo:conv-30`` (issue #67 item 2): the committed real-scale cassettes of a conversation
replayed into one run directory keyed by their content, reused by a second call, and served.

The replays read the LoCoMo dev copy (``../shared/data``) and skip without it; they run on a small recorded slice
(two methods, a few questions), which replays every call from the committed cassettes (0 misses)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from workbench import open_recorded as op
from workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
CONV30 = ("full_context", "naive_rag", "hymem", "ama", "hmem", "recmem", "memr3", "mem0_style")


def test_every_committed_recording_of_conv30_is_found_and_a_partial_one_is_not(tmp_path, monkeypatch):
    found = op.recorded_methods("locomo", "conv-30")
    assert set(found) == set(CONV30) and all(p.name == f"{m}-conv-30.jsonl" for m, p in found.items())
    assert "conv-30" in op.recorded_conversations("locomo") and "conv-26" in op.recorded_conversations("locomo")
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "naive_rag-conv-99.partial.jsonl").write_text("")
    monkeypatch.setattr(op, "cassette_dir", lambda kind: tmp_path / kind)
    assert op.recorded_methods("locomo", "conv-99") == {} and op.recorded_conversations("locomo") == []


def test_a_target_names_a_dataset_and_a_conversation():
    assert op.parse_target("locomo:conv-30") == ("locomo", "conv-30")
    assert op.parse_target("conv-26") == ("locomo", "conv-26")
    with pytest.raises(SystemExit, match="unknown dataset 'lme'"):
        op.parse_target("lme:q1")
    with pytest.raises(SystemExit, match="names no conversation"):
        op.parse_target("locomo:")


def test_a_conversation_without_recordings_is_refused_naming_those_with(tmp_path):
    with pytest.raises(SystemExit, match=r"no committed recording of locomo conversation 'conv-99'.*conv-30"):
        op.open_recorded("locomo:conv-99", data_dir=str(tmp_path), out_root=tmp_path)


def test_profile_goes_only_to_the_methods_that_declare_it():
    per, notes = op.split_params(["naive_rag", "hymem", "full_context"], {})
    assert per == {"naive_rag": {}, "hymem": {"profile": "small"}, "full_context": {}}  # as recorded
    assert notes == []
    per, notes = op.split_params(["naive_rag", "hymem"], {"profile": "paper", "top_k": 3})
    assert per["hymem"]["profile"] == "paper" and "profile" not in per["naive_rag"]
    assert per["naive_rag"]["top_k"] == 3
    assert any("profile applies to hymem only" in n for n in notes)
    with pytest.raises(SystemExit, match="no method of this run takes parameter 'topk'"):
        op.split_params(["naive_rag", "hymem"], {"topk": 3})


def test_missing_data_says_where_it_looked_and_what_to_pass(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        op.find_data("locomo", None, str(tmp_path))
    message = str(exc.value)
    assert str(tmp_path / "locomo" / "locomo10_dev.json") in message and "--data-dir" in message
    assert "--data locomo:<file>" in message
    with pytest.raises(SystemExit, match="--data file not found"):
        op.find_data("locomo", f"locomo:{tmp_path / 'none.json'}", None)
    with pytest.raises(SystemExit, match="must be locomo:<file>"):
        op.find_data("locomo", "sample", None)
    # through the command line: one line on stderr, exit 2, no traceback
    rc = main(["open", "locomo:conv-30", "--data-dir", str(tmp_path), "--no-serve", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "no locomo dataset file found" in err and "Traceback" not in err


def test_the_data_folder_is_found_beside_the_checkout():
    assert Path(__file__).resolve().parents[2] / "shared" / "data" in op.data_dirs(ROOT)


def test_the_run_key_changes_with_any_cassette_byte_and_with_the_slice(tmp_path):
    a, b, data = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "d.json"
    a.write_text("1\n"), b.write_text("2\n"), data.write_text("{}")
    key = op.run_key({"m": a}, data, 5, (1, 2), {})["key"]
    assert key == op.run_key({"m": a}, data, 5, (1, 2), {})["key"]  # stable
    assert key != op.run_key({"m": b}, data, 5, (1, 2), {})["key"]
    assert key != op.run_key({"m": a}, data, 6, (1, 2), {})["key"]
    assert key != op.run_key({"m": a}, data, 5, (1, 2), {"m": {"profile": "paper"}})["key"]
    a.write_text("1\n ")
    assert key != op.run_key({"m": a}, data, 5, (1, 2), {})["key"]


# -- replays of the committed cassettes (need the LoCoMo dev copy) -------------------------------------------------

SLICE = ["--methods", "naive_rag", "hymem", "--questions", "2", "--no-progress", "--no-serve"]


@pytest.fixture(scope="module")
def opened(tmp_path_factory, request):
    """``workbench open locomo:conv-30`` on a two-method, two-question slice, with the mechanism gallery."""
    request.getfixturevalue("locomo_dev_path")  # skips without the data
    out = tmp_path_factory.mktemp("open")
    rc = main(["open", "locomo:conv-30", *SLICE, "--out", str(out)])
    runs = list(out.iterdir())
    return rc, out, runs


def test_the_slice_replays_with_every_call_in_the_cassettes(opened):
    rc, out, runs = opened
    assert rc == 0 and len(runs) == 1 and runs[0].name.startswith("locomo-conv-30-")
    run = runs[0]
    marker = json.loads((run / "open.json").read_text())
    assert marker["complete"] and marker["target"] == "locomo:conv-30" and marker["gallery"] is True
    assert set(marker["methods"]) == {"naive_rag", "hymem"}
    for name, figures in marker["methods"].items():
        assert figures["rows"] == 2 and figures["misses"] == 0 and figures["errors"] == 0, (name, figures)
        assert figures["hits"] >= 4 and figures["model"] == "qwen2.5-coder-0.5b"  # answer + judge per question
    assert marker["methods"]["hymem"]["params"] == {"profile": "small"}
    assert marker["methods"]["naive_rag"]["params"] == {}
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    assert sorted(r["method"] for r in rows) == ["hymem", "hymem", "naive_rag", "naive_rag"]
    assert all(not r.get("error") and r["qa_id"].startswith("conv-30/") for r in rows)


def test_the_run_holds_memories_census_conversation_and_gallery_for_the_app(opened):
    from workbench.rundir import RunDir

    run = RunDir(opened[2][0])
    assert set(run.methods()) == {"naive_rag", "hymem"}
    assert run.conversation_ids() == ["conv-30"]
    census = json.loads((run.path / "mechanisms.json").read_text())
    assert set(census["methods"]) == {"naive_rag", "hymem"}
    assert (run.path / "gallery").is_dir() and any((run.path / "gallery").iterdir())
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["created_by"] == "workbench open"
    assert {e["method"] for e in manifest["evaluations"]} == {"naive_rag", "hymem"}
    assert all(e["output_bounds"] for e in manifest["evaluations"])  # replayed with the recording's bounds


def test_a_second_open_reuses_the_run(opened, capsys):
    _, out, runs = opened
    before = (runs[0] / "results.jsonl").read_bytes()
    started = time.perf_counter()
    rc = main(["open", "locomo:conv-30", *SLICE, "--out", str(out)])
    took = time.perf_counter() - started
    err = capsys.readouterr().err
    assert rc == 0 and "reusing" in err and list(out.iterdir()) == runs
    assert (runs[0] / "results.jsonl").read_bytes() == before
    assert "replaying" not in err, err  # nothing replayed again
    print(f"second open: {took:.1f} s")


def test_a_changed_slice_gets_its_own_run(opened):
    _, out, runs = opened
    rc = main(["open", "locomo:conv-30", "--methods", "naive_rag", "--questions", "1", "--no-progress",
               "--no-serve", "--no-gallery", "--out", str(out)])
    assert rc == 0 and len(list(out.iterdir())) == 2


def test_calls_missing_from_a_cassette_are_counted_and_fail_the_command(locomo_dev_path, tmp_path, capsys):
    """The paper profile was never recorded: HyMem's calls miss (counted; exit 1 without a server), while Naive
    RAG, which has no profile, replays as recorded."""
    rc = main(["open", "locomo:conv-30", "--methods", "naive_rag", "hymem", "--questions", "1", "--no-progress",
               "--no-serve", "--no-gallery", "--param", 'profile="paper"', "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 1 and "--param profile applies to hymem only" in err and "not in the cassettes" in err
    marker = json.loads(next(tmp_path.iterdir()).joinpath("open.json").read_text())
    assert marker["methods"]["naive_rag"]["misses"] == 0 and marker["methods"]["hymem"]["misses"] > 0
    # HyMem carries on past its failed construction calls; the judge's miss is what its row shows
    assert marker["methods"]["hymem"]["rows"] == 1 and marker["methods"]["hymem"]["judge_errors"] == 1


# -- the opened run in the app ---------------------------------------------------------------------------------

@pytest.mark.browser
def test_the_app_over_an_opened_run_shows_every_recorded_method(opened):
    """The served app (``widgets.app.serve``, as ``workbench open`` starts it) lists every replayed method of the
    slice on the Question tab, reached by the README's ``/app?tab=`` link form."""
    chromium = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
    if not chromium.exists():
        pytest.skip(f"Chromium not found at {chromium}")
    sync_api = pytest.importorskip("playwright.sync_api")
    from widgets import app as appmod
    from workbench.methods import display_name

    run = opened[2][0]
    port = appmod.free_port()
    thread = appmod.serve(run, port=port, threaded=True)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(chromium), args=["--headless", "--no-sandbox",
                                                                              "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            response = page.goto(f"http://127.0.0.1:{port}/app?tab=Question&q=conv-30%2Fq1")
            assert response.status == 200
            page.locator("tr.wb-method").nth(1).wait_for(timeout=120000)
            shown = " ".join(page.locator("tr.wb-method").all_inner_texts())
            assert all(display_name(m) in shown for m in ("naive_rag", "hymem")), shown
            assert page.locator("tr.wb-method").count() == 2
            rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
            question = next(r["question"] for r in rows if r["qa_id"] == "conv-30/q1")
            page.get_by_text(question).filter(visible=True).first.wait_for(timeout=30000)  # the linked one, not q0
            assert errors == []
            browser.close()
    finally:
        thread.stop()
        thread.join(timeout=10)
