"""Estimator error: how far ``workbench eval --estimate`` is from the calls and tokens a run spends.

Two checks on the demo slice, every call replayed from the committed cassette (no model needed):

1. *in sample*: the committed cost profiles (``sample_data/cost_profiles.json``) against a fresh
   replay of the six demo questions, per method and phase. Near zero unless a method or prompt
   changed since the profiles were fitted (then: ``python -m workbench.demo_profiles --refit``).
2. *held out* (query and judge phases): profiles fitted on three demo questions predict the other
   three, both ways round. Construction cannot be held out here: the cassette covers one slice.

Wall time is not checked here (a replay has no live calls); each run's ``results.costs.jsonl`` keeps
the estimate beside the live seconds spent, and the latency model is refitted from those.

Writes benchmarks/results/estimate.json. Usage: python -m benchmarks.bench_estimate [--methods ...]
"""
from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _spent(profiles: dict) -> dict:
    out: dict = {}
    for name, p in profiles["methods"].items():
        for r in p["roles"]:
            c = out.setdefault(name, {}).setdefault(r["phase"], {"calls": 0, "tokens": 0})
            c["calls"] += r["calls"]
            c["tokens"] += r["prompt_tokens"] + r["completion_tokens"]
    return out


def _predicted(profiles: dict, methods, questions) -> dict:
    from workbench.demo import demo_dataset, demo_methods
    from workbench.eval import LLMJudge
    from workbench.eval.estimate import estimate_run
    from workbench.eval.harness import select
    from workbench.llm import ScriptedLLM

    llm = ScriptedLLM([], model=profiles.get("fitted_on", {}).get("model", "scripted"))
    plan = select(demo_dataset(), questions=list(questions))
    return {name: {ph: {"calls": p.calls, "tokens": p.tokens} for ph, p in
                   estimate_run(m, plan, llm=llm, judge=LLMJudge(llm), profiles=profiles).phases.items()}
            for name, m in demo_methods(llm, None, methods).items()}


def _errors(pred: dict, spent: dict, phases=None) -> dict:
    out = {}
    for name, per in spent.items():
        for ph, s in per.items():
            if phases and ph not in phases:
                continue
            e = pred[name][ph]
            out.setdefault(name, {})[ph] = {k: round(e[k] / s[k] - 1, 3) if s[k] else None for k in ("calls", "tokens")}
    return out


def run(methods=None) -> dict:
    from workbench.demo import DEMO
    from workbench.demo_profiles import fit_profiles
    from workbench.eval.estimate import load_profiles

    full = fit_profiles(methods=methods)
    in_sample = _errors(_predicted(load_profiles(), methods, DEMO.questions), _spent(full))
    halves = (DEMO.questions[:3], DEMO.questions[3:])
    fitted = [fit_profiles(methods=methods, questions=h) for h in halves]
    held_out = {}
    for k, (fit, other) in enumerate(((fitted[0], halves[1]), (fitted[1], halves[0]))):
        held_out[f"fit_on_half_{k + 1}"] = _errors(_predicted(fit, methods, other), _spent(fitted[1 - k]),
                                                   phases=("query", "judge"))
    worst = max((abs(v) for part in held_out.values() for per in part.values() for ph in per.values()
                 for v in ph.values() if v is not None), default=None)
    return {"benchmark": "estimate", "date": datetime.now().isoformat(timespec="seconds"),
            "relative_error": "estimate / replayed - 1", "in_sample": in_sample, "held_out": held_out,
            "held_out_worst_abs_error": worst, "profiles_fitted_on": full["fitted_on"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="*", default=None)
    ap.add_argument("--out", default=str(RESULTS / "estimate.json"))
    a = ap.parse_args(argv)
    result = run(a.methods)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"in_sample": result["in_sample"], "held_out": result["held_out"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
