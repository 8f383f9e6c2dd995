"""The Panel app built in-process (no browser) over a good, a partial and a malformed run directory."""
from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import pytest

pn = pytest.importorskip("panel")

from widgets import app as appmod  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TABS = ["Question", "Conversations", "Memories", "Lifecycle", "Traces", "Events", "Results", "Structures",
        "How it works"]
RAW_PAYLOADS = ("<script>window.__pwned=1</script>", '<img src=x onerror="window.__pwned=2">')


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path_factory.mktemp("run") / "good", n_conversations=2, max_questions=4,
                              inject_html=True)


@pytest.fixture(scope="module")
def app(good_run):
    return appmod.build_app(good_run)


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def all_html(app) -> str:
    """Every HTML string the app renders (header and all tabs, link-aware panes included); the tabs
    not shown yet are built first, as the served page's prewarm does."""
    app.prewarm()
    panes = app.__panel__().select(pn.pane.HTML) + app.__panel__().select(appmod.LinkHTML)
    return "\n".join(str(p.object) for p in panes)


# -- a good run ---------------------------------------------------------------------------------
def test_tabs_and_header(app, good_run):
    assert list(app.tabs._names) == TABS
    assert app.store.errors == [] and len(app.store.methods) == 3
    assert app.store.param["conv_id"].objects == ["sample-1", "sample-2"]
    assert "SCRIPTED DEMO RUN" in app.header_html()  # the scripted label is shown, not hidden
    assert isinstance(app.__panel__(), pn.Column)


def test_conversations_tab_search(app):
    v = app.views["Conversations"]
    n_turns = len(app.store.conversation().turns)
    assert len(v.table.value) == n_turns
    v.search.value = "pwned"
    assert len(v.table.value) == 2 and set(v.table.value["text"].str.contains("pwned")) == {True}
    v.search.value = ""
    v.session.value = "S1"
    assert 0 < len(v.table.value) < n_turns and set(v.table.value["session"]) == {"S1"}
    v.session.value = "all"


def test_tables_render_cells_as_plain_text(app):
    app.views["Memories"].method.value = "naive_rag"  # has an extra column (session_id)
    for name in ("Conversations", "Memories"):
        table = app.views[name].table
        assert set(table.formatters) == set(table.value.columns), name
        assert all(f["type"] in ("plaintext", "textarea") for f in table.formatters.values()), name


def test_memory_search_text_and_semantic(app):
    v = app.views["Memories"]
    v.method.value = "eager_facts"
    total = len(v.table.value)
    v.query.value = "pwned"
    assert len(v.table.value) >= 1 and all("pwned" in t for t in v.table.value["text"])
    v.mode.value = "semantic"
    v.query.value = "giant pumpkin for the autumn show"
    res = v.table.value
    assert 1 <= len(res) <= 20 and list(res["score"]) == sorted(res["score"], reverse=True)
    assert "pumpkin" in res["text"].iloc[0].lower()
    assert "hash-256" in v.info.object and "not a semantic model" in v.info.object
    v.mode.value, v.query.value = "text", ""
    assert len(v.table.value) == total
    v.kinds.value = ["fact"]
    assert len(v.table.value) == total


def test_long_tables_are_drawn_after_their_tabs_text(app):
    """The tables that cost the browser most (Memories, Events, Results' per-question rows) are marked
    to be drawn after the tab's controls and text; the controls themselves are not."""
    from widgets.plotly_loader import is_deferred

    assert is_deferred(app.views["Memories"].table) and not is_deferred(app.views["Memories"].query)
    assert is_deferred(app.views["Events"].table)
    assert is_deferred(app.views["Results"].questions)


def _set_embedder(run: Path, name) -> None:
    """Make the run's manifest name ``name`` as its embedder everywhere it could be read from."""
    m = json.loads((run / "manifest.json").read_text())
    for part in [m, m.get("summary") or {}, *(m.get("evaluations") or [])]:
        if isinstance(part, dict):
            part.pop("embedder", None)
            if name is not None:
                part["embedder"] = name
    (run / "manifest.json").write_text(json.dumps(m))


def test_semantic_search_uses_the_embedder_the_manifest_names(good_run, tmp_path):
    import numpy as np

    from workbench.embed import HashEmbedder

    run = copy_run(good_run, tmp_path / "hash64")
    _set_embedder(run, {"name": "hash-64", "class": "HashEmbedder"})
    v = appmod.build_app(run).views["Memories"]
    v.method.value, v.mode.value = "eager_facts", "semantic"
    query = "giant pumpkin for the autumn show"
    v.query.value = query
    res = v.table.value
    assert list(res.columns[:2]) == ["score", "id"]  # the score is the first thing a reader sees
    texts = dict(zip(v.store.memories("eager_facts")["id"], v.store.memories("eager_facts")["text"]))
    for dim, same in ((64, True), (256, False)):  # the run's hash-64, not the app's old default hash-256
        emb = HashEmbedder(dim=dim)
        want = np.round(emb([texts[i] for i in res["id"]]) @ emb([query])[0], 3)
        assert np.allclose(res["score"].astype(float), want, atol=1e-3) == same, dim
    assert "hash-64" in v.info.object and "the run&#x27;s own embedder (manifest)" in v.info.object


