"""Smoke tests of the benchmark command's own parts. No timing is ever asserted: only shapes and keys."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_scale
from benchmarks.replay import ReplayProbe
from benchmarks.run_all import render
from workbench.llm.latency import LatencyModel

ROOT = Path(__file__).resolve().parents[1]

COMPONENTS = {"embed_minilm", "embed_hash", "index_build", "hmem_build", "recmem_units_embed", "recmem_trigger"}
RETRIEVAL = {"naive_rag_top10", "hymem_L1_top10", "hymem_L1_deep_top30", "recmem_3_layers"}


@pytest.fixture(scope="module")
def scale_json(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "scale.json"
    assert bench_scale.main(["--sizes", "1", "2", "--no-minilm", "--queries", "5", "--data", "tiny",
                             "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_scale_json_has_the_expected_keys(scale_json):
    assert {"benchmark", "data", "sizes", "rows", "growth_largest_vs_smallest", "minilm"} <= set(scale_json)
    assert scale_json["sizes"] == [1, 2] and scale_json["minilm"] is False
    for row in scale_json["rows"]:
        assert set(row["components"]) == COMPONENTS
        for stats in row["components"].values():
            assert {"seconds", "rss_delta_mb", "tracemalloc_peak_mb"} <= set(stats)
        assert set(row["retrieval"]) == RETRIEVAL
        for stats in row["retrieval"].values():
            assert {"p50_ms", "p95_ms", "queries", "units"} <= set(stats) and stats["queries"] == 5
    assert set(scale_json["growth_largest_vs_smallest"]) >= COMPONENTS


def test_scaled_conversation_renumbers_and_grows(tiny_conv):
    one, three = bench_scale.scaled_conversation(tiny_conv, 1), bench_scale.scaled_conversation(tiny_conv, 3)
    assert len(three.turns) == 3 * len(one.turns) == 3 * len(tiny_conv.turns)
    ids = [t.id for t in three.turns]
    assert len(set(ids)) == len(ids)  # every copy gets fresh turn ids
    n = len(tiny_conv.sessions)
    assert three.sessions[n].id == f"S{n + 1}" and three.sessions[n].turns[0].id == f"D{n + 1}:1"
    assert three.sessions[n].date_time > tiny_conv.sessions[-1].date_time  # copies move forward in time


def test_scale_rows_count_the_work(scale_json):
    small, big = scale_json["rows"]
    assert big["turns"] == 2 * small["turns"]
    assert big["retrieval"]["naive_rag_top10"]["units"] == 2 * small["retrieval"]["naive_rag_top10"]["units"]
    assert big["components"]["recmem_trigger"]["checks"] == 2 * small["components"]["recmem_trigger"]["checks"]


def test_replay_probe_counts_hits_and_misses(tmp_path):
    from workbench.llm import CachedLLM, LLMError, ScriptedLLM

    cassette = tmp_path / "c.jsonl"
    CachedLLM(ScriptedLLM(["recorded reply"], model="m"), cassette).complete("hello", role="x.answer")
    probe = ReplayProbe(CachedLLM.replay(cassette), LatencyModel(0.5, 100.0, 10.0, "test"))
    assert probe.complete("hello", role="x.answer").text == "recorded reply"
    with pytest.raises(LLMError):
        probe.complete("never recorded", role="x.other")
    assert probe.hits == 1 and dict(probe.misses) == {"x.other": 1}
    assert probe.est_s > 0.5 and probe.records[0]["role"] == "x.answer"


def test_latency_model_falls_back_to_a_load_factor():
    nominal = LatencyModel.nominal()
    samples = [(1000, 10, 2 * nominal(1000, 10))] * 3  # few, identical calls: no least-squares fit
    fit = LatencyModel.fit(samples)
    assert fit.calls == 3 and "load factor 2.00" in fit.source
    assert fit(1000, 10) == pytest.approx(2 * nominal(1000, 10))
    assert LatencyModel.fit([]) is None


def test_summary_renders_the_scale_section(scale_json):
    meta = {"config": "reduced", "date": "today", "wall_s": 1.0, "machine": {"cpus": 2, "python": "3"},
            "steps": {"scale": {"status": "ok", "wall_s": 1.0}}}
    text = render(meta, lambda name: scale_json if name == "scale.json" else None)
    assert "## 3. Scale" in text and "naive_rag_top10" in text
    assert "## 1-2. Method comparison" in text and "(not run)" in text


def test_scale_can_skip_minilm_above_a_size():
    out = bench_scale.run((1, 2), minilm=False, queries=3, data="tiny", minilm_max=1)
    small, big = out["rows"]
    assert small["components"]["embed_minilm"]["seconds"] is not None
    assert big["components"]["embed_minilm"]["seconds"] is None  # tiled, not timed
    assert big["retrieval"]["naive_rag_top10"]["units"] == big["chunks"]  # every unit is still indexed
    assert out["growth_largest_vs_smallest"]["measured_up_to"] == {"embed_minilm": "1x", "recmem_units_embed": "1x"}


def test_construction_accounting_adds_up(tiny_conv, hash_embedder):
    from benchmarks import bench_construction
    from workbench.llm import ScriptedLLM

    out = bench_construction.compare(tiny_conv, ScriptedLLM([], default="auto"), hash_embedder, "tiny")
    assert set(out["methods"]) == {"recmem", "mem0_style", "eager_floor"} and out["turns"] == len(tiny_conv.turns)
    for row in out["methods"].values():
        assert row["status"] == "ok" and row["misses"] == {}
        assert row["calls"] == sum(r["calls"] for r in row["by_role"].values())
        assert row["total_tokens"] == row["prompt_tokens"] + row["completion_tokens"]
        assert row["tokens_per_exchange"] == round(row["total_tokens"] / out["exchanges"], 3)
    eager = out["methods"]["eager_floor"]
    assert eager["calls"] == out["exchanges_eager"] == out["exchanges"] > 0  # one extraction call per exchange
    mem0 = out["methods"]["mem0_style"]
    assert mem0["by_role"]["mem0_style.extract"]["calls"] == 2 * out["exchanges"]  # once per speaker
    ratio = out["recmem_vs_floor"]
    assert ratio["call_ratio"] == round(out["methods"]["recmem"]["calls"] / eager["calls"], 3)
    assert out["recmem_vs_mem0_style"]["call_ratio"] == round(out["methods"]["recmem"]["calls"] / mem0["calls"], 3)
    meta = {"config": "reduced", "date": "today", "wall_s": 1.0, "machine": {"cpus": 2, "python": "3"},
            "steps": {"construction": {"status": "ok", "wall_s": 1.0}}}
    text = render(meta, lambda name: {"sample": out} if name == "construction.json" else None)
    assert "## Construction cost: RecMem vs Mem0Style and the eager floor" in text
    assert f"{ratio['call_ratio']:.3f}x" in text and f"{out['recmem_vs_mem0_style']['call_ratio']:.3f}x" in text


def test_construction_reports_cassette_misses(tiny_conv, hash_embedder, tmp_path):
    from benchmarks import bench_construction
    from workbench.llm import CachedLLM, ScriptedLLM

    cassette = tmp_path / "c.jsonl"
    CachedLLM(ScriptedLLM([], default="auto"), cassette).complete("unrelated", role="x")  # one entry, other calls miss
    out = bench_construction.compare(tiny_conv, CachedLLM.replay(cassette), hash_embedder, "tiny")
    assert out["methods"]["eager_floor"]["status"] == "not in cassette"
    assert out["methods"]["eager_floor"]["misses"]["eager_floor.extract"] == out["methods"]["eager_floor"]["calls"]
    assert out["recmem_vs_mem0_style"]["token_ratio"] is None  # no ratio from calls that were not made


def test_jupyterlab_gallery_notebook_skips_missing_methods(tmp_path):
    import importlib.util

    import nbformat

    spec = importlib.util.spec_from_file_location("_jl", ROOT / "scripts" / "jupyterlab_screenshots.py")
    jl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(jl)
    nb, shown, skipped = jl.gallery_notebook(tmp_path, {"hymem", "recmem"})
    assert shown == ["trace_stepper", "cluster_view", "cost_accuracy", "compare"]
    assert {s.split()[0] for s in skipped} == {"evidence_gap", "event_timeline_ama", "event_timeline_ama_refresh",
                                               "tree_view", "graph_view", "lifecycle"}
    assert [c["metadata"].get("tags", [None])[0] for c in nb["cells"][1:]] == shown
    nbformat.validate(nbformat.from_dict(nb))
    assert str(tmp_path) in nb["cells"][0]["source"]


def test_summary_reports_what_recording_the_demo_cassette_cost(tmp_path):
    from benchmarks.run_all import _sec_demo_recording
    from workbench.llm import CachedLLM, ScriptedLLM

    cassette = tmp_path / "demo.jsonl"
    llm = CachedLLM(ScriptedLLM({"hymem.light": "an answer", "judge.locomo": "CORRECT"}, model="m"), cassette)
    llm.complete("q1", role="hymem.light")
    llm.complete("q2", role="hymem.light")
    llm.complete("q3", role="judge.locomo")
    text = "\n".join(_sec_demo_recording(cassette))
    assert "## Demo recording" in text and "`demo.jsonl` (m)" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| ") and "method" not in line}
    assert rows["hymem"][0] == "2" and rows["judge"][0] == "1" and rows["hymem"][3] == "0"  # all timed
    assert "no demo cassette" in "\n".join(_sec_demo_recording(tmp_path / "none.jsonl"))
