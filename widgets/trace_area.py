"""``TraceArea``: the app's trace timeline box, focusable and stepped by keys or clicks (Panel).

Panel's HTML pane cannot listen to keys, so the timeline HTML (``widgets.trace_timeline``) is shown
by this small ``JSComponent``: a box that takes focus (click it or Tab to it) and, while focused,
moves ``index`` on ← / k and → / j (Home / End: first / last step); clicking a waterfall row
(``data-step``) jumps to that step. The Python side (``widgets.app.TracesView``) watches ``index``
and sends back new ``html``; the box keeps focus across updates, so a key can be held down. The
module is inline JavaScript with no imports: nothing is fetched from a network.
"""
from __future__ import annotations

import param
from panel.custom import JSComponent


class TraceArea(JSComponent):
    """Shows ``html``; keys and row clicks set ``index`` (clamped to ``n_steps``)."""

    html = param.String(default="", doc="the timeline HTML (escaped by widgets.trace_timeline)")
    index = param.Integer(default=0, doc="the step shown; set from the browser by keys and clicks")
    n_steps = param.Integer(default=0)

    # long notes wrap, and nothing spills out of the box (two areas stand side by side in Traces)
    _stylesheets = [".wb-trace-area {outline: none; border-radius: 4px; overflow-x: auto; overflow-wrap: break-word;}"
                    ".wb-trace-area .wb-qv .wb-untrusted {white-space: normal;}"
                    ".wb-trace-area:focus-visible, .wb-trace-area:focus {box-shadow: 0 0 0 2px #4263eb;}"]

    _esm = """
    const STEP = {ArrowLeft: -1, k: -1, ArrowRight: 1, j: 1};

    export function render({ model, el }) {
      const area = document.createElement("div");
      area.className = "wb-trace-area wb-clickable";
      area.tabIndex = 0;
      area.setAttribute("role", "region");
      area.setAttribute("aria-label", "Trace timeline: left and right arrow keys, or k and j, step through it");
      // A key pressed before the server's reply to the previous one counts from the step asked for,
      // not from the (older) step the server last confirmed: held-down keys do not lose presses.
      let target = null;
      const base = () => (target === null ? model.index : target);
      const go = (i) => {
        if (model.n_steps > 0) { target = Math.max(0, Math.min(model.n_steps - 1, i)); model.index = target; }
      };
      model.on("index", () => { if (model.index === target) { target = null; } });
      model.on("n_steps", () => { target = null; });
      const show = () => {
        area.innerHTML = model.html;
        const box = area.querySelector(".wb-wf"), row = area.querySelector(".wb-wf-current");
        if (box && row && (row.offsetTop < box.scrollTop ||
                           row.offsetTop + row.offsetHeight > box.scrollTop + box.clientHeight)) {
          box.scrollTop = row.offsetTop - box.clientHeight / 3;  // keep the current step in view
        }
      };
      area.addEventListener("keydown", (e) => {
        if (e.altKey || e.ctrlKey || e.metaKey) { return; }
        if (e.key in STEP) { go(base() + STEP[e.key]); }
        else if (e.key === "Home") { go(0); }
        else if (e.key === "End") { go(model.n_steps - 1); }
        else { return; }
        e.preventDefault();
      });
      area.addEventListener("click", (e) => {
        const row = e.target.closest("[data-step]");
        if (row) { go(parseInt(row.dataset.step, 10)); area.focus({preventScroll: true}); }
      });
      model.on("html", show);
      show();
      return area;
    }
    """