def test_semantic_search_says_so_when_the_runs_embedder_cannot_be_built(good_run, tmp_path):
    for name, why in (("text-embedding-3-small", "not an offline embedder"), (None, "does not name the embedder")):
        run = copy_run(good_run, tmp_path / f"emb-{name}")
        _set_embedder(run, name)
        v = appmod.build_app(run).views["Memories"]
        v.method.value, v.mode.value = "eager_facts", "semantic"
        v.query.value = "pumpkin"
        assert len(v.table.value) == 0, name  # no stand-in model's ranking
        assert "Semantic search is unavailable" in v.info.object and why in v.info.object, name
        v.mode.value = "text"
        assert len(v.table.value) >= 1 and "unavailable" not in v.info.object  # text search still works


def test_run_embedder_name_per_method():
    from workbench.eval.manifest import run_embedder_name

    m = {"summary": {"embedder": "hash-256"},
         "evaluations": [{"method": "full_context", "embedder": None}, {"method": "naive_rag", "embedder": "hash-64"},
                         {"method": "hmem", "embedder": {"name": "all-MiniLM-L6-v2-int8", "class": "CachedEmbedder"}}]}
    assert run_embedder_name(m, "naive_rag") == "hash-64"
    assert run_embedder_name(m, "hmem") == "all-MiniLM-L6-v2-int8"
    assert run_embedder_name(m, "full_context") == "hash-256"  # evaluated without one: the run's
    assert run_embedder_name({}, "naive_rag") is None


def test_offline_embedder_rebuilds_only_what_it_knows():
    from workbench.embed import EmbedderUnavailable, HashEmbedder, offline_embedder

    emb = offline_embedder("hash-32")
    assert isinstance(emb, HashEmbedder) and emb.dim == 32
    for name in ("text-embedding-3-small", "", "hash-0", "sentence-transformers/all-mpnet-base-v2"):
        with pytest.raises(EmbedderUnavailable):
            offline_embedder(name)


def test_lifecycle_tab_turn_unit_question_round_trip(good_run):
    app = appmod.build_app(good_run)
    life = app.views["Lifecycle"]
    index = app.store.lifecycle()
    # a unit some answer's reader saw, and one of its source turns
    method, uid = next(k for k, seen in index.seen.items() if seen)
    turn_id = index.ref(method, uid).source_ids[0]
    life.turn.value = turn_id  # picking a turn shows every method's units derived from it
    assert life.target == ("turn", turn_id)
    assert f'data-link="[&quot;unit&quot;, &quot;{method}&quot;, &quot;{uid}&quot;]"' in life.body.object
    life.body._handle_msg(["unit", method, uid])  # what a click on that link sends
    assert life.target == ("unit", method, uid) and (life.method.value, life.unit.value) == (method, uid)
    assert "Answers whose reader saw it" in life.body.object and not life.back_button.disabled
    qa_id = index.seen[(method, uid)][0].qa_id
    life.body._handle_msg(["question", qa_id, method])
    q = app.views["Question"]
    assert app.tabs.active == TABS.index("Question") and q.question.value == qa_id and q.method.value == method
    life.back_button.clicks += 1
    assert life.target == ("turn", turn_id)
    life.body._handle_msg(["turn"])  # malformed: ignored
    life.body._handle_msg({"turn": "D1:1"})
    assert life.target == ("turn", turn_id)


def test_links_in_memories_and_events_open_the_lifecycle_tab(good_run):
    app = appmod.build_app(good_run)
    mem = app.views["Memories"]
    mem.method.value, mem.mode.value, mem.query.value = "naive_rag", "text", ""
    mem.table.selection = [0]
    row = mem.results.iloc[0]
    assert 'class="wb-link"' in mem.detail.object
    mem.detail._handle_msg(["turn", row["source_ids"].split()[0]])
    assert app.tabs.active == TABS.index("Lifecycle")
    assert app.views["Lifecycle"].target == ("turn", row["source_ids"].split()[0])
    ev = app.views["Events"]
    assert 'data-link="[&quot;unit&quot;' in ev.table.object
    ev.table._handle_msg(["unit", "naive_rag", row["id"]])
    assert app.views["Lifecycle"].target == ("unit", "naive_rag", row["id"])


