import pytest

from workbench.embed import HashEmbedder
from workbench.llm import LLMError, ScriptedLLM
from workbench.methods import EagerFacts, MemoryMethod, NaiveRAG
from workbench.methods.memr3 import prompts as P
from workbench.methods.memr3.method import DEFAULT_CHUNK_TOKENS, MemR3
from workbench.methods.memr3.state import (RouterState, delta_fallback, fallback_action, guard, has_more,
                                           normalize_gaps, open_gaps, resolve, retrieval_query,
                                           written_gaps)
from workbench.methods.store import MemoryUnit, UnitStore
from workbench.trace import Hit

Q = "Where does Noor live now?"


def R(decision, evidence=(), gaps=(), **payload):
    """A router reply."""
    return {"evidence": list(evidence), "gaps": list(gaps), "decision": decision, **payload}


def rag(chunking="turn"):
    return NaiveRAG(llm=ScriptedLLM([], default="x"), embedder=HashEmbedder(dim=128), chunking=chunking)


def memr3(replies, *, backend=None, **params):
    llm = ScriptedLLM(replies)
    return MemR3(llm=llm, embedder=HashEmbedder(dim=128), backend=backend or rag(), **params), llm


def steps(ans, kind):
    return [s for s in ans.steps if s.kind == kind]


# -- contract -----------------------------------------------------------------------------------------
def make_default():
    return MemR3(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder(dim=128))


# The method contract (over_rag, over_eager_facts) runs in tests/test_contract.py.


# -- pure router ----------------------------------------------------------------------------------------
def test_guard_priority_budget_then_empty_then_streak():
    empty_after_retrieve = dict(just_retrieved=True, snippets=(), reflect_streak=3)
    assert guard(RouterState(Q, k=4, **empty_after_retrieve), n_max=5, n_cap=1, more=True) == ("answer", "budget")
    assert guard(RouterState(Q, k=1, **empty_after_retrieve), n_max=5, n_cap=1, more=True) == \
        ("reflect", "empty_retrieval")
    hit = (Hit("c1", "x"),)
    assert guard(RouterState(Q, k=1, reflect_streak=1, snippets=hit), n_max=5, n_cap=1, more=True) == \
        ("retrieve", "reflect_streak")
    assert guard(RouterState(Q, k=1, reflect_streak=1, snippets=hit), n_max=5, n_cap=2, more=True) == (None, None)
    # nothing new left in the backend: reflect is forced, not only right after an empty retrieval ...
    assert guard(RouterState(Q, k=1, snippets=hit), n_max=5, n_cap=1, more=False) == ("reflect", "nothing_left")
    assert guard(RouterState(Q, k=2, just_retrieved=False), n_max=5, n_cap=1, more=False) == \
        ("reflect", "nothing_left")
    # ... and once the streak is at the cap, answer (a forced retrieve could bring nothing)
    assert guard(RouterState(Q, k=1, reflect_streak=1, snippets=hit), n_max=5, n_cap=1, more=False) == \
        ("answer", "nothing_left")
    assert guard(RouterState(Q, k=1, reflect_streak=1, snippets=hit), n_max=5, n_cap=2, more=False) == \
        ("reflect", "nothing_left")
    assert guard(RouterState(Q, k=1, snippets=hit), n_max=5, n_cap=1, more=False, reflect=False) == \
        ("answer", "nothing_left")
    # without the reflect node an empty retrieval forces answer
    assert guard(RouterState(Q, k=1, just_retrieved=True), n_max=5, n_cap=1, more=True, reflect=False) == \
        ("answer", "empty_retrieval")
    assert guard(RouterState(Q), n_max=1, n_cap=1, more=True) == ("answer", "budget")


