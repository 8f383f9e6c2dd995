"""RecMem: the recurrence gate, merge-first, refinement, failure handling, the offline replay."""
import re
from datetime import datetime

import numpy as np
import pytest

from workbench.data import Conversation, Session, Turn
from workbench.embed import HashEmbedder
from workbench.llm import LLMError, ScriptedLLM
from workbench.methods import RecMem
from workbench.methods.recmem.trigger import calibrate_thresholds, decide, replay_triggers, trigger_rate

TOPICS = ("alpha", "beta", "gamma")


class TopicEmbedder:
    """A topic word is its own axis; a token ``u<i>`` adds a private axis with weight ``spread``.

    Two units on one topic: cos = 1 / (1 + spread^2) (0.8 by default); a unit and a text holding
    only the topic word (an episode, a fact): 1 / sqrt(1 + spread^2) (0.894); other topics: 0.
    """

    def __init__(self, spread: float = 0.5, dim: int = 64):
        self.spread, self.dim, self.name = spread, dim, "topic"

    def __call__(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for r, text in enumerate(texts):
            for w in re.findall(r"[a-z0-9]+", text.lower()):
                if w in TOPICS:
                    out[r, TOPICS.index(w)] += 1
                elif re.fullmatch(r"u\d+", w):
                    out[r, 3 + int(w[1:]) % (self.dim - 4)] += self.spread
            if not out[r].any():
                out[r, -1] = 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def conv_of(topics):
    """One session per exchange: Ann says '<topic> u<i>', Bob says 'ok'. Unit i is topics[i]."""
    sessions = []
    for i, topic in enumerate(topics):
        sid, when = f"S{i + 1}", datetime(2023, 5, 1 + i, 10)
        turns = (Turn(f"D{i + 1}:1", "Ann", f"{topic} u{i}", sid, when), Turn(f"D{i + 1}:2", "Bob", "ok", sid, when))
        sessions.append(Session(sid, when, turns))
    return Conversation("topics", ("Ann", "Bob"), tuple(sessions))


def recmem(llm, **kw):
    return RecMem(llm=llm, embedder=TopicEmbedder(), **{"theta_sim": 0.7, "theta_count": 3, **kw})


def outcomes(m):
    return [d.outcome for d in m.trigger_log_]


# -- contract --------------------------------------------------------------------------------------
def make_default():
    return RecMem(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder(dim=128))


def make_active():  # low thresholds for the hash embedder, so all three stores fill up
    llm = ScriptedLLM({"recmem.consolidate": {"episodes": ["Sam and Noor talked about Miso and Geneva."]},
                       "recmem.refine": {"facts": ["Sam adopted a kitten named Miso."]}}, default="auto")
    return RecMem(llm=llm, embedder=HashEmbedder(dim=128), theta_sim=0.4, theta_count=2, k_sub=3)


# The method contract (default, active) runs in tests/test_contract.py.


def test_active_contract_config_fills_every_store(tiny_conv):
    kinds = set(make_active().ingest(tiny_conv).memories().kind)
    assert kinds == {"subconscious", "episode", "fact"}


# -- the gate ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("theta_count,fired", [(3, True), (4, False)])
def test_decide_fires_at_threshold_not_below(theta_count, fired):
    d = decide("new", 4, np.array([0.9, 0.71, 0.7, 0.2]), ["a", "b", "c", "d"], theta_sim=0.7,
               theta_count=theta_count)
    assert d.relevant_ids == ("a", "b") and d.count == 3 and d.fired is fired  # strict '>': 0.7 is out
    assert d.neighbours[0] == ("a", pytest.approx(0.9))


def test_decide_conventions_and_top_k():
    cos, ids = np.array([0.9, 0.71, 0.7, 0.2]), ["a", "b", "c", "d"]
    assert decide("n", 0, cos, ids, theta_sim=0.7, theta_count=3, strict=False).relevant_ids == ("a", "b", "c")
    assert decide("n", 0, cos, ids, theta_sim=0.7, theta_count=3, count_self=False).fired is False  # |R| = 2
    assert decide("n", 0, cos, ids, theta_sim=0.7, theta_count=2, k=1).relevant_ids == ("a",)
    assert len(decide("n", 0, cos, ids, theta_sim=0.7, theta_count=1).neighbours) == 2  # k = 2 * theta_count


def test_live_trigger_fires_exactly_when_count_reaches_theta_count():
    llm = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann alpha story."]}, "recmem.refine": {"facts": []}})
    m = recmem(llm).ingest(conv_of(["alpha", "beta", "alpha", "alpha"]))
    assert outcomes(m) == ["buffered", "buffered", "buffered", "triggered"]
    assert m.trigger_log_[2].count == 2 and not m.trigger_log_[2].fired  # one below: buffered
    assert m.trigger_log_[3].count == 3 and m.trigger_log_[3].relevant_ids == ("unit-0", "unit-2")
    assert llm.roles() == ["recmem.consolidate", "recmem.refine"]
    assert set(m.sub_.units) == {"unit-1"}  # R left the buffer, the trigger unit never entered it
    (ev,) = [e for e in m.events if e.kind == "CONSOLIDATE"]
    assert ev.data["members"] == ["unit-0", "unit-2", "unit-3"] and ev.data["trigger"] == "unit-3"
    assert ev.data["cosines"] == {"unit-0": pytest.approx(0.8), "unit-2": pytest.approx(0.8)}
    assert ev.source_ids == ("D1:1", "D1:2", "D3:1", "D3:2", "D4:1", "D4:2")
    assert [e.unit_id for e in m.events if e.kind == "BUFFER"] == ["unit-0", "unit-1", "unit-2"]
    assert [e.unit_id for e in m.events if e.kind == "DELETE"] == ["unit-0", "unit-2"]
    strict = recmem(ScriptedLLM([]), theta_count=4).ingest(conv_of(["alpha", "beta", "alpha", "alpha"]))
    assert not any(d.fired for d in strict.trigger_log_) and strict.construction_calls_ == 0
    assert len(strict.sub_) == 4


def test_gate_k_too_small_is_rejected(tiny_conv):
    with pytest.raises(ValueError, match="never fire"):
        RecMem(llm=ScriptedLLM([]), embedder=HashEmbedder(), theta_count=5, gate_k=3).ingest(tiny_conv)


# -- merge-first ---------------------------------------------------------------------------------------
def merge_llm(should="yes", **extra):
    return ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann alpha story."]},
                        "recmem.merge": {"should_merge": should, "merged_memory": "Ann alpha story, continued." if
                                         should == "yes" else ""},
                        "recmem.refine": {"facts": []}, "recmem.refine_merge": {"facts": ["Ann met alpha u3."]},
                        **extra})


