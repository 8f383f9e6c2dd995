"""The papers' ablation tables by name (issue #39 item 4): ``Method.ablation(name, ...)`` builds the row's
configuration (``MemoryMethod.ablations``), and the steps that run differ as the row says. Offline: scripted
LLMs and hash embedders, the tiny sample conversation."""
from __future__ import annotations

import json

import pytest

from test_ama import construct
from test_contract import auto, emb, hmem_extract, hymem_summarize
from test_hmem import _plan
from test_memr3 import R, rag
from test_recmem import TopicEmbedder, conv_of, merge_llm
from workbench.llm import ScriptedLLM
from workbench.methods import AMA, HMem, HyMem, MemoryMethod, MemR3, RecMem
from workbench.methods.base import Ablation
from workbench.testing import contract as C
from workbench.testing.check_method import check_declarations, check_method

METHODS = (HyMem, AMA, HMem, MemR3, RecMem)
# LLMs whose replies make each method store something (the contract's provenance check needs units)
LLMS = {AMA: lambda: ScriptedLLM({"ama.construct": construct()}, default="auto"),
        HMem: lambda: ScriptedLLM({"hmem.extract": hmem_extract}, default="auto")}
CHEAP = [check_declarations, C.check_init_stores_params_verbatim, C.check_params_round_trip,
         C.check_ingest_then_answer, C.check_units_have_provenance]


def build(cls, name, llm=None, **params):
    return cls.ablation(name, llm=llm or LLMS.get(cls, auto)(), embedder=emb(), **params)


def kinds(ans):
    return [s.kind for s in ans.steps]


def steps(ans, kind):
    return [s for s in ans.steps if s.kind == kind]


# -- the generic classmethod ---------------------------------------------------------------------------------
ROWS = [pytest.param(c, n, id=f"{c.__name__}-{n}") for c in METHODS for n in c.ablations]


@pytest.mark.parametrize("cls, name", ROWS)
def test_each_ablation_is_its_parameters_and_passes_the_contract(cls, name):
    row = cls.ablations[name]
    assert isinstance(row, Ablation) and row.source.startswith("paper")
    m = cls.ablation(name)  # no LLM named: the paper profile (workbench.methods.profile)
    base = cls(profile=m.profile).get_params() if cls.profiles else cls._defaults()
    assert m.get_params() == {**base, **row.params}
    check_method(cls, make=lambda: build(cls, name), checks=CHEAP)


@pytest.mark.parametrize("cls", METHODS)
def test_every_paper_table_has_its_full_row_first(cls):
    assert next(iter(cls.ablations)) == "full" and cls.ablations["full"].params == {}
    assert len(cls.ablations) >= 4


def test_names_ignore_case_spaces_and_punctuation_and_params_go_on_top():
    assert MemR3.ablation("W/O delta_q").delta_query is False
    assert HyMem.ablation_params("l1+l2/l+d") == {"reflection": False}
    d = RecMem.ablation("direct_extraction", theta_sim=0.6)
    assert (d.refine_with_episode, d.use_episodes, d.theta_sim) == (False, False, 0.6)
    assert RecMem.ablation_params("direct extraction") is not RecMem.ablations["direct extraction"].params


def test_an_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown MemR3 ablation 'w/o router'; valid names: 'full', 'w/o mask'"):
        MemR3.ablation("w/o router")

    class NoTable(MemoryMethod):
        name = "no_table"

    with pytest.raises(ValueError, match="declares no ablations"):
        NoTable.ablation("full")


def test_the_contract_refuses_an_ablation_of_a_parameter_the_class_lacks():
    class Typo(HyMem):
        name = "typo"
        ablations = {"full": Ablation({}, "paper"), "w/o deep": Ablation({"deep_module": False}, "paper")}

    with pytest.raises(AssertionError, match=r"sets \['deep_module'\], not parameters of __init__"):
        check_declarations(lambda: Typo(), None)


# -- HyMem, paper Table 2 ------------------------------------------------------------------------------------
HYMEM_STEPS = {  # the light module never finds the answer sufficient, R accepts the first round
    "full": ["light", "deep", "reflect", "final"],
    "L1 / L+R": ["light", "reflect", "final"],
    "L1+L2 / D+R": ["deep", "reflect", "final"],
    "L1+L2 / L+D": ["light", "deep", "final"],
    "L1 / L": ["light", "final"],
    "L1+L2 / D": ["deep", "final"],
    "L2 / L+R": ["light", "reflect", "final"],
    "L2 / L": ["light", "final"],
}


