"""The Question view's pure logic (``widgets.question``): gold-evidence ranks, flags, failure markers,
rendering; its app tab and the Traces/Results fixes (in-process, no browser)."""
from __future__ import annotations

import re

import json
import shutil
from pathlib import Path

import pytest

from workbench.eval.metrics import evidence_recall
from workbench.rundir import RunDir
from workbench.trace import Answer, Hit, Step

from widgets import question as Q

ROOT = Path(__file__).resolve().parents[1]
RELIABLE = {"false_accept": {"rate": 0.05, "k": 2, "n": 40, "ci": [0.01, 0.17]}, "dataset": "sample"}
UNRELIABLE = {"false_accept": {"rate": 0.7, "k": 14, "n": 20, "ci": [0.48, 0.85]}, "dataset": "sample"}
MISS = "CacheMiss: no recorded reply for role='memr3.router' (model m) in c.jsonl"


def hit(uid, *ids, text="", score=0.5):
    return Hit(uid, text or f"unit {uid}", score, ids, "chunk")


def row(method="m", *, context=(), label="CORRECT", f1=0.0, prediction="Biscuit", failures=(), error=None,
        judge_error=None, qa_id="c/q4", judge_key="jk"):
    ans = Answer("What is the name of the greyhound?", prediction, (Step("answer", "read"),), tuple(context),
                 method=method)
    return {"method": method, "params_hash": "h", "qa_id": qa_id, "conv_id": "c", "question": ans.question,
            "gold": "Pilot", "prediction": prediction, "category": 4, "category_name": "single-hop",
            "scores": {"f1": f1}, "judge_label": label, "judge_error": judge_error, "judge_key": judge_key,
            "judge_model": "small-judge", "query_tokens": 120, "error": error, "failures": list(failures),
            "answer": ans.to_dict()}


# -- gold-evidence rank ---------------------------------------------------------------------------------
def test_gold_rank_is_the_position_of_the_first_unit_covering_each_gold_turn():
    context = [hit("u1", "D1:1", "D1:2"), hit("u2", "D3:6"), hit("u3", "D2:1"), hit("u4", "D4:3", "D3:6")]
    assert Q.gold_ranks(context, ["D4:3", "D3:6", "D9:9"]) == {"D4:3": 4, "D3:6": 2, "D9:9": None}
    assert Q.gold_ranks(context, []) == {}
    assert Q.gold_ranks([], ["D4:3"]) == {"D4:3": None}
    m = Q.method_row(row(context=context), evidence=["D4:3", "D3:6"])
    assert m.first_rank == 2 and Q.rank_text(m) == "D4:3 #4 · D3:6 #2 of 4"
    single = Q.method_row(row(context=context), evidence=["D4:3"])
    assert Q.rank_text(single) == "#4 of 4"
    missed = Q.method_row(row(context=context[:3]), evidence=["D4:3"])
    assert missed.first_rank is None and Q.rank_text(missed) == "missed"


def test_rank_without_a_trace_or_gold_says_so():
    no_trace = {**row(), "answer": None, "turns_shown": 7}
    m = Q.method_row(no_trace, evidence=["D4:3"])
    assert m.ranks is None and Q.rank_text(m) == "no trace saved" and m.turns_shown == 7
    unknown = Q.method_row(row(context=[hit("u1", "D4:3")]), evidence=None)
    assert Q.rank_text(unknown) == "gold evidence unknown"
    assert Q.rank_text(Q.method_row(row(context=[hit("u1", "D4:3")]), evidence=[])) == "no gold evidence ids"


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path_factory.mktemp("run") / "demo", n_conversations=2, max_questions=8,
                         inject_html=True)


