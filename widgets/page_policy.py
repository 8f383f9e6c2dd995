"""The app's page-level Content-Security-Policy: a second line behind escaping.

Every run value that reaches the page is escaped (``widgets.html.esc``), but one missed field would
be enough for a script to run, so every response of ``workbench app`` (and every page the
``panel serve`` auth hook sees) also carries a policy that forbids what such a script would need:

- scripts only from this server (``'self'``) or inline ones carrying the page's nonce: Bokeh's own
  bootstrap scripts in the page get it as the page is sent (``NonceScripts``; the page holds no run
  data — the document arrives over the websocket — so every ``<script`` in it is Bokeh's). An
  ``onerror=`` attribute or a ``<script>`` that Panel's HTML pane re-creates from run text carries
  no nonce and does not run. ``'unsafe-eval'`` stays: BokehJS compiles Panel's ``jscallback``
  snippets with ``new Function``, and an injected snippet has no way to reach it without running first.
- nothing from other hosts: images, fonts, styles, frames and connections (``fetch``, websockets)
  only from this server, ``data:`` and ``blob:`` (es-module-shims fetches Panel's ES modules from
  ``blob:`` URLs the page itself made); no ``<form>`` posts (``form-action 'none'``), no
  ``<base>`` (``base-uri 'none'``), no plugins, and the app cannot be framed by another page.

The entity graph's page (``widgets.graph_view``) is a sandboxed ``<iframe srcdoc>``, which inherits
this policy: its inline scripts are given the session's nonce (``nonce_for_session``).
"""
from __future__ import annotations

import base64
import json
import re
import secrets
import threading
from html.parser import HTMLParser

from tornado.web import OutputTransform

POLICY = ("default-src 'self'; script-src 'self' 'nonce-{nonce}' 'unsafe-eval' blob:; "
          "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
          "connect-src 'self' blob: data:; frame-src 'self' blob: data:; worker-src 'self' blob:; object-src 'none'; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
#: the policy of a response that is not a page (scripts, JSON, refusals): nothing may run from it
STATIC_POLICY = "default-src 'none'; frame-ancestors 'none'"

_SESSION_TOKEN = re.compile(rb'"token":"([A-Za-z0-9_\-]+)"')

# session id -> the nonce of the page that opened it (read by views that embed inline scripts)
_NONCES: dict[str, str] = {}
_NONCES_LOCK = threading.Lock()
_MAX_NONCES = 10_000


def page_policy(nonce: str) -> str:
    return POLICY.format(nonce=nonce)


def _session_id(page: bytes) -> str | None:
    """The Bokeh session id in a page's render items (its token is base64 JSON, unsigned here)."""
    m = _SESSION_TOKEN.search(page)
    if m is None:
        return None
    token = m.group(1).decode()
    try:
        payload = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=" * (-len(token) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    sid = payload.get("session_id") if isinstance(payload, dict) else None
    return sid if isinstance(sid, str) else None


def nonce_for_session(session_id: str | None) -> str | None:
    """The nonce of the page that opens ``session_id`` (``None`` outside a served page). A session's
    document is built before its page is sent (a deep link can open the graph at once), so the first
    to ask makes the nonce and the page is sent with that same one."""
    if not session_id:
        return None
    with _NONCES_LOCK:
        if session_id not in _NONCES:
            if len(_NONCES) >= _MAX_NONCES:  # oldest first (dicts keep insertion order)
                del _NONCES[next(iter(_NONCES))]
            _NONCES[session_id] = secrets.token_urlsafe(18)
        return _NONCES[session_id]


def current_nonce() -> str | None:
    """The nonce of the served page this code runs for, or ``None`` (a notebook, a test, no server)."""
    try:
        import panel as pn

        context = pn.state.curdoc.session_context if pn.state.curdoc is not None else None
    except Exception:  # no document: not in a served session
        return None
    return nonce_for_session(getattr(context, "id", None))


class _ScriptTags(HTMLParser):
    """Offsets of the real ``<script`` start tags of a page: an HTML parser reads a script's body as
    raw text, so a ``"<script>"`` inside a script's own string (vis-network has one) is not a tag."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=False)
        self.offsets: list[int] = []
        self._lines = [0]
        for line in text.split("\n")[:-1]:  # the parser counts lines by "\n" alone, as here
            self._lines.append(self._lines[-1] + len(line) + 1)
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            line, col = self.getpos()
            self.offsets.append(self._lines[line - 1] + col)


def add_nonce(html: str, nonce: str | None) -> str:
    """``html`` (a page the app itself built) with ``nonce`` on each of its ``<script`` start tags."""
    if not nonce:
        return html
    out, last = [], 0
    for at in _ScriptTags(html).offsets:
        out += [html[last:at + len("<script")], f' nonce="{nonce}"']
        last = at + len("<script")
    return "".join(out) + html[last:]


class PagePolicy(OutputTransform):
    """Adds the policy to every response; an HTML page gets a fresh nonce on its script tags."""

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        if "Content-Security-Policy" in headers:
            return status_code, headers, chunk
        if headers.get("Content-Type", "").startswith("text/html") and finishing:
            nonce = nonce_for_session(_session_id(chunk)) or secrets.token_urlsafe(18)
            chunk = add_nonce(chunk.decode("utf-8", "surrogateescape"), nonce).encode("utf-8", "surrogateescape")
            if "Content-Length" in headers:
                headers["Content-Length"] = str(len(chunk))
            headers["Content-Security-Policy"] = page_policy(nonce)
        else:
            headers["Content-Security-Policy"] = STATIC_POLICY
        headers["X-Content-Type-Options"] = "nosniff"
        headers["Referrer-Policy"] = "no-referrer"
        return status_code, headers, chunk


def install_page_policy(app) -> None:
    """Put ``PagePolicy`` first among ``app``'s output transforms (before any compression)."""
    if PagePolicy not in app.transforms:
        app.transforms.insert(0, PagePolicy)
