"""Method comparison: every demo method on the sample data, replayed from the committed cassette, and
(``--config full``) on a LoCoMo dev slice with the offline model as reader and judge.

Sample ("Replay", always run): ``workbench.demo.demo_methods`` on ``demo_dataset()`` and
the active profile's questions (``DEMO.questions``), every call (method and judge) from its cassette
(``DEMO.cassette``) through
``benchmarks.replay.ReplayProbe``, MiniLM embeddings as in the demo. A method with any call missing from
the cassette becomes a "not in cassette" row (its misses by role) and writes no result rows; the
others append theirs to ``benchmarks/results/compare_sample.jsonl`` (a ``ResultsStore``, rewritten
each run: a replay is deterministic and takes seconds, and its wall time is what is measured).

LoCoMo (``--config full``; hours on 2 cores): the first ``--locomo-conversations`` conversations of
../shared/data/locomo/locomo10_dev.json, categories 1-4, at most ``--locomo-questions`` per
conversation, reader and judge = ``default_llm()`` (``WORKBENCH_LLM`` when set) behind a record/replay
cassette ``benchmarks/results/cassettes/locomo_dev.jsonl``. Resumable twice over: finished questions
are skipped (``ResultsStore`` ``compare_locomo.jsonl``) and finished calls replay from the cassette, so
a second run of a finished slice is the LoCoMo "Replay". Each session's wall time and live-call
ledger (per call: phase, tokens, latency) go to ``compare_locomo.sessions.jsonl``.

Expected wall time of the LoCoMo slice (``estimate_locomo``): per method, the sample replay's calls and
tokens per phase, construction scaled by turns, query and judge by questions (Full-Context's prompt =
the real conversation's tokens), priced with ``workbench.llm.latency.LatencyModel`` (nominal and fitted).

Writes benchmarks/results/compare.json. Usage: python -m benchmarks.bench_compare [--config full]
"""
from __future__ import annotations

import argparse
import json
import math
import time
from datetime import datetime
from pathlib import Path

from benchmarks.replay import ReplayProbe, fitted_or_nominal, repo_relative
from workbench.llm.latency import LatencyModel

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10_dev.json"
N_CTX, MAX_NEW = 16384, 512  # LlamaCpp defaults: a prompt over N_CTX - MAX_NEW tokens is refused
# "accuracy" here is the judge's accuracy, reported beside its audited false-accept rate (judge-audit)
TABLE_COLS = ["accuracy", "judge_false_accept", "f1", "bleu1", "evidence_recall", "query_tokens", "fc_token_ratio"]
_SHARED: dict = {}


# -- services -------------------------------------------------------------------------------------------

def _minilm():
    """One warmed MiniLM for the whole process (each method still gets its own memo cache)."""
    if "minilm" not in _SHARED:
        from workbench.embed import MiniLMEmbedder

        enc = MiniLMEmbedder()
        enc(["warm up"])
        _SHARED["minilm"] = enc
    return _SHARED["minilm"]


def _embedder():
    from workbench.embed import CachedEmbedder

    return CachedEmbedder(_minilm())


def _cassette_llm(cassette):
    from workbench.demo import DEMO, with_profile_bounds
    from workbench.llm import CachedLLM

    path = Path(cassette or DEMO.cassette)
    key = ("cassette", str(path))
    if key not in _SHARED:  # the active profile's output bounds are part of its cassette keys
        _SHARED[key] = with_profile_bounds(CachedLLM.replay(path), DEMO)
    return _SHARED[key]


# -- the sample replay ----------------------------------------------------------------------------------

