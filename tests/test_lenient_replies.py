"""Replies read as the authors read them (issue #63 item 4): local JSON repair at the LLM boundary (``json_repair``,
validated against the schema after it), MemR3's paper profile reading a router reply as [code] does (turn-4 review
N1: a rejected reply used to be thrown away with its evidence) and MemR3's optional reranker."""
from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM
from workbench.llm.base import JSON_REPAIR_PROMPT, BaseLLM, Generation
from workbench.llm.errors import ParseError
from workbench.llm.jsonparse import LOCAL_REPAIR, read_json
from workbench.methods import NaiveRAG
from workbench.methods.memr3.method import RERANK_POOL, MemR3
from workbench.methods.memr3.prompts import NO_EVIDENCE
from workbench.methods.memr3.state import read_leniently

Q = "Where does Noor live now?"
SCHEMA = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
          "required": ["facts"]}
CUT = '{"facts": ["Noor moved to Geneva", "Noor adopted Mi'  # a reply cut at the token cap
CUT_EARLY = '{"note": "Noor moved to Gen'  # cut before the required key: repaired, but the schema refuses it


# -- the boundary: jsonparse.read_json and BaseLLM ---------------------------------------------------------------
def test_read_json_repairs_a_cut_reply_only_when_asked_and_validates_what_it_repaired():
    assert read_json('{"facts": ["a"]}', SCHEMA, local_repair=True) == ({"facts": ["a"]}, "")
    with pytest.raises(ParseError):
        read_json(CUT, SCHEMA)
    assert read_json(CUT, SCHEMA, local_repair=True) == ({"facts": ["Noor moved to Geneva", "Noor adopted Mi"]},
                                                         LOCAL_REPAIR)
    with pytest.raises(ParseError) as strict:
        read_json(CUT_EARLY, SCHEMA)
    with pytest.raises(ParseError) as local:
        read_json(CUT_EARLY, SCHEMA, local_repair=True)
    # the strict error stands (it is the repair call's prompt, hence its cache key); why the repair was refused too
    assert str(local.value) == str(strict.value) and strict.value.local_repair is None
    assert "missing required key 'facts'" in local.value.local_repair
    # a reply that parses but breaks the schema is a wrong answer, not malformed text: no local repair
    with pytest.raises(ParseError, match="facts"):
        read_json('{"facts": "one"}', SCHEMA, local_repair=True)
    with pytest.raises(ParseError):  # nothing could refuse a repaired value without a schema
        read_json("no JSON here", None, local_repair=True)


def test_local_repair_saves_the_repair_and_the_retry_and_says_so():
    strict = ScriptedLLM([CUT, '{"facts": ["Noor moved to Geneva"]}'])
    done = strict.complete("facts?", schema=SCHEMA, role="m.extract")
    assert strict.roles() == ["m.extract", "m.extract.repair"] and done.repaired == ""

    local = ScriptedLLM([CUT])
    local.local_repair = True
    done = local.complete("facts?", schema=SCHEMA, role="m.extract")
    assert local.roles() == ["m.extract"] and done.usage.calls == 1
    assert done.parsed == {"facts": ["Noor moved to Geneva", "Noor adopted Mi"]} and done.repaired == LOCAL_REPAIR
    assert local.local_repairs == {"m.extract": 1}
    (call,) = local.ledger.calls  # the ledger's record says so too, and a saved trace carries it
    assert call.repaired == LOCAL_REPAIR and call.to_dict()["repaired"] == LOCAL_REPAIR
    assert "repaired" not in strict.ledger.calls[0].to_dict()  # a call read as sent is saved as before


def test_a_locally_repaired_reply_that_breaks_the_schema_is_repaired_by_the_model_as_before():
    def flow(local_repair):
        llm = ScriptedLLM([CUT_EARLY, CUT_EARLY, '{"facts": []}'])
        llm.local_repair = local_repair
        done = llm.complete("facts?", schema=SCHEMA, role="m.extract")
        return llm, done

    off, done_off = flow(False)
    on, done_on = flow(True)
    assert on.roles() == off.roles() == ["m.extract", "m.extract.repair", "m.extract.retry"]
    assert on.requests[1]["messages"] == off.requests[1]["messages"]  # same repair prompt: same cassette key
    assert JSON_REPAIR_PROMPT.split("(")[0] in on.requests[1]["messages"][-1]["content"]
    assert done_on.parsed == done_off.parsed == {"facts": []} and not on.local_repairs


