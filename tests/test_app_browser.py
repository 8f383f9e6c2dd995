"""The served app in a real headless Chromium (Playwright + Debian's /usr/bin/chromium).

Starts ``panel serve widgets/app.py --args --run DIR`` on a free 127.0.0.1 port over a scripted
demo run that contains HTML/JS payload turns, then: every tab loads, a memory search returns rows,
a trace steps forward, and the payloads render as literal text without running.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
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
TAB_MARKERS = {"Conversations": "search turns", "Memories": "search memories", "Traces": "running total",
               "Events": "refresh events (UPDATE/DELETE)", "Results": "by category",
               "Structures": "no structure view for this method"}

if not CHROMIUM.exists():
    pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium, or scripts/install_browser.sh)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited with {proc.returncode}: {proc.stdout.read()}")
        try:
            urllib.request.urlopen(url, timeout=5)
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
    url = f"http://127.0.0.1:{port}/app"
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


@pytest.fixture(scope="module")
def page(server, browser):
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(server)
    pg.wait_for_selector("text=Memory Workbench", timeout=60000)
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
    assert page.locator(".js-plotly-plot").count() >= 1
    assert page.errors == []


def test_memory_search_returns_rows(page):
    open_tab(page, "Memories")
    rows = page.locator(".tabulator-row")
    rows.first.wait_for(timeout=20000)
    total = rows.count()
    search(page, "text (substring) or meaning", "pwned")
    deadline = time.time() + 20
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
    assert "2" in page.locator(".wb-step-pos").first.inner_text()


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
    page.get_by_text(added["method"], exact=False).first.wait_for(timeout=30000)  # the card title, as text
    open_tab(page, "Traces")
    page.locator(".wb-box", has_text="What did Mal paste?").first.wait_for(timeout=20000)  # odd ids work in Traces
    open_tab(page, "Results")
    time.sleep(1.0)
    assert page.dialogs == [] and page.pwned_requests == []
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert height < 20000, height  # was 54,649 px with the whole 216 KB turn open
    assert page.errors == []
