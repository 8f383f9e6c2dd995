"""``TreeView``: H-Mem's temporal-semantic tree by level (y) and time (x), one node at a time.

Each node sits at the centre of the time interval it covers, with that interval drawn as a bar
and lines to its parent; a selector (or a click in the app) shows the node's summary, children,
interval, consolidation count ``n_m``, last consolidation ``r_m`` and its source turns.

    TreeView(hmem)                                    # a built HMem (uses hmem.structures())
    TreeView(run.structures("hmem", cid), conversation=run.conversation(cid))   # a saved run, no LLM

Pure helpers (``tree_figure``, ``node_detail_html``) are shared with the app's Structures tab,
which this module also registers for ``hmem`` (tree and entity graph).
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Mapping

from .html import DisplaysWidget, box, esc, pre, short, source_ids_html, table_html, turn_index, turns_html
from .structures import conversation_of, structures_of

LEVEL_COLOURS = ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf")


def _time(value) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))
    except (TypeError, ValueError):
        return None


def _iso(when: datetime) -> str:
    """Plot coordinates as ISO strings (a date axis; Panel and Jupyter serialise them alike)."""
    return when.isoformat()


# -- pure helpers ----------------------------------------------------------------------------------
def level_names(structures: Mapping) -> dict[int, str]:
    return {int(k): str(v) for k, v in (structures.get("levels") or {}).items()}


def node_positions(rows) -> dict[str, tuple[datetime, float]]:
    """``id -> (x, y)``: x = centre of the node's interval, y = level; nodes sharing a level and a
    centre are spread vertically (±0.3) so that none hides another."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    centre = {}
    for r in rows:
        start, end = _time(r.get("start")), _time(r.get("end"))
        if start is None:
            continue
        centre[r["id"]] = start + ((end or start) - start) / 2
        groups[(r["level"], centre[r["id"]])].append(r["id"])
    out = {}
    for (level, x), ids in groups.items():
        for i, node in enumerate(ids):
            offset = 0.0 if len(ids) == 1 else -0.3 + 0.6 * i / (len(ids) - 1)
            out[node] = (x, level + offset)
    return out


def _copy_note(r: Mapping) -> str:
    """H-Mem single-child parents whose text is their child's, copied (no LLM summary)."""
    return f"copy of child {r['copy_of_child']}" if r.get("copy_of_child") else ""


def _hover(r: Mapping) -> str:
    copy = f" · {_copy_note(r)}" if _copy_note(r) else ""
    return "<br>".join([esc(f"{r['id']} · L{r['level']} {r.get('window', '')} · n_m {r.get('n_m', 0)}{copy}"),
                        esc(short(r.get("summary", ""), 140)),
                        esc(f"{len(r.get('children') or [])} children · {len(r.get('source_ids') or [])} turns")])


def tree_figure(rows, *, selected: str | None = None, levels: Mapping[int, str] | None = None):
    """Plotly figure: interval bars, parent-child edges, one marker trace per level (customdata =
    node id, escaped hover text) and the selected node ringed in red."""
    import plotly.graph_objects as go

    rows = list(rows)
    levels = dict(levels or {})
    pos = node_positions(rows)
    fig = go.Figure()
    bx, by, ex, ey = [], [], [], []
    for r in rows:
        if r["id"] not in pos:
            continue
        x, y = pos[r["id"]]
        bx += [_iso(_time(r["start"])), _iso(_time(r.get("end")) or x), None]
        by += [y, y, None]
        if r.get("parent") in pos:
            px, py = pos[r["parent"]]
            ex += [_iso(x), _iso(px), None]
            ey += [y, py, None]
    fig.add_trace(go.Scatter(x=bx, y=by, mode="lines", name="time interval", hoverinfo="skip",
                             line=dict(width=7, color="rgba(120,120,120,0.25)")))
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", name="parent–child", hoverinfo="skip",
                             line=dict(width=1, color="#999")))
    for level in sorted({r["level"] for r in rows if r["id"] in pos}):
        lr = [r for r in rows if r["level"] == level and r["id"] in pos]
        fig.add_trace(go.Scatter(
            x=[_iso(pos[r["id"]][0]) for r in lr], y=[pos[r["id"]][1] for r in lr], mode="markers",
            name=esc(f"L{level} {levels.get(level, '')}".strip()), customdata=[r["id"] for r in lr],
            hovertext=[_hover(r) for r in lr], hoverinfo="text",
            marker=dict(size=[9 + 2 * min(len(r.get("children") or []), 6) for r in lr],
                        color=LEVEL_COLOURS[(level - 1) % len(LEVEL_COLOURS)])))
    if selected in pos:
        x, y = pos[selected]
        fig.add_trace(go.Scatter(x=[_iso(x)], y=[y], mode="markers", name=esc(f"selected: {selected}"),
                                 hoverinfo="skip",
                                 marker=dict(size=22, symbol="circle-open", color="crimson", line=dict(width=3))))
    ticks = sorted({r["level"] for r in rows})
    fig.update_layout(height=420, margin=dict(l=60, r=10, t=40, b=40), title="H-Mem temporal–semantic tree",
                      xaxis=dict(type="date", title="time (centre of each node's interval)"),
                      yaxis=dict(title="level", tickvals=ticks,
                                 ticktext=[esc(f"L{t} {levels.get(t, '')}".strip()) for t in ticks]))
    return fig


