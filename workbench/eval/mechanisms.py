"""The mechanism census: how often each method's distinctive mechanism actually fired in a recorded run.

A method can score well or badly without its own mechanism ever running (AMA's Refresher never
editing anything, MemR3's router never opening a gap, RecMem's trigger never firing). The census
counts, per method, what the run *recorded* — nothing is re-run, no LLM is called, no count is
typed in by hand:

- result rows (``results.jsonl``) and each row's frozen trace (``answer.steps``): question-time
  decisions (AMA Judge verdicts and Refresher edits, MemR3 router actions and gaps, HyMem tiers and
  reflection rounds, H-Mem planner scopes) and every row's failures;
- each saved memory (``memories/<method>/<conv>/events.jsonl`` and ``structures.json``):
  construction-time decisions (AMA's ingestion Judge and Refresher, H-Mem's tree shape, RecMem's
  trigger log, merges, consolidations and refinements);
- the run manifest, only to say whether the run itself was scripted.

``census(run_dir)`` (or ``census(rows, memories=...)``) returns, per method,
``{"counts": {name: int | dict | None}, "why_zero": {name: text}, "missing": {name: reason},
"sources": {name: where it was read}}``. A count the run cannot support is None with its reason in
``missing`` (e.g. a run saved without ``--save-memories``, or one saved before a method wrote the
log a count needs); it is never guessed. ``why_zero`` explains a zero only with figures read from
the same run (the verdict distribution, the highest recurrence count, the run's own parameters).

A MemR3 gap entry that says there is none ("No gaps noted", "none") or is one of the router schema's own
field or action names ("reasoning", "retrieve") is not counted as a gap; such entries are counted in
``gap_entries_not_gaps`` instead. Duplicate entries within one router step count once. Gap text the model
copied from the snippets is still counted: telling it apart from a real gap needs reading, which the
trace stepper is for.

Every method also gets its failure counts: rows where the method raised (``row_errors``), answers
that came from a fallback path (``fallback_answers``: a failed answer call, a generator failure, an
empty reply), failed LLM calls while answering (``llm_errors``, of which ``cassette_misses`` were
replay-cassette misses), construction failures, and judge errors.

Everything read from a run directory is untrusted: bad JSONL lines, damaged JSON files and
unexpected shapes become entries of ``problems`` (``file: what``) and the counts that needed them
become missing; the census itself never raises on a damaged run. ``write_census(run_dir)`` writes
``mechanisms.json`` atomically; ``census_markdown`` / ``census_text`` render it;
``headline(census)`` gives the few counts per method that the app header shows.
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from ..jsonl import DamagedFile, LeadsOutside, confined, read_json, read_jsonl, write_json_atomic
from ..methods.base import method_base
from ..methods.recmem.inspection import repeated_episodes
from ..rundir import id_from_name
from ..trace import ANSWER_WRITER_KINDS
from ..untrusted import markdown_text, terminal_json, terminal_text
from .markdown import markdown_table
from .store import ResultsStore

SCHEMA = "mechanisms/1"
FILE = "mechanisms.json"
#: router step ``forced`` values (memr3_state.GUARDS) and the two unforced causes, in display order
ROUTER_CAUSES = ("choice", "budget", "empty_retrieval", "reflect_streak", "nothing_left", "fallback")


def router_cause(data: dict) -> str:
    """What decided a MemR3 router step's action, one of ``ROUTER_CAUSES``: the guard that forced it
    (its ``forced`` field), else ``fallback`` when the router's reply was unusable, else ``choice``.
    The census and the trace timeline both read a step's cause through this one rule."""
    forced = data.get("forced")
    if isinstance(forced, str) and forced:
        return forced
    return "fallback" if data.get("fallback") else "choice"


# ================================================================================================
# Reading (every shape checked; problems recorded, never raised)
# ================================================================================================
class _Trace:
    """One row's trace as plain values: ``steps`` = [(kind, data)], the answer's error and text."""

    def __init__(self, steps: list[tuple[str, dict]], error, text):
        self.steps, self.error, self.text = steps, error, text

    def of(self, *kinds: str) -> list[dict]:
        return [d for k, d in self.steps if k in kinds]


def _trace(row: dict, where: str, problems: list[str]) -> _Trace | None:
    """The row's trace, or None when it has none (a failed row, ``keep_answers=False``) or a bad one."""
    ans = row.get("answer")
    if ans is None:
        return None
    if not isinstance(ans, dict):
        problems.append(f"{where}: field 'answer' is a {type(ans).__name__}, not an object; trace not counted")
        return None
    raw = ans.get("steps", [])
    if not isinstance(raw, list):
        problems.append(f"{where}: field 'answer.steps' is a {type(raw).__name__}, not a list; trace not counted")
        return None
    steps, bad = [], 0
    for s in raw:
        if isinstance(s, dict) and isinstance(s.get("kind"), str) and isinstance(s.get("data", {}), dict):
            steps.append((s["kind"], s.get("data", {})))
        else:
            bad += 1
    if bad:
        problems.append(f"{where}: {bad} step(s) without a string 'kind' and an object 'data' were skipped")
    return _Trace(steps, ans.get("error"), ans.get("text"))


class _Memory:
    """One saved memory: its events (plain dicts) and structures; ``structures_problem`` says why
    the structures are unusable (None when fine or simply absent)."""

    def __init__(self, events: list[dict] | None = None, structures: dict | None = None,
                 structures_problem: str | None = None, events_problem: str | None = None):
        self.events = events if events is not None else []
        self.structures = structures if structures is not None else {}
        self.structures_problem = structures_problem
        self.events_problem = events_problem


