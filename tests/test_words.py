"""Numbers and dates in words, one style for every view (``workbench.words``)."""
from datetime import date, datetime
from pathlib import Path

from workbench.words import counted, day_words, plural, when_words


def test_counts_agree_with_their_nouns():
    assert counted(1, "edit") == "1 edit" and counted(0, "edit") == "0 edits" and counted(3, "edit") == "3 edits"
    assert counted(2, "sub-query", "sub-queries") == "2 sub-queries" and plural(1, "copy", "copies") == "copy"
    assert counted(2057, "token") == "2,057 tokens"


def test_dates_have_one_style():
    assert day_words("2023-06-11") == "11 Jun 2023" == day_words(date(2023, 6, 11))
    assert day_words("2023-03-14T19:40:00") == "14 Mar 2023"
    assert when_words("2023-03-14T19:40:00") == "14 Mar 2023, 19:40" == when_words(datetime(2023, 3, 14, 19, 40))
    assert when_words("2023-03-14T00:00:00") == "14 Mar 2023"  # midnight: a bare date is a day
    assert when_words("last spring") == "last spring" and when_words(None) == "" and day_words("") == ""


def test_views_write_dates_through_the_one_helper():
    """No view formats a date with a month name of its own (two styles met on one screen before: "11 June 2023"
    in planted marks, "14 Mar 2023" in the tree)."""
    root = Path(__file__).resolve().parents[1]
    own = [f"{p.relative_to(root)}" for p in sorted((root / "widgets").rglob("*.py"))
           if "%B" in p.read_text(encoding="utf-8")]
    assert own == []