def node_label(r: Mapping, levels: Mapping[int, str] | None = None) -> str:
    """Plain-text option label (widgets render it as text)."""
    window = (levels or {}).get(r["level"], "")
    copy = f" ({_copy_note(r)})" if _copy_note(r) else ""
    return f"L{r['level']} {window} {r.get('window', '')} · {r['id']}{copy} · {short(r.get('summary', ''), 60)}"


def ordered_nodes(rows) -> list[Mapping]:
    """Highest level first, then by start time and id (the order of the selector)."""
    return sorted(rows, key=lambda r: (-r["level"], str(r.get("start")), r["id"]))


def node_detail_html(node_id: str, nodes: Mapping[str, Mapping], *, turns: Mapping | None = None,
                     levels: Mapping[int, str] | None = None) -> str:
    """Everything about one node, escaped: summary, interval, n_m, r_m, parent, children, source turns."""
    r = nodes[node_id]
    parent = nodes.get(r.get("parent") or "")
    kids = [nodes[c] for c in r.get("children") or [] if c in nodes]
    facts = {"level": f"L{r['level']} ({(levels or {}).get(r['level'], '?')} window {r.get('window', '')})",
             "interval": f"{r.get('start')} → {r.get('end')}", "n_m (times consolidated)": r.get("n_m", 0),
             "r_m (last consolidated)": r.get("r_m"), "fragments": " ".join(r.get("fragment_ids") or []),
             "parent": f"{parent['id']}: {short(parent.get('summary', ''), 120)}" if parent else "(root)"}
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts.items())
    child_rows = [{"id": c["id"], "level": c["level"], "window": c.get("window", ""), "summary": c.get("summary", "")}
                  for c in kids]
    children = (table_html(child_rows, ["id", "level", "window", "summary"]) if kids
                else '<p class="wb-muted">(a leaf: one memory event)</p>')
    ids = list(r.get("source_ids") or [])
    shown = turns_html(ids, turns or {})
    return box(f"<h4>{esc(node_id)} <span class='wb-badge'>L{esc(r['level'])}</span></h4>"
               f"<h5>Summary{esc(' (' + _copy_note(r) + ', not an LLM summary)') if _copy_note(r) else ''}</h5>"
               f"<div class='wb-summary'>{pre(r.get('summary', ''))}</div><table>{rows}</table>"
               f"<h5>Children ({len(kids)})</h5>{children}"
               f"<h5>Source turns ({len(ids)})</h5><p>{source_ids_html(ids)}</p>"
               f"{shown or '<p class=wb-muted>(turn texts not available)</p>' if ids else ''}")


NO_SELECTION = box("<p class='wb-muted'>Select a node to see its summary, children and source turns.</p>")


