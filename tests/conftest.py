"""Shared fixtures: project sample data, the team's dataset copies (skipped when absent), fakes."""
from __future__ import annotations

from pathlib import Path

import pytest

from workbench.data import load_sample
from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO_DEV = SHARED_DATA / "locomo" / "locomo10_dev.json"
LME_DEV = SHARED_DATA / "longmemeval" / "longmemeval_oracle_dev.json"


@pytest.fixture(scope="session")
def tiny_conv():
    return load_sample("tiny_conversation")[0]


@pytest.fixture(scope="session")
def sample_data():
    return load_sample()


@pytest.fixture
def auto_llm():
    """Answers every call with a minimal schema-valid reply."""
    return ScriptedLLM([], default="auto")


@pytest.fixture
def hash_embedder():
    return HashEmbedder(dim=128)


@pytest.fixture(scope="session")
def locomo_dev_path():
    if not LOCOMO_DEV.exists():
        pytest.skip("../shared/data/locomo not present")
    return LOCOMO_DEV


@pytest.fixture(scope="session")
def lme_dev_path():
    if not LME_DEV.exists():
        pytest.skip("../shared/data/longmemeval not present")
    return LME_DEV


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def static_view():
    """``check(view, *texts) -> html``: the view's static HTML holds every text, no script, and its display bundle
    carries that HTML as ``text/html`` beside the widget view (what a page without live widgets shows, issue #42)."""

    def check(view, *texts: str) -> str:
        html = view.static_html() if hasattr(view, "static_html") else view.html
        bundle = view._repr_mimebundle_()
        assert WIDGET_VIEW in bundle and bundle.get("text/html") == html, sorted(bundle)
        assert "<script" not in html.lower() and "javascript:" not in html.lower()
        missing = [t for t in texts if t not in html]
        assert not missing, f"static HTML lacks {missing}"
        return html

    return check


@pytest.fixture(scope="module")
def cal_file(tmp_path_factory):
    """A calibration for the ``hash`` embedder (the one ``--embedder hash`` builds), as a file."""
    import json

    from workbench.methods import calibration as C

    cal = C.calibrate(HashEmbedder(dim=256), list(load_sample().conversations), data_label="sample",
                      kinds=("locomo", "longmemeval"))
    path = tmp_path_factory.mktemp("cal") / "hash.json"
    path.write_text(json.dumps(cal))
    return path