def replay_method(name: str, *, cassette=None, latency: LatencyModel | None = None, sleep_scale: float = 0.0,
                  store=None) -> dict:
    """Evaluate one demo method from the cassette: status, wall time, call accounting (and its rows)."""
    from workbench.demo import DEMO, demo_dataset, demo_methods, with_profile_bounds
    from workbench.eval import LLMJudge, ResultsStore, evaluate

    try:
        base = _cassette_llm(cassette)
    except (FileNotFoundError, ValueError) as exc:
        return {"method": name, "status": "no cassette", "error": str(exc)}
    # the bounds go on the LLM the method calls (the probe): they shape the schema and cap the cassette key holds
    probe = with_profile_bounds(ReplayProbe(base, latency, sleep_scale=sleep_scale), DEMO)
    method = demo_methods(probe, _embedder(), [name])[name]
    mem = ResultsStore(None)
    t = time.perf_counter()
    try:
        res = evaluate(method, demo_dataset(), judge=LLMJudge(probe), store=mem, questions=list(DEMO.questions),
                       progress=False, keep_answers=False)
    except Exception as exc:  # the harness records method failures itself; this is anything else
        return {"method": name, "status": "error", "error": f"{type(exc).__name__}: {exc}"}
    wall = time.perf_counter() - t
    rows = [r.to_dict() for r in res]
    out = {"method": name, "params_hash": method.params_hash(), "questions": len(rows), "wall_s": round(wall, 3),
           "answer_s": round(sum(r["latency_s"] for r in rows), 3), "hits": probe.hits,
           "misses": dict(probe.misses), "slept_s": probe.slept_s, "est_live_llm_s": round(probe.est_s, 2),
           "phases": probe.phase_totals(), "errors": sum(1 for r in rows if r["error"]),
           "construction_tokens": rows[0]["construction_tokens"] if rows else 0,
           "construction_calls": rows[0]["construction_calls"] if rows else 0}
    out["status"] = "not in cassette" if probe.misses else "ok"
    if store is not None and out["status"] == "ok":
        for r in rows:
            store.append(r)
    return out


def demo_method_names() -> list[str]:
    from workbench.demo import demo_methods

    return list(demo_methods(None, None))


def sample_replay(results_dir: Path, *, cassette=None, methods=None, latency: LatencyModel | None = None) -> dict:
    from workbench.demo import DEMO, demo_conversation
    from workbench.eval import ResultsStore

    path = Path(results_dir) / "compare_sample.jsonl"
    path.unlink(missing_ok=True)
    store = ResultsStore(path)
    t = time.perf_counter()
    rows = []
    for name in methods or demo_method_names():
        rows.append(replay_method(name, cassette=cassette, latency=latency, store=store))
        r = rows[-1]
        print(f"replay {name}: {r['status']} {r.get('wall_s', '')}s misses={sum((r.get('misses') or {}).values())}",
              flush=True)
    wall = time.perf_counter() - t
    conv = demo_conversation()
    out = {"cassette": repo_relative(cassette or DEMO.cassette), "questions": list(DEMO.questions),
           "turns": len(conv.turns),
           "sessions": len(conv.sessions), "replay_wall_s": round(wall, 2), "results_file": repo_relative(path),
           "latency_model": (latency or LatencyModel.nominal()).to_dict(), "methods": rows}
    out["table"] = merge_table(rows, path)
    out["recmem_vs_eager_floor"] = ratio(rows, "recmem", "eager_floor")
    return out


def merge_table(rows: list[dict], path: Path) -> list[dict]:
    """One line per method: the summary_table 'overall' figures plus cost, status and wall time."""
    overall = {}
    if path.exists() and path.stat().st_size:
        t = _judge_table(path)
        for rec in t[t["category"] == "overall"].to_dict(orient="records"):
            overall[rec["method"]] = rec
    out = []
    for r in rows:
        o = overall.get(r["method"], {})
        line = {"method": r["method"], "status": r["status"], "n": o.get("n", 0)}
        line.update({k: _num(o.get(k)) for k in TABLE_COLS})
        line.update({k: r.get(k) for k in ("construction_tokens", "construction_calls", "wall_s", "est_live_llm_s")})
        line["misses"] = sum((r.get("misses") or {}).values())
        out.append(line)
    return out


def _judge_table(path: Path):
    """summary_table with the judge's accuracy in ``accuracy`` and its audit beside it (cached audits)."""
    from workbench.eval import load_results, summary_table
    from workbench.eval.audit import audits_for_rows
    from workbench.eval.store import load_rows

    t = summary_table(load_results([path]), metric="judge", audits=audits_for_rows(load_rows([path])))
    return t


def _num(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 4)


def ratio(rows: list[dict], a: str, b: str) -> dict:
    """Construction tokens and calls of ``a`` over ``b`` (both must have replayed)."""
    by = {r["method"]: r for r in rows if r.get("status") == "ok"}
    if a not in by or b not in by:
        return {"available": False, "note": f"needs {a} and {b} fully in the cassette"}
    ra, rb = by[a], by[b]
    div = lambda x, y: round(x / y, 4) if y else None  # noqa: E731
    return {"available": True, f"{a}_tokens": ra["construction_tokens"], f"{b}_tokens": rb["construction_tokens"],
            f"{a}_calls": ra["construction_calls"], f"{b}_calls": rb["construction_calls"],
            "token_ratio": div(ra["construction_tokens"], rb["construction_tokens"]),
            "call_ratio": div(ra["construction_calls"], rb["construction_calls"])}


# -- the LoCoMo slice: estimate and live run -----------------------------------------------------------

