"""Structure views: H-Mem tree and entity graph, RecMem clusters with threshold replay, the app's Structures tab.

Built on tiny conversations with ScriptedLLM (role-matched synthetic replies) and offline embedders;
no LLM is ever called by a view.
"""
from __future__ import annotations

import json
import re
from datetime import datetime

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")
pytest.importorskip("pyvis")
pn = pytest.importorskip("panel")

from workbench.data import Conversation, Session, Turn  # noqa: E402
from workbench.embed import HashEmbedder  # noqa: E402
from workbench.llm import ScriptedLLM  # noqa: E402
from workbench.methods import RecMem  # noqa: E402
from workbench.methods.hmem import HMem  # noqa: E402
from workbench.methods.recmem.trigger import replay_triggers  # noqa: E402
from workbench.rundir import RunDir, save_conversation, save_memory_snapshot  # noqa: E402

from widgets import ClusterView, GraphView, TreeView  # noqa: E402
from widgets.cluster_view import membership  # noqa: E402
from widgets.graph_view import external_sources, legend_html  # noqa: E402
from widgets.structure_views import ClusterPanel, GraphPanel, TreePanel  # noqa: E402

XSS = "<img src=x onerror=alert(1)>"
SUMMARY = "{label}: Sam & Noor's <news>"


# -- fakes -------------------------------------------------------------------------------------------
def hmem_summary(messages):
    """A summary naming its window (``2023-W23``, ``2023-06``), with characters that need escaping."""
    label = re.search(r"fall in the \w+ (\S+):", messages[0]["content"]).group(1)
    return json.dumps({"summary": SUMMARY.format(label=label)})


def hmem_extract(messages):
    """One event per turn; the speaker and capitalised words as entities; speaker -mentions-> word."""
    body = messages[0]["content"].split("\n\n")[1]
    events, ents, rels = [], [], []
    for speaker, text in re.findall(r"^(\w+): (.+)$", body, flags=re.M):
        events.append({"text": f"{speaker} said: {text}"})
        ents.append({"name": speaker, "type": "person"})
        for word in re.findall(r"(?<=\s)[A-Z][a-z]{2,}\b", text):
            ents.append({"name": word, "type": "location" if word in ("Lyon", "Geneva") else "other"})
            rels.append({"source": speaker, "relation": "mentions", "target": word})
    return json.dumps({"events": events, "entities": ents, "relations": rels})


class NearEmbedder:
    """Hashing vectors pulled towards one shared axis (cosines about 0.9), so H-Mem's events of a week
    cluster under one week node and both weeks under one month node."""

    name = "near"

    def __init__(self):
        self.hash = HashEmbedder(dim=64)

    def __call__(self, texts):
        v = np.asarray(self.hash(texts), dtype=np.float32)
        v[:, 0] += 3.0
        return v / np.linalg.norm(v, axis=1, keepdims=True)


TOPICS = ("alpha", "beta")


class TopicEmbedder:
    """A topic word is an axis, token ``u<i>`` a private axis of weight 0.5: same-topic units have cosine
    0.8, a unit and a topic-only text (an episode) 0.894, different topics 0."""

    name = "topic"

    def __call__(self, texts):
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for r, text in enumerate(texts):
            for w in re.findall(r"[a-z0-9]+", text.lower()):
                if w in TOPICS:
                    out[r, TOPICS.index(w)] += 1
                elif re.fullmatch(r"u\d+", w):
                    out[r, 2 + int(w[1:]) % 28] += 0.5
            if not out[r].any():
                out[r, -1] = 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def topic_conv(topics) -> Conversation:
    sessions = []
    for i, topic in enumerate(topics):
        sid, when = f"S{i + 1}", datetime(2023, 5, 1 + i, 10)
        turns = (Turn(f"D{i + 1}:1", "Ann", f"{topic} u{i}", sid, when), Turn(f"D{i + 1}:2", "Bob", "ok", sid, when))
        sessions.append(Session(sid, when, turns))
    return Conversation("topics", ("Ann", "Bob"), tuple(sessions))


@pytest.fixture(scope="module")
def hmem(tiny_conv):
    llm = ScriptedLLM({"hmem.extract": hmem_extract, "hmem.consolidate": hmem_summary}, default="auto")
    return HMem(llm=llm, embedder=NearEmbedder()).ingest(tiny_conv)


@pytest.fixture(scope="module")
def recmem():
    """Six alpha units then a beta: the third fires (count 3), the next three merge into its episode."""
    llm = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann alpha story."]},
                       "recmem.merge": {"should_merge": "yes", "merged_memory": "Ann alpha story, continued."},
                       "recmem.refine": {"facts": ["Ann likes alpha."]}, "recmem.refine_merge": {"facts": []}},
                      default="auto")
    m = RecMem(llm=llm, embedder=TopicEmbedder(), theta_sim=0.7, theta_count=3)
    return m.ingest(topic_conv(["alpha"] * 6 + ["beta"]))


# -- structures() ------------------------------------------------------------------------------------
def test_structures_round_trip_through_json(hmem, recmem):
    for method in (hmem, recmem):
        s = method.structures()
        assert json.loads(json.dumps(s)) == s  # plain JSON: no tuples, datetimes or numpy values
    s = hmem.structures()
    assert {r["id"] for r in s["tree"]} == {r["id"] for r in hmem.tree_nodes()}
    assert {n["id"] for n in s["graph"]["nodes"]} == set(hmem.graph_.nodes)
    assert len(s["graph"]["edges"]) == hmem.graph_.number_of_edges() > 0
    assert {"name", "type", "aliases", "source_ids"} <= set(s["graph"]["nodes"][0])
    r = recmem.structures()
    assert [u["id"] for u in r["units"]] == recmem.unit_order_ and [u["order"] for u in r["units"]] == list(range(7))
    assert np.array(r["embeddings_2d"]).shape == (7, 2) and np.array(r["embeddings"]).shape == (7, 32)
    assert [d["outcome"] for d in r["trigger_log"]] == ["buffered", "buffered", "triggered", "merged", "merged",
                                                        "merged", "buffered"]
    assert r["episodes"][0]["member_ids"] == [f"unit-{i}" for i in range(6)]
    assert r["params"]["theta_sim"] == 0.7 and r["params"]["theta_count"] == 3
    assert r["embeddings_2d"] == recmem.structures()["embeddings_2d"]  # deterministic projection


