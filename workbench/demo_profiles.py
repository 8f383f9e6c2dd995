"""Fitting the cost profiles of ``workbench.eval.estimate`` from a replay of the demo.

It lives above ``workbench.eval`` (beside ``workbench.demo``) because it runs the harness over the
demo slice; the estimate itself only reads the fitted ``cost_profiles.json``.
``python -m workbench.demo_profiles --refit`` rewrites that file after a re-recording.
"""
from __future__ import annotations

import json
from pathlib import Path

from .eval.estimate import PHASES, PROFILES_PATH, ROLE_UNITS, _rounded, conversation_tokens, structure


def fit_profiles(cassette=None, *, methods=None, questions=None) -> dict:
    """Replay the demo from the cassette and turn each method's ledger into per-unit rates.

    ``questions``: the demo question ids to replay (default all: a subset lets a test fit on some
    questions and predict the others). Every call of the replay counts (a replay miss is recorded
    as a failed call by the ledger and reported under ``misses``: refit after re-recording)."""
    from .demo import CASSETTE, DEMO_QUESTIONS, demo_dataset, demo_embedder, demo_llm, demo_methods
    from .eval.harness import evaluate, select
    from .eval.judge import LLMJudge

    cassette = Path(cassette or CASSETTE)
    data = demo_dataset()
    qids = list(questions or DEMO_QUESTIONS)
    plan = select(data, questions=qids)
    units = structure(plan)
    llm, judge_llm = demo_llm(mode="replay", cassette=cassette), demo_llm(mode="replay", cassette=cassette)
    judge = LLMJudge(judge_llm)
    embedder = demo_embedder()
    out = {"fitted_on": {"cassette": cassette.name, "model": llm.model, "data": "demo slice (workbench.demo)",
                         **units, "conversation_tokens": conversation_tokens(data[0])},
           "how": "calls, prompt and completion tokens of a replayed demo run, per (phase, role), divided by the "
                  "role's unit: construct roles by turns (ROLE_UNITS: by sessions), query roles by questions, "
                  "judge roles by judged questions", "methods": {}}
    for name, method in demo_methods(llm, embedder, methods).items():
        start, jstart = len(llm.ledger), len(judge_llm.ledger)
        evaluate(method, data, judge=judge, questions=qids, progress=False, keep_answers=False)
        calls = list(llm.ledger.calls[start:]) + list(judge_llm.ledger.calls[jstart:])
        roles: dict = {}
        for c in calls:
            phase = c.phase if c.phase in PHASES else "judge" if c.role.startswith("judge") else "query"
            unit = _unit(phase, c.role)
            r = roles.setdefault(f"{phase}:{c.role}", {"phase": phase, "role": c.role, "unit": unit,
                                                       "calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                                       "misses": 0})
            r["calls"] += 1
            r["prompt_tokens"] += c.prompt_tokens
            r["completion_tokens"] += c.completion_tokens
            r["misses"] += int(bool(c.error))
        for r in roles.values():
            n = max(1, units[r["unit"]])
            r.update(calls_per_unit=r["calls"] / n, prompt_tokens_per_call=r["prompt_tokens"] / max(1, r["calls"]),
                     completion_tokens_per_call=r["completion_tokens"] / max(1, r["calls"]))
        out["methods"][name] = {"params": method.config(), "roles": sorted(roles.values(), key=lambda r: r["role"])}
    return _rounded(out)


def _unit(phase: str, role: str) -> str:
    if phase == "construct":
        base = role.split(".repair")[0].split(".retry")[0]
        return ROLE_UNITS.get(base, "turns")
    return "judged" if phase == "judge" else "questions"


def main(argv=None) -> int:
    """``python -m workbench.demo_profiles --refit``: rewrite cost_profiles.json from the demo cassette."""
    import argparse

    ap = argparse.ArgumentParser(description="refit the cost profiles from the committed demo cassette")
    ap.add_argument("--refit", action="store_true")
    ap.add_argument("--cassette", default=None)
    ap.add_argument("--out", default=str(PROFILES_PATH))
    a = ap.parse_args(argv)
    if not a.refit:
        ap.print_help()
        return 0
    prof = fit_profiles(a.cassette)
    Path(a.out).write_text(json.dumps(prof, indent=1, sort_keys=True) + "\n")
    misses = {m: sum(r["misses"] for r in p["roles"]) for m, p in prof["methods"].items()}
    print(f"wrote {a.out}; replay misses per method: {misses}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
