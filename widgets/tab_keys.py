"""``TabKeys``: keyboard and screen-reader access to the app's tab bar (Panel).

Bokeh's tab headers take focus (Tab reaches them) but only react to mouse clicks and carry no ARIA
roles. This invisible ``JSComponent`` finds the app's tab bar (inside Bokeh's shadow roots), marks it
up as a WAI-ARIA tab list (``role="tablist"``/``"tab"``, ``aria-selected``, one tab in the Tab order,
the others reached with the arrow keys) and switches tabs on Enter / Space, ← / → and Home / End, as
the ARIA authoring practices describe for tabs. Clicking still works as before: the keys click the
header Bokeh already listens to. One document-level key listener finds the focused header through the
event's composed path, and the mark-up is renewed on every focus change and click, so headers Bokeh
re-creates keep working. Inline JavaScript, no imports, nothing fetched.
"""
from __future__ import annotations

import param
from panel.custom import JSComponent


class TabKeys(JSComponent):
    """Put it anywhere on the page; ``label`` names the tab list for screen readers."""

    label = param.String(default="Views", doc="aria-label of the tab list")

    _esm = """
    const MOVES = {ArrowRight: 1, ArrowLeft: -1};

    function findHeaders(root, found) {
      for (const el of root.querySelectorAll("*")) {
        if (el.classList && el.classList.contains("bk-headers-wrapper")) { found.push(el); }
        if (el.shadowRoot) { findHeaders(el.shadowRoot, found); }
      }
      return found;
    }

    function markUp(label) {
      const all = findHeaders(document, []);
      for (const headers of all) {
        headers.setAttribute("role", "tablist");
        headers.setAttribute("aria-label", label);
        for (const tab of headers.querySelectorAll(".bk-tab")) {
          const on = tab.classList.contains("bk-active");
          tab.setAttribute("role", "tab");
          tab.setAttribute("aria-selected", on ? "true" : "false");
          tab.tabIndex = on ? 0 : -1;
        }
      }
      return all.length > 0;
    }

    // One document-level listener (keyboard events from inside Bokeh's shadow roots are composed and
    // reach it): it acts on whichever tab header has focus, so headers Bokeh re-creates keep working.
    function onKey(e) {
      const tab = e.composedPath()[0];
      if (!tab || !tab.classList || !tab.classList.contains("bk-tab") || !tab.parentElement) { return; }
      const all = [...tab.parentElement.querySelectorAll(".bk-tab")];
      const i = all.indexOf(tab);
      let next = null;
      if (e.key in MOVES) { next = all[(i + MOVES[e.key] + all.length) % all.length]; }
      else if (e.key === "Home") { next = all[0]; }
      else if (e.key === "End") { next = all[all.length - 1]; }
      else if (e.key === "Enter" || e.key === " ") { next = tab; }
      else { return; }
      e.preventDefault();
      next.click();
      next.focus();
      // Bokeh moves its active class when the model change comes back: renew the mark-up until then
      for (const ms of [0, 100, 400, 1500]) { setTimeout(() => markUp(window.__wbTabKeysLabel), ms); }
    }

    export function render({ model, el }) {
      const marker = document.createElement("span");
      marker.className = "wb-tab-keys";
      marker.hidden = true;
      window.__wbTabKeysLabel = model.label;
      if (!window.__wbTabKeys) {
        window.__wbTabKeys = true;
        document.addEventListener("keydown", onKey, true);
        document.addEventListener("focusin", () => markUp(window.__wbTabKeysLabel), true);
        document.addEventListener("click", () => setTimeout(() => markUp(window.__wbTabKeysLabel), 0), true);
      }
      // the tab bar may be drawn after this component: look again until it is there
      let tries = 0;
      const timer = setInterval(() => { if (markUp(model.label) || ++tries > 100) { clearInterval(timer); } }, 200);
      return marker;
    }
    """
