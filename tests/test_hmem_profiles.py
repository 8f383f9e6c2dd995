"""H-Mem's two profiles (issue #39 item 1): ``profile="paper"`` (the paper's method, paper_prompts.py) and
``profile="small"`` (the recorded configuration for the offline models, prompts.py, byte for byte as before)."""
from __future__ import annotations

import json
import re

import pytest
from test_hmem import scripted as small_scripted

from workbench.embed import HashEmbedder
from workbench.eval.manifest import method_prompt_hash
from workbench.llm import ScriptedLLM
from workbench.methods.hmem import HMem
from workbench.methods.hmem import paper_prompts as PP
from workbench.methods.hmem import prompts as SP
from workbench.testing.check_method import check_method

# method_prompt_hash(HMem()) on main before the profiles existed (c93cd04): the small profile's prompts are the same
SMALL_PROMPT_HASH = "6cf883b4fcfd"


def full_extract(messages):
    """Schema-valid for both profiles: the whole App. A.2 record (the small schema ignores the extra fields)."""
    events, ents, rels = [], [], []
    for line in messages[0]["content"].splitlines():
        m = re.match(r"^(Sam|Noor): (.+)$", line)
        if not m:
            continue
        speaker, text = m.groups()
        events.append({"text": f"{speaker} said: {text}", "date": ""})
        ents.append({"name": speaker, "type": "person", "role": "speaker", "salience": 0.9, "span": speaker})
        for word in re.findall(r"(?<=\s)[A-Z][a-z]{2,}\b", text):
            ents.append({"name": word, "type": "location", "role": "mentioned", "salience": 0.4, "span": word})
            rels.append({"source": speaker, "relation": "mentions", "target": word, "confidence": 0.7, "span": text})
    return json.dumps({"events": events, "entities": ents, "relations": rels})


PLAN = json.dumps({"subqueries": [
    {"query": "Where did Noor move?", "depends_on": [], "scope": "LONG", "time": "", "entities": ["Noor"],
     "workflow": "start from Noor, look for a move"},
    {"query": "Where does Noor take violin lessons?", "depends_on": [1], "scope": "SHORT", "time": "",
     "entities": ["Noor"], "workflow": "start from Noor, look for violin lessons"}]})


def scripted():
    return ScriptedLLM({"hmem.extract": full_extract, "hmem.plan": PLAN,
                        "hmem.subanswer": json.dumps({"answer": "Geneva", "missing_info": True}),
                        "hmem.missing": json.dumps({"query": "Which teacher did Noor find in Geneva?"})},
                       default="auto")


def built(profile, tiny_conv, **kw):
    m = HMem(llm=scripted(), embedder=HashEmbedder(dim=128), profile=profile, **kw).ingest(tiny_conv)
    m.answer("In which city does Noor take violin lessons now?")
    return m


@pytest.mark.parametrize("profile", ["paper", "small"])
def test_both_profiles_pass_the_method_contract(profile, tiny_conv):
    check_method(HMem, make=lambda: HMem(llm=scripted(), embedder=HashEmbedder(dim=128), profile=profile),
                 conversation=tiny_conv)


def test_auto_is_small_for_the_scripted_stand_in_and_paper_without_a_model():
    assert HMem(llm=ScriptedLLM([], default="auto")).profile == "small"
    assert HMem().profile == "paper"


def test_the_paper_profile_has_no_departures_and_the_small_one_lists_every_aid():
    paper, small = HMem(profile="paper"), HMem(profile="small")
    assert paper.param_notes == {}
    aids = {"prompts", "cluster_similarity", "summarize_single", "max_summary_children", "summary_words",
            "profile_scopes"}
    assert set(small.param_notes) == aids
    assert all(small.param_notes[k] == HMem.profile_notes[k] for k in aids)
    # the paper's values (App. A.2, §3.2, §3.3) and the recorded ones; review B1, B8 and B9 are fixed in both
    assert (paper.alphas, paper.cluster_similarity, paper.summarize_single, paper.max_summary_children,
            paper.summary_words, paper.profile_scopes, paper.followup_seeds, paper.leaf_time, paper.dedupe_events) == (
        (0.8, 0.7, 0.6), "parent", True, None, None, ("LONG", "MIXED"), "followup", "said", True)
    assert (small.alphas, small.cluster_similarity, small.summarize_single, small.max_summary_children,
            small.summary_words, small.profile_scopes, small.followup_seeds, small.leaf_time, small.dedupe_events) == (
        (0.8, 0.7, 0.6), "max", False, 12, 80, ("SHORT", "LONG", "MIXED"), "followup", "said", True)
    # a calibrated run (workbench eval applies MiniLM alphas) says so too
    assert "alphas" in HMem(profile="small", alphas=(0.31, 0.25, 0.25)).param_notes
    assert set(HMem(profile="paper", alphas=(0.31, 0.25, 0.25)).param_notes) == {"alphas"}


def test_the_small_profiles_prompt_hash_is_unchanged_and_the_paper_profile_hashes_its_own_prompts():
    assert method_prompt_hash(HMem(profile="small")) == SMALL_PROMPT_HASH
    assert method_prompt_hash(HMem(llm=ScriptedLLM([]))) == SMALL_PROMPT_HASH  # auto -> small
    assert method_prompt_hash(HMem(profile="paper")) != SMALL_PROMPT_HASH


# the first words of each role's template, before its first placeholder
ROLES = {"hmem.extract": "EXTRACT_HEAD", "hmem.consolidate": "CONSOLIDATE", "hmem.profile": "PROFILE",
         "hmem.plan": "PLAN", "hmem.subanswer": "SUB_ANSWER", "hmem.missing": "MISSING_INFO",
         "hmem.synthesize": "SYNTHESIZE"}


