"""``TraceStepper``: the trace timeline (``widgets.trace_timeline``) in a notebook.

A thin ipywidgets shell: prev/next buttons and a slider move ``TraceTimeline.index``; the waterfall,
the current step's card and the running token total are the timeline module's HTML, the same the
app's Traces tab shows. The step's LLM calls sit in an Accordion (prompt and response each).
``kinds`` narrows the steps the buttons and slider visit (``TraceTimeline.stops``); the waterfall
still shows every step, so the visited ones stay in context.

    TraceStepper(answer, conversation=conv, qa=qa)   # gold evidence marked; steps' own answers checked against its gold
    TraceStepper(answer, conversation=conv, memories=method.memories())   # ids not retrieved get text too
    TraceStepper(answer, kinds=("router",))                               # MemR3's router steps only
    TraceStepper(answer, intro="<b>designed run</b> ...")                 # a line above the controls (HTML)
"""
from __future__ import annotations

from typing import Iterable, Mapping

from .html import DisplaysWidget, answer_html, box, call_html, call_title, running_tokens
from .trace_timeline import CSS, TraceTimeline, card_section_html, no_stops_html, timeline_html, waterfall_html


class TraceStepper(DisplaysWidget):
    """Prev/next buttons and a slider (1-based, as the step heading) over the visited steps. State:
    ``stops`` (the step index of each position: every step unless ``kinds`` narrows them), ``index``
    (0-based position in ``stops``), ``current_html`` (the whole timeline at that step: waterfall, card
    and calls), ``timeline``."""

    #: what the slider counts (a subclass visiting only some steps names them)
    unit = "step"
    #: a line above the controls saying what is stepped through (empty: none)
    intro = ""

    def __init__(self, answer, *, conversation=None, gold_evidence: Iterable[str] | None = None,
                 memories: Iterable[Mapping] = (), kinds: Iterable[str] | None = None, qa=None,
                 intro: str | None = None):
        self.answer = answer
        if intro is not None:  # this stepper's own line (HTML): a designed run's label, where a run diverges
            self.intro = intro
        self.conversation = conversation
        self.gold_evidence = tuple(gold_evidence if gold_evidence is not None else getattr(qa, "evidence", ()) or ())
        self.kinds = None if kinds is None else tuple(kinds)
        self.timeline = TraceTimeline.build(answer, conversation=conversation, gold_evidence=self.gold_evidence,
                                            memories=memories, qa=qa)
        self.steps = self.timeline.steps
        self.stops = self.timeline.stops(self.kinds)
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
    def n_stops(self) -> int:
        return len(self.stops)

    @property
    def current_step(self):
        return self.timeline.step if self.stops else None

    def goto(self, i: int) -> "TraceStepper":
        """Show the ``i``-th visited step (clamped to the valid range)."""
        self.index = max(0, min(int(i), max(self.n_stops - 1, 0)))
        if self.stops:
            self.timeline = self.timeline.at(self.stops[self.index])
        self.current_html = (timeline_html(self.timeline) if self.stops or self.kinds is None
                             else box(CSS + no_stops_html(self.kinds)))
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
        self.slider = W.IntSlider(value=1, min=1, max=max(self.n_stops, 1), description=self.unit,
                                  disabled=self.n_stops < 2, continuous_update=False)
        self.tokens_label = W.HTML()
        self.header = W.HTML(box(answer_html(self.answer)))
        self.waterfall = W.HTML()
        self.body = W.HTML()
        self.calls = W.Accordion()
        self.prev_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        self.slider.observe(self._on_slider, names="value")
        nav = W.HBox([self.prev_button, self.slider, self.next_button, self.tokens_label])
        intro = [W.HTML(box(f"<p>{self.intro}</p>"))] if self.intro else []
        self.widget = W.VBox([self.header, *intro, self.waterfall, nav, self.body, W.HTML("<b>LLM calls</b>"),
                              self.calls])

    def _on_slider(self, change) -> None:
        if change["new"] - 1 != self.index:
            self.goto(change["new"] - 1)

    def _render(self) -> None:
        import ipywidgets as W

        if self.slider.value != self.index + 1:
            self.slider.value = self.index + 1
        self.prev_button.disabled = self.index == 0
        self.next_button.disabled = self.index >= self.n_stops - 1
        self.waterfall.value = box(CSS + waterfall_html(self.timeline))
        self.body.value = box(CSS + (card_section_html(self.timeline, with_calls=False) if self.stops or
                                     self.kinds is None else no_stops_html(self.kinds)))
        calls = self.current_step.calls if self.current_step else ()
        self.calls.children = [W.HTML(box(call_html(c))) for c in calls]
        for i, c in enumerate(calls):
            self.calls.set_title(i, call_title(c))
        self.tokens_label.value = f"running total: <b>{self.timeline.running:,}</b> tokens"

    # -- display -----------------------------------------------------------------------------
    def static_html(self) -> str:
        """The answer and the timeline at the current step (what the widget shows, without its controls)."""
        intro = box(f"<p>{self.intro}</p>") if self.intro else ""
        return box(answer_html(self.answer)) + intro + self.current_html

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.unit} {self.index + 1}/{self.n_stops}, method={self.answer.method!r})"
