"""The trace timeline: one answer's trace as a step waterfall plus a readable card for the current step.

Written once, shown twice: ``TraceStepper`` (``widgets.trace_stepper``, ipywidgets) in notebooks and
``TracesView`` (``widgets.app``, Panel) in the app only bind their sliders, buttons and keys to the
state and HTML functions here; this module imports neither toolkit.

The waterfall follows Phoenix/Langfuse: one row per step and, nested under it, one per LLM call,
laid end to end. A bar's width is the call's latency when the run timed live calls, else its tokens
(a call replayed from a cassette took no model time, so its latency says nothing); the header says
which. Steps that made no LLM call (a cosine retrieval) get a thin mark. Each row carries the
decision the step made: MemR3's router cause (choice / budget / streak / empty / nothing left /
fallback, ``workbench.eval.mechanisms.router_cause``), HyMem's finished flag, AMA's verdict, the
RecMem tier or H-Mem scope; a decision checked against the question's gold (``trace_cards.step_decision``) has
✓ or ✗ before it, why on hover.

    tl = TraceTimeline.build(answer, conversation=conv, qa=qa)   # gold evidence marked, step answers checked
    html = timeline_html(tl.at(3))       # waterfall (step 4 highlighted) + step 4's card + its calls
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from workbench.words import counted

from .html import answer_html, box, calls_html, esc, running_tokens, short
from .trace_cards import CSS as CARD_CSS
from .trace_cards import Ctx, Decision, card_html, cause_meaning, step_cause, step_decision
from .trace_refs import Refs, readable

#: keys that step the timeline when the trace area has focus (the app; shown on screen)
KEYS = {"ArrowLeft": -1, "k": -1, "ArrowRight": 1, "j": 1}
KEYS_HELP = "← / k previous step · → / j next step · Home / End first / last · click a row to jump to it"

CSS = """<style>
.wb-wf {position: relative; margin: 4px 0 10px 0; max-height: 42vh; overflow: auto; border: 1px solid #dee2e6;
  border-radius: 4px;}
.wb-wf-row {display: grid; grid-template-columns: minmax(260px, 36%) 1fr 290px; gap: 8px; align-items: center;
  padding: 1px 6px; font-size: 12px; line-height: 18px;}
