"""The Traces tab: a step waterfall of one answer, with a card per step; a second method's trace beside it."""
from __future__ import annotations

from io import BytesIO
from pathlib import Path

import panel as pn

from widgets.html import box, method_title_html
from widgets.panel_parts import (
    LinkHTML,
    html_pane,
)
from widgets.question import CSS as QUESTION_CSS
from widgets.question import (
    answer_flags_html,
    gold_html,
    judge_notes_html,
    methods_html,
    question_options,
    question_state,
)
from widgets.run_store import RunStore
from widgets.tabs.question import _export_name
from widgets.trace_area import TraceArea
from widgets.trace_export import trace_page
from widgets.trace_timeline import TraceTimeline, keys_html, timeline_html
from workbench.methods import display_options

#: the compare picker's first option: one trace only
NO_COMPARE = "none"


class TracePane:
    """One method's trace with its own stepper: prev/next buttons, a slider, the step position, the
    focusable timeline (``TraceArea``) and an export of the whole trace as a standalone HTML page
    (``widgets.trace_export``). ``TracesView`` shows one, or two side by side."""

    def __init__(self, store: RunStore, *, export_label: str = "export trace (HTML)"):
        self.store = store
        self.method: str | None = None
        self.state = None
        self.prev_button = pn.widgets.Button(label="◀ prev", width=80, align="end")
        self.next_button = pn.widgets.Button(label="next ▶", width=80, align="end")
        self.slider = pn.widgets.IntSlider(label="step", start=1, end=2, value=1, width=200)
        self.position = html_pane("", width=130, align="end")
        self.area = TraceArea(sizing_mode="stretch_width")
        self.export = pn.widgets.FileDownload(callback=self._export, filename="trace.html", label=export_label,
                                              color="light", width=170, align="end")
        self.timeline, self.index, self.html = None, 0, ""
        self.prev_button.on_click(lambda e: self.prev())
        self.next_button.on_click(lambda e: self.next())
        self.slider.param.watch(lambda e: e.new - 1 != self.index and self.goto(e.new - 1), "value")
        self.area.param.watch(lambda e: e.new != self.index and self.goto(e.new), "index")
        self.nav = pn.Row(self.prev_button, self.slider, self.next_button, self.position)
        self.title = html_pane("")  # the method's name, over its trace when two are side by side
        self.column = pn.Column(self.nav, self.area, sizing_mode="stretch_width", margin=(0, 8))

    def show(self, answer, *, method: str | None, qa=None, state=None) -> None:
        """``method``'s ``answer`` (None: nothing to show) as a timeline at its first step; its saved
        memories resolve ids it did not retrieve."""
        self.method, self.state = method, state
        self.title.object = box(f"<b style='font-size:15px'>{method_title_html(method)}</b>") if method else ""
        self.timeline = None if answer is None else TraceTimeline.build(
            answer, conversation=self.store.conversation(), gold_evidence=qa.evidence if qa else (),
            memories=self.store.memory_rows(method), qa=qa)
        n = self.timeline.n_steps if self.timeline else 0
        self.slider.end, self.slider.visible = max(n, 2), n > 1
        self.area.n_steps = n
        self.export.disabled = self.timeline is None
        self.index = -1  # whatever the widgets hold, the next goto renders
        self.goto(0)

    @property
    def n_steps(self) -> int:
        return self.timeline.n_steps if self.timeline else 0

    def goto(self, i: int) -> None:
        tl = self.timeline
        if tl is None:
            self.index, self.html = 0, box("<p class='wb-muted'>No trace to show.</p>")
        else:
            tl = self.timeline = tl.at(i)
            self.index = tl.index
            flags = answer_flags_html(self.state.row(self.method) if self.state is not None else None)
            self.html = flags + timeline_html(tl, header=True)
        n = self.n_steps
        self.position.object = f"step <b class='wb-step-pos'>{self.index + 1 if n else 0}</b> / {n}"
        self.prev_button.disabled = self.index == 0
        self.next_button.disabled = self.index >= n - 1
        self.slider.value = self.index + 1
        self.area.param.update(index=self.index, html=self.html)

    def next(self) -> None:
        self.goto(self.index + 1)

    def prev(self) -> None:
        self.goto(self.index - 1)

    def export_html(self) -> str:
        """The whole trace as a standalone page (every step laid out; no script, nothing loaded)."""
        if self.timeline is None:
            return "<!doctype html><html><head><meta charset='utf-8'><title>No trace</title></head><body>" \
                   "<p>No trace to export.</p></body></html>"
        return trace_page(self.timeline, state=self.state, run=Path(self.store.run_dir).name)

    def _export(self):
        qa_id = self.state.qa_id if self.state is not None else None
        self.export.filename = _export_name(f"{qa_id or 'trace'}-{self.method or ''}", "html")
        return BytesIO(self.export_html().encode("utf-8"))