def _read_memories(run: Path, problems: list[str]) -> dict[str, dict[str, _Memory]]:
    """``{method: {conv_id: _Memory}}`` for every folder under ``<run>/memories``."""
    out: dict[str, dict[str, _Memory]] = {}
    root = run / "memories"
    if not root.is_dir():
        return out
    for mdir in sorted(p for p in root.iterdir() if p.is_dir()):
        method = id_from_name(mdir.name)
        for cdir in sorted(p for p in mdir.iterdir() if p.is_dir()):
            mem = _Memory()
            ev = cdir / "events.jsonl"
            try:
                confined(ev, run)  # never read through a link out of the run directory
            except LeadsOutside as exc:
                problems.append(str(exc))
                mem.events_problem = str(exc)
            else:
                _read_events(ev, mem, problems)
            st = cdir / "structures.json"
            if st.is_file():
                try:
                    mem.structures = read_json(confined(st, run))
                except DamagedFile as exc:  # LeadsOutside included
                    problems.append(str(exc))
                    mem.structures_problem = f"{st} is damaged ({exc.reason})"
            out.setdefault(method, {})[id_from_name(cdir.name)] = mem
    return out


def _read_events(ev: Path, mem: "_Memory", problems: list[str]) -> None:
    """One memory's ``events.jsonl`` into ``mem`` (its bad lines and event-less rows into ``problems``)."""
    if not ev.is_file():
        mem.events_problem = f"{ev} is missing"
        return
    got = read_jsonl(ev)
    problems.extend(str(b) for b in got.bad)
    mem.events = [r for r in got.rows if isinstance(r.get("kind"), str)]
    if len(mem.events) < len(got.rows):
        problems.append(f"{ev}: {len(got.rows) - len(mem.events)} event(s) without a string 'kind' skipped")


def _memories_from(value) -> dict[str, dict[str, _Memory]]:
    """``memories=`` given by a caller: ``{method: {conv_id: {"events": [...], "structures": {...}}}}``
    (events as dicts or ``MemoryEvent``)."""
    out: dict[str, dict[str, _Memory]] = {}
    for method, convs in (value or {}).items():
        for conv_id, mem in convs.items():
            events = [e.to_dict() if hasattr(e, "to_dict") else dict(e) for e in mem.get("events", ())]
            out.setdefault(method, {})[conv_id] = _Memory(events, dict(mem.get("structures") or {}))
    return out


# ================================================================================================
# Counting
# ================================================================================================
class _Counts:
    """Named counts of one method, with where each came from and why a zero or a gap."""

    def __init__(self):
        self.counts: dict[str, Any] = {}
        self.why_zero: dict[str, str] = {}
        self.missing: dict[str, str] = {}
        self.sources: dict[str, str] = {}

    def put(self, name: str, value, source: str, why_zero: str | None = None) -> None:
        self.counts[name] = value
        self.sources[name] = source
        if why_zero and _is_zero(value):
            self.why_zero[name] = why_zero

    def lack(self, name: str, reason: str) -> None:
        self.counts[name] = None
        self.missing[name] = reason

    def to_dict(self) -> dict:
        return {"counts": self.counts, "why_zero": self.why_zero, "missing": self.missing, "sources": self.sources}


def _is_zero(value) -> bool:
    if isinstance(value, dict):
        return not any(v for v in value.values())
    return value == 0


def _fmt_counter(c: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in c.items()) or "none"


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _params(rows: list[dict]) -> dict:
    """The method's parameters as the run recorded them (the first row that has them)."""
    for r in rows:
        if isinstance(r.get("params"), dict):
            return r["params"]
    return {}


def _fallback_answer(t: _Trace) -> bool:
    """Did the text returned come from a fallback path rather than the method's answer call?"""
    if t.error:
        return True
    writers = [(k, d) for k, d in t.steps if k in ANSWER_WRITER_KINDS]
    if not writers:
        return False
    kind, data = writers[-1]
    if data.get("fallback") or data.get("error") or data.get("fallback_answer"):
        return True
    if kind == "final" and data.get("tier") == "deep_failed":  # HyMem: the deep generator failed
        return True
    if kind == "synthesize" and data.get("skipped"):  # H-Mem, one sub-query: its sub-answer is the answer
        subs = t.of("subanswer")
        return bool(subs and subs[-1].get("error"))
    return False


def _common(c: _Counts, rows: list[dict], traces: list[_Trace | None]) -> None:
    """Questions and failures, for every method."""
    src = "results.jsonl"
    c.put("questions", len(rows), src)
    c.put("answers_with_trace", sum(t is not None for t in traces), src)
    c.put("row_errors", sum(bool(r.get("error")) for r in rows), src)
    kinds: Counter = Counter()
    llm_errors = misses = 0
    construction: dict[str, dict] = {}
    for r in rows:
        for f in _list(r.get("failures")):
            if not isinstance(f, dict):
                continue
            kind = str(f.get("kind", "?"))
            kinds[kind] += 1
            if kind == "llm_error":
                llm_errors += 1
                misses += _text(f.get("error")).startswith("CacheMiss")
            elif kind == "construction":
                construction[str(r.get("conv_id"))] = f  # one entry per conversation, copied on each row
    c.put("flagged_rows", sum(bool(_list(r.get("failures"))) for r in rows), src)
    c.put("llm_errors", llm_errors, src)
    c.put("cassette_misses", misses, src)
    c.put("fallback_answers", sum(t is not None and _fallback_answer(t) for t in traces), src + " (traces)")
    c.put("construction_llm_errors", sum(_int(f.get("llm_errors")) for f in construction.values()), src)
    c.put("construction_method_failures", sum(_int(f.get("method_failures")) for f in construction.values()), src)
    c.put("failure_kinds", dict(sorted(kinds.items())), src)
    c.put("judge_errors", sum(bool(r.get("judge_error")) for r in rows), src)


