"""Untrusted text (anything read from a run directory, cassette or dataset) made inert for each
renderer it reaches outside the app (the app escapes with ``widgets.html.esc``).

- ``markdown_text``: a cell or phrase of a Markdown report (``report.md``, ``workbench report``,
  the mechanism census). A report is read on GitHub, in editors and notebooks, some of which
  allow raw HTML: so ``<``, ``>`` and ``&`` become entities (no tag, no ``<https://...>``
  autolink), and ``[``, ``]``, backticks and backslashes are backslash-escaped, so no image
  (``![x](https://beacon)``), link or code span can be formed from run data. ``|`` is escaped and
  newlines become spaces, so a cell stays one table cell; control characters as below.
- ``terminal_text``: text printed by the CLI. C0 controls (but newline and tab), DEL and C1
  controls are shown as ``\\xNN`` escapes, so a reply holding ``ESC]...`` or ``ESC[2J`` cannot
  retitle, clear or recolour the user's terminal, or hide what follows it.
"""
from __future__ import annotations

import re

_MARKDOWN_SPECIAL = str.maketrans({"\\": "\\\\", "`": "\\`", "[": "\\[", "]": "\\]", "|": "\\|",
                                   "&": "&amp;", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " "})
# C0 controls except tab (\x09) and newline (\x0a), DEL, and C1 controls (\x80-\x9f)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def markdown_text(text: object) -> str:
    """``text`` as inert Markdown: shows the same characters, forms no HTML, image, link or code span;
    control characters are escaped as for the terminal (a report is also read with ``cat``)."""
    return terminal_text(str(text).translate(_MARKDOWN_SPECIAL))


def terminal_text(text: object) -> str:
    """``text`` with every terminal control character (but newline and tab) shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def terminal_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) safe for a terminal and still valid JSON:
    ``json.dumps`` escapes C0 controls but leaves DEL and C1 raw, and those can only sit inside
    strings, where ``\\u00NN`` is their JSON spelling."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
