"""The unified memory event log on the conversation's own time axis, for every method at once.

One schema for all methods (``MemoryEvent``): ADD, UPDATE, DELETE, MERGE, CONSOLIDATE, SUMMARIZE,
LINK, BUFFER. Every event is placed at the turn after which it happened (``place_events``): the
x axis is the conversation itself, turn by turn, with its sessions and their dates, so "AMA
rewrote this fact while reading session 4" and "RecMem consolidated the cluster when D5:3 arrived"
line up across methods. Each method has its own lane (a row per kind inside it) in its own colour;
refresh events (UPDATE/DELETE: a memory rewritten or removed) keep that colour and stand out as
larger outlined diamonds. Changes made while answering a question (AMA's Refresher at question
time) sit in a "question time" zone after the last turn.

State and rendering are written once, in ``EventLog`` (pure: filters, pages, figure, HTML); the
notebook's ``EventTimeline`` (ipywidgets) and the app's Events tab (``widgets.app.EventsView``,
Panel) only bind their widgets to it. The table lists every event, a page at a time, with the
before and after texts of a change side by side.

    EventTimeline(method)                                   # anything with .events (and .conversation_)
    EventTimeline(run.events("ama", cid), conversation=run.conversation(cid))
    EventTimeline({"ama": ev1, "hmem": ev2}, conversation=conv)
"""
from __future__ import annotations

from dataclasses import dataclass
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from workbench.methods import display_name, method_base
from workbench.words import counted, day_words

from .html import DisplaysWidget, before_after_html, box, clip, esc, link_html, short, show_figure, source_ids_html
from .readability import flags_html, source_text

try:  # at import, in the importing thread: the app reads the run ahead in a worker thread, and importing the
    # evaluation package there while a view builds here raced (KeyError: 'IPython' in the app's header)
    from workbench.eval.annotations import check_edits, edit_verdict, shipped_annotations
    from workbench.eval.mechanisms import method_census
except ImportError:  # the views work without the evaluation package
    check_edits = edit_verdict = shipped_annotations = method_census = None

REFRESH_KINDS = ("UPDATE", "DELETE")
KIND_ORDER = ("ADD", "UPDATE", "DELETE", "MERGE", "CONSOLIDATE", "SUMMARIZE", "LINK", "BUFFER")


def method_order() -> tuple[str, ...]:
    """The order methods are listed in (lanes, legends, tables) and keep their colour by: the registry's (the
    built-ins first, then plugins); names this installation does not know follow, sorted."""
    from workbench.methods import REGISTRY

    return tuple(REGISTRY)


#: one colour per method, kept wherever the method appears (Tableau 10, then more)
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f", "#ff9da7",
           "#bab0ac", "#1b9e77", "#d95f02", "#7570b3", "#e7298a")
PAGE_SIZE = 50


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


def params_of(obj: Any) -> dict:
    """Method name -> its parameters for a built method handed to the notebook shell (``config()``), so the
    header knows an ablation that switched its editing off; ``{}`` for anything else."""
    config = getattr(obj, "config", None)
    if callable(config) and hasattr(obj, "events") and not isinstance(obj, Mapping):
        return {str(getattr(obj, "name", "")): config()}
    return {}


def is_refresh(e) -> bool:
    return e.kind in REFRESH_KINDS


def is_question_time(e) -> bool:
    """Whether the change was made while answering a question rather than while reading the
    conversation. Events carry no phase field; the methods that change memory at question time
    (AMA's Refresher) say so in the cause (``"question: ..."``), so that is what is read here."""
    return str(e.cause or "").lstrip().lower().startswith("question")


def method_sort_key(name: str):
    """Known methods in their order, a labelled variant (``ama[paper-judge]``) right after its method."""
    base = method_base(name)
    order = method_order()
    return (order.index(base), name) if base in order else (len(order), name)


def ordered_methods(names: Iterable[str]) -> list[str]:
    return sorted(set(names), key=method_sort_key)


#: how dark the 1st, 2nd, 3rd labelled variant of a method is drawn (a share of its base method's colour)
VARIANT_SHADES = (0.58, 0.36, 0.8)


