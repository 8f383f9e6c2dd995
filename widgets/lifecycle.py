"""Unit lifecycle: what each method made of a turn, and what became of each unit it made.

Two questions a teacher or a case study asks of a saved run, answered from its files alone:

* **from a turn**: every unit, in every method, derived from it (its id is in the unit's
  provenance, ``source_ids``), including units a method later removed (known from the event log);
* **from a unit**: its source turns (text shown), its events in order (ADD, UPDATE, MERGE, ... with
  the before and after texts side by side) and the answers whose final reader saw it (the saved
  answers' ``context``), with its rank there and whether it covered the question's gold evidence,
  plus the questions where a step retrieved it but it did not reach the reader.

Ids in the HTML are links (``widgets.html.link_html``): a turn id opens that turn's lifecycle, a
unit id that unit's, a question id that question in the Question view. State and rendering are
written once here (``LifecycleIndex``, ``turn_html``, ``unit_html``) with no widget toolkit; the
app's Lifecycle tab (Panel) and ``LifecycleView`` below (ipywidgets, for notebooks) only bind to it.

    index = LifecycleIndex.from_run(RunDir("runs/demo"), "sample-1")
    index.turn("D4:3").units["hmem"]            # UnitRefs of H-Mem derived from turn D4:3
    life = index.unit("hmem", "ev33")           # its sources, events and the answers that saw it
    html = unit_html(life, links=True)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from workbench.methods import display_name, readable_text
from workbench.words import counted
from workbench.trace import Answer

from .event_timeline import (Placement, conversation_axis, event_key, events_table_html, method_sort_key,
                             ordered_methods, place_events)
from .readability import SUMMARY_KINDS, fact_flags_html, flags_html, method_prompts, summary_flags_html
from .html import DisplaysWidget, box, clip, esc, link_html, method_title_html, pre, source_ids_html, table_html

#: unit status: in the saved memory, or only known from events (removed, or replaced by a new id)
IN_MEMORY, REMOVED, EVENTS_ONLY = "in memory", "removed", "only in the event log"


@dataclass(frozen=True)
class UnitRef:
    """One unit of one method: what the turn view lists and the unit view is about."""

    method: str
    unit_id: str
    kind: str
    text: str
    source_ids: tuple[str, ...]
    status: str  # IN_MEMORY, REMOVED (its last event is a DELETE) or EVENTS_ONLY
    n_events: int = 0
    n_seen: int = 0  # answers whose final reader saw it


@dataclass(frozen=True)
class Seen:
    """A question whose answer by the unit's method involved the unit."""

    qa_id: str
    question: str
    rank: int | None  # 1-based position in the final reader's context; None: only retrieved in steps
    n_context: int
    steps: tuple[int, ...]  # 1-based indexes of the steps whose hits include it
    covers_gold: tuple[str, ...]  # gold evidence turns of the question among its sources
    judge_label: str
    attribution: str
    prediction: str


@dataclass(frozen=True)
class TurnLifecycle:
    turn: Any  # workbench.data.Turn, or None when the id is not in the conversation
    turn_id: str
    session: str
    date: str
    previous: str | None
    next: str | None
    units: Mapping[str, tuple[UnitRef, ...]]  # method -> units derived from the turn (every method listed)
    planted: tuple[str, ...] = ()  # what the conversation's annotations plant at this turn, in words


@dataclass(frozen=True)
class UnitLifecycle:
    ref: UnitRef
    row: Mapping[str, Any]  # its memories.jsonl row ({} when only known from events)
    source_turns: tuple[Any, ...]  # Turns of its sources that the conversation has
    missing_sources: tuple[str, ...]  # source ids the conversation lacks
    events: tuple[Any, ...]  # its MemoryEvents, in order
    placements: Mapping[tuple[str, int], Placement]
    seen: tuple[Seen, ...]  # answers whose final reader saw it, in run order
    retrieved: tuple[Seen, ...] = field(default=())  # retrieved in a step, not in the final context


def _ids(v) -> tuple[str, ...]:
    if isinstance(v, (list, tuple)):
        return tuple(str(x) for x in v)
    if isinstance(v, str) and v.strip():
        return tuple(v.split())
    return ()


