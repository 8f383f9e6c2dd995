"""Turn-4 review of AMA (shared/reviews/ama.md): the findings fixed without changing any LLM call the method makes.
Each test fails on the code before the fix (named in its docstring)."""
import json
import re
from pathlib import Path

import pytest

from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM
from workbench.methods import AMA
from workbench.methods import census_kit as K
from workbench.methods.ama import census as ama_census
from workbench.methods.ama import prompts as P

# conv-30's first recorded ingestion Judge reply (sample_data/cassettes/locomo/ama-conv-30.jsonl): the small prompt's
# example field by field, its reason pasted from the prompt's own conflict definition with a word changed
ECHO_REASON = ("The new turn and the stored memory state are incompatible things about the same person, thing, event. "
               "The speaker asks to forget, cancel or take back a stored memory. New information on another subject, "
               "or different wording, is not a conflict.")


def _judge(verdict="Pass", reason=ECHO_REASON, confidence=0.0, ids=(), check="judge", **extra):
    return {"turn_id": "D1:2", "step": "judge", "verdict": verdict, "check": check, "conflict_ids": list(ids),
            "reason": reason, "confidence": confidence, "error": None, **extra}


def _count(log, params=None):
    c = K.Counts()
    mems = {"conv-30": K.Memory(events=[], structures={"ingestion_log": log})}
    ama_census.count(c, [], [], mems, params or {"prompts": "small", "refresher": True})
    return c


def test_the_census_names_replies_that_copy_the_judge_prompts_example_as_template_echoes():
    """N5: the census read conv-30's 368 copies of the prompt's example as "the ingestion Judge answered Pass 368".
    Before: no ``ingestion_replies_echoing_example`` count, and the reason said nothing of the copies."""
    log = [_judge(), _judge(), _judge(reason="New turn is about a different topic.", confidence=0.9),
           _judge(verdict="Refresh", reason="Noor moved", confidence=0.8, ids=["fact:3"]),
           _judge(reason="...")]  # the example's reason itself
    c = _count(log)
    assert c.counts["ingestion_replies_echoing_example"] == 3
    why = c.why_zero["deletes_at_ingestion"]
    assert why.startswith("the ingestion Judge answered Pass 4, Refresh 1 on 5 checks")
    assert "3 of the 5 replies are the prompt's own example" in why and "template echo, not a judgement" in why
    # the headline lists it with the other problems
    assert "ingestion_replies_echoing_example" in dict(ama_census.CENSUS.problems)


def test_the_echo_rule_follows_the_prompt_each_profile_sent():
    """The small prompt's example is Pass / 0.0 / [] (checked against prompts.JUDGE_INGEST, so a changed example
    breaks this test); the paper prompt has placeholders, and a probe verdict is code, never a reply."""
    assert '"Action": "Pass"' in P.JUDGE_INGEST and '"confidence": 0.0' in P.JUDGE_INGEST
    assert '"conflict_ids": []' in P.JUDGE_INGEST and "incompatible things about the same person" in P.JUDGE_INGEST
    assert ama_census.echoes_example(_judge(), "small") is True
    assert ama_census.echoes_example(_judge(confidence=0.7), "small") is False  # a number of its own
    assert ama_census.echoes_example(_judge(), "paper") is False  # no filled-in example in the paper prompt
    assert ama_census.echoes_example(_judge(reason="<short justification>"), "paper") is True
    assert ama_census.echoes_example(_judge(check="probe"), "small") is False
    old = _judge()
    del old["reason"], old["confidence"]
    assert ama_census.echoes_example(old, "small") is None
    c = _count([old])  # a log saved before it kept reason and confidence: the count is missing, with why
    assert c.counts["ingestion_replies_echoing_example"] is None
    assert "reason and confidence" in c.missing["ingestion_replies_echoing_example"]


