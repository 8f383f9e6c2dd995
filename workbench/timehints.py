"""Dates in text: the month table, "does this text state a date?", and a rule-based parser that turns
a temporal hint ("May 2023", "last week", "3 days ago", "5 June to 20 June 2023") into an interval.

Shared by the methods (H-Mem's planner hints, AMA's explicit-timestamp guard) so that there is one
month table and one parser. Pure functions, no LLM.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta

WINDOW_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


def naive(when: datetime) -> datetime:
    """Datetimes are compared in data time; timezone-aware ones are converted to naive UTC."""
    if when.tzinfo is not None:
        return (when - when.utcoffset()).replace(tzinfo=None)
    return when


def day_interval(when: datetime) -> tuple[datetime, datetime]:
    start = naive(when).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


# month name or three-letter abbreviation -> month number
MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                      "september", "october", "november", "december"), start=1)}
MONTHS.update({k[:3]: v for k, v in list(MONTHS.items())})
NUMBERS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                       "nine", "ten", "eleven", "twelve"))}
NUMBERS.update({"a": 1, "an": 1, "a couple of": 2, "a few": 3})
_MON = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_ISO_MONTH = re.compile(r"\b(\d{4})-(\d{1,2})\b")
_DAY_MON_YEAR = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON + r",?\s+(\d{4})\b")
_MON_DAY_YEAR = re.compile(r"\b" + _MON + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b")
_MON_YEAR = re.compile(r"\b" + _MON + r",?\s+(?:of\s+)?(\d{4})\b")
_YEAR = re.compile(r"\b(19\d{2}|20\d{2}|21\d{2})\b")
_FULL_MONTHS = "|".join(m for m in MONTHS if len(m) > 3 or m == "may")
_MON_ONLY = re.compile(r"\b(?:(in|during|last|this|since)\s+)?(" + _FULL_MONTHS + r")\b")
_NUMBER = r"(\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_AGO = re.compile(r"\b" + _NUMBER + r"\s+(day|week|month|year)s?\s+ago\b")
_RELATIVE = re.compile(r"\b(today|tonight|yesterday|recently|lately|"
                       r"(?:last|this|past|previous)\s+(?:week|weekend|month|year))\b")


def _month_bounds(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1)
    return start, datetime(year + (month == 12), month % 12 + 1, 1)


def window_bounds(when: datetime, window: str) -> tuple[datetime, datetime]:
    """[start, end) of the calendar window holding ``when``."""
    when = naive(when)
    if window == "day":
        return day_interval(when)
    if window == "week":
        start = day_interval(when)[0] - timedelta(days=when.weekday())
        return start, start + timedelta(days=7)
    if window == "month":
        return _month_bounds(when.year, when.month)
    if window == "year":
        return datetime(when.year, 1, 1), datetime(when.year + 1, 1, 1)
    raise ValueError(f"unknown window {window!r}")


def _shift(now: datetime, unit: str, n: int) -> datetime:
    if unit == "day":
        return now - timedelta(days=n)
    if unit == "week":
        return now - timedelta(weeks=n)
    months = now.year * 12 + now.month - 1 - (n * 12 if unit == "year" else n)
    return now.replace(year=months // 12, month=months % 12 + 1, day=1)


def _relative(cue: str, now: datetime) -> tuple[datetime, datetime]:
    if cue in ("today", "tonight"):
        return day_interval(now)
    if cue == "yesterday":
        return day_interval(now - timedelta(days=1))
    if cue in ("recently", "lately"):
        return now - timedelta(days=30), now
    which, unit = cue.split()
    if unit == "weekend":
        saturday = day_interval(now)[0] - timedelta(days=(now.weekday() - 5) % 7 or 7)
        return saturday, saturday + timedelta(days=2)
    if which == "past":
        return now - timedelta(days=WINDOW_DAYS[unit]), now
    return window_bounds(now if which == "this" else _shift(now, unit, 1), unit)


def _explicit(text: str) -> tuple[datetime, datetime] | None:
    """Absolute dates, most specific pattern first; None when there is none (or it is invalid)."""
    try:
        for rx, kind in ((_ISO_DAY, "ymd"), (_DAY_MON_YEAR, "dmy"), (_MON_DAY_YEAR, "mdy"), (_ISO_MONTH, "ym"),
                         (_MON_YEAR, "my"), (_YEAR, "y")):
            m = rx.search(text)
            if not m:
                continue
            g = m.groups()
            if kind == "ymd":
                return day_interval(datetime(int(g[0]), int(g[1]), int(g[2])))
            if kind == "dmy":
                return day_interval(datetime(int(g[2]), MONTHS[g[1]], int(g[0])))
            if kind == "mdy":
                return day_interval(datetime(int(g[2]), MONTHS[g[0]], int(g[1])))
            if kind == "ym":
                return _month_bounds(int(g[0]), int(g[1]))
            if kind == "my":
                return _month_bounds(int(g[1]), MONTHS[g[0]])
            return datetime(int(g[0]), 1, 1), datetime(int(g[0]) + 1, 1, 1)
    except ValueError:  # e.g. "2023-02-30": not a date, so no hint
        return None
    return None


def parse_time_hint(hint: str, now: datetime) -> tuple[datetime, datetime] | None:
    """Turn the planner's temporal hint (a date, a month, "last week", "3 days ago") into [start, end).

    [ours] H-Mem's paper infers "specific dates and relative time cues" but gives no parser; relative
    cues are resolved against the query time ``now``. Ranges "X to Y" take the hull of both ends.
    """
    text = " ".join(str(hint or "").lower().split())
    if not text:
        return None
    now = naive(now)
    parts = re.split(r"\s+(?:to|until|till|through|and|-|–)\s+|\.\.", text)
    found = [iv for iv in (_explicit(p) for p in parts) if iv]
    if found:
        return min(s for s, _ in found), max(e for _, e in found)
    m = _AGO.search(text)
    if m:
        n = int(m.group(1)) if m.group(1).isdigit() else NUMBERS[m.group(1)]
        return window_bounds(_shift(now, m.group(2), n) if m.group(2) in ("month", "year")
                             else now - timedelta(days=n * WINDOW_DAYS[m.group(2)]), m.group(2))
    m = _RELATIVE.search(text)
    if m:
        return _relative(" ".join(m.group(1).split()), now)
    m = _MON_ONLY.search(text)
    if m and (m.group(2) != "may" or m.group(1)):  # a bare "may" is usually the verb
        month = MONTHS[m.group(2)]
        year = now.year if month <= now.month else now.year - 1  # the latest such month up to now
        return _month_bounds(year, month)
    return None


# A digit, or a month's name or abbreviation (with "sept"): text that could state a date.
_DATE_MENTION = re.compile(r"\d|\b(" + "|".join([*MONTHS, "sept"]) + r")\b", re.I)


def mentions_date(text: str | None) -> bool:
    """Whether ``text`` could state a date or time (it holds a digit or a month name)."""
    return bool(_DATE_MENTION.search(text or ""))