# -- notebook widget -------------------------------------------------------------------------------
class TreeView(DisplaysWidget):
    """Tree figure + node selector. State: ``rows``, ``nodes``, ``selected``, ``detail_html``, ``figure``."""

    def __init__(self, hmem_or_structures, *, conversation=None, select: str | None = None):
        self.structures = structures_of(hmem_or_structures)
        self.conversation = conversation_of(hmem_or_structures, conversation)
        self.rows = list(self.structures.get("tree") or [])
        self.nodes = {r["id"]: r for r in self.rows}
        self.levels = level_names(self.structures)
        self.turns = turn_index(self.conversation)
        self.selected: str | None = None
        self.detail_html = NO_SELECTION
        self.figure = tree_figure(self.rows, levels=self.levels)
        self._build_widgets()
        if select is not None:
            self.select(select)
        else:
            self._render()

    def select(self, node_id: str | None) -> "TreeView":
        """Show node ``node_id`` (None clears the selection); unknown ids raise ``KeyError``."""
        if node_id is not None and node_id not in self.nodes:
            raise KeyError(f"no tree node {node_id!r}")
        self.selected = node_id
        self.detail_html = (NO_SELECTION if node_id is None else
                            node_detail_html(node_id, self.nodes, turns=self.turns, levels=self.levels))
        self.figure = tree_figure(self.rows, selected=node_id, levels=self.levels)
        self._render()
        return self

    def _build_widgets(self) -> None:
        import ipywidgets as W

        opts = [("(select a node)", None)] + [(node_label(r, self.levels), r["id"]) for r in ordered_nodes(self.rows)]
        self.node_select = W.Dropdown(options=opts, value=None, description="node",
                                      layout=W.Layout(width="95%"))
        self.header = W.HTML(box(f"{len(self.rows)} nodes on {len(set(r['level'] for r in self.rows))} levels"))
        self.plot = W.Output()
        self.detail = W.HTML()
        self._syncing = False
        self.node_select.observe(self._on_select, names="value")
        self.widget = W.VBox([self.header, self.node_select, self.plot, self.detail])

    def _on_select(self, change) -> None:
        if not self._syncing and change["new"] != self.selected:
            self.select(change["new"])

    def _render(self) -> None:
        from .html import show_figure

        self._syncing = True
        try:
            self.node_select.value = self.selected
        finally:
            self._syncing = False
        self.detail.value = self.detail_html
        show_figure(self.plot, self.figure)

    def __repr__(self) -> str:
        return f"TreeView({len(self.rows)} nodes, selected={self.selected!r})"


# -- the app's Structures tab ----------------------------------------------------------------------
class TreePanel:
    """Panel version for the app: a node selector, the figure (a click selects the node) and details."""

    def __init__(self, structures: Mapping, conversation=None):
        import panel as pn

        self.rows = list(structures.get("tree") or [])
        self.nodes = {r["id"]: r for r in self.rows}
        self.levels = level_names(structures)
        self.turns = turn_index(conversation)
        self.selected = None
        opts = {"(select a node)": ""} | {node_label(r, self.levels): r["id"] for r in ordered_nodes(self.rows)}
        self.node_select = pn.widgets.Select(label="tree node", options=opts, sizing_mode="stretch_width")
        self.plot = pn.pane.Plotly(tree_figure(self.rows, levels=self.levels), sizing_mode="stretch_width")
        self.detail = pn.pane.HTML(NO_SELECTION, sizing_mode="stretch_width")
        self.node_select.param.watch(lambda e: self.select(e.new or None), "value")
        self.plot.param.watch(self._on_click, "click_data")
        self.panel = pn.Column(self.node_select, self.plot, self.detail, sizing_mode="stretch_width")

    def _on_click(self, event) -> None:
        points = (event.new or {}).get("points") or []
        node = points[0].get("customdata") if points else None
        if node in self.nodes:
            self.node_select.value = node  # triggers select

    def select(self, node_id: str | None) -> None:
        if node_id is not None and node_id not in self.nodes:
            return
        self.selected = node_id
        self.plot.object = tree_figure(self.rows, selected=node_id, levels=self.levels)
        self.detail.object = (NO_SELECTION if node_id is None else
                              node_detail_html(node_id, self.nodes, turns=self.turns, levels=self.levels))


def hmem_structure_view(structures: Mapping, conversation=None):
    """The ``hmem`` card of the Structures tab: the tree, then the entity graph."""
    import panel as pn

    from .graph_view import GraphPanel

    if not structures.get("tree") and not (structures.get("graph") or {}).get("nodes"):
        return pn.pane.Alert("structures.json holds no H-Mem tree or graph for this conversation.",
                             alert_type="info", sizing_mode="stretch_width")
    return pn.Column(pn.pane.Markdown("#### Temporal–semantic tree"), TreePanel(structures, conversation).panel,
                     pn.pane.Markdown("#### Entity graph"), GraphPanel(structures, conversation).panel,
                     sizing_mode="stretch_width")


try:  # registering needs Panel (widgets.app); notebook use of TreeView does not
    from .app import register_structure_view
except ImportError:  # pragma: no cover - Panel not installed
    pass
else:
    register_structure_view("hmem")(hmem_structure_view)