def test_the_ingestion_log_keeps_the_judges_reason_and_confidence(tiny_conv):
    """The census needs them (N5). Before: the log kept verdict, check, conflict ids and error only."""
    llm = ScriptedLLM({"ama.construct": {"facts": [], "related_id": [], "timestamp": "empty"},
                       "ama.judge_ingest": {"Action": "Pass", "reason": "nothing changed", "confidence": 0.6,
                                            "conflict_ids": []},
                       "ama.trigger": {"T_t": 0, "reason": "same", "confidence": 0.5, "topic_summary": ""},
                       "ama.episode": {"title": "t", "content": "c", "timestamp": "empty"}}, default="auto")
    m = AMA(llm=llm, embedder=HashEmbedder(dim=64), profile="small").ingest(tiny_conv)
    judges = [x for x in m.structures()["ingestion_log"] if x["step"] == "judge"]
    assert judges and all(x["reason"] == "nothing changed" and x["confidence"] == 0.6 for x in judges)
    json.dumps(m.structures())  # still plain JSON


def _ama(**params):
    return AMA(llm=ScriptedLLM({}), embedder=HashEmbedder(dim=8), **params)


def test_sweep_only_parameters_set_with_routed_candidates_warn_and_the_defaults_do_not(recwarn):
    """N11: in routed mode (the paper profile) conflict_min_sim and conflict_k were ignored silently. (The check
    runs where every parameter check runs, when ``ingest`` validates the parameters.)"""
    _ama(profile="paper")._validate_params()
    _ama(profile="small", conflict_min_sim=0.5, conflict_k=5)._validate_params()  # the sweep uses them: no warning
    _ama(profile="paper", conflict_check="probe", conflict_k=5)._validate_params()  # the probe's cap uses conflict_k
    assert not [w for w in recwarn if "not used" in str(w.message)]
    with pytest.warns(UserWarning, match=r"conflict_min_sim and conflict_k only shape the small profile's"):
        _ama(profile="paper", conflict_min_sim=0.5, conflict_k=5)._validate_params()


def test_nothing_calls_the_small_judge_prompt_the_papers_judge():
    """N3: ``ama[paper-judge]`` is the small profile with its Pass example; the probe note, the class docstring and
    the demo profiles called it the paper's Judge."""
    note = AMA.value_notes["conflict_check"]["probe"]
    assert "small profile's Judge prompt" in note and "paper's Judge" not in note
    assert "not a\n    measurement of the paper's Judge" in AMA.__doc__ and "ama[paper-judge]" in AMA.__doc__
    profiles = json.loads(Path("sample_data/demo_profiles.json").read_text(encoding="utf-8"))
    whys = [p.get("why", {}).get("ama", "") for p in profiles["profiles"].values()]
    whys = [w for w in whys if w]
    assert whys and all("the paper's Judge answered" not in w and "small profile's Judge prompt" in w for w in whys)


def test_the_how_it_works_page_shows_the_paper_order_and_the_update_turn():
    """N9: the build pipeline was the small profile's order (Constructor first) and the right outcome put Dev's
    leaving the library at D2:3 (it is D2:1; D2:3 names the new workplace)."""
    how = AMA.how_it_works
    assert [s[0] for s in how.phases[0].stages] == ["Retriever", "Judge", "Refresher", "Constructor"]
    assert "small profile" in how.phases[0].stages[0][1] and "small profile" in how.phases[0].stages[3][1]
    assert "end of May (D2:1)" in how.right_outcome and "Spoke & Chain (D2:3)" in how.right_outcome


def test_the_docstring_lists_the_turn_4_departures():
    """N8 was undocumented; N1, N2, N6 and N7 are fixed in the paper profile and the small profile keeps each (its
    prompts), which its list and profile note say."""
    doc = " ".join(AMA.__doc__.split())
    for words in ("with no threshold in code",  # N8
                  "the rest of H_t (the candidates the Judge saw)", "Retry widens H_t as at question time",
                  "It sees W_t (§3.3) and returns H_r", "go to the reader in retrieval order",
                  # the small profile keeps the old calls, and says so
                  "the ingestion Judge is the conflict rule only (Pass / Refresh, no Retry, no W_t, no "
                  "``relevant_ids``", "the Refresher is shown C_err and the input only, not the rest of H_t"):
        assert words in doc, words
    assert "Open, each waiting" not in doc
    assert "retrieval order" in AMA.ablations["RT+FK+EP"].source and "newest" not in AMA.ablations["RT+FK+EP"].source
    note = AMA(profile="small").param_notes["prompts"]
    assert "no Retry, no W_t, no relevant_ids" in note and "C_err only, not the rest of H_t" in note


