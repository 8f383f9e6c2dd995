"""``workbench reproduce <paper>``: a paper's headline evaluation as the paper ran it (being built; issue 63)."""
from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="run a paper's headline evaluation as the paper describes it")
    p.add_argument("paper")
    p.set_defaults(func=lambda args: (_ for _ in ()).throw(SystemExit("workbench reproduce: not built yet")))
