"""Dates written in answers and gold answers, as the periods they denote (issue: verdicts, item 3).

A temporal gold such as "The sunday before 25 May 2023" is a day (21 May 2023); "The week before 9 June 2023" is a
period (29 May-8 June: the seven days before, or the calendar week before); "2022" a year. Token F1 treats them as
words, so "21 May 2023" against "13 May 2023" scores 0.67 and "13th of May" 0.33: backwards. ``find_periods``
reads every date expression of a text into ``Period`` objects (an inclusive day range with its precision), so a
checker can ask whether the answer names the gold's day or a day inside the gold's period, whatever the notation.

Understood: "7 May 2023", "7th of May, 2023", "May 7th 2023", "2023-05-07", "7 May" and "May 7" (year open),
"May 2023", "2023-05", "in May" (year open), "2022"; relative to an anchor written in the same text: "the Sunday
before 25 May 2023", "the week/weekend before ...", "two weekends before ...", "the week of ...", "N days/weeks
before ...", "the first/last week/weekend/Sunday of <month year>". Relative phrases with no anchor in the text
("last Saturday") are not resolved: the answer does not say which Saturday it means.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

MONTHS = ("january february march april may june july august september october november december").split()
_MONTH_ABBR = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"sept": 9}
WEEKDAYS = ("monday tuesday wednesday thursday friday saturday sunday").split()
ORDINALS = ("first", "second", "third", "fourth")  # "last" is read apart: counted from the end
_NUMBER_WORDS = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}

_MON = r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|" \
       r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
# one absolute date expression, most precise forms first; named groups mon/day/year (some optional)
_ABSOLUTE = [
    ("iso", re.compile(r"\b(?P<year>(?:19|20)\d{2})-(?P<mon>\d{1,2})-(?P<day>\d{1,2})\b")),
    ("dmy", re.compile(rf"\b(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MON}(?:,?\s+{_YEAR})?\b", re.I)),
    ("mdy", re.compile(rf"\b{_MON}\s+(?:the\s+)?{_DAY}(?![\d:])(?:,?\s+{_YEAR})?\b", re.I)),
    ("ym", re.compile(r"\b(?P<year>(?:19|20)\d{2})-(?P<mon>\d{1,2})\b(?!-)")),
    # "May 2023", "May, 2023", and "April.2023" (a LoCoMo gold: the month's full stop, then the year, no space)
    ("my", re.compile(rf"\b{_MON}(?:,?\s+|(?<=\.)){_YEAR}\b", re.I)),
    ("m", re.compile(r"\b(?:in|during|since|by|of|early|late|mid|end of|beginning of)\s+(?P<mon>january|february|"
                     r"march|april|may|june|july|august|september|october|november|december)\b(?!\s*\d)", re.I)),
    ("y", re.compile(r"(?<![\d:/-])\b(?P<year>(?:19|20)\d{2})\b(?![\d:/-])")),
]
_COUNT = r"(?P<count>\d+|one|two|three|four|five|six|a|an)"
# relative phrases whose anchor is an absolute date written right after them
_RELATIVE = re.compile(
    rf"\b(?:the\s+|on\s+the\s+|in\s+the\s+|during\s+the\s+)?(?:(?P<ord>{'|'.join(ORDINALS)}|last)\s+)?(?:"
    rf"(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    rf"(?P<unit_week>week(?!end))|(?P<unit_weekend>weekend)|"
    rf"{_COUNT}\s+(?P<unit>days?|weeks?|weekends?|months?))"
    rf"\s+(?P<rel>before|after|of|in|prior to)\s+(?:the\s+)?", re.I)


@dataclass(frozen=True)
class Period:
    """An inclusive range of days a date expression denotes. ``year_known`` is False for "7 May" or "in May"
    (then only month and day are compared, in any year)."""

    start: date
    end: date
    precision: str  # day | week | weekend | month | year | days
    text: str = ""
    year_known: bool = True

    @property
    def is_day(self) -> bool:
        return self.start == self.end

    def within(self, other: "Period") -> bool:
        """Every day of ``self`` lies inside ``other`` (years compared only when both know theirs)."""
        if self.year_known and other.year_known:
            return other.start <= self.start and self.end <= other.end
        return _md(other.start) <= _md(self.start) and _md(self.end) <= _md(other.end) \
            if other.start.year == other.end.year else True

    def overlaps(self, other: "Period") -> bool:
        if self.year_known and other.year_known:
            return self.start <= other.end and other.start <= self.end
        return _md(self.start) <= _md(other.end) and _md(other.start) <= _md(self.end)


def _md(d: date) -> tuple[int, int]:
    return d.month, d.day


def _month(text: str) -> int:
    text = text.lower().rstrip(".")
    if text.isdigit():
        return int(text)
    return _MONTH_ABBR[text[:4] if text[:4] == "sept" else text[:3]]


def _month_end(year: int, month: int) -> date:
    return (date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1))


def _absolute(kind: str, m: re.Match) -> Period | None:
    g = m.groupdict()
    year = int(g["year"]) if g.get("year") else None
    try:
        month = _month(g["mon"]) if g.get("mon") else None
        day = int(g["day"]) if g.get("day") else None
        if day is not None:
            d = date(year or 2000, month, day)  # 2000: a leap year, so 29 February parses when the year is open
            return Period(d, d, "day", m.group(0), year is not None)
        if month is not None:
            y = year or 2001
            return Period(date(y, month, 1), _month_end(y, month), "month", m.group(0), year is not None)
        return Period(date(year, 1, 1), date(year, 12, 31), "year", m.group(0))
    except (ValueError, KeyError, TypeError):
        return None  # "31 February", "month 13": not a date


def _scan_absolute(text: str) -> list[tuple[int, int, Period]]:
    """Every absolute date in ``text`` as (start, end, period); a span taken by a more precise form is not
    read again by a less precise one ("7 May 2023" is one day, not also the month and the year)."""
    taken: list[tuple[int, int]] = []
    found = []
    for kind, rx in _ABSOLUTE:
        for m in rx.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            if kind in ("dmy", "mdy") and m.group("mon") == "may" and not m.group("year"):
                continue  # lower-case "may" with no year ("he may 3 times ...") is the verb, not the month
            if kind == "m" and m.group("mon").lower() == "may":
                continue  # "in may" is too often the verb ("in may ways") to read without a year
            period = _absolute(kind, m)
            if period is not None:
                taken.append((m.start(), m.end()))
                found.append((m.start(), m.end(), period))
    return sorted(found, key=lambda f: f[0])


def _count(text: str | None) -> int:
    if not text:
        return 1
    return int(text) if text.isdigit() else _NUMBER_WORDS.get(text.lower(), 1)


def _weekday_before(anchor: date, weekday: int) -> date:
    back = (anchor.weekday() - weekday) % 7 or 7
    return anchor - timedelta(days=back)


def _week_before(anchor: date, text: str) -> Period:
    """"The week before D" has two readings: the seven days before D, and the calendar (Monday-Sunday) week
    before D's week. LoCoMo's golds come from a turn dated D saying "last week", which speakers use in both
    senses, and a reader of HyMem's answers took "27 June" as right for "the week before 6 July" (a Thursday) by
    the calendar reading. So the period spans both: from the Monday of the calendar week before D's week through
    D's eve, 7 to 13 days. Only the uncounted phrase: "two weeks before D" keeps its seven days."""
    monday = anchor - timedelta(days=anchor.weekday())
    return Period(monday - timedelta(days=7), anchor - timedelta(days=1), "week", text)


