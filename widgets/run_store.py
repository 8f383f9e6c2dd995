"""``RunStore``: what the app reads from one run directory, shared by every tab (``widgets.app`` composes them)."""
from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import pandas as pd
import param

from widgets.cost_accuracy import (
    paired_frame,
    results_frame,
    run_audits,
    summary_frame,
    table_metric,
)
from widgets.html import esc
from widgets.readability import fact_words, method_prompts, source_text, unit_flag_words
from widgets.lifecycle import LifecycleIndex
from widgets.panel_parts import (
    _VECTORS,
    _VECTORS_LOCK,
    DEFAULT_RUN,
    READ_ERRORS,
    VECTOR_CACHE_SIZE,
)
from workbench.rundir import RunDir


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
                # a file above the read limit is a warning of its own (what was read, what left out), not a line
                self.note_all(problem if problem in self.run.cap_notes else f"skipped {problem}"
                              for problem in problems)

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

    def warm_search(self) -> None:
        """Load the embedder and embed the memories of the method the Memories tab opens on (the first), so the
        first semantic search does not wait seconds for the model (usability review B7); other methods' memories
        are embedded on their first search. An embedder this machine cannot rebuild is left for the search to
        report. The app runs it last in its warm-up thread, after the tabs' own data."""
        from workbench.embed import EmbedderUnavailable

        if not self.methods:
            return
        try:
            self.embedder(self.methods[0])
        except EmbedderUnavailable:
            return
        self.vectors(self.methods[0])

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
                           lambda: memories_frame(self.run.memories(method, cid), self.turn_text(cid),
                                                  method_prompts(method)),
                           memories_frame([]))

    def turn_text(self, conv_id=None) -> dict[str, str]:
        """Turn id -> what was said, of the conversation (``{}`` when it cannot be read)."""
        conv = self.conversation(conv_id)
        return {t.id: t.text for t in conv.turns} if conv is not None else {}

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

    def method_params(self, conv_id=None) -> dict[str, dict]:
        """Method -> the parameters its saved memory of the conversation recorded (``params.json``; a method
        without one is left out): what an ablation switched off."""
        saved = {m: self.params(m, conv_id) for m in self.methods}
        return {m: p["params"] for m, p in saved.items() if isinstance(p, dict) and isinstance(p.get("params"), dict)}

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


_ISO_MOMENT = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(?::00(?:\.0+)?|(:\d\d(?:\.\d+)?))?"
                         r"( ?(?:Z|[+-]\d\d:?\d\d))?")


def _moment_cell(v):
    """An ISO date-time cell to the minute with a space ("2023-03-14 19:40", not "2023-03-14T19:40:00"): still
    in the order a click on the column header sorts the table (the server sorts the cells as text), yet without
    the ``T`` and the zero seconds a reader has to look past. Any other value is left as it is."""
    m = _ISO_MOMENT.fullmatch(v) if isinstance(v, str) else None
    return f"{m.group(1)} {m.group(2)}{m.group(3) or ''}{m.group(4) or ''}" if m else v


#: the column that says what makes a unit's text hard to read (``readability``)
FLAGS_COLUMN = "hard to read"
#: the column that says what a fact unit gets wrong against its source turns (``readability.fact_marks``)
FACT_COLUMN = "against its turns"
#: the columns whose ISO date-times are shown to the minute (``_moment_cell``)
TIME_COLUMNS = ("time", "said_at", "updated_at", "created_at", "refers", "r_m")


def memories_frame(rows: list[dict], turn_text: dict | None = None, prompts=()) -> pd.DataFrame:
    """Saved memories() rows as strings: id, kind, level, text, time, source_ids, then extras. ``turn_text``
    (turn id -> text): the conversation, so that a unit repeating what the people said is not flagged as a loop;
    ``prompts``: the method's own (``readability.method_prompts``), so that a fact copied from them is flagged."""
    if not rows:
        return pd.DataFrame(columns=["id", "kind", "level", "text", "time", "source_ids"])
    # what makes a unit's text hard to read (raw JSON, a code fence, a loop, another script, a summary cut off), never
    # rewritten; measured on the rows as saved (their source ids intact)
    flags = ["⚠ " + w if (w := unit_flag_words(r, source=source_text(r.get("source_ids"), turn_text)))
             else "" for r in rows]
    # what a fact gets wrong against its own turns (a copy, a relation they never name, the first person)
    wrong = ["⚠ " + w if r.get("kind") == "fact" and (w := fact_words(r.get("text"), r.get("source_ids"), turn_text,
                                                                      prompts))
             else "" for r in rows]
    # a saved key of either name: ours wins
    df = pd.DataFrame(rows).drop(columns=[FLAGS_COLUMN, FACT_COLUMN], errors="ignore")
    for c in ("id", "kind", "text", "time", "source_ids"):
        if c not in df.columns:
            df[c] = ""
    df["source_ids"] = df["source_ids"].map(lambda v: " ".join(map(str, v)) if isinstance(v, (list, tuple)) else
                                            ("" if v is None else str(v)))
    lead = ["id", "kind"] + (["level"] if "level" in df.columns else []) + ["text", "time", "source_ids"]
    # a list or mapping cell reads as words, not Python text ("D1:1 D1:2", not "['D1:1', 'D1:2']"); an extra
    # column that is empty on every row is left out rather than shown as a blank band
    df = df.map(_cell_words)
    for c in [c for c in TIME_COLUMNS if c in df.columns]:
        df[c] = df[c].map(_moment_cell)
    extra = [c for c in df.columns if c not in lead
             and df[c].map(lambda v: not (v is None or v == "" or (isinstance(v, float) and v != v))).any()]
    df = df[lead + extra]
    if any(wrong):  # each column is there only when some unit needs it
        df.insert(df.columns.get_loc("text") + 1, FACT_COLUMN, wrong)
    if any(flags):
        df.insert(df.columns.get_loc("text") + 1, FLAGS_COLUMN, flags)
    # Keys come from the run's files and Tabulator renders column titles as HTML: escape them.
    df.columns = [esc(c) for c in df.columns]
    return df.map(_cell_text)


def _cell_text(v) -> str:
    """A cell as the table shows it: blank for missing; a whole number without ".0" (a column with gaps, such as
    H-Mem's ``level``, is float in pandas: "1.0" read as a fraction, usability review)."""
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return v if isinstance(v, str) else str(v)
