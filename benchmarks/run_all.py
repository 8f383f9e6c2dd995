"""``workbench bench`` / ``make bench``: run every benchmark and write benchmarks/results/*.json plus a
Markdown summary, benchmarks/results/SUMMARY.md. Nothing here is asserted by tests.

Configurations:
- ``reduced`` (default; what CI runs, about 10 minutes on 2 cores): the sample-data comparison replayed
  from the committed cassette, RecMem vs EagerFloor construction and AMA's refresh recording (both
  replayed), overhead (replay-based, 20 s simulated-latency budget), scale at 1x/4x/16x
  conv-26, core speed with indexes up to 10^5 units, H-Mem build (1 repeat), harness replay, UI, and what
  local JSON repair would have saved on the real-scale cassettes (``bench_repairs``, read-only, seconds).
- ``full``: the same with indexes up to 10^6, 3 repeats, 500 retrieval queries, a 120 s simulated
  budget, **and** the LoCoMo dev slice with the offline model as reader and judge (hours: see the
  estimate in SUMMARY.md). Resumable: rerun the command after an interruption.

A step that fails is reported (status and error in run_all.json and SUMMARY.md) and the others still run.
Usage: python -m benchmarks.run_all [--config reduced|full] [--only compare scale ...] [--skip ui]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
import traceback
from datetime import datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
STEPS = ("compare", "construction", "ama_refresh", "memr3_ab", "verdicts", "real_scale", "repairs", "overhead", "scale",
         "core", "hmem_build", "harness_replay", "ui", "locomo")
CONFIGS = {
    "reduced": {"core": ["--max-size", "100000"], "hmem_build": ["--repeats", "1"],
                "harness_replay": ["--repeats", "2"], "ui": ["--repeat", "2"],
                "scale": {"sizes": (1, 4, 16), "queries": 100, "minilm_max": 4}, "overhead_budget_s": 20.0},
    "full": {"core": ["--max-size", "1000000"], "hmem_build": ["--repeats", "3"],
             "harness_replay": ["--repeats", "3"], "ui": ["--repeat", "3"],
             "scale": {"sizes": (1, 4, 16), "queries": 500, "minilm_max": None}, "overhead_budget_s": 120.0},
}


@contextlib.contextmanager
def _argv(args: list[str]):
    """bench_hmem_build.main() reads sys.argv itself."""
    saved = sys.argv
    sys.argv = [saved[0]] + list(args)
    try:
        yield
    finally:
        sys.argv = saved


def _write(results: Path, name: str, data: dict) -> None:
    (results / name).write_text(json.dumps(data, indent=2, default=str) + "\n")


def _load(results: Path, name: str) -> dict | None:
    for d in (results, RESULTS):
        p = d / name
        if p.exists():
            try:
                return json.loads(p.read_text())
            except json.JSONDecodeError:
                return None
    return None


def step_compare(cfg: dict, results: Path, opts) -> None:
    from benchmarks import bench_compare

    data = bench_compare.run("reduced", results, conversations=opts.locomo_conversations,
                             per_conv=opts.locomo_questions)
    data["config"] = opts.config
    if opts.config == "full":
        data["locomo"] = {"status": "pending: the live slice runs last (step locomo)", "table": []}
    _write(results, "compare.json", data)


def step_locomo(cfg: dict, results: Path, opts) -> None:
    """Full config only, last: the LoCoMo slice live (hours), merged into compare.json."""
    from benchmarks import bench_compare

    data = _load(results, "compare.json") or {"benchmark": "compare", "config": opts.config}
    data["locomo"] = bench_compare.locomo_live(results, conversations=opts.locomo_conversations,
                                               per_conv=opts.locomo_questions, llm_spec=opts.llm)
    _write(results, "compare.json", data)


def step_construction(cfg: dict, results: Path, opts) -> None:
    """RecMem vs EagerFloor construction, replayed from cassettes (record with bench_construction --live)."""
    from benchmarks import bench_construction

    bench_construction.run(live=False, results_dir=results)


def step_ama_refresh(cfg: dict, results: Path, opts) -> None:
    """AMA's conflict checks on the knowledge-update slices, replayed (record with bench_ama_refresh --live)."""
    from benchmarks import bench_ama_refresh

    bench_ama_refresh.run(live=False, results_dir=results)


def step_memr3_ab(cfg: dict, results: Path, opts) -> None:
    """MemR3's paper and small profiles on the demo's questions, replayed (record with bench_memr3_ab --live)."""
    from benchmarks import bench_memr3_ab

    bench_memr3_ab.run(live=False, results_dir=results)


def step_verdicts(cfg: dict, results: Path, opts) -> None:
    """Every verdict source against the labelled real answers (no model call)."""
    from benchmarks import bench_verdicts

    _write(results, "verdicts.json", bench_verdicts.run())


