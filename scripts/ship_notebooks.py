"""Prepare notebooks/*.ipynb for shipping, around the run that executes them (``make notebooks``).

    python scripts/ship_notebooks.py before notebooks/0*.ipynb   # drop a stored widget state
    python scripts/ship_notebooks.py after notebooks/0*.ipynb    # drop widget views that cannot draw

before: nbconvert and nbviewer draw a stored widget state (notebook metadata ``widgets``) in preference to
  anything else, as a widget that can no longer run, so none is kept (issue #42).
after: with no state stored, an output's widget view (``application/vnd.jupyter.widget-view+json``) names a
  model that exists nowhere. JupyterLab shows a trusted notebook's richest output, and for that entry it draws
  "Error displaying widget: model not found" where the static ``text/html`` beside it would have shown the view
  (usability review T5b, seen in a screenshot of notebook 00 opened trusted). So the entry is dropped wherever a
  static rendering sits beside it, and the output's metadata says a live widget was there
  (``workbench.live_widget``); running the cell draws the live widget again. An output with a widget view and
  no static HTML is left as it is and reported: the view lacks a static rendering (tests fail on that too).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: the output metadata key marking a static rendering that stands in for a live widget
MARK = "workbench"
LIVE_NOTE = "run this cell for the live widget; the saved output is its static rendering"


def drop_widget_state(nb) -> bool:
    """Remove a stored widget state; True when there was one."""
    return nb.metadata.pop("widgets", None) is not None


def drop_dead_widget_views(nb) -> tuple[int, list[str]]:
    """Drop every widget-view entry that has a static ``text/html`` beside it, marking its output; returns how
    many were dropped and, for views with no static rendering, where they are."""
    dropped, bare = 0, []
    for i, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {})
            if WIDGET_VIEW not in data:
                continue
            if "text/html" not in data:
                bare.append(f"cell {i}")
                continue
            del data[WIDGET_VIEW]
            output.setdefault("metadata", {})[MARK] = {"live_widget": LIVE_NOTE}
            dropped += 1
    return dropped, bare


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=("before", "after"))
    ap.add_argument("notebooks", nargs="+", type=Path)
    a = ap.parse_args(argv)
    status = 0
    for path in a.notebooks:
        nb = nbformat.read(path, as_version=4)
        if a.stage == "before":
            changed = drop_widget_state(nb)
        else:
            n, bare = drop_dead_widget_views(nb)
            changed = n > 0
            if bare:
                print(f"{path}: widget views without a static HTML rendering: {', '.join(bare)}", file=sys.stderr)
                status = 1
        if changed:
            nbformat.write(nb, path)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