def _traced(c: _Counts, traces, names: Iterable[str]) -> bool:
    """False (and the names marked missing) when no row kept its trace."""
    if any(t is not None for t in traces):
        return True
    for n in names:
        c.lack(n, "no result row of this method kept its answer trace (failed rows, or keep_answers=False)")
    return False


def _need_memory(c: _Counts, mems: dict[str, _Memory], names: Iterable[str], method: str) -> bool:
    if mems:
        return True
    for n in names:
        c.lack(n, f"no saved memory of {method} in this run (memories/{method}/<conversation>/; "
                  "`workbench eval --save-memories` or the demo saves it)")
    return False


def _events_lacking(c: _Counts, mems: dict[str, _Memory], names: Iterable[str]) -> bool:
    """True (and ``names`` marked missing) when a saved memory has no events.jsonl: its event-based
    counts would read as 0 without being 0."""
    gone = [m.events_problem for m in mems.values() if m.events_problem]
    for n in names if gone else ():
        c.lack(n, "; ".join(gone[:3]))
    return bool(gone)


# -- AMA ---------------------------------------------------------------------------------------------
def _ama(c: _Counts, rows, traces, mems, params) -> None:
    names_ev = ("updates_at_ingestion", "deletes_at_ingestion")
    log_names = ("ingestion_checks", "ingestion_verdicts", "ingestion_refresh_actions")
    if _need_memory(c, mems, names_ev + log_names, "ama"):
        kinds: Counter = Counter()
        for mem in mems.values():
            for e in mem.events:
                if not _text(e.get("cause")).startswith("question:"):
                    kinds[e["kind"]] += 1
        log, absent = [], []
        for conv, mem in mems.items():
            entries = mem.structures.get("ingestion_log") if isinstance(mem.structures, dict) else None
            if isinstance(entries, list):
                log += [x for x in entries if isinstance(x, dict)]
            else:
                absent.append(mem.structures_problem or f"memories/ama/{conv}/structures.json has no ingestion_log "
                                                        "(saved before AMA wrote it)")
        judges = [x for x in log if x.get("step") == "judge"]
        verdicts = Counter(str(x.get("verdict")) for x in judges)
        refreshes = Counter(str(x.get("action")) for x in log if x.get("step") == "refresh")
        why = None
        if params.get("refresher") is False:
            why = "refresher=False in the run's parameters: no conflict check at ingestion"
        elif not absent:
            why = (f"the ingestion Judge answered {_fmt_counter(dict(verdicts))} on {len(judges)} checks"
                   + (f"; Refresher: {_fmt_counter(dict(refreshes))}" if refreshes else ""))
        if not _events_lacking(c, mems, names_ev):
            c.put("updates_at_ingestion", kinds["UPDATE"], "events.jsonl", why)
            c.put("deletes_at_ingestion", kinds["DELETE"], "events.jsonl", why)
        if absent:
            for n in log_names:
                c.lack(n, "; ".join(absent[:3]) + ("; ..." if len(absent) > 3 else ""))
        else:
            c.put("ingestion_checks", len(judges), "structures.json (ingestion_log)",
                  "no stored entry was near enough to a new turn to be checked" if not judges else None)
            c.put("ingestion_verdicts", dict(sorted(verdicts.items())), "structures.json (ingestion_log)")
            c.put("ingestion_refresh_actions", dict(sorted(refreshes.items())), "structures.json (ingestion_log)")
    names_q = ("updates_at_question", "deletes_at_question", "query_verdicts", "retry_verdicts", "refresh_verdicts",
               "retry_expansions")
    if not _traced(c, traces, names_q):
        return
    verdicts, updated, deleted, expansions = Counter(), 0, 0, 0
    for t in traces:
        if t is None:
            continue
        for kind, d in t.steps:
            if kind == "judge" and d.get("phase", "query") == "query":
                verdicts[str(d.get("verdict"))] += 1
            elif kind == "refresh":
                updated += len(_list(d.get("updated")))
                deleted += len(_list(d.get("deleted")))
            elif kind == "expand":
                expansions += 1
    dist = f"question-time Judge verdicts: {_fmt_counter(dict(sorted(verdicts.items())))}"
    if params.get("refresh_on_query") is not True:
        edit_why = ("refresh_on_query is off in the run's parameters (a question-time Refresh only reorders); "
                    + dist)
    else:
        edit_why = dist
    c.put("updates_at_question", updated, "traces (refresh steps)", edit_why)
    c.put("deletes_at_question", deleted, "traces (refresh steps)", edit_why)
    c.put("query_verdicts", dict(sorted(verdicts.items())), "traces (judge steps)")
    why_k = " (k_r=1: one round, no Retry)" if params.get("k_r") == 1 else ""
    c.put("retry_verdicts", verdicts["Retry"], "traces (judge steps)", dist + why_k)
    c.put("refresh_verdicts", verdicts["Refresh"], "traces (judge steps)", dist)
    c.put("retry_expansions", expansions, "traces (expand steps)", dist + why_k)


# -- MemR3 -------------------------------------------------------------------------------------------
#: "no gap" written into the gaps list: a placeholder saying there is none
_NO_GAP = re.compile(r"^\W*(no( \w+)? gaps?( \w+)?|none|n/?a|nothing( missing)?)\W*$", re.IGNORECASE)


def _gap_words() -> frozenset[str]:
    """The router schema's own field and action names: a model that echoes them into the gaps list
    (the 0.5B wrote "reasoning", "retrieve", "answer" there on whole LoCoMo conversations) names no gap."""
    from ..methods.memr3.prompts import router_schema
    from ..methods.memr3.state import ACTIONS

    return frozenset(router_schema(ACTIONS)["properties"]) | frozenset(ACTIONS)


