"""Core speed: embedding throughput, index search latency at 10^3..10^6 units, cached replay cost.

Writes benchmarks/results/core.json. Usage: python -m benchmarks.bench_core [--max-size 1000000]
"""
from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def bench_embedding(n: int = 512) -> dict:
    from workbench.embed import HashEmbedder, MiniLMEmbedder

    texts = [f"On day {i} Caroline said she went to the support group and painted a sunrise number {i}."
             for i in range(n)]
    out = {}
    for name, emb in (("hash-256", HashEmbedder(256)), ("minilm-int8-onnx", MiniLMEmbedder())):
        try:
            emb(texts[:8])  # load
        except ImportError as exc:
            out[name] = {"error": str(exc)}
            continue
        t = time.perf_counter()
        emb(texts)
        dt = time.perf_counter() - t
        out[name] = {"texts": n, "seconds": round(dt, 3), "texts_per_s": round(n / dt, 1)}
    return out


def bench_index(max_size: int, dim: int = 384, queries: int = 50) -> list[dict]:
    from workbench.index import VectorIndex

    rng = np.random.default_rng(0)
    rows = []
    size = 1000
    while size <= max_size:
        vecs = rng.standard_normal((size, dim), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        idx = VectorIndex(dim)
        t = time.perf_counter()
        idx.add([f"u{i}" for i in range(size)], vecs)
        add_s = time.perf_counter() - t
        q = vecs[:queries]
        lat = []
        for i in range(queries):
            t = time.perf_counter()
            idx.search(q[i], 10, exclude={f"u{j}" for j in range(5)})
            lat.append(time.perf_counter() - t)
        rows.append({"units": size, "dim": dim, "add_s": round(add_s, 3),
                     "search_ms_p50": round(1000 * float(np.percentile(lat, 50)), 3),
                     "search_ms_p95": round(1000 * float(np.percentile(lat, 95)), 3)})
        size *= 10
    return rows


def bench_replay(calls: int = 2000) -> dict:
    from workbench.llm import CachedLLM, ScriptedLLM

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.jsonl"
        rec = CachedLLM(ScriptedLLM([], default="an answer of a few words"), path)
        prompts = [f"Question {i}: " + "context line. " * 200 for i in range(calls)]
        for p in prompts:
            rec.complete(p, role="bench")
        t = time.perf_counter()
        replay = CachedLLM.replay(path)
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        for p in prompts:
            replay.complete(p, role="bench")
        dt = time.perf_counter() - t
    return {"calls": calls, "cassette_load_s": round(load_s, 3), "per_call_us": round(1e6 * dt / calls, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-size", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    out = {"machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version()},
           "embedding": bench_embedding(), "index": bench_index(args.max_size), "cached_replay": bench_replay()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "core.json").write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