def step_real_scale(cfg: dict, results: Path, opts) -> None:
    """Whole-conversation LoCoMo recordings (record with record_real_scale), replayed into one table."""
    from benchmarks import bench_real_scale

    _write(results, "real_scale.json", bench_real_scale.run(results))


def step_repairs(cfg: dict, results: Path, opts) -> None:
    """What local JSON repair would have saved on the real-scale recordings (read-only; about 15 s)."""
    from benchmarks import bench_repairs

    _write(results, "repairs.json", bench_repairs.run())


def step_overhead(cfg: dict, results: Path, opts) -> None:
    from benchmarks import bench_overhead

    _write(results, "overhead.json", bench_overhead.run(_load(results, "compare.json"),
                                                          budget_s=cfg["overhead_budget_s"]))


def step_scale(cfg: dict, results: Path, opts) -> None:
    from benchmarks import bench_scale

    sc = cfg["scale"]
    _write(results, "scale.json", bench_scale.run(sc["sizes"], queries=sc["queries"], minilm_max=sc["minilm_max"],
                                                  isolate=True))


def step_core(cfg: dict, results: Path, opts) -> None:
    from benchmarks import bench_core

    bench_core.main(cfg["core"])


def step_hmem_build(cfg: dict, results: Path, opts) -> None:
    from benchmarks import bench_hmem_build

    with _argv(cfg["hmem_build"]):
        bench_hmem_build.main()


def step_harness_replay(cfg: dict, results: Path, opts) -> None:
    from benchmarks import bench_harness_replay

    bench_harness_replay.main(cfg["harness_replay"] + ["--out", str(results / "harness_replay.json")])


def step_ui(cfg: dict, results: Path, opts) -> None:
    from benchmarks import bench_ui

    bench_ui.main(cfg["ui"])


def run_steps(steps, cfg: dict, results: Path, opts) -> dict:
    log = {}
    for name in steps:
        print(f"\n=== bench: {name} ===", flush=True)
        t = time.perf_counter()
        try:
            globals()[f"step_{name}"](cfg, results, opts)
            log[name] = {"status": "ok"}
        except (Exception, SystemExit) as exc:  # one broken benchmark must not lose the others
            traceback.print_exc()
            log[name] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        log[name]["wall_s"] = round(time.perf_counter() - t, 1)
        print(f"=== {name}: {log[name]['status']} in {log[name]['wall_s']} s", flush=True)
    return log


# -- SUMMARY.md -----------------------------------------------------------------------------------------

def _md(rows: list[dict], cols: dict[str, str]) -> str:
    """A Markdown table of ``rows`` with ``cols`` = {key: header}; numeric columns right-aligned."""
    from workbench.eval.report import markdown_table

    if not rows:
        return "(no rows)"
    keys = list(cols)
    numeric = [all(isinstance(r.get(k), (int, float)) or r.get(k) is None for r in rows)
               and any(r.get(k) is not None for r in rows) for k in keys]
    return markdown_table([cols[k] for k in keys], [[_num(r.get(k)) for k in keys] for r in rows], numeric)


def _num(v) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v).replace("|", "\\|").replace("\n", " ")
    if isinstance(v, int) or float(v).is_integer() and abs(v) >= 100:
        return f"{int(v)}"
    return f"{v:.1f}" if abs(v) >= 100 else f"{v:.3g}" if abs(v) >= 1 else f"{v:.3f}"


def _f(v, nd: int = 2) -> str:
    return "–" if v is None else (f"{v:.{nd}f}" if isinstance(v, float) else str(v))


SAMPLE_COLS = {"method": "method", "status": "status", "n": "n", "accuracy": "judge acc",
               "judge_false_accept": "judge false-accept", "f1": "F1",
               "bleu1": "BLEU-1", "evidence_recall": "evidence recall", "query_tokens": "query tok/q",
               "fc_token_ratio": "x Full-Context", "construction_tokens": "constr. tokens",
               "construction_calls": "constr. calls", "wall_s": "replay wall s", "est_live_llm_s": "est. live s",
               "misses": "cassette misses"}


