"""One trace as a self-contained HTML page: a method's answer to one question, every step written out.

For a case study, a slide or a message to a colleague: the file opens from disk with no server and
no script. Like the Question tab's export (``widgets.question.question_page``) it has its styles
inline, loads nothing (its Content-Security-Policy, ``widgets.html.EXPORT_CSP``, forbids any request, form
submission or base URL, so even a URL inside run text could not be fetched) and escapes every piece of run text
(a ``<meta http-equiv="refresh">`` in it is shown, never obeyed), through the
same HTML functions the app's Traces tab draws with (``widgets.trace_timeline``). Where the app
steps through the trace, the page lays all the steps out one after the other, each with its card,
its recorded fields and its LLM calls folded in ``<details>`` (which open without script).

    page = trace_page(TraceTimeline.build(answer, conversation=conv, qa=qa),
                      state=question_state(rows, qa.id), run="demo")
"""
from __future__ import annotations

from dataclasses import replace

from .html import EXPORT_CSP, answer_html, box, esc, export_head
from .question import CSS as QUESTION_CSS
from .question import QuestionState, answer_flags_html, gold_html
from .trace_timeline import CSS, TraceTimeline, card_section_html, waterfall_html

#: nothing may be loaded, submitted or navigated to (``widgets.html.EXPORT_CSP``); only the inline styles apply
CSP = EXPORT_CSP
PAGE_CSS = ("<style>body {margin: 16px; max-width: 1100px;} .wb-export-step {border-top: 2px solid #dee2e6; "
            "margin-top: 14px; padding-top: 4px;} .wb-export-foot {margin-top: 18px;}</style>")


def trace_page(tl: TraceTimeline, *, state: QuestionState | None = None, run: str = "") -> str:
    """``tl``'s answer as one standalone HTML page: the question (with its gold answer and gold evidence
    when ``state`` is given), the answer and its flags, the waterfall of every step, then each step's
    card in order, and the final answer again at the end."""
    ans = tl.answer
    method = getattr(ans, "method", "") or ""
    qa_id = state.qa_id if state is not None else ""
    title = " · ".join(x for x in (qa_id, method) if x) + f": {ans.question}"
    head = (f"<h2>Trace of {esc(method or 'an answer')}"
            + (f" on {esc(qa_id)}" if qa_id else "") + "</h2>")
    gold = ('<div class="wb-qv">' + gold_html(state) + "</div>") if state is not None else ""
    flags = answer_flags_html(state.row(method)) if state is not None else ""
    # the waterfall with no step highlighted: the page shows them all
    overview = waterfall_html(replace(tl, index=-1))
    steps = "".join(f'<section class="wb-export-step" id="step-{i + 1}">{card_section_html(tl.at(i))}</section>'
                    for i in range(tl.n_steps))
    final = (f'<section class="wb-export-step"><h4>Final answer</h4><p>{esc(ans.text)}</p></section>'
             if tl.n_steps else "")
    source = f"exported from run {esc(run)} by Memory Workbench" if run else "exported by Memory Workbench"
    body = box(QUESTION_CSS + CSS + head + gold + flags + answer_html(ans) + overview + steps + final
               + f'<p class="wb-muted wb-export-foot"><small>{source}</small></p>')
    return f"<!doctype html><html>{export_head(title, PAGE_CSS)}<body>{body}</body></html>"
