"""Prompt-prefix reuse with the offline model: prompt tokens evaluated / prompt tokens sent, per method.

llama-cpp-python keeps the KV cache of the previous call and evaluates only what follows the
longest common prefix with it; ``LlamaCpp(state_cache_mb=...)`` also keeps earlier prefix states in
RAM (``LlamaRAMCache``). Which of the two helps depends on the call order: Full-Context's prompts
share the whole conversation, so consecutive answers re-evaluate only the question; with the judge
in between, the judge's prompt evicts that prefix and only the RAM state cache brings it back.

A small live run (replays from a cassette evaluate nothing, so they cannot measure this): each
method answers ``--questions`` questions of ``--data`` with the LoCoMo judge on the same model, once
with the KV reuse alone (``kv``) and once with a RAM state cache (``kv+ram``), each in a fresh
model. ``LlamaCpp.prefix_stats`` counts per role the prompt tokens llama.cpp was sent and those it
actually evaluated (the first ``eval`` of each completion). No cassette: every call runs.

Writes benchmarks/results/prefix_reuse.json.
Usage: python -m benchmarks.bench_prefix_reuse [--data tiny] [--methods full_context naive_rag] [--questions 3]
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def role_method(role: str) -> str:
    """``full_context.answer`` -> ``full_context``; ``judge.locomo`` -> ``judge``."""
    return role.split(".")[0] or "(no role)"


def ratio(evaluated: int, sent: int) -> float | None:
    return round(evaluated / sent, 4) if sent else None


def group_by_method(sessions) -> tuple[dict, dict]:
    """Per-role ``{calls, sent, evaluated}`` figures of one or more sessions summed by call group (the role's
    method, or ``judge``), each with its ratio, and the total over all groups."""
    groups: dict[str, dict] = {}
    for by_role in sessions:
        for role, s in by_role.items():
            g = groups.setdefault(role_method(role), {"calls": 0, "sent": 0, "evaluated": 0})
            for k in g:
                g[k] += int(s.get(k) or 0)
    for g in groups.values():
        g["ratio"] = ratio(g["evaluated"], g["sent"])
    total = {k: sum(g[k] for g in groups.values()) for k in ("calls", "sent", "evaluated")}
    return groups, {**total, "ratio": ratio(total["evaluated"], total["sent"])}


def run_mode(args, state_cache_mb: int, out: dict, save) -> None:
    from workbench.cli import build_method, make_embedder
    from workbench.data import load_dataset
    from workbench.eval import LLMJudge, evaluate
    from workbench.llm.default import local_llm

    dataset = load_dataset(args.data)
    for name in args.methods:
        llm = local_llm(args.model, state_cache_mb=state_cache_mb)  # a fresh model: no state from the last method
        method = build_method(name, llm, make_embedder(args.embedder), {})
        start = time.perf_counter()
        res = evaluate(method, dataset, judge=LLMJudge(llm), questions=args.questions,
                       conversations=args.conversations, progress=False)
        wall = time.perf_counter() - start
        by_role = {role: dict(s, ratio=ratio(s["evaluated"], s["sent"])) for role, s in llm.prefix_stats.items()}
        groups, total = group_by_method([llm.prefix_stats])
        out[name] = {"questions": len(res), "errors": len(res.errors), "wall_s": round(wall, 1),
                     "all_calls": total, "by_group": groups, "by_role": by_role}
        print(f"  {name:<14} {state_cache_mb and 'kv+ram' or 'kv':<7} evaluated/sent {total['evaluated']}/"
              f"{total['sent']} = {total['ratio']}  ({wall:.0f} s)", flush=True)
        save()
        llm._llama = None  # free the model before the next one loads


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="tiny")
    ap.add_argument("--conversations", default="0")
    ap.add_argument("--methods", nargs="+", default=["full_context", "naive_rag"])
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--state-cache-mb", type=int, default=1024)
    ap.add_argument("--modes", nargs="+", default=["kv", "kv+ram"], choices=["kv", "kv+ram"])
    ap.add_argument("--out", default=str(RESULTS / "prefix_reuse.json"))
    args = ap.parse_args(argv)
    modes: dict[str, dict] = {}
    result = {
        "benchmark": "prefix_reuse", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpu_count": __import__("os").cpu_count()},
        "model": args.model, "data": args.data, "conversations": args.conversations,
        "questions_per_method": args.questions, "judge": "LLMJudge on the same model (its calls count as 'judge')",
        "state_cache_mb": args.state_cache_mb,
        "ratio": "prompt tokens llama.cpp evaluated / prompt tokens sent (1.0 = no reuse)",
        "modes": modes,
    }
    for label, mb in (("kv", 0), ("kv+ram", args.state_cache_mb)):
        if label not in args.modes:
            continue
        print(f"mode {label}", flush=True)
        modes[label] = {}
        run_mode(args, mb, modes[label], lambda: write(args.out, result))  # written after every method
    print(f"-> {args.out}")
    return 0


def write(path: str, result: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
