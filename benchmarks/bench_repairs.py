"""What local JSON repair would have saved on the committed real-scale recordings (issue #63 item 4).

A reply the strict reading (``workbench.llm.jsonparse.extract_json`` + the schema) refuses costs the client a repair
call (the reply sent back with the error) and, when that is refused too, a retry. The authors' clients of RecMem
and MemR3 call ``json_repair`` first; ``BaseLLM.local_repair`` now does the same (on by default for API models,
off for the offline models these cassettes were recorded with, so they replay unchanged). This counts, on every
``sample_data/cassettes/locomo/*.jsonl`` (read-only), each recorded reply that was followed by a repair call, and
asks: would ``json_repair`` have made it schema-valid (``jsonparse.read_json(..., local_repair=True)``)?

- the first reply repaired locally: its repair call and its retry (if one was recorded) are saved;
- else the repair call's reply repaired locally: its retry is saved;
- else nothing is saved (e.g. a reply cut before a required key: the repaired object still lacks it).

Counted per distinct recorded call (a cassette holds each prompt once; a run that asked the same thing twice, as
judges sometimes do, paid twice) and to first order: a locally repaired reply would have changed what the method
read, so later prompts (and their own repairs) would differ. The schema is the one the call sent (the bounded
schema of ``--bounded-outputs``); its extra ``maxItems``/``maxLength`` are not checked
(``jsonparse.CHECKED_KEYWORDS``), so it validates as the method's own. The judge's calls (``judge.*``) are the
evaluation's, counted apart from the method's. For MemR3 a second figure adds its paper profile's lenient reading
(``memr3.state.LENIENT_ACCEPT``: [code] reads any JSON object with a string decision).

Writes benchmarks/results/repairs.json. Usage: python -m benchmarks.bench_repairs [--cassettes DIR] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASSETTES = ROOT / "sample_data" / "cassettes" / "locomo"
RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "repairs.json"
_SUFFIXES = (".repair", ".retry")


def _entries(path: Path) -> list[dict]:
    """The cassette's usable entries, the last one per key (as replay sees them)."""
    from workbench.jsonl import read_jsonl
    from workbench.llm.cache import check_entry

    got = read_jsonl(path, check=check_entry)
    last: dict[str, dict] = {}
    for row in got.rows:
        last.pop(row["key"], None)
        last[row["key"]] = row
    return list(last.values())


def _base(role: str) -> str:
    for suffix in _SUFFIXES:
        if role.endswith(suffix):
            return role[: -len(suffix)]
    return role


def _readable(text: str, schema, *, local: bool) -> bool:
    from workbench.llm.errors import ParseError
    from workbench.llm.jsonparse import read_json

    try:
        read_json(text, schema, local_repair=local)
    except ParseError:
        return False
    return True


def _tokens(entries) -> int:
    return sum(e["prompt_tokens"] + e["completion_tokens"] for e in entries)


_FIELDS = ("calls", "tokens", "failed_replies", "failed_at_cap", "repair_calls", "retry_calls", "fixup_tokens",
           "saved_repair_calls", "saved_retry_calls", "saved_tokens", "replies_repaired_locally")


def _blank() -> dict:
    return dict.fromkeys(_FIELDS, 0)


