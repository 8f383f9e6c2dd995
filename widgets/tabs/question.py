"""The Question tab: one question, every method's answer, verdicts and what each reader saw."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import panel as pn

from widgets.html import box
from widgets.panel_parts import (
    LinkHTML,
)
from widgets.question import (
    question_html,
    question_options,
    question_state,
)
from widgets.run_store import RunStore
from workbench.methods import display_options


def _export_name(qa_id: str | None, ext: str) -> str:
    """A file name from a question id that came from the run: letters, digits and dashes only."""
    import re

    return (re.sub(r"[^A-Za-z0-9-]+", "-", str(qa_id or "question")).strip("-")[:80] or "question") + f".{ext}"


# ------------------------------------------------------------------------------------------------
class QuestionTab:
    """The Question view (``widgets.question``: state and HTML) bound to Panel widgets. Picking a
    method highlights its row and opens the context its reader saw; the button opens that method's
    trace in the Traces tab (``open_trace`` is set by ``WorkbenchApp``)."""

    def __init__(self, store: RunStore):
        self.store = store
        self.open_trace: Callable[[str, str], None] | None = None
        self.question = pn.widgets.Select(label="question", options={}, sizing_mode="stretch_width")
        # the picker holds 81-152 questions at real scale: words of the question (any order) or its id find it
        self.find = pn.widgets.TextInput(label="find a question", placeholder="words of the question, or its id",
                                         width=300)
        self.found = LinkHTML("", on_link=self._found_link, visible=False)
        self.method = pn.widgets.Select(label="method (row highlighted, its context opened)", options=[], width=300)
        self.trace_button = pn.widgets.Button(label="open its trace in Traces ▶", width=220, align="end",
                                              color="primary", disabled=True)
        self.follow: Callable[[tuple], None] | None = None  # set by WorkbenchApp: a method's how-it-works link
        self.body = LinkHTML("", on_link=lambda target: self.follow and self.follow(target))
        self._quiet = False  # set while load_question resets the method picker: it renders once itself
        self.question.param.watch(lambda e: self.load_question(), "value")
        self.find.param.watch(lambda e: self.search(), "value_input")
        self.find.param.watch(lambda e: self.pick_first(), "value")  # Enter: the first match is opened
        self.method.param.watch(lambda e: self._quiet or self.render(), "value")
        self.trace_button.on_click(lambda e: self.to_trace())
        store.param.watch(lambda e: self.load(), "conv_id")
        # a case study or a slide: the comparison as a standalone page, or as a Markdown table
        self.export_html = pn.widgets.FileDownload(callback=self._export_html, filename="question.html",
                                                   label="export (HTML)", color="light", width=140,
                                                   align="end")
        self.export_md = pn.widgets.FileDownload(callback=self._export_md, filename="question.md",
                                                 label="export (Markdown)", color="light", width=160,
                                                 align="end")
        self.panel = pn.Column(pn.Row(self.question, self.find, sizing_mode="stretch_width"), self.found,
                               pn.Row(self.method, self.trace_button, self.export_html, self.export_md),
                               self.body, sizing_mode="stretch_width")
        self.load()

    def _export_html(self):
        from io import BytesIO

        from widgets.question import question_page

        self.export_html.filename = _export_name(self.question.value, "html")
        page = question_page(self.state, selected=self.selected, run=Path(self.store.run_dir).name) \
            if self.state else "<!doctype html><p>No answered question.</p>"
        return BytesIO(page.encode("utf-8"))

    def _export_md(self):
        from io import BytesIO

        from widgets.question import question_markdown

        self.export_md.filename = _export_name(self.question.value, "md")
        return BytesIO((question_markdown(self.state) if self.state else "No answered question.\n").encode("utf-8"))

    #: how many matches the search lists under the picker
    FOUND_LIMIT = 8

    def matches(self, query: str | None = None) -> list[str]:
        """The question ids of this conversation whose id and text hold every word of ``query`` (default: what is
        typed in the search box), in the picker's order."""
        from widgets.case_finder import words_match

        query = self.find.value_input if query is None else query
        if not (query or "").strip():
            return []
        return [qid for label, qid in self.question.options.items() if words_match(label, query)]

    def search(self) -> None:
        """List the questions matching what is typed (each with its verdicts in one line); a click opens one."""
        from widgets.case_finder import store_cases, tally_text
        from widgets.html import esc, link_html

        query = (self.find.value_input or "").strip()
        if not query:
            self.found.object, self.found.visible = "", False
            return
        found = self.matches(query)
        cases = {c.qa_id: c for c in store_cases(self.store, self.store.conv_id)}
        labels = {qid: label for label, qid in self.question.options.items()}
        items = "".join(
            f"<li>{link_html(labels[qid], 'question', qid, self.method.value or '(none)', title='open this question')}"
            + (f" <span class='wb-muted'>{esc(tally_text(cases[qid]))}</span>" if qid in cases else "") + "</li>"
            for qid in found[:self.FOUND_LIMIT])
        more = len(found) - self.FOUND_LIMIT
        head = (f"{len(found)} of {len(labels)} questions match" if found else
                f"no question of this conversation holds every word of “{esc(query)}”")
        tail = f"<li class='wb-muted'>… {more} more: add a word</li>" if more > 0 else ""
        self.found.object = box(f"<p style='margin:2px 0'><small class='wb-muted'>{head}</small></p>"
                                f"<ul style='margin:2px 0'>{items}{tail}</ul>")
        self.found.visible = True

    def pick_first(self) -> None:
        found = self.matches(self.find.value)
        if found and self.question.value != found[0]:
            self.question.value = found[0]

    def _found_link(self, target: tuple) -> None:
        if target[0] == "question" and target[1] in self.question.options.values():
            self.question.value = target[1]

    def load(self) -> None:
        opts = question_options(self.store.results(), self.store.conv_id)
        self.question.options = opts
        if opts and self.question.value not in opts.values():
            self.question.value = next(iter(opts.values()))  # triggers load_question
        else:
            self.load_question()
        self.search()  # the matches of the new conversation

    def load_question(self) -> None:
        qa_id = self.question.value
        self.state = (question_state(self.store.results(), qa_id, conversation=self.store.conversation(),
                                     audits=self.store.audits()) if qa_id else None)
        methods = self.state.methods if self.state else []
        self._quiet = True
        try:
            self.method.options = {"(none)": "(none)", **display_options(methods)}
            if self.method.value not in methods:
                self.method.value = "(none)"
        finally:
            self._quiet = False
        self.render()  # once per question (a new session's page used to draw it twice, then the app a third time)

    @property
    def selected(self) -> str | None:
        return self.method.value if self.method.value not in (None, "(none)") else None

    def render(self) -> None:
        if self.state is None:
            self.body.object = box("<p>No answered questions in this run.</p>")
        else:
            self.body.object = question_html(self.state, selected=self.selected, links=True)
        self.update_button()

    def update_button(self) -> None:
        """The trace button works once a method row is picked and the app has said where traces open."""
        self.trace_button.disabled = self.selected is None or self.open_trace is None

    def to_trace(self) -> None:
        if self.selected and self.open_trace is not None:
            self.open_trace(self.question.value, self.selected)
