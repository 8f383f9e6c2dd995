"""H-Mem's structures drawn as structures: the tree as a plotly icicle (one box per node, one root per
L4 node, a click picks the node), the entity graph laid out so names do not overlap and stay readable.

No LLM, no browser: the figure, the layout and the page's data are checked as data.
"""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("plotly")
pytest.importorskip("pyvis")
pn = pytest.importorskip("panel")

XSS = "<img src=x onerror=alert(1)>"


def _node(nid, level, parent, children, window, start, summary="", copy=None):
    return {"id": nid, "level": level, "parent": parent, "children": children, "summary": summary or f"text of {nid}",
            "window": window, "start": f"{start}T00:00:00", "end": f"{start}T23:59:00", "n_m": len(children),
            "r_m": f"{start}T10:00:00", "source_ids": [f"D1:{nid}"], "fragment_ids": [], "copy_of_child": copy}


def two_roots_in_one_year() -> dict:
    """What the demo run holds: a year with two L4 clusters. sum4 (two months, three events) and sum35, a
    chain of single-child copies down to one event (H-Mem found it unlike anything in sum4)."""
    rows = [_node("sum4", 4, None, ["sum3", "sum19"], "2023", "2023-03-14", "Priya and Tomasz catch up"),
            _node("sum3", 3, "sum4", ["sum2"], "2023-03", "2023-03-14"),
            _node("sum2", 2, "sum3", ["ev1", "ev2"], "2023-W11", "2023-03-14"),
            _node("ev1", 1, "sum2", [], "2023-03-14", "2023-03-14", XSS),
            _node("ev2", 1, "sum2", [], "2023-03-15", "2023-03-15"),
            _node("sum19", 3, "sum4", ["sum18"], "2023-04", "2023-04-02"),
            _node("sum18", 2, "sum19", ["ev9"], "2023-W13", "2023-04-02"),
            _node("ev9", 1, "sum18", [], "2023-04-02", "2023-04-02"),
            _node("sum35", 4, None, ["sum34"], "2023", "2023-05-13", "Biscuit comes home", copy="sum34"),
            _node("sum34", 3, "sum35", ["sum33"], "2023-05", "2023-05-13", "Biscuit comes home", copy="sum33"),
            _node("sum33", 2, "sum34", ["ev30"], "2023-W19", "2023-05-13", "Biscuit comes home", copy="ev30"),
            _node("ev30", 1, "sum33", [], "2023-05-13", "2023-05-13", "Biscuit comes home")]
    return {"tree": rows, "levels": {"1": "day", "2": "week", "3": "month", "4": "year"}}


# -- the tree figure -------------------------------------------------------------------------------------
def test_tree_figure_has_one_root_per_l4_node_with_its_own_children():
    from widgets.tree_figure import ROOT
    from widgets.tree_view import TreeState

    state = TreeState(two_roots_in_one_year())
    ice = state.part("plot").data[0]
    parent = dict(zip(ice.ids, ice.parents))
    assert sorted(ice.ids) == sorted([ROOT] + [r["id"] for r in state.rows])  # every node once, plus the memory box
    assert [i for i, p in parent.items() if p == ROOT] == ["sum4", "sum35"]  # the two L4 nodes, in time order
    assert parent["sum3"] == parent["sum19"] == "sum4" and parent["sum34"] == "sum35" and parent["ev30"] == "sum33"
    value = dict(zip(ice.ids, ice.values))
    assert (value[ROOT], value["sum4"], value["sum35"], value["sum2"], value["ev1"]) == (4, 3, 1, 2, 1)  # events
    text = dict(zip(ice.ids, ice.text))
    assert "L4 · 2023 (1 of 2)" in text["sum4"] and "L4 · 2023 (2 of 2)" in text["sum35"]  # same window, told apart
    assert "L3 · Mar 2023" in text["sum3"] and "L2 · week of 13 Mar 2023" in text["sum2"]  # time windows, read aloud
    assert "L1 · 14 Mar 2023" in text["ev1"] and "· copy" in text["sum34"] and "· copy" not in text["sum3"]
    colours = dict(zip(ice.ids, ice.marker.colors))
    assert colours["sum4"] != colours["sum3"] != colours["sum2"] != colours["ev1"]  # one colour per level
    assert colours["sum35"] != colours["sum4"] and dict(zip(ice.ids, ice.marker.pattern.shape))["sum35"] == "/"
    assert ice.level == ROOT and ice.sort is False  # opens on the whole memory, boxes in time order
    caption = state.part("caption")
    # the clusters of one window by their events, as their boxes are labelled; node ids only on hover
    assert "<span title='nodes sum4, sum35'>2 × L4 2023 (3 + 1 events)</span>" in caption
    assert "separate clusters" in caption
    assert all(f"L{lv} {name}" in caption for lv, name in ((4, "year"), (3, "month"), (2, "week"), (1, "day")))
    assert "pale, hatched" in caption