@pytest.mark.parametrize("profile", ["paper", "small"])
@pytest.mark.parametrize("name", list(HYMEM_STEPS))
def test_hymem_table_2_rows_run_their_modules(name, profile, tiny_conv):
    llm = ScriptedLLM({"hymem.light": {"finished": 2, "answer": ""}, "hymem.deep": {"answer": "Geneva"},
                       "hymem.reflect": {"finished": 1, "new_question": ""}, "hymem.summarize": hymem_summarize},
                      default="auto")  # (the paper profile stores no event whose summary is empty, as the code)
    m = build(HyMem, name, llm=llm, profile=profile, segmentation="window", window_turns=3, window_stride=3)
    assert {k: getattr(m, k) for k in HyMem.profiles[profile]} == HyMem.profiles[profile]  # the row keeps its profile
    ans = m.ingest(tiny_conv).answer(tiny_conv.qa[0].question)
    assert kinds(ans) == HYMEM_STEPS[name]
    sent = "\n".join(r["messages"][0]["content"] for r in llm.requests)
    assert ("dialogue time:" in sent) is (profile == "paper" and "deep" in kinds(ans))  # B.4's index format
    level2_only = name.startswith("L2 ")
    assert ("hymem.summarize" in llm.roles()) is not level2_only  # no Level-1 summaries without Level-1
    if "light" in kinds(ans):
        assert all(i.startswith("L2-" if level2_only else "L1-") for i in steps(ans, "light")[0].data["retrieved"])


# -- AMA, paper Table 3 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["paper", "small"])
@pytest.mark.parametrize("name", list(AMA.ablations))
def test_ama_table_3_rows_keep_their_stores_and_refresher(name, profile, tiny_conv):
    llm = LLMS[AMA]()
    m = build(AMA, name, llm=llm, profile=profile).ingest(tiny_conv)
    assert m.profile == profile
    kept = {"raw": m.use_raw, "fact": m.use_fact, "episode": m.use_episode}
    assert {s: len(m.stores_[s]) > 0 for s in kept} == kept
    roles = set(llm.roles())
    assert ("ama.episode" in roles) is m.use_episode  # no episode calls without the episode store
    # without the Refresher the paper's Judge still runs at ingestion (the paper removes only the Refresher; turn 4,
    # N6); the small profile's Judge, a conflict check for its Refresher, does not
    assert ("ama.judge_ingest" in roles) is (m.refresher or profile == "paper")
    assert ("ama.retrieve" in roles) is (profile == "paper")  # the paper runs the Retriever on every turn
    ans = m.answer(tiny_conv.qa[0].question)
    assert {h.unit_id.split(":", 1)[0] for h in ans.context} <= {s for s, on in kept.items() if on}


# -- H-Mem, paper Table 5 and App. A.4 -------------------------------------------------------------------------
def hmem_paper_extract(messages):
    """``hmem_extract``'s records completed with the fields the paper profile's schema requires (App. A.2)."""
    out = json.loads(hmem_extract(messages))
    for e in out["events"]:
        e["date"] = ""
    for e in out["entities"]:
        e.update(role="mentioned", salience=0.5)
    for r in out["relations"]:
        r["confidence"] = 0.8
    return json.dumps(out)


def hmem_run(name, tiny_conv, profile="small"):
    plan = _plan(("Where does Noor take violin lessons?", [], "SHORT", "", ["Noor"]))
    if profile == "paper":  # the paper planner's schema requires the retrieval workflow (paper §3.3)
        plan["subqueries"][0]["workflow"] = "start from Noor, look for violin lessons"
    llm = ScriptedLLM({"hmem.extract": hmem_extract if profile == "small" else hmem_paper_extract,
                       "hmem.plan": plan}, default="auto")
    m = build(HMem, name, llm=llm, profile=profile).ingest(tiny_conv)
    return m, m.answer(tiny_conv.qa[0].question), llm


@pytest.mark.parametrize("profile", ["paper", "small"])
def test_hmem_rows_build_on_either_profile(profile):
    """A row sets only its switch: the rest is the chosen profile's (the paper's values for profile="paper")."""
    for name, row in HMem.ablations.items():
        m = HMem.ablation(name, profile=profile)
        assert m.get_params() == {**HMem(profile=profile).get_params(), **row.params}
    assert HMem.ablation("w/o tree").profile == "paper"  # no model named: the paper's method


@pytest.mark.parametrize("profile", ["paper", "small"])
def test_hmem_table_5_rows_switch_off_their_part(tiny_conv, profile):
    full, ans, llm = hmem_run("full", tiny_conv, profile)
    retrieve = steps(ans, "retrieve")[0].data
    assert full.tree_stats()["nodes"] > 0 and max(full.tree_stats()["per_level"]) > 1 and retrieve["seeds"]
    assert "hmem.profile" in llm.roles() and "followup" in kinds(ans) and retrieve["scope"] == "SHORT"
    sent_paper_plan = any("<SHORT|LONG|MIXED>" in r["messages"][0]["content"] for r in llm.requests)
    assert full.prompts == profile and sent_paper_plan is (profile == "paper")
    assert any(c["R"] > 0 for c in retrieve["candidates"]) and "event" in {c["kind"] for c in retrieve["candidates"]}

    m, ans, _ = hmem_run("w/o tree", tiny_conv, profile)
    kinds_found = {c["kind"] for c in steps(ans, "retrieve")[0].data["candidates"]}
    assert m.tree_stats()["nodes"] == 0 and "event" not in kinds_found and "fragment" in kinds_found
    m, ans, llm = hmem_run("w/o graph", tiny_conv, profile)
    assert steps(ans, "retrieve")[0].data["seeds"] == [] and "hmem.profile" not in llm.roles()
    m, _, _ = hmem_run("w/o long memory", tiny_conv, profile)
    assert set(m.tree_stats()["per_level"]) == {1}
    _, ans, _ = hmem_run("w/o memory robustness", tiny_conv, profile)
    assert all(c["R"] == 0 for c in steps(ans, "retrieve")[0].data["candidates"])
    _, ans, _ = hmem_run("w/o missing-info query", tiny_conv, profile)
    assert "followup" not in kinds(ans)
    _, ans, llm = hmem_run("w/o entity profile", tiny_conv, profile)
    assert "hmem.profile" not in llm.roles() and steps(ans, "retrieve")[0].data["seeds"]  # the graph stays
    _, ans, _ = hmem_run("fixed mixed", tiny_conv, profile)
    assert {s.data["scope"] for s in steps(ans, "retrieve")} == {"MIXED"}  # the planner said SHORT