def test_ranks_agree_with_the_harness_evidence_recall_on_a_saved_run(scripted_run):
    """The harness computed evidence recall from the same recorded context when it ran: a gold turn
    has a rank exactly when recall counts it as shown, and turns shown match."""
    run = RunDir(scripted_run)
    rows = run.results()
    checked = 0
    for conv_id in run.conversation_ids():
        conv = run.conversation(conv_id)
        for qa in conv.qa:
            state = Q.question_state(rows, qa.id, conversation=conv)
            for m in state.rows:
                if not qa.evidence:
                    continue
                shown = sum(r is not None for r in m.ranks.values()) / len(m.ranks)
                assert shown == pytest.approx(m.row["evidence_recall"]), (m.method, qa.id)
                assert m.turns_shown == m.row["turns_shown"]
                # Recompute independently: the first unit whose provenance holds a gold turn.
                first = next((i for i, h in enumerate(Answer.from_dict(m.row["answer"]).context, 1)
                              if set(h.source_ids) & set(qa.evidence)), None)
                assert m.first_rank == first, (m.method, qa.id)
                checked += 1
    assert checked >= 10
    assert evidence_recall(["a"], ["a"]) == 1.0  # the harness function the rows were written with


# -- flags and failures -------------------------------------------------------------------------------
def test_judge_against_f1_flag_and_trust_follow_the_audit():
    r = row(context=[hit("u1", "D4:3")], label="CORRECT", f1=0.0)
    untrusted = Q.method_row(r, evidence=["D4:3"], audits={"jk": UNRELIABLE})
    assert untrusted.disagree and not untrusted.judge_trusted and "judge unreliable" in untrusted.judge_note
    assert untrusted.attribution.label == "reading_miss"  # F1 decides when the judge is not trusted
    trusted = Q.method_row(r, evidence=["D4:3"], audits={"jk": RELIABLE})
    assert trusted.judge_trusted and trusted.attribution.label == "judge_disagrees"
    unaudited = Q.method_row(r, evidence=["D4:3"], audits={})
    assert not unaudited.judge_trusted and "not audited" in unaudited.judge_note
    agree = Q.method_row(row(label="CORRECT", f1=1.0, prediction="Pilot"), evidence=["D4:3"], audits={})
    assert not agree.disagree and agree.attribution.label == "correct"
    html = Q.question_html(Q.QuestionState("c/q4", "q?", "Pilot", "single-hop", ("D4:3",), {},
                                           (untrusted, agree), (untrusted.judge_note,)))
    assert html.count("⚠ judge vs F1") == 1 and "untrusted judge" in html
    assert "Judge labels are not trustworthy here" in html


def test_a_fallback_answer_after_cassette_misses_is_marked():
    failures = [{"phase": "answer", "kind": "llm_error", "role": "memr3.router", "error": MISS},
                {"phase": "answer", "kind": "llm_error", "role": "memr3.answer", "error": MISS},
                {"phase": "answer", "kind": "fallback", "step": 1, "title": "it 1", "detail": "router call failed"},
                {"phase": "answer", "kind": "step_error", "step": 1, "title": "it 1", "detail": MISS},
                {"phase": "answer", "kind": "json_retry", "role": "memr3.router.repair"}]
    note = Q.failure_note(row(failures=failures))
    assert note.fallback and note.cassette_miss
    assert note.text == ("fallback answer, not the reader's reply: 2 LLM calls failed, 1 step fell back "
                         "(cassette miss: no recorded reply)")
    assert note.minor == "1 JSON repair call"
    only_repair = Q.failure_note(row(failures=failures[-1:]))
    assert not only_repair.fallback and only_repair.text == "" and only_repair.minor == "1 JSON repair call"
    built = Q.failure_note(row(failures=[{"phase": "ingest", "kind": "construction", "method_failures": 4,
                                          "by_stage": {"summarize": 4}, "llm_errors": 0}]))
    assert not built.fallback and built.minor == "memory built with 4 failures (summarize ×4)"
    raised = Q.failure_note(row(error="RuntimeError: boom"))
    assert raised.fallback and raised.text.startswith("the method failed: RuntimeError: boom")
    m = Q.method_row(row(failures=failures, label=None, judge_error=MISS, prediction="Not mentioned"),
                     evidence=["D4:3"])
    html = Q.methods_html(Q.QuestionState("c/q4", "q", "Pilot", "", ("D4:3",), {}, (m,), ()))
    assert "⚠ fallback answer" in html and "judge failed (cassette miss)" in html
    assert "⚠ fallback answer" in Q.answer_flags_html(m)
    # an answer with nothing to flag: its verdict and the gold only (a trace always says whether it is right)
    clean = Q.answer_flags_html(Q.method_row(row(label="CORRECT", f1=1.0), evidence=[], audits={"jk": RELIABLE}))
    assert "<b>verdict:</b>" in clean and "<b>gold:</b> Pilot" in clean and "⚠" not in clean
    wrong = Q.answer_flags_html(Q.method_row(row(label="CORRECT", f1=0.0, prediction="Biscuit"), evidence=[]))
    assert re.search(r"verdict:</b> <span class=\"wb-wrong\"[^>]*>wrong</span> <small[^>]*>checker", wrong), wrong


