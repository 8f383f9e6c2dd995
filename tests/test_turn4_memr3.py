"""MemR3's turn-4 review (../shared/reviews/memr3.md; answers in docs/reviews/memr3.md "Turn-4 review"): each test
fails on the code before its fix."""
from __future__ import annotations

from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM
from workbench.methods import NaiveRAG
from workbench.methods.memr3.method import MemR3
from workbench.methods.memr3.state import RouterState, guard
from workbench.trace import Hit

Q = "Where does Noor live now?"


def R(decision, evidence=(), gaps=(), **payload):
    return {"evidence": list(evidence), "gaps": list(gaps), "decision": decision, **payload}


def rag():
    return NaiveRAG(llm=ScriptedLLM([], default="x"), embedder=HashEmbedder(dim=128), chunking="turn")


def run(profile, replies, conv, **params):
    llm = ScriptedLLM(replies)
    m = MemR3(llm=llm, embedder=HashEmbedder(dim=128), backend=rag(), profile=profile, **params).ingest(conv)
    return m.answer(Q), llm


def routers(ans):
    return [s for s in ans.steps if s.kind == "router"]


# -- N2: the paper profile has the paper's three guards only --------------------------------------------------
def test_the_paper_profile_forces_nothing_once_the_store_is_drained(tiny_conv):
    """Review differential S7: a model that retrieves once and then answers, on a store the first retrieve drains.
    [code] makes 2 router calls; the paper profile made 5 (reflect forced from the drain to the budget)."""
    n = len(rag().ingest(tiny_conv).as_retriever())
    ans, llm = run("paper", [R("retrieve", ["a"], retrieval_query="city"), R("answer", ["Noor lives in Geneva"],
                                                                              detailed_answer="Geneva"), "Geneva"],
                   tiny_conv, n_chk=max(1, n - 1))
    steps = routers(ans)
    assert [s.data["action"] for s in steps] == ["retrieve", "answer"]
    assert [s.data["forced"] for s in steps] == [None, None] and not steps[1].data["backend_has_more"]
    assert ans.text == "Geneva" and len(llm.requests) == 3  # 2 router calls and the answer call


def test_a_drained_store_still_offers_retrieve_and_an_empty_batch_forces_reflect(tiny_conv):
    """The paper's empty-retrieval guard (Alg. 1 l.5) is what stops a retrieve on a drained store; the streak guard
    needs an opportunity ([code]), so after that reflect the router chooses again."""
    ans, llm = run("paper", [R("retrieve", retrieval_query="more"), R("reflect", reasoning="t"),
                             R("answer", detailed_answer="Geneva"), "Geneva"], tiny_conv, n_chk=50)
    assert "retrieve" in llm.requests[0]["schema"]["properties"]["decision"]["enum"]
    steps = routers(ans)
    assert [s.data["action"] for s in steps] == ["retrieve", "reflect", "answer"]
    assert [s.data["forced"] for s in steps] == [None, "empty_retrieval", None]


def test_choose_forces_nothing_and_the_fourth_guard_modes_stay_options():
    hit = (Hit("c1", "x"),)
    at_cap = RouterState(Q, k=1, reflect_streak=1, snippets=hit)
    assert MemR3(profile="paper").nothing_left == "choose" and MemR3(profile="small").nothing_left == \
        "reflect_then_answer"
    assert guard(at_cap, n_max=5, n_cap=1, more=False, nothing_left="choose") == (None, None)
    assert guard(at_cap, n_max=5, n_cap=1, more=False, nothing_left="choose", reflect=False) == (None, None)
    assert guard(at_cap, n_max=5, n_cap=1, more=True, nothing_left="choose") == ("retrieve", "reflect_streak")
    assert guard(at_cap, n_max=5, n_cap=1, more=False, nothing_left="reflect") == ("reflect", "nothing_left")