def test_merge_first_absorbs_a_close_unit_into_its_episode():
    llm = merge_llm()
    m = recmem(llm).ingest(conv_of(["alpha", "alpha", "alpha", "alpha", "beta"]))
    assert outcomes(m) == ["buffered", "buffered", "triggered", "merged", "buffered"]
    assert llm.roles() == ["recmem.consolidate", "recmem.refine", "recmem.merge", "recmem.refine_merge"]
    ep = m.epi_["epi-0"]
    assert ep.text == "Ann alpha story, continued." and ep.meta["version"] == 2 and ep.meta["lineage"] == "epi-0"
    assert ep.meta["raw_ids"] == ["unit-0", "unit-1", "unit-2", "unit-3"] and "D4:1" in ep.source_ids
    (merge,) = [e for e in m.events if e.kind == "MERGE"]
    assert merge.unit_id == "epi-0" and merge.data["unit"] == "unit-3"
    assert merge.data["cos"] == pytest.approx(0.894, abs=1e-3)
    assert "unit-3" not in m.sub_ and m.unit_fate_["unit-3"] == {"status": "merged", "into": ["epi-0"]}
    assert "alpha u3" in llm.requests[-1]["messages"][0]["content"]  # refinement after merge: R = the unit
    assert m.sem_["fact-0"].source_ids == ("D4:1", "D4:2")
    assert [a["passed"] for a in m.merge_log_] == [True, False]  # beta: cos 0, no LLM call


