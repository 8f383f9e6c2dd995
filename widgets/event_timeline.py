"""``EventTimeline``: the unified memory event log as a filterable table and a plotly timeline.

One schema for all methods (``MemoryEvent``): ADD, UPDATE, DELETE, MERGE, CONSOLIDATE, SUMMARIZE,
LINK, BUFFER. UPDATE and DELETE events (AMA's Refresher rewriting or removing a memory, with its
cause) stand out: highlighted rows, larger red markers, and a separate "refresh events" count.

    EventTimeline(method)                 # anything with .events
    EventTimeline(run.events("ama", cid)) # a saved run, no LLM
    EventTimeline({"ama": ev1, "hmem": ev2})
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .html import DisplaysWidget, box, clip, diff_html, esc, show_figure, source_ids_html, table_html

REFRESH_KINDS = ("UPDATE", "DELETE")
KIND_ORDER = ("ADD", "UPDATE", "DELETE", "MERGE", "CONSOLIDATE", "SUMMARIZE", "LINK", "BUFFER")


def _to_event(e):
    from workbench.trace import MemoryEvent

    return e if isinstance(e, MemoryEvent) else MemoryEvent.from_dict(dict(e))


def events_of(obj: Any) -> list:
    """MemoryEvents from a method (``.events``), a mapping ``method -> events``, or an iterable of
    events/dicts. Events without a method name get the mapping key."""
    from dataclasses import replace

    if hasattr(obj, "events") and not isinstance(obj, Mapping):
        return [_to_event(e) for e in obj.events]
    if isinstance(obj, Mapping):
        out = []
        for name, evs in obj.items():
            out += [e if e.method else replace(e, method=str(name)) for e in map(_to_event, evs)]
        return out
    return [_to_event(e) for e in (obj or ())]


def is_refresh(e) -> bool:
    return e.kind in REFRESH_KINDS


def filter_events(events: Sequence, *, kinds: Iterable[str] | None = None, methods: Iterable[str] | None = None,
                  text: str = "") -> list:
    """Events whose kind and method are in the given sets (None = all) and whose unit id, texts,
    cause or source ids contain ``text`` (case-insensitive)."""
    kinds = set(kinds) if kinds else None
    methods = set(methods) if methods else None
    needle = (text or "").strip().lower()
    out = []
    for e in events:
        if kinds is not None and e.kind not in kinds:
            continue
        if methods is not None and e.method not in methods:
            continue
        if needle:
            hay = " ".join([e.unit_id, e.before or "", e.after or "", e.cause, " ".join(e.source_ids)]).lower()
            if needle not in hay:
                continue
        out.append(e)
    return out


def event_row(e) -> dict:
    change = diff_html(e.before, e.after) if e.before and e.after else clip(e.after or e.before or "")
    return {"seq": e.seq, "method": esc(e.method), "kind": esc(e.kind), "unit": esc(e.unit_id), "change": change,
            "cause": esc(e.cause), "sources": source_ids_html(e.source_ids), "time": esc(e.time or ""),
            "_refresh": is_refresh(e)}


def events_table_html(events: Sequence, *, limit: int = 500) -> str:
    """The events as an HTML table with before/after diffs; UPDATE/DELETE rows carry ``wb-refresh``."""
    if not events:
        return box('<p class="wb-muted">No events match.</p>')
    rows = [event_row(e) for e in events[:limit]]
    cols = ["seq", "method", "kind", "unit", "change", "cause", "sources", "time"]
    more = f'<p class="wb-muted">… {len(events) - limit} more not shown</p>' if len(events) > limit else ""
    return box(table_html(rows, cols, raw=cols, row_class=lambda r: "wb-refresh" if r["_refresh"] else "") + more)


def timeline_figure(events: Sequence, *, x: str = "seq"):
    """Plotly scatter: x = event sequence (or time), y = kind, one trace per method; refresh events
    (UPDATE/DELETE) as a separate, larger red trace. Hover text is escaped."""
    import plotly.graph_objects as go

    fig = go.Figure()
    methods = sorted({e.method for e in events})
    for m in methods:
        evs = [e for e in events if e.method == m and not is_refresh(e)]
        if evs:
            fig.add_trace(_scatter(evs, x, name=m or "(method?)", marker=dict(size=7)))
    refresh = [e for e in events if is_refresh(e)]
    if refresh:
        fig.add_trace(_scatter(refresh, x, name=f"refresh (UPDATE/DELETE): {len(refresh)}",
                               marker=dict(size=13, color="crimson", symbol="diamond")))
    present = [k for k in KIND_ORDER if any(e.kind == k for e in events)]
    fig.update_layout(height=320, margin=dict(l=40, r=10, t=30, b=40), title="Memory events",
                      xaxis_title="time" if x == "time" else "event sequence",
                      yaxis=dict(categoryorder="array", categoryarray=present))
    return fig


def _scatter(evs, x, *, name, marker):
    import plotly.graph_objects as go

    xs = [(e.time if x == "time" else e.seq) for e in evs]
    hover = [esc(f"{e.method} #{e.seq} {e.kind} {e.unit_id}: {(e.after or e.before or '')[:120]} — {e.cause[:80]}")
             for e in evs]
    return go.Scatter(x=xs, y=[e.kind for e in evs], mode="markers", name=esc(name), marker=marker,
                      hovertext=hover, hoverinfo="text")


class EventTimeline(DisplaysWidget):
    """Filterable event table + timeline. State: ``events``, ``filtered``, ``refresh_events``, ``figure``."""

    def __init__(self, events_or_method, *, x: str = "seq"):
        self.events = sorted(events_of(events_or_method), key=lambda e: (e.method, e.seq))
        self.x = x
        self.refresh_events = [e for e in self.events if is_refresh(e)]
        self.kinds = [k for k in KIND_ORDER if any(e.kind == k for e in self.events)]
        self.methods = sorted({e.method for e in self.events})
        self.kind_filter, self.method_filter, self.text_filter = None, None, ""
        self._build_widgets()
        self.set_filter()

    @property
    def refresh_count(self) -> int:
        return len(self.refresh_events)

    def set_filter(self, *, kinds: Iterable[str] | None = None, text: str | None = None,
                   methods: Iterable[str] | None = None) -> "EventTimeline":
        """Filter by kinds / methods (None keeps the current one; empty = all) and a text search."""
        if kinds is not None:
            self.kind_filter = list(kinds) or None
        if methods is not None:
            self.method_filter = list(methods) or None
        if text is not None:
            self.text_filter = text
        self.filtered = filter_events(self.events, kinds=self.kind_filter, methods=self.method_filter,
                                      text=self.text_filter)
        self.figure = timeline_figure(self.filtered, x=self.x)
        self._sync_widgets()
        return self

    def _build_widgets(self) -> None:
        import ipywidgets as W

        self.kind_select = W.SelectMultiple(options=self.kinds, description="kinds", rows=min(len(self.kinds), 6) or 1)
        self.method_select = W.SelectMultiple(options=self.methods, description="methods",
                                              rows=min(len(self.methods), 6) or 1)
        self.search = W.Text(placeholder="search text, unit id, cause…", description="search")
        self.counts = W.HTML()
        self.table = W.HTML()
        self.plot = W.Output()
        self._syncing = False
        self.kind_select.observe(lambda ch: self._from_widgets(), names="value")
        self.method_select.observe(lambda ch: self._from_widgets(), names="value")
        self.search.observe(lambda ch: self._from_widgets(), names="value")
        self.widget = W.VBox([W.HBox([self.kind_select, self.method_select, self.search]), self.counts,
                              self.plot, self.table])

    def _from_widgets(self) -> None:
        if not self._syncing:
            self.set_filter(kinds=self.kind_select.value, methods=self.method_select.value, text=self.search.value)

    def _sync_widgets(self) -> None:
        self._syncing = True
        try:
            self.kind_select.value = tuple(k for k in (self.kind_filter or ()) if k in self.kinds)
            self.method_select.value = tuple(m for m in (self.method_filter or ()) if m in self.methods)
            self.search.value = self.text_filter
        finally:
            self._syncing = False
        shown_refresh = sum(is_refresh(e) for e in self.filtered)
        self.counts.value = (f"{len(self.filtered)} of {len(self.events)} events · "
                             f"<b>refresh events (UPDATE/DELETE): {shown_refresh}</b> of {self.refresh_count}")
        self.table.value = events_table_html(self.filtered)
        show_figure(self.plot, self.figure)

    def __repr__(self) -> str:
        return f"EventTimeline({len(self.filtered)}/{len(self.events)} events, {self.refresh_count} refresh)"