# -- TreeView ----------------------------------------------------------------------------------------
def test_tree_view_select_shows_the_node(hmem, tiny_conv):
    tv = TreeView(hmem)
    assert tv.selected is None and tv.conversation.id == tiny_conv.id
    top = max(tv.rows, key=lambda r: (len(r["children"]), r["level"]))
    assert top["level"] == 2 and top["summary"] == SUMMARY.format(label=top["window"])  # an LLM summary
    leaf = next(r for r in tv.rows if r["level"] == 1)
    tv.select(top["id"])
    assert tv.selected == top["id"] and tv.node_select.value == top["id"]
    assert f"{top['window']}: Sam &amp; Noor&#x27;s &lt;news&gt;" in tv.detail_html and "<news>" not in tv.detail_html
    assert f"Children ({len(top['children'])})" in tv.detail_html
    assert all(c in tv.detail_html for c in top["children"])
    first = tv.detail_html
    tv.node_select.value = leaf["id"]  # the dropdown drives select()
    assert tv.selected == leaf["id"] and tv.detail_html != first and "(a leaf: one memory event)" in tv.detail_html
    turn = tiny_conv.turn(leaf["source_ids"][0])
    assert f"<b>{turn.id}</b>" in tv.detail_html  # source turn text shown
    assert f"<details class='wb-selected' open data-node='{leaf['id']}'>" in tv.tree_html  # its line, marked
    assert tv.tree.value == tv.tree_html and tv.detail.value == tv.detail_html  # what the widgets show
    assert all(f"data-node='{r['id']}'" in tv.tree_html for r in tv.rows if not r.get("copy_of_child"))
    with pytest.raises(KeyError):
        tv.select("nope")


def test_tree_view_from_saved_dict_escapes_text():
    rows = [{"id": "sum2", "level": 2, "parent": None, "children": ["ev1"], "summary": XSS, "window": "2023-W23",
             "start": "2023-06-05T00:00:00", "end": "2023-06-06T00:00:00", "n_m": 1, "r_m": "2023-06-05T09:00:00",
             "source_ids": ["D1:1"], "fragment_ids": ["frag0"]},
            {"id": "ev1", "level": 1, "parent": "sum2", "children": [], "summary": "Sam adopted Miso", "window":
             "2023-06-05", "start": "2023-06-05T00:00:00", "end": "2023-06-06T00:00:00", "n_m": 0,
             "r_m": "2023-06-05T09:00:00", "source_ids": ["D1:1"], "fragment_ids": ["frag0"]}]
    tv = TreeView({"tree": rows, "levels": {"1": "day", "2": "week"}}).select("sum2")
    assert "&lt;img src=x" in tv.detail_html and "<img src=x" not in tv.detail_html
    assert "(turn texts not available)" in tv.detail_html  # no conversation: ids only
    assert "<img" not in tv.tree_html and "&lt;img src=x" in tv.tree_html


# -- GraphView ---------------------------------------------------------------------------------------
def test_graph_view_is_offline_and_names_every_entity(hmem, tiny_conv):
    gv = GraphView(hmem)
    names = [n["name"] for n in gv.graph["nodes"]]
    assert {"Sam", "Noor", "Lyon", "Geneva"} <= set(names)
    assert external_sources(gv.html) == []
    assert not re.search(r"<script[^>]*\bsrc\s*=", gv.html, re.I) and "<link" not in gv.html.lower()
    assert "vis.Network(" in gv.html and "cdn.jsdelivr" not in gv.html  # vis-network inlined
    assert all(json.dumps(name)[1:-1] in gv.html for name in names)
    assert "bootstrap" not in gv.html and "<h1>" not in gv.html  # the workbench template, not pyvis's default
    legend = legend_html(gv.graph)
    assert gv.legend.value == legend and "location" in legend and "person" in legend  # the types present
    assert gv.frame.value.startswith("<iframe srcdoc=\"") and "<script" not in gv.frame.value  # escaped srcdoc
    gv.select("noor")  # by name, case-insensitive
    assert gv.selected == next(n["id"] for n in gv.graph["nodes"] if n["name"] == "Noor")
    assert "Yes, still in Lyon for now." in gv.detail_html  # a source turn's text
    assert "mentions" in gv.detail_html and "Lyon" in gv.detail_html  # its relations
    gv.entity_select.value = gv.graph["nodes"][0]["id"]
    assert gv.selected == gv.graph["nodes"][0]["id"] and gv.detail_html.count("<b>D1:1</b>") == 1
    with pytest.raises(KeyError):
        gv.select("Nobody")


def test_graph_view_escapes_names_and_turns():
    graph = {"nodes": [{"id": "ent0", "name": XSS, "type": "person", "aliases": ["<b>x</b>"], "source_ids": ["D1:1"],
                        "mentions": 1},
                       {"id": "ent1", "name": "Lyon", "type": "location", "aliases": [], "source_ids": [],
                        "mentions": 1}],
             "edges": [{"source": "ent0", "target": "ent1", "relation": "<i>lives in</i> href", "source_ids": []}]}
    gv = GraphView({"graph": graph}).select("ent0")
    assert "<img src=x" not in gv.html and "\\u003cimg" in gv.html  # JSON-escaped inside the page
    assert "popup.innerHTML" not in gv.html  # "href" in a title would switch pyvis to an innerHTML popup
    assert "&lt;img src=x" in gv.detail_html and "<img src=x" not in gv.detail_html
    assert "&lt;i&gt;lives in&lt;/i&gt;" in gv.detail_html


