"""The case finder (issue #67 item 1), in process: the grid agrees with the Question tab cell by cell, each filter
keeps exactly the questions it names, a cell opens that answer on the Question tab (in its own conversation), the
Question tab's picker finds questions by their words, gold turn ids link to their lifecycle, the new controls go
into the URL and come back from it, and the notebook widget shows the same grid."""
from __future__ import annotations

from pathlib import Path

import pytest

pn = pytest.importorskip("panel")

from panel.io.location import Location  # noqa: E402

from widgets import app as appmod  # noqa: E402
from widgets import case_finder as cf  # noqa: E402
from widgets.question import question_state  # noqa: E402
from widgets.url_state import UrlState, parse_query  # noqa: E402
from workbench.rundir import RunDir  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_demo", Path(__file__).resolve().parents[1] / "scripts"
                                                  / "make_demo_run.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    return demo.make_demo_run(tmp_path_factory.mktemp("run") / "cases", n_conversations=2, max_questions=4)


@pytest.fixture(scope="module")
def oracle(run):
    """qa_id -> method -> the Question tab's verdict (``question_state``, read per question on its own)."""
    rd = RunDir(run)
    rows = rd.results()
    out = {}
    for cid in rd.conversation_ids():
        conv = rd.conversation(cid)
        for qid in dict.fromkeys(r["qa_id"] for r in rows if r["conv_id"] == cid):
            state = question_state(rows, qid, conversation=conv)
            out[qid] = {m.method: m for m in state.rows}
    return out


@pytest.fixture(scope="module")
def cases(run):
    rd = RunDir(run)
    return cf.build_cases(rd.results(), conversations=rd.conversation)


def test_every_cell_says_what_the_question_tab_says(cases, oracle):
    from widgets.question import rank_text

    assert {c.qa_id for c in cases} == set(oracle) and len(cases) == 8
    for case in cases:
        assert set(case.cells) == set(oracle[case.qa_id])
        for method, cell in case.cells.items():
            row = oracle[case.qa_id][method]
            assert cell.correct is row.attribution.correct and cell.attribution == row.attribution.label
            assert cell.rank == rank_text(row) and cell.first_rank == row.first_rank


def test_each_filter_keeps_exactly_the_questions_it_names(cases, oracle):
    def ids(**kw):
        return {c.qa_id for c in cf.filter_cases(cases, cf.CaseFilter(**kw))}

    split = {q for q, rows in oracle.items() if {True, False} <= {m.attribution.correct for m in rows.values()}}
    assert ids(disagree=True) == split and 0 < len(split) < len(oracle)  # the demo has both kinds
    for x in ("naive_rag", "full_context"):
        for y in ("naive_rag", "full_context", "eager_facts"):
            want = {q for q, rows in oracle.items()
                    if rows[x].attribution.correct is True and rows[y].attribution.correct is False}
            assert ids(right_with=x, wrong_with=y) == want, (x, y)
    assert ids(right_with="naive_rag", wrong_with="naive_rag") == set()
    assert ids(right_with="full_context", wrong_with="naive_rag")  # the scripted run has such a case
    assert ids(conv_id="sample-2") == {q for q in oracle if q.startswith("sample-2/")}
    for cat in cf.categories(cases):
        assert ids(category=cat) == {c.qa_id for c in cases if c.category == cat}
    kind = cf.error_kinds(cases)[0]
    assert ids(kind=kind) == {c.qa_id for c in cases if any(x.kind == kind for x in c.cells.values())}
    # a kind with "wrong with" judges that method's cell only
    assert ids(wrong_with="naive_rag", kind=kind) == {c.qa_id for c in cases if c.cells["naive_rag"].kind == kind}
    why = cf.attributions(cases)[0]
    assert ids(attribution=why) == {c.qa_id for c in cases if any(x.attribution == why for x in c.cells.values())}
    word_case = cases[0]
    words = word_case.question.split()
    assert word_case.qa_id in ids(words=f"{words[-1].upper()} {words[0]}")  # any order, any case
    assert ids(words="zzzz-no-such-word") == set()


def test_the_grid_marks_each_cell_and_links_it_to_the_question_tab(cases):
    methods = cf.case_methods(cases)
    html = cf.grid_html(cases, methods, links=True, page_size=100)
    assert html.count('class="wb-cf-row') == len(cases)
    for case in cases:
        for method in methods:
            assert f'data-link="[&quot;question&quot;, &quot;{case.qa_id}&quot;, &quot;{method}&quot;]"' in html
    plain = cf.grid_html(cases, methods, links=False)
    assert "class=\"wb-link\"" not in plain and "✓ right" in plain and "✗" in plain
    assert cf.grid_html(cases, methods, page_size=3).count('class="wb-cf-row') == 3
    assert "No question matches" in cf.grid_html([], methods)


def test_a_cell_opens_that_answer_on_the_question_tab_in_its_own_conversation(run):
    app = appmod.build_app(run)
    finder = app.views["Results"].cases
    assert app.views["Results"].panel.objects[0] is finder.panel  # the tab's first view
    assert finder.conv.value == "sample-1" and {c.conv_id for c in finder.cases} == {"sample-1"}
    finder.conv.value = cf_all = "(all conversations)"
    assert finder.conv.value == cf_all and len(finder.cases) == 8
    finder.set_filter(disagree=True)
    assert all(c.disagree for c in finder.shown) and "where methods disagree" in finder.summary.object
    other = next(c for c in finder.shown if c.conv_id == "sample-2")
    finder.grid._handle_msg(["question", other.qa_id, "full_context"])  # what a click on the cell sends
    question = app.views["Question"]
    assert app.store.conv_id == "sample-2" and list(app.views).index("Question") == app.tabs.active
    assert question.question.value == other.qa_id and question.method.value == "full_context"
    assert "wb-selected" in question.body.object
    finder.grid._handle_msg(["question", other.qa_id, "(none)"])  # the question's id: no row opened
    assert question.method.value == "(none)"