def _sec_compare(c: dict | None) -> list[str]:
    if not c:
        return ["## 1-2. Method comparison", "", "(not run)"]
    s = c["sample"]
    out = ["## 1-2. Method comparison: sample data, replayed from the cassette", "",
           f"`{Path(s['cassette']).name}`: {s['sessions']} sessions / {s['turns']} turns of sample-1, "
           f"{len(s['questions'])} demo questions (`overall` = categories 1-4, so the adversarial one is left out "
           f"of the accuracy columns); every method and judge call replayed, MiniLM embeddings. "
           f"Replay wall time of the whole comparison: **{s['replay_wall_s']} s**; `est. live s` prices the "
           f"same calls with the nominal latency model (prompt {s['latency_model']['prompt_tok_s']} tok/s, "
           f"generation {s['latency_model']['gen_tok_s']} tok/s).", "",
           _md([_blank_partial(r) for r in s["table"]], SAMPLE_COLS), ""]
    # the floor's name since EagerFacts became EagerFloor; older result files say eager_facts
    floor = "eager_floor" if "recmem_vs_eager_floor" in s else "eager_facts"
    r = s.get(f"recmem_vs_{floor}", {})
    if r.get("available"):
        out.append(f"RecMem vs EagerFloor construction: **{_f(r['token_ratio'], 3)}x tokens** "
                   f"({r['recmem_tokens']} / {r[floor + '_tokens']}), **{_f(r['call_ratio'], 3)}x calls** "
                   f"({r['recmem_calls']} / {r[floor + '_calls']}).")
    else:
        out.append(f"RecMem vs EagerFloor construction ratio: not available ({r.get('note', '')}).")
    missing = [m for m in s["methods"] if m["status"] != "ok"]
    if missing:
        what = "; ".join(f"{m['method']} ({m['status']}: "
                         + ", ".join(f"{k} x{v}" for k, v in (m.get("misses") or {}).items()) + ")" for m in missing)
        out += ["", "Not replayable (calls missing from the cassette; record them with `workbench demo --record`): "
                + what]
    return out + [""] + _sec_locomo(c)


CONSTRUCTION_COLS = {"method": "method", "status": "status", "calls": "calls", "prompt_tokens": "prompt tok",
                     "completion_tokens": "completion tok", "total_tokens": "total tok",
                     "repair_retry_calls": "repair/retry calls", "repair_retry_tokens": "repair/retry tok",
                     "recorded_failures": "recorded failures", "tokens_per_exchange": "tok/exchange",
                     "wall_s": "replay wall s"}


def _ratio_text(r: dict | None, other: str) -> str:
    if not r or r.get("token_ratio") is None:
        return f"RecMem vs {other}: not available ({(r or {}).get('status', 'not run')})"
    return (f"RecMem uses **{_f(r['token_ratio'], 3)}x** {other}'s construction tokens and "
            f"**{_f(r['call_ratio'], 3)}x** its calls")


def _sec_construction(c: dict | None) -> list[str]:
    """RecMem vs Mem0Style and the eager floor on the same turns (benchmarks/bench_construction.py)."""
    out = ["## Construction cost: RecMem vs Mem0Style and the eager floor on the same turns", ""]
    if not c:
        return out + ["(not run)", ""]
    out += ["Construction calls only, same LLM (the offline 0.5B model, replayed from cassettes), same embedder. "
            "Mem0Style reproduces the structure of Mem0's LoCoMo pipeline (per-speaker extraction with a long "
            "few-shot prompt, then an ADD/UPDATE/DELETE/NONE call against the retrieved memories), the reference "
            "of the RecMem paper's claim (up to 87% fewer construction tokens than Mem0). EagerFloor (formerly "
            "EagerFacts) is one short extraction call per exchange: a floor on eager cost, not Mem0. "
            "`repair/retry` are the extra calls the LLM boundary makes when a reply is not valid JSON (with the "
            "0.5B model, mostly replies cut at the 512-token cap).", ""]
    for key in ("sample", "sample_full", "locomo"):
        part = c.get(key)
        if not part:
            continue
        if "methods" not in part:
            out += [f"- {key}: {part.get('status')}", ""]
            continue
        est = part.get("recmem_vs_mem0_style_per_exchange_estimate")
        if est:
            out += [f"Estimate on the whole slice: RecMem's construction tokens per exchange are "
                    f"**{_f(est['token_ratio'], 3)}x** "
                    f"Mem0Style's ({_f(est['mem0_style_tokens_per_exchange'], 1)} per exchange; {est['basis']}).", ""]
        per_ex = ", ".join(f"{m['method']} {_f(m.get('tokens_per_exchange'), 1)}" for m in part["methods"].values())
        out += [f"**{part['input']}** ({part['sessions']} sessions, {part['turns']} turns, "
                f"{part.get('exchanges', '?')} exchanges): "
                f"{_ratio_text(part.get('recmem_vs_mem0_style'), 'Mem0Style')}; "
                f"{_ratio_text(part.get('recmem_vs_floor', part.get('recmem_vs_eager_facts')), 'the eager floor')}. "
                f"Construction tokens per exchange: {per_ex}.", "",
                _md(list(part["methods"].values()), CONSTRUCTION_COLS), ""]
    return out


AMA_REFRESH_COLS = {"check": "conflict check", "slice": "slice", "turns": "turns", "status": "status",
                    "checks": "ingestion checks", "refresh": "Refresh verdicts", "edits": "UPDATE/DELETE events",
                    "retry_q": "questions with Retry", "refresh_q": "questions with Refresh", "f1": "mean F1",
                    "calls": "LLM calls", "tokens": "tokens", "failures": "recorded failures"}