def variant_share(k: int) -> float:
    """The share of its base colour the ``k``-th (0-based) labelled variant of a method keeps: ``VARIANT_SHADES``,
    then, for a 4th and later, the middle of the widest gap left between the shares taken (within 0.28-0.88), so no
    two variants of one method draw alike (a 4th variant drew in the 1st one's shade)."""
    shares = list(VARIANT_SHADES)
    while len(shares) <= k:
        bounds = sorted([0.28, 0.88, *shares])
        _, low, high = max((round(b - a, 6), a, b) for a, b in zip(bounds, bounds[1:]))
        shares.append(round((low + high) / 2, 3))
    return shares[k]


def _shade(colour: str, share: float) -> str:
    """``#rrggbb`` darkened towards black, keeping ``share`` of each channel."""
    rgb = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c * share):02x}" for c in rgb)


def method_colours(names: Iterable[str]) -> dict[str, str]:
    """A colour per method: the known methods keep theirs whatever else is in the run; a labelled variant of one
    (``ama[paper-judge]``) is a darker shade of its base's, so the two read as one family and never borrow a
    colour that is close to another method's (seen: AMA (paper judge) in a green beside Eager floor's, MemR3 (one
    chunk) in an orange beside Naive RAG's); names unknown to the registry take the palette's next colours."""
    out, extra, variants = {}, 0, Counter()
    order = method_order()
    for n in ordered_methods(names):
        base = method_base(n)
        if n in order:
            out[n] = PALETTE[order.index(n) % len(PALETTE)]
        elif base in order and base != n:
            shade = variant_share(variants[base])
            variants[base] += 1
            out[n] = _shade(PALETTE[order.index(base) % len(PALETTE)], shade)
        else:
            out[n] = PALETTE[(len(order) + extra) % len(PALETTE)]
            extra += 1
    return out


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


# -- the conversation's time axis -----------------------------------------------------------------------
@dataclass(frozen=True)
class SessionSpan:
    id: str
    start: int  # 1-based position of its first turn
    end: int  # ... and of its last
    date: str  # "14 Mar 2023" (or the dataset's own date text)


@dataclass(frozen=True)
class Axis:
    """Turn positions of a conversation (1-based, in reading order) and its sessions."""

    positions: Mapping[str, int]
    turn_ids: tuple[str, ...]
    sessions: tuple[SessionSpan, ...]

    @property
    def n(self) -> int:
        return len(self.turn_ids)

    @property
    def question_x(self) -> float:
        """Where changes made at question time sit: past the last turn."""
        return self.n + 2.0

    def session_at(self, pos: int) -> SessionSpan | None:
        return next((s for s in self.sessions if s.start <= pos <= s.end), None)


def _date_label(session) -> str:
    if session.date_time is not None:
        return day_words(session.date_time)
    return str(session.date_text or "")


def conversation_axis(conversation) -> Axis | None:
    """The time axis of a ``Conversation`` (None for none)."""
    if conversation is None:
        return None
    positions, ids, spans = {}, [], []
    for s in conversation.sessions:
        start = len(ids) + 1
        for t in s.turns:
            ids.append(t.id)
            positions.setdefault(t.id, len(ids))
        if len(ids) >= start:
            spans.append(SessionSpan(s.id, start, len(ids), _date_label(s)))
    return Axis(positions, tuple(ids), tuple(spans))


@dataclass(frozen=True)
class Placement:
    """Where one event sits on the axis and how that was decided."""

    x: float  # turn position (question time: ``Axis.question_x``; no axis: the event's seq)
    turn_id: str | None  # the turn after which it happened
    session: str
    date: str
    inferred: bool  # none of its source turns is in the conversation: placed after the method's previous change
    question_time: bool

    @property
    def label(self) -> str:
        if self.question_time:
            return "question time"
        if self.turn_id is None:
            return f"#{int(self.x)}"
        where = f"{'after ' if self.inferred else ''}{self.turn_id}"
        return " · ".join(p for p in (where, self.session, self.date) if p)