def _real_gaps(values, words: frozenset[str]) -> tuple[list[str], int]:
    """(distinct gap entries of one router step, entries dropped as placeholders or schema words)."""
    gaps, dropped = [], 0
    for g in (str(v).strip() for v in values):
        if not g or _NO_GAP.match(g) or g.lower() in words:
            dropped += 1
        elif g not in gaps:
            gaps.append(g)
    return gaps, dropped


def _memr3(c: _Counts, rows, traces, mems, params) -> None:
    names = ("router_steps", "gaps_opened", "gaps_closed", "questions_with_gaps", "gap_entries_not_gaps",
             *(f"router_{k}" for k in ROUTER_CAUSES), "router_actions", "router_call_failures", "reflect_steps",
             "retrievals")
    if not _traced(c, traces, names):
        return
    steps = opened = closed = with_gaps = failed = failed_misses = reflects = retrievals = answered_first = 0
    questions = not_gaps = 0
    words = _gap_words()
    by_cause: Counter = Counter()
    actions: dict[str, Counter] = {}
    for t in traces:
        if t is None:
            continue
        prev: list[str] = []
        any_gap = False
        first = True
        questions += 1
        for kind, d in t.steps:
            if kind == "reflect":
                reflects += 1
            elif kind == "retrieve" and d.get("iteration", 0):
                retrievals += 1
            if kind != "router":
                continue
            steps += 1
            gaps, dropped = _real_gaps(_list(d.get("gaps")), words)
            not_gaps += dropped
            opened += sum(g not in prev for g in gaps)
            closed += sum(g not in gaps for g in prev)
            any_gap = any_gap or bool(gaps)
            prev = gaps
            cause = router_cause(d)
            if first:  # the model answered on the evidence of the first retrieval, with nothing left to find
                answered_first += cause == "choice" and d.get("action") == "answer"
                first = False
            by_cause[cause] += 1
            actions.setdefault(cause, Counter())[str(d.get("action"))] += 1
            if d.get("error"):
                failed += 1
                failed_misses += bool(d.get("cache_miss"))
        with_gaps += any_gap
    src = "traces (router steps)"
    fail_note = (f"; {failed} router calls failed ({failed_misses} cassette misses) and kept the previous gaps"
                 if failed else "")
    c.put("router_steps", steps, src)
    first_note = (f"; in {answered_first} of {questions} questions it chose to answer at its first step, "
                  "so it never had to say what was missing" if answered_first else "")
    junk_note = (f" ({not_gaps} entries of its gaps lists were placeholders or the schema's own words)"
                 if not_gaps else "")
    c.put("gaps_opened", opened, src,
          f"the router wrote no gap in any of its {steps} steps{junk_note}{first_note}{fail_note}")
    c.put("gaps_closed", closed, src,
          (f"none of the {opened} gaps opened was dropped by a later router step" if opened
           else "no gap was ever opened") + fail_note)
    c.put("questions_with_gaps", with_gaps, src)
    c.put("gap_entries_not_gaps", not_gaps, src)  # placeholders and schema words, left out of the gap counts
    forced = ", ".join(f"{k} {v}" for k, v in by_cause.items() if k != "choice") or "none"
    for cause in ROUTER_CAUSES:  # router_choice, router_budget, ...: steps by what decided the action
        c.put(f"router_{cause}", by_cause[cause], src,
              f"no router step was left to the model's choice ({forced})" if cause == "choice" and steps else None)
    c.put("router_actions", {k: dict(sorted(v.items())) for k, v in actions.items()}, src)
    c.put("router_call_failures", failed, src)
    c.put("reflect_steps", reflects, "traces (reflect steps)",
          "reflect=False in the run's parameters" if params.get("reflect") is False else None)
    c.put("retrievals", retrievals, "traces (retrieve steps after the first)")


# -- HyMem -------------------------------------------------------------------------------------------
def _hymem(c: _Counts, rows, traces, mems, params) -> None:
    names = ("deep_questions", "deep_rounds", "light_rounds", "reflection_rounds", "reflections_continued",
             "round_limit_hits", "deep_generator_failures", "deep_selection_fallbacks")
    if not _traced(c, traces, names):
        return
    deep_q = deep_r = light_r = light_ok = reflect = cont = limit = gen_fail = sel_fb = 0
    for t in traces:
        if t is None:
            continue
        deeps = t.of("deep")
        deep_q += bool(deeps)
        deep_r += len(deeps)
        gen_fail += sum(bool(d.get("error")) for d in deeps)
        sel_fb += sum(d.get("fallback") is True for d in deeps)
        lights = t.of("light")
        light_r += len(lights)
        light_ok += sum(d.get("finished") == 0 for d in lights)
        refl = t.of("reflect")
        reflect += len(refl)
        cont += sum(d.get("done") is False for d in refl)
        limit += sum(bool(d.get("round_limit_hit")) for d in t.of("final"))
    src = "traces"
    if params.get("deep") is False:
        deep_why = "deep=False in the run's parameters"
    else:
        deep_why = f"the light module judged its answer sufficient (finished=0) in {light_ok} of {light_r} rounds"
    c.put("deep_questions", deep_q, src + " (deep steps)", deep_why)
    c.put("deep_rounds", deep_r, src + " (deep steps)", deep_why)
    c.put("light_rounds", light_r, src + " (light steps)",
          "light=False in the run's parameters" if params.get("light") is False else None)
    if params.get("reflection") is False:
        refl_why = "reflection=False in the run's parameters"
    elif params.get("max_rounds") == 1 and params.get("reflect_last_round") is False:
        refl_why = "max_rounds=1 and reflect_last_round=False in the run's parameters"
    else:
        refl_why = None
    c.put("reflection_rounds", reflect, src + " (reflect steps)", refl_why)
    c.put("reflections_continued", cont, src + " (reflect steps)",
          f"reflection accepted the answer in all {reflect} reflection rounds" if reflect else refl_why)
    c.put("round_limit_hits", limit, src + " (final steps)")
    c.put("deep_generator_failures", gen_fail, src + " (deep steps)")
    c.put("deep_selection_fallbacks", sel_fb, src + " (deep steps)")