.wb-clickable .wb-wf-row {cursor: pointer;}
.wb-wf-row:hover {background: #f1f3f5;}
.wb-wf-step {border-top: 1px solid #f1f3f5;}
.wb-wf-call {color: #495057;}
.wb-wf-call .wb-wf-label {padding-left: 22px;}
.wb-wf-current, .wb-wf-current:hover {background: #dbe4ff;}
.wb-wf-current.wb-wf-step {box-shadow: inset 3px 0 0 #364fc7;}
.wb-wf-label {white-space: nowrap; overflow: hidden; text-overflow: ellipsis;}
.wb-wf-track {position: relative; height: 12px; background: #f8f9fa;}
.wb-wf-call .wb-wf-track {height: 8px;}
.wb-wf-bar {position: absolute; top: 0; bottom: 0; min-width: 3px; border-radius: 2px;}
.wb-wf-call .wb-wf-bar {opacity: .65;}
.wb-wf-meta {display: flex; gap: 6px; align-items: center; white-space: nowrap; overflow: hidden; color: #343a40;}
.wb-wf-size {flex: none;}
.wb-wf-meta .wb-cause, .wb-wf-meta .wb-badge {min-width: 0; margin: 0; overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap;}
.wb-wf-head {font-size: 12px; color: #495057; margin: 2px 0;}
.wb-k-retrieve {background: #12b886;} .wb-k-decide {background: #f08c00;} .wb-k-answer {background: #4263eb;}
.wb-k-reflect {background: #ae3ec9;} .wb-k-other {background: #868e96;}
.wb-keys {font-size: 12px; color: #495057;}
.wb-keys kbd {border: 1px solid #adb5bd; border-radius: 3px; padding: 0 4px; background: #f8f9fa;}
</style>""" + CARD_CSS
#: step kind -> colour group of its bar
KIND_GROUP = {"retrieve": "retrieve", "light": "retrieve", "deep": "retrieve", "plan": "decide",
              "router": "decide", "judge": "decide", "expand": "retrieve", "refresh": "decide", "trigger": "decide",
              "answer": "answer", "final": "answer", "synthesize": "answer", "subanswer": "answer",
              "reflect": "reflect", "followup": "reflect"}


# -- state --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bar:
    """One waterfall row: a step (``call`` None) or one LLM call of it, placed on the shared axis."""

    step: int
    call: int | None
    label: str
    start: float
    width: float
    tokens: int
    latency: float
    decision: str = ""  # short text: the step's decision (router cause, verdict, tier ...)
    decision_class: str = ""
    decision_title: str = ""  # the decision in full, the chip's tooltip (the chip text may be shortened)
    # whether that decision was right (``trace_cards.step_decision``: the answer it decided on against the gold
    # answer, or for a Judge the gold evidence among its candidates); None where the step decides nothing
    # checkable or it could not be checked
    fitting: bool | None = None
    fitting_title: str = ""


@dataclass(frozen=True)
class TraceTimeline:
    """An answer's trace, the step shown (``index``) and what ids stand for (``refs``)."""

    answer: Any
    refs: Refs
    index: int = 0
    measure: str = "tokens"  # "latency" when the run timed live calls, else "tokens"

    @classmethod
    def build(cls, answer, *, conversation=None, gold_evidence: Iterable[str] | None = None,
              memories: Iterable[Mapping] = (), index: int = 0, qa=None) -> "TraceTimeline":
        """``memories``: the method's saved ``memories()`` rows, so ids a step names without retrieving
        them (HyMem's deep candidates, H-Mem's scored candidates) show their text too. ``qa``: the question
        answered, so a step that decided on an intermediate answer says whether that answer was right."""
        gold = tuple(gold_evidence if gold_evidence is not None else getattr(qa, "evidence", None) or ())
        refs = Refs.build(answer, conversation=conversation, gold=gold, memories=memories, qa=qa)
        return cls(answer, refs, 0, measure_of(answer)).at(index)

    @property
    def steps(self) -> tuple:
        return tuple(self.answer.steps)

    @property
    def n_steps(self) -> int:
        return len(self.answer.steps)

    @property
    def step(self):
        return self.answer.steps[self.index] if self.n_steps else None

    def at(self, i: int) -> "TraceTimeline":
        """The same timeline showing step ``i`` (clamped to the valid range)."""
        return replace(self, index=max(0, min(int(i), max(self.n_steps - 1, 0))))

    def stops(self, kinds: Iterable[str] | None = None) -> tuple[int, ...]:
        """The step indices a stepper visits: every step, or only the steps of ``kinds`` (the notebook's
        ``EvidenceGapView`` visits MemR3's router steps, where the evidence and gaps change)."""
        keep = None if kinds is None else frozenset(kinds)
        return tuple(i for i, s in enumerate(self.steps) if keep is None or s.kind in keep)

    @property
    def running(self) -> int:
        """Tokens of every call up to and including the current step."""
        return running_tokens(self.steps)[self.index] if self.n_steps else 0


def measure_of(answer) -> str:
    """``latency`` when some call ran live with a measured time; else ``tokens``."""
    return "latency" if any(not c.cached and c.latency_s > 0 for c in answer.calls) else "tokens"


def decision(step, method: str = "") -> tuple[str, str]:
    """(short text, css class) of what a step decided, for its waterfall row."""
    d, kind = step.data, step.kind
    if kind == "router":
        cause = step_cause(d)
        cls = "wb-cause-choice" if cause == "choice" else "wb-cause-fallback" if cause == "fallback" else \
            "wb-cause-forced"
        return f"{d.get('action', '?')} · {cause_meaning(cause)[0]}", cls
    if kind == "light" and "finished" in d:
        return ("sufficient: no deep" if d.get("finished") == 0 else
                "insufficient → deep" if d.get("escalate") else "insufficient"), ""
    if kind == "reflect" and "done" in d:
        return ("done" if d.get("done") else "rewrite → next round"), ""
    if kind == "judge" and d.get("verdict"):
        # the chip says the verdict and where it led, short enough for the row (AMA's "answer (retry budget
        # K_r exhausted)" does not fit and became a bare "…"); the whole text is its tooltip and in the card
        nxt = str(d.get("next") or "")
        short_next = nxt.split(" (", 1)[0] + (" (budget spent)" if "exhausted" in nxt else "")
        return f"{d.get('verdict')} → {short_next}".rstrip(" →"), ""
    if kind == "retrieve" and d.get("layer"):
        return f"tier: {d.get('layer')}", ""
    if kind == "retrieve" and d.get("scope"):
        return f"scope: {d.get('scope')}", ""
    if kind == "retrieve" and d.get("store"):
        return f"route: {d.get('store')} · K {d.get('K', '?')}", ""
    return "", ""


def decision_title(step, text: str) -> str:
    """The decision in full for the chip's tooltip: a judge's verdict with where it led, unshortened."""
    d = step.data
    if step.kind == "judge" and d.get("verdict") and d.get("next"):
        return f"{d.get('verdict')} → {d.get('next')}"
    return text


def bars(tl: TraceTimeline) -> list[Bar]:
    """The waterfall's rows: each step, then each of its calls, laid end to end on one axis."""
    out, t = [], 0.0
    use_latency = tl.measure == "latency"
    for i, s in enumerate(tl.steps):
        sizes = [(c.latency_s if use_latency else c.prompt_tokens + c.completion_tokens) for c in s.calls]
        text, cls = decision(s, tl.answer.method)
        judged = step_decision(Ctx(tl.answer, i, tl.refs))
        judged = judged if isinstance(judged, Decision) else None  # an unchecked decision gets no mark
        out.append(Bar(i, None, f"{i + 1} {s.kind} — {s.title}", t, float(sum(sizes)), s.usage.total_tokens,
                       round(sum(c.latency_s for c in s.calls), 6), text, cls, decision_title(s, text),
                       None if judged is None else judged.fitting,
                       "" if judged is None else f"{judged.verdict}: {judged.because} ({judged.basis})"))
        start = t
        for j, (c, size) in enumerate(zip(s.calls, sizes)):
            flags = " · replayed" if c.cached else ""  # from the recording (cache or cassette), not a live call
            flags += " · ERROR" if c.error else ""
            out.append(Bar(i, j, f"↳ {c.role or '(no role)'}{flags}", start, float(size),
                           c.prompt_tokens + c.completion_tokens, c.latency_s))
            start += size
        t += sum(sizes)
    return out


# -- HTML ---------------------------------------------------------------------------------------------------
def measure_note(tl: TraceTimeline) -> str:
    if tl.measure == "latency":
        return ("bar width = latency of each LLM call (seconds, laid end to end); steps without an LLM call "
                "were not timed and show as a thin mark")
    return ("bar width = tokens (prompt + completion) of each LLM call — no latency: the calls were replayed "
            "from a cassette or not timed; steps without an LLM call show as a thin mark")


def _meta(b: Bar, measure: str) -> str:
    size = f"{b.latency:.2f} s · {b.tokens:,} tok" if measure == "latency" else f"{b.tokens:,} tok"
    if b.call is None and b.width == 0:
        size = "no LLM call"
    dec = (f'<span title="{esc(b.decision_title or b.decision)}" class="wb-cause {b.decision_class or "wb-badge"}">'
           f'{esc(b.decision)}</span>') if b.decision else ""
    if b.fitting is not None:  # the decision checked against the gold: ✓ / ✗ before its chip, why on hover
        colour = "#237032" if b.fitting else "#c92a2a"
        dec = (f'<b class="wb-fit" style="color:{colour}" title="{esc(b.fitting_title)}">'
               f'{"✓" if b.fitting else "✗"}</b>{dec}')
    return f'<span class="wb-wf-size">{size}</span>{dec}'



def waterfall_html(tl: TraceTimeline) -> str:
    """Every step and call as a bar; the current step's rows highlighted. Rows carry ``data-step``
    (the app jumps to a clicked row)."""
    if not tl.n_steps:
        return '<p class="wb-muted">This answer recorded no steps.</p>'
    rows = bars(tl)
    total = sum(b.width for b in rows if b.call is None) or 1.0
    out = []
    for b in rows:
        s = tl.steps[b.step]
        group = KIND_GROUP.get(s.kind, "other")
        cls = "wb-wf-step" if b.call is None else "wb-wf-call"
        cur = " wb-wf-current" if b.step == tl.index else ""
        left, width = 100 * b.start / total, 100 * b.width / total
        out.append(f'<div class="wb-wf-row {cls}{cur}" data-step="{b.step}" title="{esc(b.label)}">'
                   f'<div class="wb-wf-label">{esc(short(b.label, 90))}</div>'
                   f'<div class="wb-wf-track"><div class="wb-wf-bar wb-k-{group}" '
                   f'style="left:{left:.2f}%;width:{width:.2f}%"></div></div>'
                   f'<div class="wb-wf-meta">{_meta(b, tl.measure)}</div></div>')
    n_calls = sum(1 for b in rows if b.call is not None)
    checked = (" · ✓ / ✗ before a decision: whether it was right, checked against the gold answer or the gold "
               "evidence (why on hover)" if any(b.fitting is not None for b in rows) else "")
    head = (f'<div class="wb-wf-head">Waterfall: {counted(tl.n_steps, "step")}, {counted(n_calls, "LLM call")} · '
            f"{esc(measure_note(tl))}{checked}</div>")
    return head + f'<div class="wb-wf" role="list">{"".join(out)}</div>'


def step_head_html(tl: TraceTimeline) -> str:
    s = tl.step
    return (f'<h4>Step {tl.index + 1} / {tl.n_steps}: <span class="wb-badge">{esc(s.kind)}</span> {esc(s.title)}</h4>'
            f"<p><small>this step: {s.usage.total_tokens:,} tokens in "
            f"{counted(len(s.calls), 'call')} · "
            f'running total: <b class="wb-running">{tl.running:,}</b> tokens</small></p>')


def all_fields_html(tl: TraceTimeline) -> str:
    """Every recorded field of the step, readable, folded away (the card shows what matters)."""
    d = tl.step.data
    if not d:
        return ""
    return (f"<details><summary>all {len(d)} recorded fields of this step</summary>"
            f"{readable(dict(d), tl.refs)}</details>")


def card_section_html(tl: TraceTimeline, *, with_calls: bool = True) -> str:
    """The current step: heading with tokens, its card, all its fields, and (optionally) its calls."""
    if not tl.n_steps:
        return '<p class="wb-muted">This answer recorded no steps.</p>'
    out = step_head_html(tl) + card_html(Ctx(tl.answer, tl.index, tl.refs)) + all_fields_html(tl)
    if with_calls:
        out += f"<h5>LLM calls ({len(tl.step.calls)})</h5>{calls_html(tl.step.calls)}"
    return out


def no_stops_html(kinds: Iterable[str]) -> str:
    """What a stepper narrowed to ``kinds`` shows when the trace has no such step."""
    return f'<p class="wb-muted">This trace has no {esc(" or ".join(kinds))} step.</p>'


def timeline_html(tl: TraceTimeline, *, with_calls: bool = True, header: bool = False) -> str:
    """The waterfall and the current step's card, in the shared stylesheet (``header``: the question,
    answer and totals first)."""
    top = answer_html(tl.answer) if header else ""
    return box(CSS + top + waterfall_html(tl) + card_section_html(tl, with_calls=with_calls))


def keys_html() -> str:
    """The keys legend shown above the app's trace area."""
    keys = KEYS_HELP
    for k in ("← / k", "→ / j", "Home / End"):
        keys = keys.replace(k, " / ".join(f"<kbd>{esc(x)}</kbd>" for x in k.split(" / ")))
    return box(CSS + f'<p class="wb-keys">Keys, once the trace below has focus (click it or Tab to it): {keys}</p>')