# -- rendering --------------------------------------------------------------------------------------------
def test_expanded_context_highlights_gold_turns_and_escapes_text(tiny_conv):
    gold_turn = tiny_conv.turns[1]
    evil = "<script>window.__pwned=1</script>"
    context = [hit("u1", tiny_conv.turns[0].id, text=f"{evil} {tiny_conv.turns[0].text}"),
               hit("u2", gold_turn.id, text=f"[date] {gold_turn.speaker}: {gold_turn.text}"),
               hit("u3", gold_turn.id, text="a rewritten fact")]
    qa = tiny_conv.qa[0]
    rows = [{**row(context=context, prediction=evil, qa_id=qa.id), "conv_id": tiny_conv.id},
            {**row("other", context=context[:1], qa_id=qa.id), "conv_id": tiny_conv.id}]
    conv = tiny_conv.__class__(tiny_conv.id, tiny_conv.speakers, tiny_conv.sessions,
                               (qa.__class__(qa.id, qa.question, qa.answer, qa.category, (gold_turn.id,)),))
    state = Q.question_state(rows, qa.id, conversation=conv)
    assert state.methods == ["m", "other"] and state.evidence == (gold_turn.id,)
    html = Q.question_html(state, selected="m")
    assert "<script>" not in html.replace("<style>", "") and "&lt;script&gt;window.__pwned=1" in html
    assert html.count("<details open>") == 1 and 'class="wb-method wb-selected" data-method="m"' in html
    assert f'<mark class="wb-gold">{Q.esc(gold_turn.text)}</mark>' in html  # the turn's words inside unit u2
    assert f"covers gold {Q.esc(gold_turn.id)}" in html  # u3 rewrote it: the turn is quoted beneath
    assert html.count('class="wb-has-gold"') == 2 and "#2 of 3" in html and "missed" in html
    assert Q.question_html(state).count("<details open>") == 0
    assert "<details" not in Q.question_html(state, contexts=False)


def test_the_facts_the_reader_saw_are_read_against_their_own_turns(tiny_conv):
    """AMA over conv-30: for "When has Jon lost his job as a banker?" its reader saw "Jon is Jon's friend" five times
    and nothing said the facts were not in their turns. Each fact now carries its flags (why on hover); a raw unit
    or a clean fact carries none."""
    t1, t3 = tiny_conv.turns[0], tiny_conv.turns[2]  # "Hi Noor! I adopted a kitten on Saturday." / "Miso. She's..."
    context = [Hit("fact:0", "Sam is Sam's friend", 0.6, (t1.id,), "fact"),
               Hit("fact:1", t1.text, 0.5, (t1.id,), "fact"),
               Hit("fact:2", "Miso is grey", 0.4, (t3.id,), "fact"),
               Hit("raw:1", f"{t1.speaker}: {t1.text}", 0.3, (t1.id,), "raw")]
    qa = tiny_conv.qa[0]
    state = Q.question_state([{**row(context=context, qa_id=qa.id), "conv_id": tiny_conv.id}], qa.id,
                             conversation=tiny_conv)
    html = Q.context_html(state.rows[0], state)
    cells = re.findall(r"<tr[^>]*>(.*?)</tr>", html, flags=re.S)[1:]
    assert len(cells) == 4
    assert "⚠ “friend” not in its turn" in cells[0] and "title='the fact says someone is a friend" in cells[0]
    assert "⚠ copies its turn" in cells[1] and "⚠ first person" in cells[1]
    assert "⚠" not in cells[2] and "⚠" not in cells[3]


