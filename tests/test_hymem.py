import re

import pytest

from workbench.embed import HashEmbedder
from workbench.llm import LLMError, ScriptedLLM
from workbench.methods import HyMem
from workbench.methods.hymem.segment import Span, clean_llm_spans, window_spans

Q = "In which city does Noor take violin lessons now?"


def summarize_turns(messages):
    """One Level-1 sentence per turn of the event (the turn line itself)."""
    text = messages[0]["content"]
    return {"keywords": [line for line in text.splitlines() if line.startswith(("Sam: ", "Noor: "))]}


def select_matching(word):
    """f_gamma stand-in: the batch-local ids of entries containing ``word``."""
    def reply(messages):
        entries = messages[0]["content"].split("Entries:")[-1]  # skip the one-shot example
        return {"keywords_list": [int(m.group(1)) for m in re.finditer(r"^id:(\d+), (.*)$", entries, re.M)
                                  if word in m.group(2)]}
    return reply


def two_topics(messages):
    return {"events": [{"start": 1, "end": 3, "topic": "kitten"}, {"start": 4, "end": 6, "topic": "violin"}]}


def make_windowed(script, **params):
    """Tiny conversation cut into 4 events of 3 turns (L2-0 = D1:1-3, L2-1 = D1:4-6, L2-2 = D2:1-3,
    L2-3 = D2:4-6) with one Level-1 item per turn (L1-0 = D1:1 ... L1-11 = D2:6)."""
    llm = ScriptedLLM({"hymem.summarize": summarize_turns, **script})
    params = {"segmentation": "window", "window_turns": 3, "window_stride": 3, **params}
    return HyMem(llm=llm, embedder=HashEmbedder(dim=256), **params), llm


# The method contract runs in tests/test_contract.py (one suite over every registered method).


def kinds(ans):
    return [s.kind for s in ans.steps]


def test_light_answers_directly(tiny_conv):
    m, llm = make_windowed({"hymem.light": {"finished": 0, "answer": "Geneva"},
                            "hymem.reflect": {"finished": 1, "new_question": ""}})
    ans = m.ingest(tiny_conv).answer(Q)
    assert ans.text == "Geneva"
    assert kinds(ans) == ["light", "reflect", "final"]
    light = ans.steps[0]
    assert len(light.data["retrieved"]) == 10 and light.data["retrieved"][0].startswith("L1-")
    assert light.data["finished"] == 0 and light.data["escalate"] is False
    assert len(light.data["scores"]) == 10 and light.usage.calls == 1
    assert "hymem.select" not in llm.roles() and "hymem.deep" not in llm.roles()
    assert {h.kind for h in ans.context} == {"L1"}
    assert HyMem.summary_stats([ans])["deep_ratio"] == 0.0


def test_light_escalates_to_deep(tiny_conv):
    m, llm = make_windowed({"hymem.light": {"finished": 2, "answer": ""},
                            "hymem.select": select_matching("Geneva"),
                            "hymem.deep": {"answer": "Geneva"},
                            "hymem.reflect": {"finished": 1, "new_question": ""}})
    ans = m.ingest(tiny_conv).answer(Q)
    assert kinds(ans) == ["light", "deep", "reflect", "final"]
    assert ans.steps[0].data["escalate"] is True
    assert ans.text == "Geneva" and ans.steps[-1].data["tier"] == "deep"
    assert {h.kind for h in ans.context} == {"L2"}  # the light hits were not used for the answer
    # the generators answer q_0; the reflection judged the deep answer
    assert Q in llm.requests[-2]["messages"][0]["content"]
    assert "Answer: Geneva" in llm.requests[-1]["messages"][0]["content"]


def test_deep_batch_selection_and_backtrack(tiny_conv):
    m, llm = make_windowed({"hymem.light": {"finished": 2, "answer": ""},
                            "hymem.select": select_matching("violin"),
                            "hymem.deep": {"answer": "Geneva"},
                            "hymem.reflect": {"finished": 1, "new_question": ""}},
                           deep_top_n=12, batch_size=5)
    ans = m.ingest(tiny_conv).answer(Q)
    deep = ans.steps[1]
    assert [len(b["ids"]) for b in deep.data["batches"]] == [5, 5, 2]
    assert llm.roles().count("hymem.select") == 3 and deep.usage.calls == 4  # 3 batches + G_gamma
    assert sorted(deep.data["selected"]) == ["L1-10", "L1-3"]  # D1:4 and D2:5 mention the violin
    assert deep.data["level2"] == ["L2-1", "L2-3"]  # backtracked, chronological
    assert [h.source_ids for h in deep.hits] == [("D1:4", "D1:5", "D1:6"), ("D2:4", "D2:5", "D2:6")]
    prompt = llm.requests[-2]["messages"][0]["content"]
    assert "I found a new violin teacher here, Ines." in prompt and "I adopted a kitten" not in prompt
    assert deep.data["fallback"] is False


