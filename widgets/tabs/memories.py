"""The Memories tab: each method's stored units, with text and semantic search."""
from __future__ import annotations

import threading
from typing import Callable

import panel as pn

from widgets.html import box, esc
from workbench.methods import display_name, display_options
from widgets.lifecycle import unit_html
from widgets.panel_parts import (
    LinkHTML,
    html_pane,
    in_server_session,
    show_frame,
    text_table,
)
from widgets.plotly_loader import defer
from widgets.run_store import FACT_COLUMN, FLAGS_COLUMN, RunStore, memories_frame


class MemoriesView:
    """Per-method memory table with text/semantic search (the run's own embedder, scores shown),
    kind filter, and the selected unit's lifecycle (``widgets.lifecycle.unit_html``: provenance,
    event history, the answers that saw it; its ids are links)."""

    def __init__(self, store: RunStore):
        self.store = store
        self.follow: Callable[[tuple], None] | None = None  # set by WorkbenchApp: a link was clicked
        self._embedding: set[str] = set()  # methods whose memories a worker thread is embedding
        self.method = pn.widgets.Select(label="method", options=display_options(store.methods))
        self.kinds = pn.widgets.MultiChoice(label="filter kinds", options=[], placeholder="all kinds")
        self.query = pn.widgets.TextInput(label="search memories", placeholder="text (substring) or meaning")
        self.mode = pn.widgets.RadioButtonGroup(options=["text", "semantic"], value="text")
        self.info = html_pane("")
        self.table = text_table(memories_frame([]), selectable=1)
        self.detail = LinkHTML(box("<p class='wb-muted'>Select a memory to see its source turns and history.</p>"),
                               on_link=lambda t: self.follow(t) if self.follow else None)
        for w in (self.method, self.kinds, self.query, self.mode):
            w.param.watch(lambda e: self.refresh(), "value")
        self.table.param.watch(lambda e: self.show_selected(), "selection")
        store.param.watch(lambda e: self.load(), "conv_id")
        # the table is drawn after the controls and the count line (``defer``): Tabulator's first draw
        # was most of this tab's time to show (benchmarks/bench_ui.py; measured in benchmarks/README.md)
        self.panel = pn.Column(pn.Row(self.method, self.kinds, self.query, self.mode), self.info,
                               defer(self.table), self.detail, sizing_mode="stretch_width")
        self.load()

    def load(self) -> None:
        df = self.store.memories(self.method.value) if self.method.value else memories_frame([])
        # Choices.js (MultiChoice) renders option labels as HTML: labels are escaped, values stay raw
        self.kinds.options = {esc(k): k for k in sorted(df["kind"].unique().tolist())} if not df.empty else {}
        self.refresh()

    def refresh(self) -> None:
        from workbench.embed import EmbedderUnavailable

        if not self.method.value:
            self.info.object = box("<p>This run has no saved memories.</p>")
            return
        total = len(self.store.memories(self.method.value))
        try:
            if self.mode.value == "semantic" and self.query.value.strip() and self._embed_first():
                return  # the worker thread calls refresh again when the embeddings are there
            self.results = self.store.search(self.method.value, self.query.value, mode=self.mode.value,
                                             kinds=self.kinds.value or None)
        except EmbedderUnavailable as exc:
            # never a stand-in model: the scores would not be the ones the run's methods saw
            self.results = memories_frame([])
            show_frame(self.table, self.results)
            self.info.object = box(f"<p class='wb-refresh' style='padding:4px'><b>Semantic search is unavailable "
                                   f"for {esc(display_name(self.method.value))}:</b> {esc(exc)}. "
                                   "Text search still works.</p>")
            return
        show_frame(self.table, self.results)
        label = f" · {esc(self.store.embedder_label(self.method.value))}" if self.mode.value == "semantic" else ""
        ranked = " · ranked by score (first column)" if self.mode.value == "semantic" and self.query.value.strip() \
            else ""
        # each column says which; the line says how many, so an empty first page of it is not read as "none"
        hard = self._flagged(FLAGS_COLUMN, "{n} hard to read")
        wrong = self._flagged(FACT_COLUMN, "{n} facts flagged against their turns")
        self.info.object = box(f"{len(self.results)} of {total} units of <b>{esc(display_name(self.method.value))}</b>"
                               f"{ranked}{label}{hard}{wrong}")

    def _flagged(self, column: str, words: str) -> str:
        """`` · ⚠ 3 hard to read (the “hard to read” column)`` when some shown unit has a flag in ``column``."""
        n = int((self.results[column] != "").sum()) if column in self.results.columns else 0
        return (f" · <span class='wb-flag'>⚠ {esc(words.format(n=n))}</span> (the “{esc(column)}” column)"
                if n else "")

    def embedding_status(self) -> str:
        """The line shown while the first semantic search embeds every memory of the method."""
        method = self.method.value
        emb = self.store.embedder(method)
        name = getattr(emb, "name", type(emb).__name__)
        n = len(self.store.memories(method))
        # progress, not an error: neutral colours, a spinner, and a live region that screen readers announce
        return (f"<p class='wb-progress' role='status' aria-live='polite' style='padding:4px 8px'>"
                f"<span class='wb-spin' aria-hidden='true'></span>embedding {n} memories of "
                f"<b>{esc(display_name(method))}</b> "
                f"with {esc(name)} for the first semantic search… <span class='wb-muted'>(once per method: later "
                "searches reuse them)</span></p>")

    def _embed_first(self) -> bool:
        """In a served page, when the method's memories are not embedded yet: say so (status line,
        the table's loading spinner), embed them in a worker thread and return True; the search runs
        when they are done. Elsewhere (a notebook, a test) return False: the search embeds inline."""
        method = self.method.value
        if not in_server_session() or self.store.has_vectors(method):
            return False
        self.info.object = box(self.embedding_status())
        self.table.loading = True
        if method in self._embedding:
            return True
        self._embedding.add(method)
        doc = pn.state.curdoc
        self.start_embedding(method, doc)
        return True

    def start_embedding(self, method: str, doc) -> None:
        """Embed ``method``'s memories off the event loop, then search again on it."""
        def work():
            try:
                self.store.vectors(method)  # a read error is recorded in the store's errors
            except Exception as exc:  # in a worker thread nobody else would see it: shown in the header
                self.store.vector_failed(method, exc)
            finally:
                doc.add_next_tick_callback(done)

        def done():
            self._embedding.discard(method)
            try:
                self.refresh()  # the search the user typed, now with the embeddings
            finally:
                self.table.loading = False

        threading.Thread(target=work, name=f"embed-{method}", daemon=True).start()

    def show_selected(self) -> None:
        if not self.table.selection:
            return
        row = self.results.iloc[self.table.selection[0]]  # the full texts, not the capped cells
        self.detail.object = self.unit_html(row)

    def unit_html(self, row) -> str:
        index = self.store.lifecycle()
        if index is None:
            return box("<p class='wb-muted'>The run's conversation could not be read, so no lifecycle.</p>")
        return unit_html(index.unit(self.method.value, row["id"]), links=True)
