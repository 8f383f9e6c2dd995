"""Turn-4 review of AMA (shared/reviews/ama.md): the findings fixed without changing any LLM call the method makes.
Each test fails on the code before the fix (named in its docstring)."""
import json
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
    """N1, N2, N6, N7, N8 were undocumented (or their consequence was)."""
    doc = " ".join(AMA.__doc__.split())
    for words in ("The Refresher is shown C_err and the input only, not H_t",
                  "a knowledge update is checked only against the top K of the one store f_M routes",
                  "No Judge prompt shows W_t", "not the relevant subset H_r",
                  "with no threshold in code", "still sends H_r and C_err to the reader newest first"):
        assert words in doc, words
    assert "newest first" in AMA.ablations["RT+FK+EP"].source