def test_events_tab_pages_instead_of_capping(good_run):
    app = appmod.build_app(good_run)
    v = app.views["Events"]
    n = len(v.events)
    v.log.page_size = 5
    v.refresh()
    assert v.log.pages == -(-n // 5) > 1 and "page 1 of" in v.pager.object and v.prev_button.disabled
    shown = set()
    for _ in range(v.log.pages):
        shown |= {(e.method, e.seq) for e in v.log.page_events}
        v.next_button.clicks += 1
    assert len(shown) == n and v.next_button.disabled  # every event reachable, none cut off
    assert v.log.axis is not None and v.plot.object.layout.xaxis.ticktext[0].startswith("S1")


def test_memory_selection_shows_provenance_and_history(app):
    v = app.views["Memories"]
    v.method.value, v.mode.value, v.kinds.value = "naive_rag", "text", []
    v.query.value = "window.__pwned=1"
    assert len(v.table.value) == 1
    v.table.selection = [0]
    html = v.detail.object
    assert "Provenance" in html and "Event history (1)" in html and "ADD" in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html and "<script>window" not in html
    v.query.value = ""


def test_traces_tab_steps_forward(app):
    v = app.views["Traces"]
    assert set(v.method.values) == {"naive_rag", "full_context", "eager_facts"}
    assert set(v.method.labels) == {"Naive RAG", "Full-Context", "Eager floor"}  # titles, not code identifiers
    v.method.value = "naive_rag"
    assert v.index == 0 and "step <b class='wb-step-pos'>1</b> / 2" in v.position.object
    before = v.html
    v.next_button.clicks += 1  # what a browser click does
    assert v.index == 1 and v.html != before and "Answer from retrieved memories" in v.html
    v.next()
    assert v.index == 1 and v.next_button.disabled
    v.prev()
    assert v.index == 0
    inject = next(q for q in v.question.options.values() if q.endswith("/inject"))
    v.question.value = inject
    assert "gold answer:" in v.answers_pane.object and "&lt;script&gt;" in v.answers_pane.object


def test_events_tab_filters(app):
    v = app.views["Events"]
    # an empty filter says what it means: not a blank box that looks like a text field
    assert (v.kinds.placeholder, v.methods.placeholder) == ("all kinds", "all methods")
    assert app.views["Memories"].kinds.placeholder == "all kinds"
    n = len(v.events)
    assert n > 0 and len(v.filtered) == n
    v.methods.value = ["naive_rag"]
    assert 0 < len(v.filtered) < n and {e.method for e in v.filtered} == {"naive_rag"}
    v.kinds.value = ["DELETE"]
    assert v.filtered == [] and "No events match" in v.table.object
    v.methods.value, v.kinds.value = [], []
    v.search.value = "pwned"
    assert len(v.filtered) >= 2 and "edits (UPDATE/DELETE): 0" in v.counts.object
    v.search.value = ""


def test_results_tab_tables_and_chart(app):
    v = app.views["Results"]
    assert sorted(v.summary["method"].unique()) == ["eager_facts", "full_context", "naive_rag"]
    assert "by category" in v.table.object and "[" in v.table.object
    assert len(v.plot.object.data) == 3
    # the note says the headline leaves adversarial questions out only where the run has some (this one has none)
    assert "adversarial" not in set(v.summary["category"]) and "categories 1-4" not in v.note.object
    v.x.value = "construction_tokens"
    assert v.chart_frame.set_index("method").loc["eager_facts", "tokens"] > 0
    v.metric.value = "f1"
    assert "f1 by category" in v.table.object


def test_header_reads_the_manifest(app):
    html = app.header_html()
    assert "llm: scripted-extractive" in html and "embedder: hash-256" in html
    assert "judge: rule:gold-content-words-in-prediction — audited: accepted" in html
    assert "data: sample_conversations" in html and ": ?" not in html
    # methods by their titles, the run name beside a title that differs (usability review: raw names on screen)
    assert "Naive RAG (naive_rag)" in html and "Full-Context (full_context)" in html


def test_header_of_an_eval_run_manifest(good_run, tmp_path):
    from workbench.eval.manifest import update_run_manifest

    run = copy_run(good_run, tmp_path / "evalrun")
    (run / "manifest.json").unlink()
    update_run_manifest(run, {"method": "naive_rag",
                              "llm": {"model": "qwen2.5-coder-0.5b", "model_sha256": "1d96" * 16},
                              "embedder": "all-MiniLM-L6-v2-int8", "judge": {"model": "qwen2.5-coder-0.5b",
                                                                              "key": "k", "audit": None},
                              "dataset_info": {"name": "sample_conversations"}, "git_commit": "ab" * 20})
    html = appmod.build_app(run).header_html()
    assert "llm: qwen2.5-coder-0.5b (sha256 1d961d961d96…)" in html and "embedder: all-MiniLM-L6-v2-int8" in html
    assert "judge: qwen2.5-coder-0.5b — not audited" in html and "commit: abababababab" in html


def test_results_tab_judge_audit_banner_and_per_question_labels(good_run, tmp_path):
    v = appmod.build_app(good_run).views["Results"]  # a fresh app: other tests change the shared one's widgets
    assert v.metric.value == "judge"  # the rule judge's audit passes: the judge is the headline
    assert "judge audited" in v.banner.object and "unreliable" not in v.banner.object
    q = v.questions.value
    assert {"judge_label", "judge_reasoning", "f1", "disagree"} <= set(q.columns) and len(q) == len(v.frame)
    assert "false accepts" in v.table.object  # the audit's rate beside the judge's accuracy
    run = copy_run(good_run, tmp_path / "unaudited")
    m = json.loads((run / "manifest.json").read_text())
    m["judge"]["audit"] = None
    (run / "manifest.json").write_text(json.dumps(m))
    u = appmod.build_app(run).views["Results"]
    assert u.metric.value == "checker" and "Judge accuracy is unreliable" in u.banner.object
    assert "agrees with careful readers" in u.banner.object  # the verdict source's own audit, beside it
    assert "not audited" in u.banner.object


def test_structures_tab_registry(good_run, monkeypatch):
    app = appmod.build_app(good_run)
    view = app.views["Structures"]
    lead, picker, how, card = view.panel.objects
    assert "pick a method" in lead.object and picker is view.method
    assert '[&quot;method&quot;, &quot;eager_facts&quot;]' in how.object  # a link to the method's How it works page
    how._handle_msg(["method", "naive_rag"])
    assert app.tabs.active == list(app.views).index("How it works")
    assert app.views["How it works"].method.value == "naive_rag"
    assert list(view.method.values) == ["eager_facts", "full_context", "naive_rag"]
    # the picker and each heading say the method's title; the heading keeps the run's name beside it, in grey
    assert list(view.method.labels) == ["Eager floor", "Full-Context", "Naive RAG"]
    assert view.headings() == ["Eager floor eager_facts", "Full-Context full_context", "Naive RAG naive_rag"]
    assert 'how Eager floor works' in how.object
    cards = []
    for m in view.method.values:  # one method's structures at a time, chosen with the picker
        view.method.value = m
        assert len(view.panel.objects) == 4 and view.panel.objects[3].objects[0].object.endswith(f">{m}</code></h3>")
        cards.append(view.panel.objects[3])
    # every method here has a structure card (widgets.structure_cards): no JSON dump, no empty card
    html = "\n".join(str(p.object) for c in cards for p in c.select(pn.pane.HTML) + c.select(appmod.LinkHTML))
    assert "no structure view for this method" not in html and "structures.json is empty" not in html
    assert "Nothing is stored: every question sees" in html and "chunks of the conversation" in html
    assert "<script>window.__pwned" not in html  # the injected turns are escaped in the cards too
    monkeypatch.delitem(appmod.STRUCTURE_VIEWS, "whole_conversation")  # the kind Full-Context declares
    fallback = appmod.StructuresView(app.store).sections["full_context"]
    assert "no structure view for this method" in fallback[0].object  # the JSON fallback still works
    seen = {}

    def view(structures, conversation):
        seen["args"] = (structures, conversation.id)
        return pn.pane.Markdown("custom view")

    monkeypatch.setitem(appmod.STRUCTURE_VIEWS, "naive_rag", view)
    monkeypatch.setitem(appmod.STRUCTURE_VIEWS, "eager_facts", lambda s, c: 1 / 0)
    v = appmod.StructuresView(app.store)
    assert seen["args"] == ({}, "sample-1") and v.sections["naive_rag"][0].object == "custom view"
    assert "ZeroDivisionError" in v.sections["eager_facts"][0].object  # a broken view is reported in its card


def test_conversation_switch_updates_every_tab(good_run):
    app = appmod.build_app(good_run)
    app.store.conv_id = "sample-2"
    assert app.views["Conversations"].table.value["text"].str.contains("pwned").sum() == 0
    assert all(q.startswith("sample-2/") for q in app.views["Traces"].question.options.values())
    assert {e.unit_id for e in app.views["Events"].events} and app.store.errors == []


def test_injection_renders_as_text_everywhere(app):
    v = app.views["Traces"]
    v.question.value = next(q for q in v.question.options.values() if q.endswith("/inject"))
    for method in v.method.values:
        v.method.value = method
        v.goto(1 if method != "full_context" else 0)
        html = all_html(app)
        assert not any(p in html for p in RAW_PAYLOADS), method
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html


# -- partial and malformed runs -------------------------------------------------------------------
def test_partial_run_shows_messages(good_run, tmp_path):
    run = copy_run(good_run, tmp_path / "partial")
    (run / "results.jsonl").unlink()
    shutil.rmtree(run / "memories")
    app = appmod.build_app(run)
    assert app.store.errors == [] and list(app.tabs._names) == TABS
    results = app.views["Results"]
    assert "no results" in results.table.object and not results.plot.visible and not results.questions.visible
    assert "no saved memories" in app.views["Memories"].info.object
    assert "No answered questions" in app.views["Traces"].answers_pane.object
    assert "no saved memories" in app.views["Structures"].panel.objects[0].object
    assert len(app.views["Conversations"].table.value) > 0


def test_malformed_run_reports_problems(good_run, tmp_path):
    run = copy_run(good_run, tmp_path / "bad")
    (run / "manifest.json").write_text("{not json")
    with open(run / "results.jsonl", "a") as f:
        f.write("{broken line\n")
    (run / "conversations" / "sample-2.json").write_text(json.dumps({"id": "sample-2"}))
    (run / "memories" / "naive_rag" / "sample-1" / "events.jsonl").write_text('{"seq": 0, "kind": "NOPE"}\n')
    (run / "memories" / "eager_facts" / "sample-1" / "structures.json").write_text("[1, 2")
    app = appmod.build_app(run)
    app.prewarm()  # every tab built, as a served page does right after its first paint
    errors = "\n".join(app.store.errors)
    n_lines = len((run / "results.jsonl").read_text().splitlines())
    for part in ("manifest.json", f"results.jsonl:{n_lines}: invalid JSON", "naive_rag/sample-1/events.jsonl",
                 "eager_facts/sample-1/structures.json"):
        assert part in errors, part
    assert len(app.views["Results"].frame) > 0  # the bad line is skipped, the other rows still show
    assert len(app.problems.objects) == 1  # one alert for every problem (issue #41 item 5)
    assert all(appmod.esc(e) in app.problems.objects[0].object for e in app.store.errors[:appmod.MAX_PROBLEMS_SHOWN])
    assert list(app.tabs._names) == TABS
    app.store.conv_id = "sample-2"  # malformed conversation file: a message, not a traceback
    assert "conversations/sample-2.json" in "\n".join(app.store.errors)
    assert "No conversation loaded" in app.views["Conversations"].info.object


def test_missing_run_dir(tmp_path):
    app = appmod.build_app(tmp_path / "nope")
    assert "run directory not found" in app.store.errors[0]
    assert "run directory not found" in app.problems.objects[0].object
    assert list(app.tabs._names) == TABS


def test_escape_in_alerts(tmp_path):
    app = appmod.build_app(tmp_path / "<img src=x onerror=alert(1)>")
    assert "<img" not in app.problems.objects[0].object and "&lt;img" in app.problems.objects[0].object


def test_serve_threaded_binds_localhost(good_run):
    port = appmod.free_port()
    server = appmod.serve(good_run, port=port, threaded=True)
    try:
        import time

        for _ in range(100):
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.1)
        assert "Memory Workbench" in body
    finally:
        server.stop()


