"""RecMem's two profiles (issue #39): ``paper`` (App. F prompts, the authors' code where the paper is silent) and
``small`` (today's configuration for the offline models, each aid noted), the Direct Extraction ablation in both,
and the Fig. 2 rows over either profile. Offline: scripted LLMs, topic and hash embedders."""
from __future__ import annotations

import re
from datetime import datetime

import numpy as np
import pytest

from workbench.methods.components import parameter_notes

from test_recmem import TopicEmbedder, conv_of, merge_llm, outcomes
from workbench.data import Conversation, Session, Turn
from workbench.embed import HashEmbedder
from workbench.eval.manifest import method_prompt_hash, prompt_modules
from workbench.llm import LLMError, ScriptedLLM
from workbench.llm.base import BaseLLM
from workbench.methods import RecMem
from workbench.methods.recmem import paper_prompts as PP
from workbench.methods.recmem import prompts as P
from workbench.testing.check_method import check_method

PROFILES = ("paper", "small")
# method_prompt_hash(RecMem(profile="small")) on main before the profiles (c93cd04): the small profile sends
# exactly the prompts it sent then, so its rows and cassettes keep their hash.
SMALL_PROMPT_HASH = "f9dc5685303f"
AIDS = {"prompts", "text_format", "cluster_order", "embed_text", "on_failure", "stable_episode_ids", "dedupe_facts",
        "refine_k"}


def auto():
    return ScriptedLLM([], default="auto")


def active_llm():
    return ScriptedLLM({"recmem.consolidate": {"episodes": ["Sam and Noor talked about Miso and Geneva."]},
                        "recmem.refine": {"facts": ["Sam adopted a kitten named Miso."]}}, default="auto")


def rec(llm, profile, **kw):
    return RecMem(llm=llm, embedder=TopicEmbedder(), profile=profile, **{"theta_sim": 0.7, "theta_count": 3, **kw})


def head(template, slot):
    """What a prompt sends before its slot ``slot`` (the template's doubled braces as sent)."""
    return template.split("{" + slot + "}")[0].replace("{{", "{").replace("}}", "}")


def sent(llm, role):
    return [r["messages"] for r in llm.requests if r["role"] == role]


class Remote(BaseLLM):
    model = "gpt-4.1-mini"


# -- the profiles and their declarations ------------------------------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("config", ["default", "active"])
def test_both_profiles_pass_the_method_contract(profile, config):
    make = {"default": lambda: RecMem(llm=auto(), embedder=HashEmbedder(dim=128), profile=profile),
            "active": lambda: RecMem(llm=active_llm(), embedder=HashEmbedder(dim=128), profile=profile,
                                     theta_sim=0.4, theta_count=2, k_sub=3)}[config]
    assert make().profile == profile
    check_method(RecMem, make=make)


def test_auto_is_small_for_the_offline_models_and_paper_for_any_other():
    assert RecMem(llm=ScriptedLLM([])).profile == "small"
    assert RecMem(llm=Remote()).profile == "paper" and RecMem().profile == "paper"
    small = RecMem(profile="small")
    assert (small.prompts, small.text_format, small.cluster_order, small.embed_text, small.on_failure,
            small.stable_episode_ids, small.dedupe_facts, small.refine_k) == (
        "small", "workbench", "time_arrival", "units", "buffer", True, True, 10)  # the defaults before #39
    paper = RecMem(profile="paper")
    assert (paper.prompts, paper.text_format, paper.cluster_order, paper.embed_text, paper.on_failure,
            paper.stable_episode_ids, paper.dedupe_facts, paper.refine_k) == (
        "paper", "code", "time_similarity", "all", "drop", False, False, None)


