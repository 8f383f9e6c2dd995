"""The small Panel pieces every tab of the app uses: alerts, HTML panes with links, plain-text tables,
the run's problems, and the process-wide caches. Split out of ``widgets.app`` so that each tab is one module."""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Callable, Sequence

import pandas as pd
import panel as pn
import param
from panel.custom import JSComponent

from widgets.html import esc
from widgets.lifecycle import parse_link


def in_server_session() -> bool:
    """True while a served page's document is being built (``panel serve`` / ``serve``), False in a
    notebook or a plain Python process."""
    doc = pn.state.curdoc
    return doc is not None and doc.session_context is not None


# A served page leaves plotly.js (4.7 MB) out of its head and loads it after the first paint
# (``widgets.plotly_loader``); a notebook or a plain import declares it as before.
pn.extension("tabulator", *(() if in_server_session() else ("plotly",)), notifications=False)

DEFAULT_RUN = "runs/demo"
READ_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError)
TEXT_COLUMNS = ("text", "before", "after", "cause", "question", "prediction", "gold", "judge_reasoning",
                "source_ids")  # source ids wrap: a summary over 20 turns must not run off the table's right edge
CELL_LIMIT = 1000  # characters of a table cell; the full text is one click away (the unit's detail)

#: embeddings of memory texts for semantic search, shared by every session of this process:
#: (embedder name, digest of the texts, count) -> array; the oldest dropped beyond VECTOR_CACHE_SIZE
_VECTORS: OrderedDict[tuple, Any] = OrderedDict()
_VECTORS_LOCK = threading.Lock()
VECTOR_CACHE_SIZE = 32

def message(text: str, kind: str = "warning"):
    """A visible notice: escaped text in an HTML pane styled as Panel's alert. Not ``pn.pane.Alert``,
    which renders Markdown: a file name or error from the run holding ``![x](https://...)`` would be
    fetched as an image (a request beacon), and linkify would turn its URLs into links."""
    from panel.io.resources import CDN_DIST

    return pn.pane.HTML(f'<div role="alert">{esc(text)}</div>', css_classes=["alert", f"alert-{kind}"],
                        stylesheets=[f"{CDN_DIST}css/alerts.css"], sizing_mode="stretch_width")


#: problems listed one by one in the header; the rest are counted by file. A run with a thousand damaged
#: lines would otherwise put a thousand alerts on the page (and re-render them all for each new one)
MAX_PROBLEMS_SHOWN = 20
_SKIPPED_LINE = re.compile(r"^skipped (.+?):\d+: ")


def problem_source(problem: str) -> str:
    """The file a problem is about (``skipped FILE:LINE: reason``), else its lead (``what: ...``)."""
    m = _SKIPPED_LINE.match(problem)
    return m.group(1) if m else problem.split(": ", 1)[0][:120]


def problems_html(problems: Sequence[str], limit: int = MAX_PROBLEMS_SHOWN) -> str:
    """Every problem met reading a run, as one escaped alert: the first ``limit`` listed, the rest
    counted per file (``N more: FILE (count), ...``), so its size and the cost of drawing it do not
    grow with the number of damaged lines."""
    if not problems:
        return ""
    if len(problems) == 1:
        return f'<div role="alert">Problem reading the run — {esc(problems[0])}</div>'
    items = "".join(f"<li>{esc(p)}</li>" for p in problems[:limit])
    more, rest = "", problems[limit:]
    if rest:
        from collections import Counter

        by_file = Counter(problem_source(p) for p in rest).most_common()
        files = ", ".join(f"{esc(f)} ({n:,})" for f, n in by_file[:10]) + (", ..." if len(by_file) > 10 else "")
        more = f"<div>... and {len(rest):,} more not listed: {files}</div>"
    return (f'<div role="alert"><b>Problem reading the run — {len(problems):,} problems</b>'
            f'<ul style="margin:4px 0 2px 0">{items}</ul>{more}</div>')


def html_pane(html: str, **kw):
    return pn.pane.HTML(html, **({"sizing_mode": "stretch_width"} if "width" not in kw else {}), **kw)


