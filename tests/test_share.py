"""Share and export (#42 item 5), in-process: the view in the URL (``widgets.url_state``), a trace as a
standalone HTML page (``widgets.trace_export``) and two traces side by side in the Traces tab."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

pn = pytest.importorskip("panel")

from panel.io.location import Location  # noqa: E402

from widgets import app as appmod  # noqa: E402
from widgets.html import esc  # noqa: E402
from widgets.url_state import UrlState, parse_query, query_string, step_number  # noqa: E402

RAW_PAYLOADS = ("<script>window.__pwned=1</script>", '<img src=x onerror="window.__pwned=2">')
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run

    return make_demo_run(tmp_path_factory.mktemp("run") / "share", n_conversations=2, max_questions=3,
                         inject_html=True)


class Checked(HTMLParser):
    """Every tag balanced (void elements aside) and every attribute collected."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.attrs, self.tags, self.text = [], [], [], [], []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> at {self.getpos()} closes {self.stack[-1:]}")
            if tag in self.stack:
                while self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


# -- the URL -------------------------------------------------------------------------------------------
def test_a_query_is_read_as_plain_strings_and_junk_is_dropped():
    assert parse_query("?q=sample-1%2Fq4&step=01&method=ama%5Bpaper-judge%5D&x=1") == \
        {"q": "sample-1/q4", "step": "01", "method": "ama[paper-judge]"}  # "01" stays a string, "[" is not JSON
    assert parse_query("?q=a&q=b") == {"q": "a"}  # the first of a repeated key
    assert parse_query("?q=" + "x" * 600) == {} and parse_query("?" + "a=1&" * 100) == {}
    assert parse_query(None) == {} and parse_query(b"?q=a") == {} and parse_query("?%zz=%") == {}
    assert query_string({"step": "2", "q": "a/b", "tab": "Traces", "junk": "x"}) == "?tab=Traces&q=a%2Fb&step=2"
    assert [step_number(v, 3) for v in ("1", "3", "0", "4", "-1", "²", "1.0", "", None, "9" * 20)] == \
        [0, 2, None, None, None, None, None, None, None, None]


def test_a_url_restores_the_tab_question_method_and_steps_and_changes_write_it_back(run):
    app = appmod.build_app(run)
    loc = Location(search="?conv=sample-2&tab=Traces&q=sample-2%2Fq1&method=eager_facts&step=2&cmp=naive_rag&cstep=2")
    url = UrlState(app, loc)
    traces = app.views["Traces"]
    assert app.store.conv_id == "sample-2" and list(app.slots)[app.tabs.active] == "Traces"
    assert traces.question.value == "sample-2/q1" and traces.method.value == "eager_facts"
    assert traces.index == 1 and "Step 2 / 2" in traces.html
    assert traces.compared == "naive_rag" and traces.other.index == 1
    assert parse_query(loc.search) == {"conv": "sample-2", "tab": "Traces", "q": "sample-2/q1",
                                       "method": "eager_facts", "cmp": "naive_rag", "step": "2", "cstep": "2"}
    traces.question.value = "sample-2/q0"  # a new question: its first steps
    assert parse_query(loc.search)["q"] == "sample-2/q0" and parse_query(loc.search)["step"] == "1"
    traces.next()
    assert parse_query(loc.search)["step"] == "2"
    traces.compare.value = "none"
    assert "cmp" not in parse_query(loc.search) and "cstep" not in parse_query(loc.search)
    app.tabs.active = list(app.slots).index("Question")
    question = app.views["Question"]
    question.method.value = "full_context"
    assert parse_query(loc.search) == {"conv": "sample-2", "tab": "Question", "q": question.question.value,
                                       "method": "full_context"}
    assert url.state == parse_query(loc.search)


