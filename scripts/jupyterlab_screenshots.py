"""Screenshot every widget as it looks in JupyterLab, saved under docs/screenshots/jupyterlab/.

    python scripts/jupyterlab_screenshots.py                 # replays the demo cassette into a temp run
    python scripts/jupyterlab_screenshots.py --run runs/demo --out docs/screenshots/jupyterlab

Writes a small gallery notebook (one cell per widget, each built from the saved run alone: no LLM,
no network), starts a token-less JupyterLab on a free 127.0.0.1 port with that notebook's folder as
its root, opens it in Debian's Chromium (``/usr/bin/chromium``) through Playwright, runs all cells
with a live kernel, performs one interaction per widget where it shows something (a step forward,
a node selected, a slider moved) and saves a PNG of each output. Widgets whose method is missing
from the run are reported and skipped, never faked.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scripts.screenshots import CHROMIUM_ARGS, pick, settle, wait_http  # noqa: E402

VIEWPORT = {"width": 1400, "height": 1500}

SETUP = """\
from workbench.rundir import RunDir
import widgets
run = RunDir({run!r})
conv_id = run.conversation_ids()[0]
conv = run.conversation(conv_id)
rows = {{}}
for row, ans in run.answers(conv_id):
    rows.setdefault(row["method"], []).append((row, ans))
def first(method, pred=lambda row, ans: True):
    return next(((r, a) for r, a in rows.get(method, []) if pred(r, a)), (None, None))
qas = {{q.id: q for q in conv.qa}}
print(conv_id, sorted(rows))
"""

# name -> (methods it needs, code building the widget as the cell's last expression)
GALLERY = {
    "trace_stepper": (("hymem",), """\
row, ans = first("hymem", lambda r, a: len(a.steps) > 1)
widgets.TraceStepper(ans, conversation=conv, qa=qas.get(row["qa_id"]),
                     memories=run.memories("hymem", conv_id))"""),
    # MemR3 or a variant of it (memr3[one-chunk]): the answer whose router listed the most gaps, then the longest
    "evidence_gap": (("memr3",), """\
def gaps(ans):
    return sum(len(s.data.get("gaps") or []) for s in ans.steps if s.kind == "router")
cands = [ra for m in rows if m.split("[")[0] == "memr3" for ra in rows[m]]
row, ans = max(cands, key=lambda ra: (gaps(ra[1]), len(ra[1].steps)))
widgets.EvidenceGapView(ans, conversation=conv, qa=qas.get(row["qa_id"]))"""),
    "event_timeline_ama": (("ama",), """\
widgets.EventTimeline(run.events("ama", conv_id), conversation=conv)"""),
    # AMA's Refresher edits in the run itself (UPDATE and DELETE only)
    "event_timeline_ama_refresh": (("ama",), """\
widgets.EventTimeline(run.events("ama", conv_id), conversation=conv).set_filter(kinds=["UPDATE", "DELETE"])"""),
    "tree_view": (("hmem",), """\
widgets.TreeView(run.structures("hmem", conv_id), conversation=conv)"""),
    "graph_view": (("hmem",), """\
widgets.GraphView(run.structures("hmem", conv_id), conversation=conv, height=520)"""),
    "lifecycle": (("hmem",), """\
widgets.LifecycleView.from_run(run.path, conv_id, turn="D4:3")"""),
    "cluster_view": (("recmem",), """\
widgets.ClusterView(run.structures("recmem", conv_id))"""),
    "cost_accuracy": ((), """\
widgets.CostAccuracyChart(run.results())"""),
    # the first question the methods disagree on (some right, some wrong by the checker), else the first
    "compare": ((), """\
def verdicts(qid):
    return {(r.get("check") or {}).get("correct") for r in run.results() if r["qa_id"] == qid}