def test_local_repair_is_on_for_api_models_and_off_for_the_offline_ones_unless_set():
    class Remote(BaseLLM):  # an API model: not one of the offline models
        model = "gpt-4o-mini"

        def _generate(self, messages, *, schema, temperature, seed, max_tokens, role):
            return Generation(CUT, self.model)

    assert Remote().repairs_locally and Remote().complete("x", schema=SCHEMA).repaired == LOCAL_REPAIR
    assert not ScriptedLLM([]).repairs_locally  # stands in for the offline models, whose recordings predate it
    off = Remote()
    off.local_repair = False
    with pytest.raises(ParseError, match="after repair and 1 retry"):
        off.complete("x", schema=SCHEMA)


def test_a_reply_refused_after_local_repair_names_why_in_the_final_error():
    llm = ScriptedLLM([CUT_EARLY] * 3)
    llm.local_repair = True
    with pytest.raises(ParseError, match="local repair: json_repair's value refused") as err:
        llm.complete("facts?", schema=SCHEMA, role="m.extract")
    assert err.value.raw == CUT_EARLY and "missing required key 'facts'" in err.value.local_repair


# -- MemR3: the paper profile reads a router reply as [code] does ------------------------------------------------------
def rag(**kw):
    return NaiveRAG(llm=ScriptedLLM([], default="x"), embedder=HashEmbedder(dim=128), chunking="turn", **kw)


def memr3(llm, **params):
    return MemR3(llm=llm, embedder=HashEmbedder(dim=128), backend=rag(), profile="paper", **params)


NULLS = {"evidence": ["Noor moved to Geneva last week"], "gaps": None, "decision": "answer",
         "detailed_answer": "Geneva", "retrieval_query": None, "reasoning": None}


def _answer_prompt(llm) -> str:
    request = next(r for r in llm.requests if r["role"] == "memr3.answer")
    return "\n".join(m["content"] for m in request["messages"])


@pytest.mark.parametrize("reading", ["lenient", "strict"])
def test_a_reply_with_null_unused_fields_keeps_its_evidence_under_the_paper_reading(tiny_conv, reading):
    """The review's case: evidence written, the keys of the other decisions set to null. [code] reads it; the strict
    paper schema refuses a null where a string is asked for, so the repair and the retry are spent on it and, when
    they are refused too, the reply is dropped with its evidence until the budget: 5 router steps of 3 calls and the
    answer (16 calls), against [code]'s 2. The lenient reading (the paper profile's) keeps it."""
    llm = ScriptedLLM({"memr3.router": [NULLS], "memr3.answer": "Geneva"})
    ans = memr3(llm, reading=reading).ingest(tiny_conv).answer(Q)
    routers = [s for s in ans.steps if s.kind == "router"]
    answer = next(s for s in ans.steps if s.kind == "answer")
    if reading == "lenient":
        assert MemR3(profile="paper").reading == "lenient"  # the paper profile's own reading
        assert llm.roles() == ["memr3.router", "memr3.answer"]
        assert routers[0].data["action"] == "answer" and routers[0].data["reply_rejected"] is False
        assert routers[0].data["evidence"] == ["Noor moved to Geneva last week"]
        assert "expected string, got NoneType" in routers[0].data["lenient_read"]
        assert answer.data["evidence"] == ["Noor moved to Geneva last week"] and answer.data["draft_answer"] == "Geneva"
        assert "Noor moved to Geneva last week" in _answer_prompt(llm)
        assert MemR3.summary_stats([ans])["lenient_reads"] == 1
    else:
        assert len(llm.requests) == 16 and llm.roles().count("memr3.router.repair") == 5
        assert all(s.data["reply_rejected"] for s in routers) and len(routers) == 5
        assert answer.data["evidence"] == [] and NO_EVIDENCE in _answer_prompt(llm)


def _always_reflect(messages):
    """Review differential S1b: a model that proposes reflect, obeys a forced directive and writes no payload."""
    system = messages[0]["content"]
    decision = next((a for a in ("retrieve", "answer") if f'Choose "{a}".' in system), "reflect")
    return json.dumps({"evidence": ["Noor moved to Geneva last week"], "gaps": "None", "decision": decision})


@pytest.mark.parametrize("reading, calls, evidence", [("lenient", 6, ["Noor moved to Geneva last week"]),
                                                      ("strict", 16, [])])