def test_a_wrong_verdict_by_the_checker_names_its_kind_under_it():
    """Review R1b: a wrong date read "reading_miss by checker" unless one hovered; the kind now shows."""
    wrong = {**row(prediction="21 May 2023"), "gold": "13 May 2023",
             "check": {"correct": False, "kind": "wrong_date", "reason": "another day"}, "scores": {"checker": 0.0}}
    m = Q.method_row(wrong, evidence=[])
    assert m.attribution.basis == "checker" and Q.verdict_basis(m) == "checker · wrong date"
    assert "checker · wrong date" in Q._verdict_html(m)
    right = {**row(prediction="Pilot"), "check": {"correct": True, "kind": "right", "reason": "holds it"},
             "scores": {"checker": 1.0}}
    assert Q.verdict_basis(Q.method_row(right, evidence=[])) == "checker"


def test_an_answer_in_another_script_or_a_code_fence_is_flagged():
    """Review B17: HyMem's answers over conv-26 hold "可爱" inside English sentences; a code fence or a JSON object
    for an answer is as hard to read. The flags column and the trace header say which, with why on hover."""
    q = "What did Melanie realize after the charity race?"
    marks = Q.unreadable_marks("Mel realized it was 可爱, really rewarding.", q)
    assert [f for f, _ in marks] == ["cjk script"] and "可 爱" in marks[0][1]
    assert [f for f, _ in Q.unreadable_marks('```json\n{"answer": "x"}\n```', q)] == ["code fence"]
    assert [f for f, _ in Q.unreadable_marks('{"answer": "Pilot"}', q)] == ["raw JSON"]
    assert Q.unreadable_marks("Crème brûlée in Zürich, 2023.", q) == []  # Latin with accents is the same script
    assert Q.unreadable_marks("可爱", "可爱吗?") == []  # the question's own script
    m = Q.method_row({**row(prediction="It was 可爱."), "question": q}, evidence=[])
    assert "⚠ cjk script" in Q._flags_html(m) and "⚠ cjk script" in Q.answer_flags_html(m)
    assert "script" not in Q._flags_html(Q.method_row(row(prediction="Pilot"), evidence=[]))



def test_a_text_that_loops_is_flagged():
    """An H-Mem summary of the demo (sum3) ends "Priya ordered tomatoes first, definitely." seven times over: the
    tree shows the model's text as it is, and now says it repeats itself."""
    looped = "They met. " + "Priya ordered tomatoes first, definitely. " * 3 + "Maybe courgettes."
    assert Q.repeated_sentence(looped) == ("Priya ordered tomatoes first, definitely.", 3)
    assert [f for f, _ in Q.unreadable_marks(looped)] == ["repeats itself"]
    assert Q.repeated_sentence("Yes. Yes. Yes. Pilot it is. Pilot it is.") is None  # short or twice: not a loop