def test_structure_views_register_and_discovery_problems(good_run, monkeypatch):
    import pkgutil

    fake = [pkgutil.ModuleInfo(None, "missing_tree_view", False)]
    monkeypatch.setattr(pkgutil, "iter_modules", lambda path: fake)
    assert appmod.load_structure_views()[0].startswith("widgets.missing_tree_view: ModuleNotFoundError")

    from widgets.tabs import structures as structures_tab

    monkeypatch.setattr(structures_tab, "STRUCTURE_VIEWS", dict(appmod.STRUCTURE_VIEWS))  # the cards come back after

    @appmod.register_structure_view("full_context")
    def fc_view(structures, conversation):
        return pn.pane.Markdown(f"{len(conversation.turns)} turns")

    app = appmod.build_app(good_run)
    assert any("missing_tree_view" in e for e in app.store.errors)  # reported, app still built
    assert app.views["Structures"].sections["full_context"][0].object.endswith(" turns")


def test_traces_show_router_iterations(good_run, tmp_path):
    from workbench.trace import Answer, Step

    run = copy_run(good_run, tmp_path / "memr3")
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    base = rows[0]
    steps = (Step("router", "iteration 1", {"evidence": [], "gaps": ["which city"], "action": "retrieve"}),
             Step("router", "iteration 2", {"evidence": ["she moved to <i>Lisbon</i>"], "gaps": [], "action": "answer",
                                            "forced": True, "forced_by": "max_iterations"}))
    ans = Answer(base["question"], "Lisbon", steps, method="memr3")
    with open(run / "results.jsonl", "a") as f:
        f.write(json.dumps({**base, "method": "memr3", "answer": ans.to_dict()}) + "\n")
    app = appmod.build_app(run)
    v = app.views["Traces"]
    v.question.value = base["qa_id"]
    v.method.value = "memr3"
    v.next()
    assert 'class="wb-del" title="closed">which city' in v.html  # the gap closed, struck through
    assert "wb-cause-forced" in v.html and "max_iterations" in v.html  # the guard that forced the answer
    assert "&lt;i&gt;Lisbon&lt;/i&gt;" in v.html


