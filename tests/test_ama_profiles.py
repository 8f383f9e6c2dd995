"""AMA's two profiles (issue #39): ``profile="paper"`` is the paper's method (App. C prompts with every instruction
and neutral placeholders, the Retriever on every turn, the Judge on the routed H_t, question-time Refresh);
``profile="small"`` is the offline models' configuration, each aid in ``param_notes``."""
from __future__ import annotations

import re
import string

import pytest

from workbench.methods.components import parameter_notes

from test_ama import FACTS, construct, entry_id, prompt_of
from workbench.embed import HashEmbedder
from workbench.eval.manifest import method_prompt_hash, prompt_modules
from workbench.llm import ScriptedLLM
from workbench.methods import AMA
from workbench.methods.ama import paper_prompts as PP
from workbench.methods.ama import prompts as SP
from workbench.testing.check_method import check_method

# method_prompt_hash(AMA(profile="small")) before the profiles existed (commit c93cd04): the small profile sends
# today's prompts, byte for byte, so its recorded runs keep their prompt hash
SMALL_PROMPT_HASH = "642018328aa7"

ROLES = {"ama.construct": "CONSTRUCT", "ama.trigger": "TRIGGER", "ama.episode": "EPISODE", "ama.retrieve": "RETRIEVE",
         "ama.judge": "JUDGE", "ama.judge_ingest": "JUDGE_INGEST", "ama.refresh": "REFRESH"}
SMALL_AIDS = {"prompts", "ingest_retriever", "conflict_candidates", "refresh_on_query", "trigger_history"}


def emb():
    return HashEmbedder(dim=256)


def new_turn_line(messages) -> str:
    """The line naming the new turn, in either profile's conflict-check prompt."""
    return next(line for line in prompt_of(messages).splitlines()
                if line.startswith(("NEW TURN", "Current input (")))


def ingest_judge(messages):
    """Refresh against the entries about Lyon when the turn says Noor moved to Geneva; otherwise Pass."""
    if "Geneva last week" in new_turn_line(messages):
        return {"Action": "Refresh", "reason": "moved", "confidence": 0.9, "conflict_ids": entry_id(messages, "Lyon"),
                "relevant_ids": []}
    return {"Action": "Pass", "reason": "consistent", "confidence": 0.9, "conflict_ids": [], "relevant_ids": []}


def update_to_geneva(messages):
    ids = entry_id(messages, "Lyon")
    return {"Action": "Update", "memory_type": "fact", "timestamp": "empty", "reason": "Noor moved",
            "datalist": [{"id": i, "new_content": "Noor lives in Geneva"} for i in ids]}


def scripted(**roles):
    script = {"ama.construct": construct(), "ama.judge_ingest": ingest_judge, "ama.refresh": update_to_geneva,
              "ama.retrieve": {"rewrite_query": "Where does Noor live?", "K_dyn": 5, "memory_type": "fact",
                               "intent_vector": {"b_fine": 0, "b_abs": 0, "b_event": 0, "b_atomic": 1}}}
    script.update(roles)
    return ScriptedLLM(script, default="auto")


def opening(template: str) -> str:
    return template.split("\n", 1)[0]


# -- the profiles and their notes -------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["paper", "small"])
def test_both_profiles_pass_the_method_contract(profile):
    check_method(AMA, make=lambda: AMA(llm=ScriptedLLM([], default="auto"), embedder=emb(), profile=profile))


def test_paper_profile_has_no_departures_and_the_small_one_lists_every_aid():
    paper, small = AMA(profile="paper"), AMA(profile="small")
    assert paper.param_notes == {}
    assert (paper.prompts, paper.ingest_retriever, paper.conflict_candidates, paper.refresh_on_query) == (
        "paper", True, "routed", True)
    assert (small.prompts, small.ingest_retriever, small.conflict_candidates, small.refresh_on_query) == (
        "small", False, "sweep", False)
    assert set(small.param_notes) == SMALL_AIDS
    # each aid names its evidence
    assert "22 of 22" in small.param_notes["prompts"] and "12 of 12" in small.param_notes["prompts"]
    assert "22 of 22" in small.param_notes["ingest_retriever"]
    assert "38 of 38" in small.param_notes["refresh_on_query"]
    # the demo's probe and fact-only check are departures in either profile
    probe = AMA(profile="paper", conflict_check="probe", conflict_stores=("fact",)).param_notes
    assert set(probe) == {"conflict_check", "conflict_stores"}
    # the scripted LLM stands in for the offline models: auto -> small; no model named -> paper
    assert AMA(llm=ScriptedLLM([])).profile == "small" and AMA().profile == "paper"


