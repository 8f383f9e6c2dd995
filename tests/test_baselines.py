import pytest

from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM
from workbench.methods import EagerFacts, EagerFloor, FullContext, NaiveRAG  # noqa: F401


# The method contract runs in tests/test_contract.py (one suite over every registered method).


def test_rag_retrieves_the_turn_that_shares_words(tiny_conv):
    llm = ScriptedLLM({"naive_rag.answer": "Geneva"})
    rag = NaiveRAG(llm=llm, embedder=HashEmbedder(dim=512), top_k=1).ingest(tiny_conv)
    target = tiny_conv.turns[3]
    ans = rag.answer(target.text)
    assert ans.context[0].source_ids == (target.id,)
    assert ans.text == "Geneva"
    assert target.text in llm.requests[-1]["messages"][0]["content"]


@pytest.mark.parametrize("chunking,expect", [("turn", None), ("session", 2)])
def test_rag_chunking(tiny_conv, chunking, expect):
    rag = NaiveRAG(llm=ScriptedLLM([], default="x"), embedder=HashEmbedder(), chunking=chunking).ingest(tiny_conv)
    n = len(rag.memories())
    assert n == (expect or len(tiny_conv.turns))


def test_window_chunking_never_splits_a_message(tiny_conv):
    rag = NaiveRAG(llm=ScriptedLLM([], default="x"), embedder=HashEmbedder(), chunking="window",
                   chunk_tokens=40).ingest(tiny_conv)
    df = rag.memories()
    cited = [i for ids in df.source_ids for i in ids]
    assert sorted(cited) == sorted(t.id for t in tiny_conv.turns)  # every turn exactly once
    assert 2 < len(df) < len(tiny_conv.turns)


def test_full_context_prompt_contains_every_turn(tiny_conv):
    llm = ScriptedLLM([], default="ok")
    FullContext(llm=llm).ingest(tiny_conv).answer("Where?")
    prompt = llm.requests[-1]["messages"][0]["content"]
    assert all(t.text in prompt for t in tiny_conv.turns)
    assert tiny_conv.sessions[0].date_time.strftime("%B %Y") in prompt


def test_eager_floor_one_call_per_exchange_and_failures_recorded(tiny_conv):
    from workbench.llm import LLMError
    from workbench.methods.common import exchanges

    n_ex = sum(len(exchanges(s)) for s in tiny_conv.sessions)
    replies = [LLMError("boom")] + [{"facts": ["A fact."]}] * (n_ex - 1)
    m = EagerFloor(llm=ScriptedLLM(replies), embedder=HashEmbedder()).ingest(tiny_conv)
    assert m.construction_calls_ == n_ex
    assert len(m.failures_) == 1 and "boom" in m.failures_[0]["error"]
    assert len(m.memories()) == n_ex - 1
    assert {e.kind for e in m.events} == {"ADD"}


def test_invalid_params_rejected_at_ingest(tiny_conv):
    m = NaiveRAG(llm=ScriptedLLM([]), embedder=HashEmbedder(), chunking="paragraph")
    with pytest.raises(ValueError, match="chunking"):
        m.ingest(tiny_conv)
    with pytest.raises(ValueError, match="needs llm"):
        NaiveRAG(embedder=HashEmbedder()).ingest(tiny_conv)