# -- ClusterView ---------------------------------------------------------------------------------------
def test_cluster_view_sliders_replay_the_trigger(recmem):
    s = recmem.structures()
    live = sum(d.fired for d in recmem.trigger_log_)
    cv = ClusterView(recmem)
    assert (cv.theta_sim, cv.theta_count) == (0.7, 3)
    assert cv.trigger_count == cv.live_trigger_count == live == 1
    assert [d.outcome for d in cv.decisions] == [d.outcome for d in recmem.trigger_log_]
    assert cv.labels["unit-0"] == cv.labels["unit-2"] == "consolidation at unit-2"  # named by its trigger
    assert cv.labels["unit-3"] == "merged into an episode" and cv.labels["unit-6"] == "buffered"

    def direct(sim, count):
        merged = [d.unit_id for d in recmem.trigger_log_ if d.outcome == "merged"]
        ds = replay_triggers(np.array(s["embeddings"]), None, sim, count, ids=[u["id"] for u in s["units"]],
                             merged=merged)
        return sum(d.fired for d in ds)

    cv.sim_slider.value = 0.85  # above the same-topic cosine 0.8: nothing recurs
    assert cv.theta_sim == 0.85 and cv.trigger_count == direct(0.85, 3) == 0
    assert "<b class='wb-replay-count'>0</b>" in cv.counts_html and "<b class='wb-live-count'>1</b>" in cv.counts_html
    cv.sim_slider.value, cv.count_slider.value = 0.7, 2
    assert cv.trigger_count == direct(0.7, 2) == 1  # units 0-1 fire at unit 1; 2 waits alone; 3-5 merged
    cv.set_thresholds(0.5, 2)
    assert cv.count_slider.value == 2 and cv.trigger_count == direct(0.5, 2)
    assert len(cv.timeline.data[1].x) == cv.trigger_count and len(cv.timeline.data[2].x) == live
    cv.reset_button.click()
    assert (cv.theta_sim, cv.theta_count, cv.trigger_count) == (0.7, 3, live)
    assert cv.trigger_count == sum(d.fired for d in recmem.replay())  # the method's own replay agrees


def test_cluster_view_gate_alone_and_saved_structures(recmem, tmp_path):
    gate = ClusterView(recmem, live_outcomes=False)  # merged units reach the gate: 0-2 fire, then 3-5 fire
    assert gate.trigger_count == 2 != gate.live_trigger_count
    assert membership(gate.decisions)["unit-5"] == "consolidation at unit-5"
    out = save_memory_snapshot(recmem, tmp_path)
    saved = RunDir(tmp_path).structures("recmem", recmem.conversation_.id)
    cv = ClusterView(saved)  # from JSON: the same bits, the same decisions
    assert (out / "structures.json").exists() and cv.trigger_count == cv.live_trigger_count == 1
    assert [d.count for d in cv.decisions] == [d.count for d in recmem.trigger_log_]
    blind = ClusterView({k: v for k, v in saved.items() if k != "embeddings"})
    assert blind.sim_slider.disabled and blind.trigger_count == 1  # no replay without embeddings: the live log
    with pytest.raises(ValueError):
        cv.set_thresholds(1.5, 3)


# -- static HTML: the structure views on a page without live widgets (issue #42) -------------------------------
def test_tree_view_static_html_is_the_tree_and_the_selected_node(hmem, static_view):
    tv = TreeView(hmem)
    top = max(tv.rows, key=lambda r: (len(r["children"]), r["level"]))
    tv.select(top["id"])
    html = static_view(tv, tv.tree_html, tv.detail_html, "tree node: <b>", f"{top['window']}: Sam &amp; Noor")
    assert "<news>" not in html
    # in the layout's order: the tree drawn as a tree (static: nested lists), the picked node, the text outline
    assert html.index('class="wb-figure"') < html.index(tv.detail_html) < html.index(tv.tree_html)
    assert "<ul" in html[html.index('class="wb-figure"'):html.index(tv.detail_html)]


def test_graph_view_static_html_lists_entities_and_relations_without_the_script_page(static_view):
    graph = {"nodes": [{"id": "ent0", "name": XSS, "type": "person", "aliases": ["<b>x</b>"], "source_ids": ["D1:1"],
                        "mentions": 2},
                       {"id": "ent1", "name": "Lyon", "type": "location", "aliases": [], "source_ids": [],
                        "mentions": 1}],
             "edges": [{"source": "ent0", "target": "ent1", "relation": "<i>lives in</i>", "source_ids": ["D1:1"]}]}
    gv = GraphView({"graph": graph}).select("Lyon")
    html = static_view(gv, "Entities (2)", "Relations (1)", "&lt;img src=x onerror=alert(1)&gt;",
                       "&lt;i&gt;lives in&lt;/i&gt;", "&lt;b&gt;x&lt;/b&gt;",
                       "entity: <b>Lyon (location, 1 mentions)</b>",
                       gv.legend_html, gv.detail_html)
    assert "<iframe" not in html and "<img" not in html and "vis.Network" not in html
    assert "<td>Lyon</td>" in html.split("Relations (1)")[1]  # the relation names its target entity


def test_cluster_view_static_html_draws_both_figures_and_lists_the_episodes(recmem, static_view):
    cv = ClusterView(recmem)
    cv.set_thresholds(0.5, 2)
    html = static_view(cv, "θ_sim (similarity): <b>0.50</b>",
                       "θ_count (units to consolidate): <b>2</b>", cv.counts_html, cv.episodes_html,
                       "Units by consolidation (PCA of their embeddings: near = similar text)",
                       "PC 1: the direction in which the units", "Consolidation moments",
                       "θ_count 2")
    assert html.count("<svg") == 2 and "live thresholds: " not in html  # a button has no value to show
    # every unit is a marker of the scatter (stars for the triggers), and the legend names each membership label
    scatter = html.split("<svg")[1]
    assert scatter.count("<circle") + scatter.count("<polygon") + scatter.count("<rect") - 1 == len(cv.data.ids)
    assert all(label in html for label in set(cv.labels.values()))


# -- the app ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, hmem, recmem, tiny_conv):
    run = tmp_path_factory.mktemp("structures") / "run"
    save_conversation(run, tiny_conv)
    save_memory_snapshot(hmem, run)
    save_memory_snapshot(recmem, run, conv_id=tiny_conv.id)  # shown under the run's conversation
    return run


def test_app_structures_tab_renders_hmem_and_recmem(run_dir):
    from widgets import app as appmod

    app = appmod.build_app(run_dir)
    assert app.store.errors == []
    view = app.views["Structures"]
    assert view.headings() == ["H-Mem hmem", "RecMem recmem"]
    for method in ("hmem", "recmem"):
        section = view.sections[method][0]
        assert not isinstance(section, pn.pane.Alert), section.object
    assert view.sections["recmem"][0].select(pn.pane.Plotly)  # the scatter and the trigger timeline
    html = "\n".join(str(p.object) for p in view.sections["hmem"][0].select(pn.pane.HTML))
    assert "<iframe srcdoc=" in html and "sandbox=\"allow-scripts\"" in html
    assert "class='wb-tree'" in html and "data-node=" in html  # the collapsible tree
    sliders = [w.name for w in view.sections["recmem"][0].select(pn.widgets.IntSlider)]
    assert sliders == ["θ_count (units to consolidate)"]


