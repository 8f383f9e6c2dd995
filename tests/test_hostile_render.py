"""Every field of a hostile run, through every renderer: no markup survives (issue #68, items 1 and 2).

The run is the project's hostile run (``workbench.testing.hostile``: payload turns, method folders, memory rows,
manifest values, a torn results file) plus what that one lacks: answers of the five methods with step cards
(MemR3, HyMem, AMA, H-Mem, RecMem) whose every string field, a MemR3 guard cause and a saved ``profile`` among
them, holds all of ``PAYLOADS`` at once: a script, an image with ``onerror``, a ``<meta http-equiv="refresh">``
to another site, a Markdown ``](javascript:...)`` link and bare URLs. Each field's copy starts with the field's
name, so a failure names the field that leaked.

In process: the app's every tab (the Traces tab at each step of each trace), the notebook ``TraceStepper``, the
trace and question exports, the question's Markdown export and ``workbench report`` (rendered by markdown-it
with raw HTML and linkify on, and by GitHub's cmark-gfm with raw HTML allowed) are parsed, and no script,
image, frame, meta tag (beyond an export's own two), form, event-handler attribute or link out is found.

In Chromium (``-m browser``): the served app deep-linked onto the MemR3 guard's card, each export opened from
disk, the report and the Markdown export rendered with HTML allowed and opened from disk: no script runs (no
dialog, ``window.__pwned`` unset), no request leaves the machine, and no page navigates away.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: each announces itself if it ever runs: a dialog, ``window.__pwned``, a request to evil.example, a navigation
PAYLOADS = (
    "<script>window.__pwned='script';alert('script');fetch('https://evil.example/pwned-script')</script>",
    "<img src=https://evil.example/pwned-img onerror=\"window.__pwned='img';alert('img')\">",
    '<meta http-equiv="refresh" content="0;url=https://evil.example/pwned-refresh">',
    "[click](javascript:alert('md-link')) ![beacon](https://evil.example/pwned-md-img)",
    "https://evil.example/pwned-bare www.evil.example mal@evil.example",
)
PAYLOAD = " ".join(PAYLOADS)
METHODS = ("memr3", "hymem", "ama", "hmem", "recmem")
ROUTER_STEP = 1  # the MemR3 trace's router step with the hostile guard (0-based)


def hostile(field: str) -> str:
    """Every payload, after the field's name (a leak then says which field it came from)."""
    return f"{field}: {PAYLOAD}"


# -- the run -----------------------------------------------------------------------------------------------
def _step_data(card: str) -> dict:
    """A step's data for card kind ``card``: every field the cards read (``widgets.trace_cards``) hostile,
    in the shape the card expects (strings, id lists, records), numbers where a card counts."""
    h = hostile
    ids = [h(f"{card}.id"), "D1:1"]
    data = {k: h(f"{card}.{k}") for k in (
        "action", "proposed", "fallback", "delta_query", "delta_source", "reasoning", "draft_answer", "query",
        "answer", "new_query", "tier", "rounds", "store", "routed", "llm_memory_type", "K", "K_dyn", "rewrite",
        "verdict", "next", "reason", "confidence", "why", "declined", "next_store", "scope_policy", "subquery",
        "scope", "skipped", "layer", "k", "iteration", "reflect_streak", "n_candidates", "round", "finished")}
    data.update({k: [h(f"{card}.{k}"), "D1:2"] for k in (
        "evidence", "gaps", "retrieved_ids", "masked_ids", "dropped_ids", "selected", "context_ids", "dropped",
        "retrieved", "relevant_ids", "updated", "deleted", "via_relations", "via_store", "order", "evidence_chain",
        "candidate_scores", "interval")})
    data.update({
        "forced": h("guard cause"), "candidates": ids, "escalate": True, "done": False, "backend_exhausted": True,
        "intent": {h(f"{card}.intent"): True}, "prerequisites": {h(f"{card}.prereq"): h(f"{card}.prereq value")},
        "counts": {h(f"{card}.count"): h(f"{card}.count value")},
        "seeds": [{"name": h(f"{card}.seed"), "how": h(f"{card}.how")}],
        "memory_pool": [{"round": h("pool.round"), "tier": h("pool.tier"), "query": h("pool.query"),
                         "answer": h("pool.answer")}],
        "conflict_set": [{"id": h("conflict.id"), "kind": h("conflict.kind"), "said_at": h("conflict.said_at"),
                          "text": h("conflict.text")}],
        "subqueries": [{"id": h("sub.id"), "query": h("sub.query"), "scope": h("sub.scope"),
                        "interval": [h("sub.from"), h("sub.to")], "depends_on": [h("sub.dep")],
                        "entities": [h("sub.entity")]}],
        "sub_answers": [{"id": h("subanswer.id"), "query": h("subanswer.query"), "answer": h("subanswer.answer")}],
        h(f"{card}.key"): h(f"{card}.value"),
    })
    if card == "scoped_retrieve":  # H-Mem's candidates are scored records
        data["candidates"] = [{"id": h("cand.id"), "F": 0.5, "S": h("cand.S"), "T": 0.1, "R": 0.2,
                               "kind": h("cand.kind"), "via": [h("cand.via")]}]
    return data