# -- MemR3, paper Table 2 ----------------------------------------------------------------------------------------
def memr3_run(name, replies, tiny_conv, profile="small"):
    llm = ScriptedLLM({"memr3.router": replies, "memr3.answer": "Geneva"})
    m = build(MemR3, name, llm=llm, backend=rag(), profile=profile).ingest(tiny_conv)
    assert m.profile == profile  # each row is one switch on top of either profile (paper: the paper's ablation)
    return m.answer(tiny_conv.qa[0].question), llm


@pytest.mark.parametrize("profile", ["paper", "small"])
@pytest.mark.parametrize("name", ["full", "w/o mask", "w/o delta-q"])
def test_memr3_mask_and_delta_q_rows(name, profile, tiny_conv):
    q = "In which city does Noor take violin lessons now?"
    ans, _ = memr3_run(name, [R("retrieve", retrieval_query="violin school city"), R("answer", detailed_answer="x")],
                       tiny_conv, profile)
    assert kinds(ans) == ["retrieve", "router", "retrieve", "router", "answer"]
    first, second = steps(ans, "retrieve")
    assert second.data["query"] == (q if name == "w/o delta-q" else f"{q}. violin school city")
    masked = second.data["masked_ids"]
    assert masked == ([] if name == "w/o mask" else sorted(first.data["retrieved_ids"]))


@pytest.mark.parametrize("profile", ["paper", "small"])
@pytest.mark.parametrize("name", ["full", "w/o reflect"])
def test_memr3_reflect_row(name, profile, tiny_conv):
    ans, llm = memr3_run(name, [R("reflect", reasoning="think"), R("answer", detailed_answer="x")] * 3, tiny_conv,
                         profile)
    offered = llm.requests[0]["schema"]["properties"]["decision"]["enum"]
    if name == "full":
        assert "reflect" in offered and steps(ans, "router")[0].data["action"] == "reflect" and steps(ans, "reflect")
    else:  # no reflect node: the decision is not offered and a reflect reply never becomes a reflect step
        assert offered == ["retrieve", "answer"] and not steps(ans, "reflect")
        assert "reflect" not in {s.data["action"] for s in steps(ans, "router")}
        if profile == "small":  # the strict reading: the client refuses the reply and repairs it
            assert "memr3.router.repair" in llm.roles()
        else:  # the paper profile reads it as [code] would: a decision off the enum falls back, recorded
            assert "memr3.router.repair" not in llm.roles()
            assert steps(ans, "router")[0].data["fallback"] == "invalid decision 'reflect'"


# -- RecMem, paper §4.3 Fig. 2 ------------------------------------------------------------------------------------
def test_recmem_fig_2_rows_answer_from_their_stores_over_one_construction():
    """Every row builds as full RecMem does (merge-first included: reviews/recmem.md B1); only Direct Extraction
    changes the fact call, and the rows differ in the stores the answer reads (paper §4.3)."""
    layers, outcomes = {}, {}
    for name in RecMem.ablations:
        llm = merge_llm(**{"recmem.refine": {"facts": ["Ann likes alpha."]},
                           "recmem.refine_direct": {"facts": ["Ann likes alpha."]}, "recmem.answer": "alpha"})
        m = RecMem.ablation(name, llm=llm, embedder=TopicEmbedder(), theta_sim=0.7, theta_count=3)
        ans = m.ingest(conv_of(["alpha", "alpha", "alpha", "alpha", "beta"])).answer("What does Ann like?")
        layers[name] = {s.data["layer"] for s in steps(ans, "retrieve")}
        outcomes[name] = [d.outcome for d in m.trigger_log_]
        direct = name == "direct extraction"
        assert ("recmem.refine_direct" in llm.roles()) is direct and ("recmem.refine" in llm.roles()) is not direct
        assert "recmem.merge" in llm.roles() and len(m.epi_) == 1 and len(m.sem_) > 0  # episodes are still written
    assert set(map(tuple, outcomes.values())) == {("buffered", "buffered", "triggered", "merged", "buffered")}
    assert layers == {"full": {"subconscious", "episode", "fact"}, "w/o subconscious": {"episode", "fact"},
                      "w/o episodic": {"subconscious", "fact"}, "w/o semantic": {"subconscious", "episode"},
                      "direct extraction": {"subconscious", "fact"}}
