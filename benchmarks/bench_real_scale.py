"""Real scale: every published whole-conversation LoCoMo recording, replayed, in one table.

``benchmarks/record_real_scale.py`` records one method at a time over a whole LoCoMo conversation (``conv-30``:
369 turns, the 81 questions of categories 1-4; then ``conv-26`` and ``conv-41`` for the cheap methods) with the
offline model as reader and judge, and publishes each finished cassette in ``sample_data/cassettes/locomo/``
(``M-conv-NN.jsonl``). This step replays them all, with
no model: the same ``workbench eval`` set-up (dataset preset, shipped calibration, MiniLM), every call
from the method's cassette through ``ReplayProbe`` (a miss is counted and recorded as the failure it is).

The table puts side by side, per method over every conversation it was recorded on: n, the row verdict every view
uses (the deterministic checker, ``workbench.eval.checker``: the judge is the same small model, and its audit on
labelled real answers fails) with a 95 % CI clustered by conversation and the figure per conversation, token F1
for comparison with papers, the judge's accuracy beside its audited false-accept rate, evidence recall on what
the reader saw, query tokens per question and their ratio to Full-Context's, construction tokens and
calls, failure attribution, cassette misses, and the recording's own wall time (from
``real_scale_recordings.json``), against the papers' anchors: HyMem ~7.0 % of Full-Context's query
tokens (1.5k of 21.4k), AMA ~19.4 % (3,613 of 18,625), RecMem up to 87 % fewer construction tokens than
Mem0. The model is named in every table.

Beside it, the mechanism census of each replay (``workbench.eval.mechanisms``: MemR3 gaps and router
causes, HyMem deep questions, RecMem consolidations, ...), counted from the replayed traces and built
memories, so what fired at real scale is read from the recorded model output, not assumed from the demo; with
each step's own decision (HyMem's escalation, MemR3's answer-now, AMA's Judge) checked against the question's gold
(``workbench.eval.decisions``).
Each method replays into its own scratch run directory (traces and memories kept for the census); its
rows, without the traces, are then appended to ``real_scale.jsonl``.

Writes ``benchmarks/results/real_scale.json`` and ``real_scale.jsonl`` (rows, rewritten each run).
Skips cleanly when ../shared/data/locomo is absent or nothing is published yet.
Usage: python -m benchmarks.bench_real_scale [--methods naive_rag full_context ...]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

from benchmarks.bench_compare import _judge_table, _num
from benchmarks.record_real_scale import CATEGORIES, CONVERSATION, LOCOMO, ORDER, PUBLISHED, RECORDINGS
from benchmarks.replay import ReplayProbe, repo_relative

RESULTS = Path(__file__).resolve().parent / "results"

#: the papers' own efficiency figures (methods/<name>.md digests), for the side-by-side column
ANCHORS = {
    "hymem": {"fc_token_ratio": 0.070, "text": "~7.0 % of Full-Context's query tokens (1.5k of 21.4k, gpt-4.1-mini)"},
    "ama": {"fc_token_ratio": 0.194, "text": "~19.4 % of Full-Context's tokens (3,613 of 18,625, K_r=2)"},
    "recmem": {"construction_vs_mem0": -0.87, "text": "up to 87 % fewer construction tokens than Mem0"},
}
#: labelled wrong answers of a method needed before its own judge false-accept rate is shown beside the overall one
MIN_OWN_WRONG = 30
COLUMNS = ["n", "f1", "accuracy", "judge_false_accept", "evidence_recall", "turns_shown", "query_tokens",
           "fc_token_ratio", "construction_tokens", "errors"]


def published_methods(methods=None) -> list[str]:
    """Methods the recorder published over conv-30 (every planned question answered) whose cassette is present;
    a cassette alone may be an older partial recording (e.g. a single Full-Context question)."""
    return [m for m, conv in published_runs(methods) if conv == CONVERSATION]


def published_runs(methods=None) -> list[tuple[str, str]]:
    """(method, conversation) of every published recording whose cassette is present, methods in the staged
    order, conv-30 first."""
    done = (json.loads(RECORDINGS.read_text()) if RECORDINGS.exists() else {}).get("recordings", {})
    runs = {(e.get("method", key), e.get("conversation", CONVERSATION)) for key, e in done.items()}
    order = {m: i for i, m in enumerate(ORDER)}
    picked = [(m, c) for m, c in runs if (methods is None or m in methods) and m in order
              and (PUBLISHED / f"{m}-{c}.jsonl").is_file()]
    return sorted(picked, key=lambda mc: (order[mc[0]], mc[1] != CONVERSATION, mc[1]))


def recording_key(method: str, conversation: str) -> str:
    """The key of a recording in ``real_scale_recordings.json`` (``record_real_scale.run_tag``)."""
    return method if conversation == CONVERSATION else f"{method}-{conversation}"


def replay_llm(cassette: Path) -> ReplayProbe:
    """The replaying model for a published cassette, with the output bounds the recorder ran under: it
    records with ``--bounded-outputs``, and a bound is part of the cassette key (``workbench.llm.bounds``)."""
    from workbench.llm import CachedLLM
    from workbench.llm.bounds import bounded

    return bounded(ReplayProbe(CachedLLM.replay(cassette)), True)


def replay_one(name: str, store, embedder, conversation: str = CONVERSATION) -> dict:
    """Evaluate ``name`` on ``conversation`` from its published cassette: call accounting, status and the
    mechanism census. The replay runs into a scratch run directory (answer traces and built memories kept, which
    the census reads); its rows, traces dropped, are then appended to ``store``."""
    from workbench.data import load_dataset
    from workbench.eval import LLMJudge, ResultsStore, evaluate
    from workbench.eval.mechanisms import census
    from workbench.eval.settings import build_method

    probe = replay_llm(PUBLISHED / f"{name}-{conversation}.jsonl")
    data_spec = f"locomo:{LOCOMO}"
    # as `workbench eval --bounded-outputs` built it when recording (the one path: workbench.eval.settings)
    setup = build_method(name, llm=probe, embedder=embedder, data=data_spec, bounded=True, warn=False)
    with tempfile.TemporaryDirectory(prefix=f"real-scale-{name}-") as tmp:
        t = time.perf_counter()
        res = evaluate(setup.method, load_dataset(data_spec), judge=LLMJudge(probe),
                       store=ResultsStore(Path(tmp) / "results.jsonl"), conversations=conversation,
                       categories=[int(c) for c in CATEGORIES.split(",")], progress=False, save_memories_dir=tmp,
                       extra_manifest=setup.manifest())
        wall = round(time.perf_counter() - t, 2)
        entry = census(tmp)["methods"].get(name)
        for kind in ("manifests", "costs"):  # the invocation's manifest and spend, beside the rows
            src = Path(tmp) / f"results.{kind}.jsonl"
            if src.is_file() and store.path:
                with open(_sibling(store.path, kind), "a", encoding="utf-8") as f:
                    f.write(src.read_text(encoding="utf-8"))
    rows = [r.to_dict() for r in res]
    last = last_batch_figures(type(setup.method), rows, load_dataset(data_spec))
    for row in rows:
        store.append({**row, "answer": None})
    return {"method": name, "conversation": conversation, "status": "not in cassette" if probe.misses else "ok",
            "questions": len(rows),
            "replay_wall_s": wall, "hits": probe.hits, "misses": dict(probe.misses),
            "construction_calls": rows[0]["construction_calls"] if rows else 0,
            "attribution": dict(Counter(r.get("attribution") or "–" for r in rows)), "mechanisms": entry,
            "capped": capped_replies(PUBLISHED / f"{name}-{conversation}.jsonl"), **last}


def last_batch_figures(cls, rows: list[dict], dataset) -> dict:
    """For a controller whose context is every batch its router read (MemR3: ``last_batch``), the figures on the
    last batch alone beside them, from the rows' traces: ``{"last_batch": {"recall_sum", "recall_n",
    "attribution"}}``; {} for any other method. The rows' own ``evidence_recall`` and ``attribution`` are over every
    batch; the last batch's are what the summary reported before turn 4 (reviews/memr3.md, turn-4 N4), kept so the
    two can be read side by side."""
    if not hasattr(cls, "last_batch"):
        return {}
    from workbench.eval.attribution import attribute
    from workbench.eval.metrics import evidence_recall
    from workbench.trace import Answer

    gold = {qa.id: qa.evidence for conv in dataset for qa in conv.qa}
    total, n, labels = 0.0, 0, Counter()
    for row in rows:
        if not row.get("answer"):
            labels[row.get("attribution") or "–"] += 1  # a failed row: no trace, its label does not depend on it
            continue
        shown = [t for h in cls.last_batch(Answer.from_dict(row["answer"])) for t in h.source_ids]
        recall = evidence_recall(gold.get(row["qa_id"], ()), shown)
        if recall is not None:
            total, n = total + recall, n + 1
        labels[attribute({**row, "evidence_recall": recall, "turns_shown": len(set(shown))}).label] += 1
    return {"last_batch": {"recall_sum": total, "recall_n": n, "attribution": dict(labels)}}


def _tally() -> dict:
    return {"calls": 0, "capped": 0, "completion_tokens": 0, "capped_tokens": 0, "latency_s": 0.0,
            "capped_latency_s": 0.0}


def capped_replies(cassette: Path) -> dict:
    """How many of a recording's replies ran into their token cap (``completion_tokens`` at the call's
    ``max_tokens``: a role's bound, or the local backend's default where the call named none), and what they cost:
    a JSON reply cut there is followed by a repair and often a retry. The method's own calls are counted apart from
    the judge's (``judge.*``, under ``judge``); per base role too (``hymem.reflect`` holds its repairs and retries).
    Read from the cassette records; a record without numeric fields is skipped and counted as unreadable."""
    from workbench.llm.bounds import base_role
    from workbench.llm.llamacpp import DEFAULT_MAX_TOKENS
    from workbench.rundir import read_jsonl_rows

    problems: list = []
    roles: dict[str, dict] = {}
    own, judge = _tally(), _tally()
    for rec in read_jsonl_rows(Path(cassette), problems):
        done, cap, lat = rec.get("completion_tokens"), rec.get("max_tokens"), rec.get("latency_s")
        if not isinstance(done, int) or isinstance(done, bool):
            problems.append(f"{cassette}: a record without completion_tokens")
            continue
        cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else DEFAULT_MAX_TOKENS
        lat = float(lat) if isinstance(lat, (int, float)) and not isinstance(lat, bool) else 0.0
        hit, name = done >= cap, str(rec.get("role") or "?")
        role = roles.setdefault(base_role(name), {"calls": 0, "capped": 0, "first": 0, "first_capped": 0})
        first = ".repair" not in name and ".retry" not in name
        role["calls"] += 1
        role["capped"] += hit
        role["first"] += first
        role["first_capped"] += hit and first
        total = judge if name.startswith("judge.") else own
        total["calls"] += 1
        total["capped"] += hit
        total["completion_tokens"] += done
        total["capped_tokens"] += done if hit else 0
        total["latency_s"] += lat
        total["capped_latency_s"] += lat if hit else 0.0
    for t in (own, judge):
        t["latency_s"], t["capped_latency_s"] = round(t["latency_s"], 1), round(t["capped_latency_s"], 1)
    return {**own, "judge": judge, "roles": roles, "unreadable": len(problems)}


def capped_markdown(replays: list[dict]) -> str:
    """One line per recording: the method's own replies cut at their cap, their share of its completion tokens and
    of its recorded call time ("no call time recorded" where the cassette kept none), the roles where most of them
    fell (first replies, then repairs and retries), and the judge's apart."""
    out = []
    for r in replays:
        c = r.get("capped")
        if not isinstance(c, dict) or not c.get("calls"):
            continue
        j = c.get("judge") if isinstance(c.get("judge"), dict) else {}
        judged = f" (the judge's: {j['capped']} of {j['calls']})" if j.get("calls") else ""
        head = (f"- **{r['method']}** over {r.get('conversation')}: {c['capped']} of its {c['calls']} own replies "
                f"({c['capped'] / c['calls']:.0%}) ran into their cap{judged}")
        if not c["capped"]:
            out.append(head)
            continue
        tok = c["capped_tokens"] / c["completion_tokens"] if c["completion_tokens"] else 0
        time_share = (f"{c['capped_latency_s'] / c['latency_s']:.0%} of its recorded call time" if c["latency_s"]
                      else "no call time recorded")
        worst = sorted(((k, v) for k, v in c["roles"].items() if v["capped"] and not k.startswith("judge.")),
                       key=lambda kv: -kv[1]["capped"])[:3]
        where = "; ".join(f"`{k}` {v['first_capped']} of {v['first']} first replies" + (
            f" ({v['capped'] - v['first_capped']} of their {v['calls'] - v['first']} repairs and retries)"
            if v["calls"] > v["first"] else "") for k, v in worst)
        out.append(f"{head}: {tok:.0%} of its completion tokens, {time_share}; {where}")
    return "\n".join(out) or "_no recording replayed_"