def _call(where: str) -> dict:
    return {"role": hostile(f"{where}.role"), "method": hostile(f"{where}.method"), "phase": hostile(f"{where}.phase"),
            "model": hostile(f"{where}.model"), "messages": [{"role": hostile(f"{where}.msg role"),
                                                              "content": hostile(f"{where}.prompt")}],
            "response": hostile(f"{where}.response"), "prompt_tokens": 3, "completion_tokens": 2, "latency_s": 0.0,
            "cached": True, "error": hostile(f"{where}.error")}


def _answer(method: str, question: str) -> dict:
    from workbench.methods import get_method

    steps = []
    for kind, card in get_method(method).step_cards.items():
        steps.append({"kind": kind, "title": hostile(f"{method}.{kind} title"), "data": _step_data(card),
                      "hits": [{"unit_id": hostile(f"{method}.hit id"), "text": hostile(f"{method}.hit text"),
                                "score": 0.5, "source_ids": ["D1:1", hostile("hit source")],
                                "kind": hostile("hit kind")}],
                      "calls": [_call(f"{method}.{kind}")]})
    if method == "memr3":  # a router step first, then the one with the hostile guard (ROUTER_STEP)
        steps.insert(0, {"kind": "router", "title": "first", "data": {"evidence": ["kept"], "gaps": []},
                         "hits": [], "calls": []})
    return {"question": question, "text": hostile(f"{method}.answer text"), "steps": steps,
            "context": [{"unit_id": hostile("context id"), "text": hostile("context text"), "score": 0.3,
                         "source_ids": ["D1:1"], "kind": hostile("context kind")}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "calls": 1}, "method": method,
            "error": None}


def add_render_payloads(run: Path, conv_id: str) -> str:
    """Results rows of the five carded methods on ``conv_id``'s question (every string field hostile) and their
    saved parameters (``profile`` hostile); returns the question's id."""
    from workbench.rundir import safe_name

    conv = json.loads((run / "conversations" / f"{safe_name(conv_id)}.json").read_text())
    qa = conv["qa"][0]
    rows = []
    for method in METHODS:
        params = {"profile": hostile("profile"), "top_k": hostile("param top_k"), "n_max": hostile("param n_max"),
                  "llm": hostile("param llm"), "answer_prompt": hostile("param answer_prompt")}
        rows.append({
            "method": method, "params_hash": "hostile", "dataset": hostile("dataset"), "conv_id": conv_id,
            "qa_id": qa["id"], "category": 4, "category_name": hostile("category"), "question": qa["question"],
            "gold": hostile("gold"), "prediction": hostile(f"{method}.prediction"), "scores": {"f1": 0.0},
            "judge_label": hostile("judge label"), "judge_reasoning": hostile("judge reasoning"),
            "judge_model": hostile("judge model"), "judge_key": hostile("judge key"), "judge_error": None,
            "check": {"correct": False, "kind": hostile("check kind"), "reason": hostile("check reason")},
            "attribution": hostile("attribution"), "llm_model": hostile("llm model"),
            "failures": [{"kind": hostile("failure kind"), "message": hostile("failure message")}],
            "query_tokens": 5, "query_calls": 1, "params": params, "answer": _answer(method, qa["question"])})
        mdir = run / "memories" / method / safe_name(conv_id)
        mdir.mkdir(parents=True, exist_ok=True)
        (mdir / "params.json").write_text(json.dumps({"method": method, "params": params}))
    results = run / "results.jsonl"
    text = results.read_text(encoding="utf-8")
    lines = "".join(json.dumps(r) + "\n" for r in rows)
    # before the torn last line add_hostile_parts leaves (a crash mid-write stays the file's end)
    head, sep, torn = text.rpartition("\n")
    results.write_text(head + sep + lines + torn, encoding="utf-8")
    return qa["id"]


