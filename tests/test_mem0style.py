"""Mem0Style: per-speaker extraction, then ADD / UPDATE / DELETE / NONE against retrieved neighbours;
EagerFloor and the deprecated EagerFacts alias."""
import warnings

import pytest

from workbench.embed import HashEmbedder
from workbench.llm import LLMError, ScriptedLLM
from workbench.methods import DEPRECATED, REGISTRY, EagerFacts, EagerFloor, Mem0Style, get_method
from workbench.methods.common import exchanges
from workbench.testing.contract import CHECKS


def make_mem0():
    llm = ScriptedLLM({"mem0_style.extract": {"facts": ["Someone said something."]},
                       "mem0_style.decide": {"actions": [{"fact": 1, "event": "ADD", "id": "", "text": ""}]}},
                      default="auto")
    return Mem0Style(llm=llm, embedder=HashEmbedder(dim=128))


def make_floor():
    return EagerFloor(llm=ScriptedLLM({"eager_floor.extract": {"facts": ["Someone said something."]}},
                                      default="auto"), embedder=HashEmbedder(dim=128))


@pytest.mark.parametrize("make", [make_mem0, make_floor], ids=["mem0_style", "eager_floor"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_contract(make, check, tiny_conv):
    check(make, tiny_conv)


def _prompt(messages) -> str:
    return "\n".join(m["content"] for m in messages)


def _extract(messages):
    """Noor's facts: Lyon in session 1 (D1:6), Geneva in session 2 (D2:1); nothing else."""
    p = _prompt(messages)
    real = p.split("Now the real messages")[1]
    if "[Noor] Messages" in real and "still in Lyon" in real:
        return {"facts": ["Noor lives in Lyon."]}
    if "[Noor] Messages" in real and "moved to Geneva" in real:
        return {"facts": ["Noor moved to Geneva."]}
    return {"facts": []}


def _run(tiny_conv, second_decision):
    decisions = iter([{"actions": [{"fact": 1, "event": "ADD", "id": "", "text": "Noor lives in Lyon."}]},
                      second_decision])
    llm = ScriptedLLM({"mem0_style.extract": _extract, "mem0_style.decide": lambda m: next(decisions)})
    return Mem0Style(llm=llm, embedder=HashEmbedder(dim=256)).ingest(tiny_conv), llm


def test_add_then_update_of_a_changed_fact(tiny_conv):
    m, llm = _run(tiny_conv, {"actions": [{"fact": 1, "event": "UPDATE", "id": "0",
                                           "text": "Noor lives in Geneva (moved from Lyon)."}]})
    n_ex = sum(len(exchanges(s)) for s in tiny_conv.sessions)
    roles = llm.roles()
    assert roles.count("mem0_style.extract") == 2 * n_ex  # once per speaker per exchange
    assert roles.count("mem0_style.decide") == 2  # only where facts came out
    decide_prompts = [_prompt(r["messages"]) for r in llm.requests if r["role"] == "mem0_style.decide"]
    assert "(none yet)" in decide_prompts[0]
    assert "0: [5 June 2023] Noor lives in Lyon." in decide_prompts[1]  # the retrieved neighbour, small id
    assert [e.kind for e in m.events] == ["ADD", "UPDATE"]
    upd = m.events[1]
    assert upd.unit_id == m.events[0].unit_id
    assert "Lyon" in upd.before and "Geneva" in upd.after
    assert set(upd.source_ids) == {"D1:5", "D1:6", "D2:1", "D2:2"}
    mem = m.memories()
    assert len(mem) == 1 and "Geneva" in mem.text[0] and mem.speaker[0] == "Noor"
    assert m.failures_ == []


def test_delete_on_a_contradiction(tiny_conv):
    m, _ = _run(tiny_conv, {"actions": [{"fact": 1, "event": "DELETE", "id": "0", "text": ""},
                                        {"fact": 1, "event": "ADD", "id": "", "text": ""}]})
    assert [e.kind for e in m.events] == ["ADD", "DELETE", "ADD"]
    assert "Lyon" in m.events[1].before
    texts = list(m.memories().text)
    assert len(texts) == 1 and "Noor moved to Geneva." in texts[0]  # ADD without text stores the fact


def test_none_changes_nothing_and_bad_actions_are_recorded(tiny_conv):
    m, _ = _run(tiny_conv, {"actions": [{"fact": 1, "event": "NONE"},
                                        {"fact": 1, "event": "UPDATE", "id": "7", "text": "x"},
                                        {"fact": 1, "event": "DELETE", "id": "not-an-id"}]})
    assert [e.kind for e in m.events] == ["ADD"]
    assert len(m.failures_) == 2 and {f["stage"] for f in m.failures_} == {"apply"}
    assert "not one of the memories shown" in m.failures_[0]["error"]
    assert m.decisions_[-1]["actions"][0] == {"event": "NONE", "fact": "Noor moved to Geneva.", "unit_id": None,
                                              "text": "", "applied": True}


def test_failed_calls_are_recorded_and_the_build_goes_on(tiny_conv):
    llm = ScriptedLLM({"mem0_style.extract": LLMError("boom"), "mem0_style.decide": {"actions": []}})
    m = Mem0Style(llm=llm, embedder=HashEmbedder()).ingest(tiny_conv)
    n_ex = sum(len(exchanges(s)) for s in tiny_conv.sessions)
    assert len(m.failures_) == 2 * n_ex and all(f["stage"] == "extract" for f in m.failures_)
    assert len(m.memories()) == 0


def test_answer_reads_both_speakers_memories(tiny_conv):
    m, llm = _run(tiny_conv, {"actions": [{"fact": 1, "event": "ADD", "id": "", "text": ""}]})
    llm._map["mem0_style.answer"] = "Geneva"
    ans = m.answer("Where does Noor live now?")
    assert ans.text == "Geneva" and len(ans.context) == 2
    assert m.as_retriever().search("Geneva", 1)[0].text.endswith("Noor moved to Geneva.")


def test_eager_facts_is_a_deprecated_alias_that_keeps_its_name(tiny_conv):
    assert DEPRECATED["eager_facts"] == "eager_floor" and get_method("eager_facts") is EagerFacts
    assert REGISTRY["eager_floor"] is EagerFloor and REGISTRY["mem0_style"] is Mem0Style
    with pytest.warns(DeprecationWarning, match="EagerFloor"):
        old = EagerFacts(llm=ScriptedLLM({"eager_facts.extract": {"facts": ["A fact."]}}), embedder=HashEmbedder())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old.ingest(tiny_conv)
    assert isinstance(old, EagerFloor) and old.name == "eager_facts"
    assert {c for c in old.llm.roles()} == {"eager_facts.extract"}  # saved runs / scripts keyed on the old name
    new = make_floor().ingest(tiny_conv)
    # same prompts, so a cassette recorded under the old name replays for the new one
    assert [r["messages"] for r in new.llm.requests] == [r["messages"] for r in old.llm.requests]


def test_eager_facts_saved_memory_still_loads(tiny_conv, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = EagerFacts(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder()).ingest(tiny_conv)
        old.save(tmp_path / "m")
        back = get_method("eager_facts").load(tmp_path / "m", embedder=HashEmbedder())
    assert back.name == "eager_facts" and len(back.memories()) == len(old.memories())


def test_the_census_counts_each_facts_decision_from_the_saved_structures(tiny_conv, tmp_path):
    """Mem0-style over conv-30 at real scale: the 0.5B's decision call answered NONE for most facts, many of them with
    nothing stored to compare against, and named many in no action at all; the reference kept 13 memories. The
    census reads this from the decisions Mem0Style now saves (structures.json). Here: Lyon is dropped (NONE) with
    nothing stored, then the Geneva reply answers one of its two facts and names an unknown id for the other."""
    from workbench.data import Dataset
    from workbench.eval import evaluate
    from workbench.eval.mechanisms import census, headline

    def extract(messages):
        got = _extract(messages)
        return {"facts": got["facts"] + ["I am happy."]} if "Geneva" in str(got) else got

    decisions = iter([{"actions": [{"fact": 1, "event": "NONE", "id": "", "text": ""}]},
                      {"actions": [{"fact": 1, "event": "UPDATE", "id": "9", "text": "x"}]}])
    llm = ScriptedLLM({"mem0_style.extract": extract, "mem0_style.decide": lambda m: next(decisions)},
                      default="auto")
    evaluate(Mem0Style(llm=llm, embedder=HashEmbedder(dim=64)), Dataset("tiny", (tiny_conv,)),
             store=tmp_path / "results.jsonl", questions=["tiny-1/q0"], save_memories_dir=tmp_path, progress=False)
    entry = census(tmp_path)["methods"]["mem0_style"]
    c = entry["counts"]
    assert c["facts_extracted"] == 3 and c["decisions"] == {"NONE": 1}  # the UPDATE named an unknown id: skipped
    assert c["none_with_nothing_stored"] == 1 and c["facts_without_action"] == 1 and c["actions_skipped"] == 1
    assert c["actions_naming_no_fact"] == 0
    assert c["facts_first_person"] == 1  # "I am happy."
    assert c["facts_copying_turn"] == 0 and c["facts_unstated_relation"] == 0  # read against the exchange's turns
    (h,) = headline(census(tmp_path))
    assert {f["name"] for f in h["failures"]} >= {"facts_without_action", "none_with_nothing_stored",
                                                  "actions_skipped"}
    old = tmp_path / "old"  # a memory saved before the decisions were: missing, never 0
    (old / "memories" / "mem0_style" / "tiny-1").mkdir(parents=True)
    for f in ("results.jsonl",):
        (old / f).write_text((tmp_path / f).read_text())
    for f in (tmp_path / "memories" / "mem0_style" / "tiny-1").iterdir():
        if f.is_file() and f.name != "structures.json":
            (old / "memories" / "mem0_style" / "tiny-1" / f.name).write_bytes(f.read_bytes())
    stale = census(old)["methods"]["mem0_style"]
    assert stale["counts"]["none_with_nothing_stored"] is None and "saved before" in stale["missing"]["decisions"]


def test_the_eager_floors_census_reads_each_fact_against_its_exchange(tiny_conv, tmp_path):
    """Seen in the demo replay: Eager floor's 0.5B wrote a turn behind a date as a fact ("[14 March 2023] Priya:
    Tomatoes first, ...") and one fact seven times from one exchange. Scripted here: the first exchange's reply copies
    Sam's turn, the second's states a relation neither turn says, twice; the census counts each and lists them."""
    from workbench.data import Dataset
    from workbench.eval import evaluate
    from workbench.eval.mechanisms import census, headline

    def extract(messages):
        p = _prompt(messages)
        if "adopted a kitten" in p:
            return {"facts": ["Sam: Hi Noor! I adopted a kitten on Saturday."]}
        if "grey with white paws" in p:
            return {"facts": ["Miso is Sam's friend", "Miso is Sam's friend"]}
        return {"facts": []}

    llm = ScriptedLLM({"eager_floor.extract": extract}, default="auto")
    evaluate(EagerFloor(llm=llm, embedder=HashEmbedder(dim=64)), Dataset("tiny", (tiny_conv,)),
             store=tmp_path / "results.jsonl", questions=["tiny-1/q0"], save_memories_dir=tmp_path, progress=False)
    c = census(tmp_path)["methods"]["eager_floor"]["counts"]
    assert (c["facts_written"], c["facts_copying_turn"], c["facts_first_person"], c["facts_unstated_relation"],
            c["facts_repeated"]) == (3, 1, 1, 2, 1)
    assert c["facts_unstated_relation_words"] == {"friend": 2}
    (h,) = headline(census(tmp_path))
    assert {f["name"]: f["value"] for f in h["failures"]} == {"facts_copying_turn": 1, "facts_unstated_relation": 2,
                                                             "facts_first_person": 1}
    for f in (tmp_path / "conversations").iterdir():
        f.unlink()
    bare = census(tmp_path)["methods"]["eager_floor"]
    assert bare["counts"]["facts_copying_turn"] is None and bare["counts"]["facts_first_person"] == 1
