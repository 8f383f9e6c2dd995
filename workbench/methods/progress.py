"""Ingest progress: a per-turn bar with ETA and the running LLM call and token counts.

``MemoryMethod.ingest`` opens the bar (when progress is switched on by ``show_ingest_progress``, as
the harness does); a method reports what it has processed with ``self._advance(n_turns)`` from its
build loop. The bar counts turns of the conversation, so a per-turn method (AMA), a per-exchange
one (EagerFacts) and a per-fragment one (H-Mem) all read the same; its postfix shows the calls
and tokens spent so far (from the usage ledger), refreshed on every call even while one turn is
slow. A method that never calls ``_advance`` (Full-Context, Naive RAG: no LLM work per turn) jumps
to done when it finishes. A nested ingest (MemR3 building its backend) reports into the outer bar.

``tqdm.auto`` draws a text bar in a terminal and an ipywidgets bar in Jupyter.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..llm.ledger import watch_calls

_SETTINGS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("workbench_ingest_progress", default=None)
_ACTIVE: contextvars.ContextVar["IngestProgress | None"] = contextvars.ContextVar("workbench_ingest_bar",
                                                                                  default=None)


@dataclass
class IngestProgress:
    """The state of one ingest: turns done of ``total``, calls and tokens so far (and the tqdm bar)."""

    total: int
    desc: str
    bar: object = None
    turns: int = 0
    calls: int = 0
    tokens: int = 0
    on_update: Callable | None = None
    history: list = field(default_factory=list)

    def advance(self, n: int = 1) -> None:
        n = max(0, min(int(n), self.total - self.turns))
        self.turns += n
        if self.bar is not None and n:
            self.bar.update(n)
        self._notify()

    def on_call(self, call) -> None:
        self.calls += 1
        self.tokens += call.prompt_tokens + call.completion_tokens
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.calls} calls, {self.tokens:,} tokens", refresh=True)
        self._notify()

    def _notify(self) -> None:
        if self.on_update is not None:
            self.on_update(self)


@contextmanager
def show_ingest_progress(enabled: bool = True, *, position: int = 1, leave: bool = False,
                         on_update: Callable[[IngestProgress], None] | None = None) -> Iterator[None]:
    """Switch ingest bars on (or off) for every ``ingest`` inside the block.

    ``position`` nests the bar under the harness's question bar; ``on_update(progress)`` is called
    on every advance and every LLM call (tests and other front ends read the counts from it)."""
    token = _SETTINGS.set({"position": position, "leave": leave, "on_update": on_update} if enabled else None)
    try:
        yield
    finally:
        _SETTINGS.reset(token)


@contextmanager
def ingest_progress(desc: str, total: int) -> Iterator[IngestProgress | None]:
    """Used by ``MemoryMethod.ingest``: the bar of this ingest, the outer one when nested, or None."""
    outer = _ACTIVE.get()
    settings = _SETTINGS.get()
    if outer is not None or settings is None:
        yield outer
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit="turn", position=settings["position"], leave=settings["leave"],
               dynamic_ncols=True)
    prog = IngestProgress(total, desc, bar, on_update=settings["on_update"])
    token = _ACTIVE.set(prog)
    try:
        with watch_calls(prog.on_call):
            yield prog
        prog.advance(prog.total - prog.turns)  # finished: whatever the method did not report
    finally:
        _ACTIVE.reset(token)
        bar.close()


def advance(n: int = 1) -> None:
    """Report ``n`` more turns processed by the ingest in progress (no-op without one)."""
    prog = _ACTIVE.get()
    if prog is not None:
        prog.advance(n)
