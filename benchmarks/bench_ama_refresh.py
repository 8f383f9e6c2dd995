"""AMA's Refresher on the sample data's knowledge updates, with an offline model (issue #6).

AMA keeps memory consistent by asking its Judge whether a new turn conflicts with stored entries and
letting the Refresher update or delete them. This experiment runs AMA on the slices of the sample
data that were written to contain knowledge updates, and counts what reaches the event log:

- ``tiny``: ``tiny-1`` (2 sessions, 12 turns): Noor moves from Lyon (D1:6) to Geneva (D2:1);
  questions "Where does Noor live now?" and "In which city does Noor take violin lessons now?".
- ``greyhound``: ``sample-1`` sessions 3-4 (26 turns): the greyhound is named Biscuit (D3:6) and
  renamed Pilot (D4:3); questions "What is the name of Tomasz's greyhound?" and "What names has
  Tomasz's greyhound had?" (the second asks for the history an in-place Update overwrites).

Two conflict checks, everything else at the paper defaults of ``workbench.methods.AMA``:
- ``judge``: the paper's Judge prompt (P_jud, ingestion variant), one call per turn;
- ``probe``: ``conflict_check="probe"`` ([ours]), one question probe per nearest stored entry.

The slices are ``workbench.demo.KNOWLEDGE_UPDATE_SLICES`` (notebook 02 replays the same run). The model
is ``local:qwen2.5-coder-1.5b`` by default (``--llm`` to change; the 0.5B default model's own verdicts are
in the demo run). Calls go through the cassette ``sample_data/cassettes/ama-refresh.jsonl``: by default
it is replayed (CI needs no model; a call missing from it is reported as "not in cassette"); ``--live``
runs the model for missing calls and appends them, which is how the committed recording was made.

Per config and slice it writes: ingestion conflict checks and their verdicts, every UPDATE/DELETE
event (before/after text, triggering turn, why), the answers with token F1 against gold, AMA's
``summary_stats`` (how many questions hit Retry / Refresh), LLM calls and tokens by role, failures.
Writes benchmarks/results/ama_refresh.json.
Usage: python -m benchmarks.bench_ama_refresh [--live] [--llm local:qwen2.5-coder-1.5b]
       [--only judge|probe] [--slices tiny greyhound] [--prune]
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_LLM = "local:qwen2.5-coder-1.5b"
CHECKS = ("probe", "judge")


def _slices():
    from workbench.demo import KNOWLEDGE_UPDATE_SLICES

    return tuple(KNOWLEDGE_UPDATE_SLICES)


def _cassette() -> Path:
    from workbench.demo import REFRESH_CASSETTE

    return REFRESH_CASSETTE


def _llm(spec: str, live: bool):
    from workbench.llm import CachedLLM, default_llm

    if live:
        return CachedLLM(default_llm(spec), _cassette(), mode="auto")
    return CachedLLM.replay(_cassette())


def _model_name(llm, spec: str) -> str:
    """The model that made the recorded calls (a replay has no live model: read it from the cassette)."""
    return ", ".join(sorted(llm.cassette.models())) or spec


def run_one(check: str, slice_name: str, llm, embedder) -> dict:
    """Ingest one slice with one conflict check, answer its questions, and report what the log shows."""
    from benchmarks.bench_construction import calls_by_role
    from workbench.demo import knowledge_update_slice
    from workbench.eval.metrics import token_f1
    from workbench.llm.ledger import track
    from workbench.methods import AMA

    conv = knowledge_update_slice(slice_name)
    # recorded before #18 extended the ingestion check to raw and episode entries: fact store only
    method = AMA(llm=llm, embedder=embedder, conflict_check=check, conflict_stores=("fact",))
    t = time.perf_counter()
    with track() as calls:
        method.ingest(conv)
        answers = [(qa, method.answer(qa.question, now=qa.time)) for qa in conv.qa]
    wall = time.perf_counter() - t
    checks = [s for steps in method.turn_steps_.values() for s in steps if s.kind == "judge"]
    refresh_steps = [s for steps in method.turn_steps_.values() for s in steps if s.kind == "refresh"]
    edits = [e for e in method.events_ if e.kind in ("UPDATE", "DELETE")]
    misses = Counter(c.role for c in calls if c.error and c.error.startswith("CacheMiss"))
    return {
        "check": check, "slice": slice_name, "conversation": conv.id, "turns": len(conv.turns),
        "status": "not in cassette" if misses else "ok", "misses": dict(misses),
        "params_hash": method.params_hash(),
        "ingest_checks": len(checks),
        "ingest_verdicts": dict(Counter(s.data.get("verdict") for s in checks)),
        "refresher_runs": [{"cause": s.data.get("cause"), "action": s.data.get("action"),
                            "updated": s.data.get("updated"), "deleted": s.data.get("deleted"),
                            "reason": s.data.get("reason"), "error": s.data.get("error")} for s in refresh_steps],
        "refresh_events": [{"kind": e.kind, "unit_id": e.unit_id, "cause": e.cause, "before": e.before,
                            "after": e.after, "why": e.data.get("why")} for e in edits],
        "answers": [{"qa": qa.id, "question": qa.question, "gold": qa.answer, "prediction": a.text,
                     "f1": round(token_f1(a.text, qa.answer), 3)} for qa, a in answers],
        "question_stats": AMA.summary_stats([a for _, a in answers]),
        "failures": list(method.failures_),
        "llm_calls": len(calls), "roles": dict(sorted(calls_by_role(calls).items())),
        "tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
        "wall_s": round(wall, 2),
    }


def run(*, live: bool = False, llm_spec: str = DEFAULT_LLM, checks=CHECKS, slices=None,
        results_dir: Path = RESULTS, prune: bool = False) -> dict:
    from workbench.demo import demo_embedder

    slices = slices or _slices()
    if not live and not _cassette().exists():
        out = {"status": "skipped", "note": f"no cassette at {_cassette().name}; record with --live"}
    else:
        llm = _llm(llm_spec, live)
        embedder = demo_embedder()
        rows = []
        for check in checks:
            for name in slices:
                print(f"ama_refresh: {check} on {name}", flush=True)
                rows.append(run_one(check, name, llm, embedder))
        out = {"status": "ok", "llm": _model_name(llm, llm_spec),
               "mode": "live" if live else "replay", "embedder": embedder.name, "runs": rows}
        if prune:  # drop calls of older prompts, only after a complete replay of every config
            if set(checks) != set(CHECKS) or set(slices) != set(_slices()) or any(r["misses"] for r in rows):
                raise SystemExit("--prune needs every check and slice, all replayed without a miss")
            out["pruned"] = llm.cassette.prune(llm.used_keys)
    path = Path(results_dir) / "ama_refresh.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=str))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--live", action="store_true", help="run the model for calls missing from the cassette")
    ap.add_argument("--llm", default=DEFAULT_LLM, help=f"model spec for --live (default {DEFAULT_LLM})")
    ap.add_argument("--only", choices=CHECKS, help="one conflict check only")
    ap.add_argument("--slices", nargs="+", choices=list(_slices()), default=list(_slices()))
    ap.add_argument("--prune", action="store_true", help="after a full replay, drop cassette calls it did not use")
    a = ap.parse_args(argv)
    out = run(live=a.live, llm_spec=a.llm, checks=(a.only,) if a.only else CHECKS, slices=tuple(a.slices),
              prune=a.prune)
    for r in out.get("runs", []):
        print(f"{r['check']:6s} {r['slice']:10s} {r['status']}: checks {r['ingest_verdicts']}, "
              f"{len(r['refresh_events'])} UPDATE/DELETE, questions {r['question_stats']['retry_questions']} Retry / "
              f"{r['question_stats']['refresh_questions']} Refresh, {r['llm_calls']} calls, {r['wall_s']} s")


if __name__ == "__main__":
    main()