def _add(into: dict, other: dict) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def measure(path: Path, *, accept: dict | None = None, roles: tuple[str, ...] = ()) -> dict:
    """Per role family (``own``: the method's roles; ``judge``) in one cassette: calls, the failed replies that cost
    a repair call, the repair and retry calls and their tokens, and what local repair would have saved.
    ``accept``: validate the roles in ``roles`` against it instead of their sent schema (a method's lenient reading)."""
    from workbench.llm.llamacpp import DEFAULT_MAX_TOKENS

    entries = _entries(path)
    by_messages = defaultdict(list)  # (base role, the first call's messages) -> its retries
    firsts = {}  # (role, messages) -> the first call
    for e in entries:
        key = (_base(e["role"]), json.dumps(e["messages"], sort_keys=True))
        if e["role"].endswith(".retry"):
            by_messages[key].append(e)
        elif not e["role"].endswith(".repair"):
            firsts[key] = e
    out: dict[str, dict] = defaultdict(_blank)
    anomalies = []
    for e in entries:
        family = "judge" if e["role"].startswith("judge") else "own"
        agg = out[family]
        agg["calls"] += 1
        agg["tokens"] += _tokens([e])
        if e["role"].endswith(".retry"):
            agg["retry_calls"] += 1
            agg["fixup_tokens"] += _tokens([e])
        if not e["role"].endswith(".repair"):
            continue
        agg["repair_calls"] += 1
        agg["fixup_tokens"] += _tokens([e])
        base = _base(e["role"])
        schema = accept if accept is not None and base in roles else e["schema"]
        first_messages, first_reply = e["messages"][:-2], e["messages"][-2]["content"]
        retries = by_messages.get((base, json.dumps(first_messages, sort_keys=True)), [])
        first = firsts.get((base, json.dumps(first_messages, sort_keys=True)))
        if _readable(first_reply, schema, local=False):
            anomalies.append(f"{path.name}: a {base} reply the strict reading accepts was sent for repair")
            continue
        agg["failed_replies"] += 1
        # cut at its cap: the call's max_tokens, or the offline client's default for a call that named none
        if first is not None and first["completion_tokens"] >= (first.get("max_tokens") or DEFAULT_MAX_TOKENS):
            agg["failed_at_cap"] += 1
        if _readable(first_reply, schema, local=True):
            agg["replies_repaired_locally"] += 1
            agg["saved_repair_calls"] += 1
            agg["saved_retry_calls"] += len(retries)
            agg["saved_tokens"] += _tokens([e, *retries])
        elif retries and not _readable(e["reply"], schema, local=False) and _readable(e["reply"], schema, local=True):
            agg["replies_repaired_locally"] += 1
            agg["saved_retry_calls"] += len(retries)
            agg["saved_tokens"] += _tokens(retries)
    return {"file": path.name, "families": dict(out), "anomalies": anomalies}