def _sec_ama_refresh(a: dict | None) -> list[str]:
    """AMA's Refresher on the knowledge updates (benchmarks/bench_ama_refresh.py)."""
    out = ["## AMA: refresh events on the sample data's knowledge updates", ""]
    if not a or a.get("status") != "ok":
        return out + [f"({(a or {}).get('note', 'not run')})", ""]
    rows = [{"check": r["check"], "slice": r["slice"], "turns": r["turns"], "status": r["status"],
             "checks": r["ingest_checks"], "refresh": r["ingest_verdicts"].get("Refresh", 0),
             "edits": len(r["refresh_events"]), "retry_q": r["question_stats"]["retry_questions"],
             "refresh_q": r["question_stats"]["refresh_questions"],
             "f1": round(sum(x["f1"] for x in r["answers"]) / max(1, len(r["answers"])), 3),
             "calls": r["llm_calls"], "tokens": r["tokens"], "failures": len(r["failures"])} for r in a["runs"]]
    out += [f"Model `{a['llm']}` ({a['mode']}), embedder {a['embedder']}, paper defaults except the conflict check: "
            "`judge` is the paper's Judge prompt at ingestion, `probe` is `conflict_check=\"probe\"` (one question "
            "probe per nearest stored entry, answers compared in code). Questions are the slices' "
            "knowledge-update items; `questions with Retry/Refresh` counts them from the answer traces.", "",
            _md(rows, AMA_REFRESH_COLS), "", "UPDATE/DELETE events (what the AMA widget's refresh view shows):", ""]
    for r in a["runs"]:
        for e in r["refresh_events"]:
            after = f" -> {e['after']!r}" if e["after"] is not None else ""
            out.append(f"- `{r['check']}` / {r['slice']}: {e['kind']} {e['unit_id']} at {e['cause']}: "
                       f"{e['before']!r}{after} ({e['why']})")
    if not any(r["refresh_events"] for r in a["runs"]):
        out.append("- none")
    return out + [""]


def _sec_memr3_ab(a: dict | None) -> list[str]:
    """MemR3's two profiles on the demo's questions (benchmarks/bench_memr3_ab.py)."""
    out = ["## MemR3: paper and small profiles on the demo's questions", ""]
    if not a:
        return out + ["(not run)", ""]
    rows = [{"profile": name, "right": f"{p['checker_right']} of {p['questions']}", "judge": p["judge_right"],
             "calls": p["query_calls"], "tokens": p["query_tokens"], "steps": p["router_steps"],
             "gap_q": p["questions_with_a_gap"], "gaps": p["gaps_written"],
             "failures": ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(p["failure_kinds"].items())) or "0",
             "payload": ", ".join(f"{k} {v:.0%}" for k, v in sorted((p.get("payload_share") or {}).items())),
             "misses": p["cassette_misses"]}
            for name, p in a["profiles"].items() if p.get("available") is not False]
    out += [f"{a['slice']}, model `{a['model']}`. `small` is the demo's MemR3 (replayed from the demo cassette); "
            "`paper` is `profile=\"paper\"` with no calibration and no output bounds"
            + (" and the parameters it was recorded with where the profile has changed since ("
               + ", ".join(f"`{k}={v!r}`" for k, v in a["paper_recorded_as"].items()) + ")"
               if a.get("paper_recorded_as") else "")
            + ". A gap counts when it is open (a copied \"No gaps noted.\" is none); \"payload written\" is over the "
            "replies that were read (replies the client discarded after repair and retry are counted apart).", "",
            _md(rows, {"profile": "profile", "right": "right (checker)", "judge": "judge right", "calls": "LLM calls",
                       "tokens": "tokens", "steps": "router steps", "gap_q": "questions with a gap",
                       "gaps": "gaps written",
                       "payload": "payload written (per action)", "failures": "failures recorded",
                       "misses": "cassette misses"}), ""]
    for name, p in a["profiles"].items():
        if p.get("gap_examples"):
            out.append(f"- {name} gaps, as written: " + "; ".join(repr(g) for g in p["gap_examples"]))
    return out + [""]


def _blank_partial(r: dict) -> dict:
    """A method that did not replay fully has partial costs: show only its status and misses."""
    keep = ("method", "status", "misses")
    return r if r["status"] == "ok" else {k: (r.get(k) if k in keep else None) for k in r}


