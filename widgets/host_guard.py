"""Refuse requests whose ``Host`` is not a name of this server: the app's guard against DNS rebinding.

The app has no login and binds to 127.0.0.1, but binding alone does not keep a web page out: a
page on ``evil.example`` can re-point its own name at 127.0.0.1 (DNS rebinding) and then talk to
the app from the victim's browser as a *same-origin* page — ``Host`` and ``Origin`` are both
``evil.example:PORT``, and Tornado (6.6+) accepts a websocket whose ``Origin`` matches its
``Host``, whatever Bokeh's ``allow_websocket_origin`` says. The one thing such a request cannot
fake is the name it was sent to, so every route (page, static files, websocket) first checks
that ``Host`` names this server: a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``, any
port) or a name the user allowed with ``--allow-remote NAME``.

The header is *parsed*, not split: ``parse_host`` accepts exactly RFC 9110's ``uri-host [":" port]``
(an IPv6 literal in brackets, an IPv4 address, or a DNS name; case and one trailing dot
normalised, an IPv6 literal compared in its canonical form). Anything else — userinfo
(``a@localhost``), a second colon, a port out of range or with text after it, spaces, controls —
is malformed: 400, with words. A well-formed name that is not this server's is foreign: 403, and
so is an IPv6 literal with a name glued after it (``[::1]evil.example``: the name of another host).
Python's ``urlsplit`` is not enough on its own here: it reads ``[::1]evil.example:5006`` as host
``::1``, which is how such a Host once passed the guard.

``guard_hosts`` installs the check on a Tornado application as the first routing rule (so it also
covers the websocket handshake); ``host_verdict`` is the same decision for code that only sees a
request's headers (the ``panel serve widgets/app.py`` path, where the application is Panel's own).
The same first rule refuses oversized request targets (``request_bounds``).
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterable

from tornado.routing import Matcher, Rule
from tornado.web import Application, RequestHandler

#: the names a loopback-only server answers to (with any port)
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

# uri-host [":" port]: a bracketed IPv6 literal, or a dotted name/IPv4 of DNS characters; nothing else.
_HOST_FORM = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})?))"
                        r"(?::(?P<port>[0-9]{1,5}))?")
_GLUED = re.compile(r"\[[0-9A-Fa-f:.]+\][A-Za-z][A-Za-z0-9_.-]*(?::[0-9]{1,5})?")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")


class MalformedHost(ValueError):
    """A ``Host`` header that is not ``uri-host [":" port]``."""


@dataclass(frozen=True)
class ParsedHost:
    name: str  #: lower case, no brackets, no trailing dot; an IPv6 literal in canonical form
    port: int | None


def parse_host(header: str | None) -> ParsedHost:
    """The ``Host`` header parsed strictly (see the module docstring); ``MalformedHost`` otherwise."""
    if not header:
        raise MalformedHost("no Host header")
    m = _HOST_FORM.fullmatch(header)
    if m is None:
        raise MalformedHost("not of the form name[:port] or [IPv6]:port")
    port = int(m["port"]) if m["port"] is not None else None
    if port is not None and not 0 < port < 65536:
        raise MalformedHost("port out of range")
    if m["v6"] is not None:
        try:
            return ParsedHost(str(ipaddress.IPv6Address(m["v6"])), port)
        except ValueError:
            raise MalformedHost("not an IPv6 address inside the brackets") from None
    name = m["name"].lower()
    name = name[:-1] if name.endswith(".") else name  # "localhost." is the same name
    if not name or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise MalformedHost("not a DNS name")
    return ParsedHost(name, port)


def host_name(host_header: str) -> str:
    """The normalised name of a ``Host`` header or a bare address (``::1`` unbracketed is read as
    an address, as ``--address ::1`` is written); ``""`` when it cannot be parsed."""
    text = (host_header or "").strip()
    try:
        return str(ipaddress.ip_address(text.strip("[]")))  # a bare address, IPv6 included
    except ValueError:
        pass
    try:
        return parse_host(text).name
    except MalformedHost:
        return ""


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


#: what ``host_verdict`` answers
OK, MALFORMED, FOREIGN = "ok", "malformed", "foreign"


def host_verdict(host_header: str | None, names: Iterable[str] = LOOPBACK_NAMES) -> str:
    """``OK`` when ``host_header`` names this server, ``MALFORMED`` when it cannot be parsed (a
    missing header included: browsers always send one), ``FOREIGN`` when it names another."""
    try:
        parsed = parse_host(host_header)
    except MalformedHost:
        # an IPv6 literal with a name glued after it ("[::1]evil.example:5006") is no address of ours but the
        # name of some other host dressed as one: refused as foreign, whatever it is dressed as
        return FOREIGN if _GLUED.fullmatch(host_header or "") else MALFORMED
    return OK if parsed.name in set(names) else FOREIGN


def host_allowed(host_header: str | None, names: Iterable[str] = LOOPBACK_NAMES) -> bool:
    """True when ``host_header`` names this server (``host_verdict`` is ``OK``)."""
    return host_verdict(host_header, names) == OK


# -- request bounds ---------------------------------------------------------------------------------
#: the longest request target (path and query) the app reads; its own links are under 1 kB
MAX_TARGET_BYTES = 8 * 1024
#: the most query parameters the app reads; its URL state uses fewer than 10
MAX_QUERY_PARAMS = 100
#: what Tornado may read of a request head before giving up, raised from its 64 kB so that an
#: oversized URL reaches the check below and gets words (beyond this Tornado drops the connection)
MAX_HEAD_BYTES = 512 * 1024


def request_bounds(uri: str | None, query_arguments: dict | None = None) -> str | None:
    """Why a request target is refused (``None`` when it is within the bounds above)."""
    target = (uri or "").encode("utf-8", "surrogateescape")
    if len(target) > MAX_TARGET_BYTES:
        return (f"414: the request's address is {len(target):,} bytes long; this app reads at most "
                f"{MAX_TARGET_BYTES:,} (its own links are far shorter). Open the app from its start page.")
    query = target.partition(b"?")[2]
    count = len([part for part in query.replace(b";", b"&").split(b"&") if part])
    if count > MAX_QUERY_PARAMS:
        return (f"400: the request's address carries {count:,} query parameters; this app reads at most "
                f"{MAX_QUERY_PARAMS} (its own links use fewer than 10). Open the app from its start page.")
    return None


def widen_tornado_limits() -> None:
    """Let Tornado parse as many query parameters as fit in ``MAX_HEAD_BYTES`` (its default of 1,000
    answers an empty 400 before any handler runs), so ``request_bounds`` can refuse them with words.
    Process-wide: Tornado keeps this setting in one module global."""
    from tornado import httputil

    config = httputil._DEFAULT_PARSE_BODY_CONFIG
    wanted = MAX_HEAD_BYTES // 2  # "a&" is the shortest parameter
    if config.urlencoded.max_arguments < wanted:
        from dataclasses import replace

        httputil.set_parse_body_config(replace(config, urlencoded=replace(config.urlencoded, max_arguments=wanted)))


# -- the gate: the first routing rule of ``workbench app`` ------------------------------------------
REFUSALS = {
    MALFORMED: (400, "400: the request's Host header is malformed (expected name[:port] or [IPv6]:port); "
                     "nothing was read.\n"),
    FOREIGN: (403, "403: this server answers only to its own names (localhost, 127.0.0.1, [::1] and the names "
                   "it was started with); the request's Host header names another, as a DNS-rebinding page "
                   "would.\n"),
}


class Gate(Matcher):
    """Matches exactly the requests that must not reach the app, and says why: a malformed or
    foreign ``Host``, an oversized request target, or (when the server has an access token) a
    request without it. A request that brings the token in its query matches too, to be given
    the cookie and sent on without it (``GateHandler``)."""

    def __init__(self, names: Iterable[str], token=None):
        self.names, self.token = frozenset(names), token

    def match(self, request):
        verdict = host_verdict(request.headers.get("Host"), self.names)
        if verdict != OK:
            status, text = REFUSALS[verdict]
            return _refusal(status, text)
        bounds = request_bounds(request.uri)
        if bounds is not None:
            return _refusal(int(bounds[:3]), bounds + "\n")
        if self.token is not None:
            state = self.token.check(request)
            if state == "missing":
                return _refusal(403, self.token.REFUSAL)
            if state == "in_query":
                return _refusal(303, "")
        return None


def _refusal(status: int, text: str) -> dict:
    """A match for ``GateHandler`` (Tornado decodes path arguments as text, so the status is one)."""
    return {"path_kwargs": {"status": str(status), "text": text}}


class GateHandler(RequestHandler):
    """Answers what ``Gate`` matched, for every method (websocket upgrades included): a refusal in
    plain words that echoes nothing of the request, or the token's cookie and a redirect."""

    def initialize(self, token=None):
        self.token = token

    def _request_summary(self) -> str:
        """The access log's line: never the refused address itself (it may be 500 kB, or hold the token)."""
        size = len((self.request.uri or "").encode("utf-8", "surrogateescape"))
        return f"{self.request.method} <a {size:,}-byte address, refused> ({self.request.remote_ip})"

    def prepare(self):
        status, text = int(self.path_kwargs["status"]), self.path_kwargs["text"]
        if status == 303:
            self.token.set_cookie(self)
            self.redirect(self.token.without_token(self.request.uri), status=303)
            return
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(text)


def guard_hosts(app: Application, names: Iterable[str], token=None) -> None:
    """Put the gate in front of every route of ``app`` (before Bokeh's and Panel's handlers) and the
    page policy on every response (``widgets.page_policy``)."""
    from widgets.page_policy import install_page_policy

    app.default_router.rules.insert(0, Rule(Gate(names, token), GateHandler, {"token": token}))
    install_page_policy(app)
