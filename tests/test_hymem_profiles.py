"""HyMem's two profiles (issue #39): ``profile="paper"`` (App. B prompts, the authors' released code where the
paper is silent) and ``profile="small"`` (today's tuned configuration for the offline models, each aid noted).
Scripted LLMs and a hash embedder on the tiny sample conversation."""
from __future__ import annotations

import re

import numpy as np
import pytest

from workbench.embed import HashEmbedder
from workbench.eval.manifest import method_prompt_hash, method_prompt_hashes
from workbench.llm import LLMError, ScriptedLLM
from workbench.llm.base import BaseLLM
from workbench.llm.jsonparse import check_schema
from workbench.methods import HyMem
from workbench.methods.hymem import paper_prompts as PP
from workbench.methods.hymem import prompts as SP
from workbench.testing.check_method import check_method

Q = "In which city does Noor take violin lessons now?"
# method_prompt_hash(HyMem()) on main before the profiles (c93cd04): the small profile must keep it, so its
# recorded rows and cassettes stay valid
SMALL_PROMPT_HASH = "6a1762ee822e"
PAPER_ROLES = {"hymem.summarize": PP.SUMMARIZE, "hymem.light": PP.LIGHT, "hymem.select": PP.SELECT,
               "hymem.deep": PP.DEEP, "hymem.reflect": PP.REFLECT}
SMALL_ROLES = {"hymem.summarize": SP.SUMMARIZE, "hymem.light": SP.LIGHT, "hymem.select": SP.SELECT,
               "hymem.deep": SP.DEEP, "hymem.reflect": SP.REFLECT}


def summarize_turns(messages):
    """One Level-1 sentence per turn of the event (the turn line itself)."""
    return {"keywords": [line for line in messages[0]["content"].splitlines() if line.startswith(("Sam: ", "Noor: "))]}


def entries(messages):
    """(local id, text) of the f_gamma entries of either profile's prompt (after its one-shot example)."""
    body = re.split(r"^(?:Entries|Indices):$", messages[0]["content"], flags=re.M)[-1]
    return [(int(n), text) for n, text in re.findall(r"^id:(\d+), (?:dialogue time:[^,]+, )?(.*)$", body, re.M)]


def select(word, reverse=False):
    def reply(messages):
        ids = [n for n, text in entries(messages) if word in text]
        return {"keywords_list": ids[::-1] if reverse else ids}
    return reply


def make(profile, script, **params):
    """Tiny conversation cut into 4 events of 3 turns (L2-0 = D1:1-3 ... L2-3 = D2:4-6), one Level-1 item per turn."""
    llm = ScriptedLLM({"hymem.summarize": summarize_turns, **script})
    params = {"segmentation": "window", "window_turns": 3, "window_stride": 3, **params}
    return HyMem(llm=llm, embedder=HashEmbedder(dim=256), profile=profile, **params), llm


def prompts_of(llm, role):
    return [r["messages"][0]["content"] for r in llm.requests if r["role"] == role]


def head(template):
    """A template's fixed opening (up to its first slot)."""
    return template.split("{")[0]


DEEP_SCRIPT = {"hymem.light": {"finished": 2, "answer": ""}, "hymem.select": select("violin"),
               "hymem.deep": {"answer": "Geneva"}, "hymem.reflect": {"finished": 1, "new_question": ""}}


# -- the profiles ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["paper", "small"])
@pytest.mark.parametrize("segmentation", ["window", "llm"])
def test_both_profiles_pass_the_method_contract(profile, segmentation):
    def build():
        llm = ScriptedLLM({"hymem.segment": {"events": [{"start": 1, "end": 3, "topic": "a"}]},
                           "hymem.summarize": summarize_turns}, default="auto")
        return HyMem(llm=llm, embedder=HashEmbedder(dim=128), profile=profile, segmentation=segmentation)

    check_method(HyMem, make=build)


def test_auto_is_small_for_scripted_models_and_paper_otherwise():
    class Remote(BaseLLM):
        model = "gpt-4.1-mini"

    assert HyMem(llm=ScriptedLLM([])).profile == "small" and HyMem(llm=Remote()).profile == "paper"
    assert HyMem().profile == "paper"
    assert {k: getattr(HyMem(llm=ScriptedLLM([])), k) for k in HyMem.profiles["small"]} == HyMem.profiles["small"]
    assert HyMem(profile="paper", batch_size=7).batch_size == 7  # an explicit argument wins


