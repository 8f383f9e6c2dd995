"""``widgets.plotly_loader``: charts and embedded pages are drawn after their tab's text, plots only
once plotly.js is in the page (in-process: a stand-in for the served document's timer)."""
from __future__ import annotations

import pytest

pn = pytest.importorskip("panel")
go = pytest.importorskip("plotly.graph_objects")

from widgets import plotly_loader as pl  # noqa: E402


class Doc:
    """Records the served document's timeout callbacks; ``run`` fires them."""

    def __init__(self):
        self.calls = []

    def add_timeout_callback(self, fn, ms):
        self.calls.append((fn, ms))

    def run(self):
        calls, self.calls = self.calls, []
        for fn, _ in calls:
            fn()


def _layout():
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]), layout={"height": 420})
    plot = pn.pane.Plotly(fig)
    page = pn.pane.HTML("<iframe srcdoc='x' style='width:100%;height:640px'></iframe>")
    text = pn.pane.HTML("<p>the tab's text</p>")
    return pn.Column(text, pn.Row(plot), page), text, plot, page


def _drawn(layout):
    return layout.select(pn.pane.Plotly) + [p for p in layout.select(pn.pane.HTML) if "<iframe" in str(p.object)]


@pytest.fixture
def served(monkeypatch):
    doc = Doc()
    monkeypatch.setattr(pl.PlotHolder, "_doc", staticmethod(lambda: doc))
    monkeypatch.setattr(pl, "declare_plotly", lambda: None)
    return doc


def test_a_shown_tab_draws_its_text_first_then_its_charts_and_pages(served):
    holder = pl.PlotHolder(pl.PlotlyLoader(ready=True), active=True, plotly_on_demand=True)
    layout, text, plot, page = _layout()
    assert holder.hold(layout) == 2 and _drawn(layout) == [] and text in layout.objects
    heights = sorted(slot.objects[0].min_height for slot, _ in holder.slots)
    assert heights == [420, 640]  # the room they will take is kept
    holder.show(layout)
    assert _drawn(layout) == [] and served.calls[0][1] == holder.delay_ms  # after the first paint
    served.run()
    assert _drawn(layout) == [plot] and served.calls[0][1] == holder.step_ms  # one at a time, top down
    served.run()
    assert _drawn(layout) == [plot, page] and served.calls == []
    drawn = [slot.objects[0] for slot, _ in holder.slots]
    holder.hide(layout)  # the tab is left: drawn charts stay (taking them out raced with Plotly's drawing)
    holder.show(layout)
    served.run()
    assert _drawn(layout) == [plot, page] and [slot.objects[0] for slot, _ in holder.slots] == drawn
    assert holder.hold(layout) == 0  # panes already in slots are not wrapped twice
    fresh, _, fresh_plot, fresh_page = _layout()
    holder.hold(fresh)
    holder.show(fresh)
    holder.hide(fresh)
    served.run()  # left before the timer fired: nothing drawn off screen
    assert _drawn(fresh) == []
    holder.show(fresh)
    served.run()
    holder.hide(fresh)
    served.run()  # left between two slots: the rest waits for the next visit
    assert _drawn(fresh) == [fresh_plot]


def _run_all(doc):
    while doc.calls:
        doc.run()


def test_a_part_marked_defer_comes_after_the_text_and_its_charts_still_wait_for_plotly(served):
    loader = pl.PlotlyLoader()
    holder = pl.PlotHolder(loader, active=True, plotly_on_demand=True)
    fig = go.Figure(go.Scatter(x=[1], y=[2]))
    plot = pn.pane.Plotly(fig)
    body = pl.defer(pn.Column(pn.pane.HTML("<p>a card's body</p>"), plot))
    text = pn.pane.HTML("<p>the tab's lead</p>")
    layout = pn.Column(text, pn.Card(body))
    assert pl.is_deferred(body) and not pl.is_deferred(text)
    assert holder.hold(layout) == 2  # the body, and the chart inside it
    assert body not in layout.select(pn.Column) and text in layout.objects
    holder.show(layout)
    _run_all(served)
    assert body in layout.select(pn.Column)  # the body is drawn ...
    assert _drawn(layout) == [] and "loading the chart library" in " ".join(  # ... its chart waits for plotly.js
        str(p.object) for p in layout.select(pn.pane.HTML))
    loader.ready = True
    _run_all(served)
    assert _drawn(layout) == [plot]
    assert not any(pl.PLACEHOLDER in p.css_classes for p in layout.select(pn.pane.HTML))


def test_plots_wait_for_plotly_js_and_say_so(served):
    loader = pl.PlotlyLoader()
    holder = pl.PlotHolder(loader, active=True, plotly_on_demand=True)
    layout, _, plot, page = _layout()
    holder.hold(layout)
    holder.show(layout)
    served.run()
    assert _drawn(layout) == [page]  # the embedded page needs no plotly
    assert "loading the chart library" in " ".join(str(p.object) for p in layout.select(pn.pane.HTML))
    loader.ready = True  # the browser reports plotly.js loaded
    assert _drawn(layout) == [plot, page]
    broken = pl.PlotHolder(pl.PlotlyLoader(), active=True, plotly_on_demand=True)
    other, *_ = _layout()
    broken.hold(other)
    broken.show(other)
    broken.loader.failed = "the request for plotly.js failed"
    assert "could not be loaded: the request for plotly.js failed" in " ".join(
        str(p.object) for p in other.select(pn.pane.HTML))


def test_inactive_holder_leaves_layouts_alone():
    holder = pl.PlotHolder(pl.PlotlyLoader(), active=False)
    layout, _, plot, page = _layout()
    assert holder.hold(layout) == 0 and _drawn(layout) == [plot, page]


def test_loader_finds_the_bundle_panel_serves():
    path = pl.bundled_plotly_path()
    assert path.startswith("static/extensions/panel/bundled/plotlyplot/plotly-") and path.endswith(".min.js")
    assert pl.PlotlyLoader().path == path
