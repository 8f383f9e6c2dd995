"""Judge parsing: labels, the regex fallback, recorded errors, LongMemEval per-type prompts, ledger tags."""
from __future__ import annotations

from workbench.data import QA
from workbench.eval.judge import LLMJudge, longmemeval_prompt
from workbench.llm import LLMError, ScriptedLLM

LOCOMO_QA = QA("c/q0", "When did Priya move?", "June 2023", 2, ("D5:1",))


def test_locomo_correct_and_wrong():
    llm = ScriptedLLM([{"reasoning": "same month", "label": "CORRECT"}, {"reasoning": "other", "label": "WRONG"}],
                      model="judge-model")
    judge = LLMJudge(llm)
    v = judge.judge(LOCOMO_QA, "in June 2023", method="naive_rag")
    assert (v.correct, v.label, v.reasoning, v.score, v.error) == (True, "CORRECT", "same month", 1.0, None)
    assert v.calls == 1 and v.prompt_tokens > 0 and v.model == "judge-model"
    w = judge.judge(LOCOMO_QA, "May", method="naive_rag")
    assert (w.correct, w.score) == (False, 0.0)
    prompt = llm.requests[0]["messages"][0]["content"]
    assert "Gold answer: June 2023" in prompt and "Generated answer: in June 2023" in prompt
    assert llm.requests[0]["schema"]["properties"]["label"]["enum"] == ["CORRECT", "WRONG"]
    calls = llm.ledger.calls
    assert {(c.phase, c.method, c.role) for c in calls} == {("judge", "naive_rag", "judge.locomo")}


def test_unparseable_reply_is_a_recorded_error_not_a_crash():
    llm = ScriptedLLM(["garbage", "still garbage", "nope"])  # reply, repair, retry
    v = LLMJudge(llm).judge(LOCOMO_QA, "x")
    assert v.correct is None and v.score is None and "ParseError" in v.error and v.raw == "nope"
    assert v.calls == 3


def test_regex_fallback_reads_a_single_bare_label():
    v = LLMJudge(ScriptedLLM(["I think it is CORRECT"] * 3)).judge(LOCOMO_QA, "x")
    assert (v.correct, v.label, v.fallback) == (True, "CORRECT", True)
    both = LLMJudge(ScriptedLLM(["CORRECT or WRONG"] * 3)).judge(LOCOMO_QA, "x")
    assert both.correct is None and both.error
    off = LLMJudge(ScriptedLLM(["CORRECT"] * 3), regex_fallback=False).judge(LOCOMO_QA, "x")
    assert off.correct is None
    lower = LLMJudge(ScriptedLLM(['{"reasoning": "r", "label": "correct"}'] * 3)).judge(LOCOMO_QA, "x")
    assert lower.correct is None  # the label must be exactly CORRECT, as in mem0's scorer


def test_client_error_is_recorded():
    v = LLMJudge(ScriptedLLM([LLMError("server down")])).judge(LOCOMO_QA, "x")
    assert v.correct is None and "server down" in v.error and v.calls == 1


def test_category_5_is_not_judged():
    llm = ScriptedLLM([])
    assert LLMJudge(llm).judge(QA("c/q9", "q?", "", 5), "Not mentioned") is None
    assert llm.requests == []


def _lme(qtype, qid="q1", answer="Paris"):
    return QA(qid, "Where did I go?", answer, qtype, extras={"abstention": qid.endswith("_abs")})


def test_longmemeval_prompt_per_type():
    assert "off-by-one" in longmemeval_prompt(_lme("temporal-reasoning"), "x")
    assert "updated answer" in longmemeval_prompt(_lme("knowledge-update"), "x")
    pref = longmemeval_prompt(_lme("single-session-preference", answer="likes jazz"), "x")
    assert "Rubric: likes jazz" in pref
    abs_ = longmemeval_prompt(_lme("multi-session", qid="q2_abs", answer="never said"), "x")
    assert "Explanation: never said" in abs_ and "unanswerable" in abs_
    plain = longmemeval_prompt(_lme("single-session-user"), "I went to Paris")
    assert "Correct answer: Paris" in plain and "Model response: I went to Paris" in plain
    assert "off-by-one" not in plain


def test_longmemeval_yes_no_parsing():
    llm = ScriptedLLM(["Yes.", "no", "I am unsure", "Unknown"])
    judge = LLMJudge(llm)
    got = [judge.judge(_lme("single-session-user"), "Paris", method="m") for _ in range(4)]
    assert [v.correct for v in got] == [True, False, None, None]  # "Unknown" is not read as "no"
    assert got[2].error == "reply contains neither yes nor no"
    assert llm.requests[0]["schema"] is None and llm.roles() == ["judge.longmemeval"] * 4
    unknown = judge.judge(_lme("weird-type"), "x")
    assert unknown.correct is None and "weird-type" in unknown.error