def test_a_url_opens_a_turn_or_units_lifecycle_and_a_methods_page(run):
    """Review R4a: a case study links straight to "unit X's lifecycle" or to one method's structures or How it works
    page; following a link inside Lifecycle writes the new target back. Ids the run does not hold are ignored."""
    from workbench.rundir import RunDir

    rd = RunDir(run)
    conv = rd.conversation_ids()[0]
    turn = rd.conversation(conv).turns[2].id
    unit = str(rd.memories("naive_rag", conv)[0]["id"])
    app = appmod.build_app(run)
    loc = Location(search=f"?conv={conv}&tab=Lifecycle&turn={turn}")
    UrlState(app, loc)
    life = app.views["Lifecycle"]
    assert life.target == ("turn", turn) and parse_query(loc.search)["turn"] == turn
    life.show(("unit", "naive_rag", unit))  # a link followed inside the tab
    assert {k: parse_query(loc.search).get(k) for k in ("method", "unit")} == {"method": "naive_rag", "unit": unit}
    assert "turn" not in parse_query(loc.search)

    other = appmod.build_app(run)
    UrlState(other, Location(search=f"?conv={conv}&tab=Lifecycle&method=naive_rag&unit={unit}"))
    assert other.views["Lifecycle"].target == ("unit", "naive_rag", unit)
    bad = appmod.build_app(run)
    UrlState(bad, Location(search=f"?conv={conv}&tab=Lifecycle&method=naive_rag&unit=nope&turn=D99:99"))
    assert bad.views["Lifecycle"].target == appmod.build_app(run).views["Lifecycle"].target  # as it opens

    pages = appmod.build_app(run)
    loc = Location(search="?tab=Structures&page=full_context")
    UrlState(pages, loc)
    assert pages.views["Structures"].method.value == "full_context" and parse_query(loc.search)["page"] == \
        "full_context"
    pages.views["Structures"].method.value = "naive_rag"
    assert parse_query(loc.search)["page"] == "naive_rag"
    how = appmod.build_app(run)
    loc = Location(search="?tab=How+it+works&page=memr3")
    UrlState(how, loc)
    assert how.views["How it works"].method.value == "memr3" and parse_query(loc.search)["page"] == "memr3"
    UrlState(appmod.build_app(run), Location(search="?tab=How+it+works&page=%3Cscript%3E"))  # ignored, no error


def test_method_opens_that_method_on_every_tab_with_a_method_picker(run):
    """Issue #65: ``method=`` is the one word for a method in every link: Memories read nothing of it, Structures
    and How it works only ``page=`` (which still works, and wins where both are given)."""
    for tab in ("Memories", "Structures", "How+it+works"):
        app = appmod.build_app(run)
        loc = Location(search=f"?tab={tab}&method=naive_rag")
        UrlState(app, loc)
        assert app.views[tab.replace("+", " ")].method.value == "naive_rag", tab
    both = appmod.build_app(run)
    UrlState(both, Location(search="?tab=Structures&page=full_context&method=naive_rag"))
    assert both.views["Structures"].method.value == "full_context"
    mem = appmod.build_app(run)
    loc = Location(search="?tab=Memories&method=naive_rag")
    UrlState(mem, loc)
    mem.views["Memories"].method.value = "full_context"  # a pick in the tab is written back
    assert parse_query(loc.search)["method"] == "full_context"
    UrlState(appmod.build_app(run), Location(search="?tab=Memories&method=%3Cscript%3E"))  # ignored, no error


def test_present_1_opens_the_app_in_presentation_mode_and_keeps_it_in_the_url(run):
    """Review T1: a teacher's link opens with one header line (no details, no census); the mode stays in the URL as
    the view changes. Any other value of ``present`` is ignored."""
    app = appmod.build_app(run)
    assert "<details>" in app._runline.object and app._census.visible
    loc = Location(search="?present=1&tab=Results")
    UrlState(app, loc)
    assert app.presenting and not app._census.visible and "<details>" not in app._runline.object
    assert "Memory Workbench" in app._runline.object and "judge:" in app._runline.object  # the run line stays
    assert parse_query(loc.search) == {"conv": app.store.conv_id, "tab": "Results", "present": "1"}
    app.tabs.active = list(app.slots).index("Question")
    assert parse_query(loc.search)["present"] == "1"
    assert app.present_toggle.value  # the header's toggle shows the mode the URL opened
    app.present_toggle.value = False  # and turns it off in one click, the URL following
    assert not app.presenting and app._census.visible and "<details>" in app._runline.object
    assert "present" not in parse_query(loc.search)
    app.present_toggle.value = True
    assert app.presenting and parse_query(loc.search)["present"] == "1"
    app.present(False)
    assert app._census.visible and "<details>" in app._runline.object and not app.present_toggle.value
    other = appmod.build_app(run)
    UrlState(other, Location(search="?present=yes"))
    assert not other.presenting


