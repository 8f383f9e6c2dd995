"""The Traces tab: a step waterfall of one answer, with a card per step."""
from __future__ import annotations

import panel as pn

from widgets.html import box
from widgets.panel_parts import (
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
from widgets.trace_area import TraceArea
from widgets.trace_timeline import TraceTimeline, keys_html, timeline_html


class TracesView:
    """Pick a question: every method's answer, then one method's trace timeline
    (``widgets.trace_timeline``): a waterfall of its steps and LLM calls and a card for the current
    step. Step with the buttons, the slider, or the keys (← / k, → / j, Home / End) once the trace
    area has focus; clicking a waterfall row jumps to it. The timeline's state and HTML are the
    notebook ``TraceStepper``'s; this class only binds Panel widgets to them."""

    def __init__(self, store: RunStore):
        self.store = store
        self.question = pn.widgets.Select(label="question", options={}, sizing_mode="stretch_width")
        self.method = pn.widgets.Select(label="method", options=[])
        self.prev_button = pn.widgets.Button(label="◀ prev", width=80, align="end")
        self.next_button = pn.widgets.Button(label="next ▶", width=80, align="end")
        self.slider = pn.widgets.IntSlider(label="step", start=1, end=2, value=1, width=240)
        self.position = html_pane("", width=220, align="end")
        self.answers_pane = html_pane("")
        self.keys = html_pane(keys_html())
        self.area = TraceArea(sizing_mode="stretch_width")
        self.timeline, self.index, self.html = None, 0, ""
        self.question.param.watch(lambda e: self.load_question(), "value")
        self.method.param.watch(lambda e: self.load_trace(), "value")
        self.prev_button.on_click(lambda e: self.prev())
        self.next_button.on_click(lambda e: self.next())
        self.slider.param.watch(lambda e: e.new - 1 != self.index and self.goto(e.new - 1), "value")
        self.area.param.watch(lambda e: e.new != self.index and self.goto(e.new), "index")
        store.param.watch(lambda e: self.load(), "conv_id")
        nav = pn.Row(self.method, self.prev_button, self.slider, self.next_button, self.position)
        self.panel = pn.Column(self.question, self.answers_pane, nav, self.keys, self.area,
                               sizing_mode="stretch_width")
        self.load()

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
        self.method.options = methods
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
        table = methods_html(self.state, selected=self.method.value, contexts=False)
        fold = (f"<details><summary>every method's answer to this question ({len(self.state.rows)}): judge, F1, "
                f"attribution, gold evidence rank</summary>{judge_notes_html(self.state)}{table}</details>")
        return box(QUESTION_CSS + '<div class="wb-qv">' + gold_html(self.state) + fold + "</div>")

    @property
    def answer(self):
        pair = self.current.get(self.method.value) if self.method.value else None
        return pair[1] if pair else None

    def load_trace(self) -> None:
        """The picked method's answer as a timeline; its saved memories resolve ids it did not retrieve."""
        self.show_answers()  # the picked method's row highlighted
        ans = self.answer
        qa = self._gold(self.question.value) if ans is not None else None
        self.timeline = None if ans is None else TraceTimeline.build(
            ans, conversation=self.store.conversation(), gold_evidence=qa.evidence if qa else (),
            memories=self.store.memory_rows(self.method.value))
        n = self.timeline.n_steps if self.timeline else 0
        self.slider.end, self.slider.visible = max(n, 2), n > 1
        self.area.n_steps = n
        self.index = -1  # whatever the widgets hold, the next goto renders
        self.goto(0)

    def goto(self, i: int) -> None:
        tl = self.timeline
        if tl is None:
            self.index, self.html = 0, box("<p class='wb-muted'>No trace to show.</p>")
        else:
            tl = self.timeline = tl.at(i)
            self.index = tl.index
            state = getattr(self, "state", None)
            flags = answer_flags_html(state.row(self.method.value) if state is not None else None)
            self.html = flags + timeline_html(tl, header=True)
        n = tl.n_steps if tl else 0
        self.position.object = f"step <b class='wb-step-pos'>{self.index + 1 if n else 0}</b> / {n}"
        self.prev_button.disabled = self.index == 0
        self.next_button.disabled = self.index >= n - 1
        self.slider.value = self.index + 1
        self.area.param.update(index=self.index, html=self.html)

    def next(self) -> None:
        self.goto(self.index + 1)

    def prev(self) -> None:
        self.goto(self.index - 1)