def make_hostile_run(dest: Path) -> tuple[Path, dict]:
    from scripts.make_demo_run import make_demo_run
    from workbench.testing.hostile import add_hostile_parts

    run = make_demo_run(dest, n_conversations=1, max_questions=2, inject_html=True)
    added = add_hostile_parts(run)
    added["qa_id"] = add_render_payloads(run, added["conv_id"])
    return run, added


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    pytest.importorskip("panel")
    return make_hostile_run(tmp_path_factory.mktemp("run") / "hostile")


# -- what counts as live markup ----------------------------------------------------------------------------
#: tags that run, load, navigate or submit; any element's ``on*`` attribute; a link that leaves the page
DANGEROUS_TAGS = {"script", "img", "meta", "iframe", "frame", "svg", "object", "embed", "link", "base", "form",
                  "video", "audio", "source", "math"}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        bad = [k for k in attrs if k.startswith("on")]
        href = attrs.get("href") if tag == "a" else None
        if tag in DANGEROUS_TAGS or bad or (href is not None and not href.startswith("#")) or \
                any(str(v).strip().lower().startswith(("javascript:", "data:text")) for v in attrs.values() if v):
            self.found.append(self.get_starttag_text()[:160])

    handle_startendtag = handle_starttag


def live_markup(html: str, *, allowed: tuple[str, ...] = ()) -> list[str]:
    """Start tags in ``html`` that could run, load, navigate or submit (``allowed``: exact tags the page writes
    itself, such as an export's own ``<meta charset>`` and CSP)."""
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return [t for t in parser.found if t not in allowed]


def export_head_tags(page: str) -> tuple[str, ...]:
    """An export's own meta tags (charset, CSP): the only ones it may carry, each once, in its head."""
    head = page.split("</head>", 1)[0]
    own = tuple(re.findall(r"<meta [^>]*>", head))
    assert len(own) == 2 and "charset" in own[0] and "Content-Security-Policy" in own[1], own
    assert page.count("<meta") == 2, "a meta tag outside the export's head"
    return own


def test_live_markup_finds_each_payload():
    """The check itself: each payload, unescaped, is found (so a pass means escaped, not missed)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["table", "linkify"]) \
        if _has("linkify_it") else MarkdownIt("commonmark", {"html": True})
    for p in PAYLOADS:
        assert live_markup(p) or live_markup(md.render(p)), p
    assert live_markup(hostile("x")) and not live_markup("<p class='a'>x</p><a href='#s'>j</a><style>b{}</style>")


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# -- the app's tabs and the notebook's stepper ---------------------------------------------------------------
def _panes_html(app) -> str:
    import panel as pn

    from widgets.panel_parts import LinkHTML

    root = app.__panel__()
    return "\n".join(str(p.object) for p in root.select(pn.pane.HTML) + root.select(LinkHTML))


def test_the_traces_tab_escapes_every_card_field(hostile_run):
    """Each carded method's trace, every step (the MemR3 guard's "forced by the guard" sentence included)."""
    from widgets import app as appmod

    run, added = hostile_run
    app = appmod.build_app(run)
    app.store.conv_id = added["conv_id"]
    traces = app.views["Traces"]
    traces.question.value = added["qa_id"]
    assert set(METHODS) <= set(traces.current), sorted(traces.current)
    seen_guard = False
    for method in METHODS:
        traces.method.value = method
        for i in range(traces.main.n_steps):
            traces.goto(i)
            html = traces.html
            assert live_markup(html) == [], (method, i, live_markup(html)[:3])
            seen_guard |= "forced by the guard" in html
        page = traces.main.export_html()
        assert live_markup(page, allowed=export_head_tags(page)) == [], (method, live_markup(page)[:3])
    assert seen_guard
    assert live_markup(traces.answers_html()) == []


def test_every_tab_escapes_every_field(hostile_run):
    from widgets import app as appmod

    run, added = hostile_run
    app = appmod.build_app(run)
    app.store.conv_id = added["conv_id"]
    for name in list(app.views):
        view = app.views[name]
        if hasattr(view, "load"):
            view.load()
    question = app.views["Question"]
    question.question.value = added["qa_id"]
    found = {}
    for method in ("(none)", *METHODS):
        question.method.value = method
        found[method] = live_markup(_panes_html(app) + app.header_html())
    assert all(v == [] for v in found.values()), {k: v[:3] for k, v in found.items() if v}
    structures = app.views["Structures"]
    for method in structures.method.values:
        structures.method.value = method
        assert live_markup(_panes_html(app)) == [], method


def test_the_case_finder_and_the_question_search_escape_every_field(hostile_run):
    """The Results tab's case finder (issue #67) under every value each of its filters offers (hostile categories
    and method folder names among them) and hostile words, the Question tab's search listing a match and echoing a
    hostile query, and the notebook's case finder: no markup survives."""
    from widgets import app as appmod
    from widgets import case_finder as cf

    run, added = hostile_run
    app = appmod.build_app(run)
    app.store.conv_id = added["conv_id"]
    finder = app.views["Results"].cases
    offered = {"category": cf.categories(finder.cases), "kind": cf.error_kinds(finder.cases),
               "attribution": cf.attributions(finder.cases), "right_with": finder.methods,
               "wrong_with": finder.methods, "words": ["pwned", PAYLOAD]}
    assert any("pwned" in c for c in offered["category"]) and any("pwned" in m for m in finder.methods)
    settings = [{}, {"disagree": True}] + [{k: v} for k, values in offered.items() for v in values]
    for flt in settings:
        finder.set_filter(**{**dict(cf.CaseFilter().__dict__), **flt})
        html = finder.grid.object + finder.summary.object + finder.pager.object
        assert live_markup(html) == [], (flt, live_markup(html)[:3])
        if "category" in flt or "right_with" in flt:
            assert finder.shown, flt  # the hostile value matched: its rows were rendered
    question = app.views["Question"]
    for query in (added["qa_id"], PAYLOAD):
        question.find.value_input = query
        assert question.found.visible and live_markup(question.found.object) == [], live_markup(question.found.object)
    view = cf.CaseFinderView.from_run(run).open(added["qa_id"], "memr3")
    for category in offered["category"]:
        view.filter(category=category)
        assert view.shown and live_markup(view.static_html()) == [], live_markup(view.static_html())[:3]