def test_merge_no_falls_through_to_the_gate_and_options():
    m = recmem(merge_llm("no")).ingest(conv_of(["alpha"] * 4))
    assert outcomes(m)[3] == "buffered" and m.merge_log_[0]["should_merge"] == "no" and "unit-3" in m.sub_
    llm = merge_llm()
    m = recmem(llm, refine_after_merge=False, stable_episode_ids=False).ingest(conv_of(["alpha"] * 4))
    assert "recmem.refine_merge" not in llm.roles()
    assert list(m.epi_.units) == ["epi-1"] and m.epi_["epi-1"].meta["lineage"] == "epi-0"
    assert m.epi_["epi-1"].meta["replaces"] == "epi-0"


def test_failed_merge_call_counts_as_no():
    m = recmem(merge_llm(**{"recmem.merge": LLMError("merge down")})).ingest(conv_of(["alpha"] * 4))
    assert outcomes(m)[3] == "buffered" and m.failures_ == [
        {"stage": "merge", "unit_id": "unit-3", "episode_id": "epi-0", "error": "merge down"}]


# -- semantic refinement -----------------------------------------------------------------------------
def test_refinement_sees_nearest_facts_and_dedupes_against_them():
    llm = ScriptedLLM({
        "recmem.consolidate": [{"episodes": ["Ann alpha story."]}, {"episodes": ["Ann alpha trip."]}],
        "recmem.merge": {"should_merge": "no", "merged_memory": ""},
        "recmem.refine": [{"facts": ["Ann likes alpha.", "Ann owns a red bike."]},
                          {"facts": ["ann likes ALPHA", "Ann visited Oslo."]}]})
    m = recmem(llm).ingest(conv_of(["alpha"] * 6))
    assert outcomes(m) == ["buffered", "buffered", "triggered", "buffered", "buffered", "triggered"]
    second = [r for r in llm.requests if r["role"] == "recmem.refine"][1]["messages"][0]["content"]
    assert "Ann likes alpha." in second and "red bike" not in second  # V: cos > 0 only
    rec = m.refinements_[1]
    assert [v[0] for v in rec["V"]] == ["fact-0"] and rec["duplicates"] == [["ann likes ALPHA", "fact-0"]]
    assert rec["new_fact_ids"] == ["fact-2"] and len(m.sem_) == 3
    (upd,) = [e for e in m.events if e.kind == "UPDATE"]
    assert upd.unit_id == "fact-0" and upd.data["added_source_ids"] == ["D4:1", "D4:2", "D5:1", "D5:2", "D6:1", "D6:2"]
    assert m.sem_["fact-0"].source_ids[:2] == ("D1:1", "D1:2") and "D6:1" in m.sem_["fact-0"].source_ids
    assert [e.unit_id for e in m.events if e.kind == "ADD"] == ["fact-0", "fact-1", "fact-2"]
    same = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann alpha story."]},
                        "recmem.merge": {"should_merge": "no", "merged_memory": ""},
                        "recmem.refine": {"facts": ["Ann likes alpha."]}})
    assert len(recmem(same).ingest(conv_of(["alpha"] * 6)).sem_) == 1
    assert len(recmem(same, dedupe_facts=False).ingest(conv_of(["alpha"] * 6)).sem_) == 2


def test_failed_refinement_keeps_the_episode():
    llm = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann alpha story."]}, "recmem.refine": LLMError("x")})
    m = recmem(llm).ingest(conv_of(["alpha"] * 3))
    assert len(m.epi_) == 1 and len(m.sem_) == 0 and m.failures_[0]["stage"] == "refine"


def test_no_episodes_variant_writes_facts_without_episodes():
    """The workbench's earlier Direct Extraction, kept by name: no episodes, hence never a merge."""
    llm = ScriptedLLM({"recmem.refine_direct": {"facts": ["Ann likes alpha."]}})
    m = recmem(llm, refine_with_episode="no_episodes").ingest(conv_of(["alpha"] * 3))
    assert llm.roles() == ["recmem.refine_direct"] and len(m.epi_) == 0 and len(m.sem_) == 1
    assert [e.unit_id for e in m.events if e.kind == "CONSOLIDATE"] == ["cluster-0"]


