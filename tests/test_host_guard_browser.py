"""In a real Chromium: the app served by ``serve`` works on 127.0.0.1, refuses a page reached through a
rebound name, and its notices fetch nothing a run's file names ask for."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
if not CHROMIUM.exists():
    pytest.skip(f"Chromium not found at {CHROMIUM} (scripts/install_browser.sh)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pn = pytest.importorskip("panel")

from widgets import app as appmod  # noqa: E402

REBOUND = "rebind.attacker.test"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
        f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1"]  # what a DNS-rebinding attacker's resolver achieves


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run

    run = make_demo_run(tmp_path_factory.mktemp("run") / "r", n_conversations=1, max_questions=2)
    conv = next((run / "conversations").glob("*.json"))
    bad = run / "conversations" / "![b](beacon.png)[l](beacon-link.html).json"
    shutil.copy(conv, bad)
    bad.write_text("{ damaged")  # a problem whose message names this file
    return run


@pytest.fixture(scope="module")
def served(run):
    port = appmod.free_port()
    thread = appmod.serve(run, port=port, threaded=True)
    yield port
    thread.stop()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def test_the_app_works_on_loopback_and_its_notices_fetch_nothing(served, browser):
    page = browser.new_page()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"http://127.0.0.1:{served}/")
    page.get_by_text("Mechanisms fired").first.wait_for(timeout=90000)  # drawn over the websocket: it works
    notice = page.get_by_text("Problem reading the run").first
    notice.wait_for(timeout=30000)
    assert "![b](beacon.png)[l](beacon-link.html)" in notice.inner_text()  # shown as text
    assert not [u for u in requested if "beacon" in u]
    assert page.locator("a[href*='beacon']").count() == 0
    page.close()


def test_a_page_reached_through_a_rebound_name_gets_no_app(served, browser):
    page = browser.new_page()
    response = page.goto(f"http://{REBOUND}:{served}/")
    assert response.status == 403
    assert "answers only to its own names" in page.content()
    assert page.get_by_text("Mechanisms fired").count() == 0
    opened = page.evaluate(f"""() => new Promise(done => {{
        const ws = new WebSocket("ws://{REBOUND}:{served}/ws", ["bokeh"]);
        ws.onopen = () => done("open"); ws.onerror = () => done("refused"); }})""")
    assert opened == "refused"
    page.close()