# -- speed: tabs built when first shown, plotly.js after the first paint, the first semantic search --------
def test_tabs_are_built_when_first_shown_or_linked_to(good_run):
    app = appmod.build_app(good_run)
    assert [n for n in TABS if app.views.built(n)] == ["Question"]  # the tab the app opens on, nothing else
    assert all(app.slots[n].objects == [] for n in TABS[1:])
    assert app.slots["Question"].objects == [app.views["Question"].panel]
    app.tabs.active = TABS.index("Events")  # a click on the tab (or the keyboard: TabKeys clicks it)
    assert app.views.built("Events") and app.slots["Events"].objects == [app.views["Events"].panel]
    assert not app.views.built("Lifecycle") and not app.views.built("Traces")
    turn = app.store.conversation().turns[0].id
    app.follow(("turn", turn))  # a link in Memories/Events opens Lifecycle, built on the way
    assert app.views.built("Lifecycle") and app.tabs.active == TABS.index("Lifecycle")
    assert app.views["Lifecycle"].target == ("turn", turn)
    qa_id = next(iter(app.views["Question"].question.options.values()))
    app.open_trace(qa_id, "naive_rag")  # the Question tab's button opens Traces, built on the way
    assert app.views.built("Traces") and app.tabs.active == TABS.index("Traces")
    assert app.views["Traces"].question.value == qa_id and app.views["Traces"].method.value == "naive_rag"
    app.prewarm()  # outside a server: the rest at once
    assert all(app.views.built(n) and app.slots[n].objects == [app.views[n].panel] for n in TABS)