def test_direct_extraction_keeps_episodes_and_merge_first_as_the_authors_code():
    """reviews/recmem.md B1: [code] --disable_semantic_refinement still writes episodes and merges;
    only the facts change: from R alone (the cluster; the merged unit alone after a merge), one call
    per consolidation, with neither the episode nor the stored facts in the prompt."""
    llm = merge_llm(**{"recmem.refine_direct": [{"facts": ["Ann likes alpha."]}, {"facts": ["Ann met alpha u3."]}]})
    m = recmem(llm, refine_with_episode=False).ingest(conv_of(["alpha", "alpha", "alpha", "alpha", "beta"]))
    full_llm = merge_llm()
    full = recmem(full_llm).ingest(conv_of(["alpha", "alpha", "alpha", "alpha", "beta"]))
    assert outcomes(m) == outcomes(full) == ["buffered", "buffered", "triggered", "merged", "buffered"]
    assert llm.roles() == ["recmem.consolidate", "recmem.refine_direct", "recmem.merge", "recmem.refine_direct"]
    assert [r.replace("refine_merge", "refine") for r in full_llm.roles()] == \
        [r.replace("refine_direct", "refine") for r in llm.roles()]  # the same steps, only the fact prompt differs
    assert m.epi_["epi-0"].text == "Ann alpha story, continued." and set(m.sub_.units) == set(full.sub_.units)
    cluster_prompt, merge_prompt = [r["messages"][0]["content"] for r in llm.requests
                                    if r["role"] == "recmem.refine_direct"]
    assert "Ann alpha story" not in cluster_prompt and cluster_prompt.count("[Message Timestamp]") == 3
    assert "alpha u3" in merge_prompt and merge_prompt.count("[Message Timestamp]") == 1
    assert [f.text for f in m.sem_] == ["Ann likes alpha.", "Ann met alpha u3."]
    assert [r["mode"] for r in m.refinements_] == ["direct_cluster", "direct_merge"]


def test_direct_extraction_with_no_facts_still_consolidates():
    llm = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann alpha story."]}, "recmem.refine_direct": {"facts": []}})
    m = recmem(llm, refine_with_episode=False).ingest(conv_of(["alpha"] * 3))
    assert outcomes(m) == ["buffered", "buffered", "triggered"] and len(m.epi_) == 1 and not m.failures_
    bad = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann alpha story."]},
                       "recmem.refine_direct": LLMError("down")})
    m = recmem(bad, refine_with_episode=False).ingest(conv_of(["alpha"] * 3))
    assert outcomes(m)[2] == "triggered" and m.failures_[0]["stage"] == "refine"


def test_the_papers_ablations_by_name():
    from workbench.methods.recmem.method import ABLATIONS

    assert list(ABLATIONS) == ["full", "w/o subconscious", "w/o episodic", "w/o semantic", "direct extraction"]
    d = RecMem.ablation("direct_extraction", theta_sim=0.6)
    assert (d.refine_with_episode, d.use_episodes, d.use_facts, d.use_subconscious, d.theta_sim) == (
        False, False, True, True, 0.6)
    assert RecMem.ablation("W/O Episodic").get_params() == RecMem(use_episodes=False).get_params()
    assert RecMem.ablation("full").get_params() == RecMem().get_params()
    with pytest.raises(ValueError, match="unknown RecMem ablation"):
        RecMem.ablation("w/o everything")
    with pytest.raises(ValueError, match="refine_with_episode"):
        RecMem(llm=ScriptedLLM([]), embedder=TopicEmbedder(), refine_with_episode="yes").ingest(conv_of(["a"]))


# -- failures never lose a unit ---------------------------------------------------------------------
def test_failing_consolidation_keeps_the_unit_and_the_cluster():
    llm = ScriptedLLM({"recmem.consolidate": [LLMError("boom"), {"episodes": ["Ann alpha story."]}],
                       "recmem.refine": {"facts": []}})
    m = recmem(llm).ingest(conv_of(["alpha"] * 4))
    assert outcomes(m) == ["buffered", "buffered", "failed", "triggered"]
    assert m.failures_[0]["stage"] == "consolidate" and "boom" in m.failures_[0]["error"]
    buf = [e for e in m.events if e.kind == "BUFFER" and e.unit_id == "unit-2"][0]
    assert "boom" in buf.data["consolidation_failed"]
    assert m.trigger_log_[3].count == 4  # the failed unit and its cluster stayed in the buffer
    assert m.epi_["epi-0"].meta["raw_ids"] == ["unit-0", "unit-1", "unit-2", "unit-3"]