def test_param_notes_are_empty_for_the_paper_and_name_every_aid_of_the_small_profile():
    assert RecMem(profile="paper").param_notes == {}
    assert RecMem(llm=Remote()).param_notes == {}
    notes = RecMem(profile="small").param_notes
    assert set(notes) == AIDS
    for name in ("prompts", "on_failure", "dedupe_facts"):  # each aid with its recorded evidence
        assert "recmem-conv-30.jsonl" in notes[name], name
    assert RecMem(profile="paper", dedupe_facts=True).param_notes == {"dedupe_facts": RecMem.profile_notes[
        "dedupe_facts"]}
    assert "no_episodes" in RecMem.departures({"refine_with_episode": "no_episodes"})[0]
    # the paper's LongMemEval settings (0.6 / 4 / free answers) are the paper's, not departures (review audit: a
    # paper-profile LongMemEval run listed them); one threshold changed alone still is
    assert RecMem.for_dataset("longmemeval", profile="paper").param_notes == {}
    lme = {**RecMem.paper_params(), "theta_sim": 0.6, "theta_count": 4, "answer_length": "free"}
    assert RecMem.departures(lme, "longmemeval_oracle") == [] and RecMem.departures(lme, "LongMemEval") == []
    for other in ("locomo", "sample_conversations", None):  # LongMemEval's values elsewhere are departures
        assert len(RecMem.departures(lme, other)) == 3, other
    # each key against LongMemEval's own value (review turn 4, N5: LoCoMo's were listed for the other two)
    assert RecMem.for_dataset("longmemeval", profile="paper", theta_count=5).param_notes == {
        "theta_count": "the paper's longmemeval value is 4"}


def test_the_small_profiles_prompt_hash_is_unchanged_and_the_paper_prompts_are_hashed_for_the_paper_only():
    small, paper = RecMem(profile="small"), RecMem(profile="paper")
    assert method_prompt_hash(small) == method_prompt_hash(RecMem(llm=ScriptedLLM([]))) == SMALL_PROMPT_HASH
    assert "workbench.methods.recmem.paper_prompts" in prompt_modules(paper)
    assert "workbench.methods.recmem.paper_prompts" not in prompt_modules(small)
    assert method_prompt_hash(paper) != SMALL_PROMPT_HASH


# -- the prompts each profile sends -------------------------------------------------------------------------------
def full_run(profile, **kw):
    llm = merge_llm(**{"recmem.answer": "alpha"}, **kw)
    m = rec(llm, profile).ingest(conv_of(["alpha", "alpha", "alpha", "alpha", "beta"]))
    m.answer("What does Ann like?")
    return m, llm


def test_the_paper_profile_sends_the_paper_prompts_as_system_messages():
    m, llm = full_run("paper")
    assert llm.roles() == ["recmem.consolidate", "recmem.refine", "recmem.merge", "recmem.refine_merge",
                           "recmem.answer"]
    for r in llm.requests:
        (msg,) = r["messages"]
        assert msg["role"] == "system", r["role"]
    (cons,), (ref,), (mer,), (ref_merge,), (ans,) = (sent(llm, role) for role in dict.fromkeys(llm.roles()))
    cluster = "\n".join(f"- {m.units_[u].text}" for u in ("unit-0", "unit-1", "unit-2"))
    assert cons[0]["content"] == PP.EPISODES.format(cluster=cluster)
    assert ref[0]["content"] == PP.REFINE.format(episode="Ann alpha story.", raw=cluster, old_facts="None")
    assert mer[0]["content"] == PP.MERGE.format(new_memory=m.units_["unit-3"].text, past_memory="Ann alpha story.")
    assert ref_merge[0]["content"].startswith(head(PP.REFINE, "episode"))
    assert ans[0]["content"].startswith(head(PP.ANSWER, "length_step"))
    assert "\n8. Keep the answer shorter than five or six words." in ans[0]["content"]  # [code] LoCoMo length step
    schemas = {r["role"]: r["schema"] for r in llm.requests}
    assert (schemas["recmem.consolidate"], schemas["recmem.refine"], schemas["recmem.merge"]) == (
        PP.EPISODES_SCHEMA, PP.FACTS_SCHEMA, PP.MERGE_SCHEMA)