def test_the_reviews_no_payload_model_costs_what_it_costs_code(tiny_conv, reading, calls, evidence):
    """S1b: [code] answers with evidence ['fact 4'] after 6 calls; the strict reading saw none after 16."""
    llm = ScriptedLLM({"memr3.router": _always_reflect, "memr3.answer": "Geneva"})
    ans = memr3(llm, reading=reading).ingest(tiny_conv).answer(Q)
    assert len(llm.requests) == calls
    assert next(s for s in ans.steps if s.kind == "answer").data["evidence"] == evidence
    actions = [s.data["action"] for s in ans.steps if s.kind == "router"]
    assert actions == ["reflect", "retrieve", "reflect", "retrieve", "answer"]


@pytest.mark.parametrize("reply, evidence, action", [
    ({"evidence": "Noor lives in Geneva", "gaps": None, "decision": "Answer", "detailed_answer": "Geneva"},
     ["Noor lives in Geneva"], "answer"),                         # a string for the list, null gaps, capitalised
    ({"evidence": ["Noor lives in Geneva", None], "gaps": [], "decision": "reflect"},
     ["Noor lives in Geneva"], "reflect"),                        # reflect without reasoning, a null bullet
    ({"gaps": "where?", "decision": "search"}, [], "reflect"),     # no evidence ([code]: []), a decision off the enum
])
def test_the_lenient_reading_reads_what_code_reads(tiny_conv, reply, evidence, action):
    llm = ScriptedLLM({"memr3.router": [reply, {**NULLS, "evidence": evidence}], "memr3.answer": "Geneva"})
    ans = memr3(llm, n_max=2).ingest(tiny_conv).answer(Q)
    first = next(s for s in ans.steps if s.kind == "router")
    assert first.data["evidence"] == evidence and first.data["action"] == action and first.data["lenient_read"]
    assert "memr3.router.repair" not in llm.roles()


def test_read_leniently_follows_code_normalisation():
    out = read_leniently({"evidence": None, "decision": "retrieve", "detailed_answer": {"city": "Geneva"}})
    assert out == {"evidence": None, "gaps": None, "decision": "retrieve", "retrieval_query": None,
                   "detailed_answer": '{"city": "Geneva"}', "reasoning": None}


def test_a_reply_that_is_no_object_is_still_refused_and_recorded(tiny_conv):
    """[code] raises (and calls again) on a reply whose decision is not a string: so does the lenient reading."""
    llm = ScriptedLLM({"memr3.router": [{"evidence": ["x"], "decision": None}] * 3 + [NULLS], "memr3.answer": "G"})
    ans = memr3(llm, n_max=2).ingest(tiny_conv).answer(Q)
    first = next(s for s in ans.steps if s.kind == "router")
    assert first.data["reply_rejected"] is True and first.data["fallback"] == "router call failed"
    assert llm.roles()[:3] == ["memr3.router", "memr3.router.repair", "memr3.router.retry"]


def test_the_router_step_says_when_the_client_repaired_the_reply_locally(tiny_conv):
    cut = json.dumps(NULLS)[:-30]  # cut inside the reasoning key's value: json_repair closes it
    llm = ScriptedLLM({"memr3.router": [cut], "memr3.answer": "Geneva"})
    llm.local_repair = True
    ans = memr3(llm).ingest(tiny_conv).answer(Q)
    first = next(s for s in ans.steps if s.kind == "router")
    assert llm.roles() == ["memr3.router", "memr3.answer"] and first.data["repaired_locally"] is True
    assert first.data["evidence"] == NULLS["evidence"] and MemR3.summary_stats([ans])["local_repairs"] == 1


# -- MemR3's reranker ([code] MaskedRetriever: a 20-chunk pool, reranked, the n_chk best kept) -------------------------
class LastFirst:
    """A deterministic reranker: the later a document stands in the pool, the higher its score."""

    name = "last-first"

    def __init__(self):
        self.calls = []

    def __call__(self, query, documents):
        self.calls.append((query, list(documents)))
        return np.arange(len(documents), dtype=float)


class Spy:
    """The backend's retriever, recording what MemR3 asks it for."""

    def __init__(self, inner):
        self.inner, self.asked = inner, []

    def __len__(self):
        return len(self.inner)

    def search(self, query, k, exclude=frozenset()):
        self.asked.append(k)
        return self.inner.search(query, k, exclude=exclude)