def test_resolve_and_fallbacks():
    assert resolve("retrieve", "answer", reflect=True, more=True) == ("answer", None)
    assert resolve(" Answer ", None, reflect=True, more=True) == ("answer", None)
    assert resolve("search", None, reflect=True, more=True) == ("reflect", "invalid decision 'search'")
    assert resolve("reflect", None, reflect=False, more=True) == ("retrieve", "invalid decision 'reflect'")
    assert fallback_action(reflect=False, more=False) == "answer"
    assert normalize_gaps("None") == () and normalize_gaps(["None", " date of move "]) == ("date of move",)
    # the prompt's own placeholder is kept in what the small router is shown, but is no open gap (issue #39)
    assert written_gaps(["No gaps noted."]) == ("No gaps noted.",) and normalize_gaps(["No gaps noted."]) == ()
    assert open_gaps(("No gaps noted.", "no gaps noted", "date of move")) == ("date of move",)
    assert delta_fallback(("No gaps noted.", "date of move")) == "date of move"
    assert delta_fallback(("No gaps noted.",) * 8) is None
    assert retrieval_query("Q?", "move date", use_delta=True) == "Q?. move date"
    assert retrieval_query("Q?", "move date", use_delta=False) == "Q?"
    state = RouterState(Q, seen_ids=frozenset({"a", "b"}))
    assert has_more(state, mask=True, total=3) and not has_more(state, mask=True, total=2)
    assert has_more(state, mask=False, total=2)


# -- guards end to end ------------------------------------------------------------------------------------
def test_masking_no_id_retrieved_twice(tiny_conv):
    replies = [R("retrieve", retrieval_query=q) for q in ("violin lessons", "museum job", "kitten Miso", "Lyon")]
    m, _ = memr3(replies + [R("answer", detailed_answer="Geneva"), "Geneva"], n_chk=2)
    ans = m.ingest(tiny_conv).answer(Q)
    retrieves = steps(ans, "retrieve")
    assert len(retrieves) == 5  # initial + 4 (the 5th router call is the forced answer)
    seen: list[str] = []
    for s in retrieves:
        assert sorted(s.data["masked_ids"]) == sorted(seen)
        assert len(s.data["retrieved_ids"]) == 2
        seen += s.data["retrieved_ids"]
    assert len(seen) == len(set(seen)) == 10
    # the final reader reads the evidence the router wrote from every batch it read (turn-4 review N4)
    assert [h.unit_id for h in ans.context] == seen
    assert [h.unit_id for h in MemR3.last_batch(ans)] == retrieves[-1].data["retrieved_ids"]


def test_without_mask_items_come_back(tiny_conv):
    m, _ = memr3([R("retrieve")] * 3 + ["Geneva"], n_chk=2, n_max=3, mask=False, delta_query=False)
    ans = m.ingest(tiny_conv).answer(Q)
    retrieves = steps(ans, "retrieve")
    assert len(retrieves) == 3 and ans.text == "Geneva" and len(ans.context) == 2  # the same 2 hits, each once
    assert all(s.data["masked_ids"] == [] for s in retrieves)
    first = retrieves[0].data["retrieved_ids"]
    assert len(first) == 2 and all(s.data["retrieved_ids"] == first for s in retrieves[1:])


@pytest.mark.parametrize("n_max", [1, 2])
def test_budget_forces_answer(tiny_conv, n_max):
    replies = [R("retrieve", retrieval_query="Geneva museum job")] * (n_max - 1) + [R("retrieve", retrieval_query="x")]
    m, llm = memr3(replies + ["Geneva"], n_max=n_max)
    ans = m.ingest(tiny_conv).answer(Q)
    routers = steps(ans, "router")
    assert len(routers) == n_max and len(steps(ans, "retrieve")) == n_max
    last = routers[-1].data
    assert (last["forced"], last["proposed"], last["action"]) == ("budget", "retrieve", "answer")
    assert 'must be "answer"' in llm.requests[n_max - 1]["messages"][0]["content"]
    assert f"Draft answer: {P.NO_DRAFT}" in llm.requests[-1]["messages"][0]["content"]
    assert ans.text == "Geneva" and len(llm.requests) == n_max + 1