def test_paper_has_no_departures_and_small_lists_every_aid():
    assert HyMem(profile="paper").param_notes == {}
    paper, small = HyMem.profiles["paper"], HyMem.profiles["small"]
    aids = {k for k in small if small[k] != paper[k]}
    assert aids == set(HyMem.profiles["small"])  # every profiled parameter is an aid of the small profile
    assert HyMem(profile="small").param_notes == {k: HyMem.profile_notes[k] for k in aids}
    # each note names the aid's evidence or source: the recording, the review, or the authors' code
    assert all(re.search(r"hymem-conv-30|recording|code", note) for note in HyMem.profile_notes.values())
    assert "batch_size = 10" in "\n".join(HyMem.departures(HyMem(profile="small").get_params()))
    assert HyMem.departures({**HyMem(profile="paper").get_params(), "dedupe_level1": True}) == [
        "dedupe_level1 = True: " + HyMem.value_notes["dedupe_level1"][True]]


def test_the_small_profile_keeps_its_prompt_hash_and_the_paper_profile_hashes_its_own_prompts():
    assert method_prompt_hash(HyMem(profile="small")) == SMALL_PROMPT_HASH
    assert method_prompt_hash(HyMem(llm=ScriptedLLM([]))) == SMALL_PROMPT_HASH  # the offline default
    assert "paper_prompts" not in method_prompt_hashes(HyMem(profile="small"))
    assert "paper_prompts" in method_prompt_hashes(HyMem(profile="paper"))
    assert method_prompt_hash(HyMem(profile="paper")) != SMALL_PROMPT_HASH


@pytest.mark.parametrize("profile", ["paper", "small"])
def test_each_profile_sends_its_own_prompts_and_schemas(profile, tiny_conv):
    m, llm = make(profile, DEEP_SCRIPT)
    m.ingest(tiny_conv).answer(Q)
    mine, other = (PAPER_ROLES, SMALL_ROLES) if profile == "paper" else (SMALL_ROLES, PAPER_ROLES)
    schemas = {"hymem.summarize": "SUMMARY_SCHEMA", "hymem.light": "LIGHT_SCHEMA", "hymem.select": "SELECT_SCHEMA",
               "hymem.deep": "DEEP_SCHEMA", "hymem.reflect": "REFLECT_SCHEMA"}
    module = PP if profile == "paper" else SP
    for role, template in mine.items():
        sent = [r for r in llm.requests if r["role"] == role]
        assert sent, role
        assert all(r["messages"][0]["content"].startswith(head(template)) for r in sent), role
        assert not any(r["messages"][0]["content"].startswith(head(other[role])) for r in sent), role
        assert all(r["schema"] == getattr(module, schemas[role]) for r in sent), role
    assert m._request("x", {}, "r")["temperature"] == (0.5 if profile == "paper" else 0.0)


def test_paper_prompts_keep_placeholders_not_example_values():
    for name in ("SUMMARIZE", "LIGHT", "SELECT", "DEEP", "REFLECT"):
        text = getattr(PP, name)
        # the paper's concrete examples (Alice, Jack, 2022, "last year") are gone; placeholders stand in
        assert not re.search(r"Alice|Jack|20\d\d|last year|Tom|Leeds", text), name
    assert "<year>" in PP.LIGHT and "<year>" in PP.DEEP and "dialogue time:<date>, <summary>" in PP.SELECT


def test_paper_schemas_require_every_field_the_method_reads():
    for name in ("SUMMARY_SCHEMA", "LIGHT_SCHEMA", "SELECT_SCHEMA", "DEEP_SCHEMA", "REFLECT_SCHEMA"):
        schema = getattr(PP, name)
        assert set(schema["required"]) == set(schema["properties"]), name
    assert PP.SUMMARY_SCHEMA["properties"]["keywords"]["minItems"] == 1
    assert PP.DEEP_SCHEMA["properties"]["answer"]["minLength"] == 1  # B.5: never refuse, always an answer
    with pytest.raises(Exception):
        check_schema({"answer": "Geneva"}, PP.LIGHT_SCHEMA)  # no "finished": the escalation flag is required
    with pytest.raises(Exception):
        check_schema({"finished": 0}, PP.REFLECT_SCHEMA)
    check_schema({"finished": 1, "answer": ""}, PP.LIGHT_SCHEMA)  # B.3 names 0 and 2; the code reads any non-2


