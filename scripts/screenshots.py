"""Save a PNG screenshot of each tab of the Panel app under docs/screenshots/.

    python scripts/screenshots.py                    # builds a scripted demo run in a temp dir
    python scripts/screenshots.py --run runs/demo --out docs/screenshots
    python scripts/screenshots.py --run runs/example --tabs Structures --structure hmem recmem \
        --pick "· sum8 " "Tomasz (person"             # each card, with a tree node and an entity picked

Serves the app on a free 127.0.0.1 port (``widgets.app.serve(threaded=True)``) and drives
Debian's Chromium (``/usr/bin/chromium``) with Playwright. Needs no network.
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TAB_MARKERS = {"Question": "gold evidence rank",
               "Conversations": "search turns", "Memories": "search memories",
               "Lifecycle": "derive from this turn", "Traces": "running total",
               "Events": "edits (UPDATE/DELETE)", "Results": "by category",
               "Structures": "pick a method", "How it works": "Its pipeline"}


def demo_run(path: Path) -> Path:
    spec = importlib.util.spec_from_file_location("_demo", ROOT / "scripts" / "make_demo_run.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    return demo.make_demo_run(path, n_conversations=1, max_questions=20)


def wait_http(url: str, timeout: float = 240.0) -> None:
    """Wait for the app to answer. The first request builds it (tens of seconds on a loaded
    machine), so each request gets the time left rather than a short timeout that would queue
    one more build per retry."""
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=max(5.0, deadline - time.time()))
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.3)


def display_name(method: str) -> str:
    """The method's title, as the app's pickers and headings say it (imported late, like the app)."""
    from workbench.methods import display_name as title

    return title(method)


def select_option(page, text: str) -> bool:
    """Pick the first option containing ``text`` in the first shown <select> that has one; False if none has."""
    select = page.locator("select:visible").filter(has=page.locator("option", has_text=text)).first
    if not select.count():
        return False
    label = next(o for o in select.locator("option").all_inner_texts() if text in o)
    select.select_option(label=label)
    return True


def show_trace(page, question: str, method: str, step: int, compare: str = "") -> None:
    """Traces tab: ``method``'s trace of ``question`` at ``step`` (1-based), reached by keyboard as a
    reader would, the step navigation scrolled to the top of the view. ``compare``: METHOD[:STEP], a
    second trace shown beside it ("compare with") at its own step."""
    if question:
        select_option(page, question)
    picker = page.locator("select").filter(has=page.get_by_role("option", name=display_name(method), exact=True))
    if not picker.count():
        print(f"no trace of {method!r} in this run")
        return
    picker.first.select_option(label=display_name(method))  # pickers say the method's title
    page.locator(".wb-trace-area .wb-box", has_text=f"{method} · ").first.wait_for(timeout=20000)
    step_to(page, 0, step)
    if compare:
        c_method, _, c_step = compare.partition(":")
        page.locator('select:has(> option[value="none"])').first.select_option(label=display_name(c_method))  # by title
        page.locator(".wb-trace-area").nth(1).locator(".wb-box", has_text=f"{c_method} · ").first.wait_for(
            timeout=20000)
        step_to(page, 1, int(c_step or 1))
    page.evaluate("window.scrollTo(0, 0)")  # then the step navigation row at the top of the view
    page.locator(".wb-step-pos").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.evaluate(f"window.scrollBy(0, {-175 if compare else -64})")  # with the pickers, when two are shown


def step_to(page, k: int, step: int) -> None:
    """Press → in the ``k``-th trace area until its stepper shows ``step`` (1-based)."""
    area = page.locator(".wb-trace-area").nth(k)
    area.focus()
    pos = page.locator(".wb-step-pos").nth(k)
    deadline = time.time() + 60
    while int(pos.inner_text()) < step and time.time() < deadline:
        before = pos.inner_text()
        area.press("ArrowRight")
        for _ in range(50):  # the server answers each key with the new step
            if pos.inner_text() != before:
                break
            time.sleep(0.1)


def prepare(page, tab: str, question: str = "", method: str = "", trace: str = "", turn: str = "",
            compare: str = "") -> None:
    """Per-tab interaction so the screenshot shows something worth seeing."""
    if tab == "Traces" and trace:
        spec, _, t_question = trace.partition("@")  # METHOD:STEP, or METHOD:STEP@QUESTION for another question
        t_method, _, t_step = spec.partition(":")
        show_trace(page, t_question or question, t_method, int(t_step or 1), compare)
    if tab == "Question" and question and select_option(page, question):
        page.locator(".wb-qv", has_text=question).first.wait_for(timeout=20000)
        if method and select_option(page, display_name(method)):  # its row highlighted, its context opened
            page.locator("details[open]").first.wait_for(timeout=20000)
    if tab == "Memories":
        if select_option(page, display_name("hmem")):  # a method with a structure: its units have events and readers
            time.sleep(1.0)
        semantic = page.locator(".bk-btn", has_text="semantic")
        if semantic.count():  # semantic search with the run's own embedder, scores in the first column
            semantic.first.click()
            box = page.locator('input[placeholder="text (substring) or meaning"]')
            box.fill("what is the greyhound called now")
            box.press("Enter")
            page.get_by_text("ranked by score").first.wait_for(timeout=60000)
            # the note is drawn before the table's new rows: wait for the score column the ranked rows bring
            page.locator(".tabulator-col", has_text="score").first.wait_for(timeout=60000)
        page.locator(".tabulator-row").first.click()
        page.get_by_text("Event history").first.wait_for(timeout=20000)
    if tab == "Lifecycle" and turn and select_option(page, f"{turn} "):
        page.locator(".wb-life", has_text=f"Turn {turn}").first.wait_for(timeout=20000)


def graph_frames(card) -> list:
    """The entity graph pages inside a card (``widgets/templates/entity_graph.html``)."""
    frames = [h.content_frame() for h in card.locator("iframe").element_handles()]
    return [f for f in frames if f is not None and f.query_selector("#mynetwork")]


def drawn(page, timeout: float = 60.0) -> None:
    """Wait until what a tab draws after its text (charts, pages, card bodies: ``PlotHolder``) is
    in, no slot placeholder left."""
    from widgets.plotly_loader import PLACEHOLDER

    end = time.monotonic() + timeout
    while page.locator(f".{PLACEHOLDER}").count() and time.monotonic() < end:
        time.sleep(0.02)


def settle(card) -> None:
    """Wait until a card's entity graph pages have laid themselves out (``body[data-ready]``); a page
    still settling shows a zoomed-in fragment or nothing."""
    for frame in graph_frames(card):
        frame.wait_for_selector("body[data-ready]", timeout=60000)


def pick(page, card, text: str) -> None:
    """Select the option containing ``text`` in the card's pickers; when that redraws a graph page,
    wait for the new page (the old one is marked first, so it cannot pass for the new one)."""
    select = card.locator("select").filter(has=page.locator("option", has_text=text)).first
    if not select.count():
        return
    for frame in graph_frames(card):
        frame.evaluate("window.__shown = true")
    from playwright.sync_api import Error as PlaywrightError

    label = next(o for o in select.locator("option").all_inner_texts() if text in o)
    select.select_option(label=label)
    deadline = time.time() + 30
    while time.time() < deadline:
        time.sleep(1.0)
        try:
            if any(not f.evaluate("window.__shown === true") for f in graph_frames(card)):
                return  # a new graph page: settle() waits for its layout
        except PlaywrightError:  # a frame replaced while being read: look again
            continue
        if time.time() > deadline - 25:  # 5 s and no new page: this pick redraws no graph
            return


def shoot_structures(page, out: Path, methods: Sequence[str], picks: Sequence[str] = ()) -> list[Path]:
    """One PNG per method's card of the Structures tab (``structures-<method>.png``): the whole card,
    however tall, so a reviewer can read what a method's structure view shows. ``picks``: option
    texts to select in the card's pickers first (a tree node, an entity)."""
    from playwright.sync_api import Error as PlaywrightError

    saved = []
    for m in methods:
        # the tab shows one method at a time: pick it first
        title = display_name(m)  # the picker says the title, the heading the title and the run's name
        page.locator(".bk-btn-group button", has_text=re.compile(rf"^\s*{re.escape(title)}\s*$")).first.click()
        heading = rf"^\s*{re.escape(title)}(\s+{re.escape(m)})?\s*$"
        card = page.locator(".wb-structure").filter(
            has=page.locator(".wb-structure-title", has_text=re.compile(heading))).first
        try:  # the picked method's section is drawn anew
            card.wait_for(timeout=30000)
        except PlaywrightError:
            print(f"no Structures card for {m!r}")
            continue
        card.scroll_into_view_if_needed()
        for text in picks:
            pick(page, card, text)
        # A card taller than the window is shot with a window as tall as the card: Chromium leaves a
        # sandboxed graph frame blank when it is captured from beyond the window.
        size = page.viewport_size
        box = card.bounding_box()
        if box and box["height"] + 40 > size["height"]:
            page.set_viewport_size({"width": size["width"], "height": int(box["height"]) + 40})
        card.scroll_into_view_if_needed()
        settle(card)
        time.sleep(1.5)
        path = out / f"structures-{m}.png"
        card.screenshot(path=str(path))
        page.set_viewport_size(size)
        saved.append(path)
    return saved