def test_the_census_says_the_judge_ran_without_the_refresher():
    """N6: with refresher=False the paper order still runs its ingestion Judge; the census said "no conflict check
    at ingestion" whatever the log held."""
    c = _count([_judge(verdict="Refresh", reason="moved", confidence=0.9, ids=["fact:3"])],
               {"prompts": "paper", "refresher": False})
    why = c.why_zero["updates_at_ingestion"]
    assert "the ingestion Judge answered Refresh 1 on 1 checks" in why and "no Refresher edits memory" in why
    assert "no conflict check" in _count([], {"prompts": "paper", "refresher": False}).why_zero["updates_at_ingestion"]


# -- the re-recorded fixes (paper profile only; the small profile's calls are unchanged) ----------------------------
# tiny-1 with the scripted Constructor of test_ama: fact:0 adopted, fact:1 Miso, fact:2 violin, fact:3 Lyon (D1:6),
# fact:4 Geneva (D2:1), fact:5 museum (D2:3)
from test_ama import construct, entry_id, prompt_of  # noqa: E402


def _plan(raw_on=()):
    """The Retriever: the raw store (b_fine) for turns whose text holds one of ``raw_on``, else the fact store."""
    def reply(messages):
        text = prompt_of(messages)
        fine = int(any(w in text.split("Current input:", 1)[1].split("\n", 1)[0] for w in raw_on))
        return {"rewrite_query": text.split("Current input:", 1)[1].split("\n", 1)[0].strip(), "K_dyn": 5,
                "memory_type": "raw" if fine else "fact",
                "intent_vector": {"b_fine": fine, "b_abs": 0, "b_event": 0, "b_atomic": 1 - fine}}
    return reply


def _verdict(action, conflict=(), relevant=()):
    return {"Action": action, "reason": f"scripted {action}", "confidence": 0.8, "relevant_ids": list(relevant),
            "conflict_ids": list(conflict)}


def _candidates(messages) -> str:
    return prompt_of(messages).split("Retrieved memories", 1)[1].split("Current input", 1)[0]


def _paper(llm, **params):
    return AMA(llm=llm, embedder=HashEmbedder(dim=256), profile="paper", **params)


NO_OP = {"Action": "No-Op", "memory_type": "fact", "datalist": [], "timestamp": "empty", "reason": "nothing"}


def _script(**roles):
    script = {"ama.construct": construct(), "ama.retrieve": _plan(),
              "ama.judge_ingest": _verdict("Pass"), "ama.judge": _verdict("Pass"), "ama.refresh": NO_OP,
              "ama.trigger": {"T_t": 0, "reason": "same", "confidence": 0.5, "topic_summary": ""},
              "ama.episode": {"title": "t", "content": "c", "timestamp": "empty"}, "ama.answer": "Geneva"}
    script.update(roles)
    return ScriptedLLM(script, default="auto")


def _update_if_shown(word_needed: str, stale: str, new_text: str, *, in_input: bool = False):
    """A Refresher that follows Fig. 11's Update rule: it updates the stale entry only when the newer value is in
    front of it (``word_needed`` somewhere in its prompt's entries, or with ``in_input`` its input too), else
    No-Op."""
    def reply(messages):
        text = prompt_of(messages)
        entries = text if in_input else text.split("Current input", 1)[0]
        ids = entry_id([{"content": text.split("Detected conflicts", 1)[-1].split("Other memory", 1)[0]}], stale)
        if word_needed in entries and ids:
            return {"Action": "Update", "memory_type": "fact", "timestamp": "empty", "reason": "newer value shown",
                    "datalist": [{"id": i, "new_content": new_text} for i in ids]}
        return {"Action": "No-Op", "memory_type": "fact", "datalist": [], "timestamp": "empty",
                "reason": "no newer value"}
    return reply