@pytest.mark.parametrize("search", [
    "?conv=nope&tab=Traces&q=sample-1%2Fq99&method=%3Cscript%3E&step=7&cmp=full_context&cstep=-3",
    "?tab=Structures%00&q=%5B1%2C2%5D&step=1e3&method=__class__",
    "?" + "&".join(f"k{i}=v" for i in range(200)),
    "?tab=../../etc&conv=%E2%80%AE&q=" + "%F0%9F%92%A3" * 100,
    "?q&&=x&tab&step=&method==&cmp=%",
])
def test_a_malformed_url_is_ignored_and_the_app_opens_as_usual(run, search):
    app = appmod.build_app(run)
    default = appmod.build_app(run)
    UrlState(app, Location(search=search))  # never raises
    assert app.store.conv_id == default.store.conv_id
    assert app.views["Question"].question.value == default.views["Question"].question.value
    if app.views.built("Traces"):  # tab=Traces was valid: the rest was not
        traces = app.views["Traces"]
        assert traces.question.value == default.views["Traces"].question.value
        assert traces.index == 0 and traces.method.value in traces.method.values
    assert app.store.errors == []


# -- a trace exported --------------------------------------------------------------------------------------
def test_a_trace_exports_as_a_standalone_page_with_every_step(run):
    app = appmod.build_app(run)
    traces = app.views["Traces"]
    traces.question.value = "sample-1/inject"  # question and answer carry HTML/JS payloads
    traces.method.value = "naive_rag"
    traces.next()  # the page holds every step whichever is shown
    page = traces.main.export_html()
    checked = Checked(page)
    assert page.startswith("<!doctype html>") and checked.errors == [] and checked.stack == []
    assert any(t == "meta" and k == "http-equiv" and v == "Content-Security-Policy" for t, k, v in checked.attrs)
    assert "default-src 'none'" in page
    assert "script" not in checked.tags and not {"iframe", "img", "link", "object", "embed"} & set(checked.tags)
    for tag, key, value in checked.attrs:  # nothing that could load: no src, no outside link, no url()
        assert key != "src" and not (key.startswith("on")), (tag, key)
        assert not re.match(r"\s*(https?:|//|javascript:|data:)", value, re.I), (tag, key, value)
        if key == "style":
            assert "url(" not in value
    assert "url(" not in page and "@import" not in page
    assert not any(p in page for p in RAW_PAYLOADS) and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    text = " ".join(checked.text)
    answer = traces.answer
    assert answer.question in text and answer.text in text  # the question and the answer, as text
    for i, step in enumerate(answer.steps):
        assert f"Step {i + 1} / {len(answer.steps)}" in text and step.title in text
    assert page.count('class="wb-export-step" id="step-') == len(answer.steps)
    assert "Final answer" in text and "gold answer:" in text


def test_the_download_button_names_the_file_after_question_and_method(run):
    traces = appmod.build_app(run).views["Traces"]
    traces.question.value = "sample-1/q0"
    traces.method.value = "eager_facts"
    data = traces.main.export.callback().read().decode()
    assert traces.main.export.filename == "sample-1-q0-eager-facts.html"
    assert "Cosine top-10 facts" in data and "Answer from retrieved memories" in data


# -- side by side --------------------------------------------------------------------------------------
def test_two_methods_side_by_side_each_with_its_own_stepper(run):
    traces = appmod.build_app(run).views["Traces"]
    traces.question.value = "sample-1/q1"
    traces.method.value = "naive_rag"
    assert traces.compare.values == ["none", "full_context", "eager_facts"]  # every other method
    assert len(traces.body.objects) == 1 and not traces.other.export.visible
    traces.compare.value = "eager_facts"
    main, other = traces.main, traces.other
    assert traces.body.objects == [main.column, other.column] and other.export.visible
    question = esc(traces.answer.question)
    assert question in main.html and question in other.html  # the same question, both rendered
    # each pane's answer line names its method by title, the run's name beside it (widgets.html.method_title_html)
    from widgets.html import method_title_html
    assert f"{method_title_html('naive_rag')} · 2 steps" in main.html
    assert f"{method_title_html('eager_facts')} · 2 steps" in other.html
    assert "Cosine top-10 chunks" in main.html and "Cosine top-10 facts" in other.html
    other.next()  # the second stepper moves alone
    assert (main.index, other.index) == (0, 1) and "Step 2 / 2" in other.html and "Step 1 / 2" in main.html
    traces.question.value = "sample-1/q0"  # a new question: both traces of it, from their first step
    assert traces.compared == "eager_facts" and (main.index, other.index) == (0, 0)
    assert esc(traces.answer.question) in other.html
    traces.question.value = "sample-1/inject"  # run text carrying HTML/JS payloads, in both traces: inert
    for pane in (main, other):
        pane.goto(1)
        assert not any(p in pane.html for p in RAW_PAYLOADS) and "&lt;script&gt;" in pane.html
    traces.method.value = "eager_facts"  # the compared method picked as the main one: the comparison ends
    assert traces.compared is None and "eager_facts" not in traces.compare.values
    assert traces.body.objects == [main.column]
