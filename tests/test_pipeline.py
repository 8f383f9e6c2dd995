"""The pipeline diagram at the top of the method notebooks: plain escaped HTML, no script, no network."""
from __future__ import annotations

import re

import pytest

from widgets.pipeline import pipeline_diagram


def test_one_row_boxes_in_order_joined_by_arrows():
    p = pipeline_diagram(["retrieve", ("router", "picks the next action"), "answer"], title="MemR3", loop="retry")
    html = p._repr_html_()
    names = re.findall(r"<div class='wb-pipe-stage'><b>([^<]*)</b>", html)
    assert names == ["retrieve", "router", "answer"]
    assert html.count("&rarr;") == 2  # n stages, n-1 arrows
    assert "picks the next action" in html and "&#8634; retry" in html
    assert p.text == "MemR3\nretrieve -> router -> answer\n  (loop) retry"


def test_phases_each_get_a_row_and_label():
    p = pipeline_diagram(phases=[("build", ["segment", "summarise"]), ("answer", ["light", "deep"], "reflect")])
    assert p.html.count("class='wb-pipe-row'") == 2
    assert "wb-pipe-phase'>build<" in p.html and "wb-pipe-phase'>answer<" in p.html
    assert p.text.splitlines() == ["build: segment -> summarise", "answer: light -> deep", "  (loop) reflect"]


def test_text_is_escaped_and_no_script_or_url():
    p = pipeline_diagram([("<script>alert(1)</script>", "a & b")], title="<i>x</i>")
    assert "<script>" not in p.html and "&lt;script&gt;" in p.html
    assert "a &amp; b" in p.html and "&lt;i&gt;x&lt;/i&gt;" in p.html
    assert "http" not in p.html and "src=" not in p.html


@pytest.mark.parametrize("kwargs", [{}, {"stages": ["a"], "phases": [("p", ["a"])]}, {"stages": []},
                                    {"stages": [("a", "b", "c")]}, {"phases": [("p",)]}])
def test_bad_input_is_refused(kwargs):
    with pytest.raises(ValueError):
        pipeline_diagram(**kwargs)


def test_plotly_bundle_carries_no_loader_script():
    go = pytest.importorskip("plotly.graph_objects")
    from widgets.html import plotly_bundle

    bundle = plotly_bundle(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])))
    assert "application/vnd.plotly.v1+json" in bundle
    assert not any("<script" in str(v) or "cdn.plot.ly" in str(v) for v in bundle.values())