def test_the_small_profiles_prompt_hash_is_unchanged_and_only_the_paper_profile_hashes_the_paper_prompts():
    small, paper = AMA(profile="small"), AMA(profile="paper")
    assert method_prompt_hash(small) == SMALL_PROMPT_HASH
    assert method_prompt_hash(paper) != SMALL_PROMPT_HASH
    assert "workbench.methods.ama.paper_prompts" in prompt_modules(paper)
    assert "workbench.methods.ama.paper_prompts" not in prompt_modules(small)


def test_routed_conflict_candidates_need_the_retriever(tiny_conv):
    with pytest.raises(ValueError, match="ingest_retriever=True"):
        AMA(profile="paper", ingest_retriever=False, embedder=emb(), llm=scripted()).ingest(tiny_conv)
    m = AMA(profile="paper", ingest_retriever=False, conflict_candidates="sweep", embedder=emb(), llm=scripted())
    assert set(parameter_notes(m.param_notes)) == {"ingest_retriever", "conflict_candidates"}


# -- what each profile sends ------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["paper", "small"])
def test_each_profile_sends_its_own_prompts_and_schemas(profile, tiny_conv):
    llm = scripted(**{"ama.judge": {"Action": "Refresh", "reason": "two homes", "confidence": 0.9,
                                    "relevant_ids": [], "conflict_ids": ["fact:3", "fact:4"]}})
    m = AMA(llm=llm, embedder=emb(), profile=profile).ingest(tiny_conv)
    m.answer("Where does Noor live now?")
    sent, other = (PP, SP) if profile == "paper" else (SP, PP)
    assert set(llm.roles()) >= set(ROLES), sorted(set(ROLES) - set(llm.roles()))
    for req in llm.requests:
        const = ROLES.get(req["role"])
        if const is None:  # the answer prompt (the same in both profiles)
            continue
        text = prompt_of(req["messages"])
        assert text.startswith(opening(getattr(sent, const))), (req["role"], text[:80])
        assert not text.startswith(opening(getattr(other, const))), req["role"]
        assert req["schema"] == getattr(sent, f"{const}_SCHEMA"), req["role"]


def test_the_paper_prompts_name_no_example_values_and_keep_the_figures_alternatives():
    """Bug (b), reviews/ama.md §2.1: the small prompts' filled-in examples are copied by the 1.5B (22 of 22
    Retriever replies, 12 of 12 Refresher 'Update'); the paper prompts show placeholders only."""
    assert '"K_dyn": 5' in SP.RETRIEVE and '"Action": "Update"' in SP.REFRESH  # the aid the small profile keeps
    for name, copied in [("RETRIEVE", '"K_dyn": 5'), ("RETRIEVE", '"b_atomic": 1'),
                         ("RETRIEVE", '"memory_type": "fact"'), ("JUDGE", '"Action": "Pass"'),
                         ("JUDGE_INGEST", '"Action": "Pass"'),
                         ("REFRESH", '"Action": "Update"'), ("REFRESH", '"memory_type": "fact"')]:
        assert copied not in getattr(PP, name), (name, copied)
    assert '"K_dyn": <integer>' in PP.RETRIEVE and '"b_fine": <0 or 1>' in PP.RETRIEVE
    # the ingestion Judge offers Retry in the paper profile (§3.3; review turn 4, N2), not in the small one
    assert "<Pass, Retry or Refresh>" in PP.JUDGE and "<Pass, Retry or Refresh>" in PP.JUDGE_INGEST
    assert "<Update, Delete or No-Op>" in PP.REFRESH and "<raw, fact or episode>" in PP.REFRESH
    # no concrete example entity either (Fig. 6's appositions are given as a pattern)
    assert "John" not in PP.CONSTRUCT and "Sweden" not in PP.CONSTRUCT


def _required_everywhere(schema: dict) -> list[str]:
    """Paths of object schemas that leave one of their properties optional, or bound an array."""
    bad = []
    if schema.get("type") == "object":
        missing = set(schema.get("properties", {})) - set(schema.get("required", []))
        bad += [f"optional {sorted(missing)}"] if missing else []
        for sub in schema.get("properties", {}).values():
            bad += _required_everywhere(sub)
    if schema.get("type") == "array":
        bad += ["maxItems"] if "maxItems" in schema else []
        bad += _required_everywhere(schema.get("items", {}))
    return bad


