"""UI speed on a LoCoMo-sized run: time to build each widget, to build the app in-process, and
(when /usr/bin/chromium exists) for the served page to become ready and each tab to show — on that run
and on the demo run (every method, replayed from the committed cassette: ``browser_demo``).

The run is the first LoCoMo conversation of ../shared/data/locomo/locomo10_dev.json when present
(else the sample data), evaluated by the project's harness with NaiveRAG + HashEmbedder +
ScriptedLLM (scripts/make_demo_run.py): no model is run; only the size of the data matters here.

Writes benchmarks/results/ui.json (or ``--out FILE``: a measurement that should not replace the
committed figures). Usage: python -m benchmarks.bench_ui [--repeat 3] [--no-browser] [--out FILE]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10_dev.json"
CHROMIUM = Path("/usr/bin/chromium")
QUIET_S = 1.0  # pause between a tab settled and the next click


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"_script_{name}", ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn, repeat: int) -> dict:
    """Median and min seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median_s": round(statistics.median(times), 4), "min_s": round(min(times), 4), "repeat": repeat}


def make_run(tmp: Path, locomo: Path = LOCOMO) -> tuple[Path, dict]:
    demo = _script("make_demo_run")
    data = f"locomo:{locomo}" if locomo.exists() else "sample"
    t = time.perf_counter()
    run = demo.make_demo_run(tmp / "run", data=data, n_conversations=1, methods=("naive_rag",))
    shown = f"locomo:{os.path.relpath(locomo, ROOT)}"  # no machine's absolute path in the results
    return run, {"data": shown if locomo.exists() else "sample (LoCoMo dev copy absent)",
                 "methods": ["naive_rag"], "make_run_s": round(time.perf_counter() - t, 2)}


def demo_run(tmp: Path) -> Path:
    """The demo run (all methods on sample-1), replayed from the committed cassette: no model is loaded."""
    from workbench.demo import run_demo

    return run_demo(out=tmp / "demo", serve=False, llm_mode="replay")


def bench_widgets(run_dir: Path, repeat: int) -> tuple[dict, dict]:
    from widgets import CostAccuracyChart, EventTimeline, EvidenceGapView, TraceStepper, compare
    from workbench.rundir import RunDir

    run = RunDir(run_dir)
    cid = run.conversation_ids()[0]
    conv, rows, answers = run.conversation(cid), run.results(), [a for _, a in run.answers()]
    events = run.events("naive_rag", cid)
    size = {"turns": len(conv.turns), "questions": len(rows), "memories": len(run.memories("naive_rag", cid)),
            "events": len(events)}
    qa = conv.qa[0]
    out = {
        "TraceStepper": timed(lambda: TraceStepper(answers[0], conversation=conv, gold_evidence=qa.evidence), repeat),
        "TraceStepper.next": timed(lambda: TraceStepper(answers[0], conversation=conv).next(), repeat),
        "EvidenceGapView (no router steps)": timed(lambda: EvidenceGapView(answers[0]), repeat),
        "EventTimeline": timed(lambda: EventTimeline(events), repeat),
        "EventTimeline.set_filter": timed(lambda: EventTimeline(events).set_filter(text="dog"), repeat),
        "CostAccuracyChart": timed(lambda: CostAccuracyChart(rows), repeat),
        "compare": timed(lambda: compare({"naive_rag": answers[0]}, answers[0].question, gold=qa.answer), repeat),
    }
    return out, size


def bench_app(run_dir: Path, repeat: int) -> dict:
    from widgets.app import build_app

    app = build_app(run_dir)
    mem = app.views["Memories"]
    words = iter(["dog", "paint", "camp", "book", "race"] * 20)  # each call changes the query

    def text_search():
        mem.mode.value, mem.query.value = "text", next(words)

    def semantic_fresh():
        app.store.forget_vectors(mem.method.value)
        mem.mode.value, mem.query.value = "semantic", f"dog {time.perf_counter()}"

    def every_view():
        built = build_app(run_dir)
        built.__panel__()
        built.prewarm()  # outside a server: every tab's view at once

    # build_app: what the first paint needs (the header and the tab it opens on; the other tabs are
    # built when shown or by the served page's prewarm after load); every view: all eight tabs
    out = {"build_app": timed(lambda: build_app(run_dir).__panel__(), repeat),
           "build_app + every view": timed(every_view, repeat),
           "memory text search": timed(text_search, repeat),
           "memory semantic search (embeds all memories)": timed(semantic_fresh, repeat)}
    out["memory semantic search (cached embeddings)"] = timed(
        lambda: setattr(mem.query, "value", f"painting {time.perf_counter()}"), repeat)
    trace = app.views["Traces"]
    out["trace next step"] = timed(lambda: (trace.goto(0), trace.next()), repeat)
    return out


