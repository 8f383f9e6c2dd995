"""MemR3's census: router steps, gaps opened and closed, what decided each action, reflections. (``CensusSpec``, run by
the generic census ``workbench.eval.mechanisms``; moved here from it unchanged.) Its check's input (``gap_cycles``): per
question, the first batch's turns and each gap's cycle (opened, the search made for it, what it brought, closed), so
the generic ``gaps`` check can judge a gap against the planted multi-hop turns the first batch lacked (issue #64: the
designed run on the gallery example showed the mechanism right while the census could only list the gap for
reading)."""
from __future__ import annotations

import re
from collections import Counter

from ...words import one_line
from .. import census_kit as K


#: router step ``forced`` values (``state.GUARDS``) and the two unforced causes, in display order
ROUTER_CAUSES = ("choice", "budget", "empty_retrieval", "reflect_streak", "nothing_left", "fallback")
#: "no gap" written into the gaps list: a placeholder saying there is none
_NO_GAP = re.compile(r"^\W*(no( \w+)? gaps?( \w+)?|none|n/?a|nothing( missing)?)\W*$", re.IGNORECASE)


def _gap_words() -> frozenset[str]:
    """The router schema's own field and action names: a model that echoes them into the gaps list
    (the 0.5B wrote "reasoning", "retrieve", "answer" there on whole LoCoMo conversations) names no gap."""
    from .prompts import router_schema
    from .state import ACTIONS

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


def count(c: K.Counts, rows, traces, mems, params) -> None:
    """This method's counts (``CensusSpec.count``)."""
    names = ("router_steps", "gaps_opened", "gaps_closed", "questions_with_gaps", "gap_entries_not_gaps",
             *(f"router_{k}" for k in ROUTER_CAUSES), "router_actions", "router_call_failures", "reflect_steps",
             "retrievals", "gaps_only_in_reasoning")
    if not K.traced(c, traces, names):
        return
    steps = opened = closed = with_gaps = failed = failed_misses = reflects = retrievals = answered_first = 0
    questions = not_gaps = 0
    said: list[str] = []  # steps whose gaps list is empty though their reasoning names something missing
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
            gaps, dropped = _real_gaps(K.as_list(d.get("gaps")), words)
            not_gaps += dropped
            if not gaps and not d.get("error") and (sentence := K.gap_in_reasoning(d.get("reasoning"))):
                said.append(sentence)
            opened += sum(g not in prev for g in gaps)
            closed += sum(g not in gaps for g in prev)
            any_gap = any_gap or bool(gaps)
            prev = gaps
            cause = K.step_cause(d)
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
    said_note = (f"; in {len(said)} of them its reasoning names one all the same (“{one_line(said[0], 110)}”)"
                 if said else "")
    c.put("gaps_opened", opened, src,
          f"the router wrote no gap in any of its {steps} steps{said_note}{junk_note}{first_note}{fail_note}")
    c.put("gaps_closed", closed, src,
          (f"none of the {opened} gaps opened was dropped by a later router step" if opened
           else "no gap was ever opened") + fail_note)
    c.put("questions_with_gaps", with_gaps, src)
    c.put("gap_entries_not_gaps", not_gaps, src)  # placeholders and schema words, left out of the gap counts
    c.put("gaps_only_in_reasoning", len(said), src)  # an empty gaps list beside reasoning that names something missing
    forced = ", ".join(f"{k} {v}" for k, v in by_cause.items() if k != "choice") or "none"
    for cause in ROUTER_CAUSES:  # router_choice, router_budget, ...: steps by what decided the action
        c.put(f"router_{cause}", by_cause[cause], src,
              f"no router step was left to the model's choice ({forced})" if cause == "choice" and steps else None)
    c.put("router_actions", {k: dict(sorted(v.items())) for k, v in actions.items()}, src)
    c.put("router_call_failures", failed, src)
    c.put("reflect_steps", reflects, "traces (reflect steps)",
          "reflect=False in the run's parameters" if params.get("reflect") is False else None)
    c.put("retrievals", retrievals, "traces (retrieve steps after the first)")


def _batch_turns(step: dict) -> list[str]:
    """The conversation turns a retrieve step's batch holds (its hits' ``source_ids``), in order."""
    hits = step.get("hits") if isinstance(step.get("hits"), list) else []
    return list(dict.fromkeys(str(t) for h in hits if isinstance(h, dict) for t in K.as_list(h.get("source_ids"))))


def gap_cycles(rows, traces, mems) -> dict:
    """What the generic ``gaps`` check judges (``workbench.eval.annotations``): qa id -> ``{"first": the turns of the
    initial batch (q alone), "cycles": [...]}``, one cycle per gap a router step opened: ``gap`` (its words),
    ``step`` (the router iteration that wrote it), ``query`` (the refinement delta-q of the first retrieval made
    while it was open; None when that retrieval searched q alone, or when none was made), ``found`` (the turns that
    retrieval brought) and ``closed`` (a later router step no longer lists it). The batches are read from the rows'
    steps (``hits``), which the census's plain traces leave out; placeholders and schema words are no gap, as in
    ``count``."""
    words = _gap_words()
    out: dict = {}
    for r, t in zip(rows, traces):
        if t is None or not isinstance(r, dict):
            continue
        answer = r.get("answer")
        steps = answer.get("steps") if isinstance(answer, dict) else None
        first: list[str] | None = None
        cycles: list[dict] = []
        listed: list[str] = []
        for s in steps if isinstance(steps, list) else ():
            if not isinstance(s, dict) or not isinstance(s.get("data"), dict):
                continue
            kind, d = s.get("kind"), s["data"]
            if kind == "retrieve":
                turns = _batch_turns(s)
                if first is None:
                    first = turns
                    continue
                for c in cycles:  # the first retrieval made while a gap is open is the one aimed at it
                    if "found" not in c and not c["closed"]:
                        c["query"], c["found"] = (d.get("delta_query") or None), turns
            elif kind == "router" and not d.get("error"):  # a failed call kept the previous gaps: no new step
                gaps, _ = _real_gaps(K.as_list(d.get("gaps")), words)
                for c in cycles:
                    c["closed"] = c["closed"] or c["gap"] not in gaps
                cycles += [{"gap": g, "step": d.get("iteration"), "closed": False} for g in gaps if g not in listed]
                listed = gaps
        for c in cycles:
            c.setdefault("query", None)
            c.setdefault("found", [])
        out[str(r.get("qa_id"))] = {"first": first or [], "cycles": cycles}
    return out


CENSUS = K.CensusSpec(
    count,
    headline=(("gaps_opened", "gaps opened"), ("gaps_closed", "gaps closed"), ("router_choice", "router by choice"),
            ("router_budget", "forced by budget"), ("router_reflect_streak", "forced by streak"),
            ("router_empty_retrieval", "forced by empty retrieval")),
    check=("gaps", gap_cycles),
)