def test_panel_views_react_to_widgets(run_dir, tiny_conv):
    run = RunDir(run_dir)
    cp = ClusterPanel(run.structures("recmem", tiny_conv.id))
    before = cp.counts.object
    cp.sim_slider.value = 0.99
    assert cp.trigger_count == 0 and cp.counts.object != before
    cp.reset_button.clicks += 1  # what a click in the browser does
    assert cp.trigger_count == cp.live_trigger_count == 1 and cp.sim_slider.value == 0.7
    tp = TreePanel(run.structures("hmem", tiny_conv.id), tiny_conv)
    node = tp.rows[0]["id"]
    tp.node_select.value = node
    assert tp.selected == node and node in tp.detail.object and "class='wb-selected'" in tp.tree.object
    gp = GraphPanel(run.structures("hmem", tiny_conv.id), tiny_conv)
    gp.entity_select.value = gp.graph["nodes"][0]["id"]
    assert gp.selected == gp.graph["nodes"][0]["id"] and gp.graph["nodes"][0]["name"] in gp.detail.object
    gp.entity_select.value = ""
    assert gp.selected is None


# -- the shared state and rendering (widgets.view_state, TreeState, GraphState, ClusterState) ---------------------
def _chain_tree(n_events: int, *, days_per_week: int = 1) -> list[dict]:
    """H-Mem-shaped rows: ``n_events`` L1 events, each under its own L2 copy, weeks of ``days_per_week``
    events summarised by an L3 node (a copy when it has one child), all under one L4 root."""
    rows, weeks = [], []
    for i in range(n_events):
        day = f"2023-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}T10:00:00"
        ev = {"id": f"ev{i}", "level": 1, "parent": f"w{i}", "children": [], "summary": f"event {i} <b>",
              "window": day[:10], "start": day, "end": day, "n_m": 0, "source_ids": [f"D{i}:1"],
              "copy_of_child": None}
        wk = {"id": f"w{i}", "level": 2, "parent": f"m{i // days_per_week}", "children": [f"ev{i}"],
              "summary": ev["summary"], "window": f"W{i}", "start": day, "end": day, "n_m": 1,
              "source_ids": [f"D{i}:1"], "copy_of_child": f"ev{i}"}
        rows += [ev, wk]
        weeks.append(wk)
    months = {}
    for wk in weeks:
        months.setdefault(wk["parent"], []).append(wk)
    for mid, kids in months.items():
        copy = kids[0]["id"] if len(kids) == 1 else None
        rows.append({"id": mid, "level": 3, "parent": "root", "children": [k["id"] for k in kids],
                     "summary": kids[0]["summary"] if copy else f"summary of {mid}", "window": mid,
                     "start": kids[0]["start"], "end": kids[-1]["end"], "n_m": len(kids),
                     "source_ids": [s for k in kids for s in k["source_ids"]], "copy_of_child": copy})
    rows.append({"id": "root", "level": 4, "parent": None, "children": list(months), "summary": "all of it",
                 "window": "2023", "start": rows[0]["start"], "end": rows[-1]["end"], "n_m": len(months),
                 "source_ids": [], "copy_of_child": None})
    return rows


def test_copy_chains_share_one_line_and_every_node_is_shown_once():
    from widgets.tree_view import TreeState, copy_chain, tree_html

    rows = _chain_tree(6, days_per_week=3) + _chain_tree(1)[:2]  # ...plus a second root: a lone chain w0 -> ev0
    rows[-2:] = [dict(r, id=f"x{r['id']}", parent=("x" + r["parent"]) if r["parent"] != "w0" else "xw0",
                      children=[f"x{c}" for c in r["children"]],
                      copy_of_child=("x" + r["copy_of_child"]) if r["copy_of_child"] else None) for r in rows[-2:]]
    rows[-1]["parent"] = None  # xw0 is a root
    nodes = {r["id"]: r for r in rows}
    assert [r["id"] for r in copy_chain(nodes["w0"], nodes)] == ["w0", "ev0"]  # a copy and the event it copies
    assert [r["id"] for r in copy_chain(nodes["m0"], nodes)] == ["m0"]  # three children: its own summary
    html = tree_html(nodes, {1: "day", 2: "week", 3: "month", 4: "year"})
    lines = re.findall(r"data-node='([^']+)'", html)
    assert sorted(lines) == sorted(["root", "m0", "m1", "ev0", "ev1", "ev2", "ev3", "ev4", "ev5", "xev0"])
    assert html.count("class='wb-lv wb-lv-copy'") == 7  # six week copies, the lone chain's copy
    assert "3 children" in html and "event 0 &lt;b&gt;" in html and "<b>event" not in html
    assert html.index("data-node='xev0'") > html.index("data-node='root'")  # roots in time order (xev0 is later)
    state = TreeState({"tree": rows})
    state.apply("node_select", "ev4")
    opened = re.findall(r"<details[^>]*\bopen\b[^>]*data-node='([^']+)'", state.tree_html)
    assert opened == ["root", "m1", "ev4", "xev0"]  # the path down to the picked node; with <= 3 roots, each root
    assert "class='wb-selected'" in state.tree_html.split("data-node='ev4'")[0][-60:]
    state.apply("node_select", "")
    assert state.selected is None and "class='wb-selected'" not in state.tree_html


def test_a_locomo_sized_tree_renders_every_node():
    from widgets.tree_view import TreeState

    rows = _chain_tree(400, days_per_week=4)  # 400 events, 400 week copies, 100 months, 1 root
    state = TreeState({"tree": rows, "levels": {"1": "day", "2": "week", "3": "month", "4": "year"}})
    lines = re.findall(r"data-node='([^']+)'", state.tree_html)
    assert len(lines) == len(set(lines)) == 400 + 100 + 1  # each copy chain is one line
    assert "901 nodes</b>, 1 roots" in state.tree_html and "400 single-child copies" in state.tree_html
    assert len(state.tree_html) < 1_500_000
    assert len(state.control("node_select").options) == 902  # "(select a node)" and every node


