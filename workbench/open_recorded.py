"""``workbench open <dataset>:<conversation>``: replay every committed cassette of a recorded conversation
into a run directory and serve the app (being built; issue 67)."""
from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("open", help="open a recorded conversation in the app (replays its committed cassettes)")
    p.add_argument("target")
    p.set_defaults(func=lambda args: (_ for _ in ()).throw(SystemExit("workbench open: not built yet")))
