"""MemR3's two profiles (issue #39): ``profile="paper"`` (App. A's prompts and a schema that requires the payload,
[code]'s choices where the paper is silent) and ``profile="small"`` (what the offline recordings were made with)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.embed import HashEmbedder
from workbench.eval.manifest import method_prompt_hash, method_prompt_hashes
from workbench.llm import ScriptedLLM
from workbench.llm.errors import ParseError
from workbench.llm.jsonparse import check_schema
from workbench.methods import NaiveRAG
from workbench.methods.memr3 import paper_prompts as PP
from workbench.methods.memr3 import prompts as P
from workbench.methods.memr3.method import MemR3
from workbench.methods.memr3.state import RouterState, guard
from workbench.testing.check_method import check_method
from workbench.trace import Hit

Q = "Where does Noor live now?"
SMALL_PROMPT_HASH = "cdd050b2574b"  # computed on c93cd04, before the profiles: the recordings' prompts


def R(decision, evidence=(), gaps=(), **payload):
    return {"evidence": list(evidence), "gaps": list(gaps), "decision": decision, **payload}


def rag():
    return NaiveRAG(llm=ScriptedLLM([], default="x"), embedder=HashEmbedder(dim=128), chunking="turn")


def run(profile, replies, conv, **params):
    llm = ScriptedLLM(replies)
    m = MemR3(llm=llm, embedder=HashEmbedder(dim=128), backend=rag(), profile=profile, **params).ingest(conv)
    return m.answer(Q), llm


def steps(ans, kind):
    return [s for s in ans.steps if s.kind == kind]


# -- declarations and the contract ---------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["paper", "small"])
def test_both_profiles_pass_the_method_contract(profile):
    check_method(MemR3, make=lambda: MemR3(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder(dim=128),
                                           profile=profile))


def test_paper_has_no_departures_and_small_lists_every_aid():
    assert MemR3(profile="paper").param_notes == {}
    small = MemR3(profile="small")
    aids = {k for k, v in MemR3.profiles["small"].items() if MemR3.profiles["paper"][k] != v}
    assert aids == set(MemR3.profiles["small"]) and set(small.param_notes) == aids
    assert all(small.param_notes[k] == MemR3.profile_notes[k] for k in aids)
    # auto: a scripted (offline stand-in) model gets small, any other model or none the paper's method
    assert MemR3(llm=ScriptedLLM([])).profile == "small" and MemR3().profile == "paper"
    assert MemR3(profile="small", schema="paper").param_notes.keys() == aids - {"schema"}


def test_the_small_profiles_prompt_hash_is_the_recordings_and_the_paper_adds_its_own_module():
    assert method_prompt_hash(MemR3(profile="small")) == SMALL_PROMPT_HASH
    assert method_prompt_hash(MemR3(llm=ScriptedLLM([]))) == SMALL_PROMPT_HASH
    paper = method_prompt_hashes(MemR3(profile="paper"))
    assert "paper_prompts" in paper and method_prompt_hash(MemR3(profile="paper")) != SMALL_PROMPT_HASH


def test_bad_profile_values_are_refused(tiny_conv):
    with pytest.raises(ValueError, match="nothing_left"):
        MemR3(llm=ScriptedLLM([]), embedder=HashEmbedder(dim=128), nothing_left="never").ingest(tiny_conv)
    with pytest.raises(ValueError, match="profile='big'"):
        MemR3(profile="big")


# -- which prompts each profile sends ------------------------------------------------------------------------
def test_the_paper_profile_sends_the_paper_prompts_and_the_small_one_its_own(tiny_conv):
    replies = [R("retrieve", retrieval_query="city Noor moved to"), R("answer", detailed_answer="Geneva"), "Geneva"]
    ans, llm = run("paper", list(replies), tiny_conv)
    router, answer = llm.requests[0], llm.requests[-1]
    assert router["messages"][0]["content"].startswith(PP.ROUTER_SYSTEM.split("{")[0])
    assert router["messages"][1]["content"].startswith("# Question\n" + Q)
    assert "'gaps'" not in router["messages"][0]["content"] and "[]" not in router["messages"][0]["content"]
    assert "[c" not in router["messages"][1]["content"].split("# Memory snippets")[1][:3]  # raw text, as [code]
    assert [m["role"] for m in answer["messages"]] == ["system", "user"]  # [code] p_w: question apart
    assert answer["messages"][0]["content"].startswith(PP.ANSWER_SYSTEM.split("{")[0])
    assert answer["messages"][1]["content"] == Q and "# Draft answer\nGeneva" in answer["messages"][0]["content"]

    ans, llm = run("small", list(replies), tiny_conv)
    router, answer = llm.requests[0], llm.requests[-1]
    assert router["messages"][0]["content"].startswith(P.ROUTER_SYSTEM.split("{")[0])
    assert router["messages"][1]["content"].startswith(f"Question: {Q}")
    assert router["schema"] == P.router_schema(("retrieve", "answer", "reflect"))
    assert [m["role"] for m in answer["messages"]] == ["user"]
    assert answer["messages"][0]["content"].startswith(P.ANSWER.split("{")[0])


def test_the_paper_prompts_keep_app_a_and_show_no_example_values():
    consts = {k: v for k, v in vars(PP).items() if k.isupper() and isinstance(v, str)}
    text = "\n".join(consts.values())
    for concrete in ("graduation", "Chicago", "Windy", "2023", "March", "vet", "[]"):
        assert concrete not in text, concrete
    for kept in ('belongs in "gaps"', "cautious inference", "more retrieval looks unlikely", "ANCHOR EVENT",
                 "MAPPED ENTITY", "missing specifics", '"None"', "must not repeat the previous query",
                 "ONLY once the evidence is firm", "show the working",
                 "Read a memory's timestamp as the time its event took place", "trust the most recent"):
        assert kept in text, kept
    # one source comment right above each prompt constant
    lines = Path(PP.__file__).read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^[A-Z_]+ = ", line) and not line.startswith("PAYLOAD_KEY"):
            above = lines[i - 1]
            assert above.startswith("#") or "# [" in line, f"no source comment above {line[:30]}"


# -- the schema: the paper profile requires the payload (reviews/memr3.md B1) ------------------------------------
def test_the_paper_schema_requires_each_field_the_method_reads():
    actions = ("retrieve", "answer", "reflect")
    forced = PP.router_schema(actions, "retrieve")
    assert forced["required"] == ["evidence", "gaps", "decision", "retrieval_query"] and "oneOf" not in forced
    with pytest.raises(ParseError, match="retrieval_query"):  # the client sends such a reply back for repair
        check_schema({"evidence": [], "gaps": "None", "decision": "retrieve"}, forced)
    free = PP.router_schema(actions)
    branches = {b["properties"]["decision"]["enum"][0]: b["required"] for b in free["oneOf"]}
    assert branches == {"retrieve": ["evidence", "gaps", "decision", "retrieval_query"],
                        "answer": ["evidence", "gaps", "decision", "detailed_answer"],
                        "reflect": ["evidence", "gaps", "decision", "reasoning"]}
    assert {"type": "string"} in free["properties"]["gaps"]["anyOf"]  # free text, "None" when closed (App. A)
    small = P.router_schema(actions)
    assert small["required"] == ["evidence", "gaps", "decision"] and "oneOf" not in small


def test_a_forced_action_without_its_payload_is_repaired_under_the_strict_reading(tiny_conv):
    """Issue #39 bug (b): the schema let the model skip the payload (no refinement query in 153 of 153 retrieves at
    real scale). Under a forced retrieve the paper schema with the strict reading refuses a reply without one; the
    paper profile's own reading (lenient, [code]'s) reads it, searches q alone and says the schema refused it."""
    replies = [R("reflect", reasoning="think"),
               R("retrieve"),  # forced retrieve (reflect streak) without its query: sent back for repair
               R("retrieve", retrieval_query="Noor new city"), R("answer", detailed_answer="Geneva"), "Geneva"]
    ans, llm = run("paper", list(replies), tiny_conv, reading="strict")
    routers = steps(ans, "router")
    assert routers[1].data["forced"] == "reflect_streak" and "memr3.router.repair" in llm.roles()
    assert routers[1].data["delta_source"] == "llm" and routers[1].data["payload_written"] is True
    assert steps(ans, "retrieve")[1].data["query"] == f"{Q}. Noor new city"
    assert MemR3.summary_stats([ans])["payload_share"] == {"reflect": 1.0, "retrieve": 1.0, "answer": 1.0}

    replies = [R("reflect", reasoning="think"), R("retrieve"), R("answer", detailed_answer="Geneva"), "Geneva"]
    ans, llm = run("paper", replies, tiny_conv)
    routers = steps(ans, "router")
    assert routers[1].data["forced"] == "reflect_streak" and "memr3.router.repair" not in llm.roles()
    assert routers[1].data["delta_source"] == "question" and routers[1].data["payload_written"] is False
    assert "retrieval_query" in routers[1].data["lenient_read"] and "lenient_read" not in routers[0].data
    assert steps(ans, "retrieve")[1].data["query"] == Q
    assert MemR3.summary_stats([ans])["lenient_reads"] == 1


def test_the_small_profile_records_a_skipped_payload(tiny_conv):
    ans, llm = run("small", [R("retrieve"), R("answer"), "Geneva"], tiny_conv)
    assert "memr3.router.repair" not in llm.roles()
    assert MemR3.summary_stats([ans])["payload_share"] == {"retrieve": 0.0, "answer": 0.0}
    stats = MemR3.summary_stats([ans])["snippet_tokens"]
    assert stats["total"] > 0 and stats["per_question"] == stats["total"]  # App. D.2: tokens shown to the router


# -- [code]'s choices where the paper is silent ----------------------------------------------------------------
def test_paper_profile_searches_q_alone_without_a_query_and_keeps_f(tiny_conv):
    """[code]: a retrieve without a query searches q alone (not the first gap), and a reflect without reasoning
    keeps the previous F; the small profile searches the first gap and clears F (its recordings)."""
    replies = [R("reflect", reasoning="thought one"), R("reflect"),  # the second reflect writes no reasoning
               R("retrieve", gaps=["date of move"]),  # forced by the streak (n_cap=2), no query
               R("answer", detailed_answer="Geneva"), "Geneva"]
    ans, llm = run("paper", list(replies), tiny_conv, schema="small", n_cap=2)
    routers = steps(ans, "router")
    assert routers[1].data["reasoning"] == "thought one"  # kept
    assert "thought one" in llm.requests[2]["messages"][1]["content"]
    assert routers[2].data["delta_source"] == "question" and steps(ans, "retrieve")[1].data["query"] == Q
    ans, llm = run("small", list(replies), tiny_conv, n_cap=2)
    routers = steps(ans, "router")
    assert routers[1].data["reasoning"] == "" and "thought one" not in llm.requests[2]["messages"][1]["content"]
    assert routers[2].data["delta_source"] == "first_gap"
    assert steps(ans, "retrieve")[1].data["query"] == f"{Q}. date of move"


def test_prior_query_is_the_last_one_written_under_any_decision_in_the_paper_profile(tiny_conv):
    replies = [R("reflect", reasoning="t", retrieval_query="Noor moving date"), R("retrieve"),
               R("answer", detailed_answer="Geneva"), "Geneva"]
    _, llm = run("paper", list(replies), tiny_conv, schema="small")
    assert "# Prior query\nNoor moving date" in llm.requests[1]["messages"][1]["content"]
    _, llm = run("small", list(replies), tiny_conv)
    assert "Prior query: None" in llm.requests[1]["messages"][1]["content"]


def test_nothing_left_modes():
    hit = (Hit("c1", "x"),)
    at_cap = RouterState(Q, k=1, reflect_streak=1, snippets=hit)
    assert guard(at_cap, n_max=5, n_cap=1, more=False, nothing_left="reflect_then_answer") == ("answer", "nothing_left")
    assert guard(at_cap, n_max=5, n_cap=1, more=False, nothing_left="reflect") == ("reflect", "nothing_left")
    assert guard(at_cap, n_max=5, n_cap=1, more=False, nothing_left="no_retrieve") == (None, None)
    assert guard(RouterState(Q, k=4), n_max=5, n_cap=1, more=False, nothing_left="reflect") == ("answer", "budget")


def test_no_retrieve_mode_offers_reflect_and_answer_once_the_backend_is_drained(tiny_conv):
    ans, llm = run("paper", [R("reflect", reasoning="t"), R("answer", detailed_answer="Geneva"), "Geneva"],
                   tiny_conv, n_chk=50, nothing_left="no_retrieve")
    offered = llm.requests[0]["schema"]["properties"]["decision"]["enum"]
    assert offered == ["answer", "reflect"] and steps(ans, "router")[1].data["forced"] is None