def test_the_question_picker_finds_questions_by_their_words(run):
    app = appmod.build_app(run)
    question = app.views["Question"]
    labels = dict(question.question.options)
    target_label, target = list(labels.items())[-1]
    words = [w for w in target_label.split(": ", 1)[1].split() if len(w) > 3][:2]
    question.find.value_input = " ".join(reversed(words)).lower()
    assert question.found.visible and target in question.matches()
    assert f"&quot;{target}&quot;" in question.found.object and "of 4 questions match" in question.found.object
    assert "✓" in question.found.object  # each match with its verdicts
    question.found._handle_msg(["question", target, "(none)"])
    assert question.question.value == target
    question.question.value = next(iter(labels.values()))
    question.find.value = question.find.value_input  # Enter: the first match opens
    assert question.question.value == question.matches()[0]
    question.find.value_input = "zzzz-no-such-word"
    assert "no question of this conversation" in question.found.object
    question.find.value_input = ""
    assert not question.found.visible


def test_gold_turn_ids_open_their_lifecycle(run):
    app = appmod.build_app(run)
    question = app.views["Question"]
    gold = question.state.evidence[0]
    assert f"data-link=\"[&quot;turn&quot;, &quot;{gold}&quot;]\"" in question.body.object
    question.body._handle_msg(["turn", gold])
    assert app.views["Lifecycle"].target == ("turn", gold)
    assert list(app.views).index("Lifecycle") == app.tabs.active
    from widgets.question import question_page

    assert "class=\"wb-link\"" not in question_page(question.state)  # an export has no in-app links


def test_results_and_events_controls_round_trip_through_the_url(run):
    app = appmod.build_app(run)
    loc = Location(search="?tab=Results")
    UrlState(app, loc)
    assert parse_query(loc.search) == {"conv": "sample-1", "tab": "Results"}  # the tab as it opens: nothing more
    results = app.views["Results"]
    results.metric.value = "f1"
    results.x.value = "construction_tokens"
    finder = results.cases
    finder.disagree.value = True
    finder.wrong_with.value = "naive_rag"
    finder.words.value_input = finder.words.value = "Priya"
    written = parse_query(loc.search)
    assert {k: written.get(k) for k in ("metric", "cost", "disagree", "wrong", "words")} == \
        {"metric": "f1", "cost": "construction_tokens", "disagree": "1", "wrong": "naive_rag", "words": "Priya"}
    fresh = appmod.build_app(run)
    UrlState(fresh, Location(search=loc.search))
    again = fresh.views["Results"]
    assert (again.metric.value, again.x.value) == ("f1", "construction_tokens")
    assert again.cases.filter == finder.filter and [c.qa_id for c in again.cases.shown] == \
        [c.qa_id for c in finder.shown]

    app.tabs.active = list(app.slots).index("Events")
    events = app.views["Events"]
    events.kinds.value = ["ADD"]
    events.methods.value = ["naive_rag", "eager_facts"]
    events.search.value = "Priya"
    written = parse_query(loc.search)
    assert {k: written.get(k) for k in ("kinds", "methods", "search")} == \
        {"kinds": "ADD", "methods": "naive_rag,eager_facts", "search": "Priya"}
    assert "metric" not in written and "disagree" not in written  # another tab's controls stay out
    fresh = appmod.build_app(run)
    UrlState(fresh, Location(search=loc.search))
    got = fresh.views["Events"]
    assert (got.kinds.value, got.methods.value, got.search.value) == (["ADD"], ["naive_rag", "eager_facts"], "Priya")
    assert [e.unit_id for e in got.filtered] == [e.unit_id for e in events.filtered] and got.filtered


def test_values_no_control_offers_are_ignored(run):
    app = appmod.build_app(run)
    UrlState(app, Location(search="?tab=Results&metric=nope&cost=%3Cb%3E&disagree=yes&wrong=nobody&kind=x"))
    results = app.views["Results"]
    assert results.metric.value == results.opened_on["metric"] and results.x.value == results.opened_on["cost"]
    assert results.cases.filter == cf.CaseFilter()
    app = appmod.build_app(run)
    UrlState(app, Location(search="?tab=Events&kinds=NOPE,ADD&methods=ghost"))
    events = app.views["Events"]
    assert events.kinds.value == ["ADD"] and events.methods.value == []


def test_the_notebook_widget_shows_the_same_grid(run, cases):
    pytest.importorskip("ipywidgets")
    view = cf.CaseFinderView.from_run(run)
    assert [c.qa_id for c in view.cases] == [c.qa_id for c in cases] and view.problems == []
    view.filter(disagree=True)
    assert {c.qa_id for c in view.shown} == {c.qa_id for c in cases if c.disagree}
    assert view.grid.value.count('class="wb-cf-row') == len(view.shown) and "class=\"wb-link\"" not in view.grid.value
    view.inputs["disagree"].value = False  # the widget changes the filter too
    assert len(view.shown) == len(cases)
    view.inputs["right_with"].value = "full_context"
    assert all(c.cells["full_context"].correct is True for c in view.shown)
    qa = view.shown[0].qa_id
    view.question.value = qa
    view.method.value = "full_context"
    assert view.opened == (qa, "full_context") and "wb-selected" in view.answer.value
    assert "wb-cf-grid" in view.static_html() and "wb-qv" in view.static_html()
