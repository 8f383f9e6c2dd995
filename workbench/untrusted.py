"""Untrusted text (anything read from a run directory, cassette or dataset) made inert for each
renderer it reaches outside the app (the app escapes with ``widgets.html.esc``).

- ``markdown_text``: a cell or phrase of a Markdown report (``report.md``, ``workbench report``,
  the mechanism census). A report is read on GitHub, in editors and notebooks, some of which
  allow raw HTML: so ``<``, ``>`` and ``&`` become entities (no tag, no ``<https://...>``
  autolink), and ``[``, ``]``, backticks and backslashes are backslash-escaped, so no image
  (``![x](https://beacon)``), link or code span can be formed from run data. ``|`` is escaped and
  newlines become spaces, so a cell stays one table cell; control characters as below. No bare URL
  in run text becomes a live link either, in GitHub's autolink extension (``https://``, ``www.``,
  e-mail addresses, ``mailto:``) or a linkify renderer (markdown-it's, which also links bare domains
  such as ``evil.com`` and ``//host``): the ``:`` after a URL's scheme, the second ``/`` of a ``//``
  and each ``.`` between a word and a letter are backslash-escaped (each escape splits the text the
  link detectors see, and renders as the character itself), and an e-mail address gets an invisible
  word joiner (U+2060) after its ``@`` (GitHub's e-mail rule reads the text after escapes are resolved,
  so no escape stops it). The project's own links are written as Markdown links by the project, never
  passed through here.
- ``terminal_text``: text printed by the CLI. C0 controls (but newline and tab), DEL and C1
  controls are shown as ``\\xNN`` escapes, so a reply holding ``ESC]...`` or ``ESC[2J`` cannot
  retitle, clear or recolour the user's terminal, or hide what follows it.
"""
from __future__ import annotations

import re

_MARKDOWN_SPECIAL = str.maketrans({"\\": "\\\\", "`": "\\`", "[": "\\[", "]": "\\]", "|": "\\|",
                                   "&": "&amp;", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " "})
# what makes GFM autolink or linkify detect a link in text, each broken with an escape the renderer resolves
_SCHEME_COLON = re.compile(r"(?i)(?<![\w+.-])([a-z][a-z0-9+.-]*):(?=/\\?/)|(?<![\w+.-])(mailto|xmpp):")
_DOUBLE_SLASH = re.compile(r"(?<!:)//")
_WORD_DOT = re.compile(r"(?<=[\w-])\.(?=[^\W\d_])")
_EMAIL_AT = re.compile(r"(?<=[\w.+-])@(?=[\w-])")
WORD_JOINER = "\u2060"
# C0 controls except tab (\x09) and newline (\x0a), DEL, and C1 controls (\x80-\x9f)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def markdown_text(text: object) -> str:
    """``text`` as inert Markdown: shows the same characters, forms no HTML, image, link or code span;
    control characters are escaped as for the terminal (a report is also read with ``cat``)."""
    return terminal_text(no_autolinks(str(text).translate(_MARKDOWN_SPECIAL)))


def no_autolinks(markdown: str) -> str:
    """Markdown text (already escaped as ``markdown_text`` escapes) in which no link detector finds a URL,
    a bare domain or an e-mail address: ``https://evil.example`` is written ``https\\:/\\/evil\\.example``
    and ``a@b.org`` ``a@`` + U+2060 + ``b\\.org`` (see the module's docstring); rendered, each shows as before."""
    out = _SCHEME_COLON.sub(lambda m: (m.group(1) or m.group(2)) + "\\:", markdown)
    out = _DOUBLE_SLASH.sub("/\\\\/", out)
    out = _WORD_DOT.sub("\\\\.", out)
    return _EMAIL_AT.sub("@" + WORD_JOINER, out)


def terminal_text(text: object) -> str:
    """``text`` with every terminal control character (but newline and tab) shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def terminal_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) safe for a terminal and still valid JSON:
    ``json.dumps`` escapes C0 controls but leaves DEL and C1 raw, and those can only sit inside
    strings, where ``\\u00NN`` is their JSON spelling."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