qids = list(dict.fromkeys(r["qa_id"] for r in run.results()))
qid = next((q for q in qids if {True, False} <= verdicts(q)), qids[0])
same = [(r, a) for m in rows for r, a in rows[m] if r["qa_id"] == qid]
widgets.compare({r["method"]: a for r, a in same}, qa=next(q for q in conv.qa if q.id == qid), conversation=conv)"""),
}


def gallery_notebook(run: Path, methods: set[str], only=None) -> tuple[dict, list[str], list[str]]:
    """The notebook JSON, the widget names it shows (in cell order) and those skipped; ``only``:
    just these widgets."""
    cells = [{"id": "setup", "cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": SETUP.format(run=str(run))}]
    shown, skipped = [], []
    for name, (needs, code) in GALLERY.items():
        if only and name not in only:
            continue
        if not set(needs) <= methods:
            skipped.append(f"{name} (run has no {', '.join(sorted(set(needs) - methods))})")
            continue
        cells.append({"id": name.replace("_", "-"), "cell_type": "code", "metadata": {"tags": [name]},
                      "execution_count": None, "outputs": [],
                      "source": code})
        shown.append(name)
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                      "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    return nb, shown, skipped


def replayed_demo_run(path: Path) -> Path:
    """The demo run rebuilt from the committed cassette alone (no model is loaded)."""
    from workbench.demo import run_demo

    return run_demo(out=path, serve=False, llm_mode="replay")


def _press_slider(cell, index: int, key: str, times: int = 1) -> None:
    handle = cell.locator(".noUi-handle").nth(index)  # ipywidgets 8 sliders take arrow keys
    handle.focus()
    for _ in range(times):
        handle.press(key)


def _select(cell, prefer: str | None = None) -> None:
    """Pick an option of the cell's first drop-down: the first whose label contains ``prefer``, else the last."""
    select = cell.locator("select").first
    labels = select.evaluate("s => Array.from(s.options).map(o => o.label)")
    pick = next((i for i, lab in enumerate(labels) if prefer and prefer in lab), len(labels) - 1)
    select.select_option(index=pick)


def interact(cell, name: str) -> None:
    """One interaction per widget, so the picture shows it responding."""
    if name == "trace_stepper":
        cell.get_by_role("button", name="next ▶").first.click()
    elif name == "evidence_gap":
        _press_slider(cell, 0, "ArrowRight", 2)
    elif name == "tree_view":
        _select(cell, "L3")
    elif name == "graph_view":
        pick(cell.page, cell, "Priya")  # redraws the graph page with Priya lit up
        settle(cell)
    elif name == "cluster_view":
        _press_slider(cell, 1, "ArrowRight")  # theta_count + 1: the replay redraws without an LLM
    time.sleep(1.5)


def capture(page, output, path: Path) -> None:
    """The output from its top edge down to the bottom of the viewport (long tables are cut, not shrunk)."""
    output.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.5)
    box = output.bounding_box()
    visible = VIEWPORT["height"] - box["y"] - 40  # stop above JupyterLab's status bar
    page.screenshot(path=str(path), clip={"x": box["x"], "y": box["y"], "width": box["width"],
                                          "height": min(box["height"], visible)})