def _nth_of_month(m: re.Match, anchor: Period) -> Period | None:
    """"The first/second/third/fourth/last week, weekend or weekday of <month year>": the Nth seven days of the
    month (the last week: its last seven days), the Nth Saturday-Sunday whose Saturday falls in it, or its Nth
    such weekday ("in" reads as "of": "the first weekend in August 2023"). Such phrases were once read as the whole
    month, so "9 August 2023" was accepted for "first weekend of August 2023" (RecMem conv-41 q56)."""
    if anchor.precision != "month" or not anchor.year_known or m.group("rel").lower() not in ("of", "in") \
            or not (m.group("unit_week") or m.group("unit_weekend") or m.group("weekday")):
        return None
    first, last = anchor.start, anchor.end
    nth = m.group("ord").lower()
    text = m.group(0) + anchor.text
    if m.group("unit_week"):
        if nth == "last":
            return Period(last - timedelta(days=6), last, "week", text)
        start = first + timedelta(days=7 * (ORDINALS.index(nth)))
        return Period(start, start + timedelta(days=6), "week", text)
    wd = WEEKDAYS.index(m.group("weekday").lower()) if m.group("weekday") else 5
    days = [d for d in (first + timedelta(days=i) for i in range((last - first).days + 1)) if d.weekday() == wd]
    day = days[-1] if nth == "last" else days[ORDINALS.index(nth)]
    if m.group("weekday"):  # "the first Sunday of May 2023"
        return Period(day, day, "day", text)
    return Period(day, day + timedelta(days=1), "weekend", text)


