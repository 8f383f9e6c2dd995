"""plotly.js on demand for the served app: the page is drawn first, the chart library comes after.

plotly.js is 4.7 MB; in a page that declares it, the browser downloads and runs it before it draws
anything, which was about half of the app's time to first paint on a loaded two-core machine
(measured: an empty Panel page took 4.5-5.7 s to show with it, 2.4-3.1 s without). Panel 1.9 puts
a declared library's ``<script>`` in the page head, and a Plotly pane rendered before the library is
there draws nothing and raises in the browser (its view calls ``window.Plotly``). So the served app
leaves plotly out of the page (``pn.extension`` without it for the session's document) and puts a
``PlotlyLoader`` in it: after the first paint it adds a ``<script>`` for the same bundled file Panel
serves (``static/extensions/panel/bundled/plotlyplot/...``, resolved next to Panel's own script, so
it works under a URL prefix and offline) and flips ``ready`` when it has run. Until then
``PlotHolder`` keeps each Plotly pane of a view out of the page, showing a one-line notice in its
place, and puts every pane back once ``ready`` is True. A page that already has plotly (a notebook,
``pn.extension("plotly")``) reports ``ready`` at once.
"""
from __future__ import annotations

import re
from typing import Any

import param
import panel as pn
from panel.custom import JSComponent

from widgets.html import esc

#: the plotly.js bundle Panel serves, relative to the server root (Panel's PlotlyPlot.__javascript__)
PLOTLY_PATH = "static/extensions/panel/bundled/plotlyplot/plotly-3.1.0.min.js"
WAITING = "<p class='wb-muted' style='margin:4px 0'>loading the chart library (plotly.js)…</p>"
FAILED = "<p class='wb-muted' style='margin:4px 0'>the chart library (plotly.js) could not be loaded: {why}</p>"


def bundled_plotly_path() -> str:
    """Where this Panel serves plotly.js (read from Panel's model, so an upgrade follows it)."""
    try:
        from panel.models.plotly import PlotlyPlot

        files = [f for f in PlotlyPlot.__javascript__ if "plotly" in f and f.endswith(".js")]
    except (ImportError, AttributeError, TypeError):
        files = []
    return str(files[0]) if files else PLOTLY_PATH


class PlotlyLoader(JSComponent):
    """Invisible: loads plotly.js after the page is drawn; ``ready`` turns True once it has run."""

    ready = param.Boolean(default=False, doc="plotly.js is loaded in the browser")
    failed = param.String(default="", doc="why plotly.js could not be loaded (empty while fine)")
    path = param.String(default=PLOTLY_PATH, doc="the bundle's path relative to the server root")

    _esm = """
export function render({ model }) {
  const el = document.createElement("span")
  el.className = "wb-plotly-loader"
  el.hidden = true
  const guard = () => {
    // Panel's Plotly view relayouts its graph when an asynchronous draw finishes, even if the view
    // was removed (and the graph purged) meanwhile, e.g. its tab was switched mid-draw: plotly.js
    // then throws "reading '_guiEditing'" (holoviz/panel#8021). A purged graph has nothing to lay out.
    if (window.Plotly && !window.Plotly.__wbGuarded) {
      const relayout = window.Plotly.relayout
      window.Plotly.relayout = (gd, ...rest) => (gd && gd._fullLayout) ? relayout(gd, ...rest) : Promise.resolve(gd)
      window.Plotly.__wbGuarded = true
    }
  }
  const done = () => { guard(); if (!model.ready) { model.ready = true } }
  const fail = (why) => { model.failed = why }
  const start = () => {
    if (window.Plotly) { done(); return }
    let script = document.querySelector("script[data-wb-plotly]")
    if (!script) {
      // beside Panel's own script: the same server, port and URL prefix the page came from
      const own = [...document.scripts].find((s) => /static\\/extensions\\/panel\\/panel(\\.min)?\\.js/.test(s.src))
      if (!own) { fail("Panel's own script was not found in the page"); return }
      script = document.createElement("script")
      script.src = own.src.replace(/static\\/extensions\\/panel\\/.*$/, model.path)
      script.dataset.wbPlotly = "loading"
      script.addEventListener("load", () => { script.dataset.wbPlotly = "loaded" })
      script.addEventListener("error", () => { script.dataset.wbPlotly = "failed" })
      document.head.appendChild(script)
    } else if (script.dataset.wbPlotly === "loaded") {
      window.Plotly ? done() : fail("the script ran but defined no Plotly")
      return
    }
    script.addEventListener("load", () => window.Plotly ? done() : fail("the script ran but defined no Plotly"))
    script.addEventListener("error", () => fail("the request for " + script.src + " failed"))
  }
  if (window.Plotly) { setTimeout(done, 0) }
  else if (window.requestIdleCallback) { requestIdleCallback(start, { timeout: 2000 }) }  // after the first paint
  else { setTimeout(start, 200) }
  return el
}
"""

    def __init__(self, **params):
        params.setdefault("path", bundled_plotly_path())
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)