def test_deep_dedupes_events_and_caps_level2(tiny_conv):
    m, _ = make_windowed({"hymem.light": {"finished": 2, "answer": ""},
                          "hymem.select": select_matching("Noor:"),  # 6 turns, in all 4 events
                          "hymem.deep": {"answer": "x"}, "hymem.reflect": {"finished": 1, "new_question": ""}},
                         deep_top_n=12, reflection=False)
    m.ingest(tiny_conv)
    deep = m.answer(Q).steps[1]
    assert len(deep.data["selected"]) == 6
    assert deep.data["level2"] == ["L2-0", "L2-1", "L2-2", "L2-3"]  # deduplicated, chronological
    ranked = list(dict.fromkeys(m.index_[u].meta["event_id"] for u in deep.data["selected"]))
    assert ranked != deep.data["level2"]  # (the rank order differs, so the sort is exercised)
    capped = m.set_params(max_level2=2).answer(Q).steps[1]
    assert capped.data["level2"] == sorted(ranked[:2]) and capped.data["dropped"] == ranked[2:]


def test_deep_falls_back_when_nothing_selected(tiny_conv):
    m, _ = make_windowed({"hymem.light": {"finished": 2, "answer": ""}, "hymem.select": {"keywords_list": [99]},
                          "hymem.deep": {"answer": "x"}}, reflection=False, fallback_top=1)
    deep = m.ingest(tiny_conv).answer(Q).steps[1]
    assert deep.data["fallback"] is True and deep.data["batches"][0]["invalid"] == [99]
    assert deep.data["selected"] == deep.data["candidates"][:1] and len(deep.data["level2"]) == 1


def test_reflection_rewrites_and_loops(tiny_conv):
    rewrite = "Which city did Noor move to?"
    m, llm = make_windowed({"hymem.light": [{"finished": 0, "answer": "Lyon"}, {"finished": 0, "answer": "Geneva"}],
                            "hymem.reflect": [{"finished": 0, "new_question": rewrite},
                                              {"finished": 1, "new_question": ""}]})
    ans = m.ingest(tiny_conv).answer(Q)
    assert kinds(ans) == ["light", "reflect", "light", "reflect", "final"]
    assert ans.steps[1].data["new_query"] == rewrite and ans.steps[1].data["done"] is False
    assert ans.steps[2].data["query"] == rewrite  # retrieval uses q_1
    assert ans.text == "Geneva" and ans.steps[-1].data["round"] == 1
    second_light = [r for r in llm.requests if r["role"] == "hymem.light"][1]["messages"][0]["content"]
    assert "Question: " + Q in second_light  # G_theta still answers q_0
    assert f"{Q} -> Lyon" in second_light  # memory pool carried into round 2
    assert [p["answer"] for p in ans.steps[-1].data["memory_pool"]] == ["Lyon", "Geneva"]
    assert HyMem.summary_stats([ans])["mean_rounds"] == 2


def test_memory_pool_last_only(tiny_conv):
    m, _ = make_windowed({"hymem.light": [{"finished": 0, "answer": "A1"}, {"finished": 0, "answer": "A2"}],
                          "hymem.reflect": {"finished": 0, "new_question": "q"}},
                         memory_pool="last_only", max_rounds=2)
    ans = m.ingest(tiny_conv).answer(Q)
    assert [p["answer"] for p in ans.steps[-1].data["memory_pool"]] == ["A2"]


@pytest.mark.parametrize("reflect_last, n_reflect", [(True, 2), (False, 1)])
def test_round_limit(tiny_conv, reflect_last, n_reflect):
    m, llm = make_windowed({"hymem.light": [{"finished": 2, "answer": ""}, {"finished": 0, "answer": "light2"}],
                            "hymem.select": select_matching("violin"), "hymem.deep": {"answer": "deep1"},
                            "hymem.reflect": {"finished": 0, "new_question": "again?"}},
                           max_rounds=2, reflect_last_round=reflect_last)
    ans = m.ingest(tiny_conv).answer(Q)
    assert llm.roles().count("hymem.light") == 2 and llm.roles().count("hymem.reflect") == n_reflect
    final = ans.steps[-1].data
    assert final["round_limit_hit"] is True and final["rounds"] == 2
    assert ans.text == "deep1" and final["round"] == 0  # last deep answer preferred (on_round_limit)
    stats = HyMem.summary_stats([ans])
    reflect = sum(s.usage.total_tokens for s in ans.steps if s.kind == "reflect")  # the token figures: turn 4, N5
    assert stats.pop("mean_query_tokens") == ans.usage.total_tokens
    assert stats.pop("mean_query_tokens_without_reflection") == ans.usage.total_tokens - reflect
    assert stats == {"n": 1, "deep_ratio": 1.0, "mean_rounds": 2.0, "deep_round_ratio": 0.5,
                     "round_limit_ratio": 1.0, "deep_generator_failures": 0, "deep_answer_ratio": 1.0}
    m.set_params(on_round_limit="last")
    assert m.answer(Q).text == "light2"