def _sec_locomo(c: dict) -> list[str]:
    out = ["### LoCoMo dev slice (`--config full`)", ""]
    loc = c.get("locomo", {})
    if loc.get("table"):
        out += [f"Status: {loc.get('status')}.", "", _md(loc["table"], {
            "method": "method", "n": "n", "accuracy": "judge acc", "judge_false_accept": "judge false-accept",
            "f1": "F1", "bleu1": "BLEU-1",
            "evidence_recall": "evidence recall", "query_tokens": "query tok/q", "fc_token_ratio": "x Full-Context",
            "construction_tokens": "constr. tok/q", "errors": "errors"}), ""]
    else:
        out += [f"Status: {loc.get('status', 'not run')}; no LoCoMo rows yet.", ""]
    e = c.get("locomo_estimate", {})
    if not e.get("available"):
        return out + [f"Expected wall time: {e.get('note', 'n/a')}.", ""]
    models = list(e["latency_models"])
    rows = [{"method": m, "basis": v.get("basis"), **{f"h_{k}": v.get(f"hours_{k}") for k in models},
             **{p: (v.get("calls") or {}).get(p) for p in ("construct", "query", "judge")}}
            for m, v in e["methods"].items()]
    cols = {"method": "method", "basis": "basis", "construct": "constr. calls", "query": "query calls",
            "judge": "judge calls", **{f"h_{k}": f"hours ({k})" for k in models}}
    tot = ", ".join(f"**{e['totals'][f'hours_{k}']} h** ({e['latency_models'][k]['source']})" for k in models)
    lower = ", ".join(f"{e['totals'].get(f'hours_{k}_with_lower_bounds')} h ({k})" for k in models)
    out += [f"Expected wall time of the slice ({', '.join(e['conversations'])}: {e['turns']} turns, "
            f"{e['questions']} questions of categories 1-4) on 2 cores, methods fully in the cassette: {tot}. "
            f"With the partly recorded methods ({', '.join(e['missing_methods']) or 'none'}) priced from their "
            f"recorded calls only: at least {lower}.", "", _md(rows, cols), "",
            "Full-Context prompt tokens per conversation (scaled from the sample): "
            + ", ".join(f"{k} {v}" for k, v in e["full_context_prompt_tokens"].items())
            + "; over the 16k context (refused, its questions fail): "
            + (", ".join(e["full_context_overflows"]) or "none") + ". "
            + e["note"] + ".", ""]
    return out


def _sec_real_scale(r: dict | None) -> list[str]:
    out = ["## Real scale: whole LoCoMo conversations, replayed", ""]
    if not r or r.get("status") != "ok":
        return out + [f"({(r or {}).get('note', 'not run')})", ""]
    replays = ", ".join(f"{x['method']} {x.get('conversation', '')} {x['status']} ({sum(x['misses'].values())} misses)"
                        for x in r["replays"])
    convs = ", ".join(f"`{c}`" for c in r.get("conversations") or [r["conversation"]])
    return out + [f"LoCoMo {convs}, categories {r['categories']}, every call replayed from the method's "
                  f"cassette in `sample_data/cassettes/locomo/` (CC BY-NC 4.0); reader and judge are the named model. "
                  "The verdict is the headline: the deterministic checker (`workbench.eval.checker`), because the "
                  "small judge's audit on labelled real answers fails; its CI is a bootstrap clustered by "
                  "conversation (over one conversation's questions alone where a method has one: blind to how "
                  "another conversation would go; with two or three conversations there are few clusters to "
                  "resample, so the interval is itself rough: read it with the per-conversation column). The "
                  "judge's accuracy stands "
                  "beside its audited false-accept rate, and token F1 for comparison with papers. "
                  f"Replays: {replays}.", "", r["markdown"], "",
                  "How far each verdict source agrees with careful readers, on the labelled real answers "
                  "(`sample_data/labels/`, no conv-30 answer among them):", "",
                  r.get("verdict_markdown") or "(not measured)", "",
                  "Against the papers' efficiency anchors, per conversation:", "",
                  r.get("anchors_markdown") or "(not computed)", "", *_memr3_recall_note(r),
                  "What each method's own mechanism did here, counted from the replayed traces and built memories "
                  "(`workbench mechanisms`):", "", r.get("mechanisms_markdown") or "(not counted)", "",
                  *_capped_note(r)]


def _capped_note(r: dict) -> list[str]:
    """Replies cut at the token cap, per recording (absent from results written before it was counted)."""
    if not r.get("capped_markdown"):
        return []
    return ["Replies the 0.5B ran into their cap while recording (512 tokens, or the role's bound), read from the "
            "cassettes, the method's own calls apart from the judge's (a JSON reply cut there is followed by a "
            "repair call and often a retry; the three roles with the most are named). Where "
            "the share of call time is large, a bound on that role's output (`workbench.llm.bounds`) would have "
            "saved it; a bound changes the cassette key, so it needs a new recording:", "", r["capped_markdown"], ""]


def _memr3_recall_note(r: dict) -> list[str]:
    """What MemR3's evidence recall counts, with its last batch's figures beside (only when MemR3 is in the table)."""
    line = next((x for x in r.get("table", []) if x.get("method") == "memr3"), None)
    if line is None:
        return []
    last = line.get("last_batch") or {}
    text = ("Evidence recall counts the turns in front of the final answer call (`Answer.context`), or in front of "
            "the calls that wrote what it reads. MemR3's answer call reads only the evidence its router wrote (paper "
            "Eq. 6), and each router call rewrites that evidence from its batch and the evidence before it, so its "
            "recall and its failure attribution are over every batch the router read.")
    if last:
        text += (f" On the last batch alone (what this table counted before turn 4: a router that runs to its step "
                 f"budget ends on the masked, least similar batch) recall is "
                 f"{_fmt(last.get('evidence_recall'))} and the attribution "
                 + " · ".join(f"{k} {v}" for k, v in sorted((last.get("attribution") or {}).items(),
                                                            key=lambda kv: (-kv[1], kv[0])))
                 + "; a reading_miss over every batch that was a retrieval_miss on the last batch had the gold in "
                 "front of the router and lost it while writing the evidence or the answer.")
    return [text, ""]


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.3f}"


