"""H-Mem's census: the tree's parents (from structures.json), the planner's scopes (from traces), and what the model
wrote into the memory read against the turns it was made from: the leaves as facts, the relations labelled with the
prompt's own example, the summaries (over their word limit, cut off, looping, in another script) and the profiles
(echoing the prompt's layout). (``CensusSpec``, run by the generic census ``workbench.eval.mechanisms``.)"""
from __future__ import annotations

import re
from collections import Counter

from .. import census_kit as K
from . import prompts as P

#: the relation labels the small profile's extraction prompt gives as examples ("lives in", "sister of"); the paper
#: profile's prompt gives none. Over conv-30 the 0.5B labelled 303 of its 407 relation extractions with them ("Jon
#: lives in Google", "Jon sister of Gina"), 299 of them from turns that never say "live" or "sister".
EXAMPLE_RELATIONS = P.EXAMPLE_RELATIONS
#: the layout of the profile prompt's "current profile" line, copied into a profile's text ("... | recent: ...")
PROFILE_ECHO = re.compile(r"\|\s*recent\s*:|\b(?:lasting|persistent)\s*:", re.IGNORECASE)


def _count_extracted_relations(c: K.Counts, mems, params, why: str) -> None:
    """Each relation as the model extracted it (a LINK event: one extraction call, one fragment's turns), labelled
    with the prompt's example and read against that fragment's turns. Read per extraction, not per graph edge: an
    edge gathers the turns of every extraction that named it ("Jon lives in Gina": 103 extractions over conv-30),
    and some turn among a hundred says "live"."""
    names = ("relation_extractions", "relations_prompt_example", "relations_prompt_example_unsaid")
    if K.events_lacking(c, mems, names):
        return
    if isinstance(params, dict) and params.get("prompts") == "paper":
        for name in names[1:]:
            c.lack(name, "the paper profile's extraction prompt gives no example label (prompts='paper')")
        names = names[:1]
    src = "events.jsonl (LINK events of a relation)"
    links = [(e, m) for m in mems.values() for e in m.events if e.get("kind") == "LINK"
             and isinstance(e.get("data"), dict) and K.text(e["data"].get("relation")) not in ("", "overlap")]
    c.put("relation_extractions", len(links), src, "the model extracted no relation")
    if len(names) == 1:
        return
    example = [(e, m) for e, m in links if e["data"]["relation"].lower() in EXAMPLE_RELATIONS]
    c.put("relations_prompt_example", len(example), src,
          f"no extracted relation is labelled with the prompt's examples ({', '.join(EXAMPLE_RELATIONS) or 'none'})")
    said = [(e["data"]["relation"].lower(), K.source_turns(e, m.turns)) for e, m in example]
    if any(t is None for _, t in said):
        c.lack("relations_prompt_example_unsaid", f"{sum(t is None for _, t in said)} of {len(said)} extractions "
                                                  f"cannot be read against their turns: {why}")
        return
    unsaid = Counter(label for label, t in said if not K.relation_said(label, " ".join(t)))
    c.put("relations_prompt_example_unsaid", sum(unsaid.values()), src + " x the text of its fragment's turns",
          f"no extracted relation is labelled with the prompt's examples ({', '.join(EXAMPLE_RELATIONS) or 'none'})"
          if not example else None)
    if unsaid:
        c.put("relations_prompt_example_words", dict(unsaid.most_common()), src)


def count_written(c: K.Counts, mems, params) -> None:
    """What the model wrote into the memory, read against the turns it was made from (``Memory.turns``): the tree's
    leaves as facts (``put_fact_quality``), relation extractions labelled with the prompt's example that their turns
    never say (``_count_extracted_relations``), summaries over ``summary_words``, cut off, looping or in a script
    their turns never use, and profiles that copy the profile prompt's layout. Rules read form, not truth: a summary
    can be well formed and wrong."""
    leaves, summaries, relations, profiles = [], [], [], []
    for mem in mems.values():
        st = mem.structures if isinstance(mem.structures, dict) else {}
        for r in K.as_list(st.get("tree")):
            if not isinstance(r, dict):
                continue
            if K.as_int(r.get("level")) == 1:
                leaves.append((K.text(r.get("summary")), K.source_turns(r, mem.turns)))
            elif K.as_int(r.get("level")) >= 2 and not r.get("copy_of_child"):
                summaries.append((K.text(r.get("summary")), K.source_turns(r, mem.turns)))
        graph = st.get("graph") if isinstance(st.get("graph"), dict) else {}
        relations += [e for e in K.as_list(graph.get("edges")) if isinstance(e, dict) and e.get("kind") == "relation"]
        profiles += [n["profile"] for n in K.as_list(graph.get("nodes"))
                     if isinstance(n, dict) and isinstance(n.get("profile"), dict)]
    tree_src, graph_src = "structures.json (tree)", "structures.json (graph)"
    why = "the run saved no conversation (conversations/<id>.json) to read the turns from"
    K.put_fact_quality(c, K.fact_quality(leaves, K.prompts_of(mems)), tree_src + " leaves", why)
    limit = params.get("summary_words") if isinstance(params, dict) else None
    K.put_summary_quality(c, "summaries", summaries, tree_src, why, limit=limit,
                          no_limit_why="the run set no word limit for a summary (summary_words; the paper sets none)",
                          none_why="no parent above the leaves has a summary of its own")
    c.put("relations", len(relations), graph_src)
    _count_extracted_relations(c, mems, params, why)
    c.put("profiles", len(profiles), graph_src, "no entity was salient enough for a profile")
    c.put("profiles_echoing_prompt", sum(bool(PROFILE_ECHO.search(f"{K.text(p.get('persistent'))} "
                                                                  f"{K.text(p.get('recent'))}")) for p in profiles),
          graph_src + " (profiles)")
    _count_profile_reads(c, mems)


