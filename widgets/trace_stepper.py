"""``TraceStepper``: step through an Answer's trace, one decision at a time.

Generic over ``Step.data``: it works for every method's trace (a NaiveRAG retrieve step, a MemR3
router step, an AMA judge verdict ...). Per step it shows the kind and title, the data as a
key/value table, the hits with scores and source turn ids (turn text when the conversation is
given; gold evidence highlighted), the LLM calls in an Accordion, and the running token total.

    TraceStepper(answer, conversation=conv, gold_evidence=qa.evidence)
"""
from __future__ import annotations

from typing import Iterable

from .html import DisplaysWidget, answer_html, box, call_html, call_title, running_tokens, step_html


class TraceStepper(DisplaysWidget):
    """Prev/next buttons and a slider over ``answer.steps``. State: ``index``, ``current_html``."""

    def __init__(self, answer, *, conversation=None, gold_evidence: Iterable[str] | None = None):
        self.answer = answer
        self.conversation = conversation
        self.gold_evidence = tuple(gold_evidence or ())
        self.steps = tuple(answer.steps)
        self.running_tokens = running_tokens(self.steps)
        self.index = 0
        self.current_html = ""
        self._build_widgets()
        self.goto(0)

    # -- state -------------------------------------------------------------------------------
    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def current_step(self):
        return self.steps[self.index] if self.steps else None

    def goto(self, i: int) -> "TraceStepper":
        """Show step ``i`` (clamped to the valid range)."""
        self.index = max(0, min(int(i), max(self.n_steps - 1, 0)))
        self.current_html = step_html(self.answer, self.index, conversation=self.conversation,
                                      gold_evidence=self.gold_evidence)
        self._render()
        return self

    def next(self) -> "TraceStepper":
        return self.goto(self.index + 1)

    def prev(self) -> "TraceStepper":
        return self.goto(self.index - 1)

    # -- widgets -----------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        import ipywidgets as W

        last = max(self.n_steps - 1, 0)
        self.prev_button = W.Button(description="◀ prev", layout=W.Layout(width="90px"))
        self.next_button = W.Button(description="next ▶", layout=W.Layout(width="90px"))
        self.slider = W.IntSlider(value=0, min=0, max=last, description="step", disabled=self.n_steps < 2,
                                  continuous_update=False)
        self.tokens_label = W.HTML()
        self.header = W.HTML(box(answer_html(self.answer)))
        self.body = W.HTML()
        self.calls = W.Accordion()
        self.prev_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        self.slider.observe(self._on_slider, names="value")
        nav = W.HBox([self.prev_button, self.slider, self.next_button, self.tokens_label])
        self.widget = W.VBox([self.header, nav, self.body, W.HTML("<b>LLM calls</b>"), self.calls])

    def _on_slider(self, change) -> None:
        if change["new"] != self.index:
            self.goto(change["new"])

    def _render(self) -> None:
        import ipywidgets as W

        if self.slider.value != self.index:
            self.slider.value = self.index
        self.prev_button.disabled = self.index == 0
        self.next_button.disabled = self.index >= self.n_steps - 1
        self.body.value = step_html(self.answer, self.index, conversation=self.conversation,
                                    gold_evidence=self.gold_evidence, with_calls=False)
        step = self.current_step
        calls = step.calls if step else ()
        self.calls.children = [W.HTML(box(call_html(c))) for c in calls]
        for i, c in enumerate(calls):
            self.calls.set_title(i, call_title(c))
        total = self.running_tokens[self.index] if self.steps else 0
        self.tokens_label.value = f"running total: <b>{total}</b> tokens"

    # -- display -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"TraceStepper(step {self.index + 1}/{self.n_steps}, method={self.answer.method!r})"