def test_the_small_profile_sends_todays_prompts_as_user_messages():
    m, llm = full_run("small")
    for r in llm.requests:
        (msg,) = r["messages"]
        assert msg["role"] == "user", r["role"]
    cluster = "\n".join(f"- {m.units_[u].text}" for u in ("unit-0", "unit-1", "unit-2"))
    assert sent(llm, "recmem.consolidate")[0][0]["content"] == P.EPISODES.format(cluster=cluster)
    assert sent(llm, "recmem.merge")[0][0]["content"] == P.MERGE.format(new_memory=m.units_["unit-3"].text,
                                                                         past_memory="Ann alpha story.")
    assert sent(llm, "recmem.answer")[0][0]["content"].startswith(head(P.ANSWER, "episodic"))


def test_paper_schemas_require_every_field_the_method_reads():
    assert PP.EPISODES_SCHEMA["required"] == ["episodes"]
    assert PP.EPISODES_SCHEMA["properties"]["episodes"] == {"type": "array", "items": {"type": "string"}}
    assert PP.FACTS_SCHEMA["required"] == ["facts"]
    assert set(PP.MERGE_SCHEMA["required"]) == {"should_merge", "merged_memory"}
    assert set(PP.MERGE_SCHEMA["properties"]["should_merge"]["enum"]) == {"yes", "no"}


def test_paper_prompts_keep_the_instructions_the_small_ones_drop_and_carry_no_example_values():
    """reviews/recmem.md rows 11, 14, 19: what the short prompts drop is in the paper profile's."""
    kept = {PP.EPISODES: ["merely repeat one message", "Prefer combining related events", "leave it without an "
                          "episode", "A loose span", "long enumeration", "at least TWO different message timestamps",
                          "1 to 3 episodes", "three to six sentences", "background"],
            PP.REFINE: ["fall under exactly one of the following kinds", "USER_EVENT", "USER_CONSTRAINT_OR_PREFERENCE",
                        "TIME_ANCHORED_UPDATE", "ENTITY_RELATION", "more than 8 to 10 candidate facts",
                        "fold them into one short fact", "NOT new when it means the same as any item of S",
                        "fewer than 10 facts"],
            PP.REFINE_DIRECT: ["fall under exactly one of the following kinds", "general world knowledge",
                               "Raw Reference"],
            PP.MERGE: ["Special case", "assistant-only", "prefer \"no\"", "ground truth", "with no bullets"],
            PP.ANSWER: ["APPROACH", "twice", "most recent", "Abstain only", "final timestamp"]}
    for prompt, phrases in kept.items():
        for phrase in phrases:
            assert phrase in prompt, phrase
    for prompt in (PP.EPISODES, PP.REFINE, PP.REFINE_DIRECT, PP.MERGE, PP.ANSWER):
        assert not re.search(r"\b(19|20)\d\d\b", prompt)  # no concrete dates for a model to copy
        assert "<date>" in prompt
    a = PP.ANSWER
    assert a.index("{episodic}") < a.index("{subconscious}") < a.index("{semantic}") < a.index("{question}")
    assert a.index("APPROACH") < a.index("{episodic}")  # the instructions come before the memories (Fig. 16)


# -- what the paper profile does differently ----------------------------------------------------------------
def test_paper_profile_drops_the_trigger_unit_when_the_episode_call_fails():
    bad = {"recmem.consolidate": LLMError("down")}
    paper, small = rec(ScriptedLLM(bad), "paper"), rec(ScriptedLLM(bad), "small")
    assert outcomes(paper.ingest(conv_of(["alpha"] * 3)))[-1] == "dropped"  # [code] rec_mem.py:298-302
    assert outcomes(small.ingest(conv_of(["alpha"] * 3)))[-1] == "failed"


