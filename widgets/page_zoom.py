"""``PageZoom``: the whole page drawn larger, for a projector (the app's presentation mode).

A teacher projecting the app at 1280x720 needs text readable from the back of a room; browser zoom works but is
one more thing to find, and it is lost with the link. The app's ``?present=1`` puts this invisible
``JSComponent`` on the page: it sets CSS ``zoom`` on the document's body, which scales every component, those
inside Bokeh's shadow roots included, and puts it back when the component is removed or ``zoom`` set to 1.
Inline JavaScript, no imports, nothing fetched.
"""
from __future__ import annotations

import param
from panel.custom import JSComponent

#: the presentation mode's zoom: at 1280x720 the tab bar and the first answer row of the Question tab still fit
PRESENT_ZOOM = 1.25


class PageZoom(JSComponent):
    """Put it anywhere on the page; ``zoom`` is the factor (1: as the browser draws it)."""

    zoom = param.Number(default=PRESENT_ZOOM, bounds=(0.5, 3.0), doc="CSS zoom of the whole page")

    _esm = """
    export function render({ model, el }) {
      const marker = document.createElement("span");
      marker.className = "wb-page-zoom";
      marker.hidden = true;
      const apply = () => { document.body.style.zoom = model.zoom === 1 ? "" : String(model.zoom); };
      apply();
      model.on("zoom", apply);
      model.on("remove", () => { document.body.style.zoom = ""; });
      return marker;
    }
    """
