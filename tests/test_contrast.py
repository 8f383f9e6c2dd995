"""Text contrast of the views' own CSS: every ``color`` a rule sets reaches WCAG AA (4.5:1) against the
rule's own background, or against white (the app's and JupyterLab's page) when the rule sets none.

Only the workbench's CSS (style strings in ``widgets/*.py`` and ``widgets/templates``) is checked;
Panel's and plotly's themes are theirs. Plot line colours are not text and are not CSS rules here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

WIDGETS = Path(__file__).resolve().parents[1] / "widgets"
RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
COLOR = re.compile(r"(?<![-\w])color\s*:\s*(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3})\b")
BACKGROUND = re.compile(r"background(?:-color)?\s*:\s*(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3})\b")


def _rgb(hex_: str) -> tuple[float, ...]:
    h = hex_.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    return tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))


def luminance(hex_: str) -> float:
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in _rgb(hex_)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(fg: str, bg: str) -> float:
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def css_rules():
    for path in sorted([*WIDGETS.glob("*.py"), *WIDGETS.glob("templates/*.html")]):
        for m in RULE.finditer(path.read_text(encoding="utf-8")):
            lines = m.group(1).strip().splitlines() or [""]
            selector, body = lines[-1].strip()[-80:], m.group(2)
            for fg in COLOR.findall(body):
                bg = BACKGROUND.search(body)
                yield path.name, selector, fg, bg.group(1) if bg else "#ffffff"


def test_contrast_formula_matches_wcag_reference_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # the classic AA grey
    assert contrast("#868e96", "#ffffff") < 4.5  # the grey the views used for muted text


def test_every_text_colour_in_the_views_css_reaches_aa():
    found = list(css_rules())
    assert len(found) > 10  # the scan sees the views' CSS at all
    chips = [x for x in found if x[2].lower() in ("#fff", "#ffffff") and x[3] == "#ffffff"]
    assert {sel.split(">")[-1].split()[-1] for _, sel, _, _ in chips} <= {".wb-type", ".wb-lv"}, chips  # palette test
    low = [f"{f}: {sel} color {fg} on {bg} = {contrast(fg, bg):.2f}:1" for f, sel, fg, bg in found
           if contrast(fg, bg) < 4.5 and (f, sel, fg, bg) not in chips]
    assert not low, "text below 4.5:1:\n" + "\n".join(low)


def test_white_chip_text_and_copy_badges_reach_aa_on_every_palette_colour():
    """Entity-type chips and H-Mem level badges are white text on a palette colour set inline; a copy
    badge is the level colour on white."""
    from widgets.graph_view import TYPE_COLOURS
    from widgets.tree_view import LEVEL_COLOURS

    low = {c: round(contrast("#ffffff", c), 2) for c in [*TYPE_COLOURS.values(), *LEVEL_COLOURS]
           if contrast("#ffffff", c) < 4.5}
    assert not low, low