def test_paper_profile_stores_every_refined_fact_and_renews_a_merged_episodes_id():
    paper, _ = full_run("paper", **{"recmem.refine_merge": {"facts": ["Ann likes alpha.", "Ann likes alpha!"]}})
    small, _ = full_run("small", **{"recmem.refine_merge": {"facts": ["Ann likes alpha.", "Ann likes alpha!"]}})
    assert [f.text for f in paper.sem_] == ["Ann likes alpha.", "Ann likes alpha!"]
    assert [f.text for f in small.sem_] == ["Ann likes alpha."]
    assert list(paper.epi_.units) == ["epi-1"] and paper.epi_["epi-1"].meta["replaces"] == "epi-0"
    assert list(small.epi_.units) == ["epi-0"]
    assert paper.epi_["epi-1"].meta["lineage"] == "epi-0"


def chat_conv():
    when = datetime(2023, 5, 30, 23, 40)
    turns = (Turn("t1", "user", "alpha plan", "S1", when), Turn("t2", "assistant", "ok", "S1", when))
    return Conversation("lme", ("user", "assistant"), (Session("S1", when, turns),))


def test_paper_profile_writes_dates_and_captions_as_the_authors_code():
    paper, small = RecMem(profile="paper"), RecMem(profile="small")
    (u,) = paper.subconscious_units(conv_of(["alpha"]))
    assert u.text.startswith("[Message Timestamp]: 2023-05-01T10:00:00 [Message]: [Ann]: alpha u0")  # LoCoMo: ISO
    assert small.subconscious_units(conv_of(["alpha"]))[0].text.startswith(
        "[Message Timestamp]: 10:00 am on 1 May 2023 [Message]")
    when = datetime(2023, 5, 1, 10)
    img = Conversation("img", ("Ann", "Bob"), (Session("S1", when, (
        Turn("a", "Ann", "look", "S1", when, {"blip_caption": "a red kite"}), Turn("b", "Bob", "nice", "S1", when))),))
    assert "[Ann]: look [Showing Image]: a red kite\n[Bob]: nice" in paper.subconscious_units(img)[0].text  # [code]
    assert "[Ann]: look [shares an image: a red kite]\n[Bob]: nice" in small.subconscious_units(img)[0].text
    (lme,) = paper.subconscious_units(chat_conv())
    assert lme.text.startswith("[Message Timestamp]: 2023/05/30 23:40 (Tue) [Message]: [user]: alpha plan")
    llm = ScriptedLLM({"recmem.answer": "x"})
    ans = RecMem(llm=llm, embedder=TopicEmbedder(), profile="paper").ingest(chat_conv()).answer(
        "What plan?", now=datetime(2023, 6, 2, 9, 5))
    prompt = llm.requests[-1]["messages"][0]["content"]
    assert "- Question: What plan?\nThe date of the question is 2023/06/02 (Fri) 09:05\n" in prompt
    assert ans.steps[0].data["query"].endswith("2023/06/02 (Fri) 09:05")


class AxisEmbedder:
    """Unit i of one session: the shared axis plus weight W[i] on its own axis (a larger weight, a lower cosine)."""

    W = {"x0": 0.6, "x1": 0.2, "x2": 0.4, "x3": 0.1}

    def __init__(self):
        self.name, self.seen = "axis", []

    def __call__(self, texts):
        self.seen.extend(texts)
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for r, t in enumerate(texts):
            out[r, 0] = 1
            for k, w in self.W.items():
                if k in t:
                    out[r, 1 + int(k[1])] = w
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def one_session(n=4):
    when = datetime(2023, 5, 1, 10)
    turns = tuple(t for i in range(n) for t in (Turn(f"a{i}", "Ann", f"x{i}", "S1", when),
                                                 Turn(f"b{i}", "Bob", "ok", "S1", when)))
    return Conversation("one", ("Ann", "Bob"), (Session("S1", when, turns),))