def test_the_tree_says_its_time_windows_and_dates_in_words_and_why_its_leaves_are_bare():
    """Review (explorer, session 26): the outline's badges and the picker said "L2 2023-W11", the details
    "2023-03-14T00:00:00 -> ...", and over a whole tree of 51 events the L1 column was a stack of bare strips."""
    from widgets.tree_figure import leaves_unlabelled
    from widgets.tree_view import TreeState, node_label

    state = TreeState(two_roots_in_one_year())
    outline = state.tree_html
    assert ">L2 week of 13 Mar 2023</span>" in outline and "2023-W11" not in outline
    assert "<span class='wb-dates'>14 Mar 2023</span>" in outline and "2023-03-14" not in outline
    nodes = {r["id"]: r for r in two_roots_in_one_year()["tree"]}
    assert node_label(nodes["sum2"], {2: "week"}).startswith("L2 · week of 13 Mar 2023 · sum2")
    state.apply("node_select", "sum2")
    assert "14 Mar 2023 → 14 Mar 2023, 23:59" in state.detail_html and "T00:00" not in state.detail_html
    assert leaves_unlabelled(nodes) == 0 and "too thin to label" not in state.caption_html  # 4 events: labelled
    big = {r["id"]: r for r in _chain_tree_for_caption(51)}
    assert leaves_unlabelled(big) == 51
    assert "the 51 L1 day boxes (one memory event each) are strips too thin to label" in \
        TreeState({"tree": list(big.values()), "levels": {"1": "day"}}).caption_html


def _chain_tree_for_caption(n: int) -> list[dict]:
    """One L2 week over ``n`` day events."""
    days = [f"2023-03-{1 + i % 28:02d}" for i in range(n)]
    return ([_node("wk", 2, None, [f"ev{i}" for i in range(n)], "2023-W09", days[0])]
            + [_node(f"ev{i}", 1, "wk", [], day, day) for i, day in enumerate(days)])

def test_tree_figure_escapes_summaries_and_zooms_onto_the_pick():
    from widgets.tree_figure import SELECTED_LINE, tree_figure
    from widgets.tree_view import TreeState

    state = TreeState(two_roots_in_one_year())
    ice = state.figure.data[0]
    spec = json.dumps(state.figure.to_plotly_json(), default=str)
    assert "<img" not in spec and "&lt;img src=x" in spec  # hover and box text
    state.apply("node_select", "sum2")  # a week with two events: the chart opens on it
    ice = state.figure.data[0]
    assert ice.level == "sum2" and dict(zip(ice.ids, ice.marker.line.color))["sum2"] == SELECTED_LINE
    assert list(ice.marker.line.color).count(SELECTED_LINE) == 1
    state.apply("node_select", "ev9")  # a leaf: shown among its siblings, under its parent
    assert state.figure.data[0].level == "sum18" and "ev9" in state.detail_html
    state.apply("node_select", "")
    assert state.figure.data[0].level == "(memory)"
    cycle = {"a": _node("a", 2, "b", ["b"], "2023-W01", "2023-01-02"),
             "b": _node("b", 1, "a", [], "2023-01-02", "2023-01-02")}
    assert len(tree_figure(cycle).data[0].ids) == 1  # a parent cycle is not drawn (plotly would refuse it)...
    caption = TreeState({"tree": list(cycle.values())}).caption_html
    assert "Not drawn (in a parent cycle): a b" in caption  # ...but named


