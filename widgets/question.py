"""The Question view: one question, every method's answer, and exactly what each method's reader saw.

A teacher or researcher picks a question and sees its gold answer and gold evidence turns, then one
row per method: the answer (marked when it is a fallback written after failed LLM calls rather than
a reply of the method's reader), its verdict (right / wrong, from the source every view uses: a judge whose
audit on labelled real answers passes, else the deterministic checker, with the rule that decided on hover),
the judge's label beside token F1 with a flag when the two flatly disagree and a note when the judge is not
trusted, the failure attribution, the rank at which gold
evidence appeared in what the method put in front of its final reader (or "missed"), turns shown,
query tokens and steps. Each row expands to the units the reader saw, gold turns highlighted.

Everything is read from the saved result rows (``QuestionResult`` dicts with their ``answer``
trace); no method is re-run. The rank comes from the recorded ``Answer.context`` (the trace
convention: exactly the units in front of the final reader), the same provenance the harness's
evidence recall is computed on (``workbench.eval.metrics``), so "missed" here and recall 0 there
always agree.

State and rendering live here, once: ``question_state`` (pure data) and ``question_html`` (an
escaped HTML string). The app's Question tab (``widgets.tabs.question``) and ``QuestionView``
(``widgets.question_notebook``, the notebook shell, ipywidgets imported only when it is built) just bind their
widgets to them.

    state = question_state(rows, "sample-1/q4", conversation=conv, audits=audits)
    html = question_html(state, selected="naive_rag")      # that row highlighted and expanded
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from workbench.eval.attribution import Attribution, attribute
from workbench.words import counted
from workbench.eval.audit import is_reliable, reliability_note
from workbench.methods import display_name
from workbench.trace import ANSWER_WRITER_KINDS, Answer, Hit

from .html import box, clip, esc, export_head, link_html, short, source_ids_html, table_html
from .readability import (LOOP_TIMES, fact_flags_html, method_prompts, repeated_sentence,  # noqa: F401 - re-exported
                          unreadable_marks)

#: failure kinds (``harness.question_failures``) after which the answer is not the reader's own reply
FALLBACK_KINDS = ("llm_error", "fallback", "step_error", "answer_error", "empty_answer")
#: what each attribution label means, for the row's tooltip and the legend
ATTRIBUTION_HELP = {
    "correct": "right by the correctness rule",
    "retrieval_miss": "wrong, and no gold evidence turn was in front of the reader",
    "reading_miss": "wrong although gold evidence was in front of the reader",
    "abstained": "said the information is missing, on a question that has an answer",
    "judge_disagrees": "the trusted judge and F1 flatly disagree: correctness in doubt",
    "unattributed": "wrong, but the question has no gold evidence ids",
    "ungraded": "no trusted judge label and no checker verdict: correctness undecided",
    "failed": "the method raised instead of answering",
}
#: each attribution label as the Question view says it (its help on hover, the label itself in the results files)
ATTRIBUTION_WORDS = {"correct": "right", "retrieval_miss": "not retrieved", "reading_miss": "shown, misread",
                     "abstained": "abstained", "judge_disagrees": "judge vs F1", "unattributed": "no gold turns",
                     "ungraded": "undecided", "failed": "failed"}
CSS = """<style>
.wb-qv td.wb-num {text-align: right; white-space: nowrap;}
.wb-qv tr.wb-selected > td {background: #e7f0ff;}
.wb-qv tr.wb-ctx > td {border-top: none; padding: 0 6px 4px 24px;}
.wb-qv .wb-flag {display: inline-block; padding: 0 5px; border-radius: 6px; background: #ffe066; font-weight: 600;
  margin: 1px 2px 1px 0; white-space: nowrap;}
.wb-qv .wb-fail {display: inline-block; padding: 0 5px; border-radius: 6px; background: #ffc9c9; color: #8a0000;
  font-weight: 600; margin: 1px 2px 1px 0;}
.wb-qv .wb-untrusted {color: #a61e4d; font-size: 11px; white-space: nowrap;}
.wb-qv .wb-missed {color: #c92a2a; font-weight: 600;}
.wb-qv tr.wb-has-gold > td {background: #fff9db;}
.wb-qv mark.wb-gold {background: #ffd43b; padding: 0 1px;}
.wb-qv .wb-note {padding: 4px 6px; border: 1px solid #f08c00; background: #fff4e6; margin: 4px 0;}
.wb-qv .wb-ctxbox {max-height: 420px; overflow: auto;}
.wb-qv .wb-right {color: #237032; font-weight: 700;}
.wb-qv .wb-wrong {color: #c92a2a; font-weight: 700;}
</style>"""


# -- state -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FailureNote:
    """What went wrong while a method built its memory or answered this question (from the row's
    ``failures`` and ``error``). ``fallback``: the shown answer is not a reply of the method's reader
    (an LLM call failed, a step fell back, or the method raised), so it must not be read as one."""

    fallback: bool = False
    text: str = ""  # one line for the answer cell ("" when nothing went wrong while answering)
    minor: str = ""  # repairs and construction problems that did not replace the answer
    cassette_miss: bool = False


@dataclass(frozen=True)
class MethodRow:
    """One method's answer to the question, with what its reader saw."""

    method: str
    answer_text: str
    judge_label: str  # "" when the row was not judged
    judge_error: str
    judge_trusted: bool
    judge_note: str  # the audit's one-sentence verdict on this judge
    f1: float | None
    disagree: bool  # judge CORRECT with F1 = 0, or WRONG with F1 = 1
    attribution: Attribution
    ranks: Mapping[str, int | None] | None  # gold turn -> 1-based rank in the context; None: no trace saved
    context: tuple[Hit, ...]
    turns_shown: int | None
    query_tokens: int
    steps: int | None
    failure: FailureNote
    row: Mapping[str, Any]

    @property
    def first_rank(self) -> int | None:
        """The best (smallest) rank of any gold turn; None when no gold turn was shown."""
        found = [r for r in (self.ranks or {}).values() if r is not None]
        return min(found) if found else None


@dataclass(frozen=True)
class QuestionState:
    """Everything the Question view shows for one question."""

    qa_id: str
    question: str
    gold: str
    category: str
    evidence: tuple[str, ...]
    evidence_turns: Mapping[str, Any]  # turn id -> Turn (those the conversation has)
    rows: tuple[MethodRow, ...]
    judge_notes: tuple[str, ...]  # one per judge that judged these rows, untrusted first
    evidence_dates: Mapping[str, str] = None  # turn id -> its session's date and time (temporal questions)
    turn_text: Mapping[str, str] = None  # turn id -> what was said (every turn: a fact is read against its own)

    @property
    def methods(self) -> list[str]:
        return [r.method for r in self.rows]

    def row(self, method: str) -> MethodRow | None:
        return next((r for r in self.rows if r.method == method), None)


def gold_ranks(context: Sequence[Hit], evidence: Iterable[str]) -> dict[str, int | None]:
    """Per gold evidence turn, the 1-based position of the first unit of ``context`` whose
    provenance (``source_ids``) covers it; None when no unit does ("missed").

    ``context`` is ``Answer.context`` in its recorded order: for a retriever the ranking it showed
    its reader, for Full-Context the conversation order. A gold turn has a rank exactly when
    ``metrics.evidence_recall`` counts it as shown."""
    ranks: dict[str, int | None] = {g: None for g in dict.fromkeys(evidence)}
    for i, hit in enumerate(context, start=1):
        for s in hit.source_ids:
            if s in ranks and ranks[s] is None:
                ranks[s] = i
    return ranks


def _text(v) -> str:
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def _number(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f


def _is_miss(text: str) -> bool:
    return "CacheMiss" in text or "cassette miss" in text


def failure_note(row: Mapping[str, Any]) -> FailureNote:
    """Summarise a row's ``failures`` (``harness.question_failures`` / ``ingest_failures``) and ``error``."""
    failures = [f for f in (row.get("failures") or ()) if isinstance(f, Mapping)]
    answering = [f for f in failures if f.get("phase") == "answer"]
    details = " ".join(_text(f.get("error")) + " " + _text(f.get("detail")) for f in answering)
    miss = _is_miss(details) or _is_miss(_text(row.get("error")))
    why = " (cassette miss: no recorded reply)" if miss else ""
    error = _text(row.get("error"))
    minor = []
    retries = sum(1 for f in answering if f.get("kind") == "json_retry")
    empty = sum(1 for f in answering if f.get("kind") == "empty_reply")
    if retries:
        minor.append(counted(retries, "JSON repair call"))
    if empty:
        minor.append(counted(empty, "empty reply", "empty replies"))
    for f in failures:
        if f.get("phase") == "ingest":
            by = f.get("by_stage") or {}
            stages = (f"at {', '.join(map(str, by))}" if all(v == 1 for v in by.values()) else
                      ", ".join(f"{k} ×{v}" for k, v in by.items()))
            count = int(f.get("method_failures") or 0) + int(f.get("llm_errors") or 0)
            minor.append(f"memory built with {counted(count, 'failure')}"
                         + (f" ({stages})" if stages else ""))
    if error:
        return FailureNote(True, f"the method failed: {error[:200]}{why}", "; ".join(minor), miss)
    severe = [f for f in answering if f.get("kind") in FALLBACK_KINDS]
    if not severe:
        return FailureNote(False, "", "; ".join(minor), miss)
    calls = sum(1 for f in severe if f.get("kind") == "llm_error")
    steps = len({f.get("step") for f in severe if f.get("kind") in ("fallback", "step_error")})
    parts = ([f"{counted(calls, 'LLM call')} failed"] if calls else []) + \
            ([f"{counted(steps, 'step')} fell back"] if steps else []) + \
            (["empty answer"] if any(f.get("kind") == "empty_answer" for f in severe) else [])
    if not _writer_fell_back(row, severe):
        # e.g. MemR3's router reply was unusable and a default action stood in, but the answer
        # step itself is the reader's reply: say what fell back, do not disown the answer.
        minor.insert(0, f"{', '.join(parts)} before the answer; the answer itself is the reader's reply{why}")
        return FailureNote(False, "", "; ".join(minor), miss)
    return FailureNote(True, f"fallback answer, not the reader's reply: {', '.join(parts)}{why}",
                       "; ".join(minor), miss)


def _writer_fell_back(row: Mapping[str, Any], severe: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the step that wrote the answer (or the answer as a whole) failed, as opposed to an
    earlier step such as a router decision. Without a readable trace, any failure counts."""
    if any(f.get("kind") in ("answer_error", "empty_answer") for f in severe):
        return True
    steps = (row.get("answer") or {}).get("steps") if isinstance(row.get("answer"), Mapping) else None
    if not isinstance(steps, list) or not steps:
        return True
    kinds = [s.get("kind") if isinstance(s, Mapping) else None for s in steps]
    writers = {i for i, k in enumerate(kinds) if k in ANSWER_WRITER_KINDS}
    if not writers:
        return True
    for f in severe:
        if f.get("kind") in ("fallback", "step_error") and f.get("step") in writers:
            return True
        if f.get("kind") == "llm_error" and not _step_role(f.get("role")):
            return True  # a failed call we cannot place: do not vouch for the answer
    return False


def _step_role(role: Any) -> bool:
    """A failed call's role that names a step other than the answer writer (router, planner...)."""
    r = _text(role)
    return bool(r) and not any(w in r.rsplit(".", 1)[-1] for w in ("answer", "final", "synth"))


def judge_trust(row: Mapping[str, Any], audits: Mapping[str, Any] | None) -> tuple[bool, str]:
    """(is the judge of this row trusted, the audit's note on it). A judge with no audit is not."""
    ident = row.get("judge_key") or row.get("judge_model")
    audit = (audits or {}).get(ident) if ident else None
    model = row.get("judge_model") or ident or "judge"
    return is_reliable(audit), f"{model}: {reliability_note(audit)}"


def method_row(row: Mapping[str, Any], *, evidence: Sequence[str] | None = None,
               audits: Mapping[str, Any] | None = None, label: str | None = None) -> MethodRow:
    """One result row as a ``MethodRow`` (rank, attribution and flags computed from the row alone).
    ``evidence``: the question's gold turn ids; None when unknown (no conversation), then no rank
    is given and attribution falls back to the row's stored evidence recall."""
    ans = Answer.from_dict(row["answer"]) if isinstance(row.get("answer"), Mapping) else None
    trusted, note = judge_trust(row, audits)
    judged = bool(_text(row.get("judge_label")) or _text(row.get("judge_error")))
    # With the gold ids, attribution reads "gold shown" off the recorded context, as the rank does.
    attr = attribute(row, evidence=evidence if ans is not None else None, judge_trusted=trusted)
    ranks = gold_ranks(ans.context, evidence) if ans is not None and evidence is not None else None
    scores = row.get("scores") or {}
    context = ans.context if ans is not None else ()
    shown = len({s for h in context for s in h.source_ids}) if ans is not None else _number(row.get("turns_shown"))
    return MethodRow(
        method=label or str(row.get("method", "?")), answer_text=_text(row.get("prediction")),
        judge_label=_text(row.get("judge_label")), judge_error=_text(row.get("judge_error")),
        judge_trusted=trusted, judge_note=note if judged else "",
        f1=_number(scores.get("f1") if isinstance(scores, Mapping) else None), disagree=attr.judge_f1_conflict,
        attribution=attr, ranks=ranks, context=context,
        turns_shown=None if shown is None else int(shown), query_tokens=int(_number(row.get("query_tokens")) or 0),
        steps=len(ans.steps) if ans is not None else None, failure=failure_note(row), row=row)


def _labels(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """``method``, or ``method[params hash]`` when a method answered with several configurations."""
    hashes: dict[str, set] = {}
    for r in rows:
        hashes.setdefault(str(r.get("method", "?")), set()).add(str(r.get("params_hash", "")))
    return [f"{r.get('method', '?')}[{str(r.get('params_hash', ''))[:6]}]" if len(hashes[str(r.get("method", "?"))]) > 1
            else str(r.get("method", "?")) for r in rows]


def question_state(rows: Iterable[Mapping[str, Any]], qa_id: str, *, conversation=None,
                   audits: Mapping[str, Any] | None = None) -> QuestionState:
    """The view's state for ``qa_id``: its gold (from the conversation's QA when given, else the
    rows) and one ``MethodRow`` per result row of that question, in run order."""
    mine = [r for r in rows if r.get("qa_id") == qa_id]
    qa = next((q for q in conversation.qa if q.id == qa_id), None) if conversation is not None else None
    evidence = tuple(qa.evidence) if qa is not None else None
    turns = {t.id: t for t in conversation.turns} if conversation is not None else {}
    first = mine[0] if mine else {}
    method_rows = tuple(method_row(r, evidence=evidence, audits=audits, label=label)
                        for r, label in zip(mine, _labels(mine)))
    notes: dict[str, bool] = {}
    for m in method_rows:
        if m.judge_note:
            notes.setdefault(m.judge_note, m.judge_trusted)
    return QuestionState(
        qa_id=qa_id, question=qa.question if qa is not None else _text(first.get("question")),
        gold=qa.answer if qa is not None else _text(first.get("gold")),
        category=_text(first.get("category_name")) or (_text(qa.category) if qa is not None else ""),
        evidence=evidence or (), evidence_turns={e: turns[e] for e in evidence or () if e in turns},
        rows=method_rows,
        judge_notes=tuple(sorted(notes, key=lambda n: notes[n])),
        evidence_dates={e: conversation.session_of(e).date_text for e in evidence or () if e in turns},
        turn_text={i: t.text for i, t in turns.items()})


def question_options(rows: Iterable[Mapping[str, Any]], conv_id: str | None = None) -> dict[str, str]:
    """``label -> qa_id`` of the answered questions (of ``conv_id`` when given), in run order; the
    label carries the category so a knowledge-update or temporal question can be found."""
    out: dict[str, str] = {}
    for r in rows:
        qid = r.get("qa_id")
        if not qid or qid in out.values() or (conv_id is not None and r.get("conv_id") != conv_id):
            continue
        cat = _text(r.get("category_name"))
        out[f"{qid}{f' [{cat}]' if cat else ''}: {_text(r.get('question'))[:90]}"] = qid
    return out


# -- rendering ---------------------------------------------------------------------------------------------
def rank_text(m: MethodRow) -> str:
    """Plain text of the gold-evidence rank cell."""
    if m.steps is None:
        return "no trace saved"
    if m.ranks is None:
        return "gold evidence unknown"
    if not m.ranks:
        return "no gold evidence ids"
    of = f" of {len(m.context)}"
    if len(m.ranks) == 1:
        r = next(iter(m.ranks.values()))
        return "missed" if r is None else f"#{r}{of}"
    parts = [f"{g} {'missed' if r is None else f'#{r}'}" for g, r in m.ranks.items()]
    return " · ".join(parts) + of


def _rank_html(m: MethodRow) -> str:
    text = esc(rank_text(m))
    if m.ranks and m.first_rank is None:
        return f'<span class="wb-missed">{text}</span>'
    return text.replace("missed", '<span class="wb-missed">missed</span>')


def _judge_html(m: MethodRow) -> str:
    if m.judge_error:
        miss = " (cassette miss)" if _is_miss(m.judge_error) else ""
        return f'<span class="wb-fail" title="{esc(m.judge_error)}">judge failed{miss}</span>'
    if not m.judge_label:
        return '<span class="wb-muted" title="this question type is not judged">not judged</span>'
    out = esc(m.judge_label)
    if not m.judge_trusted:
        out += f'<br><span class="wb-untrusted" title="{esc(m.judge_note)}">untrusted judge</span>'
    return out


def _flags_html(m: MethodRow) -> str:
    flags = []
    if m.disagree:
        flags.append(f'<span class="wb-flag" title="judge {esc(m.judge_label)} but F1 = {m.f1:.2f}">'
                     "⚠ judge vs F1</span>")
    for flag, why in unreadable_marks(m.answer_text, _text(m.row.get("question"))):
        flags.append(f'<span class="wb-flag" title="{esc(why)}">⚠ {esc(flag)}</span>')
    return "<br>".join(flags)


def _answer_html(m: MethodRow) -> str:
    out = ""
    if m.failure.fallback:
        out += f'<span class="wb-fail" title="{esc(m.failure.text)}">⚠ {esc(m.failure.text)}</span><br>'
    out += clip(m.answer_text, limit=400) if m.answer_text else '<span class="wb-muted">(empty answer)</span>'
    if m.failure.minor:
        out += f'<br><small class="wb-muted">{esc(m.failure.minor)}</small>'
    return out


def _attribution_html(m: MethodRow) -> str:
    a = m.attribution
    title = f"{a.label}: " + ATTRIBUTION_HELP.get(a.label, "") + (f" — {a.reason}" if a.reason else "")
    basis = f"<br><small class='wb-muted'>by {esc(a.basis)}</small>" if a.basis not in ("none", "error") else ""
    return f'<span title="{esc(title)}">{esc(ATTRIBUTION_WORDS.get(a.label, a.label))}</span>{basis}'


def verdict_reason(m: MethodRow) -> str:
    """Why the row's verdict is what it is, in words: the rule of the source that decided it."""
    a = m.attribution
    if a.basis == "checker":
        check = m.row.get("check") if isinstance(m.row.get("check"), Mapping) else None
        if check and check.get("reason"):
            return f"checker ({_text(check.get('kind'))}): {_text(check.get('reason'))}"
        from workbench.eval.checker import check_answer

        c = check_answer(_text(m.row.get("question")), _text(m.row.get("gold")), m.answer_text)
        return f"checker ({c.kind}): {c.reason}"
    if a.basis == "judge":
        return f"trusted judge: {m.judge_label}"
    if a.basis == "abstention-question":
        return "a question built to have no answer: right iff the answer abstains"
    return a.reason or a.basis


def _verdict_html(m: MethodRow) -> str:
    correct = m.attribution.correct
    if correct is None:
        return '<span class="wb-muted" title="no verdict source applies to this question">–</span>'
    word, cls = ("right", "wb-right") if correct else ("wrong", "wb-wrong")
    return (f'<span class="{cls}" title="{esc(verdict_reason(m))}">{word}</span>'
            f"<br><small class='wb-muted'>{esc(verdict_basis(m))}</small>")


#: a checker kind as the Question view names it under a wrong verdict (PROTOCOL.md's kinds)
KIND_WORDS = {"wrong_date": "wrong date", "wrong_entity": "wrong name", "wrong_value": "wrong value",
              "vague": "vague", "abstain": "abstained", "partial": "partial", "unrelated": "unrelated",
              "contradicts": "contradicts", "failed": "failed"}


def kind_words(kind: str) -> str:
    """A checker kind as views write it ("wrong date"; an unlisted kind with spaces for underscores)."""
    return KIND_WORDS.get(kind, kind.replace("_", " "))


def verdict_basis(m: MethodRow) -> str:
    """What decided the verdict, under it: the source, and for a wrong answer by the checker the kind of error
    ("checker · wrong date"), so a temporal failure is visible without hovering."""
    basis = m.attribution.basis
    check = m.row.get("check") if isinstance(m.row.get("check"), Mapping) else None
    if basis == "checker" and m.attribution.correct is False and check and check.get("kind"):
        kind = _text(check.get("kind"))
        return f"checker · {kind_words(kind)}"
    return basis


def _f1_text(m: MethodRow) -> str:
    return "–" if m.f1 is None else f"{m.f1:.2f}"


COLUMNS = ["method", "answer", "verdict", "judge", "F1", "flags", "attribution", "gold evidence rank",
           "turns shown", "query tokens", "steps"]


def method_name_html(method: str, *, links: bool = False) -> str:
    """A method's title in bold (the run's name beside it in grey where they differ); with ``links`` (the app)
    followed by a link to its How it works page."""
    from widgets.html import link_html, method_title_html

    if not links:
        return f"<b>{method_title_html(method)}</b>"
    return f"<b>{method_title_html(method)}</b> " + link_html("how it works", "method", method,
                                                 title=f"what {method} does, its pipeline and its gallery example")


def _cells(m: MethodRow, *, links: bool = False) -> dict:
    return {"method": method_name_html(m.method, links=links), "answer": _answer_html(m), "verdict": _verdict_html(m),
            "judge": _judge_html(m),
            "F1": esc(_f1_text(m)), "flags": _flags_html(m), "attribution": _attribution_html(m),
            "gold evidence rank": _rank_html(m),
            "turns shown": esc("–" if m.turns_shown is None else m.turns_shown), "query tokens": esc(m.query_tokens),
            "steps": esc("–" if m.steps is None else m.steps)}


def highlight(text: str, needles: Iterable[str], *, limit: int = 1500) -> str:
    """``text`` escaped, with every occurrence of each non-empty needle wrapped in ``<mark class="wb-gold">``
    (the gold turns' words inside a unit's text); past ``limit`` characters the text is cut, unless a
    needle lies further on, in which case the cut keeps it."""
    needles = [n for n in dict.fromkeys(needles) if n and len(n) >= 3]
    spans = []
    for n in needles:
        start = text.find(n)
        while start >= 0:
            spans.append((start, start + len(n)))
            start = text.find(n, start + len(n))
    spans.sort()
    merged: list[list[int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    end = max(limit, merged[-1][1] if merged else 0)
    out, pos = [], 0
    for s, e in merged:
        out.append(esc(text[pos:s]) + f'<mark class="wb-gold">{esc(text[s:e])}</mark>')
        pos = e
    out.append(esc(text[pos:end]))
    if len(text) > end:
        out.append(f'<span class="wb-muted">… ({len(text) - end:,} more characters)</span>')
    return "".join(out)


def context_html(m: MethodRow, state: QuestionState) -> str:
    """The units in front of ``m``'s final reader, in order; units covering gold evidence shaded,
    the gold turns' text marked inside them (or quoted beneath when the unit rewrote it)."""
    if m.steps is None:
        return '<p class="wb-muted">No trace was saved for this answer (the run kept no answers).</p>'
    if not m.context:
        return '<p class="wb-muted">The reader saw no retrieved units for this question.</p>'
    gold = set(state.evidence)
    rows = []
    for rank, h in enumerate(m.context, start=1):
        covered = [s for s in h.source_ids if s in gold]
        needles = [state.evidence_turns[g].text for g in covered if g in state.evidence_turns]
        text = highlight(h.text, needles)
        missing = [g for g in covered if g in state.evidence_turns and state.evidence_turns[g].text not in h.text]
        for g in missing:
            t = state.evidence_turns[g]
            text += (f'<div class="wb-muted"><small>covers gold {esc(g)} ({esc(t.speaker)}): '
                     f'<mark class="wb-gold">{clip(t.text, limit=300)}</mark></small></div>')
        if h.kind == "fact":  # what the reader was told, read against the turn it was taken from
            text += fact_flags_html(h.text, list(h.source_ids), state.turn_text, method_prompts(m.method))
        rows.append({"#": rank, "unit": esc(h.unit_id), "kind": esc(h.kind), "score": f"{h.score:.3f}",
                     "text": text, "source turns": source_ids_html(h.source_ids, gold), "_gold": bool(covered)})
    table = table_html(rows, ["#", "unit", "kind", "score", "text", "source turns"],
                       raw=("unit", "kind", "text", "source turns"),
                       row_class=lambda r: "wb-has-gold" if r["_gold"] else "")
    return f'<div class="wb-ctxbox"><p><small class="wb-muted">{esc(context_order_note(m))}</small></p>{table}</div>'


def context_order_note(m: MethodRow) -> str:
    """How the reader's units are ordered, read from their scores: a method that re-sorts what its reader sees
    after ranking (HyMem's small profile puts events in time order) shows scores out of order, which looks like a
    bug unless it is said."""
    scores = [h.score for h in m.context]
    if len(scores) == 1:
        return "The one unit the reader saw (score: what the method recorded when it ranked it)."
    if len(set(scores)) <= 1:
        return "In the order the reader saw them; every unit has the same score (no ranking: e.g. the whole " \
               "conversation)."
    if all(a >= b for a, b in zip(scores, scores[1:])):
        return "In the order the reader saw them: highest score first (score: what the method recorded when it " \
               "ranked the unit)."
    return ("In the order the reader saw them, which is not score order: the method re-sorted its units after "
            "ranking them (e.g. by when they were said). Score: what the method recorded when it ranked the unit.")


def _summary(m: MethodRow) -> str:
    found = "" if not m.ranks else (" · gold at " + rank_text(m) if m.first_rank is not None else " · gold missed")
    fallback = " · the answer is a fallback" if m.failure.fallback else ""
    return (f"what {esc(display_name(m.method))}'s reader saw: {len(m.context)} units covering "
            f"{'–' if m.turns_shown is None else m.turns_shown} turns{esc(found)}{fallback}")


def gold_html(state: QuestionState, *, links: bool = False) -> str:
    """The question, its gold answer and its gold evidence turns (text shown, highlighted). ``links`` (the app):
    each gold turn id opens that turn's lifecycle (every unit each method derived from it), as ``?tab=Lifecycle&
    turn=...`` does."""
    cat = f' <span class="wb-badge">{esc(state.category)}</span>' if state.category else ""
    dates = state.evidence_dates or {}

    def ident(e: str) -> str:
        return link_html(e, "turn", e, title="this turn's lifecycle: what each method derived from it") \
            if links else esc(e)

    ev = "".join(f'<div class="wb-gold"><b>{ident(e)}</b> <span class="wb-muted">({esc(dates.get(e) or "no date")})'
                 f"</span> {esc(state.evidence_turns[e].speaker)}: "
                 f"{clip(state.evidence_turns[e].text)}</div>" if e in state.evidence_turns else
                 f"<div><b>{esc(e)}</b> <span class='wb-muted'>(turn not in this run)</span></div>"
                 for e in state.evidence)
    ev = ev or '<p class="wb-muted">This question has no gold evidence ids, so no rank can be given.</p>'
    gold = esc(state.gold) if state.gold else '<span class="wb-muted">(none: the question has no answer in the ' \
                                              "conversation)</span>"
    return (f"<p><b>{esc(state.qa_id)}</b>{cat} <b>Q:</b> {clip(state.question)}</p>"
            f"<p><b>gold answer:</b> {gold}</p><p><b>gold evidence</b> ("
            f"{counted(len(state.evidence), 'turn')}):</p>{ev}")


def _checker_note() -> str:
    from workbench.eval.label_audit import checker_audit, verdict_note

    audit = checker_audit()
    # verdict_note names its source first ("checker: agrees ..."); here the sentence already named it
    return "the checker " + verdict_note("checker", audit).split(": ", 1)[1] if audit else "the checker is not audited"


def judge_notes_html(state: QuestionState) -> str:
    untrusted = [n for n in state.judge_notes if not any(r.judge_note == n and r.judge_trusted for r in state.rows)]
    if not state.judge_notes:
        return ""
    if untrusted:
        return ('<div class="wb-note" role="note"><b>Judge labels are not trustworthy here.</b> '
                + esc("; ".join(untrusted)) + ". Verdicts and attribution below come from the deterministic "
                "checker, not the judge; " + esc(_checker_note()) + "; hover a verdict for the rule that decided it. "
                "⚠ marks rows where judge and F1 flatly disagree.</div>")
    return f"<p class='wb-muted'><small>{esc('; '.join(state.judge_notes))}</small></p>"


def methods_html(state: QuestionState, *, selected: str | None = None, contexts: bool = True,
                 links: bool = False) -> str:
    """One row per method; with ``contexts`` each row is followed by its expandable reader context
    (open for ``selected``, whose row is also highlighted)."""
    if not state.rows:
        return '<p class="wb-muted">No method answered this question in this run.</p>'
    head = "".join(f"<th>{esc(c)}</th>" for c in COLUMNS)
    body = []
    for m in state.rows:
        cells = _cells(m, links=links)
        tds = "".join(f'<td class="wb-num">{cells[c]}</td>' if c in ("F1", "turns shown", "query tokens", "steps")
                      else f"<td>{cells[c]}</td>" for c in COLUMNS)
        sel = m.method == selected
        body.append(f'<tr class="wb-method{" wb-selected" if sel else ""}" data-method="{esc(m.method)}">{tds}</tr>')
        if contexts:
            body.append(f'<tr class="wb-ctx{" wb-selected" if sel else ""}"><td colspan="{len(COLUMNS)}">'
                        f'<details{" open" if sel else ""}><summary>{_summary(m)}</summary>'
                        f"{context_html(m, state)}</details></td></tr>")
    return f'<table class="wb-methods"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


LEGEND = ("<p><small class='wb-muted'>gold evidence rank: position of the first unit covering a gold turn among "
          "the units in front of the method's final reader (Answer.context; for a reader given the whole "
          "conversation, its order), or <b>missed</b> · turns shown: distinct turns those units cover · verdict: "
          "right or wrong by "
          "the source named under it, with the kind of error when the checker says wrong (checker: dates as days, "
          "names as entities, gold content; hover for the rule) · attribution: why the answer "
          "came out as it did (workbench.eval.attribution; hover for the reason) · ⚠ fallback answer: an LLM call "
          "failed and the method wrote a stand-in, which is not its reader's reply</small></p>")


def question_html(state: QuestionState, *, selected: str | None = None, contexts: bool = True,
                  links: bool = False) -> str:
    """The whole view for one question, wrapped in the shared stylesheet."""
    return box(CSS + '<div class="wb-qv">' + gold_html(state, links=links) + judge_notes_html(state)
               + methods_html(state, selected=selected, contexts=contexts, links=links) + (LEGEND if contexts else "")
               + "</div>")


def question_page(state: QuestionState, *, selected: str | None = None, run: str = "") -> str:
    """The question's comparison as one self-contained HTML page (styles inline, no script, no outside request, no
    form or navigation: ``widgets.html.EXPORT_CSP``): for a case study or a slide, opened from disk with no server."""
    title = f"{state.qa_id}: {state.question}"
    source = f"<p class='wb-muted'><small>exported from run {esc(run)} by Memory Workbench</small></p>" if run else ""
    styles = ("<style>body {font-family: sans-serif; margin: 16px;} table {border-collapse: collapse;} td, th "
              "{border: 1px solid #ddd; padding: 3px 6px; vertical-align: top;} .wb-muted {color: #666;} "
              ".wb-gold {background: #fff3bf;}</style>")
    return (f"<!doctype html><html>{export_head(title, styles)}<body>"
            + question_html(state, selected=selected) + source + "</body></html>")


def question_markdown(state: QuestionState) -> str:
    """The question's comparison as a Markdown table (one row per method: answer, verdict and its source,
    judge, F1, attribution, gold rank), run text escaped so it renders as text."""
    from workbench.untrusted import markdown_text

    def cell(v) -> str:
        return markdown_text(" ".join(str(v).split())).replace("|", "\\|")

    lines = [f"**{cell(state.qa_id)}** ({cell(state.category)}) {cell(state.question)}", "",
             f"gold: {cell(state.gold)}", "",
             "| method | answer | verdict | judge | F1 | attribution | gold evidence rank |",
             "|---|---|---|---|---|---|---|"]
    for m in state.rows:
        verdict = {True: "right", False: "wrong", None: "–"}[m.attribution.correct]
        lines.append(f"| {cell(m.method)} | {cell(m.answer_text[:300])} | {verdict} ({cell(verdict_basis(m))}) | "
                     f"{cell(m.judge_label or '–')} | {_f1_text(m)} | {cell(m.attribution.label)} | "
                     f"{cell(rank_text(m))} |")
    return "\n".join(lines) + "\n"


def answer_flags_html(m: MethodRow | None) -> str:
    """A trace's header line for one answer: its verdict (right or wrong, what decided it, the reason on hover)
    beside the gold answer, so a trace never shows "A: Biscuit" without saying it is wrong (usability review);
    then the failure marker and judge flags. Empty without a row."""
    if m is None:
        return ""
    gold = _text(m.row.get("gold"))
    parts = [f"<b>verdict:</b> {_verdict_html(m).replace('<br>', ' ')}"
             + (f" · <b>gold:</b> {esc(short(gold, 200))}" if gold else "")]
    if m.failure.fallback:
        parts.append(f'<span class="wb-fail">⚠ {esc(m.failure.text)}</span>')
    if m.disagree:
        parts.append(f'<span class="wb-flag">⚠ judge {esc(m.judge_label)} but F1 = {m.f1:.2f}</span>')
    for flag, why in unreadable_marks(m.answer_text, _text(m.row.get("question"))):
        parts.append(f'<span class="wb-flag" title="{esc(why)}">⚠ {esc(flag)}</span>')
    if m.judge_label and not m.judge_trusted:
        parts.append(f'<span class="wb-untrusted">{esc(m.judge_note)}</span>')
    return box(CSS + '<div class="wb-qv"><p>' + " ".join(parts) + "</p></div>")