def run(cassettes: Path = CASSETTES) -> dict:
    from workbench.methods.memr3.state import LENIENT_ACCEPT

    start = time.perf_counter()
    files = sorted(p for p in Path(cassettes).glob("*.jsonl") if not p.name.endswith(".partial.jsonl"))
    if not files:
        raise SystemExit(f"no cassettes in {cassettes}")
    rows, methods, anomalies = [], {}, []
    for path in files:
        method, _, conv = path.stem.partition("-")
        got = measure(path)
        row = {"method": method, "conversation": conv, "file": path.name, **got["families"]}
        if method == "memr3":  # its paper profile's reading: any JSON object with a string decision ([code])
            lenient = measure(path, accept=LENIENT_ACCEPT, roles=("memr3.router",))
            row["own_lenient_reading"] = lenient["families"].get("own", _blank())
        rows.append(row)
        anomalies += got["anomalies"]
        for family in ("own", "judge"):
            _add(methods.setdefault(method, {}).setdefault(family, _blank()), got["families"].get(family, _blank()))
        if "own_lenient_reading" in row:
            _add(methods[method].setdefault("own_lenient_reading", _blank()), row["own_lenient_reading"])
    where = Path(cassettes).resolve()
    return {"cassettes": str(where.relative_to(ROOT)) if where.is_relative_to(ROOT) else str(cassettes),
            "json_repair": _version("json_repair"),
            "per_cassette": rows, "per_method": methods, "anomalies": anomalies,
            "wall_s": round(time.perf_counter() - start, 1)}


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def markdown(data: dict | None) -> list[str]:
    """The SUMMARY.md section (``benchmarks.run_all.render``)."""
    out = ["## Local JSON repair: calls it would have saved on the real-scale recordings", ""]
    if not data:
        return out + ["(not run)", ""]
    rows = []
    for method, fam in sorted(data["per_method"].items()):
        m, j = fam.get("own", _blank()), fam.get("judge", _blank())
        convs = sorted(r["conversation"] for r in data["per_cassette"] if r["method"] == method)
        rows.append({"method": method, "convs": ", ".join(convs), "calls": m["calls"],
                     "failed": f"{m['failed_replies']} ({m['failed_at_cap']} at the cap)",
                     "fixups": f"{m['repair_calls']} + {m['retry_calls']}",
                     "fixup_tokens": f"{m['fixup_tokens']:,}",
                     "saved": f"{m['saved_repair_calls']} + {m['saved_retry_calls']}",
                     "saved_tokens": f"{m['saved_tokens']:,} ({m['saved_tokens'] / m['tokens']:.1%})" if m["tokens"]
                     else "0",
                     "judge": f"{j['saved_repair_calls']} + {j['saved_retry_calls']} of "
                              f"{j['repair_calls']} + {j['retry_calls']}"})
    own = [fam.get("own", _blank()) for fam in data["per_method"].values()]
    failed, cap = sum(m["failed_replies"] for m in own), sum(m["failed_at_cap"] for m in own)
    out += [f"Every `sample_data/cassettes/locomo/*.jsonl` (the 0.5B, output bounds on; `benchmarks/bench_repairs.py`, "
            f"json_repair {data.get('json_repair')}): each recorded reply the strict reading refused and sent back for "
            "repair, and whether `json_repair` would have made it schema-valid (the first reply: its repair and retry "
            "saved; else the repair's reply: its retry saved). Distinct recorded calls, first order (a reply "
            "repaired locally changes what later prompts hold). Calls written repair + retry; the judge's apart. "
            f"{cap} of the {failed} method replies sent for repair had run into their token cap: local repair closes "
            "such a reply, so it saves the calls, and the method then reads the text as far as it was cut (as "
            "RecMem's and MemR3's own clients would), not a better reply.", "",
            _md(rows, {"method": "method", "convs": "conversations", "calls": "method calls",
                       "failed": "replies sent for repair",
                       "fixups": "repair + retry calls", "fixup_tokens": "their tokens",
                       "saved": "saved by local repair", "saved_tokens": "tokens saved (share of all)",
                       "judge": "judge: saved of repair + retry"}), ""]
    memr3 = data["per_method"].get("memr3", {}).get("own_lenient_reading")
    if memr3:
        out.append(f"- MemR3 with its paper profile's lenient reading as well (any JSON object with a string "
                   f"decision, as [code]): {memr3['saved_repair_calls']} + {memr3['saved_retry_calls']} of "
                   f"{memr3['repair_calls']} + {memr3['retry_calls']} calls saved ({memr3['saved_tokens']:,} tokens): "
                   "the recorded router replies were cut at the token cap before `decision` or `gaps`, which the "
                   "strict schema requires and [code] does not.")
    if data.get("anomalies"):
        out.append(f"- {len(data['anomalies'])} repair call(s) followed a reply the strict reading accepts: "
                   + "; ".join(data["anomalies"][:3]))
    return out + [""]


def _md(rows: list[dict], cols: dict[str, str]) -> str:
    head = "| " + " | ".join(cols.values()) + " |"
    sep = "|" + "|".join("---" for _ in cols) + "|"
    return "\n".join([head, sep] + ["| " + " | ".join(str(r.get(k, "")) for k in cols) + " |" for r in rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cassettes", default=str(CASSETTES), help="folder of recorded cassettes (*.jsonl)")
    ap.add_argument("--out", default=str(OUT), help="where the JSON goes")
    args = ap.parse_args(argv)
    data = run(Path(args.cassettes))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print("\n".join(markdown(data)))
    print(f"wrote {args.out} ({data['wall_s']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
