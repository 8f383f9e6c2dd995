"""The Memory Workbench Panel app: browse a saved run directory, read-only.

    panel serve widgets/app.py --auth-module widgets/host_auth.py --address 127.0.0.1 --args --run runs/demo
    python -m widgets.app --run runs/demo --port 5006        # or serve(run_dir) from Python / the CLI

The app has no login of its own: it binds to 127.0.0.1, and ``serve``/``python -m widgets.app``
refuse any other address unless told ``--allow-remote`` (then print a warning). To share it,
put it behind Panel's own ``--basic-auth`` or OAuth options (``--oauth-provider`` ...) or a
proxy that authenticates.

Tabs: Question (the app opens on it: one question, every method's answer, judge and F1 flags,
failure attribution, the rank of gold evidence in what each reader saw, that context expandable,
and a button to the method's trace), Conversations, Memories (full-text and embedding search,
kind filter, the selected unit's lifecycle), Lifecycle (a turn -> every unit each method derived
from it -> that unit's events and the answers whose reader saw it; ids are links), Traces (each
method's answer to a question, stepped through), Events (every method's changes on the
conversation's own time axis, paged table with before/after side by side), Results
(per-category tables with bootstrap CIs, cost vs accuracy) and Structures (method-specific views
registered in ``STRUCTURE_VIEWS``).

Structure (param/Panel style): ``RunStore`` owns the data, read through ``workbench.rundir.RunDir``
only (never unpickling); one small view class per tab; ``build_app`` composes them. A missing or
malformed part of the run shows a message in its tab, never a traceback. All conversation and
model text is escaped (``widgets.html.esc``) and tables render cells as plain text. A run
directory may come from someone else: folder and file names, JSON keys and manifest values are
data too, escaped wherever they become HTML (card titles, table headers, option labels); long
texts are cut in tables and collapsed behind an expand control (``<details>``) elsewhere.
"""
from __future__ import annotations

import argparse
from contextlib import contextmanager
import hashlib
import importlib
import os
import pkgutil
import re
import ipaddress
import socket
import sys
import threading
from pathlib import Path
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import panel as pn
import param
from panel.custom import JSComponent

from widgets.cost_accuracy import (ALL, cost_accuracy_figure, headline, judge_banner_html, metric_values,
                                   paired_frame, points_frame, results_frame, run_audits, summary_frame,
                                   summary_table_html, table_metric)
from widgets.event_timeline import KIND_ORDER, EventLog, timeline_figure
from widgets.host_guard import allowed_names, guard_hosts, host_allowed
from widgets.html import box, esc, json_html
from widgets.lifecycle import LifecycleIndex, parse_link, turn_html, unit_html
from widgets.mechanisms_census import census_pane
from widgets.plotly_loader import PlotHolder, PlotlyLoader, defer
from widgets.tab_keys import TabKeys
from widgets.question import CSS as QUESTION_CSS
from widgets.question import (answer_flags_html, gold_html, judge_notes_html, methods_html, question_html,
                              question_options, question_state)
from widgets.structure_cards import CARDS as STRUCTURE_CARDS
from widgets.structure_cards import declared_view
from widgets.trace_area import TraceArea
from widgets.trace_timeline import TraceTimeline, keys_html, timeline_html
from workbench.methods import method_base
from workbench.rundir import RunDir

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
TEXT_COLUMNS = ("text", "before", "after", "cause", "question", "prediction", "gold", "judge_reasoning")
CELL_LIMIT = 1000  # characters of a table cell; the full text is one click away (the unit's detail)

#: embeddings of memory texts for semantic search, shared by every session of this process:
#: (embedder name, digest of the texts, count) -> array; the oldest dropped beyond VECTOR_CACHE_SIZE
_VECTORS: OrderedDict[tuple, Any] = OrderedDict()
_VECTORS_LOCK = threading.Lock()
VECTOR_CACHE_SIZE = 32

#: method name -> function(structures: dict, conversation) -> panel object (the Structures tab)
STRUCTURE_VIEWS: dict[str, Callable[[dict, Any], Any]] = {}


def register_structure_view(method: str, *, files: bool = False):
    """Decorator: show ``fn(structures, conversation)`` in the Structures tab for ``method``.
    ``files=True``: called as ``fn(structures, conversation, **files)`` with the memory's
    ``memories`` rows, ``params`` and ``backend_params`` (params.json contents) and ``views``
    (the methods that have a structure view)."""
    def deco(fn):
        fn.structure_files = files  # read by StructuresView.section
        STRUCTURE_VIEWS[method] = fn
        return fn
    return deco


def _card_view(card):
    """A structure card of ``widgets.structure_cards`` (HTML from the saved files) as a Panel view."""
    def view(structures, conversation, **files):
        return html_pane(card(structures, conversation, **files))
    view.__doc__ = card.__doc__
    return view


for _kind, _card in STRUCTURE_CARDS.items():  # under their kind: a method declares which it uses
    register_structure_view(_kind, files=True)(_card_view(_card))


def views_available() -> list[str]:
    """The names with a structure view here: registered views (kinds and method names) and every registered
    method whose declared kind has one."""
    from workbench.methods import REGISTRY

    return sorted({*STRUCTURE_VIEWS, *(n for n in REGISTRY if (declared_view(n) or "") in STRUCTURE_VIEWS)})


def load_structure_views() -> list[str]:
    """Import every ``widgets/*_view.py`` / ``*_views.py`` module (each registers its views here).
    Returns the problems met: a module that fails to import is reported in the app, not raised."""
    import widgets

    problems = []
    for info in pkgutil.iter_modules(widgets.__path__):
        if info.name.endswith(("_view", "_views")):
            try:
                importlib.import_module(f"widgets.{info.name}")
            except Exception as exc:  # an optional view must not stop the app; shown in its header
                problems.append(f"widgets.{info.name}: {type(exc).__name__}: {exc}")
    return problems


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
    by ``widgets.lifecycle.parse_link``, to ``on_link``. The HTML is set as the element's
    ``innerHTML``, exactly like ``pn.pane.HTML``: everything in it is escaped where it is built."""

    object = param.String(default="", doc="the HTML shown (escaped where it was built)")

    _esm = """