# -- N6: a rejected reply is told apart from a skipped payload ------------------------------------------------
def test_a_rejected_reply_is_recorded_with_its_text_and_left_out_of_the_payload_share(tiny_conv):
    """The paper schema rejects a capitalised "Answer"; after the repair and the retry also fail, the step used to
    record only proposed=None and payload_written=False, and payload_share counted it as a skipped payload. (The
    strict reading: the paper profile's own, lenient one reads "Answer" as [code] does, tests/test_lenient_replies.)"""
    bad = R("Answer", ["Noor lives in Geneva"], detailed_answer="Geneva")
    ans, llm = run("paper", [bad, bad, bad, R("retrieve", retrieval_query="city"),
                             R("answer", ["Noor lives in Geneva"], detailed_answer="Geneva"), "Geneva"],
                   tiny_conv, n_chk=2, reading="strict")
    steps = routers(ans)
    assert steps[0].data["reply_rejected"] is True and '"Answer"' in steps[0].data["rejected_reply"]
    assert steps[0].data["fallback"] == "router call failed" and steps[0].data["action"] == "reflect"
    assert [s.data["reply_rejected"] for s in steps[1:]] == [False, False]
    stats = MemR3.summary_stats([ans])
    assert stats["rejected_replies"] == 1
    assert stats["payload_share"] == {"retrieve": 1.0, "answer": 1.0}  # the discarded reflect is not a skipped one


# -- N4: the real-scale summary reads every batch the router read, the last batch's beside it ---------------------
def _four_batches():
    from workbench.data import load_sample

    replies = [R("retrieve", ["x"], retrieval_query=q) for q in ("dog name", "new city", "job")]
    llm = ScriptedLLM(replies + [R("answer", ["x"], detailed_answer="Pilot"), "Pilot"])
    backend = NaiveRAG(llm=ScriptedLLM([], default="x"), embedder=HashEmbedder(dim=128), chunking="turn")
    return MemR3(llm=llm, embedder=HashEmbedder(dim=128), backend=backend, profile="small", n_chk=3, n_max=4), \
        load_sample()[0]


def test_the_real_scale_figures_give_every_batch_and_the_last_batch_apart():
    """Gold read only in the first batch: a reading miss over every batch (the router saw it), a retrieval miss
    on the last batch (what the summary counted before)."""
    from dataclasses import replace

    from benchmarks.bench_real_scale import last_batch_figures, recall, to_markdown
    from workbench.data import Dataset
    from workbench.eval import evaluate

    method, conv = _four_batches()
    probe = _four_batches()[0].ingest(conv).answer(conv.qa[0].question)  # its own scripted model
    first = MemR3.batches(probe)[0][0].source_ids[0]
    assert first not in {t for h in MemR3.last_batch(probe) for t in h.source_ids}
    qa = replace(conv.qa[0], evidence=(first,), answer="Tokyo", category=4)
    conv = replace(conv, qa=(qa,))
    rows = [r.to_dict() for r in evaluate(method, Dataset("t", (conv,)), progress=False)]
    assert rows[0]["evidence_recall"] == 1.0 and rows[0]["attribution"] == "reading_miss"
    got = last_batch_figures(MemR3, rows, [conv])["last_batch"]
    assert (got["recall_sum"], got["recall_n"], got["attribution"]) == (0.0, 1, {"retrieval_miss": 1})
    assert last_batch_figures(NaiveRAG, rows, [conv]) == {}
    fmt = lambda v, p=3: "–" if v is None else f"{v:.{p}f}"  # noqa: E731
    line = {"evidence_recall": 0.681, "last_batch": {"evidence_recall": 0.102, "attribution": {}}}
    assert recall(line, fmt) == "0.681 (last batch 0.102)" and recall({"evidence_recall": 0.5}, fmt) == "0.500"
    md = to_markdown([{"method": "memr3", "model": "m", "n": 81, "f1": 0.2, "accuracy": 0.8,
                       "judge_false_accept": None, "query_tokens": 1.0, "fc_token_ratio": 0.1,
                       "construction_tokens": 0, "construction_calls": 0, "errors": 0, "recording_wall_s": None,
                       "paper_anchor": None, **line}])
    assert "| 0.681 (last batch 0.102) |" in md


def test_the_summary_note_says_memr3_recall_is_over_every_batch_with_the_last_batchs_figures():
    from benchmarks.run_all import _memr3_recall_note

    r = {"replays": [{"method": "memr3"}], "table": [{"method": "memr3", "last_batch": {
        "evidence_recall": 0.102, "attribution": {"retrieval_miss": 57, "correct": 14}}}]}
    text = _memr3_recall_note(r)[0]
    assert "every batch the router read" in text and "0.102" in text and "retrieval_miss 57 · correct 14" in text
    assert _memr3_recall_note({"replays": [{"method": "naive_rag"}], "table": [{"method": "naive_rag"}]}) == []
