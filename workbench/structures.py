"""Structure kinds: the documented, JSON shapes a method's ``structures()`` can declare so that the Structures
tab draws them with no view code of the method's own (docs/method-contract.md, "Structure kinds").

A declared part is a plain dict ``{"kind": <kind>, "title": ..., ...}``. ``structures()`` returns either one
part, or any dict with a ``"parts"`` list of them beside the method's own keys (which its census and its own view
may still read). The kinds:

- ``tree``: ``nodes`` with ``id``, ``parent`` (an id or null), ``text``, optional ``level`` (1 = a leaf, a parent
  above its children), ``label``, ``time`` and ``source_ids``;
- ``clusters``: ``members`` with ``id``, ``text``, ``cluster`` (a cluster id or null), optional ``vector`` (2-D is
  drawn as given, more dimensions are projected), ``source_ids`` and ``time``; ``clusters`` with ``id``, optional
  ``label`` and ``centroid``;
- ``stores``: ``stores`` with ``name`` and ``entries`` (``id``, ``kind``, ``text``, optional ``source_ids``,
  ``time``);
- ``graph``: ``nodes`` (``id``, optional ``label``, ``kind``) and ``edges`` (``source``, ``target``, optional
  ``label``);
- ``levels``: ordered ``levels``, each with ``name`` and ``units`` (``id``, ``text``, optional ``links``: ids of
  units on other levels, ``source_ids``);
- ``timeline``: ``events`` with ``text``, optional ``time`` (ISO 8601), ``label``, ``id``, ``source_ids``.

``validate_part`` / ``validate_structures`` return readable problems, each naming the field at fault
(``parts[0].members[3].cluster``); ``tree_part`` and the other builders make a part and raise
``StructureKindError`` on the first bad field. A kind outside these needs a view of its own, registered under
the entry point group ``STRUCTURE_VIEW_GROUP``; ``view_entry_points`` lists those without importing them, so the
CLI never imports Panel. This module imports nothing but the standard library.
"""
from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Callable, Mapping, Sequence

#: the entry point group of views for kinds not listed here (``name = "pkg.module:fn"``; loaded by the app only)
STRUCTURE_VIEW_GROUP = "memory_workbench.structure_views"


class StructureKindError(ValueError):
    """A declared structure part that breaks its kind's format; the message names the field."""


# -- small field checks: each appends a problem naming ``where`` --------------------------------------------------
def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _str(obj: Mapping, key: str, where: str, out: list[str], *, required: bool = False) -> None:
    if key not in obj or obj[key] is None:
        if required:
            out.append(f"{where}.{key} is missing: give a string")
        return
    if not isinstance(obj[key], str) or (required and not obj[key].strip()):
        out.append(f"{where}.{key} must be a non-empty string, got {obj[key]!r:.60}")


def _ids(obj: Mapping, key: str, where: str, out: list[str]) -> None:
    v = obj.get(key)
    if v is not None and not (isinstance(v, list) and all(isinstance(i, str) for i in v)):
        out.append(f"{where}.{key} must be a list of id strings, got {v!r:.60}")


def _time(obj: Mapping, where: str, out: list[str]) -> None:
    v = obj.get("time")
    if v is None:
        return
    try:
        datetime.fromisoformat(v)  # a non-string raises TypeError
    except (TypeError, ValueError):
        out.append(f"{where}.time must be an ISO 8601 date or datetime string, got {v!r:.60}")


def _vector(v: Any, where: str, out: list[str]) -> int | None:
    """The vector's length, or None with a problem (a non-list, a non-finite number, fewer than 2 numbers)."""
    if not isinstance(v, list) or len(v) < 2 or not all(_is_num(x) for x in v):
        out.append(f"{where} must be a list of at least 2 finite numbers (a numpy array: .tolist()), got {v!r:.60}")
        return None
    return len(v)


def _rows(part: Mapping, key: str, where: str, out: list[str]) -> list[tuple[str, Mapping]]:
    """``part[key]`` as (where, row) pairs for its dict rows; a problem for a missing list or a non-dict row."""
    rows = part.get(key)
    if not isinstance(rows, list):
        out.append(f"{where}.{key} must be a list, got {type(rows).__name__ if key in part else 'nothing'}")
        return []
    good = []
    for i, r in enumerate(rows):
        if isinstance(r, Mapping):
            good.append((f"{where}.{key}[{i}]", r))
        else:
            out.append(f"{where}.{key}[{i}] must be an object, got {type(r).__name__}")
    return good


def _unique_ids(rows: list[tuple[str, Mapping]], out: list[str]) -> dict[str, Mapping]:
    seen: dict[str, Mapping] = {}
    for where, r in rows:
        _str(r, "id", where, out, required=True)
        rid = r.get("id")
        if isinstance(rid, str):
            if rid in seen:
                out.append(f"{where}.id {rid!r} is used twice: ids must be unique within the part")
            seen[rid] = r
    return seen


