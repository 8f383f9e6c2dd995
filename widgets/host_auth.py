"""Refuse a foreign ``Host`` on every page and websocket of ``panel serve widgets/app.py``.

``workbench app`` installs its Host check as the first routing rule of its own Tornado application
(``widgets.host_guard.guard_hosts``). Under ``panel serve`` the application is Panel's, and the app
script only runs once a session exists, which is too late: a DNS-rebinding page can also open the
websocket directly (Tornado accepts an ``Origin`` equal to the foreign ``Host``) with a session token
it made itself (sessions are unsigned by default), headers included. Bokeh's auth hooks run before
both: given as ``--auth-module``, this module makes "the user" of a request exist only when its
``Host`` is a loopback name, the ``--address`` or a name after ``--allow-remote``. A foreign page
request is sent to ``/refused`` (a fixed 403 page: no script, nothing of the run), a foreign
websocket gets 403 before the handshake, and no session is created either way.

    panel serve widgets/app.py --auth-module widgets/host_auth.py --address 127.0.0.1 --args --run runs/demo

(Bokeh wants the module's path absolute on some versions: ``--auth-module "$PWD/widgets/host_auth.py"``.)
Panel's own ``--basic-auth`` / ``--oauth-provider`` replace this module; use them, not this, to share a run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from tornado.web import RequestHandler

from widgets.host_guard import allowed_names, host_allowed

#: the page a refused request gets: a fixed message, no script, no external resource
REFUSAL_PAGE = Path(__file__).with_name("templates") / "foreign_host.html"


def names_from_argv(argv: Sequence[str]) -> frozenset[str]:
    """The host names this server answers to, read from ``panel serve``'s own command line: its
    ``--address`` and the app's ``--allow-remote NAME ...`` (after ``--args``)."""
    argv = list(argv)
    cut = argv.index("--args") if "--args" in argv else len(argv)
    served = argparse.ArgumentParser(add_help=False)
    served.add_argument("--address", default="127.0.0.1")
    app = argparse.ArgumentParser(add_help=False)
    app.add_argument("--allow-remote", nargs="*", default=None)
    address = served.parse_known_args(argv[:cut])[0].address
    extra = app.parse_known_args(argv[cut + 1:])[0].allow_remote or ()
    return allowed_names(address or "127.0.0.1", extra)


NAMES = names_from_argv(sys.argv)


def get_user(request_handler: RequestHandler) -> str | None:
    """Bokeh's auth hook: a "user" only for requests sent to one of this server's names."""
    return "local" if host_allowed(request_handler.request.headers.get("Host"), NAMES) else None


#: where Bokeh sends a page request that has no user (relative, so it is served by ``LoginHandler``)
login_url = "/refused"


class LoginHandler(RequestHandler):
    """The refusal page: 403, fixed text, never a login form (there is nothing to log in to)."""

    def get(self) -> None:
        self.set_status(403)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.write(REFUSAL_PAGE.read_bytes())
