"""Construction cost of RecMem against Mem0Style and the eager floor on the same turns (issues #8, #18).

RecMem's claim (paper abstract and §5: up to 87% fewer construction tokens than Mem0) rests on not
calling the LLM for most turns: exchanges sit in the subconscious store until a recurrence trigger
fires. ``Mem0Style`` reproduces the structure of Mem0's LoCoMo pipeline (per-speaker extraction with
a long few-shot prompt, then an ADD/UPDATE/DELETE/NONE call against retrieved memories): the
paper's reference. ``EagerFloor`` (formerly EagerFacts) is the cheapest eager construction, one short
extraction call per exchange: a floor. All are built on the same turns with the same LLM and
embedder, and every construction call is counted (calls, prompt / completion tokens, by role,
failures); the output states RecMem / Mem0Style and RecMem / floor ratios and each method's
construction tokens per exchange.

Inputs:
- ``sample``: the 0.5B demo slice (``workbench.demo.DEMO_05B``, 4 sessions of sample-1): RecMem and
  the floor replay that profile's cassette (``sample-1.jsonl``), Mem0Style its own cassette
  ``benchmarks/results/cassettes/construction_mem0_sample.jsonl`` (recorded with ``--live``);
- ``locomo``: the first ``--sessions`` sessions (default 2, 35 turns) of the first conversation in
  ../shared/data/locomo/locomo10_dev.json (skipped cleanly when the file is absent), through the
  cassette ``benchmarks/results/cassettes/construction_locomo.jsonl``.

By default both replay their cassette (no model); a call missing from it is reported ("not in
cassette") instead of being run. ``--live`` runs the offline model (``default_llm()``, or
``WORKBENCH_LLM``) for missing calls and appends them to the cassette, which is how the committed
recordings were made (the demo cassette itself is never written). Methods use
``workbench.demo.demo_methods`` parameters (the demo's recorded configuration: RecMem thresholds
hand-set for MiniLM, the demo's embedder). The floor's calls were recorded under its old name
``eager_facts``; the prompts are the same and the cassette key has no role, so ``eager_floor`` replays them.

Writes benchmarks/results/construction.json.
Usage: python -m benchmarks.bench_construction [--live] [--sessions 3] [--only sample|locomo] [--methods mem0_style]
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10_dev.json"
LOCOMO_CASSETTE = RESULTS / "cassettes" / "construction_locomo.jsonl"
MEM0_SAMPLE_CASSETTE = RESULTS / "cassettes" / "construction_mem0_sample.jsonl"
METHODS = ("recmem", "mem0_style", "eager_floor")
FLOOR_NAMES = ("eager_floor", "eager_facts")  # the floor, under its new or its deprecated name
# How much of the demo slice Mem0Style's committed cassette covers, in exchanges from the start (its
# live recording is slow on the offline model: up to four LLM calls per exchange); None = the whole slice.
SAMPLE_EXCHANGES: int | None = 3  # recorded on 2026-11-23: 12 calls, about one a minute on a loaded machine


def _llm(cassette: Path, live: bool, inner=None, model: str | None = None):
    """Replay ``cassette`` (``model`` names the model when it does not exist yet: every call then
    misses and is reported), or with ``live`` run ``inner`` for missing calls and record them."""
    from workbench.llm import CachedLLM, default_llm

    if live:
        cassette.parent.mkdir(parents=True, exist_ok=True)
        return CachedLLM(inner or default_llm(), cassette, mode="auto")
    return CachedLLM.replay(cassette, model=None if cassette.exists() else model)


def _prefix_friendly_llm():
    """For live recording: one model instance for extraction prompts, another for the rest.

    llama.cpp reuses the evaluated prefix of the previous prompt; Mem0Style alternates a long
    extraction prompt (fixed instructions and examples first) with decision prompts, which would
    evict it every time. Routing by role keeps each instance's prefix warm. The recorded entries
    are the same as with one instance (the cassette key is model, messages, schema, ...).
    """
    from workbench.llm import default_llm
    from workbench.llm.base import BaseLLM

    class RoleRouter(BaseLLM):
        def __init__(self):
            super().__init__()
            self.extract, self.other = default_llm(), default_llm()
            self.model = self.extract.model

        def _generate(self, messages, *, schema, temperature, seed, max_tokens, role):
            target = self.extract if role.split(".repair")[0].split(".retry")[0].endswith(".extract") else self.other
            return target._generate(messages, schema=schema, temperature=temperature, seed=seed,
                                    max_tokens=max_tokens, role=role)

    return RoleRouter()


def locomo_slice(sessions: int):
    """The first conversation of the LoCoMo dev copy cut to its first ``sessions`` sessions."""
    from workbench.data import load_dataset

    conv = load_dataset(f"locomo:{LOCOMO}")[0]
    return replace(conv, sessions=conv.sessions[:sessions], qa=())


def calls_by_role(calls) -> dict[str, dict]:
    """Calls, prompt / completion tokens and errors per LLM role, from a ledger ``track()``."""
    roles: dict[str, dict] = {}
    for c in calls:
        r = roles.setdefault(c.role, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "errors": 0})
        r["calls"] += 1
        r["prompt_tokens"] += c.prompt_tokens
        r["completion_tokens"] += c.completion_tokens
        r["errors"] += c.error is not None
    return roles


def _profile():
    """The demo profile this benchmark replays: the 0.5B one (``DEMO_05B``), whose model also recorded
    Mem0Style's sample cassette, so that every method of the comparison is the same model. The active demo
    (1.5B) has no Mem0Style recording; re-recording it would move this to ``DEMO``."""
    from workbench.demo import DEMO_05B

    return DEMO_05B


def build(name: str, conv, llm, embedder) -> dict:
    """Ingest ``conv`` with one method and account for every construction call."""
    from workbench.demo import demo_methods
    from workbench.llm.ledger import track

    method = demo_methods(llm, embedder, [name], profile=_profile())[name]
    t = time.perf_counter()
    with track() as calls:
        method.ingest(conv)
    wall = time.perf_counter() - t
    roles = calls_by_role(calls)
    misses = Counter(c.role for c in calls if c.error and c.error.startswith("CacheMiss"))
    fixups = [c for c in calls if c.role.endswith((".repair", ".retry"))]  # BaseLLM's JSON repair and retry
    prompt = sum(c.prompt_tokens for c in calls)
    completion = sum(c.completion_tokens for c in calls)
    return {"method": name, "params_hash": method.params_hash(), "status": "not in cassette" if misses else "ok",
            "misses": dict(misses), "calls": len(calls), "prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "repair_retry_calls": len(fixups), "repair_retry_tokens": sum(c.prompt_tokens + c.completion_tokens
                                                                          for c in fixups),
            "failed_calls": sum(c.error is not None for c in calls),
            "live_calls": sum(not c.cached for c in calls), "wall_s": round(wall, 2),
            "live_llm_s": round(sum(c.latency_s for c in calls if not c.cached), 2), "by_role": roles,
            "recorded_failures": len(getattr(method, "failures_", []) or [])}


def _div(a, b):
    return round(a / b, 3) if b else None


def ratio(rec: dict, other: dict) -> dict:
    """RecMem's construction tokens and calls over another method's (None where the other made none)."""
    ok = rec["status"] == "ok" and other["status"] == "ok"
    return {"token_ratio": _div(rec["total_tokens"], other["total_tokens"]) if ok else None,
            "call_ratio": _div(rec["calls"], other["calls"]) if ok else None,
            "token_saving_pct": round(100 * (1 - rec["total_tokens"] / other["total_tokens"]), 1)
            if ok and other["total_tokens"] else None,
            "status": "ok" if ok else f"not comparable ({rec['status']} / {other['status']})"}


def compare(conv, llm, embedder, label: str, *, methods=METHODS,
            llms: dict | None = None) -> dict:
    """Build each method on ``conv`` (``llms`` maps a method to its own LLM/cassette, else ``llm``)."""
    from workbench.methods.common import exchanges

    rows = {name: build(name, conv, (llms or {}).get(name, llm), embedder) for name in methods}
    n_ex = sum(len(exchanges(s)) for s in conv.sessions)
    for r in rows.values():  # only from calls that were made (a cassette miss has no real cost)
        r["tokens_per_exchange"] = _div(r["total_tokens"], n_ex) if r["status"] == "ok" else None
    floor = next((n for n in FLOOR_NAMES if n in rows), None)
    out = {"input": label, "turns": len(conv.turns), "sessions": len(conv.sessions), "exchanges": n_ex,
           "exchanges_eager": rows[floor]["by_role"].get(f"{floor}.extract", {}).get("calls") if floor else None,
           "floor_method": floor, "methods": rows}
    if "recmem" in rows and floor:
        out["recmem_vs_floor"] = ratio(rows["recmem"], rows[floor])
        out["recmem_vs_eager_facts"] = out["recmem_vs_floor"]  # the old key, for readers of earlier results
    if "recmem" in rows and "mem0_style" in rows:
        out["recmem_vs_mem0_style"] = ratio(rows["recmem"], rows["mem0_style"])
    for r in rows.values():
        print(f"{label} {r['method']}: {r['status']} calls={r['calls']} tokens={r['total_tokens']} "
              f"failed={r['failed_calls']} live={r['live_calls']} wall={r['wall_s']}s", flush=True)
    return out


def first_exchanges(conv, n: int | None):
    """``conv`` cut after its first ``n`` exchanges (whole exchanges; sessions after the cut dropped)."""
    from workbench.methods.common import exchanges

    if n is None:
        return conv
    sessions, left = [], n
    for s in conv.sessions:
        if left <= 0:
            break
        ex = exchanges(s)[:left]
        left -= len(ex)
        sessions.append(replace(s, turns=tuple(t for e in ex for t in e)))
    return replace(conv, sessions=tuple(sessions), qa=())


def run(*, live: bool = False, sessions: int = 2, only=None, results_dir: Path = RESULTS, methods=None,
        sample_exchanges: int | None = SAMPLE_EXCHANGES) -> dict:
    """``sample_exchanges``: build the sample from the first N exchanges of the demo slice only (every
    method is streaming, so their calls are a prefix of the full slice's and still replay)."""
    from workbench.demo import demo_conversation, demo_embedder

    profile = _profile()
    embedder = demo_embedder()
    out: dict = {"live": live, "note": "construction calls only (no questions); Mem0Style = Mem0's pipeline shape "
                                      "(per-speaker extraction + ADD/UPDATE/DELETE/NONE per fact); floor = "
                                      "EagerFloor, one extraction call per exchange"}
    inner = None
    if live:
        inner = _prefix_friendly_llm()
    if only in (None, "sample"):
        names = methods or METHODS
        demo = _llm(profile.cassette, False)
        conv = demo_conversation(profile)
        conv = first_exchanges(conv, sample_exchanges)
        label = f"sample (first {sample_exchanges} exchanges of the demo slice)" if sample_exchanges else "sample"
        mem0_llm = _llm(MEM0_SAMPLE_CASSETTE, live, inner, model=demo.model)
        out["sample"] = compare(conv, demo, embedder, label, methods=names, llms={"mem0_style": mem0_llm})
        if sample_exchanges and not live:
            # RecMem defers its calls, so a short cut says little about it: the whole slice too, with
            # Mem0Style's cost per exchange (measured on the recorded cut) as the reference estimate
            full = compare(demo_conversation(profile), demo, embedder, "sample (whole demo slice)",
                           methods=[n for n in names if n != "mem0_style"])
            m0 = out["sample"]["methods"].get("mem0_style", {})
            if m0.get("status") == "ok" and m0.get("tokens_per_exchange"):
                full["recmem_vs_mem0_style_per_exchange_estimate"] = {
                    "token_ratio": _div(full["methods"]["recmem"]["tokens_per_exchange"], m0["tokens_per_exchange"]),
                    "mem0_style_tokens_per_exchange": m0["tokens_per_exchange"],
                    "basis": f"Mem0Style measured on the first {sample_exchanges} exchanges only"}
            out["sample_full"] = full
    if only in (None, "locomo"):
        if not LOCOMO.exists():
            out["locomo"] = {"status": f"skipped: {LOCOMO.name} not found beside the project"}
        elif not live and not LOCOMO_CASSETTE.exists():
            out["locomo"] = {"status": f"skipped: no cassette {LOCOMO_CASSETTE.name}; record it with --live"}
        else:
            conv = locomo_slice(sessions)
            out["locomo"] = compare(conv, _llm(LOCOMO_CASSETTE, live, inner), embedder, f"locomo {conv.id}",
                                    methods=methods or METHODS)
            out["locomo"].update(conversation=conv.id, sessions_used=sessions)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "construction.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--live", action="store_true", help="run the offline model for calls missing from the cassette")
    ap.add_argument("--sessions", type=int, default=2, help="LoCoMo sessions to build from (default 2)")
    ap.add_argument("--only", choices=["sample", "locomo"])
    ap.add_argument("--methods", nargs="*", default=None, help="subset of methods (default: all three)")
    ap.add_argument("--sample-exchanges", type=int, default=SAMPLE_EXCHANGES,
                    help=f"exchanges of the demo slice to build (default {SAMPLE_EXCHANGES}: as far as Mem0Style is "
                         "recorded)")
    a = ap.parse_args(argv)
    run(live=a.live, sessions=a.sessions, only=a.only, methods=a.methods, sample_exchanges=a.sample_exchanges)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