def test_the_question_time_refresher_sees_the_retrieved_set_so_a_newer_value_the_judge_did_not_name_reaches_it(
        tiny_conv):
    """N1 (§3.4: Refresher(C_err, H_t || P_ref); Fig. 11): the Judge names only the stale entry (fact:3, Lyon) as
    C_err; the newer one (fact:4, Geneva) is in H_t. Before: the Refresher was shown C_err only, so it never saw
    Geneva and (by Fig. 11's Update rule) left Lyon; now the rest of H_t is shown beside C_err."""
    llm = _script(**{"ama.judge": _verdict("Refresh", conflict=["fact:3"], relevant=["fact:3", "fact:4"]),
                     "ama.refresh": _update_if_shown("Geneva", "Lyon", "Noor lives in Geneva")})
    m = _paper(llm, use_raw=False, use_episode=False).ingest(tiny_conv)
    n_before = len([r for r in llm.requests if r["role"] == "ama.refresh"])
    ans = m.answer("Where does Noor live now?")
    assert m.stores_["fact"]["fact:3"].text == "Noor lives in Geneva"  # before: "Noor lives in Lyon" (No-Op)
    prompt = prompt_of([r for r in llm.requests if r["role"] == "ama.refresh"][n_before]["messages"])
    conflicts, others = prompt.split("Detected conflicts", 1)[1].split("Other memory entries retrieved", 1)
    assert "[fact:3]" in conflicts and "[fact:4]" not in conflicts
    assert "[fact:4]" in others.split("Current input", 1)[0] and "[fact:3]" not in others
    step = next(s for s in ans.steps if s.kind == "refresh")
    assert step.data["action"] == "Update" and "fact:4" in step.data["retrieved_ids"]


def test_the_ingestion_refresher_sees_the_rest_of_the_routed_h_t_and_the_small_one_only_c_err(tiny_conv):
    """N1 at ingestion: the Refresher's prompt holds C_err and, in the paper profile only, the rest of the H_t the
    Judge saw; the small profile keeps C_err only (its prompt has no such block, its calls are unchanged)."""
    judge = _verdict("Pass")

    def ingest_judge(messages):
        if "moved to Geneva" in prompt_of(messages).split("Current input", 1)[1]:
            return _verdict("Refresh", conflict=entry_id([{"content": _candidates(messages)}], "Lyon"))
        return judge
    llm = _script(**{"ama.judge_ingest": ingest_judge})
    _paper(llm, use_raw=False, use_episode=False).ingest(tiny_conv)
    prompt = prompt_of(next(r for r in llm.requests if r["role"] == "ama.refresh")["messages"])
    others = prompt.split("Other memory entries retrieved", 1)[1].split("Current input", 1)[0]
    assert "[fact:3]" not in others and "[fact:2]" in others  # the rest of H_t (violin lessons), not the conflict
    small = ScriptedLLM({"ama.construct": construct(), "ama.refresh": NO_OP,
                         "ama.judge_ingest": lambda msgs: {"Action": "Refresh", "reason": "x", "confidence": 0.9,
                                                           "conflict_ids": entry_id(msgs, "Lyon")[:1]}},
                        default="auto")
    AMA(llm=small, embedder=HashEmbedder(dim=256), profile="small", use_raw=False, use_episode=False).ingest(tiny_conv)
    small_prompt = prompt_of(next(r for r in small.requests if r["role"] == "ama.refresh")["messages"])
    assert small_prompt.startswith(P.REFRESH.split("\n", 1)[0]) and "Other memory entries" not in small_prompt


def test_the_ingestion_judge_retries_into_the_next_granularity_so_a_stale_fact_is_checked(tiny_conv):
    """N2 (§3.3: Retry "traverses remaining memory granularities", bounded by K_r): the update turn D2:1 is routed to
    the raw store, whose entries cannot be edited into the new state by themselves; the Judge answers Retry, the
    search widens to the fact store, and the stale fact "Noor lives in Lyon" is found and updated. Before: the
    ingestion Judge offered Pass / Refresh only (a Retry reply failed its schema and counted as Pass), so the
    fact store was never a candidate and the stale fact stayed (review turn 4, checks B and C)."""
    def ingest_judge(messages):
        cands = _candidates(messages)
        if "moved to Geneva" not in prompt_of(messages).split("Current input", 1)[1]:
            return _verdict("Pass")
        if "[fact:" not in cands:
            return _verdict("Retry")
        return _verdict("Refresh", conflict=[i for i in entry_id([{"content": cands}], "Lyon") if i.startswith("fact")])
    llm = _script(**{"ama.retrieve": _plan(raw_on=("moved to Geneva",)), "ama.judge_ingest": ingest_judge,
                     "ama.refresh": _update_if_shown("Geneva", "Lyon", "Noor lives in Geneva", in_input=True)})
    m = _paper(llm, use_episode=False).ingest(tiny_conv)
    steps = m.turn_steps_["D2:1"]
    assert next(s for s in steps if s.kind == "retrieve").data["store"] == "raw"
    judges = [s.data for s in steps if s.kind == "judge"]
    assert [(j["round"], j["verdict"]) for j in judges] == [(1, "Retry"), (2, "Refresh")]
    expand = next(s for s in steps if s.kind == "expand")
    assert expand.data["next_store"] == "fact" and "fact:3" in expand.data["via_store"]
    assert m.stores_["fact"]["fact:3"].text == "Noor lives in Geneva"
    # the census reads the Retry verdicts from the ingestion log
    log = [x for x in m.structures()["ingestion_log"] if x["step"] == "judge" and x["turn_id"] == "D2:1"]
    assert [x["verdict"] for x in log] == ["Retry", "Refresh"] and [x["round"] for x in log] == [1, 2]