def event_key(e) -> tuple[str, int]:
    return (e.method, e.seq)


def place_events(events: Sequence, axis: Axis | None) -> dict[tuple[str, int], Placement]:
    """Each event's place on ``axis``: the latest of its source turns, and never before the
    method's previous change (events of one method are numbered in the order they happened, and
    a method reads the conversation turn by turn, so a consolidation whose sources are all old
    still happened when the turn that triggered it was read). An event with no source turn in the
    conversation is placed after its method's previous change and marked ``inferred``; one made
    while answering a question goes to the question-time zone. Without an axis the x is the seq."""
    out: dict[tuple[str, int], Placement] = {}
    if axis is None:
        for e in events:
            out[event_key(e)] = Placement(float(e.seq), None, "", e.time or "", False, is_question_time(e))
        return out
    by_method: dict[str, list] = {}
    for e in events:
        by_method.setdefault(e.method, []).append(e)
    for evs in by_method.values():
        last = 0
        for e in sorted(evs, key=lambda ev: ev.seq):
            if is_question_time(e):
                out[event_key(e)] = Placement(axis.question_x, None, "", "", False, True)
                continue
            own = max((axis.positions[s] for s in e.source_ids if s in axis.positions), default=0)
            pos = max(own, last)
            last = pos
            if pos == 0:  # nothing read yet that it could follow: before the first turn
                out[event_key(e)] = Placement(0.0, None, "", "", True, False)
                continue
            span = axis.session_at(pos)
            out[event_key(e)] = Placement(float(pos), axis.turn_ids[pos - 1], span.id if span else "",
                                          span.date if span else "", own < pos or own == 0, False)
    return out


# -- figure ----------------------------------------------------------------------------------------------
def _lane(e) -> str:
    return f"{display_name(e.method)} · {e.kind}"