# -- the open points the review found decided differently from the authors' code -------------------------------
def test_selector_batch_is_the_codes_50_in_the_paper_profile_and_10_in_the_small_one(tiny_conv):
    for profile, calls in (("paper", 1), ("small", 2)):  # 12 Level-1 candidates
        m, llm = make(profile, DEEP_SCRIPT, reflection=False)
        deep = m.ingest(tiny_conv).answer(Q).steps[1]
        assert llm.roles().count("hymem.select") == calls
        assert [len(b["ids"]) for b in deep.data["batches"]] == ([12] if profile == "paper" else [10, 2])


def test_memory_pool_is_the_last_answer_alone_in_the_paper_profile(tiny_conv):
    script = {"hymem.light": [{"finished": 0, "answer": "A1"}, {"finished": 0, "answer": "A2"},
                              {"finished": 0, "answer": "A3"}],
              "hymem.reflect": [{"finished": 0, "new_question": "q1"}, {"finished": 0, "new_question": "q2"},
                                {"finished": 1, "new_question": ""}]}
    paper, llm = make("paper", script)
    paper.ingest(tiny_conv).answer(Q)
    third = prompts_of(llm, "hymem.light")[2]
    assert f"{PP.POOL_HEADER}\n- A2\n" in third and "A1" not in third and "q1" not in third
    small, llm = make("small", script)
    small.ingest(tiny_conv).answer(Q)
    third = prompts_of(llm, "hymem.light")[2]
    assert f"{Q} -> A1" in third and "q1 -> A2" in third


def test_level2_is_uncapped_in_selection_order_in_the_paper_profile(tiny_conv):
    script = {**DEEP_SCRIPT, "hymem.select": select("Noor:", reverse=True)}  # 6 turns, in all 4 events
    paper, _ = make("paper", script, reflection=False)
    deep = paper.ingest(tiny_conv).answer(Q).steps[1]
    listed = list(dict.fromkeys(paper.index_[u].meta["event_id"] for u in deep.data["selected"]))
    assert deep.data["level2"] == listed and listed != sorted(listed)  # f_gamma's order, not time
    assert paper.set_params(max_level2=None).answer(Q).steps[1].data["dropped"] == []
    small, _ = make("small", script, reflection=False, max_level2=2)
    deep = small.ingest(tiny_conv).answer(Q).steps[1]
    assert deep.data["level2"] == sorted(deep.data["level2"]) and len(deep.data["dropped"]) == 2


def test_no_fallback_when_the_paper_profiles_selector_picks_nothing(tiny_conv):
    script = {**DEEP_SCRIPT, "hymem.select": {"keywords_list": []}}
    paper, llm = make("paper", script, reflection=False)
    deep = paper.ingest(tiny_conv).answer(Q).steps[1]
    assert deep.data["fallback"] is False and deep.data["level2"] == []
    assert "(no memories found)" in prompts_of(llm, "hymem.deep")[0]
    small, _ = make("small", script, reflection=False)
    deep = small.ingest(tiny_conv).answer(Q).steps[1]
    assert deep.data["fallback"] is True and len(deep.data["level2"]) >= 1


def test_an_unreadable_light_reply_is_an_empty_answer_in_the_paper_profile(tiny_conv):
    script = {**DEEP_SCRIPT, "hymem.light": LLMError("unreadable")}
    paper, llm = make("paper", script, reflection=False)
    ans = paper.ingest(tiny_conv).answer(Q)
    assert [s.kind for s in ans.steps] == ["light", "final"] and ans.text == ""
    assert "hymem.deep" not in llm.roles()
    small, llm = make("small", script, reflection=False)
    assert [s.kind for s in small.ingest(tiny_conv).answer(Q).steps] == ["light", "deep", "final"]


def test_a_failed_deep_generator_answers_empty_in_the_paper_profile(tiny_conv):
    script = {**DEEP_SCRIPT, "hymem.light": {"finished": 2, "answer": "maybe Lyon"}, "hymem.deep": LLMError("boom")}
    for profile, text in (("paper", ""), ("small", "maybe Lyon")):
        m, _ = make(profile, script, reflection=False)
        ans = m.ingest(tiny_conv).answer(Q)
        assert ans.text == text and ans.steps[-1].data["tier"] == "deep_failed", profile
        assert ans.steps[1].data["fallback_answer"] == ("none" if profile == "paper" else "light")


def test_an_event_without_a_summary_is_not_stored_in_the_paper_profile(tiny_conv):
    first_empty = {"hymem.summarize": lambda msgs: {"keywords": [] if "I adopted a kitten" in msgs[0]["content"]
                                                    else summarize_turns(msgs)["keywords"]}}
    for profile, events in (("paper", 3), ("small", 4)):
        m, _ = make(profile, {**DEEP_SCRIPT, **first_empty})
        m.ingest(tiny_conv)
        assert len(m.level2_) == events and m.failures_[0]["stage"] == "summarize", profile
    assert m.failures_[0]["fallback"] == "raw event text as Level-1"


