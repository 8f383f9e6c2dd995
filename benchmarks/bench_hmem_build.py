"""H-Mem index build without a language model: tree and graph build time and sizes per 100 turns.

A ``ScriptedLLM`` answers every construction call deterministically from the prompt text
(events = one sentence per turn naming the speaker and the turn's content words; entities = the
speaker and capitalised words; relations = speaker -mentions-> word; summaries = the children's
notes clipped; profiles = first and last mention), and ``HashEmbedder`` embeds. What is measured is
therefore the method's own machinery: tree insertion (window bucketing, similarity, propagation),
entity resolution (normalisation, token overlap, difflib), overlap repair and bookkeeping.
The alpha schedules are the paper's default, conservative and aggressive ones (App. A.2).

Writes benchmarks/results/hmem_build.json. Usage: python -m benchmarks.bench_hmem_build [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import time
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SCHEDULES = {"default": (0.8, 0.7, 0.6), "conservative": (0.9, 0.8, 0.7), "aggressive": (0.7, 0.6, 0.5)}
_STOP = set("""a an the and or but so to of in on at for with from is are was were be been am i you he she it we they
my your his her our their me him us them this that these those what how why when where who do did does have has had
just really very too also not no yes oh wow hi hey ok okay there here then than as if""".split())


def _content_words(text: str, n: int = 4) -> list[str]:
    return [w for w in re.findall(r"[a-z']+", text.lower()) if w not in _STOP and len(w) > 2][:n]


def extract(messages) -> str:
    body = messages[0]["content"].split("\n\n")[1]
    events, ents, rels = [], [], []
    for line in body.splitlines():
        m = re.match(r"^([\w .'-]+?): (.+)$", line)
        if not m:
            continue
        speaker, text = m.groups()
        words = _content_words(text)
        if words:
            events.append({"text": f"{speaker} talked about {' '.join(words)}."})
        ents.append({"name": speaker, "type": "person"})
        for name in re.findall(r"(?<=\s)[A-Z][a-z]{2,}(?:\s[A-Z][a-z]{2,})*", text):
            ents.append({"name": name, "type": "other"})
            rels.append({"source": speaker, "relation": "mentions", "target": name})
    return json.dumps({"events": events, "entities": ents, "relations": rels})


def consolidate(messages) -> str:
    notes = [ln.split("] ", 1)[-1] for ln in messages[0]["content"].splitlines() if ln.startswith("- [")]
    return json.dumps({"summary": " ".join(" ".join(notes).split()[:40])})


def profile(messages) -> str:
    mentions = [ln[2:] for ln in messages[0]["content"].splitlines() if ln.startswith("- ")]
    return json.dumps({"persistent": mentions[0] if mentions else "", "recent": mentions[-1] if mentions else ""})


def build_once(conv, **params) -> dict:
    from workbench.embed import HashEmbedder
    from workbench.llm import ScriptedLLM
    from workbench.methods.hmem import HMem

    llm = ScriptedLLM({"hmem.extract": extract, "hmem.consolidate": consolidate, "hmem.profile": profile})
    start = time.perf_counter()
    m = HMem(llm=llm, embedder=HashEmbedder(dim=256), **params).ingest(conv)
    seconds = time.perf_counter() - start
    levels = Counter(n["level"] for n in m.tree_nodes())
    g = m.graph_
    kinds = Counter(d["kind"] for _, _, d in g.edges(data=True))
    return {"seconds": seconds, "turns": len(conv.turns), "fragments": len(m.fragments_),
            "llm_calls": Counter(llm.roles()), "levels": {f"L{k}": levels[k] for k in sorted(levels)},
            "l_max": m.tree_.l_max, "entities": g.number_of_nodes(), "relation_edges": kinds.get("relation", 0),
            "overlap_edges": kinds.get("overlap", 0), "merges": sum(e.kind == "MERGE" for e in m.events),
            "profiles": len(m.profiles_), "failures": len(m.failures_)}


def per_100(rows: list[dict]) -> dict:
    turns = sum(r["turns"] for r in rows)
    scale = 100.0 / turns
    level_names = sorted({k for r in rows for k in r["levels"]})
    calls = Counter()
    for r in rows:
        calls.update(r["llm_calls"])
    return {"turns": turns, "build_seconds": round(sum(r["seconds"] for r in rows) * scale, 4),
            "fragments": round(sum(r["fragments"] for r in rows) * scale, 2),
            "nodes": {k: round(sum(r["levels"].get(k, 0) for r in rows) * scale, 2) for k in level_names},
            "entities": round(sum(r["entities"] for r in rows) * scale, 2),
            "relation_edges": round(sum(r["relation_edges"] for r in rows) * scale, 2),
            "overlap_edges": round(sum(r["overlap_edges"] for r in rows) * scale, 2),
            "merges": round(sum(r["merges"] for r in rows) * scale, 2),
            "llm_calls": {k: round(v * scale, 2) for k, v in sorted(calls.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="builds per setting; the fastest is reported")
    args = parser.parse_args()
    from workbench.data import load_sample

    convs = list(load_sample())
    settings = {f"fragment={frag},alphas={name}": {"fragment": frag, "alphas": alphas}
                for frag in ("window", "turn") for name, alphas in SCHEDULES.items()}
    out = {"data": [c.id for c in convs], "llm": "ScriptedLLM (synthetic, deterministic)", "embedder": "hash-256",
           "python": platform.python_version(), "machine": platform.machine(), "repeats": args.repeats,
           "per_100_turns": {}, "per_conversation": {}}
    for label, params in settings.items():
        best = None
        for _ in range(args.repeats):
            rows = [build_once(c, **params) for c in convs]
            if best is None or sum(r["seconds"] for r in rows) < sum(r["seconds"] for r in best):
                best = rows
        out["per_100_turns"][label] = per_100(best)
        out["per_conversation"][label] = [{**r, "seconds": round(r["seconds"], 4), "llm_calls": dict(r["llm_calls"])}
                                          for r in best]
        print(label, json.dumps(out["per_100_turns"][label]))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hmem_build.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS / 'hmem_build.json'}")


if __name__ == "__main__":
    main()