def _sec_scale(sc: dict | None) -> list[str]:
    if not sc:
        return ["## 3. Scale", "", "(not run)", ""]
    rows = []
    for r in sc["rows"]:
        c = r["components"]
        rows.append({"x": f"{r['copies']}x", "turns": r["turns"], "minilm": c["embed_minilm"]["seconds"],
                     "mtps": c["embed_minilm"]["texts_per_s"], "hash": c["embed_hash"]["seconds"],
                     "index": c["index_build"]["seconds"], "hmem": c["hmem_build"]["seconds"],
                     "runits": c["recmem_units_embed"]["seconds"], "trig": c["recmem_trigger"]["seconds"],
                     "us": c["recmem_trigger"]["us_per_check"], "rate": c["recmem_trigger"]["trigger_rate"],
                     "rss": r.get("process_peak_rss_mb")})
    mem = [{"x": f"{r['copies']}x", **{k: "not measured" if v["seconds"] is None else
                                       f"{v['tracemalloc_peak_mb']} / {v['rss_delta_mb']}"
                                       for k, v in r["components"].items()}} for r in sc["rows"]]
    ret = [{"x": f"{r['copies']}x", **{k: f"{v['p50_ms']} / {v['p95_ms']} ({_units(v['units'])})"
                                       for k, v in r["retrieval"].items()}} for r in sc["rows"]]
    keys = list(sc["rows"][0]["components"]) if sc["rows"] else []
    rkeys = list(sc["rows"][0]["retrieval"]) if sc["rows"] else []
    g = dict(sc.get("growth_largest_vs_smallest", {}))
    upto = g.pop("measured_up_to", {})
    return ["## 3. Scale: non-LLM ingest cost, memory and retrieval latency", "",
            f"Data: {sc['data']} concatenated N times (renumbered ids, shifted dates); MiniLM: {sc['minilm']}; "
            f"each size in its own process: {sc.get('isolated_processes')}; MiniLM timed up to "
            f"{sc.get('minilm_measured_up_to') or max(sc['sizes'])}x (above: the first copy's vectors tiled, "
            "blank cells). Seconds:", "",
            _md(rows, {"x": "size", "turns": "turns", "minilm": "embed MiniLM s", "mtps": "MiniLM texts/s",
                       "hash": "embed hash s", "index": "index build s", "hmem": "H-Mem build s",
                       "runits": "RecMem units embed s", "trig": "trigger checks s", "us": "us/check",
                       "rate": "trigger rate", "rss": "process peak RSS MB"}), "",
            "Memory per component, tracemalloc peak MB / RSS growth MB:", "",
            _md(mem, {"x": "size", **{k: k for k in keys}}), "",
            "Retrieval latency p50 / p95 ms (units searched):", "", _md(ret, {"x": "size", **{k: k for k in rkeys}}),
            "", "Growth, largest vs smallest size (time ratio; size ratio "
                f"{_f(g.get('size_ratio'), 1)}): " + ", ".join(
                    f"{k} {v}" + (f" (up to {upto[k]} only)" if k in upto else "") for k, v in g.items()
                    if k != "size_ratio"), ""]


def _units(u) -> str:
    return "+".join(str(v) for v in u.values()) if isinstance(u, dict) else str(u)


