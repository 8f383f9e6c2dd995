"""Overhead: the share of wall time spent outside LLM calls (target < 5%), three ways.

A live run with the offline model is the real thing, but its wall time on 2 shared cores is hours
and nothing guarantees the CPU is ours, so the benchmark never starts one itself. Instead:

1. ``replay_additive`` (every method, from the sample comparison): the replayed run's wall time W is
   everything a live run does *except* wait for the model (cassette lookups cost ~40 us a call).
   The live LLM time L is estimated per call from its recorded token counts with a ``LatencyModel``;
   since llama.cpp runs one call at a time (``LlamaCpp`` holds a lock), a live run takes W + L and
   the share outside LLM calls is W / (W + L).
2. ``simulated`` (one method): the same replay behind ``ReplayProbe(sleep_scale=s)``, which sleeps
   s times each call's estimated latency under one lock (serialised like llama.cpp). Its wall time
   minus the time slept is the non-LLM time measured *with* the waits in place; it checks that the
   additive figure holds (nothing polls or degrades while a call is pending). s < 1 keeps it within
   a time budget; the share is then reported at s = 1.
3. ``live_ledger`` (when a live run exists): from the per-call latencies in a results file written
   by a live run (the demo recording writes ``runs/record/results.jsonl``): per question, the answer
   wall time vs the summed latency of its live calls. Query phase only: construction and judge calls
   are not timed per call in results files. ``--config full`` also keeps the whole live ledger of
   its LoCoMo run (construction, query and judge), reported by bench_compare.

The ``LatencyModel`` (``workbench.llm.latency``, shared with ``workbench eval --estimate``) is
``per_call + prompt_tokens / prompt_rate + completion_tokens / gen_rate``:
``nominal`` from OFFLINE.md (Qwen2.5-Coder-0.5B Q4_K_M, llama-cpp-python AVX2 build, 2 threads:
116 prompt tok/s at a ~2.5k-token prompt, 24 generated tok/s), or ``fit`` by least squares to the live
calls of a results file (which reflects the machine's load at recording time; with few or similar
calls, the nominal model times one load factor).

Writes benchmarks/results/overhead.json. Usage: python -m benchmarks.bench_overhead [--budget-s 20]
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from datetime import datetime
from pathlib import Path

from benchmarks.replay import LIVE_RESULTS, ROOT, ReplayProbe, _rows, fitted_or_nominal, live_calls, repo_relative
from workbench.llm.latency import LatencyModel

RESULTS = Path(__file__).resolve().parent / "results"
# Re-exported for callers that imported them from here before the latency model moved into the library.
__all__ = ["LatencyModel", "ReplayProbe", "fitted_or_nominal", "live_calls", "live_ledger", "repo_relative", "run",
           "simulated", "replay_additive", "ROOT"]


# -- 3. a live run's results file ------------------------------------------------------------------------
def live_ledger(path: Path = LIVE_RESULTS) -> dict:
    """Outside-LLM share of the answer phase, per method, over questions whose calls were all live."""
    rows = _rows(path)
    if not rows:
        return {"available": False, "path": repo_relative(path),
                "note": "no live run found (runs/record/results.jsonl)"}
    per: dict[str, Counter] = {}
    for row in rows:
        calls = [c for s in ((row.get("answer") or {}).get("steps") or []) for c in s.get("calls") or []]
        if not calls or any(c.get("cached") or c.get("error") for c in calls) or not row.get("latency_s"):
            continue
        llm = sum(c.get("latency_s", 0.0) for c in calls)
        per.setdefault(row["method"], Counter()).update(questions=1, wall_s=row["latency_s"], llm_s=llm,
                                                        calls=len(calls))
    out = {m: {"questions": c["questions"], "calls": c["calls"], "answer_wall_s": round(c["wall_s"], 2),
               "llm_s": round(c["llm_s"], 2), "outside_llm_share": round(1 - c["llm_s"] / c["wall_s"], 5)}
           for m, c in per.items() if c["wall_s"] > 0}
    wall, llm = sum(c["wall_s"] for c in per.values()), sum(c["llm_s"] for c in per.values())
    fit = LatencyModel.fit([(c["prompt_tokens"], c["completion_tokens"], c["latency_s"]) for c in live_calls(path)],
                           source=f"live query calls of {path.name}")
    return {"available": True, "path": repo_relative(path), "rows": len(rows), "per_method": out,
            "outside_llm_share": round(1 - llm / wall, 5) if wall else None,
            "answer_wall_s": round(wall, 2), "llm_s": round(llm, 2),
            "fitted_latency_model": fit.to_dict() if fit else None,
            "note": "answer phase only (results rows time answer(); construction and judge calls carry no "
                    "per-call latency there); questions with any cached or failed call are left out"}

# -- 1. and 2. from a replay -----------------------------------------------------------------------------

def replay_additive(methods: list[dict]) -> dict:
    """From bench_compare's per-method replay rows: share = W / (W + L) per method and overall."""
    per, w_all, l_all = {}, 0.0, 0.0
    for m in methods:
        if m.get("status") != "ok":
            continue
        w, est = m["wall_s"], m["est_live_llm_s"]
        per[m["method"]] = {"replay_wall_s": w, "est_llm_s": round(est, 1),
                            "outside_llm_share": round(w / (w + est), 5) if w + est else None}
        w_all, l_all = w_all + w, l_all + est
    return {"per_method": per, "outside_llm_share": round(w_all / (w_all + l_all), 5) if w_all + l_all else None,
            "replay_wall_s": round(w_all, 2), "est_llm_s": round(l_all, 1)}


