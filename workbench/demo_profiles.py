"""Fitting the cost profiles of ``workbench.eval.estimate`` from a replay of the demo.

It lives above ``workbench.eval`` (beside ``workbench.demo``) because it runs the harness over the
demo slice; the estimate itself only reads the fitted ``cost_profiles.json``.
``python -m workbench.demo_profiles --refit`` rewrites that file after a re-recording.
"""
from __future__ import annotations

import json
from pathlib import Path

from .eval.estimate import PHASES, PROFILES_PATH, _rounded, conversation_tokens, role_unit, structure


def fit_profiles(cassette=None, *, methods=None, questions=None) -> dict:
    """Replay the demo from the cassette and turn each method's ledger into per-unit rates.

    ``questions``: the demo question ids to replay (default all: a subset lets a test fit on some
    questions and predict the others). Every call of the replay counts (a replay miss is recorded
    as a failed call by the ledger and reported under ``misses``: refit after re-recording)."""
    from .demo import DEMO, demo_dataset, demo_embedder, demo_llm, demo_methods
    from .eval.harness import evaluate, select
    from .eval.judge import LLMJudge

    cassette = Path(cassette or DEMO.cassette)
    data = demo_dataset()
    qids = list(questions or DEMO.questions)
    plan = select(data, questions=qids)
    units = structure(plan)
    llm, judge_llm = demo_llm(mode="replay", cassette=cassette), demo_llm(mode="replay", cassette=cassette)
    judge = LLMJudge(judge_llm)
    embedder = demo_embedder()
    out = {"fitted_on": {"cassette": cassette.name, "model": llm.model, "data": "demo slice (workbench.demo)",
                         **units, "conversation_tokens": conversation_tokens(data[0])},
           "how": "calls, prompt and completion tokens of a replayed demo run, per (phase, role), divided by the "
                  "role's unit: construct roles by turns (a method's per_session_roles: by sessions), "
                  "query roles by questions, "
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


def fit_construction_variant(cassette, conversation, method: str, when: dict, *, base: dict) -> dict:
    """A construction profile for ``method`` under other parameters (``when``, e.g. H-Mem with the
    paper's one-message fragments), fitted on a recording of its construction that may be partial
    (a long recording stopped midway): the calls of ``method``'s construction roles (those ``base``,
    its demo profile, lists as ``construct``, with their repairs and retries) divided by the turns and
    sessions the recording covered. Covered turns are read from the prompts: up to the last turn of
    ``conversation`` whose text a construction prompt quotes. The estimate prices construction with
    it when a method's parameters match ``when``; query and judge calls still come from ``base``."""
    from .jsonl import read_jsonl
    from .llm.cache import check_entry

    construct = {r["role"].split(".repair")[0].split(".retry")[0] for r in base["roles"] if r["phase"] == "construct"}
    rows = [r for r in read_jsonl(cassette, check=check_entry).rows
            if str(r.get("role", "")).split(".repair")[0].split(".retry")[0] in construct]
    if not rows:
        raise ValueError(f"{cassette}: no {method} construction calls ({sorted(construct)})")
    # the turns are quoted by a per-turn role's prompts (H-Mem: its extraction); per role, the last turn
    # quoted; the furthest wins. Short texts ("Thanks!") would match by chance: only 20+ characters count.
    per_turn = {r["role"] for r in base["roles"] if r["phase"] == "construct" and r["unit"] == "turns"
                and ".repair" not in r["role"] and ".retry" not in r["role"]}
    turns = list(conversation.turns)

    def last_quoted(role: str) -> int:
        prompts = "\n".join(str(m.get("content", "")) for r in rows if r["role"] == role
                            for m in r.get("messages") or [] if isinstance(m, dict))
        return max((i + 1 for i, t in enumerate(turns) if len(t.text or "") >= 20 and t.text in prompts), default=0)

    covered = max((last_quoted(role) for role in sorted(per_turn)), default=0)
    if not covered:
        raise ValueError(f"{cassette}: no turn of {conversation.id} is quoted by its construction prompts")
    last = turns[covered - 1].id
    sessions = next(i + 1 for i, s in enumerate(conversation.sessions) if any(t.id == last for t in s.turns))
    units = {"turns": covered, "sessions": sessions}
    roles: dict = {}
    for r in rows:
        role = r["role"]
        agg = roles.setdefault(role, {"phase": "construct", "role": role, "unit": _unit("construct", role),
                                      "calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        agg["calls"] += 1
        agg["prompt_tokens"] += r["prompt_tokens"]
        agg["completion_tokens"] += r["completion_tokens"]
    for r in roles.values():
        r.update(calls_per_unit=r["calls"] / units[r["unit"]], prompt_tokens_per_call=r["prompt_tokens"] / r["calls"],
                 completion_tokens_per_call=r["completion_tokens"] / r["calls"])
    models = sorted({str(r.get("model")) for r in rows})
    return _rounded({"when": dict(when), "roles": sorted(roles.values(), key=lambda r: r["role"]),
                     "fitted_on": {"cassette": Path(cassette).name, "model": ", ".join(models),
                                   "conversation": conversation.id, "turns_covered": covered,
                                   "sessions_covered": sessions, "calls": len(rows)}})


def _unit(phase: str, role: str) -> str:
    if phase == "construct":
        return role_unit(role)
    return "judged" if phase == "judge" else "questions"


def main(argv=None) -> int:
    """``python -m workbench.demo_profiles --refit``: rewrite cost_profiles.json from the demo cassette."""
    import argparse

    ap = argparse.ArgumentParser(description="refit the cost profiles from the committed demo cassette")
    ap.add_argument("--refit", action="store_true")
    ap.add_argument("--cassette", default=None)
    ap.add_argument("--out", default=str(PROFILES_PATH))
    ap.add_argument("--variant", metavar="METHOD", help="fit METHOD's construction under other parameters from "
                    "--cassette (a recording of one LoCoMo conversation, possibly partial) and add it to --out")
    ap.add_argument("--when", nargs="*", default=(), metavar="PARAM=VALUE", help="--variant: the parameters it is for")
    ap.add_argument("--locomo", default=None, help="--variant: the LoCoMo file holding the recorded conversation")
    ap.add_argument("--conversation", default=None, help="--variant: the recorded conversation's id")
    a = ap.parse_args(argv)
    if a.variant:
        return _add_variant(a)
    if not a.refit:
        ap.print_help()
        return 0
    prof = fit_profiles(a.cassette)
    _keep_variants(prof, Path(a.out))
    Path(a.out).write_text(json.dumps(prof, indent=1, sort_keys=True) + "\n")
    misses = {m: sum(r["misses"] for r in p["roles"]) for m, p in prof["methods"].items()}
    print(f"wrote {a.out}; replay misses per method: {misses}")
    return 0


def _keep_variants(prof: dict, old_path: Path) -> None:
    """Carry each method's construction ``variants`` over from the file being rewritten: they were fitted
    on other recordings (``--variant``), which a refit from the demo cassette cannot redo."""
    if not old_path.is_file():
        return
    old = json.loads(old_path.read_text()).get("methods", {})
    for name, entry in prof["methods"].items():
        kept = (old.get(name) or {}).get("variants")
        if kept:
            entry["variants"] = kept


def _add_variant(a) -> int:
    from .data import load_locomo

    if not (a.cassette and a.locomo and a.conversation and a.when):
        raise SystemExit("--variant needs --cassette, --locomo, --conversation and --when")
    when = dict(w.split("=", 1) for w in a.when)
    conv = next((c for c in load_locomo(a.locomo).conversations if c.id == a.conversation), None)
    if conv is None:
        raise SystemExit(f"{a.locomo}: no conversation {a.conversation!r}")
    profiles = json.loads(Path(a.out).read_text())
    base = profiles["methods"][a.variant]
    variant = fit_construction_variant(a.cassette, conv, a.variant, when, base=base)
    base["variants"] = [v for v in base.get("variants", []) if v.get("when") != when] + [variant]
    Path(a.out).write_text(json.dumps(profiles, indent=1, sort_keys=True) + "\n")
    calls = sum(r["calls_per_unit"] * len(conv.turns) for r in variant["roles"] if r["unit"] == "turns")
    print(f"added {a.variant} construction for {when} to {a.out}: fitted on {variant['fitted_on']}; "
          f"~{calls:,.0f} per-turn calls for the whole of {conv.id} ({len(conv.turns)} turns)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
