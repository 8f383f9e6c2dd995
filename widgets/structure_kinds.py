"""Drawings of the declared structure kinds (``workbench.structures``): what the Structures tab shows for a part
``{"kind": ..., ...}`` of a method's ``structures()``, so a plugin method gets a drawn structure with no view code.

``clusters`` is drawn as RecMem's clusters are (``cluster_view.members_figure``: the same palette and shapes) with
each cluster's members listed below; ``tree`` as H-Mem's tree is (``tree_figure``'s icicle and ``tree_view``'s text
outline), its nodes read into the rows those draw. ``stores``, ``graph``, ``levels`` and ``timeline`` are tables.
Each drawing is a list of HTML strings and plotly figures, so a notebook shows it as the app does; no Panel here.
Every text is escaped, long lists are capped with a count of what is left out.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Mapping, Sequence

from workbench.structures import KINDS, validate_part
from workbench.words import counted

from .html import box, clip, esc, short, source_ids_html, table_html, turn_index, when_text

#: rows of a table shown before "N more not shown"
ROWS = 60


def _capped(rows: list[dict], columns: Sequence[str], *, raw: Sequence[str] = (), what: str = "rows") -> str:
    if not rows:
        return f"<p class='wb-muted'>(no {esc(what)})</p>"
    more = (f"<p class='wb-muted'>{len(rows) - ROWS} more {esc(what)} not shown (first {ROWS} of {len(rows)})</p>"
            if len(rows) > ROWS else "")
    return table_html(rows[:ROWS], columns, raw=raw, ids=[c for c in columns if c in ("id", "unit", "entry")]) + more


def _turns_cell(r: Mapping, turns: Mapping) -> str:
    ids = [i for i in r.get("source_ids") or [] if isinstance(i, str)]
    if not ids:
        return ""
    said = turns.get(ids[0])
    first = f"<br><small>{esc(said.speaker)}: {esc(short(said.content, 100))}</small>" if said is not None else ""
    return source_ids_html(ids, limit=6) + first


def _head(part: Mapping, default: str, lead: str) -> str:
    title = part.get("title") if isinstance(part.get("title"), str) else default
    about = f"<p>{esc(part['about'])}</p>" if isinstance(part.get("about"), str) else ""
    return f"<h4>{esc(title)}</h4>{about}<p class='wb-muted'>{lead}</p>"


# -- clusters ------------------------------------------------------------------------------------------------
def project_2d(vectors: Sequence[Sequence[float]]) -> tuple[list[tuple[float, float]], tuple[str, str]]:
    """2-D points as given, or the first two principal components of longer vectors (numpy SVD), with the axes'
    titles saying which."""
    import numpy as np

    x = np.asarray(vectors, dtype=float)
    if x.shape[1] == 2:
        return [tuple(map(float, p)) for p in x], ("x", "y")
    x = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    p = x @ vt[:2].T
    if p.shape[1] < 2:  # a single point: no second direction
        p = np.hstack([p, np.zeros((p.shape[0], 1))])
    return [(float(a), float(b)) for a, b in p], ("PC 1 of the vectors (the most varied direction)", "PC 2")


def draw_clusters(part: Mapping, conversation=None) -> list:
    from .cluster_view import UNCLUSTERED, marker_html, members_figure

    members = [m for m in part.get("members") or [] if isinstance(m, Mapping)]
    clusters = {c["id"]: c for c in part.get("clusters") or [] if isinstance(c, Mapping)}
    name = {cid: str(c.get("label") or cid) for cid, c in clusters.items()}

    def label(m):
        c = m.get("cluster")
        return UNCLUSTERED if c is None else name.get(c, str(c))

    labels = [label(m) for m in members]
    sizes = Counter(labels)
    n_clusters = len(set(labels) - {UNCLUSTERED})
    lead = (f"{counted(len(members), 'member')} in {counted(n_clusters, 'cluster')}"
            + (f", {sizes[UNCLUSTERED]} in none" if sizes.get(UNCLUSTERED) else "")
            + " (a declared <code>clusters</code> structure).")
    out: list = [box(_head(part, "Clusters", lead))]
    with_vec = [m for m in members if isinstance(m.get("vector"), list)]
    if with_vec:
        cents = [(name.get(cid, cid), c["centroid"]) for cid, c in clusters.items() if isinstance(c.get("centroid"),
                                                                                             list)]
        points, axes = project_2d([m["vector"] for m in with_vec] + [v for _, v in cents])
        hover = [esc(f"{m['id']} · {label(m)}") + "<br>" + esc(short(m.get("text", ""), 140)) for m in with_vec]
        out.append(members_figure([m["id"] for m in with_vec], points[:len(with_vec)], [label(m) for m in with_vec],
                                  hover, centroids={lab: points[len(with_vec) + i] for i, (lab, _) in
                                                    enumerate(cents)}, axes=axes,
                                  title=part.get("title") if isinstance(part.get("title"), str) else ""))
    else:
        out.append(box("<p class='wb-muted'>The members carry no vectors, so they are listed, not plotted.</p>"))
    turns = turn_index(conversation)
    looks = {lab: i for i, lab in enumerate(x for x in dict.fromkeys(labels) if x != UNCLUSTERED)}
    groups = []
    for n, lab in enumerate(dict.fromkeys(labels)):
        rows = [{"id": m["id"], "time": when_text(m.get("time")) if m.get("time") else "",
                 "text": clip(short(m.get("text", ""), 400)), "turns": _turns_cell(m, turns)}
                for m, lb in zip(members, labels) if lb == lab]
        mark = marker_html(lab, looks) if lab != UNCLUSTERED else "○"
        groups.append(f"<details{' open' if n == 0 else ''}><summary>{mark} <b>{esc(lab)}</b> · "
                      f"{counted(len(rows), 'member')}</summary>"
                      f"{_capped(rows, ['id', 'time', 'text', 'turns'], raw=('text', 'turns'), what='members')}"
                      "</details>")
    out.append(box("<h5>Members by cluster</h5>" + "".join(groups)))
    return out


# -- tree ------------------------------------------------------------------------------------------------------
def tree_rows(part: Mapping) -> dict[str, dict]:
    """The part's nodes as the rows the tree drawing reads (H-Mem's: ``summary``, ``children``, ``window``,
    ``start``/``end``); a node without a ``level`` gets its height (a leaf 1, a parent one above its highest
    child)."""
    nodes = {n["id"]: n for n in part.get("nodes") or [] if isinstance(n, Mapping) and isinstance(n.get("id"), str)}
    kids: dict[str, list[str]] = {}
    for nid, n in nodes.items():
        if n.get("parent") in nodes:
            kids.setdefault(n["parent"], []).append(nid)
    height: dict[str, int] = {}

    def level(nid: str, depth: int = 0) -> int:
        if isinstance(nodes[nid].get("level"), int):
            return nodes[nid]["level"]
        if nid not in height:
            height[nid] = 1 if depth > len(nodes) else 1 + max((level(k, depth + 1) for k in kids.get(nid, ())),
                                                               default=0)
        return height[nid]

    return {nid: {"id": nid, "level": level(nid), "summary": str(n.get("text", "")),
                  "parent": n.get("parent") if n.get("parent") in nodes else None, "children": kids.get(nid, []),
                  "window": str(n.get("label") or ""), "start": n.get("time"), "end": n.get("time"),
                  "source_ids": list(n.get("source_ids") or [])} for nid, n in nodes.items()}


def draw_tree(part: Mapping, conversation=None) -> list:
    from .tree_figure import tree_figure
    from .tree_view import tree_html

    rows = tree_rows(part)
    per = Counter(r["level"] for r in rows.values())
    lead = (f"{counted(len(rows), 'node')}, "
            + " · ".join(f"level {lv}: {n}" for lv, n in sorted(per.items(), reverse=True))
            + " (a declared <code>tree</code> structure: the roots on the left, each level to the right of its "
              "parent, a box's height the number of leaves under it; the same tree as a text outline below).")
    out: list = [box(_head(part, "Tree", lead))]
    if rows:
        out.append(tree_figure(rows))
    out.append(tree_html(rows))
    return out


# -- the table kinds -----------------------------------------------------------------------------------------
def draw_stores(part: Mapping, conversation=None) -> list:
    stores = [s for s in part.get("stores") or [] if isinstance(s, Mapping)]
    turns = turn_index(conversation)
    body = []
    for s in stores:
        entries = [e for e in s.get("entries") or [] if isinstance(e, Mapping)]
        kinds = Counter(str(e.get("kind")) for e in entries)
        rows = [{"entry": e.get("id", ""), "kind": e.get("kind", ""), "text": clip(short(e.get("text", ""), 400)),
                 "time": when_text(e.get("time")) if e.get("time") else "", "turns": _turns_cell(e, turns)}
                for e in entries]
        body.append(f"<h5>{esc(s.get('name'))} · {counted(len(entries), 'entry')} ("
                    + ", ".join(f"{n} {esc(k)}" for k, n in kinds.most_common()) + ")</h5>"
                    + _capped(rows, ["entry", "kind", "text", "time", "turns"], raw=("text", "turns"),
                              what="entries"))
    lead = f"{counted(len(stores), 'store')} (a declared <code>stores</code> structure)."
    return [box(_head(part, "Stores", lead) + "".join(body))]


def draw_graph(part: Mapping, conversation=None) -> list:
    nodes = {n["id"]: n for n in part.get("nodes") or [] if isinstance(n, Mapping) and "id" in n}
    edges = [e for e in part.get("edges") or [] if isinstance(e, Mapping)]
    degree = Counter(x for e in edges for x in (e.get("source"), e.get("target")))

    def name(i):
        n = nodes.get(i, {})
        return str(n.get("label") or i)

    node_rows = sorted(({"id": i, "label": name(i), "kind": n.get("kind", ""), "edges": degree.get(i, 0)}
                        for i, n in nodes.items()), key=lambda r: (-r["edges"], r["id"]))
    edge_rows = [{"from": name(e.get("source")), "relation": e.get("label", ""), "to": name(e.get("target"))}
                 for e in edges]
    lead = (f"{counted(len(nodes), 'node')}, {counted(len(edges), 'edge')} (a declared <code>graph</code> "
            "structure: its nodes by how many edges they have, then every edge).")
    return [box(_head(part, "Graph", lead) + "<h5>Nodes</h5>" + _capped(node_rows, ["id", "label", "kind", "edges"],
                                                                          what="nodes")
                + "<h5>Edges</h5>" + _capped(edge_rows, ["from", "relation", "to"], what="edges"))]


def draw_levels(part: Mapping, conversation=None) -> list:
    levels = [lv for lv in part.get("levels") or [] if isinstance(lv, Mapping)]
    turns = turn_index(conversation)
    body = []
    for lv in levels:
        units = [u for u in lv.get("units") or [] if isinstance(u, Mapping)]
        rows = [{"unit": u.get("id", ""), "text": clip(short(u.get("text", ""), 400)),
                 "links": esc(" ".join(u.get("links") or [])), "turns": _turns_cell(u, turns)} for u in units]
        body.append(f"<h5>{esc(lv.get('name'))} · {counted(len(units), 'unit')}</h5>"
                    + _capped(rows, ["unit", "text", "links", "turns"], raw=("text", "links", "turns"),
                              what="units"))
    lead = (f"{counted(len(levels), 'level')}, in order (a declared <code>levels</code> structure; "
            "<i>links</i> names the units of other levels each one points to).")
    return [box(_head(part, "Levels", lead) + "".join(body))]


def draw_timeline(part: Mapping, conversation=None) -> list:
    events = [e for e in part.get("events") or [] if isinstance(e, Mapping)]
    timed = any(e.get("time") for e in events)
    ordered = sorted(events, key=lambda e: str(e.get("time") or "")) if timed else events
    turns = turn_index(conversation)
    rows = [{"#": i + 1, "time": when_text(e.get("time")) if e.get("time") else "", "label": e.get("label", ""),
             "text": clip(short(e.get("text", ""), 500)), "turns": _turns_cell(e, turns)}
            for i, e in enumerate(ordered)]
    labels = Counter(str(e.get("label")) for e in events if e.get("label"))
    lead = (f"{counted(len(events), 'event')}" + (f" ({', '.join(f'{esc(k)} {n}' for k, n in labels.most_common(6))})"
                                                  if labels else "")
            + (", oldest first" if timed else ", in the order declared")
            + " (a declared <code>timeline</code> structure).")
    return [box(_head(part, "Timeline", lead) + _capped(rows, ["#", "time", "label", "text", "turns"],
                                                        raw=("text", "turns"), what="events"))]


#: kind -> drawing ``(part, conversation) -> [HTML string | plotly figure, ...]``
DRAWINGS: dict[str, Callable[[Mapping, Any], list]] = {
    "tree": draw_tree, "clusters": draw_clusters, "stores": draw_stores, "graph": draw_graph,
    "levels": draw_levels, "timeline": draw_timeline}
assert set(DRAWINGS) == set(KINDS), "every structure kind of workbench.structures has a drawing here"


def problems_html(problems: Sequence[str], where: str) -> str:
    lines = "".join(f"<li><code>{esc(p)}</code></li>" for p in problems[:12])
    more = f"<li>… and {len(problems) - 12} more</li>" if len(problems) > 12 else ""
    return box(f"<p class='wb-forced'>{esc(where)} breaks its kind's format (docs/method-contract.md, \"Structure "
               f"kinds\"), so it is not drawn:</p><ul>{lines}{more}</ul>")


def draw_part(part: Any, conversation=None, *, where: str = "part", extra_kinds: Sequence[str] = ()) -> list:
    """One declared part drawn (a list of HTML strings and plotly figures), or its problems when it breaks its
    kind's format. A kind in ``extra_kinds`` (a view of its own) is not drawn here: the caller loads that view."""
    problems = validate_part(part, where, extra_kinds=extra_kinds)
    if problems:
        return [problems_html(problems, where)]
    return DRAWINGS[part["kind"]](part, conversation)