def simulated(method_name: str = "naive_rag", *, budget_s: float = 20.0, cassette=None,
              latency: LatencyModel | None = None) -> dict:
    """Replay one demo method with sleeps for each call's estimated latency (scaled into ``budget_s``)."""
    from benchmarks import bench_compare as bc

    latency = latency or LatencyModel.nominal()
    dry = bc.replay_method(method_name, cassette=cassette, latency=latency)  # W and L without sleeping
    if dry["status"] != "ok":
        return {"method": method_name, "status": dry["status"], "misses": dry.get("misses")}
    est = dry["est_live_llm_s"]
    scale = min(1.0, budget_s / est) if est > 0 else 0.0
    wet = bc.replay_method(method_name, cassette=cassette, latency=latency, sleep_scale=scale)
    non_llm = wet["wall_s"] - wet["slept_s"]
    return {"method": method_name, "status": "ok", "sleep_scale": round(scale, 5), "est_llm_s": round(est, 2),
            "wall_s_with_sleeps": wet["wall_s"], "slept_s": round(wet["slept_s"], 3),
            "non_llm_s_with_sleeps": round(non_llm, 3), "replay_wall_s_without_sleeps": dry["wall_s"],
            "outside_llm_share_at_scale_1": round(non_llm / (non_llm + est), 5) if non_llm + est else None,
            "latency_model": latency.to_dict()}


def run(compare: dict | None = None, *, budget_s: float = 20.0, live_path: Path = LIVE_RESULTS,
        cassette=None) -> dict:
    """All three measures; ``compare`` is bench_compare's result (its sample replay rows)."""
    ledger = live_ledger(Path(live_path))
    fitted = ledger.get("fitted_latency_model") if ledger.get("available") else None
    out = {"benchmark": "overhead", "date": datetime.now().isoformat(timespec="seconds"), "target_share": 0.05,
           "latency_models": {"nominal": LatencyModel.nominal().to_dict(), "fitted": fitted},
           "live_ledger": ledger, "simulated": simulated(budget_s=budget_s, cassette=cassette)}
    if compare and compare.get("sample", {}).get("methods"):
        out["replay_additive"] = replay_additive(compare["sample"]["methods"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=20.0, help="time budget of the simulated-latency replay")
    ap.add_argument("--live", default=str(LIVE_RESULTS), help="results file of a live run")
    ap.add_argument("--compare", default=str(RESULTS / "compare.json"), help="bench_compare output, if any")
    ap.add_argument("--out", default=str(RESULTS / "overhead.json"))
    a = ap.parse_args(argv)
    compare = json.loads(Path(a.compare).read_text()) if Path(a.compare).exists() else None
    result = run(compare, budget_s=a.budget_s, live_path=Path(a.live))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