def test_plots_wait_for_plotly_in_a_page_that_loads_it_later(good_run):
    app = appmod.WorkbenchApp(good_run, plotly_on_demand=True)
    events = app.views["Events"]
    assert events.panel.select(pn.pane.Plotly) == []  # not in the page until plotly.js is there
    assert "loading the chart library" in " ".join(str(p.object) for p in events.panel.select(pn.pane.HTML))
    results = app.views["Results"]
    assert results.panel.select(pn.pane.Plotly) == []
    app.plotly.ready = True  # the browser reports plotly.js loaded
    assert events.panel.select(pn.pane.Plotly) == [events.plot]
    assert results.panel.select(pn.pane.Plotly) == [results.plot]
    assert "loading the chart library" not in " ".join(str(p.object) for p in events.panel.select(pn.pane.HTML))
    assert app.views["Traces"].panel.select(pn.pane.Plotly) == []  # built after the load: nothing to hold
    late = appmod.WorkbenchApp(good_run, plotly_on_demand=True)
    late.plotly.failed = "the request failed"
    late_events = late.views["Events"]
    assert "could not be loaded: the request failed" in " ".join(
        str(p.object) for p in late_events.panel.select(pn.pane.HTML))
    inline = appmod.build_app(good_run)  # a notebook / plain process: the page has plotly, nothing is held
    assert inline.views["Events"].panel.select(pn.pane.Plotly) == [inline.views["Events"].plot]


def test_first_semantic_search_in_a_served_page_says_what_it_embeds(good_run, monkeypatch):
    import time

    app = appmod.build_app(good_run)
    mem = app.views["Memories"]
    mem.method.value = "eager_facts"
    mem.store.forget_vectors("eager_facts")
    started = []
    from widgets.tabs import memories as memories_tab

    monkeypatch.setattr(memories_tab, "in_server_session", lambda: True)  # the Memories tab's own check
    monkeypatch.setattr(appmod.MemoriesView, "start_embedding", lambda self, method, doc: started.append(method))
    mem.mode.value, mem.query.value = "semantic", "giant pumpkin"
    n = len(mem.store.memories("eager_facts"))
    assert started == ["eager_facts"] and mem.table.loading
    assert f"embedding {n} memories of <b>Eager floor</b> with hash-256 for the first semantic search…" \
        in mem.info.object
    # progress, not an error: the neutral status style with a spinner, never the pink of a refresh/error
    assert "class='wb-progress' role='status'" in mem.info.object and "wb-spin" in mem.info.object
    assert "class='wb-refresh'" not in mem.info.object
    mem.query.value = "giant pumpkin for the autumn show"  # typing on: still the one embedding under way
    assert started == ["eager_facts"] and "embedding" in mem.info.object

    class Doc:  # stands in for the session's document: the worker's callback runs when it is scheduled
        def add_next_tick_callback(self, fn):
            fn()

    monkeypatch.undo()  # the real worker thread now
    monkeypatch.setattr(memories_tab, "in_server_session", lambda: True)
    mem.start_embedding("eager_facts", Doc())
    deadline = time.time() + 30
    while mem.table.loading and time.time() < deadline:
        time.sleep(0.05)
    assert not mem.table.loading and mem.store.has_vectors("eager_facts")
    res = mem.table.value
    assert "pumpkin" in res["text"].iloc[0].lower() and "embedding" not in mem.info.object
    assert list(res["score"]) == sorted(res["score"], reverse=True)


def test_memory_embeddings_are_shared_by_the_sessions_of_a_process(good_run):
    first, second = appmod.RunStore(good_run), appmod.RunStore(good_run)
    first.forget_vectors("naive_rag")
    assert not second.has_vectors("naive_rag")
    vecs = first.vectors("naive_rag")
    assert second.has_vectors("naive_rag") and second.vectors("naive_rag") is vecs  # a reload does not embed again
    assert len(vecs) == len(first.memories("naive_rag"))
    from workbench.embed import HashEmbedder

    given = appmod.RunStore(good_run, embedder=HashEmbedder(dim=64))  # an embedder given to the app: its own
    assert not given.has_vectors("naive_rag") and given.vectors("naive_rag").shape[1] == 64


def test_warm_reads_ahead_what_the_tabs_show(good_run):
    app = appmod.build_app(good_run)
    store = app.store
    assert ("life", store.conv_id) not in store._cache and "results_frame" not in store._cache
    app.warm_in_background().join(timeout=120)
    metric = store.auto_metric()
    assert ("life", store.conv_id) in store._cache and ("summary", metric) in store._cache
    assert all(("ev", m, store.conv_id) in store._cache and ("st", m, store.conv_id) in store._cache
               for m in store.methods)
    results = app.views["Results"]  # built now: it reuses what the worker computed
    assert results.metric.value == metric and results.summary is store.summary(metric)[0]
    assert results.paired is store.paired(metric) and store.errors == []
    # the first semantic search (the Memories tab opens on the first method) finds its vectors ready
    assert store.has_vectors(store.methods[0])


def test_header_says_what_a_labelled_variant_changes():
    from widgets.app import variant_notes

    saved = {"ama": {"params": {"conflict_check": "probe", "conflict_k": 3}},
             "ama[paper-judge]": {"params": {"conflict_check": "judge", "conflict_k": 3}},
             "ama[same]": {"params": {"conflict_check": "probe", "conflict_k": 3}},
             "hmem[turn]": {"params": {}}}
    notes = variant_notes(["naive_rag", "ama", "ama[paper-judge]", "ama[same]", "hmem[turn]"], saved.get)
    assert notes == ["ama[paper-judge] is ama run again beside it: conflict_check = 'judge' (ama: 'probe').",
                     "ama[same] is ama run again beside it: no parameter differs in their saved params.json.",
                     "hmem[turn]: a second configuration of hmem, which this run does not hold."]
    assert variant_notes(["ama", "memr3"], saved.get) == []