def test_the_readers_context_says_when_it_is_not_in_score_order():
    """Review R5c: HyMem's small profile shows its events in time order, so scores read 0.41, 0.62, 0.38; the
    context says the method re-sorted them, rather than leave a non-monotonic column unexplained."""
    ranked = Q.method_row(row(context=[hit("u1", "D1:1", score=0.9), hit("u2", "D1:2", score=0.4)]), evidence=[])
    resorted = Q.method_row(row(context=[hit("u1", "D1:1", score=0.4), hit("u2", "D1:2", score=0.9)]), evidence=[])
    flat = Q.method_row(row(context=[hit("u1", "D1:1", score=0.0), hit("u2", "D1:2", score=0.0)]), evidence=[])
    assert "highest score first" in Q.context_order_note(ranked)
    assert "not score order" in Q.context_order_note(resorted)
    assert "same score" in Q.context_order_note(flat)


def test_highlight_marks_every_occurrence_and_keeps_a_late_needle():
    out = Q.highlight("a <b> Pilot and Pilot", ["Pilot"])
    assert out == 'a &lt;b&gt; <mark class="wb-gold">Pilot</mark> and <mark class="wb-gold">Pilot</mark>'
    long = "x" * 3000 + "Pilot" + "y" * 100
    assert '<mark class="wb-gold">Pilot</mark>' in Q.highlight(long, ["Pilot"], limit=100)
    assert "more characters" in Q.highlight("z" * 50, [], limit=10)


def test_question_options_carry_the_category():
    opts = Q.question_options([row(qa_id="c/q4"), row("n", qa_id="c/q4"), {**row(qa_id="d/q1"), "conv_id": "d"}],
                              "c")
    assert opts == {"c/q4 [single-hop]: What is the name of the greyhound?": "c/q4"}


# -- the app: Question tab, click-through, Traces flags, Results table ------------------------------------------
pn = pytest.importorskip("panel")


@pytest.fixture(scope="module")
def flagged_run(scripted_run, tmp_path_factory) -> Path:
    """The scripted run plus a MemR3-like row whose answer is a fallback after cassette misses, judged
    CORRECT against F1 = 0 by an unaudited judge."""
    run = tmp_path_factory.mktemp("flagged") / "run"
    shutil.copytree(scripted_run, run)
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    base = next(r for r in rows if r["method"] == "naive_rag" and r["answer"])
    writer = next(i for i, st in enumerate(base["answer"]["steps"]) if st["kind"] == "answer")
    failures = [{"phase": "answer", "kind": "llm_error", "role": "memr3.answer", "error": MISS},
                {"phase": "answer", "kind": "fallback", "step": writer, "title": "answer",
                 "detail": "answer call failed"}]
    fake = {**base, "method": "memr3", "prediction": "Not mentioned", "judge_label": "CORRECT",
            "judge_key": "unaudited-judge", "scores": {**base["scores"], "f1": 0.0}, "failures": failures,
            "answer": {**base["answer"], "text": "Not mentioned", "method": "memr3"}}
    with open(run / "results.jsonl", "a") as f:
        f.write(json.dumps(fake) + "\n")
    return run


def memr3_question(run: Path) -> str:
    return next(r["qa_id"] for r in RunDir(run).results() if r["method"] == "memr3")


def test_app_opens_on_the_question_tab_and_clicks_through_to_the_trace(flagged_run):
    from widgets import app as appmod

    app = appmod.build_app(flagged_run)
    assert list(app.tabs._names)[0] == "Question" and app.tabs.active == 0
    v = app.views["Question"]
    assert v.state is not None and "gold evidence rank" in v.body.object
    qa_id = memr3_question(flagged_run)
    v.question.value = qa_id
    assert set(v.state.methods) == {"naive_rag", "full_context", "eager_facts", "memr3"}
    assert v.trace_button.disabled  # nothing selected yet
    v.method.value = "memr3"
    assert "<details open>" in v.body.object and 'wb-selected" data-method="memr3"' in v.body.object
    assert not v.trace_button.disabled
    v.trace_button.clicks += 1  # what a browser click does
    traces = app.views["Traces"]
    assert app.tabs.active == list(app.tabs._names).index("Traces")
    assert traces.question.value == qa_id and traces.method.value == "memr3"
    assert "⚠ fallback answer" in traces.html and "⚠ judge CORRECT but F1 = 0.00" in traces.html