def test_a_click_on_a_box_in_the_app_picks_its_node():
    from widgets.structure_views import TreePanel

    tp = TreePanel(two_roots_in_one_year())
    plot = tp.outputs["plot"]
    assert isinstance(plot, pn.pane.Plotly) and plot.object is tp.figure
    plot.click_data = {"points": [{"curveNumber": 0, "pointNumber": 2, "customdata": "sum19", "id": "sum19"}]}
    assert tp.selected == "sum19" and tp.node_select.value == "sum19" and "Children (1)" in tp.detail.object
    assert tp.outputs["plot"].object.data[0].level == "sum19"
    plot.click_data = {"points": [{"customdata": ""}]}  # the memory box: no node, nothing changes
    plot.click_data = {"points": [{"customdata": "nope"}]}
    assert tp.selected == "sum19"


def test_only_a_figure_part_can_select_by_click():
    from widgets.view_state import Part

    assert Part("plot", "figure", select="node_select").select == "node_select"
    with pytest.raises(ValueError, match="only a figure part"):
        Part("detail", "html", select="node_select")


def test_the_notebook_shows_the_same_tree_figure():
    from widgets.tree_view import TreeView

    tv = TreeView(two_roots_in_one_year()).select("sum3")
    shown = tv.outputs["plot"].outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert shown["data"][0]["ids"] == list(tv.state.figure.data[0].ids) and shown["data"][0]["level"] == "sum3"
    assert "data-node='sum3'" in tv.tree.value  # the text outline is still there


# -- the entity graph ----------------------------------------------------------------------------------------
def hub_graph(n: int = 30) -> dict:
    """Two hubs sharing most neighbours, with long names: what crowded the demo's graph."""
    nodes = [{"id": "h0", "name": "Priya", "type": "person", "mentions": 60, "source_ids": []},
             {"id": "h1", "name": "Tomasz", "type": "person", "mentions": 55, "source_ids": []}]
    nodes += [{"id": f"e{i}", "name": f"pumpkin handover document {i}", "type": "other", "mentions": 1 + i % 4,
               "source_ids": []} for i in range(n)]
    edges = [{"source": f"h{i % 2}", "target": f"e{i}", "relation": f"relation number {i}"} for i in range(n)]
    edges += [{"source": "h1", "target": f"e{i}", "relation": "also"} for i in range(0, n, 3)]
    return {"nodes": nodes, "edges": edges}


def test_graph_layout_leaves_no_two_names_overlapping():
    import networkx as nx
    import numpy as np

    from widgets.graph_layout import _boxes, layout, overlaps

    graph = hub_graph()
    pos = layout(graph)
    assert set(pos) == {n["id"] for n in graph["nodes"]} and overlaps(graph, pos) == []
    assert layout(graph) == pos  # seeded: a redraw puts everything in the same place
    # without the push-apart step, the spring layout at the same scale does overlap (what the test guards)
    ids, ext = _boxes(graph)
    g = nx.Graph([(e["source"], e["target"]) for e in graph["edges"]])
    spring = nx.spring_layout(g, seed=7)
    xy = np.array([spring[i] for i in ids])
    raw = {i: tuple(p) for i, p in zip(ids, (xy - xy.mean(0)) / np.abs(xy).max(0) * [350, 175])}
    assert len(overlaps(graph, raw)) > 10


def test_graph_page_places_nodes_with_readable_names_and_edge_relations_on_hover():
    from widgets.graph_layout import FONT_MIN, MIN_LABEL_PX, min_scale, overlaps
    from widgets.graph_view import GRAPH_OPTIONS, graph_html

    graph = hub_graph()
    page = graph_html(graph)
    nodes = json.loads(re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page).group(1))
    edges = json.loads(re.search(r"edges = new vis\.DataSet\((\[.*?\])\);", page).group(1))
    assert min(n["font"]["size"] for n in nodes) == FONT_MIN >= MIN_LABEL_PX
    assert max(n["font"]["size"] for n in nodes) > FONT_MIN  # hubs' names are bigger
    assert FONT_MIN * min_scale() >= 11 and f"var MIN_LABEL_PX = {MIN_LABEL_PX};" in page  # the page never zooms below
    assert overlaps(graph, {n["id"]: (n["x"], n["y"]) for n in nodes}) == []  # placed where the layout put them
    assert GRAPH_OPTIONS["physics"] == {"enabled": False} and "scaling" not in GRAPH_OPTIONS["nodes"]
    assert all("label" not in e and e["title"] and e["relation"] for e in edges)  # relations on hover, not drawn
    assert 'network.on("hoverEdge"' in page and 'network.on("blurEdge"' in page
    assert "network.once(\"stabilizationIterationsDone\"" not in page and "document.body.dataset.ready" in page
