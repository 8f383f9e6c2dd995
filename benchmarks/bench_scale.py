"""Scale: ingest cost and memory of the non-LLM parts at 1x, 4x and 16x a LoCoMo conversation, and
retrieval latency (p50/p95) at each size.

The conversation is LoCoMo ``conv-26`` (../shared/data/locomo/locomo10_dev.json) with its sessions
concatenated N times: copy k gets session ids ``S<i + k*n>``, turn ids ``D<i + k*n>:<j>`` and dates
shifted by k times (its time span + one week), so time-based structures (H-Mem's day/week/month/year
tree) keep growing. Without the team's data copy the sample conversation is used the same way.

Components (``measure``: seconds and process RSS growth of an untraced call while the built structure
is alive, tracemalloc peak of a second, traced call; MiniLM in one traced call, see ``measure``). With
``--isolate`` (what run_all uses) each size runs in a fresh interpreter, so RSS figures share a
baseline and ``process_peak_rss_mb`` is that size's peak:

- ``embed_minilm`` / ``embed_hash``: embedding every turn chunk as NaiveRAG stores it
  (``[date] speaker: text``) with MiniLM (int8 ONNX, 2 threads) and with ``HashEmbedder(384)``.
- ``index_build``: ``UnitStore.add`` of those units with their MiniLM vectors (faiss flat IP).
- ``hmem_build``: ``HMem.ingest`` with the deterministic ``ScriptedLLM`` of bench_hmem_build (replies
  derived from the turn text) and ``HashEmbedder(256)``: tree insertion and propagation, entity
  resolution, overlap repair. The scripted calls stand for the LLM calls a live run would make.
- ``recmem_units_embed`` + ``recmem_trigger``: RecMem's exchange units embedded with MiniLM, then
  ``recmem.trigger.replay_triggers`` (theta_sim 0.55, theta_count 4: the demo's MiniLM calibration)
  over them. From copy 2 on every exchange has a near-duplicate (only its timestamp differs), so the
  trigger rate at 4x/16x is a stress of the gate, not a realistic rate.

Retrieval (query vectors embedded up front from the conversation's questions, so only the search is
timed; faiss on one thread): NaiveRAG top-10 over turn chunks; a HyMem-like Level-1 index (one unit
per sentence of each turn, random unit vectors: flat-index latency depends on count and dimension only) at
top_k 10 and deep_top_n 30; RecMem's three layers (buffer from the trigger replay, one episode per
fired cluster, one fact per cluster member) at k_epi 5, k_sem 10, k_sub 10.

Writes benchmarks/results/scale.json. Usage: python -m benchmarks.bench_scale [--sizes 1 4 16]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import time
import tracemalloc
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10_dev.json"
RECMEM_THETA = {"theta_sim": 0.55, "theta_count": 4}  # workbench.demo.RECMEM_MINILM
HYMEM_K, HYMEM_DEEP_N = 10, 30  # HyMem defaults top_k / deep_top_n (paper §4.1)
RECMEM_K = {"episode": 5, "fact": 10, "subconscious": 10}  # RecMem defaults (paper §3.5-3.6)
_SENT = re.compile(r"(?<=[.!?])\s+")


# -- data ----------------------------------------------------------------------------------------------

def base_conversation(data: str | None = None):
    """(conversation, label): LoCoMo conv-26 when the team's copy exists, else sample-1.

    ``data="sample"`` or ``"tiny"`` picks a project sample instead (the smoke test uses ``tiny``)."""
    from workbench.data import load_dataset, load_sample

    if data == "tiny":
        return load_sample("tiny_conversation")[0], "tiny_conversation"
    if data == "sample":
        return load_sample()[0], "sample-1"
    if LOCOMO.exists():
        return load_dataset(f"locomo:{LOCOMO}")["conv-26"], "locomo conv-26"
    return load_sample()[0], "sample-1 (../shared/data absent)"


def scaled_conversation(base, n: int):
    """``base`` with its sessions concatenated ``n`` times (renumbered ids, shifted dates, no QA)."""
    from workbench.data import Conversation, Session

    sessions = [s for s in base.sessions if s.turns]
    times = [s.date_time for s in sessions if s.date_time]
    span = (max(times) - min(times) + timedelta(days=7)) if times else timedelta(days=365)
    out = []
    for k in range(n):
        for i, s in enumerate(sessions, start=1):
            num = i + k * len(sessions)
            when = s.date_time + k * span if s.date_time else None
            sid = f"S{num}"
            turns = tuple(replace(t, id=f"D{num}:{j}", session_id=sid,
                                  time=(t.time + k * span) if t.time else when)
                          for j, t in enumerate(s.turns, start=1))
            out.append(Session(sid, when, turns, when.isoformat() if when else ""))
    return Conversation(f"{base.id}x{n}", base.speakers, tuple(out), (), base.source)


def query_texts(base, n: int = 100) -> list[str]:
    qs = [q.question for q in base.qa if q.category != 5] or [t.content for t in base.turns]
    return [qs[i % len(qs)] for i in range(n)]


# -- measurement -----------------------------------------------------------------------------------------

def rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2 ** 20
    except ImportError:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def measure(fn, *, mode: str = "two-pass", post=None):
    """(result, stats): seconds, RSS growth and tracemalloc peak of building something.

    ``two-pass``: an untraced call gives seconds and RSS growth (its result is kept alive while RSS is
    read, so faiss and ONNX memory, which tracemalloc cannot see, count), then a traced call gives the
    tracemalloc peak (tracing slows pure-Python code, so it is never timed). ``one-pass``: one traced
    call gives all three; used for MiniLM, whose work is in ONNX Runtime, where tracing costs nothing
    measurable (on conv-26 the untraced and the traced pass took the same time within a few percent).
    ``post(result)``: figures taken from the result, which is then dropped before the traced call (so
    two large structures are never alive at once); the returned result is then ``post``'s dict.
    """
    gc.collect()
    before = rss_mb()
    if mode == "one-pass":
        tracemalloc.start()
    t = time.perf_counter()
    try:
        result = fn()
        seconds = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1] if mode == "one-pass" else None
    finally:
        if mode == "one-pass":
            tracemalloc.stop()
    stats = {"seconds": round(seconds, 4), "rss_delta_mb": round(rss_mb() - before, 2)}
    if post is not None:
        result = post(result)
    if mode == "two-pass":
        gc.collect()
        tracemalloc.start()
        try:
            fn()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    stats["tracemalloc_peak_mb"] = round(peak / 2 ** 20, 2)
    return result, stats


def latency(search, queries) -> dict:
    lat = []
    for q in queries:
        t = time.perf_counter()
        search(q)
        lat.append(time.perf_counter() - t)
    ms = 1000 * np.asarray(lat)
    return {"queries": len(lat), "p50_ms": round(float(np.percentile(ms, 50)), 4),
            "p95_ms": round(float(np.percentile(ms, 95)), 4)}


# -- components ---------------------------------------------------------------------------------------

def chunk_units(conv):
    from workbench.embed import HashEmbedder
    from workbench.methods import NaiveRAG

    return NaiveRAG(embedder=HashEmbedder(8))._chunks(conv)


def build_store(units, vectors, name: str):
    from workbench.methods.store import UnitStore

    store = UnitStore(None, name)
    if units:
        store.add(units, vectors)
    return store


def hmem_build(conv) -> dict:
    from benchmarks.bench_hmem_build import consolidate, extract, profile
    from workbench.embed import HashEmbedder
    from workbench.llm import ScriptedLLM
    from workbench.methods.hmem import HMem

    llm = ScriptedLLM({"hmem.extract": extract, "hmem.consolidate": consolidate, "hmem.profile": profile})
    m = HMem(llm=llm, embedder=HashEmbedder(dim=256)).ingest(conv)
    return {"method": m, "llm": llm}


def hmem_stats(built: dict) -> dict:
    from collections import Counter

    m, llm = built["method"], built["llm"]
    levels = Counter(n["level"] for n in m.tree_nodes())
    return {"fragments": len(m.fragments_), "tree_nodes": {f"L{k}": levels[k] for k in sorted(levels)},
            "entities": m.graph_.number_of_nodes(), "edges": m.graph_.number_of_edges(),
            "scripted_llm_calls": dict(Counter(llm.roles())), "failures": len(m.failures_)}


def recmem_units(conv):
    from workbench.methods.recmem import RecMem

    return RecMem(**RECMEM_THETA, profile="small").subconscious_units(conv)  # the offline recordings' unit texts


def trigger_replay(vectors, ids):
    from workbench.methods.recmem.trigger import replay_triggers

    return replay_triggers(vectors, None, RECMEM_THETA["theta_sim"], RECMEM_THETA["theta_count"], ids=ids)


def trigger_stats(decisions, seconds: float) -> dict:
    from workbench.methods.recmem.trigger import trigger_rate

    fired = sum(d.fired for d in decisions)
    return {"checks": len(decisions), "fired": fired, "trigger_rate": round(trigger_rate(decisions), 4),
            "us_per_check": round(1e6 * seconds / max(1, len(decisions)), 2)}


def recmem_layers(units, vectors, decisions):
    """Layer stores as the gate leaves them: buffer, one episode per fired cluster, one fact per member."""
    from workbench.methods.store import MemoryUnit

    pos = {u.id: i for i, u in enumerate(units)}
    consolidated, episodes, facts = set(), [], []
    for d in decisions:
        if not d.fired:
            continue
        members = [pos[i] for i in d.relevant_ids] + [pos[d.unit_id]]
        consolidated.update(d.relevant_ids)
        consolidated.add(d.unit_id)
        v = vectors[members].mean(axis=0)
        episodes.append((MemoryUnit(f"episode-{len(episodes)}", "episode", "", ()), v / (np.linalg.norm(v) or 1.0)))
        first = len(facts)
        facts.extend((MemoryUnit(f"fact-{first + j}", "fact", "", ()), vectors[m]) for j, m in enumerate(members))
    sub = [i for i, u in enumerate(units) if u.id not in consolidated]
    stores = {"subconscious": build_store([units[i] for i in sub], vectors[sub], "sub")}
    for name, pairs in (("episode", episodes), ("fact", facts)):
        stores[name] = build_store([u for u, _ in pairs], np.stack([v for _, v in pairs]) if pairs else None, name)
    return stores


def _random_unit_vectors(n: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(0).standard_normal((n, dim), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def hymem_l1_units(conv):
    from workbench.methods.common import format_date
    from workbench.methods.store import MemoryUnit

    out = []
    for t in conv.turns:
        for s in (x for x in _SENT.split(t.content) if x.strip()):
            out.append(MemoryUnit(f"L1-{len(out)}", "L1", f"[{format_date(t.time)}] {s}", (t.id,), t.time))
    return out


# -- one size -----------------------------------------------------------------------------------------

def embed_or_tile(encoder, texts: list[str], n: int, *, measured: bool = True):
    """(vectors, stats) of embedding ``texts`` in one traced pass; when not ``measured``, only the first of
    the ``n`` copies is embedded (unmeasured) and tiled: the copies differ only in their dates, and the
    reduced configuration skips MiniLM's minutes at 16x this way (the index, trigger and retrieval
    figures downstream still see every unit)."""
    if not measured:
        first = np.asarray(encoder(texts[:len(texts) // n]), dtype=np.float32)
        return np.tile(first, (n, 1)), {"seconds": None, "rss_delta_mb": None, "tracemalloc_peak_mb": None,
                                        "texts_per_s": None, "skipped": "not measured at this size (reduced "
                                        "config); vectors of the first copy tiled"}
    vectors, stats = measure(lambda: encoder(texts), mode="one-pass")
    stats["texts_per_s"] = round(len(texts) / max(stats["seconds"], 1e-9), 1)
    return vectors, stats


def run_size(base, n: int, minilm, hasher, qvec_minilm, qvec_hash, *, measure_minilm: bool = True) -> dict:
    conv = scaled_conversation(base, n)
    units = chunk_units(conv)
    texts = [u.text for u in units]
    row = {"copies": n, "sessions": len(conv.sessions), "turns": len(conv.turns), "chunks": len(units)}
    comp = row["components"] = {}
    vectors, comp["embed_minilm"] = embed_or_tile(minilm, texts, n, measured=measure_minilm)
    _, comp["embed_hash"] = measure(lambda: hasher(texts))
    comp["embed_hash"]["texts_per_s"] = round(len(texts) / max(comp["embed_hash"]["seconds"], 1e-9), 1)
    store, comp["index_build"] = measure(lambda: build_store(units, vectors, "chunks"))
    figures, comp["hmem_build"] = measure(lambda: hmem_build(conv), post=hmem_stats)
    comp["hmem_build"].update(figures)
    runits = recmem_units(conv)
    rtexts = [u.text.replace("\n", " ") for u in runits]
    rvec, comp["recmem_units_embed"] = embed_or_tile(minilm, rtexts, n, measured=measure_minilm)
    comp["recmem_units_embed"]["units"] = len(runits)
    decisions, comp["recmem_trigger"] = measure(lambda: trigger_replay(rvec, [u.id for u in runits]))
    comp["recmem_trigger"].update(trigger_stats(decisions, comp["recmem_trigger"]["seconds"]))
    l1 = hymem_l1_units(conv)
    l1_store = build_store(l1, _random_unit_vectors(len(l1), qvec_hash.shape[1]), "hymem.L1")
    layers = recmem_layers(runits, rvec, decisions)
    row["retrieval"] = {
        "naive_rag_top10": {"units": len(store), **latency(lambda q: store.search_vector(q, 10), qvec_minilm)},
        "hymem_L1_top10": {"units": len(l1_store), **latency(lambda q: l1_store.search_vector(q, HYMEM_K),
                                                             qvec_hash)},
        "hymem_L1_deep_top30": {"units": len(l1_store),
                                **latency(lambda q: l1_store.search_vector(q, HYMEM_DEEP_N), qvec_hash)},
        "recmem_3_layers": {"units": {k: len(s) for k, s in layers.items()},
                            **latency(lambda q: [layers[k].search_vector(q, RECMEM_K[k]) for k in RECMEM_K],
                                      qvec_minilm)},
    }
    return row


def growth(rows: list[dict]) -> dict:
    """Per component: seconds at the largest size / seconds at the smallest, and the size ratio.

    A component not measured at the largest size (MiniLM in the reduced config) is compared at the largest
    size where it was, listed in ``measured_up_to``."""
    if len(rows) < 2:
        return {}
    a, b = rows[0], rows[-1]
    out = {"size_ratio": b["turns"] / a["turns"], "measured_up_to": {}}
    for key in a["components"]:
        done = [r for r in rows if r["components"][key]["seconds"] is not None]
        s0, s1 = a["components"][key]["seconds"], done[-1]["components"][key]["seconds"]
        out[key] = round(s1 / s0, 2) if s0 else None
        if done[-1] is not b:
            out["measured_up_to"][key] = f"{done[-1]['copies']}x"
    for key in a["retrieval"]:
        p0, p1 = a["retrieval"][key]["p50_ms"], b["retrieval"][key]["p50_ms"]
        out[f"{key}_p50"] = round(p1 / p0, 2) if p0 else None
    return out


def _encoders(minilm: bool):
    from workbench.embed import HashEmbedder, MiniLMEmbedder

    hasher = HashEmbedder(384)
    if not minilm:
        return hasher, hasher, False
    enc = MiniLMEmbedder()
    try:
        enc(["warm up"])
    except ImportError as exc:  # the [local] extra is missing: say so and fall back
        print(f"note: MiniLM unavailable ({exc}); using the hash embedder", flush=True)
        return hasher, hasher, False
    return enc, hasher, True


def run_one(n: int, *, minilm: bool = True, queries: int = 100, data: str | None = None,
            minilm_max: int | None = None) -> dict:
    """One size in this process: its row, plus the process's peak RSS."""
    import resource

    import faiss

    faiss.omp_set_num_threads(1)  # single-query k-NN: OpenMP spin-waits only add noise on 2 shared cores
    base, label = base_conversation(data)
    enc, hasher, minilm = _encoders(minilm)
    qs = query_texts(base, queries)
    t = time.perf_counter()
    row = run_size(base, n, enc, hasher, enc(qs), hasher(qs), measure_minilm=minilm_max is None or n <= minilm_max)
    row.update(wall_s=round(time.perf_counter() - t, 2), data=label, minilm=minilm,
               process_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))
    parts = ", ".join(f"{k} {v['seconds']:.2f}s" for k, v in row["components"].items() if v["seconds"] is not None)
    print(f"scale {n}x: {row['turns']} turns in {row['wall_s']:.1f}s ({parts})", flush=True)
    return row


