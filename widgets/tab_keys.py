"""``TabKeys``: keyboard and screen-reader access to the app's tab bar (Panel).

Bokeh's tab headers take focus (Tab reaches them) but only react to mouse clicks and carry no ARIA
roles. This invisible ``JSComponent`` finds the app's tab bar (inside Bokeh's shadow roots), marks it
up as a WAI-ARIA tab list (``role="tablist"``/``"tab"``, ``aria-selected``, one tab in the Tab order,
the others reached with the arrow keys) and switches tabs on Enter / Space, ← / → and Home / End, as
the ARIA authoring practices describe for tabs. Clicking still works as before: the keys click the
header Bokeh already listens to. One document-level key listener finds the focused header through the
event's composed path, and the mark-up is renewed on every focus change and click, so headers Bokeh
re-creates keep working (after a switch, again until the server's answer has re-drawn them); when
Bokeh re-creates them right after a key switched tabs, the focus that went with the removed header
is put back on the tab the keys chose (never taken from elsewhere).

Two more things the keyboard needs, done here because only this component reaches into Bokeh's shadow
roots: the tab bar comes first in the Tab order (Bokeh puts the header after the tab's content in the
DOM, so Tab went through every control of the open tab before reaching the bar drawn above it; the
header is moved in front, where its grid area keeps it drawn as before), and every component gets the
clearly visible focus ring ``widgets.html.FOCUS_CSS`` (adopted into each shadow root). Inline
JavaScript, no imports, nothing fetched.
"""
from __future__ import annotations

import param
from panel.custom import JSComponent

from widgets.html import FOCUS_CSS


class TabKeys(JSComponent):
    """Put it anywhere on the page; ``label`` names the tab list for screen readers."""

    label = param.String(default="Views", doc="aria-label of the tab list")
    focus_css = param.String(default=FOCUS_CSS, doc="the focus ring, adopted into every shadow root")

    _esm = """
    const MOVES = {ArrowRight: 1, ArrowLeft: -1};

    // the shared focus ring, one sheet adopted by the document and every shadow root the walk meets
    let focusSheet = null;
    function adoptFocus(root) {
      if (!window.__wbFocusCss || !("adoptedStyleSheets" in root)) { return; }
      if (!focusSheet) { focusSheet = new CSSStyleSheet(); focusSheet.replaceSync(window.__wbFocusCss); }
      if (!root.adoptedStyleSheets.includes(focusSheet)) {
        root.adoptedStyleSheets = [...root.adoptedStyleSheets, focusSheet];
      }
    }

    function findHeaders(root, found) {
      adoptFocus(root);
      for (const el of root.querySelectorAll("*")) {
        if (el.classList && el.classList.contains("bk-headers-wrapper")) { found.push(el); }
        if (el.shadowRoot) { findHeaders(el.shadowRoot, found); }
      }
      return found;
    }

    // Bokeh appends the tab header after the tabs' content, so Tab reached every control of the open tab
    // before the tab bar drawn above it: move the header in front (its grid area keeps where it is drawn)
    function headerFirst(headers) {
      const header = headers.parentElement;
      const root = header && header.parentNode;
      if (!root) { return; }
      const first = [...root.children].find((c) => c.tagName !== "STYLE" && c.tagName !== "LINK");
      if (!first || first === header) { return; }
      const had = deepActive();
      root.insertBefore(header, first);
      if (had && header.contains(had) && deepActive() !== had) { had.focus(); }
    }

    function deepActive() {
      let el = document.activeElement;
      while (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; }
      return el;
    }

    // The header the keys moved to: Bokeh re-creates the headers when the server's answer to the switch
    // comes back, and the focused one is then gone; it gets the focus back (for a few seconds at most).
    function refocus(headers) {
      const want = window.__wbTabFocus;
      if (!want || Date.now() > want.until) { return; }
      const tab = [...headers.querySelectorAll(".bk-tab")].find((t) => t.textContent.trim() === want.text);
      if (!tab) { return; }
      const now = deepActive();
      // only focus that was lost (its element removed: the body or an empty shadow host has it), never
      // focus the reader moved somewhere else
      const lost = !now || now === document.body || (now.shadowRoot && !now.shadowRoot.activeElement);
      if (lost) { tab.focus(); }
    }

    // Headers Bokeh re-creates inside a wrapper it keeps are marked up (and refocused) at once
    const watched = new WeakSet();

    function watch(headers) {
      if (watched.has(headers)) { return; }
      watched.add(headers);
      new MutationObserver(() => markUp(window.__wbTabKeysLabel)).observe(headers, {childList: true, subtree: true});
    }

    function markUp(label) {
      const all = findHeaders(document, []);
      for (const headers of all) {
        watch(headers);
        headerFirst(headers);
        headers.setAttribute("role", "tablist");
        headers.setAttribute("aria-label", label);
        for (const tab of headers.querySelectorAll(".bk-tab")) {
          const on = tab.classList.contains("bk-active");
          tab.setAttribute("role", "tab");
          tab.setAttribute("aria-selected", on ? "true" : "false");
          tab.tabIndex = on ? 0 : -1;
        }
        refocus(headers);
      }
      return all.length > 0;
    }

    // Bokeh re-draws the headers when the server's answer to a switch comes back (later on a busy machine)
    function renewSoon() {
      for (const ms of [0, 100, 250, 400, 700, 1000, 1500, 2500, 4000]) {
        setTimeout(() => markUp(window.__wbTabKeysLabel), ms);
      }
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
      window.__wbTabFocus = {text: next.textContent.trim(), until: Date.now() + 5000};
      next.click();
      next.focus();
      // Bokeh moves its active class when the model change comes back: renew the mark-up until then
      renewSoon();
    }

    export function render({ model, el }) {
      const marker = document.createElement("span");
      marker.className = "wb-tab-keys";
      marker.hidden = true;
      window.__wbTabKeysLabel = model.label;
      window.__wbFocusCss = model.focus_css;
      if (!window.__wbTabKeys) {
        window.__wbTabKeys = true;
        document.addEventListener("keydown", onKey, true);
        document.addEventListener("focusin", () => markUp(window.__wbTabKeysLabel), true);
        document.addEventListener("pointerdown", () => { window.__wbTabFocus = null; }, true);
        document.addEventListener("click", (e) => {
          const t = e.composedPath()[0];
          if (t && t.closest && t.closest(".bk-tab")) { renewSoon(); }
          else { setTimeout(() => markUp(window.__wbTabKeysLabel), 0); }
        }, true);
      }
      // the tab bar may be drawn after this component: look again until it is there
      let tries = 0;
      const timer = setInterval(() => { if (markUp(model.label) || ++tries > 100) { clearInterval(timer); } }, 200);
      return marker;
    }
    """
