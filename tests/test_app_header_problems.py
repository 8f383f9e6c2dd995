"""A method plugin left out and a damaged shipped label file are listed in the app header's problems,
and the app goes on with every other method and view."""
from __future__ import annotations

import pytest

pn = pytest.importorskip("panel")

from widgets import app as appmod  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path_factory.mktemp("run") / "r", n_conversations=1, max_questions=2)


def test_plugin_and_label_problems_reach_the_header(run, monkeypatch):
    line = "entry point 'bad' (badpkg.method:Bad, badpkg 0.1) raised SystemExit('usage: bad') at import: left out"
    monkeypatch.setattr(appmod, "plugin_problems", lambda: [line])
    monkeypatch.setattr(appmod, "label_problems", lambda: ["annotations.json: not JSON (line 1 column 2)"])
    app = appmod.build_app(run)
    assert f"method plugins: {line}" in app.store.errors
    assert "annotations.json: not JSON (line 1 column 2)" in app.store.errors
    assert "SystemExit" in app._problems_pane.object
    app.prewarm()  # every tab still builds
    assert all(app.views.built(name) for name in app.views)