def test_entity_graph_page_comes_from_pyvis_with_the_workbench_template():
    from widgets.graph_view import GRAPH_OPTIONS, GraphState, graph_html

    graph = {"nodes": [{"id": f"e{i}", "name": f"Name{i}", "type": t, "mentions": i, "source_ids": []}
                       for i, t in enumerate(["person", "location", "mystery"])],
             "edges": [{"source": "e0", "target": "e1", "relation": "lives in", "kind": "overlap"}]}
    page = graph_html(graph, selected="e1")
    assert external_sources(page) == [] and "vis.Network(" in page and "neighbourhoodHighlight" in page
    assert "cdn." not in page and "bootstrap" not in page
    data = json.loads(re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page).group(1))
    assert [n["label"] for n in data] == ["Name0", "Name1", "Name2"]  # every label drawn
    assert [n["id"] for n in data if n["picked"]] == ["e1"]  # the picked entity, lit up when the page opens
    options = json.loads(re.search(r"options = (\{.*?\});\n", page).group(1))
    assert options == GRAPH_OPTIONS and options["physics"] == {"enabled": False}  # placed beforehand: redraws agree
    edge = json.loads(re.search(r"edges = new vis\.DataSet\((\[.*?\])\);", page).group(1))[0]
    assert "label" not in edge and edge["relation"] == "lives in" and edge["dashes"] is True  # drawn on hover
    assert edge["title"].startswith("Name0 → lives in → Name1")
    state = GraphState({"graph": graph})
    assert "mystery" in state.legend_html and "dashed edge" in state.legend_html  # unknown types still listed
    state.apply("entity_select", "name2")
    assert state.selected == "e2" and '"picked": true' in state.html and "Name2" in state.detail_html


def test_consolidations_get_distinct_markers_and_their_episodes():
    from widgets.cluster_view import PALETTE, SYMBOLS, ClusterState, consolidation_groups, style

    order = {f"consolidation at unit-{n}": n for n in range(40)}
    looks = [style(label, order) for label in order]
    assert len(set(looks)) == 40 and len({c for c, _ in looks}) == len(PALETTE)  # colours, then shapes, vary
    assert style("consolidation at unit-16", order) == (PALETTE[0], SYMBOLS[1][0])
    assert all(c not in PALETTE for c, _ in (style(x) for x in ("buffered", "merged into an episode")))
    units = [{"id": f"u{i}", "text": f"text {i}", "source_ids": [f"D1:{i}"], "status": "buffered"} for i in range(5)]
    log = [{"unit_id": "u0", "position": 0, "count": 1, "outcome": "buffered"},
           {"unit_id": "u1", "position": 1, "count": 2, "fired": True, "outcome": "triggered", "relevant_ids": ["u0"]},
           {"unit_id": "u2", "position": 2, "count": 1, "outcome": "buffered"},
           {"unit_id": "u3", "position": 3, "count": 2, "fired": True, "outcome": "triggered", "relevant_ids": ["u2"]},
           {"unit_id": "u4", "position": 4, "count": 1, "outcome": "buffered"}]
    episodes = [{"id": "epi-0", "cluster": "c1", "member_ids": ["u0", "u1"], "text": "first"},
                {"id": "epi-1", "cluster": "c2", "member_ids": ["u2", "u3"], "text": "second"},
                {"id": "epi-2", "cluster": "c2", "member_ids": ["u2", "u3"], "text": "third"}]
    state = ClusterState({"units": units, "trigger_log": log, "episodes": episodes, "params": {"theta_count": 2},
                          "embeddings_2d": [[i, 0] for i in range(5)]})
    groups = consolidation_groups(state.data)
    assert [(g["label"], g["trigger"], g["members"], [e["id"] for e in g["episodes"]]) for g in groups] == [
        ("consolidation at u1", "u1", ["u0", "u1"], ["epi-0"]),
        ("consolidation at u3", "u3", ["u2", "u3"], ["epi-1", "epi-2"])]
    assert "1 unit in no episode (still in the buffer): u4<" in state.episodes_html
    assert "text 2" in state.episodes_html and "third" in state.episodes_html  # members' texts and every episode
    assert "copy of" not in state.episodes_html
    # a reply that repeats a paragraph: the copy is named in its consolidation's line and in its row
    # (the census counts it as episodes_repeated)
    episodes.append({"id": "epi-3", "cluster": "c2", "member_ids": ["u2", "u3"], "text": " Second "})
    copied = ClusterState({"units": units, "trigger_log": log, "episodes": episodes, "params": {"theta_count": 2},
                           "embeddings_2d": [[i, 0] for i in range(5)]}).episodes_html
    assert "3 episodes (1 a word-for-word copy)" in copied and "epi-3 (copy of epi-1)" in copied
    assert "1 episode ·" in copied  # consolidation 1 is unchanged
    assert state.control("sim_slider").disabled  # no embeddings saved: the live run only, said so
    assert "No unit embeddings saved" in state.message
    names = [t.name for t in state.figure.data]
    assert names[-1].startswith("trigger:") and {"consolidation at u1", "consolidation at u3", "buffered"} <= set(names)
    stars = [s for t in state.figure.data[:-1] for s in (t.marker.symbol or ()) if s == "star"]
    assert len(stars) == 2  # the two trigger units