class LifecycleIndex:
    """Turn -> units and unit -> (sources, events, answers) over one conversation of a run.

    ``memories``: method -> its ``memories.jsonl`` rows; ``events``: method -> its MemoryEvents
    (keyed by the run's method folder: MemR3's events are its backend's, filed under ``memr3``);
    ``results``: result rows (those of other conversations are ignored)."""

    def __init__(self, conversation, memories: Mapping[str, Sequence[Mapping[str, Any]]],
                 events: Mapping[str, Sequence[Any]], results: Iterable[Mapping[str, Any]] = ()):
        from dataclasses import replace

        self.conversation = conversation
        self.conv_id = getattr(conversation, "id", None)
        self.methods = ordered_methods(set(memories) | set(events))
        self.turns = {t.id: t for t in conversation.turns} if conversation is not None else {}
        self.turn_order = [t.id for t in conversation.turns] if conversation is not None else []
        self.qa = {q.id: q for q in conversation.qa} if conversation is not None else {}
        self.axis = conversation_axis(conversation)
        self.rows: dict[tuple[str, str], dict] = {}
        self.unit_events: dict[tuple[str, str], list] = {}
        all_events = []
        for m in self.methods:
            for r in memories.get(m, ()):
                self.rows[(m, str(r.get("id", "")))] = dict(r)
            for e in events.get(m, ()):
                e = e if e.method == m else replace(e, method=m)
                all_events.append(e)
                self.unit_events.setdefault((m, e.unit_id), []).append(e)
        for evs in self.unit_events.values():
            evs.sort(key=lambda e: e.seq)
        self.placements = place_events(all_events, self.axis)
        self.problems: list[str] = []
        self.seen, self.retrieved = self._answers(results)
        self.by_turn: dict[str, list[tuple[str, str]]] = {}
        for key in dict.fromkeys([*self.rows, *self.unit_events]):
            for s in self.ref(*key).source_ids:
                self.by_turn.setdefault(s, []).append(key)

    @classmethod
    def from_run(cls, run, conv_id: str) -> "LifecycleIndex":
        """Over a ``workbench.rundir.RunDir`` (read-only; no method is loaded)."""
        methods = run.methods()
        return cls(run.conversation(conv_id), {m: run.memories(m, conv_id) for m in methods},
                   {m: run.events(m, conv_id) for m in methods}, run.results())

    def _answers(self, results) -> tuple[dict, dict]:
        seen: dict[tuple[str, str], list[Seen]] = {}
        retrieved: dict[tuple[str, str], list[Seen]] = {}
        for row in results:
            if self.conv_id is not None and row.get("conv_id") not in (None, self.conv_id):
                continue
            if not isinstance(row.get("answer"), Mapping):
                continue
            try:
                ans = Answer.from_dict(row["answer"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                # kept out of the index and listed, so "seen by no answer" is never silently wrong
                self.problems.append(f"answer of {row.get('method')!r} to {row.get('qa_id')!r} is unreadable: "
                                     f"{type(exc).__name__}: {exc}")
                continue
            method = str(row.get("method", ""))
            qa = self.qa.get(row.get("qa_id"))
            gold = set(qa.evidence) if qa is not None else set()
            in_steps: dict[str, list[int]] = {}
            for i, step in enumerate(ans.steps, start=1):
                for h in step.hits:
                    in_steps.setdefault(h.unit_id, []).append(i)
            ranks: dict[str, int] = {}
            sources: dict[str, tuple[str, ...]] = {}
            for rank, h in enumerate(ans.context, start=1):
                ranks.setdefault(h.unit_id, rank)
                sources.setdefault(h.unit_id, h.source_ids)
            for uid in dict.fromkeys([*ranks, *in_steps]):
                covers = tuple(s for s in sources.get(uid, ()) if s in gold)
                s = Seen(str(row.get("qa_id", "")), str(row.get("question", "")), ranks.get(uid), len(ans.context),
                         tuple(dict.fromkeys(in_steps.get(uid, ()))), covers, str(row.get("judge_label") or ""),
                         str(row.get("attribution") or ""), str(row.get("prediction") or ""))
                (seen if uid in ranks else retrieved).setdefault((method, uid), []).append(s)
        return seen, retrieved

    # -- queries ---------------------------------------------------------------------------------------
    def ref(self, method: str, unit_id: str) -> UnitRef:
        row = self.rows.get((method, unit_id))
        evs = self.unit_events.get((method, unit_id), [])
        if row is not None:
            status = IN_MEMORY
            kind, text, sources = str(row.get("kind", "")), str(row.get("text", "")), _ids(row.get("source_ids"))
        else:
            status = REMOVED if evs and evs[-1].kind == "DELETE" else EVENTS_ONLY
            last_text = next((e.after or e.before for e in reversed(evs) if e.after or e.before), "")
            kind = str((evs[-1].data or {}).get("kind", "")) if evs else ""
            text, sources = last_text or "", tuple(dict.fromkeys(s for e in evs for s in e.source_ids))
        return UnitRef(method, unit_id, kind, text, sources, status, len(evs),
                       len(self.seen.get((method, unit_id), ())))

    def turn(self, turn_id: str) -> TurnLifecycle:
        """Every unit of every method whose provenance includes ``turn_id`` (methods with none get
        an empty tuple, so "nothing derived" is shown, not hidden)."""
        turn = self.turns.get(turn_id)
        units: dict[str, list[UnitRef]] = {m: [] for m in self.methods}
        for m, uid in self.by_turn.get(turn_id, ()):
            units.setdefault(m, []).append(self.ref(m, uid))
        pos = self.axis.positions.get(turn_id) if self.axis else None
        span = self.axis.session_at(pos) if pos else None
        prev_id = self.turn_order[pos - 2] if pos and pos > 1 else None
        next_id = self.turn_order[pos] if pos and pos < len(self.turn_order) else None
        return TurnLifecycle(turn, turn_id, span.id if span else "", span.date if span else "", prev_id, next_id,
                             {m: tuple(v) for m, v in units.items()}, tuple(self.planted.get(turn_id, ())))

    @property
    def planted(self) -> dict[str, list[str]]:
        """Turn id -> what is planted there (``annotations.planted_marks``: a knowledge update, a forget
        request...), read once; {} for a conversation without annotations or without the evaluation package."""
        if not hasattr(self, "_planted"):
            self._planted = _planted_marks(self.conv_id)
        return self._planted

    def unit(self, method: str, unit_id: str) -> UnitLifecycle:
        ref = self.ref(method, unit_id)
        turns = tuple(self.turns[s] for s in ref.source_ids if s in self.turns)
        missing = tuple(s for s in ref.source_ids if s not in self.turns)
        evs = tuple(self.unit_events.get((method, unit_id), ()))
        return UnitLifecycle(ref, self.rows.get((method, unit_id), {}), turns, missing, evs,
                             {event_key(e): self.placements[event_key(e)] for e in evs},
                             tuple(self.seen.get((method, unit_id), ())),
                             tuple(self.retrieved.get((method, unit_id), ())))

    def has_unit(self, method: str, unit_id: str) -> bool:
        return (method, unit_id) in self.rows or (method, unit_id) in self.unit_events

    def turn_options(self) -> dict[str, str]:
        """``label -> turn id`` in conversation order, the label showing speaker and the start of the text."""
        out = {}
        for tid in self.turn_order:
            t = self.turns[tid]
            text = " ".join(str(t.text).split())
            out[f"{tid} {t.speaker}: {text[:70]}{'…' if len(text) > 70 else ''}"] = tid
        return out

    def unit_options(self, method: str) -> list[str]:
        """Unit ids of ``method``: those in memory, then those only known from events."""
        return list(dict.fromkeys([u for m, u in self.rows if m == method] +
                                  [u for m, u in self.unit_events if m == method]))


# -- rendering ---------------------------------------------------------------------------------------------
CSS = """<style>
.wb-life h4 {margin: 6px 0 2px;}
.wb-life h5 {margin: 10px 0 2px;}
.wb-life .wb-turn {padding: 4px 6px; border-left: 3px solid #4e79a7; background: #f8f9fa; margin: 2px 0;}
.wb-life .wb-planted {margin: 2px 0; color: #8a5300; font-size: 0.92em;}
.wb-life .wb-removed {color: #a61e4d; font-weight: 600;}
.wb-life .wb-nav {margin: 2px 0 6px;}
.wb-life td:first-child {white-space: nowrap;}
.wb-life details > summary {cursor: pointer; font-weight: 600; margin: 8px 0 2px;}
</style>"""


#: a method's unit list in the turn view starts open up to this many units
OPEN_UP_TO = 8


def _unit_link(method: str, unit_id: str, links: bool) -> str:
    return link_html(unit_id, "unit", method, unit_id, title="this unit's lifecycle") if links else esc(unit_id)


def _turn_link(turn_id: str, links: bool, label: str | None = None) -> str:
    text = label or turn_id
    return link_html(text, "turn", turn_id, title="this turn's lifecycle") if links else esc(text)


def _status_html(status: str) -> str:
    return f'<span class="wb-removed">{esc(status)}</span>' if status != IN_MEMORY else esc(status)


def _planted_marks(conv_id: str | None) -> dict[str, list[str]]:
    try:
        from workbench.eval.annotations import planted_marks, shipped_annotations
    except ImportError:  # the views work without the evaluation package
        return {}
    try:
        return planted_marks(shipped_annotations().get(conv_id)) if conv_id else {}
    except ValueError:  # a damaged annotations file: the census says so
        return {}


def turn_html(tl: TurnLifecycle, *, links: bool = True, text_limit: int = 300) -> str:
    """A turn, then per method the units derived from it (links to each unit's lifecycle)."""
    t = tl.turn
    nav = []
    if tl.previous:
        nav.append(_turn_link(tl.previous, links, f"◀ {tl.previous}"))
    if tl.next:
        nav.append(_turn_link(tl.next, links, f"{tl.next} ▶"))
    where = " · ".join(p for p in (tl.session, tl.date) if p)
    if t is None:
        head = f"<h4>Turn {esc(tl.turn_id)}</h4><p class='wb-muted'>This turn is not in the run's conversation.</p>"
    else:
        head = (f"<h4>Turn {esc(tl.turn_id)} <span class='wb-badge'>{esc(where)}</span></h4>"
                f"<div class='wb-turn'><b>{esc(t.speaker)}:</b> {clip(t.content)}</div>")
        # what this turn is planted to test, so the units below can be read against it (review: D4:3 renames the
        # greyhound, and nothing on the page said so)
        head += "".join(f"<p class='wb-planted'>▲ planted here: {esc(m)}</p>" for m in tl.planted)
    total = sum(len(v) for v in tl.units.values())
    parts = [head, f"<p class='wb-nav'>{' · '.join(nav)}</p>" if nav else "",
             f"<p>{counted(total, 'unit')} in {sum(1 for v in tl.units.values() if v)} of "
             f"{len(tl.units)} methods derive from this turn (its id is in their provenance).</p>"]
    empty = [m for m, v in tl.units.items() if not v]
    for m in sorted(tl.units, key=method_sort_key):
        units = tl.units[m]
        if not units:
            continue
        rows = [{"unit": _unit_link(m, u.unit_id, links), "kind": esc(u.kind), "status": _status_html(u.status),
                 "text": clip(readable_text(m, u.text), limit=text_limit),
                 "sources": source_ids_html(u.source_ids, [tl.turn_id], limit=8, links=links),
                 "events": esc(u.n_events), "seen by answers": esc(u.n_seen)} for u in units]
        cols = ["unit", "kind", "status", "text", "sources", "events", "seen by answers"]
        # long lists start folded so the other methods stay in view
        opened = " open" if len(units) <= OPEN_UP_TO else ""
        parts.append(f"<details{opened} data-method=\"{esc(m)}\"><summary>{method_title_html(m)} — "
                     f"{counted(len(units), 'unit')}</summary>{table_html(rows, cols, raw=cols)}</details>")
    if empty:
        parts.append(f"<p class='wb-muted'>No unit derived from this turn in: "
                     f"{esc(', '.join(display_name(m) for m in empty))}.</p>")
    return box(CSS + '<div class="wb-life">' + "".join(parts) + "</div>")


#: the column with an answer's attribution (in words, its meaning on hover) and the judge's label
OUTCOME = "outcome · judge label"


def _outcome_html(s: Seen) -> str:
    """An answer's attribution as the Question view words it ("shown, misread"; the label's meaning on hover)
    and the judge's label beside it; "—" when the row has neither."""
    from .question import ATTRIBUTION_HELP, ATTRIBUTION_WORDS

    parts = []
    if s.attribution:
        parts.append(f'<span title="{esc(ATTRIBUTION_HELP.get(s.attribution, s.attribution))}">'
                     f"{esc(ATTRIBUTION_WORDS.get(s.attribution, s.attribution))}</span>")
    if s.judge_label:
        parts.append(f"judge: {esc(s.judge_label)}")
    return " · ".join(parts) or "—"


def _seen_rows(seen: Sequence[Seen], method: str, links: bool, *, in_context: bool) -> list[dict]:
    rows = []
    for s in seen:
        q = link_html(s.qa_id, "question", s.qa_id, method, title="this question in the Question view") \
            if links else esc(s.qa_id)
        where = (f"#{s.rank} of {s.n_context}" if s.rank is not None else "—")
        steps = ", ".join(map(str, s.steps)) or "—"
        gold = (f'<span class="wb-gold">{esc(" ".join(s.covers_gold))}</span>' if s.covers_gold else
                '<span class="wb-muted">no</span>')
        row = {"question": q, "text": clip(s.question, limit=200), "rank in reader's context": esc(where),
               "in steps": esc(steps), "covers gold evidence": gold,
               "answer": clip(s.prediction, limit=160), OUTCOME: _outcome_html(s)}
        if not in_context:
            row.pop("rank in reader's context")
            row.pop("covers gold evidence")
        rows.append(row)
    return rows


def _flags(text: str, ul: UnitLifecycle) -> str:
    """What makes the unit's text hard to read (``readability``), its source turns' own repeats allowed; for a fact
    unit also what it gets wrong against those turns (``readability.fact_marks``)."""
    source = " ".join(str(t.text) for t in ul.source_turns) or None
    # a summary or episode the model wrote is also read for a cut-off; an H-Mem parent that copies its child's text
    # (copy_of_child) is read as that child
    written = ul.ref.kind in SUMMARY_KINDS and not (isinstance(ul.row, Mapping) and ul.row.get("copy_of_child"))
    hard = summary_flags_html(text, source=source) if written else flags_html(text, source=source)
    if ul.ref.kind != "fact":
        return hard
    return hard + fact_flags_html(text, [t.id for t in ul.source_turns], {t.id: str(t.text) for t in ul.source_turns},
                                  method_prompts(ul.ref.method))


def unit_html(ul: UnitLifecycle, *, links: bool = True) -> str:
    """One unit: its text and status, its source turns, its event history (before | after side by
    side) and the answers whose reader saw it."""
    r = ul.ref
    head = (f"<h4>{method_title_html(r.method)}: unit <code>{esc(r.unit_id)}</code> "
            f"<span class='wb-badge'>{esc(r.kind or '?')}</span> "
            f"{_status_html(r.status)}{_flags(r.text, ul)}</h4>{pre(readable_text(r.method, r.text))}")
    if readable_text(r.method, r.text) != r.text:  # what the method stored and embedded, one click away
        head += f"<details><summary class='wb-muted'>as stored</summary>{pre(r.text)}</details>"
    srcs = "".join(f"<div class='wb-turn'>{_turn_link(t.id, links)} <b>{esc(t.speaker)}:</b> {clip(t.content)}</div>"
                   for t in ul.source_turns)
    if ul.missing_sources:
        srcs += f"<p class='wb-muted'>not in this run's conversation: {esc(' '.join(ul.missing_sources))}</p>"
    srcs = srcs or "<p class='wb-muted'>none recorded</p>"
    sources = (f"<h5>Provenance: {counted(len(r.source_ids), 'source turn')} "
               f"{source_ids_html(r.source_ids, limit=12, links=links)}</h5>{srcs}")
    cols = ["when", "#", "kind", "before", "after", "cause", "sources"]
    history = (f"<h5>Event history ({len(ul.events)})</h5>"
               + (events_table_html(ul.events, placements=ul.placements, links=links, columns=cols,
                                    turn_text={t.id: t.text for t in ul.source_turns}) if ul.events else
                  "<p class='wb-muted'>No events recorded for this unit (the method logs none for this kind).</p>"))
    seen_cols = ["question", "text", "rank in reader's context", "covers gold evidence", "answer", OUTCOME]
    seen = (f"<h5>Answers whose reader saw it ({len(ul.seen)})</h5>"
            + (table_html(_seen_rows(ul.seen, r.method, links, in_context=True), seen_cols, raw=seen_cols)
               if ul.seen else "<p class='wb-muted'>No saved answer put this unit in front of its reader.</p>"))
    if ul.retrieved:
        rcols = ["question", "text", "in steps", "answer", OUTCOME]
        seen += (f"<h5>Retrieved in a step but not in front of the final reader ({len(ul.retrieved)})</h5>"
                 + table_html(_seen_rows(ul.retrieved, r.method, links, in_context=False), rcols, raw=rcols))
    return box(CSS + '<div class="wb-life">' + head + sources + history + seen + "</div>")


def parse_link(data: Any) -> tuple[str, ...] | None:
    """A clicked link's target (the JSON list of ``link_html``) checked: ``("turn", id)``,
    ``("unit", method, id)``, ``("question", qa_id, method)`` or ``("method", name)`` (its How it works page);
    None for anything else."""
    if not isinstance(data, (list, tuple)) or not data or not all(isinstance(x, str) for x in data):
        return None
    arity = {"turn": 2, "unit": 3, "question": 3, "method": 2}
    return tuple(data) if arity.get(data[0]) == len(data) else None


# -- notebook shell --------------------------------------------------------------------------------------
#: what reading a run can raise past its own readers (the app's ``panel_parts.READ_ERRORS``)
READ_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError)


def safe_reader(run, problems: list):
    """``safe(what, fn, default)`` over a ``RunDir``, as ``RunStore.safe`` reads for the app (that module
    loads Panel and imports this one, so the notebook views read with this): a read error becomes the line
    ``what: Error: message`` in ``problems`` and ``default`` is returned; lines the tolerant reader skipped
    are listed as ``skipped file:line: reason``."""
    def safe(what: str, fn, default):
        try:
            return fn()
        except READ_ERRORS as exc:
            problems.append(f"{what}: {type(exc).__name__}: {exc}")
            return default
        finally:
            problems.extend(f"skipped {p}" for p in run.problems)
            run.problems.clear()
    return safe
#: how many problems the notebook alert lists (the rest are counted)
PROBLEMS_LISTED = 10


def problems_alert(problems: Sequence[str], limit: int = PROBLEMS_LISTED) -> str:
    """The problems met reading a run, as one escaped alert worded like the app header's (``problems_html``):
    the first ``limit`` listed, the rest counted."""
    if len(problems) == 1:
        return f'<div role="alert">Problem reading the run — {esc(problems[0])}</div>'
    items = "".join(f"<li>{esc(p)}</li>" for p in problems[:limit])
    more = f"<div>... and {len(problems) - limit:,} more not listed</div>" if len(problems) > limit else ""
    return (f'<div role="alert"><b>Problem reading the run — {len(problems):,} problems</b>'
            f'<ul style="margin:4px 0 2px 0">{items}</ul>{more}</div>')


class LifecycleView(DisplaysWidget):
    """The lifecycle in a notebook: pick a turn or a unit; the ids it mentions are buttons below the
    view (a notebook's HTML output cannot call back into Python), each opening that turn or unit.

        LifecycleView.from_run("runs/demo", "sample-1", turn="D4:3")
    """

    MAX_BUTTONS = 40

    def __init__(self, index: LifecycleIndex, *, turn: str | None = None, unit: tuple[str, str] | None = None,
                 problems: Sequence[str] = ()):
        self.index = index
        #: what could not be read (a damaged file, skipped lines), shown above the view as the app's header does
        self.problems = list(problems)
        self.target: tuple[str, ...] = ()
        self._build_widgets()
        if unit is not None:
            self.open_unit(*unit)
        else:
            self.open_turn(turn or next(iter(index.turn_order), ""))

    @classmethod
    def from_run(cls, run_dir, conv_id: str | None = None, **kw) -> "LifecycleView":
        """Over a saved run, read as the app reads it (``widgets.run_store.RunStore``, whose ``safe`` this
        follows: that module imports this one, so it cannot be imported here): a damaged file or line is listed
        in ``problems`` (shown above the view, worded as the app's header words it), never raised, and the rest
        is shown. Without ``conv_id``, the first conversation that can be read; a damaged one asked for by name
        gives an empty view saying why. A run directory that does not exist, or a conversation it does not
        hold, raises."""
        from workbench.rundir import RunDir

        run, problems = RunDir(run_dir), []
        safe = safe_reader(run, problems)
        ids = safe("conversations/", run.conversation_ids, [])
        if conv_id is not None and conv_id not in ids:
            raise KeyError(f"no conversation {conv_id!r} in {run_dir} (it has {', '.join(ids[:5]) or 'none'})")
        conv = None
        for cid in [conv_id] if conv_id is not None else ids:
            conv = safe(f"conversations/{cid}.json", lambda c=cid: run.conversation(c), None)
            if conv is not None:
                break
        if conv is None:
            return cls(LifecycleIndex(None, {}, {}, ()), problems=problems, **kw)
        cid = conv.id
        methods = safe("memories/", run.methods, [])
        memories = {m: safe(f"memories/{m}/{cid}/memories.jsonl", lambda m=m: run.memories(m, cid), [])
                    for m in methods}
        events = {m: safe(f"memories/{m}/{cid}/events.jsonl", lambda m=m: run.events(m, cid), []) for m in methods}
        index = LifecycleIndex(conv, memories, events, safe("results.jsonl", run.results, []))
        problems.extend(f"unit lifecycle: {p}" for p in index.problems)
        return cls(index, problems=list(dict.fromkeys(problems)), **kw)

    def _page(self, html: str) -> str:
        return (box(problems_alert(self.problems)) if self.problems else "") + html

    def open_turn(self, turn_id: str) -> "LifecycleView":
        self.target = ("turn", turn_id)
        self.state = self.index.turn(turn_id)
        self.html = self._page(turn_html(self.state, links=False))
        self._render()
        return self

    def open_unit(self, method: str, unit_id: str) -> "LifecycleView":
        self.target = ("unit", method, unit_id)
        self.state = self.index.unit(method, unit_id)
        self.html = self._page(unit_html(self.state, links=False))
        self._render()
        return self

    def links(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(label, target)`` of what the current view points to: from a turn, its units and its
        neighbours; from a unit, its source turns."""
        if self.target[:1] == ("turn",):
            tl = self.state
            out = [(f"{display_name(m)} · {u.unit_id}", ("unit", m, u.unit_id))
                   for m, us in tl.units.items() for u in us]
            out += [(f"◀ {tl.previous}", ("turn", tl.previous))] if tl.previous else []
            out += [(f"{tl.next} ▶", ("turn", tl.next))] if tl.next else []
            return out
        return [(f"turn {s}", ("turn", s)) for s in self.state.ref.source_ids if s in self.index.turns]

    def follow(self, target: Sequence[str]) -> "LifecycleView":
        t = parse_link(list(target))
        if t is None or t[0] == "question":
            raise ValueError(f"not a turn or unit link: {target!r}")
        return self.open_turn(t[1]) if t[0] == "turn" else self.open_unit(t[1], t[2])

    def _build_widgets(self) -> None:
        import ipywidgets as W

        self.turn_picker = W.Dropdown(options=self.index.turn_options(), description="turn",
                                      layout=W.Layout(width="60%"))
        self.body = W.HTML()
        self.buttons = W.HBox(layout=W.Layout(flex_flow="row wrap"))
        self._syncing = False
        self.turn_picker.observe(lambda ch: None if self._syncing else self.open_turn(ch["new"]), names="value")
        self.widget = W.VBox([self.turn_picker, self.body, W.HTML("<b>open:</b>"), self.buttons])

    def _render(self) -> None:
        import ipywidgets as W

        self._syncing = True
        try:
            if self.target[0] == "turn" and self.target[1] in self.index.turns:
                self.turn_picker.value = self.target[1]
        finally:
            self._syncing = False
        self.body.value = self.html
        buttons = []
        for label, target in self.links()[: self.MAX_BUTTONS]:
            b = W.Button(description=label, layout=W.Layout(width="auto"))
            b.on_click(lambda _b, t=target: self.follow(t))
            buttons.append(b)
        self.buttons.children = buttons

    def __repr__(self) -> str:
        return f"LifecycleView({'/'.join(self.target)})"
