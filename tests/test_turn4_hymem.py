"""Turn-4 review of HyMem (shared/reviews/hymem.md): the findings fixed without changing any LLM call the method
makes. Each test fails on the code before the fix (named in its docstring)."""
from __future__ import annotations

from workbench.embed import HashEmbedder
from workbench.eval.mechanisms import _fallback_answer
from workbench.llm import LLMError, ScriptedLLM
from workbench.methods import HyMem
from workbench.methods import census_kit as K
from workbench.methods.hymem import census as hymem_census
from workbench.methods.hymem import paper_prompts as PP

Q = "In which city does Noor take violin lessons now?"


def summarize_turns(messages):
    return {"keywords": [line for line in messages[0]["content"].splitlines() if line.startswith(("Sam: ", "Noor: "))]}


def make(profile, script, **params):
    llm = ScriptedLLM({"hymem.summarize": summarize_turns, **script})
    params = {"segmentation": "window", "window_turns": 3, "window_stride": 3, **params}
    return HyMem(llm=llm, embedder=HashEmbedder(dim=256), profile=profile, **params), llm


def trace_of(ans):
    return K.Trace([(s.kind, s.data) for s in ans.steps], ans.error, ans.text)


def census_of(traces, params):
    c = K.Counts()
    hymem_census.count(c, [{}] * len(traces), traces, {}, params)
    return c


def test_an_accepted_light_round_is_counted_as_accepted_not_as_insufficient(tiny_conv):
    """N2: the paper profile accepts finished=1 (only 2 escalates); the census counted finished == 0 alone and
    explained the zero deep questions as "judged its answer sufficient (finished=0) in 0 of 1 rounds"."""
    m, _ = make("paper", {"hymem.light": {"finished": 1, "answer": "Geneva"}}, reflection=False)
    ans = m.ingest(tiny_conv).answer(Q)
    assert [s.kind for s in ans.steps] == ["light", "final"]
    c = census_of([trace_of(ans)], m.get_params())
    assert c.counts["deep_questions"] == 0
    assert "accepted (not escalated: only finished=2 asks for the deep module) in 1 of 1 rounds" in c.why_zero[
        "deep_questions"]


def test_an_empty_answer_from_an_unreadable_light_reply_is_a_fallback_answer(tiny_conv):
    """N3: under on_failure="code" an unreadable G_theta reply is an accepted empty answer; the error sat on the
    light step and the final step said nothing, so the census's fallback_answers missed it."""
    m, _ = make("paper", {"hymem.light": LLMError("unreadable")}, reflection=False)
    ans = m.ingest(tiny_conv).answer(Q)
    final = ans.steps[-1].data
    assert ans.text == "" and final["fallback_answer"] == "none" and "unreadable" in final["writer_error"]
    assert _fallback_answer(trace_of(ans)) is True
    # a light answer that was read is no fallback
    ok, _ = make("paper", {"hymem.light": {"finished": 1, "answer": "Geneva"}}, reflection=False)
    good = ok.ingest(tiny_conv).answer(Q)
    assert "fallback_answer" not in good.steps[-1].data and _fallback_answer(trace_of(good)) is False


def test_summary_stats_give_the_token_figure_without_reflection_beside_the_all_calls_one(tiny_conv):
    """N5: the paper's "Token" figure cannot include R; summary_stats had no figure without it."""
    script = {"hymem.light": {"finished": 1, "answer": "Geneva"},
              "hymem.reflect": {"finished": 1, "new_question": ""}}
    m, _ = make("paper", script)
    ans = m.ingest(tiny_conv).answer(Q)
    stats = HyMem.summary_stats([ans])
    reflect = sum(s.usage.total_tokens for s in ans.steps if s.kind == "reflect")
    assert reflect > 0 and stats["mean_query_tokens"] == ans.usage.total_tokens
    assert stats["mean_query_tokens_without_reflection"] == ans.usage.total_tokens - reflect
    assert HyMem.summary_stats([])["mean_query_tokens_without_reflection"] == 0.0


def test_the_docs_no_longer_say_the_authors_templates_are_empty():
    """N1: the templates hold App. B; the prompt module, the authors_code_params comment and the docstring said
    they were empty and the code's layout was never weighed (now departure 12)."""
    import inspect

    import workbench.methods.hymem.method as method_module

    assert "templates are empty" not in PP.__doc__ and "templates.py:30-78" in PP.__doc__
    assert "empty prompt templates" not in inspect.getsource(method_module)
    doc = " ".join(HyMem.__doc__.split())
    for words in ("puts the question before the memories", "minLength: 1", '"(no answer)"',
                  "mean_query_tokens_without_reflection", "ends up inside its neighbour",
                  "openai:text-embedding-3-small"):
        assert words in doc, words