def test_each_consolidation_lists_the_facts_refined_from_it_flagged_against_their_turns():
    """At real scale RecMem's refinement pasted dialogue and its own prompt into facts (conv-26: of 136 refined facts,
    6 are a turn word for word, 16 in the first person, "Melanie is getting there, Caroline. Creativity and family
    keep me at peace", and 6 lines of its prompt, "Anchor times to the message timestamps ("); the clusters view
    lists each consolidation's refined facts with their flags (the census's rules), counts them, and says so when
    the turns are not at hand (the first person and the prompt only)."""
    from types import SimpleNamespace

    from widgets.cluster_view import ClusterState

    units = [{"id": f"u{i}", "text": f"text {i}", "source_ids": [f"D1:{i}"]} for i in range(3)]
    log = [{"unit_id": "u1", "position": 1, "count": 2, "fired": True, "outcome": "triggered", "relevant_ids": ["u0"]}]
    episodes = [{"id": "epi-0", "cluster": "c1", "member_ids": ["u0", "u1"], "text": "first"}]
    facts = [{"id": "fact-0", "text": "Noor moved to Geneva.", "source_ids": ["D1:0", "D1:1"], "episode": "epi-0",
              "cluster": "c1"},
             {"id": "fact-1", "text": "Yes, still in Lyon for now.", "source_ids": ["D1:0", "D1:1"],
              "episode": "epi-0", "cluster": "c1"},
             {"id": "fact-2", "text": "I got a job at a museum.", "source_ids": ["D1:1"], "episode": "epi-0",
              "cluster": "c1"},
             {"id": "fact-3", "text": "Anchor times to the message timestamps (", "source_ids": ["D1:1"],
              "episode": "epi-0", "cluster": "c1"}]  # a line of RecMem's own refinement prompt (conv-26)
    structures = {"units": units, "trigger_log": log, "episodes": episodes, "facts": facts,
                  "params": {"theta_count": 2}}
    turns = [SimpleNamespace(id="D1:0", text="Big news: I moved to Geneva."),
             SimpleNamespace(id="D1:1", text="Yes, still in Lyon for now.")]
    html = ClusterState(structures, conversation=SimpleNamespace(id="tiny-1", turns=turns)).episodes_html
    assert "4 facts refined (3 flagged ⚠)" in html and "Facts refined from its episodes" in html
    assert "3 of 4 refined facts flagged against their own turns" in html
    assert html.count("copies its turn") == 1 and html.count("first person") >= 2  # the flag, and the line's words
    assert html.count("copies its prompt") == 1
    bare = ClusterState(structures, conversation="tiny-1").episodes_html  # an id only: no turns at hand
    assert "for the first person and copies of the prompt only" in bare and "copies its turn" not in bare
    assert "4 facts refined (2 flagged ⚠)" in bare
    clean = ClusterState({**structures, "facts": facts[:1]}, conversation=SimpleNamespace(id="tiny-1", turns=turns))
    assert "The one refined fact does not copy a turn or the method's own prompt, name a relation" in (
        clean.episodes_html) and "not its truth" in clean.episodes_html
    none = ClusterState({**structures, "facts": []}).episodes_html
    assert "Facts refined from its episodes" not in none and "refined facts flagged" not in none


def test_episodes_say_whether_they_are_on_a_recurring_topic_when_the_conversation_has_them():
    """sample-1 plants recurring topics (sample_data/annotations.json): each episode of the clusters view says whether
    it is on one (the topic in >= 60 % of the exchanges it was made of), mixed or off, and the line above counts them;
    a conversation with none, or none given, gets no such column."""
    from workbench.eval.annotations import shipped_annotations
    from widgets.cluster_view import ClusterState

    pumpkin = [t for r in shipped_annotations()["sample-1"].recurring if r["id"] == "allotment-pumpkin"
               for t in r["turns"]]  # D1:3, D1:5, D2:8, ...: the turns that name it, not the replies
    a, b, c = pumpkin[1], pumpkin[2], pumpkin[3]
    reply = lambda t: t.split(":")[0] + ":" + str(int(t.split(":")[1]) + 1)  # noqa: E731
    units = [{"id": "u0", "text": "pumpkin", "source_ids": [a, reply(a)]},
             {"id": "u1", "text": "pumpkin again", "source_ids": [b, reply(b)]},
             {"id": "u2", "text": "and again", "source_ids": [c, reply(c)]},
             {"id": "u3", "text": "something else", "source_ids": ["D9:20", "D9:21"]},
             {"id": "u4", "text": "and else", "source_ids": ["D9:22", "D9:23"]},
             {"id": "u5", "text": "still else", "source_ids": ["D9:24", "D9:25"]}]
    log = [{"unit_id": "u2", "position": 2, "count": 3, "fired": True, "outcome": "triggered",
            "relevant_ids": ["u0", "u1"]}]
    episodes = [{"id": "epi-0", "cluster": "c1", "member_ids": ["u0", "u1", "u2"], "text": "the pumpkin",
                 "source_ids": sorted({t for u in units[:3] for t in u["source_ids"]})},
                {"id": "epi-1", "cluster": "c2", "member_ids": ["u0", "u1", "u3", "u4", "u5"], "text": "a bit of it",
                 "source_ids": sorted({t for u in units[:2] + units[3:] for t in u["source_ids"]})},
                {"id": "epi-2", "cluster": "c3", "member_ids": ["u3", "u4"], "text": "other",
                 "source_ids": ["D9:20", "D9:21", "D9:22", "D9:23"]}]
    structures = {"units": units, "trigger_log": log, "episodes": episodes, "params": {"theta_count": 3}}
    html = ClusterState(structures, conversation="sample-1").episodes_html
    assert "1 on one (its turns from two sessions or more, in at least 60% of the exchanges" in html
    assert "1 mixed (in fewer), 1 not a recurrence" in html
    assert "✓ on Priya&#x27;s allotment and giant pumpkin (3 of its 3 exchanges)" in html  # every one of its exchanges
    assert "~ mixed: Priya&#x27;s allotment and giant pumpkin in 2 of its 5 exchanges" in html
    assert "✗ not a recurrence: none of its turns is on a recurring topic" in html
    copy = {**episodes[0], "id": "epi-9"}  # the same consolidation writes the same text again
    repeated = ClusterState({**structures, "episodes": [*episodes, copy]}, conversation="sample-1").episodes_html
    assert "✗ a copy of epi-0: one recurrence, one episode" in repeated and "; 1 word-for-word copy of" in repeated
    conv = __import__("types").SimpleNamespace(id="sample-1")  # a Conversation object as the app passes it
    assert ClusterState(structures, conversation=conv).episodes_html == html
    for other in (None, "tiny-1"):
        plain = ClusterState(structures, conversation=other).episodes_html
        assert "recurring topic" not in plain


def test_notebook_and_app_shells_show_the_same_rendering(hmem, recmem, tiny_conv):
    """Both shells are bindings of one state: after the same action every part is the same HTML/figure."""
    from widgets.cluster_view import ClusterState
    from widgets.notebook_shell import NotebookShell
    from widgets.panel_shell import PanelShell
    from widgets.tree_view import TreeState

    for make, action in ((lambda: TreeState(hmem.structures(), tiny_conv), ("node_select", hmem.tree_nodes()[0]["id"])),
                         (lambda: ClusterState(recmem.structures()), ("count_slider", 2))):
        nb, app = NotebookShell(make()), PanelShell(make())
        nb.inputs[action[0]].value = action[1]
        app.inputs[action[0]].value = action[1]
        for p in nb.state.parts:
            shown_nb, shown_app = nb.outputs[p.name], app.outputs[p.name]
            if p.kind == "html":
                assert shown_nb.value == shown_app.object == app.state.part(p.name) != "" or p.name == "message"
            else:
                assert shown_app.object.to_json() == nb.state.part(p.name).to_json()
                assert shown_nb.outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"] == json.loads(
                    shown_app.object.to_json())["data"]
        assert nb.state.values == app.state.values