def test_the_notebook_trace_stepper_escapes_the_guard_cause(hostile_run):
    pytest.importorskip("ipywidgets")
    from widgets.trace_stepper import TraceStepper
    from workbench.rundir import RunDir
    from workbench.trace import Answer

    run, added = hostile_run
    rd = RunDir(run)
    row = next(r for r in rd.results() if r.get("method") == "memr3" and r.get("qa_id") == added["qa_id"])
    stepper = TraceStepper(Answer.from_dict(row["answer"]), conversation=rd.conversation(added["conv_id"]))
    stepper.goto(ROUTER_STEP)
    html = stepper.current_html + stepper.static_html() + stepper.body.value + stepper.waterfall.value
    assert "forced by the guard" in html and live_markup(html) == [], live_markup(html)[:3]


def test_an_llm_call_with_text_for_its_token_counts_is_escaped():
    """A trace written by another tool may put text where the token counts go: read back from a run it
    is a named error (``tests/test_trace_counts.py``); a record made in memory with one is shown escaped."""
    import pytest

    from widgets.html import call_html
    from workbench.trace import LLMCall

    fields = {**_call("call"), "prompt_tokens": hostile("prompt_tokens"),
              "completion_tokens": hostile("completion_tokens")}
    with pytest.raises(ValueError, match="prompt_tokens"):
        LLMCall.from_dict(fields)
    call = LLMCall(**{**fields, "messages": tuple(fields.get("messages", ()))})
    html = call_html(call)
    assert "prompt_tokens: " in html and live_markup(html) == [], live_markup(html)[:3]


# -- exports and the report -------------------------------------------------------------------------------
def _renderers():
    """(name, Markdown -> HTML) for each renderer that allows raw HTML: markdown-it with linkify (if
    linkify-it-py is installed), GitHub's cmark-gfm (if cmarkgfm is)."""
    from markdown_it import MarkdownIt

    out = [("markdown-it", MarkdownIt("commonmark", {"html": True}).enable("table").render)]
    if _has("linkify_it"):
        md = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["table", "linkify"])
        out[0] = ("markdown-it+linkify", md.render)
    if _has("cmarkgfm"):
        import cmarkgfm
        from cmarkgfm.cmark import Options

        out.append(("cmark-gfm", lambda text: cmarkgfm.github_flavored_markdown_to_html(
            text, options=Options.CMARK_OPT_UNSAFE)))
    return out