def test_malformed_generator_json_is_recorded(tiny_conv):
    m, llm = make_windowed({"hymem.light": "this is not json", "hymem.select": LLMError("server down"),
                            "hymem.deep": {"answer": "Geneva"}, "hymem.reflect": "nor is this"})
    ans = m.ingest(tiny_conv).answer(Q)
    light, deep, reflect = ans.steps[:3]
    assert light.data["error"].startswith("ParseError") and light.data["finished"] == 2
    assert [c.role for c in light.calls] == ["hymem.light", "hymem.light.repair", "hymem.light.retry"]
    assert all(b["error"] and "server down" in b["error"] for b in deep.data["batches"])
    assert deep.data["fallback"] is True  # nothing selected -> top candidates' events
    assert reflect.data["error"].startswith("ParseError") and reflect.data["done"] is True
    assert ans.text == "Geneva" and kinds(ans) == ["light", "deep", "reflect", "final"]


def test_deep_generator_failure_keeps_light_answer(tiny_conv):
    m, _ = make_windowed({"hymem.light": {"finished": 2, "answer": "maybe Lyon"},
                          "hymem.select": {"keywords_list": [0]}, "hymem.deep": LLMError("boom")}, reflection=False)
    ans = m.ingest(tiny_conv).answer(Q)
    deep = ans.steps[1]
    assert deep.data["error"] == "LLMError: boom" and ans.text == "maybe Lyon"
    # the light answer is not labelled deep: the round and the final step say the deep generator failed
    assert deep.data["fallback_answer"] == "light" and "generator failed" in deep.title
    final = ans.steps[-1].data
    assert final["tier"] == "deep_failed" and final["memory_pool"][0]["tier"] == "deep_failed"
    assert {h.unit_id for h in ans.context} == set(ans.steps[0].data["retrieved"])  # the light context
    stats = HyMem.summary_stats([ans])
    assert stats["deep_generator_failures"] == 1 and stats["deep_answer_ratio"] == 0.0


def test_failed_deep_round_is_not_the_last_deep_answer(tiny_conv):
    m, _ = make_windowed({"hymem.light": {"finished": 2, "answer": "maybe Lyon"},
                          "hymem.select": {"keywords_list": [0]},
                          "hymem.deep": [{"answer": "Geneva"}, LLMError("boom")],
                          "hymem.reflect": {"finished": 0, "new_question": "again?"}}, max_rounds=2)
    ans = m.ingest(tiny_conv).answer(Q)
    final = ans.steps[-1].data
    assert final["round_limit_hit"] and (final["round"], final["tier"], ans.text) == (0, "deep", "Geneva")


def test_question_date_only_on_longmemeval():
    assert HyMem.question_date_policy() == {"locomo": False, "longmemeval": True}


def test_ablation_flags(tiny_conv):
    script = {"hymem.light": {"finished": 2, "answer": "unsure"}, "hymem.select": select_matching("violin"),
              "hymem.deep": {"answer": "Geneva"}, "hymem.reflect": {"finished": 1, "new_question": ""}}
    no_light = make_windowed(script, light=False)[0].ingest(tiny_conv).answer(Q)
    assert kinds(no_light) == ["deep", "reflect", "final"]
    m, llm = make_windowed(script, deep=False)
    no_deep = m.ingest(tiny_conv).answer(Q)
    assert kinds(no_deep) == ["light", "reflect", "final"] and no_deep.text == "unsure"
    assert no_deep.steps[0].data["escalate"] is False and "hymem.select" not in llm.roles()
    no_reflect = make_windowed(script, reflection=False)[0].ingest(tiny_conv).answer(Q)
    assert kinds(no_reflect) == ["light", "deep", "final"]
    l1_only = make_windowed(script, levels="L1")[0].ingest(tiny_conv).answer(Q)
    assert [h.unit_id for h in l1_only.steps[1].hits] == ["L1-3", "L1-10"]  # no backtrack to Level-2


def test_level2_only_storage(tiny_conv):
    m, llm = make_windowed({"hymem.light": {"finished": 0, "answer": "Geneva"}}, levels="L2", reflection=False)
    ans = m.ingest(tiny_conv).answer(Q)
    assert "hymem.summarize" not in llm.roles()
    assert set(m.memories().kind) == {"L2"} and len(m.memories()) == 4
    assert {h.kind for h in ans.steps[0].hits} == {"L2"}
    with pytest.raises(ValueError, match="no Level-1"):
        m.as_retriever("L1")