def test_view_declarations_reject_unknown_kinds():
    from widgets.view_state import Control, Part

    with pytest.raises(ValueError, match="control kind"):
        Control("dial", "knob", "a dial")
    with pytest.raises(ValueError, match="part kind"):
        Part("map", "svg")


def test_graph_pages_are_written_once_per_content(monkeypatch):
    from widgets import graph_view

    graph = {"nodes": [{"id": "e0", "name": "Pilot", "type": "animal", "mentions": 2, "source_ids": ["D4:3"]}],
             "edges": []}
    written = []
    real = graph_view._write_graph_html
    monkeypatch.setattr(graph_view, "_write_graph_html", lambda g, **kw: written.append(kw) or real(g, **kw))
    monkeypatch.setattr(graph_view, "_PAGES", {})
    first = graph_view.graph_html(graph, selected="e0")
    assert graph_view.graph_html(graph, selected="e0") is first and len(written) == 1  # same content: kept
    assert graph_view.graph_html(graph) != first and len(written) == 2  # another selection: its own page
    changed = {**graph, "nodes": [{**graph["nodes"][0], "name": "Biscuit"}]}
    assert "Biscuit" in graph_view.graph_html(changed, selected="e0") and len(written) == 3


def test_prefetch_writes_the_graph_pages_the_structures_tab_will_show(monkeypatch):
    import pandas as pd

    from widgets import app, graph_view

    graph = {"nodes": [{"id": "e0", "name": "Pilot", "type": "animal", "mentions": 2, "source_ids": []}],
             "edges": []}

    class Store:  # the parts of RunStore prefetch_views reads
        run, conv_id, methods = object(), "c1", ["hmem", "naive_rag"]

        def auto_metric(self):
            return "f1"

        def summary(self, metric):
            return pd.DataFrame(), "rows"

        def structures(self, method):
            return {"graph": graph} if method == "hmem" else {}

        def conversation(self):
            return None

    monkeypatch.setattr(graph_view, "_PAGES", {})
    app.prefetch_views(Store())
    assert len(graph_view._PAGES) == 1
    assert graph_view.GraphState({"graph": graph}).html in graph_view._PAGES.values()  # the tab's page, ready


def test_a_summary_in_another_script_is_flagged_in_the_tree():
    """Usability review: an H-Mem summary ended in two boxes (Qwen wrote "灰色", grey, and the page had no CJK
    font), with nothing to say why. The text stays the model's; a flag beside it names the script."""
    from widgets.tree_view import _marks, _node_body

    cut = "Tomasz interviewed in Bristol, adopted a dog from a rescue in Stockport, plans to call his 灰色"
    body = _node_body({"id": "sum4", "level": 4, "summary": cut}, [{}])
    assert "plans to call his 灰色" in body and "⚠ cjk script" in body and "conversation&#x27;s" in body
    assert _marks({"level": 4, "summary": "Tomasz plans to call his greyhound Biscuit."}) == ""
    # a summary the model wrote past its length cap stops mid-word (H-Mem over conv-30: 38 of 103), and one that
    # repeats a run of words without ending a sentence loops; an event or a copy need not end with a full stop
    assert "⚠ cut off" in body
    assert "⚠ cut off" not in _marks({"level": 1, "summary": "Jon lost his job"})
    assert "⚠ cut off" not in _marks({"level": 2, "summary": "Jon lost his job", "copy_of_child": True})
    looped = _marks({"level": 3, "summary": "Gina, " * 40 + "Gina."})
    assert "⚠ repeats itself" in looped and "⚠ cut off" not in looped
    from widgets.tree_view import flagged_line, tree_html

    nodes = {"a": {"id": "a", "level": 2, "summary": cut, "children": ["c"]},
             "b": {"id": "b", "level": 3, "summary": "Gina, " * 40 + "Gina.", "children": ["a"]},
             "c": {"id": "c", "level": 1, "summary": "Jon lost his job", "parent": "a"},
             "d": {"id": "d", "level": 2, "summary": "Jon lost his job", "copy_of_child": True}}
    nodes["a"]["parent"] = "b"
    line = flagged_line(nodes)
    assert "Of the 2 summaries the model wrote: " in line and "1 cut off" in line and "1 in another script" in line
    assert "1 repeat themselves" in line and line in tree_html(nodes)
    assert flagged_line({"c": nodes["c"]}) == ""
    two = {"a": {**nodes["a"], "summary": cut[:-2] + "可爱 Привет."}}  # two other scripts in one summary: counted once
    assert "1 in another script" in flagged_line(two)


def test_a_recmem_unit_reads_as_the_exchange_its_time_in_words():
    """Review (explorer, session 26): member units showed RecMem's stored frame, "[Message Timestamp]: 7:40 pm on 14
    March 2023 [Message]: [Priya]: ...", beside a time column that already said "2023-03-14T19:40". The view reads
    the text through the method's ``readable`` hook; the structures file keeps what was stored and embedded."""
    from widgets.cluster_view import ClusterState

    stored = "[Message Timestamp]: 7:40 pm on 14 March 2023 [Message]: [Priya]: Hey <b>Tomasz</b>!\n[Tomasz]: Hi."
    units = [{"id": f"u{i}", "text": stored, "source_ids": [f"D1:{i}"], "status": "buffered",
              "time": "2023-03-14T19:40:00"} for i in range(2)]
    log = [{"unit_id": "u0", "position": 0, "count": 1, "outcome": "buffered"},
           {"unit_id": "u1", "position": 1, "count": 2, "fired": True, "outcome": "triggered", "relevant_ids": ["u0"]}]
    structures = {"units": units, "trigger_log": log, "params": {"theta_count": 2}, "embeddings_2d": [[0, 0], [1, 0]],
                  "episodes": [{"id": "epi-0", "cluster": "c1", "member_ids": ["u0", "u1"], "text": "met"}]}
    html = ClusterState(structures).episodes_html
    assert "Message Timestamp" not in html and "[Priya]" not in html
    assert "Priya: Hey &lt;b&gt;Tomasz&lt;/b&gt;!" in html and "<td>14 Mar 2023, 19:40</td>" in html
    assert units[0]["text"] == stored
    from workbench.methods.recmem.structures import readable_unit

    assert readable_unit(stored.replace("Hi.", "I said [x]: hi")).endswith("Tomasz: I said [x]: hi")  # mid-line stays