def test_every_method_flags_its_non_paper_settings_and_defaults():
    """Issue #39 item 2 (the reviews' finding: non-paper defaults unflagged): a run saved with the small profile
    lists each of its aids, one saved with the paper profile none; the fair arena is flagged for every method;
    a tuple saved as a JSON list is read back as the tuple; notes name only the method's own parameters."""
    import inspect
    import json

    from workbench.methods import REGISTRY

    for name in ("hymem", "ama", "hmem", "recmem", "memr3"):
        cls = REGISTRY[name]
        params = inspect.signature(cls.__init__).parameters
        assert set(cls.value_notes) <= set(params), (name, set(cls.value_notes) - set(params))
        assert cls.departures({"answer_prompt": "shared"}), name  # the fair arena is not the paper's prompt
        small, paper = (json.loads(json.dumps(cls(profile=p).config())) for p in ("small", "paper"))  # as saved
        aids = {k for k in cls.profiles["small"] if cls.profiles["small"][k] != cls.profiles["paper"][k]}
        assert {d.split(" =")[0] for d in cls.departures(small)} >= aids, name
        assert cls.departures(paper) == [], name
    ama = REGISTRY["ama"].departures({"conflict_stores": ["fact"], "ingest_retriever": True})
    assert [d.split(" =")[0] for d in ama] == ["conflict_stores"]
    assert REGISTRY["ama"].departures({"conflict_stores": ["fact", "raw", "episode"]}) == []


def test_header_says_which_recorded_setting_is_not_the_papers():
    """A run recorded with a workbench option (AMA's question probes, H-Mem's turn windows) says so on
    screen, from the saved params; the paper's settings, unknown values and unknown methods add nothing."""
    from widgets.app import departure_notes

    saved = {"ama": {"params": {"conflict_check": "probe"}},
             "ama[paper-judge]": {"params": {"conflict_check": "judge"}},
             "hmem": {"params": {"fragment": "window", "fragment_turns": 4}},
             "recmem": {"params": {"conflict_check": "probe"}},  # not a RecMem parameter with a note
             "mystery": {"params": {"fragment": "window"}},
             "hmem[list]": {"params": {"fragment": ["window"]}}}  # an unhashable value read from disk
    notes = departure_notes(list(saved), saved.get)
    assert [n.split(":")[0] for n in notes] == ["ama", "hmem", "hmem[list]"]  # the list differs from the paper's
    assert "question probes" in notes[0] and "small profile's Judge prompt" in notes[0]
    assert "fragment = 'window'" in notes[1] and "each message" in notes[1]
    assert departure_notes(["ama"], {"ama": {"params": {"conflict_check": "judge"}}}.get) == []
    assert departure_notes(["ama"], {}.get) == []


def test_header_groups_departures_under_each_method_with_its_count():
    from widgets.app import departures_by_method

    html = departures_by_method(["hmem: prompts = 'small': short prompts.", "hmem: summary_words = 80: a bound.",
                                 "ama: conflict_check = 'probe': question <probes>."])
    assert html.count("<details") == 2 and "<b>hmem</b>: 2 departures from its paper" in html
    assert "<b>ama</b>: 1 departure from its paper" in html
    assert "<li class='wb-muted'>summary_words = 80: a bound.</li>" in html
    assert "&lt;probes&gt;" in html and "<probes>" not in html  # model and param text stays escaped
    assert departures_by_method([]) == ""


def test_memories_table_cells_read_as_words_and_empty_columns_are_left_out():
    df = appmod.memories_frame([{"id": "u1", "kind": "episode", "text": "t", "source_ids": ["D1:1", "D1:2"],
                                 "member_ids": ["unit-0", "unit-3"], "scores": {"cos": 0.5}, "blank": None},
                                {"id": "u2", "kind": "fact", "text": "s", "source_ids": [], "member_ids": [],
                                 "scores": {}, "blank": ""}])
    assert df.loc[0, "source_ids"] == "D1:1 D1:2" and df.loc[0, "member_ids"] == "unit-0 unit-3"
    assert df.loc[0, "scores"] == "cos: 0.5" and "blank" not in df.columns
    assert not df.apply(lambda col: col.str.contains(r"\['")).any().any()
    # a level some units lack (pandas makes the column float) reads "1", not "1.0"; a score keeps its fraction
    df = appmod.memories_frame([{"id": "e", "kind": "event", "text": "t", "level": 1, "score": 0.5},
                                {"id": "n", "kind": "entity", "text": "u"}])
    assert list(df["level"]) == ["1", ""] and list(df["score"]) == ["0.5", ""]
    # a date-time reads to the minute without the ISO "T", and still sorts in time order as text
    times = ["2023-05-08T13:56:00", "2023-03-14T19:40:00", "2023-03-14T09:05:30", "", "soon"]
    df = appmod.memories_frame([{"id": f"u{i}", "kind": "raw", "text": "t", "time": t, "updated_at": t}
                                for i, t in enumerate(times)])
    assert list(df["time"]) == ["2023-05-08 13:56", "2023-03-14 19:40", "2023-03-14 09:05:30", "", "soon"]
    assert list(df["updated_at"]) == list(df["time"])
    assert sorted(df["time"][:3]) == ["2023-03-14 09:05:30", "2023-03-14 19:40", "2023-05-08 13:56"]