class _Unsized:
    """A retriever that does not tell its size (so only an empty masked batch shows exhaustion)."""

    def __init__(self, inner, fail_first=None):
        self.inner, self.fail_first = inner, fail_first

    def search(self, query, k, *, exclude=frozenset()):
        if self.fail_first is not None:
            exc, self.fail_first = self.fail_first, None
            raise exc
        return self.inner.search(query, k, exclude=exclude)


def test_empty_retrieval_forces_reflect(tiny_conv, monkeypatch):
    replies = [R("retrieve", retrieval_query="violin teacher"), R("retrieve", retrieval_query="again"),
               R("answer", evidence=["Noor moved to Geneva in June 2023."], detailed_answer="Geneva"), "Geneva"]
    m, _ = memr3(replies, backend=rag("session"), n_chk=2)  # 2 chunks: the first retrieval takes both
    m.ingest(tiny_conv)
    inner = m.as_retriever()
    monkeypatch.setattr(m, "as_retriever", lambda: _Unsized(inner))
    ans = m.answer(Q)
    assert [s.kind for s in ans.steps] == ["retrieve", "router", "retrieve", "router", "reflect", "router", "answer"]
    assert ans.steps[2].data["retrieved_ids"] == [] and ans.steps[2].data["backend_exhausted"] is True
    forced = ans.steps[3].data
    assert (forced["forced"], forced["proposed"], forced["action"]) == ("empty_retrieval", "retrieve", "reflect")
    after = ans.steps[5].data  # streak 1 = n_cap and nothing new remains: answer, not a forced retrieve
    assert after["forced"] == "nothing_left" and after["backend_has_more"] is False and after["action"] == "answer"


def test_nothing_left_forces_reflect_before_any_empty_retrieval(tiny_conv):
    """The backend's two chunks are both in the first batch: the router is never offered retrieve."""
    replies = [R("retrieve", retrieval_query="violin teacher"),
               R("answer", evidence=["Noor moved to Geneva in June 2023."], detailed_answer="Geneva"), "Geneva"]
    m, llm = memr3(replies, backend=rag("session"), n_chk=2)
    ans = m.ingest(tiny_conv).answer(Q)
    assert [s.kind for s in ans.steps] == ["retrieve", "router", "reflect", "router", "answer"]
    first, second = steps(ans, "router")
    decision = (first.data["forced"], first.data["proposed"], first.data["action"])
    assert decision == ("nothing_left", "retrieve", "reflect")
    assert 'must be "reflect"' in llm.requests[0]["messages"][0]["content"]
    assert (second.data["forced"], second.data["action"]) == ("nothing_left", "answer")
    assert ans.text == "Geneva" and len(steps(ans, "retrieve")) == 1


def test_backend_error_is_recorded_and_does_not_exhaust(tiny_conv, monkeypatch):
    replies = [R("retrieve", retrieval_query="Noor city"), R("reflect", reasoning="search failed"),
               R("retrieve", retrieval_query="Noor moved"), R("answer", detailed_answer="Geneva"), "Geneva"]
    m, _ = memr3(replies, n_chk=2)
    m.ingest(tiny_conv)
    inner = m.as_retriever()
    fake = _Unsized(inner)
    calls = {"n": 0}

    def search(query, k, *, exclude=frozenset()):
        calls["n"] += 1
        if calls["n"] == 2:  # the first refinement search fails
            raise LLMError("backend down")
        return inner.search(query, k, exclude=exclude)

    fake.search = search
    monkeypatch.setattr(m, "as_retriever", lambda: fake)
    ans = m.answer(Q)
    retrieves = steps(ans, "retrieve")
    assert retrieves[1].data["error"] == "LLMError: backend down"
    assert retrieves[1].data["backend_exhausted"] is False
    routers = steps(ans, "router")
    assert routers[1].data["forced"] == "empty_retrieval" and routers[1].data["backend_has_more"] is True
    assert routers[2].data["forced"] == "reflect_streak" and len(retrieves) == 3  # retrieval resumes
    assert len(retrieves[2].data["retrieved_ids"]) == 2
    assert steps(ans, "answer")[0].data["backend_errors"] == 1
    assert MemR3.summary_stats([ans])["backend_errors"] == 1