@pytest.mark.parametrize("profile, order", [("paper", ["unit-1", "unit-2", "unit-0", "unit-3"]),
                                            ("small", ["unit-0", "unit-1", "unit-2", "unit-3"])])
def test_a_sessions_cluster_is_in_similarity_order_with_the_trigger_last_in_the_paper_profile(profile, order):
    llm = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann story."]}, "recmem.refine": {"facts": []}})
    m = RecMem(llm=llm, embedder=AxisEmbedder(), profile=profile, theta_sim=0.5, theta_count=4).ingest(one_session())
    assert outcomes(m) == ["buffered", "buffered", "buffered", "triggered"]
    assert m.epi_[next(iter(m.epi_.units))].meta["raw_ids"] == order  # [code] rec_mem.py:281-291


@pytest.mark.parametrize("profile", PROFILES)
def test_which_texts_are_embedded_on_one_line(profile):
    emb = AxisEmbedder()
    llm = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann\nstory."]}, "recmem.refine": {"facts": ["A\nfact."]},
                       "recmem.answer": "x"})
    RecMem(llm=llm, embedder=emb, profile=profile, theta_sim=0.5, theta_count=4).ingest(one_session()).answer(
        "What?", now=datetime(2023, 6, 1))
    multiline = [t for t in emb.seen if "\n" in t]
    assert multiline == ([] if profile == "paper" else ["Ann\nstory.", "A\nfact.", multiline[-1]])


def test_refine_k_follows_the_qa_fact_budget_in_the_paper_profile_and_both_profiles_floor_facts_alike():
    assert RecMem(profile="paper", k_epi=2)._refine_k() == 4 and RecMem(profile="paper", k_sem=3)._refine_k() == 3
    assert RecMem(profile="small", k_epi=2)._refine_k() == 10
    for profile in PROFILES:  # [code]: one --semantic_memory_threshold for refinement and answering
        m, _ = full_run(profile, **{"recmem.refine_merge": {"facts": ["Ann met alpha u3."]}})
        m.refine_min_score = 0.999
        hits = m.answer("alpha").steps[1]
        assert hits.data["layer"] == "fact" and hits.hits == ()


# -- Direct Extraction (reviews/recmem.md B1), in both profiles --------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES)
def test_direct_extraction_keeps_episodes_and_merge_first_in_both_profiles(profile):
    """[code] --disable_semantic_refinement (rec_mem.py:293-335, 355-375): episodes are still written and merge-first
    still runs; only the fact call changes (R alone: the cluster, or the merged unit alone), and the named ablation
    answers without episodes (paper §4.3)."""
    llm = merge_llm(**{"recmem.refine_direct": [{"facts": ["Ann likes alpha."]}, {"facts": ["Ann met alpha u3."]}],
                       "recmem.answer": "alpha"})
    m = RecMem.ablation("direct extraction", llm=llm, embedder=TopicEmbedder(), profile=profile, theta_sim=0.7,
                        theta_count=3).ingest(conv_of(["alpha", "alpha", "alpha", "alpha", "beta"]))
    assert outcomes(m) == ["buffered", "buffered", "triggered", "merged", "buffered"]
    assert llm.roles() == ["recmem.consolidate", "recmem.refine_direct", "recmem.merge", "recmem.refine_direct"]
    assert [e.text for e in m.epi_] == ["Ann alpha story, continued."]
    cluster_prompt, merge_prompt = [msgs[0]["content"] for msgs in sent(llm, "recmem.refine_direct")]
    template = (PP if profile == "paper" else P).REFINE_DIRECT
    assert cluster_prompt.startswith(head(template, "raw")) and "Ann alpha story" not in cluster_prompt
    assert cluster_prompt.count("[Message Timestamp]") == 3 and merge_prompt.count("[Message Timestamp]") == 1
    assert [f.text for f in m.sem_] == ["Ann likes alpha.", "Ann met alpha u3."]
    ans = m.answer("What does Ann like?")
    assert {s.data["layer"] for s in ans.steps if s.kind == "retrieve"} == {"subconscious", "fact"}


