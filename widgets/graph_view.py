"""``GraphView``: H-Mem's entity graph (pyvis / vis-network), entity -> relations and source turns.

Entities are coloured by type (the legend above the graph names each colour and says how to read
it); dot and name grow with mentions. The nodes are placed before the page is drawn
(``widgets.graph_layout``: a seeded spring layout whose label boxes are then pushed apart until none
overlap), so names around a hub do not cover each other, and the page opens at a zoom where every
name is at least 11 px (a graph too big for the frame at that size is dragged, not shrunk). Edges
are drawn without text: their relation is the hover title, and the page writes it on an edge
while it is hovered, since around a hub the labels cannot fit (graph-repair "overlap" edges dashed).
The page is made by pyvis itself:
``Network(cdn_resources="in_line")`` with the workbench's own template
(``widgets/templates/entity_graph.html``, set through ``Network.set_template_dir``), which inlines
pyvis's bundled vis-network and leaves out the CDN bootstrap link and heading of pyvis's default
template, so the page works offline and nothing in it is patched afterwards. It is shown in a
sandboxed ``<iframe srcdoc>`` (escaped). Clicking an entity in the graph lights up its neighbours
(pyvis's ``neighborhood_highlight``); picking one in the entity picker does the same and shows its
aliases, relations, profile and source turns (with their text when the conversation is known).
The layout is computed with a fixed seed, so picking another entity redraws the same picture.

State and rendering are written once here (``GraphState``: no ipywidgets, no Panel); ``GraphView``
is the notebook shell and ``widgets.structure_views.GraphPanel`` the app's.

    GraphView(hmem)                                  # a built HMem
    GraphView(structures, conversation=conv)         # structures.json of a saved run, no LLM
    GraphView(hmem).select("Priya")                  # by id, name or alias
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from .graph_layout import FONT_MIN, layout, node_sizes
from .html import box, esc, source_ids_html, table_html, turn_index, turns_html, when_text
from .notebook_shell import NotebookShell
from .structures import conversation_of, structures_of
from .view_state import Control, Part, ViewState

TYPE_COLOURS = {"person": "#4263eb", "organization": "#c2410c", "location": "#2f7d32", "event": "#c92a2a",
                "product": "#087f8c", "work": "#9c6b00", "date": "#862e9c", "time": "#d6336c", "other": "#6c5b4c"}
TEMPLATES = Path(__file__).with_name("templates")
TEMPLATE = "entity_graph.html"
#: vis-network options (pyvis passes them through). Nodes are placed beforehand, overlap-free
#: (``widgets.graph_layout``), so physics is off and a redraw keeps the picture; each node carries
#: its own dot and label size (by mentions). Edges carry their relation as a hover title, not a
#: drawn label: around a hub the labels could not fit (the page draws one while it is hovered).
GRAPH_OPTIONS = {
    "layout": {"randomSeed": 7, "improvedLayout": False},
    "nodes": {"shape": "dot", "font": {"size": FONT_MIN, "strokeWidth": 4, "strokeColor": "#ffffff"}},
    "edges": {"font": {"size": 13, "align": "middle", "strokeWidth": 4, "strokeColor": "#ffffff"},
              "color": {"color": "#adb5bd", "highlight": "#d9480f", "hover": "#495057"}, "hoverWidth": 1.5,
              "smooth": {"type": "continuous"}, "arrows": {"to": {"enabled": True, "scaleFactor": 0.5}}},
    "physics": {"enabled": False},
    "interaction": {"hover": True, "tooltipDelay": 120},
}
# External loads a page must not have (tests and a sanity check): <script src=//…>, <link href=http…>, …
EXTERNAL_SOURCE = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//",
                             re.I)


def colour(etype: str | None) -> str:
    return TYPE_COLOURS.get(etype or "other", TYPE_COLOURS["other"])


def external_sources(html: str) -> list[str]:
    """Tags that would load something from the network (the page must have none)."""
    return [m.group(0) for m in EXTERNAL_SOURCE.finditer(html)]


def types_present(graph: Mapping) -> list[str]:
    """Entity types of the graph, known ones in ``TYPE_COLOURS`` order, then unknown ones (drawn as other)."""
    seen = [n.get("type") or "other" for n in graph.get("nodes") or []]
    return [t for t in TYPE_COLOURS if t in seen] + sorted({t for t in seen if t not in TYPE_COLOURS})


def legend_html(graph: Mapping) -> str:
    nodes, edges = graph.get("nodes") or [], graph.get("edges") or []
    chips = "".join(f"<span class='wb-type' style='background:{colour(t)}'>{esc(t)}</span>"
                    for t in types_present(graph))
    dashed = (" · <span class='wb-muted'>dashed edge: an overlap link added by graph repair</span>"
              if any(e.get("kind") == "overlap" for e in edges) else "")
    return box("<style>.wb-type {display:inline-block; padding:0 7px; margin-right:4px; border-radius:8px;"
               " color:#fff; font-weight:600;}</style>"
               f"<p><b>{len(nodes)} entities</b> · {len(edges)} relations · dot and name size: mentions · "
               f"entity types: {chips}{dashed}</p><p class='wb-muted'>Hover a line to read its relation (a grey "
               "arrow points from subject to object); click an entity, or pick one below, to light up its "
               "neighbours and list its relations. Names are kept readable, so a graph too big for the frame "
               "opens on its picked (else its most mentioned) entity: drag to see the rest.</p>")


def _tooltip(n: Mapping) -> str:
    aliases = f"\naliases: {', '.join(n.get('aliases') or [])}" if n.get("aliases") else ""
    return (f"{n['name']} ({n.get('type') or 'other'}){aliases}\n{n.get('mentions', 0)} mentions · turns "
            f"{' '.join((n.get('source_ids') or [])[:12])}")


#: graph pages by content (``graph_html``): a page takes pyvis 0.2-0.3 s to write, and the app writes
#: the pages it will show in its read-ahead worker thread, so the Structures tab finds them here
_PAGES: dict[str, str] = {}
_PAGES_MAX = 32


def graph_html(graph: Mapping, *, height: str = "560px", selected: str | None = None) -> str:
    """A standalone, offline HTML page of the entity graph (pyvis with ``entity_graph.html``); the
    ``selected`` entity is drawn larger with a dark ring and its neighbourhood lit when the page opens.
    Pages are kept by content (the graph, height and selection), so writing one twice costs nothing."""
    import hashlib

    key = hashlib.sha256(json.dumps([graph, height, selected], sort_keys=True, default=str).encode()).hexdigest()
    page = _PAGES.get(key)
    if page is None:
        page = _write_graph_html(graph, height=height, selected=selected)
        if len(_PAGES) >= _PAGES_MAX:
            _PAGES.clear()
        _PAGES[key] = page
    return page


def _write_graph_html(graph: Mapping, *, height: str, selected: str | None) -> str:
    from pyvis.network import Network

    import pyvis

    nodes, edges = list(graph.get("nodes") or []), list(graph.get("edges") or [])
    net = Network(height=height, width="100%", directed=True, cdn_resources="in_line", notebook=False,
                  neighborhood_highlight=True)
    # Our template first; pyvis's own template folder second, for the bundled files it includes.
    net.set_template_dir([str(TEMPLATES), str(Path(pyvis.__file__).with_name("templates"))], TEMPLATE)
    net.set_options(json.dumps(GRAPH_OPTIONS))
    pos, sizes = layout(graph), node_sizes(graph)
    for n in nodes:
        picked = n["id"] == selected
        radius, font = sizes[n["id"]]
        x, y = pos[n["id"]]
        net.add_node(n["id"], label=str(n["name"]), title=_tooltip(n), color=colour(n.get("type")),
                     size=radius, font={"size": font}, x=x, y=y, borderWidth=6 if picked else 1, picked=picked)
    known = name = {n["id"]: str(n["name"]) for n in nodes}
    for e in edges:
        if e["source"] in known and e["target"] in known:
            names = f"{name[e['source']]} → {e.get('relation', '')} → {name[e['target']]}"
            net.add_edge(e["source"], e["target"], relation=str(e.get("relation", "")),
                         dashes=e.get("kind") == "overlap",
                         title=f"{names} · x{e.get('count', 1)} · turns {' '.join((e.get('source_ids') or [])[:12])}")
    return net.generate_html(notebook=False)


def iframe(html: str, *, height: int = 640) -> str:
    """The page in a sandboxed iframe (scripts only, no same-origin access); srcdoc escaped."""
    return (f'<iframe srcdoc="{esc(html)}" sandbox="allow-scripts" title="entity graph" '
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


def prompt_examples(graph: Mapping) -> tuple[str, ...]:
    """The extraction prompt's example relation labels the method saved with its graph (``"prompt_examples"``;
    H-Mem's small profile: "lives in", "sister of"), lower case; () when absent or not a list of strings."""
    value = graph.get("prompt_examples")
    return tuple(str(v).lower() for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def unsaid_mark(e: Mapping, turns: Mapping | None, examples=()) -> str:
    """"⚠ the prompt's example, never said" when a relation carries one of the extraction prompt's own example labels
    (``examples``: ``prompt_examples``) and no word of it is in its source turns (``census_kit.relation_said``: the 0.5B
    labelled 299 conv-30 relation extractions "lives in" or "sister of" from turns that never say them, "Jon lives in
    Google", "Jon sister of Gina"); "" otherwise, or with its turns not at hand. Other labels are not read: the
    model's own paraphrases ("asked", "congratulated") are rarely the turn's words and are often true. An edge
    gathers every extraction that named it, so it is read against all their turns (leniently). Form, not truth."""
    from workbench.methods.census_kit import relation_said

    label = str(e.get("relation", ""))
    found = (turns.get(i) for i in e.get("source_ids") or []) if turns else ()
    said = [str(getattr(t, "text", t)) for t in found if t]  # a Turn, or a turn's text
    if label.lower() not in examples or not said or relation_said(label, " ".join(said)):
        return ""
    return "⚠ the prompt's example, never said"


def _unsaid_note(rows: list[dict], examples) -> str:
    flagged = sum(bool(r.get("said?")) for r in rows)
    if not flagged:
        return ""
    what = f"{flagged} relations below carry" if flagged > 1 else "1 relation below carries"
    labels = ", ".join(f"“{x}”" for x in examples)
    return (f"<p class='wb-muted'>⚠ {what} an example label of the extraction prompt ({esc(labels)}) that no word of "
            "its source turns says: the model copied the example (read as written: a rule on form, not a check of "
            "truth).</p>")


def entity_detail_html(graph: Mapping, node_id: str, *, turns: Mapping | None = None) -> str:
    """One entity, escaped: type, aliases, mentions, profile, relations, source turns."""
    by_id = {n["id"]: n for n in graph.get("nodes") or []}
    n = by_id[node_id]
    examples = prompt_examples(graph)
    rels = []
    for e in graph.get("edges") or []:
        if node_id in (e["source"], e["target"]):
            out = e["source"] == node_id
            other = by_id.get(e["target"] if out else e["source"], {}).get("name", "?")
            rels.append({"direction": "→" if out else "←", "relation": e.get("relation", ""), "entity": other,
                         "count": e.get("count", 1), "turns": " ".join(e.get("source_ids") or []),
                         "said?": unsaid_mark(e, turns, examples)})
    prof = n.get("profile") or {}
    facts = {"type": n.get("type"), "aliases": ", ".join(n.get("aliases") or []) or "(none)",
             "mentions": n.get("mentions"),
             "first / last seen": f"{when_text(n.get('first_time'))} / {when_text(n.get('last_time'))}",
             "fragments": " ".join(n.get("fragment_ids") or [])}
    if prof:  # the two parts on rows of their own: a model that copied the prompt's "| recent:" shows as it is
        facts["profile: lasting"] = prof.get("persistent", "")
        facts["profile: recent"] = prof.get("recent", "")
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts.items())
    ids = list(n.get("source_ids") or [])
    shown = turns_html(ids, turns or {})
    cols = ["direction", "relation", "entity", "count", "turns"] + (["said?"] if any(r["said?"] for r in rels) else [])
    relations = (_unsaid_note(rels, examples) + table_html(rels, cols) if rels
                 else "<p class='wb-muted'>(no relations)</p>")
    return box(f"<h4>{esc(n['name'])} <span class='wb-badge' style='background:{colour(n.get('type'))};color:#fff'>"
               f"{esc(n.get('type'))}</span> <small>{esc(node_id)}</small></h4><table>{rows}</table>"
               f"<h5>Relations ({len(rels)})</h5>{relations}"
               f"<h5>Source turns ({len(ids)})</h5><p>{source_ids_html(ids)}</p>"
               f"{shown or '<p class=wb-muted>(turn texts not available)</p>' if ids else ''}")


