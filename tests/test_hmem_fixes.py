"""H-Mem review fixes (issue #39, ../shared/reviews/hmem.md): each test failed on the code before its fix."""
from __future__ import annotations

import json
import re
from datetime import datetime

import numpy as np
import pytest

from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM
from workbench.methods.hmem import HMem
from workbench.methods.hmem.tree import candidate_from_node, score_candidates


def _extract_with_future_plan(messages):
    """One event per turn; the kitten turn also yields a plan the extractor dates months ahead (the
    demo's "Tomasz signed up for the Manchester half in October", said in March)."""
    events = []
    for line in messages[0]["content"].splitlines():  # both profiles' prompts: the turns are "Speaker: text"
        m = re.match(r"^(\w+): (.+)$", line)
        if m:
            events.append({"text": f"{m.group(1)} said: {m.group(2)}", "date": ""})
            if "kitten" in line and "adopted" in line:
                events.append({"text": "Sam plans to enter Miso in the October cat show.", "date": "2023-10-01"})
    return json.dumps({"events": events, "entities": [], "relations": []})


@pytest.mark.parametrize("profile", ["paper", "small"])
def test_b1_leaves_are_placed_by_when_the_turn_was_said_not_by_the_resolved_date(tiny_conv, profile):
    """The default of both profiles since the 1.5B demo was re-recorded with the fix."""
    llm = ScriptedLLM({"hmem.extract": _extract_with_future_plan}, default="auto")
    m = HMem(llm=llm, embedder=HashEmbedder(dim=128), profile=profile).ingest(tiny_conv)
    rows = m.tree_nodes()
    plan = next(r for r in rows if "cat show" in r["summary"] and r["level"] == 1)
    # placed on the day it was said (session 1, 5 June 2023); the October date is kept as data
    assert plan["start"].startswith("2023-06-05") and plan["window"] == "2023-06-05"
    assert plan["refers_to"].startswith("2023-10-01")
    # no window of any level lies after the conversation (no future week, month or October node)
    last = max(s.date_time for s in tiny_conv.sessions)
    assert all(datetime.fromisoformat(r["start"]) <= last for r in rows)
    assert not any(r["window"] in ("2023-10", "2023-W39", "2023-10-01") for r in rows)
    # the evidence label says both dates; T scores the referenced day, the chain orders by mention
    node = m.tree_.nodes[plan["id"]]
    cand = candidate_from_node(node, m.tree_.vectors[node.id], "day")
    assert cand.display().startswith("[said 5 June 2023, about 1 October 2023]")
    (scored,) = score_candidates([cand], np.asarray(m.tree_.vectors[node.id]),
                                 interval=(datetime(2023, 10, 1), datetime(2023, 10, 2)), now=last,
                                 theta=m.theta, lam=m.lam, eps=m.eps, tau=m.tau_days * 86400, eta=m.eta)
    assert scored.T > 0.9
    assert HMem(profile="paper").leaf_time == HMem(profile="small").leaf_time == "said"


def test_b1_the_referenced_placement_is_the_old_recordings(tiny_conv):
    """``leaf_time="referenced"`` (the 0.5B demo recording's override) is the old placement, byte for byte."""
    llm = ScriptedLLM({"hmem.extract": _extract_with_future_plan}, default="auto")
    m = HMem(llm=llm, embedder=HashEmbedder(dim=128), profile="small", leaf_time="referenced").ingest(tiny_conv)
    plan = next(r for r in m.tree_nodes() if "cat show" in r["summary"] and r["level"] == 1)
    assert plan["window"] == "2023-10-01" and plan["refers_to"] is None


def test_b9_an_event_repeated_within_one_fragment_is_one_leaf(tiny_conv):
    def looping(messages):
        return json.dumps({"events": [{"text": "Noor moved to Geneva."}] * 3 + [{"text": "noor moved to  Geneva."}],
                           "entities": [], "relations": []})

    def leaves(**kw):
        m = HMem(llm=ScriptedLLM({"hmem.extract": looping}, default="auto"), embedder=HashEmbedder(dim=128),
                 **kw).ingest(tiny_conv)
        return len([r for r in m.tree_nodes() if r["level"] == 1]) / len(m.fragments_)

    assert leaves(profile="paper") == 1  # one per fragment, not four
    assert leaves(profile="small") == 1
    assert leaves(profile="small", dedupe_events=False) == 4  # the 0.5B demo recording's override


def test_b4_the_calibration_replay_keeps_every_parent_the_mean_of_its_children(monkeypatch):
    """Review B4: the replay's summary key repeated for a node re-summarised with the same child count and the same
    number of pending vectors, so ``HTree`` saw unchanged text and kept a stale parent vector."""
    from workbench.methods.hmem import calibration, tree

    built = []
    original = tree.HTree.__init__

    def keep(self, *a, **kw):
        original(self, *a, **kw)
        built.append(self)

    monkeypatch.setattr(tree.HTree, "__init__", keep)
    rng = np.random.default_rng(0)
    leaves = []
    for i in range(60):
        v = rng.normal(size=16)
        leaves.append((datetime(2023, 3, 1 + i // 6), v / np.linalg.norm(v)))
    calibration.replay(leaves, (0.3, 0.25, 0.25))
    (t,) = built
    stale = 0
    for node in t.nodes.values():
        if node.level >= 2 and len(node.children) > 1:
            mean = np.mean([t.vectors[c] for c in node.children], axis=0)
            stale += not np.allclose(t.vectors[node.id], mean / np.linalg.norm(mean), atol=1e-5)
    assert stale == 0


def test_b5_summary_stats_count_skipped_follow_ups_as_flags_not_follow_ups(tiny_conv):
    """Review B5: the demo's 4 follow-up queries all repeated their sub-query and were skipped, yet the report
    said "followups: 4" next to the census's 0."""
    repeat = json.dumps({"query": "Where does Noor live?"})
    llm = ScriptedLLM({"hmem.subanswer": json.dumps({"answer": "Lyon", "missing_info": True}),
                       "hmem.missing": repeat,
                       "hmem.plan": json.dumps({"subqueries": [{"query": "Where does Noor live?", "depends_on": [],
                                                                "scope": "SHORT", "time": "", "entities": []}]})},
                      default="auto")
    m = HMem(llm=llm, embedder=HashEmbedder(dim=128), profile="small").ingest(tiny_conv)
    stats = HMem.summary_stats([m.answer("Where does Noor live?")])
    assert (stats["followups"], stats["followup_rate"]) == (0, 0.0)
    assert (stats["missing_info_flags"], stats["trigger_ratio"]) == (1, 1.0)


def test_a_tree_saved_before_the_b1_fix_loads_and_keeps_its_placement():
    from workbench.methods.hmem.tree import HTree

    tree = HTree(leaf_time="said")
    del tree.__dict__["leaf_time"]  # as unpickled from a memory saved before the fix
    vec = np.ones(4) / 2
    tree.add_leaf("plan", time=datetime(2023, 10, 1), mention_time=datetime(2023, 3, 14), vector=vec,
                  source_ids=["D1:1"], fragment_ids=["frag0"], summarize=lambda n, c: n.text,
                  embed=lambda texts: np.stack([vec] * len(texts)))
    (leaf,) = [r for r in tree.rows() if r["level"] == 1]
    assert leaf["window"] == "2023-10-01" and leaf["refers_to"] is None
