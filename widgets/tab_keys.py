"""``TabKeys``: keyboard and screen-reader access to the app's tab bar (Panel).

Bokeh's tab headers take focus (Tab reaches them) but only react to mouse clicks and carry no ARIA
roles. This invisible ``JSComponent`` finds the app's tab bar (inside Bokeh's shadow roots), marks it
up as a WAI-ARIA tab list (``role="tablist"``/``"tab"``, ``aria-selected``, one tab in the Tab order,
the others reached with the arrow keys) and switches tabs on Enter / Space, ← / → and Home / End, as
the ARIA authoring practices describe for tabs. Clicking still works as before: the keys click the
header Bokeh already listens to. Inline JavaScript, no imports, nothing fetched.
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

    function markUp(headers, label) {
      headers.setAttribute("role", "tablist");
      headers.setAttribute("aria-label", label);
      const tabs = [...headers.querySelectorAll(".bk-tab")];
      tabs.forEach((tab) => {
        const on = tab.classList.contains("bk-active");
        tab.setAttribute("role", "tab");
        tab.setAttribute("aria-selected", on ? "true" : "false");
        tab.tabIndex = on ? 0 : -1;
        if (!tab.dataset.wbKeys) {
          tab.dataset.wbKeys = "1";
          tab.addEventListener("keydown", (e) => {
            const all = [...headers.querySelectorAll(".bk-tab")];
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
          });
        }
      });
    }

    export function render({ model, el }) {
      const marker = document.createElement("span");
      marker.className = "wb-tab-keys";
      marker.hidden = true;
      let seen = new Set();
      const apply = () => {
        for (const headers of findHeaders(document, [])) {
          markUp(headers, model.label);
          if (!seen.has(headers)) {
            seen.add(headers);
            new MutationObserver(() => markUp(headers, model.label))
              .observe(headers, {subtree: true, attributes: true, attributeFilter: ["class"], childList: true});
          }
        }
        return seen.size > 0;
      };
      // the tab bar may be drawn after this component: look again until it is there
      let tries = 0;
      const timer = setInterval(() => { if (apply() || ++tries > 100) { clearInterval(timer); } }, 200);
      return marker;
    }
    """