def legend_rows(names, width: float = 1000.0) -> int:
    """How many rows a horizontal plotly legend of ``names`` may wrap to in about ``width`` px (7 px a
    character plus the marker and gaps, an estimate; at least 2): the top margin is made that tall, so the
    legend never runs into the title (ten methods with their refresh entries took three rows)."""
    widths = [7.0 * len(str(name)) + 45 for name in names]
    if not widths:
        return 2
    per_row = max(1, int(width // max(widths)))  # as a grid of the widest entry: an upper bound, never short
    return max(-(-len(widths) // per_row), 2)


def timeline_figure(events: Sequence, *, axis: Axis | None = None, placements: Mapping | None = None,
                    colours: Mapping[str, str] | None = None):
    """Plotly scatter on the conversation's axis: one lane per method (a row per kind inside it),
    the method's colour on every marker, edits (UPDATE/DELETE) as larger diamonds with a
    dark outline in the same colour. Sessions are shaded bands labelled with their dates. Hover
    text is escaped."""
    import plotly.graph_objects as go

    placements = placements if placements is not None else place_events(events, axis)
    methods = ordered_methods(e.method for e in events)
    colours = dict(colours or method_colours(methods))
    lanes = [f"{display_name(m)} · {k}" for m in methods for k in KIND_ORDER
             if any(e.method == m and e.kind == k for e in events)]
    xs = _spread(events, placements)
    fig = go.Figure()
    for m in methods:
        for refresh in (False, True):
            evs = [e for e in events if e.method == m and is_refresh(e) == refresh]
            if not evs:
                continue
            marker = (dict(size=14, symbol="diamond", color=colours.get(m), line=dict(width=2, color="#212529"))
                      if refresh else dict(size=8, color=colours.get(m), line=dict(width=0.5, color="white")))
            fig.add_trace(go.Scatter(
                x=[xs[event_key(e)] for e in evs], y=[_lane(e) for e in evs], mode="markers", marker=marker,
                name=esc(f"{display_name(m)} edits (UPDATE/DELETE): {len(evs)}" if refresh else display_name(m)),
                legendgroup=esc(m),
                hovertext=[_hover(e, placements[event_key(e)]) for e in evs], hoverinfo="text"))
    rows = legend_rows([t.name for t in fig.data])
    height = 190 + 22 * max(len(lanes), 3) + 22 * (rows - 2)
    order = list(reversed(lanes))  # the first method on top
    # the horizontal legend sits between the title and the plot: room for as many rows as it wraps to
    layout = dict(height=height, margin=dict(l=150, r=20, t=46 + 22 * rows, b=70), plot_bgcolor="white",
                  title=dict(text="Memory events on the conversation (one lane per method; hover a marker)",
                             y=0.98, yanchor="top"),
                  yaxis=dict(categoryorder="array", categoryarray=order, automargin=True, gridcolor="#e9ecef",
                             range=[-0.6, len(order) - 0.4]),
                  legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0), hoverlabel=dict(align="left"))
    # a rule between two methods' lanes (category i sits at y = i)
    rules = [dict(type="line", xref="paper", yref="y", x0=0, x1=1, y0=i + 0.5, y1=i + 0.5,
                  line=dict(color="#adb5bd", width=1))
             for i in range(len(order) - 1) if order[i].split(" · ")[0] != order[i + 1].split(" · ")[0]]
    if axis is not None:
        _axis_layout(fig, axis, any(p.question_time for p in placements.values()), layout)
    else:
        layout["xaxis"] = dict(title="event sequence (no conversation given, so no turn axis)")
    layout["shapes"] = list(layout.get("shapes", ())) + rules
    fig.update_layout(**layout)
    return fig


def _spread(events, placements) -> dict:
    """x of each marker, nudged right a little when several of one lane share a turn (all stay
    left of the next turn), so stacked changes do not hide each other."""
    seen: dict[tuple, int] = {}
    out = {}
    for e in sorted(events, key=lambda ev: (ev.method, ev.seq)):
        p = placements[event_key(e)]
        k = (_lane(e), p.x)
        n = seen.get(k, 0)
        seen[k] = n + 1
        out[event_key(e)] = p.x + min(n * 0.08, 0.6)
    return out


def _hover(e, p: Placement) -> str:
    text = (e.after or e.before or "")[:140]
    return esc(f"{e.method} #{e.seq} {e.kind} {e.unit_id} — {p.label}: {text} — {e.cause[:90]}")


def _axis_layout(fig, axis: Axis, question_zone: bool, layout: dict) -> None:
    shapes, ticks, labels = [], [], []
    for i, s in enumerate(axis.sessions):
        if i % 2 == 0:
            shapes.append(dict(type="rect", xref="x", yref="paper", x0=s.start - 0.5, x1=s.end + 0.5, y0=0, y1=1,
                               fillcolor="#f1f3f5", line=dict(width=0), layer="below"))
        ticks.append(s.start)
        labels.append(esc(f"{s.id}<br>{s.date}" if s.date else s.id).replace("&lt;br&gt;", "<br>"))
    right = axis.n + 0.5
    if question_zone:
        shapes.append(dict(type="line", xref="x", yref="paper", x0=axis.n + 1, x1=axis.n + 1, y0=0, y1=1,
                           line=dict(dash="dash", color="#868e96")))
        ticks.append(axis.question_x)
        labels.append("question<br>time")
        right = axis.question_x + 1
    layout["shapes"] = shapes
    layout["xaxis"] = dict(title=f"conversation turns (1–{axis.n}), sessions shaded, dated at their first turn",
                           tickmode="array", tickvals=ticks, ticktext=labels, range=[0.3, right], zeroline=False,
                           showgrid=False)


# -- table -----------------------------------------------------------------------------------------------
TABLE_COLUMNS = ["when", "method", "#", "kind", "unit", "before", "after", "cause", "sources"]


def event_row(e, placement: Placement | None = None, *, links: bool = False, conv_id: str | None = None,
              turn_text: Mapping | None = None) -> dict:
    """One event as table cells (HTML): where it happened, its unit, the before and after texts
    side by side with the change marked, why, and its source turns. A refresh event (UPDATE/DELETE) of an
    annotated conversation says whether it was right (``workbench.eval.annotations.edit_verdict``)."""
    before, after = before_after_html(e.before, e.after)
    unit = link_html(e.unit_id, "unit", e.method, e.unit_id, title="this unit's lifecycle") if links else esc(e.unit_id)
    when = placement.label if placement is not None else (e.time or "")
    kind = esc(e.kind)
    if is_refresh(e) and conv_id:
        kind += _edit_mark(e, conv_id)
    # the model's text as it is, with what makes it hard to read flagged (raw JSON, a code fence, a loop)
    flags = flags_html(e.after, source=source_text(list(getattr(e, "source_ids", ()) or ()), turn_text)).strip()
    after += f"<br>{flags}" if flags else ""
    return {"when": esc(when), "method": esc(display_name(e.method)), "#": esc(e.seq), "kind": kind, "unit": unit,
            "before": before, "after": after, "cause": clip(e.cause, limit=600),
            "sources": source_ids_html(e.source_ids, limit=8, links=links), "_refresh": is_refresh(e)}


def _edit_verdict(e, conv_id: str) -> tuple[bool | None, str]:
    """Whether one edit was right (``workbench.eval.annotations.edit_verdict``); (None, why) where it cannot be
    checked or the evaluation package is absent (the views work without it)."""
    if edit_verdict is None:
        return None, "no evaluation package"
    return edit_verdict({"kind": e.kind, "cause": e.cause, "before": e.before, "after": e.after}, conv_id)


def edit_tally_html(events: Sequence, conv_id: str | None, params: Mapping | None = None) -> str:
    """" · checked against the conversation's updates: 0 right, 7 wrong, 36 not checkable (why on hover); AMA
    missed 3 planted updates and 1 forget request" for a conversation with planted or annotated updates, so the
    header never counts edits as fired without saying how many were right, nor leaves out what a method that
    edits failed to change (review: the events header said "0 right, 7 wrong" while the How it works page said
    three updates were missed); "" where no edit is checkable. ``events``: all of the run's, so what each method
    ingested is known; ``params``: method -> the run's parameters, so an ablation that switched the editing off
    reads "not checked: the Refresher was switched off", not "made no edit and missed"."""
    if not conv_id:
        return ""
    checked = [(e, *_edit_verdict(e, conv_id)) for e in events if is_refresh(e)]
    verdicts = [v for _, v, _ in checked]
    right, wrong = verdicts.count(True), verdicts.count(False)
    missed = _missed_text(events, checked, conv_id, params or {})
    unchecked = Counter(why for _, v, why in checked if v is None)
    more = (f", <span title='{esc(unchecked.most_common(1)[0][0])}' style='border-bottom:1px dotted'>"
            f"{sum(unchecked.values())} not checkable</span>" if unchecked else "")
    if not right + wrong:  # what a method whose mechanism is editing left undone still counts (review: AMA (paper
        # judge) made no edit, and the header said nothing of the 3 planted updates it missed)
        return (f" · checked against the conversation's updates: no checkable edit{more}{missed}" if more else
                f" · checked against the conversation's updates: {missed[2:]}") if missed else ""
    return (f" · checked against the conversation's updates: <b style='color:#237032'>{right} right</b>, "
            f"<b style='color:#c92a2a'>{wrong} wrong</b>{more}{missed}")


def _missed_text(events: Sequence, checked: Sequence, conv_id: str, params: Mapping) -> str:
    """"; AMA missed 3 planted updates and 1 forget request" for each method with a checkable edit, or whose
    checked mechanism is editing (its census declares the ``edits`` check) though it made no edit ("AMA (paper
    judge) made no edit and missed ..."), that left a planted update or forget request of a turn it ingested
    undone (``annotations.check_edits``); one whose run switched that mechanism off says so instead."""
    if check_edits is None:
        return ""
    try:
        ann = shipped_annotations()
    except ValueError:  # a damaged annotations file: the census says so
        return ""
    if conv_id not in ann:
        return ""
    edited = {e.method for e, v, _ in checked if v is not None}
    editors = ordered_methods(edited | {m for m in {e.method for e in events} if _edits_checked(m)})
    parts = []
    for m in editors:
        spec = method_census(m) if method_census is not None else None
        off = spec.switched_off(params.get(m)) if spec is not None else None
        if off:
            parts.append(f"{esc(display_name(m))} not checked: {esc(off)}")
            continue
        rows = [{"kind": e.kind, "cause": e.cause, "before": e.before, "after": e.after,
                 "source_ids": list(getattr(e, "source_ids", ()) or ())} for e in events if e.method == m]
        result = check_edits({conv_id: rows}, {conv_id: ann[conv_id]})
        mu, mf = result.get("missed_updates", 0), result.get("missed_forgets", 0)
        if mu or mf:
            what = " and ".join(x for x in (counted(mu, "planted update") if mu else "",
                                             counted(mf, "forget request") if mf else "") if x)
            turns = ", ".join(x["turn"] for x in result.get("missed", ()))
            none = "" if m in edited or any(is_refresh(e) for e in events if e.method == m) else " made no edit and"
            parts.append(f"<span title='{esc('missed at ' + turns)}'>{esc(display_name(m))}{none} missed "
                         f"{what}</span>")
    return "; " + "; ".join(parts) if parts else ""


def _edits_checked(method: str) -> bool:
    """Whether a run's method declares editing as the mechanism its census checks (``CensusSpec.check``)."""
    spec = method_census(method) if method_census is not None else None
    return bool(spec and spec.check and spec.check[0] == "edits")


def _edit_mark(e, conv_id: str) -> str:
    """✓ / ✗ under an edit, with why on hover; nothing where it cannot be checked."""
    right, why = _edit_verdict(e, conv_id)
    if right is None:
        return ""
    word, colour = ("✓ right", "#237032") if right else ("✗ wrong", "#c92a2a")
    # the reason in the row too (hover alone hides it from a projector or a screenshot), shortened
    return (f'<br><small style="color:{colour};font-weight:600" title="{esc(why)}">{word}</small>'
            f'<br><small class="wb-muted">{esc(short(why.split(":")[-1].strip() or why, 48))}</small>')


def events_table_html(events: Sequence, *, placements: Mapping | None = None, links: bool = False,
                      columns: Sequence[str] = TABLE_COLUMNS, conv_id: str | None = None,
                      turn_text: Mapping | None = None) -> str:
    """The given events (all of them: page before calling) as an HTML table; UPDATE/DELETE rows
    carry ``wb-refresh``, before/after cells ``wb-before``/``wb-after``."""
    if not events:
        return box('<p class="wb-muted">No events match.</p>')
    rows = [event_row(e, (placements or {}).get(event_key(e)), links=links, conv_id=conv_id, turn_text=turn_text)
            for e in events]
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = "".join(f'<td class="wb-{c}">{r[c]}</td>' if c in ("before", "after") else f"<td>{r[c]}</td>"
                        for c in columns)
        body.append(f'<tr class="wb-refresh">{cells}</tr>' if r["_refresh"] else f"<tr>{cells}</tr>")
    style = "<style>.wb-events td:first-child {white-space: nowrap;}</style>"
    return box(f'{style}<table class="wb-events"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')


# -- state -----------------------------------------------------------------------------------------------
class EventLog:
    """The Events view's state, free of any widget toolkit: the events of one conversation (any
    number of methods), their placements on its axis, the filters, the current page, and the
    figure/HTML that show them. Both shells (``EventTimeline``, the app's ``EventsView``) call
    ``set_filter``/``set_page`` and show ``figure``, ``counts_html``, ``pager_text`` and ``table_html``."""

    def __init__(self, events: Sequence, *, conversation=None, page_size: int = PAGE_SIZE, links: bool = False,
                 all_methods: Iterable[str] = (), params: Mapping | None = None):
        self.axis = conversation_axis(conversation)
        self.conv_id = getattr(conversation, "id", None)
        #: what was said, so that an event repeating the people's own words is not flagged as a model loop
        self.turn_text = {t.id: t.text for t in getattr(conversation, "turns", ())}
        self.placements = place_events(events, self.axis)
        self.events = sorted(events, key=self.sort_key)
        self.page_size = max(1, int(page_size))
        self.links = links
        self.methods = ordered_methods(e.method for e in self.events)
        #: methods of the run that logged no event (Full-Context stores nothing of its own): named, not hidden
        self.silent = [m for m in ordered_methods(all_methods) if m not in self.methods]
        self.colours = method_colours(self.methods)
        self.kinds = [k for k in KIND_ORDER if any(e.kind == k for e in self.events)]
        self.refresh_events = [e for e in self.events if is_refresh(e)]
        #: the edits' verdicts do not change with the filters: checked once, not on every redraw
        self.edit_tally = edit_tally_html(self.events, self.conv_id, params)
        self.kind_filter: list[str] | None = None
        self.method_filter: list[str] | None = None
        self.text_filter = ""
        self.page = 0
        self.set_filter()

    def sort_key(self, e):
        """Conversation order: where it happened, then method, then the method's own order."""
        p = self.placements[event_key(e)]
        return (p.x, method_sort_key(e.method), e.seq)

    def set_filter(self, *, kinds: Iterable[str] | None = None, methods: Iterable[str] | None = None,
                   text: str | None = None) -> "EventLog":
        """Filter by kinds / methods (None keeps the current one; empty = all) and a text search;
        back to the first page."""
        if kinds is not None:
            self.kind_filter = list(kinds) or None
        if methods is not None:
            self.method_filter = list(methods) or None
        if text is not None:
            self.text_filter = text
        self.filtered = filter_events(self.events, kinds=self.kind_filter, methods=self.method_filter,
                                      text=self.text_filter)
        self.page = 0
        self._figure = None
        return self

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.filtered) // self.page_size))

    def set_page(self, page: int) -> "EventLog":
        self.page = max(0, min(int(page), self.pages - 1))
        return self

    @property
    def page_events(self) -> list:
        start = self.page * self.page_size
        return self.filtered[start:start + self.page_size]

    @property
    def figure(self):
        if self._figure is None:
            self._figure = timeline_figure(self.filtered, axis=self.axis, placements=self.placements,
                                           colours=self.colours)
        return self._figure

    @property
    def pager_text(self) -> str:
        if not self.filtered:
            return "no events"
        start = self.page * self.page_size
        return (f"events {start + 1}–{start + len(self.page_events)} of {len(self.filtered)} "
                f"(page {self.page + 1} of {self.pages})")

    @property
    def counts_html(self) -> str:
        shown_refresh = sum(is_refresh(e) for e in self.filtered)
        silent = (f" · no events logged by: {esc(', '.join(display_name(m) for m in self.silent))}"
                  if self.silent else "")
        return (f"{len(self.filtered)} of {len(self.events)} events · "
                f"<b>edits (UPDATE/DELETE): {shown_refresh}</b> of {len(self.refresh_events)}"
                f"{self.edit_tally}{silent}")

    @property
    def table_html(self) -> str:
        return events_table_html(self.page_events, placements=self.placements, links=self.links,
                                 conv_id=self.conv_id, turn_text=self.turn_text)


# -- notebook shell --------------------------------------------------------------------------------------
class EventTimeline(DisplaysWidget):
    """The event log in a notebook: filters, the timeline figure and a paged table, bound to an
    ``EventLog`` (``self.log``). State: ``events``, ``filtered``, ``refresh_events``, ``figure``, ``page``."""

    def __init__(self, events_or_method, *, conversation=None, page_size: int = PAGE_SIZE,
                 params: Mapping | None = None):
        if conversation is None and hasattr(events_or_method, "events"):
            conversation = getattr(events_or_method, "conversation_", None)
        self.log = EventLog(events_of(events_or_method), conversation=conversation, page_size=page_size,
                            params=params if params is not None else params_of(events_or_method))
        self._build_widgets()
        self._sync_widgets()

    # the state, read through to the log
    events = property(lambda self: self.log.events)
    filtered = property(lambda self: self.log.filtered)
    refresh_events = property(lambda self: self.log.refresh_events)
    kinds = property(lambda self: self.log.kinds)
    methods = property(lambda self: self.log.methods)
    figure = property(lambda self: self.log.figure)
    page = property(lambda self: self.log.page)

    @property
    def refresh_count(self) -> int:
        return len(self.log.refresh_events)

    def set_filter(self, *, kinds: Iterable[str] | None = None, text: str | None = None,
                   methods: Iterable[str] | None = None) -> "EventTimeline":
        """Filter by kinds / methods (None keeps the current one; empty = all) and a text search."""
        self.log.set_filter(kinds=kinds, methods=methods, text=text)
        self._sync_widgets()
        return self

    def set_page(self, page: int) -> "EventTimeline":
        self.log.set_page(page)
        self._sync_widgets(figure=False)
        return self

    def static_html(self) -> str:
        """The filters in force, the counts, the timeline drawn as an inline SVG and the current page of the table."""
        from .static_figure import figure_html

        log = self.log
        filters = [f"{name}: <b>{esc(', '.join(v) if not isinstance(v, str) else v)}</b>"
                   for name, v in (("kinds", log.kind_filter), ("methods", log.method_filter),
                                   ("search", log.text_filter)) if v]
        shown = f"<p class='wb-muted'>filtered by {' · '.join(filters)}</p>" if filters else ""
        rest = " · the other pages in the live view (or <code>set_page</code>)" if log.pages > 1 else ""
        return (box(f"{shown}<p>{log.counts_html}</p>") + figure_html(log.figure)
                + box(f"<p class='wb-muted'>{esc(log.pager_text)}{rest}</p>") + log.table_html)

    def _build_widgets(self) -> None:
        import ipywidgets as W

        self.kind_select = W.SelectMultiple(options=self.kinds, description="kinds", rows=min(len(self.kinds), 6) or 1)
        self.method_select = W.SelectMultiple(options=self.methods, description="methods",
                                              rows=min(len(self.methods), 6) or 1)
        self.search = W.Text(placeholder="search text, unit id, cause…", description="search")
        self.counts = W.HTML()
        self.table = W.HTML()
        self.plot = W.Output()
        self.prev_button = W.Button(description="◀ previous", layout=W.Layout(width="110px"))
        self.next_button = W.Button(description="next ▶", layout=W.Layout(width="110px"))
        self.pager = W.HTML()
        self._syncing = False
        self.kind_select.observe(lambda ch: self._from_widgets(), names="value")
        self.method_select.observe(lambda ch: self._from_widgets(), names="value")
        self.search.observe(lambda ch: self._from_widgets(), names="value")
        self.prev_button.on_click(lambda b: self.set_page(self.log.page - 1))
        self.next_button.on_click(lambda b: self.set_page(self.log.page + 1))
        self.widget = W.VBox([W.HBox([self.kind_select, self.method_select, self.search]), self.counts,
                              self.plot, W.HBox([self.prev_button, self.next_button, self.pager]), self.table])

    def _from_widgets(self) -> None:
        if not self._syncing:
            self.set_filter(kinds=self.kind_select.value, methods=self.method_select.value, text=self.search.value)

    def _sync_widgets(self, *, figure: bool = True) -> None:
        log = self.log
        self._syncing = True
        try:
            self.kind_select.value = tuple(k for k in (log.kind_filter or ()) if k in self.kinds)
            self.method_select.value = tuple(m for m in (log.method_filter or ()) if m in self.methods)
            self.search.value = log.text_filter
        finally:
            self._syncing = False
        self.counts.value = log.counts_html
        self.pager.value = esc(log.pager_text)
        self.prev_button.disabled = log.page == 0
        self.next_button.disabled = log.page >= log.pages - 1
        self.table.value = log.table_html
        if figure:
            show_figure(self.plot, log.figure)

    def __repr__(self) -> str:
        return f"EventTimeline({len(self.filtered)}/{len(self.events)} events, {self.refresh_count} refresh)"


__all__ = ["EventLog", "EventTimeline", "KIND_ORDER", "REFRESH_KINDS", "conversation_axis", "edit_tally_html",
           "events_of", "events_table_html", "filter_events", "is_question_time", "is_refresh", "method_colours",
           "place_events", "timeline_figure"]