def test_cache_misses_absorbed_by_fallbacks_are_flagged(tiny_conv):
    from workbench.llm import CachedLLM

    replay = CachedLLM.replay(None, model="scripted")  # an empty replay cassette: every call misses
    m = MemR3(llm=replay, embedder=HashEmbedder(dim=128), backend=rag(), n_max=2)
    ans = m.ingest(tiny_conv).answer(Q)
    routers = steps(ans, "router")
    assert all(r.data["cache_miss"] and r.data["error"].startswith("CacheMiss") for r in routers)
    assert routers[-1].data["forced"] == "budget"
    assert routers[-1].data["fallback"] == "router call failed (cassette miss)"  # visible even when forced
    final = steps(ans, "answer")[0]
    assert final.data["cache_miss"] and final.data["fallback"] == "no answer" and "fallback" in final.title
    stats = MemR3.summary_stats([ans])
    assert stats["cache_misses"] == len(routers) + 1 and stats["answer_fallbacks"] == 1


@pytest.mark.parametrize("n_cap", [1, 2])
def test_reflect_streak_forces_retrieve(tiny_conv, n_cap):
    reflects = [R("reflect", gaps=["current city of Noor"], reasoning=f"thought {i}") for i in range(n_cap + 1)]
    m, llm = memr3(reflects + [R("answer", detailed_answer="Geneva"), "Geneva"], n_cap=n_cap)
    ans = m.ingest(tiny_conv).answer(Q)
    routers = steps(ans, "router")
    assert [r.data["action"] for r in routers] == ["reflect"] * n_cap + ["retrieve", "answer"]
    assert routers[n_cap].data["forced"] == "reflect_streak" and routers[n_cap].data["proposed"] == "reflect"
    assert [r.data["forced"] for r in routers[:n_cap]] == [None] * n_cap
    assert len(steps(ans, "reflect")) == n_cap
    retrieve = steps(ans, "retrieve")[1].data
    assert retrieve["query"] == f"{Q}. current city of Noor" and routers[n_cap].data["delta_source"] == "first_gap"
    assert "thought 0" in llm.requests[1]["messages"][1]["content"]  # F reaches the next router call


def test_the_copied_placeholder_is_shown_but_never_searched_for(tiny_conv):
    """reviews/memr3.md B3: the 0.5B copied "No gaps noted." into gaps; a retrieve without a query then
    searched for "<question>. No gaps noted.". The next prompt still shows the list as written (the
    recordings' prompts), the step counts the placeholder, and the search is q alone."""
    reflects = [R("reflect", gaps=[P.NO_GAPS] * 3, reasoning=f"thought {i}") for i in range(2)]  # 2nd: forced retrieve
    m, llm = memr3(reflects + [R("answer", detailed_answer="Geneva"), "Geneva"], n_cap=1)
    ans = m.ingest(tiny_conv).answer(Q)
    routers = steps(ans, "router")
    assert [r.data["action"] for r in routers] == ["reflect", "retrieve", "answer"]
    assert routers[0].data["placeholder_gaps"] == 3 and "placeholder_gaps" not in routers[2].data
    assert routers[1].data["delta_source"] == "question" and routers[1].data["delta_query"] is None
    assert steps(ans, "retrieve")[1].data["query"] == Q
    assert f"- {P.NO_GAPS}" in llm.requests[1]["messages"][1]["content"]  # shown as the model wrote it


# -- invalid decisions ---------------------------------------------------------------------------------------
def test_parse_error_falls_back_to_reflect_and_is_recorded(tiny_conv):
    replies = ["not json", "still not", "nope", R("retrieve", retrieval_query="Noor city"),
               R("answer", detailed_answer="Geneva"), "Geneva"]
    m, _ = memr3(replies)
    ans = m.ingest(tiny_conv).answer(Q)
    first = steps(ans, "router")[0]
    assert first.data["error"].startswith("ParseError") and first.data["fallback"] == "router call failed"
    assert first.data["action"] == "reflect" and first.data["proposed"] is None
    assert [c.role for c in first.calls] == ["memr3.router", "memr3.router.repair", "memr3.router.retry"]
    assert steps(ans, "router")[1].data["forced"] == "reflect_streak"
    assert ans.text == "Geneva" and MemR3.summary_stats([ans])["fallbacks"] == 1