class TracesView:
    """Pick a question: every method's answer, then one method's trace timeline
    (``widgets.trace_timeline``): a waterfall of its steps and LLM calls and a card for the current
    step. Step with the buttons, the slider, or the keys (← / k, → / j, Home / End) once the trace
    area has focus; clicking a waterfall row jumps to it. "compare with" puts a second method's trace
    of the same question beside it, with its own stepper. Each trace exports as a standalone HTML
    page. The timeline's state and HTML are the notebook ``TraceStepper``'s; this class only binds
    Panel widgets to them."""

    def __init__(self, store: RunStore):
        self.store = store
        self.question = pn.widgets.Select(label="question", options={}, sizing_mode="stretch_width")
        self.method = pn.widgets.Select(label="method", options=[], width=220)
        self.compare = pn.widgets.Select(label="compare with", options=[NO_COMPARE], value=NO_COMPARE, width=200)
        self.main = TracePane(store)
        self.other = TracePane(store, export_label="export 2nd trace (HTML)")
        self.follow = None  # set by WorkbenchApp: a method's "how it works" link opens its page
        self.answers_pane = LinkHTML("", on_link=lambda target: self.follow and self.follow(target))
        self.keys = html_pane(keys_html())
        self.current: dict = {}
        self.state = None
        self.question.param.watch(lambda e: self.load_question(), "value")
        self.method.param.watch(lambda e: self.load_trace(), "value")
        self.compare.param.watch(lambda e: self.load_compared(), "value")
        store.param.watch(lambda e: self.load(), "conv_id")
        self.pickers = pn.Row(self.method, self.compare, self.main.export, self.other.export)
        self.body = pn.Row(sizing_mode="stretch_width")
        self.panel = pn.Column(self.question, self.answers_pane, self.pickers, self.keys, self.body,
                               sizing_mode="stretch_width")
        self.load()

    # -- the main trace's stepper, under the names the app and its tests use ------------------------
    prev_button = property(lambda self: self.main.prev_button)
    next_button = property(lambda self: self.main.next_button)
    slider = property(lambda self: self.main.slider)
    position = property(lambda self: self.main.position)
    area = property(lambda self: self.main.area)
    timeline = property(lambda self: self.main.timeline)
    index = property(lambda self: self.main.index)
    html = property(lambda self: self.main.html)

    def goto(self, i: int) -> None:
        self.main.goto(i)

    def next(self) -> None:
        self.main.next()

    def prev(self) -> None:
        self.main.prev()

    @property
    def compared(self) -> str | None:
        """The method shown beside the main one, or None."""
        return self.compare.value if self.compare.value not in (None, NO_COMPARE) else None

    # -- loading -----------------------------------------------------------------------------------
    def load(self) -> None:
        opts = question_options(self.store.results(), self.store.conv_id)  # labels name the category
        self.question.options = opts
        if opts and self.question.value not in opts.values():
            self.question.value = next(iter(opts.values()))  # triggers load_question
        else:
            self.load_question()

    def _gold(self, qa_id):
        conv = self.store.conversation()
        return next((q for q in conv.qa if q.id == qa_id), None) if conv else None

    def load_question(self) -> None:
        self.current = self.store.answers(self.question.value) if self.question.value else {}
        self.state = (question_state(self.store.results(), self.question.value, conversation=self.store.conversation(),
                                     audits=self.store.audits()) if self.current else None)
        methods = list(self.current)
        self.method.options = display_options(methods)
        want = self.method.value if self.method.value in methods else (methods[0] if methods else None)
        if want != self.method.value:
            self.method.value = want  # triggers load_trace
        else:
            self.load_trace()

    def show_answers(self) -> None:
        self.answers_pane.object = (self.answers_html() if self.state is not None else
                                    box("<p>No answered questions in this run.</p>"))

    def answers_html(self) -> str:
        """Gold, then every method's answer with the Question view's flags (fallback answers, judge vs
        F1, untrusted judge, attribution, gold rank) folded under one line, so the trace is in view;
        the row of the method whose trace is shown is highlighted. Reader contexts are the Question tab's."""
        table = methods_html(self.state, selected=self.method.value, contexts=False, links=True)
        fold = (f"<details><summary>every method's answer to this question ({len(self.state.rows)}): judge, F1, "
                f"attribution, gold evidence rank</summary>{judge_notes_html(self.state)}{table}</details>")
        return box(QUESTION_CSS + '<div class="wb-qv">' + gold_html(self.state) + fold + "</div>")

    def _answer(self, method: str | None):
        pair = self.current.get(method) if method else None
        return pair[1] if pair else None

    @property
    def answer(self):
        return self._answer(self.method.value)

    def load_trace(self) -> None:
        """The picked method's answer as a timeline; the compare picker offers every other method."""
        self.show_answers()  # the picked method's row highlighted
        ans = self.answer
        self.main.show(ans, method=self.method.value, qa=self._gold(self.question.value) if ans else None,
                       state=self.state)
        others = [m for m in self.current if m != self.method.value]
        keep = self.compare.value if self.compare.value in others else NO_COMPARE
        self.compare.options = {NO_COMPARE: NO_COMPARE, **display_options(others)}
        if keep != self.compare.value:
            self.compare.value = keep  # triggers load_compared
        else:
            self.load_compared()

    def load_compared(self) -> None:
        """The compared method's trace beside the main one (each with its own stepper), or the main one alone."""
        method = self.compared
        ans = self._answer(method)
        side = method is not None and ans is not None
        self.other.show(ans if side else None, method=method if side else None,
                        qa=self._gold(self.question.value) if side else None, state=self.state)
        self.other.export.visible = side
        main, other = self.main, self.other
        _set(main.column, [main.title, main.nav, main.area] if side else [main.nav, main.area])
        _set(other.column, [other.title, other.nav, other.area])
        _set(self.body, [main.column, other.column] if side else [main.column])


def _set(layout, objects: list) -> None:
    """Give ``layout`` these children, unless it has them already (a re-render costs a round trip)."""
    if len(layout.objects) != len(objects) or any(a is not b for a, b in zip(layout.objects, objects)):
        layout.objects = objects