def _sec_overhead(o: dict | None) -> list[str]:
    if not o:
        return ["## 4. Overhead", "", "(not run)", ""]
    out = ["## 4. Overhead: share of wall time outside LLM calls (target < 5%)", ""]
    ra = o.get("replay_additive")
    if ra:
        out += [f"- **Replay, additive** (replayed wall W vs estimated live LLM time L, share = W/(W+L)): "
                f"**{_pct(ra['outside_llm_share'])}** overall (W {ra['replay_wall_s']} s, L {ra['est_llm_s']} s); "
                "per method: " + ", ".join(f"{m} {_pct(v['outside_llm_share'])}" for m, v in ra["per_method"].items())]
    sim = o.get("simulated", {})
    if sim.get("status") == "ok":
        out.append(f"- **Simulated latency** ({sim['method']}, each call sleeps {sim['sleep_scale']} x its estimated "
                   f"latency, serialised): non-LLM time with the sleeps in place {sim['non_llm_s_with_sleeps']} s "
                   f"(replay without sleeps: {sim['replay_wall_s_without_sleeps']} s) -> "
                   f"**{_pct(sim['outside_llm_share_at_scale_1'])}** at full latency.")
    else:
        out.append(f"- Simulated latency: {sim.get('status', 'n/a')}.")
    live = o.get("live_ledger", {})
    if live.get("available"):
        out.append(f"- **Live run ledger** ({live['path']}, answer phase, {live['answer_wall_s']} s over "
                   f"{sum(v['questions'] for v in live['per_method'].values())} questions): "
                   f"**{_pct(live['outside_llm_share'])}**; per method: " +
                   ", ".join(f"{m} {_pct(v['outside_llm_share'])}" for m, v in live["per_method"].items()))
    else:
        out.append(f"- Live run ledger: {live.get('note', 'n/a')}.")
    sessions = (o.get("locomo_sessions") or [])
    if sessions:
        wall, llm = sum(x["wall_s"] for x in sessions), sum(x["llm_s"] for x in sessions)
        out.append(f"- **Live LoCoMo run** (`--config full`, whole run: construction, answers, judge; "
                   f"{len(sessions)} method sessions, {wall:.0f} s): **{_pct(1 - llm / wall if wall else None)}**; "
                   "per method: " + ", ".join(f"{x['method']} {_pct(x['outside_llm_share'])}" for x in sessions))
    fit = (o.get("latency_models") or {}).get("fitted")
    if fit:
        out.append(f"- Latency model fitted to that run: {fit['prompt_tok_s']} prompt tok/s, {fit['gen_tok_s']} "
                   f"gen tok/s, {fit['per_call_s']} s/call ({fit['source']}; {fit['calls']} calls).")
    return out + [""]


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.2f}%"


def _sec_ui(u: dict | None) -> list[str]:
    if not u:
        return ["## 5. UI", "", "(not run)", ""]
    rows = [{"what": k, "s": v["median_s"]} for k, v in {**u["widgets"], **u["app_in_process"]}.items()]
    rows += [{"what": f"browser: {k}", "s": v} for k, v in u.get("browser", {}).items() if isinstance(v, float)]
    run = u.get("run", {})
    passes = (u.get("browser") or {}).get("passes")
    return ["## 5. UI", "", f"Run: {run.get('data')} ({run.get('turns')} turns, {run.get('questions')} questions, "
                            f"{run.get('memories')} memories). Median seconds"
                            + (f" (browser: median of {passes} page loads)" if passes else "") + ":", "",
            _md(rows, {"what": "what", "s": "s"}),
            "" if "page_ready_s" in u.get("browser", {}) else f"Browser: {u.get('browser')}", ""] + _ui_demo(u)


def _ui_demo(u: dict) -> list[str]:
    """The served app over the demo run (every method): page ready and each tab, seconds."""
    b = u.get("browser_demo") or {}
    if "page_ready_s" not in b:
        return [f"Demo run in the browser: {b or 'not measured'}", ""]
    rows = [{"what": k, "s": v} for k, v in b.items() if isinstance(v, float)]
    return ["Demo run (sample-1, every method, replayed) in the browser:", "", _md(rows, {"what": "what", "s": "s"}),
            ""]


def _sec_demo_recording(cassette: Path | None = None) -> list[str]:
    """What recording the committed demo cassette cost, per method: read from the cassette itself
    (``workbench cassette costs``: each call's recorded time, summed over every session that recorded
    it), not run here."""
    from workbench.demo import DEMO
    from workbench.llm.cache import cassette_costs

    cassette = Path(cassette or DEMO.cassette)
    head = ["## Demo recording", ""]
    if not cassette.is_file():
        return head + [f"(no demo cassette at {cassette.name})", ""]
    c = cassette_costs(cassette)
    rows = [{"family": k, "calls": v["calls"], "tokens": f"{v['prompt_tokens'] + v['completion_tokens']:,}",
             "minutes": f"{v['seconds'] / 60:.1f}" if v["calls_without_latency"] < v["calls"] else "–",
             "untimed": v["calls_without_latency"]} for k, v in c["by_role"].items()]
    return head + [f"What recording `{cassette.name}` ({', '.join(c['models']) or 'no model'}) cost: calls, tokens and "
                   "the model's call time per method (`judge`: the judge's calls for every method), summed over "
                   "every session that recorded them. Calls recorded before call times were kept are *untimed*; "
                   "a process's first live call also holds the model's load.", "",
                   _md(rows, {"family": "method", "calls": "calls", "tokens": "tokens", "minutes": "call minutes",
                              "untimed": "untimed calls"}), ""]


