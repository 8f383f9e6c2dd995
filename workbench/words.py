"""Numbers and dates as a reader says them, in one style for every view, report and census line.

Why a module of its own: the views and the evaluation layer each wrote their own ("11 June 2023" in planted
marks beside "14 Mar 2023" in the tree; "1 edits" and "1 are mixed" slipped through inline plurals), and a
reader comparing two panels should not meet two spellings of one date. It lives in the core so that the
evaluation layer and the views can both use it (imports run core -> eval -> views).

This is display text only: the methods' prompt text keeps its own date format
(``workbench.methods.common.format_date``), since changing it would change what the model reads.
"""
from __future__ import annotations

from datetime import date, datetime
from typing import Any


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``noun`` for one, else its plural (``many``, or ``noun + "s"``): plural(2, "sub-query", "sub-queries")."""
    return noun if n == 1 else (many or noun + "s")


def counted(n: int, noun: str, many: str | None = None) -> str:
    """A count with its noun in agreement, thousands separated: "1 edit", "3 edits", "1,210 events"."""
    return f"{n:,} {plural(n, noun, many)}"


def one_line(text: Any, n: int) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``n`` characters with an ellipsis."""
    text = " ".join(str("" if text is None else text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _moment(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    try:
        return datetime.fromisoformat(str(value or ""))
    except ValueError:
        return None


def day_words(value: Any) -> str:
    """A date or an ISO date(time) as its day: "14 Mar 2023"; anything else as it is ("" for None)."""
    moment = _moment(value)
    if moment is None:
        return "" if value is None else str(value)
    return f"{moment.day} {moment:%b %Y}"


def when_words(value: Any) -> str:
    """A datetime with its time of day: "14 Mar 2023, 19:40" (midnight is left out: a bare date is a day);
    anything else as it is."""
    moment = _moment(value)
    if moment is None:
        return "" if value is None else str(value)
    day = day_words(moment)
    return day if (moment.hour, moment.minute) == (0, 0) else f"{day}, {moment:%H:%M}"