def shoot(url: str, names: list[str], out: Path, chromium: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        try:
            saved = _shoot_cells(page, url, names, out)
        except Exception:
            page.screenshot(path=str(out / "_failure.png"))  # what the page showed when it went wrong
            print(f"failed; the page is in {out / '_failure.png'}", file=sys.stderr)
            raise
        finally:
            browser.close()
    return saved


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


CELL_DONE = ("i => { const nb = window.jupyterapp.shell.currentWidget; const c = nb.content.widgets[i];"
             " return c.model.executionCount !== null && nb.sessionContext.session.kernel.status === 'idle'; }")
KERNEL_BUSY = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'busy'"


def _shoot_cells(page, url: str, names: list[str], out: Path) -> list[Path]:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    saved = []
    log(f"opening {url}")
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=60000)
    # one cell at a time, each waited for: a single "run all" right after the kernel reports idle can
    # leave the later cells unexecuted while the kernel connection settles
    n_cells = len(names) + 1  # the setup cell, then one per widget
    page.wait_for_function("n => window.jupyterapp.shell.currentWidget.content.widgets.length >= n", arg=n_cells,
                           timeout=60000)  # the notebook model fills in after the first cell is drawn
    page.wait_for_function("() => { const s = window.jupyterapp.shell.currentWidget.sessionContext.session;"
                           " return s && s.kernel && s.kernel.status === 'idle'; }", timeout=90000)
    for i in range(n_cells):
        log(f"running cell {i + 1}/{n_cells}")
        for attempt in (1, 2):  # a run request sent while the kernel connection settles can be dropped
            page.evaluate("i => { const nb = window.jupyterapp.shell.currentWidget; nb.content.activeCellIndex = i;"
                          " return window.jupyterapp.commands.execute('notebook:run-cell'); }", i)
            try:
                page.wait_for_function(CELL_DONE, arg=i, timeout=30000)
                break
            except PlaywrightTimeout:
                if page.evaluate(KERNEL_BUSY):  # still running, not dropped: wait, never run it twice
                    page.wait_for_function(CELL_DONE, arg=i, timeout=180000)
                    break
                if attempt == 2:
                    raise
                log(f"cell {i + 1} did not run; asking again")
        failed = page.evaluate("i => window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs"
                               ".toJSON().filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)",
                               i)
        if failed:
            raise RuntimeError(f"gallery cell {i + 1} raised {failed[0]}")
    log("all cells executed")
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    # stderr output is warnings; errors were raised above
    errors = page.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']")
    for i, name in enumerate(names, start=1):
        cell = cells.nth(i)
        cell.scroll_into_view_if_needed()
        output = cell.locator(".jp-OutputArea").first
        output.wait_for(timeout=60000)
        time.sleep(2.0)  # plotly / vis.js draw after the widget view attaches
        interact(cell, name)
        path = out / f"{name}.png"
        log(f"screenshot {path.name}")
        capture(page, output, path)
        saved.append(path)
    if errors.count():
        print(f"warning: {errors.count()} stderr outputs in the gallery:\n"
              + "\n".join(errors.nth(i).inner_text()[:500] for i in range(errors.count())), file=sys.stderr)
    return saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", help="saved run directory (default: the demo replayed from its cassette)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "jupyterlab"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--only", nargs="*", choices=sorted(GALLERY), metavar="WIDGET",
                    help=f"only these widgets (of {', '.join(GALLERY)})")
    a = ap.parse_args(argv)
    from widgets.app import free_port
    from workbench.rundir import RunDir

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        run = Path(a.run).resolve() if a.run else replayed_demo_run(tmp / "run")
        nb, names, skipped = gallery_notebook(run, set(RunDir(run).methods()), a.only)
        for s in skipped:
            print(f"skipped: {s}", file=sys.stderr)
        (tmp / "lab").mkdir()
        settings = tmp / "settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True)  # render every cell, so each output can be scrolled to and captured
        (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        news = tmp / "settings" / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True)  # no "get notified about Jupyter news?" toast over the outputs
        (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
        (tmp / "lab" / "gallery.ipynb").write_text(json.dumps(nb, indent=1))
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_CONFIG_DIR": str(tmp / "cfg"),
               "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "ws")}
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
             f"--ServerApp.root_dir={tmp / 'lab'}", "--IdentityProvider.token=", "--ServerApp.password=",
             "--ServerApp.disable_check_xsrf=True", "--LabApp.news_url=None", "--allow-root",
             "--LabApp.expose_app_in_browser=True",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            env=env, stdout=subprocess.DEVNULL, stderr=(tmp / "lab.log").open("w"))
        try:
            try:
                wait_http(f"http://127.0.0.1:{port}/api/status", timeout=120.0)
            except OSError:
                sys.stderr.write((tmp / "lab.log").read_text()[-3000:])
                raise
            saved = shoot(f"http://127.0.0.1:{port}/lab/tree/gallery.ipynb", names, Path(a.out), a.chromium)
        finally:
            server.terminate()
            server.wait(timeout=30)
    for path in saved:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0 if not skipped else 1


if __name__ == "__main__":
    raise SystemExit(main())
