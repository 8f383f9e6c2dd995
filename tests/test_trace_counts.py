"""Token and call counts read back from a run are whole numbers or a named error: a text, negative or
boolean count is one damaged record, never a view that raises while adding counts up."""
from __future__ import annotations

import pytest

from workbench.trace import LLMCall, Usage


def call(**kw):
    return {"role": "reader", "method": "m", "phase": "query", "model": "x", **kw}


def test_integral_counts_are_read():
    c = LLMCall.from_dict(call(prompt_tokens=12.0, completion_tokens=3))
    assert (c.prompt_tokens, c.completion_tokens) == (12, 3) and isinstance(c.prompt_tokens, int)
    assert Usage.from_dict({"prompt_tokens": 1, "completion_tokens": 2, "calls": 1}).total_tokens == 3


@pytest.mark.parametrize("bad", ["12", "<b>9</b>", -1, True, 1.5, None, [3]])
def test_other_counts_are_a_named_error(bad):
    with pytest.raises(ValueError, match="call.prompt_tokens"):
        LLMCall.from_dict(call(prompt_tokens=bad))
    with pytest.raises(ValueError, match="usage.calls"):
        Usage.from_dict({"calls": bad})


def test_a_text_count_in_a_saved_answer_is_reported_not_raised(tmp_path):
    import json

    from workbench.rundir import RunDir
    from workbench.trace import Answer, Step

    step = Step(kind="answer", title="a", calls=(LLMCall(role="reader", method="m", phase="query", model="x"),))
    answer = Answer(question="q?", text="a", method="m", steps=(step,)).to_dict()
    answer["steps"][0]["calls"][0]["prompt_tokens"] = "12"
    (tmp_path / "results.jsonl").write_text(json.dumps({"qa_id": "q1", "method": "m", "answer": answer}) + "\n")
    run = RunDir(tmp_path)
    assert run.answers() == []
    assert any("prompt_tokens" in p for p in run.problems)
