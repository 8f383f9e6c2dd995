"""Save a PNG screenshot of each tab of the Panel app under docs/screenshots/.

    python scripts/screenshots.py                    # builds a scripted demo run in a temp dir
    python scripts/screenshots.py --run runs/demo --out docs/screenshots

Serves the app on a free 127.0.0.1 port (``widgets.app.serve(threaded=True)``) and drives
Debian's Chromium (``/usr/bin/chromium``) with Playwright. Needs no network.
"""
from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TAB_MARKERS = {"Question": "gold evidence rank",
               "Conversations": "search turns", "Memories": "search memories", "Traces": "running total",
               "Events": "refresh events (UPDATE/DELETE)", "Results": "by category",
               "Structures": "One card per method"}


def demo_run(path: Path) -> Path:
    spec = importlib.util.spec_from_file_location("_demo", ROOT / "scripts" / "make_demo_run.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    return demo.make_demo_run(path, n_conversations=1, max_questions=20)


def wait_http(url: str, timeout: float = 240.0) -> None:
    """Wait for ``url``. Once the port is open the first request builds the app, which takes a while
    on a loaded machine: it gets the time left (a cut-off request would queue one more build)."""
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=max(5.0, deadline - time.time()))
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.3)


def select_option(page, text: str) -> bool:
    """Pick the first option containing ``text`` in the first <select> that has one; False if none has."""
    select = page.locator("select").filter(has=page.locator("option", has_text=text)).first
    if not select.count():
        return False
    label = next(o for o in select.locator("option").all_inner_texts() if text in o)
    select.select_option(label=label)
    return True


def show_trace(page, question: str, method: str, step: int) -> None:
    """Traces tab: ``method``'s trace of ``question`` at ``step`` (1-based), reached by keyboard as a
    reader would, the step navigation scrolled to the top of the view."""
    if question:
        select_option(page, question)
    picker = page.locator("select").filter(has=page.get_by_role("option", name=method, exact=True))
    if not picker.count():
        print(f"no trace of {method!r} in this run")
        return
    picker.first.select_option(label=method)
    page.locator(".wb-trace-area .wb-box", has_text=f"{method} · ").first.wait_for(timeout=20000)
    area = page.locator(".wb-trace-area")
    area.focus()
    pos = page.locator(".wb-step-pos").first
    deadline = time.time() + 60
    while int(pos.inner_text()) < step and time.time() < deadline:
        before = pos.inner_text()
        area.press("ArrowRight")
        for _ in range(50):  # the server answers each key with the new step
            if pos.inner_text() != before:
                break
            time.sleep(0.1)
    page.evaluate("window.scrollTo(0, 0)")  # then the step navigation row at the top of the view
    page.locator(".wb-step-pos").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.evaluate("window.scrollBy(0, -64)")


def prepare(page, tab: str, question: str = "", method: str = "", trace: str = "") -> None:
    """Per-tab interaction so the screenshot shows something worth seeing."""
    if tab == "Traces" and trace:
        t_method, _, t_step = trace.partition(":")
        show_trace(page, question, t_method, int(t_step or 1))
    if tab == "Question" and question and select_option(page, question):
        page.locator(".wb-qv", has_text=question).first.wait_for(timeout=20000)
        if method and select_option(page, method):  # its row highlighted, the context its reader saw opened
            page.locator("details[open]").first.wait_for(timeout=20000)
    if tab == "Memories":
        page.locator(".tabulator-row").first.click()
        page.get_by_text("Event history").first.wait_for(timeout=20000)


def shoot_structures(page, out: Path, methods: Sequence[str]) -> list[Path]:
    """One PNG per method's card of the Structures tab (``structures-<method>.png``): the whole card,
    however tall, so a reviewer can read what a method's structure view shows."""
    saved = []
    for m in methods:
        card = page.locator(".wb-structure").filter(has=page.locator(".card-header", has_text=m)).first
        if not card.count():
            print(f"no Structures card for {m!r}")
            continue
        card.scroll_into_view_if_needed()
        time.sleep(1.0)
        path = out / f"structures-{m}.png"
        card.screenshot(path=str(path))
        saved.append(path)
    return saved


def shoot(url: str, out: Path, chromium: str, *, height: int = 1100, tabs=None, question: str = "",
          method: str = "", full_page: bool = False, structures: Sequence[str] = (), traces: Sequence[str] = ()
          ) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": height})
        page.goto(url)
        page.wait_for_selector("text=Memory Workbench", timeout=60000)
        for tab, marker in TAB_MARKERS.items():
            if tabs and tab not in tabs:
                continue
            page.locator(".bk-tab", has_text=tab).click()
            page.get_by_text(marker).first.wait_for(timeout=30000)
            shots = [(f"{tab.lower()}.png", traces[0] if tab == "Traces" and traces else "")]
            if tab == "Traces":  # one more screenshot per further METHOD:STEP
                shots += [(f"traces-{t.partition(':')[0]}.png", t) for t in traces[1:]]
            for name, trace in shots:
                prepare(page, tab, question, method, trace)
                time.sleep(1.0)  # let plotly finish drawing
                path = out / name
                page.screenshot(path=str(path), full_page=full_page)
                saved.append(path)
            if tab == "Structures":
                saved.extend(shoot_structures(page, out, structures or ()))
        browser.close()
    return saved


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", help="run directory (default: a fresh scripted demo run)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--height", type=int, default=1100, help="viewport height (the width is 1400)")
    ap.add_argument("--tabs", nargs="*", default=None, help="only these tabs (default: all)")
    ap.add_argument("--question", default="sample-1/q4", help="Question tab: the question to show (its id)")
    ap.add_argument("--method", default="hmem", help="Question tab: the method row to expand")
    ap.add_argument("--structure", nargs="*", default=(), metavar="METHOD",
                    help="Structures tab: also save each named method's whole card as structures-METHOD.png")
    ap.add_argument("--trace", nargs="*", default=["memr3:4", "hymem:2", "hmem:2", "ama:2"], metavar="METHOD:STEP",
                    help="Traces tab: the first METHOD:STEP (of --question) is traces.png, each further one "
                         "traces-METHOD.png; the step is reached with the arrow key")
    ap.add_argument("--full-page", action="store_true", help="the whole page, not only the viewport")
    a = ap.parse_args(argv)
    from widgets.app import free_port, serve

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(a.run) if a.run else demo_run(Path(tmp) / "demo")
        port = free_port()
        server = serve(run, port=port, threaded=True)
        try:
            url = f"http://127.0.0.1:{port}/"
            wait_http(url)
            for path in shoot(url, Path(a.out), a.chromium, height=a.height, tabs=a.tabs, question=a.question,
                              method=a.method, full_page=a.full_page, structures=a.structure, traces=a.trace):
                print(f"saved {path}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
