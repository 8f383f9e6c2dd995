"""``GraphView``: H-Mem's entity graph (pyvis / vis-network), entity -> source turns.

Entities are coloured by type (legend above the graph), edges are labelled by their relation
(graph-repair "overlap" edges dashed). The graph is a standalone HTML page that works offline:
pyvis's ``cdn_resources="in_line"`` inlines vis-network, and every remaining external ``<script
src=http…>`` / ``<link href=http…>`` (pyvis links bootstrap from a CDN) is removed. It is shown in
a sandboxed ``<iframe srcdoc>`` (escaped). An entity selector shows the entity's aliases,
relations, profile and source turns (with their text when the conversation is known).

    GraphView(hmem)                                  # a built HMem
    GraphView(structures, conversation=conv)         # structures.json of a saved run, no LLM
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from .html import DisplaysWidget, box, esc, source_ids_html, table_html, turn_index, turns_html
from .structures import conversation_of, structures_of

TYPE_COLOURS = {"person": "#4e79a7", "organization": "#f28e2b", "location": "#59a14f", "event": "#e15759",
                "product": "#76b7b2", "work": "#edc948", "date": "#b07aa1", "time": "#ff9da7", "other": "#9c755f"}
# Everything the page needs is inlined, so any tag that loads a file is removed (CDN or relative).
EXTERNAL = re.compile(r"<script\b[^>]*\bsrc\s*=[^>]*>\s*</script\s*>|<link\b[^>]*>", re.I | re.S)
COMMENTED_TAGS = re.compile(r"<!--(?:(?!-->).){0,2000}?<(?:link|script)\b(?:(?!-->).){0,2000}?-->", re.S)
EXTERNAL_SOURCE = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//",
                             re.I)


# The page may be laid out while hidden (a collapsed card, an inactive tab): fit the view once the
# layout has settled, and again when the frame is resized.
FIT_SCRIPT = """<script>(function () {
  function fit() { if (typeof network !== "undefined" && network) { network.fit(); } }
  if (typeof network !== "undefined" && network) { network.once("stabilizationIterationsDone", fit); }
  window.addEventListener("resize", fit);
  setTimeout(fit, 1500);
})();</script>"""


def colour(etype: str) -> str:
    return TYPE_COLOURS.get(etype, TYPE_COLOURS["other"])


def _plain(text: str) -> str:
    """Tooltip text for vis-network, which shows string titles as plain text. pyvis switches to an
    ``innerHTML`` popup when any title contains "href", so that word is broken with a zero-width space."""
    return re.sub(r"(?i)href", lambda m: m.group(0)[:3] + "\u200b" + m.group(0)[3:], str(text))


def strip_external(html: str) -> str:
    """Remove every ``<script src=…></script>`` and ``<link …>`` tag (pyvis links bootstrap from a CDN),
    and commented-out ones."""
    return EXTERNAL.sub("", COMMENTED_TAGS.sub("", html))


def external_sources(html: str) -> list[str]:
    """Tags that would still load something from the network (for tests and a sanity check)."""
    return [m.group(0) for m in EXTERNAL_SOURCE.finditer(html)]


def legend_html(types) -> str:
    items = "".join(f"<span style='background:{colour(t)};color:#fff;padding:0 6px;margin-right:4px;"
                    f"border-radius:8px'>{esc(t)}</span>"
                    for t in types)
    return f"<div class='wb-legend' style='font:13px system-ui,sans-serif;margin:4px'>entity types: {items}</div>"


def graph_html(graph: Mapping, *, height: str = "560px") -> str:
    """A standalone, offline HTML page of the entity graph (no external assets)."""
    from pyvis.network import Network

    nodes, edges = list(graph.get("nodes") or []), list(graph.get("edges") or [])
    net = Network(height=height, width="100%", directed=True, cdn_resources="in_line", notebook=False)
    for n in nodes:
        aliases = f"\naliases: {', '.join(n.get('aliases') or [])}" if n.get("aliases") else ""
        title = (f"{n['name']} ({n.get('type', 'other')}){aliases}\n{n.get('mentions', 0)} mentions · turns "
                 f"{' '.join((n.get('source_ids') or [])[:12])}")
        net.add_node(n["id"], label=str(n["name"]), title=_plain(title), color=colour(n.get("type", "other")),
                     size=10 + 2 * min(int(n.get("mentions") or 0), 10))
    known = {n["id"] for n in nodes}
    for e in edges:
        if e["source"] in known and e["target"] in known:
            net.add_edge(e["source"], e["target"], label=str(e.get("relation", "")), arrows="to",
                         dashes=e.get("kind") == "overlap", font={"size": 10, "align": "middle"},
                         title=_plain(f"{e.get('relation', '')} · x{e.get('count', 1)} · turns "
                                      f"{' '.join((e.get('source_ids') or [])[:12])}"))
    html = strip_external(net.generate_html(notebook=False))
    types = [t for t in TYPE_COLOURS if any(n.get("type", "other") == t for n in nodes)]
    html = html.replace("<body>", "<body>" + legend_html(types), 1)
    return html.replace("</body>", FIT_SCRIPT + "</body>", 1)


def iframe(html: str, *, height: int = 640) -> str:
    """The page in a sandboxed iframe (scripts only, no same-origin access); srcdoc escaped."""
    return (f'<iframe srcdoc="{esc(html)}" sandbox="allow-scripts" '
            f'style="width:100%;height:{int(height)}px;border:1px solid #ddd"></iframe>')


def find_entity(graph: Mapping, entity: str) -> str:
    """Node id for an id, a name or an alias (case-insensitive); ``KeyError`` when unknown."""
    nodes = graph.get("nodes") or []
    if any(n["id"] == entity for n in nodes):
        return entity
    want = str(entity).strip().lower()
    for n in nodes:
        if want == str(n["name"]).lower() or want in (str(a).lower() for a in n.get("aliases") or []):
            return n["id"]
    raise KeyError(f"no entity {entity!r}")


def entity_detail_html(graph: Mapping, node_id: str, *, turns: Mapping | None = None) -> str:
    """One entity, escaped: type, aliases, mentions, profile, relations, source turns."""
    by_id = {n["id"]: n for n in graph.get("nodes") or []}
    n = by_id[node_id]
    rels = []
    for e in graph.get("edges") or []:
        if node_id in (e["source"], e["target"]):
            out = e["source"] == node_id
            other = by_id.get(e["target"] if out else e["source"], {}).get("name", "?")
            rels.append({"direction": "→" if out else "←", "relation": e.get("relation", ""), "entity": other,
                         "count": e.get("count", 1), "turns": " ".join(e.get("source_ids") or [])})
    prof = n.get("profile") or {}
    facts = {"type": n.get("type"), "aliases": ", ".join(n.get("aliases") or []) or "(none)",
             "mentions": n.get("mentions"), "first / last seen": f"{n.get('first_time')} / {n.get('last_time')}",
             "fragments": " ".join(n.get("fragment_ids") or [])}
    if prof:
        facts["profile"] = f"{prof.get('persistent', '')} | recent: {prof.get('recent', '')}"
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts.items())
    ids = list(n.get("source_ids") or [])
    shown = turns_html(ids, turns or {})
    relations = (table_html(rels, ["direction", "relation", "entity", "count", "turns"]) if rels
                 else "<p class='wb-muted'>(no relations)</p>")
    return box(f"<h4>{esc(n['name'])} <span class='wb-badge' style='background:{colour(n.get('type'))};color:#fff'>"
               f"{esc(n.get('type'))}</span> <small>{esc(node_id)}</small></h4><table>{rows}</table>"
               f"<h5>Relations ({len(rels)})</h5>{relations}"
               f"<h5>Source turns ({len(ids)})</h5><p>{source_ids_html(ids)}</p>"
               f"{shown or '<p class=wb-muted>(turn texts not available)</p>' if ids else ''}")


def entity_options(graph: Mapping) -> list[tuple[str, str]]:
    """``(label, id)`` pairs, most mentioned first (plain-text labels)."""
    nodes = sorted(graph.get("nodes") or [], key=lambda n: (-int(n.get("mentions") or 0), str(n["name"]).lower()))
    return [(f"{n['name']} ({n.get('type', 'other')}, {n.get('mentions', 0)} mentions)", n["id"]) for n in nodes]


NO_SELECTION = box("<p class='wb-muted'>Select an entity to see its relations and source turns.</p>")
EMPTY = box("<p class='wb-muted'>The entity graph is empty.</p>")


class GraphView(DisplaysWidget):
    """Entity graph + entity selector. State: ``graph``, ``html`` (standalone page), ``selected``,
    ``detail_html``."""

    def __init__(self, hmem_or_structures: Any, *, conversation=None, height: int = 600):
        structures = structures_of(hmem_or_structures)
        self.graph = dict(structures.get("graph") or {"nodes": [], "edges": []})
        self.conversation = conversation_of(hmem_or_structures, conversation)
        self.turns = turn_index(self.conversation)
        self.height = height
        self.html = graph_html(self.graph, height=f"{height - 60}px") if self.graph.get("nodes") else EMPTY
        self.selected: str | None = None
        self.detail_html = NO_SELECTION
        self._build_widgets()

    def select(self, entity: str | None) -> "GraphView":
        """Show an entity by id, name or alias (None clears); unknown entities raise ``KeyError``."""
        self.selected = None if entity is None else find_entity(self.graph, entity)
        self.detail_html = (NO_SELECTION if self.selected is None else
                            entity_detail_html(self.graph, self.selected, turns=self.turns))
        self._syncing = True
        try:
            self.entity_select.value = self.selected
        finally:
            self._syncing = False
        self.detail.value = self.detail_html
        return self

    def _build_widgets(self) -> None:
        import ipywidgets as W

        self.entity_select = W.Dropdown(options=[("(select an entity)", None)] + entity_options(self.graph),
                                        value=None, description="entity", layout=W.Layout(width="95%"))
        self.header = W.HTML(box(f"{len(self.graph.get('nodes') or [])} entities · "
                                 f"{len(self.graph.get('edges') or [])} relations (legend inside the graph)"))
        self.frame = W.HTML(iframe(self.html, height=self.height))
        self.detail = W.HTML(self.detail_html)
        self._syncing = False
        self.entity_select.observe(self._on_select, names="value")
        self.widget = W.VBox([self.header, self.frame, self.entity_select, self.detail])

    def _on_select(self, change) -> None:
        if not self._syncing and change["new"] != self.selected:
            self.select(change["new"])

    def __repr__(self) -> str:
        return f"GraphView({len(self.graph.get('nodes') or [])} entities, selected={self.selected!r})"


class GraphPanel:
    """Panel version for the app (used by the ``hmem`` structure view in ``tree_view``)."""

    def __init__(self, structures: Mapping, conversation=None, *, height: int = 600):
        import panel as pn

        self.graph = dict(structures.get("graph") or {"nodes": [], "edges": []})
        self.turns = turn_index(conversation)
        self.html = graph_html(self.graph, height=f"{height - 60}px") if self.graph.get("nodes") else EMPTY
        self.selected = None
        opts = {"(select an entity)": ""} | {label: i for label, i in entity_options(self.graph)}
        self.entity_select = pn.widgets.Select(label="entity", options=opts, sizing_mode="stretch_width")
        self.frame = pn.pane.HTML(iframe(self.html, height=height) if self.graph.get("nodes") else EMPTY,
                                  sizing_mode="stretch_width")
        self.detail = pn.pane.HTML(NO_SELECTION, sizing_mode="stretch_width")
        self.entity_select.param.watch(lambda e: self.select(e.new or None), "value")
        self.panel = pn.Column(self.frame, self.entity_select, self.detail, sizing_mode="stretch_width")

    def select(self, entity: str | None) -> None:
        self.selected = None if entity is None else find_entity(self.graph, entity)
        self.detail.object = (NO_SELECTION if self.selected is None else
                              entity_detail_html(self.graph, self.selected, turns=self.turns))