def test_traces_tab_flags_fallbacks_disagreements_and_the_judge_audit(flagged_run):
    from widgets import app as appmod

    v = appmod.build_app(flagged_run).views["Traces"]
    v.question.value = memr3_question(flagged_run)
    html = v.answers_pane.object
    marker = "⚠ fallback answer, not the reader's reply: 1 LLM call failed, 1 step fell back (cassette miss"
    assert Q.esc(marker) in html
    assert "⚠ judge vs F1" in html and "untrusted judge" in html and "not audited" in html
    assert "gold evidence rank" in html and "<tr class=\"wb-ctx" not in html  # contexts: the Question tab
    assert html.count("<details") == 1  # the methods table is folded under one line, so the trace is in view


def test_results_quality_table_is_narrow_with_n_in_every_accuracy_cell(scripted_run):
    from widgets import app as appmod
    from widgets.cost_accuracy import QUALITY_COLUMNS

    v = appmod.build_app(scripted_run).views["Results"]
    html = v.table.object
    quality = html.split(": quality and cost</h4>")[1].split("</table>")[0]
    assert quality.count("<th>") <= len(QUALITY_COLUMNS) == 9  # was 16 columns, cut off at 1400 px
    from widgets.cost_accuracy import headline

    heads = v.summary[v.summary["category"] == headline(v.summary)]
    for _, r in heads.iterrows():
        assert f"{r['accuracy']:.3f} (n={int(r['n'])})" in quality
    assert "(no LLM to build)" in quality  # naive_rag builds without LLM calls: its 0 is explained
    assert v.plot.object.layout.xaxis.type == "log"


def test_labels_of_close_points_do_not_share_a_position():
    from widgets.cost_accuracy import label_positions, log_ticks

    pos = label_positions([1000, 1010, 5000], [0.5, 0.5, 0.1], ["naive_rag", "eager_floor", "memr3"], log_x=True)
    assert pos[0] != pos[1] and pos[2] == "top center"
    assert log_ticks([504, 1434, 6089]) == ([500, 1000, 2000, 5000], ["500", "1k", "2k", "5k"])
    # a point just above the Full-Context line keeps its label off the line: above it, not below
    assert label_positions([500, 5000], [0.37, 0.9], ["eager_floor", "hymem"], log_x=True,
                           y_bounds=(0.0, 1.0)) == ["top center", "top center"]
    assert label_positions([500, 5000], [0.37, 0.9], ["eager_floor", "hymem"], log_x=True, y_bounds=(0.0, 1.0),
                           hlines=[0.40])[0] not in ("top center", "top right", "top left")
    # a label keeps off a neighbour's error bar (a tall bar right under it), not off its own
    xs, ys, names = [100, 101, 900], [0.2, 0.6, 0.5], ["a", "bbbb", "c"]
    free = label_positions(xs, ys, names, y_bounds=(0.0, 1.0))
    barred = label_positions(xs, ys, names, y_bounds=(0.0, 1.0),
                             bars=[(0.0, 1.0), (float("nan"), float("nan")), (0.0, 1.0)])
    assert free[1] == "top center" and barred[1] in ("middle right", "middle left") and barred[2] == free[2]
    # the leftmost point's label is not pushed out of the plot to its left
    assert label_positions([500, 2000], [0.37, 0.9], ["eager_floor", "b"], log_x=True, y_bounds=(0.0, 1.0),
                           hlines=[0.34], bars=[(0.1, 0.6), (0.5, 1.0)])[0] != "middle left"


