"""MemR3's two profiles on the demo's 12 questions with the 1.5B: does the paper profile write gaps? (issue #39).

The review of MemR3 (../shared/reviews/memr3.md §4, "a fair chance to write them") found that the small profile's
prompts bias the router towards an empty gap list ("[]" shown twice, "missing specifics" and "gaps will do that"
dropped) and that its schema lets a reply skip the payload each action carries. The paper profile restores the
paper's wording and requires the payload. This A/B runs both on the same slice, model and embedder:

- ``small``: the demo's own MemR3 (``workbench.demo.demo_methods``: small profile, bounded router replies),
  replayed from the demo cassette;
- ``paper``: ``MemR3(profile="paper")`` built by ``eval.settings.build_method`` with no calibration and no
  output bounds (as the paper gallery runs), its calls in ``benchmarks/results/cassettes/memr3_ab.jsonl``, with
  ``RECORDED_AS``: the recording was made before turn 4, when the paper profile forced reflect on a drained store
  (``nothing_left="reflect"``); the profile now has the paper's three guards alone (``"choose"``), which changes the
  calls of the questions whose store drained (15 calls the cassette lacks). Measuring the turn-4 profile needs
  ``--live --turn4`` (the cassette keeps the old calls; about 35 minutes on 2 free cores).

Per profile: answers right (the deterministic checker) and the judge's, LLM calls and tokens, router steps per
question, the share of questions where the router wrote at least one gap, the gaps written, the share of router
steps whose reply carried its action's payload (``MemR3.summary_stats``: ``payload_share``), the actions, and
failures. By default both replay (no model; a call missing from a cassette is a failed question, reported);
``--live`` runs the 1.5B for the paper profile's missing calls and appends them, which is how the committed
recording was made. Writes benchmarks/results/memr3_ab.json.
Usage: python -m benchmarks.bench_memr3_ab [--live] [--llm local:qwen2.5-coder-1.5b]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
CASSETTE = RESULTS / "cassettes" / "memr3_ab.jsonl"
DEFAULT_LLM = "local:qwen2.5-coder-1.5b"
#: the paper profile's parameters the committed recording was made with, where the profile has changed since
#: (docs/reviews/memr3.md, turn-4 N2)
RECORDED_AS = {"nothing_left": "reflect"}


def _profile_stats(method, res) -> dict:
    """What one profile did on the questions of ``res`` (an ``EvalResult`` with its answers kept). A gap counts when
    it is open (``state.open_gaps``: a copied "No gaps noted." or "None" is no gap, review B3)."""
    from workbench.methods.memr3.state import open_gaps
    from workbench.trace import Answer

    rows = list(res)
    answers = [Answer.from_dict(r.answer) for r in rows if r.answer]
    stats = type(method).summary_stats(answers)
    routers = [[s for s in a.steps if s.kind == "router"] for a in answers]
    written = [[g for s in r for g in open_gaps(tuple(str(x) for x in (s.data.get("gaps") or [])))] for r in routers]
    return {
        "profile": method.profile, "questions": len(rows),
        "checker_right": sum(1 for r in rows if (r.scores or {}).get("checker") == 1.0),
        "judge_right": sum(1 for r in rows if r.judge_label == "CORRECT"),
        "query_calls": sum(r.query_calls for r in rows), "query_tokens": sum(r.query_tokens for r in rows),
        "router_steps": stats["router_steps"], "mean_iterations": round(stats["mean_iterations"], 3),
        "questions_with_a_gap": sum(1 for w in written if w), "gaps_written": sum(len(w) for w in written),
        # router steps whose written gaps (less "None"/"[]", which the trace drops) held only the copied placeholder
        "placeholder_gap_steps": sum(1 for r in routers for s in r if s.data.get("gaps") and
                                     not open_gaps(tuple(str(x) for x in s.data["gaps"]))),
        "gap_examples": [g for w in written for g in w][:6],
        "payload_share": stats.get("payload_share"), "rejected_replies": stats.get("rejected_replies"),
        "actions": stats.get("actions"),
        "row_errors": sum(1 for r in rows if r.error),
        "failure_kinds": dict(Counter(f.get("kind") for r in rows for f in (r.failures or []) if isinstance(f, dict))),
        "answers": [{"qa_id": r.qa_id, "gold": r.gold, "prediction": r.prediction,
                     "checker": (r.scores or {}).get("checker")} for r in rows],
    }


def run(*, live: bool = False, llm_spec: str = DEFAULT_LLM, results_dir: Path = RESULTS, turn4: bool = False) -> dict:
    """Both profiles over the demo slice; writes and returns ``memr3_ab.json``. The paper profile runs with
    ``RECORDED_AS`` (the recording's parameters) unless ``turn4``."""
    from workbench import demo
    from workbench.eval import LLMJudge, evaluate
    from workbench.eval.settings import build_method
    from workbench.llm import CachedLLM, default_llm

    data, emb, qids = demo.demo_dataset(demo.DEMO), demo.demo_embedder(), list(demo.DEMO.questions)
    out = {"slice": f"{data[0].id}, {len(data[0].sessions)} sessions, {len(qids)} questions (the 1.5B demo's)",
           "model": llm_spec, "profiles": {}, "paper_recorded_as": {} if turn4 else dict(RECORDED_AS)}
    with tempfile.TemporaryDirectory() as tmp:
        small_llm = demo.demo_llm(mode="replay", cassette=demo.DEMO.cassette, profile=demo.DEMO)
        small = demo.demo_methods(small_llm, emb, ["memr3"])["memr3"]
        if live:
            CASSETTE.parent.mkdir(parents=True, exist_ok=True)
            paper_llm = CachedLLM(default_llm(llm_spec), CASSETTE, mode="auto")
        elif CASSETTE.exists():
            paper_llm = CachedLLM.replay(CASSETTE)
        else:
            paper_llm = None
        runs = [("small", small, small_llm)]
        if paper_llm is not None:
            params = {"profile": "paper", **({} if turn4 else RECORDED_AS)}
            paper = build_method("memr3", llm=paper_llm, embedder=emb, params=params, calibration=None,
                                 warn=False).method
            runs.append(("paper", paper, paper_llm))
        else:
            out["profiles"]["paper"] = {"available": False, "note": f"no cassette {CASSETTE.name}: run with --live"}
        for name, method, llm in runs:
            t0 = time.perf_counter()
            res = evaluate(method, data, judge=LLMJudge(llm), store=Path(tmp) / f"{name}.jsonl", questions=qids,
                           progress=False)
            entry = _profile_stats(method, res)
            entry["wall_s"] = round(time.perf_counter() - t0, 1)
            entry["live_calls"] = getattr(llm, "misses", 0)
            entry["cassette_misses"] = getattr(llm, "replay_misses", 0)
            out["profiles"][name] = entry
    path = Path(results_dir) / "memr3_ab.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--live", action="store_true", help="run the model for calls missing from the cassette")
    ap.add_argument("--llm", default=DEFAULT_LLM, help="the model for --live (default: the demo's 1.5B)")
    ap.add_argument("--turn4", action="store_true",
                    help="the paper profile as it is now, not as recorded (RECORDED_AS): needs --live once")
    a = ap.parse_args(argv)
    out = run(live=a.live, llm_spec=a.llm, turn4=a.turn4)
    for name, p in out["profiles"].items():
        if p.get("available") is False:
            print(f"{name}: {p['note']}")
            continue
        print(f"{name}: {p['checker_right']}/{p['questions']} right (checker), {p['query_calls']} calls, "
              f"{p['query_tokens']:,} tokens, {p['router_steps']} router steps, gaps written in "
              f"{p['questions_with_a_gap']} questions ({p['gaps_written']} gaps), payload share {p['payload_share']}, "
              f"cassette misses {p['cassette_misses']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