def shoot_unit(page, out: Path, method: str) -> list[Path]:
    """From the turn shown in the Lifecycle tab, click a unit of ``method`` (of the first method
    listed when it has none) and save that unit's lifecycle as ``lifecycle-unit.png``."""
    section = page.locator(f'details[data-method="{method}"]')
    if not section.count():
        section = page.locator("details[data-method]")
    if not section.count():
        print("no unit in the Lifecycle tab")
        return []
    section = section.first
    if section.get_attribute("open") is None:  # a long unit list starts folded
        section.locator("summary").first.click()
    section.locator("a.wb-link").first.click()
    page.get_by_text("Answers whose reader saw it").first.wait_for(timeout=20000)
    time.sleep(1.0)
    scroll_to_tabs(page)
    path = out / "lifecycle-unit.png"
    page.screenshot(path=str(path))
    return [path]


def scroll_to_tabs(page) -> None:
    """Scroll so the tab bar is at the top: the tab's content, not the run header, fills the shot."""
    top = page.locator(".bk-tab").first.bounding_box()["y"]  # the tabs live in a shadow root
    page.evaluate(f"window.scrollBy(0, {top - 8})")
    time.sleep(0.5)


def shoot_changes(page, out: Path) -> list[Path]:
    """The Events table filtered to UPDATE events (before and after side by side): ``events-changes.png``."""
    kinds = page.locator(".choices").first
    kinds.click()
    page.keyboard.type("UPDATE")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.get_by_text("events 1–").first.wait_for(timeout=20000)
    time.sleep(1.5)
    page.locator(".wb-events").first.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -60)")
    time.sleep(0.5)
    path = out / "events-changes.png"
    page.screenshot(path=str(path))
    return [path]


