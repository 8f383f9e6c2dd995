"""AMA's census: edits at ingestion (events and the ingestion log) and at question time, Judge verdicts.
(``CensusSpec``, run by the generic census ``workbench.eval.mechanisms``; moved here from it unchanged.)"""
from __future__ import annotations

from collections import Counter

from .. import census_kit as K


def count(c: K.Counts, rows, traces, mems, params) -> None:
    """This method's counts (``CensusSpec.count``)."""
    names_ev = ("updates_at_ingestion", "deletes_at_ingestion")
    log_names = ("ingestion_checks", "ingestion_verdicts", "ingestion_refresh_actions")
    if K.need_memory(c, mems, names_ev + log_names, "ama"):
        kinds: Counter = Counter()
        for mem in mems.values():
            for e in mem.events:
                if not K.text(e.get("cause")).startswith("question:"):
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
            # with question probes standing in for the paper's Judge (conflict_check="probe"), the verdicts are the
            # probes' (review §2.5: naming the Judge attributed them to the paper's agent)
            checker = ("the question probes (conflict_check='probe', in place of the paper's Judge)"
                       if params.get("conflict_check") == "probe" else "the ingestion Judge")
            why = (f"{checker} answered {K.fmt_counter(dict(verdicts))} on {len(judges)} checks"
                   + (f"; Refresher: {K.fmt_counter(dict(refreshes))}" if refreshes else ""))
        if not K.events_lacking(c, mems, names_ev):
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
    if not K.traced(c, traces, names_q):
        return
    verdicts, updated, deleted, expansions = Counter(), 0, 0, 0
    for t in traces:
        if t is None:
            continue
        for kind, d in t.steps:
            if kind == "judge" and d.get("phase", "query") == "query":
                verdicts[str(d.get("verdict"))] += 1
            elif kind == "refresh":
                updated += len(K.as_list(d.get("updated")))
                deleted += len(K.as_list(d.get("deleted")))
            elif kind == "expand":
                expansions += 1
    dist = f"question-time Judge verdicts: {K.fmt_counter(dict(sorted(verdicts.items())))}"
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


CENSUS = K.CensusSpec(
    count,
    headline=(("updates_at_ingestion", "updates at ingestion"), ("deletes_at_ingestion", "deletes at ingestion"),
            ("updates_at_question", "updates at question time"), ("deletes_at_question", "deletes at question time"),
            ("retry_verdicts", "question-time Retry verdicts"),
            ("refresh_verdicts", "question-time Refresh verdicts")),
    check=("edits", lambda rows, traces, mems: {cid: m.events for cid, m in mems.items()}),
    check_off=lambda params: "the Refresher was switched off (refresher=False)" if params.get("refresher") is False
    else None,
)