def _isolated(n: int, minilm: bool, queries: int, data: str | None, minilm_max: int | None) -> dict:
    """``run_one`` in a fresh interpreter, so RSS growth and peak RSS start from the same baseline."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "row.json"
        cmd = [sys.executable, "-m", "benchmarks.bench_scale", "--one", str(n), "--queries", str(queries),
               "--out", str(out)] + ([] if minilm else ["--no-minilm"]) + (["--data", data] if data else []) \
            + ([] if minilm_max is None else ["--minilm-max", str(minilm_max)])
        subprocess.run(cmd, cwd=ROOT, check=True)
        return json.loads(out.read_text())


def run(sizes=(1, 4, 16), *, minilm: bool = True, queries: int = 100, isolate: bool = False,
        data: str | None = None, minilm_max: int | None = None) -> dict:
    """The scale benchmark as a dict. ``isolate``: each size in its own process (clean memory figures);
    ``minilm=False`` puts the hash embedder in the MiniLM slots (no ONNX model needed)."""
    rows = [_isolated(n, minilm, queries, data, minilm_max) if isolate
            else run_one(n, minilm=minilm, queries=queries, data=data, minilm_max=minilm_max) for n in sizes]
    return {"benchmark": "scale", "date": datetime.now().isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "arch": platform.machine()},
            "data": rows[0]["data"] if rows else None, "sizes": list(sizes),
            "minilm": all(r["minilm"] for r in rows), "isolated_processes": isolate, "faiss_threads": 1,
            "queries": queries, "minilm_measured_up_to": minilm_max, "recmem_thresholds": RECMEM_THETA, "rows": rows,
            "growth_largest_vs_smallest": growth(rows)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--no-minilm", action="store_true", help="hash embedder only (no ONNX model needed)")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--isolate", action="store_true", help="each size in a fresh process (clean RSS figures)")
    ap.add_argument("--data", choices=["locomo", "sample", "tiny"], default=None,
                    help="base conversation (default: LoCoMo conv-26 when present, else sample-1)")
    ap.add_argument("--minilm-max", type=int, default=None,
                    help="embed with MiniLM (timed) only up to this many copies; above it tile the first copy")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # internal: one size, row only
    ap.add_argument("--out", default=str(RESULTS / "scale.json"))
    a = ap.parse_args(argv)
    if a.one is not None:
        result = run_one(a.one, minilm=not a.no_minilm, queries=a.queries, data=a.data, minilm_max=a.minilm_max)
    else:
        result = run(tuple(a.sizes), minilm=not a.no_minilm, queries=a.queries, isolate=a.isolate, data=a.data,
                     minilm_max=a.minilm_max)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