@pytest.mark.parametrize("profile", ["paper", "small"])
def test_each_profile_sends_its_own_prompts(profile, tiny_conv):
    m = built(profile, tiny_conv, alphas=(-1.0, -1.0, -1.0))  # every node joins: consolidation runs in both
    own, other = (PP, SP) if profile == "paper" else (SP, PP)
    sent = {}
    for r in m.llm.requests:
        sent.setdefault(r["role"], []).append(r["messages"][0]["content"])
    assert set(ROLES) <= set(sent), f"roles not exercised: {set(ROLES) - set(sent)}"
    for role, const in ROLES.items():
        mine, theirs = getattr(own, const).split("{")[0], getattr(other, const).split("{")[0]
        assert mine != theirs
        assert all(p.startswith(mine) for p in sent[role]), (role, sent[role][0][:80])


def test_paper_schemas_require_every_field_the_method_reads():
    schema = PP.extraction_schema(events=True, graph=True)
    assert schema["required"] == ["events", "entities", "relations"]
    props = schema["properties"]
    assert set(props["events"]["items"]["required"]) == {"text", "date"}
    assert set(props["entities"]["items"]["required"]) == {"name", "type", "role", "salience"}
    assert set(props["relations"]["items"]["required"]) == {"source", "relation", "target", "confidence"}
    item = PP.PLAN_SCHEMA["properties"]["subqueries"]["items"]
    assert set(item["required"]) == {"query", "depends_on", "scope", "time", "entities", "workflow"}
    assert PP.SUB_ANSWER_SCHEMA["required"] == ["answer", "missing_info"]
    assert PP.MISSING_INFO_SCHEMA["required"] == ["query"]
    assert PP.CONSOLIDATE_SCHEMA["required"] == ["summary"]
    assert PP.PROFILE_SCHEMA["required"] == ["persistent", "recent"]


def test_paper_prompts_use_placeholders_not_example_values():
    plan = PP.PLAN.format(now_line="", question="Q", max_n=4)
    assert '"scope": "<SHORT|LONG|MIXED>"' in plan and '"scope": "SHORT"' not in plan
    extract = PP.extraction_prompt(events=True, graph=True).format(date="D", fragment="F")
    assert "lives in" not in extract and "<label>" in extract and "<0-1>" in extract
    assert "at most" not in PP.CONSOLIDATE.format(window="week", label="W", notes="", limit="")
    assert "six" not in PP.SYNTHESIZE


def test_the_paper_profile_keeps_salience_confidence_and_workflows(tiny_conv):
    m = built("paper", tiny_conv)
    g = m.graph_
    assert {d["confidence"] for _, _, d in g.edges(data=True) if d["kind"] == "relation"} == {0.7}
    assert max(a.get("salience", 0) for _, a in g.nodes(data=True) if a["name"] == "Noor") == 0.9
    plan = next(s for a in [m.answer("Where does Noor live?")] for s in a.steps if s.kind == "plan")
    assert plan.data["workflows"] == ["start from Noor, look for a move", "start from Noor, look for violin lessons"]
    # the small prompt asks for no confidence: a relation without one counts 1.0, as before
    small = HMem(llm=small_scripted(), embedder=HashEmbedder(dim=128), profile="small").ingest(tiny_conv)
    assert {d["confidence"] for _, _, d in small.graph_.edges(data=True) if d["kind"] == "relation"} == {1.0}


@pytest.mark.parametrize("profile, short_has_profiles", [("paper", False), ("small", True)])
def test_profiles_join_short_scope_evidence_only_in_the_small_profile(profile, short_has_profiles, tiny_conv):
    m = built(profile, tiny_conv)
    ans = m.answer("In which city does Noor take violin lessons now?")
    kinds = {s.data["scope"]: {c["kind"] for c in s.data["candidates"]} for s in ans.steps if s.kind == "retrieve"}
    assert "profile" in kinds["LONG"]
    assert ("profile" in kinds["SHORT"]) is short_has_profiles


@pytest.mark.parametrize("profile, kw, seeded_by_planner", [("paper", {}, False), ("small", {}, False),
                                                            ("small", {"followup_seeds": "subquery"}, True)])
def test_follow_up_retrieval_seeds(profile, kw, seeded_by_planner, tiny_conv):
    """Review B8, fixed in both profiles; ``"subquery"`` is the 0.5B demo recording's override."""
    m = built(profile, tiny_conv, **kw)
    ans = m.answer("In which city does Noor take violin lessons now?")
    follow = [s for s in ans.steps if s.kind == "retrieve" and s.title.startswith("Follow-up")]
    assert follow
    hows = {x["how"] for s in follow for x in s.data["seeds"]}
    assert ("lexical:exact" in hows or any(h.startswith("lexical:") and h != "lexical:query" for h in hows)) \
        is seeded_by_planner
    if not seeded_by_planner:  # the follow-up query's own names ("Geneva", "Noor") seed it
        assert "lexical:query" in hows


def test_profile_values_are_validated(tiny_conv):
    for bad in ({"prompts": "big"}, {"leaf_time": "later"}, {"followup_seeds": "none"},
                {"profile_scopes": ("SHORT", "WIDE")}, {"profile": "small", "summary_words": None}):
        with pytest.raises(ValueError):
            HMem(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder(dim=32), **bad).ingest(tiny_conv)
    assert HMem(profile="paper", summary_words=50).param_notes  # a bound on the paper prompt is a departure
