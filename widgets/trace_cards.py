"""One readable card per step kind of a trace.

A trace step's ``data`` is method-specific plain JSON. Dumping it as JSON leaves a reader to decode
``retrieved_ids = ['chunk-0', ...]`` or ``forced = "budget"`` by hand; the cards here say what the
step did in the method's own terms (MemR3's evidence and gaps as a diff, HyMem's candidates ->
selected events, AMA's rewrite, route and verdict, H-Mem's plan and S/T/R scores, RecMem's tier).
A kind without a card of its own gets ``generic_card``: its data as labelled rows and small tables,
still with every id resolved. A step that decided something checkable (HyMem's escalation and reflection,
MemR3's choosing to answer, AMA's Judge) carries a line saying whether the decision was right against the
question's gold (``workbench.eval.decisions``, the census's rule), or, in grey, why it could not be checked.

Every id goes through ``widgets.trace_refs.Refs``: a turn id is shown with its speaker and words, a
memory unit id with its text and source turns (gold evidence marked), so no bare ``chunk-4`` is left
for the reader to look up. Everything is escaped; the functions return HTML strings and import
neither Panel nor ipywidgets (``widgets.trace_timeline`` composes them; the notebook and app shells
wrap that).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from workbench.eval.decisions import Decision, StepContext, Unchecked, decide, declared_cards
from workbench.eval.mechanisms import open_gaps, router_cause
from workbench.methods.census_kit import gap_in_reasoning
from workbench.words import counted

from .html import clip, esc, hits_html, short
from .question import kind_words
from .trace_refs import MAX_ROWS, Refs, _list, _txt, badge, readable, rows, what

#: MemR3 router causes (``workbench.eval.mechanisms.ROUTER_CAUSES``): short label, what it means
CAUSES = {
    "choice": ("choice", "the router model chose this action itself"),
    "budget": ("budget", "forced to answer: the iteration budget n_max is spent"),
    "empty_retrieval": ("empty", "forced to reflect: the last retrieval returned nothing"),
    "reflect_streak": ("streak", "forced to retrieve: n_cap reflections in a row"),
    "nothing_left": ("nothing left", "forced: the backend has no unseen unit left to retrieve"),
    "fallback": ("fallback", "the router's reply was unusable, so the default action stood in"),
}
CSS = """<style>
.wb-tc .wb-ref {display: inline; }
.wb-tc .wb-ref b {font-family: ui-monospace, monospace; font-size: 12px;}
.wb-tc .wb-reflist {margin: 2px 0 4px 0; padding-left: 18px;}
.wb-tc .wb-reflist li {margin: 1px 0;}
.wb-tc .wb-what {margin: 4px 0 8px 0; padding: 4px 8px; background: #f1f3f5; border-left: 3px solid #4263eb;}
.wb-tc h5 {margin: 8px 0 2px 0;}
.wb-cause {display: inline-block; padding: 0 6px; border-radius: 8px; font-weight: 600;}
.wb-cause-choice {background: #d3f9d8; color: #1b5e20;}
.wb-cause-forced {background: #ffd8a8; color: #7a3500;}
.wb-cause-fallback {background: #ffc9c9; color: #8a0000;}
.wb-tc ul.wb-diff {list-style: none; padding-left: 6px; margin: 2px 0;}
.wb-tc ul.wb-diff li::before {display: inline-block; width: 1.2em; font-weight: 700;}
.wb-tc ul.wb-diff li.wb-add::before {content: "+"; color: #2f7d32;}
.wb-tc ul.wb-diff li.wb-del::before {content: "−"; color: #c92a2a;}
.wb-tc ul.wb-diff li.wb-keep::before {content: "·"; color: #5c636a;}
.wb-tc ul.wb-diff li.wb-add {color: #2f7d32;}
.wb-tc ul.wb-diff li.wb-del {color: #5c636a; text-decoration: line-through;}
.wb-tc .wb-arrow {color: #5c636a; padding: 0 4px;}
.wb-tc td.wb-num {text-align: right; white-space: nowrap;}
</style>"""


# -- the card context -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ctx:
    """What a card renderer needs: the answer, the step's index, and the id resolver."""

    answer: Any
    index: int
    refs: Refs

    @property
    def step(self):
        return self.answer.steps[self.index]

    @property
    def data(self) -> Mapping[str, Any]:
        return self.step.data

    def previous(self, kind: str):
        """The last step of ``kind`` before this one (None when there is none)."""
        return next((s for s in reversed(self.answer.steps[:self.index]) if s.kind == kind), None)


def error_html(data: Mapping[str, Any]) -> str:
    err = data.get("error")
    miss = " (cassette miss: no recorded reply)" if data.get("cache_miss") else ""
    return f'<p class="wb-fail"><b>error:</b> {clip(err, limit=600)}{esc(miss)}</p>' if err else ""


def diff_list(before: Sequence[str], after: Sequence[str], *, added_word: str = "added",
              removed_word: str = "dropped", none_word: str = "(empty)") -> tuple[str, int, int]:
    """``after`` as a list with the items new since ``before`` marked +, then those gone marked −;
    ``none_word`` when both are empty. Returns (HTML, added, removed)."""
    old, new = list(dict.fromkeys(before)), list(dict.fromkeys(after))
    added = [x for x in new if x not in old]
    gone = [x for x in old if x not in new]
    items = [f'<li class="{"wb-add" if x in added else "wb-keep"}" title="{added_word if x in added else "kept"}">'
             f"{esc(x)}</li>" for x in new]
    items += [f'<li class="wb-del" title="{removed_word}">{esc(x)}</li>' for x in gone]
    html = f'<ul class="wb-diff">{"".join(items)}</ul>' if items else f'<p class="wb-muted">{esc(none_word)}</p>'
    return html, len(added), len(gone)


# -- MemR3 -----------------------------------------------------------------------------------------------
def step_cause(data: Mapping[str, Any]) -> str:
    """A router step's cause (``router_cause``); traces written before guards were named recorded
    ``forced: true`` with the guard in ``forced_by``."""
    by = data.get("forced_by") or data.get("guard")
    if data.get("forced") is True and isinstance(by, str) and by:
        return by
    return router_cause(data)


def cause_meaning(cause: str) -> tuple[str, str]:
    """(short label, what it means) of a router cause, as plain text: a guard this module does not know is named
    as the trace wrote it, so both are run data to escape where they become HTML."""
    return CAUSES.get(cause, (cause, f"forced by the guard “{cause}”"))


def cause_badge(data: Mapping[str, Any]) -> str:
    """The router step's cause as a coloured badge (choice / budget / streak / empty / ...)."""
    cause = step_cause(data)
    label, meaning = cause_meaning(cause)
    cls = "wb-cause-choice" if cause == "choice" else "wb-cause-fallback" if cause == "fallback" else "wb-cause-forced"
    return f'<span class="wb-cause {cls}" title="{esc(meaning)}">{esc(label)}</span>'


def _change(n: int, word: str) -> str:
    """``2 added`` / ``1 closed``; a zero in words (``none dropped``). No signs: "+1 added, none kept" read as
    arithmetic (usability review); the lists below mark what was added and what was removed."""
    return f"{n} {word}" if n else f"none {word}"


def evidence_gaps_card(c: Ctx) -> str:
    d = c.data
    prev = c.previous("router")
    before_ev = [str(x) for x in _list(prev.data.get("evidence"))] if prev else []
    before_gaps = open_gaps(prev.data.get("gaps"))[0] if prev else []
    after_gaps, placeholders = open_gaps(d.get("gaps"))  # a copied "No gaps noted." is no gap opened or closed
    ev, n_add, n_drop = diff_list(before_ev, [str(x) for x in _list(d.get("evidence"))])
    said = None if after_gaps or d.get("error") else gap_in_reasoning(d.get("reasoning"))
    gaps, n_open, n_close = diff_list(before_gaps, after_gaps, added_word="opened", removed_word="closed",
                                      none_word="none listed" if said else "none listed (the router wrote no gap)")
    if said:  # the model named a gap in prose and left its list empty: the list alone would say "no gap"
        gaps += (f'<p class="wb-muted">no gap in its list, yet its reasoning names one: “{clip(said, limit=300)}”'
                 "</p>")
    if placeholders:
        gaps += (f'<p class="wb-muted">{placeholders} {"entry only says" if placeholders == 1 else "entries only say"} '
                 "there is no gap (e.g. the prompt's own “No gaps noted.” copied back): not counted as gaps</p>")
    cause = step_cause(d)
    action = _txt(d.get("action")) or "?"
    why = esc(cause_meaning(cause)[1])  # an unknown guard's meaning quotes its name: run data
    proposed = _txt(d.get("proposed"))
    if proposed and proposed != action:
        why += f"; the model had proposed “{esc(proposed)}”"
    if d.get("fallback") and cause != "fallback":
        why += f"; its reply was unusable too ({esc(_txt(d.get('fallback')))})"
    kept = len(_list(d.get("evidence"))) - n_add
    head = what(f"Iteration {esc(d.get('iteration', '?'))}: action <b>{esc(action)}</b> {cause_badge(d)} — "
                f"{why}. Evidence: {_change(n_add, 'added')}, {_change(kept, 'kept')}, "
                f"{_change(n_drop, 'dropped')}. Gaps: {_change(n_open, 'opened')}, {_change(n_close, 'closed')}.")
    query = esc(d.get("delta_query")) if d.get("delta_query") else ""
    if query and d.get("delta_source"):
        query += f' <small class="wb-muted">(from {esc(d.get("delta_source"))})</small>'
    extra = rows([("next retrieval query", query), ("reasoning kept for the next call", clip(d.get("reasoning"))),
                  ("draft answer", clip(d.get("draft_answer"))),
                  ("snippets it read", c.refs.ref_list(d.get("retrieved_ids")) if d.get("retrieved_ids") else "")])
    return (head + decision_line(c) + error_html(d)
            + f"<h5>Evidence (after this step)</h5>{ev}<h5>Gaps (after this step)</h5>{gaps}"
            + extra)


def gap_retrieve_card(c: Ctx) -> str:
    d = c.data
    ids = _list(d.get("retrieved_ids"))
    delta = f" + “{esc(d.get('delta_query'))}”" if d.get("delta_query") else ""
    more = " The backend has nothing unseen left." if d.get("backend_exhausted") else ""
    head = what(f"Retrieved {counted(len(ids), 'new snippet')} for “{esc(d.get('query'))}”"
                f"{delta}, skipping {len(_list(d.get('masked_ids')))} already seen.{more}")
    dropped = _list(d.get("dropped_ids"))
    return head + error_html(d) + rows([("dropped (already seen)", c.refs.ref_list(dropped) if dropped else "")])


def reflect_note_card(c: Ctx) -> str:
    d = c.data
    reasoning = _txt(d.get("reasoning"))
    return what(f"Reflect, no retrieval: the router's reasoning is kept for its next call "
                f"(reflect streak {esc(d.get('reflect_streak', '?'))}).") + rows(
        [("reasoning", clip(reasoning) if reasoning else '<span class="wb-muted">(the router gave none)</span>')])


def draft_answer_card(c: Ctx) -> str:
    d = c.data
    fb = f" Fallback: {esc(d.get('fallback'))}." if d.get("fallback") else ""
    ev = "".join(f"<li>{esc(x)}</li>" for x in _list(d.get("evidence"))) or '<li class="wb-muted">(none)</li>'
    gaps = "".join(f"<li>{esc(x)}</li>" for x in open_gaps(d.get("gaps"))[0])
    return (what(f"Final answer written from the question, the draft and the evidence list only (no raw "
                 f"snippets).{fb}") + error_html(d)
            + rows([("answer", clip(d.get("answer"))), ("draft it started from", clip(d.get("draft_answer")))])
            + f"<h5>Evidence it read</h5><ul>{ev}</ul>" + (f"<h5>Gaps still open</h5><ul>{gaps}</ul>" if gaps else ""))


# -- whether a step's decision was right (``workbench.eval.decisions``) ------------------------------------------
def decision_html(found: Decision) -> str:
    """The line under a card's summary: a view that shows a mechanism firing says whether it fired right (the
    checker's kind of error on hover)."""
    colour, mark = ("#237032", "✓") if found.fitting else ("#c92a2a", "✗")
    tip = f' title="{esc(kind_words(found.kind))}"' if found.kind else ""
    return (f'<p class="wb-decision"{tip}><b style="color:{colour}">{mark} {esc(found.verdict)}</b>: '
            f'{esc(found.because)} <small class="wb-muted">({esc(found.basis)})</small></p>')


def step_context(c: Ctx) -> StepContext:
    """What ``workbench.eval.decisions`` reads of the step: its data, the question, and the units retrieved
    before it with their source turns."""
    seen = [(h.unit_id, tuple(h.source_ids)) for s in c.answer.steps[:c.index] for h in s.hits]
    return StepContext(c.data, c.refs.qa, c.refs.conversation, tuple(seen), c.refs.gold)


def step_decision(c: Ctx) -> Decision | Unchecked | None:
    """Whether the step's decision was right (``decisions.decide``, by the card kind its method declares: the
    census's rule, so a view and the census never disagree on a step); ``Unchecked`` with why where it cannot be
    checked; None where the step decides nothing checkable."""
    return decide(declared_cards(c.answer.method).get(c.step.kind, ""), step_context(c))


def decision_line(c: Ctx) -> str:
    """The decision's line; a decision that cannot be checked says why in grey (a failed call whose fallback
    stood in, an empty answer), except where no question was given to check against."""
    found = step_decision(c)
    if isinstance(found, Unchecked):
        return ("" if found.why == "no question given" else
                f'<p class="wb-decision wb-muted">not checkable against the gold: {esc(found.why)}</p>')
    return decision_html(found) if found is not None else ""


# -- HyMem -----------------------------------------------------------------------------------------------
def _finished_text(v, error=None) -> str:
    """The light module's finished flag in words: 2 is the model asking for the deep module, or, with an error
    recorded, an unreadable reply counted as that (the card said "unreadable reply" for every 2 before)."""
    if v == 2 and error:
        return "2 — unreadable reply, counted insufficient"
    if v == 1 and error:
        return "1 — unreadable reply, counted answered (empty)"
    return {0: "0 — sufficient: the light answer stands for this round", 1: "1 — answered",
            2: "2 — insufficient: asks for the deep module"}.get(v, _txt(v))


def _round(v) -> str:
    """A 0-based round as people count it ("1" for round 0), as HTML; a value that is no whole number (a trace
    written by another tool) is shown as written, escaped, rather than failing the whole card."""
    if v is None:
        v = 0
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return esc(v)
    try:
        return str(int(v) + 1)
    except (TypeError, ValueError, OverflowError):
        return esc(v)


def light_tier_card(c: Ctx) -> str:
    d = c.data
    nxt = "escalates to the deep module" if d.get("escalate") else (
        "no deep module needed" if d.get("finished") == 0 else "no deep module: keeps this answer")
    flag = _finished_text(d.get("finished"), d.get("error"))
    return (what(f"Light module, round {_round(d.get('round'))}: cosine top-{len(_list(d.get('retrieved')))} for "
                 f"“{esc(d.get('query'))}”, finished flag {esc(flag)} → {esc(nxt)}.")
            + decision_line(c) + error_html(d)
            + rows([("light answer", clip(d.get("answer")) or '<span class="wb-muted">(empty)</span>'),
                    ("finished flag", esc(flag))]))


def deep_tier_card(c: Ctx) -> str:
    d = c.data
    cands, sel = _list(d.get("candidates")), _list(d.get("selected"))
    ctx_ids = _list(d.get("context_ids"))
    fb = " The selector chose nothing, so the best candidates stood in." if d.get("fallback") else ""
    head = what(f"Deep module: {len(cands)} candidates → {len(sel)} selected by the LLM → "
                f"{len(ctx_ids)} events read by the generator.{fb}")
    scores = dict(zip(map(str, cands), _list(d.get("candidate_scores"))))
    cand_rows = "".join(
        f'<tr class="{"wb-gold" if c.refs.is_gold(str(u)) else ""}">'
        f'<td class="wb-num">{_score(scores.get(str(u)))}</td>'
        f'<td style="white-space:nowrap">{"✔ selected" if u in sel else ""}</td>'
        f'<td>{c.refs.ref(u)}</td></tr>' for u in cands[:MAX_ROWS])
    more = f'<p class="wb-muted">… and {len(cands) - MAX_ROWS} more candidates</p>' if len(cands) > MAX_ROWS else ""
    table = f"<table><tr><th>score</th><th>LLM</th><th>candidate</th></tr>{cand_rows}</table>{more}"
    dropped = _list(d.get("dropped"))
    return (head + error_html(d) + f"<h5>Candidates → selected</h5>{table}"
            + f"<h5>Events read by the generator</h5>{c.refs.ref_list(ctx_ids)}"
            + rows([("dropped over the cap", c.refs.ref_list(dropped) if dropped else ""),
                    ("deep answer", clip(d.get("answer")))]))


def _score(v) -> str:
    try:
        return f"{float(v):.3f}"
    except (TypeError, ValueError):
        return ""


def sufficiency_card(c: Ctx) -> str:
    d = c.data
    light = c.previous("light")
    asked = _txt(light.data.get("query")) if light else ""
    if d.get("done"):
        text = "Reflection: the answer is complete, the loop stops."
    elif d.get("reused_original"):
        text = "Reflection: not complete, but no rewrite was given, so the original question is searched again."
    else:
        text = "Reflection: not complete; the question is rewritten for the next round."
    rewrite = ""
    if d.get("new_query") and not d.get("done"):
        new = esc(d.get("new_query"))
        rewrite = (f"{esc(asked)}<span class='wb-arrow'>→</span><b>{new}</b>" if asked and asked != d.get("new_query")
                   else f"{new} <small class='wb-muted'>(unchanged)</small>")
    flag = {1: "1 — the answer is complete", 0: "0 — not complete"}.get(d.get("finished"), _txt(d.get("finished")))
    return (what(esc(text)) + decision_line(c) + error_html(d)
            + rows([("answer judged", clip(d.get("answer"))), ("finished flag", esc(flag)), ("rewrite", rewrite)]))


def tier_final_card(c: Ctx) -> str:
    d = c.data
    limit = " The round limit was hit before reflection said done." if d.get("round_limit_hit") else ""
    pool = [p for p in _list(d.get("memory_pool")) if isinstance(p, Mapping)]
    body = "".join(f"<tr><td>{_round(p.get('round'))}</td><td>{esc(p.get('tier'))}</td>"
                   f"<td>{esc(p.get('query'))}</td>"
                   f"<td>{clip(p.get('answer'), limit=300)}</td></tr>" for p in pool)
    table = (f"<h5>Every round's answer (memory pool)</h5><table><tr><th>round</th><th>tier</th><th>query</th>"
             f"<th>answer</th></tr>{body}</table>") if body else ""
    return (what(f"Returned the {esc(d.get('tier'))} answer of round {_round(d.get('round'))} of "
                 f"{esc(d.get('rounds'))}.{limit}") + rows([("answer", clip(d.get("answer")))]) + table)


# -- AMA ---------------------------------------------------------------------------------------------------
def routed_retrieve_card(c: Ctx) -> str:
    d = c.data
    intent = d.get("intent") if isinstance(d.get("intent"), Mapping) else {}
    bits = " ".join(badge(k) for k, v in intent.items() if v) or '<span class="wb-muted">(no bit set)</span>'
    routed, store = _txt(d.get("routed")), _txt(d.get("store"))
    route = f"<b>{esc(store)}</b> store" + (f" (routed to {esc(routed)}, which is empty or off: fell back)"
                                             if d.get("fallback") else "")
    llm = (f"; the LLM's own pick was {esc(d.get('llm_memory_type'))}" if d.get("disagrees") else "")
    head = what(f"Rewrote the query, read its intent, routed it to the {esc(store)} store and took top-"
                f"{esc(d.get('K'))} (K = max(K_dyn {esc(d.get('K_dyn'))}, K_m)).")
    rewrite = (f"{esc(d.get('query'))}<span class='wb-arrow'>→</span><b>{esc(d.get('rewrite'))}</b>"
               if d.get("rewrite") != d.get("query") else f"{esc(d.get('rewrite'))} <small class='wb-muted'>(unchanged)"
                                                             "</small>")
    return head + error_html(d) + rows([("rewritten query", rewrite), ("intent bits", bits), ("route", route + llm),
                                        ("K", f"{esc(d.get('K'))} (K_dyn from the LLM: {esc(d.get('K_dyn'))})")])


def verdict_card(c: Ctx) -> str:
    d = c.data
    conflicts = [x for x in _list(d.get("conflict_set")) if isinstance(x, Mapping)]
    relevant = _list(d.get("relevant_ids"))
    head = what(f"Judge, round {esc(d.get('round'))}: verdict <b>{esc(d.get('verdict'))}</b> over "
                f"{esc(d.get('n_candidates', '?'))} candidates → {esc(d.get('next', ''))}.")
    return head + decision_line(c) + error_html(d) + rows([
        ("reason", clip(d.get("reason"))), ("confidence", esc(d.get("confidence"))),
        ("relevant", c.refs.ref_list(relevant) if relevant else '<span class="wb-muted">(none named: all kept)</span>'),
        ("conflicting entries", _briefs(conflicts, c.refs) if conflicts else "")])


def _briefs(items: Sequence[Mapping], refs: Refs) -> str:
    body = "".join(f"<li><b>{esc(x.get('id'))}</b> ({esc(x.get('kind'))}, "
                   f"said {esc(x.get('said_at') or x.get('time'))})"
                   f": “{esc(short(x.get('text'), 200))}”</li>" for x in items[:MAX_ROWS])
    return f'<ul class="wb-reflist">{body}</ul>'


def refresh_edits_card(c: Ctx) -> str:
    d = c.data
    conflicts = [x for x in _list(d.get("conflict_set")) if isinstance(x, Mapping)]
    updated, deleted = _list(d.get("updated")), _list(d.get("deleted"))
    why = f" ({esc(d.get('why'))})" if d.get("why") else ""
    head = what(f"Refresher: action <b>{esc(d.get('action'))}</b>{why} on {len(conflicts)} conflicting entries — "
                f"{len(updated)} updated, {len(deleted)} deleted.")
    return head + error_html(d) + rows([
        ("reason", clip(d.get("reason"))), ("conflicting entries", _briefs(conflicts, c.refs) if conflicts else ""),
        ("updated", c.refs.ref_list(_ids(updated)) if updated else ""),
        ("deleted", c.refs.ref_list(_ids(deleted)) if deleted else ""),
        ("declined", esc(d.get("declined")) if d.get("declined") else "")])


def _ids(items) -> list[str]:
    return [str(x.get("id")) if isinstance(x, Mapping) else str(x) for x in items]


def retry_expand_card(c: Ctx) -> str:
    d = c.data
    rel, via = _list(d.get("via_relations")), _list(d.get("via_store"))
    store = f", {len(via)} from the {esc(d.get('next_store'))} store" if d.get("next_store") else ""
    return (what(f"Retry round {esc(d.get('round'))}: widened retrieval by {len(rel)} related units{store}.")
            + rows([("via relations", c.refs.ref_list(rel) if rel else ""),
                    ("via the next store", c.refs.ref_list(via) if via else "")]))


# -- H-Mem -------------------------------------------------------------------------------------------------
def subquery_plan_card(c: Ctx) -> str:
    d = c.data
    subs = [s for s in _list(d.get("subqueries")) if isinstance(s, Mapping)]
    body = "".join(
        f"<tr><td>{esc(s.get('id'))}</td><td>{esc(s.get('query'))}</td><td>{badge(_txt(s.get('scope')))}</td>"
        f"<td>{esc(_interval(s.get('interval')))}</td><td>{esc(', '.join(map(str, _list(s.get('depends_on')))))}</td>"
        f"<td>{esc(', '.join(map(str, _list(s.get('entities')))))}</td></tr>" for s in subs)
    fb = f" {esc(d.get('fallback'))}." if d.get("fallback") else ""
    return (what(f"Planned {counted(len(subs), 'sub-query', 'sub-queries')}, answered in the order "
                 f"{esc(', '.join(map(str, _list(d.get('order')))))} (scope policy: {esc(d.get('scope_policy'))}).{fb}")
            + error_html(d) + "<table><tr><th>#</th><th>sub-query</th><th>scope</th><th>time window</th>"
            f"<th>depends on</th><th>entities</th></tr>{body}</table>")


def _interval(v) -> str:
    v = _list(v)
    return f"{str(v[0])[:10]} to {str(v[1])[:10]}" if len(v) == 2 and v[0] else ""


def scoped_retrieve_card(c: Ctx) -> str:
    d = c.data
    cands = [x for x in _list(d.get("candidates")) if isinstance(x, Mapping)]
    chain = set(map(str, _list(d.get("evidence_chain"))))
    seeds = ", ".join(f"{esc(s.get('name') or s.get('entity'))} <small class='wb-muted'>({esc(s.get('how'))})</small>"
                      for s in _list(d.get("seeds")) if isinstance(s, Mapping))
    head = what(f"Sub-query {esc(d.get('subquery'))} ({esc(d.get('scope'))}): {len(cands)} candidates scored "
                f"F from similarity S, time fit T and robustness R; the best {len(chain)} form the evidence chain.")
    body = "".join(
        f'<tr class="{"wb-gold" if c.refs.is_gold(str(x.get("id"))) else ""}">'
        f'<td>{"✔" if str(x.get("id")) in chain else ""}'
        f"</td>{''.join(f'<td class=wb-num>{_score(x.get(k))}</td>' for k in ('F', 'S', 'T', 'R'))}"
        f"<td>{esc(x.get('kind'))}</td><td>{c.refs.ref(x.get('id'))}</td>"
        f"<td><small>{esc(', '.join(map(str, _list(x.get('via')))))}</small></td></tr>" for x in cands[:MAX_ROWS])
    more = f'<p class="wb-muted">… and {len(cands) - MAX_ROWS} more candidates</p>' if len(cands) > MAX_ROWS else ""
    table = ("<h5>Per-hit scores</h5><table><tr><th>chain</th><th>F</th><th>S</th><th>T</th><th>R</th><th>kind</th>"
             f"<th>unit</th><th>reached via</th></tr>{body}</table>{more}")
    return head + rows([("query", esc(d.get("query"))), ("time window", esc(_interval(d.get("interval")))),
                        ("entity seeds", seeds)]) + table


def subanswer_card(c: Ctx) -> str:
    d = c.data
    prereq = d.get("prerequisites") if isinstance(d.get("prerequisites"), Mapping) else {}
    missing = " The reader says information is missing." if d.get("missing_info") else ""
    return (what(f"Answered sub-query {esc(d.get('subquery'))} from its evidence chain.{missing}") + error_html(d)
            + rows([("sub-query", esc(d.get("query"))), ("answer", clip(d.get("answer"))),
                    ("answers it built on", "; ".join(f"{esc(k)}: {esc(v)}" for k, v in prereq.items()))]))


def followup_card(c: Ctx) -> str:
    d = c.data
    skipped = f" Skipped: {esc(d.get('skipped'))}." if d.get("skipped") else ""
    return what(f"Asked for a query for the missing information of sub-query {esc(d.get('subquery'))}.{skipped}") + \
        error_html(d) + rows([("follow-up query", esc(d.get("query")))])


def synthesis_card(c: Ctx) -> str:
    d = c.data
    subs = [s for s in _list(d.get("sub_answers")) if isinstance(s, Mapping)]
    body = "".join(f"<tr><td>{esc(s.get('id'))}</td><td>{esc(s.get('query'))}</td>"
                   f"<td>{clip(s.get('answer'), limit=400)}"
                   f"</td></tr>" for s in subs)
    skipped = f" ({esc(d.get('skipped'))})" if d.get("skipped") else ""
    return (what(f"Combined {counted(len(subs), 'sub-answer')} into the answer{skipped}.")
            + error_html(d) + f"<table><tr><th>#</th><th>sub-query</th><th>answer</th></tr>{body}</table>"
            + rows([("answer", clip(d.get("answer")))]))


# -- RecMem ------------------------------------------------------------------------------------------------
TIER_NAMES = {"episode": "episodes", "fact": "semantic facts", "subconscious": "raw exchanges (subconscious)"}


def tiered_retrieve_card(c: Ctx) -> str:
    d = c.data
    layer = _txt(d.get("layer"))
    n = len(c.step.hits)
    return what(f"Tier used: <b>{esc(TIER_NAMES.get(layer, layer))}</b> — cosine top-{esc(d.get('k'))}, "
                f"{n} kept.") + rows([("query", clip(d.get("query")))])


def tier_answer_card(c: Ctx) -> str:
    d = c.data
    counts = d.get("counts") if isinstance(d.get("counts"), Mapping) else {}
    used = ", ".join(f"{esc(TIER_NAMES.get(k, k))}: {esc(v)}" for k, v in counts.items())
    return what(f"Answered from the tiers retrieved — {used or 'none'}.") + error_html(d) + rows(
        [("answer", clip(d.get("answer")))])


# -- any method --------------------------------------------------------------------------------------------
def retrieve_card(c: Ctx) -> str:
    d = c.data
    return what(f"Retrieved {counted(len(c.step.hits), 'unit')} for the query.") + \
        error_html(d) + rows([("query", clip(d.get("query")))] + _other(d, ("query",), c.refs))


def answer_card(c: Ctx) -> str:
    d = c.data
    return what("The reader's answer.") + error_html(d) + rows(
        [("answer", clip(d.get("answer")))] + _other(d, ("answer", "error"), c.refs))


def generic_card(c: Ctx) -> str:
    """Any other step: its data as labelled rows (lists of records as small tables, ids with their text)."""
    d = c.data
    if not d:
        return what("This step recorded no data.")
    return error_html(d) + rows(_other(d, ("error", "cache_miss") if d.get("error") else (), c.refs))


def _other(d: Mapping[str, Any], skip: Sequence[str], refs: Refs) -> list[tuple[str, str]]:
    return [(k.replace("_", " "), readable(v, refs)) for k, v in d.items()
            if k not in skip and v not in (None, "", [], {})]


#: the card kinds: a small vocabulary of step summaries, each reading the fields its kind defines from a step's
#: data. A method declares which kind summarises each of its step kinds (``MemoryMethod.step_cards``).
CARD_KINDS: dict[str, Callable[[Ctx], str]] = {
    "evidence_gaps": evidence_gaps_card, "gap_retrieve": gap_retrieve_card, "reflect_note": reflect_note_card,
    "draft_answer": draft_answer_card, "light_tier": light_tier_card, "deep_tier": deep_tier_card,
    "sufficiency": sufficiency_card, "tier_final": tier_final_card, "routed_retrieve": routed_retrieve_card,
    "verdict": verdict_card, "refresh_edits": refresh_edits_card, "retry_expand": retry_expand_card,
    "subquery_plan": subquery_plan_card, "scoped_retrieve": scoped_retrieve_card, "subanswer": subanswer_card,
    "followup": followup_card, "synthesis": synthesis_card, "tiered_retrieve": tiered_retrieve_card,
    "tier_answer": tier_answer_card, "retrieve": retrieve_card, "answer": answer_card, "generic": generic_card,
}
#: the card kind a step kind gets when its method declares none (a method this installation lacks included)
BY_STEP_KIND: dict[str, str] = {
    "router": "evidence_gaps", "light": "light_tier", "deep": "deep_tier", "final": "tier_final",
    "plan": "subquery_plan", "subanswer": "subanswer", "synthesize": "synthesis", "judge": "verdict",
    "expand": "retry_expand", "retrieve": "retrieve", "answer": "answer",
}


def card_kind_of(method: str, kind: str) -> str:
    """The card kind of step ``kind`` for ``method`` (a label such as ``memr3[ab12cd]`` counts as its method): the
    one the method declares for it, else the one its step kind gets by default, else ``generic``."""
    declared = declared_cards(method).get(kind)
    return next((k for k in (declared, BY_STEP_KIND.get(kind)) if k in CARD_KINDS), "generic")


def card_for(method: str, kind: str) -> Callable[[Ctx], str]:
    """The card of step ``kind`` for ``method`` (``card_kind_of``)."""
    return CARD_KINDS[card_kind_of(method, kind)]


def card_html(c: Ctx) -> str:
    """The step's card (its own renderer, else the generic one) followed by the units it retrieved."""
    s = c.step
    body = card_for(c.answer.method, s.kind)(c)
    if s.hits:
        body += (f"<h5>Retrieved in this step ({len(s.hits)})</h5>"
                 + hits_html(s.hits, conversation=_Conv(c.refs.turns), gold_evidence=c.refs.gold))
    return f'<div class="wb-tc">{body}</div>'


class _Conv:
    """The ``conversation`` ``hits_html`` wants: only its turns are read."""

    def __init__(self, turns: Mapping[str, Any]):
        self.turns = list(turns.values())
