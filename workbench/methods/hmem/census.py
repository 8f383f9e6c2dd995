"""H-Mem's census: the tree's parents (from structures.json) and the planner's scopes (from traces). (``CensusSpec``,
run by the generic census ``workbench.eval.mechanisms``; moved here from it unchanged.)"""
from __future__ import annotations

from collections import Counter

from .. import census_kit as K


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
    check=("grouping", lambda rows, traces, mems: {
    cid: m.structures.get("tree") or [] for cid, m in mems.items() if isinstance(m.structures, dict)}),
    check_off=lambda params: ("no tree is built (use_tree=False)" if params.get("use_tree") is False
                              else "no level above the leaves is built (use_long_memory=False)"
                              if params.get("use_long_memory") is False
                              else "no level above the leaves is built (levels=1)" if params.get("levels") == 1
                              else None),
)