def test_empty_episodes_count_as_failure_and_drop_policy():
    m = recmem(ScriptedLLM({"recmem.consolidate": {"episodes": []}})).ingest(conv_of(["alpha"] * 3))
    assert outcomes(m)[2] == "failed" and set(m.sub_.units) == {"unit-0", "unit-1", "unit-2"}
    llm = ScriptedLLM({"recmem.consolidate": LLMError("boom")})
    m = recmem(llm, on_failure="drop").ingest(conv_of(["alpha"] * 3))
    assert outcomes(m)[2] == "dropped" and "unit-2" not in m.sub_ and m.events[-1].kind == "DELETE"
    assert m.replay() == m.trigger_log_


# -- replay ---------------------------------------------------------------------------------------
MIXED = ["alpha", "beta", "alpha", "gamma", "beta", "alpha", "alpha", "beta", "gamma", "gamma", "alpha", "beta"]


def mixed_llm():
    return ScriptedLLM({"recmem.consolidate": [LLMError("boom"), {"episodes": ["Ann alpha story."]},
                                               {"episodes": ["Ann beta story."]}, {"episodes": ["Ann gamma."]}],
                        "recmem.merge": [{"should_merge": "yes", "merged_memory": "Ann alpha story again."},
                                         {"should_merge": "no", "merged_memory": ""}],
                        "recmem.refine": {"facts": []}, "recmem.refine_merge": {"facts": []}})


@pytest.mark.parametrize("retain", [False, True])
def test_replay_reproduces_the_live_decisions(retain):
    llm = mixed_llm()
    m = recmem(llm, retain_consolidated=retain).ingest(conv_of(MIXED))
    assert {"merged", "failed", "triggered", "buffered"} <= set(outcomes(m))
    merged = [d.unit_id for d in m.trigger_log_ if d.outcome == "merged"]
    failed = [d.unit_id for d in m.trigger_log_ if d.outcome == "failed"]
    live = replay_triggers(m.unit_vectors_, theta_sim=0.7, theta_count=3, ids=m.unit_order_, merged=merged,
                           failed=failed)
    assert live == m.trigger_log_ and m.replay() == m.trigger_log_
    n_calls = len(llm.requests)
    gate_only = m.replay(live_merges=False, live_failures=False)
    assert [d.outcome for d in gate_only] != outcomes(m) and "merged" not in {d.outcome for d in gate_only}
    assert sum(d.fired for d in m.replay(theta_count=2, live_merges=False)) > sum(d.fired for d in gate_only)
    assert len(llm.requests) == n_calls  # no LLM
    if retain:
        assert len(m.sub_) == len(MIXED) and len(m.pool_) < len(MIXED)


def test_replay_orders_by_time_keys():
    e = TopicEmbedder()([f"{t} u{i}" for i, t in enumerate(MIXED)])
    ref = replay_triggers(e, theta_sim=0.7, theta_count=3)
    perm = np.random.default_rng(0).permutation(len(MIXED))
    shuffled = replay_triggers(e[perm], order=list(perm), theta_sim=0.7, theta_count=3, ids=[str(i) for i in perm])
    key = [(d.unit_id, d.fired, d.relevant_ids) for d in ref]
    assert [(d.unit_id, d.fired, d.relevant_ids) for d in shuffled] == key


def test_calibrate_thresholds_matches_a_reference_trigger_rate():
    texts = [f"{t} u{i}" for i, t in enumerate(MIXED * 2)]
    target = trigger_rate(replay_triggers(TopicEmbedder()(texts), theta_sim=0.7, theta_count=3))
    assert target > 0
    other = TopicEmbedder(spread=1.0)(texts)  # "another encoder": same-topic cosines 0.5 instead of 0.8
    assert trigger_rate(replay_triggers(other, theta_sim=0.7, theta_count=3)) == 0
    res = calibrate_thresholds(other, target_trigger_rate=target, theta_count=3)
    assert res["trigger_rate"] == target and 0.0 < res["theta_sim"] < 0.5
    assert trigger_rate(replay_triggers(other, theta_sim=res["theta_sim"], theta_count=3)) == target
    pooled = calibrate_thresholds([other[:10], other[10:]], target_trigger_rate=target, theta_count=3)
    assert [row[0] for row in pooled["grid"]][:2] == [0.2, 0.21] and 0.0 < pooled["theta_sim"] < 0.5