def test_event_granularity_gives_one_level1_per_event(tiny_conv):
    m, _ = make_windowed({}, level1_granularity="event")
    df = m.ingest(tiny_conv).memories()
    assert (df.kind == "L1").sum() == 4 and (df.kind == "L2").sum() == 4


def test_memories_show_both_levels_and_links(tiny_conv):
    m, _ = make_windowed({})
    df = m.ingest(tiny_conv).memories()
    assert (df.kind == "L2").sum() == 4 and (df.kind == "L1").sum() == 12
    l1 = df[df.kind == "L1"].set_index("id")
    l2 = df[df.kind == "L2"].set_index("id")
    assert l1.loc["L1-4", "event_id"] == "L2-1" and "L1-4" in l2.loc["L2-1", "level1_ids"]
    assert list(l1.loc["L1-4", "source_ids"]) == ["D1:4", "D1:5", "D1:6"]
    summarize = [e for e in m.events if e.kind == "SUMMARIZE"]
    assert len(summarize) == 12 and summarize[4].data["event_id"] == "L2-1"
    assert [e.kind for e in m.events].count("ADD") == 4


def test_retriever_levels(tiny_conv):
    m, _ = make_windowed({})
    m.ingest(tiny_conv)
    l1 = m.as_retriever("L1").search("violin teacher Ines", 3)
    assert all(h.kind == "L1" for h in l1)
    l2 = m.as_retriever("L2").search("violin teacher Ines", 10)
    assert len(l2) == 4 and len({h.unit_id for h in l2}) == 4  # 12 L1 items deduplicated to 4 events
    assert l2[0].unit_id == m.index_[l1[0].unit_id].meta["event_id"]
    assert [h.unit_id for h in m.as_retriever(2).search("violin teacher Ines", 10)] == [h.unit_id for h in l2]
    again = m.as_retriever("L2").search("violin teacher Ines", 2, exclude=frozenset({l2[0].unit_id}))
    assert [h.unit_id for h in again] == [h.unit_id for h in l2[1:3]]


def test_clean_llm_spans_fills_gaps_and_widens():
    spans, notes = clean_llm_spans([{"start": 1, "end": 4, "topic": ""}, {"start": 12, "end": 7, "topic": "x"},
                                    {"start": "a", "end": 2}, {"start": 1, "end": 4, "topic": "dup"}], 10, 1)
    assert spans == [Span(0, 5, "", "llm"), Span(3, 7, "", "gap"), Span(5, 10, "x", "llm")]
    assert any("dropped" in n for n in notes) and any("turns 5-6" in n for n in notes)
    assert clean_llm_spans([], 5, 2) == ([], [])
    assert [(s.start, s.end) for s in window_spans(25, 12, 10)] == [(0, 12), (10, 22), (20, 25)]


def test_llm_segmentation_overlap_and_fallbacks(sample_data):
    conv = sample_data[0]
    n_sessions = len(conv.sessions)
    replies = [LLMError("down")] + [{"events": [{"start": 1, "end": 6, "topic": "a"},
                                                {"start": 7, "end": 40, "topic": "b"}]}] * (n_sessions - 1)
    llm = ScriptedLLM({"hymem.segment": replies, "hymem.summarize": [LLMError("x"), {"keywords": ["A fact."]}]})
    m = HyMem(llm=llm, embedder=HashEmbedder(), overlap_turns=2, max_workers=1).ingest(conv)
    assert [f["stage"] for f in m.failures_] == ["segment", "summarize"]
    assert m.segment_log_[0]["spans"][0][3] == "window"  # failed session fell back to windows
    s2 = conv.sessions[1]
    assert m.segment_log_[1]["spans"][:2] == [[0, 8, "a", "llm"], [4, len(s2.turns), "b", "llm"]]
    df = m.memories()
    l2 = df[(df.kind == "L2") & (df.session_id == s2.id)]
    shared = set(l2.source_ids.iloc[0]) & set(l2.source_ids.iloc[1])
    assert shared == {f"D2:{i}" for i in (5, 6, 7, 8)}  # neighbours share 2 + 2 turns
    assert (df[df.kind == "L1"].fallback.notna()).sum() == 1  # failed summary -> raw text kept


def test_summary_stats_empty_and_mixed():
    assert HyMem.summary_stats([])["deep_ratio"] == 0.0


def test_invalid_params(tiny_conv):
    for bad in ({"segmentation": "paragraph"}, {"top_k": 0}, {"light": False, "deep": False},
                {"window_stride": 20}, {"levels": "L3"}):
        with pytest.raises(ValueError):
            make_windowed({}, **bad)[0].ingest(tiny_conv)