def test_llm_error_and_out_of_enum_decision(tiny_conv):
    bad = {"evidence": [], "gaps": [], "decision": "search"}
    replies = [LLMError("boom"), R("retrieve", retrieval_query="Noor"), bad, R("answer", detailed_answer="Geneva"),
               LLMError("down")]
    m, _ = memr3(replies)
    ans = m.ingest(tiny_conv).answer(Q)
    routers = steps(ans, "router")
    assert routers[0].data["error"] == "LLMError: boom" and routers[0].data["action"] == "reflect"
    # the client rejects the enum violation and its repair call succeeds: recorded in the step's calls
    assert [c.role for c in routers[2].calls] == ["memr3.router", "memr3.router.repair"]
    assert routers[2].data["action"] == "answer"
    final = steps(ans, "answer")[0].data
    assert final["error"] == "LLMError: down" and ans.text == "Geneva"  # the draft stands in


def test_answer_call_gets_no_raw_snippets(tiny_conv):
    replies = [R("answer", evidence=["Noor lives in Geneva since June 2023."], detailed_answer="Geneva"), "Geneva"]
    m, llm = memr3(replies, n_chk=3)
    ans = m.ingest(tiny_conv).answer(Q)
    router_prompt = llm.requests[0]["messages"][1]["content"]
    answer_req = llm.requests[-1]
    assert answer_req["role"] == "memr3.answer"
    prompt = answer_req["messages"][0]["content"]
    hits = steps(ans, "retrieve")[0].hits
    assert len(hits) == 3
    for h in hits:
        assert h.text in router_prompt  # the router sees the snippets ...
        assert h.text not in prompt and h.unit_id not in prompt  # ... the answer call does not
        assert tiny_conv.turn(h.source_ids[0]).text not in prompt
    assert "- Noor lives in Geneva since June 2023." in prompt and "Draft answer: Geneva" in prompt


# -- ablations ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("delta_query,expect", [(True, f"{Q}. museum job city"), (False, Q)])
def test_delta_query_ablation(tiny_conv, delta_query, expect):
    replies = [R("retrieve", retrieval_query="museum job city"), R("answer", detailed_answer="Geneva"), "Geneva"]
    m, _ = memr3(replies, delta_query=delta_query)
    assert steps(m.ingest(tiny_conv).answer(Q), "retrieve")[1].data["query"] == expect


def test_reflect_ablation(tiny_conv):
    m, llm = memr3([R("retrieve", retrieval_query="x"), R("retrieve"), "Geneva"], backend=rag("session"),
                   n_chk=2, reflect=False)
    ans = m.ingest(tiny_conv).answer(Q)
    assert llm.requests[0]["schema"]["properties"]["decision"]["enum"] == ["retrieve", "answer"]
    assert '"reflect"' not in llm.requests[0]["messages"][0]["content"].split("Add only")[0]
    # the first batch took both chunks: nothing is left, and without reflect that forces answer
    [only] = steps(ans, "router")
    assert (only.data["forced"], only.data["action"]) == ("nothing_left", "answer") and not steps(ans, "reflect")


def test_n_chk_bounds_each_retrieval(tiny_conv):
    m, _ = memr3([R("answer", detailed_answer="Geneva"), "Geneva"], n_chk=3)
    assert len(steps(m.ingest(tiny_conv).answer(Q), "retrieve")[0].hits) == 3


# -- backends -----------------------------------------------------------------------------------------------
def test_default_backend_is_the_papers_chunked_rag(tiny_conv):
    m = make_default().ingest(tiny_conv)
    assert m.backend is None and isinstance(m.backend_, NaiveRAG)
    assert (m.backend_.chunking, m.backend_.chunk_tokens, DEFAULT_CHUNK_TOKENS) == ("window", 256, 256)
    assert m.memories().equals(m.backend_.memories()) and m.events == m.backend_.events