def test_the_paper_profile_escalates_only_on_2(tiny_conv):
    paper, llm = make("paper", {**DEEP_SCRIPT, "hymem.light": {"finished": 1, "answer": "Geneva"}}, reflection=False)
    ans = paper.ingest(tiny_conv).answer(Q)
    assert ans.text == "Geneva" and "hymem.deep" not in llm.roles()


def test_the_paper_profile_embeds_the_sentence_without_its_date(tiny_conv):
    for profile in ("paper", "small"):
        m, _ = make(profile, DEEP_SCRIPT)
        m.ingest(tiny_conv)
        unit = m.index_["L1-0"]
        assert unit.text.startswith("[")  # the prompts still show the date
        embedded = unit.text.split("] ", 1)[1] if profile == "paper" else unit.text
        assert np.allclose(m.index_.vector("L1-0"), m.embedder([embedded])[0], atol=1e-6), profile


def test_the_paper_profile_returns_the_last_answer_when_rounds_run_out(tiny_conv):
    script = {"hymem.light": [{"finished": 2, "answer": ""}, {"finished": 0, "answer": "light2"}],
              "hymem.select": select("violin"), "hymem.deep": {"answer": "deep1"},
              "hymem.reflect": {"finished": 0, "new_question": "again?"}}
    for profile, text in (("paper", "light2"), ("small", "deep1")):
        m, _ = make(profile, script, max_rounds=2)
        assert m.ingest(tiny_conv).answer(Q).text == text, profile


def test_paper_prompts_name_what_the_ablations_show(tiny_conv):
    m, llm = make("paper", DEEP_SCRIPT, levels="L2", deep=False, reflection=False)
    m.ingest(tiny_conv).answer(Q)
    light = prompts_of(llm, "hymem.light")[0]
    assert "Conversation excerpts" in light and "summaries" not in light
    m, llm = make("paper", DEEP_SCRIPT, levels="L1", light=False, reflection=False)  # G_gamma reads summaries
    m.ingest(tiny_conv).answer(Q)
    assert PP.DEEP_TITLE_SUMMARIES in prompts_of(llm, "hymem.deep")[0]


def test_dedupe_level1_stores_identical_sentences_of_one_event_once(tiny_conv):
    twice = {"hymem.summarize": lambda msgs: {"keywords": summarize_turns(msgs)["keywords"] * 2}}
    for dedupe, n in ((False, 24), (True, 12)):
        m, _ = make("paper", {**DEEP_SCRIPT, **twice}, dedupe_level1=dedupe)
        assert len(m.ingest(tiny_conv).index_) == n


def test_the_authors_code_parameter_set_runs_one_round_over_session_events(tiny_conv):
    m, llm = make("paper", {**DEEP_SCRIPT, "hymem.reflect": {"finished": 0, "new_question": "again"}},
                  **HyMem.authors_code_params)
    ans = m.ingest(tiny_conv).answer(Q)
    assert len(m.level2_) == len(tiny_conv.sessions) and "hymem.segment" not in llm.roles()
    assert [s.kind for s in ans.steps] == ["light", "deep", "reflect", "final"]  # T = 1
    assert HyMem(**HyMem.authors_code_params).param_notes.keys() == {"segmentation", "overlap_turns", "max_rounds"}


# -- bugs ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["paper", "small"])
def test_the_trace_reports_no_fallback_when_fallback_top_is_0(profile, tiny_conv):
    """Bug (both profiles): with fallback_top=0 and nothing selected the deep step said ``fallback: True``
    although no candidate was used."""
    m, _ = make(profile, {**DEEP_SCRIPT, "hymem.select": {"keywords_list": []}}, reflection=False, fallback_top=0)
    deep = m.ingest(tiny_conv).answer(Q).steps[1]
    assert deep.data["fallback"] is False and deep.data["selected"] == [] and not deep.hits


def test_an_ablation_row_says_in_its_notes_that_it_is_not_the_full_method():
    assert HyMem.ablation("full", profile="paper").param_notes == {}
    assert set(HyMem.ablation("L2 / L", profile="paper").param_notes) == {"levels", "deep", "reflection"}
    assert "extension" in HyMem(profile="paper", levels="L2").param_notes["levels"]  # deep stays on: no Table 2 row