def _count_profile_reads(c: K.Counts, mems) -> None:
    """How much of each session's mentions a profile update read: the prompt shows the last ``profile_window`` (8)
    mentions of the session (review turn 4, N3). Read from the profile UPDATE events, which say since this count was
    added how many mentions there were and how many the prompt read."""
    names = ("profile_updates", "profile_updates_over_window", "profile_mentions_unread")
    if K.events_lacking(c, mems, names):
        return
    updates = [e.get("data") for m in mems.values() for e in m.events if e.get("kind") == "UPDATE"
               and K.text(e.get("unit_id")).startswith("profile:") and isinstance(e.get("data"), dict)]
    src = "events.jsonl (UPDATE of a profile)"
    c.put("profile_updates", len(updates), src, "no profile was written")
    if any("mentions" not in d or "mentions_read" not in d for d in updates):
        for n in names[1:]:
            c.lack(n, "the profile UPDATE events were saved before they said how many mentions the prompt read")
        return
    over = [d for d in updates if K.as_int(d["mentions"]) > K.as_int(d["mentions_read"])]
    c.put("profile_updates_over_window", len(over), src, "no session had more mentions of an entity than its "
                                                          "profile prompt reads" if updates else None)
    c.put("profile_mentions_unread", sum(K.as_int(d["mentions"]) - K.as_int(d["mentions_read"]) for d in over), src)


def count(c: K.Counts, rows, traces, mems, params) -> None:
    """This method's counts (``CensusSpec.count``)."""
    tree_names = ("tree_nodes", "parents", "multi_child_parents", "single_child_copies")
    if K.need_memory(c, mems, tree_names, "hmem"):
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
                if K.as_int(r.get("level")) >= 2:
                    parents += 1
                    multi += len(K.as_list(r.get("children"))) >= 2
                    copies += bool(r.get("copy_of_child"))
        if absent:  # neither the tree counts nor what the model wrote into the memory can be read
            for n in (*tree_names, *K.FACT_COUNTS, "summaries", "relations", "relation_extractions", "profiles",
                      "profile_updates"):
                c.lack(n, "; ".join(absent[:3]))
        else:
            src = "structures.json (tree)"
            c.put("tree_nodes", nodes, src)
            c.put("parents", parents, src, f"the tree has no node above level 1 ({nodes} nodes)")
            c.put("multi_child_parents", multi, src,
                  (f"all {parents} parents (level >= 2) have a single child; {copies} of them are verbatim copies"
                   if parents else f"the tree has no node above level 1 ({nodes} nodes)"))
            c.put("single_child_copies", copies, src)
            count_written(c, mems, params)
    names = ("subqueries", "planner_scopes", "planner_fallbacks", "followups")
    if not K.traced(c, traces, names):
        return
    scopes: Counter = Counter()
    subs = fallbacks = follow = 0
    for t in traces:
        if t is None:
            continue
        for d in t.of("plan"):
            sq = [s for s in K.as_list(d.get("subqueries")) if isinstance(s, dict)]
            subs += len(sq)
            scopes.update(str(s.get("scope")) for s in sq)
            fallbacks += bool(d.get("fallback"))
        follow += sum(not d.get("skipped") for d in t.of("followup"))
    src = "traces (plan steps)"
    c.put("subqueries", subs, src)
    c.put("planner_scopes", dict(sorted(scopes.items())), src)
    c.put("planner_fallbacks", fallbacks, src)
    c.put("followups", follow, "traces (followup steps)")


CENSUS = K.CensusSpec(
    count,
    headline=(("multi_child_parents", "parents with >= 2 children"), ("planner_scopes", "planner scopes")),
    problems=(("relations_prompt_example_unsaid", "relations extracted with the prompt's example label (\"lives in\", "
                                                  "\"sister of\") from turns that never say it:"),
              ("summaries_cut", "summaries cut off mid-sentence (the length cap):"),
              ("summaries_looping", "summaries repeating a run of words (the model looped):"),
              ("summaries_foreign_script", "summaries in a script their turns never use:"),
              ("summaries_over_words", "summaries over the word limit the prompt asks for:"),
              ("profiles_echoing_prompt", "profiles copying the profile prompt's layout (\"| recent:\"):"),
              ("profile_mentions_unread", "mentions a profile update never read (its prompt shows a session's "
                                          "last 8):"),
              ("facts_copying_prompt", "leaf events copied from its own prompt (an instruction or example):"),
              ("facts_copying_turn", "leaf events that copy their turn word for word:"),
              ("facts_first_person", "leaf events in the first person:")),
    check=("grouping", lambda rows, traces, mems: {
    cid: m.structures.get("tree") or [] for cid, m in mems.items() if isinstance(m.structures, dict)}),
    check_off=lambda params: ("no tree is built (use_tree=False)" if params.get("use_tree") is False
                              else "no level above the leaves is built (use_long_memory=False)"
                              if params.get("use_long_memory") is False
                              else "no level above the leaves is built (levels=1)" if params.get("levels") == 1
                              else None),
)