# -- H-Mem -------------------------------------------------------------------------------------------
def _hmem(c: _Counts, rows, traces, mems, params) -> None:
    tree_names = ("tree_nodes", "parents", "multi_child_parents", "single_child_copies")
    if _need_memory(c, mems, tree_names, "hmem"):
        nodes = parents = multi = copies = 0
        absent = []
        for conv, mem in mems.items():
            tree = mem.structures.get("tree") if isinstance(mem.structures, dict) else None
            if not isinstance(tree, list):
                absent.append(mem.structures_problem or f"memories/hmem/{conv}/structures.json has no tree")
                continue
            for r in tree:
                if not isinstance(r, dict):
                    continue
                nodes += 1
                if _int(r.get("level")) >= 2:
                    parents += 1
                    multi += len(_list(r.get("children"))) >= 2
                    copies += bool(r.get("copy_of_child"))
        if absent:
            for n in tree_names:
                c.lack(n, "; ".join(absent[:3]))
        else:
            src = "structures.json (tree)"
            c.put("tree_nodes", nodes, src)
            c.put("parents", parents, src, f"the tree has no node above level 1 ({nodes} nodes)")
            c.put("multi_child_parents", multi, src,
                  (f"all {parents} parents (level >= 2) have a single child; {copies} of them are verbatim copies"
                   if parents else f"the tree has no node above level 1 ({nodes} nodes)"))
            c.put("single_child_copies", copies, src)
    names = ("subqueries", "planner_scopes", "planner_fallbacks", "followups")
    if not _traced(c, traces, names):
        return
    scopes: Counter = Counter()
    subs = fallbacks = follow = 0
    for t in traces:
        if t is None:
            continue
        for d in t.of("plan"):
            sq = [s for s in _list(d.get("subqueries")) if isinstance(s, dict)]
            subs += len(sq)
            scopes.update(str(s.get("scope")) for s in sq)
            fallbacks += bool(d.get("fallback"))
        follow += sum(not d.get("skipped") for d in t.of("followup"))
    src = "traces (plan steps)"
    c.put("subqueries", subs, src)
    c.put("planner_scopes", dict(sorted(scopes.items())), src)
    c.put("planner_fallbacks", fallbacks, src)
    c.put("followups", follow, "traces (followup steps)")


# -- RecMem ------------------------------------------------------------------------------------------
def _recmem(c: _Counts, rows, traces, mems, params) -> None:
    names = ("trigger_checks", "trigger_firings", "trigger_outcomes", "consolidations", "episodes_produced",
             "consolidation_failures", "merges", "merge_checks", "refinements", "refined_facts")
    if not _need_memory(c, mems, names, "recmem"):
        return
    decisions, absent = [], []
    consolidate, merges, refined_facts = [], 0, 0
    written: dict = {}  # (conversation, cluster) -> the episodes its consolidation wrote
    attempts, refinements, no_attempts, no_refinements = [], [], [], []
    theta = {}
    for conv, mem in mems.items():
        st = mem.structures if isinstance(mem.structures, dict) else {}
        log = st.get("trigger_log")
        if isinstance(log, list):
            decisions += [d for d in log if isinstance(d, dict)]
        else:
            absent.append(mem.structures_problem or f"memories/recmem/{conv}/structures.json has no trigger_log")
        if isinstance(st.get("params"), dict):
            theta = st["params"]
        if isinstance(st.get("merge_attempts"), list):
            attempts += [a for a in st["merge_attempts"] if isinstance(a, dict)]
        else:
            no_attempts.append(mem.structures_problem or f"memories/recmem/{conv}/structures.json has no "
                                                          "merge_attempts (saved before RecMem wrote them)")
        if isinstance(st.get("refinements"), list):
            refinements += [(conv, r) for r in st["refinements"] if isinstance(r, dict)]
        else:
            no_refinements.append(mem.structures_problem or f"memories/recmem/{conv}/structures.json has no "
                                                              "refinements (saved before RecMem wrote them)")
        for e in mem.events:
            data = e.get("data") if isinstance(e.get("data"), dict) else {}
            if e["kind"] == "CONSOLIDATE":
                consolidate.append((conv, e.get("unit_id"), data.get("cluster")))
                written.setdefault((conv, data.get("cluster")), []).append({"id": e.get("unit_id"),
                                                                            "text": e.get("after")})
            elif e["kind"] == "MERGE":
                merges += 1
            elif e["kind"] == "ADD" and data.get("mode"):
                refined_facts += 1
    repeats = {(conv, eid) for (conv, _), eps in written.items() for eid in repeated_episodes(eps)}
    src_ev = "events.jsonl"
    clusters = {(conv, cl if cl is not None else uid) for conv, uid, cl in consolidate}
    episodes = sum(1 for _, uid, cl in consolidate if cl is None or uid != cl)  # direct mode: unit_id = cluster
    if absent:
        for n in ("trigger_checks", "trigger_firings", "trigger_outcomes", "consolidation_failures"):
            c.lack(n, "; ".join(absent[:3]))
        fired, fail_n = None, None
    else:
        src = "structures.json (trigger_log)"
        fired = sum(d.get("fired") is True for d in decisions)
        outcomes = Counter(str(d.get("outcome")) for d in decisions)
        fail_n = outcomes["failed"] + outcomes["dropped"]
        gated = [d for d in decisions if d.get("outcome") != "merged"]
        top = max((_int(d.get("count")) for d in gated), default=0)
        c.put("trigger_checks", len(gated), src)
        c.put("trigger_firings", fired, src,
              f"the highest recurrence count in {len(gated)} gate checks was {top} (theta_count "
              f"{theta.get('theta_count')}, theta_sim {theta.get('theta_sim')})")
        c.put("trigger_outcomes", dict(sorted(outcomes.items())), src)
        c.put("consolidation_failures", fail_n, src)
    ev_gone = _events_lacking(c, mems, ("consolidations", "episodes_produced", "merges", "refined_facts"))
    cons_why = ("the trigger never fired" if fired == 0 else
                f"all {fired} firings failed to consolidate" if fired and fail_n == fired else None)
    if not ev_gone:
        c.put("consolidations", len(clusters), src_ev + " (CONSOLIDATE)", cons_why)
        c.put("episodes_produced", episodes, src_ev + " (CONSOLIDATE)",
              "refine_with_episode='no_episodes': facts from the raw cluster, no episodes"
              if theta.get("refine_with_episode") == "no_episodes" else cons_why)
        c.put("episodes_repeated", len(repeats), src_ev + " (CONSOLIDATE: the same text as an earlier episode of "
                                                         "the same cluster)")
    merge_why = None
    if no_attempts:
        c.lack("merge_checks", "; ".join(no_attempts[:3]))
    else:
        passed = sum(a.get("passed") is True for a in attempts)
        yes = sum(a.get("should_merge") == "yes" for a in attempts)
        c.put("merge_checks", len(attempts), "structures.json (merge_attempts)",
              "no episode existed when a unit arrived, so no merge-first check ran")
        merge_why = (f"{len(attempts)} merge checks: {passed} passed the cosine gate, the LLM said yes on {yes}"
                     if attempts else "no episode existed when a unit arrived, so no merge-first check ran")
    if not ev_gone:
        c.put("merges", merges, src_ev + " (MERGE)", merge_why)
    if no_refinements:
        c.lack("refinements", "; ".join(no_refinements[:3]))
    else:
        nothing = not ev_gone and not clusters and not merges
        c.put("refinements", len(refinements), "structures.json (refinements)",
              "no consolidation or merge, so nothing was refined" if nothing else None)
        c.put("refinement_failures", sum(bool(r.get("error")) for _, r in refinements),
              "structures.json (refinements)")
        if not ev_gone:
            c.put("refinements_of_repeats", sum((conv, r.get("episode_id")) in repeats for conv, r in refinements),
                  "structures.json (refinements) x events.jsonl (CONSOLIDATE)")
    if not ev_gone:
        c.put("refined_facts", refined_facts, src_ev + " (ADD from a refinement)",
              "no refinement call ran" if not no_refinements and not refinements else None)


