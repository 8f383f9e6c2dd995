"""Usage ledger: every model call, tagged (method, phase, role), with tokens, latency and cache flag.

Tags come from a context (``llm_tags``) that the method base sets around ``ingest`` (phase
``construct``) and ``answer`` (phase ``query``); the harness sets ``judge`` around judge calls.
``track()`` collects the calls made inside a block, which is how methods attach calls to trace steps.
"""
from __future__ import annotations

import contextvars
import threading
from contextlib import contextmanager
from typing import Iterator

from ..trace import LLMCall, Usage

PHASES = ("construct", "query", "judge", "")
_TAGS: contextvars.ContextVar[dict] = contextvars.ContextVar("workbench_llm_tags", default={})
_TRACKERS: contextvars.ContextVar[tuple] = contextvars.ContextVar("workbench_llm_trackers", default=())


@contextmanager
def llm_tags(**tags) -> Iterator[None]:
    """Set ledger tags (``method``, ``phase``) for every call made inside the block."""
    if "phase" in tags and tags["phase"] not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {tags['phase']!r}")
    token = _TAGS.set({**_TAGS.get(), **tags})
    try:
        yield
    finally:
        _TAGS.reset(token)


def current_tags() -> dict:
    return dict(_TAGS.get())


@contextmanager
def track() -> Iterator[list[LLMCall]]:
    """Collect every call made (by any client) inside the block, nested blocks included."""
    calls: list[LLMCall] = []
    token = _TRACKERS.set(_TRACKERS.get() + (calls,))
    try:
        yield calls
    finally:
        _TRACKERS.reset(token)


class _Watcher(list):
    """A tracker that hands each call to a callback instead of keeping it."""

    def __init__(self, callback):
        super().__init__()
        self._callback = callback

    def append(self, call) -> None:
        self._callback(call)


@contextmanager
def watch_calls(callback) -> Iterator[None]:
    """Call ``callback(call)`` for every call made inside the block (progress bars use it)."""
    token = _TRACKERS.set(_TRACKERS.get() + (_Watcher(callback),))
    try:
        yield
    finally:
        _TRACKERS.reset(token)


def _notify_trackers(call: LLMCall) -> None:
    for calls in _TRACKERS.get():
        calls.append(call)


class Ledger:
    """Thread-safe, append-only list of calls with pandas summaries."""

    def __init__(self):
        self._calls: list[LLMCall] = []
        self._lock = threading.Lock()

    def record(self, call: LLMCall) -> None:
        with self._lock:
            self._calls.append(call)
        _notify_trackers(call)

    @property
    def calls(self) -> tuple[LLMCall, ...]:
        with self._lock:
            return tuple(self._calls)

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()

    def __len__(self) -> int:
        return len(self._calls)

    def usage(self, **filters) -> Usage:
        return Usage.total(c.usage for c in self.calls if all(getattr(c, k) == v for k, v in filters.items()))

    def frame(self):
        """One row per call (no message bodies)."""
        import pandas as pd

        cols = ["method", "phase", "role", "model", "prompt_tokens", "completion_tokens", "latency_s", "cached",
                "error"]
        return pd.DataFrame([{k: getattr(c, k) for k in cols} for c in self.calls], columns=cols)

    def summary(self, by=("method", "phase", "role")):
        """Calls, tokens and latency grouped by tags."""
        df = self.frame()
        if df.empty:
            return df
        df["calls"] = 1
        agg = df.groupby(list(by), dropna=False)[["calls", "prompt_tokens", "completion_tokens", "latency_s"]].sum()
        agg["cached"] = df.groupby(list(by), dropna=False)["cached"].sum()
        return agg.reset_index()