def _spied(method):
    spy = Spy(MemR3.as_retriever(method))
    method.as_retriever = lambda: spy
    return spy


def test_with_a_reranker_each_retrieval_reranks_a_pool_and_keeps_the_best(tiny_conv):
    reranker = LastFirst()
    llm = ScriptedLLM({"memr3.router": [NULLS], "memr3.answer": "Geneva"})
    m = memr3(llm, reranker=reranker, n_chk=2).ingest(tiny_conv)
    spy = _spied(m)
    ans = m.answer(Q)
    first = next(s for s in ans.steps if s.kind == "retrieve")
    rr = first.data["rerank"]
    pool = rr["pool_ids"]
    assert spy.asked == [RERANK_POOL] and len(pool) == len(tiny_conv.turns) == len(reranker.calls[0][1])
    assert reranker.calls[0][0] == Q  # the retrieval query (q alone on the initial retrieval)
    assert rr["kept_ids"] == pool[::-1][:2] == [h.unit_id for h in first.hits]
    assert [h.score for h in first.hits] == [len(pool) - 1.0, len(pool) - 2.0]  # the reranker's scores
    assert MemR3.summary_stats([ans])["reranked_retrievals"] == 1


def test_without_a_reranker_the_retrieval_is_as_before(tiny_conv):
    llm = ScriptedLLM({"memr3.router": [NULLS], "memr3.answer": "Geneva"})
    m = memr3(llm, n_chk=2).ingest(tiny_conv)
    spy = _spied(m)
    ans = m.answer(Q)
    assert spy.asked == [2] and "rerank" not in next(s for s in ans.steps if s.kind == "retrieve").data
    assert "reranker" not in m.config()  # the configuration (and its hash) a run had before rerankers
    assert "reranker" in m.param_notes or m.components.reranker is None  # a paper that reranks: a departure


def test_the_reranker_is_a_service_load_takes(tiny_conv, tmp_path):
    llm = ScriptedLLM([], default="auto")
    reranker = LastFirst()
    m = MemR3(llm=llm, embedder=HashEmbedder(dim=128), reranker=reranker, profile="paper").ingest(tiny_conv)
    m.save(tmp_path / "m")
    back = MemR3.load(tmp_path / "m", llm=llm, embedder=HashEmbedder(dim=128), reranker=reranker)
    assert back.reranker is reranker
    with pytest.raises(ValueError, match="reranker must be callable"):
        MemR3(llm=llm, embedder=HashEmbedder(dim=128), reranker="ms-marco").ingest(tiny_conv)


# -- benchmarks/bench_repairs.py: what local repair would have saved on a recording ------------------------------------
def test_the_repairs_bench_counts_what_local_repair_saves_on_a_recorded_cassette(tmp_path):
    from benchmarks import bench_repairs
    from workbench.llm import CachedLLM

    cassette = tmp_path / "m-conv-1.jsonl"
    llm = CachedLLM(ScriptedLLM([CUT, CUT, '{"facts": []}', CUT_EARLY, CUT_EARLY, CUT_EARLY, '{"facts": ["x"]}']),
                    cassette)
    llm.complete("one?", schema=SCHEMA, role="m.extract")  # cut, repair refused, retry read: both would be saved
    with pytest.raises(ParseError):
        llm.complete("two?", schema=SCHEMA, role="m.extract")  # cut before the key: local repair cannot save it
    llm.complete("three?", schema=SCHEMA, role="m.extract")  # read at once
    own = bench_repairs.measure(cassette)["families"]["own"]
    assert (own["calls"], own["failed_replies"], own["repair_calls"], own["retry_calls"]) == (7, 2, 2, 2)
    assert (own["saved_repair_calls"], own["saved_retry_calls"], own["replies_repaired_locally"]) == (1, 1, 1)
    data = bench_repairs.run(tmp_path)
    assert data["per_method"]["m"]["own"]["saved_tokens"] == own["saved_tokens"] > 0
    from benchmarks.run_all import render

    meta = {"config": "reduced", "date": "d", "steps": {}, "wall_s": 0, "machine": {"cpus": 2, "python": "3"}}
    text = render(meta, lambda name: data if name == "repairs.json" else None)
    assert "## Local JSON repair" in text and "| m | conv-1 | 7 | 2 (0 at the cap) | 2 + 2 |" in text