def test_conversations_tab_counts_the_questions_this_run_answered(good_run):
    """The Conversations tab no longer says "22 questions" where every picker lists the 12 the run answered."""
    app = appmod.build_app(good_run)
    view = app.views["Conversations"]
    conv = app.store.conversation()
    answered = len({r["qa_id"] for r in app.store.results() if r.get("conv_id") == conv.id})
    info = view.info.object
    if answered < len(conv.qa):
        assert f"{len(conv.qa)} questions in the conversation, {answered} answered in this run" in info
    else:
        assert f"{len(conv.qa)} questions" in info
    assert answered >= 1


def test_a_thousand_damaged_event_lines_are_one_alert_drawn_once(good_run, tmp_path):
    """Issue #41 item 5: 1,000 damaged events.jsonl lines once meant 1,000 alerts, each new one
    re-rendering all of them (52 s for 300 lines before the first tab). Now: one change of ``errors``
    per file read, one alert listing the first ``MAX_PROBLEMS_SHOWN`` and counting the rest by file."""
    import time

    from workbench.testing.hostile import add_damaged_event_lines

    run = copy_run(good_run, tmp_path / "damaged")
    files = add_damaged_event_lines(run, 1000)
    app = appmod.build_app(run)
    changes = []
    app.store.param.watch(lambda e: changes.append(len(e.new)), "errors")
    start = time.perf_counter()
    app.store.warm()
    app.prewarm()
    took = time.perf_counter() - start
    files = [f for f in files if f.parent.name == app.store.conv_id]  # the conversation shown is read
    assert len(app.store.errors) == 1000 * len(files)
    assert len(changes) <= len(files) + 2, len(changes)  # a batch per file, not one per line
    assert len(app.problems.objects) == 1
    html = app.problems.objects[0].object
    assert html.count("<li>") == appmod.MAX_PROBLEMS_SHOWN
    assert f"Problem reading the run — {1000 * len(files):,} problems" in html
    rest = 1000 * len(files) - appmod.MAX_PROBLEMS_SHOWN
    assert f"{rest:,} more not listed" in html and "events.jsonl (" in html and len(html) < 20_000
    assert took < 30, took  # 0.1 s here; minutes before


def test_problems_html_lists_escapes_and_counts_by_file():
    skipped = [f"skipped runs/a/events.jsonl:{i}: invalid JSON" for i in range(1, 26)] + ["manifest.json: <b>bad</b>"]
    html = appmod.problems_html(skipped, limit=20)
    assert html.count("<li>") == 20 and "6 more not listed: runs/a/events.jsonl (5), manifest.json (1)" in html
    assert "<b>bad</b>" not in html
    assert appmod.problems_html([]) == "" and "Problem reading the run — x" in appmod.problems_html(["x"])
    assert appmod.problem_source("skipped a:b/c.jsonl:7: bad") == "a:b/c.jsonl"



def test_the_memories_line_counts_the_units_hard_to_read(app, monkeypatch):
    """The "hard to read" column can be empty on the first page of a method with flagged units further down: the
    line above the table says how many there are."""
    from widgets.run_store import memories_frame

    v = app.views["Memories"]
    v.method.value = "eager_facts"
    assert "hard to read" not in v.info.object  # a clean method: no column, no count
    flagged = memories_frame([{"id": "u1", "kind": "fact", "text": '{"fact": 1}'},
                              {"id": "u2", "kind": "fact", "text": "Fine."}])
    monkeypatch.setattr(app.store, "search", lambda *a, **k: flagged)
    v.refresh()
    assert "⚠ 1 hard to read</span> (the “hard to read” column)" in v.info.object
    assert "against their turns" not in v.info.object
    wrong = memories_frame([{"id": "u1", "kind": "fact", "text": "I moved", "source_ids": ["D1:1"]},
                            {"id": "u2", "kind": "fact", "text": "Sam is Ana's friend", "source_ids": ["D1:1"]}],
                           {"D1:1": "I moved"})
    monkeypatch.setattr(app.store, "search", lambda *a, **k: wrong)
    v.refresh()
    assert "⚠ 2 facts flagged against their turns</span> (the “against its turns” column)" in v.info.object
    from widgets.readability import method_prompts

    copied = memories_frame([{"id": "u1", "kind": "fact", "text": "Anchor times to the message timestamps (",
                              "source_ids": ["D1:1"]}], {"D1:1": "I moved"}, method_prompts("recmem"))
    assert copied["against its turns"].tolist() == ["⚠ copies its prompt"]  # a line of RecMem's own prompt
    assert "against its turns" not in memories_frame(copied.to_dict("records"), {"D1:1": "I moved"})  # no prompts
    # a summary or episode the model wrote that stops mid-sentence was cut at its length cap (AMA over conv-30: 42 of
    # 121 episodes); an event, or a parent that copies its child, need not end with a full stop
    cut = "Gina is thinking of starting her own business, but she also lost her job at Door Dash this month. She is"
    cells = memories_frame([{"id": "e1", "kind": "episode", "text": cut}, {"id": "s1", "kind": "summary", "text": cut},
                            {"id": "s2", "kind": "summary", "text": cut, "copy_of_child": True},
                            {"id": "v1", "kind": "event", "text": cut}])["hard to read"].tolist()
    assert cells == ["⚠ cut off", "⚠ cut off", "", ""]