def exports(run: Path, added: dict, *, census_too: bool = False) -> dict[str, str]:
    """Every export of the hostile question, as the app writes them: each method's trace page, the question
    page and the question's Markdown, and ``workbench report``'s Markdown (with the method statistics; with
    ``census_too``, also the report with the mechanism census ``workbench report --mechanisms`` adds)."""
    from widgets.question import question_page, question_state
    from widgets.trace_export import trace_page
    from widgets.trace_timeline import TraceTimeline
    from workbench.rundir import RunDir
    from workbench.trace import Answer

    rd = RunDir(run)
    rows = rd.results()
    conv = rd.conversation(added["conv_id"])
    qa = next(q for q in conv.qa if q.id == added["qa_id"])
    state = question_state(rows, added["qa_id"], conversation=conv)
    out = {}
    for method in METHODS:
        row = next(r for r in rows if r.get("method") == method and r.get("qa_id") == added["qa_id"])
        tl = TraceTimeline.build(Answer.from_dict(row["answer"]), conversation=conv, qa=qa)
        out[f"trace-{method}.html"] = trace_page(tl, state=state, run=hostile("run name"))
    out["question.html"] = question_page(state, selected="memr3", run=hostile("run name"))
    out.update(markdown_exports(run, added, census_too=census_too))
    return out


def markdown_exports(run: Path, added: dict, *, census_too: bool = False) -> dict[str, str]:
    """The question's Markdown export and the report's Markdown (see ``exports``)."""
    from widgets.question import question_markdown, question_state
    from workbench.eval.mechanisms import census
    from workbench.eval.report import load_results, method_stats, report_markdown
    from workbench.rundir import RunDir

    rd = RunDir(run)
    rows = rd.results()
    state = question_state(rows, added["qa_id"], conversation=rd.conversation(added["conv_id"]))
    out = {"question.md": question_markdown(state)}
    df = load_results([run / "results.jsonl"])
    out["report.md"] = report_markdown(df, n_boot=20, stats=method_stats(rows))
    if census_too:
        out["report-census.md"] = report_markdown(df, n_boot=20, stats=method_stats(rows), mechanisms=census(run))
    return out


def test_exports_carry_no_markup_and_a_csp_that_stays_put(hostile_run):
    from widgets.html import EXPORT_CSP

    run, added = hostile_run
    for name, page in exports(run, added).items():
        if not name.endswith(".html"):
            continue
        own = export_head_tags(page)
        assert EXPORT_CSP in own[1], name
        assert live_markup(page, allowed=own) == [], (name, live_markup(page, allowed=own)[:3])
    for directive in ("default-src 'none'", "form-action 'none'", "base-uri 'none'", "navigate-to 'none'"):
        assert directive in EXPORT_CSP


def test_markdown_exports_render_inert_with_html_and_autolinks(hostile_run):
    """The report (its departures name the hostile ``profile``) and the question's Markdown, through renderers
    that allow raw HTML and detect links: no tag, no link."""
    run, added = hostile_run
    out = markdown_exports(run, added)
    assert "Departures from the papers" in out["report.md"] and "profile profile: " in out["report.md"]
    for name in ("report.md", "question.md"):
        for renderer, render in _renderers():
            html = render(out[name])
            assert live_markup(html) == [] and "<a " not in html, (name, renderer, live_markup(html)[:3])
            assert "evil.example/pwned-bare" in html  # shown, as text


def test_report_departures_escape_the_saved_profile_and_params(hostile_run):
    """``workbench report``'s "Departures from the papers" names each configuration's saved ``profile`` and quotes
    its saved values: run data, escaped like every other cell."""
    from workbench.eval.report import departures_section, load_results

    run, _ = hostile_run
    lines = departures_section(load_results([run / "results.jsonl"]))
    text = "\n".join(lines)
    assert "profile profile: " in text and "param top_k: " in text  # the hostile values are there, as text
    for renderer, render in _renderers():
        html = render(text)
        assert live_markup(html) == [] and "<a " not in html, (renderer, live_markup(html)[:3])


def test_the_report_with_the_mechanism_census_renders_inert(hostile_run):
    run, added = hostile_run
    text = markdown_exports(run, added, census_too=True)["report-census.md"]
    for renderer, render in _renderers():
        html = render(text)
        assert live_markup(html) == [] and "<a " not in html, (renderer, live_markup(html)[:3])


# -- in Chromium -----------------------------------------------------------------------------------------
CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _leaves_machine(url: str) -> bool:
    parts = urlparse(url)
    return parts.scheme not in ("data", "blob", "about", "file") and \
        parts.hostname not in ("127.0.0.1", "localhost", "::1")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (scripts/install_browser.sh)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