_SPECIFIC = {"ama": _ama, "memr3": _memr3, "hymem": _hymem, "hmem": _hmem, "recmem": _recmem}


def _checked(base: str, rows, traces, mems: dict, entry: dict, problems: list[str]) -> dict | None:
    """Which firings of ``base``'s mechanism were right, against the planted phenomena of the conversations
    (``workbench.eval.annotations``); ``{"checkable": False, ...}`` where a run's data carries none."""
    from .annotations import check_ama, check_hmem, check_hymem, check_recmem, not_checkable, shipped_annotations

    if base not in ("ama", "hymem", "recmem", "hmem", "memr3"):
        return None
    try:
        ann = shipped_annotations()
    except ValueError as exc:  # a damaged annotations file: say so, count nothing against it
        problems.append(f"planted-phenomena annotations unreadable: {exc}")
        return not_checkable([])
    convs = {str(r.get("conv_id")) for r in rows} | set(mems)
    if base == "ama":
        return check_ama({cid: m.events for cid, m in mems.items()}, ann) if mems else not_checkable(convs)
    if base == "hymem":
        deep = {str(r.get("qa_id")): bool(t.of("deep")) for r, t in zip(rows, traces) if t is not None}
        return check_hymem(deep, {str(r.get("qa_id")): str(r.get("conv_id")) for r in rows}, ann)
    if base == "recmem":
        eps = {cid: m.structures.get("episodes") or [] for cid, m in mems.items() if isinstance(m.structures, dict)}
        return check_recmem(eps, ann) if eps else not_checkable(convs)
    if base == "hmem":
        trees = {cid: m.structures.get("tree") or [] for cid, m in mems.items() if isinstance(m.structures, dict)}
        return check_hmem(trees, ann) if trees else not_checkable(convs)
    if not any(c in ann for c in convs):
        return not_checkable(convs)
    gaps = entry.get("counts", {}).get("gaps_opened")
    return {"checkable": True, "gaps_opened": gaps,
            "note": ("no gap was written: nothing to check against the planted items" if not gaps else
                     "gaps are free text: read them in the trace stepper against the planted items")}