def _sec_core(core: dict | None, hb: dict | None, hr: dict | None) -> list[str]:
    out = ["## Workbench core", ""]
    if core:
        emb = ", ".join(f"{k} {v.get('texts_per_s', v.get('error'))} texts/s" for k, v in core["embedding"].items())
        idx = "; ".join(f"{r['units']:,} units: p50 {r['search_ms_p50']} ms, p95 {r['search_ms_p95']} ms"
                        for r in core["index"])
        out += [f"- Embedding: {emb}.", f"- Index search (384-d, top-10 with a 5-id mask): {idx}.",
                f"- Cassette replay: {core['cached_replay']['per_call_us']} us per call."]
    if hr:
        out.append(f"- Harness in replay ({hr['questions']} synthetic questions): {hr['evaluate_ms_per_question']} ms "
                   f"per question, of which harness overhead {hr['harness_overhead_ms_per_question']} ms.")
    if hb:
        d = hb["per_100_turns"].get("fragment=window,alphas=default", {})
        out.append(f"- H-Mem build without an LLM: {d.get('build_seconds')} s per 100 turns (default settings).")
    return out + [""]


def render(meta: dict, load) -> str:
    """SUMMARY.md from run_all.json's ``meta`` and a loader of the results JSON by file name."""
    steps = [{"step": k, "status": v["status"], "wall_s": v["wall_s"], "error": v.get("error", "")}
             for k, v in meta["steps"].items()]
    m = meta["machine"]
    lines = ["# Benchmark summary", "",
             f"Generated by `workbench bench --config {meta['config']}` on {meta['date']} ({m['cpus']} CPUs, "
             f"Python {m['python']}); wall time **{meta['wall_s']} s**; 1-minute load average "
             f"{m.get('loadavg_1min_start')} at the start and {m.get('loadavg_1min_end')} at the end (above the "
             "CPU count, timings shared the CPU with other work). Regenerate with `make bench`; how each figure "
             "is measured: [benchmarks/README.md](../README.md).", "",
             _md(steps, {"step": "step", "status": "status", "wall_s": "wall s", "error": "error"}), ""]
    compare, overhead = load("compare.json"), load("overhead.json")
    if overhead is not None and compare:  # the live LoCoMo sessions (full config) are overhead figures too
        overhead["locomo_sessions"] = [x for x in (compare.get("locomo") or {}).get("sessions", [])
                                       if x.get("live_calls")]
    lines += _sec_compare(compare) + _sec_construction(load("construction.json"))
    from benchmarks.bench_verdicts import markdown as verdicts_markdown

    lines += _sec_ama_refresh(load("ama_refresh.json")) + _sec_memr3_ab(load("memr3_ab.json"))
    lines += verdicts_markdown(load("verdicts.json"))
    lines += _sec_real_scale(load("real_scale.json"))
    from benchmarks.bench_repairs import markdown as repairs_markdown

    lines += repairs_markdown(load("repairs.json"))
    lines += _sec_scale(load("scale.json")) + _sec_overhead(overhead) + _sec_ui(load("ui.json"))
    lines += _sec_core(load("core.json"), load("hmem_build.json"), load("harness_replay.json"))
    lines += _sec_demo_recording()
    return "\n".join(lines) + "\n"


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="reduced", choices=sorted(CONFIGS))
    ap.add_argument("--only", nargs="*", choices=STEPS, default=None)
    ap.add_argument("--skip", nargs="*", choices=STEPS, default=())
    ap.add_argument("--results", default=str(RESULTS), help="where this command's own JSON and SUMMARY.md go")
    ap.add_argument("--locomo-conversations", default="0-1", help="full config: LoCoMo conversations")
    ap.add_argument("--locomo-questions", type=int, default=50, help="full config: questions per conversation")
    ap.add_argument("--llm", default=None, help="full config: reader/judge spec (default WORKBENCH_LLM / offline)")
    opts = ap.parse_args(argv)
    results = Path(opts.results)
    results.mkdir(parents=True, exist_ok=True)
    default = STEPS if opts.config == "full" else tuple(s for s in STEPS if s != "locomo")
    steps = [s for s in (opts.only or default) if s not in set(opts.skip)]
    t, load_start = time.perf_counter(), _loadavg()
    log = run_steps(steps, CONFIGS[opts.config], results, opts)
    meta = {"config": opts.config, "date": datetime.now().isoformat(timespec="seconds"), "steps": log,
            "wall_s": round(time.perf_counter() - t, 1),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "arch": platform.machine(),
                        "loadavg_1min_start": load_start, "loadavg_1min_end": _loadavg()}}
    _write(results, "run_all.json", meta)
    (results / "SUMMARY.md").write_text(render(meta, lambda n: _load(results, n)))
    relativize_paths(results)
    print(f"\nwrote {results / 'SUMMARY.md'} ({meta['wall_s']} s)")
    return 0 if all(v["status"] == "ok" for v in log.values()) else 1


def relativize_paths(results: Path) -> None:
    """Results are committed: write paths relative to the checkout, never this machine's absolute ones."""
    root = Path(__file__).resolve().parents[1]
    swaps = [(str(root.parent / "shared") + "/", "../shared/"), (str(root) + "/", "")]
    for path in results.iterdir():
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md"):
            text = path.read_text(encoding="utf-8")
            new = text
            for old, rel in swaps:
                new = new.replace(old, rel)
            if new != text:
                path.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
