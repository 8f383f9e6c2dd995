"""An access token for a server bound beyond loopback, as Jupyter Server does it.

A Host check keeps DNS-rebinding pages out, but it is not authentication: once the app listens on
a network address, any machine that can reach the port can send ``Host: localhost``. So when
``workbench app --allow-remote`` (or ``panel serve ... --auth-module widgets/host_auth.py``) binds
beyond loopback, every request must bring the server's token: in the query (``?token=...``, the
link printed once at start-up), then in a cookie the server sets (HttpOnly, SameSite=Strict, so a
page elsewhere cannot use it) before it sends the browser on to the same address without the
token; or in an ``Authorization: token ...`` header for scripts. The websocket handshake is a
request like any other and is checked the same way. The token is random per start
(``secrets.token_urlsafe``), or ``$WORKBENCH_APP_TOKEN`` when set (for a proxy or a script that
must know it); it is compared in constant time and never written to a log or the page.
"""
from __future__ import annotations

import hmac
import os
import secrets
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

#: the environment variable that fixes the token (else a random one per start)
TOKEN_ENV = "WORKBENCH_APP_TOKEN"


class AccessToken:
    """The token one server start requires; ``check`` reads a request for it."""

    REFUSAL = ("403: this server is reachable from other machines, so it needs its access token: open the link "
               "with ?token=... that it printed when it started (or send 'Authorization: token ...').\n")

    def __init__(self, value: str | None = None, *, port: int | None = None):
        value = value or os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(32)
        if len(value) < 16:
            raise SystemExit(f"${TOKEN_ENV} is too short to be a secret: use at least 16 characters")
        self.value = value
        # one cookie per port: two servers on one machine must not overwrite each other's
        self.cookie = f"workbench_token_{port}" if port else "workbench_token"

    def _same(self, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(offered.encode("utf-8", "replace"), self.value.encode())

    def check(self, request) -> str:
        """``"ok"`` (cookie or header), ``"in_query"`` (right token in the query: set the cookie and
        redirect), or ``"missing"`` (no right token anywhere)."""
        auth = request.headers.get("Authorization", "")
        if auth.lower().startswith("token ") and self._same(auth[6:].strip()):
            return "ok"
        cookie = request.cookies.get(self.cookie)
        if cookie is not None and self._same(cookie.value):
            return "ok"
        if any(self._same(v.decode("utf-8", "replace")) for v in request.query_arguments.get("token", [])):
            return "in_query"
        return "missing"

    def set_cookie(self, handler) -> None:
        handler.set_cookie(self.cookie, self.value, httponly=True, samesite="Strict", path="/")

    @staticmethod
    def without_token(uri: str) -> str:
        """``uri`` with its ``token`` parameters removed (the address bar and history keep no secret)."""
        parts = urlsplit(uri)
        query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "token"])
        return urlunsplit(("", "", parts.path or "/", query, parts.fragment))

    def link(self, base: str) -> str:
        """The start-up link: ``base`` with the token in its query."""
        return f"{base}{'&' if '?' in base else '?'}token={self.value}"