@pytest.mark.parametrize("const", sorted(set(ROLES.values())))
def test_paper_schemas_require_every_field_the_method_reads_and_bound_nothing(const):
    schema = getattr(PP, f"{const}_SCHEMA")
    assert _required_everywhere(schema) == [], const
    # the JSON the prompt asks for has exactly the schema's top-level keys
    keys = set(re.findall(r'"(\w+)":', getattr(PP, const).rsplit("\n\n", 1)[-1]))
    assert set(schema["properties"]) <= keys, (const, set(schema["properties"]) - keys)


def test_every_paper_prompt_takes_its_fields_from_the_small_prompts_and_shows_the_input():
    def fields(template):
        return {f for _, f, _, _ in string.Formatter().parse(template) if f}
    shown = {"CONSTRUCT": {"text", "window", "memories"}, "TRIGGER": {"history", "new"},
             "EPISODE": {"conversation", "boundary_reason"}, "RETRIEVE": {"window", "user_input"},
             "JUDGE": {"information", "user_input"}, "JUDGE_INGEST": {"information", "text", "window"},
             "REFRESH": {"memory_entries", "retrieved", "user_input"}}
    # the paper profile's own inputs, which the small prompts leave out (review turn 4): W_t for the ingestion Judge
    # (N7), the rest of H_t for the Refresher (N1); the agents fill them for both prompt sets
    own = {"JUDGE_INGEST": {"window"}, "REFRESH": {"retrieved"}}
    for const in set(ROLES.values()):
        paper = fields(getattr(PP, const))
        assert paper - own.get(const, set()) <= fields(getattr(SP, const)), (const, paper - fields(getattr(SP, const)))
        assert not own.get(const, set()) & fields(getattr(SP, const)), const  # the small prompts keep the old inputs
        assert shown[const] <= paper, const


# -- the paper's pipeline ---------------------------------------------------------------------------------------
def test_paper_profile_judges_the_routed_hits_with_the_paper_judge_not_the_probe(tiny_conv):
    """Bug (c): the paper profile checks conflicts with AMA's Judge (P_jud), never the question probe, on the
    Retriever's H_t of each turn (Retriever -> Judge -> Refresher, Fig. 2); every routed hit reaches it (bug (a))."""
    llm = scripted()
    m = AMA(llm=llm, embedder=emb(), profile="paper").ingest(tiny_conv)
    roles = llm.roles()
    assert "ama.conflict_probe" not in roles and "ama.judge_ingest" in roles
    assert roles.count("ama.retrieve") == len(tiny_conv.turns)  # the Retriever runs on every turn
    checked = 0
    for tid, steps in m.turn_steps_.items():
        routed = [h.unit_id for s in steps if s.kind == "retrieve" for h in s.hits]
        shown = [h.unit_id for s in steps if s.kind == "conflict_check" for h in s.hits]
        assert set(shown) == set(routed), (tid, routed, shown)  # H_t, all of it, and nothing swept
        checked += bool(routed)
    assert checked >= len(tiny_conv.turns) - 1
    # and the Refresher edited the routed entry the Judge named (Noor moved from Lyon to Geneva)
    facts = [u.text for u in m.stores_["fact"]]
    assert "Noor lives in Geneva" in facts and "Noor lives in Lyon" not in facts


def test_paper_profile_refreshes_memory_at_question_time(tiny_conv):
    """§3.3-3.4: a Refresh verdict on a question edits the conflicting entries (the small profile leaves them)."""
    judge = {"Action": "Refresh", "reason": "two homes", "confidence": 0.9, "relevant_ids": [],
             "conflict_ids": ["fact:3", "fact:4"]}
    no_ingest_conflicts = {"Action": "Pass", "reason": "ok", "confidence": 0.9, "conflict_ids": [],
                           "relevant_ids": []}
    out = {}
    for profile in ("paper", "small"):
        m = AMA(llm=scripted(**{"ama.judge": judge, "ama.judge_ingest": no_ingest_conflicts}), embedder=emb(),
                profile=profile, use_raw=False, use_episode=False).ingest(tiny_conv)
        assert [u.text for u in m.stores_["fact"]][3] == FACTS["D1:6"][0]
        ans = m.answer("Where does Noor live now?")
        out[profile] = ({u.id: u.text for u in m.stores_["fact"]}["fact:3"], m.order_dependent,
                        [s.data.get("action") for s in ans.steps if s.kind == "refresh"])
    assert out["paper"] == ("Noor lives in Geneva", True, ["Update"])
    assert out["small"] == ("Noor lives in Lyon", False, ["skipped"])