export function render({ model, el }) {
  const div = document.createElement("div")
  div.className = "wb-linkhtml"
  div.innerHTML = model.object
  model.on("object", () => { div.innerHTML = model.object })
  const follow = (event) => {
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
        super().__init__(object=object, **params)
        self.on_link = on_link

    def _handle_msg(self, data: Any) -> None:
        target = parse_link(data)
        if target is not None and self.on_link is not None:
            self.on_link(target)


def plain_formatters(df: pd.DataFrame) -> dict:
    """Tabulator formatters that escape: ``textarea`` (wrapping) for long text, else ``plaintext``."""
    return {c: {"type": "textarea" if c in TEXT_COLUMNS else "plaintext"} for c in df.columns}


def text_table(df: pd.DataFrame, **kw):
    """A read-only Tabulator whose every column renders as plain text (Tabulator escapes it)."""
    opts = dict(disabled=True, show_index=False, pagination="remote", page_size=15, formatters=plain_formatters(df),
                sizing_mode="stretch_width", layout="fit_data_stretch", widths={"text": 520})
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
    table.value = shown


# ------------------------------------------------------------------------------------------------
class RunStore(param.Parameterized):
    """A saved run, read through ``RunDir``; every read problem is recorded in ``errors``."""

    run_dir = param.String(default=DEFAULT_RUN, doc="run directory (manifest.json, conversations/, ...)")
    conv_id = param.Selector(default=None, objects=[], allow_None=True, doc="conversation shown in every tab")
    errors = param.List(default=[], doc="problems met while reading the run (shown in the app, not raised)")

    def __init__(self, run_dir=DEFAULT_RUN, *, embedder=None, **params):
        super().__init__(run_dir=str(run_dir), **params)
        self.given_embedder = embedder  # overrides the run's own (tests, a caller who knows better)
        self._embedders: dict[str, Any] = {}
        self._vectors: OrderedDict[tuple, Any] = OrderedDict()  # for an embedder given to the app
        self._vectors_failed: set[tuple] = set()  # embedding these failed (reported in errors)
        self.run, self.manifest, self.methods, self._cache = None, {}, [], {}
        self._cache_lock, self._key_locks = threading.Lock(), {}
        self._noted: set[str] = set()  # the texts in ``errors``, for a constant-time "seen already?"
        try:
            self.run = RunDir(self.run_dir)
        except FileNotFoundError as exc:
            self.note(str(exc))
            return
        self.manifest = self.safe("manifest.json", self.run.manifest, {})
        ids = self.safe("conversations/", self.run.conversation_ids, [])
        self.param.conv_id.objects = ids
        self.conv_id = ids[0] if ids else None
        self.methods = self.safe("memories/", self.run.methods, [])

    def embedder(self, method: str | None = None):
        """The embedder that semantic search over ``method``'s memories uses: the one given to the
        app, else the one the run's manifest names for that method, rebuilt offline
        (``workbench.embed.offline_embedder``). Raises ``EmbedderUnavailable`` when the run's
        embedder cannot be rebuilt here: search then says so instead of using another model."""
        from workbench.embed import EmbedderUnavailable, offline_embedder
        from workbench.eval.manifest import run_embedder_name

        if self.given_embedder is not None:
            return self.given_embedder
        name = run_embedder_name(self.manifest, method)
        if not name:
            raise EmbedderUnavailable("the run's manifest does not name the embedder it used")
        if name not in self._embedders:
            try:
                self._embedders[name] = offline_embedder(name)
            except EmbedderUnavailable as exc:
                self._embedders[name] = exc
        got = self._embedders[name]
        if isinstance(got, Exception):
            raise got
        return got

    def embedder_label(self, method: str | None = None) -> str:
        """What semantic search over ``method`` uses, in words (or why it cannot run)."""
        from workbench.embed import EmbedderUnavailable

        try:
            emb = self.embedder(method)
        except EmbedderUnavailable as exc:
            return f"semantic search is unavailable: {exc}"
        name = getattr(emb, "name", type(emb).__name__)
        kind = " — lexical hashing, not a semantic model" if str(name).startswith("hash") else ""
        whose = "given to the app" if self.given_embedder is not None else "the run's own embedder (manifest)"
        return (f"semantic search: cosine similarity between the query and each saved memory text, both embedded "
                f"with {name}, {whose}{kind}")

    def note(self, text: str) -> None:
        self.note_all([text])

    def note_all(self, texts) -> None:
        """Record several problems at once (each once): one change of ``errors``, so the page redraws
        its problems once per file read, not once per damaged line."""
        new = [t for t in dict.fromkeys(texts) if t not in self._noted]
        if new:
            self._noted.update(new)
            self.errors = self.errors + new

    def safe(self, what: str, fn, default):
        """Call a reader; on a read error record ``what: error`` and return ``default``. Lines the
        tolerant JSONL reader skipped (``file:line: reason``) are recorded too."""
        try:
            return fn()
        except READ_ERRORS as exc:
            self.note(f"{what}: {type(exc).__name__}: {exc}")
            return default
        finally:
            if self.run is not None and self.run.problems:
                problems = list(self.run.problems)
                self.run.problems.clear()
                self.note_all(f"skipped {problem}" for problem in problems)

    def cached(self, key, what, fn, default):
        """``fn()`` read once per key (its failure recorded and ``default`` kept). The background warm
        thread (``warm``) and the page's callbacks share it: a key being read by one is waited for by
        the other, not read twice."""
        with self._cache_lock:
            if key in self._cache:
                return self._cache[key]
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._cache:
                self._cache[key] = self.safe(what, fn, default)
        return self._cache[key]

    def warm(self) -> None:
        """Read and compute, ahead of the tabs that show them, the parts that take time: the unit
        lifecycle, every method's events, structures, memory rows and params, the results tables.
        Pure data (no Panel object is touched), so a served page runs it in a worker thread after
        its first paint; a tab shown meanwhile waits only for the part it needs."""
        if self.run is None or self.conv_id is None:
            return
        self.lifecycle()
        self.all_events()
        metric = self.auto_metric()
        self.summary(metric)
        self.paired(metric)
        for m in self.methods:
            self.structures(m)
            self.params(m)
            self.params(m, backend=True)

    # -- readers ---------------------------------------------------------------------------------
    def conversation(self, conv_id=None):
        cid = conv_id or self.conv_id
        if self.run is None or cid is None:
            return None
        return self.cached(("conv", cid), f"conversations/{cid}.json", lambda: self.run.conversation(cid), None)

    def results(self) -> list[dict]:
        return [] if self.run is None else self.cached("results", "results.jsonl", self.run.results, [])

    def memories(self, method: str, conv_id=None) -> pd.DataFrame:
        cid = conv_id or self.conv_id
        if self.run is None or cid is None:
            return pd.DataFrame()
        return self.cached(("mem", method, cid), f"memories/{method}/{cid}/memories.jsonl",
                           lambda: memories_frame(self.run.memories(method, cid)), memories_frame([]))

    def events(self, method: str, conv_id=None) -> list:
        cid = conv_id or self.conv_id
        if self.run is None or cid is None:
            return []
        return self.cached(("ev", method, cid), f"memories/{method}/{cid}/events.jsonl",
                           lambda: self.run.events(method, cid), [])

    def all_events(self, conv_id=None) -> list:
        """Every method's events, each labelled with its method folder (MemR3's log is its
        backend's, whose events carry the backend's name)."""
        from dataclasses import replace

        return [e if e.method == m else replace(e, method=m) for m in self.methods for e in self.events(m, conv_id)]

    def lifecycle(self, conv_id=None) -> LifecycleIndex | None:
        """Turn -> units -> events/answers over the conversation (``widgets.lifecycle``)."""
        cid = conv_id or self.conv_id
        conv = self.conversation(cid)
        if conv is None:
            return None
        def build():
            index = LifecycleIndex(conv, {m: self.memory_rows(m, cid) for m in self.methods},
                                   {m: self.events(m, cid) for m in self.methods}, self.results())
            self.note_all(f"unit lifecycle: {problem}" for problem in index.problems)
            return index

        return self.cached(("life", cid), "unit lifecycle", build, None)

    def structures(self, method: str, conv_id=None) -> dict:
        cid = conv_id or self.conv_id
        if self.run is None or cid is None:
            return {}
        return self.cached(("st", method, cid), f"memories/{method}/{cid}/structures.json",
                           lambda: self.run.structures(method, cid), {})

    def memory_rows(self, method: str, conv_id=None) -> list[dict]:
        """``memories.jsonl`` as its rows (the structure cards read fields the Memories table drops)."""
        cid = conv_id or self.conv_id
        if self.run is None or cid is None:
            return []
        return self.cached(("memrows", method, cid), f"memories/{method}/{cid}/memories.jsonl",
                           lambda: self.run.memories(method, cid), [])

    def params(self, method: str, conv_id=None, *, backend: bool = False) -> dict:
        cid = conv_id or self.conv_id
        if self.run is None or cid is None:
            return {}
        name = f"memories/{method}/{cid}/{'backend/' if backend else ''}params.json"
        return self.cached(("params", method, cid, backend), name,
                           lambda: self.run.params(method, cid, backend=backend), {})

    def results_table(self) -> pd.DataFrame:
        """``results.jsonl`` as a flat frame, one column per score (``widgets.cost_accuracy.results_frame``)."""
        return self.cached("results_frame", "results.jsonl (as a table)", lambda: results_frame(self.results()),
                           results_frame([]))

    def auto_metric(self) -> str | None:
        """The metric the Results tab opens on: the judge when its audit passes, else the checker's verdict."""
        def pick():
            frame = self.results_table()
            if frame.empty:
                return None
            try:
                from workbench.eval.report import auto_metric
            except ImportError:
                return None
            return auto_metric(frame, self.audits())
        return self.cached("auto_metric", "choosing the results metric", pick, None)

    def summary(self, metric: str | None) -> tuple[pd.DataFrame, str]:
        """(per method x category table with bootstrap CIs, how it was computed) for ``metric``."""
        return self.cached(("summary", metric), f"results summary ({metric})",
                           lambda: summary_frame(self.results_table(), metric=metric, audits=self.audits()),
                           (pd.DataFrame(), "no rows"))

    def paired(self, metric: str | None) -> pd.DataFrame:
        """Paired differences to Full-Context for the metric the summary of ``metric`` was computed with."""
        def compute():
            table, _ = self.summary(metric)
            return paired_frame(self.results_table(), table_metric(table, metric), audits=self.audits())
        return self.cached(("paired", metric), f"paired differences ({metric})", compute, pd.DataFrame())

    def audits(self) -> dict:
        """Judge audits of the run (manifest first, then the audit cache): whether a judge is trusted."""
        return self.cached("audits", "judge audits", lambda: run_audits(self.manifest, self.results()), {})

    def answers(self, qa_id: str) -> dict:
        """``method -> (result row, Answer)`` for one question."""
        from workbench.trace import Answer

        out = {}
        for row in self.results():
            if row.get("qa_id") == qa_id and row.get("answer"):
                ans = self.safe(f"results.jsonl answer of {row.get('method')} / {qa_id}",
                                lambda r=row: Answer.from_dict(r["answer"]), None)
                if ans is not None:
                    out[str(row.get("method", "?"))] = (row, ans)
        return out

    # -- memory search ---------------------------------------------------------------------------
    def vector_key(self, method: str, conv_id=None) -> tuple:
        """What the embeddings of ``method``'s memories depend on: the embedder's name and the texts
        (a digest of them and their count)."""
        emb = self.embedder(method)
        df = self.memories(method, conv_id)
        texts = df["text"].tolist() if not df.empty else []
        digest = hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
        return (str(getattr(emb, "name", None) or type(emb).__name__), digest, len(texts))

    def _vector_cache(self) -> OrderedDict:
        """The run's own embedder is rebuilt from its name, so its vectors are shared by every session
        of this process (``_VECTORS``); an embedder given to the app is only known to this store."""
        return _VECTORS if self.given_embedder is None else self._vectors

    def has_vectors(self, method: str, conv_id=None) -> bool:
        """Whether semantic search over ``method`` can run without embedding its memories first
        (they are embedded, or embedding them failed and was reported)."""
        key = self.vector_key(method, conv_id)
        with _VECTORS_LOCK:
            return key in self._vector_cache() or key in self._vectors_failed

    def vectors(self, method: str, conv_id=None):
        """Embeddings of ``method``'s memory texts with its embedder, computed once for the same texts
        and embedder (the first semantic search pays for it; ``None`` when it failed, the failure
        recorded in ``errors``). Safe to call from a worker thread."""
        emb, key, cache = self.embedder(method), self.vector_key(method, conv_id), self._vector_cache()
        with _VECTORS_LOCK:
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
            if key in self._vectors_failed:
                return None  # already reported; not embedded again on every keystroke
        texts = self.memories(method, conv_id)["text"].tolist()
        vecs = self.safe(f"embedding memories with {key[0]}", lambda: np.asarray(emb(texts)), None)
        with _VECTORS_LOCK:
            if vecs is None:
                self._vectors_failed.add(key)
            else:
                cache[key] = vecs
                while len(cache) > VECTOR_CACHE_SIZE:
                    cache.popitem(last=False)
        return vecs

    def vector_failed(self, method: str, exc: BaseException, conv_id=None) -> None:
        """Record that embedding ``method``'s memories raised ``exc`` (shown in the header; semantic
        search over it returns nothing instead of trying again on every keystroke)."""
        self.note(f"embedding memories of {method}: {type(exc).__name__}: {exc}")
        key = self.vector_key(method, conv_id)
        with _VECTORS_LOCK:
            self._vectors_failed.add(key)

    def forget_vectors(self, method: str, conv_id=None) -> None:
        """Drop the cached embeddings of ``method``'s memories (benchmarks time the first search)."""
        key = self.vector_key(method, conv_id)
        with _VECTORS_LOCK:
            self._vector_cache().pop(key, None)
            self._vectors_failed.discard(key)

    def search(self, method: str, query: str = "", *, mode: str = "text", kinds=None, k: int = 20,
               conv_id=None) -> pd.DataFrame:
        """Memories matching ``query``: substring search over id/text/sources, or cosine similarity
        over embeddings of the saved texts (``mode="semantic"``, top ``k``, the ``score`` column
        first) with the run's own embedder (``embedder``)."""
        df = self.memories(method, conv_id)
        if df.empty:
            return df
        if kinds:
            df = df[df["kind"].isin(list(kinds))]
        query = (query or "").strip()
        if not query:
            return df.reset_index(drop=True)
        if mode == "semantic":
            emb = self.embedder(method)  # EmbedderUnavailable propagates: the view says why
            vecs = self.vectors(method, conv_id)
            if vecs is None:
                return df.iloc[0:0]
            scores = vecs[df.index.to_numpy()] @ np.asarray(emb([query])[0])
            scores = np.round(scores.astype(np.float64), 3)  # float32 would print as 0.6460000276565552
            out = df.assign(score=scores).sort_values("score", ascending=False).head(k)
            return out[["score"] + [c for c in out.columns if c != "score"]].reset_index(drop=True)
        hay = df["id"] + " " + df["text"] + " " + df["source_ids"]
        return df[hay.str.lower().str.contains(query.lower(), regex=False)].reset_index(drop=True)


def _cell_words(v):
    """One table cell as text a person reads: lists joined by spaces, mappings as ``key: value`` pairs."""
    if isinstance(v, (list, tuple)):
        return " ".join(str(_cell_words(x)) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_cell_words(x)}" for k, x in v.items())
    return v


def memories_frame(rows: list[dict]) -> pd.DataFrame:
    """Saved memories() rows as strings: id, kind, level, text, time, source_ids, then extras."""
    if not rows:
        return pd.DataFrame(columns=["id", "kind", "level", "text", "time", "source_ids"])
    df = pd.DataFrame(rows)
    for c in ("id", "kind", "text", "time", "source_ids"):
        if c not in df.columns:
            df[c] = ""
    df["source_ids"] = df["source_ids"].map(lambda v: " ".join(map(str, v)) if isinstance(v, (list, tuple)) else
                                            ("" if v is None else str(v)))
    lead = ["id", "kind"] + (["level"] if "level" in df.columns else []) + ["text", "time", "source_ids"]
    # a list or mapping cell reads as words, not Python text ("D1:1 D1:2", not "['D1:1', 'D1:2']"); an extra
    # column that is empty on every row is left out rather than shown as a blank band
    df = df.map(_cell_words)
    extra = [c for c in df.columns if c not in lead
             and df[c].map(lambda v: not (v is None or v == "" or (isinstance(v, float) and v != v))).any()]
    df = df[lead + extra]
    # Keys come from the run's files and Tabulator renders column titles as HTML: escape them.
    df.columns = [esc(c) for c in df.columns]
    return df.map(lambda v: "" if v is None or (isinstance(v, float) and v != v) else
                  (v if isinstance(v, str) else str(v)))


def _export_name(qa_id: str | None, ext: str) -> str:
    """A file name from a question id that came from the run: letters, digits and dashes only."""
    import re

    return (re.sub(r"[^A-Za-z0-9-]+", "-", str(qa_id or "question")).strip("-")[:80] or "question") + f".{ext}"


# ------------------------------------------------------------------------------------------------
class QuestionTab:
    """The Question view (``widgets.question``: state and HTML) bound to Panel widgets. Picking a
    method highlights its row and opens the context its reader saw; the button opens that method's
    trace in the Traces tab (``open_trace`` is set by ``WorkbenchApp``)."""

    def __init__(self, store: RunStore):
        self.store = store
        self.open_trace: Callable[[str, str], None] | None = None
        self.question = pn.widgets.Select(label="question", options={}, sizing_mode="stretch_width")
        self.method = pn.widgets.Select(label="method (row highlighted, its context opened)", options=[], width=300)
        self.trace_button = pn.widgets.Button(label="open its trace in Traces ▶", width=220, align="end",
                                              color="primary", disabled=True)
        self.body = html_pane("")
        self.question.param.watch(lambda e: self.load_question(), "value")
        self.method.param.watch(lambda e: self.render(), "value")
        self.trace_button.on_click(lambda e: self.to_trace())
        store.param.watch(lambda e: self.load(), "conv_id")
        # a case study or a slide: the comparison as a standalone page, or as a Markdown table
        self.export_html = pn.widgets.FileDownload(callback=self._export_html, filename="question.html",
                                                   label="export (HTML)", button_type="light", width=140,
                                                   align="end")
        self.export_md = pn.widgets.FileDownload(callback=self._export_md, filename="question.md",
                                                 label="export (Markdown)", button_type="light", width=160,
                                                 align="end")
        self.panel = pn.Column(self.question, pn.Row(self.method, self.trace_button, self.export_html, self.export_md),
                               self.body, sizing_mode="stretch_width")
        self.load()

    def _export_html(self):
        from io import BytesIO

        from widgets.question import question_page

        self.export_html.filename = _export_name(self.question.value, "html")
        page = question_page(self.state, selected=self.selected, run=Path(self.store.run_dir).name) \
            if self.state else "<!doctype html><p>No answered question.</p>"
        return BytesIO(page.encode("utf-8"))

    def _export_md(self):
        from io import BytesIO

        from widgets.question import question_markdown

        self.export_md.filename = _export_name(self.question.value, "md")
        return BytesIO((question_markdown(self.state) if self.state else "No answered question.\n").encode("utf-8"))

    def load(self) -> None:
        opts = question_options(self.store.results(), self.store.conv_id)
        self.question.options = opts
        if opts and self.question.value not in opts.values():
            self.question.value = next(iter(opts.values()))  # triggers load_question
        else:
            self.load_question()

    def load_question(self) -> None:
        qa_id = self.question.value
        self.state = (question_state(self.store.results(), qa_id, conversation=self.store.conversation(),
                                     audits=self.store.audits()) if qa_id else None)
        methods = self.state.methods if self.state else []
        self.method.options = ["(none)"] + methods
        if self.method.value not in methods:
            self.method.value = "(none)"
        self.render()

    @property
    def selected(self) -> str | None:
        return self.method.value if self.method.value not in (None, "(none)") else None

    def render(self) -> None:
        if self.state is None:
            self.body.object = box("<p>No answered questions in this run.</p>")
        else:
            self.body.object = question_html(self.state, selected=self.selected)
        self.trace_button.disabled = self.selected is None or self.open_trace is None

    def to_trace(self) -> None:
        if self.selected and self.open_trace is not None:
            self.open_trace(self.question.value, self.selected)


class ConversationsView:
    """Sessions and turns of the selected conversation, searchable."""

    def __init__(self, store: RunStore):
        self.store = store
        self.search = pn.widgets.TextInput(label="search turns", placeholder="word, speaker or turn id")
        self.session = pn.widgets.Select(label="session", options=["all"])
        self.info = html_pane("")
        self.table = text_table(pd.DataFrame(columns=["session", "date", "id", "speaker", "text"]))
        self.search.param.watch(lambda e: self.refresh(), "value")
        self.session.param.watch(lambda e: self.refresh(), "value")
        store.param.watch(lambda e: self.load(), "conv_id")
        self.panel = pn.Column(pn.Row(self.search, self.session), self.info, self.table, sizing_mode="stretch_width")
        self.load()

    def load(self) -> None:
        conv = self.store.conversation()
        rows = [] if conv is None else [
            {"session": s.id, "date": s.date_text or (s.date_time.isoformat() if s.date_time else ""), "id": t.id,
             "speaker": t.speaker, "text": t.content} for s in conv.sessions for t in s.turns]
        self.frame = pd.DataFrame(rows, columns=["session", "date", "id", "speaker", "text"])
        self.session.options = ["all"] + ([s.id for s in conv.sessions] if conv else [])
        self.refresh()

    def refresh(self) -> None:
        df = self.frame
        if self.session.value not in (None, "all"):
            df = df[df["session"] == self.session.value]
        q = self.search.value.strip().lower()
        if q:
            df = df[(df["text"] + " " + df["speaker"] + " " + df["id"]).str.lower().str.contains(q, regex=False)]
        show_frame(self.table, df.reset_index(drop=True))
        conv = self.store.conversation()
        answered = len({r.get("qa_id") for r in self.store.results() if conv and r.get("conv_id") == conv.id})
        asked = (f"{len(conv.qa)} questions in the conversation, {answered} answered in this run" if conv
                 and answered != len(conv.qa) else f"{len(conv.qa) if conv else 0} questions")
        head = (f"<b>{esc(conv.id)}</b> · speakers {esc(', '.join(conv.speakers))} · {len(conv.sessions)} sessions · "
                f"{len(self.frame)} turns · {asked}" if conv else "No conversation loaded.")
        self.info.object = box(f"{head} · showing {len(df)} turns")


class MemoriesView:
    """Per-method memory table with text/semantic search (the run's own embedder, scores shown),
    kind filter, and the selected unit's lifecycle (``widgets.lifecycle.unit_html``: provenance,
    event history, the answers that saw it; its ids are links)."""

    def __init__(self, store: RunStore):
        self.store = store
        self.follow: Callable[[tuple], None] | None = None  # set by WorkbenchApp: a link was clicked
        self._embedding: set[str] = set()  # methods whose memories a worker thread is embedding
        self.method = pn.widgets.Select(label="method", options=store.methods)
        self.kinds = pn.widgets.MultiChoice(label="kinds", options=[])
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
                                   f"for {esc(self.method.value)}:</b> {esc(exc)}. Text search still works.</p>")
            return
        show_frame(self.table, self.results)
        label = f" · {esc(self.store.embedder_label(self.method.value))}" if self.mode.value == "semantic" else ""
        ranked = " · ranked by score (first column)" if self.mode.value == "semantic" and self.query.value.strip() \
            else ""
        self.info.object = box(f"{len(self.results)} of {total} units of <b>{esc(self.method.value)}</b>"
                               f"{ranked}{label}")

    def embedding_status(self) -> str:
        """The line shown while the first semantic search embeds every memory of the method."""
        method = self.method.value
        emb = self.store.embedder(method)
        name = getattr(emb, "name", type(emb).__name__)
        n = len(self.store.memories(method))
        return (f"<p class='wb-refresh' style='padding:4px'>embedding {n} memories of <b>{esc(method)}</b> with "
                f"{esc(name)}… (the first semantic search of a method embeds all its memories; later searches "
                "reuse them)</p>")

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


class TracesView:
    """Pick a question: every method's answer, then one method's trace timeline
    (``widgets.trace_timeline``): a waterfall of its steps and LLM calls and a card for the current
    step. Step with the buttons, the slider, or the keys (← / k, → / j, Home / End) once the trace
    area has focus; clicking a waterfall row jumps to it. The timeline's state and HTML are the
    notebook ``TraceStepper``'s; this class only binds Panel widgets to them."""

    def __init__(self, store: RunStore):
        self.store = store
        self.question = pn.widgets.Select(label="question", options={}, sizing_mode="stretch_width")
        self.method = pn.widgets.Select(label="method", options=[])
        self.prev_button = pn.widgets.Button(label="◀ prev", width=80, align="end")
        self.next_button = pn.widgets.Button(label="next ▶", width=80, align="end")
        self.slider = pn.widgets.IntSlider(label="step", start=1, end=2, value=1, width=240)
        self.position = html_pane("", width=220, align="end")
        self.answers_pane = html_pane("")
        self.keys = html_pane(keys_html())
        self.area = TraceArea(sizing_mode="stretch_width")
        self.timeline, self.index, self.html = None, 0, ""
        self.question.param.watch(lambda e: self.load_question(), "value")
        self.method.param.watch(lambda e: self.load_trace(), "value")
        self.prev_button.on_click(lambda e: self.prev())
        self.next_button.on_click(lambda e: self.next())
        self.slider.param.watch(lambda e: e.new - 1 != self.index and self.goto(e.new - 1), "value")
        self.area.param.watch(lambda e: e.new != self.index and self.goto(e.new), "index")
        store.param.watch(lambda e: self.load(), "conv_id")
        nav = pn.Row(self.method, self.prev_button, self.slider, self.next_button, self.position)
        self.panel = pn.Column(self.question, self.answers_pane, nav, self.keys, self.area,
                               sizing_mode="stretch_width")
        self.load()

    def load(self) -> None:
        opts = question_options(self.store.results(), self.store.conv_id)  # labels name the category
        self.question.options = opts
        if opts and self.question.value not in opts.values():
            self.question.value = next(iter(opts.values()))  # triggers load_question
        else:
            self.load_question()

    def _gold(self, qa_id):
        conv = self.store.conversation()
        return next((q for q in conv.qa if q.id == qa_id), None) if conv else None

    def load_question(self) -> None:
        self.current = self.store.answers(self.question.value) if self.question.value else {}
        self.state = (question_state(self.store.results(), self.question.value, conversation=self.store.conversation(),
                                     audits=self.store.audits()) if self.current else None)
        methods = list(self.current)
        self.method.options = methods
        want = self.method.value if self.method.value in methods else (methods[0] if methods else None)
        if want != self.method.value:
            self.method.value = want  # triggers load_trace
        else:
            self.load_trace()

    def show_answers(self) -> None:
        self.answers_pane.object = (self.answers_html() if self.state is not None else
                                    box("<p>No answered questions in this run.</p>"))

    def answers_html(self) -> str:
        """Gold, then every method's answer with the Question view's flags (fallback answers, judge vs
        F1, untrusted judge, attribution, gold rank) folded under one line, so the trace is in view;
        the row of the method whose trace is shown is highlighted. Reader contexts are the Question tab's."""
        table = methods_html(self.state, selected=self.method.value, contexts=False)
        fold = (f"<details><summary>every method's answer to this question ({len(self.state.rows)}): judge, F1, "
                f"attribution, gold evidence rank</summary>{judge_notes_html(self.state)}{table}</details>")
        return box(QUESTION_CSS + '<div class="wb-qv">' + gold_html(self.state) + fold + "</div>")

    @property
    def answer(self):
        pair = self.current.get(self.method.value) if self.method.value else None
        return pair[1] if pair else None

    def load_trace(self) -> None:
        """The picked method's answer as a timeline; its saved memories resolve ids it did not retrieve."""
        self.show_answers()  # the picked method's row highlighted
        ans = self.answer
        qa = self._gold(self.question.value) if ans is not None else None
        self.timeline = None if ans is None else TraceTimeline.build(
            ans, conversation=self.store.conversation(), gold_evidence=qa.evidence if qa else (),
            memories=self.store.memory_rows(self.method.value))
        n = self.timeline.n_steps if self.timeline else 0
        self.slider.end, self.slider.visible = max(n, 2), n > 1
        self.area.n_steps = n
        self.index = -1  # whatever the widgets hold, the next goto renders
        self.goto(0)

    def goto(self, i: int) -> None:
        tl = self.timeline
        if tl is None:
            self.index, self.html = 0, box("<p class='wb-muted'>No trace to show.</p>")
        else:
            tl = self.timeline = tl.at(i)
            self.index = tl.index
            state = getattr(self, "state", None)
            flags = answer_flags_html(state.row(self.method.value) if state is not None else None)
            self.html = flags + timeline_html(tl, header=True)
        n = tl.n_steps if tl else 0
        self.position.object = f"step <b class='wb-step-pos'>{self.index + 1 if n else 0}</b> / {n}"
        self.prev_button.disabled = self.index == 0
        self.next_button.disabled = self.index >= n - 1
        self.slider.value = self.index + 1
        self.area.param.update(index=self.index, html=self.html)

    def next(self) -> None:
        self.goto(self.index + 1)

    def prev(self) -> None:
        self.goto(self.index - 1)


def _fmt(v) -> str:
    return "" if v is None or v != v else (f"{v:.2f}" if isinstance(v, float) else str(v))


class EventsView:
    """Every method's memory events on the conversation's own time axis (``widgets.event_timeline.
    EventLog``: lanes per method, refresh markers in the method's colour, a paged table with the
    before/after of each change side by side); unit and turn ids in the table open their lifecycle."""

    def __init__(self, store: RunStore):
        self.store = store
        self.follow: Callable[[tuple], None] | None = None  # set by WorkbenchApp
        self.kinds = pn.widgets.MultiChoice(label="kinds", options=list(KIND_ORDER))
        self.methods = pn.widgets.MultiChoice(label="methods", options={esc(m): m for m in store.methods})
        self.search = pn.widgets.TextInput(label="search events", placeholder="text, unit id, cause")
        self.counts = html_pane("")
        self.plot = pn.pane.Plotly(timeline_figure([]), sizing_mode="stretch_width")
        self.prev_button = pn.widgets.Button(label="◀ previous page", width=140)
        self.next_button = pn.widgets.Button(label="next page ▶", width=140)
        self.pager = html_pane("", width=360)
        self.table = defer(  # below the timeline: drawn after the tab's text
            LinkHTML("", on_link=lambda t: self.follow(t) if self.follow else None))
        for w in (self.kinds, self.methods, self.search):
            w.param.watch(lambda e: self.refresh(), "value")
        self.prev_button.on_click(lambda e: self.turn_page(-1))
        self.next_button.on_click(lambda e: self.turn_page(+1))
        store.param.watch(lambda e: self.load(), "conv_id")
        self.panel = pn.Column(pn.Row(self.kinds, self.methods, self.search), self.counts, self.plot,
                               pn.Row(self.prev_button, self.next_button, self.pager), self.table,
                               sizing_mode="stretch_width")
        self.load()

    def load(self) -> None:
        self.log = EventLog(self.store.all_events(), conversation=self.store.conversation(), links=True,
                            all_methods=self.store.methods)
        self.events = self.log.events
        self.refresh()

    def refresh(self) -> None:
        self.log.set_filter(kinds=self.kinds.value or [], methods=self.methods.value or [], text=self.search.value)
        self.filtered = self.log.filtered
        self.counts.object = box(self.log.counts_html)
        self.plot.object = self.log.figure
        self.show_page()

    def turn_page(self, step: int) -> None:
        self.log.set_page(self.log.page + step)
        self.show_page()

    def show_page(self) -> None:
        self.pager.object = box(esc(self.log.pager_text))
        self.prev_button.disabled = self.log.page == 0
        self.next_button.disabled = self.log.page >= self.log.pages - 1
        self.table.object = self.log.table_html


class LifecycleTab:
    """Unit lifecycle (``widgets.lifecycle``): a turn and every unit each method derived from it,
    or a unit with its source turns, events and the answers whose reader saw it. Ids are links:
    turns and units open here (``◀ back`` returns), a question opens the Question tab."""

    def __init__(self, store: RunStore):
        self.store = store
        self.open_question: Callable[[str, str], None] | None = None  # set by WorkbenchApp
        self.turn = pn.widgets.Select(label="turn", options={}, sizing_mode="stretch_width")
        self.method = pn.widgets.Select(label="or a unit of method", options=store.methods, width=200)
        self.unit = pn.widgets.Select(label="unit", options={"(pick a unit)": ""}, value="", width=260)
        self.back_button = pn.widgets.Button(label="◀ back", width=90, align="end", disabled=True)
        self.body = LinkHTML("", on_link=self.follow)
        self.history: list[tuple[str, ...]] = []
        self.target: tuple[str, ...] = ()
        self._syncing = False
        self.turn.param.watch(lambda e: self._picked(("turn", e.new)), "value")
        self.method.param.watch(lambda e: self._fill_units(), "value")
        self.unit.param.watch(lambda e: self._picked(("unit", self.method.value, e.new)), "value")
        self.back_button.on_click(lambda e: self.back())
        store.param.watch(lambda e: self.load(), "conv_id")
        self.panel = pn.Column(pn.Row(self.turn, self.method, self.unit, self.back_button), self.body,
                               sizing_mode="stretch_width")
        self.load()

    def load(self) -> None:
        self.index = self.store.lifecycle()
        self.history, self.target = [], ()
        if self.index is None:
            self.body.object = box("<p>No conversation in this run, so no lifecycle to show.</p>")
            return
        opts = self.index.turn_options()
        with self._quiet():
            self.turn.options = opts
            self._fill_units()
        first = next(iter(opts.values()), None)
        if first is not None:
            self.show(("turn", first), remember=False)

    @contextmanager
    def _quiet(self):
        """Set the pickers without their watchers navigating again."""
        self._syncing = True
        try:
            yield
        finally:
            self._syncing = False

    def _unit_options(self, method: str | None) -> dict[str, str]:
        """A placeholder first, so that no unit is picked (and opened) just because it is listed first."""
        units = self.index.unit_options(method) if self.index and method else []
        return {"(pick a unit)": "", **{u: u for u in units}}

    def _fill_units(self) -> None:
        with self._quiet():
            self.unit.options = self._unit_options(self.method.value)
            self.unit.value = ""

    def _picked(self, target: tuple) -> None:
        if not self._syncing and target[-1]:
            self.show(target)

    def follow(self, target: tuple) -> None:
        """A link was clicked in this tab (or sent here from another tab)."""
        if target[0] == "question":
            if self.open_question is not None:
                self.open_question(target[1], target[2])
            return
        self.show(target)

    def show(self, target: tuple, *, remember: bool = True) -> None:
        """Show ``("turn", id)`` or ``("unit", method, id)``; the pickers follow."""
        if self.index is None:
            return
        if remember and self.target and self.target != target:
            self.history.append(self.target)
        self.target = tuple(target)
        with self._quiet():
            if target[0] == "turn":
                if target[1] in self.turn.options.values():
                    self.turn.value = target[1]
                self.unit.value = ""
            else:
                if target[1] in self.method.options:
                    self.method.value = target[1]
                    self.unit.options = self._unit_options(target[1])
                if target[2] in self.unit.options.values():
                    self.unit.value = target[2]
        if target[0] == "turn":
            self.body.object = turn_html(self.index.turn(target[1]), links=True)
        elif self.index.has_unit(target[1], target[2]):
            self.body.object = unit_html(self.index.unit(target[1], target[2]), links=True)
        else:
            self.body.object = box(f"<p>No unit {esc(target[2])} of {esc(target[1])} in this run.</p>")
        self.back_button.disabled = not self.history

    def back(self) -> None:
        if self.history:
            self.show(self.history.pop(), remember=False)


class ResultsView:
    """Per-category tables with clustered bootstrap CIs, the judge's audit and reliability banner, the
    cost-accuracy chart, and per question the judge's label and reasoning beside F1 (flat
    disagreements flagged)."""

    QUESTION_COLUMNS = ["method", "qa_id", "category_name", "checker", "judge_label", "f1", "disagree",
                        "judge_reasoning", "prediction", "gold"]

    def __init__(self, store: RunStore):
        self.store = store
        self.frame = store.results_table()
        self.audits = store.audits()
        metrics = [m for m in ("checker", "judge", "f1", "bleu1", "locomo_f1", "evidence_recall")
                   if not self.frame.empty and metric_values(self.frame, m).notna().any()]
        auto = self.auto_metric()
        self.metric = pn.widgets.Select(label="metric", options=metrics or ["judge"],
                                        value=auto if auto in metrics else (metrics or ["judge"])[0])
        self.x = pn.widgets.Select(label="cost axis", options=["query_tokens", "construction_tokens"])
        self.category = pn.widgets.Select(label="chart category", options=[ALL])
        self.banner = html_pane("")
        self.table = html_pane("")
        self.plot = pn.pane.Plotly(None, height=440, sizing_mode="stretch_width")  # drawn once, by refresh()
        self.note = html_pane("")
        self.questions = defer(text_table(  # below the chart: drawn after the tab's first paint
            self.question_frame(), page_size=10,  # long texts wrap: no sideways scroll
            widths={"judge_reasoning": 380, "prediction": 220, "gold": 140}))
        self.metric.param.watch(lambda e: self.refresh(), "value")
        self.x.param.watch(lambda e: self.draw(), "value")
        self.category.param.watch(lambda e: self.draw(), "value")
        self.panel = pn.Column(self.banner, pn.Row(self.metric, self.x, self.category), self.note, self.table,
                               self.plot, html_pane("<h4>Per question: the verdict (checker), the judge's label "
                                                    "and reasoning beside F1</h4>"),
                               self.questions, sizing_mode="stretch_width")
        self.refresh()

    def auto_metric(self) -> str | None:
        return self.store.auto_metric()

    def question_frame(self) -> pd.DataFrame:
        """One row per (method, question): the verdict, judge label and reasoning, F1, and a flag when the judge
        and F1 flatly disagree."""
        df = self.frame
        if df.empty:
            return pd.DataFrame(columns=self.QUESTION_COLUMNS)
        out = df.reindex(columns=[c for c in self.QUESTION_COLUMNS if c != "disagree"]).copy()
        flag = df["judge_f1_disagree"] if "judge_f1_disagree" in df.columns else pd.Series(False, index=df.index)
        out.insert(out.columns.get_loc("f1") + 1, "disagree",
                   flag.map(lambda v: "⚠ judge vs F1" if v == v and bool(v) else ""))
        out["f1"] = out["f1"].map(_fmt)
        out["checker"] = out["checker"].map(lambda v: "" if v != v or v is None else ("right" if v >= 0.5 else "wrong"))
        return out.map(lambda v: "" if v is None or (isinstance(v, float) and v != v) else str(v))

    def refresh(self) -> None:
        if self.frame.empty:
            self.summary, self.source = pd.DataFrame(), "no rows"
            self.table.object = box("<p>This run has no results (results.jsonl is missing or empty).</p>")
            self.plot.visible = self.questions.visible = False  # no empty chart frame or table under it
            return
        self.plot.visible = self.questions.visible = True
        self.summary, self.source = self.store.summary(self.metric.value)
        self.paired = self.store.paired(self.metric.value)
        head = headline(self.summary)
        self.category.options = [ALL] + [c for c in dict.fromkeys(self.summary["category"]) if c != head]
        self.banner.object = judge_banner_html(self.summary)
        self.table.object = box(results_table_html(self.store, self.metric.value))
        self.note.object = box(f"<small>{len(self.frame)} result rows · n: questions scored (judge failures left "
                               "out and counted) · [lo, hi] and error bars: 95% percentile bootstrap of the mean, "
                               "clustered by conversation (1000 resamples, seed 0); fewer than 5 questions show the "
                               f"count, no interval · aggregated by {esc(self.source)}</small>")
        self.draw()

    def draw(self) -> None:
        self.chart_frame, self.plot.object = cost_chart(self.store, self.metric.value, self.x.value,
                                                        self.category.value)


def results_table_html(store: RunStore, metric: str) -> str:
    """The Results tab's method x category table for ``metric``, made once per run and metric (the
    read-ahead thread makes the one the tab opens on)."""
    def make():
        summary, _ = store.summary(metric)
        return summary_table_html(summary, metric, headline(summary))
    return store.cached(("results table", metric), f"results table ({metric})", make, "")


def cost_chart(store: RunStore, metric: str, x: str, category: str):
    """(points, cost-accuracy figure) for one choice of the Results tab's pickers, made once per run
    and choice (the read-ahead thread makes the one the tab opens on; the figure is made anew for
    each other choice, so no two panes share one)."""
    def make():
        summary, _ = store.summary(metric)
        frame = points_frame(summary, x=x, category=category, paired=store.paired(metric))
        return frame, cost_accuracy_figure(frame, x=x, metric=metric)
    return store.cached(("cost chart", metric, x, category), f"cost-accuracy chart ({metric}, {x})", make,
                        (pd.DataFrame(), None))


STRUCTURE_TITLE_STYLE = ("margin:14px 0 4px;padding:6px 10px;background:#f3f3f3;border-radius:4px;"
                         "font-size:15px;font-family:system-ui,sans-serif")
STRUCTURES_LEAD = ("<p>One card per method: what it built from this conversation, read from the run's saved "
                   "memory files.</p>")


class StructuresView:
    """Per method: its registered structure view, or its structures.json content with a notice."""

    def __init__(self, store: RunStore):
        self.store = store
        self.panel = pn.Column(sizing_mode="stretch_width")
        store.param.watch(lambda e: self.load(), "conv_id")
        self.load()

    def load(self) -> None:
        self.sections = {m: self.section(m) for m in self.store.methods}
        if not self.sections:
            self.panel.objects = [message("This run has no saved memories, so no structures.")]
            return
        # One section per method: a heading, then its body, drawn one by one after the headings (``defer``).
        # A plain Column, not a pn.Card: on the ten-method demo run the cards alone took the tab from 0.36 s
        # to 1.36 s shown in the browser (bench_ui, same load). A method name is a folder name of the run,
        # so the heading is escaped.
        self.panel.objects = [html_pane(box(STRUCTURES_LEAD))] + [
            pn.Column(html_pane(f"<h3 class='wb-structure-title' style='{STRUCTURE_TITLE_STYLE}'>{esc(m)}</h3>"),
                      defer(pn.Column(*objs, sizing_mode="stretch_width")),
                      sizing_mode="stretch_width", css_classes=["wb-structure"])
            for m, objs in self.sections.items()]

    def headings(self) -> list[str]:
        """Each section's heading as the page shows it (its escaped HTML text, tags removed), in page order."""
        return [re.sub(r"<[^>]+>", "", str(c.objects[0].object)) for c in self.panel.objects[1:]
                if isinstance(c, pn.Column) and "wb-structure" in c.css_classes]

    def files(self, method: str) -> dict:
        """What a ``files=True`` view reads besides structures.json (read errors land in the header)."""
        return {"memories": self.store.memory_rows(method), "params": self.store.params(method),
                "backend_params": self.store.params(method, backend=True),
                "views": views_available()}

    def section(self, method: str) -> list:
        data = self.store.structures(method)
        # a view registered for the method itself (or its base: ama[probe] -> ama), else the kind it declares
        view = (STRUCTURE_VIEWS.get(method) or STRUCTURE_VIEWS.get(method_base(method))
                or STRUCTURE_VIEWS.get(declared_view(method) or ""))
        if view is not None:
            try:
                if getattr(view, "structure_files", False):
                    return [view(data, self.store.conversation(), **self.files(method))]
                return [view(data, self.store.conversation())]
            except Exception as exc:  # a broken view must not take the app down; shown in its card
                return [message(f"structure view for {method} failed: {type(exc).__name__}: {exc}", "danger")]
        body = json_html(data) if data else "<p class='wb-muted'>structures.json is empty for this method.</p>"
        return [message(f"no structure view for this method ({method}); its structures.json is shown as JSON",
                        "info"), html_pane(box(body))]


# ------------------------------------------------------------------------------------------------
TABS = (("Question", QuestionTab), ("Conversations", ConversationsView), ("Memories", MemoriesView),
        ("Lifecycle", LifecycleTab), ("Traces", TracesView), ("Events", EventsView), ("Results", ResultsView),
        ("Structures", StructuresView))


class LazyViews(Mapping):
    """``name -> view`` of the app's tabs, each view built the first time it is asked for (its tab
    shown, a link into it followed, the prewarm step, a test reading it). Iterating gives every
    name in tab order without building anything; ``built`` says which exist."""

    def __init__(self, names, build: Callable[[str], Any]):
        self._names, self._build, self._views = list(names), build, {}

    def __getitem__(self, name: str):
        if name not in self._views:
            if name not in self._names:
                raise KeyError(name)
            self._views[name] = self._build(name)
        return self._views[name]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def built(self, name: str) -> bool:
        return name in self._views


def variant_notes(methods, params_of) -> list[str]:
    """One line per labelled variant in the run (``ama[paper-judge]``, ``MemoryMethod.labelled``):
    which method it is a second configuration of, and the parameters that differ, read from the
    saved ``params.json`` of each (``params_of(method)``), so a reader knows why two AMA rows differ."""
    out = []
    for name in methods:
        base = method_base(name)
        if name == base:
            continue
        if base not in methods:
            out.append(f"{name}: a second configuration of {base}, which this run does not hold.")
            continue
        mine = (params_of(name) or {}).get("params") or {}
        theirs = (params_of(base) or {}).get("params") or {}
        diff = [f"{k} = {mine.get(k)!r} ({base}: {theirs.get(k)!r})" for k in sorted(set(mine) | set(theirs))
                if mine.get(k) != theirs.get(k)]
        what = "; ".join(diff) if diff else "no parameter differs in their saved params.json"
        out.append(f"{name} is {base} run again beside it: {what}.")
    return out


def departure_notes(methods, params_of) -> list[str]:
    """One line per saved parameter value that leaves the method's paper (``MemoryMethod.param_notes``),
    read from each method's ``params.json``: a recording made with a workbench option says so on screen."""
    from workbench.methods import REGISTRY

    out = []
    for name in methods:
        cls = REGISTRY.get(method_base(name))
        params = (params_of(name) or {}).get("params") or {}
        out += [f"{name}: {note}." for note in (cls.departures(params) if cls else [])]
    return out


def prefetch_views(store: RunStore) -> None:
    """The slow, widget-free parts of the Results and Structures tabs, done ahead in the read-ahead
    thread (measured on the demo run: those tabs took 0.76 s and 0.65 s to build, mostly plotly's
    first figure, the table widget's first import and pyvis writing H-Mem's graph page). Plotly and
    the table module are imported and a first cost figure is made; each method's entity-graph page
    is written into ``graph_view``'s page store. No Panel object is made here."""
    import pandas.io.formats.style  # noqa: F401  (the table widget's first use: ~0.15 s)
    import panel.widgets.tables  # noqa: F401  (first import: ~0.2 s)

    from widgets.graph_view import GraphState

    if store.run is None or store.conv_id is None:
        return
    metric = store.auto_metric()
    summary, _ = store.summary(metric)
    if not summary.empty:  # what the Results tab opens on
        results_table_html(store, metric)
        cost_chart(store, metric, "query_tokens", ALL)
    for method in store.methods:
        structures = store.structures(method)
        if (structures.get("graph") or {}).get("nodes"):
            GraphState(structures, store.conversation())


class WorkbenchApp(pn.viewable.Viewer):
    """The app: header (run, manifest, conversation picker, problems) over one tab per view.

    First paint builds only what it shows: the header and the Question tab. Every other tab is an
    empty slot until its view is built, when the tab is first shown or a link opens it (``views``
    builds on first access; ``prewarm`` builds them all). In a served page, once the first paint is
    done, a worker thread reads and computes what those views need (``RunStore.warm``: lifecycle,
    events, results tables, structures), so a tab's first show only builds its widgets; problems
    in those files reach the header then. plotly.js, too, is loaded after the first paint
    (``PlotlyLoader``), and the views' Plotly panes wait for it (``PlotHolder``)."""

    def __init__(self, run_dir=DEFAULT_RUN, *, embedder=None, plotly_on_demand: bool | None = None, **params):
        super().__init__(**params)
        self.store = RunStore(run_dir, embedder=embedder)
        # widgets/*_view(s).py register into STRUCTURE_VIEWS
        self.store.note_all(f"structure views: {problem}" for problem in load_structure_views())
        served = in_server_session()
        if plotly_on_demand is None:
            plotly_on_demand = page_lacks_plotly()
        self.plotly = PlotlyLoader()
        self.plots = PlotHolder(self.plotly, active=served or plotly_on_demand, plotly_on_demand=plotly_on_demand)
        self.slots = {name: pn.Column(sizing_mode="stretch_width") for name, _ in TABS}
        self.views = LazyViews(self.slots, self._build_view)
        self.tabs = pn.Tabs(*self.slots.items(), dynamic=True, sizing_mode="stretch_width")
        self.tabs.param.watch(self._switched, "active")
        # after the views' own conversation watchers (lower precedence runs first): hold new plots
        self.store.param.watch(lambda e: self._hold_plots(), "conv_id", precedence=10)
        self.plots.show(self.views[list(self.slots)[self.tabs.active]].panel)  # the tab the app opens on
        self.problems = pn.Column(sizing_mode="stretch_width")
        self._problems_pane = message("", "danger")  # one pane, its text replaced: never one per problem
        self.store.param.watch(lambda e: self._show_problems(), "errors")
        self._show_problems()
        conv = pn.widgets.Select.from_param(self.store.param.conv_id, name="", width=220, margin=(4, 10))
        self.header = pn.Column(pn.Row(html_pane(self.header_html()), pn.pane.HTML("conversation", margin=(10, 0)),
                                       conv, sizing_mode="stretch_width"),
                                census_pane(self.store.run_dir), self.problems, sizing_mode="stretch_width")

    def _build_view(self, name: str):
        view = dict(TABS)[name](self.store)
        if name == "Question":
            view.open_trace = self.open_trace
            view.render()  # the trace button can work now
        elif name == "Lifecycle":
            view.open_question = self.open_question
        elif name in ("Memories", "Events"):
            view.follow = self.follow
        self.plots.hold(view.panel)
        self.slots[name].objects = [view.panel]
        return view

    def _switched(self, event) -> None:
        """A tab was shown (click, keyboard, link): build its view if need be; the charts and
        embedded pages of the tab shown are drawn after its text (once; a pending draw for the
        tab left is dropped)."""
        names = list(self.slots)
        if event.old is not None and 0 <= event.old < len(names) and self.views.built(names[event.old]):
            self.plots.hide(self.views[names[event.old]].panel)
        if 0 <= event.new < len(names):
            self.plots.show(self.views[names[event.new]].panel)

    def _hold_plots(self) -> None:
        """After a conversation switch the views made new panes: the slow ones go into slots too."""
        names = list(self.slots)
        for name in names:
            if self.views.built(name):
                panel = self.views[name].panel
                if self.plots.hold(panel) and names.index(name) == self.tabs.active:
                    self.plots.show(panel)

    def prewarm(self) -> None:
        """Build every tab's view now (a notebook, a test, a script that reads ``views``)."""
        for name in self.views:
            self.views[name]

    def warm_in_background(self) -> threading.Thread:
        """After a served page's first paint: read and compute what the other tabs need
        (``RunStore.warm``) in a worker thread, so the event loop stays free for clicks and a tab
        shown later only builds its widgets."""
        def work():
            try:
                self.store.warm()
                prefetch_views(self.store)
            except Exception as exc:  # nobody would see it in a worker thread: shown in the header
                self.store.note(f"reading the run ahead of its tabs: {type(exc).__name__}: {exc}")

        thread = threading.Thread(target=work, name="workbench-warm", daemon=True)
        thread.start()
        return thread

    def header_html(self) -> str:
        """Run, methods and what produced them, read from the manifest (``workbench.eval.manifest.run_summary``)."""
        from workbench.eval.manifest import run_summary

        m = self.store.manifest
        s = run_summary(m)
        sha = f" (sha256 {esc(s['llm_sha256'])}…)" if s["llm_sha256"] else ""
        audit = s["judge_audit"]
        fa = (audit or {}).get("false_accept") or {}
        judge_note = (f" — audited false-accept {fa['rate']:.0%} on {fa.get('n')} wrong answers"
                      if fa.get("rate") is not None else " — not audited" if s["judge"] != "not recorded" else "")
        scripted = (f"<p class='wb-forced' style='padding:4px'><b>{esc(m.get('label') or 'Scripted run.')}</b></p>"
                    if m.get("scripted") else "")
        # the directory's name on screen (screenshots and projected pages show no machine path); the full
        # path in the tooltip for whoever runs it
        run = Path(self.store.run_dir)
        notes = departure_notes(self.store.methods, self.store.params) + variant_notes(self.store.methods,
                                                                                         self.store.params)
        details = (f"<p>methods: {esc(', '.join(self.store.methods) or 'none')} · llm: {esc(s['llm'])}{sha} · "
                   f"embedder: {esc(s['embedder'])} · judge: {esc(s['judge'])}{esc(judge_note)} · data: "
                   f"{esc(s['dataset'])} · commit: {esc(s['git_commit'])}</p>"
                   + "".join(f"<p class='wb-muted' style='margin:2px 0'>{esc(n)}</p>" for n in notes))
        departures = f" · {len(notes)} departure{'s' if len(notes) != 1 else ''} from the papers" if notes else ""
        # one line on first paint (a 1280x720 projector shows the tabs and their content); the rest one click away
        return box(f"<div class='wb-runline'><b style='font-size:17px'>Memory Workbench</b> · run "
                   f"<code title='{esc(run)}'>{esc(run.name)}</code> · {esc(s['llm'])} · judge: {esc(s['judge'])}"
                   f"{esc(judge_note)}</div>{scripted}<details><summary class='wb-muted'>details: "
                   f"{len(self.store.methods)} methods, embedder, data, commit{esc(departures)}</summary>{details}"
                   "</details>")

    def open_trace(self, qa_id: str, method: str) -> None:
        """Show ``method``'s trace of ``qa_id`` in the Traces tab and switch to it."""
        traces = self.views["Traces"]
        traces.question.value = qa_id
        if method in traces.method.options:
            traces.method.value = method
        self.tabs.active = list(self.views).index("Traces")

    def follow(self, target: tuple) -> None:
        """A turn/unit/question link clicked in any tab: a turn or unit opens in Lifecycle."""
        if target[0] == "question":
            self.open_question(target[1], target[2])
            return
        self.views["Lifecycle"].show(target)
        self.tabs.active = list(self.views).index("Lifecycle")

    def open_question(self, qa_id: str, method: str | None = None) -> None:
        """Show ``qa_id`` in the Question tab, ``method``'s row highlighted and its context open."""
        view = self.views["Question"]
        if qa_id in view.question.options.values():
            view.question.value = qa_id
        if method in view.method.options:
            view.method.value = method
        self.tabs.active = list(self.views).index("Question")

    def _show_problems(self) -> None:
        """The header's problems: one alert (``problems_html``: the first ``MAX_PROBLEMS_SHOWN`` listed,
        the rest counted per file), redrawn once per batch of problems (``RunStore.note_all``)."""
        errors = list(self.store.errors)
        self._problems_pane.object = problems_html(errors)
        if bool(errors) != bool(self.problems.objects):
            self.problems.objects = [self._problems_pane] if errors else []

    def __panel__(self):
        # TabKeys: the tab bar as an ARIA tab list, switched with Enter/Space and the arrow keys
        if in_server_session():
            pn.state.onload(self.warm_in_background)
        return pn.Column(self.header, self.tabs, TabKeys(label="Memory Workbench views", height=0, margin=0),
                         self.plotly, sizing_mode="stretch_width")


def page_lacks_plotly() -> bool:
    """True in a served page whose document did not declare plotly (the module's ``pn.extension``
    leaves it out there): its Plotly panes must wait for ``PlotlyLoader``. A served document that
    declared no extension list at all gets every imported model's library, plotly included."""
    if not in_server_session():
        return False
    declared = getattr(pn.state, "_extensions", None)  # the document's pn.extension(...) names
    if declared is None:
        pn.extension("tabulator", notifications=False)  # gives the document its own list, without plotly
        declared = getattr(pn.state, "_extensions", None)
    return declared is not None and "plotly" not in declared


def build_app(run_dir=DEFAULT_RUN, *, embedder=None) -> WorkbenchApp:
    """The app over ``run_dir`` (a ``Viewer``: display it, ``.servable()`` it, or use ``.tabs``)."""
    return WorkbenchApp(run_dir, embedder=embedder)


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


REMOTE_WARNING = ("WARNING: serving on {address}, reachable from other machines, with no login: anyone who can "
                  "reach this port can read the run. For shared use put it behind `panel serve --basic-auth ...` "
                  "or Panel's OAuth options (--oauth-provider ...), or an authenticating proxy.")


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; anything else (0.0.0.0 included) is remote."""
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def check_address(address: str, allow_remote: bool) -> None:
    """Refuse a non-loopback bind without ``allow_remote``; warn (stderr) when it is allowed."""
    if is_loopback(address):
        return
    if not allow_remote:
        raise SystemExit(f"refusing to serve on {address}: the app has no login and would be reachable from other "
                         "machines; use 127.0.0.1, or pass --allow-remote (and see --basic-auth in the README)")
    print(REMOTE_WARNING.format(address=address), file=sys.stderr)


def serve(run_dir=None, port: int = 0, address: str = "127.0.0.1", show: bool = False, *, threaded: bool = False,
          allow_remote: bool = False, allowed_hosts: Sequence[str] = ()):
    """Serve the app (one fresh app per browser session). Binds to 127.0.0.1; another address needs
    ``allow_remote=True`` and prints a warning (no login). ``port=0`` picks a free port. Blocks
    unless ``threaded`` (then returns the server thread, which has ``stop()``).

    Every route and the websocket answer only requests whose ``Host`` is a loopback name, the bound
    address or one of ``allowed_hosts`` (``widgets.host_guard``: the guard against DNS rebinding);
    the websocket also checks ``Origin`` against the same names."""
    from panel.io.threads import StoppableThread
    from tornado.ioloop import IOLoop

    check_address(address, allow_remote)
    if allowed_hosts and not allow_remote:
        raise SystemExit("host names other than loopback ones are only served with --allow-remote")
    run_dir = run_dir or os.environ.get("WORKBENCH_RUN", DEFAULT_RUN)
    port = port or free_port(address)
    names = allowed_names(address, allowed_hosts)
    if allow_remote and not allowed_hosts and address not in names:  # a wildcard bind (0.0.0.0, ::)
        print(f"note: requests are answered only when they name this server as {', '.join(sorted(names))}; list "
              "the names others use to reach it after --allow-remote (e.g. --allow-remote lab-box.local)",
              file=sys.stderr)
    # Bokeh's origin list cannot hold IPv6 literals; a page on [::1] passes Tornado's same-origin check
    origins = sorted(f"{n}:{port}" for n in names if ":" not in n)
    print(f"Memory Workbench app for {run_dir} at http://{address}:{port}/")
    options = dict(port=port, address=address, show=show, websocket_origin=origins, title="Memory Workbench",
                   verbose=False)
    if not threaded:
        return _run_guarded(run_dir, names, options)
    loop = IOLoop(make_current=False)
    server_id = os.urandom(16).hex()  # Panel's StoppableThread.stop finds the server by this id
    thread = StoppableThread(target=_run_guarded, io_loop=loop, owns_loop=True, args=(run_dir, names),
                             kwargs=dict(options=dict(options, loop=loop, server_id=server_id)), daemon=True)
    thread.start()
    return thread


def _run_guarded(run_dir, names, options):
    """Build the Bokeh server unstarted, put the Host check in front of its routes, then run it.

    Panel's ``pn.serve`` has no hook for routing rules, so the Tornado application is taken from the
    Bokeh server's ``_tornado`` (Panel reads the same attribute itself); if a future Bokeh renames
    it this raises instead of serving without the guard."""
    server = pn.serve(lambda: build_app(run_dir).__panel__(), start=False, threaded=False, **options)
    tornado_app = getattr(server, "_tornado", None)
    if tornado_app is None:
        raise RuntimeError("cannot install the Host check: this Bokeh server has no Tornado application "
                           "attribute `_tornado`; refusing to serve without it")
    guard_hosts(tornado_app, names)
    server.start()
    server.io_loop.start()
    return server


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Serve the Memory Workbench app over a saved run directory.")
    ap.add_argument("--run", default=os.environ.get("WORKBENCH_RUN", DEFAULT_RUN), help="run directory")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--address", default="127.0.0.1")
    ap.add_argument("--allow-remote", nargs="*", default=None, metavar="NAME",
                    help="allow a non-loopback --address (the app has no login; a warning is printed); the NAMEs "
                         "are further host names the app may be reached by (loopback names and the address "
                         "always are; any other Host header is refused, against DNS rebinding)")
    ap.add_argument("--show", action="store_true")
    return ap.parse_args(argv)


FOREIGN_HOST_MESSAGE = ("This server answers only to its own names (localhost, 127.0.0.1, [::1]); this page was "
                        "requested under another name, as a DNS-rebinding page would. Nothing of the run is shown.")


def servable_for_request(args: argparse.Namespace, headers: Mapping[str, str]):
    """What ``panel serve widgets/app.py`` shows one session: the app, or (for a request whose ``Host``
    is not one of this server's names) a refusal that reads nothing of the run. Panel owns that
    server's routes, so this is the check there; ``serve`` refuses such requests before any route."""
    names = allowed_names("127.0.0.1", args.allow_remote or ())
    if not host_allowed(headers.get("Host"), names):
        return pn.pane.Alert(FOREIGN_HOST_MESSAGE, alert_type="danger")
    from widgets.app import build_app as _build_app  # the importable module: STRUCTURE_VIEWS registered there count

    return _build_app(args.run)


if __name__.startswith("bokeh_app_"):  # `panel serve widgets/app.py --args --run DIR`
    from widgets.app import servable_for_request as _servable

    _servable(parse_args(sys.argv[1:]), pn.state.headers or {}).servable(title="Memory Workbench")
elif __name__ == "__main__":
    _a = parse_args()
    serve(_a.run, port=_a.port, address=_a.address, show=_a.show, allow_remote=_a.allow_remote is not None,
          allowed_hosts=_a.allow_remote or ())
