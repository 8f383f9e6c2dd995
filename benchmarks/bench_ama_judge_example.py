"""Does the JSON example in AMA's Judge prompts (``"Action": "Pass"``) bias a small model toward Pass?

A handful of direct calls to the offline model (no memory build): the ingestion Judge
(``JUDGE_INGEST``) on turns that do / do not contradict a stored entry, and the question Judge
(``JUDGE``) on candidate sets that are sufficient, insufficient or conflicting. Each case is asked
twice: with the prompt's example as it was (``"Action": "Pass"``) and with a neutral example that
names no verdict (``"Action": "<Refresh, Retry or Pass>"``). Writes the verdicts, accuracy and Pass
share per variant to ``results/ama_judge_example.json``.

    PYTHONPATH=. python benchmarks/bench_ama_judge_example.py [--model qwen2.5-coder-0.5b] [--limit N]
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from workbench.llm.errors import LLMError
from workbench.methods.ama import prompts as P
from workbench.methods.ama.agents import entries_block
from workbench.methods.store import MemoryUnit

OUT = Path(__file__).resolve().parent / "results" / "ama_judge_example.json"

# The two examples compared: the earlier prompts' (biased?) one and a neutral one.
PASS_EXAMPLE_INGEST = '{"Action": "Pass", "reason": "...", "confidence": 0.0 to 1.0, "conflict_ids": []}'
PASS_EXAMPLE_QUERY = ('{"Action": "Pass", "reason": "...", "confidence": 0.0 to 1.0, "relevant_ids": [], '
                      '"conflict_ids": []}')

# (stored entry, speaker, new turn, expected verdict)
INGEST_CASES = [
    ("Noor lives in Lyon", "Noor", "Big news: I moved to Geneva last week.", "Refresh"),
    ("Tomasz's greyhound is named Biscuit", "Tomasz", "We renamed Biscuit, he answers to Pilot now.", "Refresh"),
    ("Priya works as a nurse at St Mary's hospital", "Priya", "I left the hospital, I teach chemistry now.", "Refresh"),
    ("Sam's wedding is planned for June 2024", "Sam", "We pushed the wedding back to September 2024.", "Refresh"),
    ("Sam's locker code is 4471", "Sam", "Please forget my locker code, I changed it.", "Refresh"),
    ("Noor lives in Lyon", "Noor", "I started violin lessons on Tuesday.", "Pass"),
    ("Tomasz plays bass in The Low Tides", "Tomasz", "We have a gig on Friday at the Crown.", "Pass"),
    ("Priya got the keys to her allotment in March 2023", "Priya", "I planted tomatoes there today.", "Pass"),
    ("Sam adopted a grey kitten called Miso", "Sam", "Miso broke my favourite mug this morning.", "Pass"),
    ("Noor works at the history museum", "Noor", "The museum opens a new wing next month.", "Pass"),
]

# (entries, question, expected verdict)
QUERY_CASES = [
    (["Noor lives in Geneva"], "Where does Noor live?", "Pass"),
    (["Tomasz plays bass in The Low Tides"], "What instrument does Tomasz play?", "Pass"),
    (["Priya got the keys to her allotment on 11 March 2023"], "When did Priya get her allotment keys?", "Pass"),
    (["Noor likes hiking in the mountains"], "Where does Noor live?", "Retry"),
    (["Tomasz went to a gig with friends"], "When did Tomasz pick up his greyhound?", "Retry"),
    (["Priya grows tomatoes"], "What is Priya's job?", "Retry"),
    (["Noor lives in Lyon", "Noor lives in Geneva"], "Where does Noor live?", "Refresh"),
    (["Tomasz's greyhound is named Biscuit", "Tomasz's greyhound is named Pilot"], "What is the greyhound called?",
     "Refresh"),
    (["Priya works as a nurse", "Priya works as a chemistry teacher"], "What is Priya's job?", "Refresh"),
]


def _interleave(cases: list) -> list:
    """Cases alternating by expected verdict, so that ``--limit`` keeps every class."""
    groups: dict = {}
    for c in cases:
        groups.setdefault(c[-1], []).append(c)
    out = []
    while any(groups.values()):
        for g in groups.values():
            if g:
                out.append(g.pop(0))
    return out


def units(texts: list[str]) -> list[MemoryUnit]:
    return [MemoryUnit(f"fact:{i}", "fact", t, (f"D1:{i + 1}",), "2023-06-05T09:00:00",
                       {"said_at": "2023-06-05T09:00:00"}) for i, t in enumerate(texts)]


def variants(template: str, pass_example: str) -> dict[str, str]:
    """The template with its example as shipped, with the old Pass example, and with a neutral one."""
    neutral = pass_example.replace('"Pass"', '"<Refresh, Retry or Pass>"' if "relevant_ids" in pass_example
                                   else '"<Refresh or Pass>"')
    current = template
    for example in (pass_example, neutral):
        current = current.replace(example.replace("{", "{{").replace("}", "}}"), "{example}")
    assert "{example}" in current, "the prompt's JSON example was not found"
    return {"pass_example": current.replace("{example}", pass_example.replace("{", "{{").replace("}", "}}")),
            "neutral_example": current.replace("{example}", neutral.replace("{", "{{").replace("}", "}}"))}


def _verdict(llm, prompt: str, schema: dict, role: str) -> str:
    try:
        return llm.complete(prompt, schema=schema, role=role).parsed["Action"]
    except LLMError as exc:  # recorded as its own outcome, never as a verdict
        return f"error: {type(exc).__name__}"


def run(llm, *, limit: int | None = None) -> dict:
    """Both variants of each case one after the other, so a cut-short run still pairs them."""
    out: dict = {"model": llm.model, "ingest": {}, "query": {}}
    rows: dict = {("ingest", v): [] for v in ("pass_example", "neutral_example")}
    rows.update({("query", v): [] for v in ("pass_example", "neutral_example")})
    ingest = variants(P.JUDGE_INGEST, PASS_EXAMPLE_INGEST)
    query = variants(P.JUDGE, PASS_EXAMPLE_QUERY)
    for stored, speaker, text, expected in _interleave(INGEST_CASES)[:limit]:
        for variant, template in ingest.items():
            prompt = template.format(information=entries_block(units([stored])), date="20 June 2023",
                                     speaker=speaker, text=text, facts="(none)")
            got = _verdict(llm, prompt, P.JUDGE_INGEST_SCHEMA, "bench.judge_ingest")
            rows[("ingest", variant)].append({"stored": stored, "turn": text, "expected": expected, "verdict": got})
            print(f"ingest {variant:16} expected {expected:8} got {got}", flush=True)
    for texts, question, expected in _interleave(QUERY_CASES)[:limit]:
        for variant, template in query.items():
            prompt = template.format(information=entries_block(units(texts)), user_input=question)
            got = _verdict(llm, prompt, P.JUDGE_SCHEMA, "bench.judge")
            rows[("query", variant)].append({"entries": texts, "question": question, "expected": expected,
                                             "verdict": got})
            print(f"query  {variant:16} expected {expected:8} got {got}", flush=True)
    for (phase, variant), rs in rows.items():
        out[phase][variant] = summarise(rs)
    return out


def summarise(rows: list[dict]) -> dict:
    n = len(rows) or 1
    return {"n": len(rows), "accuracy": sum(r["verdict"] == r["expected"] for r in rows) / n,
            "pass_share": sum(r["verdict"] == "Pass" for r in rows) / n,
            "verdicts": dict(Counter(r["verdict"] for r in rows)), "cases": rows}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="installed offline model name (default: the installed one)")
    parser.add_argument("--limit", type=int, default=None, help="at most this many cases per phase")
    parser.add_argument("--max-tokens", type=int, default=160, help="reply length cap (the verdict comes first)")
    args = parser.parse_args(argv)
    from workbench.llm.default import local_llm

    result = run(local_llm(args.model, max_tokens=args.max_tokens), limit=args.limit)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    for phase in ("ingest", "query"):
        for variant, s in result[phase].items():
            print(f"{phase:6} {variant:16} accuracy {s['accuracy']:.2f}  "
                  f"Pass share {s['pass_share']:.2f}  {s['verdicts']}")


if __name__ == "__main__":
    main()