def bench_browser(run_dir: Path, passes: int = 3) -> dict:
    """Seconds until the served page is ready, plotly.js is loaded and each tab is shown: the median
    of ``passes`` page loads (each a fresh app session on one server; single loads vary by a factor
    of two on two cores), with the first load, on a server that has just started, kept apart."""
    if not CHROMIUM.exists():
        return {"skipped": f"{CHROMIUM} not found"}
    from playwright.sync_api import sync_playwright

    from widgets.app import free_port, serve

    shots = _script("screenshots")
    port = free_port()
    server = serve(run_dir, port=port, threaded=True)
    url = f"http://127.0.0.1:{port}/"
    loads = []
    try:
        shots.wait_http(url)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=shots.CHROMIUM_ARGS)
            for _ in range(max(1, passes)):
                loads.append(_load_once(browser, url, shots))
            browser.close()
    finally:
        server.stop()
    out = {k: round(statistics.median(x[k] for x in loads), 3) for k in loads[0]}
    return {**out, "passes": len(loads), "first_pass": loads[0]}


def _load_once(browser, url: str, shots) -> dict:
    """One page load: ready, plotly.js loaded, then each tab clicked in turn (``QUIET_S`` after the
    last one settled): ``shown`` when its text is on the page, ``settled`` when what it draws after
    that (``PlotHolder``) is in too."""
    out = {}
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        t = time.perf_counter()
        page.goto(url)
        first_marker = next(iter(shots.TAB_MARKERS.values()))  # on the tab the app opens on
        page.get_by_text(first_marker).first.wait_for(timeout=120000)
        out["page_ready_s"] = round(time.perf_counter() - t, 3)
        # plotly.js (4.7 MB) is loaded and parsed just after the first paint; a click in that
        # second waits for it, so that wait is measured on its own and the tabs after it
        page.wait_for_function("window.Plotly !== undefined", timeout=120000)
        out["plotly_loaded_s"] = round(time.perf_counter() - t, 3)
        for tab, marker in shots.TAB_MARKERS.items():
            t = time.perf_counter()
            page.locator(".bk-tab", has_text=tab).click()
            page.get_by_text(marker).first.wait_for(timeout=60000)
            out[f"tab {tab} shown_s"] = round(time.perf_counter() - t, 3)
            shots.drawn(page)  # what the tab draws after its text is in: no slot placeholder left
            out[f"tab {tab} settled_s"] = round(time.perf_counter() - t, 3)
            # a chart still being drawn (plotly draws asynchronously) would slow the next tab: each
            # tab is clicked on a quiet page, as a reader who looked at the last one would
            time.sleep(QUIET_S)
    finally:
        page.close()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--passes", type=int, default=3, help="page loads per run in the browser (the median is kept)")
    ap.add_argument("--locomo", type=Path, default=LOCOMO,
                    help="LoCoMo JSON for the large run (default: the shared copy beside the checkout)")
    ap.add_argument("--out", type=Path, default=RESULTS / "ui.json", help="where to write the JSON results")
    a = ap.parse_args(argv)
    import panel
    import plotly

    with tempfile.TemporaryDirectory() as tmp:
        run, setup = make_run(Path(tmp), a.locomo)
        widgets, size = bench_widgets(run, a.repeat)
        result = {"machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version(),
                              "panel": panel.__version__, "plotly": plotly.__version__},
                  "run": {**setup, **size}, "widgets": widgets, "app_in_process": bench_app(run, a.repeat),
                  "browser": {"skipped": "--no-browser"} if a.no_browser else bench_browser(run, a.passes),
                  "browser_demo": ({"skipped": "--no-browser"} if a.no_browser
                                   else bench_browser(demo_run(Path(tmp)), a.passes))}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