def _sibling(results: Path, kind: str) -> Path:
    """``real_scale.jsonl`` -> ``real_scale.<kind>.jsonl`` (the harness's naming for manifests and costs)."""
    return Path(results).with_name(f"{Path(results).stem}.{kind}.jsonl")


def table(path: Path, replays: list[dict], recordings: dict, labels=None) -> list[dict]:
    """One line per method over every conversation it was replayed on: the verdict (checker) with its clustered
    CI and per-conversation figures, F1, the judge's accuracy with its audit (and on the method's own ``labels``,
    default the shipped set), replay and recording facts."""
    if not path.exists() or not path.stat().st_size:
        return []
    from workbench.eval import load_results, summary_table
    from workbench.eval.audit import audits_for_rows
    from workbench.eval.store import load_rows

    df = load_results([path])
    t = _judge_table(path)
    overall = {r["method"]: r for r in t[t["category"] == "overall"].to_dict(orient="records")}
    verdict = summary_table(df, metric="checker", audits=audits_for_rows(load_rows([path])))
    vo = {r["method"]: r for r in verdict[verdict["category"] == "overall"].to_dict(orient="records")}
    answerable = df[df["category"].astype(str).isin(["1", "2", "3", "4"])]
    per_conv = answerable.groupby(["method", "conv_id"])["checker"].agg(["mean", "count"])
    fc_rows = answerable[answerable["method"] == "full_context"].groupby("conv_id")
    fc = {col: fc_rows[col].mean() for col in ("query_tokens", "query_prompt_tokens")}

    def conv_mean(method, c, col):
        """``method``'s mean ``col`` over its answerable questions of conversation ``c`` (NaN for a column the rows
        lack)."""
        if col not in answerable.columns:
            return math.nan
        return answerable[(answerable["method"] == method) & (answerable["conv_id"] == c)][col].mean()

    def fc_ratio(method, c, col):
        """``method``'s mean ``col`` on conversation ``c`` ÷ Full-Context's there (None without both)."""
        ref = fc[col].get(c)
        return _num(conv_mean(method, c, col) / ref) if ref and not math.isnan(ref) else None

    lines = []
    for method in dict.fromkeys(r["method"] for r in replays):
        mine = [r for r in replays if r["method"] == method]
        o, v = overall.get(method, {}), vo.get(method, {})
        recs = [recordings.get(recording_key(method, r.get("conversation", CONVERSATION)), {}) for r in mine]
        line = {"method": method, "model": ", ".join(sorted({r.get("model") for r in recs if r.get("model")})),
                "status": ", ".join(sorted({r["status"] for r in mine}))}
        line.update({k: _num(o.get(k)) for k in COLUMNS})
        line.update({"n": _num(v.get("n")), "verdict": _num(v.get("accuracy")),
                     "verdict_ci": [_num(v.get("ci_low")), _num(v.get("ci_high"))],
                     "conversations": [r.get("conversation", CONVERSATION) for r in mine]})
        line["per_conversation"] = {
            c: {"verdict": _num(per_conv.loc[(method, c), "mean"]), "n": int(per_conv.loc[(method, c), "count"]),
                "query_tokens": _num(conv_mean(method, c, "query_tokens")),
                # every row of a conversation carries that conversation's construction cost: the mean is it
                "construction_tokens": _num(conv_mean(method, c, "construction_tokens")),
                "construction_calls": _num(conv_mean(method, c, "construction_calls")),
                "fc_token_ratio": fc_ratio(method, c, "query_tokens"),
                # prompt tokens only, as AMA's Table 4 counts ("input tokens"); None for rows without usage
                "fc_prompt_ratio": fc_ratio(method, c, "query_prompt_tokens")}
            for c in line["conversations"] if (method, c) in per_conv.index}
        attribution_counts: Counter = Counter()
        for r in mine:
            attribution_counts.update(r.get("attribution") or {})
        lasts = [r["last_batch"] for r in mine if r.get("last_batch")]
        if lasts:  # MemR3: the rows' recall and attribution are over every batch; the last batch's beside them
            n_last = sum(x["recall_n"] for x in lasts)
            line["last_batch"] = {
                "evidence_recall": _num(sum(x["recall_sum"] for x in lasts) / n_last) if n_last else None,
                "attribution": dict(sum((Counter(x["attribution"]) for x in lasts), Counter()))}
        line.update({"construction_calls": sum(r["construction_calls"] for r in mine),
                     "attribution": dict(attribution_counts), "misses": sum(sum(r["misses"].values()) for r in mine),
                     "recording_wall_s": sum(r.get("wall_s") or 0 for r in recs) or None,
                     # CPU seconds of the recorder's subprocesses; a recording begun before the recorder measured
                     # them (or without a figure) makes the sum a lower bound
                     "recording_cpu_s": sum(r.get("cpu_s") or 0 for r in recs) or None,
                     # (an entry from before the recorder said whether its count is whole is taken as partial)
                     "recording_cpu_partial": any(not r.get("cpu_s") or r.get("cpu_partial", True) for r in recs),
                     # a recording seeded from a committed cassette was timed partly on another machine
                     "recording_wall_partial": any(r.get("wall_partial") for r in recs),
                     "recording_calls": sum(r.get("cassette_entries") or 0 for r in recs) or None,
                     "paper_anchor": ANCHORS.get(method, {}).get("text")})
        lines.append(line)
    by = {x["method"]: x for x in lines}
    from workbench.eval.label_audit import audit_by_method, shipped_labels

    labels = shipped_labels() if labels is None else labels
    audits = {m: audit_by_method(labels, judge_model=m or None) for m in {x["model"] for x in lines}}
    for x in lines:  # the line's judge (= its reader here) on this method's own labelled wrong answers
        own = audits[x["model"]].get(x["method"])
        fa = own["judge"]["false_accept"] if own else None
        if fa and fa["n"] >= MIN_OWN_WRONG:
            x["judge_false_accept_own"] = {"rate": fa["rate"], "k": fa["k"], "n": fa["n"]}
    if "recmem" in by and "mem0_style" in by:
        vs = construction_vs_mem0(by["recmem"]["per_conversation"], by["mem0_style"]["per_conversation"])
        if vs:
            by["recmem"]["construction_vs_mem0"] = vs
    return lines


