"""Refuse requests whose ``Host`` is not a name of this server: the app's guard against DNS rebinding.

The app has no login and binds to 127.0.0.1, but binding alone does not keep a web page out: a
page on ``evil.example`` can re-point its own name at 127.0.0.1 (DNS rebinding) and then talk to
the app from the victim's browser as a *same-origin* page — ``Host`` and ``Origin`` are both
``evil.example:PORT``, and Tornado (6.6+) accepts a websocket whose ``Origin`` matches its
``Host``, whatever Bokeh's ``allow_websocket_origin`` says. The one thing such a request cannot
fake is the name it was sent to, so every route (page, static files, websocket) first checks
that ``Host`` names this server: a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``, any
port) or a name the user allowed with ``--allow-remote NAME``. Anything else gets a plain 403
before any handler runs, so no session is created and no run data is read.

``guard_hosts`` installs the check on a Tornado application as the first routing rule;
``host_allowed`` is the same decision for code that only sees a request's headers (the
``panel serve widgets/app.py`` path, where the Tornado application is Panel's own).
"""
from __future__ import annotations

import ipaddress
from typing import Iterable

from tornado.httputil import split_host_and_port
from tornado.routing import Matcher, Rule
from tornado.web import Application, RequestHandler

#: the names a loopback-only server answers to (with any port)
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(host_header: str) -> str:
    """The name part of a ``Host`` header, lower-cased, without port or IPv6 brackets."""
    host = (host_header or "").strip().lower()
    if host.startswith("["):  # "[::1]:5006" or "[::1]"
        return host[1:host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        host = split_host_and_port(host)[0]
    return host.rstrip(".")  # "localhost." is the same name


def allowed_names(address: str = "127.0.0.1", extra: Iterable[str] = ()) -> frozenset[str]:
    """Loopback names, the address the server binds (unless it is a wildcard such as 0.0.0.0) and
    the names the user allowed, each normalised as ``host_name`` normalises a header."""
    names = set(LOOPBACK_NAMES)
    for name in [address, *extra]:
        name = host_name(name)
        if name and not _is_wildcard(name):
            names.add(name)
    return frozenset(names)


def _is_wildcard(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_unspecified
    except ValueError:
        return False


def host_allowed(host_header: str | None, names: Iterable[str] = LOOPBACK_NAMES) -> bool:
    """True when ``host_header`` names this server. A request without ``Host`` (HTTP/1.0, or a
    non-browser client) is refused too: browsers always send one, so nothing legitimate lacks it."""
    return bool(host_header) and host_name(host_header) in set(names)


class ForeignHost(Matcher):
    """A routing rule that matches exactly the requests whose ``Host`` is not an allowed name."""

    def __init__(self, names: Iterable[str]):
        self.names = frozenset(names)

    def match(self, request):
        return None if host_allowed(request.headers.get("Host"), self.names) else {}


class RefuseForeignHost(RequestHandler):
    """403 for every method (websocket upgrades included): says why, echoes nothing of the request."""

    def prepare(self):
        self.set_status(403)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish("403: this server answers only to its own names (localhost, 127.0.0.1, [::1]); "
                    "the request's Host header names another, as a DNS-rebinding page would.\n")


def guard_hosts(app: Application, names: Iterable[str]) -> None:
    """Put the Host check in front of every route of ``app`` (before Bokeh's and Panel's handlers)."""
    app.default_router.rules.insert(0, Rule(ForeignHost(names), RefuseForeignHost))