def declare_plotly() -> None:
    """Once the browser has plotly.js, add it to the served document's extensions, as if it had been
    declared: Panel then renders Plotly panes without warning that the extension is missing."""
    doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        return
    declared = getattr(pn.state, "_extensions", None)
    if declared is not None and "plotly" not in declared:
        pn.extension("plotly")


#: css class of a part a view asks to have drawn after its tab's first paint (``defer``)
DEFER_CLASS = "wb-defer"


def defer(obj):
    """Mark ``obj`` (a layout or widget) to be drawn after the rest of its tab, like a chart: for a
    part below the fold that costs the browser time (a card's body, a long table)."""
    obj.css_classes = [*(obj.css_classes or []), DEFER_CLASS]
    return obj


def is_deferred(obj) -> bool:
    """The slow things a tab draws: charts (Plotly panes), embedded pages (HTML panes holding an
    ``<iframe>``, e.g. H-Mem's entity graph, a whole vis-network page) and parts marked ``defer``."""
    return (isinstance(obj, pn.pane.Plotly) or (isinstance(obj, pn.pane.HTML) and "<iframe" in str(obj.object))
            or DEFER_CLASS in (getattr(obj, "css_classes", None) or []))


def place(layout, objects: list) -> None:
    """``layout.objects = objects`` for a view that swaps its parts after the app built it (the Structures tab's
    method picker): when a ``PlotHolder`` holds ``layout``, the new parts' charts wait in slots as the first
    ones did. Set directly, a Plotly pane reached the page before plotly.js had arrived on a link straight
    into Structures: Panel's view then calls ``window.Plotly.relayout`` on nothing (the page error "Cannot
    read properties of undefined (reading 'relayout')") and the chart stays blank, while the same page
    reached by clicking, plotly.js loaded by then, drew."""
    holder = getattr(layout, "_wb_plot_holder", None)
    if holder is None or not holder.active:
        layout.objects = list(objects)
    else:
        holder.place(layout, objects)


#: css class of what a slot shows until its pane is drawn (the UI benchmark waits for none to be left)
PLACEHOLDER = "wb-pending"


def _height(pane) -> int:
    """The height to keep free for a pane while it is not drawn (no jump when it arrives)."""
    if getattr(pane, "height", None):
        return int(pane.height)
    fig = pane.object if isinstance(pane, pn.pane.Plotly) else None
    layout = (fig or {}).get("layout") if isinstance(fig, dict) or fig is None else getattr(fig, "layout", None)
    height = layout.get("height") if isinstance(layout, dict) else getattr(layout, "height", None)
    if height:
        return int(height)
    match = re.search(r"height:\s*(\d+)px", str(pane.object)) if isinstance(pane, pn.pane.HTML) else None
    return int(match.group(1)) if match else 300


