"""RecMem's census: the trigger's checks and firings, consolidations, episodes, merges and refinements, and the
refined facts read against the turns they came from (repeats, copies of a turn, the first person, relations no
turn states).
(``CensusSpec``, run by the generic census ``workbench.eval.mechanisms``.)"""
from __future__ import annotations

from collections import Counter

from .. import census_kit as K
from .inspection import repeated_episodes
from .structures import episodes_with_parts


def written_copies(events) -> dict[str, str]:
    """Episode id -> the earlier episode of the same consolidation whose text it repeats word for word, as the
    CONSOLIDATE events wrote them (before any merge changed a text)."""
    written: dict = {}
    for e in events:
        data = e.get("data") if isinstance(e.get("data"), dict) else {}
        if e.get("kind") == "CONSOLIDATE":  # read from a run directory: the cluster may be any JSON value
            key = str(data.get("cluster") if data.get("cluster") is not None else e.get("unit_id"))
            written.setdefault(key, []).append({"id": e.get("unit_id"), "text": e.get("after")})
    return {eid: first for eps in written.values() for eid, first in repeated_episodes(eps).items()}


def refined_fact_pairs(mem: K.Memory) -> list[tuple[str, list[str] | None]]:
    """(fact, what its source turns said) for each fact a refinement added, in order: the turns are the cluster's
    (or the episode's) source turns from the run's saved conversation (``Memory.turns``), None when it lacks them."""
    return [(K.text(e.get("after")), K.source_turns(e, mem.turns)) for e in mem.events
            if e.get("kind") == "ADD" and isinstance(e.get("data"), dict) and e["data"].get("mode")]


def _facts(c: K.Counts, mems) -> None:
    """The refined facts read against their source turns (``census_kit.fact_quality``); the view flags each fact
    with the same rules."""
    if K.events_lacking(c, mems, K.FACT_COUNTS):
        return
    pairs = [pair for mem in mems.values() for pair in refined_fact_pairs(mem)]
    q = K.fact_quality(pairs, K.prompts_of(mems))
    if q["written"]:
        K.put_fact_quality(c, q, "events.jsonl (ADD from a refinement)",
                           "the run did not save their conversation (conversations/*.json)")


def count(c: K.Counts, rows, traces, mems, params) -> None:
    """This method's counts (``CensusSpec.count``)."""
    names = ("trigger_checks", "trigger_firings", "trigger_outcomes", "consolidations", "episodes_produced",
             "consolidation_failures", "merges", "merge_checks", "refinements", "refined_facts")
    if not K.need_memory(c, mems, names, "recmem"):
        return
    decisions, absent = [], []
    consolidate, merges, refined_facts = [], 0, 0
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
            elif e["kind"] == "MERGE":
                merges += 1
            elif e["kind"] == "ADD" and data.get("mode"):
                refined_facts += 1
    repeats = {(conv, eid) for conv, mem in mems.items() for eid in written_copies(mem.events)}
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
        top = max((K.as_int(d.get("count")) for d in gated), default=0)
        c.put("trigger_checks", len(gated), src)
        c.put("trigger_firings", fired, src,
              f"the highest recurrence count in {len(gated)} gate checks was {top} (theta_count "
              f"{theta.get('theta_count')}, theta_sim {theta.get('theta_sim')})")
        c.put("trigger_outcomes", dict(sorted(outcomes.items())), src)
        c.put("consolidation_failures", fail_n, src)
    ev_gone = K.events_lacking(c, mems, ("consolidations", "episodes_produced", "merges", "refined_facts"))
    cons_why = ("the trigger never fired" if fired == 0 else
                f"all {fired} firings failed to consolidate" if fired and fail_n == fired else None)
    if not ev_gone:
        c.put("consolidations", len(clusters), src_ev + " (CONSOLIDATE)", cons_why)
        c.put("episodes_produced", episodes, src_ev + " (CONSOLIDATE)",
              "refine_with_episode='no_episodes': facts from the raw cluster, no episodes"
              if theta.get("refine_with_episode") == "no_episodes" else cons_why)
        c.put("episodes_repeated", len(repeats), src_ev + " (CONSOLIDATE: the same text as an earlier episode of "
                                                         "the same cluster)")
    held = [m.structures.get("episodes") if isinstance(m.structures, dict) else None for m in mems.values()]
    if mems and all(isinstance(h, list) for h in held):
        # the episodes the memory holds, as the model wrote them (a merge rewrites one); each consolidation item is
        # bounded at 300 characters (workbench.llm.bounds), so a reply that runs on stops mid-word
        K.put_summary_quality(c, "episodes", [(K.text(e.get("text")), K.source_turns(e, m.turns))
                                              for m in mems.values() for e in K.as_list(m.structures["episodes"])
                                              if isinstance(e, dict)],
                              "structures.json (episodes)", "the run saved no conversation (conversations/<id>.json)",
                              count=False, words=False)
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
    _facts(c, mems)


CENSUS = K.CensusSpec(
    count,
    headline=(("trigger_firings", "trigger firings"), ("consolidations", "consolidations"),
            ("episodes_produced", "episodes"), ("merges", "merges"), ("refinements", "refinements")),
    problems=(("episodes_repeated", "episodes repeating another of the same reply word for word:"),
              ("refinements_of_repeats", "refinement calls spent on those repeats:"),
              ("episodes_cut", "episodes cut off mid-sentence (the length cap):"),
              ("episodes_looping", "episodes repeating a run of words (the model looped):"),
              ("episodes_foreign_script", "episodes in a script their turns never use:"),
              ("facts_copying_prompt", "refined facts copied from its own prompt (an instruction, not anything said):"),
              ("facts_unstated_relation", "refined facts stating a relation their turns never name:"),
              ("facts_copying_turn", "refined facts that copy a turn word for word:"),
              ("facts_first_person", "refined facts in the first person:")),
    check=("recurrence", lambda rows, traces, mems: {
        cid: episodes_with_parts(m.structures, written_copies(m.events)) for cid, m in mems.items()
        if isinstance(m.structures, dict)}),
)
