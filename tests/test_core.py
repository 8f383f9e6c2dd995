"""Vector index, trace records, embedders."""
import numpy as np
import pytest

from workbench.embed import CachedEmbedder, HashEmbedder
from workbench.index import VectorIndex
from workbench.trace import Answer, Hit, LLMCall, MemoryEvent, Step, Usage


def _unit(i, dim=8):
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def test_index_add_search_exclude_delete_update(tmp_path):
    idx = VectorIndex(8)
    idx.add(["a", "b", "c"], np.stack([_unit(0), _unit(1), _unit(2)]))
    q = _unit(0) + 0.5 * _unit(1)
    assert [i for i, _ in idx.search(q, 2)] == ["a", "b"]
    assert [i for i, _ in idx.search(q, 2, exclude={"a"})] == ["b", "c"]
    assert idx.delete(["b", "zzz"]) == 1 and "b" not in idx
    assert [i for i, _ in idx.search(q, 3)] == ["a", "c"]
    idx.update(["c"], _unit(0)[None, :] * 0 + _unit(1)[None, :])  # c now points along axis 1
    assert idx.search(_unit(1), 1)[0][0] == "c" and len(idx) == 2
    idx.save(tmp_path / "idx")
    again = VectorIndex.load(tmp_path / "idx")
    assert again.ids == idx.ids and again.search(q, 1) == idx.search(q, 1)


def test_index_exclude_everything_and_empty():
    idx = VectorIndex(4)
    assert idx.search(np.ones(4), 3) == []
    idx.add(["x"], np.ones((1, 4)) / 2)
    assert idx.search(np.ones(4), 3, exclude={"x"}) == []
    with pytest.raises(ValueError):
        idx.add(["y", "y"], np.ones((2, 4)))


def test_trace_round_trip_and_usage():
    call = LLMCall("m.answer", "m", "query", "model", ({"role": "user", "content": "hi"},), "yo", 5, 2, 0.1, False)
    step = Step("retrieve", "Top-k", {"ids": ("a", "b"), "nested": {"k": 3}}, (Hit("a", "text", 0.5, ("D1:1",)),),
                (call,))
    ans = Answer("q?", "a.", (step,), (Hit("a", "text", 0.5, ("D1:1", "D1:2")),), Usage(5, 2, 1, 0, 0.1), "m")
    again = Answer.from_json(ans.to_json())
    assert again == ans and again.steps[0].data["ids"] == ["a", "b"]
    assert ans.source_ids == ("D1:1", "D1:2") and step.usage.total_tokens == 7
    assert "<script>" not in Answer("<script>x</script>", "<b>", ()).\
        _repr_html_().replace("&lt;script&gt;", "")
    ev = MemoryEvent(0, "UPDATE", "f1", "old", "new", "turn D2:3", ("D2:3",), "2023-05-01T00:00:00", "ama")
    assert MemoryEvent.from_json(ev.to_json()) == ev
    with pytest.raises(ValueError):
        MemoryEvent(0, "EXPLODE", "x")


def test_hash_embedder_is_deterministic_and_lexical():
    e = HashEmbedder(dim=256)
    a, b, c = e(["violin lessons in Geneva", "Geneva violin lessons", "kitten named Miso"])
    assert np.allclose(e(["violin lessons in Geneva"])[0], a)
    assert a @ b > a @ c
    assert np.isclose(np.linalg.norm(a), 1.0)


def test_cached_embedder_calls_inner_once(tmp_path):
    class Counting(HashEmbedder):
        calls = 0

        def __call__(self, texts):
            Counting.calls += len(texts)
            return super().__call__(texts)

    emb = CachedEmbedder(Counting(dim=16), tmp_path / "e.npz")
    emb(["a", "b", "a"])
    emb(["b", "c"])
    assert Counting.calls == 3
    emb.save()
    again = CachedEmbedder(Counting(dim=16), tmp_path / "e.npz")
    again(["a", "b", "c"])
    assert Counting.calls == 3