class LinkHTML(JSComponent):
    """An HTML pane whose in-app links (``widgets.html.link_html``: turn, unit and question ids)
    call back into Python: a click (or Enter on a focused link) sends the link's target, checked
    by ``widgets.lifecycle.parse_link``, to ``on_link``; a structure card's "jump to" link
    (``a.wb-jump``) scrolls to its section in the pane. The HTML is set as the element's
    ``innerHTML``, exactly like ``pn.pane.HTML``: everything in it is escaped where it is built."""

    object = param.String(default="", doc="the HTML shown (escaped where it was built)")

    _esm = """
export function render({ model, el }) {
  const div = document.createElement("div")
  div.className = "wb-linkhtml"
  div.innerHTML = model.object
  model.on("object", () => { div.innerHTML = model.object })
  const follow = (event) => {
    const jump = event.target.closest("a.wb-jump[data-jump]")
    if (jump) {  // a card's "jump to" link: its heading is in this pane (a page anchor cannot reach a shadow root)
      event.preventDefault()
      const head = div.querySelector("#" + CSS.escape(jump.dataset.jump))
      if (head) { head.scrollIntoView({ behavior: "smooth", block: "start" }) }
      return
    }
    const a = event.target.closest("a.wb-link[data-link]")
    if (!a) { return }
    event.preventDefault()
    let target = null
    try { target = JSON.parse(a.dataset.link) } catch (err) { return }
    model.send_msg(target)
  }
  div.addEventListener("click", follow)
  div.addEventListener("keydown", (event) => { if (event.key === "Enter") { follow(event) } })
  return div
}
"""

    def __init__(self, object: str = "", *, on_link: Callable[[tuple], None] | None = None, **params):
        params.setdefault("sizing_mode", "stretch_width")
        params.setdefault("margin", (5, 10))  # as a pn.pane.HTML's: link panes line up with the HTML panes around them
        super().__init__(object=object, **params)
        self.on_link = on_link

    def _handle_msg(self, data: Any) -> None:
        target = parse_link(data)
        if target is not None and self.on_link is not None:
            self.on_link(target)


#: a column whose cells run longer than this wraps (``textarea``), whatever its name: a method's own list columns
#: (H-Mem's children, a summary's 20 source turns) must not push the table past its right edge
WRAP_AFTER_CHARS = 32


def _wraps(df: pd.DataFrame, c) -> bool:
    if c in TEXT_COLUMNS:
        return True
    if pd.api.types.is_numeric_dtype(df[c]) or df.empty:
        return False
    return bool(df[c].astype(str).str.len().max() > WRAP_AFTER_CHARS)


def column_widths(df: pd.DataFrame) -> dict:
    """The text column wide, every other wrapping column narrow (its long values wrap instead of widening it)."""
    return {c: (520 if c == "text" else 200) for c in df.columns if c == "text" or _wraps(df, c)}


def plain_formatters(df: pd.DataFrame) -> dict:
    """Tabulator formatters that escape: ``textarea`` (wrapping) for long text, else ``plaintext``."""
    return {c: {"type": "textarea" if _wraps(df, c) else "plaintext"} for c in df.columns}


def text_table(df: pd.DataFrame, **kw):
    """A read-only Tabulator whose every column renders as plain text (Tabulator escapes it)."""
    opts = dict(disabled=True, show_index=False, pagination="remote", page_size=15, formatters=plain_formatters(df),
                sizing_mode="stretch_width", layout="fit_data_stretch", widths=column_widths(df))
    return pn.widgets.Tabulator(df, **{**opts, **kw})


def cap_cell(v):
    """A table cell's text cut to ``CELL_LIMIT`` characters (a 200 KB turn must not make the page
    tens of thousands of pixels tall)."""
    if isinstance(v, str) and len(v) > CELL_LIMIT:
        return v[:CELL_LIMIT] + f" … [{len(v) - CELL_LIMIT} more characters]"
    return v


def show_frame(table, df: pd.DataFrame) -> None:
    """Set a table's rows (long texts capped), with plain-text formatters for every column it now has."""
    shown = df.copy()
    for c in shown.columns:
        if not pd.api.types.is_numeric_dtype(shown[c]):
            shown[c] = shown[c].map(cap_cell)
    table.formatters = plain_formatters(shown)
    table.widths = column_widths(shown)
    table.value = shown


# ------------------------------------------------------------------------------------------------