def relations_html(graph: Mapping, turns: Mapping | None = None) -> str:
    """The whole graph as tables, for a page that runs no script (the drawn graph needs vis-network):
    every entity (most mentioned first) and every relation, escaped, each in a scrolling box; with the conversation's
    ``turns``, a relation carrying the prompt's example label that its turns never say is flagged (``unsaid_mark``)."""
    nodes = sorted(graph.get("nodes") or [], key=lambda n: (-int(n.get("mentions") or 0), str(n["name"]).lower()))
    if not nodes:
        return EMPTY
    names = {n["id"]: n["name"] for n in nodes}
    examples = prompt_examples(graph)
    ents = [{"entity": n["name"], "type": n.get("type", "other"), "mentions": n.get("mentions", 0),
             "aliases": ", ".join(n.get("aliases") or [])} for n in nodes]
    rels = [{"from": names.get(e["source"], e["source"]), "relation": e.get("relation", ""),
             "to": names.get(e["target"], e["target"]), "count": e.get("count", 1),
             "turns": " ".join(e.get("source_ids") or []), "said?": unsaid_mark(e, turns, examples)}
            for e in graph.get("edges") or []]
    cols = ["from", "relation", "to", "count", "turns"] + (["said?"] if any(r["said?"] for r in rels) else [])
    scroll = "<div style='max-height:28em;overflow:auto'>{}</div>"
    return box(f"<h5>Entities ({len(ents)})</h5>"
               + scroll.format(table_html(ents, ["entity", "type", "mentions", "aliases"]))
               + f"<h5>Relations ({len(rels)})</h5>" + _unsaid_note(rels, examples)
               + scroll.format(table_html(rels, cols)))