# ================================================================================================
# The census
# ================================================================================================
def census(source, *, memories: dict | None = None, manifest: dict | None = None) -> dict:
    """The mechanism census of a run directory (a path), or of result rows (an iterable of dicts or
    ``QuestionResult``) with optional saved ``memories`` (``{method: {conv_id: {"events": [...],
    "structures": {...}}}}``) and ``manifest``. See the module docstring for what is counted."""
    problems: list[str] = []
    if isinstance(source, (str, os.PathLike)):
        run = Path(source)
        if not run.is_dir():
            raise FileNotFoundError(f"run directory not found: {run}")
        store, results = None, run / "results.jsonl"
        try:
            store = ResultsStore(results) if results.is_file() else None
            why_none = f"{results} is missing"
        except LeadsOutside as exc:
            why_none = str(exc)
        rows = list(store) if store is not None else []
        if store is not None:
            problems.extend(str(b) for b in store.bad)
        else:
            problems.append(f"{why_none}: only saved memories are counted")
        mems = _read_memories(run, problems)
        manifest = {}
        if (run / "manifest.json").is_file():
            try:
                manifest = read_json(confined(run / "manifest.json", run))
            except DamagedFile as exc:  # LeadsOutside included
                problems.append(str(exc))
        sources = ["results.jsonl", "memories/*/*/events.jsonl", "memories/*/*/structures.json", "manifest.json"]
    else:
        rows = [r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in source]
        mems = _memories_from(memories)
        manifest = manifest or {}
        sources = ["result rows"] + (["saved memories"] if memories else [])
    by_method: dict[str, list[dict]] = {}
    for r in rows:
        by_method.setdefault(str(r.get("method")), []).append(r)
    methods = {}
    for name in sorted(set(by_method) | set(mems)):
        mrows = by_method.get(name, [])
        traces = [_trace(r, f"results.jsonl: {name} / {r.get('qa_id')!r}", problems) for r in mrows]
        c = _Counts()
        _common(c, mrows, traces)
        params = _params(mrows)
        fn = _SPECIFIC.get(method_base(name))  # a labelled variant (ama[probe]) counts as its method
        if fn is not None:
            common = set(c.counts)
            try:
                fn(c, mrows, traces, mems.get(name, {}), params)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a shape the readers did not foresee
                reason = f"counting stopped at an unexpected value in the run ({type(exc).__name__}: {exc})"
                problems.append(f"{name}: {reason}; its mechanism counts are left out")
                for part in (c.counts, c.why_zero, c.missing, c.sources):
                    for key in [k for k in part if k not in common]:
                        del part[key]
                c.lack("mechanisms", reason)
        entry = c.to_dict()
        checked = _checked(method_base(name), mrows, traces, mems.get(name, {}), entry, problems)
        if checked is not None:
            entry["checked"] = checked
        entry["configurations"] = len({str(r.get("params_hash")) for r in mrows})
        entry["conversations_saved"] = len(mems.get(name, {}))
        methods[name] = entry
    return {"schema": SCHEMA, "computed_from": sources,
            "scripted": bool(manifest.get("scripted")) if isinstance(manifest, dict) else False,
            "label": manifest.get("label") if isinstance(manifest, dict) and manifest.get("scripted") else None,
            "methods": methods, "problems": problems}


def write_census(run_dir: str | os.PathLike, value: dict | None = None) -> Path:
    """(Re)compute the census of ``run_dir`` (unless given) and write ``<run_dir>/mechanisms.json`` atomically."""
    value = census(run_dir) if value is None else value
    return write_json_atomic(Path(run_dir) / FILE, value, indent=2)


def read_census(run_dir: str | os.PathLike) -> dict | None:
    """``<run_dir>/mechanisms.json`` if present and shaped like a census; ``DamagedFile`` if it is not."""
    path = Path(run_dir) / FILE
    if not path.is_file():
        return None
    value = read_json(confined(path, run_dir))
    if value.get("schema") != SCHEMA or not isinstance(value.get("methods"), dict):
        raise DamagedFile(path, f"not a mechanism census of schema {SCHEMA!r}")
    return value


# ================================================================================================
# Rendering
# ================================================================================================
#: per method, the counts the app header and the one-line summary show, with their labels
HEADLINE: dict[str, tuple[tuple[str, str], ...]] = {
    "ama": (("updates_at_ingestion", "updates at ingestion"), ("deletes_at_ingestion", "deletes at ingestion"),
            ("updates_at_question", "updates at question time"), ("deletes_at_question", "deletes at question time"),
            ("retry_verdicts", "Retry verdicts"), ("refresh_verdicts", "Refresh verdicts")),
    "memr3": (("gaps_opened", "gaps opened"), ("gaps_closed", "gaps closed"), ("router_choice", "router by choice"),
              ("router_budget", "forced by budget"), ("router_reflect_streak", "forced by streak"),
              ("router_empty_retrieval", "forced by empty retrieval")),
    "hymem": (("deep_questions", "questions went deep"), ("reflection_rounds", "reflection rounds")),
    "hmem": (("multi_child_parents", "parents with >= 2 children"), ("planner_scopes", "planner scopes")),
    "recmem": (("trigger_firings", "trigger firings"), ("consolidations", "consolidations"),
               ("episodes_produced", "episodes"), ("merges", "merges"), ("refinements", "refinements")),
}
#: per method, counts of a model-output problem the header lists beside the failures when non-zero
PROBLEMS: dict[str, tuple[tuple[str, str], ...]] = {
    "recmem": (("episodes_repeated", "episodes repeating another of the same reply word for word:"),
               ("refinements_of_repeats", "refinement calls spent on those repeats:")),
}
_FAILURES = (("row_errors", "raised"), ("fallback_answers", "fallback answers"), ("cassette_misses", "cassette misses"),
             ("llm_errors", "failed LLM calls"), ("construction_llm_errors", "failed construction calls"),
             ("judge_errors", "judge errors"))


def value_text(value) -> str:
    if value is None:
        return "missing"
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()) and value:
            return "; ".join(f"{k}: {value_text(v)}" for k, v in value.items())
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
    return str(value)


def item_text(item: dict) -> str:
    """One headline item as words: ``3 gaps opened``, or ``planner scopes: SHORT 2, LONG 1`` for a breakdown
    (and for a label that ends in a colon: ``episodes repeating ...: 95``)."""
    if item["label"].endswith(":"):
        return f"{item['label']} {value_text(item['value'])}"
    if isinstance(item["value"], dict):
        return f"{item['label']}: {value_text(item['value'])}"
    return f"{value_text(item['value'])} {item['label']}"