class PlotHolder:
    """Charts and embedded pages (``is_deferred``) drawn after the rest of their tab.

    ``hold(layout)`` swaps each such pane in a view's layout for a slot (a ``Column``). A slot is
    filled with its pane when the view is first ``show``-n: in a served page a moment after the
    tab's first paint (``delay_ms``, so the tab's text is drawn before the 4.7 MB chart library or a
    vis-network page runs). A filled slot stays filled: taking a drawn chart out of the page when
    its tab is left and putting it back on the next visit raced with Plotly's own asynchronous
    drawing (a page error "reading '_guiEditing'" when the tab was switched mid-draw), and Panel's
    dynamic tabs already drop a hidden tab's content from the page. Plotly panes also wait for
    ``loader.ready`` (plotly.js loaded after the page's first paint) when ``plotly_on_demand``; until
    then their slot says so. Without a served page (a notebook, a test) a slot is filled at once,
    plots once plotly.js is there.
    ``active=False`` leaves layouts as they are."""

    def __init__(self, loader: PlotlyLoader, *, active: bool = True, plotly_on_demand: bool | None = None,
                 delay_ms: int = 150, step_ms: int = 30):
        self.loader, self.active, self.delay_ms, self.step_ms = loader, active, delay_ms, step_ms
        self.plotly_on_demand = active if plotly_on_demand is None else plotly_on_demand
        self.held: dict[int, list[tuple[pn.Column, Any]]] = {}  # id(view layout) -> its slots and panes
        self.shown: dict[int, Any] = {}  # id(view layout) -> the layout, for the views on screen
        loader.param.watch(lambda e: self._loaded(), "ready")
        loader.param.watch(lambda e: self._refill(), "failed")

    @property
    def waiting(self) -> bool:
        """Plots must wait: plotly.js is loaded on demand and has not arrived yet."""
        return self.plotly_on_demand and not self.loader.ready

    @property
    def slots(self) -> list[tuple[pn.Column, Any]]:
        return [pair for pairs in self.held.values() for pair in pairs]

    def hold(self, layout) -> int:
        """Swap the slow panes inside ``layout`` (not already in a slot) for slots; returns how many."""
        if not self.active:
            return 0
        layout._wb_plot_holder = self  # ``place``: children the view swaps in later are held too
        found = self.held.setdefault(id(layout), [])
        n = self._walk(layout, found)
        if n and self._doc() is None:
            self._fill(layout)  # nothing to paint first outside a served page
        return n

    def place(self, layout, objects: list) -> None:
        """Give ``layout`` (a view's layout this holder holds) the children ``objects``, their slow panes in
        slots before they reach the page, and fill them as ``show`` does when the view is on screen."""
        found = self.held.setdefault(id(layout), [])
        staged = pn.Column(*objects)  # walked off the page: its panes are swapped for slots in the list itself
        self._walk(staged, found)
        layout.objects = list(staged.objects)
        if id(layout) in self.shown:
            self.show(layout)

    def _walk(self, layout, found: list) -> int:
        held = 0
        objects = getattr(layout, "objects", None)
        if not isinstance(objects, list):
            return 0
        for i, obj in enumerate(list(objects)):
            if is_deferred(obj):
                slot = pn.Column(self._placeholder(obj), sizing_mode="stretch_width", css_classes=["wb-plot-slot"])
                found.append((slot, obj))
                layout[i] = slot
                held += 1 + self._walk(obj, found)  # a deferred part's own charts wait for plotly.js too
            elif not (isinstance(obj, pn.Column) and "wb-plot-slot" in obj.css_classes):
                held += self._walk(obj, found)
        return held

    def _placeholder_text(self, pane) -> str:
        if isinstance(pane, pn.pane.Plotly) and self.waiting:
            why = self.loader.failed
            return FAILED.format(why=esc(why)) if why else WAITING
        return ""

    def _placeholder(self, pane):
        return pn.pane.HTML(self._placeholder_text(pane), sizing_mode="stretch_width", min_height=_height(pane),
                            css_classes=[PLACEHOLDER])

    @staticmethod
    def _doc():
        doc = pn.state.curdoc
        return doc if doc is not None and doc.session_context is not None else None

    def show(self, layout) -> None:
        """``layout``'s tab is shown: fill its slots after the tab's first paint."""
        self.shown[id(layout)] = layout
        doc = self._doc()
        if doc is None:
            self._fill(layout)
        elif self.held.get(id(layout)):
            doc.add_timeout_callback(lambda: id(layout) in self.shown and self._fill(layout), self.delay_ms)

    def hide(self, layout) -> None:
        """``layout``'s tab is left: a fill still pending for it is dropped (nothing is drawn off
        screen); slots already filled keep their panes (see the class docstring for why)."""
        self.shown.pop(id(layout), None)

    def _fill(self, layout) -> None:
        """Put the held panes of ``layout`` into their slots. In a served page one slot at a time,
        top to bottom, ``step_ms`` apart: each arrives in the browser as its own update, so the
        first cards of a long tab are drawn while the rest are still on their way."""
        doc = self._doc()
        pending = []
        for slot, pane in self.held.get(id(layout), []):
            if isinstance(pane, pn.pane.Plotly) and self.waiting:
                if [getattr(o, "object", None) for o in slot.objects] != [self._placeholder_text(pane)]:
                    slot.objects = [self._placeholder(pane)]  # its message changed (loading -> failed)
            elif not (len(slot.objects) == 1 and slot.objects[0] is pane):
                pending.append((slot, pane))
        for i, (slot, pane) in enumerate(pending):
            slot.objects = [pane]
            if doc is not None and i + 1 < len(pending):  # the rest after this one is drawn
                doc.add_timeout_callback(lambda: id(layout) in self.shown and self._fill(layout), self.step_ms)
                return

    def _loaded(self) -> None:
        if self.waiting:
            return
        declare_plotly()
        self._refill()

    def _refill(self) -> None:
        targets = self.shown.values() if self._doc() is not None else [None]
        for layout in list(targets):
            if layout is None:  # not served: every view's slots
                for key in list(self.held):
                    for slot, pane in self.held[key]:
                        if not (isinstance(pane, pn.pane.Plotly) and self.waiting):
                            slot.objects = [pane]
                        else:
                            slot.objects = [self._placeholder(pane)]
            else:
                self._fill(layout)
