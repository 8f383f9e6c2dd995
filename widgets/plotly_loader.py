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
  const done = () => { if (!model.ready) { model.ready = true } }
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


class PlotHolder:
    """Keeps Plotly panes out of the page until ``loader.ready``: ``hold(layout)`` swaps every Plotly
    pane found in the layout's nested ``objects`` for a slot that shows a notice, and fills each slot
    with its pane when the loader reports ready (at once if it already has). ``active=False`` (a
    page that has plotly already) makes ``hold`` do nothing."""

    def __init__(self, loader: PlotlyLoader, *, active: bool = True):
        self.loader, self.active = loader, active
        self.slots: list[tuple[pn.Column, pn.pane.Plotly]] = []
        loader.param.watch(lambda e: self.release(), "ready")
        loader.param.watch(lambda e: self._show_failure(), "failed")

    @property
    def waiting(self) -> bool:
        return self.active and not self.loader.ready

    def hold(self, layout) -> int:
        """Swap the Plotly panes inside ``layout`` for slots (while plotly.js is not loaded); returns
        how many were held."""
        if not self.waiting:
            return 0
        return self._walk(layout)

    def _walk(self, layout) -> int:
        held = 0
        objects = getattr(layout, "objects", None)
        if not isinstance(objects, list):
            return 0
        for i, obj in enumerate(list(objects)):
            if isinstance(obj, pn.pane.Plotly):
                slot = pn.Column(self._notice(), sizing_mode="stretch_width", css_classes=["wb-plot-slot"])
                self.slots.append((slot, obj))
                layout[i] = slot
                held += 1
            else:
                held += self._walk(obj)
        return held

    def _notice(self):
        why = self.loader.failed
        text = FAILED.format(why=esc(why)) if why else WAITING
        return pn.pane.HTML(text, sizing_mode="stretch_width")

    def release(self) -> None:
        """Put every held pane back in its slot (the library is loaded)."""
        if self.waiting:
            return
        declare_plotly()
        slots, self.slots = self.slots, []
        for slot, pane in slots:
            slot.objects = [pane]

    def _show_failure(self) -> None:
        for slot, _ in self.slots:
            slot.objects = [self._notice()]