# -- the notebook shell -------------------------------------------------------------------------------------
def test_notebook_question_view_selects_and_shows_the_trace(flagged_run):
    pytest.importorskip("ipywidgets")
    from widgets import QuestionView

    view = QuestionView.from_run(flagged_run)
    assert view.qa_id and view.state.rows and view.body.value == view.html
    view.question.value = memr3_question(flagged_run)
    view.method.value = "memr3"
    assert view.selected == "memr3" and "<details open>" in view.body.value
    assert view.trace.children == (view.stepper.widget,) and view.stepper.answer.method == "memr3"
    view.method.value = "naive_rag"  # a method the run saved memories for: every saved id has its text
    saved = RunDir(flagged_run).memories("naive_rag", view.state.row("naive_rag").row["conv_id"])
    assert saved and {str(r["id"]) for r in saved} <= set(view.stepper.timeline.refs.units)
    view.method.value = None
    assert view.trace.children == () and "<details open>" not in view.body.value


def test_notebook_question_view_static_html_shows_every_answer_and_verdict(flagged_run, static_view):
    """Issue #42: opened without live widgets, the view still shows the question, each method's answer and
    verdict and, for the picked method, its trace."""
    pytest.importorskip("ipywidgets")
    from widgets import QuestionView

    view = QuestionView.from_run(flagged_run).select(memr3_question(flagged_run))
    cells = [Q._cells(m) for m in view.state.rows]
    html = static_view(view, Q.esc(view.state.question),
                       *(c[k] for c in cells for k in ("method", "answer", "verdict")))
    assert len(cells) == 4 and "Step 1" not in html  # no method picked: no trace
    view.method.value = "memr3"
    static_view(view, view.html, view.stepper.static_html(), "Step 1")


def test_a_router_fallback_does_not_disown_a_real_answer():
    """MemR3 as recorded: router replies were unusable (default actions stood in), but the answer
    step itself is the reader's reply, so the answer is not marked as a fallback."""
    steps = [{"kind": "retrieve", "data": {}}, {"kind": "router", "data": {"fallback": "router call failed"}},
             {"kind": "router", "data": {}}, {"kind": "answer", "data": {}}]
    failures = [{"phase": "answer", "kind": "json_retry", "role": "memr3.router.repair"},
                {"phase": "answer", "kind": "fallback", "step": 1, "title": "Iteration 1: reflect",
                 "detail": "router call failed"}]
    note = Q.failure_note({"failures": failures, "answer": {"steps": steps}})
    assert not note.fallback and "the answer itself is the reader's reply" in note.minor
    failures.append({"phase": "answer", "kind": "fallback", "step": 3, "title": "answer", "detail": "failed"})
    assert Q.failure_note({"failures": failures, "answer": {"steps": steps}}).fallback
    assert Q.failure_note({"failures": failures[:2]}).fallback  # no trace to place the failure: not vouched for


def test_a_question_exports_as_a_standalone_page_and_a_markdown_table(tmp_path):
    """The comparison for a case study: one HTML file that opens with no server (no script, no outside URL, a CSP
    that forbids loading anything) and a Markdown table; run text stays inert in both."""
    import re

    rows = [{"method": "m", "qa_id": "c/q1", "conv_id": "c", "category": 2, "category_name": "temporal",
             "question": "When did <b>Tom</b> go?", "gold": "13 May 2023", "prediction": "21 May 2023 | ![x](http://a)",
             "scores": {"f1": 0.67}, "judge_label": "CORRECT", "judge_model": "j", "answer": None}]
    state = Q.question_state(rows, "c/q1")
    page = Q.question_page(state, run="demo")
    assert page.startswith("<!doctype html>") and "Content-Security-Policy" in page
    assert "<script" not in page and not re.search(r"(src|href)=['\"]https?://", page)
    assert "&lt;b&gt;Tom&lt;/b&gt;" in page and "wrong" in page
    (tmp_path / "q.html").write_text(page)
    md = Q.question_markdown(state)
    assert "| m |" in md and "wrong (checker)" in md and "![x](http" not in md and "\\|" in md
    from widgets.app import _export_name

    assert _export_name("../conv-30/q1?<x>", "html") == "conv-30-q1-x.html"