# -- answering, presets, costs ------------------------------------------------------------------
def built(**kw):
    llm = ScriptedLLM({"recmem.consolidate": {"episodes": ["Ann alpha story."]},
                       "recmem.refine": {"facts": ["Ann likes alpha."]}, "recmem.answer": "alpha"})
    return recmem(llm, **kw).ingest(conv_of(["alpha", "alpha", "alpha", "beta", "gamma"])), llm


def test_answer_merges_three_layers_with_paper_budgets():
    m, llm = built()
    ans = m.answer("What about alpha?")
    assert ans.text == "alpha"
    budgets = {s.data["layer"]: s.data["k"] for s in ans.steps if s.kind == "retrieve"}
    assert budgets == {"episode": 5, "fact": 10, "subconscious": 10}
    assert [h.kind for h in ans.context] == ["episode", "fact", "subconscious", "subconscious"]
    prompt = llm.requests[-1]["messages"][0]["content"]
    assert "Ann alpha story." in prompt and "Ann likes alpha." in prompt and "beta u3" in prompt
    assert RecMem.summary_stats([ans])["mean_hits"] == {"subconscious": 2.0, "episode": 1.0, "fact": 1.0}


def test_answer_ablations_drop_layers():
    m, llm = built(use_subconscious=False, k_epi=1)
    ans = m.answer("What about alpha?")
    assert {s.data["layer"]: s.data["k"] for s in ans.steps if s.kind == "retrieve"} == {"episode": 1, "fact": 2}
    assert "beta u3" not in llm.requests[-1]["messages"][0]["content"]
    ans = built(use_episodes=False, use_facts=False)[0].answer("alpha?")
    assert {h.kind for h in ans.context} == {"subconscious"}


def test_retriever_layers():
    m, _ = built()
    assert {h.kind for h in m.as_retriever("episode").search("alpha", 5)} == {"episode"}
    assert {h.kind for h in m.as_retriever().search("alpha", 10)} == {"episode", "fact", "subconscious"}
    with pytest.raises(ValueError):
        m.as_retriever("graph")


def test_for_dataset_presets():
    lme = RecMem.for_dataset("LongMemEval", k_sub=3)
    assert (lme.theta_sim, lme.theta_count, lme.answer_length, lme.k_sub) == (0.6, 4, "free", 3)
    assert (RecMem.for_dataset("locomo").theta_sim, RecMem.for_dataset("locomo").theta_count) == (0.7, 5)
    with pytest.raises(ValueError, match="unknown dataset"):
        RecMem.for_dataset("msc")


def test_construction_breakdown_by_operation():
    m, _ = recmem(merge_llm()).ingest(conv_of(["alpha"] * 4)), None
    ops = m.construction_breakdown()
    assert {k: v["calls"] for k, v in ops.items()} == {"merge": 1, "consolidate": 1, "refine": 2, "total": 4}
    assert ops["total"]["total_tokens"] == m.construction_usage_.total_tokens > 0
    assert set(m.construction_breakdown("role")) == {"recmem.consolidate", "recmem.refine", "recmem.merge",
                                                     "recmem.refine_merge", "total"}
    assert m.consolidation_summary()["save_ratio"] == 1.0


def test_subconscious_units_are_what_ingest_stores(tiny_conv):
    m = make_default()
    preview = RecMem(llm=None, embedder=None, profile=m.profile).subconscious_units(tiny_conv)  # no services needed
    m.ingest(tiny_conv)
    assert [(u.id, u.text, u.source_ids) for u in preview] == \
        [(u.id, u.text, u.source_ids) for u in m.units_.values()]
    assert sorted(t for u in preview for t in u.source_ids) == sorted(t.id for t in tiny_conv.turns)