def locomo_plan(conversations: str, per_conv: int):
    """(dataset, [(conversation, questions)]) of the slice, or (None, []) without the data copy."""
    from workbench.data import load_dataset
    from workbench.eval import select

    if not LOCOMO.exists():
        return None, []
    data = load_dataset(f"locomo:{LOCOMO}")
    return data, select(data, conversations=conversations, questions=per_conv, categories=[1, 2, 3, 4])


def estimate_locomo(sample: dict, conversations: str = "0-1", per_conv: int = 50,
                    models: dict[str, LatencyModel] | None = None) -> dict:
    """Expected live wall time of the slice per method, from the sample replay's calls and tokens."""
    from workbench.llm import count_tokens
    from workbench.methods.common import format_conversation

    _, plan = locomo_plan(conversations, per_conv)
    if not plan:
        return {"available": False, "note": "../shared/data/locomo absent"}
    models = models or {"nominal": LatencyModel.nominal()}
    turns, nq = sum(len(c.turns) for c, _ in plan), sum(len(q) for _, q in plan)
    conv_tokens = {c.id: count_tokens(format_conversation(c)) for c, _ in plan}
    methods, fc_tokens = {}, {}
    for r in sample["methods"]:
        if not r.get("phases"):
            methods[r["method"]] = {"status": r["status"], "basis": "nothing recorded"}
            continue
        scaled = {phase: {k: p[k] * (turns / sample["turns"] if phase == "construct" else nq / len(sample["questions"]))
                          for k in ("calls", "prompt_tokens", "completion_tokens")}
                  for phase, p in r["phases"].items()}
        if r["method"] == "full_context" and "query" in scaled:
            fc_tokens = _full_context_query(scaled["query"], r["phases"]["query"], plan, conv_tokens,
                                            sample["conversation_tokens"])
        methods[r["method"]] = {"status": r["status"], "calls": {k: round(v["calls"]) for k, v in scaled.items()},
                                "basis": "sample replay" if r["status"] == "ok" else
                                "recorded calls only: a lower bound",
                                **{f"hours_{name}": round(sum(lm.total(**v) for v in scaled.values()) / 3600, 2)
                                   for name, lm in models.items()}}
    totals = {f"hours_{name}": round(sum(v.get(f"hours_{name}", 0) for v in methods.values()
                                         if v["status"] == "ok"), 1) for name in models}
    totals.update({f"hours_{name}_with_lower_bounds": round(sum(v.get(f"hours_{name}", 0) for v in methods.values()),
                                                            1) for name in models})
    return {"available": True, "conversations": [c.id for c, _ in plan], "questions": nq, "turns": turns,
            "conversation_tokens": conv_tokens, "full_context_prompt_tokens": fc_tokens,
            "full_context_overflows": [c for c, n in fc_tokens.items() if n > N_CTX - MAX_NEW],
            "methods": methods, "totals": totals, "latency_models": {k: m.to_dict() for k, m in models.items()},
            "missing_methods": [m for m, v in methods.items() if v["status"] != "ok"],
            "note": "construction scaled by turns, query and judge by questions, from the sample replay; "
                    "Full-Context prompts scaled by conversation length, and a conversation whose prompt "
                    "exceeds n_ctx costs nothing (refused before decoding; its questions fail); prompt "
                    "throughput falls at long contexts, so Full-Context's figure is a lower bound"}


def _full_context_query(scaled: dict, sample_query: dict, plan, conv_tokens: dict, sample_conv_tokens: int) -> dict:
    """Rewrite Full-Context's scaled query phase: one call per question whose prompt is its conversation
    (sample prompt tokens x length ratio: tokenizer-neutral); conversations over n_ctx are refused."""
    per_call = sample_query["prompt_tokens"] / max(1, sample_query["calls"])
    per_out = sample_query["completion_tokens"] / max(1, sample_query["calls"])
    tokens = {c: round(per_call * n / sample_conv_tokens) for c, n in conv_tokens.items()}
    fits = [(c, q) for c, q in plan if tokens[c.id] <= N_CTX - MAX_NEW]
    scaled.update(calls=sum(len(q) for _, q in fits), prompt_tokens=sum(tokens[c.id] * len(q) for c, q in fits),
                  completion_tokens=per_out * sum(len(q) for _, q in fits))
    return tokens