def construction_vs_mem0(recmem: dict, mem0: dict) -> dict:
    """RecMem's construction tokens and calls relative to Mem0-style's, per conversation both were recorded on
    (``{conv: {"tokens": -0.53, "calls": ...}}``): on the same turns, never a mean over different conversations."""
    out = {}
    for c, r in recmem.items():
        m = mem0.get(c) or {}
        if not (r.get("construction_tokens") and m.get("construction_tokens")):
            continue
        calls = r.get("construction_calls"), m.get("construction_calls")
        out[c] = {"tokens": round(r["construction_tokens"] / m["construction_tokens"] - 1, 4),
                  "calls": round(calls[0] / calls[1] - 1, 4) if all(calls) else None}
    return out


def to_markdown(lines: list[dict]) -> str:
    """The real-scale table as Markdown (SUMMARY.md and the README quote it)."""
    if not lines:
        return "_no whole-conversation recording published yet_"
    head = ("| method | model | n | verdict [95% CI] | per conversation | F1 | "
            "judge acc. (audited FA; on its own labelled answers) | evidence recall | query tok/q | ÷ Full-Context | "
            "construction tok (calls) | errors | failure attribution | recorded in: wall (CPU) | paper's anchor |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    fmt = lambda v, p=3: "–" if v is None else f"{v:.{p}f}"  # noqa: E731
    for x in lines:
        fa = "" if x["judge_false_accept"] is None else f" ({x['judge_false_accept']:.0%}"
        own = x.get("judge_false_accept_own")
        fa += (f"; its own: {own['rate']:.0%} of {own['n']} wrong)" if own else ")") if fa else ""
        wall = "–" if not x["recording_wall_s"] else (f"{'>= ' if x.get('recording_wall_partial') else ''}"
                                                      f"{x['recording_wall_s'] / 60:.0f} min")
        if x.get("recording_cpu_s"):
            wall += f" (CPU {'>= ' if x.get('recording_cpu_partial') else ''}{x['recording_cpu_s'] / 60:.0f} min)"
        lo, hi = x.get("verdict_ci") or [None, None]
        ci = f" [{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else ""
        per = " · ".join(f"{c}: {fmt(p['verdict'])} (n {p['n']})" for c, p in (x.get("per_conversation") or {}).items())
        out.append(f"| {x['method']} | {x['model'] or '–'} | {x['n'] or 0:.0f} | {fmt(x.get('verdict'))}{ci} | {per} | "
                   f"{fmt(x['f1'])} | {fmt(x['accuracy'])}{fa} | {recall(x, fmt)} | "
                   f"{fmt(x['query_tokens'], 0)} | {fmt(x['fc_token_ratio'])} | "
                   f"{fmt(x['construction_tokens'], 0)} ({x['construction_calls']}) | "
                   f"{x['errors'] or 0:.0f} | {attribution(x.get('attribution') or {})} | {wall} | "
                   f"{x['paper_anchor'] or ''} |")
    return "\n".join(out)


def recall(x: dict, fmt) -> str:
    """The evidence recall cell: MemR3's over every batch its router read, its last batch's beside it."""
    last = (x.get("last_batch") or {}).get("evidence_recall")
    cell = fmt(x["evidence_recall"])
    return f"{cell} (last batch {fmt(last)})" if x.get("last_batch") else cell


def mem0_caveat(replays: list[dict]) -> str:
    """What the Mem0-style reference's decision call did at real scale, per conversation (its census): a reference
    that drops most facts keeps its decision prompts short, so RecMem's ratio against it is measured against less
    work than Mem0 does. "" when no Mem0-style replay has the counts."""
    bits = []
    for r in replays:
        c = ((r.get("mechanisms") or {}).get("counts") or {}) if r.get("method") == "mem0_style" else {}
        if not c.get("facts_extracted") or not isinstance(c.get("decisions"), dict):
            continue
        d = c["decisions"]
        bits.append(f"{r.get('conversation')}: of {c['facts_extracted']:,} facts extracted, its decision call applied "
                    f"NONE {d.get('NONE', 0):,} ({c.get('none_with_nothing_stored') or 0:,} with nothing stored yet), "
                    f"ADD {d.get('ADD', 0)}, UPDATE {d.get('UPDATE', 0)}, DELETE {d.get('DELETE', 0)}; "
                    f"{c.get('facts_without_action') or 0:,} facts were named by no action "
                    f"({c.get('actions_naming_no_fact') or 0:,} actions named no fact)")
    if not bits:
        return ""
    return ("  - the Mem0-style reference did less than Mem0 does, so its prompts stayed short and the ratio is "
            "measured against a light reference: " + "; ".join(bits))


def anchors_markdown(lines: list[dict], replays: list[dict] = ()) -> str:
    """Query tokens ÷ Full-Context's on the same conversation, per conversation, beside the papers' anchors
    (HyMem 7.0 %, AMA 19.4 %), and RecMem's construction tokens beside Mem0-style's (paper: up to -87 %), with what
    the Mem0-style reference's decisions did (``mem0_caveat``)."""
    out = []
    for x in lines:
        anchor = ANCHORS.get(x["method"], {})
        if "fc_token_ratio" in anchor:
            per = " · ".join(f"{c}: {p['fc_token_ratio']:.3f}" for c, p in (x.get("per_conversation") or {}).items()
                             if p.get("fc_token_ratio") is not None)
            per = per or "no Full-Context on the same conversation"
            prompt = " · ".join(f"{c}: {p['fc_prompt_ratio']:.3f}" for c, p in (x.get("per_conversation") or {}).items()
                                if p.get("fc_prompt_ratio") is not None)
            prompt = f"; prompt tokens only (the papers' input tokens): {prompt}" if prompt else ""
            out.append(f"- **{x['method']}** query tokens ÷ Full-Context's: {per}{prompt} "
                       f"(paper: {anchor['fc_token_ratio']:.3f}, {anchor['text']})")
        if x.get("construction_vs_mem0"):
            per = " · ".join(f"{c}: {d['tokens']:+.1%} tokens" + (f", {d['calls']:+.1%} calls" if d.get("calls")
                                                                   is not None else "")
                             for c, d in x["construction_vs_mem0"].items())
            out.append(f"- **recmem** construction vs Mem0-style's on the same turns (the conversations both were "
                       f"recorded on): {per} (paper: {anchor.get('text', 'up to -87 %')})")
            out += [c for c in [mem0_caveat(replays)] if c]
    return "\n".join(out) or "_no method with a paper anchor among the replayed ones_"


def verdict_markdown() -> str:
    """How far the table's verdict and its alternatives agree with careful readers (the labelled set)."""
    from workbench.eval.label_audit import (audit_by_method, audit_on_labels, checker_audit, f1_source,
                                            recorded_judge, shipped_labels, verdict_note)

    labels = shipped_labels()
    if not labels:
        return "_no labelled answers shipped: the verdict is not audited_"
    lines = ["- " + verdict_note("verdict (the deterministic checker)", checker_audit()),
             "- " + verdict_note("token F1 >= 0.5", audit_on_labels(labels, f1_source()))]
    for model in sorted({a.judge_model for a in labels if a.judge_model}):
        lines.append("- " + verdict_note(f"{model} as judge (its recorded verdicts)",
                                         audit_on_labels([a for a in labels if a.judge_model == model],
                                                         recorded_judge)))
    per = audit_by_method(labels)
    if per:
        judges = ", ".join(sorted({a.judge_model for a in labels if a.source == "real_scale" and a.judge_model}))
        lines += ["", "Per method, on its own labelled answers at real scale (a judge that accepts more of one "
                  "method's wrong answers than another's can reorder them):", "",
                  "| method | labelled answers (conversations) | right by the readers | checker: accepts wrong · "
                  f"rejects right | judge ({judges}, recorded): accepts wrong · rejects right | "
                  "F1 >= 0.5: accepts wrong · rejects right |",
                  "|---|---|---|---|---|---|"]
        frac = lambda d: f"{d['k']}/{d['n']}" + (f" ({d['k'] / d['n']:.0%})" if d["n"] else "")  # noqa: E731
        for m, r in per.items():
            cells = [f"{frac(r[s]['false_accept'])} · {frac(r[s]['false_reject'])}" for s in ("checker", "judge", "f1")]
            lines.append(f"| {m} | {r['n']} ({', '.join(r['conversations'])}) | {r['right']} | " + " | ".join(cells)
                         + " |")
    return "\n".join(lines)


def mechanisms_markdown(replays: list[dict]) -> str:
    """What each method's own mechanism did at real scale, one line per method and conversation, from the replay's
    census (``workbench.eval.mechanisms.headline``): counts with a zero marked *not fired* and its recorded reason."""
    from workbench.eval.decisions import tally_text
    from workbench.eval.mechanisms import headline, item_text

    out = []
    for r in replays:  # one census per replay (method x conversation): a conversation's census is its own
        if not isinstance(r.get("mechanisms"), dict):
            continue
        for h in headline({"methods": {r["method"]: r["mechanisms"]}}):
            bits = [item_text(i) + (f" (not fired: {i['note']})" if i["fired"] is False and i["note"] else
                                    " (not fired)" if i["fired"] is False else "") for i in h["items"]]
            bits += [item_text(f) for f in h["failures"]]
            if h.get("checked"):
                bits.append(f"right? {h['checked']}")
            if r["mechanisms"].get("decisions"):  # each step's own decision against the question's gold
                bits.append(f"its steps' decisions right? {tally_text(r['mechanisms']['decisions'])}")
            if bits:
                where = f" over {r['conversation']}" if r.get("conversation") else ""
                out.append(f"- **{h['method']}**{where} ({h['questions'] or 0} questions): " + "; ".join(bits))
    return "\n".join(out) or "_no method-specific mechanism among the replayed methods_"


def attribution(counts: dict) -> str:
    """``{"retrieval_miss": 30, "correct": 20}`` -> ``retrieval_miss 30 · correct 20`` (largest first)."""
    return " · ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def run(results_dir: Path = RESULTS, methods=None) -> dict:
    from workbench.embed import CachedEmbedder, MiniLMEmbedder
    from workbench.eval import ResultsStore

    out = {"benchmark": "real_scale", "date": datetime.now().isoformat(timespec="seconds"),
           "conversation": CONVERSATION, "categories": CATEGORIES}
    if not LOCOMO.exists():
        return {**out, "status": "skipped", "note": "../shared/data/locomo absent"}
    names = published_runs(methods)
    if not names:
        return {**out, "status": "skipped", "note": "no recording published in sample_data/cassettes/locomo"}
    path = Path(results_dir) / "real_scale.jsonl"
    for stale in (path, _sibling(path, "manifests"), _sibling(path, "costs")):  # rewritten each run
        stale.unlink(missing_ok=True)
    store, enc = ResultsStore(path), MiniLMEmbedder()
    replays = []
    for name, conv in names:
        try:
            replays.append(replay_one(name, store, CachedEmbedder(enc), conv))
        except Exception as exc:  # reported per method; the others still replay
            replays.append({"method": name, "conversation": conv, "status": "error",
                            "error": f"{type(exc).__name__}: {exc}", "misses": {}, "construction_calls": 0,
                            "attribution": {}})
        r = replays[-1]
        print(f"real scale {name} {conv}: {r['status']} misses={sum(r['misses'].values())}", flush=True)
    recordings = (json.loads(RECORDINGS.read_text()) if RECORDINGS.exists() else {}).get("recordings", {})
    lines = table(path, replays, recordings)
    return {**out, "status": "ok", "results_file": repo_relative(path), "replays": replays, "table": lines,
            "markdown": to_markdown(lines), "mechanisms_markdown": mechanisms_markdown(replays), "anchors": ANCHORS,
            "capped_markdown": capped_markdown(replays),
            "conversations": sorted({c for _, c in names}), "verdict_markdown": verdict_markdown(),
            "anchors_markdown": anchors_markdown(lines, replays)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=None)
    args = parser.parse_args(argv)
    data = run(RESULTS, args.methods)
    (RESULTS / "real_scale.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(data.get("markdown") or data.get("note"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