def test_backend_param_is_cloned_not_built(tiny_conv):
    backend = rag()
    m, _ = memr3([], backend=backend)
    m.ingest(tiny_conv)
    assert m.backend is backend and not backend.is_ingested and m.backend_ is not backend
    assert len(m.memories()) == len(tiny_conv.turns)


def test_over_eager_facts(tiny_conv):
    from workbench.methods.common import exchanges

    n_ex = sum(len(exchanges(s)) for s in tiny_conv.sessions)
    llm = ScriptedLLM({"eager_facts.extract": {"facts": ["Noor moved to Geneva."]},
                       "memr3.router": R("answer", detailed_answer="Geneva"), "memr3.answer": "Geneva"})
    m = MemR3(llm=llm, backend=EagerFacts(llm=llm, embedder=HashEmbedder(dim=128))).ingest(tiny_conv)
    assert m.construction_calls_ == n_ex and set(m.memories().kind) == {"fact"}
    assert len(m.events) == n_ex and {e.method for e in m.events} == {"eager_facts"}
    construct = [c for c in llm.ledger.calls if c.phase == "construct"]
    assert len(construct) == n_ex and {c.method for c in construct} == {"eager_facts"}  # the backend's own tag
    ans = m.answer(Q)
    assert all(h.unit_id.startswith("fact-") for h in ans.context) and ans.text == "Geneva"


class KeywordNotes(MemoryMethod):
    """A minimal custom backend: one note per turn, word-overlap retrieval, an option on as_retriever."""

    name = "keyword_notes"

    def __init__(self, *, tag: str = "note"):
        self.tag = tag

    def _build(self, conv):
        self.notes_ = [MemoryUnit(f"{self.tag}-{i}", "note", t.text, (t.id,)) for i, t in enumerate(conv.turns)]

    def _units(self):
        return [u.row() for u in self.notes_]

    def as_retriever(self, *, level: int = 1):
        return _Overlap(self.notes_, level)


class _Overlap:
    def __init__(self, notes, level):
        self.notes, self.level, self.calls = notes, level, []

    def search(self, query, k, exclude=frozenset()):
        self.calls.append(exclude)
        words = set(query.lower().split())
        scored = sorted(((len(words & set(n.text.lower().split())), n) for n in self.notes if n.id not in exclude),
                        key=lambda p: -p[0])
        return [n.hit(s * self.level) for s, n in scored[:k]]


def test_any_memory_method_with_a_retriever_works(tiny_conv):
    replies = [R("retrieve", retrieval_query="violin"), R("answer", detailed_answer="Geneva"), "Geneva"]
    m, _ = memr3(replies, backend=KeywordNotes(tag="kw"), retriever_options={"level": 2}, n_chk=2)
    ans = m.ingest(tiny_conv).answer(Q)
    assert m.as_retriever().level == 2
    ids = [i for s in steps(ans, "retrieve") for i in s.data["retrieved_ids"]]
    assert len(ids) == 4 == len(set(ids)) and all(i.startswith("kw-") for i in ids)
    assert ans.context[0].score % 2 == 0  # scores come from the level-2 retriever


def test_backend_without_retriever_fails_at_ingest(tiny_conv):
    from workbench.methods import FullContext

    m = MemR3(llm=ScriptedLLM([]), backend=FullContext(llm=ScriptedLLM([])))
    with pytest.raises(NotImplementedError, match="retriever"):
        m.ingest(tiny_conv)


def test_invalid_params_rejected_at_ingest(tiny_conv):
    with pytest.raises(ValueError, match="n_max"):
        memr3([], n_max=0)[0].ingest(tiny_conv)
    with pytest.raises(ValueError, match="backend"):
        MemR3(llm=ScriptedLLM([]), backend=UnitStore(HashEmbedder())).ingest(tiny_conv)
    with pytest.raises(ValueError, match="needs embedder"):
        MemR3(llm=ScriptedLLM([])).ingest(tiny_conv)