def locomo_live(results_dir: Path, *, conversations: str = "0-1", per_conv: int = 50, methods=None,
                llm_spec: str | None = None) -> dict:
    """The LoCoMo slice with the offline model (or WORKBENCH_LLM), resumable. Hours on 2 cores."""
    from workbench.demo import demo_llm, demo_methods
    from workbench.eval import LLMJudge, evaluate

    data, plan = locomo_plan(conversations, per_conv)
    if data is None:
        return {"status": "skipped", "note": "../shared/data/locomo absent"}
    results_dir = Path(results_dir)
    store, cassette = results_dir / "compare_locomo.jsonl", results_dir / "cassettes" / "locomo_dev.jsonl"
    llm = demo_llm(spec=llm_spec, cassette=cassette)  # live model behind the cassette, or replay only
    judge = LLMJudge(llm)
    ids = [q.id for _, qs in plan for q in qs]
    sessions = []
    for name, method in demo_methods(llm, _embedder(), methods).items():
        start, t = len(llm.ledger), time.perf_counter()
        evaluate(method, data, judge=judge, store=store, questions=ids, progress=True, keep_answers=False)
        sessions.append(_session(name, time.perf_counter() - t, llm.ledger.calls[start:]))
        with open(results_dir / "compare_locomo.sessions.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(sessions[-1]) + "\n")
    return {"status": "ran", "results_file": repo_relative(store), "cassette": repo_relative(cassette),
            "questions": len(ids), "sessions": [{k: v for k, v in x.items() if k != "ledger"} for x in sessions],
            **locomo_table(results_dir)}


def _session(name: str, wall: float, calls) -> dict:
    live = [c for c in calls if not c.cached]
    llm_s = sum(c.latency_s for c in calls)
    return {"method": name, "date": datetime.now().isoformat(timespec="seconds"), "wall_s": round(wall, 2),
            "calls": len(calls), "live_calls": len(live), "llm_s": round(llm_s, 2),
            "outside_llm_share": round(1 - llm_s / wall, 5) if wall else None,
            "ledger": [{"phase": c.phase, "role": c.role, "prompt_tokens": c.prompt_tokens,
                        "completion_tokens": c.completion_tokens, "latency_s": c.latency_s, "cached": c.cached}
                       for c in calls]}


def locomo_table(results_dir: Path) -> dict:
    """The table of whatever LoCoMo rows exist (a finished or an interrupted full run)."""
    path = Path(results_dir) / "compare_locomo.jsonl"
    if not path.exists() or not path.stat().st_size:
        return {"table": []}
    t = _judge_table(path)
    t = t[t["category"] == "overall"]
    return {"table": [{"method": r["method"], "n": r["n"], **{k: _num(r[k]) for k in TABLE_COLS},
                       "construction_tokens": _num(r["construction_tokens"]), "errors": r["errors"]}
                      for r in t.to_dict(orient="records")]}


# -- entry points ---------------------------------------------------------------------------------------

def run(config: str = "reduced", results_dir: Path = RESULTS, *, cassette=None, methods=None,
        conversations: str = "0-1", per_conv: int = 50, llm_spec: str | None = None) -> dict:
    from workbench.demo import demo_conversation
    from workbench.llm import count_tokens
    from workbench.methods.common import format_conversation

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    fitted = fitted_or_nominal()
    sample = sample_replay(results_dir, cassette=cassette, methods=methods)
    sample["conversation_tokens"] = count_tokens(format_conversation(demo_conversation()))
    models = {"nominal": LatencyModel.nominal()}
    if fitted.calls:
        models["fitted"] = fitted
    out = {"benchmark": "compare", "config": config, "date": datetime.now().isoformat(timespec="seconds"),
           "sample": sample, "locomo_estimate": estimate_locomo(sample, conversations, per_conv, models)}
    if config == "full":
        out["locomo"] = locomo_live(results_dir, conversations=conversations, per_conv=per_conv, methods=methods,
                                    llm_spec=llm_spec)
    else:
        out["locomo"] = {"status": "not run (reduced config)", **locomo_table(results_dir)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="reduced", choices=["reduced", "full"])
    ap.add_argument("--methods", nargs="*", default=None)
    ap.add_argument("--cassette", default=None, help="sample cassette (default: the committed one)")
    ap.add_argument("--locomo-conversations", default="0-1")
    ap.add_argument("--locomo-questions", type=int, default=50, help="per conversation, categories 1-4")
    ap.add_argument("--llm", default=None, help="reader/judge spec for --config full (default: WORKBENCH_LLM)")
    ap.add_argument("--results", default=str(RESULTS))
    a = ap.parse_args(argv)
    result = run(a.config, Path(a.results), cassette=a.cassette, methods=a.methods,
                 conversations=a.locomo_conversations, per_conv=a.locomo_questions, llm_spec=a.llm)
    (Path(a.results) / "compare.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps(result["sample"]["table"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