def watched_page(browser):
    """A page that counts what a payload would do: dialogs, ``pwned`` and outside requests, navigations."""
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.dialogs, pg.external, pg.navigations, pg.errors = [], [], [], []

    def on_dialog(d):
        pg.dialogs.append(d.message)
        d.dismiss()

    pg.on("dialog", on_dialog)
    pg.on("request", lambda r: pg.external.append(r.url) if _leaves_machine(r.url) or "pwned" in r.url else None)
    pg.on("framenavigated", lambda f: pg.navigations.append(f.url) if f == pg.main_frame else None)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    return pg


def ran(pg) -> dict:
    """What ran or left: dialogs, ``window.__pwned``, requests out, the page's URL now."""
    return {"dialogs": list(pg.dialogs), "pwned": pg.evaluate("typeof window.__pwned === 'undefined' ? null : "
                                                              "String(window.__pwned)"),
            "external": list(pg.external), "url": pg.url}


@pytest.mark.browser
def test_exports_opened_from_disk_run_nothing_and_stay_put(hostile_run, browser, tmp_path):
    """Each export file, and the report and the question's Markdown rendered with raw HTML allowed, opened
    from disk: no script runs, nothing is requested, the page stays where it opened (a ``<meta refresh>``
    in run text would have moved it to evil.example at once)."""
    run, added = hostile_run
    files = {}
    for name, text in exports(run, added).items():
        if name.endswith(".md"):
            for renderer, render in _renderers():
                files[f"{name}.{renderer}.html"] = "<!doctype html><meta charset='utf-8'>" + render(text)
        else:
            files[name] = text
    outcome = {}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        pg = watched_page(browser)
        try:
            pg.goto(path.as_uri())
            time.sleep(1.2)  # a refresh of 0 s, an onerror or a fetch would have happened by now
            outcome[name] = ran(pg)
            outcome[name]["navigated"] = [u for u in pg.navigations if u != path.as_uri()]
        finally:
            pg.close()
    print(json.dumps({k: {x: len(v) if isinstance(v, list) else v for x, v in o.items() if x != "url"}
                      for k, o in outcome.items()}, indent=1))
    bad = {k: o for k, o in outcome.items() if o["dialogs"] or o["pwned"] or o["external"] or o["navigated"]
           or o["url"] != (tmp_path / k).as_uri()}
    assert bad == {}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(hostile_run):
    """``panel serve widgets/app.py`` over the hostile run."""
    import urllib.request

    run, added = hostile_run
    port = _free_port()
    cmd = [sys.executable, "-m", "panel", "serve", str(ROOT / "widgets" / "app.py"), "--port", str(port),
           "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}", "--args", "--run", str(run)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/app"
    try:
        deadline = time.time() + 240
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"panel serve exited with {proc.returncode}: {proc.stdout.read()}")
            try:
                urllib.request.urlopen(url, timeout=max(5.0, deadline - time.time()))
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.3)
        yield url, added
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.browser
def test_a_link_onto_the_memr3_guard_card_runs_nothing(served, browser):
    """``?tab=Traces&q=...&method=memr3&step=N`` opens straight onto the evidence-gap card whose guard cause is
    hostile; then every tab is visited. No script runs and no request leaves the machine."""
    url, added = served
    query = {"conv": added["conv_id"], "tab": "Traces", "q": added["qa_id"], "method": "memr3",
             "step": str(ROUTER_STEP + 1)}
    pg = watched_page(browser)
    try:
        pg.goto(f"{url}?{urlencode(query)}")
        pg.wait_for_selector("text=Memory Workbench", timeout=60000)
        card = pg.locator(".wb-tc", has_text="forced by the guard").first
        card.wait_for(timeout=60000)
        assert "<script>window.__pwned='script'" in card.inner_text()  # the payload, shown as text
        for name in ("Question", "Conversations", "Memories", "Lifecycle", "Events", "Results", "Structures",
                     "How it works", "Traces"):
            pg.locator(".bk-tab", has_text=name).click()
            time.sleep(1.0)
        time.sleep(1.0)
        outcome = ran(pg)
        print(json.dumps({k: len(v) if isinstance(v, list) else v for k, v in outcome.items()}))
        assert outcome["dialogs"] == [] and outcome["pwned"] is None and outcome["external"] == []
        assert urlparse(outcome["url"]).hostname == "127.0.0.1"
    finally:
        pg.close()

