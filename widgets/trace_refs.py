"""Ids shown with the text they stand for, and any JSON value as readable HTML (trace views).

A trace names units and turns by id (``chunk-4``, ``D4:3``, ``L1-15``, ``profile:ent1``). ``Refs``
resolves each to what it stands for: a turn to its speaker and words, a memory unit to its text and
source turns, an H-Mem entity to its name; gold evidence is marked wherever it appears, directly or
as a unit's source. ``readable`` renders a step's recorded fields for a person (ids resolved, records
as small tables), never as a JSON dump. Pure functions returning escaped HTML; no Panel, no ipywidgets.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .html import clip, esc, session_dates, short

MAX_ROWS = 25  # rows of a table before the rest is counted



@dataclass(frozen=True)
class UnitRef:
    """What a memory unit id stands for: its text, kind and source turns."""

    text: str
    kind: str = ""
    source_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refs:
    """Resolves ids to the text they stand for: turns of the conversation, units of the answer's hits
    (and of the memory's saved rows, when given), and named entities (H-Mem). ``gold`` turn ids are
    marked wherever they appear, directly or as a unit's source."""

    turns: Mapping[str, Any] = field(default_factory=dict)
    units: Mapping[str, UnitRef] = field(default_factory=dict)
    gold: frozenset = frozenset()
    names: Mapping[str, str] = field(default_factory=dict)  # entity id -> name
    # turn id -> when its session took place (the dataset's own words, e.g. "1:56 pm on 8 May, 2023"): written beside
    # every gold evidence turn, the fact a temporal question turns on
    dates: Mapping[str, str] = field(default_factory=dict)
    # the question answered (a ``QA``) and its conversation, when known: a step's own decision (HyMem's escalation,
    # MemR3's draft, AMA's Judge) is checked against its gold (``workbench.eval.decisions``), so a card says
    # whether the decision was right
    qa: Any = field(default=None, compare=False, repr=False)
    conversation: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def build(cls, answer, *, conversation=None, gold: Iterable[str] = (), memories: Iterable[Mapping] = (),
              qa=None) -> "Refs":
        units: dict[str, UnitRef] = {}
        if hasattr(memories, "to_dict"):  # a method's ``memories()`` DataFrame, as the notebooks hold it
            memories = memories.to_dict("records")
        for row in memories or ():
            if isinstance(row, Mapping) and row.get("id") is not None:
                src = row.get("source_ids") or ()
                src = src.split() if isinstance(src, str) else src
                units[str(row["id"])] = UnitRef(str(row.get("text") or ""), str(row.get("kind") or ""),
                                                tuple(map(str, src)))
        for h in [*answer.context, *(h for s in answer.steps for h in s.hits)]:
            units.setdefault(h.unit_id, UnitRef(h.text, h.kind, tuple(h.source_ids)))
        names = {}
        for s in answer.steps:  # H-Mem's seeds and expansions name the entities they reached
            for item in [*_list(s.data.get("seeds")), *_list(s.data.get("expansion"))]:
                if isinstance(item, Mapping) and item.get("entity") and item.get("name"):
                    names[str(item["entity"])] = str(item["name"])
        turns = {t.id: t for t in conversation.turns} if conversation is not None else {}
        return cls(turns, units, frozenset(gold or ()), names, session_dates(conversation), qa, conversation)

    def is_gold(self, ident: str) -> bool:
        unit = self.units.get(ident)
        return ident in self.gold or bool(unit and self.gold & set(unit.source_ids))

    def when(self, ident: str) -> str:
        """`` (session date)`` after a gold evidence turn's id, as HTML; empty for any other id or an undated one."""
        date = self.dates.get(ident) if ident in self.gold else None
        return f' <small class="wb-date">({esc(date)})</small>' if date else ""

    def turn(self, ident: str, *, n: int = 140) -> str:
        t = self.turns.get(ident)
        cls = " wb-gold" if ident in self.gold else ""
        return (f'<span class="wb-ref{cls}" title="{esc(t.content)}"><b>{esc(ident)}</b>{self.when(ident)} '
                f"{esc(t.speaker)}: “{esc(short(t.content, n))}”</span>")

    def sources(self, ids: Sequence[str], *, limit: int = 8) -> str:
        """A unit's source turns: ids (gold marked), each with its words in the tooltip; past ``limit``
        only the gold ones are listed and the rest counted."""
        ids = list(ids)
        shown = [i for n, i in enumerate(ids) if n < limit or i in self.gold]
        out = []
        for i in shown:
            t = self.turns.get(i)
            tip = f' title="{esc(t.speaker)}: {esc(t.content)}"' if t is not None else ""
            cls = ' class="wb-gold"' if i in self.gold else ""
            out.append(f"<span{cls}{tip}>{esc(i)}</span>{self.when(i)}")
        rest = f" (+{len(ids) - len(shown)} more)" if len(ids) > len(shown) else ""
        return " ".join(out) + rest

    def ref(self, ident: Any, *, n: int = 140) -> str:
        """One id as HTML: a turn with its words, a unit with its text and sources, an entity with its
        name; an id this run holds no text for says so."""
        ident = "" if ident is None else str(ident)
        if ident in self.turns:
            return self.turn(ident, n=n)
        unit = self.units.get(ident)
        if unit is not None:
            cls = " wb-gold" if self.is_gold(ident) else ""
            src = f' <small class="wb-muted">← {self.sources(unit.source_ids)}</small>' if unit.source_ids else ""
            return (f'<span class="wb-ref{cls}" title="{esc(short(unit.text, 2000))}"><b>{esc(ident)}</b> '
                    f"“{esc(short(unit.text, n))}”{src}</span>")
        if ident in self.names:
            return f'<span class="wb-ref"><b>{esc(ident)}</b> entity “{esc(self.names[ident])}”</span>'
        owner = ident.split(":", 1)[1] if ident.startswith("profile:") else ""
        if owner in self.names:  # H-Mem: an entity's profile unit
            return f'<span class="wb-ref"><b>{esc(ident)}</b> profile of “{esc(self.names[owner])}”</span>'
        return (f'<span class="wb-ref"><b>{esc(ident)}</b> '
                '<small class="wb-muted">(no text saved for this id)</small></span>')

    def ref_list(self, ids: Iterable[Any], *, limit: int = 12, mark: Iterable[str] = ()) -> str:
        """Ids as a list, one per line with their text; past ``limit`` the rest is counted."""
        ids, mark = list(ids or ()), set(mark)
        if not ids:
            return '<span class="wb-muted">(none)</span>'
        items = "".join(f'<li{" class=wb-add" if i in mark else ""}>{self.ref(i)}</li>' for i in ids[:limit])
        rest = f'<li class="wb-muted">… and {len(ids) - limit} more</li>' if len(ids) > limit else ""
        return f'<ul class="wb-reflist">{items}{rest}</ul>'


def _list(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else []


def _txt(v) -> str:
    return "" if v is None else str(v)


def what(text: str) -> str:
    """The one-sentence summary at the top of a card (already-escaped HTML)."""
    return f'<div class="wb-what">{text}</div>'


def row(label: str, value_html: str) -> str:
    return f"<tr><th>{esc(label)}</th><td>{value_html}</td></tr>"


def rows(pairs: Iterable[tuple[str, str]]) -> str:
    """A two-column table of (label, HTML) pairs; pairs with an empty value are left out."""
    body = "".join(row(k, v) for k, v in pairs if v not in ("", None))
    return f"<table>{body}</table>" if body else ""


def badge(text: str, cls: str = "") -> str:
    return f'<span class="wb-badge {cls}">{esc(text)}</span>'


def readable(v: Any, refs: Refs, depth: int = 0) -> str:
    """Any JSON value as HTML a person reads: ids resolved, lists of scalars inline or as a list,
    records as a small table, nested mappings as nested rows (never a JSON dump)."""
    if isinstance(v, str):
        return refs.ref(v) if (v in refs.turns or v in refs.units) else clip(v, limit=1500)
    if v is None or isinstance(v, (bool, int, float)):
        return esc(v)
    if isinstance(v, Mapping):
        if depth >= 2:
            return esc(short(", ".join(f"{k}: {x}" for k, x in v.items()), 300))
        return (rows((str(k), readable(x, refs, depth + 1)) for k, x in v.items())
                or '<span class="wb-muted">(empty)</span>')
    items = list(v) if isinstance(v, (list, tuple)) else [v]
    if not items:
        return '<span class="wb-muted">(empty)</span>'
    if all(isinstance(x, str) and (x in refs.turns or x in refs.units) for x in items):
        return refs.ref_list(items)
    if all(isinstance(x, Mapping) for x in items) and depth < 2:
        cols = list(dict.fromkeys(k for x in items for k in x))[:8]
        body = "".join("<tr>" + "".join(f"<td>{readable(x.get(k), refs, depth + 1)}</td>" for k in cols) + "</tr>"
                       for x in items[:MAX_ROWS])
        more = f'<p class="wb-muted">… and {len(items) - MAX_ROWS} more</p>' if len(items) > MAX_ROWS else ""
        return f"<table><tr>{''.join(f'<th>{esc(k)}</th>' for k in cols)}</tr>{body}</table>{more}"
    if all(not isinstance(x, (list, tuple, Mapping)) for x in items):
        text = ", ".join(map(str, items))
        return clip(text, limit=1500)
    return "<ul>" + "".join(f"<li>{readable(x, refs, depth + 1)}</li>" for x in items[:MAX_ROWS]) + "</ul>"


#: (method, step kind) -> card; method None: any method (hand-made traces carry no method name)