def shoot_how(page, out: Path, methods: Sequence[str], *, full_page: bool = False) -> list[Path]:
    """One PNG per method's How it works page (``how-<method>.png``), picked with the tab's method buttons (their
    labels are the methods' titles, e.g. H-Mem)."""
    saved = []
    for m in methods:
        button = page.locator(".bk-btn-group button", has_text=re.compile(rf"^\s*{re.escape(m)}\s*$")).first
        if not button.count():
            print(f"no How it works page for {m!r}")
            continue
        button.click()
        page.get_by_text(f"How {m} works").first.wait_for(timeout=30000)
        drawn(page)
        time.sleep(1.0)
        path = out / f"how-{re.sub(r'[^a-z0-9]+', '', m.lower())}.png"
        page.screenshot(path=str(path), full_page=full_page)
        saved.append(path)
    return saved


def shoot(url: str, out: Path, chromium: str, *, height: int = 1100, width: int = 1400, tabs=None, question: str = "",
          method: str = "", turn: str = "", full_page: bool = False, structures: Sequence[str] = (),
          picks: Sequence[str] = (), traces: Sequence[str] = (), compare: str = "",
          how: Sequence[str] = ()) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(url, timeout=180000)  # each browser session builds a fresh app: slow on a loaded machine
        page.wait_for_selector("text=Memory Workbench", timeout=60000)
        # plotly.js comes just after the first paint; until it is there, charts show a loading notice
        page.wait_for_function("window.Plotly !== undefined", timeout=120000)
        for tab, marker in TAB_MARKERS.items():
            if tabs and tab not in tabs:
                continue
            page.locator(".bk-tab", has_text=tab).click()
            page.get_by_text(marker).first.wait_for(timeout=30000)
            drawn(page)
            shots = [(f"{tab.lower().replace(' ', '-')}.png", traces[0] if tab == "Traces" and traces else "")]
            if tab == "Traces":  # one more screenshot per further METHOD:STEP
                shots += [(f"traces-{t.partition(':')[0]}.png", t) for t in traces[1:]]
            for name, trace in shots:
                prepare(page, tab, question, method, trace, turn, compare if name == "traces.png" else "")
                time.sleep(1.0)  # let plotly finish drawing
                path = out / name
                page.screenshot(path=str(path), full_page=full_page)
                saved.append(path)
            if tab == "Lifecycle":
                saved.extend(shoot_unit(page, out, method))
            if tab == "Events":
                saved.extend(shoot_changes(page, out))
            if tab == "Structures":
                saved.extend(shoot_structures(page, out, structures or (), picks))
            if tab == "How it works":
                saved.extend(shoot_how(page, out, how, full_page=full_page))
        browser.close()
    return saved


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", help="run directory (default: a fresh scripted demo run)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--height", type=int, default=1100, help="viewport height")
    ap.add_argument("--width", type=int, default=1400, help="viewport width (1280 with --height 720: a projector)")
    ap.add_argument("--tabs", nargs="*", default=None, help="only these tabs (default: all)")
    ap.add_argument("--question", default="sample-1/q4", help="Question tab: the question to show (its id)")
    ap.add_argument("--method", default="hmem", help="Question tab: the method row to expand; Lifecycle tab: "
                    "the method whose unit is opened (lifecycle-unit.png)")
    ap.add_argument("--turn", default="D4:3", help="Lifecycle tab: the turn to show")
    ap.add_argument("--structure", nargs="*", default=(), metavar="METHOD",
                    help="Structures tab: also save each named method's whole card as structures-METHOD.png")
    ap.add_argument("--pick", nargs="*", default=(), metavar="TEXT",
                    help="Structures cards: select the option containing TEXT in a card's pickers before the shot")
    ap.add_argument("--trace", nargs="*", default=["memr3:4", "hymem:2", "hmem:2", "ama:2"],
                    metavar="METHOD:STEP[@QUESTION]",
                    help="Traces tab: the first METHOD:STEP (of --question, or of QUESTION when given) is traces.png, "
                         "each further one traces-METHOD.png; the step is reached with the arrow key")
    ap.add_argument("--how", nargs="*", default=(), metavar="TITLE",
                    help="How it works tab: also save each named method's page (by its title, e.g. H-Mem) as "
                         "how-<title>.png")
    ap.add_argument("--compare", default="", metavar="METHOD[:STEP]",
                    help="Traces tab: show METHOD's trace beside the first --trace (compare with), at STEP")
    ap.add_argument("--full-page", action="store_true", help="the whole page, not only the viewport")
    ap.add_argument("--present", action="store_true", help="open the app in presentation mode (?present=1)")
    a = ap.parse_args(argv)
    from widgets.app import free_port, serve

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(a.run) if a.run else demo_run(Path(tmp) / "demo")
        port = free_port()
        server = serve(run, port=port, threaded=True)
        try:
            url = f"http://127.0.0.1:{port}/"
            wait_http(url)
            page = url + ("?present=1" if a.present else "")
            for path in shoot(page, Path(a.out), a.chromium, height=a.height, width=a.width, tabs=a.tabs,
                              question=a.question,
                              method=a.method, turn=a.turn, full_page=a.full_page, structures=a.structure,
                              picks=a.pick, traces=a.trace, compare=a.compare, how=a.how):
                print(f"saved {path}")
        finally:
            server.stop()
            settle_workers()


def settle_workers(timeout: float = 180.0) -> None:
    """Wait for the app's worker threads (the read-ahead that loads the embedder, a first semantic search's
    embedding) before the process exits: ended mid-load, the native thread pool they started aborted the process
    ("terminate called without an active exception", exit 134) after the screenshots were saved."""
    import threading

    end = time.monotonic() + timeout
    for t in threading.enumerate():
        if t is not threading.current_thread() and t.name.startswith(("workbench-warm", "embed-")):
            t.join(max(0.0, end - time.monotonic()))


if __name__ == "__main__":
    main()