def headline(value: dict) -> list[dict]:
    """Per method, ``{"method", "questions", "items": [{"name", "label", "value", "fired", "note"}],
    "failures": [...]}``: the census counts the app header shows. ``fired`` is False for a zero (or
    an all-zero dict), None for a missing count; ``note`` is its ``why_zero`` or ``missing`` text."""
    out = []
    for method, entry in (value.get("methods") or {}).items():
        if not isinstance(entry, dict):
            continue
        counts = entry.get("counts") if isinstance(entry.get("counts"), dict) else {}
        why = entry.get("why_zero") if isinstance(entry.get("why_zero"), dict) else {}
        missing = entry.get("missing") if isinstance(entry.get("missing"), dict) else {}

        def item(name, label):
            v = counts.get(name)
            fired = None if v is None else not _is_zero(v)
            return {"name": name, "label": label, "value": v, "fired": fired,
                    "note": missing.get(name) if v is None else why.get(name, "")}

        items = [item(n, lbl) for n, lbl in HEADLINE.get(method_base(method), ()) if n in counts]
        failures = [item(n, lbl) for n, lbl in _FAILURES + PROBLEMS.get(method_base(method), ()) if counts.get(n)]
        from .annotations import checked_text

        out.append({"method": method, "questions": counts.get("questions"), "items": items, "failures": failures,
                    "checked": checked_text(entry.get("checked") if isinstance(entry.get("checked"), dict) else None)})
    return out


def summary_line(value: dict) -> str:
    """``AMA: 0 updates at ingestion (not fired), ... · MemR3: 3 gaps opened, ...`` (plain text)."""
    parts = []
    for h in headline(value):
        bits = [item_text(i) + (" (not fired)" if i["fired"] is False else "") for i in h["items"]]
        bits += [item_text(f) for f in h["failures"]]
        if h.get("checked"):
            bits.append(f"checked: {h['checked']}")
        if bits:
            parts.append(f"{h['method']}: " + ", ".join(bits))
    return " · ".join(parts)


#: counts every method gets (``_common``); a compact listing leaves them out where they are zero
_GENERIC = ("answers_with_trace", "row_errors", "flagged_rows", "llm_errors", "cassette_misses", "fallback_answers",
            "construction_llm_errors", "construction_method_failures", "failure_kinds", "judge_errors")


def _rows(value: dict, *, compact: bool = False) -> list[list[str]]:
    rows = []
    for method, entry in (value.get("methods") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("counts"), dict):
            continue
        why, missing = entry.get("why_zero") or {}, entry.get("missing") or {}
        for name, v in entry["counts"].items():
            if compact and name in _GENERIC and v is not None and _is_zero(v):
                continue
            note = missing.get(name) if v is None else why.get(name, "")
            headline = dict(HEADLINE.get(method_base(method), ()))
            flag = "missing" if v is None else ("not fired" if _is_zero(v) and name in headline
                                                else "")
            rows.append([method, name, value_text(v), flag, note or ""])
    return rows


def census_markdown(value: dict, *, heading: str = "## Mechanisms fired") -> str:
    """The census as a Markdown section: one table row per count (method, count, value, note)."""
    lines = [heading, ""]
    if value.get("scripted"):
        label = markdown_text(value.get("label") or "the replies were scripted")
        lines += [f"> Scripted run: {label}. These counts show the "
                  "plumbing, not what a model would do.", ""]
    lines += ["Counted from what the run recorded (result rows and their traces, saved events and structures; "
              "`workbench.eval.mechanisms`). A zero of a method's own mechanism is marked *not fired*, with the "
              "evidence from the run where it can be read; *missing* means the run does not record it. Failure "
              "counts that are zero are left out (`workbench mechanisms RUN_DIR` lists every count).", ""]
    rows = [[markdown_text(c) for c in (m, n, v, f, _cut(w, 160))] for m, n, v, f, w in _rows(value, compact=True)]
    lines.append(markdown_table(["method", "count", "value", "", "why zero / why missing"], rows,
                                [False, False, False, False, False]) if rows else "(no methods in this run)")
    checked = [(h["method"], h["checked"]) for h in headline(value) if h.get("checked")]
    if checked:
        lines += ["", "Did each firing do the right thing? Checked against the planted phenomena of the conversation "
                  "(`sample_data/annotations.json`, `workbench.eval.annotations`):", ""]
        lines += [f"- **{m}**: {_cut(t, 300)}" for m, t in checked]
    if value.get("problems"):
        lines += ["", f"{len(value['problems'])} problem(s) reading the run: "
                  + "; ".join(markdown_text(_cut(p, 200)) for p in value["problems"][:5])]
    return "\n".join(lines) + "\n"


def census_text(value: dict) -> str:
    """The census as a plain-text table for the terminal (``workbench mechanisms``)."""
    rows = [["method", "count", "value", "", "note"]] + [[m, n, _cut(v, 60), f, _cut(w, 90)]
                                                         for m, n, v, f, w in _rows(value)]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    out = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + ("  " + r[4] if r[4] else "") for r in rows]
    if value.get("scripted"):
        out.insert(0, f"SCRIPTED RUN: {value.get('label') or ''}".rstrip())
    for h in headline(value):
        if h.get("checked"):
            out.append(f"checked {h['method']}: {h['checked']}")
    for p in value.get("problems") or []:
        out.append(f"problem: {p}")
    return "\n".join(line.rstrip() for line in out)


def _cut(text, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def mechanisms_command(args) -> int:
    """``workbench mechanisms RUN_DIR``: (re)compute the census, print it, write ``mechanisms.json``."""
    value = census(args.run)
    if args.format == "json":
        print(terminal_json(json.dumps(value, indent=2, ensure_ascii=False)))  # C1 controls survive json.dumps
    else:
        print(terminal_text(census_text(value)))
    if not args.no_write:
        path = write_census(args.run, value)
        if args.format != "json":
            print(f"\n-> {path}")
    return 0
