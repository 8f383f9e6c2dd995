"""The gate of ``widgets.host_guard`` for ``panel serve widgets/app.py``, as Bokeh's auth module.

``workbench app`` installs its gate as the first routing rule of its own Tornado application
(``widgets.host_guard.guard_hosts``). Under ``panel serve`` the application is Panel's, and the app
script only runs once a session exists, which is too late: a DNS-rebinding page can also open the
websocket directly (Tornado accepts an ``Origin`` equal to the foreign ``Host``) with a session token
it made itself (sessions are unsigned by default), headers included. Bokeh's auth hook runs before
both, so given as ``--auth-module`` this module answers every page and websocket request itself
unless it passes the same checks as ``workbench app``'s gate: a malformed ``Host`` gets 400, a
foreign one 403 (a loopback name, the ``--address`` and the names after ``--allow-remote`` are
this server's), an oversized address 414/400 with words, and — when the server listens beyond
loopback (an ``--address`` that is not loopback, or none: Bokeh then listens on every interface) —
a request without the access token 403 (``widgets.access_token``; the link is printed once, to
stderr, when the module loads). Refusals are written here and the request ended, so no session is
created and nothing of the run is read. Page responses also get the page policy
(``widgets.page_policy``).

    panel serve widgets/app.py --auth-module widgets/host_auth.py --address 127.0.0.1 --args --run runs/demo

(Bokeh wants the module's path absolute on some versions: ``--auth-module "$PWD/widgets/host_auth.py"``.)
Not covered here: Tornado's own 64 kB limit on a request head, which ``panel serve`` does not let a
module raise, so an address over 64 kB is dropped without an answer there (``workbench app`` answers
it with a 414). Panel's own ``--basic-auth`` / ``--oauth-provider`` replace this module.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from tornado.web import Finish, RequestHandler

from widgets.access_token import AccessToken
from widgets.host_guard import OK, REFUSALS, allowed_names, host_verdict, request_bounds, widen_tornado_limits
from widgets.location_compat import patch_location_reader

#: the page a foreign page request gets: a fixed message, no script, no external resource
REFUSAL_PAGE = Path(__file__).with_name("templates") / "foreign_host.html"


def served_options(argv: Sequence[str]) -> tuple[str | None, int, list[str]]:
    """``panel serve``'s ``--address`` (None when absent) and ``--port``, and the app's
    ``--allow-remote NAME ...`` (after ``--args``), read from its own command line."""
    argv = list(argv)
    cut = argv.index("--args") if "--args" in argv else len(argv)
    served = argparse.ArgumentParser(add_help=False)
    served.add_argument("--address", default=None)
    served.add_argument("--port", type=int, default=5006)
    app = argparse.ArgumentParser(add_help=False)
    app.add_argument("--allow-remote", nargs="*", default=None)
    known = served.parse_known_args(argv[:cut])[0]
    extra = app.parse_known_args(argv[cut + 1:])[0].allow_remote or ()
    return known.address, known.port, list(extra)


def names_from_argv(argv: Sequence[str]) -> frozenset[str]:
    """The host names this server answers to, read from ``panel serve``'s own command line."""
    address, _, extra = served_options(argv)
    return allowed_names(address or "127.0.0.1", extra)


def token_for(argv: Sequence[str]) -> AccessToken | None:
    """The access token a server started with ``argv`` requires: one when it listens beyond loopback."""
    from widgets.app import REMOTE_WARNING, is_loopback, url_host

    address, port, _ = served_options(argv)
    if address is not None and is_loopback(address):
        return None
    token = AccessToken(port=port)
    shown = address or "0.0.0.0"
    print(REMOTE_WARNING.format(address=shown), file=sys.stderr)
    print(f"open: {token.link(f'http://{url_host(shown)}:{port}/app')}", file=sys.stderr)
    return token


widen_tornado_limits()
patch_location_reader()
NAMES = names_from_argv(sys.argv)
TOKEN = token_for(sys.argv)


def _refuse(handler: RequestHandler, status: int, text: str, *, page: bool = False) -> None:
    handler.set_status(status)
    handler.set_header("Cache-Control", "no-store")
    if page:
        handler.set_header("Content-Type", "text/html; charset=utf-8")
        handler.write(REFUSAL_PAGE.read_bytes())
    else:
        handler.set_header("Content-Type", "text/plain; charset=utf-8")
        handler.write(text)
    raise Finish()


def get_user(request_handler: RequestHandler) -> str | None:
    """Bokeh's auth hook: a "user" only for requests that pass the gate; any other request is
    answered here (400/403/414, or the token's cookie and a redirect) and ended."""
    request = request_handler.request
    verdict = host_verdict(request.headers.get("Host"), NAMES)
    if verdict != OK:
        status, text = REFUSALS[verdict]
        _refuse(request_handler, status, text, page=verdict != "malformed"
                and request.headers.get("Upgrade", "").lower() != "websocket")
    bounds = request_bounds(request.uri)
    if bounds is not None:
        _refuse(request_handler, int(bounds[:3]), bounds + "\n")
    if TOKEN is not None:
        state = TOKEN.check(request)
        if state == "missing":
            _refuse(request_handler, 403, TOKEN.REFUSAL)
        if state == "in_query":
            TOKEN.set_cookie(request_handler)
            request_handler.redirect(TOKEN.without_token(request.uri), status=303)
            raise Finish()
    _add_page_policy(request_handler)
    return "local"


def _add_page_policy(handler: RequestHandler) -> None:
    """The page policy on this response and every later one (Tornado builds a request's output
    transforms before any hook runs, so the first request gets its own instance here)."""
    from widgets.page_policy import PagePolicy, install_page_policy

    install_page_policy(handler.application)
    transforms = getattr(handler, "_transforms", None)
    if transforms is not None and not any(isinstance(t, PagePolicy) for t in transforms):
        transforms.insert(0, PagePolicy(handler.request))


#: where Bokeh would send a page request that has no user; ``get_user`` answers them all itself
login_url = "/refused"


class LoginHandler(RequestHandler):
    """The refusal page, for a browser that follows an old link to it: 403, fixed text."""

    def get(self) -> None:
        self.set_status(403)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.write(REFUSAL_PAGE.read_bytes())
