"""Small tables and one-line trace summaries that the notebooks print next to the richer views.

Pure functions over frozen ``Answer`` traces (and, for AMA's conflict probes, a built AMA): no LLM,
no widget. They lived in the notebooks' cells before; here they are imported, documented and tested.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence


def answers_frame(questions: Sequence, answers: Sequence, **columns: Callable[[Any], Any]):
    """One row per question: id, question, gold answer, the method's answer, its tokens and LLM calls,
    plus one column per keyword (``name=function(answer)``), e.g. ``answers_frame(qs, ans, tiers=tiers)``."""
    import pandas as pd

    return pd.DataFrame([{"id": q.id, "question": q.question, "gold": q.answer, "answer": a.text,
                          "tokens": a.usage.total_tokens, "calls": a.usage.calls,
                          **{name: fn(a) for name, fn in columns.items()}}
                         for q, a in zip(questions, answers)])


def tiers(answer) -> str:
    """HyMem: the retrieval rounds of an answer, ``L`` light and ``D`` deep (e.g. ``"L D"``)."""
    return " ".join(s.kind[0].upper() for s in answer.steps if s.kind in ("light", "deep"))


def verdicts(answer) -> list:
    """AMA: the judge's verdict at each judge step (``Pass``, ``Retry``, ``Refresh``)."""
    return [s.data.get("verdict") for s in answer.steps if s.kind == "judge"]


def router_actions(answer) -> list:
    """MemR3: the router's action at each iteration (``retrieve``, ``reflect``, ``answer``)."""
    return [s.data.get("action") for s in answer.steps if s.kind == "router"]


PROBE_COLUMNS = ("turn", "id", "question", "memory_answer", "new_answer", "conflict", "why")


def probe_table(method):
    """Every conflict probe of a built method's ingest-time judge steps (AMA's ``turn_steps_``), one row per probe."""
    import pandas as pd

    rows: Iterable[dict] = [dict(turn=tid, **p) for tid, steps in method.turn_steps_.items()
                            for s in steps if s.kind == "judge" for p in s.data.get("probes", [])]
    return pd.DataFrame(list(rows), columns=list(PROBE_COLUMNS))[list(PROBE_COLUMNS)]


__all__ = ["answers_frame", "tiers", "verdicts", "router_actions", "probe_table", "PROBE_COLUMNS"]