# -- one validator per kind -----------------------------------------------------------------------------------
def _tree(part: Mapping, where: str, out: list[str]) -> None:
    rows = _rows(part, "nodes", where, out)
    nodes = _unique_ids(rows, out)
    for w, r in rows:
        _str(r, "text", w, out, required=True)
        _str(r, "label", w, out)
        _ids(r, "source_ids", w, out)
        _time(r, w, out)
        lv = r.get("level")
        if lv is not None and (not isinstance(lv, int) or isinstance(lv, bool) or lv < 1):
            out.append(f"{w}.level must be an integer >= 1 (1 = a leaf), got {lv!r}")
        parent = r.get("parent")
        if parent is None:
            continue
        if not isinstance(parent, str) or parent not in nodes:
            out.append(f"{w}.parent {parent!r} is no node id of this tree: give a node's id, or null for a root")
        elif isinstance(lv, int) and isinstance(nodes[parent].get("level"), int) and nodes[parent]["level"] <= lv:
            out.append(f"{w}.level {lv} is not below its parent {parent!r}'s level {nodes[parent]['level']}")
    for rid in nodes:  # a parent cycle leaves nodes no root reaches
        seen, at = set(), rid
        while isinstance(at, str) and at in nodes and at not in seen:
            seen.add(at)
            at = nodes[at].get("parent")
        if isinstance(at, str) and at in seen:
            out.append(f"{where}.nodes: node {rid!r} is in a parent cycle")
            break


def _clusters(part: Mapping, where: str, out: list[str]) -> None:
    crow = _rows(part, "clusters", where, out) if "clusters" in part else []
    clusters = _unique_ids(crow, out)
    dims: set[int] = set()
    for w, c in crow:
        _str(c, "label", w, out)
        if c.get("centroid") is not None:
            n = _vector(c["centroid"], f"{w}.centroid", out)
            dims |= {n} if n else set()
    rows = _rows(part, "members", where, out)
    _unique_ids(rows, out)
    for w, m in rows:
        _str(m, "text", w, out, required=True)
        _ids(m, "source_ids", w, out)
        _time(m, w, out)
        c = m.get("cluster")
        if c is not None and (not isinstance(c, str) or (crow and c not in clusters)):
            out.append(f"{w}.cluster {c!r} is no cluster id of this part: give one of its clusters' ids, or null "
                       "for a member in no cluster" if crow else f"{w}.cluster must be a string id or null")
        if m.get("vector") is not None:
            n = _vector(m["vector"], f"{w}.vector", out)
            dims |= {n} if n else set()
    if len(dims) > 1:
        out.append(f"{where}: the vectors and centroids have different lengths {sorted(dims)}: give them all the "
                   "same dimension")


def _stores(part: Mapping, where: str, out: list[str]) -> None:
    stores = _rows(part, "stores", where, out)
    names = set()
    for w, s in stores:
        _str(s, "name", w, out, required=True)
        if s.get("name") in names:
            out.append(f"{w}.name {s['name']!r} is used twice")
        names.add(s.get("name"))
        entries = _rows(s, "entries", w, out)
        _unique_ids(entries, out)
        for we, e in entries:
            _str(e, "kind", we, out, required=True)
            _str(e, "text", we, out, required=True)
            _ids(e, "source_ids", we, out)
            _time(e, we, out)


def _graph(part: Mapping, where: str, out: list[str]) -> None:
    rows = _rows(part, "nodes", where, out)
    nodes = _unique_ids(rows, out)
    for w, n in rows:
        _str(n, "label", w, out)
        _str(n, "kind", w, out)
        _ids(n, "source_ids", w, out)
    for w, e in _rows(part, "edges", where, out):
        for end in ("source", "target"):
            if e.get(end) not in nodes:
                out.append(f"{w}.{end} {e.get(end)!r} is no node id of this graph")
        _str(e, "label", w, out)


def _levels(part: Mapping, where: str, out: list[str]) -> None:
    levels = _rows(part, "levels", where, out)
    every: dict[str, Mapping] = {}
    units = []
    for w, lv in levels:
        _str(lv, "name", w, out, required=True)
        rows = _rows(lv, "units", w, out)
        for wu, u in rows:
            _str(u, "id", wu, out, required=True)
            if isinstance(u.get("id"), str):
                if u["id"] in every:
                    out.append(f"{wu}.id {u['id']!r} is used twice: unit ids must be unique across levels")
                every[u["id"]] = u
            _str(u, "text", wu, out, required=True)
            _ids(u, "links", wu, out)
            _ids(u, "source_ids", wu, out)
            _time(u, wu, out)
            units.append((wu, u))
    for wu, u in units:
        for target in u.get("links") or [] if isinstance(u.get("links"), list) else []:
            if target not in every:
                out.append(f"{wu}.links names {target!r}, no unit of this part")