def test_a_replay_that_skips_a_consolidation_keeps_the_others_names_and_markers():
    """Review (explorer, session 26): numbered by rank, a replay that did not fire the live run's second
    consolidation called its third "consolidation 2", with the list's second colour. Named by the trigger unit,
    the scatter and the list agree on every consolidation both have."""
    from widgets.cluster_view import ClusterState, style

    units = [{"id": f"unit-{i}", "text": f"text {i}", "source_ids": [f"D1:{i}"], "status": "buffered"}
             for i in range(6)]
    log = [{"unit_id": "unit-0", "position": 0, "count": 1, "outcome": "buffered"},
           {"unit_id": "unit-1", "position": 1, "count": 2, "fired": True, "outcome": "triggered",
            "relevant_ids": ["unit-0"]},
           {"unit_id": "unit-2", "position": 2, "count": 1, "outcome": "buffered"},
           {"unit_id": "unit-3", "position": 3, "count": 2, "fired": True, "outcome": "triggered",
            "relevant_ids": ["unit-2"]},
           {"unit_id": "unit-4", "position": 4, "count": 1, "outcome": "buffered"},
           {"unit_id": "unit-5", "position": 5, "count": 2, "fired": True, "outcome": "triggered",
            "relevant_ids": ["unit-4"]}]
    episodes = [{"id": f"epi-{k}", "cluster": f"c{k}", "member_ids": [f"unit-{2 * k}", f"unit-{2 * k + 1}"],
                 "text": f"episode {k}"} for k in range(3)]
    state = ClusterState({"units": units, "trigger_log": log, "episodes": episodes, "params": {"theta_count": 2}})
    skipped = [d for d in state.decisions if d.unit_id != "unit-3"]  # as a replay that did not fire at unit-3
    from widgets.cluster_view import cluster_figure

    names = {t.name: t.marker.color for t in cluster_figure(state.data, skipped).data}
    assert "consolidation at unit-5" in names and "consolidation at unit-3" not in names
    live_looks = state.data.looks()
    assert names["consolidation at unit-5"] == style("consolidation at unit-5", live_looks)[0]
    assert len({names["consolidation at unit-1"], names["consolidation at unit-5"]}) == 2  # never alike
    # a replay firing at a unit the live run did not gets a look no live consolidation has, and keeps it
    skipped[2] = type(skipped[2])("unit-2", 2, (("unit-1", 0.9),), ("unit-1",), 2, True, "triggered")
    again = {t.name: t.marker.color for t in cluster_figure(state.data, skipped).data}
    live_colours = {style(f"consolidation at unit-{n}", live_looks)[0] for n in (1, 3, 5)}
    assert len(live_colours) == 3 and again["consolidation at unit-2"] not in live_colours
    assert again["consolidation at unit-5"] == names["consolidation at unit-5"]  # the replay recoloured nothing
    assert "consolidation at unit-5</b>" in state.episodes_html and "consolidation 2" not in state.episodes_html


def test_a_relation_carrying_the_prompts_example_label_its_turns_never_say_is_flagged_in_the_graph(tiny_conv, hmem):
    """H-Mem over conv-30: the 0.5B labelled 299 relation extractions with the extraction prompt's own examples in
    turns that never say them ("Jon lives in Google", "Jon sister of Gina"). The entity page and the script-free
    tables flag a relation carrying an example label (saved with the graph) that no source turn says; a said one
    ("living in Lyon"), another label (a paraphrase such as "adopted" is often true), an overlap link, or a view
    without the conversation is not flagged."""
    from widgets.graph_view import GraphState, prompt_examples, relations_html, unsaid_mark

    assert hmem.structures()["graph"]["prompt_examples"] == ["lives in", "sister of"]  # as the method saves them
    graph = {"nodes": [{"id": "noor", "name": "Noor", "type": "person", "source_ids": ["D1:5"], "mentions": 2},
                       {"id": "lyon", "name": "Lyon", "type": "location", "source_ids": ["D1:5"], "mentions": 1},
                       {"id": "miso", "name": "Miso", "type": "other", "source_ids": ["D1:3"], "mentions": 1}],
             "edges": [{"source": "noor", "target": "lyon", "relation": "lives in", "kind": "relation",
                        "source_ids": ["D1:5", "D1:6"]},
                       {"source": "noor", "target": "miso", "relation": "sister of", "kind": "relation",
                        "source_ids": ["D1:3"]},
                       {"source": "noor", "target": "miso", "relation": "adopted", "kind": "relation",
                        "source_ids": ["D1:3"]},
                       {"source": "lyon", "target": "miso", "relation": "overlap", "kind": "overlap",
                        "source_ids": ["D1:3"]}],
             "prompt_examples": ["lives in", "sister of", 3]}
    turns = {t.id: t for t in tiny_conv.turns}
    examples = prompt_examples(graph)
    assert examples == ("lives in", "sister of")  # a stray non-string dropped
    assert [unsaid_mark(e, turns, examples) for e in graph["edges"]] == [
        "", "⚠ the prompt's example, never said", "", ""]
    assert unsaid_mark(graph["edges"][1], {}, examples) == ""
    assert unsaid_mark(graph["edges"][1], {"D1:3": "my sister"}, examples) == ""
    assert unsaid_mark(graph["edges"][1], turns) == ""  # no examples saved (an older run, the paper profile)
    state = GraphState({"graph": graph}, tiny_conv)
    state.select("Noor")
    assert "⚠ the prompt&#x27;s example, never said" in state.detail_html
    assert "1 relation below carries an example label" in state.detail_html
    tables = state.static_part("frame")
    assert tables.count("never said") == 1 and "said?" in tables
    assert "said?" not in relations_html(graph)  # no conversation: nothing read, no column
    assert prompt_examples({"prompt_examples": "lives in"}) == ()  # not a list: untrusted, ignored
