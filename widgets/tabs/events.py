"""The Events tab: every method's memory events on the conversation's own time axis."""
from __future__ import annotations

from typing import Callable

import panel as pn

from widgets.event_timeline import KIND_ORDER, EventLog, timeline_figure
from widgets.html import box, esc
from workbench.methods import display_options
from widgets.panel_parts import (
    LinkHTML,
    html_pane,
)
from widgets.plotly_loader import defer
from widgets.run_store import RunStore


class EventsView:
    """Every method's memory events on the conversation's own time axis (``widgets.event_timeline.
    EventLog``: lanes per method, refresh markers in the method's colour, a paged table with the
    before/after of each change side by side); unit and turn ids in the table open their lifecycle."""

    def __init__(self, store: RunStore):
        self.store = store
        self.follow: Callable[[tuple], None] | None = None  # set by WorkbenchApp
        # the placeholders say what an empty filter means (blank boxes looked like text fields)
        self.kinds = pn.widgets.MultiChoice(label="filter kinds", options=list(KIND_ORDER),
                                            placeholder="all kinds")
        shown = display_options(store.methods)
        self.methods = pn.widgets.MultiChoice(label="filter methods", options={esc(k): m for k, m in shown.items()},
                                              placeholder="all methods")
        self.search = pn.widgets.TextInput(label="search events", placeholder="text, unit id, cause")
        self.counts = html_pane("")
        self.plot = pn.pane.Plotly(timeline_figure([]), sizing_mode="stretch_width")
        self.prev_button = pn.widgets.Button(label="◀ previous page", width=140)
        self.next_button = pn.widgets.Button(label="next page ▶", width=140)
        self.pager = html_pane("", width=360)
        self.table = defer(  # below the timeline: drawn after the tab's text
            LinkHTML("", on_link=lambda t: self.follow(t) if self.follow else None))
        for w in (self.kinds, self.methods, self.search):
            w.param.watch(lambda e: self.refresh(), "value")
        self.prev_button.on_click(lambda e: self.turn_page(-1))
        self.next_button.on_click(lambda e: self.turn_page(+1))
        store.param.watch(lambda e: self.load(), "conv_id")
        self.panel = pn.Column(pn.Row(self.kinds, self.methods, self.search), self.counts, self.plot,
                               pn.Row(self.prev_button, self.next_button, self.pager), self.table,
                               sizing_mode="stretch_width")
        self.load()

    def load(self) -> None:
        self.log = EventLog(self.store.all_events(), conversation=self.store.conversation(), links=True,
                            all_methods=self.store.methods, params=self.store.method_params())
        self.events = self.log.events
        self.refresh()

    def refresh(self) -> None:
        self.log.set_filter(kinds=self.kinds.value or [], methods=self.methods.value or [], text=self.search.value)
        self.filtered = self.log.filtered
        self.counts.object = box(self.log.counts_html)
        self.plot.object = self.log.figure
        self.show_page()

    def turn_page(self, step: int) -> None:
        self.log.set_page(self.log.page + step)
        self.show_page()

    def show_page(self) -> None:
        self.pager.object = box(esc(self.log.pager_text))
        self.prev_button.disabled = self.log.page == 0
        self.next_button.disabled = self.log.page >= self.log.pages - 1
        self.table.object = self.log.table_html