def test_a_retry_at_ingestion_stops_at_k_r_and_the_small_judge_has_no_retry(tiny_conv):
    """K_r bounds the ingestion Retry as it bounds the question's (k_r=1: one round, a Retry is not followed); the
    small prompt's Judge still answers Pass or Refresh only."""
    llm = _script(**{"ama.judge_ingest": _verdict("Retry")})
    m = _paper(llm, use_episode=False, k_r=1).ingest(tiny_conv)
    assert all(s.kind != "expand" for steps in m.turn_steps_.values() for s in steps)
    last = [s.data for steps in m.turn_steps_.values() for s in steps if s.kind == "judge"][-1]
    assert last["next"] == "construct (retry budget K_r exhausted)"
    assert P.JUDGE_INGEST_SCHEMA["properties"]["Action"]["enum"] == ["Pass", "Refresh"]


def test_the_ingestion_judge_sees_w_t_and_the_constructor_gets_h_r(tiny_conv):
    """N7 (§3.3: Judge(u_t, H_t, W_t || P_jud); a Pass forwards H_r): the paper Judge's prompt shows the session's
    earlier turns, and the Constructor is shown the relevant subset the Judge named, not all of H_t. Before: no W_t
    in the prompt, and the Constructor got every routed entry."""
    def ingest_judge(messages):
        ids = re.findall(r"\[(fact:\d+)\]", _candidates(messages))
        return _verdict("Pass", relevant=ids[:1])
    llm = _script(**{"ama.judge_ingest": ingest_judge})
    m = _paper(llm, use_raw=False, use_episode=False).ingest(tiny_conv)
    judge_d23 = next(prompt_of(r["messages"]) for r in llm.requests if r["role"] == "ama.judge_ingest"
                     and "got a job at a museum" in prompt_of(r["messages"]).split("Current input", 1)[1])
    window = judge_d23.split("Short-term context window", 1)[1].split("Retrieved memories", 1)[0]
    assert "(D2:1) Noor: Big news: I moved to Geneva last week." in window and "(D2:2)" in window
    steps = m.turn_steps_["D2:3"]
    named = next(s for s in steps if s.kind == "judge").data["relevant_ids"]
    routed = next(s for s in steps if s.kind == "retrieve").data["hit_ids"]
    assert len(named) == 1 and len(routed) > 1
    assert next(s for s in steps if s.kind == "construct").data["references"] == named


def test_without_the_refresher_the_paper_judge_still_runs_at_ingestion_and_edits_nothing(tiny_conv):
    """N6, Table 3 row 8 removes the Refresher only: the Judge still filters H_t (and may Retry) at ingestion, and a
    Refresh verdict edits nothing. Before: refresher=False skipped the ingestion Judge altogether."""
    def ingest_judge(messages):
        if "moved to Geneva" in prompt_of(messages).split("Current input", 1)[1]:
            return _verdict("Refresh", conflict=entry_id([{"content": _candidates(messages)}], "Lyon"))
        return _verdict("Pass")
    llm = _script(**{"ama.judge_ingest": ingest_judge})
    m = _paper(llm, use_raw=False, use_episode=False, refresher=False).ingest(tiny_conv)
    assert "ama.judge_ingest" in llm.roles() and "ama.refresh" not in llm.roles()
    step = next(s for s in m.turn_steps_["D2:1"] if s.kind == "refresh")
    assert step.data["action"] == "skipped" and step.data["why"] == "refresher=False"
    assert m.stores_["fact"]["fact:3"].text == "Noor lives in Lyon"
