"""``TraceStepper``: the trace timeline (``widgets.trace_timeline``) in a notebook.

A thin ipywidgets shell: prev/next buttons and a slider move ``TraceTimeline.index``; the waterfall,
the current step's card and the running token total are the timeline module's HTML, the same the
app's Traces tab shows. The step's LLM calls sit in an Accordion (prompt and response each).

    TraceStepper(answer, conversation=conv, gold_evidence=qa.evidence)
    TraceStepper(answer, conversation=conv, memories=method.memories())   # ids not retrieved get text too
"""
from __future__ import annotations

from typing import Iterable, Mapping

from .html import DisplaysWidget, answer_html, box, call_html, call_title, running_tokens
from .trace_timeline import CSS, TraceTimeline, card_section_html, timeline_html, waterfall_html


class TraceStepper(DisplaysWidget):
    """Prev/next buttons and a slider (1-based, as the step heading) over ``answer.steps``. State:
    ``index`` (0-based), ``current_html`` (the whole timeline at ``index``: waterfall, card and calls),
    ``timeline``."""

    def __init__(self, answer, *, conversation=None, gold_evidence: Iterable[str] | None = None,
                 memories: Iterable[Mapping] = ()):
        self.answer = answer
        self.conversation = conversation
        self.gold_evidence = tuple(gold_evidence or ())
        self.timeline = TraceTimeline.build(answer, conversation=conversation, gold_evidence=self.gold_evidence,
                                            memories=memories)
        self.steps = self.timeline.steps
        self.running_tokens = running_tokens(self.steps)
        self.index = 0
        self.current_html = ""
        self._build_widgets()
        self.goto(0)

    # -- state -------------------------------------------------------------------------------
    @property
    def n_steps(self) -> int:
        return self.timeline.n_steps

    @property
    def current_step(self):
        return self.timeline.step

    def goto(self, i: int) -> "TraceStepper":
        """Show step ``i`` (clamped to the valid range)."""
        self.timeline = self.timeline.at(i)
        self.index = self.timeline.index
        self.current_html = timeline_html(self.timeline)
        self._render()
        return self

    def next(self) -> "TraceStepper":
        return self.goto(self.index + 1)

    def prev(self) -> "TraceStepper":
        return self.goto(self.index - 1)

    # -- widgets -----------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        import ipywidgets as W

        self.prev_button = W.Button(description="◀ prev", layout=W.Layout(width="90px"))
        self.next_button = W.Button(description="next ▶", layout=W.Layout(width="90px"))
        # 1-based like the "Step k / n" heading; ``index`` stays 0-based
        self.slider = W.IntSlider(value=1, min=1, max=max(self.n_steps, 1), description="step",
                                  disabled=self.n_steps < 2, continuous_update=False)
        self.tokens_label = W.HTML()
        self.header = W.HTML(box(answer_html(self.answer)))
        self.waterfall = W.HTML()
        self.body = W.HTML()
        self.calls = W.Accordion()
        self.prev_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        self.slider.observe(self._on_slider, names="value")
        nav = W.HBox([self.prev_button, self.slider, self.next_button, self.tokens_label])
        self.widget = W.VBox([self.header, self.waterfall, nav, self.body, W.HTML("<b>LLM calls</b>"), self.calls])

    def _on_slider(self, change) -> None:
        if change["new"] - 1 != self.index:
            self.goto(change["new"] - 1)

    def _render(self) -> None:
        import ipywidgets as W

        if self.slider.value != self.index + 1:
            self.slider.value = self.index + 1
        self.prev_button.disabled = self.index == 0
        self.next_button.disabled = self.index >= self.n_steps - 1
        self.waterfall.value = box(CSS + waterfall_html(self.timeline))
        self.body.value = box(CSS + card_section_html(self.timeline, with_calls=False))
        calls = self.current_step.calls if self.current_step else ()
        self.calls.children = [W.HTML(box(call_html(c))) for c in calls]
        for i, c in enumerate(calls):
            self.calls.set_title(i, call_title(c))
        self.tokens_label.value = f"running total: <b>{self.timeline.running}</b> tokens"

    # -- display -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"TraceStepper(step {self.index + 1}/{self.n_steps}, method={self.answer.method!r})"