def test_save_load_keeps_backend_and_options(tiny_conv, tmp_path):
    m, _ = memr3([], backend=rag("session"), retriever_options={})
    m.ingest(tiny_conv).save(tmp_path)
    loaded = MemR3.load(tmp_path, llm=ScriptedLLM([]), embedder=HashEmbedder(dim=128))
    assert loaded.backend.chunking == "session" and loaded.retriever_options == {}
    assert loaded.memories().equals(m.memories())
    assert [h.unit_id for h in loaded.as_retriever().search(Q, 2)] == [h.unit_id for h in m.as_retriever().search(Q, 2)]


# -- report ---------------------------------------------------------------------------------------------------
def test_summary_stats(tiny_conv):
    one, _ = memr3([R("answer", detailed_answer="Geneva"), "Geneva"])
    five, _ = memr3([R("retrieve", retrieval_query="a")] * 5 + ["Geneva"], n_chk=2, n_cap=2)
    answers = [one.ingest(tiny_conv).answer(Q), five.ingest(tiny_conv).answer(Q)]
    stats = MemR3.summary_stats(answers)
    # second question: four retrieves the router chose, then the budget forces answer
    assert stats["iterations_histogram"] == {1: 1, 5: 1} and stats["mean_iterations"] == 3.0
    assert stats["forced_share"] == {"budget": 1 / 6, "empty_retrieval": 0.0, "reflect_streak": 0.0,
                                     "nothing_left": 0.0}
    assert stats["budget_reached_share"] == 0.5
    assert stats["actions"] == {"answer": 2, "retrieve": 4}
    assert stats["cache_misses"] == stats["answer_fallbacks"] == stats["backend_errors"] == 0


def test_answer_prompt_follows_the_papers_answer_behaviour(tiny_conv):
    """p_w (Zep's prompt, App. A.1's detailed_answer rule): no push toward "Not mentioned"; the draft
    is kept when supported; cautious inferences grounded in limited evidence are allowed."""
    assert "not mentioned" not in P.ANSWER.lower()
    assert "cautious inference" in P.ANSWER and "draft" in P.ANSWER.lower()
    replies = [R("answer", evidence=["Biscuit was renamed Pilot."], detailed_answer="Pilot"), "Pilot"]
    m, llm = memr3(replies)
    m.ingest(tiny_conv).answer("What is Biscuit called now?")
    prompt = llm.requests[-1]["messages"][0]["content"]
    assert "Draft answer: Pilot" in prompt and "- Biscuit was renamed Pilot." in prompt
    assert "not mentioned" not in prompt.lower()


def test_question_date_only_on_longmemeval(tiny_conv):
    assert MemR3.question_date_policy() == {"locomo": False, "longmemeval": True}


def test_the_copied_placeholder_is_no_open_gap_in_the_state(tiny_conv):
    """Issue #39 bug: MemR3 counted its own "No gaps noted." as an open gap in G, the state its answer step and any
    later decision read. Now G (``RouterState.gaps``) holds the open gaps only; the router step still records what
    the model wrote (``gaps``, ``placeholder_gaps``) and the small prompts still show it as written (recordings)."""
    m, llm = memr3([R("reflect", gaps=[P.NO_GAPS] * 2 + ["date of move"], reasoning="t"),
                    R("answer", evidence=["Noor moved to Geneva"], gaps=[P.NO_GAPS] * 3, detailed_answer="Geneva"),
                    "Geneva"], n_cap=2)
    ans = m.ingest(tiny_conv).answer(Q)
    routers, answer = steps(ans, "router"), steps(ans, "answer")[0]
    assert answer.data["gaps"] == []  # was ["No gaps noted."] * 3: the placeholder counted as three open gaps
    assert routers[1].data["gaps"] == [P.NO_GAPS] * 3 and routers[1].data["placeholder_gaps"] == 3
    assert "- date of move" in llm.requests[1]["messages"][1]["content"]
    assert f"- {P.NO_GAPS}\n- {P.NO_GAPS}\n- date of move" in llm.requests[1]["messages"][1]["content"]