def _timeline(part: Mapping, where: str, out: list[str]) -> None:
    for w, e in _rows(part, "events", where, out):
        _str(e, "text", w, out, required=True)
        _str(e, "label", w, out)
        _str(e, "id", w, out)
        _ids(e, "source_ids", w, out)
        _time(e, w, out)


#: kind -> its validator ``(part, where, problems) -> None``
VALIDATORS: dict[str, Callable[[Mapping, str, list[str]], None]] = {
    "tree": _tree, "clusters": _clusters, "stores": _stores, "graph": _graph, "levels": _levels,
    "timeline": _timeline}
KINDS: tuple[str, ...] = tuple(VALIDATORS)


def view_entry_points() -> dict[str, Any]:
    """``kind -> entry point`` of the installed views for kinds of their own (group ``STRUCTURE_VIEW_GROUP``), not
    loaded: the app loads one only when it draws a part of that kind."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=STRUCTURE_VIEW_GROUP)}


def validate_part(part: Any, where: str = "part", *, extra_kinds: Sequence[str] | None = None) -> list[str]:
    """The problems of one declared part, each naming its field; [] when it is good. ``extra_kinds``: the kinds
    with a view of their own (default: the installed entry points), accepted with only their ``kind`` checked."""
    if not isinstance(part, Mapping):
        return [f"{where} must be an object with a 'kind', got {type(part).__name__}"]
    kind = part.get("kind")
    out: list[str] = []
    _str(part, "title", where, out)
    _str(part, "about", where, out)
    if kind in VALIDATORS:
        VALIDATORS[kind](part, where, out)
        return out
    extra = set(view_entry_points()) if extra_kinds is None else set(extra_kinds)
    if isinstance(kind, str) and kind in extra:
        return out
    return [f"{where}.kind {kind!r} is no structure kind: use one of {', '.join(KINDS)}, or register a view for it "
            f"under the entry point group {STRUCTURE_VIEW_GROUP!r}"]


def parts_of(structures: Any) -> list:
    """The declared parts of a ``structures()`` dict: itself when it has a ``kind``, else its ``parts`` list
    ([] when it declares none; a ``parts`` that is not a list is returned as is, for the validator to name)."""
    if not isinstance(structures, Mapping):
        return []
    if "kind" in structures:
        return [structures]
    parts = structures.get("parts")
    return [] if parts is None else parts if isinstance(parts, list) else [parts]


def validate_structures(structures: Any, *, extra_kinds: Sequence[str] | None = None) -> list[str]:
    """The problems of every declared part of a ``structures()`` dict ([] for one that declares none)."""
    if isinstance(structures, Mapping) and "kind" in structures:
        return validate_part(structures, "structures", extra_kinds=extra_kinds)
    if isinstance(structures, Mapping) and "parts" in structures and not isinstance(structures["parts"], list):
        return [f"structures.parts must be a list of parts, got {type(structures['parts']).__name__}"]
    return [p for i, part in enumerate(parts_of(structures))
            for p in validate_part(part, f"parts[{i}]", extra_kinds=extra_kinds)]


# -- builders ------------------------------------------------------------------------------------------------
def to_kind(kind: str, *, title: str | None = None, about: str | None = None, **fields) -> dict:
    """A part of ``kind`` from its fields, validated: raises ``StructureKindError`` naming the first bad field."""
    part = {"kind": kind, **({"title": title} if title else {}), **({"about": about} if about else {}), **fields}
    problems = validate_part(part, kind, extra_kinds=())
    if problems:
        raise StructureKindError("; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)"
                                                             if len(problems) > 3 else ""))
    return part


def tree_part(nodes: Sequence[Mapping], **kw) -> dict:
    return to_kind("tree", nodes=[dict(n) for n in nodes], **kw)


def clusters_part(members: Sequence[Mapping], clusters: Sequence[Mapping] = (), **kw) -> dict:
    extra = {"clusters": [dict(c) for c in clusters]} if clusters else {}
    return to_kind("clusters", members=[dict(m) for m in members], **extra, **kw)


def stores_part(stores: Sequence[Mapping], **kw) -> dict:
    return to_kind("stores", stores=[dict(s) for s in stores], **kw)


def graph_part(nodes: Sequence[Mapping], edges: Sequence[Mapping], **kw) -> dict:
    return to_kind("graph", nodes=[dict(n) for n in nodes], edges=[dict(e) for e in edges], **kw)


def levels_part(levels: Sequence[Mapping], **kw) -> dict:
    return to_kind("levels", levels=[dict(lv) for lv in levels], **kw)


def timeline_part(events: Sequence[Mapping], **kw) -> dict:
    return to_kind("timeline", events=[dict(e) for e in events], **kw)