# -- the Fig. 2 rows over either profile ------------------------------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", list(RecMem.ablations))
def test_each_fig_2_row_is_the_profiles_configuration_plus_the_row(profile, name):
    m = RecMem.ablation(name, profile=profile)
    assert m.profile == profile
    assert m.get_params() == {**RecMem(profile=profile).get_params(), **RecMem.ablations[name].params}
    extra = set(m.param_notes) - (AIDS if profile == "small" else set())
    assert extra == set(RecMem.ablations[name].params)  # the row's own switches are its only other departures


# -- the harness's dataset preset (workbench/eval/presets.py, outside this folder) --------------------------------
def test_a_run_built_for_the_offline_model_keeps_the_small_profile():
    from workbench.eval.presets import prepare_method

    setup = prepare_method("recmem", ScriptedLLM([]), HashEmbedder(dim=128), data="locomo", calibration="off",
                           warn=False)
    assert setup.method.profile == "small" and setup.method.prompts == "small"
    assert not set(setup.preset) & (AIDS | {"profile"})  # the preset is theta_sim/theta_count/answer_length only
    remote = prepare_method("recmem", Remote(), HashEmbedder(dim=128), data="longmemeval", calibration="off",
                            warn=False)
    assert remote.method.profile == "paper" and (remote.method.theta_sim, remote.method.theta_count) == (0.6, 4)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_fig_2_row_runs_its_steps_in_either_profile(profile):
    """Paper §4.3: one construction (merge-first included) for every row; Direct Extraction changes only the fact
    call; the rows differ in the stores the answer reads."""
    layers = {}
    for name in RecMem.ablations:
        llm = merge_llm(**{"recmem.refine": {"facts": ["Ann likes alpha."]},
                           "recmem.refine_direct": {"facts": ["Ann likes alpha."]}, "recmem.answer": "alpha"})
        m = RecMem.ablation(name, llm=llm, embedder=TopicEmbedder(), profile=profile, theta_sim=0.7, theta_count=3)
        ans = m.ingest(conv_of(["alpha", "alpha", "alpha", "alpha", "beta"])).answer("What does Ann like?")
        assert outcomes(m) == ["buffered", "buffered", "triggered", "merged", "buffered"], name
        direct = name == "direct extraction"
        assert llm.roles()[:4] == ["recmem.consolidate", "recmem.refine_direct" if direct else "recmem.refine",
                                   "recmem.merge", "recmem.refine_direct" if direct else "recmem.refine_merge"]
        assert {msg["role"] for r in llm.requests for msg in r["messages"]} == {
            "system" if profile == "paper" else "user"}
        layers[name] = {s.data["layer"] for s in ans.steps if s.kind == "retrieve"}
    assert layers == {"full": {"subconscious", "episode", "fact"}, "w/o subconscious": {"episode", "fact"},
                      "w/o episodic": {"subconscious", "fact"}, "w/o semantic": {"subconscious", "episode"},
                      "direct extraction": {"subconscious", "fact"}}


def test_a_longmemeval_run_built_by_the_harness_lists_no_preset_value_as_a_departure():
    """Review turn 4, N6: ``prepare_method`` applied LongMemEval's preset (0.6 / 4 / free answers) but did not
    tell the method which dataset's preset it was, so a paper-profile LongMemEval run listed the paper's own
    LongMemEval values as departures."""
    from workbench.embed import HashEmbedder
    from workbench.eval.presets import prepare_method

    setup = prepare_method("recmem", ScriptedLLM([]), HashEmbedder(dim=32), {"profile": "paper"},
                           data="longmemeval:x.json", calibration=None)
    method = setup.method if hasattr(setup, "method") else setup[0]
    assert method.theta_count == 4 and parameter_notes(method.param_notes) == {}