def _resolve(m: re.Match, anchor: Period) -> Period | None:
    """The period a relative phrase denotes, given the absolute date written after it."""
    nth = _nth_of_month(m, anchor) if m.group("ord") else None  # "the first weekend of August 2023"
    if nth is not None:
        return nth
    if not anchor.is_day or not anchor.year_known or m.group("rel").lower() == "in":
        return None  # "in" relates an ordinal to a month only
    ordinal = (m.group("ord") or "").lower()
    # "first"/"last" add nothing ("last week before 13 October": the week before); "the second week (or Sunday)
    # before D": two weeks (Sundays) back; beside a count ("second 3 weeks") the ordinal is ignored
    n = (ORDINALS.index(ordinal) + 1) \
        if ordinal in ORDINALS[1:] and not m.group("count") else None
    a, rel = anchor.start, m.group("rel").lower()
    text = m.group(0) + anchor.text
    if rel == "of":  # "the week of 23 August": the Monday-Sunday week holding it
        if m.group("unit_week"):
            monday = a - timedelta(days=a.weekday())
            return Period(monday, monday + timedelta(days=6), "week", text)
        return None
    before = rel in ("before", "prior to")
    if m.group("weekday"):
        wd = WEEKDAYS.index(m.group("weekday").lower())
        day = _weekday_before(a, wd) if before else a + timedelta(days=(wd - a.weekday()) % 7 or 7)
        day += timedelta(days=(-7 if before else 7) * ((n or 1) - 1))
        return Period(day, day, "day", text)
    unit = (m.group("unit") or ("week" if m.group("unit_week") else "weekend")).lower().rstrip("s")
    counted = n is not None or m.group("count") is not None
    n = n or _count(m.group("count"))
    sign = -1 if before else 1
    if unit == "day":
        day = a + timedelta(days=sign * n)
        return Period(day, day, "day", text)
    if unit == "week":
        if before and not counted:  # either reading of "the week before D" (see _week_before)
            return _week_before(a, text)
        if before:  # "two weeks before D": the seven days seven n days back
            return Period(a - timedelta(days=7 * n), a - timedelta(days=7 * n - 6), "week", text)
        return Period(a + timedelta(days=7 * n - 6), a + timedelta(days=7 * n), "week", text)
    if unit == "weekend":
        sat = _weekday_before(a, 5) if before else a + timedelta(days=(5 - a.weekday()) % 7 or 7)
        sat += timedelta(days=sign * 7 * (n - 1))
        return Period(sat, sat + timedelta(days=1), "weekend", text)
    if unit == "month":
        month0 = a.month - 1 + sign * n
        y, mo = a.year + month0 // 12, month0 % 12 + 1
        return Period(date(y, mo, 1), _month_end(y, mo), "month", text)
    return None


def find_periods(text: str) -> list[Period]:
    """Every date expression of ``text`` as a ``Period``, in order; a relative phrase followed by its anchor
    ("the Sunday before 25 May 2023") is one period (the Sunday), not two."""
    text = str(text or "")
    absolute = _scan_absolute(text)
    out, used = [], set()
    for m in _RELATIVE.finditer(text):
        nxt = next(((s, e, p) for s, e, p in absolute if s == m.end()), None)
        if nxt is None:
            continue
        period = _resolve(m, nxt[2])
        if period is not None:
            out.append((m.start(), period))
            used.add(nxt[0])
    out += [(s, p) for s, _, p in absolute if s not in used]
    return [p for _, p in sorted(out, key=lambda x: x[0])]