def entity_options(graph: Mapping) -> list[tuple[str, str]]:
    """``(label, id)`` pairs, most mentioned first (plain-text labels)."""
    nodes = sorted(graph.get("nodes") or [], key=lambda n: (-int(n.get("mentions") or 0), str(n["name"]).lower()))
    return [(f"{n['name']} ({n.get('type', 'other')}, {n.get('mentions', 0)} mentions)", n["id"]) for n in nodes]


NO_SELECTION = box("<p class='wb-muted'>Pick an entity above (or click one in the graph to light up its "
                   "neighbours) to see its relations and source turns.</p>")
EMPTY = box("<p class='wb-muted'>The entity graph is empty.</p>")


# -- state -----------------------------------------------------------------------------------------------------
class GraphState(ViewState):
    """The entity graph of one H-Mem memory and the picked entity. ``graph``, ``turns``, ``selected``,
    ``html`` (the standalone page), ``frame_html`` (it in an iframe), ``detail_html``."""

    parts = (Part("legend"), Part("frame"), Part("detail"))
    layout = ("legend", "entity_select", "frame", "detail")

    def __init__(self, structures: Mapping, conversation=None, *, height: int = 600):
        super().__init__()
        self.graph = dict(structures.get("graph") or {"nodes": [], "edges": []})
        self.turns = turn_index(conversation)
        self.height = height
        self.controls = (Control("entity_select", "select", "entity",
                                 options=(("(select an entity)", ""), *entity_options(self.graph))),)
        self.legend_html = legend_html(self.graph) if self.graph.get("nodes") else ""
        self.select(None)

    def select(self, entity: str | None) -> None:
        """Pick an entity by id, name or alias (None or "" clears); unknown entities raise ``KeyError``."""
        self.selected = find_entity(self.graph, entity) if entity else None
        self.values["entity_select"] = self.selected or ""
        self.detail_html = (NO_SELECTION if self.selected is None else
                            entity_detail_html(self.graph, self.selected, turns=self.turns))
        if self.graph.get("nodes"):
            self.html = graph_html(self.graph, height=f"{self.height - 6}px", selected=self.selected)
            self.frame_html = iframe(self.html, height=self.height)
        else:
            self.html = self.frame_html = EMPTY

    def apply(self, name: str, value: Any) -> None:
        self.select(value)

    def part(self, name: str) -> str:
        if name == "frame" and self.graph.get("nodes"):
            # in a served page the frame inherits the app's CSP: its own inline scripts need the page's nonce
            from widgets.page_policy import add_nonce, current_nonce

            nonce = current_nonce()
            if nonce:
                return iframe(add_nonce(self.html, nonce), height=self.height)
        return {"legend": self.legend_html, "frame": self.frame_html, "detail": self.detail_html}[name]

    def static_part(self, name: str) -> str:
        """The drawn graph needs a script: without one, its entities and relations as tables."""
        return relations_html(self.graph, self.turns) if name == "frame" else super().static_part(name)


# -- notebook shell --------------------------------------------------------------------------------------------
class GraphView(NotebookShell):
    """The entity graph in a notebook (``GraphState`` bound to ipywidgets)."""

    def __init__(self, method_or_structures: Any, *, conversation=None, height: int = 600):
        self.conversation = conversation_of(method_or_structures, conversation)
        super().__init__(GraphState(structures_of(method_or_structures), self.conversation, height=height))

    def select(self, entity: str | None) -> "GraphView":
        """Pick an entity by id, name or alias (None clears); unknown entities raise ``KeyError``."""
        self.state.select(entity)
        return self.refresh()

    def __repr__(self) -> str:
        return f"GraphView({len(self.state.graph.get('nodes') or [])} entities, selected={self.state.selected!r})"