# -- the paper's ablations build on either profile --------------------------------------------------------------
@pytest.mark.parametrize("name", list(AMA.ablations))
def test_table_3_rows_keep_the_chosen_profile(name):
    for profile in ("paper", "small"):
        m = AMA.ablation(name, llm=ScriptedLLM([]), embedder=emb(), profile=profile)
        assert m.profile == profile
        assert {k: getattr(m, k) for k in AMA.profiles[profile]} == AMA.profiles[profile]
        assert set(parameter_notes(m.param_notes)) == ((set() if profile == "paper" else SMALL_AIDS)
                                                       | set(AMA.ablation_params(name)))


def test_paper_profile_constructs_after_the_judge_from_the_refreshed_h_t(tiny_conv):
    """Fig. 2 / §3.1: Retriever -> Judge -> Refresher -> Constructor, the Constructor seeing H_t* (the routed
    entries after the Refresher's edits); the small profile constructs first and checks the turn's facts."""
    orders = {}
    for profile in ("paper", "small"):
        llm = scripted()
        m = AMA(llm=llm, embedder=emb(), profile=profile, use_raw=False, use_episode=False).ingest(tiny_conv)
        orders[profile] = [s.kind for s in m.turn_steps_["D2:1"] if s.kind in ("construct", "judge", "refresh")]
        if profile == "paper":
            construct_d21 = next(prompt_of(r["messages"]) for r in llm.requests
                                 if r["role"] == "ama.construct" and "(D2:1, said on" in prompt_of(r["messages"]))
            refs = construct_d21.split("Retrieved memories", 1)[1]
            assert "Noor lives in Geneva" in refs and "Noor lives in Lyon" not in refs  # H_t*, after the Update
    assert orders == {"paper": ["judge", "refresh", "construct"], "small": ["construct", "judge", "refresh"]}


def test_paper_trigger_sees_w_t_and_the_small_one_the_episode_buffer(tiny_conv):
    """Fig. 7: the trigger's history is W_t (the session's last turns), also across an episode boundary; the small
    profile shows only the current episode's turns."""
    marks = {"paper": ("Conversation history (may be empty):", "Newly added message:"),
             "small": ("Current episode so far:", "NEW MESSAGE:")}
    shown = {}
    for profile, (start, end) in marks.items():
        llm = scripted(**{"ama.trigger": {"T_t": 1, "reason": "new topic", "confidence": 0.9, "topic_summary": "x"}})
        AMA(llm=llm, embedder=emb(), profile=profile, refresher=False).ingest(tiny_conv)
        parts = [prompt_of(r["messages"]).split(start, 1)[1].split(end, 1) for r in llm.requests
                 if r["role"] == "ama.trigger"]
        history = next(h for h, new in parts if "D1:4" in new.split("\n\n", 1)[0])
        shown[profile] = re.findall(r"D\d:\d", history)
    # T_t = 1 on every call: the small profile's buffer holds only D1:3 when D1:4 comes
    assert shown == {"paper": ["D1:1", "D1:2", "D1:3"], "small": ["D1:3"]}


def test_a_question_time_update_is_dated_by_the_question(tiny_conv):
    """reviews/ama.md §2.7: an Update at question time set no updated_at, so recency ordering missed the edit."""
    from datetime import datetime

    judge = {"Action": "Refresh", "reason": "two homes", "confidence": 0.9, "relevant_ids": [],
             "conflict_ids": ["fact:3", "fact:4"]}
    m = AMA(llm=scripted(**{"ama.judge": judge, "ama.judge_ingest": {"Action": "Pass", "reason": "ok",
                                                                     "confidence": 0.9, "conflict_ids": [],
                                                                     "relevant_ids": []}}),
            embedder=emb(), profile="paper", use_raw=False, use_episode=False).ingest(tiny_conv)
    m.answer("Where does Noor live now?", now=datetime(2023, 7, 1, 12, 0))
    unit = m.stores_["fact"].units["fact:3"]
    assert unit.text == "Noor lives in Geneva" and unit.meta["updated_at"] == "2023-07-01T12:00:00"


def test_the_run_manifest_records_whether_answers_depend_on_question_order(tiny_conv, tmp_path):
    """Review §2.6: the property was documented as "run manifests state it" while no manifest did."""
    from workbench.data.types import Dataset
    from workbench.eval import evaluate

    data = Dataset("tiny", (tiny_conv,))
    pas = {"Action": "Pass", "reason": "ok", "confidence": 0.9, "relevant_ids": [], "conflict_ids": []}
    for profile, expected in (("paper", True), ("small", False)):
        m = AMA(llm=scripted(**{"ama.judge": pas, "ama.judge_ingest": pas}), embedder=emb(), profile=profile)
        res = evaluate(m, data, store=tmp_path / f"{profile}.jsonl", questions=[tiny_conv.qa[0].id], progress=False)
        assert res.manifest["order_dependent"] is expected == m.order_dependent
